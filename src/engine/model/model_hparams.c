/* model_hparams.c - an architecture's hyper-parameters from GGUF metadata.
 *
 * Defaults and derived values follow llama.cpp's loader (llama-model.cpp,
 * llama-context.cpp and src/models/<arch>.cpp of the reference tree):
 * YaRN's attention factor is computed with the same float operations, the
 * sliding-window pattern is the family's default unless the file has
 * attention.sliding_window_pattern, and so on.
 */
#include "engine/model/model_hparams.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const gguf_file_t *f;
    const char *path;
    const char *arch;
    lf_err_t *err;
} reader_t;

static const char *key_of(const reader_t *r, const char *suffix, char *buf, size_t n)
{
    snprintf(buf, n, "%s.%s", r->arch, suffix);
    return buf;
}

/* An integer key; missing is an error unless optional (then *out is kept). */
static bool get_u32(const reader_t *r, const char *suffix, bool optional, uint32_t *out)
{
    char key[160];
    key_of(r, suffix, key, sizeof key);
    if (gguf_get_u32(r->f, key, out))
        return true;
    if (!optional || gguf_find_kv(r->f, key))
        return lf_err_set(r->err, LF_ERR_FORMAT, "%s: missing or invalid metadata '%s'", r->path, key), false;
    return true;
}

/* A float key: optional; a present key of another type is an error. */
static bool get_f32(const reader_t *r, const char *suffix, float *out)
{
    char key[160];
    key_of(r, suffix, key, sizeof key);
    if (gguf_get_f32(r->f, key, out) || !gguf_find_kv(r->f, key))
        return true;
    return lf_err_set(r->err, LF_ERR_FORMAT, "%s: metadata '%s' is not a number", r->path, key), false;
}

/* rope.scaling.*: none, linear, yarn (and longrope, whose per-dimension
 * factors are tensors: no position scaling unless the factor key says so). */
static bool read_rope_scaling(const reader_t *r, model_hparams_t *hp)
{
    char key[160];
    gguf_str_t s;
    float factor = 0.0f;
    hp->rope_scaling = MODEL_ROPE_SCALE_LINEAR; /* llama.cpp's default type */
    if (gguf_get_str(r->f, key_of(r, "rope.scaling.type", key, sizeof key), &s)) {
        if (gguf_str_eq(s, "none"))
            hp->rope_scaling = MODEL_ROPE_SCALE_NONE;
        else if (gguf_str_eq(s, "yarn"))
            hp->rope_scaling = MODEL_ROPE_SCALE_YARN;
        else if (!gguf_str_eq(s, "linear") && !gguf_str_eq(s, "longrope"))
            return lf_err_set(r->err, LF_ERR_UNSUPPORTED, "%s: rope scaling '%.*s' is not supported", r->path,
                              (int)(s.len < 40 ? s.len : 40), s.ptr), false;
    }
    if (!get_f32(r, "rope.scaling.factor", &factor))
        return false;
    if (factor == 0.0f && !get_f32(r, "rope.scale_linear", &factor))
        return false;
    if (!(factor >= 0.0f) || factor > 1e6f)
        return lf_err_set(r->err, LF_ERR_FORMAT, "%s: rope scaling factor %g is invalid", r->path, factor), false;
    hp->rope_freq_scale = factor == 0.0f ? 1.0f : 1.0f / factor;
    if (hp->rope_scaling == MODEL_ROPE_SCALE_NONE)
        hp->rope_freq_scale = 1.0f;
    hp->rope_attn_factor = 1.0f;
    if (!get_f32(r, "rope.scaling.attn_factor", &hp->rope_attn_factor))
        return false;
    uint32_t orig = (uint32_t)hp->n_ctx_train;
    if (!get_u32(r, "rope.scaling.original_context_length", true, &orig))
        return false;
    hp->n_ctx_orig = orig > 0 && orig <= (1u << 24) ? (int32_t)orig : hp->n_ctx_train;
    hp->yarn_beta_fast = 32.0f;
    hp->yarn_beta_slow = 1.0f;
    hp->yarn_ext_factor = hp->rope_scaling == MODEL_ROPE_SCALE_YARN ? 1.0f : 0.0f;
    /* llama-context.cpp: YaRN's magnitude factor get_mscale(1/freq_scale),
     * cancelled again because ggml's rope multiplies it in itself */
    float attn = 1.0f;
    if (hp->yarn_ext_factor != 0.0f) {
        const float f = 1.0f / hp->rope_freq_scale;
        const float mscale = f <= 1.0f ? 1.0f : 0.1f * 1.0f * logf(f) + 1.0f;
        attn = mscale;
        attn *= 1.0f / (1.0f + 0.1f * logf(f));
    }
    hp->rope_attn_factor = attn * hp->rope_attn_factor;
    return true;
}

