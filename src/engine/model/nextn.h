/* nextn.h - the input rows of a next-token-prediction (MTP, "nextn")
 * block, as llama.cpp's Qwen3.5 MTP graph builds them.
 *
 * The block (model_nextn_view) sees, for position t, the target model's
 * hidden state h_t (after its output norm: fwd_hidden) and the token that
 * follows t; its input row is
 *   eh_proj . [ rms_norm(embed(token)) * enorm ; rms_norm(h_t) * hnorm ]
 * and its output (after shared_head_norm) predicts the token after that
 * one, and is the h of the next drafting step.
 *
 * Values depend only on the row (batch invariance); eh_proj is multiplied
 * with the same kernels as every other matrix (linear.h).
 */
#ifndef LF_NEXTN_H
#define LF_NEXTN_H

#include <stddef.h>
#include <stdint.h>

#include "engine/kernels/tpool.h"
#include "engine/model/model.h"

/* Scratch bytes nextn_input needs for n rows of view. */
size_t nextn_input_scratch(const model_t *view, int32_t n);

/* out[i] (n_embd floats) = the input row of tokens[i] after hidden[i]
 * (n_embd floats each), for i < n. view from model_nextn_view. */
void nextn_input(tpool_t *pool, const model_t *view, const int32_t *tokens, const float *const *hidden, int32_t n,
                 void *scratch, float *out);

#endif
