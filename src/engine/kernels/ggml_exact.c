/* ggml_exact.c - ggml's CPU float arithmetic, operation for operation
 * (see ggml_exact.h for what is reproduced and why).
 *
 * Each kernel exists twice: a portable version written with fmaf exactly
 * where the AVX-512 build of ggml fuses (explicit FMA intrinsics, or
 * gcc's -ffp-contract=fast in scalar code), and an AVX-512 version with
 * the same operations on 16 lanes. Operands of every add are combined in
 * the same pairs as in ggml, so both give the same bits; the unit test
 * tests/unit/test_ggml_exact.c checks that on random data.
 */
#include "engine/kernels/ggml_exact.h"

#include <math.h>
#include <string.h>

#include "engine/quant/fp16.h"
#include "engine/kernels/kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GX_X86 1
#define GX_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma,f16c")))
#define GX_AVX2 __attribute__((target("avx2,fma,f16c")))
#endif

/* Rows per chunk of the matrix products: a multiple of every tile height
 * of block_avx2 (3, 4, 6). */
#define GX_ROW_CHUNK 24

static int gx_cap = GX_LEVEL_AVX512;

int gx_set_level(int level)
{
    int prev = gx_cap;
    gx_cap = level < GX_LEVEL_PORTABLE ? GX_LEVEL_PORTABLE : level > GX_LEVEL_AVX512 ? GX_LEVEL_AVX512 : level;
    return prev;
}

int gx_level(void)
{
#ifdef GX_X86
    const kern_isa_t isa = kern_isa();
    const int hw = isa >= KERN_ISA_AVX512 ? GX_LEVEL_AVX512 : isa >= KERN_ISA_AVX2 ? GX_LEVEL_AVX2 : GX_LEVEL_PORTABLE;
    return hw < gx_cap ? hw : gx_cap;
#else
    return GX_LEVEL_PORTABLE;
#endif
}

bool gx_use_avx512(void)
{
    return gx_level() == GX_LEVEL_AVX512;
}

/* ---- portable versions ------------------------------------------------- */

float gx_hsum16(const float v[16])
{
    float t3[8], t6[4];
    for (int i = 0; i < 8; i++)
        t3[i] = v[i + 8] + v[i];
    for (int i = 0; i < 4; i++)
        t6[i] = t3[i + 4] + t3[i];
    const float a = t6[0] + t6[2];
    const float b = t6[1] + t6[3];
    return a + b;
}

/* Reduces ggml's four 16-lane accumulators (GGML_F32x16_REDUCE). */
static float reduce4x16(float acc[4][16])
{
    for (int l = 0; l < 16; l++) {
        acc[0][l] = acc[0][l] + acc[2][l];
        acc[1][l] = acc[1][l] + acc[3][l];
    }
    for (int l = 0; l < 16; l++)
        acc[0][l] = acc[0][l] + acc[1][l];
    return gx_hsum16(acc[0]);
}

/* The n % 64 leftovers of ggml_vec_dot_f32 as gcc -O3 compiled them
 * (inline: in the FMA-enabled callers fmaf becomes one instruction). */
static inline float left_f32(const float *x, const float *y, int64_t n, float sumf)
{
    const int64_t nv = n & ~(int64_t)7;
    int64_t i = 0;
    for (; i < nv; i++) {
        const float p = x[i] * y[i];
        sumf = sumf + p;
    }
    for (; i < n; i++)
        sumf = fmaf(x[i], y[i], sumf);
    return sumf;
}

static float dot_f32_vec_c(const float *x, const float *y, int64_t n)
{
    const int64_t np = n & ~(int64_t)63;
    float acc[4][16];
    memset(acc, 0, sizeof acc);
    for (int64_t i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 16; l++)
                acc[j][l] = fmaf(x[i + j * 16 + l], y[i + j * 16 + l], acc[j][l]);
    const float sumf = reduce4x16(acc);
    return left_f32(x + np, y + np, n - np, sumf);
}

/* The 2026 reference build's ggml_vec_dot_f32 (gx_dot_f32_vec_e4): its
 * leftover loop has a vectorised epilogue, 4 more rounded products after
 * the multiples of 8 when at least 4 remain, the last n % 4 fused. */
float gx_dot_f32_vec_e4(const float *x, const float *y, int64_t n)
{
    const int64_t np = n & ~(int64_t)63;
    float acc[4][16];
    memset(acc, 0, sizeof acc);
    for (int64_t i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 16; l++)
                acc[j][l] = fmaf(x[i + j * 16 + l], y[i + j * 16 + l], acc[j][l]);
    float sumf = reduce4x16(acc);
    const int64_t left = n - np, nv = np + (left & ~(int64_t)7) + ((left & 7) >= 4 ? 4 : 0);
    int64_t i = np;
    for (; i < nv; i++) {
        const float p = x[i] * y[i];
        sumf = sumf + p;
    }
    for (; i < n; i++)
        sumf = fmaf(x[i], y[i], sumf);
    return sumf;
}

static float dot_f32_tiny_c(const float *x, const float *y, int64_t n)
{
    float acc[16] = {0};
    for (int64_t i = 0; i < n; i += 16)
        for (int l = 0; l < 16; l++)
            acc[l] = fmaf(x[i + l], y[i + l], acc[l]);
    return gx_hsum16(acc);
}

static float dot_f16_tiny_c(const uint16_t *x, const uint16_t *y, int64_t n)
{
    float acc[16] = {0};
    for (int64_t i = 0; i < n; i += 16)
        for (int l = 0; l < 16; l++)
            acc[l] = acc[l] + fp16_to_fp32(x[i + l]) * fp16_to_fp32(y[i + l]); /* exact product */
    return gx_hsum16(acc);
}

static double left_f16(const uint16_t *x, const uint16_t *y, int64_t n, double sumf)
{
    for (int64_t i = 0; i < n; i++)
        sumf += (double)(fp16_to_fp32(x[i]) * fp16_to_fp32(y[i]));
    return sumf;
}

static float dot_f16_vec_c(const uint16_t *x, const uint16_t *y, int64_t n)
{
    const int64_t np = n & ~(int64_t)63;
    float acc[4][16];
    memset(acc, 0, sizeof acc);
    for (int64_t i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 16; l++)
                acc[j][l] = fmaf(fp16_to_fp32(x[i + j * 16 + l]), fp16_to_fp32(y[i + j * 16 + l]), acc[j][l]);
    double sumf = (double)reduce4x16(acc);
    return (float)left_f16(x + np, y + np, n - np, sumf);
}

