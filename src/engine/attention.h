/* attention.h - causal self-attention over the F16 KV cache.
 *
 * For each (token, head) of a batch: scores = (K . q16) * scale over the
 * token's sequence positions 0..n_kv-1, softmax (denominator in double),
 * probabilities rounded to F16, out = sum_p p16 * V[p]. q is rounded to F16
 * first, as ggml does when K is F16. Grouped-query attention: head h reads
 * KV head h / (n_head / n_head_kv). Work is split over (token, head) pairs,
 * and each pair's arithmetic is independent of the batch.
 */
#ifndef LF_ATTENTION_H
#define LF_ATTENTION_H

#include <stdint.h>

#include "engine/tpool.h"

typedef struct {
    int32_t n_tok, n_head, n_head_kv, head_dim;
    int64_t kv_dim;              /* n_head_kv * head_dim: stride of cache rows */
    const float *q;              /* [n_tok][n_head * head_dim], rope applied */
    float *out;                  /* [n_tok][n_head * head_dim] */
    uint16_t *const *k_base;     /* [n_tok] first cache row of the token's sequence */
    uint16_t *const *v_base;     /* [n_tok] */
    const int32_t *n_kv;         /* [n_tok] positions to attend (pos + 1) */
    float scale;                 /* 1 / sqrt(head_dim) */
    float *scratch;              /* per thread: scratch_stride floats */
    int64_t scratch_stride;      /* >= n_ctx + head_dim */
} attn_job_t;

/* Floats of scratch needed per thread for contexts up to n_ctx. */
int64_t attn_scratch_floats(int32_t n_ctx, int32_t head_dim);

void attn_run(tpool_t *pool, const attn_job_t *job);

#endif
