/* forward.c - batch-first decoder forward pass (llama / qwen2 family).
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
 */
#include "engine/model/forward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/model/attention.h"
#include "engine/quant/fp16.h"
#include "engine/kernels/ggml_exact.h"
#include "engine/kernels/kernels.h"
#include "engine/model/kv.h"
#include "engine/quant/quant.h"
#include "engine/kernels/tpool.h"

struct fwd {
    const model_t *m;
    const model_hparams_t *hp;
    const model_weights_t *w;
    tpool_t *pool;
    int32_t n_seq, n_ctx, max_batch;
    int64_t kv_dim;          /* n_head_kv * head_dim */
    kv_cache_t *kv;          /* paged F16 K/V of every sequence */
    /* scratch for max_batch tokens */
    float *x;                /* [B][n_embd] residual stream */
    float *xn;               /* [B][max(n_embd, n_head*head_dim)] normed input */
    float *q;                /* [B][n_head*head_dim] */
    float *k, *v;            /* [B][kv_dim] */
    uint16_t *kv16;          /* [2][kv_dim]: one position's K and V as F16 */
    float *att;              /* [B][n_head*head_dim] attention output */
    float *ff_a, *ff_b;      /* [B][n_ff] */
    void *act;               /* quantized activations, act_bytes */
    size_t act_bytes;
    float *logits;           /* [n_logits_cap][n_vocab] */
    int32_t n_logits, n_logits_cap;
    int32_t *out_rows;       /* [B] batch index of each logits row */
    const int32_t **blocks;  /* [B] block table of each token's sequence */
    int32_t *n_kv;           /* [B] */
    uint8_t *order;          /* [B] GX_ORDER_* of each token (see token_orders) */
    float *attn_scratch;     /* [threads][attn_scratch_floats] */
    fwd_tok_t *prefill;      /* [B] batch buffer of fwd_prefill */
    int64_t attn_stride;
};

static size_t max_act_bytes(const model_weights_t *w, int n_layer, int64_t B)
{
    size_t best = kern_act_size(w->output.type, w->output.n_in, B);
    for (int l = 0; l < n_layer; l++) {
        const model_layer_t *L = &w->layers[l];
        const model_tensor_t *ts[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
            size_t s = kern_act_size(ts[i]->type, ts[i]->n_in, B);
            if (s > best)
                best = s;
        }
    }
    return best;
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
    const model_hparams_t *hp = f->hp;
    f->n_seq = opts && opts->n_seq > 0 ? opts->n_seq : 1;
    f->n_ctx = opts && opts->n_ctx > 0 ? opts->n_ctx : hp->n_ctx_train;
    f->max_batch = opts && opts->max_batch > 0 ? opts->max_batch : 512;
    int n_threads = opts && opts->n_threads > 0 ? opts->n_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (n_threads < 1)
        n_threads = 1;
    if (f->n_seq > 4096 || f->n_ctx > (1 << 24) || f->max_batch > 1 << 16) {
        lf_err_set(err, LF_ERR_INVALID, "unreasonable sizes: %d sequences, context %d, batch %d", f->n_seq,
                   f->n_ctx, f->max_batch);
        goto fail;
    }
    if (tpool_create(n_threads, &f->pool, err) != LF_OK)
        goto fail;
    f->kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    int64_t qdim = (int64_t)hp->n_head * hp->head_dim;
    int64_t B = f->max_batch;
    int64_t xn_dim = qdim > hp->n_embd ? qdim : hp->n_embd;
    kv_opts_t ko = {
        .n_layer = hp->n_layer,
        .kv_dim = f->kv_dim,
        .block_tokens = opts && opts->kv_block_tokens > 0 ? opts->kv_block_tokens : FWD_KV_BLOCK_TOKENS,
        .n_seq = f->n_seq,
        .max_seq_len = f->n_ctx,
    };
    if (ko.block_tokens % ATTN_CHUNK != 0) {
        lf_err_set(err, LF_ERR_INVALID, "KV block of %d positions: must be a multiple of %d", ko.block_tokens,
                   ATTN_CHUNK);
        goto fail;
    }
    ko.n_blocks = opts && opts->kv_blocks > 0 ? opts->kv_blocks
                                              : f->n_seq * ((f->n_ctx + ko.block_tokens - 1) / ko.block_tokens);
    if (!(f->kv = kv_create(&ko, err)))
        goto fail;
    f->x = malloc((size_t)(B * hp->n_embd) * sizeof(float));
    f->xn = malloc((size_t)(B * xn_dim) * sizeof(float));
    f->q = malloc((size_t)(B * qdim) * sizeof(float));
    f->k = malloc((size_t)(B * f->kv_dim) * sizeof(float));
    f->v = malloc((size_t)(B * f->kv_dim) * sizeof(float));
    f->kv16 = malloc((size_t)(2 * f->kv_dim) * sizeof(uint16_t));
    f->att = malloc((size_t)(B * qdim) * sizeof(float));
    f->ff_a = malloc((size_t)(B * hp->n_ff) * sizeof(float));
    f->ff_b = malloc((size_t)(B * hp->n_ff) * sizeof(float));
    f->out_rows = malloc((size_t)B * sizeof(int32_t));
    f->prefill = malloc((size_t)B * sizeof *f->prefill);
    f->blocks = malloc((size_t)B * sizeof *f->blocks);
    f->n_kv = malloc((size_t)B * sizeof *f->n_kv);
    f->order = malloc((size_t)B);
    f->attn_stride = attn_scratch_floats(f->n_ctx, hp->head_dim, hp->n_head / hp->n_head_kv);
    f->attn_scratch = malloc((size_t)(f->attn_stride * tpool_size(f->pool)) * sizeof(float));
    f->act_bytes = max_act_bytes(f->w, hp->n_layer, B);
    f->act = malloc(f->act_bytes ? f->act_bytes : 1);
    if (!f->x || !f->xn || !f->q || !f->k || !f->v || !f->kv16 || !f->att ||
        !f->ff_a || !f->ff_b || !f->out_rows || !f->act || !f->prefill || !f->blocks || !f->n_kv ||
        !f->order || !f->attn_scratch) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory for the batch buffers (%d tokens)", f->max_batch);
        goto fail;
    }
    return f;
