/* test_attention.c - attention.c against the per-position reference, bitwise.
 *
 * The reference below is the former implementation (one position at a
 * time: a gx_dot_f16_vec per score, one FMA row per position into 16 or 64
 * lane accumulators, double leftovers), which reproduces llama.cpp's
 * golden outputs, extended with what the model families need: the 2026
 * reference's tinyBLAS K.q for prompt tokens and 256-cell padding, a
 * sliding window (masked scores before the window start; the block table
 * entries wholly before it are -1, as in the window pool, so reading them
 * would show) and attention sinks. attn_run must give the same bits for
 * every head size, grouped-query ratio, context length, order, variant and
 * ISA level; positions past each token's n_kv hold Inf and NaN so that
 * reading them would show. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/attention.h"
#include "engine/quant/fp16.h"
#include "engine/kernels/ggml_exact.h"
#include "engine/kernels/kernels.h"
#include "engine/model/kv.h"
#include "engine/kernels/tpool.h"
#include "tap.h"

/* ---- the reference: per position, rows gathered from the cache --------- */

static void ref_add_row(float *acc, float w, const uint16_t *v, int n)
{
    for (int d = 0; d < n; d++)
        acc[d] = acc[d] + w * fp16_to_fp32(v[d]);
}

/* out[d] = the lane accumulators acc[l * hd + d] summed as gx_hsum16. */
static void ref_hsum_lanes(float *acc, int hd, float *out)
{
    float v[16];
    for (int d = 0; d < hd; d++) {
        for (int l = 0; l < 16; l++)
            v[l] = acc[l * hd + d];
        out[d] = gx_hsum16(v);
    }
}

/* What differs between the cases of one head size: the numerics of the
 * reference build, the window and the sinks. */
typedef struct {
    const char *name;
    int kq_tiny;      /* attn_job_t.kq_tiny */
    int32_t vec_pad;  /* attn_job_t.vec_pad */
    int32_t window;   /* 0: full attention; else kv_start = n_kv - window */
    int sinks;        /* per-head sink logits */
} variant_t;

static const variant_t variants[] = {
    {"llama.cpp 2025", 0, 32, 0, 0},
    {"llama.cpp 2026", 1, 256, 0, 0},
    {"2026, window 17, sinks", 1, 256, 17, 1},
    {"2026, window 40", 1, 256, 40, 0},
};

/* ggml_soft_max over s[0..n) (masked entries -inf) with an optional sink:
 * 16-lane blocks through ggml_v_expf, the sink's term through expf. */
static void ref_softmax(float *s, int32_t n, const float *sink)
{
    float max = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        max = s[i] > max ? s[i] : max;
    if (sink && *sink > max)
        max = *sink;
    double sum = 0.0;
    for (int32_t i = 0; i < n; i += 16) {
        float in[16], e[16];
        for (int l = 0; l < 16; l++)
            in[l] = i + l < n ? s[i + l] - max : -INFINITY;
        gx_expf16(in, e);
        for (int l = 0; l < 16 && i + l < n; l++)
            s[i + l] = e[l];
        sum += (double)gx_hsum16(e);
    }
    if (sink)
        sum += (double)expf(*sink - max);
    const float inv = (float)(1.0 / sum);
    for (int32_t i = 0; i < n; i++)
        s[i] *= inv;
}

/* One (token, head): K and V rows of the head are k[p * ld], v[p * ld];
 * positions before start are masked. */
