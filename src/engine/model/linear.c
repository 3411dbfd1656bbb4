/* linear.c - matrix times activations, dispatching on the weight type. */
#include "engine/model/linear.h"

#include "engine/kernels/ggml_exact.h"
#include "engine/kernels/kernels.h"
#include "engine/quant/fp16.h"

/* F16 weights: the activations rounded to F16, then the same values as F32
 * (after the F16 rows, 64-byte aligned). */
static size_t f16_act_bytes(int64_t k, int64_t n_tok)
{
    return ((size_t)(k * n_tok) * sizeof(uint16_t) + 63) & ~(size_t)63;
}

size_t lin_act_bytes(const model_tensor_t *W, int64_t n_tok)
{
    if (W->type == QTYPE_F16)
        return f16_act_bytes(W->n_in, n_tok) + (size_t)(W->n_in * n_tok) * sizeof(float);
    return kern_act_size(W->type, W->n_in, n_tok);
}

/* The per-token work around a product (rounding the activations to F16,
 * adding the bias) is split over the pool by tokens when a batch is big
 * enough to pay for the hand-off (prompts, encoders), not for decode. */
enum { LIN_GRAIN = 16384 };

typedef struct {
    const float *x;
    uint16_t *x16;
    float *xr;
    int64_t width;
} lin_rows_t;

static void to_f16_rows(void *arg, int64_t lo, int64_t hi)
{
    const lin_rows_t *j = arg;
    for (int64_t t = lo; t < hi; t++)
        fp16_row_round_fp32(j->x + t * j->width, j->x16 + t * j->width, j->xr + t * j->width, j->width);
}

typedef struct {
    const float *bias;
    float *out;
    int64_t width;
} lin_bias_t;

static void bias_rows(void *arg, int64_t lo, int64_t hi)
{
    const lin_bias_t *j = arg;
    for (int64_t t = lo; t < hi; t++)
        gx_add_row(j->out + t * j->width, j->out + t * j->width, j->bias, j->width);
}

static int64_t grain_tokens(int64_t width)
{
    return width >= LIN_GRAIN ? 1 : LIN_GRAIN / width;
}

static void add_bias(tpool_t *pool, const float *bias, int64_t n_out, int64_t n_tok, float *out)
{
    if (bias) {
        lin_bias_t j = {.bias = bias, .out = out, .width = n_out};
        tpool_run_range(pool, n_tok, grain_tokens(n_out), bias_rows, &j);
    }
}

/* The activations as F16 weights take them (lin_rows_t's buffers in act). */
static lin_rows_t f16_acts(tpool_t *pool, void *act, const float *x, int64_t k, int64_t n_tok)
{
    lin_rows_t j = {x, act, (float *)((uint8_t *)act + f16_act_bytes(k, n_tok)), k};
    tpool_run_range(pool, n_tok, grain_tokens(k), to_f16_rows, &j);
    return j;
}

void lin_run(tpool_t *pool, void *act, const model_tensor_t *W, const float *bias, const float *x, int64_t n_tok,
             const uint8_t *order, float *out)
{
    if (W->type == QTYPE_F32) {
        gx_matmul_f32(pool, W->data, W->n_out, W->n_in, x, n_tok, order, bias, out);
    } else if (W->type == QTYPE_F16) {
        /* F16's vec_dot_type is F16: the activations are rounded first */
        const lin_rows_t j = f16_acts(pool, act, x, W->n_in, n_tok);
        gx_matmul_f16(pool, W->data, W->n_out, W->n_in, j.x16, j.xr, n_tok, order, bias, out);
    } else {
        kern_mm_t job = {W->type, W->data, W->n_out, W->n_in, NULL, out, W->packed};
        kern_linear_multi(pool, 1, &job, x, n_tok, act);
        add_bias(pool, bias, W->n_out, n_tok, out);
    }
}

void lin_run_n(tpool_t *pool, void *act, int n, const model_tensor_t *const *W, const float *const *bias,
               const float *x, int64_t n_tok, const uint8_t *order, float *const *out)
{
    /* F32 or F16 weights of one type: one rounding of the activations, one
     * hand-off for all the products */
    bool same_float = n <= GX_MATMUL_MAX && (W[0]->type == QTYPE_F32 || W[0]->type == QTYPE_F16);
    for (int i = 1; i < n && same_float; i++)
        same_float = W[i]->type == W[0]->type && W[i]->n_in == W[0]->n_in;
    if (same_float) {
        gx_mat_t m[GX_MATMUL_MAX];
        for (int i = 0; i < n; i++)
            m[i] = (gx_mat_t){W[i]->data, W[i]->n_out, bias[i], out[i]};
        if (W[0]->type == QTYPE_F32) {
            gx_matmul_n(pool, n, m, false, W[0]->n_in, x, NULL, n_tok, order);
        } else {
            const lin_rows_t j = f16_acts(pool, act, x, W[0]->n_in, n_tok);
            gx_matmul_n(pool, n, m, true, W[0]->n_in, j.x16, j.xr, n_tok, order);
        }
        return;
    }
    kern_mm_t jobs[KERN_MULTI_MAX];
    for (int i = 0; i < n; i++) {
        if (n > KERN_MULTI_MAX || W[i]->type == QTYPE_F32 || W[i]->type == QTYPE_F16) {
            for (int j = 0; j < n; j++)
                lin_run(pool, act, W[j], bias[j], x, n_tok, order, out[j]);
            return;
        }
        jobs[i] = (kern_mm_t){W[i]->type, W[i]->data, W[i]->n_out, W[i]->n_in, NULL, out[i], W[i]->packed};
    }
    kern_linear_multi(pool, n, jobs, x, n_tok, act);
    for (int i = 0; i < n; i++)
        add_bias(pool, bias[i], W[i]->n_out, n_tok, out[i]);
}
