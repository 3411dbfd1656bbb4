/* kernels.c - run-time kernel selection and the matmul driver.
 *
 * The table of dot kernels is built once (first use) for the detected ISA
 * level; types without a SIMD kernel at that level use the level below,
 * ending at the scalar reference quant_vec_dot_ref.
 *
 * Matmul tiling: each thread owns a contiguous range of weight rows. It
 * walks them in chunks of KERN_ROW_CHUNK rows (they stay in L2) and, for
 * each group of up to KERN_NT_MAX tokens (their activations stay in L1),
 * runs the multi-token kernel on every row of the chunk, so a weight block
 * is decoded once per token group instead of once per token. Which tokens
 * share a group never changes a result: see kernels_impl.h.
 *
 * BLAS: cblas_sgemm on W dequantized to f32 was measured against these
 * kernels (tests/bench/bench_kernels.c, see the module report): it is not
 * used, because sgemm's blocking makes a (row, token) value depend on the
 * batch shape (batch invariance) and it was not faster here; see the note
 * near kern_matmul.
 */
#include "engine/kernels.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels_impl.h"
#include "engine/quant.h"

#define KERN_ROW_CHUNK 16

static kern_dot_fn_t kern_tab[QTYPE_COUNT];
static kern_tile_fn_t kern_tiles[QTYPE_COUNT];
static kern_isa_t kern_level;
static kern_isa_t kern_level_max;
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
}

static kern_isa_t kern_detect(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
          __builtin_cpu_supports("f16c")))
        return KERN_ISA_SCALAR;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
        return KERN_ISA_AVX512;
    return KERN_ISA_AVX2;
#else
    return KERN_ISA_SCALAR;
#endif
}

static void kern_build(kern_isa_t isa)
{
    kern_dot_fn_t tab[QTYPE_COUNT];
    kern_tile_fn_t tiles[QTYPE_COUNT] = {0};
    kern_fill_scalar(tab);
#if defined(__x86_64__) || defined(__i386__)
    if (isa >= KERN_ISA_AVX2)
        kern_fill_avx2(tab, tiles);
    if (isa >= KERN_ISA_AVX512)
        kern_fill_avx512(tab, tiles);
#endif
    memcpy(kern_tab, tab, sizeof tab);
    memcpy(kern_tiles, tiles, sizeof tiles);
    kern_level = isa;
}

static void kern_init(void)
{
    kern_level_max = kern_detect();
    kern_isa_t isa = kern_level_max;
    const char *env = getenv("LLM_FCGI_ISA");
    if (env && !strcmp(env, "scalar"))
        isa = KERN_ISA_SCALAR;
    else if (env && !strcmp(env, "avx2") && isa > KERN_ISA_AVX2)
        isa = KERN_ISA_AVX2;
    kern_build(isa);
}

kern_isa_t kern_isa(void)
{
    pthread_once(&kern_once, kern_init);
    return kern_level;
}

kern_isa_t kern_isa_max(void)
{
    pthread_once(&kern_once, kern_init);
    return kern_level_max;
}

kern_isa_t kern_isa_set(kern_isa_t isa)
{
    pthread_once(&kern_once, kern_init);
    if (isa > kern_level_max)
        isa = kern_level_max;
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
    qtype_t vt = qtype_info(wtype)->vec_dot_type;
    size_t rs = qtype_row_size(vt, k);
    for (int64_t t = 0; t < n_tok; t++)
        quant_quantize_row(vt, x + t * k, (uint8_t *)act + (size_t)t * rs, k);
}

typedef struct {
    kern_dot_fn_t fn;
    kern_tile_fn_t tile; /* NULL: one row at a time with fn */
    const uint8_t *W;
    size_t w_stride;
    int64_t n_rows, k;
    const uint8_t *act;
    size_t act_stride;
    int64_t n_tok;
    float *out;
} kern_mm_job_t;

static void kern_mm_worker(void *arg, int ith, int nth)
{
    const kern_mm_job_t *j = arg;
    int64_t r0 = j->n_rows * ith / nth, r1 = j->n_rows * (ith + 1) / nth;
    for (int64_t rc = r0; rc < r1; rc += KERN_ROW_CHUNK) {
        int64_t rce = rc + KERN_ROW_CHUNK < r1 ? rc + KERN_ROW_CHUNK : r1;
        for (int64_t t0 = 0; t0 < j->n_tok; t0 += KERN_NT_MAX) {
            int nt = j->n_tok - t0 < KERN_NT_MAX ? (int)(j->n_tok - t0) : KERN_NT_MAX;
            const uint8_t *a = j->act + (size_t)t0 * j->act_stride;
            float *o = j->out + t0 * j->n_rows;
            if (j->tile) {
                for (int64_t r = rc; r < rce; r += KERN_NR_MAX) {
                    int nr = rce - r < KERN_NR_MAX ? (int)(rce - r) : KERN_NR_MAX;
                    j->tile(j->k, j->W + (size_t)r * j->w_stride, j->w_stride, nr, a, j->act_stride, nt,
                            o + r, (size_t)j->n_rows);
                }
            } else {
                for (int64_t r = rc; r < rce; r++)
                    j->fn(j->k, j->W + (size_t)r * j->w_stride, a, j->act_stride, nt, o + r,
                          (size_t)j->n_rows);
            }
        }
    }
}

/* Not BLAS: dequantizing W and calling cblas_sgemm gives (row, token)
 * values whose summation order depends on OpenBLAS's blocking of the
 * batch, which breaks batch invariance, and measured slower than the
 * tiled int8 kernels for Q8_0/Q4_K (numbers in the kernels report). */
void kern_matmul(tpool_t *pool, qtype_t wtype, const void *W, int64_t n_rows, int64_t k,
                 const void *act, int64_t n_tok, float *out)
{
    pthread_once(&kern_once, kern_init);
    if (n_rows <= 0 || n_tok <= 0)
        return;
    kern_mm_job_t job = {
        .fn = kern_tab[wtype],
        .tile = kern_tiles[wtype],
        .W = W,
        .w_stride = qtype_row_size(wtype, k),
        .n_rows = n_rows,
        .k = k,
        .act = act,
        .act_stride = qtype_row_size(qtype_info(wtype)->vec_dot_type, k),
        .n_tok = n_tok,
        .out = out,
    };
    int nth = tpool_size(pool);
    if (nth > 1 && n_rows * n_tok * k < 4096) /* too small to be worth a wake-up */
        kern_mm_worker(&job, 0, 1);
    else
        tpool_run(pool, kern_mm_worker, &job);
}