/* ggml_v_expf for one lane: range reduction n = round(x log2 e), a degree
 * 5 polynomial for exp(b), then j * 2^n (vscalefps: one rounding). */
static float expf1_c(float x)
{
    const float r = 0x1.8p23f;
    const float z = fmaf(x, 0x1.715476p+0f, r);
    const float n = z - r;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                         u, fmaf(0x1.ffffecp-1f, b, 1.0f));
    if (isnan(n))
        return n;
    if (fabsf(n) > 192.0f)
        return n <= 0.0f ? 0.0f : INFINITY;
    return ldexpf(j, (int)n);
}

static void expf16_c(const float *in, float *out)
{
    for (int l = 0; l < 16; l++)
        out[l] = expf1_c(in[l]);
}

static void silu_row_c(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 15 < n; i += 16) {
        float e[16], nx[16];
        for (int l = 0; l < 16; l++)
            nx[l] = 0.0f - x[i + l];
        expf16_c(nx, e);
        for (int l = 0; l < 16; l++)
            y[i + l] = x[i + l] / (1.0f + e[l]);
    }
    for (; i < n; i++)
        y[i] = x[i] / (1.0f + expf(-x[i]));
}

/* The largest s[i] as ggml's scalar loop finds it (NaNs skipped). */
static float max_row_c(const float *s, int64_t n)
{
    float max = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        max = s[i] > max ? s[i] : max;
    return max;
}

static void softmax_row_c(float *s, int64_t n)
{
    const float max = max_row_c(s, n);
    double sum = 0.0;
    for (int64_t i = 0; i < n; i += 16) {
        float in[16], e[16];
        const int64_t m = n - i < 16 ? n - i : 16;
        for (int64_t l = 0; l < 16; l++)
            in[l] = l < m ? s[i + l] - max : -INFINITY;
        expf16_c(in, e);
        memcpy(s + i, e, (size_t)m * sizeof(float));
        sum += (double)gx_hsum16(e);
    }
    const float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++)
        s[i] *= inv;
}

/* ---- AVX-512 versions ---------------------------------------------------- */

#ifdef GX_X86
GX_AVX512 static inline float hsum512(__m512 v)
{
    const __m256 lo = _mm512_castps512_ps256(v);
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    const __m256 t3 = _mm256_add_ps(hi, lo);
    const __m128 t6 = _mm_add_ps(_mm256_extractf128_ps(t3, 1), _mm256_castps256_ps128(t3));
    const __m128 t8 = _mm_add_ps(t6, _mm_shuffle_ps(t6, t6, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm_cvtss_f32(t8) + _mm_cvtss_f32(_mm_shuffle_ps(t8, t8, _MM_SHUFFLE(1, 1, 1, 1)));
}

GX_AVX512 static float dot_f32_vec_avx512(const float *x, const float *y, int64_t n)
{
    const int64_t np = n & ~(int64_t)63;
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t i = 0; i < np; i += 64) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(y + i + 16), s1);
        s2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 32), _mm512_loadu_ps(y + i + 32), s2);
        s3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 48), _mm512_loadu_ps(y + i + 48), s3);
    }
    s0 = _mm512_add_ps(s0, s2);
    s1 = _mm512_add_ps(s1, s3);
    s0 = _mm512_add_ps(s0, s1);
    return left_f32(x + np, y + np, n - np, hsum512(s0));
}

GX_AVX512 static float dot_f32_tiny_avx512(const float *x, const float *y, int64_t n)
{
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16)
        acc = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), acc);
    return hsum512(acc);
}

GX_AVX512 static inline __m512 load_f16(const uint16_t *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

/* left_f16 with the (exact) products formed 16 at a time; the double
 * additions stay in order. */
GX_AVX512 static double left_f16_avx512(const uint16_t *x, const uint16_t *y, int64_t n, double sumf)
{
    float pr[16];
    for (int64_t i = 0; i < n; i += 16) {
        const int m = n - i < 16 ? (int)(n - i) : 16;
        const __mmask16 k = (__mmask16)((1u << m) - 1);
        const __m512 xv = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, x + i));
        const __m512 yv = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, y + i));
        _mm512_storeu_ps(pr, _mm512_mul_ps(xv, yv));
        for (int l = 0; l < m; l++)
            sumf += (double)pr[l];
    }
    return sumf;
}

GX_AVX512 static float dot_f16_vec_avx512(const uint16_t *x, const uint16_t *y, int64_t n)
{
    const int64_t np = n & ~(int64_t)63;
    if (np == 0)
        return (float)left_f16_avx512(x, y, n, 0.0);
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t i = 0; i < np; i += 64) {
        s0 = _mm512_fmadd_ps(load_f16(x + i), load_f16(y + i), s0);
        s1 = _mm512_fmadd_ps(load_f16(x + i + 16), load_f16(y + i + 16), s1);
        s2 = _mm512_fmadd_ps(load_f16(x + i + 32), load_f16(y + i + 32), s2);
        s3 = _mm512_fmadd_ps(load_f16(x + i + 48), load_f16(y + i + 48), s3);
    }
    s0 = _mm512_add_ps(s0, s2);
    s1 = _mm512_add_ps(s1, s3);
    s0 = _mm512_add_ps(s0, s1);
    return (float)left_f16_avx512(x + np, y + np, n - np, (double)hsum512(s0));
}

GX_AVX512 static float dot_f16_tiny_avx512(const uint16_t *x, const uint16_t *y, int64_t n)
{
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16)
        acc = _mm512_fmadd_ps(load_f16(x + i), load_f16(y + i), acc);
    return hsum512(acc);
}

/* tinyBLAS order for one row and four tokens at once (the row is loaded
 * once); each token's operations are those of the one-token kernel. */
GX_AVX512 static void tiny4_avx512(const void *w, const void *x, size_t x_stride, bool f16, int64_t n, float *out,
                                   size_t out_stride)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    if (f16) {
        const uint16_t *wr = w, *x0 = x;
        const uint16_t *x1 = x0 + x_stride, *x2 = x1 + x_stride, *x3 = x2 + x_stride;
        for (int64_t i = 0; i < n; i += 16) {
            const __m512 wv = load_f16(wr + i);
            a0 = _mm512_fmadd_ps(wv, load_f16(x0 + i), a0);
            a1 = _mm512_fmadd_ps(wv, load_f16(x1 + i), a1);
            a2 = _mm512_fmadd_ps(wv, load_f16(x2 + i), a2);
            a3 = _mm512_fmadd_ps(wv, load_f16(x3 + i), a3);
        }
    } else {
        const float *wr = w, *x0 = x;
        const float *x1 = x0 + x_stride, *x2 = x1 + x_stride, *x3 = x2 + x_stride;
        for (int64_t i = 0; i < n; i += 16) {
            const __m512 wv = _mm512_loadu_ps(wr + i);
            a0 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x0 + i), a0);
            a1 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x1 + i), a1);
            a2 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x2 + i), a2);
            a3 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x3 + i), a3);
        }
    }
    out[0] = hsum512(a0);
    out[out_stride] = hsum512(a1);
    out[2 * out_stride] = hsum512(a2);
    out[3 * out_stride] = hsum512(a3);
}

