/* bench_kernels.c - micro-benchmark of kern_matmul (not a test: no
 * assertions, not in TESTS). For each weight type and shape it prints the
 * weight bandwidth of single-token decode (GB/s) and the arithmetic rate of
 * a 512-token prefill (GFLOP/s, 2 flops per multiply-add), on the original
 * rows and, where the level packs the type, on the packed copy (the
 * engine's decode and prefill path; its figures include quantizing the
 * activations). With "blas" it
 * also times OpenBLAS cblas_sgemm on W dequantized to f32 (dequantization
 * excluded and included) for the prefill shape; that needs a build
 * configured with libopenblas-dev installed (HAVE_OPENBLAS).
 *
 * usage: bench_kernels [threads=2] [types=q8_0,q4_K,...|all] [blas|stream|moe]
 * (stream: decode of 32000x768 and 2048x768 matrices from DRAM, GB/s, the
 * original rows and, where the level packs the type, the packed copy;
 * moe: one gpt-oss-20b expert matrix, 2880x2880, with the token counts a
 * routed expert sees: 1 (decode) to 64 (a 512-token prompt, 32 experts,
 * top 4), GFLOP/s)
 * The ISA level follows LLM_FCGI_ISA. Keep runs short: the machine is shared.
 */
#include "engine/kernels/kernels.h"
#include "engine/quant/quant.h"
#include "engine/quant/fp16.h"
#include "engine/quant/quant_blocks.h"

