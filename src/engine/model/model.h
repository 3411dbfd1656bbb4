/* model.h - a loaded model: hyper-parameters, weights, vocabulary.
 *
 * model_load() opens the GGUF file, reads the architecture's hyper-
 * parameters, binds every weight tensor (const views into the mapping,
 * shapes checked) and builds the vocabulary. Architectures differ only by a
 * description (arch.h): which tensors exist, biases, norms, rope, sliding
 * windows, mixtures of experts... (model_hparams.c reads the keys,
 * model.c binds the tensors). The model is immutable after loading and may
 * be shared by threads.
 */
#ifndef LF_MODEL_H
#define LF_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/gguf/gguf.h"
#include "engine/model/arch.h"
#include "engine/vocab/vocab.h"

/* Rope scaling of the positions (rope.scaling.type). */
typedef enum {
    MODEL_ROPE_SCALE_NONE = 0,
    MODEL_ROPE_SCALE_LINEAR, /* positions * rope_freq_scale */
    MODEL_ROPE_SCALE_YARN,   /* YaRN: ggml's ramp between interpolated and extrapolated angles */
} model_rope_scaling_t;

typedef struct {
    char arch[32];        /* general.architecture, e.g. "llama" */
    char name[128];       /* general.name or "" */
    int32_t n_vocab;
    int32_t n_embd;
    int32_t n_layer;
    int32_t n_head;
    int32_t n_head_kv;
    int32_t head_dim;     /* n_embd / n_head unless the file says otherwise */
    int32_t n_ff;         /* dense FFN width (0 for MoE-only models) */
    int32_t n_ctx_train;
    float rms_eps;
    float rope_theta;
    float rope_freq_scale; /* 1 / linear (or YaRN) rope scaling factor (1 = none) */
    bool rope_neox;       /* NEOX-style rotation (qwen2) vs interleaved (llama) */
    int32_t n_rot;        /* rotated dims per head */
    uint64_t n_params;
    /* ---- model families (issue 10) ---- */
    model_rope_scaling_t rope_scaling;
    float rope_theta_swa;        /* rope base of sliding-window layers */
    float rope_freq_scale_swa;   /* and their position scale */
    float rope_attn_factor;      /* cos/sin multiplier (rope.scaling.attn_factor; YaRN adds its own) */
    int32_t n_ctx_orig;          /* rope.scaling.original_context_length (YaRN, LongRoPE) */
    float yarn_ext_factor;       /* 1 for YaRN, else 0 */
    float yarn_beta_fast, yarn_beta_slow;
    int32_t n_swa;               /* sliding window (positions a query sees, itself included); 0: none */
    int32_t n_layer_swa;         /* layers with the sliding window */
    float q_scale;               /* arch q_prescale: q *= q_scale before q.k (else 1) */
    float logit_softcap;         /* final_logit_softcapping; 0: none */
    int32_t n_expert;            /* MoE: experts per layer (0: dense) */
    int32_t n_expert_used;       /* MoE: experts per token */
    int32_t n_ff_exp;            /* MoE: expert FFN width */
    /* ---- vision-language text models (issue 29) ---- */
    int32_t rope_sections[4];    /* multi-section rope (arch mrope): rotary pairs per t, h, w, e */
    int32_t n_deepstack;         /* deepstack layers (arch deepstack): extra input embeddings */
    int32_t n_embd_inp;          /* width of an embedding input row: n_embd * (1 + n_deepstack) */
} model_hparams_t;

/* A weight matrix: n_out rows of n_in values of `type`, rows contiguous
 * (ggml's ne[0] = n_in, ne[1] = n_out). A view into the model file. */
typedef struct {
    qtype_t type;
    int64_t n_in;
    int64_t n_out;
    size_t row_bytes;
    const void *data;
    const void *packed;   /* NULL, or the decode layout of data (weights_pack.h) */
} model_tensor_t;

/* The experts of one MoE matrix: a 3-D tensor [n_expert][n_out][n_in]. */
typedef struct {
    qtype_t type;
    int64_t n_in, n_out;
    size_t row_bytes;
    size_t expert_bytes;           /* n_out * row_bytes */
    const void *data;
    const float *bias;             /* NULL, or [n_expert][n_out] */
} model_experts_t;

