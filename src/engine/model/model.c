/* model.c - binds weight tensors by name (hyper-parameters: model_hparams.c).
 *
 * Every tensor the forward pass will touch is looked up here, its type and
 * shape checked against the hyper-parameters, so that the forward pass can
 * trust the views it gets. Unsupported types fail here, at load time.
 * Which tensors a layer has follows the architecture's row (arch.h).
 */
#include "engine/model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/arch.h"
#include "engine/model/model_hparams.h"
#include "engine/model/weights_pack.h"

struct model {
    gguf_file_t *gguf;
    vocab_t *vocab;
    model_hparams_t hp;
    model_weights_t w;
    const arch_desc_t *arch;
    char *chat_template;
    weights_pack_t pack;
    const model_t *base;  /* a view (model_nextn_view): borrows base's file, vocabulary, weights */
};

typedef struct {
    const gguf_file_t *f;
    const char *path;
    lf_err_t *err;
} binder_t;

static bool get_tensor(binder_t *b, const char *name, int64_t ne0, int64_t ne1, bool optional,
                       const gguf_tensor_t **out)
{
    const gguf_tensor_t *t = gguf_find_tensor(b->f, name);
    *out = t;
    if (!t) {
        if (optional)
            return true;
        lf_err_set(b->err, LF_ERR_FORMAT, "%s: missing tensor '%s'", b->path, name);
        return false;
    }
    if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != 1 || t->ne[3] != 1) {
        lf_err_set(b->err, LF_ERR_FORMAT, "%s: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld]",
                   b->path, name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                   (long long)t->ne[3], (long long)ne0, (long long)ne1);
        return false;
    }
    return true;
}

/* A vector (norm weight, bias): must be F32. */
static bool bind_vec(binder_t *b, const char *name, int64_t n, bool optional, const float **out)
{
    const gguf_tensor_t *t;
    *out = NULL;
    if (!get_tensor(b, name, n, 1, optional, &t))
        return false;
    if (!t)
        return true;
    if (t->type != QTYPE_F32) {
        lf_err_set(b->err, LF_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s, expected f32", b->path, name,
                   qtype_name(t->type));
        return false;
    }
    *out = t->data;
    return true;
}

/* Type and row size of weight matrix t (found, shape already checked). */
static bool check_mat(binder_t *b, const char *name, const gguf_tensor_t *t, int64_t n_in, int64_t n_out,
                      model_tensor_t *out)
{
    const qtype_info_t *info = qtype_info(t->type);
    if (!info || !info->supported) {
        char names[256];
        qtype_supported_names(names, sizeof names);
        lf_err_set(b->err, LF_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s, which llm-fcgi does not support (supported: %s)",
                   b->path, name, qtype_name(t->type), names);
        return false;
    }
    out->type = t->type;
    out->n_in = n_in;
    out->n_out = n_out;
    out->row_bytes = qtype_row_size(t->type, n_in);
    out->data = t->data;
    if (!out->row_bytes) {
        lf_err_set(b->err, LF_ERR_FORMAT, "%s: tensor '%s': rows of %lld values do not fit type %s", b->path, name,
                   (long long)n_in, qtype_name(t->type));
        return false;
    }
    return true;
}

static bool bind_mat(binder_t *b, const char *name, int64_t n_in, int64_t n_out, bool optional,
                     model_tensor_t *out)
{
    const gguf_tensor_t *t;
    memset(out, 0, sizeof *out);
    if (!get_tensor(b, name, n_in, n_out, optional, &t))
        return false;
    if (!t)
        return true;
    return check_mat(b, name, t, n_in, n_out, out);
}

/* A 3-D expert tensor [n_expert][n_out][n_in] and its optional bias
 * [n_expert][n_out] (name_bias NULL: no bias). */
static bool bind_experts(binder_t *b, const char *name, const char *name_bias, int64_t n_in, int64_t n_out,
                         int64_t n_expert, model_experts_t *out)
{
    memset(out, 0, sizeof *out);
    const gguf_tensor_t *t = gguf_find_tensor(b->f, name);
    if (!t)
        return lf_err_set(b->err, LF_ERR_FORMAT, "%s: missing tensor '%s'", b->path, name), false;
    if (t->ne[0] != n_in || t->ne[1] != n_out || t->ne[2] != n_expert || t->ne[3] != 1)
        return lf_err_set(b->err, LF_ERR_FORMAT,
                          "%s: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld, %lld]", b->path,
                          name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
                          (long long)n_in, (long long)n_out, (long long)n_expert), false;
    model_tensor_t first;
    if (!check_mat(b, name, t, n_in, n_out, &first))
        return false;
    out->type = first.type;
    out->n_in = n_in;
    out->n_out = n_out;
    out->row_bytes = first.row_bytes;
    out->expert_bytes = first.row_bytes * (size_t)n_out;
    out->data = t->data;
    if (!name_bias)
        return true;
    const gguf_tensor_t *tb = gguf_find_tensor(b->f, name_bias);
    if (!tb)
        return lf_err_set(b->err, LF_ERR_FORMAT, "%s: missing tensor '%s'", b->path, name_bias), false;
    if (tb->ne[0] != n_out || tb->ne[1] != n_expert || tb->ne[2] != 1 || tb->ne[3] != 1 || tb->type != QTYPE_F32)
        return lf_err_set(b->err, LF_ERR_FORMAT, "%s: tensor '%s' must be f32 [%lld, %lld]", b->path, name_bias,
                          (long long)n_out, (long long)n_expert), false;
    out->bias = tb->data;
    return true;
}

