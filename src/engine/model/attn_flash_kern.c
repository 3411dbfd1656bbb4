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

#define FK_EXP_BODY                                                                                               \
    if (!(x >= FK_LOW))                                                                                           \
        return 0.0f;                                                                                              \
    const float z = fmaf(x, FK_L2E, FK_R);                                                                        \
    const float n = z - FK_R;                                                                                     \
    const float b = fmaf(-n, FK_LN2L, fmaf(-n, FK_LN2H, x));                                                      \
    const float u = b * b;                                                                                        \
    const float j = fmaf(fmaf(fmaf(FK_C5, b, FK_C4), u, fmaf(FK_C3, b, FK_C2)), u, fmaf(FK_C1, b, 1.0f));        \
    const uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;                                                     \
    float p;                                                                                                      \
    memcpy(&p, &bits, sizeof p);                                                                                  \
    return j * p;

#ifdef FK_X86
/* The same function where fmaf is one instruction (not a library call). */
__attribute__((target("fma"))) static float fa_exp_fma(float x) { FK_EXP_BODY }
#endif

float fa_exp(float x)
{
#ifdef FK_X86
    if (gx_level() >= GX_LEVEL_AVX2)
        return fa_exp_fma(x);
#endif
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

static float ld_c(const fa_chunk_t *c, int d, int l)
{
    switch (c->kind) {
    case FA_F16: return fp16_to_fp32(((const uint16_t *)c->p)[d * c->stride + l]);
    case FA_Q8: {
        const uint8_t *b = (const uint8_t *)c->p + (d / 32) * FA_Q8_BLOCK;
        return fp16_to_fp32(((const uint16_t *)(const void *)b)[l]) * (float)(int8_t)b[32 + (d % 32) * 16 + l];
    }
    case FA_Q4: {
        const uint8_t *b = (const uint8_t *)c->p + (d / 32) * FA_Q4_BLOCK;
        const int j = d % 32;
        const uint8_t v = b[32 + (j % 16) * 16 + l];
        return fp16_to_fp32(((const uint16_t *)(const void *)b)[l]) * (float)((j < 16 ? v & 15 : v >> 4) - 8);
    }
    default: return ((const float *)c->p)[d * c->stride + l];
    }
}

static void qk_c(const fa_chunk_t *k, const float *q, int64_t qs, int R, int hd, float *s, int64_t ss)
{
    for (int r = 0; r < R; r++)
        for (int l = 0; l < 16; l++) {
            float a = 0.0f;
            for (int d = 0; d < hd; d++)
                a = fmaf(q[r * qs + d], ld_c(k, d, l), a);
            s[r * ss + l] = a;
        }
}

static float lanes8_sum(const float *a)
{
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

static void pv_c(const fa_chunk_t *v, int nc, const float *p, int64_t ps, int R, int hd, float *o, int64_t os)
{
    for (int r = 0; r < R; r++)
        for (int d = 0; d < hd; d++) {
            float a[8] = {0};
            for (int c = 0; c < nc; c++)
                for (int h = 0; h < 2; h++)
                    for (int j = 0; j < 8; j++)
                        a[j] = fmaf(p[r * ps + 16 * c + 8 * h + j], ld_c(&v[c], d, 8 * h + j), a[j]);
            o[r * os + d] += lanes8_sum(a);
        }
}

static void widen_c(const fa_chunk_t *x, int hd, float *out)
{
    for (int d = 0; d < hd; d++)
        for (int l = 0; l < 16; l++)
            out[d * 16 + l] = ld_c(x, d, l);
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

static const fa_kern_t kern_c = {qk_c, pv_c, widen_c, exp_sum_c, max_c, scale_c};

#ifdef FK_X86
/* ---- AVX2 ------------------------------------------------------------------- */

FK_AVX2 static FK_INLINE __m256 ld8_f16(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* The 16 scales of a quantized block as two vectors. */
FK_AVX2 static FK_INLINE void ld_scales(const uint8_t *b, __m256 *s0, __m256 *s1)
{
    *s0 = ld8_f16((const uint16_t *)(const void *)b);
    *s1 = ld8_f16((const uint16_t *)(const void *)b + 8);
}

/* X(d, 8 h .. 8 h + 7) of a quantized block b (d % 32 = j), given its
 * scales for those lanes. */
FK_AVX2 static FK_INLINE __m256 ld8_q8(const uint8_t *b, int j, int h, __m256 sc)
{
    const __m128i v = _mm_loadl_epi64((const __m128i *)(b + 32 + j * 16 + 8 * h));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)), sc);
}

FK_AVX2 static FK_INLINE __m256 ld8_q4(const uint8_t *b, int j, int h, __m256 sc)
{
    __m128i v = _mm_loadl_epi64((const __m128i *)(b + 32 + (j % 16) * 16 + 8 * h));
    v = j < 16 ? _mm_and_si128(v, _mm_set1_epi8(15)) : _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(15));
    v = _mm_sub_epi8(v, _mm_set1_epi8(8));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)), sc);
}

