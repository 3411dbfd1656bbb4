/* api_logprobs.h - JSON for log probabilities (chat, legacy completions,
 * vLLM prompt_logprobs) from the scheduler's sched_lp_t records.
 *
 * Every value is the model's RAW distribution (log-softmax of the logits,
 * engine/sample/logprob.h), not the sampling distribution. Token strings are the
 * token's bytes (control tokens rendered); a token whose bytes are not
 * valid UTF-8 on their own (a byte-fallback piece of a multi-byte
 * character) is written "bytes:\xNN..." as vLLM does, and `bytes` carries
 * the exact bytes.
 *
 * Ownership: every function returns a new json_object the caller owns (or
 * adds to a parent, which then owns it).
 */
#ifndef LF_API_LOGPROBS_H
#define LF_API_LOGPROBS_H

#include <stdint.h>

#include "engine/sched/sched.h"
#include "engine/vocab/vocab.h"

struct json_object;

/* Chat: {"token","logprob","bytes","top_logprobs":[{"token","logprob","bytes"}]} */
struct json_object *lp_chat_entry(const vocab_t *v, const sched_lp_t *lp);

/* Legacy completions logprobs, built token by token. */
typedef struct {
    struct json_object *tokens, *token_logprobs, *top_logprobs, *text_offset;
} lp_legacy_t;

void lp_legacy_init(lp_legacy_t *l);
/* One token at text offset off: lp NULL (or !lp->has) gives null logprob
 * and null top_logprobs (the first prompt token with echo). */
void lp_legacy_add(lp_legacy_t *l, const vocab_t *v, int32_t token, const sched_lp_t *lp, int32_t off);
/* {"tokens","token_logprobs","top_logprobs","text_offset"}; l is emptied. */
struct json_object *lp_legacy_take(lp_legacy_t *l);
void lp_legacy_free(lp_legacy_t *l);

/* vLLM prompt_logprobs: [null, {"ID": {"logprob","rank","decoded_token"}}, ...]
 * (the prompt token first, then the top-N not equal to it). */
struct json_object *lp_prompt_json(const vocab_t *v, const sched_prompt_lp_t *p);

/* The token's text as written in logprobs (see above) into buf; returns buf. */
const char *lp_token_str(const vocab_t *v, int32_t token, char *buf, size_t cap);

#endif
