/* test_ggml_exact.c - ggml_exact.h: the operation orders, and identical
 * bits from the AVX-512 and the portable implementations.
 *
 * The order cases use inputs whose result changes with the order of the
 * additions or with fusing a multiply into an add, so each pins one
 * decision of ggml's build (see ggml_exact.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/quant/fp16.h"
#include "engine/kernels/ggml_exact.h"
#include "engine/kernels/tpool.h"
#include "tap.h"

static int same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* ---- fixed cases: each result depends on the order ------------------- */

typedef struct {
    const char *name;
    int kind; /* 0 hsum16, 1 dot_f32_vec, 2 dot_f32_tiny */
    int n;
    int pos[4];
    float xv[4], yv[4]; /* x[pos[i]] = xv[i], y[pos[i]] = yv[i]; rest x 0, y 1 */
    float want;
} order_case_t;

#define P24 16777216.0f
#define E12 (1.0f + 0x1p-12f)
#define M11 (-(1.0f + 0x1p-11f))

static const order_case_t order_cases[] = {
    /* _mm512_reduce_add_ps pairs lane i with i + 8 first: 2^24 + 1 is lost,
     * but 1 + 1 from lanes 4 and 12 survives */
    {"hsum16 pairs lanes i, i+8, then i, i+4", 0, 16, {0, 4, 8, 12}, {P24, 1, 1, 1}, {0}, P24 + 2},
    /* four accumulators (chunks 0..3 of 16) reduced 0+2, 1+3, then 0+1 */
    {"vec_dot_f32: four accumulators, 0+2 and 1+3 first", 1, 64, {0, 16, 32, 48}, {P24, 1, 1, 1},
     {1, 1, 1, 1}, P24 + 2},
    /* tinyBLAS: one accumulator per lane over the chunks: every +1 is lost */
    {"tinyBLAS: one 16-lane accumulator", 2, 64, {0, 16, 32, 48}, {P24, 1, 1, 1}, {1, 1, 1, 1}, P24},
    /* leftovers: the last n % 8 are fused (exact product) */
    {"vec_dot_f32: last n%8 leftovers fused", 1, 2, {0, 1, 0, 0}, {M11, E12, 0, 0}, {1, E12, 1, 1},
     0x1p-24f},
    /* the first multiple of 8 leftovers are rounded products */
    {"vec_dot_f32: first 8k leftovers unfused", 1, 10, {0, 1, 0, 0}, {M11, E12, 0, 0}, {1, E12, 1, 1}, 0.0f},
    {"vec_dot_f32: leftovers after 64 + 8", 1, 74, {70, 73, 0, 0}, {M11, E12, 0, 0}, {1, E12, 1, 1},
     0x1p-24f},
};

static float run_order_case(const order_case_t *c)
{
    float x[128], y[128];
    for (int i = 0; i < 128; i++) {
        x[i] = 0.0f;
        y[i] = 1.0f;
    }
    for (int i = 0; i < 4; i++) {
        if (c->xv[i] == 0.0f && i > 0)
            continue;
        x[c->pos[i]] = c->xv[i];
        if (c->kind != 0)
            y[c->pos[i]] = c->yv[i];
    }
    switch (c->kind) {
    case 0:
        return gx_hsum16(x);
    case 1:
        return gx_dot_f32_vec(x, y, c->n);
    default:
        return gx_dot_f32_tiny(x, y, c->n);
    }
}

/* ---- expf special values --------------------------------------------- */

typedef struct {
    float x;
    int kind; /* 0 exact value want, 1 NaN, 2 within 2 ulp of expf */
    float want;
} exp_case_t;

static const exp_case_t exp_cases[] = {
    {-INFINITY, 0, 0.0f}, {0.0f, 0, 1.0f},   {-0.0f, 0, 1.0f},     {100.0f, 0, INFINITY}, {-200.0f, 0, 0.0f},
    {300.0f, 0, INFINITY}, {NAN, 1, 0.0f},   {1.0f, 2, 0.0f},      {-1.0f, 2, 0.0f},      {-20.5f, 2, 0.0f},
    {10.25f, 2, 0.0f},     {-87.0f, 2, 0.0f}, {0.001f, 2, 0.0f},
};

static int ulp_diff(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    return abs(ia - ib);
}

static int check_exp_case(const exp_case_t *c)
{
    float in[16], out[16];
    for (int l = 0; l < 16; l++)
        in[l] = c->x;
    gx_expf16(in, out);
    if (c->kind == 1)
        return isnan(out[3]);
    if (c->kind == 0)
        return same_bits(out[5], c->want) || (c->want == 0.0f && out[5] == 0.0f);
    return ulp_diff(out[7], expf(c->x)) <= 2;
}

