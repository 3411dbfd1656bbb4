/* attn_lanes.c - the lane kernels of attn_lanes.h: portable, AVX2, AVX-512.
 *
 * K.q (kq): ggml_vec_dot_f16 over head_dim, for 16 positions at once. For
 * the dimensions below a multiple of 64 it keeps four 16-wide accumulators
 * per position, indexed by (d / 16) % 4 and d % 16; here the 16 values
 * "lane j of accumulator i" of all 16 positions are one vector, so
 * accumulator (i, j) of every position is an FMA chain over the 64-steps.
 * GGML_F32x16_REDUCE (acc0 + acc2, acc1 + acc3, then their sum) and the
 * _mm512_reduce_add_ps pairing over j (j + 8, then + 4, then {0,2} and
 * {1,3}, then the two) become vertical adds between those vectors. The
 * dimensions past the multiple of 64 are added in double, in order, as
 * ggml's leftover loop does. The result is the per-position dot, bit for
 * bit, for 16 positions in one vector.
 *
 * P.V (pv): tinyBLAS and ggml_vec_dot_f16 give position p the lane p % 16
 * anyway, so with V transposed each chunk is one FMA per dimension into
 * that dimension's accumulator vector; hsum then adds each dimension's 16
 * lanes in _mm512_reduce_add_ps's pairing, 16 (AVX-512) or 8 (AVX2)
 * dimensions at once with a transpose-add tree whose every add is one of
 * gx_hsum16's adds.
 */
#include "engine/model/attn_lanes.h"

#include <string.h>

#include "engine/quant/fp16.h"
#include "engine/kernels/ggml_exact.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define AL_X86 1
#define AL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")))
#define AL_AVX2 __attribute__((target("avx2,fma,f16c")))
#define AL_INLINE inline __attribute__((always_inline))
/* loops over registers (heads, dimensions, accumulators) unroll fully */
#define AL_UNROLL _Pragma("GCC unroll 16")
#endif

/* ---- portable ------------------------------------------------------------ */

static void round16_c(const float *x, int n, float *y)
{
    for (int i = 0; i < n; i++)
        y[i] = fp16_to_fp32(fp16_from_fp32(x[i]));
}

static float kq_one_c(const uint16_t *kc, int64_t stride, int l, const float *qf, int hd)
{
    const int np = hd & ~63;
    float acc[4][16];
    memset(acc, 0, sizeof acc);
    for (int s = 0; s < np; s += 64)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 16; j++) {
                const int d = s + 16 * i + j;
                acc[i][j] = acc[i][j] + fp16_to_fp32(kc[d * stride + l]) * qf[d]; /* exact product */
            }
    for (int j = 0; j < 16; j++) {
        acc[0][j] = acc[0][j] + acc[2][j];
        acc[1][j] = acc[1][j] + acc[3][j];
    }
    for (int j = 0; j < 16; j++)
        acc[0][j] = acc[0][j] + acc[1][j];
    double sum = (double)gx_hsum16(acc[0]);
    for (int d = np; d < hd; d++)
        sum += (double)(fp16_to_fp32(kc[d * stride + l]) * qf[d]);
    return (float)sum;
}

static void kq_c(const uint16_t *kc, int64_t stride, const float *qf, int ng, int hd, float scale, float *out,
                 int64_t out_stride)
{
    for (int g = 0; g < ng; g++)
        for (int l = 0; l < ATTN_CHUNK; l++)
            out[g * out_stride + l] = kq_one_c(kc, stride, l, qf + g * hd, hd) * scale;
}

/* tinyBLAS<16>: one 16-lane accumulator over head_dim (hd % 16 == 0). */
static void kq_tiny_c(const uint16_t *kc, int64_t stride, const float *qf, int ng, int hd, float scale, float *out,
                      int64_t out_stride)
{
    for (int g = 0; g < ng; g++)
        for (int l = 0; l < ATTN_CHUNK; l++) {
            float acc[16] = {0};
            for (int d = 0; d < hd; d += 16)
                for (int j = 0; j < 16; j++)
                    acc[j] = acc[j] + fp16_to_fp32(kc[(d + j) * stride + l]) * qf[g * hd + d + j]; /* exact product */
            out[g * out_stride + l] = gx_hsum16(acc) * scale;
        }
}

/* pv for dimensions [d0, d1) of every head; the other levels use it for
 * the dimensions their vector loops leave. */
static void pv_dims_c(const uint16_t *const *vc, int64_t stride, const float *pw, int64_t p_stride, int ng,
                      int32_t c0, int32_t c1, int32_t step, int32_t n_valid, int hd, int d0, int d1, float *acc)
{
    for (int g = 0; g < ng; g++)
        for (int d = d0; d < d1; d++) {
            float *a = acc + ((int64_t)g * hd + d) * ATTN_CHUNK;
            for (int l = 0; l < ATTN_CHUNK; l++)
                a[l] = 0.0f;
            for (int32_t c = c0; c < c1; c += step) {
                const int32_t valid = n_valid - ATTN_CHUNK * c;
                const int n = valid < ATTN_CHUNK ? (int)valid : ATTN_CHUNK;
                for (int l = 0; l < n; l++)
                    a[l] = a[l] + pw[g * p_stride + ATTN_CHUNK * c + l] * fp16_to_fp32(vc[c][d * stride + l]);
            }
        }
}

