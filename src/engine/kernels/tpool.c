/* tpool.c - fixed thread pool: generation counter + condvars, short spin.
 *
 * A job is published by bumping the atomic `gen`. Each worker remembers the
 * last generation it ran. After a job a worker first spins on `gen` for a
 * bounded time (consecutive matmuls of one forward pass follow each other
 * within microseconds, and a condvar wake-up costs tens of microseconds),
 * then sleeps on `wake`. `pending` counts workers still running; the last
 * one to finish signals `done` if the caller sleeps. The caller likewise
 * spins briefly, then sleeps.
 *
 * The mutex is only taken by a thread that goes to sleep and by a thread
 * that must wake a sleeper: a forward pass makes ~50 runs per token, and
 * locking on every publish / finish made the caller and the worker collide
 * on the mutex (futex wake-ups on every run once a thread is descheduled
 * while holding it). Lost wake-ups are excluded by the Dekker pattern on
 * seq_cst atomics: a sleeper first announces itself (`sleepers`,
 * `caller_sleeping`) and then, under the mutex, re-checks the condition; a
 * waker first publishes the condition (`gen`, `pending`) and then reads the
 * announcement. In the single order of seq_cst operations one of the two
 * sees the other's store; when the waker sees the announcement it takes the
 * mutex, which the sleeper holds until it is inside pthread_cond_wait.
 */
#include "engine/kernels/tpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TPOOL_PAUSE() _mm_pause()
#else
#define TPOOL_PAUSE() ((void)0)
#endif

/* Spin budget before sleeping: long enough to bridge the gap between the
 * matmuls of one forward pass, short enough not to steal the HTTP threads'
 * CPU (the pool shares 2 cores with them). */
#define TPOOL_SPIN_NS 30000

static int64_t tpool_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spins until *v != seen or the budget is spent; returns the last value. */
static unsigned tpool_spin_while_eq(atomic_uint *v, unsigned seen)
{
    unsigned g = atomic_load_explicit(v, memory_order_acquire);
    int64_t t0 = 0;
    for (unsigned i = 1; g == seen; i++) {
        TPOOL_PAUSE();
        g = atomic_load_explicit(v, memory_order_acquire);
        if ((i & 31) == 0) {
            int64_t t = tpool_now_ns();
            if (!t0)
                t0 = t;
            else if (t - t0 > TPOOL_SPIN_NS)
                break;
        }
    }
    return g;
}

struct tpool {
    int n;
    pthread_t *threads;     /* n - 1 workers */
    pthread_mutex_t mu;
    pthread_cond_t wake;    /* workers wait here for a new generation */
    pthread_cond_t done;    /* the caller waits here for pending == 0 */
    atomic_uint gen;        /* bumped once per job */
    atomic_int pending;     /* workers still running the current job */
    atomic_bool quit;
    atomic_int sleepers;    /* workers about to block / blocked on `wake` (set under mu) */
    atomic_int caller_sleeping; /* caller about to block / blocked on `done` (set under mu) */
    tpool_fn_t fn;
    void *arg;
    uint64_t runs;          /* tpool_run calls with workers (caller only) */
    uint64_t wait_ns;       /* caller's time between its share and the last worker's end */
};

typedef struct {
    tpool_t *pool;
    int ith;
} tpool_worker_t;

static void *tpool_worker_main(void *p)
{
    tpool_worker_t *w = p;
    tpool_t *pool = w->pool;
    int ith = w->ith;
    free(w);
    unsigned seen = 0;
    for (;;) {
        unsigned g = tpool_spin_while_eq(&pool->gen, seen);
        if (g == seen) {
            pthread_mutex_lock(&pool->mu);
            atomic_fetch_add(&pool->sleepers, 1); /* announce, then re-check gen (seq_cst) */
            while ((g = atomic_load(&pool->gen)) == seen && !atomic_load(&pool->quit))
                pthread_cond_wait(&pool->wake, &pool->mu);
            atomic_fetch_sub(&pool->sleepers, 1);
            pthread_mutex_unlock(&pool->mu);
        }
        if (atomic_load(&pool->quit))
            return NULL;
        seen = g;
        pool->fn(pool->arg, ith, pool->n);
        /* the last worker wakes the caller only if it announced sleeping */
        if (atomic_fetch_sub(&pool->pending, 1) == 1 && atomic_load(&pool->caller_sleeping)) {
            pthread_mutex_lock(&pool->mu);
            pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->mu);
        }
    }
}

