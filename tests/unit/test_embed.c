/* test_embed.c - the rows mode of attention against one dot at a time,
 * the embedding scheduler (packing, chunked sequences, cancellation,
 * limits) and the pooling helpers.
 *
 *  - attention rows mode (families without a KV cache): for random shapes
 *    (head sizes 8..128, lengths 1..200, grouped heads, windows, ALiBi,
 *    causal or not), every output equals, bit for bit, the scalar
 *    computation with gx_dot_f32_vec_e4 / gx_dot_f32_tiny per dot;
 *  - the scheduler: one job of many inputs gives the same vectors as one
 *    job per input; a decoder embedding model split over several forward
 *    passes (batch budget smaller than the input) gives the same vector as
 *    in one pass; a cancelled job ends; too long and empty inputs and bad
 *    ids are refused at submit;
 *  - pool_normalize and the pooling names.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/embed/embed_input.h"
#include "engine/embed/embed_sched.h"
#include "engine/embed/pool.h"
#include "engine/kernels/ggml_exact.h"
#include "engine/model/attention.h"
#include "engine/model/ops.h"
#include "tap.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* The reference: one token and head at a time, one dot at a time. */
static void ref_attention(int n_head, int n_kv_head, int hd, int len, const float *q, const float *k, const float *v,
                          const int32_t *lo, const int32_t *hi, const float *alibi, float scale, bool tiny, float *out)
{
    float *sc = malloc(sizeof(float) * (size_t)len), *col = malloc(sizeof(float) * (size_t)len);
    for (int t = 0; t < len; t++)
        for (int h = 0; h < n_head; h++) {
            const int kvh = h / (n_head / n_kv_head);
            for (int p = 0; p < len; p++) {
                if (p < lo[t] || p >= hi[t]) {
                    sc[p] = -INFINITY;
                    continue;
                }
                /* with one head q is contiguous: tinyBLAS takes K.q too */
                const float *kp = k + (p * n_kv_head + kvh) * hd, *qt = q + (t * n_head + h) * hd;
                sc[p] = (tiny && n_head == 1 && hd % 16 == 0 ? gx_dot_f32_tiny(kp, qt, hd) : gx_dot_f32_vec_e4(kp, qt, hd)) *
                        scale;
                if (alibi)
                    sc[p] = fmaf(alibi[h], (float)-abs(p - t), sc[p]);
            }
            ops_softmax(sc, len);
            for (int d = 0; d < hd; d++) {
                for (int p = 0; p < len; p++)
                    col[p] = v[(p * n_kv_head + kvh) * hd + d];
                out[(t * n_head + h) * hd + d] =
                    tiny && len % 16 == 0 ? gx_dot_f32_tiny(col, sc, len) : gx_dot_f32_vec_e4(col, sc, len);
            }
        }
    free(sc);
    free(col);
}

static void test_rows_attention(void)
{
    const int hds[] = {8, 16, 32, 64, 72, 128};
    const int lens[] = {1, 2, 7, 16, 33, 64, 70, 128, 150, 200};
    int all = 0, same = 0;
    for (size_t a = 0; a < sizeof hds / sizeof hds[0]; a++)
        for (size_t b = 0; b < sizeof lens / sizeof lens[0]; b++)
            for (int variant = 0; variant < 4; variant++) {
                const int hd = hds[a], len = lens[b], n_head = variant == 3 ? 1 : 4, n_kv = variant == 2 ? 2 : n_head;
                const bool alibi = variant == 1, causal = variant == 2, window = variant == 3;
                const int qd = n_head * hd, kd = n_kv * hd;
                float *q = malloc(sizeof(float) * (size_t)(len * qd)), *k = malloc(sizeof(float) * (size_t)(len * kd));
                float *v = malloc(sizeof(float) * (size_t)(len * kd));
                float *out = calloc((size_t)(len * qd), sizeof(float)), *want = calloc((size_t)(len * qd), sizeof(float));
                for (int i = 0; i < len * qd; i++)
                    q[i] = frand();
                for (int i = 0; i < len * kd; i++)
                    k[i] = frand(), v[i] = frand();
                int32_t seq_n[200], pos[200], lo[200], hi[200];
                uint8_t order[200];
                float slopes[4];
                attn_alibi_slopes(n_head, 8.0f, slopes);
                for (int t = 0; t < len; t++) {
                    seq_n[t] = len, pos[t] = t, order[t] = len >= 2 ? ATTN_ORDER_TINY : ATTN_ORDER_VEC;
                    lo[t] = window && t - 4 > 0 ? t - 4 : 0;
                    hi[t] = causal ? t + 1 : window && t + 5 < len ? t + 5 : len;
                }
                const int64_t stride = attn_rows_scratch_floats(len, hd);
                float *scratch = malloc(sizeof(float) * (size_t)stride);
                attn_job_t job = {.n_tok = len, .n_head = n_head, .n_head_kv = n_kv, .head_dim = hd, .q = q,
                                  .out = out, .n_kv = hi, .kv_start = lo, .scale = 0.125f, .order = order,
                                  .scratch = scratch, .scratch_stride = stride, .k_rows = k, .v_rows = v,
                                  .seq_n = seq_n, .pos = pos, .alibi = alibi ? slopes : NULL};
                attn_run(NULL, &job);
                ref_attention(n_head, n_kv, hd, len, q, k, v, lo, hi, alibi ? slopes : NULL, 0.125f, len >= 2, want);
                all++;
                same += memcmp(out, want, sizeof(float) * (size_t)(len * qd)) == 0;
                if (memcmp(out, want, sizeof(float) * (size_t)(len * qd)))
                    tap_diag("differs: head size %d, length %d, variant %d", hd, len, variant);
                free(q), free(k), free(v), free(out), free(want), free(scratch);
            }
    tap_ok(same == all, "rows-mode attention at level %d equals one dot at a time, bit for bit (%d of %d shapes)",
           gx_level(), same, all);
}

