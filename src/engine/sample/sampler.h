/* sampler.h - turns one logit vector into one token, per sequence.
 *
 * A sampler_t belongs to ONE sequence (one choice of one request). It owns
 * its parameters, its RNG (rng.h, seeded from the request's seed or from an
 * entropy value the caller supplies) and the token-count state the penalties
 * need, so a seeded request gives the same tokens whatever else the server is
 * running. No hidden global state; not thread-safe (one thread at a time).
 * All memory is allocated by sampler_create() (O(n_vocab)); sampling and
 * accepting never allocate.
 *
 * The chain, in this fixed order (each step sees the previous step's output):
 *   1. logit_bias   logit[t] += bias[t]; a bias of exactly -100 bans t
 *                   (logit = -inf), +100 is added like any other value (so it
 *                   wins against any realistic logit: it "forces" t).
 *   2. penalties    for every token seen in the prompt OR the output so far:
 *                     repetition_penalty r: logit > 0 ? logit / r : logit * r
 *                   then for every token generated so far (count c > 0):
 *                     logit -= frequency_penalty * c + presence_penalty
 *                   (vLLM's order and meaning; OpenAI's formula for the two
 *                   additive penalties, which count output tokens only).
 *   3. bans         logit = -inf for: the always-banned list, the min_tokens
 *                   list while fewer than min_tokens tokens were accepted, the
 *                   tokens outside the allowed set (sampler_set_allowed) and
 *                   whatever the mask hook bans (sampler_set_mask_fn: for
 *                   grammar masks).
 *   4. greedy       if temperature < SAMPLER_GREEDY_EPS: the argmax of the
 *                   logits after steps 1-3; ties go to the LOWEST token id.
 *                   Greedy draws no random number. Steps 5-9 are skipped.
 *   5. temperature  logit /= temperature
 *   6. top-k        keep the k highest logits (exactly k; ties at the border
 *                   are broken toward the lowest id). Off when top_k <= 0.
 *   7. top-p        softmax over the survivors, sorted by probability
 *                   (desc, then id asc); keep the shortest prefix whose mass
 *                   reaches top_p (a token is kept iff the mass strictly
 *                   above it is < top_p; at least one token). Off at 1.
 *   8. min-p        keep tokens whose probability is >= min_p * the highest
 *                   probability (after temperature). Off at 0.
 *   8b. typical-p   locally typical sampling (Meister et al. 2022, the
 *                   `typical_p` of Hugging Face and TGI): over the survivors'
 *                   renormalised distribution, with entropy H, order tokens
 *                   by |-log p - H| (ascending, then higher p, then lower
 *                   id) and keep the shortest prefix whose mass reaches
 *                   typical_p (a token is kept iff the mass strictly before
 *                   it is < typical_p; at least one). Off at 1.
 *   9. draw         one uniform double u in [0,1) from the sequence's RNG
 *                   (also drawn when one token survives, so the RNG stream
 *                   does not depend on the logits); the token where the
 *                   running mass of the survivors first exceeds u * total.
 *                   The survivors are walked in an order fixed by the logits
 *                   and parameters alone (ascending id, or best-first where
 *                   a sorting step ran), so a seed reproduces exactly.
 *
 * Differences from vLLM / OpenAI, deliberately:
 *   - vLLM adds -100 like any bias; here -100 is an exact ban (OpenAI's docs
 *     say -100 "should result in a ban"), so a banned token can never appear.
 *   - vLLM's top-k keeps every token tied with the k-th logit; here exactly k
 *     tokens survive (lowest ids win ties), as llama.cpp does. Same for the
 *     top-p border. This only matters for exactly equal logits.
 *   - temperature is validated to OpenAI's range 0..2 (vLLM accepts more);
 *     SAMPLER_TEMPERATURE_MAX is the single place to widen it.
 *   - vLLM treats temperature < 1e-5 as greedy; so does SAMPLER_GREEDY_EPS.
 *   - typical-p: Hugging Face's warper also keeps the tokens tied with the
 *     last one kept; here the prefix is exact, as for top-p.
 * If steps 1-3 leave no token, sampling fails with LF_ERR_INVALID (the caller
 * ends the sequence: e.g. a grammar with no continuation).
 *
 * Logits must not contain NaN or +inf (-inf is fine: a banned token); such
 * a vector is rejected with LF_ERR_INTERNAL, never sampled.
 */
#ifndef LF_SAMPLER_H
#define LF_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

#define SAMPLER_GREEDY_EPS 1e-5f
#define SAMPLER_TEMPERATURE_MAX 2.0f
#define SAMPLER_PENALTY_MAX 2.0f      /* frequency / presence: [-2, 2] */
#define SAMPLER_LOGIT_BIAS_MAX 100.0f /* logit_bias values: [-100, 100] */

typedef struct {
    int32_t token;
    float bias;
} sampler_bias_t;