static void ref_attn_one(const uint16_t *k, const uint16_t *v, int64_t ld, const float *q, int hd, int32_t n_kv,
                         float scale, int tiny, const variant_t *var, int32_t start, const float *sink, float *out)
{
    uint16_t *q16 = malloc((size_t)hd * sizeof *q16), *p16 = malloc((size_t)n_kv * sizeof *p16);
    float *scores = malloc((size_t)n_kv * sizeof *scores);
    float *acc = calloc((size_t)64 * (size_t)hd, sizeof *acc);
    double *left = calloc((size_t)hd, sizeof *left);
    fp16_row_from_fp32(q, q16, hd);
    for (int32_t p = 0; p < n_kv; p++)
        scores[p] = p < start ? -INFINITY
                    : tiny && var->kq_tiny && hd % 16 == 0 ? gx_dot_f16_tiny(k + p * ld, q16, hd) * scale
                                                          : gx_dot_f16_vec(k + p * ld, q16, hd) * scale;
    ref_softmax(scores, n_kv, sink);
    fp16_row_from_fp32(scores, p16, n_kv);
    if (tiny) {
        for (int32_t p = 0; p < n_kv; p++)
            ref_add_row(acc + (p % 16) * hd, fp16_to_fp32(p16[p]), v + p * ld, hd);
        ref_hsum_lanes(acc, hd, out);
    } else {
        const int64_t pad = var->vec_pad;
        int64_t n_pad = ((int64_t)n_kv + pad - 1) / pad * pad;
        n_pad = n_pad < pad ? pad : n_pad;
        const int32_t np = (int32_t)(n_pad & ~(int64_t)63) < n_kv ? (int32_t)(n_pad & ~(int64_t)63) : n_kv;
        if (np > 0) {
            for (int32_t p = 0; p < np; p++)
                ref_add_row(acc + (p % 64) * hd, fp16_to_fp32(p16[p]), v + p * ld, hd);
            const int64_t n16 = 16 * (int64_t)hd;
            for (int64_t i = 0; i < n16; i++) {
                acc[i] = acc[i] + acc[i + 2 * n16];
                acc[i + n16] = acc[i + n16] + acc[i + 3 * n16];
            }
            for (int64_t i = 0; i < n16; i++)
                acc[i] = acc[i] + acc[i + n16];
            ref_hsum_lanes(acc, hd, out);
            for (int d = 0; d < hd; d++)
                left[d] = (double)out[d];
        }
        for (int32_t p = np; p < n_kv; p++)
            for (int d = 0; d < hd; d++)
                left[d] += (double)(fp16_to_fp32(p16[p]) * fp16_to_fp32(v[p * ld + d]));
        for (int d = 0; d < hd; d++)
            out[d] = (float)left[d];
    }
    free(q16);
    free(p16);
    free(scores);
    free(acc);
    free(left);
}

/* ---- the cases ------------------------------------------------------------ */

static uint64_t rng = 0x2545f4914f6cdd1dull;

static float rnd(void) /* uniform in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

static const int32_t n_kv_list[] = {1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 255, 256, 257, 600};
enum { N_SEQ = sizeof n_kv_list / sizeof n_kv_list[0], N_TOK = 2 * N_SEQ, MAX_CTX = 640, LAYER = 1 };

typedef struct {
    int hd, n_head, n_head_kv, block_tokens;
} attn_case_t;

static const attn_case_t cases[] = {
    {8, 8, 4, 16},   {8, 5, 1, 16},    {32, 4, 2, 16},  {32, 8, 2, 32}, {48, 6, 2, 16},
    {64, 12, 4, 16}, {64, 1, 1, 16},   {64, 8, 2, 16},  {128, 4, 4, 16}, {128, 6, 1, 48},
    {4, 2, 2, 16},   {16, 2, 1, 16},   {72, 3, 1, 16},  {5, 4, 2, 16},  {256, 2, 1, 16},
};

typedef struct {
    kv_cache_t *kv;
    int64_t kv_dim;
    uint16_t *k_rows, *v_rows; /* [N_SEQ][MAX_CTX][kv_dim] as gathered */
    float *q;                  /* [N_TOK][n_head * hd] */
    float *sinks;              /* [n_head] */
    const int32_t *blocks[N_TOK];
    int32_t n_kv[N_TOK];
    int32_t start[N_TOK];      /* per variant: the window's first position */
    int32_t *wtab[N_TOK];      /* per variant: block tables with -1 before the window */
    uint8_t order[N_TOK];
} fixture_t;

static uint16_t rnd_f16(float mag)
{
    return fp16_from_fp32(rnd() * mag);
}

/* A cache with one sequence per n_kv value (random K and V, Inf and NaN
 * past the end) and two tokens per sequence: one TINY, one VEC. */
