/* kv.h - paged KV cache memory with prefix sharing.
 *
 * The cache is one budget of fixed-size blocks (block_tokens positions of
 * every layer's K and V, F16). Each sequence has a block table: position p
 * of sequence s lives in block table[s][p / block_tokens] at column
 * p % block_tokens. Sequences of any length share the budget; a sequence
 * takes blocks as it grows and gives them back when released.
 *
 * Layout: a block holds, for each layer, K and V TRANSPOSED: element c
 * (0 <= c < kv_dim, i.e. KV head c / head_dim, dimension c % head_dim) of
 * the position in column r is at [c * block_tokens + r]. So one KV head's
 * part of a block is a contiguous [head_dim][block_tokens] matrix whose
 * rows are the positions of one dimension: attention (attention.c) loads
 * 16 consecutive positions of one dimension as one vector, which is what
 * lets it keep positions in SIMD lanes. The layout changes no value:
 * attention performs the same per-position arithmetic as over rows (see
 * attention.c). Positions are written one at a time with kv_store (a
 * scatter) and read back with kv_load (a gather); the memory starts zeroed,
 * so columns not yet written read as zeros.
 *
 * Prefix caching: once a block is full, its contents are a pure function of
 * the tokens that led to it (the chain of blocks before it and its own
 * tokens), so it can be registered (kv_seq_commit) and later attached to a
 * new sequence whose prompt starts with the same tokens (kv_seq_attach_prefix)
 * instead of being recomputed. Matching compares the actual tokens and the
 * parent block, never just a hash, so a hash collision cannot give wrong
 * attention. Shared blocks are full, hence never written again: only a
 * sequence's last, private block is written. A block no sequence uses keeps
 * its contents in an LRU list while it is registered, and is reused (its
 * registration dropped) only when no never-used block is left.
 *
 * Sliding-window layers (kv_opts_t.layer_swa): their K/V live in a second
 * pool of blocks with the same size in positions, indexed by the same block
 * numbers of the sequence (table entry i covers positions [i*bt, (i+1)*bt)
 * in both pools). A query at position p of such a layer only sees positions
 * > p - n_swa, so once a sequence has computed len positions, its window
 * blocks that hold only positions < floor(len / bt) * bt - n_swa + 1 are
 * given back (at its next reservation; the lag of up to one block keeps
 * the window before every block boundary of the sequence available for
 * prefix reuse); their table entries become -1. A long sequence so holds
 * about (n_swa + batch) / bt window blocks instead of len / bt. The main
 * pool holds the other layers (it may have none: it then only keeps block
 * numbers, tables and the prefix registry, and no K/V memory).
 *
 * Prefix caching with a window: a prefix of k blocks can be reused only if
 * the main chain matches AND the window blocks covering positions
 * [k*bt - n_swa + 1, k*bt) are still cached; they are registered together
 * with the main block of the same index (keyed by that block and its
 * generation) when kv_seq_commit runs while the sequence still holds them.
 * Attaching picks the longest k for which both hold, so a reused prefix is
 * exactly what recomputing it would have stored (correctness first: a
 * prefix whose window was given back is recomputed, never approximated).
 *
 * Layers may differ in K/V width (kv_opts_t.layer_kv_dim: gemma4's window
 * and full layers), and layers without a cache of their own (recurrent
 * layers of hybrid models, KV-sharing layers) take no memory: a block
 * holds each cached layer's [kv_dim(l)][block_tokens] K and V one after
 * the other.
 *
 * Not thread-safe: owned by the scheduler thread (reads of blocks by the
 * compute threads happen inside a step, while nothing changes the tables).
 */
#ifndef LF_KV_H
#define LF_KV_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"

typedef struct {
    int32_t n_layer;
    int64_t kv_dim;        /* K (and V) values per token per layer */
    const int32_t *layer_kv_dim; /* NULL, or [n_layer] each layer's K (and V) width,
                              0 for a layer without a cache of its own (recurrent
                              or KV-sharing layers); overrides kv_dim (copied) */
    int32_t block_tokens;  /* positions per block (e.g. 16) */
    int32_t n_blocks;      /* the memory budget, in blocks */
    int32_t n_seq;         /* sequence ids 0 .. n_seq-1 */
    int32_t max_seq_len;   /* longest sequence (context size) */
    /* sliding-window layers (all zero / NULL: none) */
    const bool *layer_swa; /* [n_layer] layers with the window (copied) */
    int32_t n_swa;         /* the window: a query at p sees positions > p - n_swa */
    int32_t n_blocks_swa;  /* window pool budget in blocks (<= 0: enough for
                              n_seq sequences, see kv_swa_blocks_per_seq) */
    int32_t max_batch;     /* most positions a sequence appends at once (sizes
                              the window pool; <= 0: 512) */
} kv_opts_t;

/* Window blocks one sequence can hold at most: its window plus a batch,
 * plus the lag and partial blocks (0 without window layers). */
int32_t kv_swa_blocks_per_seq(const kv_opts_t *opts);

typedef struct kv_cache kv_cache_t;

/* Allocates the whole budget at once. NULL + err (LF_ERR_INVALID for bad
 * sizes, LF_ERR_NOMEM). */
kv_cache_t *kv_create(const kv_opts_t *opts, lf_err_t *err);
void kv_free(kv_cache_t *kv); /* accepts NULL */

