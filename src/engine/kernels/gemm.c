/* gemm.c - the blocked products of gemm.h: the loops around the
 * micro-kernels of gemm_impl.h (the usual three-level blocking).
 *
 * The work is cut into units of GEMM_UC output columns (weight rows, whole
 * tiles of 2 vw) times a range of token rows (all of them, unless there are
 * too few column units to go round), and the pool's threads take units
 * from a shared counter: a thread that the OS puts aside on a busy machine
 * holds up one unit, not a fixed half of the product. Within a unit, for
 * each block of GEMM_KC of k, the unit's weights are unpacked once into one
 * panel per tile (kc rows of 2 vw floats: the weights of 2 vw columns side
 * by side, F16 converted, quantized blocks expanded; an L2's worth), then
 * the rows are swept in blocks of GEMM_MC, one mr x 2 vw register tile at a
 * time, each panel staying in L1 while the rows pass; the activations were
 * prepared (gemm_prepare: rounded as ggml rounds them, and interleaved mr
 * rows at a time, so a tile reads one stream). The first k block stores
 * (or adds, accumulating), later ones add; the last adds the bias, then
 * the epilogue's post runs on the finished rows. The last columns go
 * through a scratch tile. An element's sum is over the k blocks in order,
 * each in the kernel's order: the same whatever the threads, units or
 * batch.
 */
#include "engine/kernels/gemm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "engine/kernels/gemm_impl.h"
#include "engine/kernels/kernels.h"
#include "engine/quant/fp16.h"
#include "engine/quant/quant.h"

#ifndef GEMM_KC
#define GEMM_KC 256  /* k per block: a multiple of every block size (QK_K) */
#endif
#ifndef GEMM_MC
#define GEMM_MC 168  /* token rows per block: a multiple of every mr (4, 6, 12) */
#endif
#ifndef GEMM_UC
#define GEMM_UC 256  /* columns per unit of work: a multiple of every 2 vw */
#endif
#define ROWS_CHUNK 48 /* activation rows per unit of gemm_prepare: a multiple of every mr */
#define MR_ALL 12     /* a multiple of every mr: prepared activations are padded to it */

/* ---- implementation selection ---- */

enum { IMPL_SCALAR, IMPL_AVX2, IMPL_AVX2X2, IMPL_AVX512, IMPL_N };
static gemm_impl_t impls[IMPL_N];
static bool impl_ok[IMPL_N];
static int impl_forced = -1;
static pthread_once_t impl_once = PTHREAD_ONCE_INIT;

static void impl_init(void)
{
    gemm_impl_scalar(&impls[IMPL_SCALAR]);
    impl_ok[IMPL_SCALAR] = true;
#if defined(__x86_64__) || defined(__i386__)
    if (kern_isa_runnable(KERN_ISA_AVX2)) {
        gemm_impl_avx2(&impls[IMPL_AVX2]);
        gemm_impl_avx2x2(&impls[IMPL_AVX2X2]);
        impl_ok[IMPL_AVX2] = impl_ok[IMPL_AVX2X2] = true;
    }
    if (kern_isa_runnable(KERN_ISA_AVX512)) {
        gemm_impl_avx512(&impls[IMPL_AVX512]);
        impl_ok[IMPL_AVX512] = true;
    }
#endif
}

const gemm_impl_t *gemm_impl(void)
{
    pthread_once(&impl_once, impl_init);
    if (impl_forced >= 0)
        return &impls[impl_forced];
    switch (kern_isa()) {
    case KERN_ISA_AVX512:
        if (impl_ok[IMPL_AVX512])
            return &impls[IMPL_AVX512];
        /* fall through */
    case KERN_ISA_AVX2:
    case KERN_ISA_AVXVNNI:
        if (impl_ok[IMPL_AVX2])
            return &impls[IMPL_AVX2];
        /* fall through */
    default:
        return &impls[IMPL_SCALAR];
    }
}

