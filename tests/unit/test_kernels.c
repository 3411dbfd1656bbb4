/* test_kernels.c - the SIMD kernels against the scalar reference, the
 * matmul driver against per-element dot products, and batch invariance.
 *
 * For every weight type and several lengths, at every ISA level the CPU
 * has: |kern - ref| <= 1e-5 * sum |w_i a_i| (+ a tiny absolute slack); at
 * the scalar level the result must equal the reference bit for bit.
 * Random weight blocks are random bytes with sane fp16 scales (so quant
 * values cover their whole range, including -128 for Q8_0). */
#include "engine/quant/fp16.h"
#include "engine/kernels/kernels.h"
#include "engine/quant/quant.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint32_t rng_u32(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

static float rng_f(float lo, float hi)
{
    return lo + (hi - lo) * (float)(rng_u32() & 0xFFFFFF) / 16777216.0f;
}

typedef struct {
    qtype_t t;
    int f16_off[2]; /* byte offsets of fp16 scale fields in a block, -1 = none */
    int e8m0_off;   /* byte offset of an E8M0 exponent, -1 = none */
} wtype_case_t;

static const wtype_case_t wtypes[] = {
    {QTYPE_F32, {-1, -1}, -1},  {QTYPE_F16, {-1, -1}, -1},   {QTYPE_BF16, {-1, -1}, -1}, {QTYPE_Q4_0, {0, -1}, -1},
    {QTYPE_Q4_1, {0, 2}, -1},   {QTYPE_Q5_0, {0, -1}, -1},   {QTYPE_Q5_1, {0, 2}, -1},   {QTYPE_Q8_0, {0, -1}, -1},
    {QTYPE_Q2_K, {80, 82}, -1}, {QTYPE_Q3_K, {108, -1}, -1}, {QTYPE_Q4_K, {0, 2}, -1},  {QTYPE_Q5_K, {0, 2}, -1},
    {QTYPE_Q6_K, {208, -1}, -1}, {QTYPE_IQ4_NL, {0, -1}, -1}, {QTYPE_IQ4_XS, {0, -1}, -1}, {QTYPE_MXFP4, {-1, -1}, 0},
};
#define N_WTYPES (sizeof wtypes / sizeof wtypes[0])

/* Fills n_rows random weight rows of length k. */
static void fill_weights(const wtype_case_t *c, void *buf, int64_t n_rows, int64_t k)
{
    const qtype_info_t *qi = qtype_info(c->t);
    size_t rs = qtype_row_size(c->t, k);
    uint8_t *b = buf;
    if (c->t == QTYPE_F32 || c->t == QTYPE_F16 || c->t == QTYPE_BF16) {
        for (int64_t i = 0; i < n_rows * k; i++) {
            float v = rng_f(-1.0f, 1.0f);
            if (c->t == QTYPE_F32)
                ((float *)buf)[i] = v;
            else if (c->t == QTYPE_F16)
                ((uint16_t *)buf)[i] = fp16_from_fp32(v);
            else
                ((uint16_t *)buf)[i] = bf16_from_fp32(v);
        }
        return;
    }
    for (size_t i = 0; i < rs * (size_t)n_rows; i++)
        b[i] = (uint8_t)rng_u32();
    size_t nblk = rs * (size_t)n_rows / (size_t)qi->type_size;
    for (size_t i = 0; i < nblk; i++) {
        for (int j = 0; j < 2; j++)
            if (c->f16_off[j] >= 0) {
                uint16_t h = fp16_from_fp32(rng_f(0.001f, 0.05f));
                memcpy(b + i * (size_t)qi->type_size + c->f16_off[j], &h, 2);
            }
        if (c->e8m0_off >= 0) /* scales 2^-12 .. 2^-5 */
            b[i * (size_t)qi->type_size + (size_t)c->e8m0_off] = (uint8_t)(116 + rng_u32() % 8);
    }
}

static const wtype_case_t *wcase(qtype_t t)
{
    for (size_t ci = 0; ci < N_WTYPES; ci++)
        if (wtypes[ci].t == t)
            return &wtypes[ci];
    return NULL;
}

static void fill_floats(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = rng_f(-2.0f, 2.0f);
}

