/* kernels.c - run-time kernel selection and the matmul driver.
 *
 * The table of dot kernels is built once (first use) for the detected ISA
 * level; types without a SIMD kernel at that level use the level below,
 * ending at the scalar reference quant_vec_dot_ref.
 *
 * Matmul tiling: each thread owns a contiguous range of weight rows. Tokens
 * are taken in blocks whose activations fit in L2; within a block the rows
 * are walked in chunks of about KERN_CHUNK_W_BYTES (L1), and for each group
 * of up to KERN_NT_MAX tokens the multi-token kernel runs on every row (or
 * tile of up to KERN_NR_MAX rows) of the chunk, so a weight block is
 * decoded once per token group instead of once per token. Which tokens or rows share a group never
 * changes a result: see kernels_impl.h.
 *
 * BLAS (measured, not used): tests/bench/bench_kernels with "blas" times
 * OpenBLAS 0.3 cblas_sgemm on W dequantized to f32 against kern_matmul for
 * a 512-token prefill. On this machine (2 vCPU Cascade Lake, heavily shared
 * during the measurement, best of runs, one thread): 768x768 sgemm alone
 * 8.8-9.4 ms (~66 GFLOP/s), 11.3-12 ms with the dequantization (~51); our
 * Q8_0 VNNI tiles 12-21 ms (29-49 GFLOP/s), Q4_K 15-25 ms at the time (the
 * Q4_K / Q6_K tiles now take 3-4 ms: docs/performance.md). A cached f32
 * copy of W with sgemm was not used anyway: its (row, token) values come from f32 activations while decode
 * uses Q8 activations (prefill and decode of the same token would differ),
 * OpenBLAS picks different kernels (gemv / small-matrix / edge tiles) by
 * shape, so results depend on the batch (no batch invariance), they drift
 * from ggml's numerics (our goldens), and the f32 copy costs 4-8x the weight
 * memory. llama.cpp's BLAS build was also 1.6-2.5x slower in pp512 than
 * its own kernels on the reference machine (shared/models/BENCH-llama.cpp.md).
 */
#include "engine/kernels/kernels.h"

#include <pthread.h>
#include <stdio.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels/cpu_features.h"
#include "engine/kernels/kernels_impl.h"
#include "engine/kernels/kpack.h"
#include "engine/quant/quant.h"

/* Cache blocking of the matmul (see kern_mm_worker). */
#ifndef KERN_CHUNK_W_BYTES
#define KERN_CHUNK_W_BYTES (16 * 1024) /* weight rows walked per token group: L1 */
#endif
#ifndef KERN_BLOCK_ACT_BYTES
#define KERN_BLOCK_ACT_BYTES (256 * 1024) /* activation rows per token block: L2 */
#endif

static kern_dot_fn_t kern_tab[QTYPE_COUNT];
static kern_tile_fn_t kern_tiles[QTYPE_COUNT];
static kern_quant_fn_t kern_quant[QTYPE_COUNT]; /* by vec_dot type; NULL: quant_quantize_row */
static kern_ptile_fn_t kern_ptiles[QTYPE_COUNT]; /* packed (kpack.h) tiles; NULL: none */
static kern_isa_t kern_level;
static kern_isa_t kern_level_max;
static cpuf_t kern_features; /* what this CPU and OS let us use (cpu_features.h) */
static char kern_error[320];  /* LLM_FCGI_ISA / LLM_FCGI_CPU_DISABLE refused, or empty */
static pthread_once_t kern_once = PTHREAD_ONCE_INIT;

/* Scalar level: the reference, one token at a time. */
static void kern_dot_ref_generic(qtype_t t, int64_t n, const void *w, const void *act, size_t as, int nt,
                                 float *out, size_t os)
{
    for (int i = 0; i < nt; i++)
        out[(size_t)i * os] = quant_vec_dot_ref(t, n, w, (const uint8_t *)act + (size_t)i * as);
}

