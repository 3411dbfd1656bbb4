/* vis_vit.c - the vision transformer's layers (see vision.h, vis_internal.h).
 *
 * One pre-norm block per layer: x += Wo attn(norm1(x)); x += FFN(norm2(x)).
 * Attention is full (every patch sees every patch) or, for Qwen2.5-VL's
 * windowed layers, restricted to the patches of the same window (the rows
 * are in window order: vis_enc.c, so a window is a run of rows); q and k
 * get the 2-D rope of the Qwen encoders (rows then columns, each section
 * restarting its frequencies, NEOX pairs over the whole head).
 *
 * Speed: the matrices go through the blocked products of gemm.h (the
 * activations rounded as ggml rounds them for the weight type, the sums in
 * the tiles' order), attention through enc_attn.h (flash-style over head
 * and query block), and the row-wise steps (norms, activations, residual
 * adds, rope) are split over the pool by rows. Where a weight type has no
 * float unpacking, linear.h's kernels take it.
 */
#include "engine/vision/vis_internal.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels/enc_attn.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/ggml_exact.h"
#include "engine/model/linear.h"
#include "engine/model/ops.h"
#include "engine/model/rope.h"

/* ---- rows split over the pool ---- */

typedef void (*rows_fn_t)(void *ctx, int64_t r0, int64_t r1);

typedef struct {
    rows_fn_t fn;
    void *ctx;
    int64_t n, chunk;
    atomic_llong next; /* next chunk: threads take chunks as they come free */
} rows_arg_t;

static void rows_worker(void *p, int ith, int nth)
{
    rows_arg_t *a = p;
    (void)ith, (void)nth;
    for (int64_t r0; (r0 = atomic_fetch_add(&a->next, a->chunk)) < a->n;)
        a->fn(a->ctx, r0, r0 + a->chunk < a->n ? r0 + a->chunk : a->n);
}

static void par_rows(tpool_t *pool, int64_t n, rows_fn_t fn, void *ctx)
{
    const int64_t chunk = n / (8 * tpool_size(pool)) > 16 ? n / (8 * tpool_size(pool)) : 16;
    rows_arg_t a = {fn, ctx, n, chunk, 0};
    tpool_run(n > chunk ? pool : NULL, rows_worker, &a);
}

typedef struct {
    const vis_model_t *v;
    const float *x, *w, *b;
    int64_t width;
    float *out;
} norm_ctx_t;

static void norm_rows(void *p, int64_t r0, int64_t r1)
{
    const norm_ctx_t *c = p;
    const float eps = c->v->hp.eps;
    const int64_t width = c->width;
    for (int64_t r = r0; r < r1; r++) {
        const float *xr = c->x + r * width;
        float *y = c->out + r * width;
        if (c->v->hp.rms_norm) {
            ops_rms_norm(xr, c->w, y, width, eps);
            if (c->b)
                for (int64_t i = 0; i < width; i++)
                    y[i] += c->b[i];
            continue;
        }
        /* ggml_norm: mean and variance summed in double, then the weight
         * and the bias as separate operations (ggml_mul, ggml_add) */
        double sum = 0.0;
        for (int64_t i = 0; i < width; i++)
            sum += (double)xr[i];
        const float mean = (float)(sum / (double)width);
        double sum2 = 0.0;
        for (int64_t i = 0; i < width; i++) {
            const float d = xr[i] - mean;
            y[i] = d;
            sum2 += (double)(d * d);
        }
        const float scale = 1.0f / sqrtf((float)(sum2 / (double)width) + eps);
        for (int64_t i = 0; i < width; i++) {
            float t = y[i] * scale;
            if (c->w)
                t = t * c->w[i];
            if (c->b)
                t = t + c->b[i];
            y[i] = t;
        }
    }
}

void vis_norm_rows(const vis_model_t *v, tpool_t *pool, const float *x, const float *w, const float *b, int64_t n,
                   int64_t width, float *out)
{
    norm_ctx_t c = {v, x, w, b, width, out};
    par_rows(pool, n, norm_rows, &c);
}

typedef struct {
    float *x;
    const float *y;
    int64_t width;
} add_ctx_t;

static void add_rows(void *p, int64_t r0, int64_t r1)
{
    const add_ctx_t *c = p;
    for (int64_t j = r0 * c->width; j < r1 * c->width; j++)
        c->x[j] += c->y[j];
}

/* x += y over n rows of width */
static void vis_add_rows(tpool_t *pool, float *x, const float *y, int64_t n, int64_t width)
{
    add_ctx_t c = {x, y, width};
    par_rows(pool, n, add_rows, &c);
}

/* ---- matrices ---- */

typedef struct {
    void (*post)(float *y, int64_t n);
    float *out;
    int64_t width;
} post_ctx_t;

static void post_rows(void *p, int64_t r0, int64_t r1)
{
    const post_ctx_t *c = p;
    for (int64_t r = r0; r < r1; r++)
        c->post(c->out + r * c->width, c->width);
}

