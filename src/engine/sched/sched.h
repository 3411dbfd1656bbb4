/* sched.h - the scheduler: one thread that owns the forward context and
 * runs every active sequence (continuous batching).
 *
 * Acceptor threads submit jobs (prompt tokens + sampling parameters) into a
 * channel they own; the scheduler admits jobs up to `parallel` slots, and
 * every step builds ONE batch from all running sequences (a prefill chunk
 * for sequences still reading their prompt, one decode token for the
 * others), runs fwd_decode once, samples each sequence and pushes token
 * events into the job's channel. Requests beyond the slots wait in a FIFO
 * queue bounded by `max_queue` (sched_submit fails with LF_ERR_OVERLOAD).
 *
 * Invariants:
 * - Only the scheduler thread touches the model's forward context; it never
 *   touches sockets. Acceptors only touch channels.
 * - A channel is bounded: when it is full the scheduler simply skips that
 *   sequence for the step (back-pressure), it never blocks on a consumer.
 * - Cancelling a channel (sched_chan_cancel / sched_chan_free) is seen by
 *   the scheduler at its next step: the sequences are removed from the KV
 *   cache (fwd_seq_rm) in that step and their slots reused.
 * - Several jobs can share one channel (one per prompt / choice); events
 *   carry the job's `index`.
 * - Decoding controls (sched_params_t): stop_token_ids end a job with STOP
 *   and the id in the DONE event; logprobs ride on TOKEN events; prompt
 *   logprobs come as one SCHED_EV_PROMPT event before the first TOKEN;
 *   jobs of a share group (n > 1) compute their common prompt once.
 *   One job of a channel can be stopped alone (sched_chan_cancel_job).
 *
 * - KV memory: admission is first come, first served (the queue's head is
 *   admitted when the KV budget has room for its prompt; nobody overtakes
 *   it). When a step does not fit the budget (fwd_decode LF_ERR_NOMEM) the
 *   running job that arrived last is preempted: its blocks are freed and it
 *   goes back to the head of the queue; readmitted, it recomputes its prompt
 *   and generated tokens with the same numerics, emits nothing twice and
 *   continues exactly (its sampler state is kept). A running job is never
 *   failed for memory.
 * - Each step puts the decode tokens of running jobs first, then prompt
 *   chunks up to batch_tokens: a long prompt never stalls running streams.
 *
 * - Structured output: a job with a grammar gets a matcher; its next token
 *   mask is computed on the scheduler's mask thread right after the job's
 *   token is committed, in parallel with the next forward pass, and waited
 *   for only when the job samples. Constrained and unconstrained jobs share
 *   every batch.
 *
 * Ownership: sched_submit copies the prompt. A channel is reference-counted
 * between its owner and its jobs: the owner calls sched_chan_free() once,
 * the memory goes when the last job has left the scheduler.
 */
#ifndef LF_SCHED_H
#define LF_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/sample/logprob.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "engine/sample/sampler.h"
#include "engine/sched/spec.h"

typedef struct {
    int32_t n_parallel;   /* slots = sequences decoded together (>= 1) */
    int32_t n_ctx;        /* tokens per sequence (<= 0: the model's) */
    int32_t max_queue;    /* waiting jobs before LF_ERR_OVERLOAD (>= 0) */
    int32_t batch_tokens; /* token budget per step (<= 0: 512) */
    int32_t n_threads;    /* engine threads (<= 0: cores) */
    int32_t chan_cap;     /* events a channel holds (<= 0: 64) */
    int64_t kv_mb;        /* KV cache budget in MiB (<= 0: n_parallel x n_ctx
                             positions); at least one full context */
    int64_t kv_bytes;     /* > 0: the budget in bytes instead of kv_mb */
    int32_t state_snapshots; /* hybrid models: state snapshot slots for the
                                prefix cache (0: the engine's default, < 0:
                                none; forward.h) */
    int64_t image_cache_mb; /* encoded-image cache (vis_cache.h) in MiB (<= 0: none) */
    /* ---- long context (issue 30, forward.h) ---- */
    fwd_attn_t attn;      /* --flash-attn (0: auto) */
    kv_type_t type_k, type_v; /* KV cache storage (0: F16) */
    /* ---- speculative decoding (issue 27, spec.h) ---- */
    bool spec_ngram;      /* every job also drafts from n-grams */
    int32_t spec_k_max;   /* most drafts per step and sequence (<= 0: SPEC_K_MAX) */
    bool spec_off;        /* never speculate (for comparisons) */
    double spec_row_cost; /* > 0: what one more row costs relative to a step's
                             fixed part (draft lengths); else measured */
    double spec_draft_cost; /* > 0: what a draft-model step costs relative to
                               a step's fixed part, fixed (tests); else the
                               weights' ratio, then measured */
    const model_t *draft_model; /* a draft model (spec_draft.h: the same
                                   vocabulary), or NULL; must outlive the
                                   scheduler */
    bool spec_mtp;        /* the draft model is the model's own MTP block
                             (spec_mtp.h); exclusive with draft_model. Not used
                             (stats spec_mtp_used) where a draft would cost at
                             least SPEC_DRAFT_PROBE_C of a step */
} sched_opts_t;

