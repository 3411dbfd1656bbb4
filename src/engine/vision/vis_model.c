/* vis_model.c - loading an mmproj GGUF (see vision.h).
 *
 * Keys and tensor names are those of llama.cpp's clip loader
 * (tools/mtmd/clip-impl.h); defaults are its defaults for each projector
 * (gemma3 pools 4x4 unless clip.vision.projector.scale_factor says
 * otherwise, Qwen merges 2x2 and limits images to 8..4096 merged tokens,
 * Qwen2.5-VL windows are 112 pixels). Every tensor is shape-checked here
 * so the encoder can trust its views.
 */
#include "engine/vision/vis_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels/kernels.h"
#include "engine/quant/fp16.h"
#include "engine/quant/quant.h"
#include "engine/vocab/vocab.h"

typedef struct {
    vis_model_t *v;
    const char *path;
    lf_err_t *err;
} loader_t;

static void *own(loader_t *L, size_t bytes)
{
    vis_model_t *v = L->v;
    if (v->n_owned == v->cap_owned) {
        int cap = v->cap_owned ? 2 * v->cap_owned : 32;
        void **p = realloc(v->owned, (size_t)cap * sizeof *p);
        if (!p)
            return NULL;
        v->owned = p;
        v->cap_owned = cap;
    }
    void *m = malloc(bytes ? bytes : 1);
    if (m)
        v->owned[v->n_owned++] = m;
    else
        lf_err_set(L->err, LF_ERR_NOMEM, "%s: out of memory", L->path);
    return m;
}

static const gguf_tensor_t *find(loader_t *L, const char *name, bool optional)
{
    const gguf_tensor_t *t = gguf_find_tensor(L->v->gguf, name);
    if (!t && !optional)
        lf_err_set(L->err, LF_ERR_FORMAT, "%s: missing tensor '%s'", L->path, name);
    return t;
}

static bool shape_is(loader_t *L, const gguf_tensor_t *t, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3)
{
    if (t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == ne2 && t->ne[3] == ne3)
        return true;
    lf_err_set(L->err, LF_ERR_FORMAT, "%s: tensor '%.*s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld, %lld, %lld]",
               L->path, (int)t->name.len, t->name.ptr, (long long)t->ne[0], (long long)t->ne[1],
               (long long)t->ne[2], (long long)t->ne[3], (long long)ne0, (long long)ne1, (long long)ne2,
               (long long)ne3);
    return false;
}

/* n floats of t as F32: a view, or a converted copy owned by the model. */
static const float *as_f32(loader_t *L, const gguf_tensor_t *t, int64_t n)
{
    if (t->type == QTYPE_F32)
        return t->data;
    if (!quant_can_dequantize(t->type) || qtype_row_size(t->type, n) == 0) {
        lf_err_set(L->err, LF_ERR_UNSUPPORTED, "%s: tensor '%.*s' has type %s, which cannot be read", L->path,
                   (int)t->name.len, t->name.ptr, qtype_name(t->type));
        return NULL;
    }
    float *f = own(L, (size_t)n * sizeof(float));
    if (f)
        quant_dequantize_row(t->type, t->data, f, n);
    return f;
}

/* A vector of n floats (optional: NULL without error when absent). */
static bool vec(loader_t *L, const char *name, int64_t n, bool optional, const float **out)
{
    *out = NULL;
    const gguf_tensor_t *t = find(L, name, optional);
    if (!t)
        return optional;
    if (!shape_is(L, t, n, 1, 1, 1))
        return false;
    return (*out = as_f32(L, t, n)) != NULL;
}

/* A matrix of n_out rows of n_in values (ne = [n_in, n_out]). */
static bool mat(loader_t *L, const char *name, int64_t n_in, int64_t n_out, bool optional, model_tensor_t *out)
{
    memset(out, 0, sizeof *out);
    const gguf_tensor_t *t = find(L, name, optional);
    if (!t)
        return optional;
    if (!shape_is(L, t, n_in, n_out, 1, 1))
        return false;
    if (!kern_supports(t->type) || qtype_row_size(t->type, n_in) == 0) {
        lf_err_set(L->err, LF_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s, not supported for rows of %lld", L->path,
                   name, qtype_name(t->type), (long long)n_in);
        return false;
    }
    *out = (model_tensor_t){.type = t->type, .n_in = n_in, .n_out = n_out,
                            .row_bytes = qtype_row_size(t->type, n_in), .data = t->data};
    return true;
}

