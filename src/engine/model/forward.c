/* forward.c - the batch-first decoder forward pass of every architecture.
 *
 * Numerics follow ggml's CPU backend where it decides rounding: every matrix
 * product converts its activations to the weight type's vec_dot_type, K and
 * V are cached as F16, Q is rounded to F16 for K.Q, and the softmax weights
 * are rounded to F16 before they multiply V. Rope angles are computed as
 * ggml does (theta multiplied up by theta_scale in float). Sums that ggml
 * does in double (rms norm, softmax denominator) are done in double here.
 * F32 weights, attention, SiLU and rope go further and repeat ggml's exact
 * operation order (ggml_exact.h, attention.c), choosing per token between
 * llama.cpp's prompt order and its decode order (token_orders).
 *
 * Every value computed for one token depends only on that token's row and
 * its sequence's cache (and recurrent state), never on the other tokens of
 * the batch, so a sequence decodes bitwise the same alone or batched
 * (batch invariance).
 *
 * One layer, with the architecture's options in brackets (arch.h):
 *   xn = rms_norm(x) * attn_norm
 *   mixer, by the layer's kind:
 *     attention: q, k, v = Wq xn, Wk xn, Wv xn [fused Wqkv] [+ biases]
 *       [q | gate rows]; q, k = rms_norm per head [q/k norm] [V norm];
 *       rope [per layer kind, or none]; q *= q_scale [gemma3, phi3]; K, V
 *       to the cache as F16 [not on KV-sharing layers]; a = attention over
 *       the layer's (or its source's) cache [sliding window, sinks]
 *       [* sigmoid(gate)]; o = Wo a [+ bias]
 *     Gated DeltaNet (deltanet.h), short convolution (shortconv.h): o from
 *       the sequence's recurrent state (rstate.h, snapshots taken here at
 *       the block boundaries the prefix cache wants)
 *   x += o [post-norm]
 *   xn = rms_norm(x) * ffn_norm; f = FFN(xn) (ffn.h) [post-norm]; x += f
 *   [gemma4: x += per-layer embedding branch; x *= layer_output_scale]
 * then logits = output(rms_norm(x) * output_norm) [soft-capped].
 */
#include "engine/model/forward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/kernels/ggml_exact.h"
#include "engine/kernels/tpool.h"
#include "engine/model/attention.h"
#include "engine/model/attn_flash.h"
#include "engine/model/deltanet.h"
#include "engine/model/ffn.h"
#include "engine/model/kv.h"
#include "engine/model/linear.h"
#include "engine/model/ops.h"
#include "engine/model/rope.h"
#include "engine/model/rstate.h"
#include "engine/model/shortconv.h"
#include "engine/quant/fp16.h"
#include "engine/quant/quant.h"

struct fwd {
    const model_t *m;
    const model_hparams_t *hp;
    const model_weights_t *w;
    const arch_desc_t *arch;
    tpool_t *pool;
    int32_t n_seq, n_ctx, max_batch;
    int64_t kv_dim;          /* largest n_head_kv * head_dim of a layer */
    int64_t q_dim;           /* largest n_head * head_dim of a layer */
    kv_cache_t *kv;          /* paged K/V of every sequence (NULL: rows mode) */
    fwd_attn_t attn;
    int32_t exact_max_kv;    /* tokens attending more positions take flash attention */
    attn_flash_t *fa;        /* flash attention's scratch (unless EXACT) */
    uint8_t *path;           /* [B] ATTN_PATH_* of each token */
    ffn_t *ffn;              /* FFN / MoE scratch */
    rope_t rope_full, rope_swa; /* the rope of full-attention and window layers */
    /* scratch for max_batch tokens */
    float *x;                /* [B][n_embd] residual stream */
    float *xn;               /* [B][max(n_embd, q_dim)] normed input, then branch outputs */
    float *ffo;              /* [B][n_embd] FFN output */
    float *q;                /* [B][q_dim] */
    float *k, *v;            /* [B][kv_dim] */
    float *qkv;              /* [B][q_dim + 2 kv_dim] fused q|k|v product, or NULL */
    float *cs;               /* [2][B][n_rot] rope tables of the batch's positions
                                (full-attention layers, window layers), made
                                once per batch */
    float *att;              /* [B][q_dim] attention output */
    void *act;               /* activation scratch of the attention and output matrices */
    float *logits;           /* [n_logits_cap][n_vocab] */
    int32_t n_logits, n_logits_cap;
    int32_t *out_rows;       /* [B] batch index of each logits row */
    const int32_t **blocks;  /* [B] block table of each token's sequence */
    int32_t *n_kv;           /* [B] */
    int32_t *kv_start;       /* [B] first position attended (sliding window) */
    uint8_t *order;          /* [B] GX_ORDER_* of each token (see token_orders) */
    float *attn_scratch;     /* [threads][attn_scratch_floats] (FWD_ATTN_EXACT) */
    fwd_tok_t *prefill;      /* [B] batch buffer of fwd_prefill */
    int64_t attn_stride;
    int32_t rot_stride;      /* floats per position in cs (largest n_rot) */
    /* ---- the 2026 hybrids (issue 28) ---- */
    float *qg;               /* [B][2 q_dim] q | gate rows of attn_gate layers */
    float *gate;             /* [B][q_dim] the attention output gate */
    rs_t *rs;                /* recurrent states and snapshots (NULL: no recurrent layers) */
    dn_t *dn;                /* Gated DeltaNet scratch */
    sc_t *sc;                /* short-convolution scratch */
    rs_group_t *groups;      /* [B] this batch's sequences, for the recurrent layers */
    int32_t *group_rows;     /* [B] */
    int32_t n_groups;
    int32_t *hint_last;      /* [n_seq] snapshot points: the prompt's last reusable block boundary */
    int32_t *hint_match;     /* [n_seq] and the end of the cached chain it matched (0: none) */
    bool *all_prompt;        /* [n_seq] every position so far in the prompt order */
    int32_t snap_interval;   /* and every multiple of this */
    float *ple;              /* [B][n_layer][n_embd_per_layer] per-layer embeddings of the batch */
    float *ple_t;            /* [B][n_embd_per_layer], at least one row of n_layer x that */
    /* ---- encoders and embeddings (issue 25) ---- */
    float *x0;               /* [B][n_embd] a post-LN layer's input, or NULL */
    int32_t *seq_n;          /* [B] tokens of the token's sequence in the batch */
    int32_t *pos;            /* [B] the token's position */
    float *alibi;            /* [n_head] ALiBi slopes, or NULL */
    float *hidden;           /* [n_hidden_cap][n_embd] hidden states of `embd` tokens */
    int32_t n_hidden, n_hidden_cap;
};

static size_t max_act_bytes(const model_weights_t *w, int n_layer, int64_t B)
{
    size_t best = lin_act_bytes(&w->output, B);
    if (w->ple_model_proj.data && lin_act_bytes(&w->ple_model_proj, B) > best)
        best = lin_act_bytes(&w->ple_model_proj, B);
    for (int l = 0; l < n_layer; l++) {
        model_tensor_t *ts[MODEL_LAYER_MATRICES];
        for (int i = 0, k = model_layer_matrices(&w->layers[l], ts); i < k; i++) {
            size_t s = lin_act_bytes(ts[i], B);
            if (s > best)
                best = s;
        }
    }
    return best;
}

/* Each layer's own K/V width (0: a recurrent or KV-sharing layer). */
static void layer_kv_dims(const model_t *m, int32_t *dims)
{
    const model_hparams_t *hp = model_hparams(m);
    const model_weights_t *w = model_weights(m);
    for (int l = 0; l < hp->n_layer; l++) {
        const model_layer_t *L = &w->layers[l];
        dims[l] = L->kind == MODEL_LAYER_ATTN && L->kv_layer == l ? L->n_head_kv * L->head_dim : 0;
    }
}

/* The KV cache fwd_create makes for m and opts: sizes, the window layers
 * (layer_swa, n_layer entries, filled) and the block budgets. */
