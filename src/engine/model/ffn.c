/* ffn.c - gated FFNs and mixtures of experts, in ggml's numerics.
 *
 * What llama.cpp computes (llama-graph.cpp build_ffn / build_moe_ffn):
 *  - gated FFN: swiglu_split / geglu_split (silu or ggml's F16-table GELU of
 *    the gate, times up), then down; phi3's fused ffn_up holds gate | up and
 *    goes through ggml_swiglu, which splits it in halves.
 *  - MoE: logits = router x (+ bias); SOFTMAX gating: probs =
 *    softmax(logits), the k largest probs by argsort, their weights the
 *    probs, divided by their sum (sum_rows in double, clamped at
 *    6.103515625e-5) when the family renormalises; SOFTMAX_WEIGHT gating
 *    (gpt-oss): the k largest logits, weights = softmax of those k. Each
 *    expert: up (+ bias), gate (+ bias), activation, down (+ bias), through
 *    mul_mat_id, i.e. ggml_vec_dot per (row, token): the decode order for
 *    F32 experts whatever the batch. Then experts * weights, and the k
 *    results added in slot order (slot 0 = largest score).
 * The expert grouping is ours: tokens are gathered per expert so each
 * expert's rows are read once per batch. Grouping changes no value (each
 * product depends only on its row and its token).
 */
#include "engine/model/ffn.h"

#include <stdlib.h>
#include <string.h>

#include "engine/kernels/ggml_exact.h"
#include "engine/model/linear.h"
#include "engine/model/ops.h"

struct ffn {
    const model_hparams_t *hp;
    const arch_desc_t *arch;
    int32_t max_batch;
    /* gated FFN */
    float *a, *b;          /* [B][2 n_ff] / [B][n_ff]: gate (or gate|up), up */
    void *act;             /* activation scratch for every matrix */
    /* MoE */
    float *logits;         /* [B][n_expert] router logits, then probs */
    int32_t *sel;          /* [B][k] chosen experts, slot order */
    float *w;              /* [B][k] their weights */
    int32_t *first;        /* [n_expert + 1] first item of each expert */
    int32_t *fill;         /* [n_expert] */
    int32_t *items;        /* [B k] t * k + slot, grouped by expert */
    int32_t *where;        /* [B k] position of item t * k + slot in items */
    float *xg;             /* [B][n_embd] one expert's gathered inputs */
    float *hg, *hu;        /* [B][n_ff_exp] its gate and up outputs */
    float *dn;             /* [B k][n_embd] down outputs, grouped order */
};

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

ffn_t *ffn_create(const model_t *m, int32_t max_batch, lf_err_t *err)
{
    ffn_t *f = calloc(1, sizeof *f);
    if (!f)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory"), NULL;
    f->hp = model_hparams(m);
    f->arch = model_arch(m);
    f->max_batch = max_batch;
    const model_hparams_t *hp = f->hp;
    const model_weights_t *w = model_weights(m);
    const size_t B = (size_t)max_batch, E = (size_t)hp->n_embd;
    size_t act = 1;
    bool ok = true;
    if (f->arch->ffn == ARCH_FFN_MOE) {
        const size_t NE = (size_t)hp->n_expert, K = (size_t)hp->n_expert_used, FE = (size_t)hp->n_ff_exp;
        f->logits = malloc(B * NE * sizeof(float));
        f->sel = malloc(B * K * sizeof(int32_t));
        f->w = malloc(B * K * sizeof(float));
        f->first = malloc((NE + 1) * sizeof(int32_t));
        f->fill = malloc(NE * sizeof(int32_t));
        f->items = malloc(B * K * sizeof(int32_t));
        f->where = malloc(B * K * sizeof(int32_t));
        f->xg = malloc(B * E * sizeof(float));
        f->hg = malloc(B * FE * sizeof(float));
        f->hu = malloc(B * FE * sizeof(float));
        f->dn = malloc(B * K * E * sizeof(float));
        ok = f->logits && f->sel && f->w && f->first && f->fill && f->items && f->where && f->xg && f->hg && f->hu &&
             f->dn;
        for (int l = 0; l < hp->n_layer; l++) {
            const model_layer_t *L = &w->layers[l];
            const model_tensor_t gate = {L->x_gate.type, E, FE, L->x_gate.row_bytes, NULL};
            const model_tensor_t down = {L->x_down.type, FE, E, L->x_down.row_bytes, NULL};
            act = max_size(act, max_size(lin_act_bytes(&gate, max_batch), lin_act_bytes(&down, max_batch)));
            act = max_size(act, lin_act_bytes(&L->router, max_batch));
        }
    } else {
        const size_t FF = (size_t)hp->n_ff;
        f->a = malloc(B * 2 * FF * sizeof(float));
        f->b = malloc(B * FF * sizeof(float));
        ok = f->a && f->b;
        for (int l = 0; l < hp->n_layer; l++) {
            const model_layer_t *L = &w->layers[l];
            act = max_size(act, max_size(lin_act_bytes(&L->w_up, max_batch), lin_act_bytes(&L->w_down, max_batch)));
            if (L->w_gate.data)
                act = max_size(act, lin_act_bytes(&L->w_gate, max_batch));
        }
    }
    f->act = malloc(act);
    if (!ok || !f->act) {
        ffn_free(f);
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory for the FFN buffers (%d tokens)", max_batch), NULL;
    }
    return f;
}