#define KERN_REF(T)                                                                          \
    static void kern_dot_ref_##T(int64_t n, const void *w, const void *act, size_t as, int nt, \
                                 float *out, size_t os)                                      \
    {                                                                                        \
        kern_dot_ref_generic(QTYPE_##T, n, w, act, as, nt, out, os);                         \
    }
KERN_REF(F32)
KERN_REF(F16)
KERN_REF(BF16)
KERN_REF(Q4_0)
KERN_REF(Q4_1)
KERN_REF(Q5_0)
KERN_REF(Q5_1)
KERN_REF(Q8_0)
KERN_REF(Q2_K)
KERN_REF(Q3_K)
KERN_REF(Q4_K)
KERN_REF(Q5_K)
KERN_REF(Q6_K)
KERN_REF(IQ4_NL)
KERN_REF(IQ4_XS)
KERN_REF(MXFP4)

static void kern_fill_scalar(kern_dot_fn_t tab[QTYPE_COUNT])
{
    memset(tab, 0, sizeof(kern_dot_fn_t) * QTYPE_COUNT);
    tab[QTYPE_F32] = kern_dot_ref_F32;
    tab[QTYPE_F16] = kern_dot_ref_F16;
    tab[QTYPE_BF16] = kern_dot_ref_BF16;
    tab[QTYPE_Q4_0] = kern_dot_ref_Q4_0;
    tab[QTYPE_Q4_1] = kern_dot_ref_Q4_1;
    tab[QTYPE_Q5_0] = kern_dot_ref_Q5_0;
    tab[QTYPE_Q5_1] = kern_dot_ref_Q5_1;
    tab[QTYPE_Q8_0] = kern_dot_ref_Q8_0;
    tab[QTYPE_Q2_K] = kern_dot_ref_Q2_K;
    tab[QTYPE_Q3_K] = kern_dot_ref_Q3_K;
    tab[QTYPE_Q4_K] = kern_dot_ref_Q4_K;
    tab[QTYPE_Q5_K] = kern_dot_ref_Q5_K;
    tab[QTYPE_Q6_K] = kern_dot_ref_Q6_K;
    tab[QTYPE_IQ4_NL] = kern_dot_ref_IQ4_NL;
    tab[QTYPE_IQ4_XS] = kern_dot_ref_IQ4_XS;
    tab[QTYPE_MXFP4] = kern_dot_ref_MXFP4;
}

static char kern_reason[384];

/* The CPU's vendor and family, for the record of why a level was chosen. */
static void kern_cpu_name(char *buf, size_t n)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    char vendor[13] = {0};
    if (!__get_cpuid(0, &a, &b, &c, &d)) {
        snprintf(buf, n, "x86");
        return;
    }
    memcpy(vendor, &b, 4), memcpy(vendor + 4, &d, 4), memcpy(vendor + 8, &c, 4);
    __get_cpuid(1, &a, &b, &c, &d);
    unsigned fam = (a >> 8) & 0xF, model = (a >> 4) & 0xF;
    if (fam == 0xF)
        fam += (a >> 20) & 0xFF;
    if (fam == 0x6 || fam >= 0xF)
        model |= ((a >> 16) & 0xF) << 4;
    const char *uarch = "";
    if (!strcmp(vendor, "AuthenticAMD"))
        uarch = fam == 0x19 ? (model >= 0x10 && model < 0x20) || model >= 0x60 ? " (Zen 4)" : " (Zen 3)"
              : fam == 0x1A ? " (Zen 5)" : fam == 0x17 ? " (Zen/Zen 2)" : "";
    snprintf(buf, n, "%s family %#x model %#x%s", vendor, fam, model, uarch);
#else
    snprintf(buf, n, "non-x86");
#endif
}