static void pv_c(const uint16_t *const *vc, int64_t stride, const float *pw, int64_t p_stride, int ng,
                 int32_t c0, int32_t c1, int32_t step, int32_t n_valid, int hd, float *acc)
{
    pv_dims_c(vc, stride, pw, p_stride, ng, c0, c1, step, n_valid, hd, 0, hd, acc);
}

static void reduce4_c(float *acc, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        acc[i] = (acc[i] + acc[i + 2 * n]) + (acc[i + n] + acc[i + 3 * n]);
}

static void hsum_c(const float *acc, int hd, float *out)
{
    for (int d = 0; d < hd; d++)
        out[d] = gx_hsum16(acc + (int64_t)d * ATTN_CHUNK);
}

static void prod_c(const uint16_t *vc, int64_t stride, const float *w, int hd, float *prod)
{
    for (int d = 0; d < hd; d++)
        for (int l = 0; l < ATTN_CHUNK; l++)
            prod[d * ATTN_CHUNK + l] = w[l] * fp16_to_fp32(vc[d * stride + l]);
}

static const attn_lanes_t lanes_c = {round16_c, kq_c, kq_tiny_c, pv_c, reduce4_c, hsum_c, prod_c};

#ifdef AL_X86
/* ---- AVX-512: a chunk's 16 lanes are one __m512 --------------------------- */

AL_AVX512 static AL_INLINE __m512 ld16_512(const uint16_t *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

AL_AVX512 static void round16_512(const float *x, int n, float *y)
{
    for (int i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(h));
    }
}

/* For accumulator lane j and NG heads: ggml's four accumulators of that
 * lane (FMA chains over the 64-steps), reduced (a0 + a2) + (a1 + a3).
 * ONE: np is 64 (one step). TINY: tinyBLAS's single accumulator, an FMA
 * chain over the 16-steps of all of head_dim. */
AL_AVX512 static AL_INLINE void kq_lane_512(const uint16_t *kc, int64_t stride, const float *qf, int hd, int np,
                                            int j, const int NG, const int ONE, const int TINY, __m512 *r)
{
    __m512 a[ATTN_GROUP][4];
    if (TINY) {
        AL_UNROLL
        for (int g = 0; g < NG; g++) {
            r[g] = _mm512_setzero_ps();
        }
        for (int d = j; d < hd; d += 16) {
            const __m512 k = ld16_512(kc + d * stride);
            AL_UNROLL
            for (int g = 0; g < NG; g++) {
                r[g] = _mm512_fmadd_ps(k, _mm512_set1_ps(qf[g * hd + d]), r[g]);
            }
        }
        return;
    }
    if (ONE) {
        /* one step: a_i = fma(k_i, q_i, +0), exact products (but never
         * -0). a0 + a2 is then fma(k0, q0, a2) with no other rounding
         * (and the same zero sign); likewise a1 + a3. */
        __m512 k[4];
        AL_UNROLL
        for (int i = 0; i < 4; i++) {
            k[i] = ld16_512(kc + (16 * i + j) * stride);
        }
        AL_UNROLL
        for (int g = 0; g < NG; g++) {
            const float *qg = qf + g * hd + j;
            const __m512 a2 = _mm512_fmadd_ps(k[2], _mm512_set1_ps(qg[32]), _mm512_setzero_ps());
            const __m512 a3 = _mm512_fmadd_ps(k[3], _mm512_set1_ps(qg[48]), _mm512_setzero_ps());
            r[g] = _mm512_add_ps(_mm512_fmadd_ps(k[0], _mm512_set1_ps(qg[0]), a2),
                                 _mm512_fmadd_ps(k[1], _mm512_set1_ps(qg[16]), a3));
        }
        return;
    }
    AL_UNROLL
    for (int g = 0; g < NG; g++) {
        AL_UNROLL
        for (int i = 0; i < 4; i++) {
            a[g][i] = _mm512_setzero_ps();
        }
    }
    for (int s = 0; s < np; s += 64) {
        AL_UNROLL
        for (int i = 0; i < 4; i++) {
            const int d = s + 16 * i + j;
            const __m512 k = ld16_512(kc + d * stride);
            AL_UNROLL
            for (int g = 0; g < NG; g++) {
                a[g][i] = _mm512_fmadd_ps(k, _mm512_set1_ps(qf[g * hd + d]), a[g][i]);
            }
        }
    }
    AL_UNROLL
    for (int g = 0; g < NG; g++) {
        r[g] = _mm512_add_ps(_mm512_add_ps(a[g][0], a[g][2]), _mm512_add_ps(a[g][1], a[g][3]));
    }
}

/* t6[i] of gx_hsum16 over the accumulator lanes: (r[i + 12] + r[i + 4]) +
 * (r[i + 8] + r[i]). */