void ffn_free(ffn_t *f)
{
    if (!f)
        return;
    free(f->a);
    free(f->b);
    free(f->act);
    free(f->logits);
    free(f->sel);
    free(f->w);
    free(f->first);
    free(f->fill);
    free(f->items);
    free(f->where);
    free(f->xg);
    free(f->hg);
    free(f->hu);
    free(f->dn);
    free(f);
}

/* g = act(g, u) over n_tok rows of n values (rows of g and u `stride`
 * floats apart). */
static void gate_act(arch_act_t act, float *g, const float *u, int64_t n_tok, int64_t n, int64_t g_stride,
                     int64_t u_stride)
{
    for (int64_t t = 0; t < n_tok; t++) {
        float *gr = g + t * g_stride;
        const float *ur = u + t * u_stride;
        switch (act) {
        case ARCH_ACT_SILU:
            /* ggml_vec_swiglu_f32: silu (ggml_v_silu) times up */
            gx_silu_row(gr, gr, n);
            for (int64_t i = 0; i < n; i++)
                gr[i] = gr[i] * ur[i];
            break;
        case ARCH_ACT_GELU_TANH:
            ops_geglu_row(gr, gr, ur, n);
            break;
        case ARCH_ACT_SWIGLU_OAI:
            ops_swiglu_oai_row(gr, gr, ur, n, 1.702f, 7.0f);
            break;
        }
    }
}

static void ffn_gated(ffn_t *f, tpool_t *pool, const model_layer_t *L, const float *x, int32_t n,
                      const uint8_t *order, float *out)
{
    const int64_t FF = f->hp->n_ff;
    if (f->arch->ffn == ARCH_FFN_GATED_FUSED) {
        /* one product of 2 n_ff rows: gate | up, split per token */
        lin_run(pool, f->act, &L->w_up, NULL, x, n, order, f->a);
        for (int32_t t = 0; t < n; t++)
            gate_act(f->arch->act, f->a + t * 2 * FF, f->a + t * 2 * FF + FF, 1, FF, 0, 0);
        for (int32_t t = 0; t < n; t++) /* compact the rows for the down product */
            memmove(f->a + t * FF, f->a + t * 2 * FF, (size_t)FF * sizeof(float));
    } else {
        lin_run_n(pool, f->act, 2, (const model_tensor_t *[]){&L->w_gate, &L->w_up}, (const float *[]){NULL, NULL},
                  x, n, order, (float *[]){f->a, f->b});
        gate_act(f->arch->act, f->a, f->b, n, FF, FF, FF);
    }
    lin_run(pool, f->act, &L->w_down, NULL, f->a, n, order, out);
}

/* ---- mixture of experts ---- */

/* The k best of score[0..n) (largest first, lower index on ties). */
static void top_k(const float *score, int32_t n, int32_t k, int32_t *sel)
{
    for (int32_t j = 0; j < k; j++) {
        int32_t best = -1;
        for (int32_t e = 0; e < n; e++) {
            bool taken = false;
            for (int32_t i = 0; i < j; i++)
                taken |= sel[i] == e;
            if (!taken && (best < 0 || score[e] > score[best]))
                best = e;
        }
        sel[j] = best;
    }
}

