/* ops.c - element-wise operations as ggml computes them (see ops.h). */
#include "engine/model/ops.h"

#include <math.h>
#include <pthread.h>

#include "engine/kernels/ggml_exact.h"
#include "engine/quant/fp16.h"

void ops_rms_norm(const float *x, const float *w, float *y, int64_t n, float eps)
{
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / (double)n);
    const float scale = 1.0f / sqrtf(mean + eps);
    if (!w) {
        for (int64_t i = 0; i < n; i++)
            y[i] = x[i] * scale;
        return;
    }
    for (int64_t i = 0; i < n; i++)
        y[i] = (x[i] * scale) * w[i];
}

/* The part of ops_layer_norm after the mean. */
static void layer_norm_finish(const float *x, float mean, const float *w, const float *b, float *y, int64_t n,
                              float eps)
{
    double sq = 0.0;
    int64_t i = 0;
    for (; i + 15 < n; i += 16) { /* ggml_vec_cvar_f32, AVX-512 blocks */
        float v[16];
        for (int l = 0; l < 16; l++) {
            const float d = x[i + l] - mean;
            y[i + l] = d;
            v[l] = d * d;
        }
        sq += (double)gx_hsum16(v);
    }
    for (; i < n; i++) {
        const float d = x[i] - mean;
        y[i] = d;
        sq += (double)(d * d);
    }
    const float var = (float)(sq / (double)n);
    const float scale = 1.0f / sqrtf(var + eps);
    for (i = 0; i < n; i++) {
        float v = y[i] * scale;
        if (w)
            v = v * w[i];
        if (b)
            v = v + b[i];
        y[i] = v;
    }
}

void ops_layer_norm(const float *x, const float *w, const float *b, float *y, int64_t n, float eps)
{
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)x[i];
    layer_norm_finish(x, (float)sum / (float)n, w, b, y, n, eps);
}

void ops_layer_norm_rows(float *x, int64_t n_rows, const float *w, const float *b, int64_t n, float eps)
{
    int64_t r = 0;
    for (; r + 4 <= n_rows; r += 4) {
        /* the four in-order sums side by side (independent chains) */
        float *x0 = x + r * n, *x1 = x0 + n, *x2 = x1 + n, *x3 = x2 + n;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        for (int64_t i = 0; i < n; i++) {
            s0 += (double)x0[i];
            s1 += (double)x1[i];
            s2 += (double)x2[i];
            s3 += (double)x3[i];
        }
        layer_norm_finish(x0, (float)s0 / (float)n, w, b, x0, n, eps);
        layer_norm_finish(x1, (float)s1 / (float)n, w, b, x1, n, eps);
        layer_norm_finish(x2, (float)s2 / (float)n, w, b, x2, n, eps);
        layer_norm_finish(x3, (float)s3 / (float)n, w, b, x3, n, eps);
    }
    for (; r < n_rows; r++)
        ops_layer_norm(x + r * n, w, b, x + r * n, n, eps);
}

void ops_rms_norm_heads(float *x, const float *w, int32_t n_heads, int32_t head_dim, float eps)
{
    for (int32_t h = 0; h < n_heads; h++)
        ops_rms_norm(x + (int64_t)h * head_dim, w, x + (int64_t)h * head_dim, head_dim, eps);
}

/* ggml_table_gelu_f16: fp16(gelu_tanh(x)) for every F16 x, with ggml's
 * formula 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2))); gcc contracts
 * 1 + A*x*x into fma(A*x, x, 1). Kept widened to F32 (exact), so a lookup
 * is one load; the indices are made a block at a time by the vectorised
 * fp16_row_from_fp32. */
static float gelu_table[1 << 16];
static pthread_once_t gelu_once = PTHREAD_ONCE_INIT;

static void gelu_table_init(void)
{
    const float coef_a = 0.044715f, sqrt_2_over_pi = 0.79788456080286535587989211986876f;
    for (uint32_t i = 0; i < (1u << 16); i++) {
        const float x = fp16_to_fp32((uint16_t)i);
        const float inner = sqrt_2_over_pi * x * fmaf(coef_a * x, x, 1.0f);
        gelu_table[i] = fp16_to_fp32(fp16_from_fp32(0.5f * x * (1.0f + tanhf(inner))));
    }
}

enum { GELU_BLOCK = 64 };

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
/* gelu_rows' rule on 8 lanes: the table gathered at the F16 index, 0 at or
 * below -10, x at or above 10 (NaN: the table, as the scalar compares). */