/* attn_q/k/v, or a fused attn_qkv (q | k | v rows) and its bias, split
 * into three views. Biases are optional everywhere, as in llama.cpp. */
static bool bind_qkv(binder_t *b, int i, int64_t E, int64_t Q, int64_t KV, model_layer_t *l)
{
    char n[96];
#define NAME(s) (snprintf(n, sizeof n, "blk.%d." s, i), n)
    if (!bind_mat(b, NAME("attn_qkv.weight"), E, Q + 2 * KV, true, &l->wqkv))
        return false;
    if (l->wqkv.data) {
        const float *bqkv;
        if (!bind_vec(b, NAME("attn_qkv.bias"), Q + 2 * KV, true, &bqkv))
            return false;
        if (bqkv) {
            l->bq = bqkv;
            l->bk = bqkv + Q;
            l->bv = bqkv + Q + KV;
            return true;
        }
    } else if (!bind_mat(b, NAME("attn_q.weight"), E, Q, false, &l->wq) ||
               !bind_mat(b, NAME("attn_k.weight"), E, KV, false, &l->wk) ||
               !bind_mat(b, NAME("attn_v.weight"), E, KV, false, &l->wv)) {
        return false;
    }
    return bind_vec(b, NAME("attn_q.bias"), Q, true, &l->bq) && bind_vec(b, NAME("attn_k.bias"), KV, true, &l->bk) &&
           bind_vec(b, NAME("attn_v.bias"), KV, true, &l->bv);
#undef NAME
}

/* A 2-D F32 tensor [ne1][ne0] (convolution kernels). */
static bool bind_f32(binder_t *b, const char *name, int64_t ne0, int64_t ne1, bool optional, const float **out)
{
    const gguf_tensor_t *t;
    *out = NULL;
    if (!get_tensor(b, name, ne0, ne1, optional, &t))
        return false;
    if (!t)
        return true;
    if (t->type != QTYPE_F32)
        return lf_err_set(b->err, LF_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s, expected f32", b->path, name,
                          qtype_name(t->type)), false;
    *out = t->data;
    return true;
}

#define NAME(s) (snprintf(n, sizeof n, "blk.%d." s, i), n)
#define NAMEB(s) (snprintf(nb, sizeof nb, "blk.%d." s, i), nb)

/* The routed experts (and, for moe_shexp families, the shared expert). */
static bool bind_moe(binder_t *b, const arch_desc_t *a, const model_hparams_t *hp, int i, model_layer_t *l)
{
    char n[96], nb[96];
    const int64_t E = hp->n_embd, NE = hp->n_expert, FE = hp->n_ff_exp;
    const bool bias = a->moe_biases;
    if (!bind_mat(b, NAME("ffn_gate_inp.weight"), E, NE, false, &l->router) ||
        (bias && !bind_vec(b, NAME("ffn_gate_inp.bias"), NE, false, &l->router_b)))
        return false;
    if (gguf_find_tensor(b->f, NAME("ffn_gate_up_exps.weight"))) {
        /* fused gate | up experts (gemma4): split into two views per expert later */
        if (!bind_experts(b, n, NULL, E, 2 * FE, NE, &l->x_gate_up))
            return false;
        /* gate and up as views with the fused tensor's expert stride (each
         * row's product is independent: the same values as one product) */
        l->x_gate = l->x_gate_up;
        l->x_gate.n_out = FE;
        l->x_up = l->x_gate;
        l->x_up.data = (const uint8_t *)l->x_gate_up.data + (size_t)FE * l->x_gate_up.row_bytes;
    } else if (!bind_experts(b, NAME("ffn_gate_exps.weight"), bias ? NAMEB("ffn_gate_exps.bias") : NULL, E, FE, NE,
                             &l->x_gate) ||
               !bind_experts(b, NAME("ffn_up_exps.weight"), bias ? NAMEB("ffn_up_exps.bias") : NULL, E, FE, NE,
                             &l->x_up)) {
        return false;
    }
    if (!bind_experts(b, NAME("ffn_down_exps.weight"), bias ? NAMEB("ffn_down_exps.bias") : NULL, FE, E, NE,
                      &l->x_down) ||
        !bind_vec(b, NAME("ffn_down_exps.scale"), NE, true, &l->x_down_scale))
        return false;
    if (!a->moe_shexp || !gguf_find_tensor(b->f, NAME("ffn_up_shexp.weight")))
        return true;
    const int64_t FS = hp->n_ff_shexp;
    return bind_mat(b, NAME("ffn_gate_shexp.weight"), E, FS, false, &l->s_gate) &&
           bind_mat(b, NAME("ffn_up_shexp.weight"), E, FS, false, &l->s_up) &&
           bind_mat(b, NAME("ffn_down_shexp.weight"), FS, E, false, &l->s_down) &&
           bind_mat(b, NAME("ffn_gate_inp_shexp.weight"), E, 1, false, &l->s_gate_inp);
}