static lf_code_t kv_plan(const model_t *m, const fwd_opts_t *opts, int32_t n_seq, int32_t n_ctx, int32_t max_batch,
                         bool *layer_swa, int32_t *dims, kv_opts_t *ko, lf_err_t *err)
{
    const model_hparams_t *hp = model_hparams(m);
    const model_weights_t *w = model_weights(m);
    layer_kv_dims(m, dims);
    for (int l = 0; l < hp->n_layer; l++)
        layer_swa[l] = hp->n_swa > 0 && w->layers[l].swa && dims[l] > 0;
    *ko = (kv_opts_t){
        .n_layer = hp->n_layer,
        .kv_dim = hp->max_kv_dim,
        .layer_kv_dim = dims,
        .block_tokens = opts && opts->kv_block_tokens > 0 ? opts->kv_block_tokens : FWD_KV_BLOCK_TOKENS,
        .n_seq = n_seq,
        .max_seq_len = n_ctx,
        .layer_swa = layer_swa,
        .n_swa = hp->n_swa,
        .max_batch = max_batch,
        .type_k = opts ? opts->type_k : KV_F16,
        .type_v = opts ? opts->type_v : KV_F16,
    };
    if (fwd_check_attn(m, opts, err) != LF_OK)
        return LF_ERR_INVALID;
    if (ko->block_tokens % ATTN_CHUNK != 0 || ko->block_tokens > 4096)
        return lf_err_set(err, LF_ERR_INVALID, "KV block of %d positions: must be a multiple of %d (at most 4096)",
                          ko->block_tokens, ATTN_CHUNK);
    const int64_t bt = ko->block_tokens;
    const int64_t ctx_blocks = (n_ctx + bt - 1) / bt;
    int64_t blocks = opts && opts->kv_blocks > 0 ? opts->kv_blocks : (int64_t)n_seq * ctx_blocks;
    if (opts && opts->kv_bytes > 0) {
        /* the window pool (fixed: every sequence's window) comes first,
         * then blocks of the other layers, at least one full context */
        uint64_t pos_full = 0, pos_swa = 0; /* bytes of one position */
        for (int l = 0; l < hp->n_layer; l++)
            *(layer_swa[l] ? &pos_swa : &pos_full) += kv_bytes_per_position(ko->type_k, ko->type_v, dims[l]);
        const uint64_t per_full = pos_full * (uint64_t)bt;
        const uint64_t per_swa = pos_swa * (uint64_t)bt;
        const uint64_t swa = (uint64_t)n_seq * (uint64_t)kv_swa_blocks_per_seq(ko) * per_swa;
        const uint64_t budget = (uint64_t)opts->kv_bytes;
        blocks = per_full ? (int64_t)((budget > swa ? budget - swa : 0) / per_full) : (int64_t)n_seq * ctx_blocks;
        if (blocks < ctx_blocks)
            blocks = ctx_blocks;
    }
    if (blocks > (1 << 30))
        blocks = 1 << 30;
    ko->n_blocks = (int32_t)blocks;
    return LF_OK;
}

uint64_t fwd_kv_bytes_planned(const model_t *m, const fwd_opts_t *opts)
{
    const model_hparams_t *hp = model_hparams(m);
    const int32_t n_seq = opts && opts->n_seq > 0 ? opts->n_seq : 1;
    const int32_t n_ctx = opts && opts->n_ctx > 0 ? opts->n_ctx : hp->n_ctx_train;
    const int32_t max_batch = opts && opts->max_batch > 0 ? opts->max_batch : 512;
    bool *swa = calloc((size_t)hp->n_layer, sizeof *swa);
    int32_t *dims = calloc((size_t)hp->n_layer, sizeof *dims);
    kv_opts_t ko;
    uint64_t bytes = 0;
    if (swa && dims && kv_plan(m, opts, n_seq, n_ctx, max_batch, swa, dims, &ko, NULL) == LF_OK) {
        const int64_t per_seq = kv_swa_blocks_per_seq(&ko);
        const int64_t n_w = per_seq ? ((int64_t)n_seq * per_seq < ko.n_blocks ? (int64_t)n_seq * per_seq
                                                                               : ko.n_blocks)
                                    : 0;
        for (int l = 0; l < hp->n_layer; l++) {
            const uint64_t per = kv_bytes_per_position(ko.type_k, ko.type_v, dims[l]) * (uint64_t)ko.block_tokens;
            bytes += per * (uint64_t)(per_seq && swa[l] ? n_w : ko.n_blocks);
        }
    }
    free(swa);
    free(dims);
    return bytes;
}

/* Snapshot slots of recurrent state by default: about 256 MiB of them,
 * at least two more than the sequences and at most four per sequence
 * (plus eight). */
static int32_t default_snapshots(const model_t *m, int32_t n_seq)
{
    const uint64_t per = model_state_bytes(m);
    int64_t n = per ? (int64_t)((256ull << 20) / per) : 0;
    if (n < n_seq + 2)
        n = n_seq + 2;
    if (n > 4 * (int64_t)n_seq + 8)
        n = 4 * (int64_t)n_seq + 8;
    return (int32_t)n;
}

/* The recurrent state store of a hybrid model (NULL otherwise). */
static bool state_create(fwd_t *f, const fwd_opts_t *opts, lf_err_t *err)
{
    const model_hparams_t *hp = f->hp;
    if (!model_is_hybrid(f->m))
        return true;
    int64_t *floats = calloc((size_t)hp->n_layer, sizeof *floats);
    if (!floats)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory"), false;
    for (int l = 0; l < hp->n_layer; l++)
        floats[l] = model_state_floats(f->m, l);
    const int32_t want = opts ? opts->state_snapshots : 0;
    rs_opts_t ro = {.n_seq = f->n_seq, .n_layer = hp->n_layer, .layer_floats = floats,
                    .n_snapshots = want < 0 ? 0 : want > 0 ? want : default_snapshots(f->m, f->n_seq)};
    f->rs = rs_create(&ro, err);
    free(floats);
    f->snap_interval = opts && opts->state_snap_interval > 0 ? opts->state_snap_interval : FWD_SNAP_INTERVAL;
    f->hint_last = calloc((size_t)f->n_seq, sizeof *f->hint_last);
    f->hint_match = calloc((size_t)f->n_seq, sizeof *f->hint_match);
    f->all_prompt = malloc((size_t)f->n_seq * sizeof *f->all_prompt);
    f->groups = malloc((size_t)f->max_batch * sizeof *f->groups);
    f->group_rows = malloc((size_t)f->max_batch * sizeof *f->group_rows);
    if (!f->rs || !f->hint_last || !f->hint_match || !f->all_prompt || !f->groups || !f->group_rows ||
        !(f->dn = dn_create(f->m, f->max_batch, err)) || !(f->sc = sc_create(f->m, f->max_batch, err)))
        return f->rs ? lf_err_set(err, LF_ERR_NOMEM, "out of memory for the recurrent state"), false : false;
    for (int32_t i = 0; i < f->n_seq; i++)
        f->all_prompt[i] = true;
    return true;
}

