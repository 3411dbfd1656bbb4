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

/* An integer key that may also be a per-layer array (n entries): out[i]
 * for every layer. Missing: error unless optional (then out keeps its
 * values). */
static bool get_u32_layers(const reader_t *r, const char *suffix, bool optional, int n, int32_t *out)
{
    char key[160];
    key_of(r, suffix, key, sizeof key);
    const gguf_kv_t *arr = gguf_get_arr(r->f, key);
    if (arr) {
        if ((arr->arr_type != GGUF_VT_UINT32 && arr->arr_type != GGUF_VT_INT32) || arr->arr_len != (uint64_t)n)
            return lf_err_set(r->err, LF_ERR_FORMAT, "%s: '%s' must be %d integers", r->path, key, n), false;
        for (int i = 0; i < n; i++) {
            int32_t v;
            memcpy(&v, (const uint8_t *)arr->data + 4 * (size_t)i, 4);
            if (v < 0 || v > (1 << 20))
                return lf_err_set(r->err, LF_ERR_FORMAT, "%s: '%s'[%d] = %d is invalid", r->path, key, i, v), false;
            out[i] = v;
        }
        return true;
    }
    uint32_t v = 0;
    if (!gguf_get_u32(r->f, key, &v)) {
        if (!optional || gguf_find_kv(r->f, key))
            return lf_err_set(r->err, LF_ERR_FORMAT, "%s: missing or invalid metadata '%s'", r->path, key), false;
        return true;
    }
    if (v > (1u << 20))
        return lf_err_set(r->err, LF_ERR_FORMAT, "%s: metadata '%s' = %u is invalid", r->path, key, v), false;
    for (int i = 0; i < n; i++)
        out[i] = (int32_t)v;
    return true;
}

/* A per-layer bool array of n entries, if present. */
static bool get_bool_layers(const reader_t *r, const char *suffix, int n, bool *out, bool *found)
{
    char key[160];
    key_of(r, suffix, key, sizeof key);
    const gguf_kv_t *arr = gguf_get_arr(r->f, key);
    *found = arr != NULL;
    if (!arr)
        return true;
    if (arr->arr_type != GGUF_VT_BOOL || arr->arr_len != (uint64_t)n)
        return lf_err_set(r->err, LF_ERR_FORMAT, "%s: '%s' must be %d booleans", r->path, key, n), false;
    for (int i = 0; i < n; i++)
        out[i] = ((const uint8_t *)arr->data)[i] != 0;
    return true;
}

/* Which layers are local: attention.sliding_window_pattern as a per-layer
 * bool array, or a period n (layer il local iff il % n < n - 1); with
 * ARCH_SWA_ALL every attention layer. Recurrent layers are never local. */
static bool read_swa_layers(const reader_t *r, const arch_desc_t *a, model_hparams_t *hp,
                            const model_layer_kinds_t *k)
{
    char key[160];
    uint32_t w = 0;
    bool *swa = k->swa;
    key_of(r, "attention.sliding_window", key, sizeof key);
    bool found = gguf_find_kv(r->f, key) != NULL;
    if (found && !gguf_get_u32(r->f, key, &w))
        return lf_err_set(r->err, LF_ERR_FORMAT, "%s: invalid metadata '%s'", r->path, key), false;
    if (a->swa_required && !found)
        return lf_err_set(r->err, LF_ERR_FORMAT, "%s: missing metadata '%s'", r->path, key), false;
    if ((a->swa != ARCH_SWA_PATTERN && a->swa != ARCH_SWA_ALL) || w == 0)
        return true; /* ARCH_SWA_IGNORED and NONE: full attention everywhere */
    if (w > (1u << 24))
        return lf_err_set(r->err, LF_ERR_FORMAT, "%s: sliding window %u is invalid", r->path, w), false;
    hp->n_swa = (int32_t)w;
    if (a->swa == ARCH_SWA_ALL) {
        for (int i = 0; i < hp->n_layer; i++)
            swa[i] = k->kind[i] == MODEL_LAYER_ATTN;
    } else {
        bool arr = false;
        if (!get_bool_layers(r, "attention.sliding_window_pattern", hp->n_layer_all, swa, &arr))
            return false;
        if (!arr) {
            uint32_t n = (uint32_t)a->swa_pattern;
            if (!get_u32(r, "attention.sliding_window_pattern", a->swa_pattern > 0, &n))
                return false;
            for (int i = 0; i < hp->n_layer; i++)
                swa[i] = n == 0 || (uint32_t)i % n < n - 1;
        }
    }
    for (int i = 0; i < hp->n_layer_all; i++) {
        swa[i] = swa[i] && k->kind[i] == MODEL_LAYER_ATTN;
        hp->n_layer_swa += i < hp->n_layer && swa[i];
    }
    if (hp->n_layer_swa == 0)
        hp->n_swa = 0;
    return true;
}

