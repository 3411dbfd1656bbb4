/* test_kernels.c - the SIMD kernels against the scalar reference, the
 * matmul driver against per-element dot products, and batch invariance.
 *
 * For every weight type and several lengths, at every ISA level the CPU
 * has: |kern - ref| <= 1e-5 * sum |w_i a_i| (+ a tiny absolute slack); at
 * the scalar level the result must equal the reference bit for bit.
 * Random weight blocks are random bytes with sane fp16 scales (so quant
 * values cover their whole range, including -128 for Q8_0). */
#include "engine/fp16.h"
#include "engine/kernels.h"
#include "engine/quant.h"
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
} wtype_case_t;

static const wtype_case_t wtypes[] = {
    {QTYPE_F32, {-1, -1}},  {QTYPE_F16, {-1, -1}},  {QTYPE_BF16, {-1, -1}}, {QTYPE_Q4_0, {0, -1}},
    {QTYPE_Q4_1, {0, 2}},   {QTYPE_Q5_0, {0, -1}},  {QTYPE_Q5_1, {0, 2}},   {QTYPE_Q8_0, {0, -1}},
    {QTYPE_Q2_K, {80, 82}}, {QTYPE_Q3_K, {108, -1}}, {QTYPE_Q4_K, {0, 2}},  {QTYPE_Q5_K, {0, 2}},
    {QTYPE_Q6_K, {208, -1}},
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
    for (size_t i = 0; i < nblk; i++)
        for (int j = 0; j < 2; j++)
            if (c->f16_off[j] >= 0) {
                uint16_t h = fp16_from_fp32(rng_f(0.001f, 0.05f));
                memcpy(b + i * (size_t)qi->type_size + c->f16_off[j], &h, 2);
            }
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
    static const qtype_t types[] = {QTYPE_F32, QTYPE_Q8_0, QTYPE_Q4_K, QTYPE_Q6_K};
    const int64_t n_rows = 21, T = 150;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const wtype_case_t *c = NULL;
        for (size_t ci = 0; ci < N_WTYPES; ci++)
            if (wtypes[ci].t == types[ti])
                c = &wtypes[ci];
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
    for (int isa = KERN_ISA_SCALAR; isa <= (int)max; isa++) {
        if (!tap_ok(kern_isa_set((kern_isa_t)isa) == (kern_isa_t)isa, "select %s", kern_isa_name((kern_isa_t)isa)))
            continue;
        test_vec_dot((kern_isa_t)isa);
        test_matmul((kern_isa_t)isa, pool2);
        test_matmul_blocks((kern_isa_t)isa, pool2);
    }
    tap_ok(kern_isa_set((kern_isa_t)99) == max, "isa request capped at cpu max");
    tpool_free(pool2);
    return tap_done();
}
