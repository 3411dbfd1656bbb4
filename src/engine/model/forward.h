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
 */
#ifndef LF_FORWARD_H
#define LF_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/model/model.h"

typedef struct {
    int32_t token;
    int32_t seq;   /* 0 .. n_seq-1 */
    int32_t pos;   /* position in its sequence */
    bool logits;   /* compute logits for this token */
    bool prompt;   /* part of a prompt chunk of >= 2 tokens (numerics only) */
} fwd_tok_t;

/* Numerics: llama.cpp sums in one order for a prompt (a batch of >= 2
 * tokens: llamafile's tinyBLAS) and in another for a decode step (one
 * token: ggml_vec_dot). The engine reproduces both but must not let the
 * batch decide (batch invariance), so the token says which it is: tokens
 * with `prompt` set, or without `logits`, take the prompt order (the rows
 * that produce logits switch to the decode order after the last layer's
 * attention, as llama.cpp's output-row selection does); the others take
 * the decode order. Setting `prompt` on every token of a prompt evaluated
 * in chunks of >= 2 tokens (including the last, which wants logits), and
 * not on a one-token prompt, reproduces llama.cpp bit for bit; leaving it
 * false is valid and differs only by rounding on the prompt's last token. */

#define FWD_KV_BLOCK_TOKENS 16

typedef struct {
    int32_t n_seq;     /* sequences held at once (server: --parallel) */
    int32_t n_ctx;     /* max tokens per sequence (<= 0: the model's) */
    int32_t max_batch; /* max tokens per fwd_decode call (<= 0: 512) */
    int32_t n_threads; /* <= 0: number of cores */
    int32_t kv_blocks; /* KV budget in blocks (<= 0: room for every sequence
                          at full context, n_seq * n_ctx positions) */
    int32_t kv_block_tokens; /* positions per block, a multiple of 16 (<= 0: 16) */
} fwd_opts_t;

typedef struct fwd fwd_t;

fwd_t *fwd_create(const model_t *m, const fwd_opts_t *opts, lf_err_t *err);
void fwd_free(fwd_t *f); /* accepts NULL */

/* Runs the batch and appends its K/V to the cache. Returns LF_ERR_INVALID
 * for a bad token id, sequence, position or batch size; LF_ERR_CONTEXT when a
 * sequence would exceed n_ctx; LF_ERR_NOMEM when the KV budget cannot hold
 * the batch (the caller frees a sequence, e.g. preempts one, and retries).
 * On error no position is added to any sequence. */
lf_code_t fwd_decode(fwd_t *f, const fwd_tok_t *toks, int32_t n, lf_err_t *err);

/* Appends tokens[0..n) to sequence seq (positions continuing its cache), in
 * batches of at most max_batch; keeps the logits of the last token only if
 * want_logits (then fwd_logits(f, 0)). Marks the tokens `prompt` when n >= 2. Same errors as fwd_decode; on error
 * the sequence keeps the batches already done. */
lf_code_t fwd_prefill(fwd_t *f, int32_t seq, const int32_t *tokens, int32_t n, bool want_logits,
                      lf_err_t *err);

int32_t fwd_max_batch(const fwd_t *f);

/* Logits (n_vocab floats) of the j-th token of the last batch that asked for
 * logits, counting only those tokens, in batch order. Valid until the next
 * fwd_decode. NULL if j is out of range. */
const float *fwd_logits(const fwd_t *f, int32_t j);

/* Forgets sequence seq and gives its KV blocks back (registered prefix
 * blocks stay cached for reuse); it may be refilled from 0. */
void fwd_seq_rm(fwd_t *f, int32_t seq);

/* Prefix caching (kv.h). For an empty sequence: reuses the cached K/V of
 * the longest registered prefix of tokens[0..n), in whole blocks, leaving
 * at least one token to compute; returns the positions reused (the
 * sequence then continues at that position). */
int32_t fwd_seq_attach_prefix(fwd_t *f, int32_t seq, const int32_t *tokens, int32_t n);
/* Registers the full blocks of seq's first n positions (tokens[0..n) being
 * the tokens there) for reuse by later sequences. Register prompt tokens
 * only: their K/V are computed in the prompt order, so a reused prefix is
 * bitwise what recomputing it would give. */
void fwd_seq_commit(fwd_t *f, int32_t seq, const int32_t *tokens, int32_t n);
/* KV budget and use, in blocks of block_tokens positions (any may be NULL). */
void fwd_kv_usage(const fwd_t *f, int32_t *blocks_total, int32_t *blocks_used, int32_t *block_tokens);
/* Number of cached positions of seq. */
int32_t fwd_seq_len(const fwd_t *f, int32_t seq);
int32_t fwd_n_ctx(const fwd_t *f);
/* Bytes of KV cache memory allocated. */
uint64_t fwd_kv_bytes(const fwd_t *f);

#endif
