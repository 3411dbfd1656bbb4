/* attention.c - per-(token, head) attention in ggml's arithmetic order.
 *
 * What llama.cpp c392e509 computes without flash attention (llm_build_kqv):
 *  - kq = mul_mat(K, q): q is a permuted view, so it is first rounded to
 *    F16 and every score is ggml_vec_dot_f16 over head_dim (gx_dot_f16_vec).
 *  - soft_max_ext(kq, mask, scale): scores * scale, then
 *    ggml_vec_soft_max_f32 (gx_softmax_row); masked and padding positions
 *    are exact zeros.
 *  - kqv = mul_mat(V^T, kq) over n_kv cache positions, n_kv being the used
 *    cells rounded up to a multiple of 32 (at least 32); the padding adds
 *    exact zeros, but n_kv decides which positions ggml_vec_dot_f16 sums in
 *    its 64-wide SIMD part and which in its double-precision leftovers.
 *    The probabilities are rounded to F16 (V's vec_dot_type) first. A single
 *    token (decode) takes that path (ATTN_ORDER_VEC); a batch of >= 2
 *    tokens takes llamafile's tinyBLAS<16> F16 x F16 kernel instead: one
 *    16-lane accumulator over the positions (ATTN_ORDER_TINY). The golden
 *    outputs are reproduced bit for bit with exactly these two orders.
 * The order is chosen per token by the caller (attn_job_t.order), never
 * from the batch, so results stay batch invariant.
 */
#include "engine/attention.h"

#include <math.h>
#include <string.h>

#include "engine/fp16.h"
#include "engine/ggml_exact.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ATTN_X86 1
#define ATTN_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c")))
#define ATTN_AVX2 __attribute__((target("avx2,fma,f16c")))
#endif

int64_t attn_scratch_floats(int32_t n_ctx, int32_t head_dim)
{
    /* scores, probabilities as F16, q as F16, 64 accumulators per dim,
     * and the double leftovers (two floats each) */
    return (int64_t)n_ctx + (n_ctx + 1) / 2 + (head_dim + 1) / 2 + 64 * (int64_t)head_dim + 2 * (int64_t)head_dim +
           64;
}

/* acc[d] += w * v[d] over d < n. w and v[d] are F16 values, so their
 * product is exact in float and this equals a fused multiply-add. */
static void add_row_c(float *acc, float w, const uint16_t *v, int n)
{
    for (int d = 0; d < n; d++)
        acc[d] = acc[d] + w * fp16_to_fp32(v[d]);
}

#ifdef ATTN_X86
ATTN_AVX512 static void fma_row_avx512(float *acc, float w, const uint16_t *v, int n)
{
    const __m512 vw = _mm512_set1_ps(w);
    int d = 0;
    for (; d + 16 <= n; d += 16) {
        const __m512 vv = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(v + d)));
        _mm512_storeu_ps(acc + d, _mm512_fmadd_ps(vv, vw, _mm512_loadu_ps(acc + d)));
    }
    if (d < n) {
        const __mmask16 m = (__mmask16)((1u << (n - d)) - 1);
        const __m512 vv = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, v + d));
        _mm512_mask_storeu_ps(acc + d, m, _mm512_fmadd_ps(vv, vw, _mm512_maskz_loadu_ps(m, acc + d)));
    }
}

ATTN_AVX2 static void fma_row_avx2(float *acc, float w, const uint16_t *v, int n)
{
    const __m256 vw = _mm256_set1_ps(w);
    int d = 0;
    for (; d + 8 <= n; d += 8) {
        const __m256 vv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + d)));
        _mm256_storeu_ps(acc + d, _mm256_fmadd_ps(vv, vw, _mm256_loadu_ps(acc + d)));
    }
    add_row_c(acc + d, w, v + d, n - d);
}
#endif

/* out[d] = the 16 lane accumulators acc[l * hd + d] (l < 16) summed in
 * _mm512_reduce_add_ps's pairing (gx_hsum16), done row-wise so it
 * vectorises over d. Destroys acc. */
static void hsum_lanes(float *acc, int hd, float *out)
{
    const int64_t n8 = 8 * (int64_t)hd, n4 = 4 * (int64_t)hd;
    for (int64_t i = 0; i < n8; i++)
        acc[i] = acc[i + n8] + acc[i];
    for (int64_t i = 0; i < n4; i++)
        acc[i] = acc[i + n4] + acc[i];
    for (int d = 0; d < hd; d++) {
        const float a = acc[d] + acc[2 * hd + d];
        const float b = acc[hd + d] + acc[3 * hd + d];
        out[d] = a + b;
    }
}