static bool bind_ffn(binder_t *b, const arch_desc_t *a, const model_hparams_t *hp, int i, model_layer_t *l)
{
    char n[96];
    const int64_t E = hp->n_embd, FF = l->n_ff;
    arch_ffn_t kind = a->ffn;
    if (kind == ARCH_FFN_GATED_FUSED && a->ffn_fused_by_rows) {
        /* jina-bert-v2: gate | up fused when ffn_up has 2 n_ff rows */
        const gguf_tensor_t *up = gguf_find_tensor(b->f, NAME("ffn_up.weight"));
        if (up && up->ne[1] == FF)
            kind = ARCH_FFN_SEQ;
    }
    if (kind != ARCH_FFN_MOE &&
        (!bind_vec(b, NAME("ffn_down.bias"), E, true, &l->b_down) ||
         !bind_vec(b, NAME("ffn_gate.bias"), FF, true, &l->b_gate) ||
         !bind_vec(b, NAME("ffn_up.bias"), kind == ARCH_FFN_GATED_FUSED ? 2 * FF : FF, true, &l->b_up)))
        return false;
    l->up_fused = kind == ARCH_FFN_GATED_FUSED;
    switch (kind) {
    case ARCH_FFN_GATED:
        if (!bind_mat(b, NAME("ffn_gate.weight"), E, FF, false, &l->w_gate) ||
            !bind_mat(b, NAME("ffn_up.weight"), E, FF, false, &l->w_up) ||
            !bind_mat(b, NAME("ffn_down.weight"), FF, E, false, &l->w_down))
            return false;
        /* gemma4: a layer with a router also runs experts, each branch with its norms */
        if (!a->moe_dense_par || hp->n_expert == 0 || !gguf_find_tensor(b->f, NAME("ffn_gate_inp.weight")))
            return true;
        return bind_moe(b, a, hp, i, l) && bind_vec(b, NAME("ffn_gate_inp.scale"), E, false, &l->router_in_scale) &&
               bind_vec(b, NAME("pre_ffw_norm_2.weight"), E, false, &l->ffn_pre_norm_2) &&
               bind_vec(b, NAME("post_ffw_norm_1.weight"), E, false, &l->ffn_post_norm_1) &&
               bind_vec(b, NAME("post_ffw_norm_2.weight"), E, false, &l->ffn_post_norm_2);
    case ARCH_FFN_GATED_FUSED:
        return bind_mat(b, NAME("ffn_up.weight"), E, 2 * FF, false, &l->w_up) &&
               bind_mat(b, NAME("ffn_down.weight"), FF, E, false, &l->w_down);
    case ARCH_FFN_SEQ:
        return bind_mat(b, NAME("ffn_up.weight"), E, FF, false, &l->w_up) &&
               bind_mat(b, NAME("ffn_down.weight"), FF, E, false, &l->w_down);
    case ARCH_FFN_MOE:
        return bind_moe(b, a, hp, i, l);
    }
    return false;
}

/* A LayerNorm's weight and bias [n], both required or both optional. */
static bool bind_ln(binder_t *b, const char *w_name, const char *b_name, int64_t n, bool optional, const float **w,
                    const float **bias)
{
    return bind_vec(b, w_name, n, optional, w) && bind_vec(b, b_name, n, optional || !*w, bias);
}

/* A BERT-family layer (arch post_ln): no pre-norms; LayerNorms after the
 * residuals; optional q/k LayerNorms and a second attention norm (jina). */