fwd_t *fwd_create(const model_t *m, const fwd_opts_t *opts, lf_err_t *err)
{
    fwd_t *f = calloc(1, sizeof *f);
    if (!f) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    f->m = m;
    f->hp = model_hparams(m);
    f->w = model_weights(m);
    f->arch = model_arch(m);
    const model_hparams_t *hp = f->hp;
    f->n_seq = opts && opts->n_seq > 0 ? opts->n_seq : 1;
    f->n_ctx = opts && opts->n_ctx > 0 ? opts->n_ctx : hp->n_ctx_train;
    f->max_batch = opts && opts->max_batch > 0 ? opts->max_batch : 512;
    int n_threads = opts && opts->n_threads > 0 ? opts->n_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (n_threads < 1)
        n_threads = 1;
    bool *layer_swa = NULL;
    int32_t *dims = NULL;
    if (f->n_seq > 4096 || f->n_ctx > (1 << 24) || f->max_batch > 1 << 16) {
        lf_err_set(err, LF_ERR_INVALID, "unreasonable sizes: %d sequences, context %d, batch %d", f->n_seq,
                   f->n_ctx, f->max_batch);
        goto fail;
    }
    if (tpool_create(n_threads, &f->pool, err) != LF_OK)
        goto fail;
    f->kv_dim = hp->max_kv_dim;
    f->q_dim = hp->max_q_dim;
    const int64_t B = f->max_batch, E = hp->n_embd;
    const int64_t xn_dim = f->q_dim > E ? f->q_dim : E;
    kv_opts_t ko;
    layer_swa = calloc((size_t)hp->n_layer, sizeof *layer_swa);
    dims = calloc((size_t)hp->n_layer, sizeof *dims);
    if (!layer_swa || !dims) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        goto fail;
    }
    /* families without a KV cache attend over the batch's own rows */
    if (!f->arch->no_cache &&
        (kv_plan(m, opts, f->n_seq, f->n_ctx, f->max_batch, layer_swa, dims, &ko, err) != LF_OK ||
         !(f->kv = kv_create(&ko, err))))
        goto fail;
    if (!(f->ffn = ffn_create(m, f->max_batch, err)) || !state_create(f, opts, err))
        goto fail;
    /* LongRoPE (phi3): the long factors when the context exceeds the
     * trained one, as llama.cpp chooses by its context size */
    const float *factors = f->w->rope_freqs;
    if (!factors)
        factors = f->n_ctx > hp->n_ctx_orig ? f->w->rope_long : f->w->rope_short;
    rope_init(&f->rope_full, hp, hp->rope_theta, hp->rope_freq_scale, factors);
    /* gemma4: window layers rotate their own dims of their own head size,
     * and the proportional factors are the full layers' only */
    if (f->arch->per_layer_dims)
        rope_init_dims(&f->rope_swa, hp, hp->rope_theta_swa, hp->rope_freq_scale_swa, NULL, hp->n_rot_swa,
                       hp->head_dim_swa);
    else
        rope_init(&f->rope_swa, hp, hp->rope_theta_swa, hp->rope_freq_scale_swa, factors);
    f->rot_stride = hp->max_n_rot > hp->n_rot ? hp->max_n_rot : hp->n_rot;
    int64_t qkv_w = 0;
    bool gated = false;
    for (int l = 0; l < hp->n_layer; l++) {
        const model_layer_t *L = &f->w->layers[l];
        if (L->kind == MODEL_LAYER_ATTN && L->wqkv.data && L->wqkv.n_out > qkv_w)
            qkv_w = L->wqkv.n_out;
        gated |= f->arch->attn_gate && L->kind == MODEL_LAYER_ATTN;
    }
    f->x = malloc((size_t)(B * E) * sizeof(float));
    f->xn = malloc((size_t)(B * xn_dim) * sizeof(float));
    f->ffo = malloc((size_t)(B * E) * sizeof(float));
    f->q = malloc((size_t)(B * f->q_dim + 1) * sizeof(float));
    f->k = malloc((size_t)(B * f->kv_dim + 1) * sizeof(float));
    f->v = malloc((size_t)(B * f->kv_dim + 1) * sizeof(float));
    f->qkv = qkv_w ? malloc((size_t)(B * qkv_w) * sizeof(float)) : NULL;
    f->qg = gated ? malloc((size_t)(2 * B * f->q_dim) * sizeof(float)) : NULL;
    f->gate = gated ? malloc((size_t)(B * f->q_dim) * sizeof(float)) : NULL;
    f->cs = malloc((size_t)(2 * B * f->rot_stride) * sizeof(float));
    f->att = malloc((size_t)(B * f->q_dim + 1) * sizeof(float));
    f->out_rows = malloc((size_t)B * sizeof(int32_t));
    f->prefill = malloc((size_t)B * sizeof *f->prefill);
    f->blocks = malloc((size_t)B * sizeof *f->blocks);
    f->n_kv = malloc((size_t)B * sizeof *f->n_kv);
    f->kv_start = malloc((size_t)B * sizeof *f->kv_start);
    f->order = malloc((size_t)B);
    f->attn = opts ? opts->attn : FWD_ATTN_AUTO;
    const bool f16 = !f->kv || (ko.type_k == KV_F16 && ko.type_v == KV_F16);
    /* rows mode (no cache): its own attention over the batch rows */
    f->exact_max_kv = !f->kv || f->attn == FWD_ATTN_EXACT ? f->n_ctx
                      : f->attn == FWD_ATTN_AUTO && f16 ? (f->n_ctx < FWD_EXACT_MAX_KV ? f->n_ctx : FWD_EXACT_MAX_KV)
                                                         : 0;
    if (f->exact_max_kv > 0) {
        f->attn_stride = f->kv ? attn_scratch_floats(f->exact_max_kv, hp->max_head_dim, hp->n_head / hp->n_head_kv)
                               : attn_rows_scratch_floats(f->max_batch, hp->max_head_dim);
        f->attn_scratch = malloc((size_t)(f->attn_stride * tpool_size(f->pool)) * sizeof(float));
    }
    if (f->exact_max_kv < f->n_ctx && !(f->fa = attn_flash_create(tpool_size(f->pool), f->max_batch, hp->n_head,
                                                                   hp->n_head_kv, hp->max_head_dim, f->n_ctx, err)))
        goto fail;
    f->path = malloc((size_t)B);
    f->seq_n = malloc((size_t)B * sizeof *f->seq_n);
    f->pos = malloc((size_t)B * sizeof *f->pos);
    if (f->arch->post_ln)
        f->x0 = malloc((size_t)(B * E) * sizeof(float));
    if (f->arch->alibi && (f->alibi = malloc((size_t)hp->n_head * sizeof(float))))
        attn_alibi_slopes(hp->n_head, 8.0f, f->alibi);
    if (!f->seq_n || !f->pos || (f->arch->post_ln && !f->x0) ||
        (f->arch->alibi && !f->alibi)) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory for the batch buffers (%d tokens)", f->max_batch);
        goto fail;
    }
    if (hp->n_embd_per_layer > 0) {
        f->ple = malloc((size_t)(B * hp->n_layer * hp->n_embd_per_layer) * sizeof(float));
        const int64_t P = (int64_t)hp->n_layer * hp->n_embd_per_layer;
        f->ple_t = malloc((size_t)(B * hp->n_embd_per_layer > P ? B * hp->n_embd_per_layer : P) * sizeof(float));
    }
    const size_t act_bytes = max_act_bytes(f->w, hp->n_layer, B);
    f->act = malloc(act_bytes ? act_bytes : 1);
    if (!f->x || !f->xn || !f->ffo || !f->q || !f->k || !f->v || (qkv_w && !f->qkv) || !f->cs ||
        !f->att || !f->out_rows || !f->act || !f->prefill || !f->blocks || !f->n_kv || !f->kv_start || !f->order ||
        !f->path || (f->exact_max_kv > 0 && !f->attn_scratch) || (gated && (!f->qg || !f->gate)) ||
        (hp->n_embd_per_layer > 0 && (!f->ple || !f->ple_t))) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory for the batch buffers (%d tokens)", f->max_batch);
        goto fail;
    }
    free(layer_swa);
    free(dims);
    return f;
fail:
    free(layer_swa);
    free(dims);
    fwd_free(f);
    return NULL;
}

void fwd_free(fwd_t *f)
{
    if (!f)
        return;
    tpool_free(f->pool);
    kv_free(f->kv);
    ffn_free(f->ffn);
    free(f->x);
    free(f->xn);
    free(f->ffo);
    free(f->q);
    free(f->k);
    free(f->v);
    free(f->qkv);
    free(f->cs);
    attn_flash_free(f->fa);
    free(f->path);
    free(f->att);
    free(f->act);
    free(f->logits);
    free(f->out_rows);
    free(f->prefill);
    free(f->blocks);
    free(f->n_kv);
    free(f->kv_start);
    free(f->order);
    free(f->attn_scratch);
    free(f->qg);
    free(f->gate);
    rs_free(f->rs);
    dn_free(f->dn);
    sc_free(f->sc);
    free(f->groups);
    free(f->group_rows);
    free(f->hint_last);
    free(f->hint_match);
    free(f->all_prompt);
    free(f->ple);
    free(f->ple_t);
    free(f->x0);
    free(f->seq_n);
    free(f->pos);
    free(f->alibi);
    free(f->hidden);
    free(f);
}

/* The summation order of each token. llama.cpp's depends on the batch:
 * a batch of >= 2 tokens (a prompt) runs F32/F16 matrix products and
 * V.softmax through llamafile's tinyBLAS, a single token (a decode step)
 * through ggml_vec_dot. Ours must not depend on the batch (batch
 * invariance), so it is a property of the token (forward.h): tokens flagged
 * `prompt` take the prompt order, the others the decode order. */
static void token_orders(const fwd_tok_t *toks, int32_t n, uint8_t *order)
{
    for (int32_t i = 0; i < n; i++)
        order[i] = toks[i].prompt ? GX_ORDER_TINY : GX_ORDER_VEC;

}

static const fwd_mm_t no_mm;
#define MM(mm, i) ((mm) ? &(mm)[i] : &no_mm)

/* Without a KV cache a batch holds whole sequences: each one's tokens are
 * consecutive rows with positions 0, 1, ...; fills seq_n and pos. */
static lf_code_t validate_rows(fwd_t *f, const fwd_tok_t *toks, int32_t n, lf_err_t *err)
{
    for (int32_t i = 0; i < n;) {
        int32_t j = i;
        while (j < n && toks[j].seq == toks[i].seq) {
            if (toks[j].pos != j - i)
                return lf_err_set(err, LF_ERR_INVALID, "sequence %d: position %d given, %d expected (a model "
                                  "without KV cache takes whole sequences)", toks[j].seq, toks[j].pos, j - i);
            j++;
        }
        if (j - i > f->n_ctx)
            return lf_err_set(err, LF_ERR_CONTEXT, "sequence %d: %d tokens beyond the context of %d", toks[i].seq,
                              j - i, f->n_ctx);
        for (int32_t k = 0; k < i; k++)
            if (toks[k].seq == toks[i].seq)
                return lf_err_set(err, LF_ERR_INVALID, "sequence %d is split in the batch", toks[i].seq);
        for (int32_t k = i; k < j; k++) {
            f->seq_n[k] = j - i;
            f->pos[k] = k - i;
        }
        i = j;
    }
    return LF_OK;
}

