/* pool.h - the heads of embedding and reranking models: pooling of a
 * sequence's hidden states, classifier and dense layers, normalisation.
 *
 * What llama.cpp computes (build_pooling, build_dense_out and the server's
 * common_embd_normalize), in ggml's float operations:
 *  - NONE: every token's hidden state (n_tok x n_embd);
 *  - MEAN: the average of all tokens (special tokens included) as the
 *    matrix product hidden^T x (1/n ...): one ggml_vec_dot_f32 per
 *    dimension over the tokens;
 *  - CLS: the first token; LAST: the last one;
 *  - RANK: the first token (the last for qwen3 rerankers) through the
 *    classifier: cls (+ bias) then tanh, cls.output (+ bias); for qwen3 a
 *    softmax over the outputs ([P(yes), P(no)]); the score is element 0;
 *  - then dense_2 (+ bias) and dense_3 where the file has them
 *    (EmbeddingGemma), applied to the pooled vector.
 * Matrix products of one pooled row take ggml's single-row order (the
 * decode order); values depend only on the sequence (batch invariance).
 *
 * The pooling type is MODEL_POOLING_* (model.h). Nothing here keeps state
 * between calls; a pool_ctx_t holds the scratch for one thread.
 */
#ifndef LF_POOL_H
#define LF_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/model/model.h"

/* The pooling type a model uses by default: the file's pooling_type, or
 * NONE when it has none (a text model: per-token hidden states). */
int pool_default_type(const model_t *m);
/* "none", "mean", "cls", "last", "rank" (NULL for another value). */
const char *pool_type_name(int type);
/* The type named s, or -1. */
int pool_type_parse(const char *s);
/* Whether type can run on m: RANK needs a classifier (cls.output); an
 * error message otherwise. */
lf_code_t pool_check(const model_t *m, int type, lf_err_t *err);

/* Whether the hidden state of position pos of an n_tok-token sequence is
 * needed by the pooling type. */
bool pool_wants(const model_t *m, int type, int32_t pos, int32_t n_tok);
/* The number of pooled outputs of an n_tok-token sequence: n_tok * n_embd
 * (NONE), n_cls_out (RANK), else n_embd_out. */
int64_t pool_out_floats(const model_t *m, int type, int32_t n_tok);

typedef struct pool_ctx pool_ctx_t;
pool_ctx_t *pool_ctx_create(const model_t *m, lf_err_t *err);
void pool_ctx_free(pool_ctx_t *c); /* accepts NULL */

/* out[0 .. pool_out_floats) from the hidden states h of the wanted
 * tokens of one sequence, in position order (rows of n_embd: every token
 * for NONE and MEAN, one row for CLS, LAST and RANK). Raw values: not
 * normalised. */
void pool_run(pool_ctx_t *c, int type, const float *h, int32_t n_tok, float *out);

/* llama.cpp's common_embd_normalize, in place: -1 none, 0 max-abs scaled
 * to the int16 range, 1 taxicab, 2 euclidean (the default: float squares
 * summed in double, times (float)(1 / sqrt(sum))), p > 2 p-norm. */
void pool_normalize(float *v, int64_t n, int mode);

#endif
