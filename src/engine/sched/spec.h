/* spec.h - draft sources and draft lengths for speculative decoding.
 *
 * A sequence that speculates proposes k tokens to follow its next decode
 * input; the scheduler computes the input and the k drafts as k + 1 decode
 * rows of one step, samples row after row exactly as single-token decoding
 * would (same logits, same sampler, same random draws), keeps the drafts
 * up to the first one the sampled token differs from, and forgets the K/V
 * of the rest (fwd_seq_rewind; a hybrid model's recurrent state goes back
 * to the checkpoint taken before the step, and the input and the accepted
 * drafts are evaluated again in front of the next step's input, so a
 * rejection there costs those rows once more). So the output is the same tokens with or
 * without speculation, greedy or seeded; what a draft source decides is
 * only how many tokens a step yields.
 *
 * Sources, in the order a sequence asks them:
 *   - the prediction (OpenAI Predicted Outputs): the text the client
 *     expects, tokenized; drafted from where the output is aligned with it,
 *     re-aligned after a divergence by finding the output's last tokens in
 *     the prediction (an edit in the middle of a file still accepts the
 *     unchanged rest);
 *   - n-grams: the tokens that followed the latest earlier occurrence of
 *     the output's last 2-5 tokens in the prompt and the output so far;
 *   - a draft model (spec_draft.h), when the scheduler has one: asked by
 *     the scheduler when the sources above propose nothing.
 *
 * Draft length: per sequence and source, the acceptance of each drafted
 * token is estimated (accepted / (accepted + rejections), with a prior);
 * the scheduler gives the marginal cost of a row relative to the step's
 * time (spec_cost_t, measured), and the length chosen maximises expected
 * accepted tokens minus what the extra rows cost in tokens of the step's
 * other work. A source whose drafts keep failing falls to length 0 and is
 * probed with one token every SPEC_PROBE_EVERY steps, twice as rarely
 * after each failed probe (up to SPEC_PROBE_MAX). A draft model is probed
 * only while a draft token costs less than SPEC_DRAFT_PROBE_C of a step's
 * progress: each probe first catches the draft's cache up with every token
 * since its last drafts, a prefill on the draft model.
 *
 * Not thread-safe: one sequence is used by the scheduler thread only.
 */
#ifndef LF_SPEC_H
#define LF_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"

#define SPEC_K_MAX 16        /* most draft tokens per step and sequence */
#define SPEC_PROBE_EVERY 16  /* steps between probes of a switched-off source, */
#define SPEC_PROBE_MAX 256   /* doubled after each probe that failed, up to this */
#define SPEC_DRAFT_PROBE_C 0.5 /* a draft model costing more (c, spec.c) is not probed */

typedef enum {
    SPEC_SRC_NONE = 0,
    SPEC_SRC_PREDICTION, /* the request's `prediction` */
    SPEC_SRC_NGRAM,      /* n-gram lookup in the prompt and output */
    SPEC_SRC_DRAFT,      /* the draft model */
    SPEC_SRC_COUNT
} spec_src_t;

/* "prediction", "ngram", "draft_model" ("none" for SPEC_SRC_NONE). */
const char *spec_src_name(spec_src_t src);

typedef struct {
    const int32_t *prediction; /* the predicted tokens (copied), or NULL */
    int32_t n_prediction;
    bool ngram;                /* draft from n-grams of the prompt and output */
    bool draft_model;          /* may ask the scheduler's draft model */
    int32_t k_max;             /* most drafts per step (<= 0 or > SPEC_K_MAX: SPEC_K_MAX) */
} spec_params_t;

/* The step-cost model the scheduler measures: a step of r rows takes about
 * t0 + t1 * r seconds (a weighted least-squares fit over the recent
 * steps; the sums are private). */
typedef struct {
    double t0, t1;
    double t_draft;      /* seconds of one draft-model step (0: none yet) */
    double draft_ratio;  /* until t_draft is measured: a draft step's cost as a
                            share of t0 (the draft's weight bytes / the target's) */
    double sw, sx, sy, sxx, sxy;
    bool fixed;          /* set by the operator: not measured */
    bool refeed;         /* a rejection costs the accepted rows again (a hybrid
                            model's recurrent state goes back to its checkpoint) */
} spec_cost_t;