/* Which layers are local: attention.sliding_window_pattern as a per-layer
 * bool array, or a period n (layer il local iff il % n < n - 1). */
static bool read_swa_layers(const reader_t *r, const arch_desc_t *a, model_hparams_t *hp, bool *swa)
{
    char key[160];
    uint32_t w = 0;
    key_of(r, "attention.sliding_window", key, sizeof key);
    bool found = gguf_find_kv(r->f, key) != NULL;
    if (found && !gguf_get_u32(r->f, key, &w))
        return lf_err_set(r->err, LF_ERR_FORMAT, "%s: invalid metadata '%s'", r->path, key), false;
    if (a->swa_required && !found)
        return lf_err_set(r->err, LF_ERR_FORMAT, "%s: missing metadata '%s'", r->path, key), false;
    if (a->swa != ARCH_SWA_PATTERN || w == 0)
        return true; /* ARCH_SWA_IGNORED and NONE: full attention everywhere */
    if (w > (1u << 24))
        return lf_err_set(r->err, LF_ERR_FORMAT, "%s: sliding window %u is invalid", r->path, w), false;
    hp->n_swa = (int32_t)w;
    key_of(r, "attention.sliding_window_pattern", key, sizeof key);
    const gguf_kv_t *arr = gguf_get_arr(r->f, key);
    if (arr) {
        if (arr->arr_type != GGUF_VT_BOOL || arr->arr_len != (uint64_t)hp->n_layer)
            return lf_err_set(r->err, LF_ERR_FORMAT, "%s: '%s' must be %d booleans", r->path, key, hp->n_layer),
                   false;
        for (int i = 0; i < hp->n_layer; i++)
            swa[i] = ((const uint8_t *)arr->data)[i] != 0;
    } else {
        uint32_t n = (uint32_t)a->swa_pattern;
        if (!get_u32(r, "attention.sliding_window_pattern", true, &n))
            return false;
        for (int i = 0; i < hp->n_layer; i++)
            swa[i] = n == 0 || (uint32_t)i % n < n - 1;
    }
    for (int i = 0; i < hp->n_layer; i++)
        hp->n_layer_swa += swa[i];
    if (hp->n_layer_swa == 0)
        hp->n_swa = 0;
    return true;
}

static bool read_moe(const reader_t *r, const arch_desc_t *a, model_hparams_t *hp)
{
    if (a->ffn != ARCH_FFN_MOE)
        return true;
    uint32_t ne = 0, nu = 0, ff = (uint32_t)hp->n_ff;
    if (!get_u32(r, "expert_count", false, &ne) || !get_u32(r, "expert_used_count", false, &nu) ||
        !get_u32(r, "expert_feed_forward_length", ff > 0, &ff))
        return false;
    if (ne < 1 || ne > 1024 || nu < 1 || nu > ne || ff < 1 || ff > (1u << 20))
        return lf_err_set(r->err, LF_ERR_FORMAT, "%s: invalid experts (%u experts, %u used, width %u)", r->path, ne,
                          nu, ff), false;
    hp->n_expert = (int32_t)ne;
    hp->n_expert_used = (int32_t)nu;
    hp->n_ff_exp = (int32_t)ff;
    return true;
}

/* Encoders and embedding models: causality, LayerNorm epsilon, token
 * types, pooling type and classifier outputs (llama.cpp's load_hparams and
 * the bert family's load_arch_hparams). */
