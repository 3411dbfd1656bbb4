/* deltanet.c - Gated DeltaNet layers (see deltanet.h for the maths).
 *
 * ggml operations reproduced (ggml-cpu ops.cpp, vec.h, unary-ops.cpp):
 *  - ggml_ssm_conv (ops_ssm_conv_row);
 *  - ggml_silu (ggml_vec_silu_f32: gx_silu_row over each row), ggml_sigmoid
 *    and ggml_softplus (scalar expf/logf; softplus is x above 20);
 *  - rms_norm (sum of x*x in double, scale = 1/sqrtf(mean + eps)) then
 *    ggml_scale / ggml_mul, each rounded on its own;
 *  - ggml_gated_delta_net (one chunk per (sequence, head)): the state times
 *    expf(g) (ggml_vec_scale_f32: products), each delta from
 *    ggml_vec_dot_f32 (gx_dot_f32_vec), the rank-1 update with
 *    ggml_vec_mad_f32 (fused multiply-adds), the output from
 *    ggml_vec_dot_f32 times 1/sqrtf(d_state). Element-wise steps are the
 *    same bits at any vector width, so one AVX2 version (and a portable
 *    one with fmaf) serves every level.
 */
#include "engine/model/deltanet.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels/ggml_exact.h"
#include "engine/model/linear.h"
#include "engine/model/ops.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define DN_X86 1
#define DN_AVX2 __attribute__((target("avx2,fma")))
#endif

struct dn {
    int32_t max_batch;
    int32_t S, NG, DR, DI, CH, K; /* d_state, q/k heads, v heads, d_inner, conv channels, taps */
    float eps;
    float *qkv;   /* [B][CH] conv input rows */
    float *cv;    /* [B][CH] conv output (SiLU), q/k normalised in place */
    float *z;     /* [B][DI] */
    float *beta;  /* [B][DR] */
    float *g;     /* [B][DR] */
    float *o;     /* [B][DI] */
    float *cin;   /* [(K - 1) + B][CH] one sequence's conv input with its state */
    float **wt;   /* [n_layer] the conv kernel tap-major [K][CH] (GDN layers) */
    int32_t n_layer;
    void *act;
};

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

dn_t *dn_create(const model_t *m, int32_t max_batch, lf_err_t *err)
{
    dn_t *d = calloc(1, sizeof *d);
    if (!d)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory"), NULL;
    const model_hparams_t *hp = model_hparams(m);
    const model_weights_t *w = model_weights(m);
    bool any = false;
    for (int l = 0; l < hp->n_layer; l++)
        any |= w->layers[l].kind == MODEL_LAYER_GDN;
    if (!any)
        return d;
    d->max_batch = max_batch;
    d->S = hp->ssm_d_state;
    d->NG = hp->ssm_n_group;
    d->DR = hp->ssm_dt_rank;
    d->DI = hp->ssm_d_inner;
    d->CH = 2 * d->NG * d->S + d->DI;
    d->K = hp->ssm_d_conv;
    d->eps = hp->rms_eps;
    const size_t B = (size_t)max_batch;
    d->qkv = malloc(B * (size_t)d->CH * sizeof(float));
    d->cv = malloc(B * (size_t)d->CH * sizeof(float));
    d->z = malloc(B * (size_t)d->DI * sizeof(float));
    d->beta = malloc(B * (size_t)d->DR * sizeof(float));
    d->g = malloc(B * (size_t)d->DR * sizeof(float));
    d->o = malloc(B * (size_t)d->DI * sizeof(float));
    d->cin = malloc((B + (size_t)d->K) * (size_t)d->CH * sizeof(float));
    size_t act = 1;
    for (int l = 0; l < hp->n_layer; l++) {
        const model_layer_t *L = &w->layers[l];
        if (L->kind != MODEL_LAYER_GDN)
            continue;
        const model_tensor_t *ts[] = {&L->wqkv, &L->ssm_z, &L->ssm_alpha, &L->ssm_beta, &L->ssm_out};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            act = max_size(act, lin_act_bytes(ts[i], max_batch));
    }
    d->act = malloc(act);
    d->n_layer = hp->n_layer;
    d->wt = calloc((size_t)hp->n_layer, sizeof *d->wt);
    for (int l = 0; d->wt && l < hp->n_layer; l++)
        if (w->layers[l].kind == MODEL_LAYER_GDN && (d->wt[l] = malloc((size_t)d->K * (size_t)d->CH * sizeof(float))))
            ops_conv_transpose(w->layers[l].ssm_conv, d->CH, d->K, d->wt[l]);
    bool wt_ok = d->wt != NULL;
    for (int l = 0; wt_ok && l < hp->n_layer; l++)
        wt_ok = w->layers[l].kind != MODEL_LAYER_GDN || d->wt[l];
    if (!d->qkv || !d->cv || !d->z || !d->beta || !d->g || !d->o || !d->cin || !d->act || !wt_ok) {
        dn_free(d);
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory for the Gated DeltaNet buffers"), NULL;
    }
    return d;
}

