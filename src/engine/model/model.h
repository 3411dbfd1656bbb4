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
    /* ---- the 2026 hybrids (issue 28); per-layer values are in model_layer_t ---- */
    int32_t n_layer_all;         /* blocks in the file: n_layer + n_nextn */
    int32_t n_nextn;             /* trailing MTP (nextn) blocks: bound, never run */
    int32_t n_layer_attn;        /* attention layers (the others are recurrent) */
    int32_t n_layer_kv;          /* layers with a KV cache of their own */
    int32_t max_head_dim;        /* largest head size / KV width / q width of any layer */
    int32_t max_kv_dim, max_q_dim, max_n_ff, max_n_rot;
    int32_t head_dim_swa;        /* per_layer_dims: window layers' head size and rotary dims */
    int32_t n_rot_swa;
    bool attn_scale_one;         /* attention scores not scaled */
    /* Gated DeltaNet (ssm.*) */
    int32_t ssm_d_conv;          /* convolution kernel (taps) */
    int32_t ssm_d_state;         /* head size of q, k and v (state: d_state x d_state per v head) */
    int32_t ssm_n_group;         /* q/k heads */
    int32_t ssm_dt_rank;         /* v heads */
    int32_t ssm_d_inner;         /* v heads x d_state */
    /* short convolution (lfm2) */
    int32_t shortconv_l;         /* shortconv.l_cache: kernel taps */
    /* gemma4 */
    int32_t n_embd_per_layer;    /* per-layer embedding width (0: none) */
    int32_t n_kv_from;           /* layers >= this have no KV of their own (shared_kv_layers) */
    /* shared expert (moe_shexp) */
    int32_t n_ff_shexp;
    /* ---- vision-language text models (issue 29) ---- */
    int32_t rope_sections[4];    /* multi-section rope (arch mrope): rotary pairs per t, h, w, e */
    int32_t n_deepstack;         /* deepstack layers (arch deepstack): extra input embeddings */
    int32_t n_embd_inp;          /* width of an embedding input row: n_embd * (1 + n_deepstack) */
    /* ---- embeddings and reranking (issue 25) ---- */
    bool causal;                 /* causal attention (arch default, <arch>.attention.causal) */
    float norm_eps;              /* LayerNorm epsilon (attention.layer_norm_epsilon; post_ln) */
    int32_t n_token_types;       /* tokenizer.ggml.token_type_count (0: none) */
    int32_t pooling;             /* <arch>.pooling_type: MODEL_POOLING_*, or -1 if absent */
    int32_t n_cls_out;           /* classifier outputs (classifier.output_labels, default 1) */
    int32_t n_embd_out;          /* pooled vector size (n_embd, or dense_3's output) */
} model_hparams_t;

/* Pooling types as GGUF stores them (llama.cpp's llama_pooling_type). */
enum {
    MODEL_POOLING_NONE = 0,
    MODEL_POOLING_MEAN = 1,
    MODEL_POOLING_CLS = 2,
    MODEL_POOLING_LAST = 3,
    MODEL_POOLING_RANK = 4,
};

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
    const void *packed;            /* NULL, or each expert's decode layout (weights_pack.h), */
    size_t packed_expert_bytes;    /* packed_expert_bytes apart */
} model_experts_t;

/* What mixes the tokens in a layer (arch.h, arch_rec_t). */
typedef enum {
    MODEL_LAYER_ATTN = 0,          /* attention over the KV cache */
    MODEL_LAYER_GDN,               /* Gated DeltaNet (deltanet.h) */
    MODEL_LAYER_SHORTCONV,         /* gated short convolution (shortconv.h) */
} model_layer_kind_t;