AL_AVX512 static AL_INLINE void kq_t6_512(const uint16_t *kc, int64_t stride, const float *qf, int hd, int np,
                                          int i, const int NG, const int ONE, const int TINY, __m512 *t6)
{
    __m512 r0[ATTN_GROUP], r8[ATTN_GROUP], t3[ATTN_GROUP];
    kq_lane_512(kc, stride, qf, hd, np, i, NG, ONE, TINY, r0);
    kq_lane_512(kc, stride, qf, hd, np, i + 8, NG, ONE, TINY, r8);
    AL_UNROLL
    for (int g = 0; g < NG; g++) {
        t3[g] = _mm512_add_ps(r8[g], r0[g]);
    }
    kq_lane_512(kc, stride, qf, hd, np, i + 4, NG, ONE, TINY, r0);
    kq_lane_512(kc, stride, qf, hd, np, i + 12, NG, ONE, TINY, r8);
    AL_UNROLL
    for (int g = 0; g < NG; g++) {
        t6[g] = _mm512_add_ps(_mm512_add_ps(r8[g], r0[g]), t3[g]);
    }
}

/* The leftover dimensions [np, hd) added in double, in order, to h. */
AL_AVX512 static AL_INLINE void kq_left_512(const uint16_t *kc, int64_t stride, const float *qf, int hd, int np,
                                            const int NG, __m512 *h)
{
    __m512d lo[ATTN_GROUP], hi[ATTN_GROUP];
    AL_UNROLL
    for (int g = 0; g < NG; g++) {
        lo[g] = np ? _mm512_cvtps_pd(_mm512_castps512_ps256(h[g])) : _mm512_setzero_pd();
        hi[g] = np ? _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(h[g]), 1)))
                   : _mm512_setzero_pd();
    }
    /* k * q is exact in float and in double, so adding the float product
     * in double is one double FMA */
    for (int d = np; d < hd; d++) {
        const __m512 k = ld16_512(kc + d * stride);
        const __m512d klo = _mm512_cvtps_pd(_mm512_castps512_ps256(k));
        const __m512d khi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(k), 1)));
        AL_UNROLL
        for (int g = 0; g < NG; g++) {
            const __m512d q = _mm512_set1_pd((double)qf[g * hd + d]);
            lo[g] = _mm512_fmadd_pd(klo, q, lo[g]);
            hi[g] = _mm512_fmadd_pd(khi, q, hi[g]);
        }
    }
    AL_UNROLL
    for (int g = 0; g < NG; g++) {
        h[g] = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo[g])), _mm512_cvtpd_ps(hi[g]), 1);
    }
}

AL_AVX512 static AL_INLINE void kq_n_512(const uint16_t *kc, int64_t stride, const float *qf, int hd, int np,
                                         float scale, float *out, int64_t out_stride, const int NG, const int ONE,
                                         const int TINY)
{
    __m512 h[ATTN_GROUP];
    AL_UNROLL
    for (int g = 0; g < NG; g++) {
        h[g] = _mm512_setzero_ps();
    }
    if (np > 0 || TINY) {
        /* (t6[0] + t6[2]) + (t6[1] + t6[3]); a rolled loop over the four
         * t6 keeps the straight-line code (and its registers) small */
        __m512 t6[4][ATTN_GROUP];
#pragma GCC unroll 1
        for (int i = 0; i < 4; i++)
            kq_t6_512(kc, stride, qf, hd, np, i, NG, ONE, TINY, t6[i]);
        AL_UNROLL
        for (int g = 0; g < NG; g++) {
            h[g] = _mm512_add_ps(_mm512_add_ps(t6[0][g], t6[2][g]), _mm512_add_ps(t6[1][g], t6[3][g]));
        }
    }
    if (!TINY && np < hd)
        kq_left_512(kc, stride, qf, hd, np, NG, h);
    AL_UNROLL
    for (int g = 0; g < NG; g++) {
        _mm512_storeu_ps(out + g * out_stride, _mm512_mul_ps(h[g], _mm512_set1_ps(scale)));
    }
}

/* One function per (heads, one step) variant, so that each gets its own
 * register allocation. */
#define AL_KQ_512(name, NG, ONE, TINY)                                                                             \
    AL_AVX512 __attribute__((noinline)) static void name(const uint16_t *kc, int64_t stride, const float *qf,     \
                                                         int hd, int np, float scale, float *out, int64_t os)     \
    {                                                                                                              \
        kq_n_512(kc, stride, qf, hd, np, scale, out, os, NG, ONE, TINY);                                           \
    }
AL_KQ_512(kq_1_512, 1, 0, 0)
AL_KQ_512(kq_2_512, 2, 0, 0)
AL_KQ_512(kq_3_512, 3, 0, 0)
AL_KQ_512(kq_1_one_512, 1, 1, 0)
AL_KQ_512(kq_2_one_512, 2, 1, 0)
AL_KQ_512(kq_3_one_512, 3, 1, 0)
AL_KQ_512(kq_1_tiny_512, 1, 0, 1)
AL_KQ_512(kq_2_tiny_512, 2, 0, 1)
AL_KQ_512(kq_3_tiny_512, 3, 0, 1)