bool gemm_impl_select(const char *name)
{
    pthread_once(&impl_once, impl_init);
    if (!strcmp(name, "auto")) {
        impl_forced = -1;
        return true;
    }
    static const char *const names[IMPL_N] = {"scalar", "avx2", "avx2x2", "avx512"};
    for (int i = 0; i < IMPL_N; i++)
        if (!strcmp(name, names[i])) {
            if (!impl_ok[i])
                return false;
            impl_forced = i;
            return true;
        }
    return false;
}

const char *gemm_impl_name(void) { return gemm_impl()->name; }

/* ---- scratch ---- */

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

/* per thread: the unpacked weights, a C tile, one weight row's block of
 * floats, one activation row in its vec_dot_type and as floats */
static size_t thread_bytes(int64_t k_max)
{
    return up64((size_t)GEMM_KC * GEMM_UC * sizeof(float)) +
           up64((size_t)GEMM_MR_MAX * 2 * GEMM_VW_MAX * sizeof(float)) + up64((size_t)GEMM_KC * sizeof(float)) +
           up64(2 * (size_t)(k_max > 0 ? k_max : 1) * sizeof(float) + 128);
}

size_t gemm_scratch_size(int n_threads, int64_t k_max)
{
    return 64 + (size_t)(n_threads > 0 ? n_threads : 1) * thread_bytes(k_max);
}

typedef struct {
    float *b, *c_tile, *row;
    void *act;
} thread_mem_t;

static thread_mem_t thread_mem(void *scratch, int ith, int64_t k_max)
{
    uint8_t *p = (uint8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63) + (size_t)ith * thread_bytes(k_max);
    thread_mem_t m;
    m.b = (float *)p;
    p += up64((size_t)GEMM_KC * GEMM_UC * sizeof(float));
    m.c_tile = (float *)p;
    p += up64((size_t)GEMM_MR_MAX * 2 * GEMM_VW_MAX * sizeof(float));
    m.row = (float *)p;
    p += up64((size_t)GEMM_KC * sizeof(float));
    m.act = p;
    return m;
}

bool gemm_supports(qtype_t wtype)
{
    const qtype_info_t *qi = qtype_info(wtype);
    if (!qi || !qi->supported)
        return false;
    const qtype_t vt = qi->vec_dot_type;
    if (!quant_can_dequantize(wtype) || !kern_supports(wtype))
        return false;
    return vt == QTYPE_F32 || quant_can_dequantize(vt);
}

/* ---- activations ---- */

size_t gemm_act_floats(int64_t n, int64_t k) { return (size_t)((n + MR_ALL - 1) / MR_ALL * MR_ALL) * (size_t)k; }

float gemm_act_at(const float *act, int64_t k, int64_t j, int64_t i)
{
    const int mr = gemm_impl()->mr;
    return act[j / mr * mr * k + i * mr + j % mr];
}

typedef struct {
    const gemm_impl_t *im;
    qtype_t wtype, vt;
    const float *x;
    float *act;
    int64_t ldx, n, k;
    void *scratch;
    atomic_llong next; /* next chunk of rows */
} prep_arg_t;

static void prep_worker(void *p, int ith, int nth)
{
    prep_arg_t *a = p;
    (void)nth;
    const int mr = a->im->mr;
    const int64_t k = a->k;
    thread_mem_t m = thread_mem(a->scratch, ith, k);
    float *row = (float *)m.act + (k + 15) / 16 * 16; /* after one vec_dot row (at most 4 k bytes) */
    const int64_t n_pad = (a->n + MR_ALL - 1) / MR_ALL * MR_ALL;
    for (int64_t r0; (r0 = atomic_fetch_add(&a->next, ROWS_CHUNK)) < n_pad;) {
        const int64_t r1 = r0 + ROWS_CHUNK < n_pad ? r0 + ROWS_CHUNK : n_pad;
        for (int64_t r = r0; r < r1; r++) {
            /* row r's values, rounded, then scattered into its tile */
            const float *y = row;
            if (r >= a->n) {
                memset(row, 0, (size_t)k * sizeof(float));
            } else if (a->vt == QTYPE_F32) {
                y = a->x + r * a->ldx;
            } else if (a->vt == QTYPE_F16) {
                a->im->round_f16(a->x + r * a->ldx, row, k);
            } else {
                kern_quantize_act(a->wtype, a->x + r * a->ldx, k, 1, m.act);
                quant_dequantize_row(a->vt, m.act, row, k);
            }
            float *dst = a->act + r / mr * mr * k + r % mr;
            for (int64_t i = 0; i < k; i++)
                dst[i * mr] = y[i];
        }
    }
}