/* Request parameters. The arrays are borrowed only during sampler_create()
 * and sampler_params_validate(): the sampler copies what it needs. */
typedef struct {
    float temperature;        /* [0, 2]; 0 = greedy. default 1 */
    int32_t top_k;            /* -1 or 0 = off, else >= 1. default -1 */
    float top_p;              /* (0, 1]; 1 = off. default 1 */
    float min_p;              /* [0, 1]; 0 = off. default 0 */
    float typical_p;          /* (0, 1]; 1 = off. default 1 */
    float frequency_penalty;  /* [-2, 2]. default 0 */
    float presence_penalty;   /* [-2, 2]. default 0 */
    float repetition_penalty; /* > 0 (finite); 1 = off. default 1 */
    bool has_seed;            /* false: seeded from create()'s entropy */
    uint64_t seed;            /* the request's seed (negative: cast) */
    const sampler_bias_t *logit_bias; /* n_logit_bias entries, ids unique
                                         or not (a later entry replaces) */
    int32_t n_logit_bias;
    int32_t min_tokens;               /* >= 0; ban list below until reached */
    const int32_t *min_tokens_ban;    /* typically EOS and stop_token_ids */
    int32_t n_min_tokens_ban;
    const int32_t *banned;            /* always banned (e.g. bad words) */
    int32_t n_banned;
} sampler_params_t;

typedef struct sampler sampler_t;

/* Grammar-style mask hook: called in step 3 with the logits (after bias and
 * penalties); it may set entries to -INFINITY, nothing else. */
typedef void (*sampler_mask_fn)(void *ctx, float *logits, int32_t n_vocab);

/* Fills p with the defaults listed above (OpenAI's: temperature 1, top_p 1). */
void sampler_params_default(sampler_params_t *p);

/* Checks every range above (and that token ids are in [0, n_vocab)).
 * LF_OK, or LF_ERR_INVALID with a message that starts with the parameter's
 * API name; *param (if not NULL) is set to that static name, e.g. "top_p",
 * for the HTTP error's `param` field. */
lf_code_t sampler_params_validate(const sampler_params_t *p, int32_t n_vocab,
                                  const char **param, lf_err_t *err);

/* Validates p and builds a sampler for a vocabulary of n_vocab tokens.
 * entropy seeds the RNG when !p->has_seed (the caller draws it from wherever
 * it likes; the sampler never reads the clock or /dev/urandom itself).
 * Returns NULL + err (LF_ERR_INVALID, LF_ERR_NOMEM). Free with sampler_free. */
sampler_t *sampler_create(const sampler_params_t *p, int32_t n_vocab,
                          uint64_t entropy, lf_err_t *err);
void sampler_free(sampler_t *s); /* accepts NULL */

/* Forgets the prompt, the generated counts and the hooks; reseeds the RNG
 * as at creation. The sampler is then as new. */
void sampler_reset(sampler_t *s);

/* Records the prompt tokens (they count for repetition_penalty only). May be
 * called several times (chunked prefill): the sets accumulate. LF_ERR_INVALID
 * if a token is out of range (nothing recorded then). */
lf_code_t sampler_add_prompt(sampler_t *s, const int32_t *tokens, int32_t n,
                             lf_err_t *err);

/* Records one generated token (the one sampled, or one the caller forced).
 * sampler_sample() does NOT record by itself. LF_ERR_INVALID if out of range. */
lf_code_t sampler_accept(sampler_t *s, int32_t token, lf_err_t *err);

/* Tokens accepted so far. */
int32_t sampler_n_generated(const sampler_t *s);

/* allowed: a bitset of n_vocab bits (bit t of allowed[t / 32]) owned by the
 * caller, read at every sample until replaced; NULL = everything allowed. */
void sampler_set_allowed(sampler_t *s, const uint32_t *allowed);

/* Installs (or with fn NULL removes) the mask hook of step 3. */
void sampler_set_mask_fn(sampler_t *s, sampler_mask_fn fn, void *ctx);

/* Runs the whole chain on logits[n_vocab] (not modified) and stores the
 * chosen token in *token. LF_ERR_INVALID if every token is banned,
 * LF_ERR_INTERNAL on NaN / +inf logits. */
lf_code_t sampler_sample(sampler_t *s, const float *logits, int32_t *token,
                         lf_err_t *err);

/* Inspection (tests, debugging, "why this token"): the logits after steps
 * 1-3 into out[n_vocab] (-INFINITY = banned). Same errors as sample. */
lf_code_t sampler_transform(sampler_t *s, const float *logits, float *out,
                            lf_err_t *err);

/* Inspection: the final distribution steps 1-8 give, into probs[n_vocab]
 * (0 for excluded tokens, sums to 1; greedy gives a one-hot vector). Does
 * not touch the RNG. Same errors as sample. */
lf_code_t sampler_distribution(sampler_t *s, const float *logits, float *probs,
                               lf_err_t *err);

#endif
