/* test_attn_flash.c - flash attention (attn_flash.h) against a double
 * precision reference, and its invariances.
 *
 * For caches of every type pair (F16, Q8_0, Q4_0 for K and V), head shapes
 * (GQA, MHA, head sizes 32 to 256; 8 and 40 with an F16 cache), windows,
 * sinks and bidirectional rows: every (token, head) output is within 2e-5
 * (|V| <= 1) of the reference computed in double from the values the
 * cache holds (dequantized) and q rounded to F16 (as the contract says). Then, bitwise:
 *  - each token computed alone equals the token computed in the batch
 *    (batch invariance: other rows of its query tile change nothing);
 *  - one thread equals two (the work split, decode-sized batches split
 *    into segments and merged);
 *  - the portable kernels equal the AVX2 ones (attn_flash_kern.h).
 * And the plans: each (token, head, segment) in exactly one item; a
 * decode token with segments enough for the threads keeps the query heads
 * of a KV head in one item (K/V read once for all of them).
 * Positions past a sequence's end hold Inf and NaN: they must not leak.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels/ggml_exact.h"
#include "engine/model/attn_flash.h"
#include "engine/model/attn_flash_kern.h"
#include "engine/model/kv.h"
#include "engine/quant/fp16.h"
#include "engine/quant/quant.h"
#include "tap.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float rnd(void) /* uniform in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

/* Sequence lengths: around chunk, tile and segment boundaries. */
static const int32_t seq_len[] = {1, 17, 64, 65, 511, 513, 1100, 1600};
enum { N_SEQ = sizeof seq_len / sizeof seq_len[0], MAX_CTX = 1664, LAYER = 1, MAX_TOK = 96 };

typedef struct {
    int hd, n_head, n_head_kv;
    kv_type_t tk, tv;
} fcase_t;

static const fcase_t cases[] = {
    {64, 9, 3, KV_F16, KV_F16},   {64, 9, 3, KV_Q8_0, KV_Q8_0}, {64, 9, 3, KV_Q4_0, KV_Q4_0},
    {64, 9, 3, KV_F16, KV_Q8_0},  {64, 9, 3, KV_Q8_0, KV_F16},  {128, 14, 2, KV_F16, KV_F16},
    {128, 14, 2, KV_Q8_0, KV_Q4_0}, {256, 4, 1, KV_F16, KV_F16}, {256, 4, 1, KV_Q8_0, KV_Q8_0},
    {32, 4, 4, KV_F16, KV_F16},   {32, 4, 4, KV_Q4_0, KV_Q8_0}, {96, 32, 8, KV_F16, KV_F16},
    {8, 6, 2, KV_F16, KV_F16},    {40, 5, 1, KV_F16, KV_F16},
};

typedef struct {
    const char *name;
    int32_t window; /* 0: none */
    bool sinks, bidir;
} fvar_t;

static const fvar_t variants[] = {
    {"causal", 0, false, false},
    {"window 100", 100, false, false},
    {"window 600, sinks", 600, true, false},
    {"sinks", 0, true, false},
    {"bidirectional rows", 0, false, true},
};

typedef struct {
    kv_cache_t *kv;
    int64_t kvd;
    float *k, *v;              /* [N_SEQ][MAX_CTX][kvd]: what the cache holds */
    int32_t n_tok;
    int32_t seq[MAX_TOK], n_kv[MAX_TOK], start[MAX_TOK];
    const int32_t *blocks[MAX_TOK];
    int32_t *wtab[MAX_TOK];
    float *q, *sinks;
} ffix_t;

/* What the cache holds for float x: the type's rounding. */
static void cache_round(kv_type_t t, const float *x, float *y, int64_t n)
{
    uint8_t buf[4096];
    quant_quantize_row(kv_type_qtype(t), x, buf, n);
    quant_dequantize_row(kv_type_qtype(t), buf, y, n);
}