fail:
    fwd_free(f);
    return NULL;
}

void fwd_free(fwd_t *f)
{
    if (!f)
        return;
    tpool_free(f->pool);
    kv_free(f->kv);
    free(f->x);
    free(f->xn);
    free(f->q);
    free(f->k);
    free(f->v);
    free(f->kv16);
    free(f->att);
    free(f->ff_a);
    free(f->ff_b);
    free(f->act);
    free(f->logits);
    free(f->out_rows);
    free(f->prefill);
    free(f->blocks);
    free(f->n_kv);
    free(f->order);
    free(f->attn_scratch);
    free(f);
}

/* y = x / sqrt(mean(x^2) + eps) * w, with the sum in double as ggml does. */
static void rms_norm(const float *x, const float *w, float *y, int64_t n, float eps)
{
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / (double)n);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int64_t i = 0; i < n; i++)
        y[i] = (x[i] * scale) * w[i];
}

/* out[t][r] = W x[t] (+ bias), activations converted as ggml does. F32
 * and F16 weights take ggml's exact summation order, per token (order[t]);
 * F16 activations are rounded to F16 first (F16's vec_dot_type). */
static void linear(fwd_t *f, const model_tensor_t *W, const float *bias, const float *x, int64_t n_tok,
                   const uint8_t *order, float *out)
{
    if (W->type == QTYPE_F32) {
        gx_matmul_f32(f->pool, W->data, W->n_out, W->n_in, x, n_tok, order, out);
    } else if (W->type == QTYPE_F16) {
        uint16_t *x16 = f->act;
        for (int64_t t = 0; t < n_tok; t++)
            fp16_row_from_fp32(x + t * W->n_in, x16 + t * W->n_in, W->n_in);
        gx_matmul_f16(f->pool, W->data, W->n_out, W->n_in, x16, n_tok, order, out);
    } else {
        kern_mm_t job = {W->type, W->data, W->n_out, W->n_in, NULL, out};
        kern_linear_multi(f->pool, 1, &job, x, n_tok, f->act);
    }
    if (bias)
        for (int64_t t = 0; t < n_tok; t++)
            for (int64_t r = 0; r < W->n_out; r++)
                out[t * W->n_out + r] += bias[r];
}

/* linear() for n (<= 3) matrices on the same x: quantized ones in one
 * pool run (kern_linear_multi; values identical to linear()). */
static void linear_n(fwd_t *f, int n, const model_tensor_t *const *W, const float *const *bias, const float *x,
                     int64_t n_tok, const uint8_t *order, float *const *out)
{
    kern_mm_t jobs[3];
    for (int i = 0; i < n; i++) {
        if (W[i]->type == QTYPE_F32 || W[i]->type == QTYPE_F16) {
            for (int j = 0; j < n; j++)
                linear(f, W[j], bias[j], x, n_tok, order, out[j]);
            return;
        }
        jobs[i] = (kern_mm_t){W[i]->type, W[i]->data, W[i]->n_out, W[i]->n_in, NULL, out[i]};
    }
    kern_linear_multi(f->pool, n, jobs, x, n_tok, f->act);
    for (int i = 0; i < n; i++)
        if (bias[i])
            for (int64_t t = 0; t < n_tok; t++)
                for (int64_t r = 0; r < W[i]->n_out; r++)
                    out[i][t * W[i]->n_out + r] += bias[i][r];
}