static model_t *load(const char *name)
{
    const char *dir = getenv("LLM_MODELS_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "../shared/models", name);
    lf_err_t err;
    model_t *m = model_load(path, &err);
    if (!m)
        tap_diag("%s", err.msg);
    return m;
}

static const char *const texts[] = {"Hello world", "The quick brown fox jumps over the lazy dog.", "",
                                    "Café 日本 🍕", "a b c d e f g h i j k l m n o p q r s t u v w x y z",
                                    "Embeddings pack many inputs into one forward pass."};
enum { NT = sizeof texts / sizeof texts[0] };

/* Embeds texts[0..NT) as one job (one = false) or one job each. */
static bool embed_all(embed_sched_t *es, const model_t *m, bool one, float out[NT][64])
{
    int32_t *seqs[NT], lens[NT];
    lf_err_t err;
    for (int i = 0; i < NT; i++)
        embed_tokens_text(model_vocab(m), texts[i], strlen(texts[i]), 0, false, &seqs[i], &lens[i], &err);
    bool ok = true;
    for (int i = 0; i < NT && ok; i += one ? 1 : NT) {
        const int n = one ? 1 : NT;
        embed_job_t *j = embed_submit(es, (const int32_t *const *)(seqs + i), lens + i, n, &err);
        ok = j && embed_job_wait(j, 30000) && embed_job_status(j, &err) == LF_OK;
        for (int k = 0; ok && k < n; k++) {
            int64_t no;
            const float *v = embed_job_out(j, k, &no);
            memcpy(out[i + k], v, (size_t)(no < 64 ? no : 64) * sizeof(float));
        }
        embed_job_free(j);
    }
    for (int i = 0; i < NT; i++)
        free(seqs[i]);
    return ok;
}

static void test_sched(const char *name, int32_t small_batch)
{
    model_t *m = load(name);
    if (!tap_ok(m != NULL, "%s loads", name))
        return;
    lf_err_t err;
    embed_opts_t o = {.n_threads = 2, .pooling = pool_default_type(m)};
    embed_sched_t *a = embed_sched_create(m, &o, &err);
    o.max_batch = small_batch;
    embed_sched_t *b = embed_sched_create(m, &o, &err);
    static float x[NT][64], y[NT][64], z[NT][64];
    tap_ok(a && b && embed_all(a, m, false, x) && embed_all(a, m, true, y) && embed_all(b, m, false, z),
           "%s: the same inputs embedded together, one by one and with a %d-token budget", name, small_batch);
    tap_ok(!memcmp(x, y, sizeof x), "%s: batching changes no bit", name);
    tap_ok(!memcmp(x, z, sizeof x), "%s: a smaller batch budget changes no bit", name);
    /* limits at submit */
    const int32_t max = embed_sched_max_tokens(a);
    int32_t *big = calloc((size_t)max + 1, sizeof *big), n_big = max + 1, zero = 0, bad = 1 << 30;
    const int32_t *p[1] = {big};
    tap_ok(!embed_submit(a, p, &n_big, 1, &err) && err.code == LF_ERR_CONTEXT, "%s: %d tokens refused (%s)", name,
           n_big, err.msg);
    tap_ok(!embed_submit(a, p, &zero, 1, &err) && err.code == LF_ERR_INVALID, "%s: an empty input refused", name);
    const int32_t *pb[1] = {&bad};
    int32_t one = 1;
    tap_ok(!embed_submit(a, pb, &one, 1, &err) && err.code == LF_ERR_INVALID, "%s: a bad id refused (%s)", name,
           err.msg);
    /* many jobs cancelled right away: all end, the scheduler goes on */
    int32_t len = max < 64 ? max : 64;
    const int32_t *pp[32];
    int32_t lens[32];
    for (int i = 0; i < 32; i++)
        pp[i] = big, lens[i] = len;
    embed_job_t *jobs[8];
    for (int i = 0; i < 8; i++)
        jobs[i] = embed_submit(a, pp, lens, 32, &err);
    for (int i = 0; i < 8; i++)
        embed_job_free(jobs[i]);
    static float w[NT][64];
    tap_ok(embed_all(a, m, false, w) && !memcmp(w, x, sizeof w), "%s: after cancelled jobs, the same vectors", name);
    embed_stats_t st;
    embed_sched_stats(a, &st);
    tap_ok(st.inputs >= 2 * NT && st.passes >= 1, "%s: stats count inputs (%llu) and passes (%llu)", name,
           (unsigned long long)st.inputs, (unsigned long long)st.passes);
    free(big);
    embed_sched_free(a);
    embed_sched_free(b);
    model_free(m);
}

/* gx_dot_f32_vec_e4: the leftovers after the 8s: 4 more rounded
 * products when at least 4 remain, the last n % 4 fused. -(1 + 2^-11) +
 * (1 + 2^-12)^2 is 2^-24 fused and 0 with the product rounded. */
static void test_dot_e4(void)
{
    float x[16], y[16];
    const int cases[][3] = {{2, 0, 1}, {6, 0, 0}, {12, 8, 0}, {14, 12, 1}, {10, 8, 1}, {4, 0, 0}, {7, 4, 1}};
    int ok = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int i = 0; i < 16; i++)
            x[i] = 0.0f, y[i] = 1.0f;
        const int at = cases[c][1];
        x[at] = -(1.0f + 0x1p-11f);
        x[at + 1] = y[at + 1] = 1.0f + 0x1p-12f;
        const float got = gx_dot_f32_vec_e4(x, y, cases[c][0]);
        ok += got == (cases[c][2] ? 0x1p-24f : 0.0f);
    }
    tap_ok(ok == (int)(sizeof cases / sizeof cases[0]), "gx_dot_f32_vec_e4: the 4-wide epilogue rounds, the rest fuses");
}