void vis_linear_epi(tpool_t *pool, vis_work_t *wk, int cnt, const model_tensor_t *const *W, const float *x,
                    int64_t n, float *const *out, const gemm_epi_t *epi, float *tmp)
{
    qtype_t prepared_for = QTYPE_COUNT; /* the activation type wk->xr holds x for */
    for (int i = 0; i < cnt; i++) {
        const model_tensor_t *w = W[i];
        const gemm_epi_t *e = &epi[i];
        if (gemm_supports(w->type)) {
            /* one preparation serves every matrix with the same activation type */
            const qtype_t vt = qtype_info(w->type)->vec_dot_type;
            if (prepared_for != vt) {
                gemm_prepare(pool, w->type, x, w->n_in, n, w->n_in, wk->xr, wk->gemm);
                prepared_for = vt;
            }
            gemm_run(pool, w->type, w->data, w->n_out, w->n_in, wk->xr, n, out[i], w->n_out, e, wk->gemm);
            continue;
        }
        /* linear.h's kernels for the other types, the epilogue after */
        lin_run(pool, wk->act, w, e->bias, x, n, wk->order, e->accumulate ? tmp : out[i]);
        if (e->accumulate)
            vis_add_rows(pool, out[i], tmp, n, w->n_out);
        if (e->post) {
            post_ctx_t c = {e->post, out[i], w->n_out};
            par_rows(pool, n, post_rows, &c);
        }
    }
}

void vis_linear(tpool_t *pool, vis_work_t *wk, const model_tensor_t *W, const float *bias, const float *x, int64_t n,
                float *out)
{
    const gemm_epi_t e = {bias, false, NULL};
    vis_linear_epi(pool, wk, 1, &W, x, n, &out, &e, NULL);
}

/* ---- attention ---- */

static void attention(const vis_model_t *v, tpool_t *pool, vis_work_t *wk, bool windowed)
{
    const vis_hparams_t *hp = &v->hp;
    const int32_t full[2] = {0, wk->n};
    enc_attn(pool, wk->q, wk->k, wk->v, hp->n_embd, wk->n, windowed ? wk->seg : full, windowed ? wk->n_seg : 1,
             hp->n_head, hp->head_dim, 1.0f / sqrtf((float)hp->head_dim), wk->att, hp->n_embd, wk->attn);
}

/* ---- the 2-D rope of the Qwen encoders ---- */

typedef struct {
    const vis_model_t *v;
    vis_work_t *wk;
    rope_t r;
} rope_ctx_t;

static void rope_rows(void *p, int64_t r0, int64_t r1)
{
    const rope_ctx_t *c = p;
    const int32_t d = c->v->hp.head_dim, E = c->v->hp.n_embd;
    for (int64_t i = r0; i < r1; i++) {
        rope_rotate(&c->r, c->wk->cs + i * d, c->wk->q + i * E, c->v->hp.n_head);
        rope_rotate(&c->r, c->wk->cs + i * d, c->wk->k + i * E, c->v->hp.n_head);
    }
}

static void rope_2d(const vis_model_t *v, tpool_t *pool, vis_work_t *wk)
{
    const int32_t d = v->hp.head_dim;
    /* ggml_rope_multi(VISION): n_dims = d / 2 with sections of d / 4,
     * pairs (i, i + d / 2) over the whole head, theta base 10000 */
    rope_ctx_t c = {v, wk,
                    {.n_rot = d, .head_dim = d, .neox = true, .theta_scale = powf(10000.0f, -2.0f / (float)(d / 2)),
                     .freq_scale = 1.0f, .ext_factor = 0.0f, .attn_factor = 1.0f}};
    par_rows(pool, wk->n, rope_rows, &c);
}

void vis_rope_tables(const vis_model_t *v, vis_work_t *wk, const int32_t *pos_y, const int32_t *pos_x)
{
    const int32_t d = v->hp.head_dim;
    rope_t r = {.n_rot = d, .head_dim = d, .neox = true, .theta_scale = powf(10000.0f, -2.0f / (float)(d / 2)),
                .freq_scale = 1.0f, .ext_factor = 0.0f, .attn_factor = 1.0f};
    const int32_t sections[4] = {d / 4, d / 4, d / 4, d / 4};
    for (int32_t i = 0; i < wk->n; i++) {
        const int32_t p[4] = {pos_y[i], pos_x[i], pos_y[i], pos_x[i]};
        rope_angles_multi(&r, p, sections, false, true, wk->cs + (int64_t)i * d);
    }
}

/* ---- the layer ---- */

static void act_rows(vis_act_t act, float *y, const float *g, const float *u, int64_t n)
{
    switch (act) {
    case VIS_ACT_SILU:
        gx_silu_row(y, g, n);
        if (u)
            for (int64_t i = 0; i < n; i++)
                y[i] *= u[i];
        break;
    case VIS_ACT_GELU:
        ops_gelu_row(y, g, n);
        if (u)
            for (int64_t i = 0; i < n; i++)
                y[i] *= u[i];
        break;
    case VIS_ACT_GELU_QUICK:
        for (int64_t i = 0; i < n; i++) {
            const float x = g[i];
            y[i] = x * (1.0f / (1.0f + expf(-1.702f * x))) * (u ? u[i] : 1.0f);
        }
        break;
    }
}

