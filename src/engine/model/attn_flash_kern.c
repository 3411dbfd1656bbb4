/* attn_flash_kern.c - the kernels of attn_flash_kern.h: portable and AVX2.
 *
 * Q.K^T (qk): positions in lanes. For a block of rows and one chunk, every
 * dimension d is one load of the chunk's 16 positions (two 8-lane vectors,
 * converted from F16 exactly) and one broadcast of q[r][d] per row: the
 * micro-kernel of a matrix product, rows x 16 accumulators in registers.
 *
 * P.V (pv): positions in lanes too (V is transposed like K). For a block
 * of 3 rows x 4 dimensions, 12 accumulators of 8 lanes (positions p % 8)
 * over all chunks of the tile; at the end each row's 4 lane sums are done
 * together by a transpose-add tree whose every add is one of lanes8's.
 *
 * Both are chains of fused multiply-adds per lane, so the portable code
 * (fmaf) gives the same bits.
 */
#include "engine/model/attn_flash_kern.h"

#include <math.h>
#include <string.h>

#include "engine/kernels/ggml_exact.h"
#include "engine/quant/fp16.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FK_X86 1
#define FK_AVX2 __attribute__((target("avx2,fma,f16c")))
#define FK_INLINE inline __attribute__((always_inline))
#define FK_UNROLL _Pragma("GCC unroll 16")
#endif

/* ---- exp ------------------------------------------------------------------ */

/* ggml_v_expf's constants: n = round(x log2 e), b = x - n ln2 (two parts),
 * exp(b) by a degree 5 polynomial, times 2^n. */
#define FK_R 0x1.8p23f
#define FK_L2E 0x1.715476p+0f
#define FK_LN2H 0x1.62e4p-1f
#define FK_LN2L 0x1.7f7d1cp-20f
#define FK_C5 0x1.0e4020p-7f
#define FK_C4 0x1.573e2ep-5f
#define FK_C3 0x1.555e66p-3f
#define FK_C2 0x1.fffdb6p-2f
#define FK_C1 0x1.ffffecp-1f
#define FK_LOW (-87.0f)

float fa_exp(float x)
{
    if (!(x >= FK_LOW))
        return 0.0f;
    const float z = fmaf(x, FK_L2E, FK_R);
    const float n = z - FK_R;
    const float b = fmaf(-n, FK_LN2L, fmaf(-n, FK_LN2H, x));
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(FK_C5, b, FK_C4), u, fmaf(FK_C3, b, FK_C2)), u, fmaf(FK_C1, b, 1.0f));
    const uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
    float p;
    memcpy(&p, &bits, sizeof p);
    return j * p;
}

/* ---- portable --------------------------------------------------------------- */