void dn_free(dn_t *d)
{
    if (!d)
        return;
    free(d->qkv);
    free(d->cv);
    free(d->z);
    free(d->beta);
    free(d->g);
    free(d->o);
    free(d->cin);
    free(d->act);
    for (int l = 0; d->wt && l < d->n_layer; l++)
        free(d->wt[l]);
    free(d->wt);
    free(d);
}

/* ---- one token of one head ---- */

/* y[i] *= v (ggml_vec_scale_f32) */
static void vscale_c(float *y, float v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] *= v;
}

/* y[i] = fma(x[i], v, y[i]) (ggml_vec_mad_f32) */
static void vmad_c(float *y, const float *x, float v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = fmaf(x[i], v, y[i]);
}

/* ggml's kernel makes two passes over the state per token (every row
 * scaled and its delta, then every rank-1 update and output). Each row's
 * values depend only on that row, so one pass row by row gives the same
 * bits and reads the state once. */
static void dn_step_c(float *M, int32_t S, const float *q, const float *k, const float *v, float beta, float eg,
                      float scale, float *o)
{
    for (int32_t j = 0; j < S; j++) {
        float *mj = M + (int64_t)j * S;
        vscale_c(mj, eg, S);
        const float delta = (v[j] - gx_dot_f32_vec(mj, k, S)) * beta;
        vmad_c(mj, k, delta, S);
        o[j] = gx_dot_f32_vec(mj, q, S) * scale;
    }
}

#ifdef DN_X86
/* The n % 64 leftovers of ggml_vec_dot_f32 (ggml_exact.c left_f32). */
static inline float dn_left(const float *x, const float *y, int64_t n, float sumf)
{
    const int64_t nv = n & ~(int64_t)7;
    int64_t i = 0;
    for (; i < nv; i++) {
        const float p = x[i] * y[i];
        sumf = sumf + p;
    }
    for (; i < n; i++)
        sumf = fmaf(x[i], y[i], sumf);
    return sumf;
}

/* The eight 8-lane accumulators of gx_dot_f32_vec's AVX2 version (ggml's
 * four 16-lane ones as halves), reduced in its order. */
