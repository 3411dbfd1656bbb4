/* vis_enc.c - one encode as a resumable job: patch embedding, the ViT
 * layers (vis_vit.c) and the projector, one stage per vis_enc_step (see
 * vision.h).
 *
 * Patch order: raster for gemma3 and idefics3; Qwen's 2x2 merge groups
 * (merged row, merged column, then the 4 patches row-major), the order its
 * merger concatenates. Positions: learned (added after the patch bias;
 * Qwen3-VL's table bilinearly resized, corners aligned, to the patch grid)
 * or the 2-D rope of the Qwen encoders.
 */
#include "engine/vision/vis_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels/enc_attn.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/ggml_exact.h"
#include "engine/model/linear.h"
#include "engine/model/ops.h"

struct vis_enc {
    const vis_model_t *v;
    img_rgb_t px;
    int32_t n_tokens;
    int32_t stage, n_stages;   /* 0: patches, 1..n_layer: layers, n_layer + 1: projector */
    vis_work_t wk;
    float *out;                /* [n_tokens][n_out] */
};

static bool is_qwen(const vis_hparams_t *hp)
{
    return hp->proj == VIS_PROJ_QWEN25VL || hp->proj == VIS_PROJ_QWEN3VL;
}

/* patch index (raster py * gw + px) -> its row in the encoder's order */
static int32_t patch_row(const vis_hparams_t *hp, int32_t gw, int32_t px, int32_t py)
{
    if (!is_qwen(hp))
        return py * gw + px;
    return (((py / 2) * (gw / 2) + px / 2) * 2 + py % 2) * 2 + px % 2;
}

static void work_free(vis_work_t *w)
{
    free(w->x);
    free(w->xn);
    free(w->q);
    free(w->k);
    free(w->v);
    free(w->att);
    free(w->ff);
    free(w->ff2);
    free(w->cs);
    free(w->win);
    free(w->perm);
    free(w->seg);
    free(w->act);
    free(w->order);
    free(w->ds);
    free(w->xr);
    free(w->gemm);
    free(w->attn);
    free(w->cols);
    memset(w, 0, sizeof *w);
}

/* Every matrix of the encoder and its projector, in turn, to fn. */
static void each_matrix(const vis_model_t *v, void (*fn)(const model_tensor_t *t, void *ctx), void *ctx)
{
    const model_tensor_t *mm[] = {&v->patch[0], &v->patch[1], &v->mm_proj, &v->mm0, &v->mm2};
    for (size_t i = 0; i < sizeof mm / sizeof mm[0]; i++)
        if (mm[i]->data)
            fn(mm[i], ctx);
    for (int il = 0; il < v->hp.n_layer; il++) {
        const vis_layer_t *L = &v->layers[il];
        const model_tensor_t *ts[] = {&L->wq, &L->wk, &L->wv, &L->wqkv, &L->wo, &L->up, &L->gate, &L->down,
                                      &L->ds_fc1, &L->ds_fc2};
        for (size_t t = 0; t < sizeof ts / sizeof ts[0]; t++)
            if (ts[t]->data)
                fn(ts[t], ctx);
    }
}

typedef struct {
    int64_t n;        /* rows */
    size_t act_bytes; /* linear.h scratch for the types gemm.h does not take */
    int64_t k_max;    /* widest input of a gemm.h matrix */
} needs_t;

static void need_of(const model_tensor_t *t, void *ctx)
{
    needs_t *nd = ctx;
    if (!gemm_supports(t->type)) {
        const size_t b = lin_act_bytes(t, nd->n);
        nd->act_bytes = b > nd->act_bytes ? b : nd->act_bytes;
        return;
    }
    nd->k_max = t->n_in > nd->k_max ? t->n_in : nd->k_max;
}

/* Qwen2.5-VL's windows on a patch grid: gwin x gwin merged tokens from the
 * top left; windows per row of them for a grid g patches wide. */
static int32_t window_cols(const vis_hparams_t *hp, int32_t g)
{
    const int32_t gwin = hp->window_px / hp->patch_size / 2;
    return (g / 2 + gwin - 1) / gwin;
}

