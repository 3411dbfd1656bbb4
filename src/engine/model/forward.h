/* forward.h - the batch-first transformer forward pass.
 *
 * A forward context owns the KV cache and the scratch buffers for up to
 * `max_batch` tokens; it is used by one thread at a time (the scheduler).
 * The unit of work is a batch: a list of tokens, each with a sequence id, a
 * position and whether its logits are wanted. A prompt is one batch; several
 * sequences can share a batch (one decode token each), and the weights are
 * read once for the whole batch.
 *
 * Positions of a sequence must be appended in order (pos == current length
 * of the sequence); fwd_seq_rm() forgets a sequence so its id can be reused.
 *
 * Architectures (arch.h) are flags of this one pass: fused or separate
 * q/k/v, biases, per-head q/k norms, rope per layer kind (none, NEOX or
 * adjacent pairs, partial, YaRN, LongRoPE factors, IMROPE sections),
 * sliding windows, attention sinks, gated attention, KV sharing, post-norms,
 * the FFN kind (gated, fused, mixture of experts, shared experts, dense MLP
 * beside experts: ffn.h), per-layer embeddings, embedding scale and logit
 * soft-capping. Hybrid models' recurrent layers (Gated DeltaNet, short
 * convolutions) keep a per-sequence state beside the KV cache (rstate.h):
 * fwd_seq_rm resets it, and the prefix cache restores it from snapshots.
 */
#ifndef LF_FORWARD_H
#define LF_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/kernels/tpool.h"
#include "engine/model/kv.h"
#include "engine/model/model.h"

typedef struct {
    int32_t token;
    int32_t seq;   /* 0 .. n_seq-1 */
    int32_t pos;   /* position in its sequence */
    uint8_t logits; /* outputs of this token, FWD_OUT_* bits: FWD_OUT_LOGITS
                       (= true) computes its logits (fwd_logits),
                       FWD_OUT_HIDDEN keeps its hidden state (fwd_hidden) */
    bool prompt;   /* prompt token in llama.cpp's prompt order (numerics only,
                      see below and fwd_prompt_order) */
} fwd_tok_t;

/* Multimodal input of one batch row (fwd_decode_mm); all zero: a text
 * token at rope position pos, causal. */
typedef struct {
    const float *embd; /* NULL, or the row (model n_embd_inp floats) that replaces
                          the token's embedding: an image embedding (not scaled by
                          embd_scale; with deepstack its extra parts are added
                          to the residual after the first layers). The token id
                          is then ignored. */
    int32_t dpos;      /* rope position = pos + dpos (multi-section rope: the
                          positions an image advances are fewer than its rows) */
    int16_t my, mx;    /* multi-section rope: the h and w components are
                          pos + dpos + my and pos + dpos + mx (an image row's
                          grid row and column; 0 for text) */
    int32_t attn_end;  /* > pos + 1: the row also attends positions pos + 1 ..
                          attn_end - 1 of its sequence, which must be in the
                          same batch (bidirectional attention inside an image,
                          or an encoder); 0: causal */
} fwd_mm_t;

enum { FWD_OUT_LOGITS = 1, FWD_OUT_HIDDEN = 2 };

/* Families without a KV cache (arch no_cache: the bert family,
 * gemma-embedding) attend over the batch's own rows in F32, as llama.cpp
 * does for them: a batch then holds whole sequences, each one's tokens in
 * consecutive rows with positions 0, 1, ... (`seq` only tells sequences
 * apart within the batch; n_seq bounds the sequences of one batch), and
 * nothing is kept after the call. Attention is bidirectional where the
 * model is (hparams causal false; sliding windows then symmetric), with
 * ALiBi where the family has it. */

/* Numerics: llama.cpp sums in one order for a prompt (a batch of >= 2
 * tokens: llamafile's tinyBLAS) and in another for a decode step (one
 * token: ggml_vec_dot). The engine reproduces both but must not let the
 * batch decide (batch invariance), so the token says which it is: tokens
 * with `prompt` set take the prompt order (those that produce logits
 * switch to the decode order after the last layer's attention, as
 * llama.cpp's output-row selection does), the others the decode order.
 * Setting `prompt` as fwd_prompt_order() says on every prompt token
 * (including the last, which wants logits) reproduces llama-server bit for
 * bit; any other choice is valid and differs only by rounding. */

