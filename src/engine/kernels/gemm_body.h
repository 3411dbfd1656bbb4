/* gemm_body.h - the micro-kernels and row helpers of gemm_impl.h, written
 * once over a small vector interface that each ISA file defines before
 * including this file:
 *
 *   gv_t, GV_W (lanes), GEMM_MR (tile rows), GEMM_SUFFIX (name suffix);
 *   gv_zero(), gv_set1(f), gv_load(p), gv_store(p, v) (unaligned),
 *   gv_fma(a, b, c) = a * b + c, gv_add, gv_mul, gv_max, gv_min,
 *   gv_round(v) (to nearest integer, ties to even), gv_pow2i(n) (2^n for an
 *   integral n in [-126, 127]), gv_hmax(v), gv_hsum(v).
 *
 * Defines gemm_ukr_full_<sfx>, gemm_ukr_packed_<sfx>, gemm_ukr_half_<sfx>, gemm_row_max_<sfx>,
 * gemm_row_exp_<sfx>, gemm_row_scale_<sfx> (static).
 */
#include <stdint.h>

#define GB_CAT2(a, b) a##_##b
#define GB_CAT(a, b) GB_CAT2(a, b)
#define GB_FN(name) GB_CAT(name, GEMM_SUFFIX)
#define GB_NR (2 * GV_W)

/* the end of a full tile: the sums c0/c1[MR] (+ bias) stored (=/+= acc) to
 * c (ldc); a macro so that the sums stay in registers */
#define GB_TILE_STORE()                                                                                             \
    do {                                                                                                           \
        if (bias) {                                                                                                \
            const gv_t bb0 = gv_load(bias), bb1 = gv_load(bias + GV_W);                                            \
            _Pragma("GCC unroll 16") for (int r = 0; r < GEMM_MR; r++)                                            \
            {                                                                                                      \
                c0[r] = gv_add(c0[r], bb0);                                                                        \
                c1[r] = gv_add(c1[r], bb1);                                                                        \
            }                                                                                                      \
        }                                                                                                          \
        _Pragma("GCC unroll 16") for (int r = 0; r < GEMM_MR; r++)                                                \
        {                                                                                                          \
            float *cr = c + r * ldc;                                                                               \
            if (acc) {                                                                                             \
                c0[r] = gv_add(c0[r], gv_load(cr));                                                                \
                c1[r] = gv_add(c1[r], gv_load(cr + GV_W));                                                         \
            }                                                                                                      \
            gv_store(cr, c0[r]);                                                                                   \
            gv_store(cr + GV_W, c1[r]);                                                                            \
        }                                                                                                          \
    } while (0)

/* C[MR][2 vw] (=/+=) A[MR][kc] Bp[kc][2 vw] (+ bias) */
static void GB_FN(gemm_ukr_full)(int64_t kc, const float *a, int64_t lda, const float *b, float *c, int64_t ldc,
                                 int acc, const float *bias)
{
    gv_t c0[GEMM_MR], c1[GEMM_MR];
    const float *ar[GEMM_MR];
#pragma GCC unroll 16
    for (int r = 0; r < GEMM_MR; r++) {
        c0[r] = gv_zero();
        c1[r] = gv_zero();
        ar[r] = a + r * lda;
        /* C's lines (often far away: a whole pass since the last k block)
         * arrive while the sums run */
        __builtin_prefetch(c + r * ldc, 1, 3);
        __builtin_prefetch(c + r * ldc + GB_NR - 1, 1, 3);
    }
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; k++) {
        const gv_t b0 = gv_load(b), b1 = gv_load(b + GV_W);
        b += GB_NR;
#pragma GCC unroll 16
        for (int r = 0; r < GEMM_MR; r++) {
            const gv_t av = gv_set1(ar[r][k]);
            c0[r] = gv_fma(av, b0, c0[r]);
            c1[r] = gv_fma(av, b1, c1[r]);
        }
    }
    GB_TILE_STORE();
}

/* gemm_ukr_full with A packed: A[r][k] at a[k * MR + r] (one stream, the
 * row tiles of gemm.h's prepared activations) */
static void GB_FN(gemm_ukr_packed)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int acc,
                                   const float *bias)
{
    gv_t c0[GEMM_MR], c1[GEMM_MR];
#pragma GCC unroll 16
    for (int r = 0; r < GEMM_MR; r++) {
        c0[r] = gv_zero();
        c1[r] = gv_zero();
        __builtin_prefetch(c + r * ldc, 1, 3);
        __builtin_prefetch(c + r * ldc + GB_NR - 1, 1, 3);
    }
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; k++) {
        const gv_t b0 = gv_load(b), b1 = gv_load(b + GV_W);
        b += GB_NR;
#pragma GCC unroll 16
        for (int r = 0; r < GEMM_MR; r++) {
            const gv_t av = gv_set1(a[r]);
            c0[r] = gv_fma(av, b0, c0[r]);
            c1[r] = gv_fma(av, b1, c1[r]);
        }
        a += GEMM_MR;
    }
    GB_TILE_STORE();
}