DN_AVX2 static inline float dn_reduce8(__m256 s[8])
{
    for (int h = 0; h < 2; h++) {
        s[h] = _mm256_add_ps(s[h], s[4 + h]);
        s[2 + h] = _mm256_add_ps(s[2 + h], s[6 + h]);
    }
    for (int h = 0; h < 2; h++)
        s[h] = _mm256_add_ps(s[h], s[2 + h]);
    const __m256 t3 = _mm256_add_ps(s[1], s[0]);
    const __m128 t6 = _mm_add_ps(_mm256_extractf128_ps(t3, 1), _mm256_castps256_ps128(t3));
    const __m128 t8 = _mm_add_ps(t6, _mm_shuffle_ps(t6, t6, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm_cvtss_f32(t8) + _mm_cvtss_f32(_mm_shuffle_ps(t8, t8, _MM_SHUFFLE(1, 1, 1, 1)));
}

/* dn_step_c with each row's scale + dot and update + dot fused into one
 * sweep of the row (the dot products in gx_dot_f32_vec's order). */
DN_AVX2 static void dn_step_avx2(float *M, int32_t S, const float *q, const float *k, const float *v, float beta,
                                 float eg, float scale, float *o)
{
    const int64_t n = S, np = n & ~(int64_t)63, nv = n & ~(int64_t)7;
    const __m256 veg = _mm256_set1_ps(eg);
    for (int32_t j = 0; j < S; j++) {
        float *mj = M + (int64_t)j * S;
        __m256 s[8];
        for (int u = 0; u < 8; u++)
            s[u] = _mm256_setzero_ps();
        for (int64_t i = 0; i < np; i += 64)
            for (int u = 0; u < 8; u++) {
                const __m256 m = _mm256_mul_ps(_mm256_loadu_ps(mj + i + 8 * u), veg);
                _mm256_storeu_ps(mj + i + 8 * u, m);
                s[u] = _mm256_fmadd_ps(m, _mm256_loadu_ps(k + i + 8 * u), s[u]);
            }
        for (int64_t i = np; i < nv; i += 8)
            _mm256_storeu_ps(mj + i, _mm256_mul_ps(_mm256_loadu_ps(mj + i), veg));
        for (int64_t i = nv; i < n; i++)
            mj[i] *= eg;
        const float delta = (v[j] - dn_left(mj + np, k + np, n - np, dn_reduce8(s))) * beta;
        const __m256 vd = _mm256_set1_ps(delta);
        for (int u = 0; u < 8; u++)
            s[u] = _mm256_setzero_ps();
        for (int64_t i = 0; i < np; i += 64)
            for (int u = 0; u < 8; u++) {
                const __m256 m = _mm256_fmadd_ps(_mm256_loadu_ps(k + i + 8 * u), vd, _mm256_loadu_ps(mj + i + 8 * u));
                _mm256_storeu_ps(mj + i + 8 * u, m);
                s[u] = _mm256_fmadd_ps(m, _mm256_loadu_ps(q + i + 8 * u), s[u]);
            }
        for (int64_t i = np; i < nv; i += 8)
            _mm256_storeu_ps(mj + i, _mm256_fmadd_ps(_mm256_loadu_ps(k + i), vd, _mm256_loadu_ps(mj + i)));
        for (int64_t i = nv; i < n; i++)
            mj[i] = fmaf(k[i], delta, mj[i]);
        o[j] = dn_left(mj + np, q + np, n - np, dn_reduce8(s)) * scale;
    }
}
#endif

void dn_state_step(float *M, int32_t S, const float *q, const float *k, const float *v, float beta, float g, float *o)
{
    const float eg = expf(g), scale = 1.0f / sqrtf((float)S);
#ifdef DN_X86
    if (gx_level() >= GX_LEVEL_AVX2) {
        dn_step_avx2(M, S, q, k, v, beta, eg, scale, o);
        return;
    }
#endif
    dn_step_c(M, S, q, k, v, beta, eg, scale, o);
}

/* ---- the recurrence ---- */

typedef struct {
    const dn_t *d;
    const model_layer_t *L;
    const rs_group_t *groups;
    int32_t n_groups;
    rs_t *rs;
    int32_t layer;
    int64_t conv_floats; /* the conv part before the delta states */
} dn_job_t;

/* One (sequence, v head): its tokens in order (ggml_compute_forward_gated_
 * delta_net_one_chunk with the state transposed: M[j][i] = S[i][j]), each
 * token's output then gated: rms_norm(o) * ssm_norm * silu(z) (per head,
 * build_norm_gated). */
static void dn_head(const dn_job_t *job, const rs_group_t *gr, int32_t h)
{
    const dn_t *d = job->d;
    const int32_t S = d->S, kh = h % d->NG;
    float *M = rs_state(job->rs, gr->seq, job->layer) + job->conv_floats + (int64_t)h * S * S;
    float zs[1024]; /* S <= 1024 (model_hparams.c) */
    int32_t snap = 0;
    for (int32_t t = 0; t < gr->n; t++) {
        const int32_t row = gr->rows[t];
        const float *cv = d->cv + (int64_t)row * d->CH;
        const float *q = cv + (int64_t)kh * S, *k = cv + (int64_t)(d->NG + kh) * S;
        const float *v = cv + (int64_t)(2 * d->NG + h) * S;
        float *o = d->o + (int64_t)row * d->DI + (int64_t)h * S;
        dn_state_step(M, S, q, k, v, d->beta[(int64_t)row * d->DR + h], d->g[(int64_t)row * d->DR + h], o);
        for (; snap < gr->n_snap && gr->snap_end[snap] == t + 1; snap++) {
            float *dst = rs_snap_state(job->rs, gr->snap_slot[snap], job->layer);
            if (dst)
                memcpy(dst + job->conv_floats + (int64_t)h * S * S, M, (size_t)S * (size_t)S * sizeof(float));
        }
        ops_rms_norm(o, job->L->ssm_norm, o, S, d->eps);
        gx_silu_row(zs, d->z + (int64_t)row * d->DI + (int64_t)h * S, S);
        for (int32_t i = 0; i < S; i++)
            o[i] = o[i] * zs[i];
    }
}

static void dn_worker(void *arg, int ith, int nth)
{
    const dn_job_t *job = arg;
    const int32_t DR = job->d->DR, total = job->n_groups * DR;
    for (int32_t i = ith; i < total; i += nth)
        dn_head(job, &job->groups[i / DR], i % DR);
}

/* ---- the layer ---- */

/* x = rms_norm(x, eps) * (1/sqrt(n)) computed as ggml_rms_norm then
 * ggml_scale (build_gdn_l2_norm). */
static void l2_norm(float *x, int64_t n, float eps, float post)
{
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / (double)n);
    const float sc = 1.0f / sqrtf(mean + eps);
    for (int64_t i = 0; i < n; i++)
        x[i] = (x[i] * sc) * post;
}

/* Rows [lo, hi) of one sequence's conv input (dn_conv): per token its
 * gates, beta = sigmoid(b) and g = softplus(a + dt) * ssm_a, the causal
 * conv of its qkv row with SiLU, q and k L2-normalised per head. */
typedef struct {
    const dn_t *d;
    const model_layer_t *L;
    const float *wt;
    const rs_group_t *gr;
} dn_conv_job_t;

static void dn_conv_rows(void *arg, int64_t lo, int64_t hi)
{
    const dn_conv_job_t *j = arg;
    const dn_t *d = j->d;
    const int32_t S = d->S, DR = d->DR, CH = d->CH;
    const float eps_n = d->eps / (float)S, post = 1.0f / sqrtf((float)S);
    for (int64_t t = lo; t < hi; t++) {
        const int32_t row = j->gr->rows[t];
        for (int32_t h = 0; h < DR; h++) {
            float *b = d->beta + (int64_t)row * DR + h, *g = d->g + (int64_t)row * DR + h;
            *b = 1.0f / (1.0f + expf(-*b));
            const float a = *g + j->L->ssm_dt[h];
            *g = (a > 20.0f ? a : logf(1.0f + expf(a))) * j->L->ssm_a[h];
        }
        float *y = d->cv + (int64_t)row * CH;
        ops_ssm_conv_row(d->cin + t * CH, j->wt, CH, d->K, y);
        gx_silu_row(y, y, CH);
        for (int32_t h = 0; h < 2 * d->NG; h++)
            l2_norm(y + (int64_t)h * S, S, eps_n, post);
    }
}

/* The causal conv of one sequence's rows (with SiLU; the per-token work
 * of dn_conv_rows split over the pool for prompts), its conv state
 * updated and snapshotted. */
static void dn_conv(dn_t *d, tpool_t *pool, const model_layer_t *L, int32_t layer, rs_t *rs, const rs_group_t *gr)
{
    const int32_t K = d->K, CH = d->CH, n = gr->n;
    float *st = rs_state(rs, gr->seq, layer); /* [K - 1][CH] first */
    memcpy(d->cin, st, (size_t)(K - 1) * (size_t)CH * sizeof(float));
    for (int32_t t = 0; t < n; t++)
        memcpy(d->cin + (int64_t)(K - 1 + t) * CH, d->qkv + (int64_t)gr->rows[t] * CH, (size_t)CH * sizeof(float));
    /* a token is ~CH * (K + 10) flops: slices of >= 32k channels pay a hand-off */
    tpool_run_range(pool, n, 1 + 32768 / CH, dn_conv_rows, &(dn_conv_job_t){d, L, d->wt[layer], gr});
    for (int32_t s = 0; s < gr->n_snap; s++) {
        float *dst = rs_snap_state(rs, gr->snap_slot[s], layer);
        if (dst)
            memcpy(dst, d->cin + (int64_t)gr->snap_end[s] * CH, (size_t)(K - 1) * (size_t)CH * sizeof(float));
    }
    memcpy(st, d->cin + (int64_t)n * CH, (size_t)(K - 1) * (size_t)CH * sizeof(float));
}

void dn_run(dn_t *d, tpool_t *pool, const model_layer_t *L, int32_t layer, rs_t *rs, const rs_group_t *groups,
            int32_t n_groups, const float *x, int32_t n_tok, const uint8_t *order, float *out)
{
    lin_run_n(pool, d->act, 4, (const model_tensor_t *[]){&L->wqkv, &L->ssm_z, &L->ssm_beta, &L->ssm_alpha},
              (const float *[]){NULL, NULL, NULL, NULL}, x, n_tok, order, (float *[]){d->qkv, d->z, d->beta, d->g});
    for (int32_t i = 0; i < n_groups; i++)
        dn_conv(d, pool, L, layer, rs, &groups[i]);
    dn_job_t job = {d, L, groups, n_groups, rs, layer, (int64_t)(d->K - 1) * d->CH};
    if (pool)
        tpool_run(pool, dn_worker, &job);
    else
        dn_worker(&job, 0, 1);
    lin_run(pool, d->act, &L->ssm_out, NULL, d->o, n_tok, order, out);
}