static lf_code_t validate(fwd_t *f, const fwd_tok_t *toks, const fwd_mm_t *mm, int32_t n, lf_err_t *err)
{
    if (n <= 0 || n > f->max_batch)
        return lf_err_set(err, LF_ERR_INVALID, "batch of %d tokens (1 to %d allowed)", n, f->max_batch);
    if (!f->kv) {
        for (int32_t i = 0; i < n; i++) {
            if (toks[i].token < 0 || toks[i].token >= f->hp->n_vocab)
                return lf_err_set(err, LF_ERR_INVALID, "token id %d out of range (vocabulary of %d)",
                                  toks[i].token, f->hp->n_vocab);
            if (toks[i].seq < 0 || toks[i].seq >= f->n_seq)
                return lf_err_set(err, LF_ERR_INVALID, "sequence %d out of range", toks[i].seq);
        }
        return validate_rows(f, toks, n, err);
    }
    /* positions must continue each sequence in order */
    for (int32_t i = 0; i < n; i++) {
        const fwd_tok_t *t = &toks[i];
        const fwd_mm_t *x = MM(mm, i);
        if (!x->embd && (t->token < 0 || t->token >= f->hp->n_vocab))
            return lf_err_set(err, LF_ERR_INVALID, "token id %d out of range (vocabulary of %d)", t->token,
                              f->hp->n_vocab);
        if (t->seq < 0 || t->seq >= f->n_seq)
            return lf_err_set(err, LF_ERR_INVALID, "sequence %d out of range", t->seq);
        int32_t expect = kv_seq_len(f->kv, t->seq);
        for (int32_t j = 0; j < i; j++)
            if (toks[j].seq == t->seq)
                expect++;
        if (t->pos != expect)
            return lf_err_set(err, LF_ERR_INVALID, "sequence %d: position %d given, %d expected", t->seq,
                              t->pos, expect);
        if (t->pos >= f->n_ctx)
            return lf_err_set(err, LF_ERR_CONTEXT, "sequence %d: position %d beyond the context of %d", t->seq,
                              t->pos, f->n_ctx);
        if (t->pos + x->dpos < 0 || ((x->my || x->mx) && f->arch->mrope == ARCH_MROPE_NONE))
            return lf_err_set(err, LF_ERR_INVALID, "sequence %d: rope position %d + %d invalid", t->seq, t->pos,
                              x->dpos);
    }
    /* a bidirectional span must end inside the batch: the K/V it reads are
     * stored before any attention runs */
    for (int32_t i = 0; mm && i < n; i++) {
        if (mm[i].attn_end <= toks[i].pos + 1)
            continue;
        int32_t last = -1;
        for (int32_t j = 0; j < n; j++)
            if (toks[j].seq == toks[i].seq && toks[j].pos > last)
                last = toks[j].pos;
        if (mm[i].attn_end > last + 1)
            return lf_err_set(err, LF_ERR_INVALID, "sequence %d: position %d attends up to %d, beyond the batch",
                              toks[i].seq, toks[i].pos, mm[i].attn_end);
    }
    return LF_OK;
}

/* Makes room in the cache for every position of the batch. Blocks taken
 * for an earlier sequence stay with it if a later one does not fit (they
 * are used by its next tokens), so no position is ever lost. */
static lf_code_t reserve(fwd_t *f, const fwd_tok_t *toks, int32_t n, lf_err_t *err)
{
    for (int32_t i = 0; f->kv && i < n; i++) {
        lf_code_t rc = kv_seq_reserve(f->kv, toks[i].seq, toks[i].pos + 1, err);
        if (rc != LF_OK)
            return rc;
    }
    return LF_OK;
}

/* What every attention job of layer L over n batch rows shares: the
 * shapes, q and the output, the per-row ranges, the scale (families that
 * scale q beforehand, or not at all, attend with scale 1), the scratch. */
static attn_job_t attn_job_base(const fwd_t *f, const model_layer_t *L, int32_t n)
{
    const model_hparams_t *hp = f->hp;
    return (attn_job_t){
        .n_tok = n,
        .n_head = hp->n_head,
        .n_head_kv = L->n_head_kv,
        .head_dim = L->head_dim,
        .q = f->q,
        .out = f->att,
        .n_kv = f->n_kv,
        .scale = f->arch->q_prescale || hp->attn_scale_one ? 1.0f : 1.0f / sqrtf((float)L->head_dim),
        .order = f->order,
        .scratch = f->attn_scratch,
        .scratch_stride = f->attn_stride,
    };
}

/* Attention over the batch's own F32 K and V (no KV cache): each token
 * sees its sequence's rows, all of them (bidirectional) or up to itself,
 * within the layer's window (symmetric when bidirectional). */
static void attention_rows(fwd_t *f, int layer, int32_t n)
{
    const model_hparams_t *hp = f->hp;
    const model_layer_t *L = &f->w->layers[layer];
    const int32_t window = L->swa ? hp->n_swa : 0;
    for (int32_t i = 0; i < n; i++) {
        const int32_t p = f->pos[i], len = f->seq_n[i];
        int32_t lo = 0, hi = hp->causal ? p + 1 : len;
        if (window > 0) {
            const int32_t back = hp->causal ? window - 1 : window / 2;
            lo = p - back > 0 ? p - back : 0;
            if (!hp->causal && p + window / 2 + 1 < hi)
                hi = p + window / 2 + 1;
        }
        f->kv_start[i] = lo;
        f->n_kv[i] = hi;
    }
    attn_job_t job = attn_job_base(f, L, n);
    job.kv_start = f->kv_start;
    job.k_rows = f->k;
    job.v_rows = f->v;
    job.seq_n = f->seq_n;
    job.pos = f->pos;
    job.alibi = f->alibi;
    attn_run(f->pool, &job);
}

static void attention_layer(fwd_t *f, int layer, const fwd_tok_t *toks, const fwd_mm_t *mm, int32_t n)
{
    const model_layer_t *L = &f->w->layers[layer];
    if (!f->kv) {
        attention_rows(f, layer, n);
        return;
    }
    const int32_t src = L->kv_layer; /* a KV-sharing layer reads its source's cache */
    const int32_t window = kv_layer_window(f->kv, src);
    attn_job_t job = attn_job_base(f, L, n);
    job.kv = f->kv;
    job.layer = src;
    job.blocks = f->blocks;
    job.kv_start = window > 0 ? f->kv_start : NULL;
    job.sinks = L->sinks;
    job.kq_tiny = f->arch->ref_2026;
    job.vec_pad = f->arch->ref_2026 ? 256 : 32;
    job.path = f->path;
    job.n_ctx = f->exact_max_kv;
    for (int32_t i = 0; i < n; i++) {
        f->blocks[i] = kv_seq_table(f->kv, toks[i].seq, src);
        f->n_kv[i] = mm && mm[i].attn_end > toks[i].pos + 1 ? mm[i].attn_end : toks[i].pos + 1;
        f->kv_start[i] = window > 0 && toks[i].pos + 1 > window ? toks[i].pos + 1 - window : 0;
    }
    bool any[2] = {false, false};
    for (int32_t i = 0; i < n; i++) {
        f->path[i] = f->n_kv[i] <= f->exact_max_kv ? ATTN_PATH_EXACT : ATTN_PATH_FLASH;
        any[f->path[i]] = true;
    }
    if (any[ATTN_PATH_EXACT])
        attn_run(f->pool, &job);
    if (any[ATTN_PATH_FLASH])
        attn_flash_run(f->fa, f->pool, &job);
}

/* Splits rows of n_src floats at offset `off`, n floats each, into dst
 * rows of n floats (adding bias if any). */
static void split_rows(const float *src, int64_t n_src, int64_t off, int64_t len, const float *bias, int32_t n_tok,
                       float *dst)
{
    for (int32_t i = 0; i < n_tok; i++) {
        float *d = dst + i * len;
        memcpy(d, src + i * n_src + off, (size_t)len * sizeof(float));
        if (bias)
            for (int64_t j = 0; j < len; j++)
                d[j] += bias[j];
    }
}

/* q, k, v of the batch (separate or fused products, biases); attn_gate
 * layers' q rows hold [q | gate] per head; a KV-sharing layer computes q
 * only; without attn_v (gemma4) V is the raw K projection. */
static void qkv_project(fwd_t *f, const model_layer_t *L, const float *in, int32_t n)
{
    const int64_t HD = L->head_dim, QO = (int64_t)f->hp->n_head * HD, KVD = (int64_t)L->n_head_kv * HD;
    const bool gated = f->arch->attn_gate, has_k = L->wk.data || L->wqkv.data;
    const int64_t QW = gated ? 2 * QO : QO;
    float *qdst = gated ? f->qg : f->q;
    if (L->wqkv.data) {
        const int64_t W = L->wqkv.n_out;
        lin_run(f->pool, f->act, &L->wqkv, NULL, in, n, f->order, f->qkv);
        split_rows(f->qkv, W, 0, QW, L->bq, n, qdst);
        split_rows(f->qkv, W, QW, KVD, L->bk, n, f->k);
        split_rows(f->qkv, W, QW + KVD, KVD, L->bv, n, f->v);
    } else if (!has_k) {
        lin_run(f->pool, f->act, &L->wq, L->bq, in, n, f->order, qdst);
    } else if (!L->wv.data) {
        lin_run_n(f->pool, f->act, 2, (const model_tensor_t *[]){&L->wq, &L->wk}, (const float *[]){L->bq, L->bk},
                  in, n, f->order, (float *[]){qdst, f->k});
        memcpy(f->v, f->k, (size_t)(n * KVD) * sizeof(float));
    } else {
        lin_run_n(f->pool, f->act, 3, (const model_tensor_t *[]){&L->wq, &L->wk, &L->wv},
                  (const float *[]){L->bq, L->bk, L->bv}, in, n, f->order, (float *[]){qdst, f->k, f->v});
    }
    if (!gated)
        return;
    /* per head: q (head_dim) | gate (head_dim) */
    for (int32_t i = 0; i < n; i++)
        for (int32_t h = 0; h < f->hp->n_head; h++) {
            const float *r = f->qg + i * QW + 2 * h * HD;
            memcpy(f->q + i * QO + h * HD, r, (size_t)HD * sizeof(float));
            memcpy(f->gate + i * QO + h * HD, r + HD, (size_t)HD * sizeof(float));
        }
}

