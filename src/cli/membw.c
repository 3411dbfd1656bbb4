/* membw.c - the read-bandwidth probe (membw.h). */
#include "cli/membw.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MEMBW_BYTES ((size_t)256 << 20)
#define MEMBW_PASSES 4
#define MEMBW_MAX_THREADS 64

typedef struct {
    const uint64_t *p;
    size_t n;        /* words */
    uint64_t sum;    /* keeps the loads alive */
} membw_slice_t;

static void *membw_read_slice(void *arg)
{
    membw_slice_t *s = arg;
    uint64_t a[8] = {0};
    for (size_t i = 0; i + 8 <= s->n; i += 8) /* 64-byte steps; the compiler vectorizes */
        for (int j = 0; j < 8; j++)
            a[j] += s->p[i + j];
    s->sum = a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
    return NULL;
}

static double membw_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double membw_read(int n_threads)
{
    if (n_threads < 1)
        n_threads = 1;
    if (n_threads > MEMBW_MAX_THREADS)
        n_threads = MEMBW_MAX_THREADS;
    uint64_t *buf = mmap(NULL, MEMBW_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        return 0;
#ifdef MADV_HUGEPAGE
    madvise(buf, MEMBW_BYTES, MADV_HUGEPAGE); /* as the packed weights */
#endif
    const size_t words = MEMBW_BYTES / sizeof *buf;
    for (size_t i = 0; i < words; i++)
        buf[i] = i;
    double best = 0;
    for (int pass = 0; pass < MEMBW_PASSES; pass++) {
        membw_slice_t sl[MEMBW_MAX_THREADS];
        pthread_t th[MEMBW_MAX_THREADS];
        int started[MEMBW_MAX_THREADS] = {0};
        double t0 = membw_now();
        for (int t = 0; t < n_threads; t++) {
            size_t a = words * (size_t)t / (size_t)n_threads, b = words * (size_t)(t + 1) / (size_t)n_threads;
            sl[t] = (membw_slice_t){buf + a, b - a, 0};
        }
        for (int t = 1; t < n_threads; t++)
            started[t] = pthread_create(&th[t], NULL, membw_read_slice, &sl[t]) == 0;
        membw_read_slice(&sl[0]);
        for (int t = 1; t < n_threads; t++) {
            if (started[t])
                pthread_join(th[t], NULL);
            else
                membw_read_slice(&sl[t]); /* could not start: read it here (slower figure) */
        }
        double dt = membw_now() - t0;
        if (dt > 0 && (double)MEMBW_BYTES / dt > best)
            best = (double)MEMBW_BYTES / dt;
    }
    munmap(buf, MEMBW_BYTES);
    return best;
}