static int32_t window_of(const vis_hparams_t *hp, int32_t gw, int32_t px, int32_t py)
{
    const int32_t gwin = hp->window_px / hp->patch_size / 2;
    return (py / 2 / gwin) * window_cols(hp, gw) + px / 2 / gwin;
}

/* The gemm.h and enc_attn.h scratch for nth threads. */
static bool work_threads(const vis_model_t *v, vis_work_t *w, int nth)
{
    if (nth <= w->n_threads)
        return true;
    needs_t nd = {.n = w->n};
    each_matrix(v, need_of, &nd);
    void *g = malloc(gemm_scratch_size(nth, nd.k_max));
    void *a = malloc(enc_attn_scratch_size(w->n, w->n_seg > 1 ? w->n_seg : 1, v->hp.n_head, v->hp.head_dim, nth));
    if (!g || !a) {
        free(g);
        free(a);
        return false;
    }
    free(w->gemm);
    free(w->attn);
    w->gemm = g;
    w->attn = a;
    w->n_threads = nth;
    return true;
}

static lf_code_t work_alloc(const vis_model_t *v, vis_work_t *w, int32_t gw, int32_t gh, int n_threads, lf_err_t *err)
{
    const vis_hparams_t *hp = &v->hp;
    const int64_t n = (int64_t)gw * gh, E = hp->n_embd, F = hp->n_ff;
    const int64_t wide = 4 * E > 3 * E ? 4 * E : 3 * E;
    const int64_t ffw = (F > wide ? F : wide) > hp->proj_dim ? (F > wide ? F : wide) : hp->proj_dim;
    memset(w, 0, sizeof *w);
    w->n = (int32_t)n;
    w->gw = gw;
    w->gh = gh;
    w->x = malloc((size_t)(n * E) * sizeof(float));
    w->xn = malloc((size_t)(n * wide) * sizeof(float));
    w->q = malloc((size_t)(n * E) * sizeof(float));
    w->k = malloc((size_t)(n * E) * sizeof(float));
    w->v = malloc((size_t)(n * E) * sizeof(float));
    w->att = malloc((size_t)(n * E) * sizeof(float));
    w->ff = malloc((size_t)(n * ffw) * sizeof(float));
    w->ff2 = malloc((size_t)(n * ffw) * sizeof(float));
    w->order = malloc((size_t)n);
    w->cols = malloc((size_t)(n * 3 * hp->patch_size * hp->patch_size) * sizeof(float));
    needs_t nd = {.n = n};
    each_matrix(v, need_of, &nd);
    bool ok = w->x && w->xn && w->q && w->k && w->v && w->att && w->ff && w->ff2 && w->order && w->cols;
    if (ok && nd.act_bytes)
        ok = (w->act = malloc(nd.act_bytes)) != NULL;
    if (ok && nd.k_max)
        ok = (w->xr = malloc(gemm_act_floats(n, nd.k_max) * sizeof(float))) != NULL;
    if (ok && is_qwen(hp)) {
        ok = (w->cs = malloc((size_t)(n * hp->head_dim) * sizeof(float))) != NULL;
        if (ok && hp->proj == VIS_PROJ_QWEN25VL) {
            /* seg: the windows' first rows, then their fill cursors */
            w->n_seg = window_cols(hp, gw) * window_cols(hp, gh);
            ok = (w->win = malloc((size_t)n * sizeof *w->win)) && (w->perm = malloc((size_t)n * sizeof *w->perm)) &&
                 (w->seg = malloc((size_t)(2 * w->n_seg + 1) * sizeof *w->seg));
        }
        if (ok && hp->n_deepstack)
            ok = (w->ds = malloc((size_t)(n / 4 * hp->n_deepstack * hp->proj_dim) * sizeof(float))) != NULL;
    }
    if (ok)
        ok = work_threads(v, w, n_threads);
    if (!ok) {
        work_free(w);
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory encoding a %dx%d patch image", gw, gh);
    }
    memset(w->order, GX_ORDER_TINY, (size_t)n);
    return LF_OK;
}

/* ---- patch embedding and positions ---- */