typedef struct {
    vis_act_t act;
    float *y;
    const float *g, *u;
    int64_t width;
} act_ctx_t;

static void act_rows_par(void *p, int64_t r0, int64_t r1)
{
    const act_ctx_t *c = p;
    for (int64_t i = r0; i < r1; i++)
        act_rows(c->act, c->y + i * c->width, c->g + i * c->width, c->u ? c->u + i * c->width : NULL, c->width);
}

typedef struct {
    const vis_layer_t *L;
    vis_work_t *wk;
    int64_t E;
} qkv_ctx_t;

static void qkv_split(void *p, int64_t r0, int64_t r1)
{
    const qkv_ctx_t *c = p;
    const vis_layer_t *L = c->L;
    const int64_t E = c->E;
    for (int64_t i = r0; i < r1; i++) {
        const float *row = c->wk->ff + i * 3 * E;
        for (int64_t j = 0; j < E; j++) {
            c->wk->q[i * E + j] = row[j] + (L->bq ? L->bq[j] : 0.0f);
            c->wk->k[i * E + j] = row[E + j] + (L->bk ? L->bk[j] : 0.0f);
            c->wk->v[i * E + j] = row[2 * E + j] + (L->bv ? L->bv[j] : 0.0f);
        }
    }
}

static void gelu_post(float *y, int64_t n) { ops_gelu_row(y, y, n); }

static void gelu_quick_post(float *y, int64_t n) { act_rows(VIS_ACT_GELU_QUICK, y, y, NULL, n); }

static void silu_post(float *y, int64_t n) { gx_silu_row(y, y, n); }

void vis_layer(const vis_model_t *v, tpool_t *pool, vis_work_t *wk, int il)
{
    const vis_hparams_t *hp = &v->hp;
    const vis_layer_t *L = &v->layers[il];
    const int64_t n = wk->n, E = hp->n_embd, F = hp->n_ff;
    vis_norm_rows(v, pool, wk->x, L->ln1_w, L->ln1_b, n, E, wk->xn);
    if (L->wqkv.data) {
        vis_linear(pool, wk, &L->wqkv, NULL, wk->xn, n, wk->ff);
        qkv_ctx_t c = {L, wk, E};
        par_rows(pool, n, qkv_split, &c);
    } else {
        const model_tensor_t *W[3] = {&L->wq, &L->wk, &L->wv};
        float *O[3] = {wk->q, wk->k, wk->v};
        const gemm_epi_t e[3] = {{L->bq, false, NULL}, {L->bk, false, NULL}, {L->bv, false, NULL}};
        vis_linear_epi(pool, wk, 3, W, wk->xn, n, O, e, NULL);
    }
    if (wk->cs)
        rope_2d(v, pool, wk);
    const bool windowed = hp->proj == VIS_PROJ_QWEN25VL && hp->n_wa_pattern > 0 && (il + 1) % hp->n_wa_pattern != 0;
    attention(v, pool, wk, windowed);
    /* x += Wo att + bo, in the product's epilogue */
    const model_tensor_t *Wo = &L->wo;
    const gemm_epi_t eo = {L->bo, true, NULL};
    vis_linear_epi(pool, wk, 1, &Wo, wk->att, n, &wk->x, &eo, wk->xn);
    vis_norm_rows(v, pool, wk->x, L->ln2_w, L->ln2_b, n, E, wk->xn);
    const model_tensor_t *Wd = &L->down;
    const gemm_epi_t ed = {L->b_down, true, NULL};
    if (L->gate.data) {
        const model_tensor_t *W[2] = {&L->up, &L->gate};
        float *O[2] = {wk->ff, wk->ff2};
        const gemm_epi_t e[2] = {{L->b_up, false, NULL}, {L->b_gate, false, NULL}};
        vis_linear_epi(pool, wk, 2, W, wk->xn, n, O, e, NULL);
        act_ctx_t c = {hp->act, wk->ff2, wk->ff2, wk->ff, F};
        par_rows(pool, n, act_rows_par, &c);
        vis_linear_epi(pool, wk, 1, &Wd, wk->ff2, n, &wk->x, &ed, wk->xn);
    } else {
        /* the activation in the up product's epilogue */
        const model_tensor_t *Wu = &L->up;
        const gemm_epi_t eu = {L->b_up, false,
                               hp->act == VIS_ACT_GELU ? gelu_post : hp->act == VIS_ACT_SILU ? silu_post
                                                                                              : gelu_quick_post};
        vis_linear_epi(pool, wk, 1, &Wu, wk->xn, n, &wk->ff, &eu, NULL);
        vis_linear_epi(pool, wk, 1, &Wd, wk->ff, n, &wk->x, &ed, wk->xn);
    }
}