/* The patch kernel [P][P][3][E] as an E x 3PP matrix in F16: ggml's
 * conv_2d runs its im2col in F16, so the kernel meets the pixels as F16. */
static bool patch_kernel(loader_t *L, const char *name, bool optional, model_tensor_t *out)
{
    const vis_hparams_t *hp = &L->v->hp;
    memset(out, 0, sizeof *out);
    const gguf_tensor_t *t = find(L, name, optional);
    if (!t)
        return optional;
    const int64_t k = 3LL * hp->patch_size * hp->patch_size;
    if (!shape_is(L, t, hp->patch_size, hp->patch_size, 3, hp->n_embd))
        return false;
    const void *data = t->data;
    if (t->type != QTYPE_F16) {
        const float *f = as_f32(L, t, k * hp->n_embd);
        uint16_t *h = f ? own(L, (size_t)(k * hp->n_embd) * sizeof(uint16_t)) : NULL;
        if (!h)
            return false;
        fp16_row_from_fp32(f, h, k * hp->n_embd);
        data = h;
    }
    *out = (model_tensor_t){.type = QTYPE_F16, .n_in = k, .n_out = hp->n_embd,
                            .row_bytes = qtype_row_size(QTYPE_F16, k), .data = data};
    return true;
}

static bool get_u32(loader_t *L, const char *key, bool optional, int32_t *out)
{
    uint32_t v;
    if (gguf_get_u32(L->v->gguf, key, &v) && v <= (1u << 30)) {
        *out = (int32_t)v;
        return true;
    }
    if (optional && !gguf_find_kv(L->v->gguf, key))
        return true;
    lf_err_set(L->err, LF_ERR_FORMAT, "%s: missing or invalid metadata '%s'", L->path, key);
    return false;
}

static bool get_f32_arr3(loader_t *L, const char *key, float out[3])
{
    const gguf_kv_t *a = gguf_get_arr(L->v->gguf, key);
    if (!a || a->arr_type != GGUF_VT_FLOAT32 || a->arr_len < 3) {
        lf_err_set(L->err, LF_ERR_FORMAT, "%s: '%s' must be an array of 3 floats", L->path, key);
        return false;
    }
    memcpy(out, a->data, 3 * sizeof(float));
    return true;
}