static void im2col_row(const vis_hparams_t *hp, const img_rgb_t *px, int32_t ppx, int32_t ppy, float *row)
{
    const int32_t P = hp->patch_size;
    float *r = row;
    for (int c = 0; c < 3; c++)
        for (int32_t ky = 0; ky < P; ky++) {
            const uint8_t *src = px->rgb + ((size_t)(ppy * P + ky) * px->w + (size_t)ppx * P) * 3 + c;
            for (int32_t kx = 0; kx < P; kx++)
                *r++ = ((float)src[3 * kx] / 255.0f - hp->mean[c]) / hp->std[c];
        }
}

/* Qwen3-VL's position table resized to gw x gh (ggml_interpolate,
 * bilinear with aligned corners) at patch (px, py), added to out. */
static void add_resized_pos(const vis_model_t *v, int32_t gw, int32_t gh, int32_t px, int32_t py, float *out)
{
    const int32_t side = v->hp.n_pos_side, E = v->hp.n_embd;
    if (gw == side && gh == side) {
        const float *p = v->pos_embd + (int64_t)(py * side + px) * E;
        for (int32_t e = 0; e < E; e++)
            out[e] += p[e];
        return;
    }
    const float sf0 = gw > 1 && side > 1 ? (float)(gw - 1) / (float)(side - 1) : (float)gw / (float)side;
    const float sf1 = gh > 1 && side > 1 ? (float)(gh - 1) / (float)(side - 1) : (float)gh / (float)side;
    const float y = (float)py / sf1, x = (float)px / sf0;
    int32_t y0 = (int32_t)floorf(y), y1 = y0 + 1, x0 = (int32_t)floorf(x), x1 = x0 + 1;
    y0 = y0 < 0 ? 0 : y0 > side - 1 ? side - 1 : y0;
    y1 = y1 < 0 ? 0 : y1 > side - 1 ? side - 1 : y1;
    x0 = x0 < 0 ? 0 : x0 > side - 1 ? side - 1 : x0;
    x1 = x1 < 0 ? 0 : x1 > side - 1 ? side - 1 : x1;
    float dy = y - (float)y0, dx = x - (float)x0;
    dy = dy < 0.0f ? 0.0f : dy > 1.0f ? 1.0f : dy;
    dx = dx < 0.0f ? 0.0f : dx > 1.0f ? 1.0f : dx;
    const float *a = v->pos_embd + (int64_t)(y0 * side + x0) * E, *b = v->pos_embd + (int64_t)(y0 * side + x1) * E;
    const float *c = v->pos_embd + (int64_t)(y1 * side + x0) * E, *d = v->pos_embd + (int64_t)(y1 * side + x1) * E;
    for (int32_t e = 0; e < E; e++)
        out[e] += a[e] * (1 - dx) * (1 - dy) + b[e] * dx * (1 - dy) + c[e] * (1 - dx) * dy + d[e] * dx * dy;
}

/* Qwen2.5-VL: the rows (and their rope tables) put in window order, each
 * window a run of rows (wk->seg), merge groups whole and in order within a
 * window (llama.cpp's window_idx order); wk->perm is the way back
 * (vis_unpermute). A stable counting sort on the window ids. */
static void window_order(const vis_model_t *v, vis_work_t *wk)
{
    const vis_hparams_t *hp = &v->hp;
    const int32_t gw = wk->gw, gh = wk->gh, n = wk->n, E = hp->n_embd, d = hp->head_dim, ns = wk->n_seg;
    int32_t *seg = wk->seg, *fill = wk->seg + ns + 1;
    for (int32_t py = 0; py < gh; py++)
        for (int32_t ppx = 0; ppx < gw; ppx++)
            wk->win[patch_row(hp, gw, ppx, py)] = window_of(hp, gw, ppx, py);
    memset(seg, 0, (size_t)(ns + 1) * sizeof *seg);
    for (int32_t i = 0; i < n; i++)
        seg[wk->win[i] + 1]++;
    for (int32_t s = 0; s < ns; s++)
        seg[s + 1] += seg[s];
    memcpy(fill, seg, (size_t)ns * sizeof *fill);
    for (int32_t i = 0; i < n; i++)
        wk->perm[fill[wk->win[i]]++] = i;
    float *xt = wk->xn, *ct = wk->att;
    for (int32_t i = 0; i < n; i++) {
        memcpy(xt + (int64_t)i * E, wk->x + (int64_t)wk->perm[i] * E, (size_t)E * sizeof(float));
        memcpy(ct + (int64_t)i * d, wk->cs + (int64_t)wk->perm[i] * d, (size_t)d * sizeof(float));
    }
    memcpy(wk->x, xt, (size_t)n * (size_t)E * sizeof(float));
    memcpy(wk->cs, ct, (size_t)n * (size_t)d * sizeof(float));
}

