/* ffn.h - the feed-forward half of a layer: gated FFNs and mixtures of
 * experts (internal to the forward pass).
 *
 * ffn_run computes out[t] = FFN(x[t]) for the normed input rows of a batch,
 * as the layer's architecture says (arch.h: ARCH_FFN_GATED, _GATED_FUSED,
 * _MOE; the activation arch_act_t):
 *  - gated: down(act(gate x) * up x), gate and up in one pool run;
 *  - MoE: router logits (+ bias), expert choice and weights (softmax then
 *    top-k, optionally renormalised; or top-k logits then softmax), then
 *    the tokens of the batch are GROUPED BY EXPERT: each chosen expert's
 *    gate/up/down rows are read once for all the tokens routed to it (a
 *    decode step reads only its k experts); each token's k weighted expert
 *    outputs are then added in llama.cpp's order (by descending router
 *    score); a shared expert (qwen35moe) adds its SwiGLU output times
 *    sigmoid(ffn_gate_inp_shexp x).
 * Numerics follow ggml (ffn.c); every value depends only on its token's
 * row (batch invariance). The context holds the scratch for max_batch
 * tokens; it is used by one thread at a time (the forward pass).
 */
#ifndef LF_FFN_H
#define LF_FFN_H

#include <stdint.h>

#include "common/status.h"
#include "engine/kernels/tpool.h"
#include "engine/model/model.h"

typedef struct ffn ffn_t;

/* Scratch for batches of up to max_batch tokens of model m. NULL + err
 * (LF_ERR_NOMEM) on failure. */
ffn_t *ffn_create(const model_t *m, int32_t max_batch, lf_err_t *err);
void ffn_free(ffn_t *f); /* accepts NULL */

/* out[t] (n_embd floats) = the FFN of layer L on x[t], t < n (n <=
 * max_batch). order[t] is the token's summation order (GX_ORDER_*) for
 * the dense matrices and the router; expert products always take the
 * decode order, as ggml's mul_mat_id does. x and out must not overlap. */
void ffn_run(ffn_t *f, tpool_t *pool, const model_layer_t *L, const float *x, int32_t n, const uint8_t *order,
             float *out);

/* gemma4's MoE layer, from the residual rows x (not normed): out =
 * post_ffw_norm_1(dense(ffn_norm(x))) + post_ffw_norm_2(experts(
 * pre_ffw_norm_2(x)) routed on rms_norm(x) / sqrt(n_embd) *
 * router_in_scale); the per-expert output scale applies. */
void ffn_run_par(ffn_t *f, tpool_t *pool, const model_layer_t *L, const float *x, int32_t n, const uint8_t *order,
                 float *out);

#endif