/* sum |w_i a_i| from the dequantized rows (the tolerance scale). */
static double abs_dot(qtype_t wt, int64_t n, const void *w, const void *act, float *tw, float *ta)
{
    quant_dequantize_row(wt, w, tw, n);
    quant_dequantize_row(qtype_info(wt)->vec_dot_type, act, ta, n);
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += fabs((double)tw[i] * ta[i]);
    return s;
}

static void test_vec_dot(kern_isa_t isa)
{
    static const int mult[] = {1, 2, 3, 5, 8, 24};
    static const int flen[] = {1, 7, 16, 33, 100, 768};
    for (size_t ci = 0; ci < N_WTYPES; ci++) {
        const wtype_case_t *c = &wtypes[ci];
        int bs = qtype_info(c->t)->block_size;
        int worst_ok = 1, exact = 1;
        double worst = 0;
        for (int li = 0; li < 6; li++) {
            int64_t n = bs == 1 ? flen[li] : (int64_t)bs * mult[li];
            for (int rep = 0; rep < 4; rep++) {
                size_t wsz = qtype_row_size(c->t, n), asz = kern_act_size(c->t, n, 1);
                void *w = malloc(wsz), *a = malloc(asz);
                float *x = malloc(sizeof(float) * (size_t)n), *tw = malloc(sizeof(float) * (size_t)n),
                      *ta = malloc(sizeof(float) * (size_t)n);
                fill_weights(c, w, 1, n);
                fill_floats(x, n);
                kern_quantize_act(c->t, x, n, 1, a);
                float got = kern_vec_dot(c->t, n, w, a);
                float ref = quant_vec_dot_ref(c->t, n, w, a);
                double scale = abs_dot(c->t, n, w, a, tw, ta);
                double err = fabs((double)got - ref);
                double rel = err / (scale + 1e-30);
                if (rel > worst)
                    worst = rel;
                if (!(err <= 1e-5 * scale + 1e-6))
                    worst_ok = 0;
                if (memcmp(&got, &ref, sizeof got))
                    exact = 0;
                free(w), free(a), free(x), free(tw), free(ta);
            }
        }
        tap_ok(worst_ok, "%s vec_dot %s vs reference (worst rel err %.2g)", kern_isa_name(isa),
               qtype_name(c->t), worst);
        if (isa == KERN_ISA_SCALAR)
            tap_ok(exact, "scalar vec_dot %s is the reference bit for bit", qtype_name(c->t));
    }
}

/* matmul == per-element kern_vec_dot bitwise, and close to the reference;
 * results independent of n_tok (1, 7, 16) and threads (1, 2). */
static void test_matmul(kern_isa_t isa, tpool_t *pool2)
{
    const int64_t n_rows = 37, k = 512, T = 16;
    for (size_t ci = 0; ci < N_WTYPES; ci++) {
        const wtype_case_t *c = &wtypes[ci];
        size_t rs = qtype_row_size(c->t, k), ars = kern_act_size(c->t, k, 1);
        uint8_t *W = malloc(rs * n_rows), *A = malloc(ars * T);
        float *x = malloc(sizeof(float) * k * T);
        float *o16a = malloc(sizeof(float) * n_rows * T), *o16b = malloc(sizeof(float) * n_rows * T);
        float *o7 = malloc(sizeof(float) * n_rows * 7), *o1 = malloc(sizeof(float) * n_rows);
        float *tw = malloc(sizeof(float) * k), *ta = malloc(sizeof(float) * k);
        fill_weights(c, W, n_rows, k);
        fill_floats(x, k * T);
        kern_quantize_act(c->t, x, k, T, A);
        uint8_t *A2 = malloc(ars * T);
        kern_quantize_act_pool(pool2, c->t, x, k, T, A2);
        tap_ok(!memcmp(A, A2, ars * T), "%s quantize_act_pool for %s equals the serial bytes", kern_isa_name(isa),
               qtype_name(c->t));
        free(A2);

        kern_matmul(NULL, c->t, W, n_rows, k, A, T, o16a);
        kern_matmul(pool2, c->t, W, n_rows, k, A, T, o16b);
        int same_thr = !memcmp(o16a, o16b, sizeof(float) * n_rows * T);

        int vs_dot = 1, near_ref = 1;
        for (int64_t t = 0; t < T; t++)
            for (int64_t r = 0; r < n_rows; r++) {
                float d = kern_vec_dot(c->t, k, W + r * rs, A + t * ars);
                if (memcmp(&d, &o16a[t * n_rows + r], sizeof d))
                    vs_dot = 0;
                float ref = quant_vec_dot_ref(c->t, k, W + r * rs, A + t * ars);
                double scale = abs_dot(c->t, k, W + r * rs, A + t * ars, tw, ta);
                if (!(fabs((double)o16a[t * n_rows + r] - ref) <= 1e-5 * scale + 1e-6))
                    near_ref = 0;
            }

        int inv = 1;
        kern_matmul(pool2, c->t, W, n_rows, k, A + 3 * ars, 7, o7); /* tokens 3..9 */
        if (memcmp(o7, o16a + 3 * n_rows, sizeof(float) * n_rows * 7))
            inv = 0;
        for (int64_t t = 0; t < T; t++) {
            kern_matmul(t % 2 ? pool2 : NULL, c->t, W, n_rows, k, A + t * ars, 1, o1);
            if (memcmp(o1, o16a + t * n_rows, sizeof(float) * n_rows))
                inv = 0;
        }
        tap_ok(near_ref, "%s matmul %s close to naive reference loop", kern_isa_name(isa), qtype_name(c->t));
        tap_ok(vs_dot, "%s matmul %s equals kern_vec_dot bitwise", kern_isa_name(isa), qtype_name(c->t));
        tap_ok(same_thr && inv, "%s matmul %s batch invariant (n_tok 1/7/16, threads 1/2)",
               kern_isa_name(isa), qtype_name(c->t));
        free(W), free(A), free(x), free(o16a), free(o16b), free(o7), free(o1), free(tw), free(ta);
    }
}