void vis_patch_embed(const vis_model_t *v, tpool_t *pool, vis_work_t *wk, const img_rgb_t *px)
{
    const vis_hparams_t *hp = &v->hp;
    const int32_t gw = wk->gw, gh = wk->gh, n = wk->n, E = hp->n_embd;
    const int64_t K = 3LL * hp->patch_size * hp->patch_size;
    float *cols = wk->cols, *tmp = wk->att;
    for (int32_t py = 0; py < gh; py++)
        for (int32_t ppx = 0; ppx < gw; ppx++)
            im2col_row(hp, px, ppx, py, cols + (int64_t)patch_row(hp, gw, ppx, py) * K);
    vis_linear(pool, wk, &v->patch[0], NULL, cols, n, wk->x);
    if (v->patch[1].data) {
        /* Qwen's Conv3D over two copies of the image: both halves, summed */
        vis_linear(pool, wk, &v->patch[1], NULL, cols, n, tmp);
        for (int64_t j = 0; j < (int64_t)n * E; j++)
            wk->x[j] += tmp[j];
    }
    free(wk->cols);
    wk->cols = NULL;
    if (v->patch_b)
        for (int32_t i = 0; i < n; i++)
            for (int32_t e = 0; e < E; e++)
                wk->x[(int64_t)i * E + e] += v->patch_b[e];
    if (v->pos_embd && hp->proj == VIS_PROJ_QWEN3VL) {
        for (int32_t py = 0; py < gh; py++)
            for (int32_t ppx = 0; ppx < gw; ppx++)
                add_resized_pos(v, gw, gh, ppx, py, wk->x + (int64_t)patch_row(hp, gw, ppx, py) * E);
    } else if (v->pos_embd) {
        for (int64_t j = 0; j < (int64_t)n * E; j++)
            wk->x[j] += v->pos_embd[j];
    }
    if (is_qwen(hp)) {
        int32_t *py_ = malloc((size_t)n * sizeof *py_), *px_ = malloc((size_t)n * sizeof *px_);
        if (py_ && px_) {
            for (int32_t py = 0; py < gh; py++)
                for (int32_t ppx = 0; ppx < gw; ppx++) {
                    const int32_t r = patch_row(hp, gw, ppx, py);
                    py_[r] = py;
                    px_[r] = ppx;
                }
            vis_rope_tables(v, wk, py_, px_);
        }
        free(py_);
        free(px_);
        if (wk->win)
            window_order(v, wk);
    }
}

void vis_unpermute(vis_work_t *wk, int64_t width)
{
    if (!wk->perm)
        return;
    for (int32_t i = 0; i < wk->n; i++)
        memcpy(wk->xn + (int64_t)wk->perm[i] * width, wk->x + (int64_t)i * width, (size_t)width * sizeof(float));
    memcpy(wk->x, wk->xn, (size_t)wk->n * (size_t)width * sizeof(float));
    free(wk->perm);
    wk->perm = NULL;
}

/* ---- projectors ---- */

/* 4E-wide merge groups: rows of 4 consecutive patches (Qwen's order). */
static void merger(const vis_model_t *v, tpool_t *pool, vis_work_t *wk, const float *in,
                   const model_tensor_t *fc1, const float *b1, const model_tensor_t *fc2, const float *b2, float *out,
                   int64_t out_stride)
{
    const vis_hparams_t *hp = &v->hp;
    const int64_t n = wk->n, E = hp->n_embd, M = n / 4, T = hp->proj_dim;
    vis_linear(pool, wk, fc1, b1, in, M, wk->ff);
    for (int64_t i = 0; i < M; i++)
        ops_gelu_row(wk->ff + i * 4 * E, wk->ff + i * 4 * E, 4 * E);
    vis_linear(pool, wk, fc2, b2, wk->ff, M, wk->ff2);
    for (int64_t i = 0; i < M; i++)
        memcpy(out + i * out_stride, wk->ff2 + i * T, (size_t)T * sizeof(float));
}