/* Per token: q/k norms (and V norm), rope, q scale; K and V into the
 * cache (layers with a cache of their own). */
static void qk_finish(fwd_t *f, int layer, const fwd_tok_t *toks, int32_t n)
{
    const model_hparams_t *hp = f->hp;
    const model_layer_t *L = &f->w->layers[layer];
    const bool swa = L->swa && hp->n_swa > 0, own = L->kv_layer == layer;
    const rope_t *rope = swa ? &f->rope_swa : &f->rope_full;
    const float *cs = f->cs + (swa ? (int64_t)f->max_batch * f->rot_stride : 0);
    const int32_t HD = L->head_dim;
    const int64_t QD = (int64_t)hp->n_head * HD, KVD = (int64_t)L->n_head_kv * HD;
    for (int32_t i = 0; i < n; i++) {
        float *q = f->q + i * QD, *k = f->k + i * KVD, *v = f->v + i * KVD;
        if (L->q_norm)
            ops_rms_norm_heads(q, L->q_norm, hp->n_head, HD, hp->rms_eps);
        if (own && L->k_norm)
            ops_rms_norm_heads(k, L->k_norm, L->n_head_kv, HD, hp->rms_eps);
        if (own && f->arch->v_norm)
            for (int32_t h = 0; h < L->n_head_kv; h++)
                ops_rms_norm(v + (int64_t)h * HD, NULL, v + (int64_t)h * HD, HD, hp->rms_eps);
        if (L->q_ln) /* jina: LayerNorms over all of q and k */
            ops_layer_norm(q, L->q_ln, L->q_ln_b, q, QD, hp->norm_eps);
        if (L->k_ln)
            ops_layer_norm(k, L->k_ln, L->k_ln_b, k, KVD, hp->norm_eps);
        if (L->rope) {
            rope_rotate(rope, cs + (int64_t)i * f->rot_stride, q, hp->n_head);
            if (own)
                rope_rotate(rope, cs + (int64_t)i * f->rot_stride, k, L->n_head_kv);
        }
        if (hp->q_scale != 1.0f)
            for (int64_t j = 0; j < QD; j++)
                q[j] *= hp->q_scale;
        if (!f->kv)
            continue; /* K and V stay in the batch rows, in F32 */
        if (!own)
            continue;
        kv_store_f32(f->kv, layer, toks[i].seq, toks[i].pos, k, v);
    }
}

/* The attention mixer of layer l: its output (n_embd per token) in f->xn. */
static void attn_mixer(fwd_t *f, int l, const fwd_tok_t *toks, const fwd_mm_t *mm, int32_t n)
{
    const model_layer_t *L = &f->w->layers[l];
    qkv_project(f, L, f->xn, n);
    qk_finish(f, l, toks, n);
    attention_layer(f, l, toks, mm, n);
    if (f->arch->attn_gate) {
        /* ggml_sigmoid (expf) of the gate, then ggml_mul */
        const int64_t m = (int64_t)n * f->hp->n_head * L->head_dim;
        for (int64_t j = 0; j < m; j++)
            f->att[j] = f->att[j] * (1.0f / (1.0f + expf(-f->gate[j])));
    }
    lin_run(f->pool, f->act, &L->wo, L->bo, f->att, n, f->order, f->xn);
}

/* ---- recurrent layers: the batch's sequences and their snapshots ---- */

/* Whether the state of seq after position P - 1 is worth a snapshot
 * (rstate.h): P a block boundary that is one of the prompt's last two
 * reusable ones (a chat's next turn repeats this prompt up to just before
 * its generation prompt, a few tokens before its end), the end of the
 * cached chain the prompt matched, or a multiple of the snapshot interval. */
static bool snap_point(const fwd_t *f, int32_t seq, int32_t P)
{
    const int32_t bt = kv_block_tokens(f->kv);
    if (P <= 0 || P % bt)
        return false;
    return P == f->hint_last[seq] || P + bt == f->hint_last[seq] || P == f->hint_match[seq] ||
           P % f->snap_interval == 0;
}

/* Groups the batch's tokens by sequence (position order) and decides the
 * snapshots: only states reached through prompt-order positions alone are
 * snapshotted (those a later prompt reproduces bit for bit). */
static void build_groups(fwd_t *f, const fwd_tok_t *toks, int32_t n)
{
    f->n_groups = 0;
    int32_t used = 0;
    for (int32_t i = 0; i < n; i++) {
        bool seen = false;
        for (int32_t g = 0; g < f->n_groups && !seen; g++)
            seen = f->groups[g].seq == toks[i].seq;
        if (seen)
            continue;
        rs_group_t *gr = &f->groups[f->n_groups++];
        gr->seq = toks[i].seq;
        gr->rows = f->group_rows + used;
        gr->n = 0;
        gr->n_snap = 0;
        /* validate() guarantees increasing consecutive positions */
        for (int32_t j = i; j < n; j++)
            if (toks[j].seq == gr->seq)
                f->group_rows[used + gr->n++] = j;
        used += gr->n;
        bool ok = f->all_prompt[gr->seq];
        for (int32_t t = 0; t < gr->n; t++) {
            const fwd_tok_t *tk = &toks[gr->rows[t]];
            ok = ok && tk->prompt;
            if (ok && gr->n_snap < RS_MAX_SNAP && snap_point(f, gr->seq, tk->pos + 1)) {
                const int32_t slot = rs_snap_take(f->rs, gr->seq, tk->pos + 1);
                if (slot >= 0) {
                    gr->snap_end[gr->n_snap] = t + 1;
                    gr->snap_slot[gr->n_snap++] = slot;
                }
            }
        }
        f->all_prompt[gr->seq] = ok;
    }
}

/* ---- per-layer embeddings (gemma4) ---- */

/* Per token: P = rms_norm(model_proj(e) / sqrt(n_embd)) * proj_norm per
 * layer chunk, plus the token's per-layer embedding * sqrt(width), times
 * 1/sqrt(2) (build_inp_per_layer, project_per_layer_inputs); e is the
 * input embedding in f->x. An image row takes the per-layer embedding of
 * token 0 (llama.cpp's padding row for embedding inputs). */
static void ple_inputs(fwd_t *f, const fwd_tok_t *toks, const fwd_mm_t *mm, int32_t n)
{
    const model_hparams_t *hp = f->hp;
    const model_weights_t *w = f->w;
    const int64_t D = hp->n_embd_per_layer, P = (int64_t)hp->n_layer * D;
    lin_run(f->pool, f->act, &w->ple_model_proj, NULL, f->x, n, f->order, f->ple);
    const float ps = 1.0f / sqrtf((float)hp->n_embd), es = sqrtf((float)D), is = 1.0f / sqrtf(2.0f);
    for (int32_t i = 0; i < n; i++) {
        float *p = f->ple + i * P, *e = f->ple_t;
        for (int64_t j = 0; j < P; j++)
            p[j] *= ps;
        for (int l = 0; l < hp->n_layer; l++)
            ops_rms_norm(p + l * D, w->ple_proj_norm, p + l * D, D, hp->rms_eps);
        const int32_t tok = MM(mm, i)->embd ? 0 : toks[i].token;
        quant_dequantize_row(w->ple_embd.type, (const uint8_t *)w->ple_embd.data + (size_t)tok * w->ple_embd.row_bytes,
                             e, P);
        for (int64_t j = 0; j < P; j++)
            p[j] = (p[j] + e[j] * es) * is;
    }
}

/* x += post_norm(proj(gelu(inp_gate x) * P[l])) (gemma4, after the FFN). */
static void ple_layer(fwd_t *f, const model_layer_t *L, int l, int32_t n)
{
    const model_hparams_t *hp = f->hp;
    const int64_t D = hp->n_embd_per_layer, E = hp->n_embd, P = (int64_t)hp->n_layer * D;
    lin_run(f->pool, f->act, &L->ple_gate, NULL, f->x, n, f->order, f->ple_t);
    for (int32_t i = 0; i < n; i++) {
        float *g = f->ple_t + i * D;
        ops_gelu_row(g, g, D);
        const float *p = f->ple + i * P + (int64_t)l * D;
        for (int64_t j = 0; j < D; j++)
            g[j] = g[j] * p[j];
    }
    lin_run(f->pool, f->act, &L->ple_proj, NULL, f->ple_t, n, f->order, f->ffo);
    for (int32_t i = 0; i < n; i++) {
        ops_rms_norm(f->ffo + i * E, L->ple_post_norm, f->ffo + i * E, E, hp->rms_eps);
        for (int64_t j = 0; j < E; j++)
            f->x[i * E + j] += f->ffo[i * E + j];
    }
}

/* The input rows: token embeddings [+ token type row 0] [+ learned
 * positions] [LayerNorm (post_ln)] [* sqrt(n_embd)], in llama.cpp's order
 * of the adds: (token + type 0) + position; an image row is its embedding
 * as given (not scaled). */