static bool read_hparams(loader_t *L)
{
    vis_model_t *v = L->v;
    vis_hparams_t *hp = &v->hp;
    gguf_str_t s;
    if (!gguf_get_str(v->gguf, "general.architecture", &s) || !gguf_str_eq(s, "clip"))
        return lf_err_set(L->err, LF_ERR_FORMAT, "%s: not an mmproj file (general.architecture is not 'clip')",
                          L->path), false;
    bool has_vision = false;
    gguf_get_bool(v->gguf, "clip.has_vision_encoder", &has_vision);
    if (!gguf_get_str(v->gguf, "clip.projector_type", &s) &&
        !gguf_get_str(v->gguf, "clip.vision.projector_type", &s))
        return lf_err_set(L->err, LF_ERR_FORMAT, "%s: missing clip.projector_type", L->path), false;
    snprintf(hp->proj_name, sizeof hp->proj_name, "%.*s", (int)(s.len < 31 ? s.len : 31), s.ptr);
    static const struct { const char *name; vis_proj_t p; } projs[] = {
        {"gemma3", VIS_PROJ_GEMMA3},
        {"qwen2.5vl_merger", VIS_PROJ_QWEN25VL},
        {"qwen3vl_merger", VIS_PROJ_QWEN3VL},
        {"idefics3", VIS_PROJ_IDEFICS3},
    };
    bool known = false;
    for (size_t i = 0; i < sizeof projs / sizeof projs[0]; i++)
        if (gguf_str_eq(s, projs[i].name)) {
            hp->proj = projs[i].p;
            known = true;
        }
    if (!known || !has_vision)
        return lf_err_set(L->err, LF_ERR_UNSUPPORTED,
                          "%s: projector '%s'%s is not supported (supported: gemma3, qwen2.5vl_merger, "
                          "qwen3vl_merger, idefics3)", L->path, hp->proj_name,
                          has_vision ? "" : " without a vision encoder"), false;
    if (!get_u32(L, "clip.vision.embedding_length", false, &hp->n_embd) ||
        !get_u32(L, "clip.vision.feed_forward_length", false, &hp->n_ff) ||
        !get_u32(L, "clip.vision.block_count", false, &hp->n_layer) ||
        !get_u32(L, "clip.vision.attention.head_count", false, &hp->n_head) ||
        !get_u32(L, "clip.vision.projection_dim", false, &hp->proj_dim) ||
        !get_u32(L, "clip.vision.image_size", false, &hp->image_size) ||
        !get_u32(L, "clip.vision.patch_size", false, &hp->patch_size))
        return false;
    int32_t hkv = hp->n_head;
    if (!get_u32(L, "clip.vision.attention.head_count_kv", true, &hkv))
        return false;
    hp->eps = 1e-6f;
    if (!gguf_get_f32(v->gguf, "clip.vision.attention.layer_norm_epsilon", &hp->eps))
        return lf_err_set(L->err, LF_ERR_FORMAT, "%s: missing clip.vision.attention.layer_norm_epsilon", L->path),
               false;
    if (hp->n_embd <= 0 || hp->n_embd > 16384 || hp->n_head <= 0 || hp->n_embd % hp->n_head || hkv != hp->n_head ||
        hp->n_layer <= 0 || hp->n_layer > 256 || hp->n_ff <= 0 || hp->n_ff > 65536 || hp->proj_dim <= 0 ||
        hp->proj_dim > 65536 || hp->patch_size <= 0 || hp->patch_size > 64 || hp->image_size < hp->patch_size ||
        hp->image_size > 8192 || !(hp->eps >= 0.0f))
        return lf_err_set(L->err, LF_ERR_FORMAT, "%s: inconsistent vision hyper-parameters (embd %d, heads %d/%d, "
                          "layers %d, ff %d, projection %d, patch %d, image %d)", L->path, hp->n_embd, hp->n_head,
                          hkv, hp->n_layer, hp->n_ff, hp->proj_dim, hp->patch_size, hp->image_size), false;
    hp->head_dim = hp->n_embd / hp->n_head;
    int32_t hd = hp->head_dim;
    if (!get_u32(L, "clip.vision.attention.head_dim", true, &hd))
        return false;
    if (hd != hp->head_dim)
        return lf_err_set(L->err, LF_ERR_UNSUPPORTED, "%s: head size %d != embedding / heads", L->path, hd), false;
    bool gelu = false, silu = false;
    gguf_get_bool(v->gguf, "clip.use_gelu", &gelu);
    gguf_get_bool(v->gguf, "clip.use_silu", &silu);
    if (gelu && silu)
        return lf_err_set(L->err, LF_ERR_FORMAT, "%s: both use_gelu and use_silu are set", L->path), false;
    hp->act = gelu ? VIS_ACT_GELU : silu ? VIS_ACT_SILU : VIS_ACT_GELU_QUICK;
    if (!get_f32_arr3(L, "clip.vision.image_mean", hp->mean) || !get_f32_arr3(L, "clip.vision.image_std", hp->std))
        return false;
    for (int c = 0; c < 3; c++)
        if (!(hp->std[c] > 0.0f))
            return lf_err_set(L->err, LF_ERR_FORMAT, "%s: image_std must be positive", L->path), false;
    const int32_t max_side = 8192;
    switch (hp->proj) {
    case VIS_PROJ_GEMMA3:
        hp->n_merge = 4;
        if (!get_u32(L, "clip.vision.projector.scale_factor", true, &hp->n_merge))
            return false;
        if (hp->image_size % hp->patch_size || hp->n_merge <= 0 || (hp->image_size / hp->patch_size) % hp->n_merge)
            return lf_err_set(L->err, LF_ERR_FORMAT, "%s: image %d, patch %d and pooling %d do not tile", L->path,
                              hp->image_size, hp->patch_size, hp->n_merge), false;
        break;
    case VIS_PROJ_IDEFICS3:
        hp->n_merge = 1;
        if (!get_u32(L, "clip.vision.projector.scale_factor", true, &hp->n_merge) ||
            !get_u32(L, "clip.vision.preproc_image_size", true, &hp->longest_edge))
            return false;
        if (hp->image_size % hp->patch_size || hp->n_merge <= 1 || (hp->image_size / hp->patch_size) % hp->n_merge ||
            hp->longest_edge < 0 || hp->longest_edge > max_side)
            return lf_err_set(L->err, LF_ERR_FORMAT, "%s: tile %d, patch %d, shuffle %d or longest edge %d invalid",
                              L->path, hp->image_size, hp->patch_size, hp->n_merge, hp->longest_edge), false;
        break;
    case VIS_PROJ_QWEN25VL:
    case VIS_PROJ_QWEN3VL:
        hp->n_merge = 2;
        if (!get_u32(L, "clip.vision.spatial_merge_size", true, &hp->n_merge))
            return false;
        if (hp->n_merge != 2)
            return lf_err_set(L->err, LF_ERR_UNSUPPORTED, "%s: spatial merge %d (only 2 is supported)", L->path,
                              hp->n_merge), false;
        if (hp->proj == VIS_PROJ_QWEN25VL && !get_u32(L, "clip.vision.n_wa_pattern", false, &hp->n_wa_pattern))
            return false;
        hp->window_px = 112;
        if (!get_u32(L, "clip.vision.window_size", true, &hp->window_px))
            return false;
        if (hp->window_px < hp->patch_size * 2)
            return lf_err_set(L->err, LF_ERR_FORMAT, "%s: attention window %d px", L->path, hp->window_px), false;
        {
            const int32_t area = hp->patch_size * hp->patch_size * hp->n_merge * hp->n_merge;
            hp->min_pixels = 8 * area;
            hp->max_pixels = 4096 * area;
        }
        if (hp->head_dim % 4)
            return lf_err_set(L->err, LF_ERR_UNSUPPORTED, "%s: head size %d (2-D rope needs a multiple of 4)",
                              L->path, hp->head_dim), false;
        break;
    }
    return true;
}

