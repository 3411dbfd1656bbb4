/* model.c - reads hyper-parameters and binds weight tensors by name.
 *
 * Every tensor the forward pass will touch is looked up here, its type and
 * shape checked against the hyper-parameters, so that the forward pass can
 * trust the views it gets. Unsupported types fail here, at load time.
 */
#include "engine/model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/arch.h"

struct model {
    gguf_file_t *gguf;
    vocab_t *vocab;
    model_hparams_t hp;
    model_weights_t w;
    const arch_desc_t *arch;
    char *chat_template;
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

static bool bind_mat(binder_t *b, const char *name, int64_t n_in, int64_t n_out, bool optional,
                     model_tensor_t *out)
{
    const gguf_tensor_t *t;
    memset(out, 0, sizeof *out);
    if (!get_tensor(b, name, n_in, n_out, optional, &t))
        return false;
    if (!t)
        return true;
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
    return true;
}

static bool get_u32_key(binder_t *b, const char *arch, const char *suffix, bool optional, uint32_t *out)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (gguf_get_u32(b->f, key, out))
        return true;
    if (!optional)
        lf_err_set(b->err, LF_ERR_FORMAT, "%s: missing or invalid metadata '%s'", b->path, key);
    return optional;
}

static bool read_hparams(model_t *m, binder_t *b)
{
    model_hparams_t *hp = &m->hp;
    gguf_str_t s;
    if (!gguf_get_str(b->f, "general.architecture", &s))
        return lf_err_set(b->err, LF_ERR_FORMAT, "%s: missing general.architecture", b->path), false;
    snprintf(hp->arch, sizeof hp->arch, "%.*s", (int)(s.len < 31 ? s.len : 31), s.ptr);
    m->arch = arch_find(hp->arch);
    if (!m->arch || s.len >= sizeof hp->arch)
        return lf_err_set(b->err, LF_ERR_UNSUPPORTED, "%s: architecture '%s' is not supported (supported: %s)",
                          b->path, hp->arch, arch_supported_list()), false;
    if (gguf_get_str(b->f, "general.name", &s))
        snprintf(hp->name, sizeof hp->name, "%.*s", (int)(s.len < 127 ? s.len : 127), s.ptr);
    const char *a = hp->arch;
    uint32_t v;
    if (!get_u32_key(b, a, "embedding_length", false, &v)) return false;
    hp->n_embd = (int32_t)v;
    if (!get_u32_key(b, a, "block_count", false, &v)) return false;
    hp->n_layer = (int32_t)v;
    if (!get_u32_key(b, a, "feed_forward_length", false, &v)) return false;
    hp->n_ff = (int32_t)v;
    if (!get_u32_key(b, a, "attention.head_count", false, &v)) return false;
    hp->n_head = (int32_t)v;
    v = (uint32_t)hp->n_head;
    get_u32_key(b, a, "attention.head_count_kv", true, &v);
    hp->n_head_kv = (int32_t)v;
    v = 2048;
    get_u32_key(b, a, "context_length", true, &v);
    hp->n_ctx_train = (int32_t)v;
    if (hp->n_embd <= 0 || hp->n_embd > 65536 || hp->n_layer <= 0 || hp->n_layer > 1024 || hp->n_ff <= 0 ||
        hp->n_ff > 1 << 20 || hp->n_head <= 0 || hp->n_head > 1024 || hp->n_head_kv <= 0 ||
        hp->n_head % hp->n_head_kv || hp->n_ctx_train <= 0)
        return lf_err_set(b->err, LF_ERR_FORMAT, "%s: inconsistent hyper-parameters (embd %d, layers %d, ff %d, "
                          "heads %d/%d, ctx %d)", b->path, hp->n_embd, hp->n_layer, hp->n_ff, hp->n_head,
                          hp->n_head_kv, hp->n_ctx_train), false;
    v = (uint32_t)(hp->n_embd / hp->n_head);
    get_u32_key(b, a, "attention.key_length", true, &v);
    hp->head_dim = (int32_t)v;
    uint32_t vlen = v;
    get_u32_key(b, a, "attention.value_length", true, &vlen);
    if (hp->head_dim <= 0 || hp->head_dim % 2 || vlen != (uint32_t)hp->head_dim)
        return lf_err_set(b->err, LF_ERR_UNSUPPORTED, "%s: head size %d (value %u) not supported", b->path,
                          hp->head_dim, vlen), false;
    v = (uint32_t)hp->head_dim;
    get_u32_key(b, a, "rope.dimension_count", true, &v);
    hp->n_rot = (int32_t)v;
    if (hp->n_rot <= 0 || hp->n_rot > hp->head_dim || hp->n_rot % 2 || hp->head_dim > 2048)
        return lf_err_set(b->err, LF_ERR_FORMAT, "%s: rope dimension %d invalid for head size %d", b->path,
                          hp->n_rot, hp->head_dim), false;

    char key[128];
    hp->rms_eps = m->arch->default_rms_eps;
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", a);
    gguf_get_f32(b->f, key, &hp->rms_eps);
    hp->rope_theta = m->arch->default_rope_theta;
    snprintf(key, sizeof key, "%s.rope.freq_base", a);
    gguf_get_f32(b->f, key, &hp->rope_theta);
    hp->rope_freq_scale = 1.0f;
    snprintf(key, sizeof key, "%s.rope.scaling.type", a);
    if (gguf_get_str(b->f, key, &s) && !gguf_str_eq(s, "none")) {
        float factor = 1.0f;
        snprintf(key, sizeof key, "%s.rope.scaling.factor", a);
        gguf_get_f32(b->f, key, &factor);
        if (!gguf_str_eq(s, "linear"))
            return lf_err_set(b->err, LF_ERR_UNSUPPORTED, "%s: rope scaling '%.*s' is not supported", b->path,
                              (int)(s.len < 40 ? s.len : 40), s.ptr), false;
        if (factor > 0)
            hp->rope_freq_scale = 1.0f / factor;
    }
    hp->rope_neox = m->arch->rope_neox;
    return true;
}