void vis_deepstack(const vis_model_t *v, tpool_t *pool, vis_work_t *wk, int il, int ds_index)
{
    const vis_layer_t *L = &v->layers[il];
    const int64_t T = v->hp.proj_dim, D = v->hp.n_deepstack;
    /* the deepstack merger normalises each 4-patch group (4E wide) */
    vis_norm_rows(v, pool, wk->x, L->ds_norm_w, L->ds_norm_b, wk->n / 4, 4 * v->hp.n_embd, wk->xn);
    merger(v, pool, wk, wk->xn, &L->ds_fc1, L->ds_fc1_b, &L->ds_fc2, L->ds_fc2_b, wk->ds + ds_index * T, D * T);
}

void vis_project(const vis_model_t *v, tpool_t *pool, vis_work_t *wk, float *out)
{
    const vis_hparams_t *hp = &v->hp;
    const int64_t E = hp->n_embd, T = hp->proj_dim, n = wk->n;
    vis_unpermute(wk, E);
    if (v->post_ln_w)
        vis_norm_rows(v, pool, wk->x, v->post_ln_w, v->post_ln_b, n, E, wk->x);
    switch (hp->proj) {
    case VIS_PROJ_GEMMA3: {
        const int32_t k = hp->n_merge, ow = wk->gw / k, oh = wk->gh / k;
        const float ka = (float)(k * k);
        for (int32_t oy = 0; oy < oh; oy++)
            for (int32_t ox = 0; ox < ow; ox++) {
                float *dst = wk->xn + ((int64_t)oy * ow + ox) * E;
                for (int64_t e = 0; e < E; e++) {
                    float s = 0.0f;
                    for (int32_t ky = 0; ky < k; ky++)
                        for (int32_t kx = 0; kx < k; kx++)
                            s += wk->x[((int64_t)(oy * k + ky) * wk->gw + ox * k + kx) * E + e];
                    dst[e] = s / ka;
                }
            }
        const int64_t m = (int64_t)ow * oh;
        for (int64_t i = 0; i < m; i++)
            ops_rms_norm(wk->xn + i * E, v->mm_soft_norm, wk->xn + i * E, E, hp->eps);
        vis_linear(pool, wk, &v->mm_proj, NULL, wk->xn, m, out);
        break;
    }
    case VIS_PROJ_IDEFICS3: {
        const int32_t s = hp->n_merge, ow = wk->gw / s, oh = wk->gh / s;
        const int64_t W = E * s * s;
        for (int32_t oy = 0; oy < oh; oy++)
            for (int32_t ox = 0; ox < ow; ox++) {
                float *dst = wk->ff + ((int64_t)oy * ow + ox) * W;
                for (int32_t dy = 0; dy < s; dy++)
                    for (int32_t dx = 0; dx < s; dx++)
                        memcpy(dst + ((int64_t)dy * s + dx) * E,
                               wk->x + ((int64_t)(oy * s + dy) * wk->gw + ox * s + dx) * E, (size_t)E * sizeof(float));
            }
        vis_linear(pool, wk, &v->mm_proj, NULL, wk->ff, (int64_t)ow * oh, out);
        break;
    }
    case VIS_PROJ_QWEN25VL:
    case VIS_PROJ_QWEN3VL: {
        const int64_t D = hp->n_deepstack, M = n / 4, stride = T * (1 + D);
        /* post_ln (above) normalised each patch; the merger takes groups of 4 */
        merger(v, pool, wk, wk->x, &v->mm0, v->mm0_b, &v->mm2, v->mm2_b, out, stride);
        for (int64_t i = 0; D && i < M; i++)
            memcpy(out + i * stride + T, wk->ds + i * D * T, (size_t)(D * T) * sizeof(float));
        break;
    }
    }
}

/* ---- the job ---- */

