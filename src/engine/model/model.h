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
#include "engine/gguf/gguf.h"
#include "engine/vocab/vocab.h"

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
    float rope_freq_scale; /* 1 / linear rope scaling factor (1 = none) */
    bool rope_neox;       /* NEOX-style rotation (qwen2) vs interleaved (llama) */
    int32_t n_rot;        /* rotated dims per head */
    uint64_t n_params;
} model_hparams_t;

/* A weight matrix: n_out rows of n_in values of `type`, rows contiguous
 * (ggml's ne[0] = n_in, ne[1] = n_out). A view into the model file. */
typedef struct {
    qtype_t type;
    int64_t n_in;
    int64_t n_out;
    size_t row_bytes;
    const void *data;
} model_tensor_t;

typedef struct {
    const float *attn_norm;        /* [n_embd] */
    model_tensor_t wq;             /* n_embd -> n_head * head_dim */
    model_tensor_t wk, wv;         /* n_embd -> n_head_kv * head_dim */
    const float *bq, *bk, *bv;     /* NULL, or biases [n_out] (qwen2) */
    model_tensor_t wo;             /* n_head * head_dim -> n_embd */
    const float *ffn_norm;         /* [n_embd] */
    model_tensor_t w_gate, w_up;   /* n_embd -> n_ff */
    model_tensor_t w_down;         /* n_ff -> n_embd */
} model_layer_t;

typedef struct {
    model_tensor_t tok_embd;       /* n_vocab rows of n_embd */
    const float *output_norm;      /* [n_embd] */
    model_tensor_t output;         /* n_embd -> n_vocab (= tok_embd if tied) */
    bool output_tied;
    const float *rope_freqs;       /* NULL, or [n_rot / 2] divisors (llama3) */
    model_layer_t *layers;         /* [n_layer] */
} model_weights_t;

typedef struct model model_t;

/* Loads path. NULL + err (message names the file) on failure. */
model_t *model_load(const char *path, lf_err_t *err);
void model_free(model_t *m); /* accepts NULL */

const model_hparams_t *model_hparams(const model_t *m);
const vocab_t *model_vocab(const model_t *m);
const gguf_file_t *model_gguf(const model_t *m);
/* tokenizer.chat_template, or NULL; NUL-terminated, owned by the model. */
const char *model_chat_template(const model_t *m);
const model_weights_t *model_weights(const model_t *m);
/* Bytes of KV cache per token of context (all layers, K and V, F16). */
uint64_t model_kv_bytes_per_token(const model_t *m);

#endif