void gemm_prepare(tpool_t *pool, qtype_t wtype, const float *x, int64_t ldx, int64_t n, int64_t k, float *act,
                  void *scratch)
{
    prep_arg_t a = {gemm_impl(), wtype, qtype_info(wtype)->vec_dot_type, x, act, ldx, n, k, scratch, 0};
    tpool_run(n > ROWS_CHUNK ? pool : NULL, prep_worker, &a);
}

/* ---- the product ---- */

typedef struct {
    const gemm_impl_t *im;
    qtype_t wtype;
    const uint8_t *W;
    size_t row_bytes;
    int64_t n_out, k, n_tok, ldc;
    const float *act, *bias;
    bool accumulate;
    void (*post)(float *y, int64_t n);
    float *out;
    void *scratch;
    int64_t row_parts, units;
    atomic_llong next; /* next unit */
} run_arg_t;

/* panel p (2 vw columns from col0) of the block [pc, pc + kc): kc rows of
 * 2 vw floats, columns past n_out zero */
static void unpack_panel(const run_arg_t *g, thread_mem_t *m, int64_t col0, int64_t pc, int64_t kc, float *panel)
{
    const int nr = 2 * g->im->vw;
    for (int c = 0; c < nr; c++) {
        const int64_t col = col0 + c;
        if (col >= g->n_out) {
            for (int64_t j = 0; j < kc; j++)
                panel[j * nr + c] = 0.0f;
            continue;
        }
        const uint8_t *wr = g->W + (size_t)col * g->row_bytes;
        const float *src;
        switch (g->wtype) {
        case QTYPE_F32: src = (const float *)(const void *)wr + pc; break;
        case QTYPE_F16:
            g->im->f16_to_f32((const uint16_t *)(const void *)wr + pc, m->row, kc);
            src = m->row;
            break;
        default:
            quant_dequantize_row(g->wtype, wr + qtype_row_size(g->wtype, pc), m->row, kc);
            src = m->row;
            break;
        }
        for (int64_t j = 0; j < kc; j++)
            panel[j * nr + c] = src[j];
    }
}

/* one unit: columns [c0, c1) (c0 a multiple of 2 vw; the last tile may be
 * partial) of rows [r0, r1) (r0 a multiple of mr) */