/* left[d] += (double)(w * v[d]): exact products summed in double. */
static void left_row_c(double *left, float w, const uint16_t *v, int n)
{
    for (int d = 0; d < n; d++)
        left[d] += (double)(w * fp16_to_fp32(v[d]));
}

#ifdef ATTN_X86
ATTN_AVX512 static void left_row_avx512(double *left, float w, const uint16_t *v, int n)
{
    const __m512 vw = _mm512_set1_ps(w);
    int d = 0;
    for (; d + 16 <= n; d += 16) {
        const __m512 pr = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(v + d))), vw);
        const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(pr));
        const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(pr), 1)));
        _mm512_storeu_pd(left + d, _mm512_add_pd(_mm512_loadu_pd(left + d), lo));
        _mm512_storeu_pd(left + d + 8, _mm512_add_pd(_mm512_loadu_pd(left + d + 8), hi));
    }
    left_row_c(left + d, w, v + d, n - d);
}

ATTN_AVX2 static void left_row_avx2(double *left, float w, const uint16_t *v, int n)
{
    const __m256 vw = _mm256_set1_ps(w);
    int d = 0;
    for (; d + 8 <= n; d += 8) {
        const __m256 pr = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + d))), vw);
        _mm256_storeu_pd(left + d, _mm256_add_pd(_mm256_loadu_pd(left + d), _mm256_cvtps_pd(_mm256_castps256_ps128(pr))));
        _mm256_storeu_pd(left + d + 4,
                         _mm256_add_pd(_mm256_loadu_pd(left + d + 4), _mm256_cvtps_pd(_mm256_extractf128_ps(pr, 1))));
    }
    left_row_c(left + d, w, v + d, n - d);
}
#endif

/* The V rows one (token, head) pair reads: block by block through the
 * sequence's block table, so the block lookup happens once per block, not
 * once per position. */
typedef struct {
    const attn_job_t *job;
    const int32_t *blocks;
    int32_t kvh;
    const uint16_t *p16;  /* the probabilities, rounded to F16 */
    int lv;               /* GX_LEVEL_* */
} v_rows_t;

/* Calls row(ctx, p, v) for positions p in [from, to) in order, v being the
 * F16 V row of position p for this KV head. */
#define V_FOR_ROWS(vr, from, to, BODY)                                                                        \
    do {                                                                                                      \
        const int32_t bt_ = kv_block_tokens((vr)->job->kv);                                                    \
        for (int32_t p = (from); p < (to);) {                                                                 \
            const int32_t b_ = p / bt_, end_ = (to) < (b_ + 1) * bt_ ? (to) : (b_ + 1) * bt_;                  \
            const uint16_t *vb_ = kv_block_v((vr)->job->kv, (vr)->blocks[b_], (vr)->job->layer) +             \
                                  (int64_t)(vr)->kvh * (vr)->job->head_dim;                                   \
            for (; p < end_; p++) {                                                                           \
                const uint16_t *v = vb_ + (int64_t)(p - b_ * bt_) * (vr)->job->kv_dim;                         \
                const float w = fp16_to_fp32((vr)->p16[p]);                                                   \
                BODY;                                                                                         \
            }                                                                                                 \
        }                                                                                                     \
    } while (0)

/* acc[(p % lanes) * hd + d] += w_p * V[p][d] for p in [from, to), one FMA
 * per position and lane in position order (tinyBLAS's and
 * ggml_vec_dot_f16's order). */
static void v_accumulate(const v_rows_t *vr, int32_t from, int32_t to, int lanes, float *acc)
{
    const int32_t hd = vr->job->head_dim;
    V_FOR_ROWS(vr, from, to, {
        float *a = acc + (int64_t)(p % lanes) * hd;
#ifdef ATTN_X86
        if (vr->lv == GX_LEVEL_AVX512)
            fma_row_avx512(a, w, v, hd);
        else if (vr->lv == GX_LEVEL_AVX2)
            fma_row_avx2(a, w, v, hd);
        else
#endif
            add_row_c(a, w, v, hd);
    });
}

/* left[d] += (double)(w_p * V[p][d]) for p in [from, to) (ggml's double
 * leftovers). */
