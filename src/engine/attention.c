/* attention.c - per-(token, head) attention with ggml's F16 roundings. */
#include "engine/attention.h"

#include <math.h>
#include <string.h>

#include "engine/fp16.h"
#include "engine/kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* acc[d] += p * v[d] for d < n (n a multiple of 8 handled vectorised). */
__attribute__((target("avx2,fma,f16c"))) static void axpy_f16_avx2(float *acc, float p, const uint16_t *v,
                                                                    int n)
{
    const __m256 vp = _mm256_set1_ps(p);
    int d = 0;
    for (; d + 8 <= n; d += 8) {
        __m256 vv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + d)));
        _mm256_storeu_ps(acc + d, _mm256_fmadd_ps(vp, vv, _mm256_loadu_ps(acc + d)));
    }
    for (; d < n; d++)
        acc[d] += p * fp16_to_fp32(v[d]);
}
#define HAVE_AXPY_AVX2 1
#endif

static void axpy_f16_scalar(float *acc, float p, const uint16_t *v, int n)
{
    for (int d = 0; d < n; d++)
        acc[d] += p * fp16_to_fp32(v[d]);
}

int64_t attn_scratch_floats(int32_t n_ctx, int32_t head_dim)
{
    /* scores, then q as F16 (two per float slot, rounded up) */
    return (int64_t)n_ctx + head_dim / 2 + 16;
}

static void attn_one(const attn_job_t *job, int32_t t, int32_t h, float *scratch)
{
    const int32_t hd = job->head_dim;
    const int32_t kvh = h / (job->n_head / job->n_head_kv);
    const int32_t n_kv = job->n_kv[t];
    float *scores = scratch;
    uint16_t *q16 = (uint16_t *)(scratch + job->scratch_stride - hd / 2 - 8);
    const float *q = job->q + ((int64_t)t * job->n_head + h) * hd;
    fp16_row_from_fp32(q, q16, hd);

    const uint16_t *kb = job->k_base[t] + (int64_t)kvh * hd;
    float max = -INFINITY;
    for (int32_t p = 0; p < n_kv; p++) {
        float s = kern_vec_dot(QTYPE_F16, hd, kb + (int64_t)p * job->kv_dim, q16) * job->scale;
        scores[p] = s;
        if (s > max)
            max = s;
    }
    double sum = 0.0;
    for (int32_t p = 0; p < n_kv; p++) {
        float e = expf(scores[p] - max);
        scores[p] = e;
        sum += (double)e;
    }
    const float inv = (float)(1.0 / sum);
    float *out = job->out + ((int64_t)t * job->n_head + h) * hd;
    memset(out, 0, (size_t)hd * sizeof(float));
    const uint16_t *vb = job->v_base[t] + (int64_t)kvh * hd;
#ifdef HAVE_AXPY_AVX2
    const int vec = kern_isa() >= KERN_ISA_AVX2;
#else
    const int vec = 0;
#endif
    for (int32_t p = 0; p < n_kv; p++) {
        /* the probabilities are rounded to F16 before they meet V */
        const float pr = fp16_to_fp32(fp16_from_fp32(scores[p] * inv));
        if (pr == 0.0f)
            continue;
        const uint16_t *v = vb + (int64_t)p * job->kv_dim;
#ifdef HAVE_AXPY_AVX2
        if (vec) {
            axpy_f16_avx2(out, pr, v, hd);
            continue;
        }
#endif
        (void)vec;
        axpy_f16_scalar(out, pr, v, hd);
    }
}

static void attn_worker(void *arg, int ith, int nth)
{
    const attn_job_t *job = arg;
    float *scratch = job->scratch + (int64_t)ith * job->scratch_stride;
    const int32_t total = job->n_tok * job->n_head;
    for (int32_t i = ith; i < total; i += nth)
        attn_one(job, i / job->n_head, i % job->n_head, scratch);
}

void attn_run(tpool_t *pool, const attn_job_t *job)
{
    if (pool)
        tpool_run(pool, attn_worker, (void *)job);
    else
        attn_worker((void *)job, 0, 1);
}