/* ggml_vec_dot order for four rows and one token at once (the token is
 * loaded once); each row's operations are those of the one-row kernel. */
GX_AVX512 static void vec4_avx512(const void *w, size_t w_stride, const void *x, bool f16, int64_t n, float *out)
{
    const int64_t np = n & ~(int64_t)63;
    __m512 acc[4][4];
    for (int r = 0; r < 4; r++)
        for (int a = 0; a < 4; a++)
            acc[r][a] = _mm512_setzero_ps();
    for (int64_t i = 0; i < np; i += 64)
        for (int a = 0; a < 4; a++) {
            if (f16) {
                const __m512 xv = load_f16((const uint16_t *)x + i + 16 * a);
                for (int r = 0; r < 4; r++)
                    acc[r][a] = _mm512_fmadd_ps(load_f16((const uint16_t *)w + r * w_stride + i + 16 * a), xv,
                                                acc[r][a]);
            } else {
                const __m512 xv = _mm512_loadu_ps((const float *)x + i + 16 * a);
                for (int r = 0; r < 4; r++)
                    acc[r][a] = _mm512_fmadd_ps(_mm512_loadu_ps((const float *)w + r * w_stride + i + 16 * a), xv,
                                                acc[r][a]);
            }
        }
    for (int r = 0; r < 4; r++) {
        __m512 s0 = _mm512_add_ps(acc[r][0], acc[r][2]);
        const __m512 s1 = _mm512_add_ps(acc[r][1], acc[r][3]);
        s0 = _mm512_add_ps(s0, s1);
        const float h = hsum512(s0);
        if (np == n)
            out[r] = h;
        else if (f16)
            out[r] = (float)left_f16_avx512((const uint16_t *)w + r * w_stride + np, (const uint16_t *)x + np,
                                            n - np, (double)h);
        else
            out[r] = left_f32((const float *)w + r * w_stride + np, (const float *)x + np, n - np, h);
    }
}

GX_AVX512 static __m512 expf_avx512(__m512 x)
{
    const __m512 r = _mm512_set1_ps(0x1.8p23f);
    const __m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), r);
    const __m512 n = _mm512_sub_ps(z, r);
    const __m512 b = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f),
                                      _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x));
    const __mmask16 big = _mm512_cmp_ps_mask(_mm512_abs_ps(n), _mm512_set1_ps(192.0f), _CMP_GT_OQ);
    const __m512 u = _mm512_mul_ps(b, b);
    const __m512 hi = _mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b, _mm512_set1_ps(0x1.573e2ep-5f));
    const __m512 mid = _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b, _mm512_set1_ps(0x1.fffdb6p-2f));
    const __m512 lo = _mm512_fmadd_ps(_mm512_set1_ps(0x1.ffffecp-1f), b, _mm512_set1_ps(1.0f));
    const __m512 j = _mm512_fmadd_ps(_mm512_fmadd_ps(hi, u, mid), u, lo);
    const __m512 res = _mm512_scalef_ps(j, n);
    if (!big)
        return res;
    const __m512 zero = _mm512_setzero_ps();
    const __m512 alt =
        _mm512_mask_blend_ps(_mm512_cmp_ps_mask(n, zero, _CMP_LE_OQ), _mm512_set1_ps(INFINITY), zero);
    return _mm512_mask_blend_ps(big, res, alt);
}

GX_AVX512 static void expf16_avx512(const float *in, float *out)
{
    _mm512_storeu_ps(out, expf_avx512(_mm512_loadu_ps(in)));
}

GX_AVX512 static void silu_row_avx512(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    const __m512 one = _mm512_set1_ps(1.0f);
    for (; i + 15 < n; i += 16) {
        const __m512 v = _mm512_loadu_ps(x + i);
        const __m512 e = expf_avx512(_mm512_sub_ps(_mm512_setzero_ps(), v));
        _mm512_storeu_ps(y + i, _mm512_div_ps(v, _mm512_add_ps(one, e)));
    }
    for (; i < n; i++)
        y[i] = x[i] / (1.0f + expf(-x[i]));
}

/* gx_softmax_row on 16 lanes. The maximum is the scalar loop's value
 * (vmaxps(x, m) is x > m ? x : m, NaNs skipped) up to the sign of a zero
 * maximum, which changes no result: x - (+0) and x - (-0) differ only for
 * x = -0, and ggml_v_expf(+-0) = 1. */
GX_AVX512 static void softmax_row_avx512(float *s, int64_t n)
{
    __m512 mv = _mm512_set1_ps(-INFINITY);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        mv = _mm512_max_ps(_mm512_loadu_ps(s + i), mv);
    if (i < n) {
        const __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
        mv = _mm512_mask_max_ps(mv, k, _mm512_maskz_loadu_ps(k, s + i), mv);
    }
    const float max = _mm512_reduce_max_ps(mv);
    const __m512 vmax = _mm512_set1_ps(max);
    double sum = 0.0;
    for (i = 0; i < n; i += 16) {
        const __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m512 in = _mm512_mask_sub_ps(_mm512_set1_ps(-INFINITY), k, _mm512_maskz_loadu_ps(k, s + i), vmax);
        const __m512 e = expf_avx512(in);
        _mm512_mask_storeu_ps(s + i, k, e);
        sum += (double)hsum512(e);
    }
    const __m512 inv = _mm512_set1_ps((float)(1.0 / sum));
    for (i = 0; i + 16 <= n; i += 16)
        _mm512_storeu_ps(s + i, _mm512_mul_ps(_mm512_loadu_ps(s + i), inv));
    if (i < n) {
        const __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(s + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, s + i), inv));
    }
}

/* ---- AVX2 versions: 16 lanes as two 8-lane halves, same operations ----- */