static void embed_input(fwd_t *f, const fwd_tok_t *toks, const fwd_mm_t *mm, int32_t n)
{
    const model_hparams_t *hp = f->hp;
    const model_weights_t *w = f->w;
    const int64_t E = hp->n_embd;
    float *row = f->ffo; /* scratch row */
    for (int32_t i = 0; i < n; i++) {
        float *x = f->x + i * E;
        if (MM(mm, i)->embd) {
            memcpy(x, MM(mm, i)->embd, (size_t)E * sizeof(float));
            continue;
        }
        quant_dequantize_row(w->tok_embd.type, (const uint8_t *)w->tok_embd.data +
                                                   (size_t)toks[i].token * w->tok_embd.row_bytes, x, E);
        if (w->type_embd.data) {
            quant_dequantize_row(w->type_embd.type, w->type_embd.data, row, E);
            for (int64_t j = 0; j < E; j++)
                x[j] = x[j] + row[j];
        }
        if (w->pos_embd.data) {
            const int32_t p = toks[i].pos < hp->n_ctx_train ? toks[i].pos : hp->n_ctx_train - 1;
            quant_dequantize_row(w->pos_embd.type, (const uint8_t *)w->pos_embd.data + (size_t)p * w->pos_embd.row_bytes,
                                 row, E);
            for (int64_t j = 0; j < E; j++)
                x[j] = row[j] + x[j];
        }
        if (w->tok_norm)
            ops_layer_norm(x, w->tok_norm, w->tok_norm_b, x, E, hp->norm_eps);
    }
    if (f->arch->embd_scale) {
        const float s = sqrtf((float)E);
        for (int32_t i = 0; i < n; i++)
            if (!MM(mm, i)->embd)
                for (int64_t j = 0; j < E; j++)
                    f->x[i * E + j] *= s;
    }
}

/* A pre-norm layer (every family but the bert ones): its mixer
 * (attention, Gated DeltaNet or short convolution), then its FFN. */
static void layer_pre_norm(fwd_t *f, int l, const fwd_tok_t *toks, const fwd_mm_t *mm, int32_t n)
{
    const model_hparams_t *hp = f->hp;
    const model_layer_t *L = &f->w->layers[l];
    const int64_t E = hp->n_embd;
    for (int32_t i = 0; i < n; i++)
        ops_rms_norm(f->x + i * E, L->attn_norm, f->xn + i * E, E, hp->rms_eps);
    float *mo = f->xn; /* the mixer's output */
    switch (L->kind) {
    case MODEL_LAYER_ATTN:
        attn_mixer(f, l, toks, mm, n);
        break;
    case MODEL_LAYER_GDN:
        dn_run(f->dn, f->pool, L, l, f->rs, f->groups, f->n_groups, f->xn, n, f->order, f->ffo);
        mo = f->ffo;
        break;
    case MODEL_LAYER_SHORTCONV:
        sc_run(f->sc, f->pool, L, l, f->rs, f->groups, f->n_groups, f->xn, n, f->order, f->ffo);
        mo = f->ffo;
        break;
    }
    if (L->attn_post_norm)
        for (int32_t i = 0; i < n; i++)
            ops_rms_norm(mo + i * E, L->attn_post_norm, mo + i * E, E, hp->rms_eps);
    for (int64_t j = 0; j < n * E; j++)
        f->x[j] += mo[j];

    /* llama.cpp keeps only the output rows after the last layer's
     * attention (a batch of one row for the last prompt token), or
     * after the last layer (out_rows_late); rows kept for embeddings are
     * every row of the batch, which changes nothing */
    if (l == hp->n_layer - 1 && !f->arch->out_rows_late)
        for (int32_t i = 0; i < n; i++)
            if (toks[i].logits & FWD_OUT_LOGITS)
                f->order[i] = GX_ORDER_VEC;
    if (L->ffn_pre_norm_2) {
        /* gemma4 MoE: dense MLP and experts from the residual, each with its norms */
        ffn_run_par(f->ffn, f->pool, L, f->x, n, f->order, f->ffo);
    } else {
        for (int32_t i = 0; i < n; i++)
            ops_rms_norm(f->x + i * E, L->ffn_norm, f->xn + i * E, E, hp->rms_eps);
        ffn_run(f->ffn, f->pool, L, f->xn, n, f->order, f->ffo);
    }
    if (L->ffn_post_norm)
        for (int32_t i = 0; i < n; i++)
            ops_rms_norm(f->ffo + i * E, L->ffn_post_norm, f->ffo + i * E, E, hp->rms_eps);
    for (int64_t j = 0; j < n * E; j++)
        f->x[j] += f->ffo[j];
    if (f->ple)
        ple_layer(f, L, l, n);
    if (L->out_scale)
        for (int64_t j = 0; j < n * E; j++)
            f->x[j] *= L->out_scale[0];
    /* deepstack: image rows add their (l + 1)-th extra embedding */
    if (l < hp->n_deepstack)
        for (int32_t i = 0; i < n; i++)
            if (MM(mm, i)->embd)
                for (int64_t j = 0; j < E; j++)
                    f->x[i * E + j] += mm[i].embd[(int64_t)(l + 1) * E + j];
}

/* The residual adds and LayerNorms of a post-LN layer, per token (split
 * over the pool by tokens): after attention h = LN(a + x0) [; h = LN(h +
 * x0)], after the FFN h = LN(o + h). */
typedef struct {
    const model_layer_t *L;
    float *x;
    const float *a, *x0; /* x0 NULL: the FFN's residual */
    int64_t E;
    float eps;
} post_ln_job_t;

static void post_ln_rows(void *arg, int64_t lo, int64_t hi)
{
    const post_ln_job_t *j = arg;
    const model_layer_t *L = j->L;
    const int64_t E = j->E;
    for (int64_t i = lo; i < hi; i += 4) {
        const int64_t nr = hi - i < 4 ? hi - i : 4;
        float *h = j->x + i * E;
        const float *a = j->a + i * E, *x0 = j->x0 ? j->x0 + i * E : NULL;
        if (!x0) {
            gx_add_row(h, a, h, nr * E);
            ops_layer_norm_rows(h, nr, L->layer_out_norm, L->layer_out_norm_b, E, j->eps);
            continue;
        }
        gx_add_row(h, a, x0, nr * E);
        ops_layer_norm_rows(h, nr, L->attn_out_norm, L->attn_out_norm_b, E, j->eps);
        if (L->attn_norm_2) {
            gx_add_row(h, h, x0, nr * E);
            ops_layer_norm_rows(h, nr, L->attn_norm_2, L->attn_norm_2_b, E, j->eps);
        }
    }
}

/* A BERT layer (arch post_ln), as llama.cpp's bert graph:
 *   a = Wo attention(x) + bo; h = LN(a + x) [; h = LN(h + x) (attn_norm_2)]
 *   y = LN(ffn(h) + h) */
static void layer_post_ln(fwd_t *f, int l, const fwd_tok_t *toks, int32_t n)
{
    const model_hparams_t *hp = f->hp;
    const model_layer_t *L = &f->w->layers[l];
    const int64_t E = hp->n_embd;
    const int64_t grain = E >= 8192 ? 1 : 8192 / E;
    memcpy(f->x0, f->x, (size_t)(n * E) * sizeof(float));
    qkv_project(f, L, f->x, n);
    qk_finish(f, l, toks, n);
    attention_layer(f, l, toks, NULL, n);
    lin_run(f->pool, f->act, &L->wo, L->bo, f->att, n, f->order, f->xn);
    tpool_run_range(f->pool, n, grain, post_ln_rows, &(post_ln_job_t){L, f->x, f->xn, f->x0, E, hp->norm_eps});
    ffn_run(f->ffn, f->pool, L, f->x, n, f->order, f->ffo);
    tpool_run_range(f->pool, n, grain, post_ln_rows, &(post_ln_job_t){L, f->x, f->ffo, NULL, E, hp->norm_eps});
}

/* The hidden states of the tokens that asked (FWD_OUT_HIDDEN), after the output
 * norm where the family has one (llama.cpp's t_embd). */
static lf_code_t keep_hidden(fwd_t *f, const fwd_tok_t *toks, int32_t n, lf_err_t *err)
{
    const int64_t E = f->hp->n_embd;
    int32_t n_out = 0;
    for (int32_t i = 0; i < n; i++)
        n_out += (toks[i].logits & FWD_OUT_HIDDEN) != 0;
    if (n_out > f->n_hidden_cap) {
        float *p = realloc(f->hidden, (size_t)n_out * (size_t)E * sizeof(float));
        if (!p)
            return lf_err_set(err, LF_ERR_NOMEM, "out of memory for hidden states");
        f->hidden = p;
        f->n_hidden_cap = n_out;
    }
    n_out = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!(toks[i].logits & FWD_OUT_HIDDEN))
            continue;
        float *h = f->hidden + (int64_t)n_out++ * E;
        if (f->w->output_norm)
            ops_rms_norm(f->x + i * E, f->w->output_norm, h, E, f->hp->rms_eps);
        else
            memcpy(h, f->x + i * E, (size_t)E * sizeof(float));
    }
    f->n_hidden = n_out;
    return LF_OK;
}

lf_code_t fwd_decode(fwd_t *f, const fwd_tok_t *toks, int32_t n, lf_err_t *err)
{
    return fwd_decode_mm(f, toks, NULL, n, err);
}