AL_AVX512 static void kq_512(const uint16_t *kc, int64_t stride, const float *qf, int ng, int hd, float scale,
                             float *out, int64_t out_stride)
{
    typedef void (*kq_fn_t)(const uint16_t *, int64_t, const float *, int, int, float, float *, int64_t);
    static const kq_fn_t fns[2][3] = {{kq_1_512, kq_2_512, kq_3_512}, {kq_1_one_512, kq_2_one_512, kq_3_one_512}};
    const int np = hd & ~63;
    fns[np == 64][ng - 1](kc, stride, qf, hd, np == 64 ? 64 : np, scale, out, out_stride);
}

AL_AVX512 static void kq_tiny_512(const uint16_t *kc, int64_t stride, const float *qf, int ng, int hd, float scale,
                                  float *out, int64_t out_stride)
{
    typedef void (*kq_fn_t)(const uint16_t *, int64_t, const float *, int, int, float, float *, int64_t);
    static const kq_fn_t fns[3] = {kq_1_tiny_512, kq_2_tiny_512, kq_3_tiny_512};
    fns[ng - 1](kc, stride, qf, hd, 0, scale, out, out_stride);
}

/* pv for dimensions [d0, d0 + ND) of NG heads, accumulators in registers. */
AL_AVX512 static AL_INLINE void pv_n_512(const uint16_t *const *vc, int64_t stride, const float *pw,
                                         int64_t p_stride, int32_t c0, int32_t c1, int32_t step, int32_t n_valid,
                                         int hd, int d0, float *acc, const int NG, const int ND)
{
    __m512 a[ATTN_GROUP][16], w[ATTN_GROUP];
    AL_UNROLL
    for (int g = 0; g < NG; g++) {
        AL_UNROLL
        for (int i = 0; i < ND; i++) {
            a[g][i] = _mm512_setzero_ps();
        }
    }
    const int32_t c_full = n_valid / ATTN_CHUNK < c1 ? n_valid / ATTN_CHUNK : c1;
    int32_t c = c0;
    for (; c < c_full; c += step) {
        const uint16_t *v = vc[c] + d0 * stride;
        AL_UNROLL
        for (int g = 0; g < NG; g++) {
            w[g] = _mm512_loadu_ps(pw + g * p_stride + ATTN_CHUNK * c);
        }
        AL_UNROLL
        for (int i = 0; i < ND; i++) {
            const __m512 x = ld16_512(v + i * stride);
            AL_UNROLL
            for (int g = 0; g < NG; g++) {
                a[g][i] = _mm512_fmadd_ps(x, w[g], a[g][i]);
            }
        }
    }
    if (c < c1) {
        /* the last, partial chunk: lanes past n_valid keep their sums */
        const uint16_t *v = vc[c] + d0 * stride;
        const __mmask16 m = (__mmask16)((1u << (n_valid - ATTN_CHUNK * c)) - 1);
        AL_UNROLL
        for (int g = 0; g < NG; g++) {
            w[g] = _mm512_maskz_loadu_ps(m, pw + g * p_stride + ATTN_CHUNK * c);
        }
        AL_UNROLL
        for (int i = 0; i < ND; i++) {
            const __m512 x = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, v + i * stride));
            AL_UNROLL
            for (int g = 0; g < NG; g++) {
                a[g][i] = _mm512_mask3_fmadd_ps(x, w[g], a[g][i], m);
            }
        }
    }
    AL_UNROLL
    for (int g = 0; g < NG; g++) {
        AL_UNROLL
        for (int i = 0; i < ND; i++) {
            _mm512_storeu_ps(acc + ((int64_t)g * hd + d0 + i) * ATTN_CHUNK, a[g][i]);
        }
    }
}

AL_AVX512 static void pv_512(const uint16_t *const *vc, int64_t stride, const float *pw, int64_t p_stride,
                             int ng, int32_t c0, int32_t c1, int32_t step, int32_t n_valid, int hd, float *acc)
{
    int d0 = 0;
    if (ng == 1)
        for (; d0 + 16 <= hd; d0 += 16)
            pv_n_512(vc, stride, pw, p_stride, c0, c1, step, n_valid, hd, d0, acc, 1, 16);
    for (; d0 + 8 <= hd; d0 += 8) {
        if (ng == 1)
            pv_n_512(vc, stride, pw, p_stride, c0, c1, step, n_valid, hd, d0, acc, 1, 8);
        else if (ng == 2)
            pv_n_512(vc, stride, pw, p_stride, c0, c1, step, n_valid, hd, d0, acc, 2, 8);
        else
            pv_n_512(vc, stride, pw, p_stride, c0, c1, step, n_valid, hd, d0, acc, 3, 8);
    }
    if (d0 < hd)
        pv_dims_c(vc, stride, pw, p_stride, ng, c0, c1, step, n_valid, hd, d0, hd, acc);
}