static bool load_layers(loader_t *L)
{
    vis_model_t *v = L->v;
    const vis_hparams_t *hp = &v->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    if (!(v->layers = calloc((size_t)hp->n_layer, sizeof *v->layers)))
        return lf_err_set(L->err, LF_ERR_NOMEM, "%s: out of memory", L->path), false;
    char n[96];
#define NM(fmt, ...) (snprintf(n, sizeof n, fmt, __VA_ARGS__), n)
    for (int il = 0; il < hp->n_layer; il++) {
        vis_layer_t *y = &v->layers[il];
        const bool ln_bias = !hp->rms_norm;
        if (!vec(L, NM("v.blk.%d.ln1.weight", il), E, false, &y->ln1_w) ||
            !vec(L, NM("v.blk.%d.ln1.bias", il), E, !ln_bias, &y->ln1_b) ||
            !vec(L, NM("v.blk.%d.ln2.weight", il), E, false, &y->ln2_w) ||
            !vec(L, NM("v.blk.%d.ln2.bias", il), E, !ln_bias, &y->ln2_b))
            return false;
        if (!mat(L, NM("v.blk.%d.attn_qkv.weight", il), E, 3 * E, true, &y->wqkv))
            return false;
        if (y->wqkv.data) {
            const float *b = NULL;
            if (!vec(L, NM("v.blk.%d.attn_qkv.bias", il), 3 * E, true, &b))
                return false;
            if (b) {
                y->bq = b;
                y->bk = b + E;
                y->bv = b + 2 * E;
            }
        } else if (!mat(L, NM("v.blk.%d.attn_q.weight", il), E, E, false, &y->wq) ||
                   !mat(L, NM("v.blk.%d.attn_k.weight", il), E, E, false, &y->wk) ||
                   !mat(L, NM("v.blk.%d.attn_v.weight", il), E, E, false, &y->wv) ||
                   !vec(L, NM("v.blk.%d.attn_q.bias", il), E, true, &y->bq) ||
                   !vec(L, NM("v.blk.%d.attn_k.bias", il), E, true, &y->bk) ||
                   !vec(L, NM("v.blk.%d.attn_v.bias", il), E, true, &y->bv)) {
            return false;
        }
        if (!mat(L, NM("v.blk.%d.attn_out.weight", il), E, E, false, &y->wo) ||
            !vec(L, NM("v.blk.%d.attn_out.bias", il), E, true, &y->bo))
            return false;
        /* old conversions swapped ffn_up and ffn_down (llama.cpp fixes them
         * up by ffn_down's row length) */
        const gguf_tensor_t *down = find(L, NM("v.blk.%d.ffn_down.weight", il), false);
        if (!down)
            return false;
        const bool swapped = down->ne[0] == E && E != F;
        const char *up_name = swapped ? "ffn_down" : "ffn_up", *down_name = swapped ? "ffn_up" : "ffn_down";
        if (!mat(L, NM("v.blk.%d.%s.weight", il, up_name), E, F, false, &y->up) ||
            !vec(L, NM("v.blk.%d.%s.bias", il, up_name), F, true, &y->b_up) ||
            !mat(L, NM("v.blk.%d.ffn_gate.weight", il), E, F, true, &y->gate) ||
            !vec(L, NM("v.blk.%d.ffn_gate.bias", il), F, true, &y->b_gate) ||
            !mat(L, NM("v.blk.%d.%s.weight", il, down_name), F, E, false, &y->down) ||
            !vec(L, NM("v.blk.%d.%s.bias", il, down_name), E, true, &y->b_down))
            return false;
        if (hp->proj == VIS_PROJ_QWEN3VL) {
            const int64_t M = 4 * E, T = hp->proj_dim;
            if (!vec(L, NM("v.deepstack.%d.norm.weight", il), M, true, &y->ds_norm_w))
                return false;
            if (y->ds_norm_w) {
                if (il >= 64)
                    return lf_err_set(L->err, LF_ERR_UNSUPPORTED, "%s: deepstack layer %d", L->path, il), false;
                if (!vec(L, NM("v.deepstack.%d.norm.bias", il), M, false, &y->ds_norm_b) ||
                    !mat(L, NM("v.deepstack.%d.fc1.weight", il), M, M, false, &y->ds_fc1) ||
                    !vec(L, NM("v.deepstack.%d.fc1.bias", il), M, false, &y->ds_fc1_b) ||
                    !mat(L, NM("v.deepstack.%d.fc2.weight", il), M, T, false, &y->ds_fc2) ||
                    !vec(L, NM("v.deepstack.%d.fc2.bias", il), T, false, &y->ds_fc2_b))
                    return false;
                v->hp.ds_layer[il] = true;
                v->hp.n_deepstack++;
            }
        }
    }
#undef NM
    return true;
}