#define FWD_KV_BLOCK_TOKENS 16

/* How attention is computed (--flash-attn auto|on|off).
 * FLASH: tiled online softmax (attn_flash.h) for every token: fast at any
 * context length, any KV cache type; its float order is not llama.cpp's.
 * EXACT: llama.cpp's order without flash attention (attention.h: the
 * goldens' order, bit for bit); F16 cache only; its cost per position
 * grows with the context (no reuse of K and V across a prompt's tokens).
 * AUTO (the default): EXACT for a token that attends at most
 * FWD_EXACT_MAX_KV positions with an F16 cache, FLASH otherwise: short
 * contexts reproduce llama.cpp bit for bit, long ones stay fast. The
 * choice depends only on the token's own position, so batch invariance,
 * prefix caching and speculative decoding hold in every mode. */
typedef enum { FWD_ATTN_AUTO = 0, FWD_ATTN_FLASH, FWD_ATTN_EXACT } fwd_attn_t;
#define FWD_EXACT_MAX_KV 1024

typedef struct {
    int32_t n_seq;     /* sequences held at once (server: --parallel) */
    int32_t n_ctx;     /* max tokens per sequence (<= 0: the model's) */
    int32_t max_batch; /* max tokens per fwd_decode call (<= 0: 512) */
    int32_t n_threads; /* <= 0: number of cores */
    int32_t kv_blocks; /* KV budget in blocks (<= 0: room for every sequence
                          at full context, n_seq * n_ctx positions) */
    int32_t kv_block_tokens; /* positions per block, a multiple of 16 (<= 0: 16) */
    int64_t kv_bytes;  /* > 0: KV budget in bytes instead of kv_blocks (the
                          sliding-window pool first, the rest in blocks of
                          the other layers, at least one full context) */
    fwd_attn_t attn;   /* 0: auto */
    kv_type_t type_k, type_v; /* KV cache storage (0: F16); quantized types
                          need flash attention (not EXACT) and
                          head_dim % 32 == 0 */
    /* hybrid models (recurrent layers): snapshots of the state for prefix
     * caching (rstate.h) */
    int32_t state_snapshots;     /* slots (< 0: none; 0: about 256 MiB worth,
                                    n_seq + 2 to 4 n_seq + 8) */
    int32_t state_snap_interval; /* besides a prompt's last reusable block
                                    boundary, snapshot every this many
                                    positions of a prompt (<= 0: FWD_SNAP_INTERVAL) */
} fwd_opts_t;

#define FWD_SNAP_INTERVAL 1024

/* Whether opts' attention and cache types suit model m: LF_OK, or
 * LF_ERR_INVALID with a message naming the option (fwd_create checks it). */
lf_code_t fwd_check_attn(const model_t *m, const fwd_opts_t *opts, lf_err_t *err);

typedef struct fwd fwd_t;

fwd_t *fwd_create(const model_t *m, const fwd_opts_t *opts, lf_err_t *err);
void fwd_free(fwd_t *f); /* accepts NULL */
/* The compute pool (for its hand-off statistics, tpool_stats). */
tpool_t *fwd_pool(const fwd_t *f);

/* Runs the batch and appends its K/V to the cache. Returns LF_ERR_INVALID
 * for a bad token id, sequence, position or batch size; LF_ERR_CONTEXT when a
 * sequence would exceed n_ctx; LF_ERR_NOMEM when the KV budget cannot hold
 * the batch (the caller frees a sequence, e.g. preempts one, and retries).
 * On error no position is added to any sequence. */
lf_code_t fwd_decode(fwd_t *f, const fwd_tok_t *toks, int32_t n, lf_err_t *err);
/* fwd_decode with multimodal rows: mm[i] describes toks[i] (mm NULL: all
 * text). LF_ERR_INVALID also for a bidirectional span that ends outside
 * the batch or grid offsets on a model without multi-section rope. */