typedef struct {
    bool swa;                      /* sliding-window layer (hparams.n_swa) */
    bool rope;                     /* rope applied to q and k */
    const float *attn_norm;        /* [n_embd] */
    model_tensor_t wq;             /* n_embd -> n_head * head_dim */
    model_tensor_t wk, wv;         /* n_embd -> n_head_kv * head_dim */
    model_tensor_t wqkv;           /* data NULL, or fused q | k | v rows (replaces wq, wk, wv) */
    const float *bq, *bk, *bv;     /* NULL, or biases [n_out] (qwen2, gpt-oss; split from a fused bias) */
    const float *q_norm, *k_norm;  /* NULL, or [head_dim] per-head RMS norm weights */
    model_tensor_t wo;             /* n_head * head_dim -> n_embd */
    const float *bo;               /* NULL, or [n_embd] */
    const float *sinks;            /* NULL, or [n_head] attention sink logits */
    const float *attn_post_norm;   /* NULL, or [n_embd] (gemma3) */
    const float *ffn_norm;         /* [n_embd] the FFN's input norm */
    model_tensor_t w_gate, w_up;   /* n_embd -> n_ff (fused: w_up n_embd -> 2 n_ff, gate rows first) */
    model_tensor_t w_down;         /* n_ff -> n_embd */
    const float *ffn_post_norm;    /* NULL, or [n_embd] (gemma3) */
    /* MoE (arch ffn ARCH_FFN_MOE) */
    model_tensor_t router;         /* n_embd -> n_expert (ffn_gate_inp) */
    const float *router_b;         /* NULL, or [n_expert] */
    model_experts_t x_gate, x_up;  /* n_embd -> n_ff_exp per expert */
    model_experts_t x_down;        /* n_ff_exp -> n_embd per expert */
} model_layer_t;

typedef struct {
    model_tensor_t tok_embd;       /* n_vocab rows of n_embd */
    const float *output_norm;      /* [n_embd] */
    model_tensor_t output;         /* n_embd -> n_vocab (= tok_embd if tied) */
    bool output_tied;
    const float *rope_freqs;       /* NULL, or [n_rot / 2] divisors (llama3) */
    const float *rope_long;        /* NULL, or [n_rot / 2] LongRoPE divisors beyond n_ctx_orig (phi3) */
    const float *rope_short;       /* NULL, or [n_rot / 2] LongRoPE divisors within n_ctx_orig (phi3) */
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
/* The dense matrices of layer L that the forward pass multiplies, those
 * present (q, k, v or the fused qkv, the attention output, the FFN gate,
 * up and down; not the MoE router or experts), into out; returns their
 * number. */
#define MODEL_LAYER_MATRICES 8
int model_layer_matrices(model_layer_t *L, model_tensor_t *out[MODEL_LAYER_MATRICES]);

/* Weight bytes one decode step reads for one token: every dense matrix,
 * the output matrix, one embedding row and, for MoE, n_expert_used
 * experts' matrices (the KV cache not included). */
uint64_t model_decode_bytes(const model_t *m);
/* Matrices packed for the decode kernels at load (weights_pack.h) and the
 * bytes of the packed copies (0, 0: none). */
void model_pack_info(const model_t *m, int *n_packed, size_t *bytes);
/* The architecture's description (arch.h). */
const arch_desc_t *model_arch(const model_t *m);
/* The longest context the file supports (issue 30): the length it was
 * trained for (context_length), or longer where its rope scaling says so:
 * linear or YaRN scaling by f extends rope.scaling.original_context_length
 * (default: context_length) to f times it. Models whose long context is
 * already context_length (llama3's rope_freqs, LongRoPE) report it as is.
 * Describes the limit in why (cap bytes; may be NULL). */
int32_t model_ctx_max(const model_t *m, char *why, size_t cap);
/* Bytes of KV cache per token of context (all layers, K and V, F16). */
uint64_t model_kv_bytes_per_token(const model_t *m);
/* The same for the sliding-window layers only (0 without them). */
uint64_t model_kv_bytes_per_token_swa(const model_t *m);

#endif