/* Rotates the first n_rot dims of each head of vec (n_heads heads). */
static void rope(const model_hparams_t *hp, const float *freq_factors, float *vec, int n_heads, int32_t pos)
{
    const int n_rot = hp->n_rot;
    const float theta_scale = powf(hp->rope_theta, -2.0f / (float)n_rot);
    float cs[1024][2];
    float theta = (float)pos;
    for (int i0 = 0; i0 < n_rot && i0 / 2 < 1024; i0 += 2) {
        const float ff = freq_factors ? freq_factors[i0 / 2] : 1.0f;
        const float th = hp->rope_freq_scale * (theta / ff);
        cs[i0 / 2][0] = cosf(th);
        cs[i0 / 2][1] = sinf(th);
        theta *= theta_scale;
    }
    for (int h = 0; h < n_heads; h++) {
        float *x = vec + (int64_t)h * hp->head_dim;
        for (int i0 = 0; i0 < n_rot; i0 += 2) {
            const float c = cs[i0 / 2][0], s = cs[i0 / 2][1];
            int a = hp->rope_neox ? i0 / 2 : i0;
            int b = hp->rope_neox ? i0 / 2 + n_rot / 2 : i0 + 1;
            const float x0 = x[a], x1 = x[b];
            /* gcc -O3 -ffp-contract=fast fuses ggml's x0*c - x1*s and
             * x0*s + x1*c like this (checked against the goldens) */
            x[a] = fmaf(x0, c, -(x1 * s));
            x[b] = fmaf(x0, s, x1 * c);
        }
    }
}

/* The summation order of each token. llama.cpp's depends on the batch:
 * a batch of >= 2 tokens (a prompt) runs F32/F16 matrix products and
 * V.softmax through llamafile's tinyBLAS, a single token (a decode step)
 * through ggml_vec_dot. Ours must not depend on the batch (batch
 * invariance), so it is a property of the token (forward.h): prompt tokens
 * and tokens without logits take the prompt order, the others the decode
 * order. */
static void token_orders(const fwd_tok_t *toks, int32_t n, uint8_t *order)
{
    for (int32_t i = 0; i < n; i++)
        order[i] = toks[i].prompt || !toks[i].logits ? GX_ORDER_TINY : GX_ORDER_VEC;
}

