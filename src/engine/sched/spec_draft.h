/* spec_draft.h - the draft model of speculative decoding (spec.h): a
 * second, smaller model with the target's vocabulary, run by the
 * scheduler's thread on its own KV cache, one sequence per scheduler slot.
 *
 * For the sequences that ask in a step, spec_draft_run brings each one's
 * cache up to its tokens (prompt and accepted output: the positions of
 * rejected drafts are forgotten, a slot taken by a new job starts over),
 * then proposes k tokens greedily, every asking sequence batched together
 * in each of the k draft steps. What the draft model computes never
 * reaches the output: verification in the target decides every token.
 *
 * Not thread-safe: the scheduler thread only.
 */
#ifndef LF_SPEC_DRAFT_H
#define LF_SPEC_DRAFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/model/model.h"

typedef struct spec_draft spec_draft_t;

/* Whether draft can draft for target: the same tokenizer model, the same
 * token texts (llama.cpp allows up to 128 extra tokens in either; drafts
 * then stay below the smaller size), the same BOS / EOS. false with why. */
bool spec_draft_compatible(const model_t *draft, const model_t *target, char *why, size_t n);

/* A draft context for n_seq sequences of up to n_ctx positions (the
 * target's), batches of up to max_batch tokens, n_threads threads. NULL +
 * err (incompatible vocabularies: LF_ERR_INVALID naming the difference). */
spec_draft_t *spec_draft_create(const model_t *draft, const model_t *target, int32_t n_seq, int32_t n_ctx,
                                int32_t max_batch, int32_t n_threads, lf_err_t *err);
void spec_draft_free(spec_draft_t *d); /* accepts NULL */

/* One sequence's request: its tokens hist[0..n_hist) (the last is the
 * target's next decode input), k drafts wanted into out. `owner` tells
 * jobs apart: a slot whose owner changed starts over. */
typedef struct {
    int32_t slot;
    uint64_t owner;
    const int32_t *hist;
    int32_t n_hist;
    int32_t k;
    int32_t *out;
} spec_draft_req_t;

/* Drafts for every request (out[0..k) each). On error, no draft is
 * guaranteed and the slots concerned start over next time. */
lf_code_t spec_draft_run(spec_draft_t *d, spec_draft_req_t *reqs, int32_t n, lf_err_t *err);

/* Seconds one draft step took, averaged over the recent ones (0 until
 * measured): what a draft token costs besides its verification row. */
double spec_draft_step_seconds(const spec_draft_t *d);

#endif