__attribute__((target("avx2,fma,f16c"))) static int64_t gelu_rows_avx2(float *y, const float *g, const float *u,
                                                                        int64_t n)
{
    const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        const __m256i idx = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(x, 0));
        __m256 v = _mm256_i32gather_ps(gelu_table, idx, 4);
        v = _mm256_blendv_ps(v, x, _mm256_cmp_ps(x, hi, _CMP_GE_OQ));
        if (u)
            v = _mm256_mul_ps(v, _mm256_loadu_ps(u + i));
        _mm256_storeu_ps(y + i, _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LE_OQ), v));
    }
    return i;
}
#endif

/* y = gelu(g) (* u when u is not NULL); y may be g. */
static void gelu_rows(float *y, const float *g, const float *u, int64_t n)
{
    pthread_once(&gelu_once, gelu_table_init);
#if defined(__x86_64__) || defined(__i386__)
    if (gx_level() >= GX_LEVEL_AVX2) {
        const int64_t done = gelu_rows_avx2(y, g, u, n);
        y += done;
        g += done;
        if (u)
            u += done;
        n -= done;
    }
#endif
    uint16_t idx[GELU_BLOCK];
    for (int64_t i0 = 0; i0 < n; i0 += GELU_BLOCK) {
        const int64_t m = n - i0 < GELU_BLOCK ? n - i0 : GELU_BLOCK;
        fp16_row_from_fp32(g + i0, idx, m);
        for (int64_t l = 0; l < m; l++) {
            const float x = g[i0 + l];
            if (x <= -10.0f)
                y[i0 + l] = 0.0f;
            else if (x >= 10.0f)
                y[i0 + l] = u ? x * u[i0 + l] : x;
            else
                y[i0 + l] = u ? gelu_table[idx[l]] * u[i0 + l] : gelu_table[idx[l]];
        }
    }
}

void ops_geglu_row(float *y, const float *g, const float *u, int64_t n)
{
    gelu_rows(y, g, u, n);
}

void ops_gelu_row(float *y, const float *x, int64_t n)
{
    gelu_rows(y, x, NULL, n);
}

void ops_swiglu_oai_row(float *y, const float *g, const float *u, int64_t n, float alpha, float limit)
{
    for (int64_t i = 0; i < n; i++) {
        const float x = fminf(g[i], limit);
        const float v = fminf(fmaxf(u[i], -limit), limit);
        const float glu = x / (1.0f + expf(alpha * (-x)));
        y[i] = glu * (v + 1.0f);
    }
}

void ops_softmax(float *s, int64_t n)
{
    gx_softmax_blocks16(s, n);
}

/* One channel of a tap-major row (see ops_ssm_conv_row). */
static inline float conv_chan(const float *in, const float *wt, int64_t C, int32_t K)
{
    const int32_t kv = K & ~3;
    float sum = 0.0f;
    int32_t i = 0;
    for (; i < kv; i++)
        sum = sum + in[(int64_t)i * C] * wt[(int64_t)i * C];
    for (; i < K; i++)
        sum = fmaf(in[(int64_t)i * C], wt[(int64_t)i * C], sum);
    return sum;
}

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
/* Eight channels per step, the same operations per channel. */
__attribute__((target("avx2,fma"))) static void conv_row_avx2(const float *in, const float *wt, int64_t C, int32_t K,
                                                              float *y)
{
    const int32_t kv = K & ~3;
    int64_t c = 0;
    for (; c + 8 <= C; c += 8) {
        __m256 s = _mm256_setzero_ps();
        int32_t i = 0;
        for (; i < kv; i++)
            s = _mm256_add_ps(s, _mm256_mul_ps(_mm256_loadu_ps(in + i * C + c), _mm256_loadu_ps(wt + i * C + c)));
        for (; i < K; i++)
            s = _mm256_fmadd_ps(_mm256_loadu_ps(in + i * C + c), _mm256_loadu_ps(wt + i * C + c), s);
        _mm256_storeu_ps(y + c, s);
    }
    for (; c < C; c++)
        y[c] = conv_chan(in + c, wt + c, C, K);
}
#endif

void ops_ssm_conv_row(const float *in, const float *wt, int64_t C, int32_t K, float *y)
{
#if defined(__x86_64__) || defined(__i386__)
    if (gx_level() >= GX_LEVEL_AVX2) {
        conv_row_avx2(in, wt, C, K, y);
        return;
    }
#endif
    for (int64_t c = 0; c < C; c++)
        y[c] = conv_chan(in + c, wt + c, C, K);
}

void ops_conv_transpose(const float *w, int64_t C, int32_t K, float *wt)
{
    for (int64_t c = 0; c < C; c++)
        for (int32_t i = 0; i < K; i++)
            wt[(int64_t)i * C + c] = w[c * K + i];
}

void ops_softcap_row(float *x, int64_t n, float cap)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = tanhf(x[i] * (1.0f / cap)) * cap;
}