lf_code_t fwd_decode_mm(fwd_t *f, const fwd_tok_t *toks, const fwd_mm_t *mm, int32_t n, lf_err_t *err)
{
    lf_code_t rc = validate(f, toks, mm, n, err);
    if (rc == LF_OK)
        rc = reserve(f, toks, n, err);
    if (rc != LF_OK)
        return rc;
    const model_hparams_t *hp = f->hp;
    const model_weights_t *w = f->w;
    const int64_t E = hp->n_embd;
    token_orders(toks, n, f->order);
    if (f->rs)
        build_groups(f, toks, n);

    embed_input(f, toks, mm, n);
    /* the rope tables of the batch's positions, once for all layers */
    for (int32_t i = 0; i < n; i++) {
        const fwd_mm_t *x = MM(mm, i);
        const int32_t p = toks[i].pos + x->dpos;
        if (f->arch->mrope != ARCH_MROPE_NONE) {
            /* text: (p, p, p, 0); an image row adds its grid row and column */
            const int32_t mp[4] = {p, p + x->my, p + x->mx, 0};
            rope_angles_multi(&f->rope_full, mp, hp->rope_sections, f->arch->mrope == ARCH_MROPE_INTERLEAVED, false,
                              f->cs + (int64_t)i * f->rot_stride);
        } else {
            rope_angles(&f->rope_full, p, f->cs + (int64_t)i * f->rot_stride);
        }
        if (hp->n_swa > 0)
            rope_angles(&f->rope_swa, p, f->cs + ((int64_t)f->max_batch + i) * f->rot_stride);
    }
    if (f->ple)
        ple_inputs(f, toks, mm, n);
    for (int l = 0; l < hp->n_layer; l++) {
        if (f->arch->post_ln)
            layer_post_ln(f, l, toks, n);
        else
            layer_pre_norm(f, l, toks, mm, n);
    }
    if ((rc = keep_hidden(f, toks, n, err)) != LF_OK)
        return rc;

    /* logits only for the tokens that asked: gather, norm, project */
    int32_t n_out = 0;
    for (int32_t i = 0; i < n; i++)
        if (toks[i].logits & FWD_OUT_LOGITS) {
            ops_rms_norm(f->x + i * E, w->output_norm, f->xn + n_out * E, E, hp->rms_eps);
            f->out_rows[n_out++] = i;
        }
    if (n_out > f->n_logits_cap) {
        float *p = realloc(f->logits, (size_t)n_out * (size_t)hp->n_vocab * sizeof(float));
        if (!p)
            return lf_err_set(err, LF_ERR_NOMEM, "out of memory for logits");
        f->logits = p;
        f->n_logits_cap = n_out;
    }
    if (n_out)
        lin_run(f->pool, f->act, &w->output, NULL, f->xn, n_out, NULL, f->logits);
    if (hp->logit_softcap > 0.0f)
        ops_softcap_row(f->logits, (int64_t)n_out * hp->n_vocab, hp->logit_softcap);
    f->n_logits = n_out;
    for (int32_t i = 0; f->kv && i < n; i++)
        kv_seq_set_len(f->kv, toks[i].seq, toks[i].pos + 1);
    return LF_OK;
}

static void state_hints(fwd_t *f, int32_t seq, int32_t n);

lf_code_t fwd_prefill(fwd_t *f, int32_t seq, const int32_t *tokens, int32_t n, bool want_logits,
                      lf_err_t *err)
{
    if (seq < 0 || seq >= f->n_seq)
        return lf_err_set(err, LF_ERR_INVALID, "sequence %d out of range", seq);
    if (n <= 0)
        return lf_err_set(err, LF_ERR_INVALID, "empty prompt");
    const int32_t len0 = fwd_seq_len(f, seq);
    if (len0 + n > f->n_ctx)
        return lf_err_set(err, LF_ERR_CONTEXT, "%d prompt tokens do not fit the context of %d (%d used)", n,
                          f->n_ctx, len0);
    if (f->rs && len0 == 0 && f->hint_last[seq] == 0)
        state_hints(f, seq, n); /* unless fwd_seq_attach_prefix set them for the whole prompt */
    if (!f->kv && n > f->max_batch)
        return lf_err_set(err, LF_ERR_CONTEXT, "%d tokens do not fit one batch of %d (a model without KV cache "
                          "takes a sequence in one batch)", n, f->max_batch);
    /* the whole prompt is the cached prefix and these tokens, so a prompt
     * that continues a reused prefix keeps the order recomputing it would
     * have (a cached prefix gives the same bits as recomputing it) */
    for (int32_t start = 0; start < n; start += f->max_batch) {
        int32_t m = n - start < f->max_batch ? n - start : f->max_batch;
        int32_t pos0 = fwd_seq_len(f, seq);
        for (int32_t i = 0; i < m; i++)
            f->prefill[i] = (fwd_tok_t){tokens[start + i], seq, pos0 + i, want_logits && start + i == n - 1,
                                        fwd_prompt_order(f, len0 + n, pos0 + i)};
        lf_code_t rc = fwd_decode(f, f->prefill, m, err);
        if (rc != LF_OK)
            return rc;
    }
    return LF_OK;
}

/* llama-server's prompt batching (forward.h). */
enum { REF_BATCH = 2048, REF_UBATCH = 512, REF_CKPT_LAST = 4 };

bool fwd_prompt_order(const fwd_t *f, int32_t n_prompt, int32_t pos)
{
    return fwd_prompt_order_chunk(f, n_prompt, 0, n_prompt, true, pos);
}

bool fwd_prompt_order_chunk(const fwd_t *f, int32_t n_prompt, int32_t chunk_start, int32_t chunk_end, bool text,
                            int32_t pos)
{
    if (pos < chunk_start || pos >= chunk_end || chunk_end > n_prompt || chunk_end - chunk_start < 2)
        return false;
    /* without a KV cache llama.cpp takes the whole input in one micro-batch */
    if (!f->kv)
        return true;
    /* the batch boundaries around pos: the chunk's start and end, and the
     * checkpoint breaks of sliding-window and hybrid models inside text */
    int32_t a = chunk_start, b = chunk_end;
    if (text && (f->hp->n_swa > 0 || f->rs)) {
        const int32_t cuts[2] = {n_prompt - REF_CKPT_LAST - REF_UBATCH, n_prompt - REF_CKPT_LAST};
        for (int i = 0; i < 2; i++) {
            if (cuts[i] < 1)
                continue;
            if (cuts[i] <= pos && cuts[i] > a)
                a = cuts[i];
            if (cuts[i] > pos && cuts[i] < b)
                b = cuts[i];
        }
    }
    /* batches of REF_BATCH from a, micro-batches of REF_UBATCH in each */
    const int32_t bs = a + (pos - a) / REF_BATCH * REF_BATCH;
    const int32_t be = bs + REF_BATCH < b ? bs + REF_BATCH : b;
    const int32_t us = bs + (pos - bs) / REF_UBATCH * REF_UBATCH;
    const int32_t ue = us + REF_UBATCH < be ? us + REF_UBATCH : be;
    return ue - us >= 2;
}

/* The prompt positions before the first one fwd_prompt_order puts in the
 * decode order (n if none). */
static int32_t prompt_order_prefix(const fwd_t *f, int32_t n)
{
    for (int32_t p = 0; p < n; p++)
        if (!fwd_prompt_order(f, n, p))
            return p;
    return n;
}

int32_t fwd_max_batch(const fwd_t *f) { return f->max_batch; }

tpool_t *fwd_pool(const fwd_t *f) { return f->pool; }

const float *fwd_logits(const fwd_t *f, int32_t j)
{
    if (j < 0 || j >= f->n_logits)
        return NULL;
    return f->logits + (size_t)j * (size_t)f->hp->n_vocab;
}

void fwd_seq_rm(fwd_t *f, int32_t seq)
{
    if (f->kv)
        kv_seq_release(f->kv, seq);
    if (f->rs && seq >= 0 && seq < f->n_seq) {
        rs_seq_reset(f->rs, seq);
        f->hint_last[seq] = f->hint_match[seq] = 0;
        f->all_prompt[seq] = true;
    }
}

/* The snapshot hints of a prompt of n tokens on seq: its last block
 * boundary that a later prompt can reuse (within the prompt order, before
 * the last token). */
static void state_hints(fwd_t *f, int32_t seq, int32_t n)
{
    const int32_t bt = kv_block_tokens(f->kv);
    int32_t ok = prompt_order_prefix(f, n);
    if (ok > n - 1)
        ok = n - 1;
    f->hint_last[seq] = ok > 0 ? ok / bt * bt : 0;
}

typedef struct {
    const fwd_t *f;
    int32_t k_max;
} attach_ctx_t;

/* kv_prefix_ok_fn: a prefix of k blocks is reusable with recurrent layers
 * only if the state at its end was snapshotted. */
static bool prefix_has_state(void *arg, int32_t k, int32_t block, uint32_t gen)
{
    attach_ctx_t *c = arg;
    if (k > c->k_max)
        c->k_max = k;
    return rs_snap_find(c->f->rs, block, gen, k * kv_block_tokens(c->f->kv)) >= 0;
}