GX_AVX2 static inline float hsum256x2(__m256 lo, __m256 hi)
{
    const __m256 t3 = _mm256_add_ps(hi, lo);
    const __m128 t6 = _mm_add_ps(_mm256_extractf128_ps(t3, 1), _mm256_castps256_ps128(t3));
    const __m128 t8 = _mm_add_ps(t6, _mm_shuffle_ps(t6, t6, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm_cvtss_f32(t8) + _mm_cvtss_f32(_mm_shuffle_ps(t8, t8, _MM_SHUFFLE(1, 1, 1, 1)));
}

GX_AVX2 static float dot_f32_vec_avx2(const float *x, const float *y, int64_t n)
{
    const int64_t np = n & ~(int64_t)63;
    __m256 s[8];
    for (int j = 0; j < 8; j++)
        s[j] = _mm256_setzero_ps();
    for (int64_t i = 0; i < np; i += 64)
        for (int j = 0; j < 8; j++)
            s[j] = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8 * j), _mm256_loadu_ps(y + i + 8 * j), s[j]);
    /* s[2j], s[2j+1]: low and high half of ggml's accumulator j */
    for (int h = 0; h < 2; h++) {
        s[h] = _mm256_add_ps(s[h], s[4 + h]);
        s[2 + h] = _mm256_add_ps(s[2 + h], s[6 + h]);
    }
    for (int h = 0; h < 2; h++)
        s[h] = _mm256_add_ps(s[h], s[2 + h]);
    return left_f32(x + np, y + np, n - np, hsum256x2(s[0], s[1]));
}

GX_AVX2 static float dot_f32_tiny_avx2(const float *x, const float *y, int64_t n)
{
    __m256 lo = _mm256_setzero_ps(), hi = lo;
    for (int64_t i = 0; i < n; i += 16) {
        lo = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), lo);
        hi = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), hi);
    }
    return hsum256x2(lo, hi);
}

GX_AVX2 static inline __m256 load8_f16(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

GX_AVX2 static double left_f16_avx2(const uint16_t *x, const uint16_t *y, int64_t n, double sumf)
{
    float pr[8];
    for (int64_t i = 0; i < n; i += 8) {
        const int m = n - i < 8 ? (int)(n - i) : 8;
        uint16_t xb[8] = {0}, yb[8] = {0};
        const uint16_t *xp = x + i, *yp = y + i;
        if (m < 8) {
            memcpy(xb, xp, (size_t)m * sizeof *xb);
            memcpy(yb, yp, (size_t)m * sizeof *yb);
            xp = xb;
            yp = yb;
        }
        _mm256_storeu_ps(pr, _mm256_mul_ps(load8_f16(xp), load8_f16(yp)));
        for (int l = 0; l < m; l++)
            sumf += (double)pr[l];
    }
    return sumf;
}

GX_AVX2 static float dot_f16_vec_avx2(const uint16_t *x, const uint16_t *y, int64_t n)
{
    const int64_t np = n & ~(int64_t)63;
    if (np == 0)
        return (float)left_f16_avx2(x, y, n, 0.0);
    __m256 s[8];
    for (int j = 0; j < 8; j++)
        s[j] = _mm256_setzero_ps();
    for (int64_t i = 0; i < np; i += 64)
        for (int j = 0; j < 8; j++)
            s[j] = _mm256_fmadd_ps(load8_f16(x + i + 8 * j), load8_f16(y + i + 8 * j), s[j]);
    for (int h = 0; h < 2; h++) {
        s[h] = _mm256_add_ps(s[h], s[4 + h]);
        s[2 + h] = _mm256_add_ps(s[2 + h], s[6 + h]);
    }
    for (int h = 0; h < 2; h++)
        s[h] = _mm256_add_ps(s[h], s[2 + h]);
    return (float)left_f16_avx2(x + np, y + np, n - np, (double)hsum256x2(s[0], s[1]));
}

GX_AVX2 static float dot_f16_tiny_avx2(const uint16_t *x, const uint16_t *y, int64_t n)
{
    __m256 lo = _mm256_setzero_ps(), hi = lo;
    for (int64_t i = 0; i < n; i += 16) {
        lo = _mm256_fmadd_ps(load8_f16(x + i), load8_f16(y + i), lo);
        hi = _mm256_fmadd_ps(load8_f16(x + i + 8), load8_f16(y + i + 8), hi);
    }
    return hsum256x2(lo, hi);
}

/* One 8-lane step of every chain of a tile: the smaller side (rows or
 * tokens) is loaded first and held, the other loaded one at a time, so
 * the accumulators and the held vectors fit the 16 registers. LOADW loads
 * row q at element i. */
#define TILE_STEP(LOADW)                                                                                        \
    do {                                                                                                       \
        if (R <= T) {                                                                                          \
            __m256 r[6];                                                                                       \
            _Pragma("GCC unroll 6") for (int q = 0; q < R; q++) r[q] = (LOADW);                                \
            _Pragma("GCC unroll 4") for (int t = 0; t < T; t++)                                                \
            {                                                                                                  \
                const __m256 v = _mm256_loadu_ps(xh + (size_t)t * x_stride + i);                               \
                _Pragma("GCC unroll 6") for (int q = 0; q < R; q++) a[t * R + q] =                             \
                    _mm256_fmadd_ps(r[q], v, a[t * R + q]);                                                    \
            }                                                                                                  \
        } else {                                                                                               \
            __m256 v[4];                                                                                       \
            _Pragma("GCC unroll 4") for (int t = 0; t < T; t++) v[t] = _mm256_loadu_ps(xh + (size_t)t * x_stride + i); \
            _Pragma("GCC unroll 6") for (int q = 0; q < R; q++)                                                \
            {                                                                                                  \
                const __m256 r = (LOADW);                                                                      \
                _Pragma("GCC unroll 4") for (int t = 0; t < T; t++) a[t * R + q] =                             \
                    _mm256_fmadd_ps(r, v[t], a[t * R + q]);                                                    \
            }                                                                                                  \
        }                                                                                                      \
    } while (0)

/* Weight rows stream through a tile once per token group, and with few
 * tokens (a short query: 9 tokens x 1536 x 384 F16) a product reads its
 * matrix from memory faster than the hardware prefetchers fetch R
 * interleaved rows: out of cache such a product took 1.6-2.8x its time in
 * cache (tiles of 4 or 6 rows the worst). So the first pass over a tile's
 * rows prefetches the rows GX_PF_TILES tiles further on at the same
 * offset, one line of each per 64 bytes (beyond the matrix: a prefetch
 * never faults). 4 tiles: about a microsecond ahead at 9 tokens. */
enum { GX_PF_TILES = 4 };

GX_AVX2 static inline __attribute__((always_inline)) void prefetch_rows(const void *p, size_t row_bytes, const int R)
{
    _Pragma("GCC unroll 6")
    for (int q = 0; q < R; q++)
        _mm_prefetch((const char *)p + (size_t)q * row_bytes, _MM_HINT_T0);
}

/* tinyBLAS order for R rows and T tokens at once at the AVX2 level, the
 * tokens as F32 (for F16 weights: the activations already rounded to F16,
 * so the products are the exact F16 x F16 products of ggml). Each output's
 * 16-lane accumulator is two independent 8-lane chains (lanes 0-7 and 8-15
 * of every 16-element block of k), each summed in k order exactly as in
 * dot_f16_tiny_avx2 / dot_f32_tiny_avx2; the two chains are run one after
 * the other, so a tile holds R * T <= 12 accumulators, each loaded row
 * feeding T products and each loaded token R.
 *
 * One call covers elements [k0, k1) of k: the chains start from acc (zero
 * when k0 == 0) and are saved back to it (chain h of output q in acc[h * 12
 * + q]), so k may be cut into blocks whose tokens stay in the L1 cache; at
 * k1 == n the sums are reduced into out[t * out_stride + r] (+ bias[r], one
 * rounding as ggml's add). */
GX_AVX2 static inline __attribute__((always_inline)) void tile_avx2(const void *w, size_t w_stride, bool f16,
                                                                    const float *x, size_t x_stride, int64_t k0,
                                                                    int64_t k1, int64_t n, __m256 *acc,
                                                                    const float *bias, float *out,
                                                                    size_t out_stride, const int R, const int T)
{
    for (int h = 0; h < 2; h++) {
        __m256 a[12];
        _Pragma("GCC unroll 12")
        for (int q = 0; q < R * T; q++)
            a[q] = k0 ? acc[h * 12 + q] : _mm256_setzero_ps();
        const float *xh = x + 8 * h;
        if (f16 && h == 0) {
            const uint16_t *wh = (const uint16_t *)w;
            const uint16_t *pf = wh + (size_t)(GX_PF_TILES * R) * w_stride;
            for (int64_t i = k0; i < k1; i += 16) {
                if (!(i & 31))
                    prefetch_rows(pf + i, w_stride * sizeof(uint16_t), R);
                TILE_STEP(load8_f16(wh + (size_t)q * w_stride + i));
            }
        } else if (f16) {
            const uint16_t *wh = (const uint16_t *)w + 8;
            for (int64_t i = k0; i < k1; i += 16)
                TILE_STEP(load8_f16(wh + (size_t)q * w_stride + i));
        } else if (h == 0) {
            const float *wh = (const float *)w;
            const float *pf = wh + (size_t)(GX_PF_TILES * R) * w_stride;
            for (int64_t i = k0; i < k1; i += 16) {
                prefetch_rows(pf + i, w_stride * sizeof(float), R);
                TILE_STEP(_mm256_loadu_ps(wh + (size_t)q * w_stride + i));
            }
        } else {
            const float *wh = (const float *)w + 8;
            for (int64_t i = k0; i < k1; i += 16)
                TILE_STEP(_mm256_loadu_ps(wh + (size_t)q * w_stride + i));
        }
        _Pragma("GCC unroll 12")
        for (int q = 0; q < R * T; q++)
            acc[h * 12 + q] = a[q];
    }
    if (k1 < n)
        return;
    _Pragma("GCC unroll 4")
    for (int t = 0; t < T; t++)
        _Pragma("GCC unroll 6")
        for (int q = 0; q < R; q++) {
            float v = hsum256x2(acc[t * R + q], acc[12 + t * R + q]);
            if (bias)
                v = v + bias[q];
            out[(size_t)t * out_stride + (size_t)q] = v;
        }
}

#undef TILE_STEP

#define GX_TILE(R, T)                                                                                              \
    GX_AVX2 static void tile##R##x##T##_avx2(const void *w, size_t ws, bool f16, const float *x, size_t xs,         \
                                             int64_t k0, int64_t k1, int64_t n, __m256 *acc, const float *bias,  \
                                             float *out, size_t os)                                              \
    {                                                                                                              \
        tile_avx2(w, ws, f16, x, xs, k0, k1, n, acc, bias, out, os, R, T);                                         \
    }
