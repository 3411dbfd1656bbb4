/* pool.c - pooling, classifier and dense heads, normalisation (pool.h). */
#include "engine/embed/pool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels/ggml_exact.h"
#include "engine/model/linear.h"
#include "engine/model/ops.h"

struct pool_ctx {
    const model_t *m;
    const model_hparams_t *hp;
    const model_weights_t *w;
    float *a, *b;   /* two vectors of the widest head */
    float *col;     /* [n_ctx]: one dimension's values over the tokens */
    float *div;     /* [n_ctx]: the mean's weights */
    void *act;      /* activation scratch of one row */
};

static const char *const names[] = {"none", "mean", "cls", "last", "rank"};

const char *pool_type_name(int type)
{
    return type >= 0 && type <= MODEL_POOLING_RANK ? names[type] : NULL;
}

int pool_type_parse(const char *s)
{
    for (int i = 0; s && i <= MODEL_POOLING_RANK; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

int pool_default_type(const model_t *m)
{
    const int p = model_hparams(m)->pooling;
    return p >= 0 ? p : MODEL_POOLING_NONE;
}

lf_code_t pool_check(const model_t *m, int type, lf_err_t *err)
{
    if (!pool_type_name(type))
        return lf_err_set(err, LF_ERR_INVALID, "unknown pooling type %d", type);
    if (type == MODEL_POOLING_RANK && !model_weights(m)->cls_out.data && !model_weights(m)->cls.data)
        return lf_err_set(err, LF_ERR_INVALID, "pooling 'rank' needs a classifier head (cls.output.weight), which "
                          "this model does not have");
    return LF_OK;
}

/* The reranking head reads the last token in qwen3 rerankers (llama.cpp's
 * llm_graph_input_cls), the first one elsewhere. */
static bool rank_last(const model_t *m)
{
    return !strcmp(model_hparams(m)->arch, "qwen3") || !strcmp(model_hparams(m)->arch, "qwen3vl");
}

bool pool_wants(const model_t *m, int type, int32_t pos, int32_t n_tok)
{
    switch (type) {
    case MODEL_POOLING_CLS:
        return pos == 0;
    case MODEL_POOLING_LAST:
        return pos == n_tok - 1;
    case MODEL_POOLING_RANK:
        return rank_last(m) ? pos == n_tok - 1 : pos == 0;
    default:
        return true;
    }
}

int64_t pool_out_floats(const model_t *m, int type, int32_t n_tok)
{
    const model_hparams_t *hp = model_hparams(m);
    if (type == MODEL_POOLING_NONE)
        return (int64_t)n_tok * hp->n_embd;
    if (type == MODEL_POOLING_RANK) {
        const model_weights_t *w = model_weights(m);
        return w->cls_out.data ? w->cls_out.n_out : w->cls.n_out;
    }
    return hp->n_embd_out;
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

pool_ctx_t *pool_ctx_create(const model_t *m, lf_err_t *err)
{
    pool_ctx_t *c = calloc(1, sizeof *c);
    if (!c)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory"), NULL;
    c->m = m;
    c->hp = model_hparams(m);
    c->w = model_weights(m);
    const model_tensor_t *heads[] = {&c->w->cls, &c->w->cls_out, &c->w->dense_2, &c->w->dense_3};
    int64_t width = c->hp->n_embd;
    size_t act = 1;
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
        if (heads[i]->data) {
            width = max64(width, max64(heads[i]->n_in, heads[i]->n_out));
            size_t s = lin_act_bytes(heads[i], 1);
            act = s > act ? s : act;
        }
    const int64_t n_ctx = c->hp->n_ctx_train > 0 ? c->hp->n_ctx_train : 1;
    c->a = malloc((size_t)width * sizeof(float));
    c->b = malloc((size_t)width * sizeof(float));
    c->col = malloc((size_t)n_ctx * sizeof(float));
    c->div = malloc((size_t)n_ctx * sizeof(float));
    c->act = malloc(act);
    if (!c->a || !c->b || !c->col || !c->div || !c->act) {
        pool_ctx_free(c);
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory"), NULL;
    }
    return c;
}

void pool_ctx_free(pool_ctx_t *c)
{
    if (!c)
        return;
    free(c->a);
    free(c->b);
    free(c->col);
    free(c->div);
    free(c->act);
    free(c);
}

/* out = W x (+ bias) for one row, in ggml's single-row order. */
static void head(pool_ctx_t *c, const model_tensor_t *W, const float *bias, const float *x, float *out)
{
    lin_run(NULL, c->act, W, bias, x, 1, NULL, out);
}

/* hidden^T x inp_mean: per dimension, ggml_vec_dot_f32 of its values over
 * the tokens with 1/n each. Sequences longer than the training context
 * (the scratch) are summed in chunks, which only a caller past the model's
 * context can reach. */
static void pool_mean(pool_ctx_t *c, const float *h, int32_t n_tok, float *out)
{
    const int64_t E = c->hp->n_embd, cap = c->hp->n_ctx_train > 0 ? c->hp->n_ctx_train : 1;
    const float div = 1.0f / (float)n_tok;
    if (n_tok > cap) {
        for (int64_t e = 0; e < E; e++) {
            double s = 0.0;
            for (int32_t t = 0; t < n_tok; t++)
                s += (double)(h[t * E + e] * div);
            out[e] = (float)s;
        }
        return;
    }
    for (int32_t t = 0; t < n_tok; t++)
        c->div[t] = div;
    for (int64_t e = 0; e < E; e++) {
        for (int32_t t = 0; t < n_tok; t++)
            c->col[t] = h[t * E + e];
        out[e] = gx_dot_f32_vec_e4(c->col, c->div, n_tok);
    }
}

void pool_run(pool_ctx_t *c, int type, const float *h, int32_t n_tok, float *out)
{
    const model_weights_t *w = c->w;
    const int64_t E = c->hp->n_embd;
    if (type == MODEL_POOLING_NONE) {
        memcpy(out, h, (size_t)((int64_t)n_tok * E) * sizeof(float));
        return;
    }
    float *cur = c->a, *nxt = c->b;
    if (type == MODEL_POOLING_MEAN)
        pool_mean(c, h, n_tok, cur);
    else
        memcpy(cur, h, (size_t)E * sizeof(float)); /* the one row asked for */
    if (type == MODEL_POOLING_RANK) {
        int64_t n = E;
        if (w->cls.data) {
            head(c, &w->cls, w->cls_b, cur, nxt);
            n = w->cls.n_out;
            for (int64_t i = 0; i < n; i++)
                nxt[i] = tanhf(nxt[i]);
            float *t = cur;
            cur = nxt;
            nxt = t;
        }
        if (w->cls_out.data) {
            head(c, &w->cls_out, w->cls_out_b, cur, nxt);
            n = w->cls_out.n_out;
            float *t = cur;
            cur = nxt;
            nxt = t;
        }
        if (rank_last(c->m))
            ops_softmax(cur, n);
        memcpy(out, cur, (size_t)n * sizeof(float));
        return;
    }
    if (w->dense_2.data) {
        head(c, &w->dense_2, w->dense_2_b, cur, nxt);
        float *t = cur;
        cur = nxt;
        nxt = t;
    }
    if (w->dense_3.data) {
        head(c, &w->dense_3, NULL, cur, nxt);
        float *t = cur;
        cur = nxt;
        nxt = t;
    }
    memcpy(out, cur, (size_t)c->hp->n_embd_out * sizeof(float));
}

void pool_normalize(float *v, int64_t n, int mode)
{
    double sum = 0.0;
    switch (mode) {
    case -1:
        return;
    case 0:
        for (int64_t i = 0; i < n; i++)
            if (sum < fabs((double)v[i]))
                sum = fabs((double)v[i]);
        sum /= 32760.0;
        break;
    case 2:
        for (int64_t i = 0; i < n; i++)
            sum += (double)(v[i] * v[i]);
        sum = sqrt(sum);
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            sum += pow(fabs((double)v[i]), (double)mode);
        sum = pow(sum, 1.0 / (double)mode);
        break;
    }
    const float norm = sum > 0.0 ? (float)(1.0 / sum) : 0.0f;
    for (int64_t i = 0; i < n; i++)
        v[i] = v[i] * norm;
}
