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
 * its sequence's cache, never on the other tokens of the batch, so a
 * sequence decodes bitwise the same alone or batched (batch invariance).
 *
 * One layer, with the architecture's options in brackets (arch.h):
 *   xn = rms_norm(x) * attn_norm
 *   q, k, v = Wq xn, Wk xn, Wv xn [fused Wqkv] [+ biases]
 *   q, k = rms_norm per head [q/k norm]; rope [per layer kind, or none];
 *   q *= q_scale [gemma3, phi3]; K, V to the cache as F16
 *   a = attention [sliding window, sinks]; o = Wo a [+ bias] [post-norm]
 *   x += o
 *   xn = rms_norm(x) * ffn_norm; f = FFN(xn) (ffn.h) [post-norm]; x += f
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
#include "engine/model/ffn.h"
#include "engine/model/kv.h"
#include "engine/model/linear.h"
#include "engine/model/ops.h"
#include "engine/model/rope.h"
#include "engine/quant/fp16.h"
#include "engine/quant/quant.h"

struct fwd {
    const model_t *m;
    const model_hparams_t *hp;
    const model_weights_t *w;
    const arch_desc_t *arch;
    tpool_t *pool;
    int32_t n_seq, n_ctx, max_batch;
    int64_t kv_dim;          /* n_head_kv * head_dim */
    int64_t q_dim;           /* n_head * head_dim */
    kv_cache_t *kv;          /* paged K/V of every sequence */
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
};

static size_t max_act_bytes(const model_weights_t *w, int n_layer, int64_t B)
{
    size_t best = lin_act_bytes(&w->output, B);
    for (int l = 0; l < n_layer; l++) {
        const model_layer_t *L = &w->layers[l];
        const model_tensor_t *ts[] = {&L->wq, &L->wk, &L->wv, &L->wqkv, &L->wo};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
            size_t s = ts[i]->data ? lin_act_bytes(ts[i], B) : 0;
            if (s > best)
                best = s;
        }
    }
    return best;
}

/* The KV cache fwd_create makes for m and opts: sizes, the window layers
 * (layer_swa, n_layer entries, filled) and the block budgets. */