/* Long rows and many tokens cross the driver's cache blocks (token blocks
 * of ~256 KiB of activations, row chunks of ~16 KiB of weights): still
 * equal to kern_vec_dot bit for bit, with 1 and 2 threads. */
static void test_matmul_blocks(kern_isa_t isa, tpool_t *pool2)
{
    static const qtype_t types[] = {QTYPE_F32, QTYPE_Q8_0, QTYPE_Q4_K, QTYPE_Q6_K, QTYPE_IQ4_NL, QTYPE_IQ4_XS,
                                    QTYPE_MXFP4};
    const int64_t n_rows = 21, T = 150;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const wtype_case_t *c = wcase(types[ti]);
        /* an odd number of 32-blocks where the type allows it */
        const int64_t k = qtype_info(c->t)->block_size == QK_K ? 4096 : 4128;
        size_t rs = qtype_row_size(c->t, k), ars = kern_act_size(c->t, k, 1);
        uint8_t *W = malloc(rs * n_rows), *A = malloc(ars * T);
        float *x = malloc(sizeof(float) * k * T);
        float *o1 = malloc(sizeof(float) * n_rows * T), *o2 = malloc(sizeof(float) * n_rows * T);
        fill_weights(c, W, n_rows, k);
        fill_floats(x, k * T);
        kern_quantize_act(c->t, x, k, T, A);
        kern_matmul(NULL, c->t, W, n_rows, k, A, T, o1);
        kern_matmul(pool2, c->t, W, n_rows, k, A, T, o2);
        int ok = !memcmp(o1, o2, sizeof(float) * n_rows * T);
        for (int64_t t = 0; t < T && ok; t++)
            for (int64_t r = 0; r < n_rows; r++) {
                float d = kern_vec_dot(c->t, k, W + r * rs, A + t * ars);
                if (memcmp(&d, &o1[t * n_rows + r], sizeof d))
                    ok = 0;
            }
        tap_ok(ok, "%s matmul %s %lldx%lld x %lld tokens (cache blocks) batch invariant", kern_isa_name(isa),
               qtype_name(c->t), (long long)n_rows, (long long)k, (long long)T);
        free(W), free(A), free(x), free(o1), free(o2);
    }
}

/* kern_matmul_multi / kern_linear_multi: each job's output equals
 * kern_quantize_act + kern_matmul bit for bit, for jobs of mixed types and
 * vec_dot_types (one run per group), odd row counts and 1/2 threads. */