/* C[MR][vw] (=/+=) A[MR][kc] Bp[kc][vw] (+ bias) */
static void GB_FN(gemm_ukr_half)(int64_t kc, const float *a, int64_t lda, const float *b, float *c, int64_t ldc,
                                 int acc, const float *bias)
{
    gv_t c0[GEMM_MR];
    const float *ar[GEMM_MR];
#pragma GCC unroll 16
    for (int r = 0; r < GEMM_MR; r++) {
        c0[r] = gv_zero();
        ar[r] = a + r * lda;
    }
    for (int64_t k = 0; k < kc; k++) {
        const gv_t b0 = gv_load(b);
        b += GV_W;
#pragma GCC unroll 16
        for (int r = 0; r < GEMM_MR; r++)
            c0[r] = gv_fma(gv_set1(ar[r][k]), b0, c0[r]);
    }
    if (bias) {
        const gv_t bb0 = gv_load(bias);
#pragma GCC unroll 16
        for (int r = 0; r < GEMM_MR; r++)
            c0[r] = gv_add(c0[r], bb0);
    }
#pragma GCC unroll 16
    for (int r = 0; r < GEMM_MR; r++) {
        float *cr = c + r * ldc;
        if (acc)
            c0[r] = gv_add(c0[r], gv_load(cr));
        gv_store(cr, c0[r]);
    }
}

static float GB_FN(gemm_row_max)(const float *x, int64_t n)
{
    int64_t i = 0;
    float m = x[0];
    if (n >= GV_W) {
        gv_t vm = gv_load(x);
        for (i = GV_W; i + GV_W <= n; i += GV_W)
            vm = gv_max(vm, gv_load(x + i));
        m = gv_hmax(vm);
    }
    for (; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

/* exp with Cephes' expf reduction and polynomial (about 1 ulp); inputs
 * clamped to [-87, 88] (below: ~1e-38 instead of 0, a softmax weight that
 * no float sum notices) */
static inline gv_t GB_FN(gv_exp)(gv_t x)
{
    x = gv_min(gv_max(x, gv_set1(-87.0f)), gv_set1(88.0f));
    const gv_t n = gv_round(gv_mul(x, gv_set1(1.44269504088896341f)));
    gv_t r = gv_fma(n, gv_set1(-0.693359375f), x);
    r = gv_fma(n, gv_set1(2.12194440e-4f), r);
    gv_t p = gv_set1(1.9875691500e-4f);
    p = gv_fma(p, r, gv_set1(1.3981999507e-3f));
    p = gv_fma(p, r, gv_set1(8.3334519073e-3f));
    p = gv_fma(p, r, gv_set1(4.1665795894e-2f));
    p = gv_fma(p, r, gv_set1(1.6666665459e-1f));
    p = gv_fma(p, r, gv_set1(5.0000001201e-1f));
    p = gv_fma(p, gv_mul(r, r), gv_add(r, gv_set1(1.0f)));
    return gv_mul(p, gv_pow2i(n));
}

static float GB_FN(gemm_row_exp)(float *x, int64_t n, float m)
{
    const gv_t vnm = gv_set1(-m); /* x + (-m) is x - m exactly */
    gv_t s = gv_zero();
    int64_t i = 0;
    for (; i + GV_W <= n; i += GV_W) {
        const gv_t e = GB_FN(gv_exp)(gv_add(gv_load(x + i), vnm));
        gv_store(x + i, e);
        s = gv_add(s, e);
    }
    float sum = gv_hsum(s);
    if (i < n) {
        /* the tail through one padded vector (same arithmetic as the body) */
        float t[GV_W];
        for (int j = 0; j < GV_W; j++)
            t[j] = i + j < n ? x[i + j] : m;
        gv_store(t, GB_FN(gv_exp)(gv_add(gv_load(t), vnm)));
        for (int j = 0; i + j < n; j++) {
            x[i + j] = t[j];
            sum += t[j];
        }
    }
    return sum;
}

/* y = x * s (x and y may be the same) */
static void GB_FN(gemm_row_scale)(const float *x, float *y, int64_t n, float s)
{
    const gv_t vs = gv_set1(s);
    int64_t i = 0;
    for (; i + GV_W <= n; i += GV_W)
        gv_store(y + i, gv_mul(gv_load(x + i), vs));
    for (; i < n; i++)
        y[i] = x[i] * s;
}
