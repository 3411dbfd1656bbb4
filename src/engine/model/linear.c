/* linear.c - matrix times activations, dispatching on the weight type. */
#include "engine/model/linear.h"

#include "engine/kernels/ggml_exact.h"
#include "engine/kernels/kernels.h"
#include "engine/quant/fp16.h"

size_t lin_act_bytes(const model_tensor_t *W, int64_t n_tok)
{
    return kern_act_size(W->type, W->n_in, n_tok);
}

/* The per-token work around a product (rounding the activations to F16,
 * adding the bias) is split over the pool by tokens when a batch is big
 * enough to pay for the hand-off (prompts, encoders), not for decode. */
enum { LIN_GRAIN = 16384 };

typedef struct {
    const float *x, *bias;
    uint16_t *x16;
    float *out;
    int64_t width;
} lin_rows_t;

static void to_f16_rows(void *arg, int64_t lo, int64_t hi)
{
    const lin_rows_t *j = arg;
    for (int64_t t = lo; t < hi; t++)
        fp16_row_from_fp32(j->x + t * j->width, j->x16 + t * j->width, j->width);
}

static void bias_rows(void *arg, int64_t lo, int64_t hi)
{
    const lin_rows_t *j = arg;
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
        lin_rows_t j = {.bias = bias, .out = out, .width = n_out};
        tpool_run_range(pool, n_tok, grain_tokens(n_out), bias_rows, &j);
    }
}

void lin_run(tpool_t *pool, void *act, const model_tensor_t *W, const float *bias, const float *x, int64_t n_tok,
             const uint8_t *order, float *out)
{
    if (W->type == QTYPE_F32) {
        gx_matmul_f32(pool, W->data, W->n_out, W->n_in, x, n_tok, order, out);
    } else if (W->type == QTYPE_F16) {
        /* F16's vec_dot_type is F16: the activations are rounded first */
        uint16_t *x16 = act;
        lin_rows_t j = {.x = x, .x16 = x16, .width = W->n_in};
        tpool_run_range(pool, n_tok, grain_tokens(W->n_in), to_f16_rows, &j);
        gx_matmul_f16(pool, W->data, W->n_out, W->n_in, x16, n_tok, order, out);
    } else {
        kern_mm_t job = {W->type, W->data, W->n_out, W->n_in, NULL, out, W->packed};
        kern_linear_multi(pool, 1, &job, x, n_tok, act);
    }
    add_bias(pool, bias, W->n_out, n_tok, out);
}

void lin_run_n(tpool_t *pool, void *act, int n, const model_tensor_t *const *W, const float *const *bias,
               const float *x, int64_t n_tok, const uint8_t *order, float *const *out)
{
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