#ifdef HAVE_OPENBLAS
#include <cblas.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* With one thread, time is the thread's CPU time: other processes on the
 * shared machine then do not count. With more, wall-clock time. */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now(void)
{
    struct timespec ts;
    clock_gettime(bench_clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rs = 88172645463325252ull;
static uint8_t rnd8(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint8_t)(rs >> 24);
}

/* Random weights with small positive fp16 scales in every 16-bit slot that
 * could be a scale: simplest is to build them by quantizing is impossible
 * for weight types (no weight quantizer), so fill bytes and then clamp any
 * fp16 field by rewriting every half-word that is inf/nan. Good enough for
 * timing (values do not change the speed of integer kernels). */
static void fill(qtype_t t, uint8_t *b, size_t n_bytes)
{
    for (size_t i = 0; i < n_bytes; i++)
        b[i] = rnd8();
    if (t == QTYPE_F32) {
        float *f = (float *)b;
        for (size_t i = 0; i < n_bytes / 4; i++)
            f[i] = (float)(rnd8() - 128) / 128.0f;
    } else if (t == QTYPE_F16 || t == QTYPE_BF16) {
        uint16_t *h = (uint16_t *)b;
        for (size_t i = 0; i < n_bytes / 2; i++) {
            float v = (float)(rnd8() - 128) / 128.0f;
            h[i] = t == QTYPE_F16 ? fp16_from_fp32(v) : bf16_from_fp32(v);
        }
    } else if (t == QTYPE_MXFP4) {
        /* random exponents would include 2^-128: float subnormals, which
         * cost microcode assists in the FMAs and distort the timing */
        for (size_t i = 0; i < n_bytes; i += sizeof(block_mxfp4))
            b[i] = (uint8_t)(118 + rnd8() % 8);
    }
}

static const qtype_t all_types[] = {QTYPE_Q8_0, QTYPE_Q4_K, QTYPE_Q6_K, QTYPE_F32,    QTYPE_F16,
                                    QTYPE_Q5_K, QTYPE_Q4_0, QTYPE_Q5_0, QTYPE_Q3_K,   QTYPE_Q2_K,
                                    QTYPE_Q4_1, QTYPE_Q5_1, QTYPE_BF16, QTYPE_IQ4_NL, QTYPE_IQ4_XS,
                                    QTYPE_MXFP4};

/* One timed call: what a benchmark loop measures (r: the run's index). */
typedef struct {
    tpool_t *pool;
    qtype_t t;
    const uint8_t *W, *P; /* P: the packed copy (kern_linear_multi), or NULL (kern_matmul) */
    int64_t n_rows, k, n_tok;
    const float *x;       /* P: the float activations */
    void *act;
    float *out;
    size_t w_step, p_step; /* bytes between copies walked in turn (0: one copy) */
    int copies;
} mm_call_t;

static void mm_call(const mm_call_t *c, int r)
{
    const int i = c->copies > 1 ? r % c->copies : 0;
    if (c->P) {
        kern_mm_t job = {c->t, c->W, c->n_rows, c->k, NULL, c->out, c->P + (size_t)i * c->p_step};
        kern_linear_multi(c->pool, 1, &job, c->x, c->n_tok, c->act);
    } else {
        kern_matmul(c->pool, c->t, c->W + (size_t)i * c->w_step, c->n_rows, c->k, c->act, c->n_tok, c->out);
    }
}

/* The shortest of up to max_runs calls within budget seconds (the VM is
 * shared: the minimum is the signal); *mean (or NULL): their mean. */
static double best_of(const mm_call_t *c, int max_runs, double budget, double *mean)
{
    double best = 1e9, total = 0, start = now();
    int runs = 0;
    for (int r = 0; r < max_runs && now() - start < budget; r++) {
        const double t0 = now();
        mm_call(c, r);
        const double d = now() - t0;
        total += d, runs++;
        best = d < best ? d : best;
    }
    if (mean)
        *mean = runs ? total / runs : 0;
    return best;
}

static void bench_one(tpool_t *pool, qtype_t t, int64_t n_rows, int64_t k, int blas)
{
    size_t wsz = qtype_row_size(t, k) * (size_t)n_rows;
    const int64_t T = 512;
    uint8_t *W = malloc(wsz);
    float *x = malloc(sizeof(float) * (size_t)(k * T));
    void *act = malloc(kern_act_size(t, k, T));
    float *out = malloc(sizeof(float) * (size_t)(n_rows * T));
    fill(t, W, wsz);
    for (int64_t i = 0; i < k * T; i++)
        x[i] = (float)(rnd8() - 128) / 64.0f;
    kern_quantize_act(t, x, k, T, act);

    mm_call_t c = {pool, t, W, NULL, n_rows, k, 1, x, act, out, 0, 0, 1};
    const double dec = best_of(&c, 2000, 0.2, NULL);
    c.n_tok = T;
    const double pre = best_of(&c, 20, 0.4, NULL);
    double q0 = now();
    kern_quantize_act_pool(pool, t, x, k, T, act);
    double qt = now() - q0;
    printf("%-5s %5lldx%-5lld decode %8.1f us %6.2f GB/s %6.2f GFLOP/s | prefill512 %8.2f ms %7.2f GFLOP/s"
           " (act quantize %.2f ms)\n",
           qtype_name(t), (long long)n_rows, (long long)k, dec * 1e6, (double)wsz / dec / 1e9,
           2.0 * (double)(n_rows * k) / dec / 1e9, pre * 1e3, 2.0 * (double)(n_rows * k * T) / pre / 1e9,
           qt * 1e3);
    size_t psz = kern_pack_size(t, n_rows, k);
    if (psz) { /* the packed copy (kpack.h), as the engine uses it */
        uint8_t *P = aligned_alloc(64, (psz + 63) / 64 * 64);
        kern_pack(t, W, n_rows, k, P);
        mm_call_t pc = {pool, t, W, P, n_rows, k, 1, x, act, out, 0, 0, 1};
        const double pdec = best_of(&pc, 2000, 0.2, NULL);
        pc.n_tok = T;
        const double ppre = best_of(&pc, 20, 0.4, NULL);
        printf("%-5s %5lldx%-5lld packed %8.1f us %6.2f GB/s %6.2f GFLOP/s | prefill512 %8.2f ms %7.2f GFLOP/s"
               " (act quantize included)\n",
               qtype_name(t), (long long)n_rows, (long long)k, pdec * 1e6, (double)wsz / pdec / 1e9,
               2.0 * (double)(n_rows * k) / pdec / 1e9, ppre * 1e3, 2.0 * (double)(n_rows * k * T) / ppre / 1e9);
        free(P);
    }
#ifdef HAVE_OPENBLAS
    if (blas && quant_can_dequantize(t)) {
        float *Wf = malloc(sizeof(float) * (size_t)(n_rows * k));
        size_t rsz = qtype_row_size(t, k);
        double d0 = now();
        for (int64_t r = 0; r < n_rows; r++)
            quant_dequantize_row(t, W + (size_t)r * rsz, Wf + r * k, k);
        double deq = now() - d0;
        double bt = 1e9, bstart = now();
        for (int r = 0; r < 20 && now() - bstart < 0.4; r++) {
            const double t0 = now();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)T, (int)n_rows, (int)k, 1.0f, x,
                        (int)k, Wf, (int)k, 0.0f, out, (int)n_rows);
            const double t1 = now();
            if (t1 - t0 < bt)
                bt = t1 - t0;
        }
        printf("      blas sgemm prefill512 %8.2f ms %7.2f GFLOP/s, +dequant %.2f ms -> %7.2f GFLOP/s\n",
               bt * 1e3, 2.0 * (double)(n_rows * k * T) / bt / 1e9, deq * 1e3,
               2.0 * (double)(n_rows * k * T) / (bt + deq) / 1e9);
        free(Wf);
    }
#else
    (void)blas;
#endif
    free(W), free(x), free(act), free(out);
}

/* Single-token decode with the weights streaming from DRAM: enough copies
 * of the matrix to exceed the last-level cache are walked in turn. */
