/* arch.c - the table of supported architectures.
 *
 * Each row states what llama.cpp's loader and graph for that architecture
 * do (src/models/<arch>.cpp of the reference tree); fields left out are
 * false / 0 / the first enum value: no biases, no q/k norm, rope on every
 * layer, full attention, SwiGLU FFN with ffn_norm as its input norm.
 */
#include "engine/model/arch.h"

#include <string.h>

static const arch_desc_t archs[] = {
    /* Llama 2/3.x, TinyLlama, SmolLM/SmolLM2, Mistral-style: interleaved
     * rope pairs, no biases; llama3 rope scaling comes from rope_freqs. */
    {.name = "llama", .ffn_norm = "ffn_norm", .default_rope_theta = 10000.0f, .default_rms_eps = 1e-5f},
    /* Qwen2/2.5: q/k/v biases, NEOX rope, base 1e6 by convention. */
    {.name = "qwen2", .rope_neox = true, .ffn_norm = "ffn_norm",
     .default_rope_theta = 1000000.0f, .default_rms_eps = 1e-6f},
    /* Qwen2-VL / Qwen2.5-VL text model: qwen2 with multi-section rope
     * (t, h, w sections over the rotary pairs). */
    {.name = "qwen2vl", .rope_neox = true, .mrope = ARCH_MROPE_SECTIONS, .ffn_norm = "ffn_norm", .ref_2026 = true,
     .default_rope_theta = 1000000.0f, .default_rms_eps = 1e-6f},
    /* Qwen3 dense: per-head RMS norm of q and k before NEOX rope, no biases. */
    {.name = "qwen3", .qk_norm = true, .rope_neox = true, .ffn_norm = "ffn_norm", .ref_2026 = true,
     .default_rope_theta = 1000000.0f, .default_rms_eps = 1e-6f},
    /* Qwen3-VL text model: qwen3 with interleaved multi-section rope and
     * deepstack (image rows add their extra embeddings after the first
     * n_deepstack_layers layers). */
    {.name = "qwen3vl", .qk_norm = true, .rope_neox = true, .mrope = ARCH_MROPE_INTERLEAVED, .deepstack = true,
     .ffn_norm = "ffn_norm", .ref_2026 = true, .default_rope_theta = 1000000.0f, .default_rms_eps = 1e-6f},
    /* Qwen3 MoE (30B-A3B, 235B-A22B): qwen3 attention; every layer a
     * mixture of experts, softmax router, top-k renormalised. */
    {.name = "qwen3moe", .qk_norm = true, .rope_neox = true, .ffn_norm = "ffn_norm", .ffn = ARCH_FFN_MOE,
     .gating = ARCH_GATING_SOFTMAX, .moe_norm_w = true, .ref_2026 = true,
     .default_rope_theta = 1000000.0f, .default_rms_eps = 1e-6f},
    /* Gemma 3: local (sliding-window) layers in a period of 6 with their own
     * rope base, q/k norms, q scaled before q.k, post-attention and post-FFN
     * norms, embeddings scaled by sqrt(n_embd), GeGLU (tanh), tied output. */
    {.name = "gemma3", .qk_norm = true, .q_prescale = true, .rope_neox = true, .swa = ARCH_SWA_PATTERN,
     .swa_pattern = 6, .swa_rope_base = 10000.0f, .post_norms = true, .embd_scale = true, .ffn_norm = "ffn_norm", .act = ARCH_ACT_GELU_TANH,
     .ref_2026 = true, .default_rope_theta = 1000000.0f, .default_rms_eps = 1e-6f},
    /* Phi-3/3.5/4-mini: fused attn_qkv and gate|up, NEOX rope (partial
     * rotary and LongRoPE factor tensors when the file has them), q scaled
     * before q.k; the sliding window key is ignored, as llama.cpp does. */
    {.name = "phi3", .q_prescale = true, .rope_neox = true, .swa = ARCH_SWA_IGNORED,
     .ffn_norm = "ffn_norm", .ffn = ARCH_FFN_GATED_FUSED, .ref_2026 = true, .default_rope_theta = 10000.0f,
     .default_rms_eps = 1e-5f},
    /* SmolLM3: llama layers, every fourth layer without rope. */
    {.name = "smollm3", .no_rope_step = 4, .ffn_norm = "ffn_norm", .ref_2026 = true,
     .default_rope_theta = 10000.0f, .default_rms_eps = 1e-6f},
    /* gpt-oss: q/k/v/o biases, attention sinks, sliding window on even
     * layers, YaRN rope; MoE with router and expert biases, softmax over the
     * top-k logits, swiglu-oai; the MoE input norm is post_attention_norm. */
    {.name = "gpt-oss", .attn_sinks = true, .rope_neox = true,
     .swa = ARCH_SWA_PATTERN, .swa_pattern = 2, .swa_required = true, .ffn_norm = "post_attention_norm",
     .ffn = ARCH_FFN_MOE, .act = ARCH_ACT_SWIGLU_OAI, .gating = ARCH_GATING_SOFTMAX_TOPK, .moe_biases = true,
     .output_required = true, .out_rows_late = true, .ref_2026 = true, .default_rope_theta = 10000.0f,
     .default_rms_eps = 1e-5f},
    /* Qwen3.5 dense (0.8B-27B): Gated DeltaNet layers (3 in 4) and gated
     * full attention (q/k norms, partial rotary through IMROPE sections,
     * sigmoid output gate); the pre-FFN norm is post_attention_norm; the
     * trailing MTP block is bound but not run; logits rows kept after the
     * last layer. Its rope is qwen3vl's interleaved multi-section rope
     * (text positions (p, p, p, 0)). */
    {.name = "qwen35", .qk_norm = true, .rope_neox = true, .ffn_norm = "post_attention_norm", .out_rows_late = true,
     .ref_2026 = true, .recurrent = ARCH_REC_GDN, .attn_gate = true, .mrope = ARCH_MROPE_INTERLEAVED, .nextn = true,
     .default_rope_theta = 10000000.0f, .default_rms_eps = 1e-6f},
    /* Qwen3.5 MoE (35B-A3B ...): qwen35 layers, every FFN a softmax top-k
     * renormalised MoE plus a sigmoid-gated shared expert. */
    {.name = "qwen35moe", .qk_norm = true, .rope_neox = true, .ffn_norm = "post_attention_norm",
     .ffn = ARCH_FFN_MOE, .gating = ARCH_GATING_SOFTMAX, .moe_norm_w = true, .moe_shexp = true,
     .out_rows_late = true, .ref_2026 = true, .recurrent = ARCH_REC_GDN, .attn_gate = true, .mrope = ARCH_MROPE_INTERLEAVED,
     .nextn = true, .default_rope_theta = 10000000.0f, .default_rms_eps = 1e-6f},
    /* Gemma 4 (E2B/E4B, 26B-A4B, 31B): gemma3's block with per-layer head
     * sizes and KV heads, proportional rope (rope_freqs) on the full layers,
     * V norm, attention scale 1, KV sharing across the last layers,
     * per-layer token embeddings, a layer output scale, and MoE layers with
     * a parallel dense MLP; logits rows kept after the last layer. */
    {.name = "gemma4", .qk_norm = true, .rope_neox = true, .swa = ARCH_SWA_PATTERN, .swa_required = true,
     .swa_rope_base = 10000.0f, .post_norms = true, .embd_scale = true, .ffn_norm = "ffn_norm",
     .act = ARCH_ACT_GELU_TANH, .gating = ARCH_GATING_SOFTMAX, .moe_norm_w = true, .out_rows_late = true,
     .ref_2026 = true, .per_layer_dims = true, .v_norm = true, .attn_scale_one = true, .kv_shared = true,
     .per_layer_embd = true, .layer_out_scale = true, .moe_dense_par = true,
     .default_rope_theta = 1000000.0f, .default_rms_eps = 1e-6f},
    /* LFM2 / LFM2.5: gated short-convolution layers (head_count_kv 0) and
     * GQA attention layers with q/k norms; the final norm is stored as
     * token_embd_norm. */
    {.name = "lfm2", .qk_norm = true, .rope_neox = true, .swa = ARCH_SWA_ALL, .ffn_norm = "ffn_norm",
     .ref_2026 = true, .recurrent = ARCH_REC_SHORTCONV, .output_norm = "token_embd_norm.weight",
     .default_rope_theta = 1000000.0f, .default_rms_eps = 1e-5f},
    /* BERT (MiniLM, bge, e5, XLM-RoBERTa cross-encoders): learned positions,
     * token type row 0, LayerNorm after each residual, biases, GELU FFN;
     * bidirectional, no KV cache. */
    {.name = "bert", .no_cache = true, .bidirectional = true, .post_ln = true, .pos_embd = true,
     .ffn = ARCH_FFN_SEQ, .act = ARCH_ACT_GELU_TANH, .default_rope_theta = 10000.0f, .default_rms_eps = 1e-12f},
    /* nomic-embed-text: bert's block with NEOX rope instead of positions,
     * SwiGLU FFN, usually no biases. */
    {.name = "nomic-bert", .no_cache = true, .bidirectional = true, .post_ln = true, .rope_neox = true,
     .ffn = ARCH_FFN_GATED, .act = ARCH_ACT_SILU, .default_rope_theta = 10000.0f, .default_rms_eps = 1e-12f},
    /* jina-embeddings-v2: bert's block with symmetric ALiBi (no positions),
     * GEGLU with the gate fused in ffn_up (or plain GELU). */
    {.name = "jina-bert-v2", .no_cache = true, .bidirectional = true, .post_ln = true, .types_required = true,
     .alibi = true, .ffn = ARCH_FFN_GATED_FUSED, .ffn_fused_by_rows = true, .act = ARCH_ACT_GELU_TANH,
     .default_rope_theta = 10000.0f, .default_rms_eps = 1e-12f},
    /* EmbeddingGemma: gemma3's layers without causal mask (symmetric sliding
     * window) or KV cache; dense layers after pooling. */
    {.name = "gemma-embedding", .qk_norm = true, .q_prescale = true, .rope_neox = true, .swa = ARCH_SWA_PATTERN,
     .swa_pattern = 6, .swa_rope_base = 10000.0f, .post_norms = true, .embd_scale = true, .ffn_norm = "ffn_norm",
     .act = ARCH_ACT_GELU_TANH, .ref_2026 = true, .default_rope_theta = 1000000.0f, .default_rms_eps = 1e-6f,
     .no_cache = true, .bidirectional = true},
};

const arch_desc_t *arch_find(const char *name)
{
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (!strcmp(archs[i].name, name))
            return &archs[i];
    return NULL;
}

const char *arch_supported_list(void)
{
    return "llama, qwen2, qwen3, qwen3moe, gemma3, phi3, smollm3, gpt-oss, qwen35, qwen35moe, gemma4, lfm2, bert, "
           "nomic-bert, jina-bert-v2, gemma-embedding";
}