static bool fix_make(const fcase_t *c, ffix_t *fx)
{
    memset(fx, 0, sizeof *fx);
    fx->kvd = (int64_t)c->n_head_kv * c->hd;
    const int32_t bt = 16, per_seq = MAX_CTX / bt;
    kv_opts_t o = {.n_layer = 2, .kv_dim = fx->kvd, .block_tokens = bt, .n_blocks = N_SEQ * per_seq,
                   .n_seq = N_SEQ, .max_seq_len = MAX_CTX, .type_k = c->tk, .type_v = c->tv};
    if (!(fx->kv = kv_create(&o, NULL)))
        return false;
    const size_t n = (size_t)N_SEQ * MAX_CTX * (size_t)fx->kvd;
    fx->k = calloc(n, sizeof(float));
    fx->v = calloc(n, sizeof(float));
    float *k = malloc((size_t)fx->kvd * 2 * sizeof(float)), *v = k + fx->kvd;
    if (!fx->k || !fx->v || !k)
        return false;
    for (int s = 0; s < N_SEQ; s++) {
        const int32_t len = seq_len[s], cap = (len + 15) / 16 * 16;
        if (kv_seq_reserve(fx->kv, s, cap, NULL) != LF_OK)
            return false;
        const float kmag = s % 2 ? 3.0f : 1.0f;
        for (int32_t p = 0; p < cap; p++) {
            for (int64_t e = 0; e < fx->kvd; e++) {
                k[e] = p < len ? rnd() * kmag : (e % 2 ? INFINITY : NAN);
                v[e] = p < len ? rnd() : (e % 3 ? -INFINITY : NAN);
            }
            for (int l = 0; l < 2; l++)
                kv_store_f32(fx->kv, l, s, p, k, v);
            if (p < len) {
                const size_t row = ((size_t)s * MAX_CTX + (size_t)p) * (size_t)fx->kvd;
                cache_round(c->tk, k, fx->k + row, fx->kvd);
                cache_round(c->tv, v, fx->v + row, fx->kvd);
            }
        }
        kv_seq_set_len(fx->kv, s, len);
    }
    free(k);
    /* tokens: the last positions of every sequence (a prompt's end: a run
     * of consecutive tokens), up to 8 per sequence and 40 of the longest
     * (several query tiles, grouped into one item) */
    for (int s = 0; s < N_SEQ; s++) {
        const int32_t per = s == N_SEQ - 1 ? 40 : 8;
        for (int32_t j = 0; j < per && j < seq_len[s]; j++) {
            const int t = fx->n_tok++;
            fx->seq[t] = s;
            fx->n_kv[t] = seq_len[s] - (per - 1) + j > 0 ? seq_len[s] - (per - 1) + j : j + 1;
            fx->blocks[t] = kv_seq_blocks(fx->kv, s);
            fx->wtab[t] = malloc((size_t)(MAX_CTX / bt + 1) * sizeof(int32_t));
        }
    }
    fx->q = malloc((size_t)fx->n_tok * (size_t)(c->n_head * c->hd) * sizeof(float));
    fx->sinks = malloc((size_t)c->n_head * sizeof(float));
    if (!fx->q || !fx->sinks)
        return false;
    for (int64_t i = 0; i < (int64_t)fx->n_tok * c->n_head * c->hd; i++)
        fx->q[i] = rnd() * 2.0f;
    for (int h = 0; h < c->n_head; h++)
        fx->sinks[h] = rnd() * 4.0f;
    return true;
}

static void fix_free(ffix_t *fx)
{
    for (int t = 0; t < fx->n_tok; t++)
        free(fx->wtab[t]);
    kv_free(fx->kv);
    free(fx->k);
    free(fx->v);
    free(fx->q);
    free(fx->sinks);
}

/* Per-variant: n_kv (bidirectional: a row attends to its sequence's end),
 * window starts and tables with the blocks before the window given back. */
static void fix_variant(ffix_t *fx, const fvar_t *var, int32_t *n_kv)
{
    for (int t = 0; t < fx->n_tok; t++) {
        n_kv[t] = var->bidir && t % 2 ? seq_len[fx->seq[t]] : fx->n_kv[t];
        fx->start[t] = var->window && n_kv[t] > var->window ? n_kv[t] - var->window : 0;
        for (int32_t b = 0; b * 16 < n_kv[t]; b++)
            fx->wtab[t][b] = (b + 1) * 16 <= fx->start[t] ? -1 : fx->blocks[t][b];
    }
}

