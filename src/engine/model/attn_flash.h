/* attn_flash.h - tiled online-softmax ("flash") attention over the paged
 * KV cache, for prompts and decode steps of any length.
 *
 * The same attention as attention.h (scores = q.K * scale over the token's
 * positions kv_start .. n_kv-1, softmax with optional sinks, times V; GQA:
 * head h reads KV head h / (n_head / n_head_kv)), computed without ever
 * holding a whole row of scores: positions are taken FA_TILE at a time (a
 * tile), and each row (token, head) keeps a running maximum m, sum l and
 * output o, rescaled by exp(m_old - m_new) when the maximum grows. The
 * query rows of a tile of consecutive tokens of one sequence, times the
 * heads sharing a KV head, are processed together, so every K and V value
 * loaded serves all of them and the arithmetic is two small matrix
 * products per tile (attn_flash_kern.h). Work is split over threads by
 * (query tile, KV head) and, when that gives too few items (decode),
 * further by segment of positions, merged afterwards, and by query head
 * only when the segments are still too few (a KV head's query heads in
 * one item read each K/V chunk once).
 *
 * Numerics: K and V are read as stored (F16, or Q8_0 / Q4_0 dequantized
 * in registers-sized chunks: the cache is never dequantized as a whole),
 * q is kept in float (scaled by `scale` first), probabilities are not
 * rounded. This is not llama.cpp's order (docs/attention.md says how far
 * it moves the goldens); attention.h keeps the exact order.
 *
 * Invariance: the result of a row is a function of its q, its cache
 * positions [kv_start, n_kv) and nothing else: positions are cut into
 * segments of FA_SEG aligned on absolute positions, each segment into
 * aligned tiles, each segment starts from scratch and the segments are
 * folded in order. Whichever rows share a tile, however the work is
 * split or threaded, a row gets the same bits (batch invariance, prefix
 * caching, speculative decoding's k + 1 rows all rely on it).
 */
#ifndef LF_ATTN_FLASH_H
#define LF_ATTN_FLASH_H

#include <stdint.h>

#include "common/status.h"
#include "engine/kernels/tpool.h"
#include "engine/model/attention.h"

enum { FA_TILE = 128, FA_SEG = 512 };

typedef struct attn_flash attn_flash_t;

/* Scratch for batches of up to max_batch tokens of a model with n_head
 * query heads and head sizes up to head_dim (layers may differ in head
 * size and KV heads: each job brings its own; n_head_kv is not needed),
 * contexts up to n_ctx, and n_threads threads. NULL + err on
 * LF_ERR_NOMEM. */
attn_flash_t *attn_flash_create(int32_t n_threads, int32_t max_batch, int32_t n_head, int32_t n_head_kv,
                                int32_t head_dim, int32_t n_ctx, lf_err_t *err);
void attn_flash_free(attn_flash_t *fa); /* accepts NULL */

/* Runs job (attention.h; its order, kq_tiny, vec_pad and scratch fields
 * are not used) with the pool's threads, for the tokens whose job->path
 * is ATTN_PATH_FLASH (all if path is NULL). The cache may hold K and V in
 * any kv_type_t. */
void attn_flash_run(attn_flash_t *fa, tpool_t *pool, const attn_job_t *job);

/* The items of the last attn_flash_run (for tests: each (token, head,
 * segment) of the flash tokens must be in exactly one): tokens [t0, t0 +
 * nt) of the job, query heads [h0, h0 + nh), one segment of FA_SEG
 * positions (seg) or all of them (seg -1). Copies up to cap items, returns
 * how many there are. */
typedef struct {
    int32_t t0, nt, h0, nh, seg;
} attn_flash_span_t;
int32_t attn_flash_plan_view(const attn_flash_t *fa, attn_flash_span_t *out, int32_t cap);

#endif