lf_code_t tpool_create(int n_threads, tpool_t **out, lf_err_t *err)
{
    *out = NULL;
    if (n_threads < 1 || n_threads > 256)
        return lf_err_set(err, LF_ERR_INVALID, "thread count %d out of range 1..256", n_threads);
    tpool_t *pool = calloc(1, sizeof *pool);
    if (!pool)
        return lf_err_set(err, LF_ERR_NOMEM, "thread pool");
    pool->n = n_threads;
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    atomic_init(&pool->gen, 0);
    atomic_init(&pool->pending, 0);
    atomic_init(&pool->quit, false);
    atomic_init(&pool->sleepers, 0);
    atomic_init(&pool->caller_sleeping, 0);
    if (n_threads > 1) {
        pool->threads = calloc((size_t)n_threads - 1, sizeof *pool->threads);
        if (!pool->threads) {
            pool->n = 1;
            tpool_free(pool);
            return lf_err_set(err, LF_ERR_NOMEM, "thread pool");
        }
    }
    for (int i = 1; i < n_threads; i++) {
        tpool_worker_t *w = malloc(sizeof *w);
        if (w) {
            w->pool = pool;
            w->ith = i;
        }
        if (!w || pthread_create(&pool->threads[i - 1], NULL, tpool_worker_main, w) != 0) {
            free(w);
            pool->n = i; /* only i - 1 workers exist: join those */
            tpool_free(pool);
            return lf_err_set(err, LF_ERR_INTERNAL, "cannot start thread %d of %d", i, n_threads);
        }
    }
    *out = pool;
    return LF_OK;
}

void tpool_free(tpool_t *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mu);
    atomic_store(&pool->quit, true);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);
    for (int i = 1; i < pool->n; i++)
        pthread_join(pool->threads[i - 1], NULL);
    pthread_mutex_destroy(&pool->mu);
    pthread_cond_destroy(&pool->wake);
    pthread_cond_destroy(&pool->done);
    free(pool->threads);
    free(pool);
}

int tpool_size(const tpool_t *pool)
{
    return pool ? pool->n : 1;
}

void tpool_run(tpool_t *pool, tpool_fn_t fn, void *arg)
{
    if (!pool || pool->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    pool->fn = fn;
    pool->arg = arg;
    atomic_store_explicit(&pool->pending, pool->n - 1, memory_order_relaxed);
    /* publish (seq_cst, also releases fn/arg/pending), then look for sleepers */
    atomic_fetch_add(&pool->gen, 1);
    if (atomic_load(&pool->sleepers)) {
        pthread_mutex_lock(&pool->mu);
        pthread_cond_broadcast(&pool->wake);
        pthread_mutex_unlock(&pool->mu);
    }

    fn(arg, 0, pool->n);

    const int64_t w0 = tpool_now_ns();
    pool->runs++;
    int64_t t0 = 0;
    for (unsigned i = 1; atomic_load_explicit(&pool->pending, memory_order_acquire) != 0; i++) {
        TPOOL_PAUSE();
        if ((i & 31) == 0) {
            int64_t t = tpool_now_ns();
            if (!t0)
                t0 = t;
            else if (t - t0 > TPOOL_SPIN_NS)
                break;
        }
    }
    if (atomic_load_explicit(&pool->pending, memory_order_acquire) != 0) {
        pthread_mutex_lock(&pool->mu);
        atomic_store(&pool->caller_sleeping, 1); /* announce, then re-check pending (seq_cst) */
        while (atomic_load(&pool->pending) != 0)
            pthread_cond_wait(&pool->done, &pool->mu);
        atomic_store(&pool->caller_sleeping, 0);
        pthread_mutex_unlock(&pool->mu);
    }
    pool->wait_ns += (uint64_t)(tpool_now_ns() - w0);
}

void tpool_stats(tpool_t *pool, uint64_t *runs, uint64_t *wait_ns, bool reset)
{
    *runs = pool ? pool->runs : 0;
    *wait_ns = pool ? pool->wait_ns : 0;
    if (pool && reset)
        pool->runs = pool->wait_ns = 0;
}

typedef struct {
    int64_t n, grain;
    tpool_range_fn_t fn;
    void *arg;
} tpool_range_t;

static void range_worker(void *arg, int ith, int nth)
{
    const tpool_range_t *r = arg;
    const int64_t chunks = (r->n + r->grain - 1) / r->grain, per = (chunks + nth - 1) / nth;
    const int64_t lo = per * ith * r->grain, hi = per * (ith + 1) * r->grain < r->n ? per * (ith + 1) * r->grain : r->n;
    if (lo < hi)
        r->fn(r->arg, lo, hi);
}

void tpool_run_range(tpool_t *pool, int64_t n, int64_t grain, tpool_range_fn_t fn, void *arg)
{
    if (grain < 1)
        grain = 1;
    if (!pool || pool->n == 1 || n < 2 * grain) {
        if (n > 0)
            fn(arg, 0, n);
        return;
    }
    tpool_range_t r = {n, grain, fn, arg};
    tpool_run(pool, range_worker, &r);
}