/* Parameters of one job. `sampling` is the whole sampler chain
 * (engine/sample/sampler.h: temperature, top-k/p, min-p, penalties, bias, seed);
 * its arrays are copied by sched_submit. `entropy` seeds the job's RNG when
 * sampling.has_seed is false. */
typedef struct {
    int32_t max_tokens;   /* tokens to generate (>= 1) */
    sampler_params_t sampling;
    uint64_t entropy;
    bool ignore_eos;      /* never stop on end-of-generation tokens */
    /* ---- decoding controls (issue 4) ---- */
    const int32_t *stop_token_ids; /* finish STOP when sampled (copied) */
    int32_t n_stop_token_ids;      /* sampling.min_tokens also bans these and
                                      EOS until reached (set by submit) */
    /* A zeroed struct means: none of the following. */
    bool logprobs;         /* every TOKEN event carries the token's raw
                              logprob and the top_logprobs (0..20) best */
    int32_t top_logprobs;
    bool prompt_logprobs;  /* one SCHED_EV_PROMPT event with every prompt
                              token's logprob + top-N (n_prompt_top, 0..20);
                              the prompt is then computed in full (no
                              prefix cache) */
    int32_t n_prompt_top;
    int32_t share_group;   /* n > 1: jobs with the same group > 0 have the
                              same prompt; the first one submitted leads, the
                              others are admitted once the leader's prompt is
                              computed and attach it from the prefix cache.
                              0: independent */
    /* ---- structured output (issue 11) ---- */
    struct grammar_engine *grammar_engine; /* needed with grammar */
    struct grammar *grammar;  /* constraint on the generated tokens (NULL:
                                 none); submit takes a reference. Each step
                                 only tokens the grammar allows are sampled;
                                 when the output is complete (nothing but
                                 the end can follow) the job ends with STOP
                                 at once. Masks are computed by the
                                 scheduler's mask thread while the forward
                                 pass runs. */
    /* ---- images (issue 29) ---- */
    struct sched_media *media; /* NULL, or the prompt's images (sched_media.h):
                                  the prompt is its layout's tokens (negative
                                  ids at image rows); submit takes a reference.
                                  The scheduler encodes what the image cache
                                  lacks, one encoder stage per step, before
                                  the prefill reaches it. */
    /* ---- speculative decoding (issue 27) ---- */
    spec_params_t spec;       /* draft sources of this job (prediction
                                 tokens copied by submit; ngram also when
                                 the scheduler's spec_ngram is set). The
                                 tokens are the same with or without. */
} sched_params_t;

/* Prompt logprobs of one job: entries[0] is the first prompt token (no
 * logprob: has == false). Owned by whoever reads the SCHED_EV_PROMPT
 * event: free with free(). */
typedef struct {
    bool has;
    int32_t token;
    float logprob;
    int32_t rank;
    int32_t n_top;
    logprob_entry_t top[LOGPROB_TOP_MAX];
} sched_lp_t;

typedef struct {
    int32_t n;
    sched_lp_t e[];
} sched_prompt_lp_t;

typedef enum {
    SCHED_FINISH_NONE = 0,
    SCHED_FINISH_STOP,      /* end-of-generation token */
    SCHED_FINISH_LENGTH,    /* max_tokens or context end */
    SCHED_FINISH_CANCELLED, /* cancelled or server stopping */
    SCHED_FINISH_ERROR      /* engine error: see event code/msg */
} sched_finish_t;

typedef enum {
    SCHED_EV_TOKEN,  /* a sampled token (token valid) */
    SCHED_EV_DONE,   /* the job finished (finish, and code on error) */
    SCHED_EV_PROMPT  /* prompt logprobs (prompt_lp, before the first TOKEN) */
} sched_ev_kind_t;

typedef struct {
    sched_ev_kind_t kind;
    int32_t index;          /* the job's index in its channel */
    int32_t token;          /* SCHED_EV_TOKEN */
    sched_finish_t finish;  /* SCHED_EV_DONE */
    lf_code_t code;         /* SCHED_EV_DONE with SCHED_FINISH_ERROR */
    int32_t n_prompt;       /* prompt tokens (DONE) */
    int32_t n_cached;       /* of which reused from the prefix cache (DONE) */
    int32_t n_gen;          /* tokens generated (DONE) */
    int32_t stop_token;     /* DONE/STOP by a stop_token_ids entry: it; else -1 */
    int32_t n_pred_accepted; /* DONE: prediction tokens drafted and kept */
    int32_t n_pred_rejected; /* DONE: prediction tokens drafted and rejected
                                (computed, then discarded) */
    bool ends;              /* TOKEN: this token (EOS / a stop_token_ids
                               entry) ends the job with STOP */
    sched_lp_t lp;          /* TOKEN with logprobs (lp.has) */
    sched_prompt_lp_t *prompt_lp; /* SCHED_EV_PROMPT: the reader frees it */
} sched_event_t;

