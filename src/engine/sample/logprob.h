/* logprob.h - log-probabilities of the model's RAW distribution.
 *
 * These report what the model said, before any sampling transform (no
 * temperature, penalties, bias or truncation): the OpenAI `logprobs` /
 * `top_logprobs`, the legacy completions `logprobs` and vLLM's
 * `prompt_logprobs` are all built from them.
 *
 * Numerics: float32 throughout, as llama.cpp's server (softmax in float,
 * logprob = log p), but computed in the stable form
 *     logprob[t] = (logit[t] - max) - log(sum_j exp(logit[j] - max))
 * with the sum accumulated in double. That equals log(p) up to float
 * rounding wherever p is a normal float, and stays finite (instead of -inf)
 * for tokens whose p underflows, so it can always be written as JSON.
 *
 * Ranks follow vLLM: a token's rank is 1 + the number of tokens with a
 * strictly greater logprob (tied tokens share a rank); the entries of a
 * top-N list carry ranks 1..N by position. Ties in a top-N list are ordered
 * by ascending token id.
 *
 * Pure functions on caller-owned buffers: no allocation, no state.
 */
#ifndef LF_LOGPROB_H
#define LF_LOGPROB_H

#include <stdint.h>

#include "common/status.h"

#define LOGPROB_TOP_MAX 20 /* OpenAI's top_logprobs limit */

typedef struct {
    int32_t token;
    float logprob;
    int32_t rank; /* 1-based */
} logprob_entry_t;

/* out[t] = log softmax(logits)[t] for t < n (out may equal logits).
 * LF_ERR_INVALID if n <= 0, LF_ERR_INTERNAL if a logit is NaN or +inf or
 * every logit is -inf. -inf logits give -inf logprobs. */
lf_code_t logprob_compute(const float *logits, int32_t n, float *out, lf_err_t *err);

/* The top_n (0..LOGPROB_TOP_MAX, clamped to n) largest entries of
 * logprobs[n], best first, into out[top_n]. Returns how many were written. */
int32_t logprob_top(const float *logprobs, int32_t n, int32_t top_n, logprob_entry_t *out);

/* The logprob and rank of one token (either pointer may be NULL).
 * LF_ERR_INVALID if token is out of range. */
lf_code_t logprob_token(const float *logprobs, int32_t n, int32_t token,
                        float *logprob, int32_t *rank, lf_err_t *err);

#endif