static const struct {
    int n;
    qtype_t t[4];
    int64_t rows[4];
    int64_t n_tok;
} multi_cases[] = {
    {3, {QTYPE_Q4_K, QTYPE_Q4_K, QTYPE_Q6_K}, {37, 13, 13}, 1},   /* q, k, v of a Q4_K_M layer */
    {3, {QTYPE_Q4_K, QTYPE_Q4_K, QTYPE_Q6_K}, {37, 13, 13}, 11},
    {2, {QTYPE_Q8_0, QTYPE_Q8_0}, {50, 50}, 5},                   /* gate, up */
    {4, {QTYPE_Q8_0, QTYPE_Q4_K, QTYPE_Q4_1, QTYPE_F16}, {9, 17, 5, 3}, 6}, /* four groups */
    {1, {QTYPE_Q5_K}, {1}, 3},
    {3, {QTYPE_MXFP4, QTYPE_MXFP4, QTYPE_Q8_0}, {33, 33, 16}, 9},        /* experts' gate, up; Q8_0 */
    {4, {QTYPE_IQ4_XS, QTYPE_IQ4_XS, QTYPE_Q6_K, QTYPE_IQ4_NL}, {19, 7, 7, 21}, 2},
};

static void test_multi(kern_isa_t isa, tpool_t *pool2)
{
    const int64_t k = 512;
    for (size_t ci = 0; ci < sizeof multi_cases / sizeof multi_cases[0]; ci++) {
        const int n = multi_cases[ci].n;
        const int64_t T = multi_cases[ci].n_tok;
        float *x = malloc(sizeof(float) * (size_t)(k * T));
        fill_floats(x, k * T);
        kern_mm_t jobs[4];
        uint8_t *W[4];
        float *ref[4], *o1[4], *o2[4];
        size_t amax = 0;
        for (int i = 0; i < n; i++) {
            const wtype_case_t *c = wcase(multi_cases[ci].t[i]);
            int64_t rows = multi_cases[ci].rows[i];
            W[i] = malloc(qtype_row_size(c->t, k) * (size_t)rows);
            fill_weights(c, W[i], rows, k);
            size_t as = kern_act_size(c->t, k, T);
            amax = as > amax ? as : amax;
            ref[i] = malloc(sizeof(float) * (size_t)(rows * T));
            o1[i] = malloc(sizeof(float) * (size_t)(rows * T));
            o2[i] = malloc(sizeof(float) * (size_t)(rows * T));
            jobs[i] = (kern_mm_t){c->t, W[i], rows, k, NULL, NULL, NULL};
        }
        void *act = malloc(amax);
        for (int i = 0; i < n; i++) {
            kern_quantize_act(jobs[i].wtype, x, k, T, act);
            kern_matmul(NULL, jobs[i].wtype, W[i], jobs[i].n_rows, k, act, T, ref[i]);
        }
        for (int i = 0; i < n; i++)
            jobs[i].out = o1[i];
        kern_linear_multi(NULL, n, jobs, x, T, act);
        for (int i = 0; i < n; i++)
            jobs[i].out = o2[i];
        kern_linear_multi(pool2, n, jobs, x, T, act);
        int ok = 1;
        for (int i = 0; i < n; i++) {
            size_t sz = sizeof(float) * (size_t)(jobs[i].n_rows * T);
            ok &= !memcmp(ref[i], o1[i], sz) && !memcmp(ref[i], o2[i], sz);
        }
        /* kern_matmul_multi on the act of the last group */
        int last = n - 1;
        kern_mm_t one = jobs[last];
        one.out = o1[last];
        memset(o1[last], 0, sizeof(float) * (size_t)(one.n_rows * T));
        kern_matmul_multi(pool2, 1, &one, T);
        ok &= !memcmp(ref[last], o1[last], sizeof(float) * (size_t)(one.n_rows * T));
        tap_ok(ok, "%s linear_multi case %zu (%d jobs, %lld tokens) equals matmul per job, 1 and 2 threads",
               kern_isa_name(isa), ci, n, (long long)T);
        for (int i = 0; i < n; i++)
            free(W[i]), free(ref[i]), free(o1[i]), free(o2[i]);
        free(act), free(x);
    }
}