/* ---- random data: every implementation level agrees ------------------ */

static const char *level_name(int lv)
{
    return lv == GX_LEVEL_AVX512 ? "avx512" : lv == GX_LEVEL_AVX2 ? "avx2" : "portable";
}

static uint64_t rng = 88172645463325252ull;
static float rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    float f = (float)(rng >> 40) / 16777216.0f * 2.0f - 1.0f;
    return (rng & 3) ? f : f * 30.0f;
}

/* Runs the same random inputs at level lv and at the portable level. */
static int compare_paths(int lv, int iters)
{
    static float x[1024], y[1024], a[2048], b[2048];
    static uint16_t hx[1024], hy[1024];
    int bad = 0;
    for (int it = 0; it < iters; it++) {
        int n = 1 + (int)(rng % 700);
        static const float special[16] = {-100.0f, -103.5f, -90.0f, -87.3f, 88.0f, 89.0f, -0.0f, 0.0f,
                                          -150.0f, 150.0f, -1e-7f, 1e-7f, -30.0f, 30.0f, -95.5f, -126.0f};
        for (int i = 0; i < n; i++) {
            x[i] = (it % 4 == 0 && i < 16) ? special[i] : rnd();
            y[i] = rnd();
            hx[i] = fp16_from_fp32(x[i]);
            hy[i] = fp16_from_fp32(y[i]);
        }
        float r[2][6];
        for (int p = 0; p < 2; p++) {
            gx_set_level(p == 0 ? lv : GX_LEVEL_PORTABLE);
            r[p][0] = gx_dot_f32_vec(x, y, n);
            r[p][1] = gx_dot_f32_tiny(x, y, n & ~15);
            r[p][2] = gx_dot_f16_vec(hx, hy, n);
            float *dst = p ? b : a;
            gx_silu_row(dst, x, n);
            r[p][3] = 0;
            memcpy(dst + n, x, (size_t)n * sizeof(float));
            gx_softmax_row(dst + n, n < 300 ? n : 300);
            float e[16];
            gx_expf16(x, e);
            memcpy(dst + 2 * n + 300, e, sizeof e);
            r[p][4] = 0;
            r[p][5] = 0;
        }
        gx_set_level(GX_LEVEL_AVX512);
        for (int k = 0; k < 6; k++)
            bad += !same_bits(r[0][k], r[1][k]);
        int m = n < 300 ? n : 300;
        bad += memcmp(a, b, (size_t)(n + m) * sizeof(float)) != 0;
        bad += memcmp(a + 2 * n + 300, b + 2 * n + 300, 16 * sizeof(float)) != 0;
    }
    return bad;
}

/* Softmax rows whose maximum is a zero of either sign (the vector levels
 * may find the other sign than ggml's scalar loop, which must not matter),
 * with -inf entries: every level gives the portable bits. */
static int check_softmax_zero_max(int lv)
{
    static const float vals[6] = {-0.0f, 0.0f, -1.5f, -INFINITY, -0.25f, -7.0f};
    int bad = 0;
    for (int n = 1; n <= 40; n++)
        for (int first = 0; first < 2; first++) {
            float a[40], b[40];
            for (int i = 0; i < n; i++)
                a[i] = i == n / 2 ? (first ? 0.0f : -0.0f) : vals[(i * 7 + n) % 6];
            memcpy(b, a, sizeof a);
            gx_set_level(lv);
            gx_softmax_row(a, n);
            gx_set_level(GX_LEVEL_PORTABLE);
            gx_softmax_row(b, n);
            bad += memcmp(a, b, (size_t)n * sizeof(float)) != 0;
        }
    gx_set_level(GX_LEVEL_AVX512);
    return bad;
}

/* ---- matmul: per-token order, batch invariance ------------------------ */

/* F32 (f16 == 0) or F16 weights: the batched product equals the one-token
 * product and the dot of that token's order, bit for bit, with and without
 * a bias (added after the dot, one rounding), with and without the F32 copy
 * of F16 activations; with a number of rows that is not a multiple of 4
 * tinyBLAS declines and ggml takes the decode order for every token. */