GX_TILE(3, 4)
GX_TILE(4, 3)
GX_TILE(6, 2)
GX_TILE(6, 1)
GX_TILE(1, 4)
GX_TILE(1, 3)
GX_TILE(1, 2)
GX_TILE(1, 1)
#undef GX_TILE

typedef void (*gx_tile_fn_t)(const void *, size_t, bool, const float *, size_t, int64_t, int64_t, int64_t, __m256 *,
                             const float *, float *, size_t);

/* Largest block of k whose 4 tokens (F32) fit beside the weight rows in a
 * 32 KiB L1 cache. */
enum { GX_KBLOCK = 1024 };

/* Rows [0, n_rows) of w (row stride k elements, n_rows <= GX_ROW_CHUNK)
 * times tokens [0, n_tok) of x (F32, stride k), all in tinyBLAS order (k %
 * 16 == 0): groups of 4 tokens in 3-row tiles, the last 1-3 tokens in
 * wider row tiles (5 and 6 as 3 + 2 and 3 + 3); k in blocks of at most GX_KBLOCK (the chains saved
 * between blocks, so the sums are unchanged). */
GX_AVX2 static void block_avx2(const void *w, bool f16, int64_t n_rows, const float *x, int64_t n_tok, int64_t k,
                               const float *bias, float *out, size_t out_stride)
{
    static const gx_tile_fn_t wide[5] = {NULL, tile6x1_avx2, tile6x2_avx2, tile4x3_avx2, tile3x4_avx2};
    static const gx_tile_fn_t one[5] = {NULL, tile1x1_avx2, tile1x2_avx2, tile1x3_avx2, tile1x4_avx2};
    static const int rows[5] = {0, 6, 6, 4, 3};
    __m256 acc[GX_ROW_CHUNK][24]; /* per row: the chains of its tile (24 covers every tile) */
    const size_t es = f16 ? sizeof(uint16_t) : sizeof(float);
    const int64_t nb = (k + GX_KBLOCK - 1) / GX_KBLOCK;
    const int64_t kb = (k / 16 + nb - 1) / nb * 16;
    for (int64_t t = 0; t < n_tok;) {
        /* groups of 4, the last 5 or 6 tokens as 3 + 2 or 3 + 3 (a 1-token
         * tile loads a row per product) */
        const int64_t left = n_tok - t;
        const int T = left == 5 || left == 6 ? 3 : left >= 4 ? 4 : (int)left, R = rows[T];
        const float *xt = x + t * k;
        float *ot = out + (size_t)t * out_stride;
        for (int64_t k0 = 0; k0 < k; k0 += kb) {
            const int64_t k1 = k0 + kb < k ? k0 + kb : k;
            int64_t r = 0;
            for (; r + R <= n_rows; r += R)
                wide[T]((const uint8_t *)w + (size_t)r * (size_t)k * es, (size_t)k, f16, xt, (size_t)k, k0, k1, k,
                        acc[r], bias ? bias + r : NULL, ot + r, out_stride);
            for (; r < n_rows; r++)
                one[T]((const uint8_t *)w + (size_t)r * (size_t)k * es, (size_t)k, f16, xt, (size_t)k, k0, k1, k,
                       acc[r], bias ? bias + r : NULL, ot + r, out_stride);
        }
        t += T;
    }
}

