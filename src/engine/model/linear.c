/* linear.c - matrix times activations, dispatching on the weight type. */
#include "engine/model/linear.h"

#include "engine/kernels/ggml_exact.h"
#include "engine/kernels/kernels.h"
#include "engine/quant/fp16.h"

size_t lin_act_bytes(const model_tensor_t *W, int64_t n_tok)
{
    return kern_act_size(W->type, W->n_in, n_tok);
}

static void add_bias(const float *bias, int64_t n_out, int64_t n_tok, float *out)
{
    if (bias)
        for (int64_t t = 0; t < n_tok; t++)
            for (int64_t r = 0; r < n_out; r++)
                out[t * n_out + r] += bias[r];
}

void lin_run(tpool_t *pool, void *act, const model_tensor_t *W, const float *bias, const float *x, int64_t n_tok,
             const uint8_t *order, float *out)
{
    if (W->type == QTYPE_F32) {
        gx_matmul_f32(pool, W->data, W->n_out, W->n_in, x, n_tok, order, out);
    } else if (W->type == QTYPE_F16) {
        /* F16's vec_dot_type is F16: the activations are rounded first */
        uint16_t *x16 = act;
        for (int64_t t = 0; t < n_tok; t++)
            fp16_row_from_fp32(x + t * W->n_in, x16 + t * W->n_in, W->n_in);
        gx_matmul_f16(pool, W->data, W->n_out, W->n_in, x16, n_tok, order, out);
    } else {
        kern_mm_t job = {W->type, W->data, W->n_out, W->n_in, NULL, out, W->packed};
        kern_linear_multi(pool, 1, &job, x, n_tok, act);
    }
    add_bias(bias, W->n_out, n_tok, out);
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
        add_bias(bias[i], W[i]->n_out, n_tok, out[i]);
}