/* A prior (a row costs 5% of a step) until steps are observed. */
void spec_cost_init(spec_cost_t *c);
/* A fixed model instead of the measured one: a row costs `ratio` of the
 * step's fixed part (> 0). */
void spec_cost_fix(spec_cost_t *c, double ratio);
/* Records a step of `rows` rows that took secs seconds. */
void spec_cost_observe(spec_cost_t *c, int32_t rows, double secs);

typedef struct spec_seq spec_seq_t;

/* NULL when p asks for nothing (no source), or on allocation failure (then
 * err says so and *err->code is LF_ERR_NOMEM). */
spec_seq_t *spec_seq_create(const spec_params_t *p, lf_err_t *err);
void spec_seq_free(spec_seq_t *sp); /* accepts NULL */

/* The draft length worth asking now for a sequence whose step would have
 * `rows` rows without its drafts, at most k_cap; 0: do not speculate this
 * step. `src` is the source that will draft (spec_seq_propose's). */
int32_t spec_seq_length(spec_seq_t *sp, spec_src_t src, const spec_cost_t *cost, int32_t rows, int32_t k_cap);

/* Proposes up to k tokens to follow hist[0..n_hist): the prompt (n_prompt
 * tokens) then the generated tokens, the last being the next decode input.
 * Returns how many were written to draft (0..k) and in *src the source
 * (SPEC_SRC_NONE with 0). The draft-model source is not run here: when
 * nothing else proposes and the sequence may use it, returns 0 with *src
 * SPEC_SRC_DRAFT. */
int32_t spec_seq_propose(spec_seq_t *sp, const int32_t *hist, int32_t n_hist, int32_t n_prompt, int32_t k,
                         int32_t *draft, spec_src_t *src);

/* Which source would draft next (without proposing; brings the
 * prediction's alignment up to the output). */
spec_src_t spec_seq_next_source(spec_seq_t *sp, const int32_t *hist, int32_t n_hist, int32_t n_prompt);

/* After verification: `drafted` tokens of source src were computed, the
 * first `accepted` of them kept. */
void spec_seq_feedback(spec_seq_t *sp, spec_src_t src, int32_t drafted, int32_t accepted);

/* Totals of this sequence for src (either may be NULL). */
void spec_seq_counts(const spec_seq_t *sp, spec_src_t src, int64_t *drafted, int64_t *accepted);

/* Verification of one sequence's step: sample(ctx, r) samples the token of
 * row r (row 0: after the decode input; row r: after draft[r - 1]), with
 * the sequence's own sampler, and emits it; it returns the token, or -1
 * when the sequence ends there (then nothing follows). Rows are sampled in
 * order while the sampled token equals the draft the next row was computed
 * with, so every emitted token is what one-token-per-step decoding would
 * have sampled at that point, random draws included. Returns the number
 * of drafts accepted (0..n_draft). */
typedef int32_t (*spec_sample_fn)(void *ctx, int32_t row);
int32_t spec_verify(const int32_t *draft, int32_t n_draft, spec_sample_fn sample, void *ctx);

/* A greedy draft token: the first index of the largest of x[0..n). */
int32_t spec_argmax(const float *x, int32_t n);

/* Expected accepted tokens of a draft of length k when each token is
 * accepted with probability a after the previous one was (geometric). */
double spec_expected_accepted(double a, int32_t k);

/* The longest run of the last tokens of out (n_out) found in seq[0..n_seq)
 * ending before position `before`, for lengths min_len..max_len: returns
 * the position just after the match (where its continuation starts), or -1.
 * Prefers the longest match; among those, the first at or after `from`,
 * else the last before it. For tests. */
int32_t spec_match_suffix(const int32_t *seq, int32_t n_seq, int32_t before, const int32_t *out, int32_t n_out,
                          int32_t min_len, int32_t max_len, int32_t from);

#endif