static void kern_build(kern_isa_t isa)
{
    kern_dot_fn_t tab[QTYPE_COUNT];
    kern_tile_fn_t tiles[QTYPE_COUNT] = {0};
    kern_quant_fn_t quant[QTYPE_COUNT] = {0};
    kern_ptile_fn_t ptiles[QTYPE_COUNT] = {0};
    kern_fill_scalar(tab);
#if defined(__x86_64__) || defined(__i386__)
    /* The AVX-VNNI and AVX-512 levels each build on the AVX2 level, never
     * on each other: neither's CPUs need have the other's features. */
    if (isa >= KERN_ISA_AVX2) {
        kern_fill_avx2(tab, tiles, quant);
        kern_fill_packed_avx2(ptiles);
    }
    if (isa == KERN_ISA_AVXVNNI)
        kern_fill_packed_avxvnni(ptiles);
    if (isa == KERN_ISA_AVX512) {
        kern_fill_avx512(tab, tiles, quant);
        kern_fill_packed_avx512(ptiles);
    }
#endif
    memcpy(kern_tab, tab, sizeof tab);
    memcpy(kern_tiles, tiles, sizeof tiles);
    memcpy(kern_quant, quant, sizeof quant);
    memcpy(kern_ptiles, ptiles, sizeof ptiles);
    kern_level = isa;
}

/* The level LLM_FCGI_ISA names, or -1 (unknown name). */
static int kern_isa_parse(const char *name)
{
    for (int l = KERN_ISA_SCALAR; l <= KERN_ISA_AVX512; l++)
        if (!strcmp(name, kern_isa_name((kern_isa_t)l)))
            return l;
    return -1;
}

static void kern_init(void)
{
    char cpu[96], miss[160], known[160];
    kern_cpu_name(cpu, sizeof cpu);
    const char *off = getenv("LLM_FCGI_CPU_DISABLE");
    cpuf_t off_set = 0;
    if (off && *off && cpuf_parse(off, &off_set, miss, sizeof miss) != 0)
        snprintf(kern_error, sizeof kern_error, "LLM_FCGI_CPU_DISABLE: %s (known: %s)", miss,
                 cpuf_format(CPUF_ALL, known, sizeof known));
    kern_features = cpuf_detect();
    kern_level_max = (kern_isa_t)cpuf_best_level(kern_features);
    kern_isa_t isa = kern_level_max;
    const char *env = getenv("LLM_FCGI_ISA");
    if (env && *env) {
        const int want = kern_isa_parse(env);
        if (want < 0)
            snprintf(kern_error, sizeof kern_error,
                     "LLM_FCGI_ISA=%.32s is not a kernel level (scalar, avx2, avxvnni or avx512)", env);
        else if (cpuf_missing(want, kern_features))
            snprintf(kern_error, sizeof kern_error,
                     "LLM_FCGI_ISA=%s: this CPU (%s) cannot run that level: it lacks %s", env, cpu,
                     cpuf_format(cpuf_missing(want, kern_features), miss, sizeof miss));
        else
            isa = (kern_isa_t)want;
    }
    char off_note[200] = "";
    const cpuf_t taken = cpuf_detect_raw() & ~kern_features;
    if (taken)
        snprintf(off_note, sizeof off_note, "; LLM_FCGI_CPU_DISABLE takes away %s",
                 cpuf_format(taken, miss, sizeof miss));
    if (isa != kern_level_max)
        snprintf(kern_reason, sizeof kern_reason, "%s; LLM_FCGI_ISA=%s selects it instead of %s%s", cpu, env,
                 kern_isa_name(kern_level_max), off_note);
    else
        snprintf(kern_reason, sizeof kern_reason, "%s; the best level it has%s%s", cpu,
                 isa == KERN_ISA_AVX512 ? " (VNNI tiles, packed decode layouts)"
                 : isa == KERN_ISA_AVXVNNI ? " (packed decode layouts, AVX-VNNI sums)"
                 : isa == KERN_ISA_AVX2 ? " (packed decode layouts)" : "", off_note);
    kern_build(isa);
}

kern_isa_t kern_isa(void)
{
    pthread_once(&kern_once, kern_init);
    return kern_level;
}

const char *kern_isa_reason(void)
{
    pthread_once(&kern_once, kern_init);
    return kern_reason;
}