static void reference(const fcase_t *c, const ffix_t *fx, const fvar_t *var, const int32_t *n_kv, float scale,
                      double *out)
{
    const int n_rep = c->n_head / c->n_head_kv;
    double *sc = malloc(MAX_CTX * sizeof(double));
    for (int t = 0; t < fx->n_tok; t++)
        for (int h = 0; h < c->n_head; h++) {
            const float *q = fx->q + ((int64_t)t * c->n_head + h) * c->hd;
            const size_t base = (size_t)fx->seq[t] * MAX_CTX * (size_t)fx->kvd + (size_t)(h / n_rep * c->hd);
            double mx = var->sinks ? fx->sinks[h] : -INFINITY;
            for (int32_t p = fx->start[t]; p < n_kv[t]; p++) {
                double a = 0;
                for (int d = 0; d < c->hd; d++)
                    a += (double)fp16_to_fp32(fp16_from_fp32(q[d])) * scale * fx->k[base + (size_t)p * fx->kvd + d];
                sc[p] = a;
                mx = a > mx ? a : mx;
            }
            double sum = var->sinks ? exp(fx->sinks[h] - mx) : 0;
            for (int32_t p = fx->start[t]; p < n_kv[t]; p++)
                sum += (sc[p] = exp(sc[p] - mx));
            double *o = out + ((int64_t)t * c->n_head + h) * c->hd;
            for (int d = 0; d < c->hd; d++) {
                double a = 0;
                for (int32_t p = fx->start[t]; p < n_kv[t]; p++)
                    a += sc[p] * fx->v[base + (size_t)p * fx->kvd + d];
                o[d] = a / sum;
            }
        }
    free(sc);
}

/* The items of the last run's plan (*n of them); NULL if more than fit. */
static const attn_flash_span_t *last_plan(const attn_flash_t *fa, int32_t *n)
{
    static attn_flash_span_t it[4096];
    *n = attn_flash_plan_view(fa, it, 4096);
    return *n <= 4096 ? it : NULL;
}

/* Whether the last run's plan puts each (token, head, segment) of tokens
 * [0, n) in exactly one item (none twice: the work done once). */
static bool plan_covers_once(const attn_flash_t *fa, const fcase_t *c, const ffix_t *fx, const fvar_t *var,
                             const int32_t *n_kv, int t0, int n)
{
    int32_t ni;
    const attn_flash_span_t *it = last_plan(fa, &ni);
    if (!it)
        return false;
    for (int t = 0; t < n; t++) {
        const int32_t lo = var->window ? fx->start[t0 + t] : 0, hi = n_kv[t0 + t];
        for (int h = 0; h < c->n_head; h++)
            for (int32_t sg = lo / FA_SEG; sg < (hi + FA_SEG - 1) / FA_SEG; sg++) {
                int times = 0;
                for (int32_t i = 0; i < ni; i++)
                    times += t >= it[i].t0 && t < it[i].t0 + it[i].nt && h >= it[i].h0 && h < it[i].h0 + it[i].nh &&
                             (it[i].seg == -1 || it[i].seg == sg);
                if (times != 1)
                    return false;
            }
    }
    return true;
}

/* Whether the last run (one token; span: its positions from its first
 * segment's start) kept the query heads of each KV head in one item, as
 * it must when its segments give two threads 2 items each or more. */
static bool plan_keeps_kv_heads(const attn_flash_t *fa, const fcase_t *c, int32_t span)
{
    if ((span + FA_SEG - 1) / FA_SEG * c->n_head_kv < 2 * 2)
        return true; /* too few segments: heads may be split */
    int32_t ni;
    const attn_flash_span_t *it = last_plan(fa, &ni);
    for (int32_t i = 0; it && i < ni; i++)
        if (it[i].nh != c->n_head / c->n_head_kv)
            return false;
    return it != NULL;
}

static bool plans_ok = true;

/* Runs tokens [t0, t0 + n) of the fixture (and checks its plan). */
static void run(attn_flash_t *fa, tpool_t *pool, const fcase_t *c, const ffix_t *fx, const fvar_t *var,
                const int32_t *n_kv, float scale, int t0, int n, float *out)
{
    attn_job_t job = {
        .n_tok = n, .n_head = c->n_head, .n_head_kv = c->n_head_kv, .head_dim = c->hd,
        .q = fx->q + (int64_t)t0 * c->n_head * c->hd, .out = out + (int64_t)t0 * c->n_head * c->hd,
        .kv = fx->kv, .layer = LAYER,
        .blocks = (var->window ? (const int32_t *const *)fx->wtab : fx->blocks) + t0, .n_kv = n_kv + t0,
        .kv_start = var->window ? fx->start + t0 : NULL, .sinks = var->sinks ? fx->sinks : NULL,
        .scale = scale, .n_ctx = MAX_CTX,
    };
    attn_flash_run(fa, pool, &job);
    plans_ok &= plan_covers_once(fa, c, fx, var, n_kv, t0, n);
}