/* gemma3's input projection is stored [T][E] and used transposed. */
static bool transposed_proj(loader_t *L)
{
    vis_model_t *v = L->v;
    const int64_t E = v->hp.n_embd, T = v->hp.proj_dim;
    const gguf_tensor_t *t = find(L, "mm.input_projection.weight", false);
    if (!t || !shape_is(L, t, T, E, 1, 1))
        return false;
    qtype_t type = t->type == QTYPE_F16 ? QTYPE_F16 : QTYPE_F32;
    const float *src = NULL;
    if (t->type != QTYPE_F16 && !(src = as_f32(L, t, T * E)))
        return false;
    void *dst = own(L, (size_t)(T * E) * (type == QTYPE_F16 ? 2 : 4));
    if (!dst)
        return false;
    for (int64_t e = 0; e < E; e++)
        for (int64_t j = 0; j < T; j++) {
            if (type == QTYPE_F16)
                ((uint16_t *)dst)[j * E + e] = ((const uint16_t *)t->data)[e * T + j];
            else
                ((float *)dst)[j * E + e] = src[e * T + j];
        }
    v->mm_proj = (model_tensor_t){.type = type, .n_in = E, .n_out = T, .row_bytes = qtype_row_size(type, E),
                                  .data = dst};
    return true;
}