static bool read_moe(const reader_t *r, const arch_desc_t *a, model_hparams_t *hp)
{
    char key[160];
    /* moe_dense_par families have experts when the file says so */
    if (a->ffn != ARCH_FFN_MOE && !(a->moe_dense_par && gguf_find_kv(r->f, key_of(r, "expert_count", key, sizeof key))))
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
    uint32_t sh = (uint32_t)(hp->n_ff > 0 ? hp->n_ff : hp->n_ff_exp);
    if (a->moe_shexp && !get_u32(r, "expert_shared_feed_forward_length", true, &sh))
        return false;
    if (sh < 1 || sh > (1u << 20))
        return lf_err_set(r->err, LF_ERR_FORMAT, "%s: invalid shared expert width %u", r->path, sh), false;
    hp->n_ff_shexp = (int32_t)sh;
    return true;
}

/* Vision-language text models: rope.dimension_sections (4 integers, a
 * shorter array padded with zeros, as llama.cpp's get_key_or_arr) and
 * n_deepstack_layers. */
static bool read_vl(const reader_t *r, const arch_desc_t *a, model_hparams_t *hp)
{
    char key[160];
    hp->n_embd_inp = hp->n_embd;
    if (a->mrope != ARCH_MROPE_NONE) {
        const gguf_kv_t *arr = gguf_get_arr(r->f, key_of(r, "rope.dimension_sections", key, sizeof key));
        if (!arr || arr->arr_len < 1 || arr->arr_len > 4 ||
            (arr->arr_type != GGUF_VT_INT32 && arr->arr_type != GGUF_VT_UINT32))
            return lf_err_set(r->err, LF_ERR_FORMAT, "%s: '%s' must be an array of up to 4 integers", r->path, key),
                   false;
        int64_t sum = 0;
        for (uint64_t i = 0; i < arr->arr_len; i++) {
            int32_t v;
            memcpy(&v, (const uint8_t *)arr->data + 4 * i, 4);
            if (v < 0 || v > hp->n_rot)
                return lf_err_set(r->err, LF_ERR_FORMAT, "%s: rope section %d is invalid", r->path, v), false;
            hp->rope_sections[i] = v;
            sum += v;
        }
        if (sum <= 0 || sum > hp->n_rot / 2)
            return lf_err_set(r->err, LF_ERR_FORMAT, "%s: rope sections cover %lld pairs of %d", r->path,
                              (long long)sum, hp->n_rot / 2), false;
    }
    if (a->deepstack) {
        uint32_t v = 0;
        if (!get_u32(r, "n_deepstack_layers", true, &v))
            return false;
        if (v > (uint32_t)hp->n_layer)
            return lf_err_set(r->err, LF_ERR_FORMAT, "%s: %u deepstack layers of %d", r->path, v, hp->n_layer), false;
        hp->n_deepstack = (int32_t)v;
        hp->n_embd_inp = hp->n_embd * (1 + hp->n_deepstack);
    }
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

/* Which layers are recurrent (hybrid families), before anything reads the
 * per-layer head counts. */
static bool read_layer_kinds(const reader_t *r, const arch_desc_t *a, model_hparams_t *hp, model_layer_kinds_t *k)
{
    const int N = hp->n_layer_all;
    if (a->recurrent == ARCH_REC_GDN) {
        bool *rec = calloc((size_t)N, sizeof *rec), found = false;
        if (!rec)
            return lf_err_set(r->err, LF_ERR_NOMEM, "%s: out of memory", r->path), false;
        if (!get_bool_layers(r, "attention.recurrent_layers", N, rec, &found)) {
            free(rec);
            return false;
        }
        uint32_t interval = 4;
        if (!found && !get_u32(r, "full_attention_interval", true, &interval)) {
            free(rec);
            return false;
        }
        if (!found && interval == 0) {
            free(rec);
            return lf_err_set(r->err, LF_ERR_FORMAT, "%s: full_attention_interval 0 is invalid", r->path), false;
        }
        for (int i = 0; i < N; i++) {
            bool g = found ? rec[i] : (uint32_t)(i + 1) % interval != 0;
            k->kind[i] = (uint8_t)(i < hp->n_layer && g ? MODEL_LAYER_GDN : MODEL_LAYER_ATTN);
        }
        free(rec);
    } else if (a->recurrent == ARCH_REC_SHORTCONV) {
        for (int i = 0; i < N; i++)
            k->kind[i] = (uint8_t)(k->n_head_kv[i] == 0 ? MODEL_LAYER_SHORTCONV : MODEL_LAYER_ATTN);
    }
    return true;
}

/* The recurrent layers' hyper-parameters (ssm.*, shortconv.*). */
static bool read_recurrent(const reader_t *r, model_hparams_t *hp, const model_layer_kinds_t *k)
{
    bool gdn = false, sc = false;
    for (int i = 0; i < hp->n_layer; i++) {
        gdn |= k->kind[i] == MODEL_LAYER_GDN;
        sc |= k->kind[i] == MODEL_LAYER_SHORTCONV;
    }
    if (gdn) {
        uint32_t dc, ds, ng, dr, di;
        if (!get_u32(r, "ssm.conv_kernel", false, &dc) || !get_u32(r, "ssm.state_size", false, &ds) ||
            !get_u32(r, "ssm.group_count", false, &ng) || !get_u32(r, "ssm.time_step_rank", false, &dr) ||
            !get_u32(r, "ssm.inner_size", false, &di))
            return false;
        /* llama.cpp's fused kernel needs head_v_dim == d_state and v heads a
         * multiple of the q/k heads */
        if (dc < 2 || dc > 64 || ds < 1 || ds > 1024 || ng < 1 || ng > 1024 || dr < 1 || dr > 1024 ||
            dr % ng != 0 || di != dr * ds)
            return lf_err_set(r->err, LF_ERR_UNSUPPORTED,
                              "%s: Gated DeltaNet shape not supported (conv %u, state %u, groups %u, v heads %u, "
                              "inner %u)", r->path, dc, ds, ng, dr, di), false;
        hp->ssm_d_conv = (int32_t)dc;
        hp->ssm_d_state = (int32_t)ds;
        hp->ssm_n_group = (int32_t)ng;
        hp->ssm_dt_rank = (int32_t)dr;
        hp->ssm_d_inner = (int32_t)di;
    }
    if (sc) {
        uint32_t l = 0;
        if (!get_u32(r, "shortconv.l_cache", false, &l))
            return false;
        if (l < 2 || l > 64)
            return lf_err_set(r->err, LF_ERR_UNSUPPORTED, "%s: shortconv.l_cache %u not supported", r->path, l), false;
        hp->shortconv_l = (int32_t)l;
    }
    return true;
}

/* gemma4: which layers attend another layer's cache (shared_kv_layers):
 * llama.cpp's rule, the last window layer (n_kv_from - 2) or the last full
 * layer (n_kv_from - 1) before them. */
static bool read_kv_sharing(const reader_t *r, const arch_desc_t *a, model_hparams_t *hp, model_layer_kinds_t *k)
{
    hp->n_kv_from = hp->n_layer;
    for (int i = 0; i < hp->n_layer_all; i++)
        k->kv_layer[i] = k->kind[i] == MODEL_LAYER_ATTN ? i : -1;
    uint32_t shared = 0;
    if (!a->kv_shared || !get_u32(r, "attention.shared_kv_layers", true, &shared))
        return a->kv_shared ? false : true;
    if (shared == 0)
        return true;
    const int from = hp->n_layer - (int)shared;
    if (from < 2)
        return lf_err_set(r->err, LF_ERR_FORMAT, "%s: %u shared KV layers of %d", r->path, shared, hp->n_layer), false;
    hp->n_kv_from = from;
    for (int i = from; i < hp->n_layer; i++) {
        const int src = from - (k->swa[i] ? 2 : 1);
        if (k->kind[src] != MODEL_LAYER_ATTN || k->swa[src] != k->swa[i] || k->head_dim[src] != k->head_dim[i] ||
            k->n_head_kv[src] != k->n_head_kv[i])
            return lf_err_set(r->err, LF_ERR_UNSUPPORTED,
                              "%s: layer %d would share the KV cache of layer %d, which differs", r->path, i, src),
                   false;
        k->kv_layer[i] = src;
    }
    return true;
}

void model_layer_kinds_free(model_layer_kinds_t *k)
{
    free(k->swa);
    free(k->rope);
    free(k->kind);
    free(k->n_head_kv);
    free(k->head_dim);
    free(k->n_rot);
    free(k->n_ff);
    free(k->kv_layer);
    memset(k, 0, sizeof *k);
}

static bool kinds_alloc(model_layer_kinds_t *k, int n)
{
    k->swa = calloc((size_t)n, sizeof *k->swa);
    k->rope = calloc((size_t)n, sizeof *k->rope);
    k->kind = calloc((size_t)n, sizeof *k->kind);
    k->n_head_kv = calloc((size_t)n, sizeof(int32_t));
    k->head_dim = calloc((size_t)n, sizeof(int32_t));
    k->n_rot = calloc((size_t)n, sizeof(int32_t));
    k->n_ff = calloc((size_t)n, sizeof(int32_t));
    k->kv_layer = calloc((size_t)n, sizeof(int32_t));
    return k->swa && k->rope && k->kind && k->n_head_kv && k->head_dim && k->n_rot && k->n_ff && k->kv_layer;
}

bool model_hparams_read(const gguf_file_t *f, const char *path, const arch_desc_t **arch_out, model_hparams_t *hp,
                        model_layer_kinds_t *kinds, lf_err_t *err)
{
    gguf_str_t s;
    memset(kinds, 0, sizeof *kinds);
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
    hp->n_layer_all = (int32_t)v;
    uint32_t nextn = 0;
    if (a->nextn && !get_u32(&r, "nextn_predict_layers", true, &nextn)) return false;
    if (hp->n_layer_all <= 0 || hp->n_layer_all > 1024 || nextn >= (uint32_t)hp->n_layer_all)
        return lf_err_set(err, LF_ERR_FORMAT, "%s: %d blocks with %u MTP blocks is invalid", path, hp->n_layer_all,
                          nextn), false;
    hp->n_nextn = (int32_t)nextn;
    hp->n_layer = hp->n_layer_all - hp->n_nextn;
    const int N = hp->n_layer_all;
    if (!kinds_alloc(kinds, N)) {
        lf_err_set(err, LF_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    /* per-layer FFN widths and KV heads (scalars or arrays) */
    const bool moe_only = a->ffn == ARCH_FFN_MOE;
    if (!get_u32_layers(&r, "feed_forward_length", moe_only, N, kinds->n_ff)) goto fail;
    if (!get_u32(&r, "attention.head_count", false, &v)) goto fail;
    hp->n_head = (int32_t)v;
    for (int i = 0; i < N; i++)
        kinds->n_head_kv[i] = hp->n_head;
    if (!get_u32_layers(&r, "attention.head_count_kv", true, N, kinds->n_head_kv)) goto fail;
    if (!read_layer_kinds(&r, a, hp, kinds)) goto fail;
    hp->n_ff = 0;
    hp->n_head_kv = 0;
    for (int i = 0; i < N; i++) {
        if (kinds->n_ff[i] > hp->n_ff)
            hp->n_ff = kinds->n_ff[i];
        if (kinds->kind[i] == MODEL_LAYER_ATTN) {
            hp->n_layer_attn += i < hp->n_layer;
            if (kinds->n_head_kv[i] <= 0 || hp->n_head <= 0 || hp->n_head % kinds->n_head_kv[i]) {
                lf_err_set(err, LF_ERR_FORMAT, "%s: layer %d has %d KV heads for %d heads", path, i,
                           kinds->n_head_kv[i], hp->n_head);
                goto fail;
            }
            if (kinds->n_head_kv[i] > hp->n_head_kv)
                hp->n_head_kv = kinds->n_head_kv[i];
        }
        if (!moe_only && i < hp->n_layer && kinds->n_ff[i] <= 0) {
            lf_err_set(err, LF_ERR_FORMAT, "%s: layer %d has no feed-forward width", path, i);
            goto fail;
        }
    }
    v = 2048;
    if (!get_u32(&r, "context_length", true, &v)) goto fail;
    hp->n_ctx_train = (int32_t)v;
    if (hp->n_embd <= 0 || hp->n_embd > 65536 || hp->n_ff < 0 || hp->n_ff > 1 << 20 || hp->n_head <= 0 ||
        hp->n_head > 1024 || hp->n_head_kv <= 0 || hp->n_ctx_train <= 0 || hp->n_ctx_train > (1 << 24)) {
        lf_err_set(err, LF_ERR_FORMAT, "%s: inconsistent hyper-parameters (embd %d, layers %d, ff %d, "
                   "heads %d/%d, ctx %d)", path, hp->n_embd, hp->n_layer, hp->n_ff, hp->n_head,
                   hp->n_head_kv, hp->n_ctx_train);
        goto fail;
    }
    v = (uint32_t)(hp->n_embd / hp->n_head);
    if (!get_u32(&r, "attention.key_length", true, &v)) goto fail;
    hp->head_dim = (int32_t)v;
    uint32_t vlen = v;
    if (!get_u32(&r, "attention.value_length", true, &vlen)) goto fail;
    if (hp->head_dim <= 0 || hp->head_dim % 2 || vlen != (uint32_t)hp->head_dim || hp->head_dim > 2048) {
        lf_err_set(err, LF_ERR_UNSUPPORTED, "%s: head size %d (value %u) not supported", path, hp->head_dim, vlen);
        goto fail;
    }
    v = (uint32_t)hp->head_dim;
    if (!get_u32(&r, "rope.dimension_count", true, &v)) goto fail;
    hp->n_rot = (int32_t)v;
    if (hp->n_rot <= 0 || hp->n_rot > hp->head_dim || hp->n_rot % 2) {
        lf_err_set(err, LF_ERR_FORMAT, "%s: rope dimension %d invalid for head size %d", path, hp->n_rot,
                   hp->head_dim);
        goto fail;
    }
    hp->head_dim_swa = hp->head_dim;
    hp->n_rot_swa = hp->n_rot;
    if (a->per_layer_dims) {
        v = (uint32_t)hp->head_dim;
        if (!get_u32(&r, "attention.key_length_swa", true, &v)) goto fail;
        hp->head_dim_swa = (int32_t)v;
        vlen = v;
        if (!get_u32(&r, "attention.value_length_swa", true, &vlen)) goto fail;
        v = (uint32_t)hp->head_dim_swa;
        if (!get_u32(&r, "rope.dimension_count_swa", true, &v)) goto fail;
        hp->n_rot_swa = (int32_t)v;
        if (hp->head_dim_swa <= 0 || hp->head_dim_swa % 2 || hp->head_dim_swa > 2048 ||
            vlen != (uint32_t)hp->head_dim_swa || hp->n_rot_swa <= 0 || hp->n_rot_swa > hp->head_dim_swa ||
            hp->n_rot_swa % 2) {
            lf_err_set(err, LF_ERR_UNSUPPORTED, "%s: window head size %d (value %u, rope %d) not supported", path,
                       hp->head_dim_swa, vlen, hp->n_rot_swa);
            goto fail;
        }
    }
    hp->rms_eps = a->default_rms_eps;
    hp->rope_theta = a->default_rope_theta;
    if (!get_f32(&r, "attention.layer_norm_rms_epsilon", &hp->rms_eps) ||
        !get_f32(&r, "rope.freq_base", &hp->rope_theta) || !read_rope_scaling(&r, hp) || !read_moe(&r, a, hp) ||
        !read_recurrent(&r, hp, kinds) || !read_embedding(&r, a, hp))
        goto fail;
    if (!(hp->rms_eps >= 0.0f) || !(hp->rope_theta > 0.0f) || !isfinite(hp->rope_theta)) {
        lf_err_set(err, LF_ERR_FORMAT, "%s: invalid norm epsilon %g or rope base %g", path, hp->rms_eps,
                   hp->rope_theta);
        goto fail;
    }
    hp->rope_neox = a->rope_neox;
    hp->logit_softcap = 0.0f;
    if (!get_f32(&r, "final_logit_softcapping", &hp->logit_softcap)) goto fail;
    if (!(hp->logit_softcap >= 0.0f)) {
        lf_err_set(err, LF_ERR_FORMAT, "%s: invalid final_logit_softcapping", path);
        goto fail;
    }
    if (a->per_layer_embd) {
        v = 0;
        if (!get_u32(&r, "embedding_length_per_layer_input", true, &v)) goto fail;
        if (v > 65536) {
            lf_err_set(err, LF_ERR_FORMAT, "%s: per-layer embedding width %u is invalid", path, v);
            goto fail;
        }
        hp->n_embd_per_layer = (int32_t)v;
    }
    hp->attn_scale_one = a->attn_scale_one;
    /* gemma's attention scale: 1/sqrt(head size), except the 27B model
     * (62 layers), which uses 1/sqrt(n_embd / n_head) (llama.cpp, after
     * gemma_pytorch's config) */
    hp->q_scale = 1.0f;
    if (a->q_prescale)
        hp->q_scale = !strcmp(a->name, "gemma3") && hp->n_layer == 62
                          ? 1.0f / sqrtf((float)(hp->n_embd / hp->n_head))
                          : 1.0f / sqrtf((float)hp->head_dim);

    if (!read_vl(&r, a, hp))
        goto fail;
    if (!read_swa_layers(&r, a, hp, kinds))
        goto fail;
    for (int i = 0; i < N; i++) {
        kinds->rope[i] = (a->no_rope_step <= 0 || (i + 1) % a->no_rope_step != 0) && !a->pos_embd && !a->alibi;
        const bool w = a->per_layer_dims && kinds->swa[i];
        kinds->head_dim[i] = w ? hp->head_dim_swa : hp->head_dim;
        kinds->n_rot[i] = w ? hp->n_rot_swa : hp->n_rot;
    }
    if (!read_kv_sharing(&r, a, hp, kinds))
        goto fail;
    /* the largest shapes (scratch sizes) and the layers with their own cache */
    hp->max_n_ff = hp->n_ff;
    for (int i = 0; i < N; i++) {
        if (kinds->kind[i] != MODEL_LAYER_ATTN)
            continue;
        const int32_t hd = kinds->head_dim[i], kvd = kinds->n_head_kv[i] * hd, qd = hp->n_head * hd;
        hp->max_head_dim = hd > hp->max_head_dim ? hd : hp->max_head_dim;
        hp->max_kv_dim = kvd > hp->max_kv_dim ? kvd : hp->max_kv_dim;
        hp->max_q_dim = qd > hp->max_q_dim ? qd : hp->max_q_dim;
        hp->max_n_rot = kinds->n_rot[i] > hp->max_n_rot ? kinds->n_rot[i] : hp->max_n_rot;
        hp->n_layer_kv += i < hp->n_layer && kinds->kv_layer[i] == i;
    }
    if (hp->max_head_dim == 0) { /* no attention layer at all */
        hp->max_head_dim = hp->head_dim;
        hp->max_n_rot = hp->n_rot;
    }
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
    model_layer_kinds_free(kinds);
    return false;
}