/* Packed weights (kpack.h), at every level that has packed kernels: the
 * values from the packed copy are batch invariant (each token alone gives
 * the batch's bits) and equal with 1 and 2 threads; they are bitwise the
 * VNNI level's tiles on the original rows (at the AVX2 level too, when the
 * CPU also has that level to compare with), and at every level within the
 * tolerance of the scalar reference. Partial groups, odd block counts,
 * 1..40 tokens (more than 4: the block-major Q4_K / Q5_K / Q6_K path at AVX2),
 * and several jobs whose concatenated rows straddle groups. */
static const struct {
    qtype_t t;
    int64_t rows, k, n_tok;
} packed_cases[] = {
    {QTYPE_Q8_0, 16, 64, 1},   {QTYPE_Q8_0, 1, 32, 1},    {QTYPE_Q8_0, 37, 96, 1},   {QTYPE_Q8_0, 50, 576, 3},
    {QTYPE_Q8_0, 33, 160, 9},  {QTYPE_Q8_0, 64, 512, 40}, {QTYPE_Q4_K, 16, 256, 1},  {QTYPE_Q4_K, 5, 512, 1},
    {QTYPE_Q4_K, 37, 768, 2},  {QTYPE_Q4_K, 48, 256, 33}, {QTYPE_Q6_K, 16, 256, 1},  {QTYPE_Q6_K, 21, 512, 1},
    {QTYPE_Q6_K, 40, 768, 7},  {QTYPE_Q6_K, 17, 256, 12}, {QTYPE_Q5_0, 16, 64, 1},  {QTYPE_Q5_0, 19, 96, 1},
    {QTYPE_Q5_0, 40, 576, 5},  {QTYPE_Q5_0, 3, 32, 33},   {QTYPE_Q5_K, 16, 256, 1},  {QTYPE_Q5_K, 9, 512, 1},
    {QTYPE_Q5_K, 37, 768, 3},  {QTYPE_Q5_K, 20, 256, 17},  {QTYPE_Q4_0, 16, 64, 1},  {QTYPE_Q4_0, 19, 96, 1},
    {QTYPE_Q4_0, 40, 576, 5},  {QTYPE_Q4_0, 3, 32, 33},   {QTYPE_Q4_K, 37, 768, 13}, {QTYPE_Q5_K, 21, 512, 6},
};

static void *packed_copy(qtype_t t, const void *W, int64_t rows, int64_t k)
{
    size_t sz = kern_pack_size(t, rows, k);
    if (!sz)
        return NULL;
    void *p = NULL;
    if (posix_memalign(&p, 64, sz))
        return NULL;
    kern_pack(t, W, rows, k, p);
    return p;
}

/* Whether out (rows x T, token-major) is within the tolerance of the
 * scalar reference. */
static int packed_near_ref(qtype_t t, const uint8_t *W, int64_t rows, int64_t k, const uint8_t *act, int64_t T,
                           const float *out)
{
    size_t rs = qtype_row_size(t, k), ars = kern_act_size(t, k, 1);
    float *tw = malloc(sizeof(float) * (size_t)k), *ta = malloc(sizeof(float) * (size_t)k);
    int ok = 1;
    for (int64_t tt = 0; tt < T; tt++)
        for (int64_t r = 0; r < rows; r++) {
            float ref = quant_vec_dot_ref(t, k, W + (size_t)r * rs, act + (size_t)tt * ars);
            double scale = abs_dot(t, k, W + (size_t)r * rs, act + (size_t)tt * ars, tw, ta);
            if (!(fabs((double)out[tt * rows + r] - ref) <= 1e-5 * scale + 1e-6))
                ok = 0;
        }
    free(tw), free(ta);
    return ok;
}