/* Router: each token's experts (slot order) and weights. */
static void moe_route(ffn_t *f, tpool_t *pool, const model_layer_t *L, const float *x, int32_t n,
                      const uint8_t *order)
{
    const int32_t NE = f->hp->n_expert, K = f->hp->n_expert_used;
    lin_run(pool, f->act, &L->router, L->router_b, x, n, order, f->logits);
    for (int32_t t = 0; t < n; t++) {
        float *lg = f->logits + (int64_t)t * NE, *w = f->w + (int64_t)t * K;
        int32_t *sel = f->sel + (int64_t)t * K;
        if (f->arch->gating == ARCH_GATING_SOFTMAX) {
            ops_softmax(lg, NE);
            top_k(lg, NE, K, sel);
            for (int32_t s = 0; s < K; s++)
                w[s] = lg[sel[s]];
        } else {
            top_k(lg, NE, K, sel);
            for (int32_t s = 0; s < K; s++)
                w[s] = lg[sel[s]];
            ops_softmax(w, K);
        }
        if (f->arch->moe_norm_w) {
            double sum = 0.0;
            for (int32_t s = 0; s < K; s++)
                sum += (double)w[s];
            float fs = (float)sum;
            if (fs < 6.103515625e-5f)
                fs = 6.103515625e-5f;
            for (int32_t s = 0; s < K; s++)
                w[s] = w[s] / fs;
        }
    }
}

/* Expert e of a 3-D tensor as a matrix view. */
static model_tensor_t expert_mat(const model_experts_t *x, int32_t e)
{
    return (model_tensor_t){x->type, x->n_in, x->n_out, x->row_bytes,
                            (const uint8_t *)x->data + (size_t)e * x->expert_bytes};
}

static const float *expert_bias(const model_experts_t *x, int32_t e)
{
    return x->bias ? x->bias + (int64_t)e * x->n_out : NULL;
}

static void ffn_moe(ffn_t *f, tpool_t *pool, const model_layer_t *L, const float *x, int32_t n,
                    const uint8_t *order, float *out)
{
    const int32_t NE = f->hp->n_expert, K = f->hp->n_expert_used;
    const int64_t E = f->hp->n_embd, FE = f->hp->n_ff_exp;
    moe_route(f, pool, L, x, n, order);
    /* group the (token, slot) items by expert */
    memset(f->fill, 0, (size_t)NE * sizeof *f->fill);
    for (int32_t i = 0; i < n * K; i++)
        f->fill[f->sel[i]]++;
    f->first[0] = 0;
    for (int32_t e = 0; e < NE; e++) {
        f->first[e + 1] = f->first[e] + f->fill[e];
        f->fill[e] = f->first[e];
    }
    for (int32_t i = 0; i < n * K; i++) {
        const int32_t p = f->fill[f->sel[i]]++;
        f->items[p] = i;
        f->where[i] = p;
    }
    for (int32_t e = 0; e < NE; e++) {
        const int32_t c = f->first[e + 1] - f->first[e];
        if (!c)
            continue;
        const int32_t *it = f->items + f->first[e];
        for (int32_t i = 0; i < c; i++)
            memcpy(f->xg + i * E, x + (int64_t)(it[i] / K) * E, (size_t)E * sizeof(float));
        const model_tensor_t wg = expert_mat(&L->x_gate, e), wu = expert_mat(&L->x_up, e),
                             wd = expert_mat(&L->x_down, e);
        lin_run_n(pool, f->act, 2, (const model_tensor_t *[]){&wg, &wu},
                  (const float *[]){expert_bias(&L->x_gate, e), expert_bias(&L->x_up, e)}, f->xg, c, NULL,
                  (float *[]){f->hg, f->hu});
        gate_act(f->arch->act, f->hg, f->hu, c, FE, FE, FE);
        lin_run(pool, f->act, &wd, expert_bias(&L->x_down, e), f->hg, c, NULL, f->dn + (int64_t)f->first[e] * E);
    }
    /* out = sum over slots, in slot order, of weight * expert output */
    for (int32_t t = 0; t < n; t++) {
        float *o = out + (int64_t)t * E;
        for (int32_t s = 0; s < K; s++) {
            const float *d = f->dn + (int64_t)f->where[t * K + s] * E;
            const float ws = f->w[t * K + s];
            if (s == 0)
                for (int64_t i = 0; i < E; i++)
                    o[i] = d[i] * ws;
            else
                for (int64_t i = 0; i < E; i++)
                    o[i] = o[i] + d[i] * ws;
        }
    }
}

void ffn_run(ffn_t *f, tpool_t *pool, const model_layer_t *L, const float *x, int32_t n, const uint8_t *order,
             float *out)
{
    if (f->arch->ffn == ARCH_FFN_MOE)
        ffn_moe(f, pool, L, x, n, order, out);
    else
        ffn_gated(f, pool, L, x, n, order, out);
}