kern_isa_t kern_isa_max(void)
{
    pthread_once(&kern_once, kern_init);
    return kern_level_max;
}

bool kern_isa_runnable(kern_isa_t isa)
{
    pthread_once(&kern_once, kern_init);
    return isa >= KERN_ISA_SCALAR && isa <= KERN_ISA_AVX512 && !cpuf_missing((int)isa, kern_features);
}

const char *kern_isa_missing(kern_isa_t isa, char *buf, size_t n)
{
    pthread_once(&kern_once, kern_init);
    return cpuf_format(cpuf_missing((int)isa, kern_features), buf, n);
}

const char *kern_isa_error(void)
{
    pthread_once(&kern_once, kern_init);
    return kern_error[0] ? kern_error : NULL;
}

kern_isa_t kern_isa_set(kern_isa_t isa)
{
    pthread_once(&kern_once, kern_init);
    if (isa > KERN_ISA_AVX512)
        isa = KERN_ISA_AVX512;
    while (isa > KERN_ISA_SCALAR && !kern_isa_runnable(isa))
        isa = (kern_isa_t)(isa - 1);
    if (isa < KERN_ISA_SCALAR)
        isa = KERN_ISA_SCALAR;
    kern_build(isa);
    return isa;
}

const char *kern_isa_name(kern_isa_t isa)
{
    switch (isa) {
    case KERN_ISA_SCALAR: return "scalar";
    case KERN_ISA_AVX2: return "avx2";
    case KERN_ISA_AVXVNNI: return "avxvnni";
    case KERN_ISA_AVX512: return "avx512";
    }
    return "unknown";
}

bool kern_supports(qtype_t t)
{
    pthread_once(&kern_once, kern_init);
    return (unsigned)t < QTYPE_COUNT && kern_tab[t] != NULL;
}

float kern_vec_dot(qtype_t wtype, int64_t n, const void *w_row, const void *act_row)
{
    pthread_once(&kern_once, kern_init);
    float r;
    kern_tab[wtype](n, w_row, act_row, 0, 1, &r, 0);
    return r;
}

size_t kern_pack_size(qtype_t wtype, int64_t n_rows, int64_t k)
{
    pthread_once(&kern_once, kern_init);
    if ((unsigned)wtype >= QTYPE_COUNT || !kern_ptiles[wtype])
        return 0;
    return kpack_size(wtype, n_rows, k);
}

void kern_pack(qtype_t wtype, const void *W, int64_t n_rows, int64_t k, void *dst)
{
    kpack_pack(wtype, W, n_rows, k, dst);
}

size_t kern_act_size(qtype_t wtype, int64_t k, int64_t n_tok)
{
    if (!kern_supports(wtype) || n_tok < 0)
        return 0;
    const qtype_info_t *wi = qtype_info(wtype);
    if (k % wi->block_size)
        return 0;
    return qtype_row_size(wi->vec_dot_type, k) * (size_t)n_tok;
}

void kern_quantize_act(qtype_t wtype, const float *x, int64_t k, int64_t n_tok, void *act)
{
    pthread_once(&kern_once, kern_init);
    qtype_t vt = qtype_info(wtype)->vec_dot_type;
    size_t rs = qtype_row_size(vt, k);
    kern_quant_fn_t q = kern_quant[vt];
    for (int64_t t = 0; t < n_tok; t++) {
        if (q)
            q(x + t * k, (uint8_t *)act + (size_t)t * rs, k);
        else
            quant_quantize_row(vt, x + t * k, (uint8_t *)act + (size_t)t * rs, k);
    }
}

typedef struct {
    qtype_t wtype;
    const float *x;
    int64_t k, n_tok;
    void *act;
} kern_qa_job_t;