/* X(d, 0..7) and X(d, 8..15) of any chunk; sc: the block's scales (quantized kinds). */
FK_AVX2 static FK_INLINE void ld16(const fa_chunk_t *c, int d, const int KIND, const __m256 *sc, __m256 *x0,
                                   __m256 *x1)
{
    if (KIND == FA_F32) {
        const float *p = (const float *)c->p + d * c->stride;
        *x0 = _mm256_loadu_ps(p);
        *x1 = _mm256_loadu_ps(p + 8);
    } else if (KIND == FA_F16) {
        const uint16_t *p = (const uint16_t *)c->p + d * c->stride;
        *x0 = ld8_f16(p);
        *x1 = ld8_f16(p + 8);
    } else {
        const int bs = KIND == FA_Q8 ? FA_Q8_BLOCK : FA_Q4_BLOCK;
        const uint8_t *b = (const uint8_t *)c->p + (d / 32) * bs;
        *x0 = KIND == FA_Q8 ? ld8_q8(b, d % 32, 0, sc[0]) : ld8_q4(b, d % 32, 0, sc[0]);
        *x1 = KIND == FA_Q8 ? ld8_q8(b, d % 32, 1, sc[1]) : ld8_q4(b, d % 32, 1, sc[1]);
    }
}

/* R rows (R <= 6) x 16 positions, accumulators in registers. */
FK_AVX2 static FK_INLINE void qk_n_256(const fa_chunk_t *k, const float *q, int64_t qs, int hd, float *s,
                                       int64_t ss, const int R, const int KIND)
{
    __m256 a[6][2], sc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    FK_UNROLL
    for (int r = 0; r < R; r++) {
        a[r][0] = _mm256_setzero_ps();
        a[r][1] = _mm256_setzero_ps();
    }
    for (int d = 0; d < hd; d++) {
        if (KIND >= FA_Q8 && d % 32 == 0)
            ld_scales((const uint8_t *)k->p + (d / 32) * (KIND == FA_Q8 ? FA_Q8_BLOCK : FA_Q4_BLOCK), &sc[0], &sc[1]);
        __m256 k0, k1;
        ld16(k, d, KIND, sc, &k0, &k1);
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

#define FK_QK(R, KIND)                                                                                            \
    FK_AVX2 __attribute__((noinline)) static void qk_##R##_##KIND(const fa_chunk_t *k, const float *q,            \
                                                                  int64_t qs, int hd, float *s, int64_t ss)       \
    {                                                                                                             \
        qk_n_256(k, q, qs, hd, s, ss, R, KIND);                                                                   \
    }
#define FK_QK_R(KIND) FK_QK(1, KIND) FK_QK(2, KIND) FK_QK(3, KIND) FK_QK(4, KIND) FK_QK(5, KIND) FK_QK(6, KIND)
FK_QK_R(0) FK_QK_R(1) FK_QK_R(2) FK_QK_R(3)

typedef void (*qk_fn_t)(const fa_chunk_t *, const float *, int64_t, int, float *, int64_t);

FK_AVX2 static void qk_256(const fa_chunk_t *k, const float *q, int64_t qs, int R, int hd, float *s, int64_t ss)
{
#define FK_ROW(K) {qk_1_##K, qk_2_##K, qk_3_##K, qk_4_##K, qk_5_##K, qk_6_##K}
    static const qk_fn_t fns[4][6] = {FK_ROW(0), FK_ROW(1), FK_ROW(2), FK_ROW(3)};
#undef FK_ROW
    if (k->kind >= FA_Q8 && hd % 32) {
        qk_c(k, q, qs, R, hd, s, ss);
        return;
    }
    for (int r = 0; r < R; r += 6) {
        const int n = R - r < 6 ? R - r : 6;
        fns[k->kind][n - 1](k, q + r * qs, qs, hd, s + r * ss, ss);
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

/* Accumulators of NR rows x 4 dimensions set to zero; their lanes8 sums
 * added to o[r * os + d0 ..] (hsum8x4_256). */
FK_AVX2 static FK_INLINE void pv_zero_256(__m256 x[3][4], const int NR)
{
    FK_UNROLL
    for (int r = 0; r < NR; r++) {
        FK_UNROLL
        for (int i = 0; i < 4; i++) {
            x[r][i] = _mm256_setzero_ps();
        }
    }
}

FK_AVX2 static FK_INLINE void pv_store_256(__m256 x[3][4], float *o, int64_t os, int d0, const int NR)
{
    FK_UNROLL
    for (int r = 0; r < NR; r++) {
        _mm_storeu_ps(o + r * os + d0, _mm_add_ps(_mm_loadu_ps(o + r * os + d0), hsum8x4_256(x[r])));
    }
}

/* The probabilities of NR rows at lanes 8 h .. 8 h + 7 of a chunk (pc:
 * row 0's, rows ps apart), and one dimension's step: x[r][i] += pr[r] * vv. */
FK_AVX2 static FK_INLINE void pv_probs_256(const float *pc, int64_t ps, int h, __m256 pr[3], const int NR)
{
    FK_UNROLL
    for (int r = 0; r < NR; r++) {
        pr[r] = _mm256_loadu_ps(pc + r * ps + 8 * h);
    }
}

FK_AVX2 static FK_INLINE void pv_fma_256(const __m256 pr[3], __m256 vv, __m256 x[3][4], int i, const int NR)
{
    FK_UNROLL
    for (int r = 0; r < NR; r++) {
        x[r][i] = _mm256_fmadd_ps(pr[r], vv, x[r][i]);
    }
}

/* One chunk's contribution to NR rows x dimensions d0 .. d0 + 3. */
FK_AVX2 static FK_INLINE void pv_chunk_256(const fa_chunk_t *c, const float *pc, int64_t ps, int d0, __m256 x[3][4],
                                           const int NR, const int KIND)
{
    __m256 sc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    if (KIND >= FA_Q8)
        ld_scales((const uint8_t *)c->p + (d0 / 32) * (KIND == FA_Q8 ? FA_Q8_BLOCK : FA_Q4_BLOCK), &sc[0], &sc[1]);
    FK_UNROLL
    for (int h = 0; h < 2; h++) {
        __m256 pr[3];
        pv_probs_256(pc, ps, h, pr, NR);
        FK_UNROLL
        for (int i = 0; i < 4; i++) {
            __m256 vv;
            const int d = d0 + i;
            if (KIND == FA_F32) {
                vv = _mm256_loadu_ps((const float *)c->p + d * c->stride + 8 * h);
            } else if (KIND == FA_F16) {
                vv = ld8_f16((const uint16_t *)c->p + d * c->stride + 8 * h);
            } else {
                const uint8_t *b = (const uint8_t *)c->p + (d / 32) * (KIND == FA_Q8 ? FA_Q8_BLOCK : FA_Q4_BLOCK);
                vv = KIND == FA_Q8 ? ld8_q8(b, d % 32, h, sc[h]) : ld8_q4(b, d % 32, h, sc[h]);
            }
            pv_fma_256(pr, vv, x, i, NR);
        }
    }
}

/* NR rows (1..3) x dimensions d0 .. d0 + 3: accumulator x[r][i] is (row
 * r, dimension d0 + i), lane j of it the positions p % 8 == j. */
FK_AVX2 static FK_INLINE void pv_blk_256(const fa_chunk_t *v, int nc, const float *p, int64_t ps, int d0, float *o,
                                         int64_t os, const int NR)
{
    __m256 x[3][4];
    pv_zero_256(x, NR);
    for (int c = 0; c < nc; c++) {
        switch (v[c].kind) {
        case FA_F16: pv_chunk_256(&v[c], p + 16 * c, ps, d0, x, NR, FA_F16); break;
        case FA_Q8: pv_chunk_256(&v[c], p + 16 * c, ps, d0, x, NR, FA_Q8); break;
        case FA_Q4: pv_chunk_256(&v[c], p + 16 * c, ps, d0, x, NR, FA_Q4); break;
        default: pv_chunk_256(&v[c], p + 16 * c, ps, d0, x, NR, FA_F32); break;
        }
    }
    pv_store_256(x, o, os, d0, NR);
}

#define FK_PVB(NR)                                                                                                \
    FK_AVX2 __attribute__((noinline)) static void pv_blk##NR(const fa_chunk_t *v, int nc, const float *p,         \
                                                             int64_t ps, int hd, float *o, int64_t os)            \
    {                                                                                                             \
        for (int d0 = 0; d0 < hd; d0 += 4)                                                                        \
            pv_blk_256(v, nc, p, ps, d0, o, os, NR);                                                              \
    }
FK_PVB(1) FK_PVB(2) FK_PVB(3)

/* The same blocks when every chunk has one kind: no switch per chunk, so
 * the accumulators stay in registers (the mixed version above spills
 * them). Each output element is the same chain of operations: the same
 * bits. */
FK_AVX2 static FK_INLINE void pv_blk_k_256(const fa_chunk_t *v, int nc, const float *p, int64_t ps, int d0,
                                           float *o, int64_t os, const int NR, const int KIND)
{
    __m256 x[3][4];
    pv_zero_256(x, NR);
    for (int c = 0; c < nc; c++)
        pv_chunk_256(&v[c], p + 16 * c, ps, d0, x, NR, KIND);
    pv_store_256(x, o, os, d0, NR);
}

#define FK_PVK(NR, KIND)                                                                                          \
    FK_AVX2 __attribute__((noinline)) static void pv_k##NR##_##KIND(const fa_chunk_t *v, int nc, const float *p,  \
                                                                    int64_t ps, int hd, float *o, int64_t os)     \
    {                                                                                                             \
        for (int d0 = 0; d0 < hd; d0 += 4)                                                                        \
            pv_blk_k_256(v, nc, p, ps, d0, o, os, NR, KIND);                                                      \
    }
#define FK_PVK_R(KIND) FK_PVK(1, KIND) FK_PVK(2, KIND) FK_PVK(3, KIND)
FK_PVK_R(0) FK_PVK_R(1) FK_PVK_R(2) FK_PVK_R(3)

/* The same blocks over chunks converted to floats one after the other
 * (chunk c at vb + c * 16 hd, X(d, l) at [d * 16 + l]): addresses by
 * increments, nothing read from the chunk descriptors. The same bits. */
FK_AVX2 static FK_INLINE void pv_blk_f_256(const float *vb, int nc, const float *p, int64_t ps, int hd, int d0,
                                           float *o, int64_t os, const int NR)
{
    __m256 x[3][4];
    pv_zero_256(x, NR);
    const float *vc = vb + d0 * 16;
    for (int c = 0; c < nc; c++, vc += 16 * hd, p += 16) {
        FK_UNROLL
        for (int h = 0; h < 2; h++) {
            __m256 pr[3];
            pv_probs_256(p, ps, h, pr, NR);
            FK_UNROLL
            for (int i = 0; i < 4; i++) {
                pv_fma_256(pr, _mm256_loadu_ps(vc + i * 16 + 8 * h), x, i, NR);
            }
        }
    }
    pv_store_256(x, o, os, d0, NR);
}

#define FK_PVF(NR)                                                                                                \
    FK_AVX2 __attribute__((noinline)) static void pv_f##NR(const float *vb, int nc, const float *p, int64_t ps,    \
                                                           int hd, float *o, int64_t os)                          \
    {                                                                                                             \
        for (int d0 = 0; d0 < hd; d0 += 4)                                                                        \
            pv_blk_f_256(vb, nc, p, ps, hd, d0, o, os, NR);                                                       \
    }