/* gx_hsum16 of 16 rows at once. Each step adds two vectors whose lanes
 * are the two operands of one of gx_hsum16's adds for some row: lanes
 * 8-15 + 0-7, then 4-7 + 0-3, then {0,1} + {2,3}, then 0 + 1 (the tree
 * leaves the rows in the order `perm`, an involution undone at the end). */
AL_AVX512 static void hsum16_rows_512(const float *acc, float *out, int n)
{
    __m512 b[8], c[4], e[2];
    for (int k = 0; k < 8; k++) {
        const __m512 x = _mm512_loadu_ps(acc + k * 16), y = _mm512_loadu_ps(acc + (k + 8) * 16);
        b[k] = _mm512_add_ps(_mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(3, 2, 3, 2)),
                             _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(1, 0, 1, 0)));
    }
    for (int k = 0; k < 4; k++)
        c[k] = _mm512_add_ps(_mm512_shuffle_f32x4(b[k], b[k + 4], _MM_SHUFFLE(3, 1, 3, 1)),
                             _mm512_shuffle_f32x4(b[k], b[k + 4], _MM_SHUFFLE(2, 0, 2, 0)));
    for (int k = 0; k < 2; k++)
        e[k] = _mm512_add_ps(_mm512_shuffle_ps(c[k], c[k + 2], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(c[k], c[k + 2], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 f = _mm512_add_ps(_mm512_shuffle_ps(e[0], e[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_ps(e[0], e[1], _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512i perm = _mm512_setr_epi32(0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15);
    _mm512_mask_storeu_ps(out, (__mmask16)((1u << n) - 1), _mm512_permutexvar_ps(perm, f));
}

AL_AVX512 static void reduce4_512(float *acc, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 a02 = _mm512_add_ps(_mm512_loadu_ps(acc + i), _mm512_loadu_ps(acc + i + 2 * n));
        const __m512 a13 = _mm512_add_ps(_mm512_loadu_ps(acc + i + n), _mm512_loadu_ps(acc + i + 3 * n));
        _mm512_storeu_ps(acc + i, _mm512_add_ps(a02, a13));
    }
    reduce4_c(acc + i, n - i);
}

AL_AVX512 static void hsum_512(const float *acc, int hd, float *out)
{
    int d = 0;
    for (; d + 16 <= hd; d += 16)
        hsum16_rows_512(acc + (int64_t)d * 16, out + d, 16);
    if (d < hd) {
        float pad[16 * 16];
        memset(pad, 0, sizeof pad);
        memcpy(pad, acc + (int64_t)d * 16, (size_t)(hd - d) * 16 * sizeof(float));
        hsum16_rows_512(pad, out + d, hd - d);
    }
}

AL_AVX512 static void prod_512(const uint16_t *vc, int64_t stride, const float *pw, int hd, float *prod)
{
    const __m512 w = _mm512_loadu_ps(pw);
    for (int d = 0; d < hd; d++)
        _mm512_storeu_ps(prod + d * 16, _mm512_mul_ps(ld16_512(vc + d * stride), w));
}

static const attn_lanes_t lanes_512 = {round16_512, kq_512, kq_tiny_512, pv_512, reduce4_512, hsum_512, prod_512};

/* ---- AVX2: a chunk's 16 lanes are two __m256 (lanes 0-7, 8-15) ----------- */

AL_AVX2 static AL_INLINE void ld16_256(const uint16_t *p, __m256 *lo, __m256 *hi)
{
    *lo = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
    *hi = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 8)));
}

AL_AVX2 static void round16_256(const float *x, int n, float *y)
{
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
    round16_c(x + i, n - i, y + i);
}

/* r = (a0 + a2) + (a1 + a3) of accumulator lane j (two halves); TINY:
 * tinyBLAS's single chain over all of head_dim (np = hd then). */
AL_AVX2 static AL_INLINE void kq_lane_256(const uint16_t *kc, int64_t stride, const float *qf, int np, int j,
                                          const int ONE, const int TINY, __m256 r[2])
{
    __m256 a[4][2];
    if (TINY) {
        r[0] = r[1] = _mm256_setzero_ps();
        for (int d = j; d < np; d += 16) {
            const __m256 q = _mm256_set1_ps(qf[d]);
            __m256 lo, hi;
            ld16_256(kc + d * stride, &lo, &hi);
            r[0] = _mm256_fmadd_ps(lo, q, r[0]);
            r[1] = _mm256_fmadd_ps(hi, q, r[1]);
        }
        return;
    }
    if (ONE) { /* np == 64: a0 + a2 = fma(k0, q0, a2), as kq_lane_512 */
        AL_UNROLL
        for (int x = 0; x < 2; x++) {
            __m256 k[4];
            AL_UNROLL
            for (int i = 0; i < 4; i++) {
                k[i] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kc + (16 * i + j) * stride + 8 * x)));
            }
            const __m256 a2 = _mm256_fmadd_ps(k[2], _mm256_set1_ps(qf[j + 32]), _mm256_setzero_ps());
            const __m256 a3 = _mm256_fmadd_ps(k[3], _mm256_set1_ps(qf[j + 48]), _mm256_setzero_ps());
            r[x] = _mm256_add_ps(_mm256_fmadd_ps(k[0], _mm256_set1_ps(qf[j]), a2),
                                 _mm256_fmadd_ps(k[1], _mm256_set1_ps(qf[j + 16]), a3));
        }
        return;
    }
    AL_UNROLL
    for (int i = 0; i < 4; i++) {
        a[i][0] = a[i][1] = _mm256_setzero_ps();
    }
    for (int s = 0; s < np; s += 64) {
        AL_UNROLL
        for (int i = 0; i < 4; i++) {
            const int d = s + 16 * i + j;
            const __m256 q = _mm256_set1_ps(qf[d]);
            __m256 lo, hi;
            ld16_256(kc + d * stride, &lo, &hi);
            a[i][0] = _mm256_fmadd_ps(lo, q, a[i][0]);
            a[i][1] = _mm256_fmadd_ps(hi, q, a[i][1]);
        }
    }
    AL_UNROLL
    for (int x = 0; x < 2; x++) {
        r[x] = _mm256_add_ps(_mm256_add_ps(a[0][x], a[2][x]), _mm256_add_ps(a[1][x], a[3][x]));
    }
}

