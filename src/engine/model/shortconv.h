/* shortconv.h - the gated short-convolution layer of LFM2, with its
 * per-sequence convolution state, in ggml's numerics.
 *
 * For a layer L (model.h: sc_in, sc_conv, sc_out) and the normed input
 * rows x of a batch, per token (llama.cpp build_shortconv_block):
 *   [B | C | X] = sc_in x (thirds of n_embd); bx = B * X;
 *   y = causal depthwise convolution of bx over time (l_cache taps, the
 *   previous l_cache - 1 bx rows from the state; ggml_ssm_conv as
 *   ops_ssm_conv_row computes it);
 *   out = sc_out (C * y).
 * The sequence's state (rstate.h) holds its last l_cache - 1 bx rows,
 * time-major. The products run on the whole batch; the convolution per
 * sequence.
 */
#ifndef LF_SHORTCONV_H
#define LF_SHORTCONV_H

#include <stdint.h>

#include "common/status.h"
#include "engine/kernels/tpool.h"
#include "engine/model/model.h"
#include "engine/model/rstate.h"

typedef struct sc sc_t;

/* Scratch for batches of max_batch tokens of model m (empty without
 * short-convolution layers). */
sc_t *sc_create(const model_t *m, int32_t max_batch, lf_err_t *err);
void sc_free(sc_t *s); /* accepts NULL */

/* out[row] for every row of the groups (all n_tok rows of the batch);
 * updates each group's live state of layer `layer` and writes the
 * snapshots the groups ask for. */
void sc_run(sc_t *s, tpool_t *pool, const model_layer_t *L, int32_t layer, rs_t *rs, const rs_group_t *groups,
            int32_t n_groups, const float *x, int32_t n_tok, const uint8_t *order, float *out);

#endif
