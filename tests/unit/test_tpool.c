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
    return tap_done();
}