/* t6[i] = (r[i + 12] + r[i + 4]) + (r[i + 8] + r[i]), as kq_t6_512. */
AL_AVX2 static AL_INLINE void kq_t6_256(const uint16_t *kc, int64_t stride, const float *qf, int np, int i,
                                        const int ONE, const int TINY, __m256 t6[2])
{
    __m256 r0[2], r8[2], t3[2];
    kq_lane_256(kc, stride, qf, np, i, ONE, TINY, r0);
    kq_lane_256(kc, stride, qf, np, i + 8, ONE, TINY, r8);
    AL_UNROLL
    for (int x = 0; x < 2; x++) {
        t3[x] = _mm256_add_ps(r8[x], r0[x]);
    }
    kq_lane_256(kc, stride, qf, np, i + 4, ONE, TINY, r0);
    kq_lane_256(kc, stride, qf, np, i + 12, ONE, TINY, r8);
    AL_UNROLL
    for (int x = 0; x < 2; x++) {
        t6[x] = _mm256_add_ps(_mm256_add_ps(r8[x], r0[x]), t3[x]);
    }
}

/* The leftover dimensions [np, hd) added in double, in order, to h. */
AL_AVX2 static AL_INLINE void kq_left_256(const uint16_t *kc, int64_t stride, const float *qf, int hd, int np,
                                          __m256 h[2])
{
    __m256d s[4];
    AL_UNROLL
    for (int x = 0; x < 4; x++) {
        const __m128 part = x & 1 ? _mm256_extractf128_ps(h[x / 2], 1) : _mm256_castps256_ps128(h[x / 2]);
        s[x] = np ? _mm256_cvtps_pd(part) : _mm256_setzero_pd();
    }
    /* one double FMA per exact product, as kq_left_512 */
    for (int d = np; d < hd; d++) {
        const __m256d q = _mm256_set1_pd((double)qf[d]);
        __m256 k[2];
        ld16_256(kc + d * stride, &k[0], &k[1]);
        AL_UNROLL
        for (int x = 0; x < 2; x++) {
            s[2 * x] = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(k[x])), q, s[2 * x]);
            s[2 * x + 1] = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(k[x], 1)), q, s[2 * x + 1]);
        }
    }
    AL_UNROLL
    for (int x = 0; x < 2; x++) {
        h[x] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(s[2 * x])), _mm256_cvtpd_ps(s[2 * x + 1]),
                                    1);
    }
}

