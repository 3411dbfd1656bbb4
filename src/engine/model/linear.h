/* linear.h - one weight matrix times a batch of activation rows, with the
 * numerics of ggml's CPU backend (internal to the model: forward.c, ffn.c).
 *
 * F32 and F16 weights take ggml's exact summation order chosen per token
 * (order[t], GX_ORDER_*; NULL: all decode order, ggml_exact.h); other types
 * go through the SIMD kernels (kernels.h) after the activations are
 * converted to the weight type's vec_dot_type in `act`. Values depend only
 * on the token's own row (batch invariance).
 */
#ifndef LF_LINEAR_H
#define LF_LINEAR_H

#include <stddef.h>
#include <stdint.h>

#include "engine/kernels/tpool.h"
#include "engine/model/model.h"

/* Bytes of `act` scratch lin_run needs for W and n_tok tokens. */
size_t lin_act_bytes(const model_tensor_t *W, int64_t n_tok);

/* out[t][r] = W x[t] (+ bias[r]) for t < n_tok, r < W->n_out. */
void lin_run(tpool_t *pool, void *act, const model_tensor_t *W, const float *bias, const float *x, int64_t n_tok,
             const uint8_t *order, float *out);

/* lin_run for n (<= KERN_MULTI_MAX) matrices on the same x: quantized ones
 * share one pool run (kern_linear_multi), F16 or F32 ones of one type (up
 * to GX_MATMUL_MAX) one rounding of x and one pool run (gx_matmul_n);
 * values identical to lin_run. */
void lin_run_n(tpool_t *pool, void *act, int n, const model_tensor_t *const *W, const float *const *bias,
               const float *x, int64_t n_tok, const uint8_t *order, float *const *out);

#endif