static bool bind_layer_post_ln(binder_t *b, const arch_desc_t *a, const model_hparams_t *hp, int i,
                               model_layer_t *l)
{
    const int64_t E = hp->n_embd, HD = l->head_dim, Q = (int64_t)hp->n_head * HD, KV = (int64_t)l->n_head_kv * HD;
    char n[96], nb[96];
    bool ok = bind_qkv(b, i, E, Q, KV, l) && bind_mat(b, NAME("attn_output.weight"), Q, E, false, &l->wo) &&
              bind_vec(b, NAME("attn_output.bias"), E, true, &l->bo) &&
              bind_ln(b, NAME("attn_output_norm.weight"), NAMEB("attn_output_norm.bias"), E, false,
                      &l->attn_out_norm, &l->attn_out_norm_b) &&
              bind_ln(b, NAME("attn_norm_2.weight"), NAMEB("attn_norm_2.bias"), E, true, &l->attn_norm_2,
                      &l->attn_norm_2_b) &&
              bind_ln(b, NAME("attn_q_norm.weight"), NAMEB("attn_q_norm.bias"), Q, true, &l->q_ln, &l->q_ln_b) &&
              bind_ln(b, NAME("attn_k_norm.weight"), NAMEB("attn_k_norm.bias"), KV, true, &l->k_ln, &l->k_ln_b) &&
              bind_ln(b, NAME("layer_output_norm.weight"), NAMEB("layer_output_norm.bias"), E, false,
                      &l->layer_out_norm, &l->layer_out_norm_b);
    return ok && bind_ffn(b, a, hp, i, l);
}

/* The attention of layer i (kind MODEL_LAYER_ATTN). */
static bool bind_attn(binder_t *b, const arch_desc_t *a, const model_hparams_t *hp, int i, model_layer_t *l)
{
    char n[96];
    const int64_t E = hp->n_embd, HD = l->head_dim, QO = (int64_t)hp->n_head * HD;
    const int64_t Q = a->attn_gate ? 2 * QO : QO, KV = (int64_t)l->n_head_kv * HD;
    const bool own_kv = l->kv_layer == i;
    if (own_kv && !a->v_norm) {
        if (!bind_qkv(b, i, E, Q, KV, l))
            return false;
    } else {
        /* gemma4: K/V only on layers with a cache of their own; V may be
         * missing (then V is the raw K projection) */
        if (!bind_mat(b, NAME("attn_qkv.weight"), E, Q + 2 * KV, true, &l->wqkv))
            return false;
        if (!l->wqkv.data && (!bind_mat(b, NAME("attn_q.weight"), E, Q, false, &l->wq) ||
                              !bind_mat(b, NAME("attn_k.weight"), E, KV, !own_kv, &l->wk) ||
                              !bind_mat(b, NAME("attn_v.weight"), E, KV, true, &l->wv)))
            return false;
    }
    if (!bind_mat(b, NAME("attn_output.weight"), QO, E, false, &l->wo) ||
        !bind_vec(b, NAME("attn_output.bias"), E, true, &l->bo))
        return false;
    if (a->qk_norm && (!bind_vec(b, NAME("attn_q_norm.weight"), HD, false, &l->q_norm) ||
                       !bind_vec(b, NAME("attn_k_norm.weight"), HD, !own_kv, &l->k_norm)))
        return false;
    if (a->attn_sinks && !bind_vec(b, NAME("attn_sinks.weight"), hp->n_head, false, &l->sinks))
        return false;
    return true;
}

/* A Gated DeltaNet layer: conv input q | k | v, gate z, alpha/beta, state
 * parameters, gated norm, output. */
static bool bind_gdn(binder_t *b, const model_hparams_t *hp, int i, model_layer_t *l)
{
    char n[96];
    const int64_t E = hp->n_embd, DI = hp->ssm_d_inner, DR = hp->ssm_dt_rank;
    const int64_t CH = 2 * (int64_t)hp->ssm_n_group * hp->ssm_d_state + DI;
    return bind_mat(b, NAME("attn_qkv.weight"), E, CH, false, &l->wqkv) &&
           bind_mat(b, NAME("attn_gate.weight"), E, DI, false, &l->ssm_z) &&
           bind_f32(b, NAME("ssm_conv1d.weight"), hp->ssm_d_conv, CH, false, &l->ssm_conv) &&
           bind_vec(b, NAME("ssm_dt.bias"), DR, false, &l->ssm_dt) && bind_vec(b, NAME("ssm_a"), DR, false, &l->ssm_a) &&
           bind_mat(b, NAME("ssm_beta.weight"), E, DR, false, &l->ssm_beta) &&
           bind_mat(b, NAME("ssm_alpha.weight"), E, DR, false, &l->ssm_alpha) &&
           bind_vec(b, NAME("ssm_norm.weight"), hp->ssm_d_state, false, &l->ssm_norm) &&
           bind_mat(b, NAME("ssm_out.weight"), DI, E, false, &l->ssm_out);
}

