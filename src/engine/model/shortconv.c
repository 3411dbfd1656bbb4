/* shortconv.c - LFM2's gated short convolution (see shortconv.h). */
#include "engine/model/shortconv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/linear.h"
#include "engine/model/ops.h"

struct sc {
    int32_t E, K;
    float *bcx;  /* [B][3 E] */
    float *cin;  /* [(K - 1) + B][E] one sequence's bx rows with its state */
    float *y;    /* [B][E] */
    float *conv; /* [E] one row's convolution */
    float **wt;  /* [n_layer] the conv kernel tap-major [K][E] (short-conv layers) */
    int32_t n_layer;
    void *act;
};

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

sc_t *sc_create(const model_t *m, int32_t max_batch, lf_err_t *err)
{
    sc_t *s = calloc(1, sizeof *s);
    if (!s)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory"), NULL;
    const model_hparams_t *hp = model_hparams(m);
    const model_weights_t *w = model_weights(m);
    size_t act = 0;
    for (int l = 0; l < hp->n_layer; l++) {
        const model_layer_t *L = &w->layers[l];
        if (L->kind == MODEL_LAYER_SHORTCONV)
            act = max_size(act, max_size(lin_act_bytes(&L->sc_in, max_batch), lin_act_bytes(&L->sc_out, max_batch)));
    }
    if (!act)
        return s;
    s->E = hp->n_embd;
    s->K = hp->shortconv_l;
    const size_t B = (size_t)max_batch, E = (size_t)s->E;
    s->bcx = malloc(B * 3 * E * sizeof(float));
    s->cin = malloc((B + (size_t)s->K) * E * sizeof(float));
    s->y = malloc(B * E * sizeof(float));
    s->act = malloc(act);
    s->conv = malloc(E * sizeof(float));
    s->n_layer = hp->n_layer;
    s->wt = calloc((size_t)hp->n_layer, sizeof *s->wt);
    bool wt_ok = s->wt != NULL;
    for (int l = 0; wt_ok && l < hp->n_layer; l++)
        if (w->layers[l].kind == MODEL_LAYER_SHORTCONV) {
            wt_ok = (s->wt[l] = malloc((size_t)s->K * E * sizeof(float))) != NULL;
            if (wt_ok)
                ops_conv_transpose(w->layers[l].sc_conv, s->E, s->K, s->wt[l]);
        }
    if (!s->bcx || !s->cin || !s->y || !s->act || !s->conv || !wt_ok) {
        sc_free(s);
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory for the short-convolution buffers"), NULL;
    }
    return s;
}

void sc_free(sc_t *s)
{
    if (!s)
        return;
    free(s->bcx);
    free(s->cin);
    free(s->y);
    free(s->act);
    free(s->conv);
    for (int l = 0; s->wt && l < s->n_layer; l++)
        free(s->wt[l]);
    free(s->wt);
    free(s);
}

void sc_run(sc_t *s, tpool_t *pool, const model_layer_t *L, int32_t layer, rs_t *rs, const rs_group_t *groups,
            int32_t n_groups, const float *x, int32_t n_tok, const uint8_t *order, float *out)
{
    const int32_t E = s->E, K = s->K;
    lin_run(pool, s->act, &L->sc_in, NULL, x, n_tok, order, s->bcx);
    for (int32_t gi = 0; gi < n_groups; gi++) {
        const rs_group_t *gr = &groups[gi];
        float *st = rs_state(rs, gr->seq, layer);
        memcpy(s->cin, st, (size_t)(K - 1) * (size_t)E * sizeof(float));
        for (int32_t t = 0; t < gr->n; t++) {
            const float *r = s->bcx + (int64_t)gr->rows[t] * 3 * E;
            float *bx = s->cin + (int64_t)(K - 1 + t) * E;
            for (int32_t c = 0; c < E; c++)
                bx[c] = r[c] * r[2 * E + c];
        }
        for (int32_t t = 0; t < gr->n; t++) {
            const float *cgate = s->bcx + (int64_t)gr->rows[t] * 3 * E + E;
            float *y = s->y + (int64_t)gr->rows[t] * E;
            ops_ssm_conv_row(s->cin + (int64_t)t * E, s->wt[layer], E, K, s->conv);
            for (int32_t c = 0; c < E; c++)
                y[c] = cgate[c] * s->conv[c];
        }
        for (int32_t i = 0; i < gr->n_snap; i++) {
            float *dst = rs_snap_state(rs, gr->snap_slot[i], layer);
            if (dst)
                memcpy(dst, s->cin + (int64_t)gr->snap_end[i] * E, (size_t)(K - 1) * (size_t)E * sizeof(float));
        }
        memcpy(st, s->cin + (int64_t)gr->n * E, (size_t)(K - 1) * (size_t)E * sizeof(float));
    }
    lin_run(pool, s->act, &L->sc_out, NULL, s->y, n_tok, order, out);
}