static void test_packed(kern_isa_t isa, tpool_t *pool2)
{
    for (size_t ci = 0; ci < sizeof packed_cases / sizeof packed_cases[0]; ci++) {
        const qtype_t t = packed_cases[ci].t;
        const int64_t rows = packed_cases[ci].rows, k = packed_cases[ci].k, T = packed_cases[ci].n_tok;
        uint8_t *W = malloc(qtype_row_size(t, k) * (size_t)rows);
        fill_weights(wcase(t), W, rows, k);
        void *Wp = packed_copy(t, W, rows, k);
        if (isa < KERN_ISA_AVX2) {
            tap_ok(!Wp, "%s has no packed %s kernels", kern_isa_name(isa), qtype_name(t));
            free(W);
            continue;
        }
        float *x = malloc(sizeof(float) * (size_t)(k * T));
        fill_floats(x, k * T);
        const size_t ars = kern_act_size(t, k, 1);
        uint8_t *act = malloc(kern_act_size(t, k, T));
        const size_t sz = sizeof(float) * (size_t)(rows * T);
        float *ref = malloc(sz), *o1 = malloc(sz), *o2 = malloc(sz), *one = malloc(sizeof(float) * (size_t)rows);
        kern_quantize_act(t, x, k, T, act);
        /* the VNNI level's original rows, where the CPU has it */
        int have_vnni = kern_isa_max() >= KERN_ISA_AVX512;
        if (have_vnni) {
            kern_isa_set(KERN_ISA_AVX512);
            kern_matmul(NULL, t, W, rows, k, act, T, ref);
            kern_isa_set(isa);
        }
        kern_mm_t job = {t, W, rows, k, NULL, o1, Wp};
        kern_linear_multi(NULL, 1, &job, x, T, act);
        job.out = o2;
        kern_linear_multi(pool2, 1, &job, x, T, act);
        int inv = !memcmp(o1, o2, sz);
        for (int64_t tt = 0; tt < T && inv; tt++) {
            kern_mm_t j1 = {t, W, rows, k, NULL, one, Wp};
            kern_linear_multi(tt % 2 ? pool2 : NULL, 1, &j1, x + tt * k, 1, act + (size_t)tt * ars);
            inv = !memcmp(one, o1 + tt * rows, sizeof(float) * (size_t)rows);
        }
        tap_ok(Wp && inv, "%s packed %s %lld x %lld, %lld tokens: batch invariant, 1 and 2 threads",
               kern_isa_name(isa), qtype_name(t), (long long)rows, (long long)k, (long long)T);
        tap_ok(packed_near_ref(t, W, rows, k, act, T, o1), "%s packed %s %lld x %lld, %lld tokens: near the reference",
               kern_isa_name(isa), qtype_name(t), (long long)rows, (long long)k, (long long)T);
        if (have_vnni)
            tap_ok(!memcmp(ref, o1, sz), "%s packed %s %lld x %lld, %lld tokens: bitwise the VNNI level's original rows",
                   kern_isa_name(isa), qtype_name(t), (long long)rows, (long long)k, (long long)T);
        free(W), free(Wp), free(x), free(act), free(ref), free(o1), free(o2), free(one);
    }
    /* q, k, v of a Q4_K_M layer with 37 + 13 + 13 rows (groups straddle
     * the jobs), the last one not packed: each job as it gives alone */
    const qtype_t ts[3] = {QTYPE_Q4_K, QTYPE_Q8_0, QTYPE_Q6_K};
    const int64_t rs[3] = {37, 13, 45}, k = 512;
    for (int T = 1; T <= 5; T += 4) {
        float *x = malloc(sizeof(float) * (size_t)(k * T));
        fill_floats(x, k * T);
        void *act = malloc(kern_act_size(QTYPE_Q8_0, k, T) + kern_act_size(QTYPE_Q4_K, k, T));
        kern_mm_t jobs[3];
        uint8_t *W[3];
        void *P[3];
        float *ref[3], *out[3];
        for (int i = 0; i < 3; i++) {
            W[i] = malloc(qtype_row_size(ts[i], k) * (size_t)rs[i]);
            fill_weights(wcase(ts[i]), W[i], rs[i], k);
            P[i] = i < 2 ? packed_copy(ts[i], W[i], rs[i], k) : NULL;
            ref[i] = malloc(sizeof(float) * (size_t)(rs[i] * T));
            out[i] = malloc(sizeof(float) * (size_t)(rs[i] * T));
            kern_mm_t alone = {ts[i], W[i], rs[i], k, NULL, ref[i], P[i]};
            kern_linear_multi(NULL, 1, &alone, x, T, act);
            jobs[i] = (kern_mm_t){ts[i], W[i], rs[i], k, NULL, out[i], P[i]};
        }
        kern_linear_multi(pool2, 3, jobs, x, T, act);
        int ok = 1;
        for (int i = 0; i < 3; i++)
            ok &= !memcmp(ref[i], out[i], sizeof(float) * (size_t)(rs[i] * T));
        tap_ok(ok, "%s packed and unpacked jobs in one run (%d tokens): bitwise per job", kern_isa_name(isa), T);
        for (int i = 0; i < 3; i++)
            free(W[i]), free(P[i]), free(ref[i]), free(out[i]);
        free(x), free(act);
    }
}