static bool bind_shortconv(binder_t *b, const model_hparams_t *hp, int i, model_layer_t *l)
{
    char n[96];
    const int64_t E = hp->n_embd;
    return bind_f32(b, NAME("shortconv.conv.weight"), hp->shortconv_l, E, false, &l->sc_conv) &&
           bind_mat(b, NAME("shortconv.in_proj.weight"), E, 3 * E, false, &l->sc_in) &&
           bind_mat(b, NAME("shortconv.out_proj.weight"), E, E, false, &l->sc_out);
}

static bool bind_layer(binder_t *b, const arch_desc_t *a, const model_hparams_t *hp, const model_layer_kinds_t *k,
                       int i, model_layer_t *l)
{
    const int64_t E = hp->n_embd;
    char n[96], norm[96];
    l->kind = (model_layer_kind_t)k->kind[i];
    l->swa = k->swa[i];
    l->rope = k->rope[i];
    l->n_head_kv = k->n_head_kv[i];
    l->head_dim = k->head_dim[i];
    l->n_rot = k->n_rot[i];
    l->n_ff = k->n_ff[i] > 0 ? k->n_ff[i] : hp->n_ff;
    l->kv_layer = k->kv_layer[i];
    if (a->post_ln)
        return bind_layer_post_ln(b, a, hp, i, l);
    snprintf(norm, sizeof norm, "blk.%d.%s.weight", i, a->ffn_norm);
    if (!bind_vec(b, NAME("attn_norm.weight"), E, false, &l->attn_norm) || !bind_vec(b, norm, E, false, &l->ffn_norm))
        return false;
    bool ok = l->kind == MODEL_LAYER_GDN         ? bind_gdn(b, hp, i, l)
              : l->kind == MODEL_LAYER_SHORTCONV ? bind_shortconv(b, hp, i, l)
                                                 : bind_attn(b, a, hp, i, l);
    if (!ok)
        return false;
    if (a->post_norms && (!bind_vec(b, NAME("post_attention_norm.weight"), E, false, &l->attn_post_norm) ||
                          !bind_vec(b, NAME("post_ffw_norm.weight"), E, false, &l->ffn_post_norm)))
        return false;
    if (a->layer_out_scale && !bind_vec(b, NAME("layer_output_scale.weight"), 1, true, &l->out_scale))
        return false;
    if (hp->n_embd_per_layer > 0 && i < hp->n_layer &&
        (!bind_mat(b, NAME("inp_gate.weight"), E, hp->n_embd_per_layer, false, &l->ple_gate) ||
         !bind_mat(b, NAME("proj.weight"), hp->n_embd_per_layer, E, false, &l->ple_proj) ||
         !bind_vec(b, NAME("post_norm.weight"), E, false, &l->ple_post_norm)))
        return false;
    if (i >= hp->n_layer && /* an MTP block: bound for speculative decoding, never run */
        (!bind_mat(b, NAME("nextn.eh_proj.weight"), 2 * E, E, false, &l->nextn_eh_proj) ||
         !bind_vec(b, NAME("nextn.enorm.weight"), E, false, &l->nextn_enorm) ||
         !bind_vec(b, NAME("nextn.hnorm.weight"), E, false, &l->nextn_hnorm) ||
         !bind_vec(b, NAME("nextn.shared_head_norm.weight"), E, true, &l->nextn_head_norm)))
        return false;
    return bind_ffn(b, a, hp, i, l);
}

#undef NAME
#undef NAMEB

/* A matrix of n_in inputs whose output count the file decides (the
 * classifier and dense heads); absent is fine. */
static bool bind_mat_rows(binder_t *b, const char *name, int64_t n_in, model_tensor_t *out)
{
    const gguf_tensor_t *t = gguf_find_tensor(b->f, name);
    memset(out, 0, sizeof *out);
    if (!t)
        return true;
    if (t->ne[1] < 1 || t->ne[1] > (1 << 20))
        return lf_err_set(b->err, LF_ERR_FORMAT, "%s: tensor '%s' has %lld rows", b->path, name,
                          (long long)t->ne[1]), false;
    return bind_mat(b, name, n_in, t->ne[1], false, out);
}

/* The encoder inputs (positions, token types, input LayerNorm) and the
 * embedding heads (classifier, dense layers after pooling). */