FK_PVF(1) FK_PVF(2) FK_PVF(3)

FK_AVX2 static void pv_256(const fa_chunk_t *v, int nc, const float *p, int64_t ps, int R, int hd, float *o,
                           int64_t os)
{
    typedef void (*fn_t)(const fa_chunk_t *, int, const float *, int64_t, int, float *, int64_t);
    static const fn_t fns[3] = {pv_blk1, pv_blk2, pv_blk3};
    bool quant = false;
    for (int c = 0; c < nc; c++)
        quant |= v[c].kind >= FA_Q8;
    if (hd % 4 || (quant && hd % 32)) {
        pv_c(v, nc, p, ps, R, hd, o, os);
        return;
    }
    bool uniform = true, packed = nc > 0 && v[0].kind == FA_F32 && v[0].stride == 16;
    for (int c = 1; c < nc; c++) {
        uniform &= v[c].kind == v[0].kind;
        packed &= v[c].kind == FA_F32 && v[c].p == (const float *)v[0].p + (int64_t)c * 16 * hd;
    }
    if (packed) {
        typedef void (*fnf_t)(const float *, int, const float *, int64_t, int, float *, int64_t);
        static const fnf_t ffns[3] = {pv_f1, pv_f2, pv_f3};
        for (int r = 0; r < R; r += 3) {
            const int n = R - r < 3 ? R - r : 3;
            ffns[n - 1](v[0].p, nc, p + r * ps, ps, hd, o + r * os, os);
        }
        return;
    }
    if (uniform && nc > 0) {
#define FK_ROW(K) {pv_k1_##K, pv_k2_##K, pv_k3_##K}
        static const fn_t kfns[4][3] = {FK_ROW(0), FK_ROW(1), FK_ROW(2), FK_ROW(3)};
#undef FK_ROW
        /* quantized kinds need two more registers (the scales): 2 rows */
        const int nr = v[0].kind >= FA_Q8 ? 2 : 3;
        for (int r = 0; r < R; r += nr) {
            const int n = R - r < nr ? R - r : nr;
            kfns[v[0].kind][n - 1](v, nc, p + r * ps, ps, hd, o + r * os, os);
        }
        return;
    }
    for (int r = 0; r < R; r += 3) {
        const int n = R - r < 3 ? R - r : 3;
        fns[n - 1](v, nc, p + r * ps, ps, hd, o + r * os, os);
    }
}

