/* model.h - a loaded model: hyper-parameters, weights, vocabulary.
 *
 * model_load() opens the GGUF file, reads the architecture's hyper-
 * parameters, binds every weight tensor (const views into the mapping,
 * shapes checked) and builds the vocabulary. Architectures differ only by a
 * description (arch.h): which tensors exist, biases, rope style, etc. The
 * model is immutable after loading and may be shared by threads.
 */
#ifndef LF_MODEL_H
#define LF_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/gguf.h"
#include "engine/vocab.h"

typedef struct {
    char arch[32];        /* general.architecture, e.g. "llama" */
    char name[128];       /* general.name or "" */
    int32_t n_vocab;
    int32_t n_embd;
    int32_t n_layer;
    int32_t n_head;
    int32_t n_head_kv;
    int32_t head_dim;     /* n_embd / n_head unless the file says otherwise */
    int32_t n_ff;
    int32_t n_ctx_train;
    float rms_eps;
    float rope_theta;
    bool rope_neox;       /* NEOX-style rotation (qwen2) vs interleaved (llama) */
    int32_t n_rot;        /* rotated dims per head */
    uint64_t n_params;
} model_hparams_t;

typedef struct model model_t;

/* Loads path. NULL + err (message names the file) on failure. */
model_t *model_load(const char *path, lf_err_t *err);
void model_free(model_t *m); /* accepts NULL */

const model_hparams_t *model_hparams(const model_t *m);
const vocab_t *model_vocab(const model_t *m);
const gguf_file_t *model_gguf(const model_t *m);
/* tokenizer.chat_template, or NULL; NUL-terminated, owned by the model. */
const char *model_chat_template(const model_t *m);

#endif