static bool read_embedding(const reader_t *r, const arch_desc_t *a, model_hparams_t *hp)
{
    char key[160];
    bool b = !a->bidirectional;
    if (gguf_find_kv(r->f, key_of(r, "attention.causal", key, sizeof key)) && !gguf_get_bool(r->f, key, &b))
        return lf_err_set(r->err, LF_ERR_FORMAT, "%s: metadata '%s' is not a boolean", r->path, key), false;
    /* llama.cpp builds gemma-embedding without a causal mask, whatever the key */
    hp->causal = !strcmp(a->name, "gemma-embedding") ? false : b;
    hp->norm_eps = 1e-12f;
    if (a->post_ln) {
        key_of(r, "attention.layer_norm_epsilon", key, sizeof key);
        if (!gguf_get_f32(r->f, key, &hp->norm_eps) || !(hp->norm_eps >= 0.0f))
            return lf_err_set(r->err, LF_ERR_FORMAT, "%s: missing or invalid metadata '%s'", r->path, key), false;
    }
    uint32_t v = 0;
    if (gguf_find_kv(r->f, "tokenizer.ggml.token_type_count") &&
        (!gguf_get_u32(r->f, "tokenizer.ggml.token_type_count", &v) || v > 1024))
        return lf_err_set(r->err, LF_ERR_FORMAT, "%s: invalid tokenizer.ggml.token_type_count", r->path), false;
    hp->n_token_types = (int32_t)v;
    if (a->post_ln && !a->types_required && hp->n_token_types == 0)
        return lf_err_set(r->err, LF_ERR_FORMAT, "%s: %s model needs to define token type count "
                          "(tokenizer.ggml.token_type_count)", r->path, a->name), false;
    hp->pooling = -1;
    v = 0;
    if (gguf_find_kv(r->f, key_of(r, "pooling_type", key, sizeof key))) {
        if (!gguf_get_u32(r->f, key, &v) || v > MODEL_POOLING_RANK)
            return lf_err_set(r->err, LF_ERR_FORMAT, "%s: invalid metadata '%s'", r->path, key), false;
        hp->pooling = (int32_t)v;
    }
    hp->n_cls_out = 1;
    const gguf_kv_t *labels = gguf_get_arr(r->f, key_of(r, "classifier.output_labels", key, sizeof key));
    if (labels) {
        if (labels->arr_len < 1 || labels->arr_len > 65536)
            return lf_err_set(r->err, LF_ERR_FORMAT, "%s: invalid metadata '%s'", r->path, key), false;
        hp->n_cls_out = (int32_t)labels->arr_len;
    }
    return true;
}