/* Experts of a 3-D tensor [k, n_rows, n_exp] (MoE): kern_matmul on each
 * expert's slice of rows (at odd byte offsets when the row size is odd, as
 * MXFP4 rows of 7 blocks are: 119 bytes), for all tokens and for a
 * gathered subset of them (activation rows copied), equals kern_vec_dot on
 * the same rows bit for bit and the reference within the tolerance. */
static void test_expert_slices(kern_isa_t isa, tpool_t *pool2)
{
    static const qtype_t types[] = {QTYPE_MXFP4, QTYPE_IQ4_NL, QTYPE_IQ4_XS, QTYPE_Q8_0};
    enum { N_EXP = 4, ROWS = 19, T = 6 };
    static const int pick[] = {5, 1, 3}; /* tokens routed to an expert, in any order */
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const wtype_case_t *c = wcase(types[ti]);
        const int64_t k = qtype_info(c->t)->block_size == QK_K ? 512 : 224;
        const size_t rs = qtype_row_size(c->t, k), ars = kern_act_size(c->t, k, 1);
        uint8_t *W = malloc(rs * ROWS * N_EXP), *A = malloc(ars * T), *G = malloc(ars * 3);
        float *x = malloc(sizeof(float) * (size_t)(k * T)), *o = malloc(sizeof(float) * ROWS * T);
        float *og = malloc(sizeof(float) * ROWS * 3), *tw = malloc(sizeof(float) * (size_t)k),
              *ta = malloc(sizeof(float) * (size_t)k);
        fill_weights(c, W, ROWS * N_EXP, k);
        fill_floats(x, k * T);
        kern_quantize_act(c->t, x, k, T, A);
        for (int g = 0; g < 3; g++)
            memcpy(G + (size_t)g * ars, A + (size_t)pick[g] * ars, ars);
        int exact = 1, near = 1;
        for (int e = 0; e < N_EXP; e++) {
            const uint8_t *We = W + (size_t)e * ROWS * rs;
            kern_matmul(e % 2 ? pool2 : NULL, c->t, We, ROWS, k, A, T, o);
            kern_matmul(pool2, c->t, We, ROWS, k, G, 3, og);
            for (int t = 0; t < T; t++)
                for (int r = 0; r < ROWS; r++) {
                    const float d = kern_vec_dot(c->t, k, We + (size_t)r * rs, A + (size_t)t * ars);
                    const float ref = quant_vec_dot_ref(c->t, k, We + (size_t)r * rs, A + (size_t)t * ars);
                    const double scale = abs_dot(c->t, k, We + (size_t)r * rs, A + (size_t)t * ars, tw, ta);
                    exact &= !memcmp(&d, &o[t * ROWS + r], sizeof d);
                    near &= fabs((double)d - ref) <= 1e-5 * scale + 1e-6;
                }
            for (int g = 0; g < 3; g++)
                exact &= !memcmp(og + g * ROWS, o + pick[g] * ROWS, sizeof(float) * ROWS);
        }
        tap_ok(exact && near, "%s %s experts: slices of a [%lld, %d, %d] tensor (rows of %zu bytes), all and gathered "
               "tokens, equal kern_vec_dot bitwise and the reference", kern_isa_name(isa), qtype_name(c->t),
               (long long)k, ROWS, N_EXP, rs);
        free(W), free(A), free(G), free(x), free(o), free(og), free(tw), free(ta);
    }
}

/* kern_quantize_act's bytes equal quant_quantize_row's (the scalar
 * reference of ggml's rounding), block by block, over edge cases: a zero
 * block, ties of the largest magnitude with either sign first, tiny and
 * huge values, a single nonzero, infinities and NaN. */
