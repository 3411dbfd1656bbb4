/* spec_mtp.h - drafts from the model's own next-token-prediction (MTP,
 * "nextn") block (Qwen3.5 files carry one), the scheduler's draft model
 * when it is started with --spec mtp.
 *
 * The block is one more attention layer (model_nextn_view) with its own KV
 * cache per scheduler slot, fed as llama.cpp's draft-mtp feeds it: every
 * position p the target keeps (prompt chunks, decode inputs, accepted
 * drafts) becomes the block's row p, made of the token at p and the
 * target's hidden state at p - 1 (zeros before the first position), after
 * each step (spec_mtp_feed). Drafting (spec_mtp_draft) adds the row of the
 * target's next decode input with the last hidden state and takes its
 * argmax as the first draft, then chains: each further row is the draft
 * before it with the block's own output state; the drafting rows are
 * forgotten afterwards. What the block computes never reaches the output:
 * verification in the target decides every token.
 *
 * A slot whose first fed position is not 0 (a prompt prefix reused from
 * the cache) starts there, with zeros as the hidden state before it: its
 * rows keep their relative positions (all rotary positions move by the
 * same offset), only the earlier context is missing, as in llama.cpp.
 * Rows that do not continue a slot (an image, a position computed again
 * that the block has already seen) leave it without drafts until reset.
 *
 * Not thread-safe: the scheduler thread only.
 */
#ifndef LF_SPEC_MTP_H
#define LF_SPEC_MTP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/model/model.h"

typedef struct spec_mtp spec_mtp_t;

#define SPEC_MTP_SEQ_MAX 256 /* slots drafting together (more are not drafted) */

/* The MTP block of target for n_seq slots of up to n_ctx positions, rows
 * fed in batches of up to max_batch, n_threads threads. NULL + err
 * (LF_ERR_UNSUPPORTED naming the model when it has no MTP block). */
spec_mtp_t *spec_mtp_create(const model_t *target, int32_t n_seq, int32_t n_ctx, int32_t max_batch,
                            int32_t n_threads, lf_err_t *err);
void spec_mtp_free(spec_mtp_t *m); /* accepts NULL */

/* Forgets slot seq (a new job starts there). */
void spec_mtp_reset(spec_mtp_t *m, int32_t seq);

/* One position the target kept: seq, pos, the token there, and the
 * target's hidden state h at pos (n_embd floats, fwd_hidden; read during
 * the call only). */
typedef struct {
    int32_t seq, pos, token;
    const float *h;
} spec_mtp_row_t;

/* Feeds rows (each slot's in increasing consecutive positions). Errors
 * leave the slots concerned without drafts. */
lf_code_t spec_mtp_feed(spec_mtp_t *m, const spec_mtp_row_t *rows, int32_t n, lf_err_t *err);

/* Whether slot seq can draft (it was fed and nothing broke it). */
bool spec_mtp_ready(const spec_mtp_t *m, int32_t seq);

/* Up to k (<= 16) greedy drafts for slot seq, whose next decode input is
 * `next`, into out; returns how many (0: the slot has none to give). */
int32_t spec_mtp_draft(spec_mtp_t *m, int32_t seq, int32_t next, int32_t k, int32_t *out);

/* spec_mtp_draft for several slots at once, every slot's i-th draft in
 * one batch (the block's weights and the output matrix read once per
 * draft step for all). req.k becomes the number of drafts made. */
typedef struct {
    int32_t seq, next, k;
    int32_t *out;
} spec_mtp_req_t;
void spec_mtp_draft_many(spec_mtp_t *m, spec_mtp_req_t *reqs, int32_t n);

/* Seconds one drafting step took, averaged over the recent ones (0 until
 * measured), and the block's weight bytes per token over the target's
 * (the prior until measured). */
double spec_mtp_step_seconds(const spec_mtp_t *m);
double spec_mtp_cost_ratio(const spec_mtp_t *m);

#endif