/* widen_256 for one kind: the kind is a constant, so no switch per row. */
FK_AVX2 static FK_INLINE void widen_k_256(const fa_chunk_t *x, int hd, float *out, const int KIND)
{
    __m256 sc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    if (KIND == FA_F16 && x->stride == 16) {
        /* one block of 16 positions: hd * 16 halves one after the other */
        const uint16_t *p = x->p;
        for (int i = 0; i < hd * 16; i += 32) {
            _mm256_storeu_ps(out + i, ld8_f16(p + i));
            _mm256_storeu_ps(out + i + 8, ld8_f16(p + i + 8));
            _mm256_storeu_ps(out + i + 16, ld8_f16(p + i + 16));
            _mm256_storeu_ps(out + i + 24, ld8_f16(p + i + 24));
        }
        return;
    }
    for (int d = 0; d < hd; d++) {
        __m256 a, b;
        if (KIND >= FA_Q8 && d % 32 == 0)
            ld_scales((const uint8_t *)x->p + (d / 32) * (KIND == FA_Q8 ? FA_Q8_BLOCK : FA_Q4_BLOCK), &sc[0], &sc[1]);
        ld16(x, d, KIND, sc, &a, &b);
        _mm256_storeu_ps(out + d * 16, a);
        _mm256_storeu_ps(out + d * 16 + 8, b);
    }
}

FK_AVX2 static void widen_256(const fa_chunk_t *x, int hd, float *out)
{
    if ((x->kind >= FA_Q8 && hd % 32) || (x->kind == FA_F16 && x->stride == 16 && hd % 2)) {
        widen_c(x, hd, out);
        return;
    }
    switch (x->kind) {
    case FA_F16: widen_k_256(x, hd, out, FA_F16); break;
    case FA_Q8: widen_k_256(x, hd, out, FA_Q8); break;
    case FA_Q4: widen_k_256(x, hd, out, FA_Q4); break;
    default: widen_k_256(x, hd, out, FA_F32); break;
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

static const fa_kern_t kern_256 = {qk_256, pv_256, widen_256, exp_sum_256, max_256, scale_256};
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