static int check_matmul(int f16, int R, int with_bias)
{
    enum { RMAX = 60, K = 80, T = 29 };
    static float W[RMAX * K], X[T * K], XR[T * K], out[T * RMAX], one[RMAX], bias[RMAX];
    static uint16_t W16[RMAX * K], X16[T * K];
    /* runs of prompt-order tokens of every length the tiles take (groups of
     * 4, tails of 1-3 tokens), between decode-order tokens */
    static const uint8_t order[T] = {1, 1, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 1, 0, 1,
                                     1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1};
    for (int i = 0; i < R * K; i++) {
        W[i] = rnd();
        W16[i] = fp16_from_fp32(W[i]);
    }
    for (int i = 0; i < T * K; i++) {
        X[i] = rnd();
        X16[i] = fp16_from_fp32(X[i]);
        XR[i] = fp16_to_fp32(X16[i]);
    }
    for (int r = 0; r < R; r++)
        bias[r] = rnd();
    const float *b = with_bias ? bias : NULL;
    tpool_t *pool = NULL;
    lf_err_t err;
    if (tpool_create(2, &pool, &err) != LF_OK)
        return 0;
    int ok = 1;
    for (int use_xr = 0; use_xr <= f16; use_xr++) {
        if (f16)
            gx_matmul_f16(pool, W16, R, K, X16, use_xr ? XR : NULL, T, order, b, out);
        else
            gx_matmul_f32(pool, W, R, K, X, T, order, b, out);
        for (int t = 0; t < T; t++) {
            if (f16)
                gx_matmul_f16(NULL, W16, R, K, X16 + t * K, use_xr ? XR + t * K : NULL, 1, order + t, b, one);
            else
                gx_matmul_f32(NULL, W, R, K, X + t * K, 1, order + t, b, one);
            for (int r = 0; r < R; r++) {
                float want;
                const bool tiny = order[t] == GX_ORDER_TINY && R % 4 == 0;
                if (f16)
                    want = tiny ? gx_dot_f16_tiny(W16 + r * K, X16 + t * K, K)
                                : gx_dot_f16_vec(W16 + r * K, X16 + t * K, K);
                else
                    want = tiny ? gx_dot_f32_tiny(W + r * K, X + t * K, K) : gx_dot_f32_vec(W + r * K, X + t * K, K);
                if (b)
                    want = want + b[r];
                ok &= same_bits(out[t * R + r], want) && same_bits(one[r], want);
            }
        }
    }
    tpool_free(pool);
    return ok;
}

int main(void)
{
    const int top = gx_level();
    for (int lv = top; lv >= GX_LEVEL_PORTABLE; lv--) {
        gx_set_level(lv);
        const char *impl = level_name(gx_level());
        for (size_t i = 0; i < sizeof order_cases / sizeof order_cases[0]; i++) {
            float got = run_order_case(&order_cases[i]);
            tap_ok(same_bits(got, order_cases[i].want), "%s: %s (got %a, want %a)", impl, order_cases[i].name,
                   (double)got, (double)order_cases[i].want);
        }
        for (size_t i = 0; i < sizeof exp_cases / sizeof exp_cases[0]; i++)
            tap_ok(check_exp_case(&exp_cases[i]), "%s: ggml_v_expf(%g)", impl, (double)exp_cases[i].x);
    }
    gx_set_level(GX_LEVEL_AVX512);
    for (int lv = top; lv > GX_LEVEL_PORTABLE; lv--)
        tap_ok(compare_paths(lv, 3000) == 0, "%s and portable implementations give the same bits", level_name(lv));
    if (top == GX_LEVEL_PORTABLE)
        tap_ok(compare_paths(GX_LEVEL_PORTABLE, 10) == 0, "no SIMD level on this CPU: portable only");
    for (int lv = top; lv > GX_LEVEL_PORTABLE; lv--)
        tap_ok(check_softmax_zero_max(lv) == 0, "%s: softmax rows with a zero maximum and -inf give the portable bits",
               level_name(lv));
    for (int lv = top; lv >= GX_LEVEL_PORTABLE; lv--) {
        gx_set_level(lv);
        /* rows: tails of every tile height (3, 4, 6) within 24-row chunks */
        static const int rows[] = {4, 36, 37, 52, 60};
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            for (int b = 0; b < 2; b++) {
                const int R = rows[i];
                tap_ok(check_matmul(0, R, b), "%s: gx_matmul_f32 (%d rows%s): per-token order, same bits alone "
                       "and batched, 1 or 2 threads", level_name(gx_level()), R, b ? ", bias" : "");
                tap_ok(check_matmul(1, R, b), "%s: gx_matmul_f16 (%d rows%s): per-token order, same bits alone "
                       "and batched, 1 or 2 threads", level_name(gx_level()), R, b ? ", bias" : "");
            }
    }
    gx_set_level(GX_LEVEL_AVX512);
    /* softmax: a row sums to ~1 and masked positions are never read */
    float s[40];
    for (int i = 0; i < 40; i++)
        s[i] = i < 33 ? (float)i * 0.25f : NAN;
    gx_softmax_row(s, 33);
    double sum = 0;
    for (int i = 0; i < 33; i++)
        sum += s[i];
    tap_ok(fabs(sum - 1.0) < 1e-5 && isnan(s[35]), "softmax row sums to 1 (%.7f), tail untouched", sum);
    return tap_done();
}