static float ld_c(const void *p, bool f16, int64_t i)
{
    return f16 ? fp16_to_fp32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static void qk_c(const void *kc, int64_t ks, bool f16, const float *q, int64_t qs, int R, int hd, float *s,
                 int64_t ss)
{
    for (int r = 0; r < R; r++)
        for (int l = 0; l < 16; l++) {
            float a = 0.0f;
            for (int d = 0; d < hd; d++)
                a = fmaf(q[r * qs + d], ld_c(kc, f16, d * ks + l), a);
            s[r * ss + l] = a;
        }
}

static float lanes8_sum(const float *a)
{
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

static void pv_c(const void *const *vc, const int64_t *vs, const bool *f16, int nc, const float *p, int64_t ps,
                 int R, int hd, float *o, int64_t os)
{
    for (int r = 0; r < R; r++)
        for (int d = 0; d < hd; d++) {
            float a[8] = {0};
            for (int c = 0; c < nc; c++)
                for (int h = 0; h < 2; h++)
                    for (int j = 0; j < 8; j++)
                        a[j] = fmaf(p[r * ps + 16 * c + 8 * h + j], ld_c(vc[c], f16[c], d * vs[c] + 8 * h + j), a[j]);
            o[r * os + d] += lanes8_sum(a);
        }
}

static void widen_c(const uint16_t *x, int64_t stride, int hd, float *out)
{
    for (int d = 0; d < hd; d++)
        for (int l = 0; l < 16; l++)
            out[d * 16 + l] = fp16_to_fp32(x[d * stride + l]);
}

static float exp_sum_c(float *x, int n, float m)
{
    float acc[8] = {0};
    for (int i = 0; i < n; i += 8)
        for (int j = 0; j < 8; j++) {
            x[i + j] = fa_exp(x[i + j] - m);
            acc[j] += x[i + j];
        }
    return lanes8_sum(acc);
}

static float max_c(const float *x, int n)
{
    float m = -INFINITY;
    for (int i = 0; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

static void scale_c(float *x, int n, float a)
{
    for (int i = 0; i < n; i++)
        x[i] *= a;
}

/* Q8_0: d * q; Q4_0: d * (q - 8), low nibbles first. The products are
 * exact (11 + 8 significant bits), so any code computes the same. */
static void deq_c(bool q4, const uint8_t *rows, int64_t rb, int n, int hd, bool transpose, float *out)
{
    const int bs = q4 ? 18 : 34;
    for (int l = 0; l < 16; l++)
        for (int b = 0; b < hd / 32; b++) {
            const uint8_t *blk = rows + l * rb + b * bs;
            uint16_t dh;
            memcpy(&dh, blk, 2);
            const float dd = fp16_to_fp32(dh);
            for (int j = 0; j < 32; j++) {
                float v = 0.0f;
                if (l < n)
                    v = q4 ? (float)((j < 16 ? blk[2 + j] & 15 : blk[2 + j - 16] >> 4) - 8) * dd
                           : (float)(int8_t)blk[2 + j] * dd;
                const int d = 32 * b + j;
                out[transpose ? d * 16 + l : l * hd + d] = v;
            }
        }
}

static const fa_kern_t kern_c = {qk_c, pv_c, widen_c, exp_sum_c, max_c, scale_c, deq_c};

#ifdef FK_X86
/* ---- AVX2 ------------------------------------------------------------------- */

FK_AVX2 static FK_INLINE __m256 ld8(const void *p, const int F16, int64_t i)
{
    if (F16)
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
    return _mm256_loadu_ps((const float *)p + i);
}

/* R rows (R <= 6) x 16 positions, accumulators in registers. */
FK_AVX2 static FK_INLINE void qk_n_256(const void *kc, int64_t ks, const float *q, int64_t qs, int hd, float *s,
                                       int64_t ss, const int R, const int F16)
{
    __m256 a[6][2];
    FK_UNROLL
    for (int r = 0; r < R; r++) {
        a[r][0] = _mm256_setzero_ps();
        a[r][1] = _mm256_setzero_ps();
    }
    for (int d = 0; d < hd; d++) {
        const __m256 k0 = ld8(kc, F16, d * ks), k1 = ld8(kc, F16, d * ks + 8);
        FK_UNROLL
        for (int r = 0; r < R; r++) {
            const __m256 b = _mm256_broadcast_ss(q + r * qs + d);
            a[r][0] = _mm256_fmadd_ps(b, k0, a[r][0]);
            a[r][1] = _mm256_fmadd_ps(b, k1, a[r][1]);
        }
    }
    FK_UNROLL
    for (int r = 0; r < R; r++) {
        _mm256_storeu_ps(s + r * ss, a[r][0]);
        _mm256_storeu_ps(s + r * ss + 8, a[r][1]);
    }
}

#define FK_QK(R, F16)                                                                                             \
    FK_AVX2 __attribute__((noinline)) static void qk_##R##_##F16(const void *kc, int64_t ks, const float *q,       \
                                                                 int64_t qs, int hd, float *s, int64_t ss)        \
    {                                                                                                             \
        qk_n_256(kc, ks, q, qs, hd, s, ss, R, F16);                                                               \
    }
FK_QK(1, 0) FK_QK(2, 0) FK_QK(3, 0) FK_QK(4, 0) FK_QK(5, 0) FK_QK(6, 0)
FK_QK(1, 1) FK_QK(2, 1) FK_QK(3, 1) FK_QK(4, 1) FK_QK(5, 1) FK_QK(6, 1)

typedef void (*qk_fn_t)(const void *, int64_t, const float *, int64_t, int, float *, int64_t);

FK_AVX2 static void qk_256(const void *kc, int64_t ks, bool f16, const float *q, int64_t qs, int R, int hd,
                           float *s, int64_t ss)
{
    static const qk_fn_t fns[2][6] = {{qk_1_0, qk_2_0, qk_3_0, qk_4_0, qk_5_0, qk_6_0},
                                      {qk_1_1, qk_2_1, qk_3_1, qk_4_1, qk_5_1, qk_6_1}};
    for (int r = 0; r < R; r += 6) {
        const int n = R - r < 6 ? R - r : 6;
        fns[f16][n - 1](kc, ks, q + r * qs, qs, hd, s + r * ss, ss);
    }
}

/* The lanes8 sums of 4 accumulators, as [x0 x1 x2 x3]: the same adds. */
FK_AVX2 static FK_INLINE __m128 hsum8x4_256(const __m256 *x)
{
    const __m256 z0 = _mm256_add_ps(_mm256_permute2f128_ps(x[0], x[1], 0x20), _mm256_permute2f128_ps(x[0], x[1], 0x31));
    const __m256 z1 = _mm256_add_ps(_mm256_permute2f128_ps(x[2], x[3], 0x20), _mm256_permute2f128_ps(x[2], x[3], 0x31));
    /* [x0:A x0:B x2:A x2:B | x1:A x1:B x3:A x3:B] */
    const __m256 w = _mm256_add_ps(_mm256_shuffle_ps(z0, z1, 0x44), _mm256_shuffle_ps(z0, z1, 0xee));
    /* [x0 x2 x0 x2 | x1 x3 x1 x3] */
    const __m256 h = _mm256_hadd_ps(w, w);
    return _mm_unpacklo_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* NR rows (1..3) x dimensions d0 .. d0 + 3: accumulator x[r][i] is (row
 * r, dimension d0 + i), lane j of it the positions p % 8 == j. */
FK_AVX2 static FK_INLINE void pv_blk_256(const void *const *vc, const int64_t *vs, const bool *f16, int nc,
                                         const float *p, int64_t ps, int d0, float *o, int64_t os, const int NR)
{
    __m256 x[3][4];
    FK_UNROLL
    for (int r = 0; r < NR; r++) {
        FK_UNROLL
        for (int i = 0; i < 4; i++) {
            x[r][i] = _mm256_setzero_ps();
        }
    }
    for (int c = 0; c < nc; c++) {
        const float *pc = p + 16 * c;
        const int64_t st = vs[c];
        const bool h16 = f16[c];
        const void *vb = h16 ? (const void *)((const uint16_t *)vc[c] + d0 * st)
                             : (const void *)((const float *)vc[c] + d0 * st);
        FK_UNROLL
        for (int h = 0; h < 2; h++) {
            __m256 pr[3];
            FK_UNROLL
            for (int r = 0; r < NR; r++) {
                pr[r] = _mm256_loadu_ps(pc + r * ps + 8 * h);
            }
            FK_UNROLL
            for (int i = 0; i < 4; i++) {
                const __m256 vv = h16 ? ld8(vb, 1, i * st + 8 * h) : ld8(vb, 0, i * st + 8 * h);
                FK_UNROLL
                for (int r = 0; r < NR; r++) {
                    x[r][i] = _mm256_fmadd_ps(pr[r], vv, x[r][i]);
                }
            }
        }
    }
    FK_UNROLL
    for (int r = 0; r < NR; r++) {
        _mm_storeu_ps(o + r * os + d0, _mm_add_ps(_mm_loadu_ps(o + r * os + d0), hsum8x4_256(x[r])));
    }
}

#define FK_PVB(NR)                                                                                                \
    FK_AVX2 __attribute__((noinline)) static void pv_blk##NR(const void *const *vc, const int64_t *vs,           \
                                                             const bool *f16, int nc, const float *p, int64_t ps, \
                                                             int hd, float *o, int64_t os)                        \
    {                                                                                                             \
        for (int d0 = 0; d0 < hd; d0 += 4)                                                                        \
            pv_blk_256(vc, vs, f16, nc, p, ps, d0, o, os, NR);                                                    \
    }
FK_PVB(1) FK_PVB(2) FK_PVB(3)

FK_AVX2 static void pv_rows_256(const void *const *vc, const int64_t *vs, const bool *f16, int nc, const float *p,
                                int64_t ps, int R, int hd, float *o, int64_t os)
{
    typedef void (*fn_t)(const void *const *, const int64_t *, const bool *, int, const float *, int64_t, int,
                         float *, int64_t);
    static const fn_t fns[3] = {pv_blk1, pv_blk2, pv_blk3};
    for (int r = 0; r < R; r += 3) {
        const int n = R - r < 3 ? R - r : 3;
        fns[n - 1](vc, vs, f16, nc, p + r * ps, ps, hd, o + r * os, os);
    }
}

FK_AVX2 static void pv_256(const void *const *vc, const int64_t *vs, const bool *f16, int nc, const float *p,
                           int64_t ps, int R, int hd, float *o, int64_t os)
{
    if (hd % 4) {
        pv_c(vc, vs, f16, nc, p, ps, R, hd, o, os);
        return;
    }
    pv_rows_256(vc, vs, f16, nc, p, ps, R, hd, o, os);
}

FK_AVX2 static void widen_256(const uint16_t *x, int64_t stride, int hd, float *out)
{
    for (int d = 0; d < hd; d++) {
        _mm256_storeu_ps(out + d * 16, ld8(x, 1, d * stride));
        _mm256_storeu_ps(out + d * 16 + 8, ld8(x, 1, d * stride + 8));
    }
}

FK_AVX2 static FK_INLINE __m256 exp_256(__m256 x)
{
    const __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(FK_LOW), _CMP_GE_OQ);
    x = _mm256_max_ps(x, _mm256_set1_ps(FK_LOW));
    const __m256 r = _mm256_set1_ps(FK_R);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(FK_L2E), r);
    const __m256 n = _mm256_sub_ps(z, r);
    const __m256 b =
        _mm256_fnmadd_ps(n, _mm256_set1_ps(FK_LN2L), _mm256_fnmadd_ps(n, _mm256_set1_ps(FK_LN2H), x));
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 hi = _mm256_fmadd_ps(_mm256_set1_ps(FK_C5), b, _mm256_set1_ps(FK_C4));
    const __m256 mid = _mm256_fmadd_ps(_mm256_set1_ps(FK_C3), b, _mm256_set1_ps(FK_C2));
    const __m256 lo = _mm256_fmadd_ps(_mm256_set1_ps(FK_C1), b, _mm256_set1_ps(1.0f));
    const __m256 j = _mm256_fmadd_ps(_mm256_fmadd_ps(hi, u, mid), u, lo);
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(_mm256_mul_ps(j, _mm256_castsi256_ps(e)), keep);
}

FK_AVX2 static float exp_sum_256(float *x, int n, float m)
{
    const __m256 vm = _mm256_set1_ps(m);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 8) {
        const __m256 e = exp_256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        _mm256_storeu_ps(x + i, e);
        acc = _mm256_add_ps(acc, e);
    }
    float a[8];
    _mm256_storeu_ps(a, acc);
    return lanes8_sum(a);
}