static bool bind_heads(model_t *m, binder_t *b)
{
    model_hparams_t *hp = &m->hp;
    model_weights_t *w = &m->w;
    const arch_desc_t *a = m->arch;
    const int64_t E = hp->n_embd;
    if (a->pos_embd && !bind_mat(b, "position_embd.weight", E, hp->n_ctx_train, false, &w->pos_embd))
        return false;
    if (!bind_mat_rows(b, "token_types.weight", E, &w->type_embd))
        return false;
    if (a->types_required && !w->type_embd.data)
        return lf_err_set(b->err, LF_ERR_FORMAT, "%s: missing tensor 'token_types.weight'", b->path), false;
    if (a->post_ln && !bind_ln(b, "token_embd_norm.weight", "token_embd_norm.bias", E, false, &w->tok_norm,
                               &w->tok_norm_b))
        return false;
    if (!bind_mat_rows(b, "cls.weight", E, &w->cls) ||
        !bind_vec(b, "cls.bias", w->cls.data ? w->cls.n_out : 1, true, &w->cls_b) ||
        !bind_mat(b, "cls.output.weight", w->cls.data ? w->cls.n_out : E, hp->n_cls_out, true, &w->cls_out) ||
        !bind_vec(b, "cls.output.bias", hp->n_cls_out, true, &w->cls_out_b) ||
        !bind_mat_rows(b, "dense_2.weight", E, &w->dense_2) ||
        !bind_vec(b, "dense_2.bias", w->dense_2.data ? w->dense_2.n_out : 1, true, &w->dense_2_b) ||
        !bind_mat_rows(b, "dense_3.weight", w->dense_2.data ? w->dense_2.n_out : E, &w->dense_3))
        return false;
    hp->n_embd_out = (int32_t)(w->dense_3.data ? w->dense_3.n_out : w->dense_2.data ? w->dense_2.n_out : E);
    return true;
}