lf_code_t fwd_seq_truncate(fwd_t *f, int32_t seq, int32_t len, lf_err_t *err)
{
    if (seq < 0 || seq >= f->n_seq)
        return lf_err_set(err, LF_ERR_INVALID, "sequence %d out of range", seq);
    if (!f->kv)
        return lf_err_set(err, LF_ERR_INVALID, "no KV cache to truncate (an encoder model)");
    if (f->rs && len != kv_seq_len(f->kv, seq))
        return lf_err_set(err, LF_ERR_UNSUPPORTED, "a recurrent state cannot be rolled back");
    return kv_seq_truncate(f->kv, seq, len, err);
}

lf_code_t fwd_seq_checkpoint(fwd_t *f, int32_t seq, lf_err_t *err)
{
    if (seq < 0 || seq >= f->n_seq)
        return lf_err_set(err, LF_ERR_INVALID, "sequence %d out of range", seq);
    if (!f->kv)
        return lf_err_set(err, LF_ERR_INVALID, "no KV cache to roll back (an encoder model)");
    if (f->rs && !rs_seq_checkpoint(f->rs, seq, kv_seq_len(f->kv, seq)))
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory for a recurrent state checkpoint");
    return LF_OK;
}

int32_t fwd_seq_rewind(fwd_t *f, int32_t seq, int32_t len, lf_err_t *err)
{
    if (seq < 0 || seq >= f->n_seq || !f->kv) {
        lf_err_set(err, LF_ERR_INVALID, "no sequence %d to roll back", seq);
        return -1;
    }
    const int32_t cur = kv_seq_len(f->kv, seq);
    if (len < 0 || len > cur) {
        lf_err_set(err, LF_ERR_INVALID, "cannot roll sequence %d (%d positions) back to %d", seq, cur, len);
        return -1;
    }
    if (len == cur)
        return len;
    if (!f->rs)
        return kv_seq_truncate(f->kv, seq, len, err) == LF_OK ? len : -1;
    const int32_t ck = rs_seq_checkpoint_pos(f->rs, seq);
    if (ck < 0 || ck > len) {
        lf_err_set(err, LF_ERR_INVALID, "no recurrent state checkpoint at or before position %d", len);
        return -1;
    }
    if (kv_seq_truncate(f->kv, seq, ck, err) != LF_OK)
        return -1;
    rs_seq_rollback(f->rs, seq);
    return ck;
}

bool fwd_can_rewind(const fwd_t *f) { return f->kv != NULL; }

bool fwd_can_truncate(const fwd_t *f)
{
    /* every layer keeps K/V per position; a recurrent state holds no
     * per-position history (rstate.h) */
    return f->kv != NULL && f->rs == NULL;
}

int32_t fwd_seq_len(const fwd_t *f, int32_t seq)
{
    return f->kv ? kv_seq_len(f->kv, seq) : 0;
}

const float *fwd_hidden(const fwd_t *f, int32_t j)
{
    if (j < 0 || j >= f->n_hidden)
        return NULL;
    return f->hidden + (size_t)j * (size_t)f->hp->n_embd;
}

bool fwd_has_cache(const fwd_t *f) { return f->kv != NULL; }

int32_t fwd_seq_attach_prefix(fwd_t *f, int32_t seq, const int32_t *tokens, int32_t n)
{
    if (!f->kv)
        return 0;
    const int32_t ok = prompt_order_prefix(f, n);
    /* kv attaches whole blocks strictly before its n - 1 */
    if (!f->rs)
        return kv_seq_attach_prefix(f->kv, seq, tokens, ok < n ? ok + 1 : n);
    if (seq < 0 || seq >= f->n_seq || kv_seq_len(f->kv, seq) > 0)
        return 0;
    /* recurrent layers: only a prefix whose end state is cached */
    fwd_seq_rm(f, seq);
    attach_ctx_t c = {f, 0};
    const int32_t len = kv_seq_attach_prefix_if(f->kv, seq, tokens, ok < n ? ok + 1 : n, prefix_has_state, &c);
    const int32_t bt = kv_block_tokens(f->kv);
    if (len > 0) {
        int32_t block;
        uint32_t gen;
        if (kv_seq_block_key(f->kv, seq, len / bt - 1, &block, &gen))
            rs_snap_restore(f->rs, rs_snap_find(f->rs, block, gen, len), seq);
    }
    state_hints(f, seq, n);
    /* the chain matched further than a snapshot: take one there this time */
    f->hint_match[seq] = c.k_max * bt > len ? c.k_max * bt : 0;
    return len;
}

void fwd_seq_commit(fwd_t *f, int32_t seq, const int32_t *tokens, int32_t n)
{
    if (!f->kv)
        return;
    kv_seq_commit(f->kv, seq, tokens, prompt_order_prefix(f, n));
    if (!f->rs)
        return;
    /* key the sequence's pending snapshots by the blocks now registered */
    const int32_t bt = kv_block_tokens(f->kv);
    for (int32_t i = rs_seq_n_pending(f->rs, seq) - 1; i >= 0; i--) {
        const int32_t P = rs_seq_pending_pos(f->rs, seq, i);
        int32_t block;
        uint32_t gen;
        if (P > 0 && kv_seq_block_key(f->kv, seq, P / bt - 1, &block, &gen))
            rs_snap_register(f->rs, seq, P, block, gen);
    }
}

void fwd_state_usage(const fwd_t *f, fwd_state_usage_t *u)
{
    memset(u, 0, sizeof *u);
    if (!f->rs)
        return;
    u->per_seq_bytes = (uint64_t)rs_seq_floats(f->rs) * sizeof(float);
    u->live_bytes = rs_live_bytes(f->rs);
    u->snap_bytes = rs_snap_bytes(f->rs);
    u->snap_slots = rs_n_snapshots(f->rs);
    u->snap_cached = rs_snapshots_cached(f->rs);
    u->snap_restored = rs_snapshots_restored(f->rs);
}

int32_t fwd_n_ctx(const fwd_t *f) { return f->n_ctx; }

uint64_t fwd_kv_bytes(const fwd_t *f) { return f->kv ? kv_bytes(f->kv) : 0; }

fwd_attn_t fwd_attn(const fwd_t *f) { return f->attn; }
kv_type_t fwd_kv_type_k(const fwd_t *f) { return f->kv ? kv_type_k(f->kv) : KV_F16; }
kv_type_t fwd_kv_type_v(const fwd_t *f) { return f->kv ? kv_type_v(f->kv) : KV_F16; }

lf_code_t fwd_check_attn(const model_t *m, const fwd_opts_t *opts, lf_err_t *err)
{
    if (!opts)
        return LF_OK;
    /* the head size of every layer with a cache of its own */
    const model_hparams_t *hp = model_hparams(m);
    const model_weights_t *w = model_weights(m);
    int32_t hd = 0;
    for (int l = 0; l < hp->n_layer && hd % 32 == 0; l++)
        if (w->layers[l].kind == MODEL_LAYER_ATTN && w->layers[l].kv_layer == l)
            hd = w->layers[l].head_dim;
    const kv_type_t t[2] = {opts->type_k, opts->type_v};
    for (int i = 0; i < 2; i++) {
        if ((unsigned)t[i] >= KV_TYPE_COUNT)
            return lf_err_set(err, LF_ERR_INVALID, "unknown KV cache type %d", (int)t[i]);
        if (t[i] == KV_F16)
            continue;
        if (opts->attn == FWD_ATTN_EXACT)
            return lf_err_set(err, LF_ERR_INVALID,
                              "--cache-type-%c %s needs flash attention (--flash-attn off keeps an F16 cache)",
                              i ? 'v' : 'k', kv_type_name(t[i]));
        if (hd % 32)
            return lf_err_set(err, LF_ERR_INVALID,
                              "--cache-type-%c %s needs a head size that is a multiple of 32 (this model's is %d)",
                              i ? 'v' : 'k', kv_type_name(t[i]), hd);
    }
    return LF_OK;
}

void fwd_kv_usage(const fwd_t *f, int32_t *blocks_total, int32_t *blocks_used, int32_t *block_tokens)
{
    if (!f->kv) {
        if (blocks_total)
            *blocks_total = 0;
        if (blocks_used)
            *blocks_used = 0;
        if (block_tokens)
            *block_tokens = FWD_KV_BLOCK_TOKENS;
        return;
    }
    if (blocks_total)
        *blocks_total = kv_n_blocks(f->kv);
    if (blocks_used)
        *blocks_used = kv_blocks_in_use(f->kv);
    if (block_tokens)
        *block_tokens = kv_block_tokens(f->kv);
}

void fwd_kv_usage_bytes(const fwd_t *f, uint64_t *total, uint64_t *used)
{
    if (!f->kv) {
        if (total)
            *total = 0;
        if (used)
            *used = 0;
        return;
    }
    if (total)
        *total = kv_bytes(f->kv);
    if (used)
        *used = kv_bytes_in_use(f->kv);
}

bool fwd_kv_fits(const fwd_t *f, int32_t n_tokens)
{
    if (!f->kv)
        return n_tokens <= f->max_batch;
    return kv_fits_new(f->kv, n_tokens);
}