int32_t kv_block_tokens(const kv_cache_t *kv);
int32_t kv_n_blocks(const kv_cache_t *kv);
/* Blocks a new reservation can take (never used + cached-but-unused). */
int32_t kv_blocks_available(const kv_cache_t *kv);
/* Blocks held by sequences. */
int32_t kv_blocks_in_use(const kv_cache_t *kv);
/* Bytes of K + V memory (both pools). */
uint64_t kv_bytes(const kv_cache_t *kv);
/* Bytes of K + V memory in blocks held by sequences (both pools). */
uint64_t kv_bytes_in_use(const kv_cache_t *kv);
/* The window pool (all 0 without window layers). */
int32_t kv_n_blocks_swa(const kv_cache_t *kv);
int32_t kv_blocks_in_use_swa(const kv_cache_t *kv);
/* K (and V) width of layer `layer` (0: no cache of its own). */
int64_t kv_layer_dim(const kv_cache_t *kv, int32_t layer);
/* The key (block number and generation) of table entry idx of seq if that
 * block is registered (false otherwise). Snapshots of recurrent state are
 * keyed by it (rstate.h): a registered block stands for its whole token
 * chain. */
bool kv_seq_block_key(const kv_cache_t *kv, int32_t seq, int32_t idx, int32_t *block, uint32_t *gen);
/* Whether a new, empty sequence of n_tokens positions fits what is
 * available now in both pools. */
bool kv_fits_new(const kv_cache_t *kv, int32_t n_tokens);
/* The window of layer `layer` (0: full attention). */
int32_t kv_layer_window(const kv_cache_t *kv, int32_t layer);

/* Positions sequence seq holds (valid rows). */
int32_t kv_seq_len(const kv_cache_t *kv, int32_t seq);

/* Makes room for seq to hold n_tokens positions in total (allocating
 * blocks, evicting unused cached blocks oldest first). LF_ERR_NOMEM if the
 * budget cannot hold it (nothing allocated then: the caller may preempt
 * another sequence and retry), LF_ERR_CONTEXT beyond max_seq_len. */
lf_code_t kv_seq_reserve(kv_cache_t *kv, int32_t seq, int32_t n_tokens, lf_err_t *err);

/* Records that positions [0, len) of seq are computed (len <= reserved). */
void kv_seq_set_len(kv_cache_t *kv, int32_t seq, int32_t len);

/* Forgets positions [len, kv_seq_len) of seq (speculative decoding: the
 * K/V of rejected draft tokens). Only positions after the sequence's
 * registered or attached blocks can go (they are private to it). Blocks
 * stay reserved for the positions that follow; what the forgotten columns
 * hold is never read (attention reads positions < its query's + 1) and is
 * overwritten by the next kv_store. LF_ERR_INVALID when len is beyond the
 * sequence's length or inside a shared block. */
lf_code_t kv_seq_truncate(kv_cache_t *kv, int32_t seq, int32_t len, lf_err_t *err);

/* Gives back all blocks of seq (registered full blocks stay cached). */
void kv_seq_release(kv_cache_t *kv, int32_t seq);

/* For an EMPTY sequence: attaches the longest chain of registered blocks
 * that matches tokens[0..n) block by block, leaving at least one token to
 * compute (so the caller gets logits for the last prompt token). Returns
 * the number of positions reused (a multiple of block_tokens, maybe 0);
 * the sequence's length is set to it. */
int32_t kv_seq_attach_prefix(kv_cache_t *kv, int32_t seq, const int32_t *tokens, int32_t n);
/* The same, keeping only prefixes of k blocks for which ok(ctx, k, block,
 * gen) holds, block/gen being the key of the prefix's last block (k = 0
 * is always acceptable; ok NULL: every prefix). */
typedef bool (*kv_prefix_ok_fn)(void *ctx, int32_t k, int32_t block, uint32_t gen);
int32_t kv_seq_attach_prefix_if(kv_cache_t *kv, int32_t seq, const int32_t *tokens, int32_t n, kv_prefix_ok_fn ok,
                                void *ctx);

/* Registers every full block of seq not yet registered; tokens[0..len) are
 * the tokens at its positions (len = kv_seq_len). A block whose chain
 * another sequence registered meanwhile is replaced in seq's table by that
 * registered block (the same contents; the copy is freed), so the chain
 * continues and its window block can be registered with it. */
void kv_seq_commit(kv_cache_t *kv, int32_t seq, const int32_t *tokens, int32_t len);

/* Stores position pos of seq for layer `layer` (pos < reserved length):
 * k and v are its kv_dim F16 values, scattered into the block's columns. */
void kv_store(kv_cache_t *kv, int32_t layer, int32_t seq, int32_t pos, const uint16_t *k, const uint16_t *v);
/* Gathers what kv_store stored (kv_dim values each; k or v may be NULL). */
void kv_load(const kv_cache_t *kv, int32_t layer, int32_t seq, int32_t pos, uint16_t *k, uint16_t *v);

/* The block table of seq (kv_seq_len rounded up entries) in the main pool. */
const int32_t *kv_seq_blocks(const kv_cache_t *kv, int32_t seq);
/* The table of seq for layer `layer`'s pool, for attention (window pool:
 * entries before the window may be -1). */
const int32_t *kv_seq_table(const kv_cache_t *kv, int32_t seq, int32_t layer);
/* Layer `layer` of block `block` (a block number of that layer's pool, as
 * in kv_seq_table): the [kv_dim][block_tokens] transposed K (or V)
 * described above. */
const uint16_t *kv_block_k(const kv_cache_t *kv, int32_t block, int32_t layer);
const uint16_t *kv_block_v(const kv_cache_t *kv, int32_t block, int32_t layer);

#endif