typedef struct {
    int32_t running;          /* jobs holding a slot */
    int32_t waiting;          /* jobs in the queue */
    int32_t n_parallel;
    int32_t n_ctx;
    int64_t seq_tokens;       /* positions held by running sequences */
    int64_t kv_used_tokens;   /* KV positions in use (blocks, incl. the
                                 prefix cache) */
    int64_t kv_cap_tokens;    /* KV budget in positions */
    uint64_t kv_bytes;        /* KV memory allocated */
    uint64_t kv_used_bytes;   /* of which held by sequences (sliding-window
                                 layers hold their window only) */
    kv_type_t kv_type_k, kv_type_v; /* storage of K and V */
    fwd_attn_t attn;          /* attention mode */
    uint64_t prompt_tokens;   /* total prompt tokens */
    uint64_t cached_tokens;   /* of which reused from the prefix cache */
    uint64_t gen_tokens;      /* total tokens generated */
    uint64_t steps;           /* engine steps run */
    uint64_t preemptions;     /* running jobs preempted for KV memory */
    /* hybrid models: the recurrent state beside the KV cache (all 0 else) */
    uint64_t state_per_seq_bytes; /* one sequence's state */
    uint64_t state_bytes;     /* the live states of all slots */
    uint64_t state_snap_bytes;/* state snapshots allocated (prefix cache) */
    int32_t state_snap_slots; /* snapshot slots */
    int32_t state_snapshots;  /* snapshots cached for reuse */
    uint64_t state_restores;  /* prompts resumed from a snapshot */
    /* images (issue 29) */
    uint64_t image_encode_stages; /* encoder stages run (patches, layers, projector) */
    uint64_t images_encoded;      /* pixel arrays encoded */
    uint64_t image_cache_entries, image_cache_bytes, image_cache_max_bytes;
    uint64_t image_cache_hits, image_cache_misses, image_cache_evictions;
    uint64_t spec_drafted[SPEC_SRC_COUNT];  /* draft tokens verified, per source */
    uint64_t spec_accepted[SPEC_SRC_COUNT]; /* of which kept */
    uint64_t spec_verifications; /* steps of a sequence that verified drafts */
    uint64_t spec_refed;  /* positions evaluated again after a recurrent state
                             was rolled back to its checkpoint (hybrids) */
    double spec_mtp_cost; /* spec_mtp asked: a draft's cost as a share of a step
                             (the block's weight bytes over the model's); 0 else */
    bool spec_mtp_used;   /* it drafts (false: too costly to pay, SPEC_DRAFT_PROBE_C) */
} sched_stats_t;

typedef struct sched sched_t;
typedef struct sched_chan sched_chan_t;

/* Creates the forward context and starts the scheduler thread. The model
 * must outlive the scheduler. NULL + err on failure. */
sched_t *sched_create(const model_t *m, const sched_opts_t *opts, lf_err_t *err);
/* Stops the thread: every running or waiting job ends with a CANCELLED done
 * event, later submits fail with LF_ERR_OVERLOAD. Channels stay valid until
 * their owners free them; stats and sched_n_ctx keep working. Idempotent. */
void sched_stop(sched_t *s);
/* Stops (if needed) and frees. Accepts NULL. */
void sched_free(sched_t *s);

int32_t sched_n_ctx(const sched_t *s);
void sched_stats(sched_t *s, sched_stats_t *out);

/* A new, empty channel; NULL on allocation failure. */
sched_chan_t *sched_chan_create(sched_t *s);
/* Submits n jobs into ch with indexes 0..n-1: all or none. Prompts are
 * copied (each non-empty, ids < n_vocab, n_prompt + max_tokens <= n_ctx,
 * else LF_ERR_INVALID / LF_ERR_CONTEXT). LF_ERR_OVERLOAD when the queue
 * cannot take n more jobs. A channel takes one submit only. */
lf_code_t sched_submit(sched_t *s, sched_chan_t *ch, const int32_t *const *prompts,
                       const size_t *n_prompts, const sched_params_t *params,
                       int32_t n, lf_err_t *err);
/* Waits up to timeout_ms (< 0: forever) for the next event. Returns 1 with
 * *ev filled, 0 on timeout, -1 when every job has finished and every event
 * was read. */
int sched_chan_next(sched_chan_t *ch, sched_event_t *ev, int timeout_ms);
/* Asks the scheduler to stop the channel's jobs (idempotent). */
void sched_chan_cancel(sched_chan_t *ch);
/* Stops one job of the channel (its DONE event still comes, CANCELLED). */
void sched_chan_cancel_job(sched_chan_t *ch, int32_t index);
/* Cancels and drops the owner's reference. Accepts NULL. */
void sched_chan_free(sched_chan_t *ch);

#endif
