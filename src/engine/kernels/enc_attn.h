/* enc_attn.h - multi-head attention of an encoder: every row attends to
 * every row of its segment (no mask, no cache), all heads at once.
 *
 * Segments are runs of consecutive rows: one segment of all rows for full
 * attention, or one per window (Qwen2.5-VL's windowed layers, rows put in
 * window order by the caller). Computed flash-style over (head, block of
 * queries) across the pool: scores of a block of keys with the register
 * tiles of gemm_impl.h, an online softmax (running max and sum, vector
 * exp), the weighted values with the same tiles; keys and values are first
 * repacked per head into the tiles' panels. Sums in other orders than
 * ggml's soft_max + mul_mat (and a vector exp within ~1 ulp of expf).
 *
 * No function here allocates; scratch comes from the caller.
 */
#ifndef LF_ENC_ATTN_H
#define LF_ENC_ATTN_H

#include <stddef.h>
#include <stdint.h>

#include "engine/kernels/tpool.h"

/* Bytes of scratch for n rows in n_seg segments, n_head heads of head_dim,
 * a pool of n_threads threads. */
size_t enc_attn_scratch_size(int64_t n, int n_seg, int n_head, int head_dim, int n_threads);

/* For each head h and row i of segment s (rows seg[s] .. seg[s + 1] - 1;
 * seg[0] = 0, seg[n_seg] = n):
 *   out[i * ldo + h * d + c] = sum_j softmax_j(scale * q_i . k_j) v_j[c]
 * over the rows j of i's segment, where q_i = q + i * ld + h * d (k, v
 * alike) and d = head_dim. out must not overlap q, k or v. */
void enc_attn(tpool_t *pool, const float *q, const float *k, const float *v, int64_t ld, int64_t n,
              const int32_t *seg, int n_seg, int n_head, int head_dim, float scale, float *out, int64_t ldo,
              void *scratch);

#endif