static bool bind_weights(model_t *m, binder_t *b, const model_layer_kinds_t *kinds)
{
    const model_hparams_t *hp = &m->hp;
    model_weights_t *w = &m->w;
    const int64_t E = hp->n_embd;
    const gguf_tensor_t *te = gguf_find_tensor(b->f, "token_embd.weight");
    if (!te)
        return lf_err_set(b->err, LF_ERR_FORMAT, "%s: missing tensor 'token_embd.weight'", b->path), false;
    if (te->ne[1] <= 0 || te->ne[1] > (1 << 24))
        return lf_err_set(b->err, LF_ERR_FORMAT, "%s: token_embd has %lld rows", b->path, (long long)te->ne[1]),
               false;
    m->hp.n_vocab = (int32_t)te->ne[1];
    /* LongRoPE factors: llama.cpp reads blk.0's (the others duplicate it) */
    if (!bind_mat(b, "token_embd.weight", E, te->ne[1], false, &w->tok_embd) ||
        !bind_vec(b, m->arch->output_norm ? m->arch->output_norm : "output_norm.weight", E, m->arch->post_ln,
                  &w->output_norm) ||
        !bind_mat(b, "output.weight", E, hp->n_vocab, !m->arch->output_required, &w->output) ||
        !bind_vec(b, "rope_freqs.weight", hp->n_rot / 2, true, &w->rope_freqs) ||
        !bind_vec(b, "blk.0.rope_factors_long.weight", hp->n_rot / 2, true, &w->rope_long) ||
        !bind_vec(b, "blk.0.rope_factors_short.weight", hp->n_rot / 2, true, &w->rope_short) ||
        (!w->rope_long && !bind_vec(b, "rope_factors_long.weight", hp->n_rot / 2, true, &w->rope_long)) ||
        (!w->rope_short && !bind_vec(b, "rope_factors_short.weight", hp->n_rot / 2, true, &w->rope_short)))
        return false;
    if (!w->output.data) {
        w->output = w->tok_embd;
        w->output_tied = true;
    }
    if (!bind_heads(m, b))
        return false;
    if (hp->n_embd_per_layer > 0) {
        const int64_t P = (int64_t)hp->n_layer * hp->n_embd_per_layer;
        if (!bind_mat(b, "per_layer_token_embd.weight", P, hp->n_vocab, false, &w->ple_embd) ||
            !bind_mat(b, "per_layer_model_proj.weight", E, P, false, &w->ple_model_proj) ||
            !bind_vec(b, "per_layer_proj_norm.weight", hp->n_embd_per_layer, false, &w->ple_proj_norm))
            return false;
    }
    w->layers = calloc((size_t)hp->n_layer_all, sizeof *w->layers);
    if (!w->layers)
        return lf_err_set(b->err, LF_ERR_NOMEM, "%s: out of memory", b->path), false;
    for (int i = 0; i < hp->n_layer_all; i++)
        if (!bind_layer(b, m->arch, hp, kinds, i, &w->layers[i]))
            return false;
    for (uint64_t i = 0; i < gguf_n_tensors(b->f); i++) {
        const gguf_tensor_t *t = gguf_tensor_at(b->f, i);
        m->hp.n_params += (uint64_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
    }
    return true;
}

model_t *model_load(const char *path, lf_err_t *err)
{
    model_t *m = calloc(1, sizeof *m);
    if (!m) {
        lf_err_set(err, LF_ERR_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    lf_err_t local;
    binder_t b = {NULL, path, err ? err : &local};
    m->gguf = gguf_open(path, b.err);
    if (!m->gguf)
        goto fail;
    b.f = m->gguf;
    model_layer_kinds_t kinds;
    if (!model_hparams_read(m->gguf, path, &m->arch, &m->hp, &kinds, b.err))
        goto fail;
    bool bound = bind_weights(m, &b, &kinds);
    model_layer_kinds_free(&kinds);
    if (!bound)
        goto fail;
    m->vocab = vocab_load(m->gguf, b.err);
    if (!m->vocab) {
        lf_err_prefix(b.err, "%s", path);
        goto fail;
    }
    if (vocab_n_tokens(m->vocab) != m->hp.n_vocab) {
        lf_err_set(b.err, LF_ERR_FORMAT, "%s: vocabulary has %d tokens but token_embd has %d rows", path,
                   vocab_n_tokens(m->vocab), m->hp.n_vocab);
        goto fail;
    }
    if (!weights_pack(&m->w, m->hp.n_layer, m->hp.n_expert, &m->pack, b.err)) {
        lf_err_prefix(b.err, "%s", path);
        goto fail;
    }
    gguf_str_t tmpl;
    if (gguf_get_str(m->gguf, "tokenizer.chat_template", &tmpl) && !(m->chat_template = gguf_str_dup(tmpl))) {
        lf_err_set(b.err, LF_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    return m;
fail:
    model_free(m);
    return NULL;
}

model_t *model_nextn_view(const model_t *m, lf_err_t *err)
{
    if (!m || m->hp.n_nextn <= 0 || m->base) {
        lf_err_set(err, LF_ERR_UNSUPPORTED, "the model has no next-token-prediction (MTP) block");
        return NULL;
    }
    const model_layer_t *blk = &m->w.layers[m->hp.n_layer];
    if (blk->kind != MODEL_LAYER_ATTN || !blk->nextn_eh_proj.data || !blk->nextn_enorm || !blk->nextn_hnorm) {
        lf_err_set(err, LF_ERR_UNSUPPORTED, "the model's MTP block is not an attention block with its nextn tensors");
        return NULL;
    }
    model_t *v = calloc(1, sizeof *v);
    model_layer_t *L = malloc(sizeof *L);
    if (!v || !L) {
        free(v), free(L);
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    *L = *blk;
    L->kv_layer = 0;
    v->base = m;
    v->gguf = m->gguf;
    v->vocab = m->vocab;
    v->arch = m->arch;
    v->hp = m->hp;
    v->hp.n_layer = v->hp.n_layer_all = v->hp.n_layer_attn = v->hp.n_layer_kv = 1;
    v->hp.n_nextn = 0;
    v->hp.n_kv_from = 1;
    v->hp.n_layer_swa = 0;
    v->w = m->w;
    v->w.layers = L;
    if (blk->nextn_head_norm)
        v->w.output_norm = blk->nextn_head_norm;
    return v;
}

void model_free(model_t *m)
{
    if (!m)
        return;
    if (m->base) {
        free(m->w.layers);
        free(m);
        return;
    }
    vocab_free(m->vocab);
    free(m->w.layers);
    free(m->chat_template);
    weights_pack_free(&m->pack);
    gguf_close(m->gguf);
    free(m);
}

const model_hparams_t *model_hparams(const model_t *m) { return &m->hp; }
const vocab_t *model_vocab(const model_t *m) { return m->vocab; }
const gguf_file_t *model_gguf(const model_t *m) { return m->gguf; }
const char *model_chat_template(const model_t *m) { return m->chat_template; }
const model_weights_t *model_weights(const model_t *m) { return &m->w; }

static uint64_t tensor_bytes(const model_tensor_t *t)
{
    return t->data ? (uint64_t)t->row_bytes * (uint64_t)t->n_out : 0;
}

int model_layer_matrices(model_layer_t *L, model_tensor_t *out[MODEL_LAYER_MATRICES])
{
    model_tensor_t *all[MODEL_LAYER_MATRICES] = {&L->wq,       &L->wk,       &L->wv,     &L->wqkv,      &L->wo,
                                                 &L->w_gate,   &L->w_up,     &L->w_down, &L->s_gate,    &L->s_up,
                                                 &L->s_down,   &L->ssm_z,    &L->ssm_alpha, &L->ssm_beta, &L->ssm_out,
                                                 &L->sc_in,    &L->sc_out,   &L->ple_gate, &L->ple_proj, &L->s_gate_inp};
    int n = 0;
    for (int i = 0; i < MODEL_LAYER_MATRICES; i++)
        if (all[i]->data)
            out[n++] = all[i];
    return n;
}

uint64_t model_decode_bytes(const model_t *m)
{
    const model_weights_t *w = &m->w;
    uint64_t n = tensor_bytes(&w->output) + w->tok_embd.row_bytes;
    for (int l = 0; l < m->hp.n_layer; l++) {
        model_layer_t *L = &w->layers[l];
        model_tensor_t *ts[MODEL_LAYER_MATRICES];
        for (int i = 0, k = model_layer_matrices(L, ts); i < k; i++)
            n += tensor_bytes(ts[i]);
        n += tensor_bytes(&L->router);
        if (L->x_gate.data || L->x_gate_up.data)
            n += (uint64_t)m->hp.n_expert_used * ((L->x_gate_up.data ? L->x_gate_up.expert_bytes
                                                                      : L->x_gate.expert_bytes + L->x_up.expert_bytes) +
                                                  L->x_down.expert_bytes);
    }
    if (w->ple_embd.data)
        n += w->ple_embd.row_bytes + tensor_bytes(&w->ple_model_proj);
    return n;
}

void model_pack_info(const model_t *m, int *n_packed, size_t *bytes)
{
    *n_packed = m->pack.n_packed;
    *bytes = m->pack.bytes;
}

const arch_desc_t *model_arch(const model_t *m) { return m->arch; }

/* K + V bytes per position of the layers with a cache of their own (the
 * window layers only, or all). */
static uint64_t kv_bytes_per_token(const model_t *m, bool swa_only)
{
    uint64_t n = 0;
    for (int l = 0; l < m->hp.n_layer; l++) {
        const model_layer_t *L = &m->w.layers[l];
        if (L->kind == MODEL_LAYER_ATTN && L->kv_layer == l && (!swa_only || (L->swa && m->hp.n_swa > 0)))
            n += 2ull * 2ull * (uint64_t)L->n_head_kv * (uint64_t)L->head_dim;
    }
    return n;
}

uint64_t model_kv_bytes_per_token(const model_t *m) { return kv_bytes_per_token(m, false); }

uint64_t model_kv_bytes_per_token_swa(const model_t *m) { return kv_bytes_per_token(m, true); }

int64_t model_state_floats(const model_t *m, int l)
{
    const model_hparams_t *hp = &m->hp;
    if (l < 0 || l >= hp->n_layer)
        return 0;
    switch (m->w.layers[l].kind) {
    case MODEL_LAYER_GDN: {
        const int64_t ch = 2 * (int64_t)hp->ssm_n_group * hp->ssm_d_state + hp->ssm_d_inner;
        return (int64_t)(hp->ssm_d_conv - 1) * ch + (int64_t)hp->ssm_dt_rank * hp->ssm_d_state * hp->ssm_d_state;
    }
    case MODEL_LAYER_SHORTCONV:
        return (int64_t)(hp->shortconv_l - 1) * hp->n_embd;
    case MODEL_LAYER_ATTN:
        break;
    }
    return 0;
}

int32_t model_ctx_max(const model_t *m, char *why, size_t cap)
{
    const model_hparams_t *hp = model_hparams(m);
    int64_t lim = hp->n_ctx_train > 0 ? hp->n_ctx_train : (1 << 24);
    const bool scaled = hp->rope_scaling != MODEL_ROPE_SCALE_NONE && hp->rope_freq_scale > 0.0f &&
                        hp->rope_freq_scale < 1.0f;
    const double f = scaled ? 1.0 / (double)hp->rope_freq_scale : 1.0;
    const int64_t orig = hp->n_ctx_orig > 0 ? hp->n_ctx_orig : hp->n_ctx_train;
    const int64_t ext = scaled ? (int64_t)((double)orig * f + 0.5) : 0;
    if (ext > lim)
        lim = ext;
    if (lim > (1 << 24))
        lim = 1 << 24;
    if (why && cap) {
        if (scaled && ext >= lim)
            snprintf(why, cap, "%s rope scaling by %g of its %lld trained positions",
                     hp->rope_scaling == MODEL_ROPE_SCALE_YARN ? "its YaRN" : "its linear", f, (long long)orig);
        else if (scaled)
            snprintf(why, cap, "its context_length, its rope scaling included");
        else
            snprintf(why, cap, "the context it was trained for; its file has no rope scaling that extends it");
    }
    return (int32_t)lim;
}
uint64_t model_state_bytes(const model_t *m)
{
    uint64_t n = 0;
    for (int l = 0; l < m->hp.n_layer; l++)
        n += (uint64_t)model_state_floats(m, l) * sizeof(float);
    return n;
}

bool model_is_hybrid(const model_t *m) { return m->hp.n_layer_attn < m->hp.n_layer; }