static void run_unit(const run_arg_t *g, thread_mem_t *m, int64_t c0, int64_t c1, int64_t r0, int64_t r1)
{
    const gemm_impl_t *im = g->im;
    const int mr = im->mr, nr = 2 * im->vw;
    const int64_t nc = c1 - c0;
    for (int64_t pc = 0; pc < g->k; pc += GEMM_KC) {
        const int64_t kc = g->k - pc < GEMM_KC ? g->k - pc : GEMM_KC;
        const int acc = pc > 0 || g->accumulate;
        const bool last = pc + kc == g->k;
        for (int64_t jr = 0; jr < nc; jr += nr)
            unpack_panel(g, m, c0 + jr, pc, kc, m->b + jr * kc);
        for (int64_t ic = r0; ic < r1; ic += GEMM_MC) {
            const int64_t mc = r1 - ic < GEMM_MC ? r1 - ic : GEMM_MC;
            for (int64_t jr = 0; jr < nc; jr += nr) {
                const int64_t col = c0 + jr;
                const float *panel = m->b + jr * kc;
                const int cols = g->n_out - col < nr ? (int)(g->n_out - col) : nr;
                for (int64_t ir = 0; ir < mc; ir += mr) {
                    const int64_t row = ic + ir;
                    const int rows = mc - ir < mr ? (int)(mc - ir) : mr;
                    const float *a = g->act + row * g->k + pc * mr; /* the tile's block: kc x mr */
                    float *c = g->out + row * g->ldc + col;
                    if (rows == mr && cols == nr) {
                        im->packed(kc, a, panel, c, g->ldc, acc, last && g->bias ? g->bias + col : NULL);
                    } else {
                        im->packed(kc, a, panel, m->c_tile, nr, 0, NULL);
                        for (int r = 0; r < rows; r++)
                            for (int cc = 0; cc < cols; cc++) {
                                /* the full tile's order: (sum + bias) + what was there */
                                float v = m->c_tile[r * nr + cc];
                                if (last && g->bias)
                                    v += g->bias[col + cc];
                                if (acc)
                                    v += c[r * g->ldc + cc];
                                c[r * g->ldc + cc] = v;
                            }
                    }
                    if (last && g->post)
                        for (int r = 0; r < rows; r++)
                            g->post(c + r * g->ldc, cols);
                }
            }
        }
    }
}

static void run_worker(void *p, int ith, int nth)
{
    run_arg_t *g = p;
    (void)nth;
    thread_mem_t m = thread_mem(g->scratch, ith, g->k);
    for (int64_t u; (u = atomic_fetch_add(&g->next, 1)) < g->units;) {
        const int64_t cu = u / g->row_parts, ru = u % g->row_parts;
        const int64_t c0 = cu * GEMM_UC, c1 = c0 + GEMM_UC < g->n_out ? c0 + GEMM_UC : g->n_out;
        /* whole row blocks per part (GEMM_MC is a multiple of mr) */
        const int64_t blocks = (g->n_tok + GEMM_MC - 1) / GEMM_MC;
        const int64_t r0 = blocks * ru / g->row_parts * GEMM_MC;
        int64_t r1 = blocks * (ru + 1) / g->row_parts * GEMM_MC;
        r1 = r1 < g->n_tok ? r1 : g->n_tok;
        if (r1 > r0)
            run_unit(g, &m, c0, c1, r0, r1);
    }
}

void gemm_run(tpool_t *pool, qtype_t wtype, const void *W, int64_t n_out, int64_t k, const float *act,
              int64_t n_tok, float *out, int64_t ldc, const gemm_epi_t *epi, void *scratch)
{
    if (n_out <= 0 || n_tok <= 0)
        return;
    const gemm_epi_t none = {0};
    if (!epi)
        epi = &none;
    run_arg_t g = {gemm_impl(), wtype, W, qtype_row_size(wtype, k), n_out, k, n_tok, ldc, act, epi->bias,
                   epi->accumulate, epi->post, out, scratch, 1, 0, 0};
    if (k <= 0) {
        for (int64_t t = 0; t < n_tok; t++) {
            for (int64_t r = 0; r < n_out; r++)
                out[t * ldc + r] = (epi->accumulate ? out[t * ldc + r] : 0.0f) + (epi->bias ? epi->bias[r] : 0.0f);
            if (epi->post)
                epi->post(out + t * ldc, n_out);
        }
        return;
    }
    /* enough units that a slow thread holds up little: split the rows too
     * when the columns make fewer than 4 units a thread */
    const int nth = tpool_size(pool);
    const int64_t col_units = (n_out + GEMM_UC - 1) / GEMM_UC, blocks = (n_tok + GEMM_MC - 1) / GEMM_MC;
    if (col_units < 4 * nth)
        g.row_parts = (4 * nth + col_units - 1) / col_units;
    g.row_parts = g.row_parts < blocks ? g.row_parts : blocks;
    g.units = col_units * g.row_parts;
    tpool_run(pool, run_worker, &g);
}