static lf_code_t validate(fwd_t *f, const fwd_tok_t *toks, int32_t n, lf_err_t *err)
{
    if (n <= 0 || n > f->max_batch)
        return lf_err_set(err, LF_ERR_INVALID, "batch of %d tokens (1 to %d allowed)", n, f->max_batch);
    /* positions must continue each sequence in order */
    for (int32_t i = 0; i < n; i++) {
        const fwd_tok_t *t = &toks[i];
        if (t->token < 0 || t->token >= f->hp->n_vocab)
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

static void attention_layer(fwd_t *f, int layer, const fwd_tok_t *toks, int32_t n)
{
    const model_hparams_t *hp = f->hp;
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
        .scale = 1.0f / sqrtf((float)hp->head_dim),
        .order = f->order,
        .n_ctx = f->n_ctx,
        .scratch = f->attn_scratch,
        .scratch_stride = f->attn_stride,
    };
    for (int32_t i = 0; i < n; i++) {
        f->blocks[i] = kv_seq_blocks(f->kv, toks[i].seq);
        f->n_kv[i] = toks[i].pos + 1;
    }
    attn_run(f->pool, &job);
}

lf_code_t fwd_decode(fwd_t *f, const fwd_tok_t *toks, int32_t n, lf_err_t *err)
{
    lf_code_t rc = validate(f, toks, n, err);
    if (rc == LF_OK)
        rc = reserve(f, toks, n, err);
    if (rc != LF_OK)
        return rc;
    const model_hparams_t *hp = f->hp;
    const model_weights_t *w = f->w;
    const int64_t E = hp->n_embd, QD = (int64_t)hp->n_head * hp->head_dim, KVD = f->kv_dim, FF = hp->n_ff;
    token_orders(toks, n, f->order);

    for (int32_t i = 0; i < n; i++)
        quant_dequantize_row(w->tok_embd.type, (const uint8_t *)w->tok_embd.data +
                                                   (size_t)toks[i].token * w->tok_embd.row_bytes,
                             f->x + i * E, E);

    for (int l = 0; l < hp->n_layer; l++) {
        const model_layer_t *L = &w->layers[l];
        for (int32_t i = 0; i < n; i++)
            rms_norm(f->x + i * E, L->attn_norm, f->xn + i * E, E, hp->rms_eps);
        linear_n(f, 3, (const model_tensor_t *[]){&L->wq, &L->wk, &L->wv}, (const float *[]){L->bq, L->bk, L->bv},
                 f->xn, n, f->order, (float *[]){f->q, f->k, f->v});
        for (int32_t i = 0; i < n; i++) {
            rope(hp, w->rope_freqs, f->q + i * QD, hp->n_head, toks[i].pos);
            rope(hp, w->rope_freqs, f->k + i * KVD, hp->n_head_kv, toks[i].pos);
            fp16_row_from_fp32(f->k + i * KVD, f->kv16, KVD);
            fp16_row_from_fp32(f->v + i * KVD, f->kv16 + KVD, KVD);
            kv_store(f->kv, l, toks[i].seq, toks[i].pos, f->kv16, f->kv16 + KVD);
        }
        attention_layer(f, l, toks, n);
        linear(f, &L->wo, NULL, f->att, n, f->order, f->xn);
        for (int64_t j = 0; j < n * E; j++)
            f->x[j] += f->xn[j];

        /* llama.cpp keeps only the output rows after the last layer's
         * attention (a batch of one row for the last prompt token) */
        if (l == hp->n_layer - 1)
            for (int32_t i = 0; i < n; i++)
                if (toks[i].logits)
                    f->order[i] = GX_ORDER_VEC;
        for (int32_t i = 0; i < n; i++)
            rms_norm(f->x + i * E, L->ffn_norm, f->xn + i * E, E, hp->rms_eps);
        linear_n(f, 2, (const model_tensor_t *[]){&L->w_gate, &L->w_up}, (const float *[]){NULL, NULL}, f->xn, n,
                 f->order, (float *[]){f->ff_a, f->ff_b});
        for (int32_t i = 0; i < n; i++)
            gx_silu_row(f->ff_a + i * FF, f->ff_a + i * FF, FF);
        for (int64_t j = 0; j < n * FF; j++)
            f->ff_a[j] = f->ff_a[j] * f->ff_b[j];
        linear(f, &L->w_down, NULL, f->ff_a, n, f->order, f->xn);
        for (int64_t j = 0; j < n * E; j++)
            f->x[j] += f->xn[j];
    }

    /* logits only for the tokens that asked: gather, norm, project */
    int32_t n_out = 0;
    for (int32_t i = 0; i < n; i++)
        if (toks[i].logits) {
            rms_norm(f->x + i * E, w->output_norm, f->xn + n_out * E, E, hp->rms_eps);
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
        linear(f, &w->output, NULL, f->xn, n_out, NULL, f->logits);
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
    if (kv_seq_len(f->kv, seq) + n > f->n_ctx)
        return lf_err_set(err, LF_ERR_CONTEXT, "%d prompt tokens do not fit the context of %d (%d used)", n,
                          f->n_ctx, kv_seq_len(f->kv, seq));
    /* a one-token prompt is a decode step for llama.cpp; a prompt that
     * continues a reused prefix keeps the prompt order, so that a cached
     * prefix gives the same bits as recomputing it */
    const bool prompt_order = n >= 2 || kv_seq_len(f->kv, seq) > 0;
    for (int32_t start = 0; start < n; start += f->max_batch) {
        int32_t m = n - start < f->max_batch ? n - start : f->max_batch;
        int32_t pos0 = kv_seq_len(f->kv, seq);
        for (int32_t i = 0; i < m; i++)
            f->prefill[i] = (fwd_tok_t){tokens[start + i], seq, pos0 + i, want_logits && start + i == n - 1,
                                        prompt_order};
        lf_code_t rc = fwd_decode(f, f->prefill, m, err);
        if (rc != LF_OK)
            return rc;
    }
    return LF_OK;
}

int32_t fwd_max_batch(const fwd_t *f) { return f->max_batch; }

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

int32_t fwd_seq_len(const fwd_t *f, int32_t seq)
{
    return kv_seq_len(f->kv, seq);
}

int32_t fwd_seq_attach_prefix(fwd_t *f, int32_t seq, const int32_t *tokens, int32_t n)
{
    return kv_seq_attach_prefix(f->kv, seq, tokens, n);
}

void fwd_seq_commit(fwd_t *f, int32_t seq, const int32_t *tokens, int32_t n)
{
    kv_seq_commit(f->kv, seq, tokens, n);
}

int32_t fwd_n_ctx(const fwd_t *f) { return f->n_ctx; }

uint64_t fwd_kv_bytes(const fwd_t *f) { return kv_bytes(f->kv); }

void fwd_kv_usage(const fwd_t *f, int32_t *blocks_total, int32_t *blocks_used, int32_t *block_tokens)
{
    if (blocks_total)
        *blocks_total = kv_n_blocks(f->kv);
    if (blocks_used)
        *blocks_used = kv_blocks_in_use(f->kv);
    if (block_tokens)
        *block_tokens = kv_block_tokens(f->kv);
}