static void v_accumulate_double(const v_rows_t *vr, int32_t from, int32_t to, double *left)
{
    const int32_t hd = vr->job->head_dim;
    V_FOR_ROWS(vr, from, to, {
#ifdef ATTN_X86
        if (vr->lv == GX_LEVEL_AVX512)
            left_row_avx512(left, w, v, hd);
        else if (vr->lv == GX_LEVEL_AVX2)
            left_row_avx2(left, w, v, hd);
        else
#endif
            left_row_c(left, w, v, hd);
    });
}

static void attn_one(const attn_job_t *job, int32_t t, int32_t h, float *scratch)
{
    const int32_t hd = job->head_dim;
    const int32_t kvh = h / (job->n_head / job->n_head_kv);
    const int32_t n_kv = job->n_kv[t];
    const bool tiny = job->order && job->order[t] == ATTN_ORDER_TINY;
    float *scores = scratch;
    uint16_t *p16 = (uint16_t *)(scores + job->n_ctx);
    uint16_t *q16 = (uint16_t *)(scores + job->n_ctx + (job->n_ctx + 1) / 2);
    float *acc = scores + job->n_ctx + (job->n_ctx + 1) / 2 + (hd + 1) / 2; /* [64][hd] */
    double *left = (double *)(void *)(acc + 64 * (int64_t)hd + 1);
    left = (double *)(void *)(((uintptr_t)left + 7) & ~(uintptr_t)7);

    const float *q = job->q + ((int64_t)t * job->n_head + h) * hd;
    fp16_row_from_fp32(q, q16, hd);
    /* rows are contiguous within a block: one strided dot run per block
     * (every score is computed on its own, so the split changes no bit) */
    const int32_t bt = kv_block_tokens(job->kv);
    const int32_t *blocks = job->blocks[t];
    for (int32_t p0 = 0; p0 < n_kv; p0 += bt) {
        const int32_t cnt = n_kv - p0 < bt ? n_kv - p0 : bt;
        const uint16_t *kb = kv_block_k(job->kv, blocks[p0 / bt], job->layer) + (int64_t)kvh * hd;
        gx_dot_f16_rows(kb, job->kv_dim, cnt, q16, hd, job->scale, scores + p0);
    }
    gx_softmax_row(scores, n_kv);

    float *out = job->out + ((int64_t)t * job->n_head + h) * hd;
#ifdef ATTN_X86
    const int lv = gx_level();
#else
    const int lv = 0;
#endif
    fp16_row_from_fp32(scores, p16, n_kv);
    const v_rows_t vr = {job, blocks, kvh, p16, lv};
    if (tiny) {
        /* tinyBLAS: lane p % 16 accumulates position p, one FMA each */
        memset(acc, 0, (size_t)16 * (size_t)hd * sizeof(float));
        v_accumulate(&vr, 0, n_kv, 16, acc);
        hsum_lanes(acc, hd, out);
        return;
    }

    /* ggml_vec_dot_f16 over n_kv rounded up to 32: positions below a
     * multiple of 64 go to accumulator (p / 16) % 4, lane p % 16 (the
     * products of two F16 values are exact, so FMA or not is the same),
     * the rest is summed in double */
    int64_t n_pad = ((int64_t)n_kv + 31) & ~(int64_t)31;
    if (n_pad < 32)
        n_pad = 32;
    const int32_t np = (int32_t)(n_pad & ~(int64_t)63) < n_kv ? (int32_t)(n_pad & ~(int64_t)63) : n_kv;
    if (np > 0) {
        memset(acc, 0, (size_t)64 * (size_t)hd * sizeof(float));
        v_accumulate(&vr, 0, np, 64, acc);
        /* GGML_F32x16_REDUCE: x0 + x2, x1 + x3, then x0 + x1 */
        const int64_t n16 = 16 * (int64_t)hd;
        for (int64_t i = 0; i < n16; i++) {
            acc[i] = acc[i] + acc[i + 2 * n16];
            acc[i + n16] = acc[i + n16] + acc[i + 3 * n16];
        }
        for (int64_t i = 0; i < n16; i++)
            acc[i] = acc[i] + acc[i + n16];
        hsum_lanes(acc, hd, out);
        for (int d = 0; d < hd; d++)
            left[d] = (double)out[d];
    } else {
        for (int d = 0; d < hd; d++)
            left[d] = 0.0;
    }
    v_accumulate_double(&vr, np, n_kv, left);
    for (int d = 0; d < hd; d++)
        out[d] = (float)left[d];
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