static void test_quantize_act(kern_isa_t isa)
{
    static const qtype_t wts[] = {QTYPE_Q4_K, QTYPE_Q8_0};
    enum { K = 256 * 12 };
    static float x[K];
    static uint8_t got[K * 2], want[K * 2];
    for (size_t wi = 0; wi < sizeof wts / sizeof wts[0]; wi++) {
        qtype_t vt = qtype_info(wts[wi])->vec_dot_type;
        int ok = 1;
        for (int rep = 0; rep < 8; rep++) {
            fill_floats(x, K);
            for (int b = 0; b < K / 256; b++) {
                float *blk = x + 256 * b;
                switch ((b + rep) % 12) {
                case 0: memset(blk, 0, 256 * sizeof(float)); break;
                case 1: blk[3] = 7.0f, blk[200] = -7.0f; break;
                case 2: blk[5] = -7.0f, blk[9] = 7.0f; blk[40] = -7.0f; break;
                case 3: for (int j = 0; j < 256; j++) blk[j] *= 1e-30f; break;
                case 4: for (int j = 0; j < 256; j++) blk[j] *= 1e30f; break;
                case 5: memset(blk, 0, 256 * sizeof(float)); blk[77] = -0.5f; break;
                case 6: blk[100] = INFINITY; break;
                case 7: blk[31] = NAN; break;
                case 8: blk[0] = -INFINITY, blk[1] = NAN; break;
                case 9: for (int j = 0; j < 256; j++) blk[j] = (float)(j % 7) - 3.0f; break; /* many ties */
                default: break;
                }
            }
            kern_quantize_act(wts[wi], x, K, 1, got);
            quant_quantize_row(vt, x, want, K);
            ok &= !memcmp(got, want, qtype_row_size(vt, K));
        }
        tap_ok(ok, "%s quantize_act to %s equals the scalar reference bytes", kern_isa_name(isa), qtype_name(vt));
    }
}

int main(void)
{
    tpool_t *pool2 = NULL;
    if (tpool_create(2, &pool2, NULL) != LF_OK)
        return 1;
    kern_isa_t max = kern_isa_max();
    tap_diag("cpu max isa: %s", kern_isa_name(max));
    for (size_t ci = 0; ci < N_WTYPES; ci++)
        tap_ok(kern_supports(wtypes[ci].t), "%s supported", qtype_name(wtypes[ci].t));
    tap_ok(!kern_supports(QTYPE_Q8_K) && kern_act_size(QTYPE_Q8_K, 256, 1) == 0, "q8_K weights refused");
    tap_ok(kern_act_size(QTYPE_Q4_K, 100, 1) == 0, "act size 0 for a ragged row");
    tap_ok(kern_act_size(QTYPE_Q4_K, 512, 3) == 3 * 2 * 292, "act size");
    for (int isa = KERN_ISA_SCALAR; isa <= KERN_ISA_AVX512; isa++) {
        char miss[160];
        if (!kern_isa_runnable((kern_isa_t)isa)) {
            /* never forced onto a CPU that would fault (SIGILL) */
            tap_skip("%s level: this CPU lacks %s", kern_isa_name((kern_isa_t)isa),
                     kern_isa_missing((kern_isa_t)isa, miss, sizeof miss));
            continue;
        }
        if (!tap_ok(kern_isa_set((kern_isa_t)isa) == (kern_isa_t)isa, "select %s", kern_isa_name((kern_isa_t)isa)))
            continue;
        test_quantize_act((kern_isa_t)isa);
        test_vec_dot((kern_isa_t)isa);
        test_matmul((kern_isa_t)isa, pool2);
        test_matmul_blocks((kern_isa_t)isa, pool2);
        test_multi((kern_isa_t)isa, pool2);
        test_expert_slices((kern_isa_t)isa, pool2);
        test_packed((kern_isa_t)isa, pool2);
    }
    tap_ok(kern_isa_set((kern_isa_t)99) == max, "isa request capped at cpu max");
    for (int isa = KERN_ISA_SCALAR; isa <= KERN_ISA_AVX512; isa++) {
        kern_isa_t got = kern_isa_set((kern_isa_t)isa);
        tap_ok(kern_isa_runnable(got) && got <= (kern_isa_t)isa &&
                   (got == (kern_isa_t)isa) == kern_isa_runnable((kern_isa_t)isa),
               "asking for %s selects %s, a level this CPU runs", kern_isa_name((kern_isa_t)isa),
               kern_isa_name(got));
    }
    tpool_free(pool2);
    return tap_done();
}