lf_code_t fwd_decode_mm(fwd_t *f, const fwd_tok_t *toks, const fwd_mm_t *mm, int32_t n, lf_err_t *err);

/* Appends tokens[0..n) to sequence seq (positions continuing its cache), in
 * batches of at most max_batch; keeps the logits of the last token only if
 * want_logits (then fwd_logits(f, 0)). The tokens are the end of a prompt
 * of (cached positions + n) tokens and are flagged `prompt` as
 * fwd_prompt_order says. Same errors as fwd_decode; on error the sequence
 * keeps the batches already done. */
lf_code_t fwd_prefill(fwd_t *f, int32_t seq, const int32_t *tokens, int32_t n, bool want_logits,
                      lf_err_t *err);

int32_t fwd_max_batch(const fwd_t *f);

/* Whether token pos of a prompt of n_prompt tokens takes llama.cpp's prompt
 * order (the `prompt` flag): whether llama-server evaluates it in a
 * micro-batch of >= 2 tokens. llama-server decodes a prompt in batches of
 * 2048 tokens, split into micro-batches of 512; for models with
 * sliding-window layers (2026 builds, context checkpoints) a batch also
 * ends 4 + 512 and 4 tokens before the end of the prompt. So a 5-token
 * prompt of such a model starts with a one-token batch, which llama.cpp
 * computes in the decode order. */
bool fwd_prompt_order(const fwd_t *f, int32_t n_prompt, int32_t pos);

/* The same for a prompt of several chunks (text and image embeddings):
 * llama-server decodes each chunk [chunk_start, chunk_end) on its own; a
 * text chunk is cut as above (batches, sliding-window breaks), an image
 * chunk only into batches and micro-batches. */
bool fwd_prompt_order_chunk(const fwd_t *f, int32_t n_prompt, int32_t chunk_start, int32_t chunk_end, bool text,
                            int32_t pos);

/* Logits (n_vocab floats) of the j-th token of the last batch that asked for
 * logits, counting only those tokens, in batch order. Valid until the next
 * fwd_decode. NULL if j is out of range. */
const float *fwd_logits(const fwd_t *f, int32_t j);

/* Hidden state (n_embd floats) of the j-th token of the last batch with
 * FWD_OUT_HIDDEN, counting only those tokens, in batch order: the last
 * layer's output, after the output norm where the family has one
 * (llama.cpp's t_embd). Valid until the next fwd_decode; NULL if j is out
 * of range. */
const float *fwd_hidden(const fwd_t *f, int32_t j);
/* Whether the context has a KV cache (false for arch no_cache families). */
bool fwd_has_cache(const fwd_t *f);

/* Forgets sequence seq and gives its KV blocks back (registered prefix
 * blocks stay cached for reuse); it may be refilled from 0. */
void fwd_seq_rm(fwd_t *f, int32_t seq);

/* Forgets the last positions of seq so it holds len (speculative
 * decoding: the K/V of rejected draft tokens); the next token of seq is
 * then at position len and computes exactly what it would have had the
 * forgotten positions never been computed. LF_ERR_INVALID when len is
 * beyond the sequence or inside its registered prompt blocks;
 * LF_ERR_UNSUPPORTED on a model with recurrent layers (fwd_can_truncate). */
lf_code_t fwd_seq_truncate(fwd_t *f, int32_t seq, int32_t len, lf_err_t *err);
/* Whether fwd_seq_truncate can forget positions of this model (false for
 * layers whose per-sequence state cannot be rolled back). */
bool fwd_can_truncate(const fwd_t *f);

/* Rollback for speculative decoding on every model with a KV cache,
 * recurrent layers included. fwd_seq_checkpoint marks the current end of
 * seq as a point to come back to (with recurrent layers: a copy of its
 * state, rstate.h; otherwise nothing is copied). fwd_seq_rewind(len) then
 * makes seq hold its first len positions, len between the checkpoint and
 * the current end: where every layer keeps K/V per position the later
 * ones are forgotten and len is returned; with recurrent layers the
 * sequence goes back to the checkpoint, whose position is returned, and
 * the caller evaluates positions [returned, len) again (the same tokens:
 * each row computes what it computed before, batch invariance). Either
 * way the next row at position len computes exactly what it would have had
 * the forgotten positions never existed. -1 + err (LF_ERR_INVALID: len out
 * of range or before the checkpoint; LF_ERR_NOMEM from the checkpoint). */