int main(void)
{
    tpool_t *pool = NULL;
    tap_ok(tpool_create(2, &pool, NULL) == LF_OK, "thread pool");
    const int max_level = gx_level();
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const fcase_t *c = &cases[ci];
        ffix_t fx;
        char name[128];
        snprintf(name, sizeof name, "hd %d, %d/%d heads, K %s V %s", c->hd, c->n_head, c->n_head_kv,
                 kv_type_name(c->tk), kv_type_name(c->tv));
        if (!tap_ok(fix_make(c, &fx), "%s: fixture", name)) {
            fix_free(&fx);
            continue;
        }
        attn_flash_t *fa2 = attn_flash_create(2, MAX_TOK, c->n_head, c->n_head_kv, c->hd, MAX_CTX, NULL);
        attn_flash_t *fa1 = attn_flash_create(1, MAX_TOK, c->n_head, c->n_head_kv, c->hd, MAX_CTX, NULL);
        const size_t n_out = (size_t)fx.n_tok * (size_t)(c->n_head * c->hd);
        float *got = malloc(n_out * sizeof(float)), *alt = malloc(n_out * sizeof(float));
        double *want = malloc(n_out * sizeof(double));
        int32_t n_kv[MAX_TOK];
        const float scale = 1.0f / sqrtf((float)c->hd);
        for (size_t vi = 0; vi < sizeof variants / sizeof variants[0]; vi++) {
            const fvar_t *var = &variants[vi];
            fix_variant(&fx, var, n_kv);
            reference(c, &fx, var, n_kv, scale, want);
            run(fa2, pool, c, &fx, var, n_kv, scale, 0, fx.n_tok, got);
            double worst = 0;
            bool finite = true;
            for (size_t i = 0; i < n_out; i++) {
                finite &= isfinite(got[i]);
                const double e = fabs((double)got[i] - want[i]);
                worst = e > worst || e != e ? e : worst;
            }
            tap_ok(finite && worst <= 2e-5, "%s, %s: within %.2g of the reference (worst %.3g)", name, var->name,
                   2e-5, worst);
            /* alone, one token at a time (decode-sized: split into segments);
             * with 4 segments or more (enough items for two threads) an item
             * takes all the query heads of its KV head, which then read each
             * K/V chunk once */
            bool shared = true;
            for (int t = 0; t < fx.n_tok; t++) {
                run(fa2, pool, c, &fx, var, n_kv, scale, t, 1, alt);
                shared &= plan_keeps_kv_heads(fa2, c, n_kv[t] - (var->window ? fx.start[t] / FA_SEG * FA_SEG : 0));
            }
            tap_ok(shared, "%s, %s: decode at 4+ segments: each item holds all query heads of its KV head", name,
                   var->name);
            tap_ok(!memcmp(got, alt, n_out * sizeof(float)), "%s, %s: every token alone = in the batch, bitwise",
                   name, var->name);
            /* one thread: no split */
            for (int t = 0; t < fx.n_tok; t++)
                run(fa1, NULL, c, &fx, var, n_kv, scale, t, 1, alt);
            tap_ok(!memcmp(got, alt, n_out * sizeof(float)), "%s, %s: one thread = two, bitwise", name, var->name);
            if (max_level >= GX_LEVEL_AVX2) {
                gx_set_level(GX_LEVEL_PORTABLE);
                run(fa2, pool, c, &fx, var, n_kv, scale, 0, fx.n_tok, alt);
                gx_set_level(max_level);
                tap_ok(!memcmp(got, alt, n_out * sizeof(float)), "%s, %s: portable kernels = AVX2, bitwise", name,
                       var->name);
            }
        }
        free(got);
        free(alt);
        free(want);
        attn_flash_free(fa1);
        attn_flash_free(fa2);
        fix_free(&fx);
    }
    tap_ok(plans_ok, "every plan (batch, single tokens split into segments, one thread) computes each (token, "
                     "head, segment) in exactly one item");
    /* fa_exp: exactly 1 at 0, 0 far below, close to exp elsewhere */
    double worst = 0;
    for (float x = -87.0f; x <= 0.0f; x += 0.01f) {
        const double e = fabs(fa_exp(x) / exp((double)x) - 1.0);
        worst = e > worst ? e : worst;
    }
    tap_ok(fa_exp(0.0f) == 1.0f && fa_exp(-INFINITY) == 0.0f && fa_exp(-88.0f) == 0.0f && worst < 4e-7,
           "fa_exp: exp(0) = 1, 0 below -87, relative error %.2g", worst);
    tpool_free(pool);
    return tap_done();
}
