/* vis_vit.c - the vision transformer's layers (see vision.h, vis_internal.h).
 *
 * One pre-norm block per layer: x += Wo attn(norm1(x)); x += FFN(norm2(x)).
 * Attention is full (every patch sees every patch) or, for Qwen2.5-VL's
 * windowed layers, restricted to the patches of the same window; q and k
 * get the 2-D rope of the Qwen encoders (rows then columns, each section
 * restarting its frequencies, NEOX pairs over the whole head). K and V stay
 * F32 (llama.cpp with flash attention off); the softmax is ggml's
 * (ops_softmax). Work is split over (head, block of queries) across the
 * pool; each value depends only on its own row.
 */
#include "engine/vision/vis_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels/ggml_exact.h"
#include "engine/model/linear.h"
#include "engine/model/ops.h"
#include "engine/model/rope.h"

void vis_norm_rows(const vis_model_t *v, float *x, const float *w, const float *b, int64_t n, int64_t width,
                   float *out)
{
    const float eps = v->hp.eps;
    for (int64_t r = 0; r < n; r++) {
        const float *xr = x + r * width;
        float *y = out + r * width;
        if (v->hp.rms_norm) {
            ops_rms_norm(xr, w, y, width, eps);
            if (b)
                for (int64_t i = 0; i < width; i++)
                    y[i] += b[i];
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
            if (w)
                t = t * w[i];
            if (b)
                t = t + b[i];
            y[i] = t;
        }
    }
}

void vis_linear(tpool_t *pool, vis_work_t *wk, const model_tensor_t *W, const float *bias, const float *x, int64_t n,
                float *out)
{
    lin_run(pool, wk->act, W, bias, x, n, wk->order, out);
}

/* ---- attention ---- */

typedef struct {
    const vis_model_t *v;
    vis_work_t *wk;
    bool windowed;
    int32_t n_items;      /* n_head * query blocks */
    float *scratch;       /* per thread: n floats of scores */
} attn_arg_t;

enum { Q_BLOCK = 8 };

static void attn_worker(void *p, int ith, int nth)
{
    attn_arg_t *a = p;
    const vis_hparams_t *hp = &a->v->hp;
    vis_work_t *wk = a->wk;
    const int32_t n = wk->n, d = hp->head_dim, E = hp->n_embd;
    const int32_t n_qb = (n + Q_BLOCK - 1) / Q_BLOCK;
    const float scale = 1.0f / sqrtf((float)d);
    float *s = a->scratch + (int64_t)ith * n;
    for (int32_t it = ith; it < a->n_items; it += nth) {
        const int32_t h = it / n_qb, qb = it % n_qb;
        for (int32_t i = qb * Q_BLOCK; i < n && i < (qb + 1) * Q_BLOCK; i++) {
            const float *q = wk->q + (int64_t)i * E + (int64_t)h * d;
            const int32_t wi = a->windowed ? wk->win[i] : 0;
            /* the keys this query sees, their scores compacted into s */
            int32_t m = 0;
            for (int32_t j = 0; j < n; j++) {
                if (a->windowed && wk->win[j] != wi)
                    continue;
                const float *k = wk->k + (int64_t)j * E + (int64_t)h * d;
                float acc = 0.0f;
                for (int32_t c = 0; c < d; c++)
                    acc += q[c] * k[c];
                s[m++] = acc * scale;
            }
            ops_softmax(s, m);
            float *o = wk->att + (int64_t)i * E + (int64_t)h * d;
            for (int32_t c = 0; c < d; c++)
                o[c] = 0.0f;
            m = 0;
            for (int32_t j = 0; j < n; j++) {
                if (a->windowed && wk->win[j] != wi)
                    continue;
                const float *vv = wk->v + (int64_t)j * E + (int64_t)h * d;
                const float pj = s[m++];
                for (int32_t c = 0; c < d; c++)
                    o[c] += pj * vv[c];
            }
        }
    }
}