static void test_normalize(void)
{
    float v[4] = {3, 4, 0, 0}, w[4] = {3, -4, 0, 0}, z[2] = {0, 0};
    pool_normalize(v, 4, 2);
    tap_ok(v[0] == 0.6f && v[1] == 0.8f, "L2: (3, 4) -> (0.6, 0.8)");
    pool_normalize(w, 4, 1);
    tap_ok(fabsf(w[0] - 3.0f / 7.0f) < 1e-7f && fabsf(w[1] + 4.0f / 7.0f) < 1e-7f, "taxicab");
    pool_normalize(z, 2, 2);
    tap_ok(z[0] == 0 && z[1] == 0, "a zero vector stays zero");
    tap_ok(pool_type_parse("cls") == MODEL_POOLING_CLS && pool_type_parse("x") < 0 &&
               !strcmp(pool_type_name(MODEL_POOLING_RANK), "rank"),
           "pooling names");
}

/* GELU (plain and gated) at the SIMD level equals the portable loop bit for
 * bit: the table, the -10 / 10 cut-offs, NaN, infinities, signed zeros,
 * rows whose length is not a multiple of 8. */
static void test_gelu(void)
{
    enum { N = 203 };
    static const float special[] = {-10.0f, 10.0f, -10.000001f, 9.999999f, 0.0f, -0.0f, INFINITY, -INFINITY, NAN,
                                    65504.0f, -65520.0f, 1e-8f, -1e-8f, 0.5f, -3.0f};
    float g[N], u[N], a[N], b[N];
    for (int i = 0; i < N; i++) {
        g[i] = i < (int)(sizeof special / sizeof special[0]) ? special[i] : frand() * 24.0f;
        u[i] = i % 7 == 3 ? -frand() * 1e30f : frand() * 3.0f;
    }
    int bad = 0;
    for (int gated = 0; gated < 2; gated++)
        for (int n = N - 8; n <= N; n++) {
            if (gated)
                ops_geglu_row(a, g, u, n);
            else
                ops_gelu_row(a, g, n);
            const int level = gx_set_level(GX_LEVEL_PORTABLE);
            if (gated)
                ops_geglu_row(b, g, u, n);
            else
                ops_gelu_row(b, g, n);
            gx_set_level(level);
            bad += memcmp(a, b, (size_t)n * sizeof(float)) != 0;
        }
    tap_ok(bad == 0, "gelu / geglu rows: the SIMD level gives the portable bits (%d rows differ)", bad);
}

int main(void)
{
    test_gelu();
    test_rows_attention();
    const int level = gx_set_level(GX_LEVEL_PORTABLE); /* the portable kernels too */
    test_rows_attention();
    gx_set_level(level);
    test_dot_e4();
    test_normalize();
    test_sched("tinybert-mean-f32.gguf", 64);      /* encoder: whole sequences per pass */
    test_sched("tinyqwen3-embed-f32.gguf", 7);     /* decoder: sequences split over passes */
    test_sched("tinygemma-embed-f32.gguf", 48);
    return tap_done();
}