FK_AVX2 static float max_256(const float *x, int n)
{
    __m256 m = _mm256_set1_ps(-INFINITY);
    for (int i = 0; i < n; i += 8)
        m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
    float a[8];
    _mm256_storeu_ps(a, m);
    return max_c(a, 8);
}

FK_AVX2 static void scale_256(float *x, int n, float a)
{
    const __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), va));
    for (; i < n; i++)
        x[i] *= a;
}

/* Rows of 32-value blocks to floats: Q8_0 sign-extends, Q4_0 splits the
 * nibbles; then one exact multiply by the block's scale. */
FK_AVX2 static FK_INLINE void deq_blk_256(bool q4, const uint8_t *blk, __m256 v[4])
{
    uint16_t dh;
    memcpy(&dh, blk, 2);
    const __m256 d = _mm256_set1_ps(fp16_to_fp32(dh));
    __m256i w[4];
    if (q4) {
        const __m128i b = _mm_loadu_si128((const __m128i *)(blk + 2));
        const __m128i lo = _mm_and_si128(b, _mm_set1_epi8(15));
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(15));
        const __m128i e8 = _mm_set1_epi8(8);
        const __m128i l8 = _mm_sub_epi8(lo, e8), h8 = _mm_sub_epi8(hi, e8);
        w[0] = _mm256_cvtepi8_epi32(l8);
        w[1] = _mm256_cvtepi8_epi32(_mm_srli_si128(l8, 8));
        w[2] = _mm256_cvtepi8_epi32(h8);
        w[3] = _mm256_cvtepi8_epi32(_mm_srli_si128(h8, 8));
    } else {
        for (int i = 0; i < 4; i++)
            w[i] = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(blk + 2 + 8 * i)));
    }
    for (int i = 0; i < 4; i++)
        v[i] = _mm256_mul_ps(_mm256_cvtepi32_ps(w[i]), d);
}