static void attention(const vis_model_t *v, tpool_t *pool, vis_work_t *wk, bool windowed)
{
    const int32_t n_qb = (wk->n + Q_BLOCK - 1) / Q_BLOCK;
    attn_arg_t a = {v, wk, windowed, v->hp.n_head * n_qb, wk->scores};
    tpool_run(pool, attn_worker, &a);
}

/* ---- the 2-D rope of the Qwen encoders ---- */

static void rope_2d(const vis_model_t *v, vis_work_t *wk)
{
    const vis_hparams_t *hp = &v->hp;
    const int32_t d = hp->head_dim, E = hp->n_embd;
    /* ggml_rope_multi(VISION): n_dims = d / 2 with sections of d / 4,
     * pairs (i, i + d / 2) over the whole head, theta base 10000 */
    rope_t r = {.n_rot = d, .head_dim = d, .neox = true, .theta_scale = powf(10000.0f, -2.0f / (float)(d / 2)),
                .freq_scale = 1.0f, .ext_factor = 0.0f, .attn_factor = 1.0f};
    for (int32_t i = 0; i < wk->n; i++)
        rope_rotate(&r, wk->cs + (int64_t)i * d, wk->q + (int64_t)i * E, hp->n_head);
    for (int32_t i = 0; i < wk->n; i++)
        rope_rotate(&r, wk->cs + (int64_t)i * d, wk->k + (int64_t)i * E, hp->n_head);
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

void vis_layer(const vis_model_t *v, tpool_t *pool, vis_work_t *wk, int il)
{
    const vis_hparams_t *hp = &v->hp;
    const vis_layer_t *L = &v->layers[il];
    const int64_t n = wk->n, E = hp->n_embd, F = hp->n_ff;
    vis_norm_rows(v, wk->x, L->ln1_w, L->ln1_b, n, E, wk->xn);
    if (L->wqkv.data) {
        vis_linear(pool, wk, &L->wqkv, NULL, wk->xn, n, wk->ff);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < E; j++) {
                const float *row = wk->ff + i * 3 * E;
                wk->q[i * E + j] = row[j] + (L->bq ? L->bq[j] : 0.0f);
                wk->k[i * E + j] = row[E + j] + (L->bk ? L->bk[j] : 0.0f);
                wk->v[i * E + j] = row[2 * E + j] + (L->bv ? L->bv[j] : 0.0f);
            }
    } else {
        vis_linear(pool, wk, &L->wq, L->bq, wk->xn, n, wk->q);
        vis_linear(pool, wk, &L->wk, L->bk, wk->xn, n, wk->k);
        vis_linear(pool, wk, &L->wv, L->bv, wk->xn, n, wk->v);
    }
    if (wk->cs)
        rope_2d(v, wk);
    const bool windowed = hp->proj == VIS_PROJ_QWEN25VL && hp->n_wa_pattern > 0 && (il + 1) % hp->n_wa_pattern != 0;
    attention(v, pool, wk, windowed);
    vis_linear(pool, wk, &L->wo, L->bo, wk->att, n, wk->xn);
    for (int64_t j = 0; j < n * E; j++)
        wk->x[j] += wk->xn[j];
    vis_norm_rows(v, wk->x, L->ln2_w, L->ln2_b, n, E, wk->xn);
    vis_linear(pool, wk, &L->up, L->b_up, wk->xn, n, wk->ff);
    if (L->gate.data) {
        vis_linear(pool, wk, &L->gate, L->b_gate, wk->xn, n, wk->ff2);
        for (int64_t i = 0; i < n; i++)
            act_rows(hp->act, wk->ff2 + i * F, wk->ff2 + i * F, wk->ff + i * F, F);
        vis_linear(pool, wk, &L->down, L->b_down, wk->ff2, n, wk->xn);
    } else {
        for (int64_t i = 0; i < n; i++)
            act_rows(hp->act, wk->ff + i * F, wk->ff + i * F, NULL, F);
        vis_linear(pool, wk, &L->down, L->b_down, wk->ff, n, wk->xn);
    }
    for (int64_t j = 0; j < n * E; j++)
        wk->x[j] += wk->xn[j];
}