static bool load_tensors(loader_t *L)
{
    vis_model_t *v = L->v;
    vis_hparams_t *hp = &v->hp;
    const int64_t E = hp->n_embd, T = hp->proj_dim;
    const bool qwen = hp->proj == VIS_PROJ_QWEN25VL || hp->proj == VIS_PROJ_QWEN3VL;
    hp->rms_norm = hp->proj == VIS_PROJ_QWEN25VL;
    if (!patch_kernel(L, "v.patch_embd.weight", false, &v->patch[0]) ||
        !patch_kernel(L, "v.patch_embd.weight.1", !qwen, &v->patch[1]) ||
        !vec(L, "v.patch_embd.bias", E, hp->proj == VIS_PROJ_QWEN25VL || !qwen ? true : false, &v->patch_b))
        return false;
    if (hp->proj == VIS_PROJ_QWEN25VL && v->patch_b)
        return lf_err_set(L->err, LF_ERR_UNSUPPORTED, "%s: qwen2.5vl with a patch bias", L->path), false;
    if (hp->proj != VIS_PROJ_QWEN25VL) {
        const gguf_tensor_t *t = find(L, "v.position_embd.weight", false);
        if (!t)
            return false;
        int64_t np = t->ne[1];
        if (hp->proj != VIS_PROJ_QWEN3VL) {
            const int64_t side = hp->image_size / hp->patch_size;
            np = side * side;
        } else {
            int64_t s = 1;
            while (s * s < np)
                s++;
            if (s * s != np || np < 1)
                return lf_err_set(L->err, LF_ERR_FORMAT, "%s: %lld positions is not a square grid", L->path,
                                  (long long)np), false;
            hp->n_pos_side = (int32_t)s;
        }
        if (!shape_is(L, t, E, np, 1, 1) || !(v->pos_embd = as_f32(L, t, E * np)))
            return false;
        v->n_pos = (int32_t)np;
    }
    if (!load_layers(L))
        return false;
    if (!vec(L, "v.post_ln.weight", E, true, &v->post_ln_w) ||
        !vec(L, "v.post_ln.bias", E, true, &v->post_ln_b))
        return false;
    if (find(L, "v.pre_ln.weight", true))
        return lf_err_set(L->err, LF_ERR_UNSUPPORTED, "%s: a pre-layernorm is not supported for %s", L->path,
                          hp->proj_name), false;
    switch (hp->proj) {
    case VIS_PROJ_GEMMA3:
        if (!vec(L, "mm.soft_emb_norm.weight", E, false, &v->mm_soft_norm) || !transposed_proj(L))
            return false;
        break;
    case VIS_PROJ_IDEFICS3:
        if (!mat(L, "mm.model.fc.weight", E * hp->n_merge * hp->n_merge, T, false, &v->mm_proj))
            return false;
        break;
    case VIS_PROJ_QWEN25VL:
    case VIS_PROJ_QWEN3VL:
        if (!mat(L, "mm.0.weight", 4 * E, 4 * E, false, &v->mm0) || !vec(L, "mm.0.bias", 4 * E, false, &v->mm0_b) ||
            !mat(L, "mm.2.weight", 4 * E, T, false, &v->mm2) || !vec(L, "mm.2.bias", T, false, &v->mm2_b))
            return false;
        break;
    }
    hp->n_out = hp->proj_dim * (1 + hp->n_deepstack);
    return true;
}

vis_model_t *vis_model_load(const char *path, lf_err_t *err)
{
    vis_model_t *v = calloc(1, sizeof *v);
    if (!v) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    loader_t L = {v, path, err};
    if (!(v->gguf = gguf_open(path, err)) || !read_hparams(&L) || !load_tensors(&L)) {
        vis_model_free(v);
        return NULL;
    }
    return v;
}

