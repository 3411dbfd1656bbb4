/* embed_sched.h - the embedding scheduler: one thread that owns a forward
 * context and turns token sequences into pooled vectors (or per-token
 * states, or rerank scores), packing the sequences of every waiting
 * request into shared forward passes.
 *
 * Why not the generation scheduler (sched.h): an embedding job has no
 * decode phase, no sampling and, for encoders, no KV cache at all; it is
 * "evaluate these sequences once and pool". What the two share is the
 * forward pass, its kernels and its batch-first shape.
 *
 * Packing: each step fills one batch of at most max_batch tokens and
 * n_seq sequences, taking the oldest waiting sequence first and then any
 * later one that still fits (results never depend on the batch: the
 * forward pass is batch invariant). Families without a KV cache take a
 * sequence whole in one batch; the others may split a long one over steps
 * (through the KV cache, positions in order) and free its cache when it is
 * done.
 *
 * Jobs: embed_submit copies the sequences; the caller waits with
 * embed_job_wait and reads embed_job_out; embed_job_free cancels a job
 * still running (the scheduler drops its sequences at its next step) and
 * drops the caller's reference (the memory goes with the last one).
 */
#ifndef LF_EMBED_SCHED_H
#define LF_EMBED_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/model/model.h"

typedef struct {
    int32_t max_batch;  /* tokens per forward pass (<= 0: 512); also the
                           longest sequence of a family without KV cache */
    int32_t n_seq;      /* sequences per forward pass (<= 0: 64; cache
                           families: sequences in the KV cache at once, <= 0: 8) */
    int32_t n_ctx;      /* longest sequence (<= 0: the model's context) */
    int32_t n_threads;  /* engine threads (<= 0: cores) */
    int32_t max_queue;  /* sequences waiting before LF_ERR_OVERLOAD (<= 0: 65536) */
    int pooling;        /* MODEL_POOLING_* of every job */
} embed_opts_t;

typedef struct {
    uint64_t inputs;     /* sequences embedded */
    uint64_t tokens;     /* their tokens */
    uint64_t passes;     /* forward passes run */
    int32_t waiting;     /* sequences queued or running now */
    int32_t max_batch, n_ctx, pooling;
} embed_stats_t;

typedef struct embed_sched embed_sched_t;
typedef struct embed_job embed_job_t;

/* Creates the forward context and starts the thread. The model must
 * outlive the scheduler. NULL + err on failure (pool_check's errors too). */
embed_sched_t *embed_sched_create(const model_t *m, const embed_opts_t *opts, lf_err_t *err);
/* Stops the thread: running and waiting jobs end with LF_ERR_OVERLOAD
 * ("server stopping"), later submits fail. Idempotent. */
void embed_sched_stop(embed_sched_t *s);
void embed_sched_free(embed_sched_t *s); /* stops; accepts NULL */

/* The longest sequence a job may hold, and whether it must fit one batch
 * (a family without KV cache) - then the limit is min(n_ctx, max_batch). */
int32_t embed_sched_max_tokens(const embed_sched_t *s);
int embed_sched_pooling(const embed_sched_t *s);
void embed_sched_stats(embed_sched_t *s, embed_stats_t *out);

/* Submits n sequences (each 1 .. embed_sched_max_tokens tokens, ids in
 * the vocabulary; else LF_ERR_INVALID / LF_ERR_CONTEXT naming the index).
 * LF_ERR_OVERLOAD when the queue cannot take them. NULL + err on failure. */
embed_job_t *embed_submit(embed_sched_t *s, const int32_t *const *seqs, const int32_t *lens, int32_t n,
                          lf_err_t *err);
/* Waits up to timeout_ms (< 0: forever). 1 when the job is finished
 * (embed_job_status tells how), 0 on timeout. */
int embed_job_wait(embed_job_t *j, int timeout_ms);
/* LF_OK, or the error that ended the job (message in err). */
lf_code_t embed_job_status(const embed_job_t *j, lf_err_t *err);
/* Sequence i's raw outputs (pool.h: not normalised; the caller may
 * normalise them in place) and their count; valid until embed_job_free.
 * NULL unless the job finished with LF_OK. */
float *embed_job_out(embed_job_t *j, int32_t i, int64_t *n);
/* Cancels (if running) and drops the caller's reference. Accepts NULL. */
void embed_job_free(embed_job_t *j);

#endif