static int fixture_make(const attn_case_t *c, fixture_t *fx)
{
    memset(fx, 0, sizeof *fx);
    fx->kv_dim = (int64_t)c->n_head_kv * c->hd;
    const int32_t bt = c->block_tokens, per_seq = (MAX_CTX + bt - 1) / bt;
    kv_opts_t o = {.n_layer = 2, .kv_dim = fx->kv_dim, .block_tokens = bt, .n_blocks = N_SEQ * per_seq,
                   .n_seq = N_SEQ, .max_seq_len = per_seq * bt};
    if (!(fx->kv = kv_create(&o, NULL)))
        return 0;
    const size_t rows = (size_t)N_SEQ * MAX_CTX * (size_t)fx->kv_dim;
    fx->k_rows = malloc(rows * sizeof(uint16_t));
    fx->v_rows = malloc(rows * sizeof(uint16_t));
    fx->q = malloc((size_t)N_TOK * (size_t)(c->n_head * c->hd) * sizeof(float));
    uint16_t *k = malloc((size_t)fx->kv_dim * 2 * sizeof(uint16_t)), *v = k + fx->kv_dim;
    if (!fx->k_rows || !fx->v_rows || !fx->q || !k) {
        free(k);
        return 0;
    }
    static const uint16_t poison[4] = {0x7c00, 0xfc00, 0x7e00, 0x7bff};
    for (int s = 0; s < N_SEQ; s++) {
        const int32_t n = n_kv_list[s], cap = (n + bt - 1) / bt * bt;
        if (kv_seq_reserve(fx->kv, s, cap, NULL) != LF_OK)
            return 0;
        const float kmag = s % 3 == 0 ? 4.0f : 1.0f;
        for (int32_t p = 0; p < cap; p++)
            for (int l = 0; l < 2; l++) {
                for (int64_t e = 0; e < fx->kv_dim; e++) {
                    k[e] = p < n ? rnd_f16(kmag) : poison[(p + e) % 4];
                    v[e] = p < n ? rnd_f16(1.0f) : poison[(p + e + 1) % 4];
                }
                kv_store(fx->kv, l, s, p, k, v);
            }
        kv_seq_set_len(fx->kv, s, n);
        for (int32_t p = 0; p < n; p++) {
            const size_t row = ((size_t)s * MAX_CTX + (size_t)p) * (size_t)fx->kv_dim;
            kv_load(fx->kv, LAYER, s, p, fx->k_rows + row, fx->v_rows + row);
        }
        for (int o2 = 0; o2 < 2; o2++) {
            const int t = 2 * s + o2;
            fx->blocks[t] = kv_seq_blocks(fx->kv, s);
            fx->n_kv[t] = n;
            fx->order[t] = o2 ? ATTN_ORDER_VEC : ATTN_ORDER_TINY;
        }
    }
    free(k);
    const int64_t qn = (int64_t)N_TOK * c->n_head * c->hd;
    for (int64_t i = 0; i < qn; i++)
        fx->q[i] = rnd() * (i % 5 == 0 ? 3.0f : 1.5f);
    if (!(fx->sinks = malloc((size_t)c->n_head * sizeof(float))))
        return 0;
    for (int h = 0; h < c->n_head; h++)
        fx->sinks[h] = rnd() * 4.0f;
    for (int t = 0; t < N_TOK; t++)
        if (!(fx->wtab[t] = malloc((size_t)(MAX_CTX / bt + 1) * sizeof(int32_t))))
            return 0;
    return 1;
}

/* The window of variant var: start positions and tables with the blocks
 * wholly before the window set to -1. */
static void fixture_window(const attn_case_t *c, fixture_t *fx, const variant_t *var)
{
    const int32_t bt = c->block_tokens;
    for (int t = 0; t < N_TOK; t++) {
        const int32_t n = fx->n_kv[t];
        fx->start[t] = var->window && n > var->window ? n - var->window : 0;
        for (int32_t b = 0; b * bt < n; b++)
            fx->wtab[t][b] = (b + 1) * bt <= fx->start[t] ? -1 : fx->blocks[t][b];
    }
}

static void fixture_free(fixture_t *fx)
{
    for (int t = 0; t < N_TOK; t++)
        free(fx->wtab[t]);
    free(fx->sinks);
    kv_free(fx->kv);
    free(fx->k_rows);
    free(fx->v_rows);
    free(fx->q);
}

static void reference(const attn_case_t *c, const fixture_t *fx, const variant_t *var, float *out)
{
    const int n_rep = c->n_head / c->n_head_kv;
    const int prev = gx_set_level(GX_LEVEL_PORTABLE);
    for (int t = 0; t < N_TOK; t++)
        for (int h = 0; h < c->n_head; h++) {
            const size_t row0 = (size_t)(t / 2) * MAX_CTX * (size_t)fx->kv_dim + (size_t)(h / n_rep * c->hd);
            const int64_t qo = ((int64_t)t * c->n_head + h) * c->hd;
            ref_attn_one(fx->k_rows + row0, fx->v_rows + row0, fx->kv_dim, fx->q + qo, c->hd, fx->n_kv[t],
                         1.0f / sqrtf((float)c->hd), fx->order[t] == ATTN_ORDER_TINY, var, fx->start[t],
                         var->sinks ? &fx->sinks[h] : NULL, out + qo);
        }
    gx_set_level(prev);
}