/* ggml_v_expf on 8 lanes. vscalefps(j, n) = j * 2^n rounded once is done
 * as (j * 2^(n - n/2)) * 2^(n/2): the first product is exact (normal),
 * the second rounds once, also into the subnormal range. */
GX_AVX2 static __m256 pow2i_avx2(__m256i k)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
}

GX_AVX2 static __m256 expf_avx2(__m256 x)
{
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
    const __m256 n = _mm256_sub_ps(z, r);
    const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f),
                                      _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256 absn = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), n);
    const __m256 big = _mm256_cmp_ps(absn, _mm256_set1_ps(192.0f), _CMP_GT_OQ);
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 hi = _mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f));
    const __m256 mid = _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f));
    const __m256 lo = _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f));
    const __m256 j = _mm256_fmadd_ps(_mm256_fmadd_ps(hi, u, mid), u, lo);
    /* n is integral; clamp so the exponent arithmetic stays in range */
    const __m256 nc = _mm256_min_ps(_mm256_max_ps(n, _mm256_set1_ps(-192.0f)), _mm256_set1_ps(192.0f));
    const __m256i ni = _mm256_cvttps_epi32(nc);
    const __m256i n2 = _mm256_srai_epi32(ni, 1);
    const __m256i n1 = _mm256_sub_epi32(ni, n2);
    __m256 res = _mm256_mul_ps(_mm256_mul_ps(j, pow2i_avx2(n1)), pow2i_avx2(n2));
    /* NaN input: n is NaN, keep it */
    res = _mm256_blendv_ps(res, n, _mm256_cmp_ps(n, n, _CMP_UNORD_Q));
    if (_mm256_testz_ps(big, big))
        return res;
    const __m256 alt = _mm256_blendv_ps(_mm256_set1_ps(INFINITY), _mm256_setzero_ps(),
                                        _mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ));
    return _mm256_blendv_ps(res, alt, big);
}

GX_AVX2 static void expf16_avx2(const float *in, float *out)
{
    _mm256_storeu_ps(out, expf_avx2(_mm256_loadu_ps(in)));
    _mm256_storeu_ps(out + 8, expf_avx2(_mm256_loadu_ps(in + 8)));
}

GX_AVX2 static void silu_row_avx2(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    const __m256 one = _mm256_set1_ps(1.0f);
    for (; i + 15 < n; i += 16)
        for (int h = 0; h < 16; h += 8) {
            const __m256 v = _mm256_loadu_ps(x + i + h);
            const __m256 e = expf_avx2(_mm256_sub_ps(_mm256_setzero_ps(), v));
            _mm256_storeu_ps(y + i + h, _mm256_div_ps(v, _mm256_add_ps(one, e)));
        }
    for (; i < n; i++)
        y[i] = x[i] / (1.0f + expf(-x[i]));
}

/* softmax_row_avx512 on two 8-lane halves. */
GX_AVX2 static void softmax_row_avx2(float *s, int64_t n)
{
    __m256 mv = _mm256_set1_ps(-INFINITY);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        mv = _mm256_max_ps(_mm256_loadu_ps(s + i), mv);
    float mx[8];
    _mm256_storeu_ps(mx, mv);
    float max = max_row_c(mx, 8);
    for (; i < n; i++)
        max = s[i] > max ? s[i] : max;
    const __m256 vmax = _mm256_set1_ps(max);
    double sum = 0.0;
    for (i = 0; i < n; i += 16) {
        const int64_t m = n - i < 16 ? n - i : 16;
        __m256 e[2];
        if (m == 16) {
            for (int h = 0; h < 2; h++)
                e[h] = expf_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + i + 8 * h), vmax));
        } else {
            float in[16];
            for (int64_t l = 0; l < 16; l++)
                in[l] = l < m ? s[i + l] - max : -INFINITY;
            for (int h = 0; h < 2; h++)
                e[h] = expf_avx2(_mm256_loadu_ps(in + 8 * h));
        }
        if (m == 16) {
            _mm256_storeu_ps(s + i, e[0]);
            _mm256_storeu_ps(s + i + 8, e[1]);
        } else {
            float t[16];
            _mm256_storeu_ps(t, e[0]);
            _mm256_storeu_ps(t + 8, e[1]);
            memcpy(s + i, t, (size_t)m * sizeof(float));
        }
        sum += (double)hsum256x2(e[0], e[1]);
    }
    const __m256 inv = _mm256_set1_ps((float)(1.0 / sum));
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(s + i, _mm256_mul_ps(_mm256_loadu_ps(s + i), inv));
    for (; i < n; i++)
        s[i] *= (float)(1.0 / sum);
}
GX_AVX2 static void add_row_avx2(float *y, const float *a, const float *b, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    for (; i < n; i++)
        y[i] = a[i] + b[i];
}

/* gx_softmax_blocks16 at the AVX2 level: the same operations without a
 * dispatch per block. */
GX_AVX2 static void softmax_blocks16_avx2(float *s, int64_t n)
{
    /* the maximum lane by lane, each lane and then the tail with the
     * portable loop's rule (a NaN is never taken); only the sign of a zero
     * maximum can differ from the in-order loop, and s - max, then exp, is
     * the same for both zeros */
    __m256 vmax = _mm256_set1_ps(-INFINITY);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        vmax = _mm256_max_ps(_mm256_loadu_ps(s + i), vmax);
    float lanes[8], max = -INFINITY;
    _mm256_storeu_ps(lanes, vmax);
    for (int l = 0; l < 8; l++)
        max = lanes[l] > max ? lanes[l] : max;
    for (; i < n; i++)
        max = s[i] > max ? s[i] : max;
    vmax = _mm256_set1_ps(max);
    double sum = 0.0;
    for (i = 0; i + 15 < n; i += 16) {
        const __m256 lo = expf_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + i), vmax));
        const __m256 hi = expf_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + i + 8), vmax));
        _mm256_storeu_ps(s + i, lo);
        _mm256_storeu_ps(s + i + 8, hi);
        sum += (double)hsum256x2(lo, hi);
    }
    for (; i < n; i++) {
        const float v = expf(s[i] - max);
        sum += (double)v;
        s[i] = v;
    }
    const float inv = (float)(1.0 / sum);
    const __m256 vinv = _mm256_set1_ps(inv);
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(s + i, _mm256_mul_ps(_mm256_loadu_ps(s + i), vinv));
    for (; i < n; i++)
        s[i] *= inv;
}
#endif

