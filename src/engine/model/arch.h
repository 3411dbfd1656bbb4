/* arch.h - what distinguishes one transformer architecture from another.
 *
 * The forward pass is one decoder-only, pre-norm transformer; an
 * architecture is a row of the table in arch.c describing its differences
 * (which tensors exist, biases, norms, rope, sliding windows, the FFN kind,
 * mixture of experts...). The forward pass honours every flag; adding a
 * family means adding a row (and, where the maths differs from every
 * existing flag, a new flag the forward pass honours), never copying the
 * forward pass. docs/model-families.md explains how to add one.
 *
 * The rows are constant data; arch_find() returns a pointer into the table.
 */
#ifndef LF_ARCH_H
#define LF_ARCH_H

#include <stdbool.h>

/* Embedding heads (pooling, classifier, dense layers) are not part of the
 * row: they follow from the file's tensors and keys (model.h, pool.h). */

/* Every architecture accepts what the 2026 llama.cpp loader accepts for all
 * of them: a fused attn_qkv (q | k | v rows) in place of attn_q/k/v, and
 * optional q/k/v biases (qwen2, gpt-oss) and attn_output bias (gpt-oss). */

/* The feed-forward block. */
typedef enum {
    ARCH_FFN_GATED = 0,   /* down(act(gate x) * up x): ffn_gate, ffn_up, ffn_down */
    ARCH_FFN_GATED_FUSED, /* one ffn_up of 2 * n_ff rows, gate rows first (phi3) */
    ARCH_FFN_MOE,         /* router ffn_gate_inp + experts ffn_{gate,up,down}_exps */
    ARCH_FFN_SEQ,         /* down(act(up x)): ffn_up, ffn_down, no gate (bert) */
} arch_ffn_t;

/* The gate activation act(g) * u of the FFN (or of every expert). */
typedef enum {
    ARCH_ACT_SILU = 0,    /* silu(g) * u (SwiGLU) */
    ARCH_ACT_GELU_TANH,   /* gelu_tanh(g) * u (GeGLU, ggml's F16 table) */
    ARCH_ACT_SWIGLU_OAI,  /* gpt-oss: x = min(g, 7), x * sigmoid(1.702 x) * (clamp(u, -7, 7) + 1) */
} arch_act_t;

/* How the router's logits become expert weights (MoE). */
typedef enum {
    ARCH_GATING_SOFTMAX = 0,    /* softmax over all experts, top-k of the probabilities */
    ARCH_GATING_SOFTMAX_TOPK,   /* top-k of the logits, softmax over the k chosen (gpt-oss) */
} arch_gating_t;

/* Sliding-window attention. */
typedef enum {
    ARCH_SWA_NONE = 0,     /* every layer attends to the whole context */
    ARCH_SWA_PATTERN,      /* attention.sliding_window W on the layers of the
                              pattern (attention.sliding_window_pattern, an
                              integer n: layer il is local iff il % n < n - 1,
                              or a per-layer bool array; default swa_pattern) */
    ARCH_SWA_IGNORED,      /* the key may be present but llama.cpp ignores it (phi3) */
    ARCH_SWA_ALL,          /* attention.sliding_window W > 0 (optional) on every attention layer (lfm2) */
} arch_swa_t;

/* Hybrid architectures: which layers are not attention, and what they are
 * instead (a per-sequence recurrent state replaces their KV cache). */
typedef enum {
    ARCH_REC_NONE = 0,     /* every layer is attention */
    ARCH_REC_GDN,          /* Gated DeltaNet (qwen35): the layers of attention.recurrent_layers, or
                              else those with (il + 1) % full_attention_interval != 0 (default 4) */
    ARCH_REC_SHORTCONV,    /* gated short convolution (lfm2): the layers whose head_count_kv is 0 */
} arch_rec_t;

/* Multi-section rope of vision-language text models: the rotary pairs
 * take their angles from the (t, h, w) position components of each token
 * (rope.dimension_sections), so image tokens carry their grid row and
 * column (forward.h: fwd_tok_t.my / mx). */
typedef enum {
    ARCH_MROPE_NONE = 0,
    ARCH_MROPE_SECTIONS,     /* contiguous sections (qwen2vl, qwen2.5-vl) */
    ARCH_MROPE_INTERLEAVED,  /* pair k % 3 picks t / h / w (qwen3vl) */
} arch_mrope_t;