static void kern_qa_worker(void *arg, int ith, int nth)
{
    const kern_qa_job_t *j = arg;
    int64_t t0 = j->n_tok * ith / nth, t1 = j->n_tok * (ith + 1) / nth;
    size_t rs = qtype_row_size(qtype_info(j->wtype)->vec_dot_type, j->k);
    kern_quantize_act(j->wtype, j->x + t0 * j->k, j->k, t1 - t0, (uint8_t *)j->act + (size_t)t0 * rs);
}

void kern_quantize_act_pool(tpool_t *pool, qtype_t wtype, const float *x, int64_t k, int64_t n_tok,
                            void *act)
{
    kern_qa_job_t job = {wtype, x, k, n_tok, act};
    if (n_tok < 2 * tpool_size(pool))
        kern_quantize_act(wtype, x, k, n_tok, act);
    else
        tpool_run(pool, kern_qa_worker, &job);
}

typedef struct {
    kern_dot_fn_t fn;
    kern_tile_fn_t tile; /* NULL: one row at a time with fn */
    kern_ptile_fn_t ptile; /* non-NULL: Wp is packed, groups gstride bytes apart */
    const uint8_t *Wp;
    size_t gstride;
    const uint8_t *W;
    size_t w_stride;
    int64_t n_rows, k;
    const uint8_t *act;
    size_t act_stride;
    int64_t n_tok;
    float *out;
} kern_mm_job_t;

/* Token rows per block whose activations fit in L2. */
static int64_t kern_token_block(const kern_mm_job_t *j)
{
    int64_t tblock = (int64_t)(KERN_BLOCK_ACT_BYTES / (j->act_stride ? j->act_stride : 1));
    return tblock < KERN_NT_MAX ? KERN_NT_MAX : tblock / KERN_NT_MAX * KERN_NT_MAX;
}

/* Rows [r0, r1) of a packed job: group by group (a group's weights stay
 * in L1/L2 while every token group of the block runs on it). */
static void kern_mm_range_packed(const kern_mm_job_t *j, int64_t r0, int64_t r1)
{
    const int64_t tblock = kern_token_block(j);
    for (int64_t tb = 0; tb < j->n_tok; tb += tblock) {
        int64_t tbe = tb + tblock < j->n_tok ? tb + tblock : j->n_tok;
        for (int64_t g = r0 / KPACK_ROWS; g * KPACK_ROWS < r1; g++) {
            int64_t base = g * KPACK_ROWS;
            int lo = r0 > base ? (int)(r0 - base) : 0;
            int hi = r1 - base < KPACK_ROWS ? (int)(r1 - base) : KPACK_ROWS;
            unsigned keep = ((1u << hi) - 1) & ~((1u << lo) - 1);
            for (int64_t t0 = tb; t0 < tbe; t0 += KERN_NT_MAX) {
                int nt = tbe - t0 < KERN_NT_MAX ? (int)(tbe - t0) : KERN_NT_MAX;
                j->ptile(j->k, j->Wp + (size_t)g * j->gstride, j->act + (size_t)t0 * j->act_stride, j->act_stride,
                         nt, j->out + t0 * j->n_rows + base, (size_t)j->n_rows, keep);
            }
        }
    }
}