static lf_code_t kv_plan(const model_t *m, const fwd_opts_t *opts, int32_t n_seq, int32_t n_ctx, int32_t max_batch,
                         bool *layer_swa, kv_opts_t *ko, lf_err_t *err)
{
    const model_hparams_t *hp = model_hparams(m);
    const model_weights_t *w = model_weights(m);
    for (int l = 0; l < hp->n_layer; l++)
        layer_swa[l] = hp->n_swa > 0 && w->layers[l].swa;
    *ko = (kv_opts_t){
        .n_layer = hp->n_layer,
        .kv_dim = (int64_t)hp->n_head_kv * hp->head_dim,
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
        const uint64_t n_full = (uint64_t)(hp->n_layer - hp->n_layer_swa);
        const uint64_t pos = kv_bytes_per_position(ko->type_k, ko->type_v, ko->kv_dim);
        const uint64_t per_full = pos * n_full * (uint64_t)bt;
        const uint64_t per_swa = pos * (uint64_t)hp->n_layer_swa * (uint64_t)bt;
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
    kv_opts_t ko;
    uint64_t bytes = 0;
    if (swa && kv_plan(m, opts, n_seq, n_ctx, max_batch, swa, &ko, NULL) == LF_OK) {
        const uint64_t per =
            kv_bytes_per_position(ko.type_k, ko.type_v, ko.kv_dim) * (uint64_t)ko.block_tokens;
        const int64_t per_seq = kv_swa_blocks_per_seq(&ko);
        const int64_t n_w = per_seq ? ((int64_t)n_seq * per_seq < ko.n_blocks ? (int64_t)n_seq * per_seq
                                                                               : ko.n_blocks)
                                    : 0;
        bytes = per * ((uint64_t)(hp->n_layer - (per_seq ? hp->n_layer_swa : 0)) * (uint64_t)ko.n_blocks +
                       (uint64_t)(per_seq ? hp->n_layer_swa : 0) * (uint64_t)n_w);
    }
    free(swa);
    return bytes;
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
    if (f->n_seq > 4096 || f->n_ctx > (1 << 24) || f->max_batch > 1 << 16) {
        lf_err_set(err, LF_ERR_INVALID, "unreasonable sizes: %d sequences, context %d, batch %d", f->n_seq,
                   f->n_ctx, f->max_batch);
        goto fail;
    }
    if (tpool_create(n_threads, &f->pool, err) != LF_OK)
        goto fail;
    f->kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    f->q_dim = (int64_t)hp->n_head * hp->head_dim;
    const int64_t B = f->max_batch, E = hp->n_embd;
    const int64_t xn_dim = f->q_dim > E ? f->q_dim : E;
    kv_opts_t ko;
    if (!(layer_swa = calloc((size_t)hp->n_layer, sizeof *layer_swa))) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (kv_plan(m, opts, f->n_seq, f->n_ctx, f->max_batch, layer_swa, &ko, err) != LF_OK ||
        !(f->kv = kv_create(&ko, err)) || !(f->ffn = ffn_create(m, f->max_batch, err)))
        goto fail;
    /* LongRoPE (phi3): the long factors when the context exceeds the
     * trained one, as llama.cpp chooses by its context size */
    const float *factors = f->w->rope_freqs;
    if (!factors)
        factors = f->n_ctx > hp->n_ctx_orig ? f->w->rope_long : f->w->rope_short;
    rope_init(&f->rope_full, hp, hp->rope_theta, hp->rope_freq_scale, factors);
    rope_init(&f->rope_swa, hp, hp->rope_theta_swa, hp->rope_freq_scale_swa, factors);
    bool fused = false;
    for (int l = 0; l < hp->n_layer; l++)
        fused |= f->w->layers[l].wqkv.data != NULL;
    f->x = malloc((size_t)(B * E) * sizeof(float));
    f->xn = malloc((size_t)(B * xn_dim) * sizeof(float));
    f->ffo = malloc((size_t)(B * E) * sizeof(float));
    f->q = malloc((size_t)(B * f->q_dim) * sizeof(float));
    f->k = malloc((size_t)(B * f->kv_dim) * sizeof(float));
    f->v = malloc((size_t)(B * f->kv_dim) * sizeof(float));
    f->qkv = fused ? malloc((size_t)(B * (f->q_dim + 2 * f->kv_dim)) * sizeof(float)) : NULL;
    f->cs = malloc((size_t)(2 * B * hp->n_rot) * sizeof(float));
    f->att = malloc((size_t)(B * f->q_dim) * sizeof(float));
    f->out_rows = malloc((size_t)B * sizeof(int32_t));
    f->prefill = malloc((size_t)B * sizeof *f->prefill);
    f->blocks = malloc((size_t)B * sizeof *f->blocks);
    f->n_kv = malloc((size_t)B * sizeof *f->n_kv);
    f->kv_start = malloc((size_t)B * sizeof *f->kv_start);
    f->order = malloc((size_t)B);
    f->attn = opts ? opts->attn : FWD_ATTN_AUTO;
    const bool f16 = ko.type_k == KV_F16 && ko.type_v == KV_F16;
    f->exact_max_kv = f->attn == FWD_ATTN_EXACT ? f->n_ctx
                      : f->attn == FWD_ATTN_AUTO && f16 ? (f->n_ctx < FWD_EXACT_MAX_KV ? f->n_ctx : FWD_EXACT_MAX_KV)
                                                         : 0;
    if (f->exact_max_kv > 0) {
        f->attn_stride = attn_scratch_floats(f->exact_max_kv, hp->head_dim, hp->n_head / hp->n_head_kv);
        f->attn_scratch = malloc((size_t)(f->attn_stride * tpool_size(f->pool)) * sizeof(float));
    }
    if (f->exact_max_kv < f->n_ctx && !(f->fa = attn_flash_create(tpool_size(f->pool), f->max_batch, hp->n_head,
                                                                   hp->n_head_kv, hp->head_dim, f->n_ctx, err)))
        goto fail;
    f->path = malloc((size_t)B);
    const size_t act_bytes = max_act_bytes(f->w, hp->n_layer, B);
    f->act = malloc(act_bytes ? act_bytes : 1);
    if (!f->x || !f->xn || !f->ffo || !f->q || !f->k || !f->v || (fused && !f->qkv) || !f->cs ||
        !f->att || !f->out_rows || !f->act || !f->prefill || !f->blocks || !f->n_kv || !f->kv_start || !f->order ||
        !f->path || (f->exact_max_kv > 0 && !f->attn_scratch)) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory for the batch buffers (%d tokens)", f->max_batch);
        goto fail;
    }
    free(layer_swa);
    return f;
fail:
    free(layer_swa);
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

static lf_code_t validate(fwd_t *f, const fwd_tok_t *toks, const fwd_mm_t *mm, int32_t n, lf_err_t *err)
{
    if (n <= 0 || n > f->max_batch)
        return lf_err_set(err, LF_ERR_INVALID, "batch of %d tokens (1 to %d allowed)", n, f->max_batch);
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
    for (int32_t i = 0; i < n; i++) {
        lf_code_t rc = kv_seq_reserve(f->kv, toks[i].seq, toks[i].pos + 1, err);
        if (rc != LF_OK)
            return rc;
    }
    return LF_OK;
}

static void attention_layer(fwd_t *f, int layer, const fwd_tok_t *toks, const fwd_mm_t *mm, int32_t n)
{
    const model_hparams_t *hp = f->hp;
    const model_layer_t *L = &f->w->layers[layer];
    const int32_t window = kv_layer_window(f->kv, layer);
    attn_job_t job = {
        .n_tok = n,
        .n_head = hp->n_head,
        .n_head_kv = hp->n_head_kv,
        .head_dim = hp->head_dim,
        .q = f->q,
        .out = f->att,
        .kv = f->kv,
        .layer = layer,
        .blocks = f->blocks,
        .n_kv = f->n_kv,
        .kv_start = window > 0 ? f->kv_start : NULL,
        .sinks = L->sinks,
        .kq_tiny = f->arch->ref_2026,
        .vec_pad = f->arch->ref_2026 ? 256 : 32,
        /* families that scale q beforehand attend with scale 1 */
        .scale = f->arch->q_prescale ? 1.0f : 1.0f / sqrtf((float)hp->head_dim),
        .order = f->order,
        .path = f->path,
        .n_ctx = f->exact_max_kv,
        .scratch = f->attn_scratch,
        .scratch_stride = f->attn_stride,
    };
    for (int32_t i = 0; i < n; i++) {
        f->blocks[i] = kv_seq_table(f->kv, toks[i].seq, layer);
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

/* q, k, v of the batch (separate or fused products, biases). */
static void qkv_project(fwd_t *f, const model_layer_t *L, int32_t n)
{
    const int64_t QD = f->q_dim, KVD = f->kv_dim, W = QD + 2 * KVD;
    if (!L->wqkv.data) {
        lin_run_n(f->pool, f->act, 3, (const model_tensor_t *[]){&L->wq, &L->wk, &L->wv},
                  (const float *[]){L->bq, L->bk, L->bv}, f->xn, n, f->order, (float *[]){f->q, f->k, f->v});
        return;
    }
    lin_run(f->pool, f->act, &L->wqkv, NULL, f->xn, n, f->order, f->qkv);
    for (int32_t i = 0; i < n; i++) {
        const float *row = f->qkv + i * W;
        float *dst[3] = {f->q + i * QD, f->k + i * KVD, f->v + i * KVD};
        const float *bias[3] = {L->bq, L->bk, L->bv};
        const int64_t off[3] = {0, QD, QD + KVD}, len[3] = {QD, KVD, KVD};
        for (int p = 0; p < 3; p++) {
            memcpy(dst[p], row + off[p], (size_t)len[p] * sizeof(float));
            if (bias[p])
                for (int64_t j = 0; j < len[p]; j++)
                    dst[p][j] += bias[p][j];
        }
    }
}

/* Per token: q/k norms, rope, q scale; K and V into the cache. */
static void qk_finish(fwd_t *f, int layer, const fwd_tok_t *toks, int32_t n)
{
    const model_hparams_t *hp = f->hp;
    const model_layer_t *L = &f->w->layers[layer];
    const bool swa = L->swa && hp->n_swa > 0;
    const rope_t *rope = swa ? &f->rope_swa : &f->rope_full;
    const float *cs = f->cs + (swa ? (int64_t)f->max_batch * hp->n_rot : 0);
    const int64_t QD = f->q_dim, KVD = f->kv_dim;
    for (int32_t i = 0; i < n; i++) {
        float *q = f->q + i * QD, *k = f->k + i * KVD;
        if (L->q_norm) {
            ops_rms_norm_heads(q, L->q_norm, hp->n_head, hp->head_dim, hp->rms_eps);
            ops_rms_norm_heads(k, L->k_norm, hp->n_head_kv, hp->head_dim, hp->rms_eps);
        }
        if (L->rope) {
            rope_rotate(rope, cs + (int64_t)i * hp->n_rot, q, hp->n_head);
            rope_rotate(rope, cs + (int64_t)i * hp->n_rot, k, hp->n_head_kv);
        }
        if (hp->q_scale != 1.0f)
            for (int64_t j = 0; j < QD; j++)
                q[j] *= hp->q_scale;
        kv_store_f32(f->kv, layer, toks[i].seq, toks[i].pos, k, f->v + i * KVD);
    }
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

    for (int32_t i = 0; i < n; i++) {
        if (MM(mm, i)->embd)
            memcpy(f->x + i * E, MM(mm, i)->embd, (size_t)E * sizeof(float));
        else
            quant_dequantize_row(w->tok_embd.type,
                                 (const uint8_t *)w->tok_embd.data + (size_t)toks[i].token * w->tok_embd.row_bytes,
                                 f->x + i * E, E);
    }
    /* the rope tables of the batch's positions, once for all layers */
    for (int32_t i = 0; i < n; i++) {
        const fwd_mm_t *x = MM(mm, i);
        const int32_t p = toks[i].pos + x->dpos;
        if (f->arch->mrope != ARCH_MROPE_NONE) {
            const int32_t mp[4] = {p, p + x->my, p + x->mx, 0};
            rope_angles_multi(&f->rope_full, mp, hp->rope_sections, f->arch->mrope == ARCH_MROPE_INTERLEAVED, false,
                              f->cs + (int64_t)i * hp->n_rot);
        } else {
            rope_angles(&f->rope_full, p, f->cs + (int64_t)i * hp->n_rot);
        }
        if (hp->n_swa > 0)
            rope_angles(&f->rope_swa, p, f->cs + ((int64_t)f->max_batch + i) * hp->n_rot);
    }
    /* text embeddings are scaled (gemma), image embeddings are not */
    if (f->arch->embd_scale) {
        const float s = sqrtf((float)E);
        for (int32_t i = 0; i < n; i++)
            if (!MM(mm, i)->embd)
                for (int64_t j = 0; j < E; j++)
                    f->x[i * E + j] *= s;
    }

    for (int l = 0; l < hp->n_layer; l++) {
        const model_layer_t *L = &w->layers[l];
        for (int32_t i = 0; i < n; i++)
            ops_rms_norm(f->x + i * E, L->attn_norm, f->xn + i * E, E, hp->rms_eps);
        qkv_project(f, L, n);
        qk_finish(f, l, toks, n);
        attention_layer(f, l, toks, mm, n);
        lin_run(f->pool, f->act, &L->wo, L->bo, f->att, n, f->order, f->xn);
        if (L->attn_post_norm)
            for (int32_t i = 0; i < n; i++)
                ops_rms_norm(f->xn + i * E, L->attn_post_norm, f->xn + i * E, E, hp->rms_eps);
        for (int64_t j = 0; j < n * E; j++)
            f->x[j] += f->xn[j];

        /* llama.cpp keeps only the output rows after the last layer's
         * attention (a batch of one row for the last prompt token), or
         * after the last layer (out_rows_late) */
        if (l == hp->n_layer - 1 && !f->arch->out_rows_late)
            for (int32_t i = 0; i < n; i++)
                if (toks[i].logits)
                    f->order[i] = GX_ORDER_VEC;
        for (int32_t i = 0; i < n; i++)
            ops_rms_norm(f->x + i * E, L->ffn_norm, f->xn + i * E, E, hp->rms_eps);
        ffn_run(f->ffn, f->pool, L, f->xn, n, f->order, f->ffo);
        if (L->ffn_post_norm)
            for (int32_t i = 0; i < n; i++)
                ops_rms_norm(f->ffo + i * E, L->ffn_post_norm, f->ffo + i * E, E, hp->rms_eps);
        for (int64_t j = 0; j < n * E; j++)
            f->x[j] += f->ffo[j];
        /* deepstack: image rows add their (l + 1)-th extra embedding */
        if (l < hp->n_deepstack)
            for (int32_t i = 0; i < n; i++)
                if (MM(mm, i)->embd)
                    for (int64_t j = 0; j < E; j++)
                        f->x[i * E + j] += mm[i].embd[(int64_t)(l + 1) * E + j];
    }

    /* logits only for the tokens that asked: gather, norm, project */
    int32_t n_out = 0;
    for (int32_t i = 0; i < n; i++)
        if (toks[i].logits) {
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
    for (int32_t i = 0; i < n; i++)
        kv_seq_set_len(f->kv, toks[i].seq, toks[i].pos + 1);
    return LF_OK;
}

lf_code_t fwd_prefill(fwd_t *f, int32_t seq, const int32_t *tokens, int32_t n, bool want_logits,
                      lf_err_t *err)
{
    if (seq < 0 || seq >= f->n_seq)
        return lf_err_set(err, LF_ERR_INVALID, "sequence %d out of range", seq);
    if (n <= 0)
        return lf_err_set(err, LF_ERR_INVALID, "empty prompt");
    const int32_t len0 = kv_seq_len(f->kv, seq);
    if (len0 + n > f->n_ctx)
        return lf_err_set(err, LF_ERR_CONTEXT, "%d prompt tokens do not fit the context of %d (%d used)", n,
                          f->n_ctx, len0);
    /* the whole prompt is the cached prefix and these tokens, so a prompt
     * that continues a reused prefix keeps the order recomputing it would
     * have (a cached prefix gives the same bits as recomputing it) */
    for (int32_t start = 0; start < n; start += f->max_batch) {
        int32_t m = n - start < f->max_batch ? n - start : f->max_batch;
        int32_t pos0 = kv_seq_len(f->kv, seq);
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
    /* the batch boundaries around pos: the chunk's start and end, and the
     * checkpoint breaks of sliding-window models inside text */
    int32_t a = chunk_start, b = chunk_end;
    if (text && f->hp->n_swa > 0) {
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
    kv_seq_release(f->kv, seq);
}

lf_code_t fwd_seq_truncate(fwd_t *f, int32_t seq, int32_t len, lf_err_t *err)
{
    if (seq < 0 || seq >= f->n_seq)
        return lf_err_set(err, LF_ERR_INVALID, "sequence %d out of range", seq);
    return kv_seq_truncate(f->kv, seq, len, err);
}

bool fwd_can_truncate(const fwd_t *f)
{
    (void)f; /* every layer keeps K/V per position */
    return true;
}

int32_t fwd_seq_len(const fwd_t *f, int32_t seq)
{
    return kv_seq_len(f->kv, seq);
}

int32_t fwd_seq_attach_prefix(fwd_t *f, int32_t seq, const int32_t *tokens, int32_t n)
{
    const int32_t ok = prompt_order_prefix(f, n);
    /* kv attaches whole blocks strictly before its n - 1 */
    return kv_seq_attach_prefix(f->kv, seq, tokens, ok < n ? ok + 1 : n);
}

void fwd_seq_commit(fwd_t *f, int32_t seq, const int32_t *tokens, int32_t n)
{
    kv_seq_commit(f->kv, seq, tokens, prompt_order_prefix(f, n));
}

int32_t fwd_n_ctx(const fwd_t *f) { return f->n_ctx; }

uint64_t fwd_kv_bytes(const fwd_t *f) { return kv_bytes(f->kv); }

fwd_attn_t fwd_attn(const fwd_t *f) { return f->attn; }
kv_type_t fwd_kv_type_k(const fwd_t *f) { return kv_type_k(f->kv); }
kv_type_t fwd_kv_type_v(const fwd_t *f) { return kv_type_v(f->kv); }

lf_code_t fwd_check_attn(const model_t *m, const fwd_opts_t *opts, lf_err_t *err)
{
    if (!opts)
        return LF_OK;
    const int32_t hd = model_hparams(m)->head_dim;
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
    if (blocks_total)
        *blocks_total = kv_n_blocks(f->kv);
    if (blocks_used)
        *blocks_used = kv_blocks_in_use(f->kv);
    if (block_tokens)
        *block_tokens = kv_block_tokens(f->kv);
}

void fwd_kv_usage_bytes(const fwd_t *f, uint64_t *total, uint64_t *used)
{
    if (total)
        *total = kv_bytes(f->kv);
    if (used)
        *used = kv_bytes_in_use(f->kv);
}

bool fwd_kv_fits(const fwd_t *f, int32_t n_tokens)
{
    return kv_fits_new(f->kv, n_tokens);
}
