/* tpool.h - a small fixed thread pool for the compute kernels.
 *
 * A pool of n threads: the calling thread participates as thread 0 and
 * n - 1 workers are created once. tpool_run(pool, fn, arg) calls
 * fn(arg, ith, nth) exactly once for every ith in [0, nth) and returns when
 * all calls have finished; nth == tpool_size(pool). Workers spin only very
 * briefly (a few microseconds) after a job and then sleep on a condition
 * variable, so an idle pool costs no CPU (the HTTP threads share the cores).
 * tpool_run performs no allocation. One tpool_run at a time per pool (the
 * scheduler thread owns the pool); fn must not call tpool_run on the same
 * pool.
 *
 * Ownership: tpool_create returns a pool the caller frees with
 * tpool_free (which accepts NULL and joins the workers).
 */
#ifndef LF_TPOOL_H
#define LF_TPOOL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"

typedef struct tpool tpool_t;

typedef void (*tpool_fn_t)(void *arg, int ith, int nth);

/* Creates a pool of n_threads (>= 1; the caller counts as one) in *out.
 * Fails with LF_ERR_INVALID for n_threads < 1 or > 256, LF_ERR_NOMEM or
 * LF_ERR_INTERNAL if memory or threads cannot be had. */
lf_code_t tpool_create(int n_threads, tpool_t **out, lf_err_t *err);

/* Joins the workers and frees the pool; NULL is allowed. */
void tpool_free(tpool_t *pool);

/* Number of threads (including the caller); 1 for a NULL pool. */
int tpool_size(const tpool_t *pool);

/* Runs fn(arg, ith, nth) for every ith on its own thread, the caller doing
 * ith = 0; returns when all are done. A NULL pool runs fn(arg, 0, 1). */
void tpool_run(tpool_t *pool, tpool_fn_t fn, void *arg);

/* Splits [0, n) into tpool_size(pool) contiguous slices, each a multiple
 * of grain items (but the last), and calls fn(arg, lo, hi) for each
 * non-empty slice on its own thread. With fewer than 2 * grain items (or a
 * NULL pool) the caller runs fn(arg, 0, n) alone: a hand-off costs
 * microseconds, so grain should be worth more than that. */
typedef void (*tpool_range_fn_t)(void *arg, int64_t lo, int64_t hi);
void tpool_run_range(tpool_t *pool, int64_t n, int64_t grain, tpool_range_fn_t fn, void *arg);

/* Hand-off cost, for benchmarks: the tpool_run calls that used workers and
 * the caller's total time waiting for the last worker after its own share
 * (nanoseconds) since creation or the last reset. Call between runs, on
 * the thread that calls tpool_run. */
void tpool_stats(tpool_t *pool, uint64_t *runs, uint64_t *wait_ns, bool reset);

#endif