static void bench_stream(tpool_t *pool, qtype_t t, int64_t n_rows, int64_t k, bool packed)
{
    size_t wsz = qtype_row_size(t, k) * (size_t)n_rows, psz = kern_pack_size(t, n_rows, k);
    if (packed && !psz)
        return;
    int copies = (int)((size_t)160 * 1024 * 1024 / wsz) + 1;
    uint8_t *W = malloc(wsz * (size_t)copies), *P = NULL;
    float *x = malloc(sizeof(float) * (size_t)k);
    void *act = malloc(kern_act_size(t, k, 1));
    float *out = malloc(sizeof(float) * (size_t)n_rows);
    fill(t, W, wsz);
    for (int c = 1; c < copies; c++)
        memcpy(W + (size_t)c * wsz, W, wsz);
    if (packed) { /* the packed copies (kpack.h) through kern_linear_multi */
        P = aligned_alloc(64, psz * (size_t)copies);
        for (int c = 0; c < copies; c++)
            kern_pack(t, W, n_rows, k, P + (size_t)c * psz);
    }
    for (int64_t i = 0; i < k; i++)
        x[i] = (float)(rnd8() - 128) / 64.0f;
    kern_quantize_act(t, x, k, 1, act);
    mm_call_t c = {pool, t, W, P, n_rows, k, 1, x, act, out, wsz, psz, copies};
    double mean;
    const double best = best_of(&c, 20000, 0.5, &mean);
    printf("%-5s %5lldx%-5lld stream decode%s best %8.1f us %6.2f GB/s, mean %6.2f GB/s (%d copies)\n",
           qtype_name(t), (long long)n_rows, (long long)k, packed ? " packed" : "", best * 1e6, (double)wsz / best / 1e9,
           (double)wsz / mean / 1e9, copies);
    free(W), free(P), free(x), free(act), free(out);
}

/* One expert-sized matrix with few tokens: best of runs, GFLOP/s. Rows
 * of 2880 are not whole 256-blocks: those types get 3072 (for comparison
 * only, such a file would not have them). */
static void bench_moe(tpool_t *pool, qtype_t t)
{
    const int64_t n_rows = 2880, k = qtype_info(t)->block_size == QK_K ? 3072 : 2880, T = 64;
    static const int64_t toks[] = {1, 4, 16, 64};
    size_t wsz = qtype_row_size(t, k) * (size_t)n_rows;
    uint8_t *W = malloc(wsz);
    float *x = malloc(sizeof(float) * (size_t)(k * T));
    void *act = malloc(kern_act_size(t, k, T));
    float *out = malloc(sizeof(float) * (size_t)(n_rows * T));
    fill(t, W, wsz);
    for (int64_t i = 0; i < k * T; i++)
        x[i] = (float)(rnd8() - 128) / 64.0f;
    kern_quantize_act(t, x, k, T, act);
    printf("%-6s %lldx%lld", qtype_name(t), (long long)n_rows, (long long)k);
    for (size_t j = 0; j < sizeof toks / sizeof toks[0]; j++) {
        mm_call_t c = {pool, t, W, NULL, n_rows, k, toks[j], x, act, out, 0, 0, 1};
        const double best = best_of(&c, 200, 0.3, NULL);
        printf(" | %2lld tok %8.1f us %6.1f GFLOP/s", (long long)toks[j], best * 1e6,
               2.0 * (double)(n_rows * k * toks[j]) / best / 1e9);
    }
    printf("\n");
    free(W), free(x), free(act), free(out);
}

int main(int argc, char **argv)
{
    int nth = argc > 1 ? atoi(argv[1]) : 2;
    const char *types = argc > 2 ? argv[2] : "all";
    int blas = argc > 3 && !strcmp(argv[3], "blas");
    int stream = argc > 3 && !strcmp(argv[3], "stream");
    int moe = argc > 3 && !strcmp(argv[3], "moe");
    tpool_t *pool = NULL;
    if (tpool_create(nth, &pool, NULL) != LF_OK) {
        fprintf(stderr, "bad thread count\n");
        return 1;
    }
    if (nth == 1)
        bench_clock = CLOCK_THREAD_CPUTIME_ID;
#ifdef HAVE_OPENBLAS
    openblas_set_num_threads(nth); /* same thread count as ours */
#else
    if (blas) {
        fprintf(stderr, "bench_kernels: built without OpenBLAS (install libopenblas-dev and reconfigure)\n");
        return 2;
    }
#endif
    printf("isa %s, %d threads\n", kern_isa_name(kern_isa()), nth);
    for (size_t i = 0; i < sizeof all_types / sizeof all_types[0]; i++) {
        qtype_t t = all_types[i];
        if (strcmp(types, "all")) {
            char buf[256];
            snprintf(buf, sizeof buf, ",%s,", types);
            char key[32];
            snprintf(key, sizeof key, ",%s,", qtype_name(t));
            if (!strstr(buf, key))
                continue;
        }
        if (moe) {
            bench_moe(pool, t);
            continue;
        }
        if (stream) {
            for (int pk = 0; pk < 2; pk++) {
                bench_stream(pool, t, 32000, 768, pk);
                bench_stream(pool, t, 2048, 768, pk);
            }
            continue;
        }
        bench_one(pool, t, 768, 768, blas);
        bench_one(pool, t, 2048, 768, blas);
    }
    tpool_free(pool);
    return 0;
}