/* Rows [r0, r1) of job j, all its tokens, with the cache blocking. */
static void kern_mm_range(const kern_mm_job_t *j, int64_t r0, int64_t r1)
{
    if (j->ptile) {
        kern_mm_range_packed(j, r0, r1);
        return;
    }
    int64_t chunk = (int64_t)(KERN_CHUNK_W_BYTES / (j->w_stride ? j->w_stride : 1));
    chunk = chunk < KERN_NR_MAX ? KERN_NR_MAX : chunk / KERN_NR_MAX * KERN_NR_MAX;
    const int64_t tblock = kern_token_block(j);
    for (int64_t tb = 0; tb < j->n_tok; tb += tblock) {
        int64_t tbe = tb + tblock < j->n_tok ? tb + tblock : j->n_tok;
        for (int64_t rc = r0; rc < r1; rc += chunk) {
            int64_t rce = rc + chunk < r1 ? rc + chunk : r1;
            for (int64_t t0 = tb; t0 < tbe; t0 += KERN_NT_MAX) {
                int nt = tbe - t0 < KERN_NT_MAX ? (int)(tbe - t0) : KERN_NT_MAX;
                const uint8_t *a = j->act + (size_t)t0 * j->act_stride;
                float *o = j->out + t0 * j->n_rows;
                if (j->tile) {
                    for (int64_t r = rc; r < rce; r += KERN_NR_MAX) {
                        int nr = rce - r < KERN_NR_MAX ? (int)(rce - r) : KERN_NR_MAX;
                        j->tile(j->k, j->W + (size_t)r * j->w_stride, j->w_stride, nr, a, j->act_stride,
                                nt, o + r, (size_t)j->n_rows);
                    }
                } else {
                    for (int64_t r = rc; r < rce; r++)
                        j->fn(j->k, j->W + (size_t)r * j->w_stride, a, j->act_stride, nt, o + r,
                              (size_t)j->n_rows);
                }
            }
        }
    }
}

/* Rows are handed out in chunks from a shared counter rather than as one
 * fixed range per thread: on a shared host one vCPU is often descheduled or
 * slowed (steal), and a static split then makes the other thread wait at
 * the end of every product. A row's value does not depend on which thread
 * computes it or on the chunk it falls in, so results are unchanged. */
typedef struct {
    atomic_llong next;   /* next chunk to hand out */
    int64_t chunk_rows;  /* rows per chunk (a multiple of KERN_NR_MAX) */
    int64_t total_rows;
} kern_chunks_t;

static void kern_chunks_init(kern_chunks_t *c, int64_t total_rows, int nth)
{
    /* about 8 chunks per thread, at least 64 rows each */
    int64_t cr = total_rows / (8 * (int64_t)(nth > 0 ? nth : 1));
    cr = (cr + KERN_NR_MAX - 1) / KERN_NR_MAX * KERN_NR_MAX;
    c->chunk_rows = cr < 64 ? 64 : cr;
    c->total_rows = total_rows;
    atomic_init(&c->next, 0);
}

/* The next chunk [*r0, *r1) of rows; false when none is left. */
static bool kern_chunks_take(kern_chunks_t *c, int64_t *r0, int64_t *r1)
{
    int64_t i = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed);
    *r0 = i * c->chunk_rows;
    if (*r0 >= c->total_rows)
        return false;
    *r1 = *r0 + c->chunk_rows < c->total_rows ? *r0 + c->chunk_rows : c->total_rows;
    return true;
}

typedef struct {
    kern_mm_job_t job;
    kern_chunks_t chunks;
} kern_mm_run_t;

static void kern_mm_worker(void *arg, int ith, int nth)
{
    (void)ith;
    (void)nth;
    kern_mm_run_t *run = arg;
    int64_t r0, r1;
    while (kern_chunks_take(&run->chunks, &r0, &r1))
        kern_mm_range(&run->job, r0, r1);
}

static void kern_mm_job_init(kern_mm_job_t *job, qtype_t wtype, const void *W, const void *Wp, int64_t n_rows,
                             int64_t k, const void *act, int64_t n_tok, float *out)
{
    *job = (kern_mm_job_t){
        .fn = kern_tab[wtype],
        .tile = kern_tiles[wtype],
        .ptile = Wp ? kern_ptiles[wtype] : NULL,
        .Wp = Wp,
        .gstride = Wp ? kpack_group_bytes(wtype, k) : 0,
        .W = W,
        .w_stride = qtype_row_size(wtype, k),
        .n_rows = n_rows,
        .k = k,
        .act = act,
        .act_stride = qtype_row_size(qtype_info(wtype)->vec_dot_type, k),
        .n_tok = n_tok,
        .out = out,
    };
}