/* ---- dispatch ------------------------------------------------------------ */

#ifdef GX_X86
#define GX_PICK(fn, ...)                                    \
    do {                                                    \
        const int lv_ = gx_level();                         \
        if (lv_ == GX_LEVEL_AVX512)                         \
            return fn##_avx512(__VA_ARGS__);                \
        if (lv_ == GX_LEVEL_AVX2)                           \
            return fn##_avx2(__VA_ARGS__);                  \
    } while (0)
#else
#define GX_PICK(fn, ...) \
    do {                 \
    } while (0)
#endif

float gx_dot_f32_vec(const float *x, const float *y, int64_t n)
{
    GX_PICK(dot_f32_vec, x, y, n);
    return dot_f32_vec_c(x, y, n);
}

float gx_dot_f32_tiny(const float *x, const float *y, int64_t n)
{
    GX_PICK(dot_f32_tiny, x, y, n);
    return dot_f32_tiny_c(x, y, n);
}

float gx_dot_f16_vec(const uint16_t *x, const uint16_t *y, int64_t n)
{
    GX_PICK(dot_f16_vec, x, y, n);
    return dot_f16_vec_c(x, y, n);
}

float gx_dot_f16_tiny(const uint16_t *x, const uint16_t *y, int64_t n)
{
    GX_PICK(dot_f16_tiny, x, y, n);
    return dot_f16_tiny_c(x, y, n);
}

void gx_dot_f16_rows(const uint16_t *x, int64_t stride, int64_t n_rows, const uint16_t *y, int64_t n, float scale,
                     float *out)
{
    const int lv = gx_level();
    for (int64_t p = 0; p < n_rows; p++) {
        const uint16_t *xr = x + p * stride;
        float v;
#ifdef GX_X86
        if (lv == GX_LEVEL_AVX512)
            v = dot_f16_vec_avx512(xr, y, n);
        else if (lv == GX_LEVEL_AVX2)
            v = dot_f16_vec_avx2(xr, y, n);
        else
#endif
            v = dot_f16_vec_c(xr, y, n);
        out[p] = v * scale;
    }
    (void)lv;
}

void gx_expf16(const float *in, float *out)
{
    GX_PICK(expf16, in, out);
    expf16_c(in, out);
}

void gx_silu_row(float *y, const float *x, int64_t n)
{
    GX_PICK(silu_row, y, x, n);
    silu_row_c(y, x, n);
}

void gx_softmax_row(float *s, int64_t n)
{
    GX_PICK(softmax_row, s, n);
    softmax_row_c(s, n);
}