void vis_model_free(vis_model_t *v)
{
    if (!v)
        return;
    for (int i = 0; i < v->n_owned; i++)
        free(v->owned[i]);
    free(v->owned);
    free(v->layers);
    gguf_close(v->gguf);
    free(v);
}

const vis_hparams_t *vis_hparams(const vis_model_t *v) { return &v->hp; }

/* Marker tokens each family's prompt layout needs (vis_layout.c). */
static const char *const gemma3_markers[] = {"<start_of_image>", "<end_of_image>", NULL};
static const char *const qwen_markers[] = {"<|vision_start|>", "<|vision_end|>", NULL};
static const char *const idefics3_markers[] = {"<fake_token_around_image>", "<global-img>", NULL};

lf_code_t vis_model_check_text(const vis_model_t *v, const char *vis_path, const model_t *m, const char *model_path,
                               lf_err_t *err)
{
    const model_hparams_t *mh = model_hparams(m);
    const vis_hparams_t *hp = &v->hp;
    if (hp->proj_dim != mh->n_embd || hp->n_out != mh->n_embd_inp)
        return lf_err_set(err, LF_ERR_INVALID,
                          "the projector of %s outputs %d values per image token (%d + %d deepstack x %d), but the "
                          "text model %s takes %d (n_embd %d, %d deepstack layers)", vis_path, hp->n_out,
                          hp->proj_dim, hp->n_deepstack, hp->proj_dim, model_path, mh->n_embd_inp, mh->n_embd,
                          mh->n_deepstack);
    const bool qwen = hp->proj == VIS_PROJ_QWEN25VL || hp->proj == VIS_PROJ_QWEN3VL;
    const bool mrope = mh->rope_sections[0] + mh->rope_sections[1] + mh->rope_sections[2] > 0;
    if (qwen != mrope)
        return lf_err_set(err, LF_ERR_INVALID, "the %s projector of %s needs a text model %s multi-section rope, and "
                          "%s (%s) %s", hp->proj_name, vis_path, qwen ? "with" : "without", model_path, mh->arch,
                          mrope ? "has it" : "has none");
    const char *const *mk = hp->proj == VIS_PROJ_GEMMA3 ? gemma3_markers : qwen ? qwen_markers : idefics3_markers;
    const vocab_t *vc = model_vocab(m);
    for (int i = 0; mk[i]; i++)
        if (vocab_find(vc, mk[i], strlen(mk[i])) < 0)
            return lf_err_set(err, LF_ERR_INVALID, "the text model %s has no token '%s', which the %s projector of %s "
                              "needs", model_path, mk[i], hp->proj_name, vis_path);
    return LF_OK;
}

void vis_model_describe(const vis_model_t *v, char *buf, size_t cap)
{
    const vis_hparams_t *hp = &v->hp;
    char tok[96];
    switch (hp->proj) {
    case VIS_PROJ_GEMMA3: {
        const int32_t side = hp->image_size / hp->patch_size / hp->n_merge;
        snprintf(tok, sizeof tok, "%d tokens per image", side * side);
        break;
    }
    case VIS_PROJ_IDEFICS3: {
        const int32_t side = hp->image_size / hp->patch_size / hp->n_merge;
        snprintf(tok, sizeof tok, "%d tokens per %dpx tile, up to %dpx tiled", side * side, hp->image_size,
                 hp->longest_edge);
        break;
    }
    default:
        snprintf(tok, sizeof tok, "8 to 4096 tokens per image (one per %dx%d pixels)", hp->patch_size * hp->n_merge,
                 hp->patch_size * hp->n_merge);
    }
    snprintf(buf, cap, "projector %s, ViT %d layers x %d wide (%d heads, FFN %d), image size %d, patch %d, %s, "
             "output %d%s", hp->proj_name, hp->n_layer, hp->n_embd, hp->n_head, hp->n_ff, hp->image_size,
             hp->patch_size, tok, hp->n_out, hp->n_deepstack ? " (with deepstack)" : "");
}
