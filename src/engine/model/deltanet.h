/* deltanet.h - the Gated DeltaNet layer of Qwen3.5 (linear attention with
 * a per-sequence recurrent state), in ggml's numerics.
 *
 * For a layer L (model.h: wqkv, ssm_*) and the normed input rows x of a
 * batch, per token (llama.cpp build_layer_attn_linear, delta-net-base.cpp):
 *   qkv = wqkv x (q: n_group heads | k: n_group heads | v: dt_rank heads,
 *   all of d_state), z = ssm_z x, beta = sigmoid(ssm_beta x),
 *   g = softplus(ssm_alpha x + ssm_dt) * ssm_a;
 *   causal depthwise convolution of qkv over time (d_conv taps, the
 *   previous d_conv - 1 rows from the conv state), then SiLU;
 *   q, k L2-normalised per head (rms_norm with eps / d_state, times
 *   1/sqrt(d_state)); per v head h (q/k head h % n_group), state S
 *   (d_state x d_state): S *= exp(g); d = beta (v - S^T k); S += k d^T;
 *   o = S^T q / sqrt(d_state) (ggml_gated_delta_net: the same sequential
 *   recurrence for a prompt and for a decode step);
 *   o = rms_norm(o) * ssm_norm * silu(z) per head; out = ssm_out o.
 * The sequence's state (rstate.h) holds the last d_conv - 1 conv input
 * rows, time-major, then the dt_rank states stored as ggml stores them
 * (M[j][i] = S[i][j]). Values are bitwise those of ggml's CPU kernels.
 *
 * Work: the products run on the whole batch (a decode step reads each
 * matrix once for all sequences); the recurrence of each (sequence, v
 * head) runs its tokens in order on one thread, the state staying in
 * cache; heads are spread over the pool.
 */
#ifndef LF_DELTANET_H
#define LF_DELTANET_H

#include <stdint.h>

#include "common/status.h"
#include "engine/kernels/tpool.h"
#include "engine/model/model.h"
#include "engine/model/rstate.h"

typedef struct dn dn_t;

/* Scratch for batches of max_batch tokens of model m (NULL without GDN
 * layers is fine: dn_create returns an empty context). */
dn_t *dn_create(const model_t *m, int32_t max_batch, lf_err_t *err);
void dn_free(dn_t *d); /* accepts NULL */

/* out[row] (n_embd floats) for every row of the groups (all n_tok rows of
 * the batch); updates each group's live state (rs) of layer `layer` and
 * writes the snapshots the groups ask for. order[row]: GX_ORDER_* of the
 * matrix products. */
void dn_run(dn_t *d, tpool_t *pool, const model_layer_t *L, int32_t layer, rs_t *rs, const rs_group_t *groups,
            int32_t n_groups, const float *x, int32_t n_tok, const uint8_t *order, float *out);

/* One token of the gated delta rule on one v head, in place: M is the
 * head's state transposed (S rows of S floats, M[j][i] = S[i][j]); q, k
 * already L2-normalised and scaled, v, beta, g as above (the decay is
 * expf(g)); o[j] = (S^T q)[j] / sqrt(S) after the update. Bitwise
 * ggml_gated_delta_net's step at every kernel level. */
void dn_state_step(float *M, int32_t S, const float *q, const float *k, const float *v, float beta, float g, float *o);

#endif