/* No BLAS path: see the file comment. */
void kern_matmul(tpool_t *pool, qtype_t wtype, const void *W, int64_t n_rows, int64_t k,
                 const void *act, int64_t n_tok, float *out)
{
    pthread_once(&kern_once, kern_init);
    if (n_rows <= 0 || n_tok <= 0)
        return;
    kern_mm_run_t run;
    kern_mm_job_init(&run.job, wtype, W, NULL, n_rows, k, act, n_tok, out);
    int nth = tpool_size(pool);
    if (nth > 1 && n_rows * n_tok * k < 32768) { /* a few microseconds: not worth a wake-up */
        kern_mm_range(&run.job, 0, n_rows);
        return;
    }
    kern_chunks_init(&run.chunks, n_rows, nth);
    tpool_run(pool, kern_mm_worker, &run);
}

/* Several products in one pool run: the rows of all jobs, concatenated in
 * order, are handed out in chunks (a chunk may span two jobs). */
typedef struct {
    kern_mm_job_t job[KERN_MULTI_MAX];
    int n;
    int64_t total_rows;
    kern_chunks_t chunks;
} kern_multi_t;

/* Global rows [g0, g1) of the concatenation. */
static void kern_multi_range(const kern_multi_t *m, int64_t g0, int64_t g1)
{
    int64_t base = 0;
    for (int i = 0; i < m->n && base < g1; i++) {
        const kern_mm_job_t *j = &m->job[i];
        int64_t r0 = g0 - base, r1 = g1 - base;
        r0 = r0 < 0 ? 0 : r0;
        r1 = r1 > j->n_rows ? j->n_rows : r1;
        if (r0 < r1)
            kern_mm_range(j, r0, r1);
        base += j->n_rows;
    }
}

static void kern_multi_worker(void *arg, int ith, int nth)
{
    (void)ith;
    (void)nth;
    kern_multi_t *m = arg;
    int64_t g0, g1;
    while (kern_chunks_take(&m->chunks, &g0, &g1))
        kern_multi_range(m, g0, g1);
}

void kern_matmul_multi(tpool_t *pool, int n, const kern_mm_t *jobs, int64_t n_tok)
{
    pthread_once(&kern_once, kern_init);
    while (n > 0 && n_tok > 0) {
        int c = n < KERN_MULTI_MAX ? n : KERN_MULTI_MAX;
        kern_multi_t m = {.n = 0, .total_rows = 0};
        int64_t work = 0;
        for (int i = 0; i < c; i++) {
            if (jobs[i].n_rows <= 0)
                continue;
            kern_mm_job_init(&m.job[m.n++], jobs[i].wtype, jobs[i].W, jobs[i].Wp, jobs[i].n_rows, jobs[i].k,
                             jobs[i].act, n_tok, jobs[i].out);
            m.total_rows += jobs[i].n_rows;
            work += jobs[i].n_rows * n_tok * jobs[i].k;
        }
        if (m.n) {
            if (tpool_size(pool) > 1 && work < 32768) { /* as kern_matmul */
                kern_multi_range(&m, 0, m.total_rows);
            } else {
                kern_chunks_init(&m.chunks, m.total_rows, tpool_size(pool));
                tpool_run(pool, kern_multi_worker, &m);
            }
        }
        jobs += c;
        n -= c;
    }
}

void kern_linear_multi(tpool_t *pool, int n, kern_mm_t *jobs, const float *x, int64_t n_tok, void *act)
{
    pthread_once(&kern_once, kern_init);
    /* one pass per group of consecutive jobs sharing a vec_dot_type (the
     * usual case: all of them), each group quantizing x once */
    int i = 0;
    while (i < n) {
        qtype_t vt = qtype_info(jobs[i].wtype)->vec_dot_type;
        int e = i + 1;
        while (e < n && qtype_info(jobs[e].wtype)->vec_dot_type == vt)
            e++;
        kern_quantize_act_pool(pool, jobs[i].wtype, x, jobs[i].k, n_tok, act);
        for (int g = i; g < e; g++)
            jobs[g].act = act;
        kern_matmul_multi(pool, e - i, jobs + i, n_tok);
        i = e;
    }
}