bool model_hparams_read(const gguf_file_t *f, const char *path, const arch_desc_t **arch_out, model_hparams_t *hp,
                        model_layer_kinds_t *kinds, lf_err_t *err)
{
    gguf_str_t s;
    kinds->swa = kinds->rope = NULL;
    if (!gguf_get_str(f, "general.architecture", &s))
        return lf_err_set(err, LF_ERR_FORMAT, "%s: missing general.architecture", path), false;
    snprintf(hp->arch, sizeof hp->arch, "%.*s", (int)(s.len < 31 ? s.len : 31), s.ptr);
    const arch_desc_t *a = arch_find(hp->arch);
    if (!a || s.len >= sizeof hp->arch)
        return lf_err_set(err, LF_ERR_UNSUPPORTED, "%s: architecture '%s' is not supported (supported: %s)", path,
                          hp->arch, arch_supported_list()), false;
    *arch_out = a;
    if (gguf_get_str(f, "general.name", &s))
        snprintf(hp->name, sizeof hp->name, "%.*s", (int)(s.len < 127 ? s.len : 127), s.ptr);
    reader_t r = {f, path, hp->arch, err};
    uint32_t v;
    if (!get_u32(&r, "embedding_length", false, &v)) return false;
    hp->n_embd = (int32_t)v;
    if (!get_u32(&r, "block_count", false, &v)) return false;
    hp->n_layer = (int32_t)v;
    v = 0;
    if (!get_u32(&r, "feed_forward_length", a->ffn == ARCH_FFN_MOE, &v)) return false;
    hp->n_ff = (int32_t)v;
    if (!get_u32(&r, "attention.head_count", false, &v)) return false;
    hp->n_head = (int32_t)v;
    v = (uint32_t)hp->n_head;
    if (!get_u32(&r, "attention.head_count_kv", true, &v)) return false;
    hp->n_head_kv = (int32_t)v;
    v = 2048;
    if (!get_u32(&r, "context_length", true, &v)) return false;
    hp->n_ctx_train = (int32_t)v;
    if (hp->n_embd <= 0 || hp->n_embd > 65536 || hp->n_layer <= 0 || hp->n_layer > 1024 ||
        (hp->n_ff <= 0 && a->ffn != ARCH_FFN_MOE) || hp->n_ff < 0 || hp->n_ff > 1 << 20 || hp->n_head <= 0 ||
        hp->n_head > 1024 || hp->n_head_kv <= 0 || hp->n_head % hp->n_head_kv || hp->n_ctx_train <= 0 ||
        hp->n_ctx_train > (1 << 24))
        return lf_err_set(err, LF_ERR_FORMAT, "%s: inconsistent hyper-parameters (embd %d, layers %d, ff %d, "
                          "heads %d/%d, ctx %d)", path, hp->n_embd, hp->n_layer, hp->n_ff, hp->n_head,
                          hp->n_head_kv, hp->n_ctx_train), false;
    v = (uint32_t)(hp->n_embd / hp->n_head);
    if (!get_u32(&r, "attention.key_length", true, &v)) return false;
    hp->head_dim = (int32_t)v;
    uint32_t vlen = v;
    if (!get_u32(&r, "attention.value_length", true, &vlen)) return false;
    if (hp->head_dim <= 0 || hp->head_dim % 2 || vlen != (uint32_t)hp->head_dim || hp->head_dim > 2048)
        return lf_err_set(err, LF_ERR_UNSUPPORTED, "%s: head size %d (value %u) not supported", path, hp->head_dim,
                          vlen), false;
    v = (uint32_t)hp->head_dim;
    if (!get_u32(&r, "rope.dimension_count", true, &v)) return false;
    hp->n_rot = (int32_t)v;
    if (hp->n_rot <= 0 || hp->n_rot > hp->head_dim || hp->n_rot % 2)
        return lf_err_set(err, LF_ERR_FORMAT, "%s: rope dimension %d invalid for head size %d", path, hp->n_rot,
                          hp->head_dim), false;
    hp->rms_eps = a->default_rms_eps;
    hp->rope_theta = a->default_rope_theta;
    if (!get_f32(&r, "attention.layer_norm_rms_epsilon", &hp->rms_eps) ||
        !get_f32(&r, "rope.freq_base", &hp->rope_theta) || !read_rope_scaling(&r, hp) || !read_moe(&r, a, hp) ||
        !read_embedding(&r, a, hp))
        return false;
    if (!(hp->rms_eps >= 0.0f) || !(hp->rope_theta > 0.0f) || !isfinite(hp->rope_theta))
        return lf_err_set(err, LF_ERR_FORMAT, "%s: invalid norm epsilon %g or rope base %g", path, hp->rms_eps,
                          hp->rope_theta), false;
    hp->rope_neox = a->rope_neox;
    hp->logit_softcap = 0.0f;
    if (!get_f32(&r, "final_logit_softcapping", &hp->logit_softcap))
        return false;
    if (!(hp->logit_softcap >= 0.0f))
        return lf_err_set(err, LF_ERR_FORMAT, "%s: invalid final_logit_softcapping", path), false;
    /* gemma's attention scale: 1/sqrt(head size), except the 27B model
     * (62 layers), which uses 1/sqrt(n_embd / n_head) (llama.cpp, after
     * gemma_pytorch's config) */
    hp->q_scale = 1.0f;
    if (a->q_prescale)
        hp->q_scale = !strcmp(a->name, "gemma3") && hp->n_layer == 62
                          ? 1.0f / sqrtf((float)(hp->n_embd / hp->n_head))
                          : 1.0f / sqrtf((float)hp->head_dim);

    kinds->swa = calloc((size_t)hp->n_layer, sizeof *kinds->swa);
    kinds->rope = calloc((size_t)hp->n_layer, sizeof *kinds->rope);
    if (!kinds->swa || !kinds->rope) {
        lf_err_set(err, LF_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    if (!read_swa_layers(&r, a, hp, kinds->swa))
        goto fail;
    for (int i = 0; i < hp->n_layer; i++)
        kinds->rope[i] = (a->no_rope_step <= 0 || (i + 1) % a->no_rope_step != 0) && !a->pos_embd && !a->alibi;
    /* local layers' rope: their own base when the family has one (gemma3:
     * rope.freq_base_swa, llama.cpp's default 10000, no scaling), else the
     * global rope (gpt-oss unless the file says otherwise) */
    hp->rope_theta_swa = hp->rope_theta;
    hp->rope_freq_scale_swa = hp->rope_freq_scale;
    if (hp->n_swa > 0 && a->swa_rope_base > 0.0f) {
        hp->rope_theta_swa = a->swa_rope_base;
        hp->rope_freq_scale_swa = 1.0f;
    }
    if (hp->n_swa > 0 && !get_f32(&r, "rope.freq_base_swa", &hp->rope_theta_swa))
        goto fail;
    if (!(hp->rope_theta_swa > 0.0f) || !isfinite(hp->rope_theta_swa)) {
        lf_err_set(err, LF_ERR_FORMAT, "%s: invalid rope.freq_base_swa", path);
        goto fail;
    }
    return true;
fail:
    free(kinds->swa);
    free(kinds->rope);
    kinds->swa = kinds->rope = NULL;
    return false;
}