typedef struct {
    const char *name;         /* general.architecture */
    /* attention */
    bool qk_norm;             /* attn_q_norm / attn_k_norm: per-head RMS norm of q and k before rope */
    bool q_prescale;          /* q *= 1/sqrt(head_dim) before q.k (the scores are then not scaled) */
    bool attn_sinks;          /* attn_sinks: one extra softmax logit per head, no value (gpt-oss) */
    bool rope_neox;           /* rotate pairs (i, i + n_rot/2) instead of (2i, 2i+1) */
    int no_rope_step;         /* > 0: layer il has no rope iff (il + 1) % step == 0 (smollm3) */
    arch_mrope_t mrope;       /* multi-section rope (rope.dimension_sections required) */
    bool deepstack;           /* n_deepstack_layers: input rows carry extra embeddings added to
                                 the residual after the first layers (qwen3vl) */
    arch_swa_t swa;
    int swa_pattern;          /* default pattern period for ARCH_SWA_PATTERN */
    bool swa_required;        /* attention.sliding_window must be present */
    float swa_rope_base;      /* > 0: local layers' default rope base (scale 1), overridden by
                                 rope.freq_base_swa; 0: local layers use the global rope */
    /* block */
    bool post_norms;          /* post_attention_norm and post_ffw_norm on the two branch outputs (gemma3) */
    bool embd_scale;          /* embeddings * sqrt(n_embd) (gemma) */
    const char *ffn_norm;     /* the FFN's input norm tensor ("ffn_norm"; gpt-oss: "post_attention_norm") */
    arch_ffn_t ffn;
    arch_act_t act;
    /* mixture of experts (ARCH_FFN_MOE) */
    arch_gating_t gating;
    bool moe_norm_w;          /* divide the k weights by their sum (clamped at 6.1e-5) */
    bool moe_biases;          /* router and expert biases (gpt-oss) */
    /* output */
    bool output_required;     /* output.weight must be present (no tying) */
    bool out_rows_late;       /* llama.cpp selects the logits rows after the last layer, not after its
                                 attention (gpt-oss): only changes which rows take the decode order */
    bool ref_2026;            /* numerics of the 2026 llama.cpp build the family's goldens come
                                 from: the attended cache padded to 256 cells (decode order) and
                                 K.q of prompt tokens through tinyBLAS; the llama/qwen2 goldens
                                 come from an older build (32 cells, K.q by ggml_vec_dot_f16) */
    /* ---- the 2026 hybrids (issue 28) ---- */
    arch_rec_t recurrent;     /* non-attention layers and their state (deltanet.h, shortconv.h) */
    bool attn_gate;           /* attn_q holds per head [q | gate]; the attention output is multiplied by
                                 sigmoid(gate) before attn_output (qwen35) */
    bool nextn;               /* the last nextn_predict_layers blocks are MTP blocks: bound, never run */
    bool per_layer_dims;      /* window layers have their own head size (key_length_swa) and rotary
                                 dims (rope.dimension_count_swa) and no rope_freqs (gemma4) */
    bool v_norm;              /* V is RMS-normed without weight; a layer without attn_v uses the raw K
                                 projection as V (gemma4) */
    bool attn_scale_one;      /* attention scores are not scaled (gemma4) */
    bool kv_shared;           /* attention.shared_kv_layers: the last layers attend an earlier layer's
                                 cache (the last window / full layer before them) (gemma4) */
    bool per_layer_embd;      /* per-layer token embeddings (embedding_length_per_layer_input) (gemma4) */
    bool layer_out_scale;     /* layer_output_scale: the residual stream times a scalar after each layer */
    bool moe_dense_par;       /* a layer with a router runs the dense MLP and the experts in parallel,
                                 each with its own norms (gemma4) */
    bool moe_shexp;           /* MoE layers may have a shared expert ffn_{gate,up,down}_shexp gated by
                                 sigmoid(ffn_gate_inp_shexp . x) (qwen35moe) */
    const char *output_norm;  /* the final norm tensor (NULL: "output_norm.weight"; lfm2: "token_embd_norm.weight") */
    float default_rope_theta;
    float default_rms_eps;
    /* ---- encoders and embedding models (issue 25) ---- */
    bool no_cache;            /* no KV cache: attention over the batch's own F32 K and V
                                 (llama.cpp's build_attn_inp_no_cache); a batch holds
                                 whole sequences (forward.h) */
    bool bidirectional;       /* non-causal attention unless <arch>.attention.causal says
                                 otherwise; sliding windows are then symmetric */
    bool post_ln;             /* BERT block: LayerNorm(token_embd_norm) of the input, then per
                                 layer x = LN(x + attn(x)) (attn_output_norm), x = LN(x +
                                 ffn(x)) (layer_output_norm), LayerNorms with biases; no
                                 output norm */
    bool pos_embd;            /* learned absolute positions (position_embd) */
    bool types_required;      /* token_types must be present (jina-bert-v2); bert and
                                 nomic-bert need tokenizer.ggml.token_type_count > 0 */
    bool alibi;               /* symmetric ALiBi bias instead of rope (jina-bert-v2) */
    bool ffn_fused_by_rows;   /* ARCH_FFN_GATED_FUSED only when ffn_up has 2 n_ff rows,
                                 else ARCH_FFN_SEQ (jina-bert-v2) */
} arch_desc_t;

/* The description of architecture `name` (NUL-terminated), or NULL. */
const arch_desc_t *arch_find(const char *name);

/* Comma-separated list of supported names, for error messages. */
const char *arch_supported_list(void);

#endif