typedef struct {
    model_layer_kind_t kind;
    int32_t n_head_kv, head_dim, n_rot; /* attention shape of this layer (n_head is global) */
    int32_t n_ff;                  /* dense FFN width of this layer */
    int32_t kv_layer;              /* the layer whose KV cache it attends (itself, or the
                                      kv_shared source); -1: not an attention layer */
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
    const float *b_gate, *b_up, *b_down; /* NULL, or FFN biases (bert family) */
    bool up_fused;                 /* w_up holds gate | up (2 n_ff rows) */
    /* post-LayerNorm blocks (arch post_ln): weights and biases [n_embd] */
    const float *attn_out_norm, *attn_out_norm_b;   /* after the attention residual */
    const float *attn_norm_2, *attn_norm_2_b;       /* NULL, or a second one (jina) */
    const float *layer_out_norm, *layer_out_norm_b; /* after the FFN residual */
    const float *q_ln, *q_ln_b, *k_ln, *k_ln_b;     /* NULL, or LayerNorms of q and k (jina) */
    /* MoE (arch ffn ARCH_FFN_MOE) */
    model_tensor_t router;         /* n_embd -> n_expert (ffn_gate_inp) */
    const float *router_b;         /* NULL, or [n_expert] */
    model_experts_t x_gate, x_up;  /* n_embd -> n_ff_exp per expert */
    model_experts_t x_down;        /* n_ff_exp -> n_embd per expert */
    /* ---- the 2026 hybrids ---- */
    model_experts_t x_gate_up;     /* data NULL, or fused n_embd -> 2 n_ff_exp (gate rows first) */
    const float *x_down_scale;     /* NULL, or [n_expert] per-expert output scale */
    const float *router_in_scale;  /* NULL, or [n_embd]: router input = rms_norm(x) / sqrt(n_embd) * this
                                      (moe_dense_par) */
    const float *ffn_pre_norm_2;   /* moe_dense_par: the experts' input norm [n_embd] */
    const float *ffn_post_norm_1;  /* the dense MLP's output norm */
    const float *ffn_post_norm_2;  /* the experts' output norm */
    model_tensor_t s_gate, s_up;   /* data NULL, or the shared expert n_embd -> n_ff_shexp */
    model_tensor_t s_down;         /* n_ff_shexp -> n_embd */
    model_tensor_t s_gate_inp;     /* n_embd -> 1: its sigmoid gate */
    const float *out_scale;        /* NULL, or [1] layer_output_scale */
    model_tensor_t ple_gate;       /* per-layer embeddings: n_embd -> n_embd_per_layer (inp_gate) */
    model_tensor_t ple_proj;       /* n_embd_per_layer -> n_embd (proj) */
    const float *ple_post_norm;    /* [n_embd] */
    /* Gated DeltaNet (wqkv holds q | k | v of the conv input) */
    model_tensor_t ssm_z;          /* attn_gate: n_embd -> d_inner (output gate z) */
    model_tensor_t ssm_alpha;      /* n_embd -> v heads */
    model_tensor_t ssm_beta;       /* n_embd -> v heads */
    model_tensor_t ssm_out;        /* d_inner -> n_embd */
    const float *ssm_conv;         /* [channels][d_conv] depthwise kernel, tap d_conv-1 = current */
    const float *ssm_dt;           /* [v heads] dt bias */
    const float *ssm_a;            /* [v heads] -exp(A_log) */
    const float *ssm_norm;         /* [d_state] gated norm weight */
    /* short convolution */
    model_tensor_t sc_in;          /* n_embd -> 3 n_embd: B | C | x */
    model_tensor_t sc_out;         /* n_embd -> n_embd */
    const float *sc_conv;          /* [n_embd][l_cache] kernel */
    /* MTP (nextn) blocks only */
    model_tensor_t nextn_eh_proj;  /* 2 n_embd -> n_embd */
    const float *nextn_enorm, *nextn_hnorm, *nextn_head_norm;
} model_layer_t;

typedef struct {
    model_tensor_t tok_embd;       /* n_vocab rows of n_embd */
    const float *output_norm;      /* [n_embd] */
    model_tensor_t output;         /* n_embd -> n_vocab (= tok_embd if tied) */
    bool output_tied;
    const float *rope_freqs;       /* NULL, or [n_rot / 2] divisors (llama3) */
    const float *rope_long;        /* NULL, or [n_rot / 2] LongRoPE divisors beyond n_ctx_orig (phi3) */
    const float *rope_short;       /* NULL, or [n_rot / 2] LongRoPE divisors within n_ctx_orig (phi3) */
    model_layer_t *layers;         /* [n_layer_all]: the trunk, then the MTP (nextn) blocks */
    /* per-layer embeddings (gemma4) */
    model_tensor_t ple_embd;       /* n_vocab rows of n_layer * n_embd_per_layer */
    model_tensor_t ple_model_proj; /* n_embd -> n_layer * n_embd_per_layer */
    const float *ple_proj_norm;    /* [n_embd_per_layer] */
    /* ---- encoders and embedding heads (issue 25); data NULL when absent ---- */
    model_tensor_t pos_embd;       /* n_ctx_train rows of n_embd (learned positions) */
    model_tensor_t type_embd;      /* n_token_types rows of n_embd (row 0 is added) */
    const float *tok_norm, *tok_norm_b; /* [n_embd] input LayerNorm (post_ln) */
    model_tensor_t cls;            /* n_embd -> n_cls: classifier dense (then tanh) */
    const float *cls_b;
    model_tensor_t cls_out;        /* n_cls (or n_embd) -> n_cls_out: classifier output */
    const float *cls_out_b;
    model_tensor_t dense_2;        /* n_embd -> d2: after pooling (EmbeddingGemma) */
    const float *dense_2_b;
    model_tensor_t dense_3;        /* d2 -> n_embd_out */
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
#define MODEL_LAYER_MATRICES 20
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
/* Bytes of KV cache per token of context (the layers with a cache of their
 * own, K and V, F16). */
uint64_t model_kv_bytes_per_token(const model_t *m);
/* The same for the sliding-window layers only (0 without them). */
uint64_t model_kv_bytes_per_token_swa(const model_t *m);
/* Floats of recurrent state one sequence holds in layer l (0: none), and in
 * all layers (the delta/conv states of hybrid models, rstate.h). */
int64_t model_state_floats(const model_t *m, int l);
uint64_t model_state_bytes(const model_t *m);
/* Whether the model has recurrent (non-rollbackable) layers. */
bool model_is_hybrid(const model_t *m);

/* The first MTP (nextn) block of m as a model of its own, for drafting
 * (spec_mtp.h): one attention layer (the block's, with its FFN), m's
 * vocabulary, token embeddings and output matrix, the block's
 * shared_head_norm as output norm (m's if absent). Its input rows are
 * embeddings the caller computes from the block's nextn tensors
 * (model_weights(view)->layers[0].nextn_*). It borrows m, which must
 * outlive it; model_free releases only the view. NULL + err
 * (LF_ERR_UNSUPPORTED) when m has no such block. */
model_t *model_nextn_view(const model_t *m, lf_err_t *err);

#endif