AL_AVX2 static AL_INLINE void kq_one_256(const uint16_t *kc, int64_t stride, const float *qf, int hd, int np,
                                         float scale, float *out, const int ONE, const int TINY)
{
    __m256 h[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    if (np > 0) {
        __m256 t6[4][2];
#pragma GCC unroll 1
        for (int i = 0; i < 4; i++)
            kq_t6_256(kc, stride, qf, np, i, ONE, TINY, t6[i]);
        AL_UNROLL
        for (int x = 0; x < 2; x++) {
            h[x] = _mm256_add_ps(_mm256_add_ps(t6[0][x], t6[2][x]), _mm256_add_ps(t6[1][x], t6[3][x]));
        }
    }
    if (!TINY && np < hd)
        kq_left_256(kc, stride, qf, hd, np, h);
    AL_UNROLL
    for (int x = 0; x < 2; x++) {
        _mm256_storeu_ps(out + 8 * x, _mm256_mul_ps(h[x], _mm256_set1_ps(scale)));
    }
}

AL_AVX2 __attribute__((noinline)) static void kq_any_256(const uint16_t *kc, int64_t stride, const float *qf, int hd,
                                                         int np, float scale, float *out)
{
    kq_one_256(kc, stride, qf, hd, np, scale, out, 0, 0);
}

AL_AVX2 __attribute__((noinline)) static void kq_64_256(const uint16_t *kc, int64_t stride, const float *qf, int hd,
                                                        float scale, float *out)
{
    kq_one_256(kc, stride, qf, hd, 64, scale, out, 1, 0);
}

AL_AVX2 __attribute__((noinline)) static void kq_tiny1_256(const uint16_t *kc, int64_t stride, const float *qf,
                                                           int hd, float scale, float *out)
{
    kq_one_256(kc, stride, qf, hd, hd, scale, out, 0, 1);
}

AL_AVX2 static void kq_tiny_256(const uint16_t *kc, int64_t stride, const float *qf, int ng, int hd, float scale,
                                float *out, int64_t out_stride)
{
    for (int g = 0; g < ng; g++)
        kq_tiny1_256(kc, stride, qf + g * hd, hd, scale, out + g * out_stride);
}

AL_AVX2 static void kq_256(const uint16_t *kc, int64_t stride, const float *qf, int ng, int hd, float scale,
                           float *out, int64_t out_stride)
{
    const int np = hd & ~63;
    for (int g = 0; g < ng; g++) {
        if (np == 64)
            kq_64_256(kc, stride, qf + g * hd, hd, scale, out + g * out_stride);
        else
            kq_any_256(kc, stride, qf + g * hd, hd, np, scale, out + g * out_stride);
    }
}

/* pv for dimensions [d0, d0 + ND) of NG heads (two halves each). */
AL_AVX2 static AL_INLINE void pv_n_256(const uint16_t *const *vc, int64_t stride, const float *pw, int64_t p_stride,
                                       int32_t c0, int32_t c1, int32_t step, int32_t n_valid, int hd, int d0,
                                       float *acc, const int NG, const int ND)
{
    __m256 a[2][4][2], w[2][2];
    AL_UNROLL
    for (int g = 0; g < NG; g++) {
        AL_UNROLL
        for (int i = 0; i < ND; i++) {
            a[g][i][0] = a[g][i][1] = _mm256_setzero_ps();
        }
    }
    const int32_t c_full = n_valid / ATTN_CHUNK < c1 ? n_valid / ATTN_CHUNK : c1;
    int32_t c = c0;
    for (; c < c_full; c += step) {
        const uint16_t *v = vc[c] + d0 * stride;
        AL_UNROLL
        for (int g = 0; g < NG; g++) {
            w[g][0] = _mm256_loadu_ps(pw + g * p_stride + ATTN_CHUNK * c);
            w[g][1] = _mm256_loadu_ps(pw + g * p_stride + ATTN_CHUNK * c + 8);
        }
        AL_UNROLL
        for (int i = 0; i < ND; i++) {
            __m256 x[2];
            ld16_256(v + i * stride, &x[0], &x[1]);
            AL_UNROLL
            for (int g = 0; g < NG; g++) {
                a[g][i][0] = _mm256_fmadd_ps(x[0], w[g][0], a[g][i][0]);
                a[g][i][1] = _mm256_fmadd_ps(x[1], w[g][1], a[g][i][1]);
            }
        }
    }
    if (c < c1) {
        /* the last, partial chunk: lanes past n_valid keep their sums */
        const int32_t valid = n_valid - ATTN_CHUNK * c;
        const uint16_t *v = vc[c] + d0 * stride;
        const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256 m[2] = {_mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(valid), iota)),
                             _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(valid - 8), iota))};
        for (int g = 0; g < NG; g++) {
            float tw[16] = {0};
            memcpy(tw, pw + g * p_stride + ATTN_CHUNK * c, (size_t)valid * sizeof *tw);
            w[g][0] = _mm256_loadu_ps(tw);
            w[g][1] = _mm256_loadu_ps(tw + 8);
        }
        for (int i = 0; i < ND; i++) {
            uint16_t tv[16] = {0};
            __m256 x[2];
            memcpy(tv, v + i * stride, (size_t)valid * sizeof *tv);
            ld16_256(tv, &x[0], &x[1]);
            for (int g = 0; g < NG; g++)
                for (int h = 0; h < 2; h++)
                    a[g][i][h] = _mm256_blendv_ps(a[g][i][h], _mm256_fmadd_ps(x[h], w[g][h], a[g][i][h]), m[h]);
        }
    }
    AL_UNROLL
    for (int g = 0; g < NG; g++) {
        AL_UNROLL
        for (int i = 0; i < ND; i++) {
            float *dst = acc + ((int64_t)g * hd + d0 + i) * ATTN_CHUNK;
            _mm256_storeu_ps(dst, a[g][i][0]);
            _mm256_storeu_ps(dst + 8, a[g][i][1]);
        }
    }
}

/* One function per variant (own register allocation). */
AL_AVX2 __attribute__((noinline)) static void pv_2x2_256(const uint16_t *const *vc, int64_t stride, const float *pw,
                                                         int64_t p_stride, int32_t c0, int32_t c1, int32_t step,
                                                         int32_t n_valid, int hd, int d0, float *acc)
{
    pv_n_256(vc, stride, pw, p_stride, c0, c1, step, n_valid, hd, d0, acc, 2, 2);
}

AL_AVX2 __attribute__((noinline)) static void pv_1x4_256(const uint16_t *const *vc, int64_t stride, const float *pw,
                                                         int32_t c0, int32_t c1, int32_t step, int32_t n_valid, int hd,
                                                         int d0, float *acc)
{
    pv_n_256(vc, stride, pw, 0, c0, c1, step, n_valid, hd, d0, acc, 1, 4);
}