static void run(const attn_case_t *c, const fixture_t *fx, const variant_t *var, tpool_t *pool, float *out)
{
    const int32_t n_rep = c->n_head / c->n_head_kv;
    const int64_t stride = attn_scratch_floats(MAX_CTX, c->hd, n_rep);
    const int nth = pool ? tpool_size(pool) : 1;
    float *scratch = malloc((size_t)(stride * nth) * sizeof(float));
    attn_job_t job = {
        .n_tok = N_TOK, .n_head = c->n_head, .n_head_kv = c->n_head_kv, .head_dim = c->hd,
        .q = fx->q, .out = out, .kv = fx->kv, .layer = LAYER,
        .blocks = var->window ? (const int32_t *const *)fx->wtab : fx->blocks, .n_kv = fx->n_kv,
        .kv_start = var->window ? fx->start : NULL, .sinks = var->sinks ? fx->sinks : NULL,
        .kq_tiny = var->kq_tiny, .vec_pad = var->vec_pad,
        .scale = 1.0f / sqrtf((float)c->hd), .order = fx->order, .n_ctx = MAX_CTX,
        .scratch = scratch, .scratch_stride = stride,
    };
    attn_run(pool, &job);
    free(scratch);
}

/* Names the first differing value, if any; returns the number of
 * (token, head) outputs that differ. */
static int compare(const attn_case_t *c, const float *got, const float *want)
{
    int bad = 0;
    for (int t = 0; t < N_TOK; t++)
        for (int h = 0; h < c->n_head; h++) {
            const int64_t o = ((int64_t)t * c->n_head + h) * c->hd;
            if (!memcmp(got + o, want + o, (size_t)c->hd * sizeof(float)))
                continue;
            if (!bad++)
                for (int d = 0; d < c->hd; d++)
                    if (memcmp(got + o + d, want + o + d, sizeof(float))) {
                        tap_diag("n_kv %d %s head %d dim %d: %.9g, want %.9g", n_kv_list[t / 2],
                                 t % 2 ? "vec" : "tiny", h, d, (double)got[o + d], (double)want[o + d]);
                        break;
                    }
        }
    return bad;
}

int main(void)
{
    static const char *level_names[] = {"portable", "avx2", "avx512"};
    const int max_level = gx_level();
    tpool_t *pool = NULL;
    tap_ok(tpool_create(2, &pool, NULL) == LF_OK, "thread pool");
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const attn_case_t *c = &cases[ci];
        fixture_t fx;
        if (!tap_ok(fixture_make(c, &fx), "head_dim %d, %d heads / %d KV heads, blocks of %d: fixture", c->hd,
                    c->n_head, c->n_head_kv, c->block_tokens)) {
            fixture_free(&fx);
            continue;
        }
        const size_t n_out = (size_t)N_TOK * (size_t)(c->n_head * c->hd);
        float *want = malloc(n_out * sizeof(float)), *got = malloc(n_out * sizeof(float));
        for (size_t vi = 0; vi < sizeof variants / sizeof variants[0]; vi++) {
            const variant_t *var = &variants[vi];
            fixture_window(c, &fx, var);
            reference(c, &fx, var, want);
            for (int lv = GX_LEVEL_PORTABLE; lv <= max_level; lv++) {
                gx_set_level(lv);
                memset(got, 0xff, n_out * sizeof(float));
                run(c, &fx, var, lv == max_level ? pool : NULL, got);
                const int bad = compare(c, got, want);
                tap_ok(bad == 0,
                       "head_dim %d, %d/%d heads, blocks of %d, %s, %s%s: all n_kv, both orders bitwise (%d differ)",
                       c->hd, c->n_head, c->n_head_kv, c->block_tokens, var->name, level_names[lv],
                       lv == max_level ? ", 2 threads" : "", bad);
            }
            gx_set_level(GX_LEVEL_AVX512);
        }
        free(want);
        free(got);
        fixture_free(&fx);
    }
    tpool_free(pool);
    return tap_done();
}