lf_code_t fwd_seq_checkpoint(fwd_t *f, int32_t seq, lf_err_t *err);
int32_t fwd_seq_rewind(fwd_t *f, int32_t seq, int32_t len, lf_err_t *err);
/* Whether fwd_seq_rewind works on this model (it has a KV cache): the
 * scheduler speculates only when it does. */
bool fwd_can_rewind(const fwd_t *f);

/* Prefix caching (kv.h). For an empty sequence: reuses the cached K/V of
 * the longest registered prefix of the prompt tokens[0..n), in whole
 * blocks, leaving at least one token to compute and stopping before the
 * first position fwd_prompt_order puts in the decode order (so the prefix
 * holds what recomputing it would); returns the positions reused (the
 * sequence then continues at that position). With recurrent layers only
 * a prefix whose end state was snapshotted is reused, and its state is
 * restored (rstate.h); the prompt's snapshot points are set for the
 * computation that follows (its last reusable block boundary, and where
 * the cached chain ended if no snapshot was there). */
int32_t fwd_seq_attach_prefix(fwd_t *f, int32_t seq, const int32_t *tokens, int32_t n);
/* Registers the full blocks of seq's first n positions (tokens[0..n) being
 * a prompt of n tokens) for reuse by later sequences, up to the first
 * position fwd_prompt_order puts in the decode order, and the snapshots
 * of recurrent state the computation took at their boundaries. Register prompt
 * tokens only: their K/V are computed in the prompt order, so a reused
 * prefix is bitwise what recomputing it would give. Positions not computed
 * yet are skipped (call it again after later chunks). */
void fwd_seq_commit(fwd_t *f, int32_t seq, const int32_t *tokens, int32_t n);
/* KV budget and use, in blocks of block_tokens positions (any may be NULL).
 * With sliding-window layers these count the blocks of the other layers
 * (positions held); fwd_kv_usage_bytes counts memory of both. */
void fwd_kv_usage(const fwd_t *f, int32_t *blocks_total, int32_t *blocks_used, int32_t *block_tokens);
/* KV memory allocated and held by sequences, in bytes (either may be NULL). */
void fwd_kv_usage_bytes(const fwd_t *f, uint64_t *total, uint64_t *used);
/* Whether a new sequence of n_tokens positions fits the KV memory free now. */
bool fwd_kv_fits(const fwd_t *f, int32_t n_tokens);
/* Bytes of KV memory fwd_create(m, opts) would allocate (sliding-window
 * layers hold their window, not the context); 0 if opts are invalid. */
uint64_t fwd_kv_bytes_planned(const model_t *m, const fwd_opts_t *opts);
/* Recurrent state of hybrid models (rstate.h); all 0 for other models. */
typedef struct {
    uint64_t per_seq_bytes;  /* one sequence's state (every recurrent layer) */
    uint64_t live_bytes;     /* the live states of all sequences */
    uint64_t snap_bytes;     /* snapshot memory allocated so far */
    int32_t snap_slots;      /* snapshot slots */
    int32_t snap_cached;     /* snapshots registered for reuse */
    uint64_t snap_restored;  /* prompts that resumed from a snapshot */
} fwd_state_usage_t;
void fwd_state_usage(const fwd_t *f, fwd_state_usage_t *u);

/* Number of cached positions of seq. */
int32_t fwd_seq_len(const fwd_t *f, int32_t seq);
int32_t fwd_n_ctx(const fwd_t *f);
/* Bytes of KV cache memory allocated. */
uint64_t fwd_kv_bytes(const fwd_t *f);
/* The attention and the KV cache types in use. */
fwd_attn_t fwd_attn(const fwd_t *f);
kv_type_t fwd_kv_type_k(const fwd_t *f);
kv_type_t fwd_kv_type_v(const fwd_t *f);

#endif
