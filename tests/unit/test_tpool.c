/* test_tpool.c - the thread pool runs every index exactly once per call,
 * many times in a row, for several pool sizes; bad sizes are refused. */
#include "engine/kernels/tpool.h"
#include "tap.h"

#include <stdatomic.h>
#include <string.h>

#define MAX_T 8

typedef struct {
    atomic_int hits[MAX_T];
    atomic_int bad_nth;
    int nth_expected;
} run_state_t;

static void count_fn(void *arg, int ith, int nth)
{
    run_state_t *s = arg;
    if (nth != s->nth_expected || ith < 0 || ith >= nth)
        atomic_fetch_add(&s->bad_nth, 1);
    else
        atomic_fetch_add(&s->hits[ith], 1);
}

/* tpool_run_range: every item of [0, n) once, slices starting at multiples
 * of grain, the caller alone below 2 * grain items. */
enum { NULL_POOL = -1 };

typedef struct {
    atomic_int hits[1000];
    atomic_int calls, misaligned;
    int64_t grain;
} range_state_t;

static void range_fn(void *arg, int64_t lo, int64_t hi)
{
    range_state_t *s = arg;
    atomic_fetch_add(&s->calls, 1);
    if (lo % s->grain || lo >= hi)
        atomic_fetch_add(&s->misaligned, 1);
    for (int64_t i = lo; i < hi; i++)
        atomic_fetch_add(&s->hits[i], 1);
}

static int check_range(tpool_t *pool, int64_t n, int64_t grain, int want_calls)
{
    static range_state_t s;
    memset(&s, 0, sizeof s);
    s.grain = grain;
    tpool_run_range(pool, n, grain, range_fn, &s);
    int ok = atomic_load(&s.misaligned) == 0 && (want_calls < 0 || atomic_load(&s.calls) == want_calls);
    for (int64_t i = 0; i < n; i++)
        ok &= atomic_load(&s.hits[i]) == 1;
    return ok;
}

int main(void)
{
    static const int sizes[] = {1, 2, 3, 4, 8};
    const int reps = 3000;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int n = sizes[si];
        tpool_t *pool = NULL;
        lf_err_t err;
        if (!tap_ok(tpool_create(n, &pool, &err) == LF_OK, "create pool of %d", n))
            continue;
        tap_ok(tpool_size(pool) == n, "size %d", n);
        int all_once = 1;
        for (int r = 0; r < reps; r++) {
            run_state_t s;
            memset(&s, 0, sizeof s);
            s.nth_expected = n;
            tpool_run(pool, count_fn, &s);
            /* every call must be complete when tpool_run returns */
            for (int i = 0; i < n; i++)
                if (atomic_load(&s.hits[i]) != 1)
                    all_once = 0;
            if (atomic_load(&s.bad_nth))
                all_once = 0;
        }
        tap_ok(all_once, "pool of %d: %d runs, every index exactly once", n, reps);
        tpool_free(pool);
    }
    tpool_t *p = NULL;
    tap_ok(tpool_create(0, &p, NULL) == LF_ERR_INVALID && !p, "0 threads refused");
    tap_ok(tpool_create(1000, &p, NULL) == LF_ERR_INVALID && !p, "1000 threads refused");
    run_state_t s;
    memset(&s, 0, sizeof s);
    s.nth_expected = 1;
    tpool_run(NULL, count_fn, &s);
    tap_ok(atomic_load(&s.hits[0]) == 1 && tpool_size(NULL) == 1, "NULL pool runs inline");
    tpool_free(NULL);

    static const struct {
        int threads;
        int64_t n, grain;
        int calls; /* -1: any */
    } ranges[] = {
        {1, 1000, 1, 1},  {2, 0, 4, 0},      {2, 7, 4, 1},     {2, 8, 4, 2},  {2, 9, 4, 2},
        {2, 1000, 16, 2}, {2, 1000, 999, 1}, {3, 10, 1, 3},    {4, 5, 1, 3},  {4, 1000, 7, 4},
        {8, 9, 4, 3},     {2, 1, 0, 1},      {3, 997, 100, 3}, {NULL_POOL, 50, 1, 1},
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        tpool_t *rp = NULL;
        if (ranges[i].threads != NULL_POOL && tpool_create(ranges[i].threads, &rp, NULL) != LF_OK)
            return 1;
        tap_ok(check_range(rp, ranges[i].n, ranges[i].grain > 0 ? ranges[i].grain : 1, ranges[i].calls),
               "run_range: %d threads, %lld items, grain %lld: each once, aligned slices, %d calls",
               ranges[i].threads, (long long)ranges[i].n, (long long)ranges[i].grain, ranges[i].calls);
        tpool_free(rp);
    }
    return tap_done();
}