void gx_add_row(float *y, const float *a, const float *b, int64_t n)
{
#ifdef GX_X86
    if (gx_level() >= GX_LEVEL_AVX2) {
        add_row_avx2(y, a, b, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++)
        y[i] = a[i] + b[i];
}

void gx_softmax_blocks16(float *s, int64_t n)
{
#ifdef GX_X86
    if (gx_level() == GX_LEVEL_AVX2) {
        softmax_blocks16_avx2(s, n);
        return;
    }
#endif
    float max = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        max = s[i] > max ? s[i] : max;
    double sum = 0.0;
    int64_t i = 0;
    for (; i + 15 < n; i += 16) {
        float in[16];
        for (int l = 0; l < 16; l++)
            in[l] = s[i + l] - max;
        gx_expf16(in, s + i);
        sum += (double)gx_hsum16(s + i);
    }
    for (; i < n; i++) {
        const float v = expf(s[i] - max);
        sum += (double)v;
        s[i] = v;
    }
    const float inv = (float)(1.0 / sum);
    for (i = 0; i < n; i++)
        s[i] *= inv;
}

/* ---- matrix product ------------------------------------------------------ */

typedef struct {
    const void *W, *x;
    const float *xr;   /* the tokens as F32 (F16 weights: x's values), or NULL */
    const float *bias; /* [n_rows] or NULL */
    bool f16;
    int64_t n_rows, k, n_tok;
    const uint8_t *order;
    float *out;
} gx_mm_job_t;

typedef float (*gx_dot_fn_t)(const void *, const void *, int64_t);

static float d32v_c(const void *a, const void *b, int64_t n) { return dot_f32_vec_c(a, b, n); }
static float d32t_c(const void *a, const void *b, int64_t n) { return dot_f32_tiny_c(a, b, n); }
static float d16v_c(const void *a, const void *b, int64_t n) { return dot_f16_vec_c(a, b, n); }
static float d16t_c(const void *a, const void *b, int64_t n) { return dot_f16_tiny_c(a, b, n); }
#ifdef GX_X86
GX_AVX512 static float d32v_512(const void *a, const void *b, int64_t n) { return dot_f32_vec_avx512(a, b, n); }
GX_AVX512 static float d32t_512(const void *a, const void *b, int64_t n) { return dot_f32_tiny_avx512(a, b, n); }
GX_AVX512 static float d16v_512(const void *a, const void *b, int64_t n) { return dot_f16_vec_avx512(a, b, n); }
GX_AVX512 static float d16t_512(const void *a, const void *b, int64_t n) { return dot_f16_tiny_avx512(a, b, n); }
GX_AVX2 static float d32v_256(const void *a, const void *b, int64_t n) { return dot_f32_vec_avx2(a, b, n); }
GX_AVX2 static float d32t_256(const void *a, const void *b, int64_t n) { return dot_f32_tiny_avx2(a, b, n); }
GX_AVX2 static float d16v_256(const void *a, const void *b, int64_t n) { return dot_f16_vec_avx2(a, b, n); }
GX_AVX2 static float d16t_256(const void *a, const void *b, int64_t n) { return dot_f16_tiny_avx2(a, b, n); }
#endif

/* [level][f16][tiny] */
static gx_dot_fn_t gx_dot_pick(int lv, bool f16, bool tiny)
{
    static const gx_dot_fn_t c[2][2] = {{d32v_c, d32t_c}, {d16v_c, d16t_c}};
#ifdef GX_X86
    static const gx_dot_fn_t v512[2][2] = {{d32v_512, d32t_512}, {d16v_512, d16t_512}};
    static const gx_dot_fn_t v256[2][2] = {{d32v_256, d32t_256}, {d16v_256, d16t_256}};
    if (lv == GX_LEVEL_AVX512)
        return v512[f16][tiny];
    if (lv == GX_LEVEL_AVX2)
        return v256[f16][tiny];
#endif
    (void)lv;
    return c[f16][tiny];
}

/* Tokens [t, end) of the job by one dot (or a 4-row / 4-token kernel) at
 * a time, rows [rc, rend); returns end. */
static int64_t gx_mm_dots(const gx_mm_job_t *j, int lv, bool tiny_ok, int64_t rc, int64_t rend, int64_t t)
{
    const size_t es = j->f16 ? sizeof(uint16_t) : sizeof(float);
    const size_t row_bytes = (size_t)j->k * es;
    const void *xt = (const uint8_t *)j->x + (size_t)t * row_bytes;
    const bool tiny = tiny_ok && j->order && j->order[t] == GX_ORDER_TINY;
#ifdef GX_X86
    if (tiny && lv == GX_LEVEL_AVX512 && t + 3 < j->n_tok && j->order[t + 1] == GX_ORDER_TINY &&
        j->order[t + 2] == GX_ORDER_TINY && j->order[t + 3] == GX_ORDER_TINY) {
        for (int64_t r = rc; r < rend; r++)
            tiny4_avx512((const uint8_t *)j->W + (size_t)r * row_bytes, xt, (size_t)j->k, j->f16, j->k,
                         j->out + t * j->n_rows + r, (size_t)j->n_rows);
        return t + 4;
    }
#endif
    const gx_dot_fn_t dot = gx_dot_pick(lv, j->f16, tiny);
    int64_t r = rc;
#ifdef GX_X86
    if (!tiny && lv == GX_LEVEL_AVX512)
        for (; r + 4 <= rend; r += 4) {
            float o4[4];
            vec4_avx512((const uint8_t *)j->W + (size_t)r * row_bytes, (size_t)j->k, xt, j->f16, j->k, o4);
            for (int q = 0; q < 4; q++)
                j->out[t * j->n_rows + r + q] = o4[q];
        }
#endif
    for (; r < rend; r++)
        j->out[t * j->n_rows + r] = dot((const uint8_t *)j->W + (size_t)r * row_bytes, xt, j->k);
    return t + 1;
}

static void gx_mm_worker(void *arg, int ith, int nth)
{
    const gx_mm_job_t *j = arg;
    const int64_t per = (j->n_rows + nth - 1) / nth;
    const int64_t r0 = per * ith;
    const int64_t r1 = r0 + per < j->n_rows ? r0 + per : j->n_rows;
    /* tinyBLAS takes k % 16 == 0 and a multiple of 4 rows (else ggml falls
     * back to ggml_vec_dot) */
    const bool tiny_ok = j->k % 16 == 0 && j->n_rows % 4 == 0;
    const int lv = gx_level();
    const size_t es = j->f16 ? sizeof(uint16_t) : sizeof(float);
    for (int64_t rc = r0; rc < r1; rc += GX_ROW_CHUNK) {
        const int64_t rend = rc + GX_ROW_CHUNK < r1 ? rc + GX_ROW_CHUNK : r1;
        for (int64_t t = 0; t < j->n_tok;) {
            int64_t end = t + 1;
#ifdef GX_X86
            if (lv == GX_LEVEL_AVX2 && j->xr && tiny_ok && j->order && j->order[t] == GX_ORDER_TINY) {
                while (end < j->n_tok && j->order[end] == GX_ORDER_TINY)
                    end++;
                block_avx2((const uint8_t *)j->W + (size_t)rc * (size_t)j->k * es, j->f16, rend - rc,
                           j->xr + t * j->k, end - t, j->k, j->bias ? j->bias + rc : NULL, j->out + t * j->n_rows + rc,
                           (size_t)j->n_rows);
                t = end;
                continue;
            }
#endif
            end = gx_mm_dots(j, lv, tiny_ok, rc, rend, t);
            if (j->bias)
                for (; t < end; t++)
                    for (int64_t r = rc; r < rend; r++)
                        j->out[t * j->n_rows + r] = j->out[t * j->n_rows + r] + j->bias[r];
            t = end;
        }
    }
}

/* Several products of the same activations in one hand-off: each thread
 * takes its rows of every matrix. */
typedef struct {
    gx_mm_job_t job[GX_MATMUL_MAX];
    int n;
} gx_mm_multi_t;

static void gx_mm_multi_worker(void *arg, int ith, int nth)
{
    gx_mm_multi_t *m = arg;
    for (int i = 0; i < m->n; i++)
        gx_mm_worker(&m->job[i], ith, nth);
}

void gx_matmul_n(tpool_t *pool, int n, const gx_mat_t *mats, bool f16, int64_t k, const void *x, const float *xr,
                 int64_t n_tok, const uint8_t *order)
{
    gx_mm_multi_t m = {.n = n < GX_MATMUL_MAX ? n : GX_MATMUL_MAX};
    int64_t work = 0;
    for (int i = 0; i < m.n; i++) {
        m.job[i] = (gx_mm_job_t){mats[i].W, x, f16 ? xr : x, mats[i].bias, f16, mats[i].n_rows, k, n_tok, order,
                                 mats[i].out};
        work += mats[i].n_rows * k * n_tok;
    }
    if (pool && work >= 4096)
        tpool_run(pool, gx_mm_multi_worker, &m);
    else
        gx_mm_multi_worker(&m, 0, 1);
}

void gx_matmul_f32(tpool_t *pool, const float *W, int64_t n_rows, int64_t k, const float *x, int64_t n_tok,
                   const uint8_t *order, const float *bias, float *out)
{
    gx_matmul_n(pool, 1, &(gx_mat_t){W, n_rows, bias, out}, false, k, x, NULL, n_tok, order);
}

void gx_matmul_f16(tpool_t *pool, const uint16_t *W, int64_t n_rows, int64_t k, const uint16_t *x, const float *xr,
                   int64_t n_tok, const uint8_t *order, const float *bias, float *out)
{
    gx_matmul_n(pool, 1, &(gx_mat_t){W, n_rows, bias, out}, true, k, x, xr, n_tok, order);
}