FK_AVX2 static void deq_256(bool q4, const uint8_t *rows, int64_t rb, int n, int hd, bool transpose, float *out)
{
    const int bs = q4 ? 18 : 34;
    if (!transpose) {
        for (int l = 0; l < 16; l++)
            for (int b = 0; b < hd / 32; b++) {
                __m256 v[4];
                if (l < n) {
                    deq_blk_256(q4, rows + l * rb + b * bs, v);
                } else {
                    v[0] = v[1] = v[2] = v[3] = _mm256_setzero_ps();
                }
                for (int i = 0; i < 4; i++)
                    _mm256_storeu_ps(out + l * hd + 32 * b + 8 * i, v[i]);
            }
        return;
    }
    /* transposed: dequantize rows in groups of 8 and transpose 8 x 8 */
    for (int b = 0; b < hd / 32; b++)
        for (int l0 = 0; l0 < 16; l0 += 8) {
            __m256 v[8][4];
            for (int l = 0; l < 8; l++) {
                if (l0 + l < n) {
                    deq_blk_256(q4, rows + (l0 + l) * rb + b * bs, v[l]);
                } else {
                    v[l][0] = v[l][1] = v[l][2] = v[l][3] = _mm256_setzero_ps();
                }
            }
            for (int i = 0; i < 4; i++) {
                const __m256 t0 = _mm256_unpacklo_ps(v[0][i], v[1][i]), t1 = _mm256_unpackhi_ps(v[0][i], v[1][i]);
                const __m256 t2 = _mm256_unpacklo_ps(v[2][i], v[3][i]), t3 = _mm256_unpackhi_ps(v[2][i], v[3][i]);
                const __m256 t4 = _mm256_unpacklo_ps(v[4][i], v[5][i]), t5 = _mm256_unpackhi_ps(v[4][i], v[5][i]);
                const __m256 t6 = _mm256_unpacklo_ps(v[6][i], v[7][i]), t7 = _mm256_unpackhi_ps(v[6][i], v[7][i]);
                const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
                const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
                const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
                const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
                const __m256 r[8] = {
                    _mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
                    _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
                    _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
                    _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31)};
                /* r[j] holds dimension 32 b + 8 i + j of the 8 rows */
                for (int j = 0; j < 8; j++)
                    _mm256_storeu_ps(out + (32 * b + 8 * i + j) * 16 + l0, r[j]);
            }
        }
}

static const fa_kern_t kern_256 = {qk_256, pv_256, widen_256, exp_sum_256, max_256, scale_256, deq_256};
#endif

const fa_kern_t *fa_kern(void)
{
#ifdef FK_X86
    if (gx_level() >= GX_LEVEL_AVX2)
        return &kern_256;
#endif
    return &kern_c;
}

const fa_kern_t *fa_kern_portable(void) { return &kern_c; }