vis_enc_t *vis_enc_begin(const vis_model_t *v, const vis_array_t *a, lf_err_t *err)
{
    const vis_hparams_t *hp = &v->hp;
    const int32_t P = hp->patch_size;
    if (a->px.w <= 0 || a->px.h <= 0 || a->px.w % P || a->px.h % P) {
        lf_err_set(err, LF_ERR_INVALID, "a %dx%d pixel array is not a whole number of %d-pixel patches", a->px.w,
                   a->px.h, P);
        return NULL;
    }
    const int32_t gw = a->px.w / P, gh = a->px.h / P;
    const bool qwen = is_qwen(hp);
    if ((qwen && (gw % 2 || gh % 2)) || (!qwen && (gw % hp->n_merge || gh % hp->n_merge)) ||
        (hp->proj == VIS_PROJ_GEMMA3 && (gw != gh || gw * gh != v->n_pos)) ||
        (hp->proj == VIS_PROJ_IDEFICS3 && gw * gh != v->n_pos) || (int64_t)gw * gh > (1 << 20)) {
        lf_err_set(err, LF_ERR_INVALID, "a %dx%d patch grid does not fit the %s encoder", gw, gh, hp->proj_name);
        return NULL;
    }
    vis_enc_t *e = calloc(1, sizeof *e);
    if (!e) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    e->v = v;
    e->n_tokens = qwen ? gw * gh / 4 : vis_tokens_for_grid(v, gw, gh);
    e->n_stages = hp->n_layer + 2;
    lf_code_t rc = img_rgb_alloc(&e->px, a->px.w, a->px.h, NULL, err);
    if (rc == LF_OK) {
        memcpy(e->px.rgb, a->px.rgb, (size_t)a->px.w * (size_t)a->px.h * 3);
        rc = work_alloc(v, &e->wk, gw, gh, 1, err);
    }
    if (rc == LF_OK && !(e->out = malloc((size_t)e->n_tokens * (size_t)hp->n_out * sizeof(float))))
        rc = lf_err_set(err, LF_ERR_NOMEM, "out of memory for %d image rows", e->n_tokens);
    if (rc != LF_OK) {
        vis_enc_free(e);
        return NULL;
    }
    return e;
}

bool vis_enc_step(vis_enc_t *e, tpool_t *pool)
{
    const vis_model_t *v = e->v;
    if (e->stage >= e->n_stages)
        return true;
    /* the scratch of the products and attention is per thread */
    if (!work_threads(v, &e->wk, tpool_size(pool)))
        pool = NULL; /* single-threaded with the scratch we have */
    if (e->stage == 0) {
        vis_patch_embed(v, pool, &e->wk, &e->px);
        img_rgb_free(&e->px);
    } else if (e->stage <= v->hp.n_layer) {
        const int il = e->stage - 1;
        vis_layer(v, pool, &e->wk, il);
        if (v->hp.ds_layer[il]) {
            int k = 0;
            for (int j = 0; j < il; j++)
                k += v->hp.ds_layer[j];
            vis_deepstack(v, pool, &e->wk, il, k);
        }
    } else {
        vis_project(v, pool, &e->wk, e->out);
        work_free(&e->wk);
    }
    e->stage++;
    return e->stage >= e->n_stages;
}

int32_t vis_enc_stages(const vis_enc_t *e) { return e->n_stages; }

int32_t vis_enc_done(const vis_enc_t *e) { return e->stage; }

float *vis_enc_take(vis_enc_t *e, int32_t *n_tokens)
{
    if (e->stage < e->n_stages || !e->out)
        return NULL;
    float *o = e->out;
    e->out = NULL;
    if (n_tokens)
        *n_tokens = e->n_tokens;
    return o;
}

void vis_enc_free(vis_enc_t *e)
{
    if (!e)
        return;
    img_rgb_free(&e->px);
    work_free(&e->wk);
    free(e->out);
    free(e);
}

lf_code_t vis_encode(const vis_model_t *v, tpool_t *pool, const vis_array_t *a, float **out, int32_t *n_tokens,
                     lf_err_t *err)
{
    *out = NULL;
    vis_enc_t *e = vis_enc_begin(v, a, err);
    if (!e)
        return err ? err->code : LF_ERR_INVALID;
    while (!vis_enc_step(e, pool))
        ;
    *out = vis_enc_take(e, n_tokens);
    vis_enc_free(e);
    return LF_OK;
}