static bool bind_weights(model_t *m, binder_t *b)
{
    const model_hparams_t *hp = &m->hp;
    model_weights_t *w = &m->w;
    int64_t E = hp->n_embd, HD = hp->head_dim, Q = (int64_t)hp->n_head * HD, KV = (int64_t)hp->n_head_kv * HD;
    const gguf_tensor_t *te = gguf_find_tensor(b->f, "token_embd.weight");
    if (!te)
        return lf_err_set(b->err, LF_ERR_FORMAT, "%s: missing tensor 'token_embd.weight'", b->path), false;
    m->hp.n_vocab = (int32_t)te->ne[1];
    if (!bind_mat(b, "token_embd.weight", E, te->ne[1], false, &w->tok_embd) ||
        !bind_vec(b, "output_norm.weight", E, false, &w->output_norm) ||
        !bind_mat(b, "output.weight", E, hp->n_vocab, true, &w->output) ||
        !bind_vec(b, "rope_freqs.weight", hp->n_rot / 2, true, &w->rope_freqs))
        return false;
    if (!w->output.data) {
        w->output = w->tok_embd;
        w->output_tied = true;
    }
    w->layers = calloc((size_t)hp->n_layer, sizeof *w->layers);
    if (!w->layers)
        return lf_err_set(b->err, LF_ERR_NOMEM, "%s: out of memory", b->path), false;
    for (int i = 0; i < hp->n_layer; i++) {
        model_layer_t *l = &w->layers[i];
        char n[64];
#define NAME(s) (snprintf(n, sizeof n, "blk.%d." s, i), n)
        if (!bind_vec(b, NAME("attn_norm.weight"), E, false, &l->attn_norm) ||
            !bind_mat(b, NAME("attn_q.weight"), E, Q, false, &l->wq) ||
            !bind_mat(b, NAME("attn_k.weight"), E, KV, false, &l->wk) ||
            !bind_mat(b, NAME("attn_v.weight"), E, KV, false, &l->wv) ||
            !bind_mat(b, NAME("attn_output.weight"), Q, E, false, &l->wo) ||
            !bind_vec(b, NAME("ffn_norm.weight"), E, false, &l->ffn_norm) ||
            !bind_mat(b, NAME("ffn_gate.weight"), E, hp->n_ff, false, &l->w_gate) ||
            !bind_mat(b, NAME("ffn_up.weight"), E, hp->n_ff, false, &l->w_up) ||
            !bind_mat(b, NAME("ffn_down.weight"), hp->n_ff, E, false, &l->w_down))
            return false;
        if (m->arch->qkv_bias &&
            (!bind_vec(b, NAME("attn_q.bias"), Q, true, &l->bq) ||
             !bind_vec(b, NAME("attn_k.bias"), KV, true, &l->bk) ||
             !bind_vec(b, NAME("attn_v.bias"), KV, true, &l->bv)))
            return false;
#undef NAME
    }
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
    if (!read_hparams(m, &b) || !bind_weights(m, &b))
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

void model_free(model_t *m)
{
    if (!m)
        return;
    vocab_free(m->vocab);
    free(m->w.layers);
    free(m->chat_template);
    gguf_close(m->gguf);
    free(m);
}

const model_hparams_t *model_hparams(const model_t *m) { return &m->hp; }
const vocab_t *model_vocab(const model_t *m) { return m->vocab; }
const gguf_file_t *model_gguf(const model_t *m) { return m->gguf; }
const char *model_chat_template(const model_t *m) { return m->chat_template; }
const model_weights_t *model_weights(const model_t *m) { return &m->w; }

uint64_t model_kv_bytes_per_token(const model_t *m)
{
    return 2ull * 2ull * (uint64_t)m->hp.n_layer * (uint64_t)m->hp.n_head_kv * (uint64_t)m->hp.head_dim;
}
