/* bench_gemm.c - micro-benchmark of the blocked float products (gemm.h)
 * and the encoder attention (enc_attn.h) at the vision encoders' shapes
 * (not a test: no assertions, not in TESTS). Prints GFLOP/s (2 flops per
 * multiply-add; attention counts q.k and p.v).
 *
 * usage: bench_gemm [threads=1] [rows=1024] [impl=auto]
 * With one thread, time is the thread's CPU time (other processes on a
 * shared machine do not count); with more, wall-clock time. Each case is
 * the best of 3 runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/kernels/enc_attn.h"
#include "engine/kernels/gemm.h"
#include "engine/quant/fp16.h"
#include "engine/quant/quant.h"

static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now(void)
{
    struct timespec ts;
    clock_gettime(bench_clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float frand(void) { return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f; }

static void bench_mm(tpool_t *pool, int nth, qtype_t t, int64_t m, int64_t n, int64_t k)
{
    float *wf = malloc((size_t)(n * k) * sizeof(float));
    for (int64_t i = 0; i < n * k; i++)
        wf[i] = frand() * 0.05f;
    const size_t rs = qtype_row_size(t, k);
    uint8_t *w = malloc(rs * (size_t)n);
    for (int64_t r = 0; r < n; r++)
        quant_quantize_row(t, wf + r * k, w + (size_t)r * rs, k);
    float *x = malloc((size_t)(m * k) * sizeof(float)), *xr = malloc(gemm_act_floats(m, k) * sizeof(float));
    float *out = malloc((size_t)(m * n) * sizeof(float));
    for (int64_t i = 0; i < m * k; i++)
        x[i] = frand();
    void *scratch = malloc(gemm_scratch_size(nth, k));
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        const double t0 = now();
        gemm_prepare(pool, t, x, k, m, k, xr, scratch);
        gemm_run(pool, t, w, n, k, xr, m, out, n, NULL, scratch);
        const double dt = now() - t0;
        best = dt < best ? dt : best;
    }
    printf("| gemm %-5s | %5ld x %5ld x %5ld | %8.1f ms | %6.1f GFLOP/s |\n", qtype_name(t), (long)m, (long)n,
           (long)k, best * 1e3, 2.0 * (double)m * (double)n * (double)k / best * 1e-9);
    free(wf), free(w), free(x), free(xr), free(out), free(scratch);
}

static void bench_attn(tpool_t *pool, int nth, int64_t n, int n_head, int d, int win)
{
    const int64_t E = (int64_t)n_head * d;
    float *q = malloc((size_t)(n * E) * sizeof(float)), *k = malloc((size_t)(n * E) * sizeof(float));
    float *v = malloc((size_t)(n * E) * sizeof(float)), *o = malloc((size_t)(n * E) * sizeof(float));
    for (int64_t i = 0; i < n * E; i++) {
        q[i] = frand();
        k[i] = frand();
        v[i] = frand();
    }
    const int n_seg = win ? (int)((n + win - 1) / win) : 1;
    int32_t *seg = malloc((size_t)(n_seg + 1) * sizeof *seg);
    for (int s = 0; s <= n_seg; s++)
        seg[s] = (int32_t)(win ? (s * (int64_t)win < n ? s * (int64_t)win : n) : (s ? n : 0));
    void *scratch = malloc(enc_attn_scratch_size(n, n_seg, n_head, d, nth));
    double best = 1e30, flops = 0.0;
    for (int s = 0; s < n_seg; s++)
        flops += 4.0 * (double)(seg[s + 1] - seg[s]) * (double)(seg[s + 1] - seg[s]) * (double)E;
    for (int rep = 0; rep < 3; rep++) {
        const double t0 = now();
        enc_attn(pool, q, k, v, E, n, seg, n_seg, n_head, d, 0.125f, o, E, scratch);
        const double dt = now() - t0;
        best = dt < best ? dt : best;
    }
    printf("| attention    | n %5ld, %2d x %3d, %s%-4d | %8.1f ms | %6.1f GFLOP/s |\n", (long)n, n_head, d,
           win ? "window " : "full   ", win, best * 1e3, flops / best * 1e-9);
    free(q), free(k), free(v), free(o), free(seg), free(scratch);
}

int main(int argc, char **argv)
{
    const int nth = argc > 1 ? atoi(argv[1]) : 1;
    const int64_t m = argc > 2 ? atol(argv[2]) : 1024;
    if (argc > 3 && !gemm_impl_select(argv[3])) {
        fprintf(stderr, "bench_gemm: no implementation %s here\n", argv[3]);
        return 2;
    }
    if (nth == 1)
        bench_clock = CLOCK_THREAD_CPUTIME_ID;
    tpool_t *pool = NULL;
    lf_err_t err = {0};
    if (tpool_create(nth, &pool, &err) != LF_OK) {
        fprintf(stderr, "bench_gemm: %s\n", err.msg);
        return 1;
    }
    printf("implementation %s, %d thread(s), %s time\n\n| case | shape | time | rate |\n|---|---|---|---|\n",
           gemm_impl_name(), nth, nth == 1 ? "CPU" : "wall");
    bench_mm(pool, nth, QTYPE_F16, m, 1152, 1152);
    bench_mm(pool, nth, QTYPE_F16, m, 4304, 1152);
    bench_mm(pool, nth, QTYPE_F16, m, 1152, 4304);
    bench_mm(pool, nth, QTYPE_F32, m, 1152, 1152);
    bench_mm(pool, nth, QTYPE_Q8_0, m, 1152, 1152);
    bench_attn(pool, nth, m, 16, 72, 0);
    bench_attn(pool, nth, m, 16, 80, 64);
    tpool_free(pool);
    return 0;
}