/* Two heads share each V load (two dimensions at a time: 16 registers). */
AL_AVX2 static void pv_256(const uint16_t *const *vc, int64_t stride, const float *pw, int64_t p_stride,
                           int ng, int32_t c0, int32_t c1, int32_t step, int32_t n_valid, int hd, float *acc)
{
    int g = 0;
    for (; g + 2 <= ng; g += 2)
        for (int d0 = 0; d0 + 2 <= hd; d0 += 2)
            pv_2x2_256(vc, stride, pw + g * p_stride, p_stride, c0, c1, step, n_valid, hd, d0,
                       acc + (int64_t)g * hd * ATTN_CHUNK);
    for (; g < ng; g++)
        for (int d0 = 0; d0 + 4 <= hd; d0 += 4)
            pv_1x4_256(vc, stride, pw + g * p_stride, c0, c1, step, n_valid, hd, d0, acc + (int64_t)g * hd * ATTN_CHUNK);
    /* the dimensions the loops above left */
    const int d_pair = ng >= 2 ? hd & ~1 : hd, d_one = hd & ~3;
    if (ng >= 2 && d_pair < hd)
        pv_dims_c(vc, stride, pw, p_stride, ng & ~1, c0, c1, step, n_valid, hd, d_pair, hd, acc);
    if (ng % 2 && d_one < hd)
        pv_dims_c(vc, stride, pw + (ng - 1) * p_stride, p_stride, 1, c0, c1, step, n_valid, hd, d_one, hd,
                  acc + (int64_t)(ng - 1) * hd * ATTN_CHUNK);
}

/* gx_hsum16 of 8 rows at once: t3 = lanes 8-15 + 0-7 per row, then the
 * 4-7 + 0-3, {0,1} + {2,3} and 0 + 1 steps across rows (rows come out as
 * 0 2 1 3 | 4 6 5 7, reordered at the end). */
AL_AVX2 static void hsum8_rows_256(const float *acc, float *out)
{
    __m256 t[8], c[4], e[2];
    for (int k = 0; k < 8; k++)
        t[k] = _mm256_add_ps(_mm256_loadu_ps(acc + k * 16 + 8), _mm256_loadu_ps(acc + k * 16));
    for (int k = 0; k < 4; k++)
        c[k] = _mm256_add_ps(_mm256_permute2f128_ps(t[k], t[k + 4], 0x31), _mm256_permute2f128_ps(t[k], t[k + 4], 0x20));
    for (int k = 0; k < 2; k++)
        e[k] = _mm256_add_ps(_mm256_shuffle_ps(c[k], c[k + 2], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm256_shuffle_ps(c[k], c[k + 2], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m256 f = _mm256_add_ps(_mm256_shuffle_ps(e[0], e[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm256_shuffle_ps(e[0], e[1], _MM_SHUFFLE(3, 1, 3, 1)));
    _mm256_storeu_ps(out, _mm256_permute_ps(f, _MM_SHUFFLE(3, 1, 2, 0)));
}

AL_AVX2 static void reduce4_256(float *acc, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 a02 = _mm256_add_ps(_mm256_loadu_ps(acc + i), _mm256_loadu_ps(acc + i + 2 * n));
        const __m256 a13 = _mm256_add_ps(_mm256_loadu_ps(acc + i + n), _mm256_loadu_ps(acc + i + 3 * n));
        _mm256_storeu_ps(acc + i, _mm256_add_ps(a02, a13));
    }
    reduce4_c(acc + i, n - i);
}

AL_AVX2 static void hsum_256(const float *acc, int hd, float *out)
{
    int d = 0;
    for (; d + 8 <= hd; d += 8)
        hsum8_rows_256(acc + (int64_t)d * 16, out + d);
    hsum_c(acc + (int64_t)d * 16, hd - d, out + d);
}

AL_AVX2 static void prod_256(const uint16_t *vc, int64_t stride, const float *pw, int hd, float *prod)
{
    const __m256 w[2] = {_mm256_loadu_ps(pw), _mm256_loadu_ps(pw + 8)};
    __m256 x[2];
    for (int d = 0; d < hd; d++) {
        ld16_256(vc + d * stride, &x[0], &x[1]);
        _mm256_storeu_ps(prod + d * 16, _mm256_mul_ps(x[0], w[0]));
        _mm256_storeu_ps(prod + d * 16 + 8, _mm256_mul_ps(x[1], w[1]));
    }
}

static const attn_lanes_t lanes_256 = {round16_256, kq_256, kq_tiny_256, pv_256, reduce4_256, hsum_256, prod_256};
#endif

const attn_lanes_t *attn_lanes(int lv)
{
#ifdef AL_X86
    if (lv == GX_LEVEL_AVX512)
        return &lanes_512;
    if (lv == GX_LEVEL_AVX2)
        return &lanes_256;
#endif
    (void)lv;
    return &lanes_c;
}
