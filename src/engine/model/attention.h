/* attention.h - causal self-attention over the paged F16 KV cache.
 *
 * For each (token, head) of a batch: scores = (K . q16) * scale over the
 * token's sequence positions 0..n_kv-1, softmax, out = sum_p p * V[p], all
 * in the operation order of ggml's CPU backend (attention.c, ggml_exact.h).
 * q is rounded to F16 first, as ggml does when K is F16, and so are the
 * probabilities before they meet V. ATTN_ORDER_VEC sums p * V as
 * ggml_vec_dot_f16 does (ggml's order for a single token), ATTN_ORDER_TINY
 * as llamafile's tinyBLAS (one 16-lane accumulator; ggml's order for
 * batches of >= 2 tokens); with kq_tiny, TINY tokens also take tinyBLAS's
 * order for K.q (the 2026 reference; the older one used ggml_vec_dot_f16). Grouped-query attention: head h reads KV head
 * h / (n_head / n_head_kv). Work is split over (token, group of heads)
 * items, and each head's arithmetic depends only on its token, its head
 * and its order, never on the rest of the batch or on how heads are
 * grouped.
 *
 * Sliding window: a token with kv_start s attends positions s .. n_kv-1
 * only (masked scores, -inf, as llama.cpp's mask); chunks wholly before s
 * are never read. Sinks (gpt-oss) add exp(sink - max) to the softmax sum
 * as ggml_soft_max_add_sinks does.
 *
 * The cache's block_tokens must be a multiple of ATTN_CHUNK (positions are
 * processed 16 at a time, see attn_lanes.h).
 *
 * Rows mode (families without a KV cache, llama.cpp's no-cache attention):
 * q, K and V are F32 rows of the batch; scores are ggml_vec_dot_f32 (K.q
 * is a permuted view, never tinyBLAS), times scale, plus the ALiBi bias
 * where given (fused multiply-add, as gcc contracts ggml's loop); the
 * softmax runs over the token's whole sequence (masked positions -inf);
 * P.V is tinyBLAS for prompt-order tokens of a sequence whose length is a
 * multiple of 16, ggml_vec_dot_f32 otherwise. Bidirectional attention and
 * symmetric windows are only a matter of kv_start / n_kv.
 */
#ifndef LF_ATTENTION_H
#define LF_ATTENTION_H

#include <stdint.h>

#include "engine/model/kv.h"
#include "engine/kernels/tpool.h"

enum { ATTN_ORDER_VEC = 0, ATTN_ORDER_TINY = 1 };
enum { ATTN_CHUNK = 16 };

typedef struct {
    int32_t n_tok, n_head, n_head_kv, head_dim;
    const float *q;              /* [n_tok][n_head * head_dim], rope applied */
    float *out;                  /* [n_tok][n_head * head_dim] */
    const kv_cache_t *kv;        /* the paged cache and the layer to read */
    int32_t layer;
    const int32_t *const *blocks; /* [n_tok] block table of the token's sequence */
    const int32_t *n_kv;         /* [n_tok] positions to attend (pos + 1) */
    const int32_t *kv_start;     /* NULL, or [n_tok] first position attended
                                    (sliding window: earlier ones are masked;
                                    block table entries before it may be -1) */
    const float *sinks;          /* NULL, or [n_head] sink logits: one extra
                                    softmax term per head, with no value */
    bool kq_tiny;                /* ATTN_ORDER_TINY tokens also score K.q in
                                    tinyBLAS's order (2026 reference build) */
    int32_t vec_pad;             /* cells the reference pads the attended cache
                                    to in the decode order (32 or 256; <= 0: 32) */
    float scale;                 /* 1 / sqrt(head_dim) */
    const uint8_t *order;        /* [n_tok] ATTN_ORDER_*, NULL: all VEC */
    int32_t n_ctx;               /* largest n_kv; sizes the scratch */
    float *scratch;              /* per thread: scratch_stride floats */
    int64_t scratch_stride;      /* >= attn_scratch_floats(n_ctx, head_dim, n_rep) */
    /* ---- rows mode (no KV cache; k_rows non-NULL) ----
     * K and V are the batch's own F32 rows; a sequence occupies
     * consecutive rows (positions 0, 1, ...) and each of its rows says its
     * length (seq_n); token t attends positions kv_start[t] .. n_kv[t] - 1
     * of its sequence. kv, layer,
     * blocks, sinks, kq_tiny, vec_pad and n_ctx are not used. */
    const float *k_rows;         /* [n_tok][n_head_kv * head_dim] */
    const float *v_rows;         /* [n_tok][n_head_kv * head_dim] */
    const int32_t *seq_n, *pos;  /* [n_tok] */
    const float *alibi;          /* NULL, or [n_head] ALiBi slopes (bias -slope |i - j|) */
} attn_job_t;

/* Floats of scratch needed per thread for contexts up to n_ctx, n_rep =
 * n_head / n_head_kv query heads per KV head. */
int64_t attn_scratch_floats(int32_t n_ctx, int32_t head_dim, int32_t n_rep);

void attn_run(tpool_t *pool, const attn_job_t *job);

/* Floats of scratch per thread for the rows mode, batches of up to
 * max_batch tokens. */
int64_t attn_rows_scratch_floats(int32_t max_batch, int32_t head_dim);

/* ggml_soft_max_ext's ALiBi slopes for n_head heads and max_bias (8 for
 * jina-bert-v2) into slopes[n_head]. */
void attn_alibi_slopes(int32_t n_head, float max_bias, float *slopes);

#endif
