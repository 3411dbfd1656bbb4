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

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels/ggml_exact.h"
#include "engine/kernels/kernels.h"
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
    float *xg;             /* [B][n_embd] one expert's gathered inputs (F32/F16 experts) */
    float *hg, *hu;        /* [B k][n_ff_exp] gate and up outputs, grouped order */
    float *dn;             /* [B k][n_embd] down outputs, grouped order */
    /* quantized experts: activations converted once, then gathered */
    void *qx;              /* [B] rows of x in the gate's vec_dot_type */
    void *qg, *qu;         /* [B k] gathered rows for gate and up (qu: only when up's type differs) */
    void *qh;              /* [B k] rows of the activations in down's vec_dot_type */
    int32_t *by_count;     /* [n_expert] experts with tokens, by increasing count */
    kern_mm_t *jobs;       /* [2 n_expert] */
    /* shared expert (moe_shexp) and gemma4's parallel branches */
    float *sh;             /* [B][n_embd] shared expert output */
    float *sg;             /* [B] its gate */
    float *xe, *xr, *m2;   /* [B][n_embd] experts' input, router input, experts' output */
};

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* Experts the SIMD kernels multiply (every type but F32/F16, which take
 * ggml's exact per-token orders through linear.c). */
static bool experts_quantized(const model_layer_t *L)
{
    const model_experts_t *x[3] = {&L->x_gate, &L->x_up, &L->x_down};
    for (int i = 0; i < 3; i++)
        if (x[i]->type == QTYPE_F32 || x[i]->type == QTYPE_F16)
            return false;
    return true;
}

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
    /* dense buffers: the dense FFN and the shared expert; MoE buffers when
     * the model has experts */
    size_t FF = (size_t)hp->n_ff;
    if ((size_t)hp->n_ff_shexp > FF)
        FF = (size_t)hp->n_ff_shexp;
    if (FF) {
        f->a = malloc(B * 2 * FF * sizeof(float));
        f->b = malloc(B * FF * sizeof(float));
        f->sh = malloc(B * E * sizeof(float));
        f->sg = malloc(B * sizeof(float));
        f->xe = malloc(B * E * sizeof(float));
        f->xr = malloc(B * E * sizeof(float));
        f->m2 = malloc(B * E * sizeof(float));
        ok = f->a && f->b && f->sh && f->sg && f->xe && f->xr && f->m2;
        for (int l = 0; l < hp->n_layer; l++) {
            const model_layer_t *L = &w->layers[l];
            const model_tensor_t *ts[] = {&L->w_gate, &L->w_up, &L->w_down, &L->s_gate, &L->s_up, &L->s_down,
                                          &L->s_gate_inp};
            for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
                if (ts[i]->data)
                    act = max_size(act, lin_act_bytes(ts[i], max_batch));
        }
    }
    if (hp->n_expert > 0) {
        const size_t NE = (size_t)hp->n_expert, K = (size_t)hp->n_expert_used, FE = (size_t)hp->n_ff_exp;
        f->logits = malloc(B * NE * sizeof(float));
        f->sel = malloc(B * K * sizeof(int32_t));
        f->w = malloc(B * K * sizeof(float));
        f->first = malloc((NE + 1) * sizeof(int32_t));
        f->fill = malloc(NE * sizeof(int32_t));
        f->items = malloc(B * K * sizeof(int32_t));
        f->where = malloc(B * K * sizeof(int32_t));
        f->xg = malloc(B * E * sizeof(float));
        f->hg = malloc(B * K * FE * sizeof(float));
        f->hu = malloc(B * K * FE * sizeof(float));
        f->dn = malloc(B * K * E * sizeof(float));
        f->by_count = malloc(NE * sizeof(int32_t));
        f->jobs = malloc(2 * NE * sizeof(kern_mm_t));
        ok = ok && f->logits && f->sel && f->w && f->first && f->fill && f->items && f->where && f->xg && f->hg &&
             f->hu && f->dn && f->by_count && f->jobs;
        size_t qx = 1, qg = 1, qu = 1, qh = 1;
        for (int l = 0; l < hp->n_layer; l++) {
            const model_layer_t *L = &w->layers[l];
            if (!L->router.data)
                continue;
            const model_tensor_t gate = {L->x_gate.type, E, FE, L->x_gate.row_bytes, NULL, NULL};
            const model_tensor_t down = {L->x_down.type, FE, E, L->x_down.row_bytes, NULL, NULL};
            act = max_size(act, max_size(lin_act_bytes(&gate, max_batch), lin_act_bytes(&down, max_batch)));
            act = max_size(act, lin_act_bytes(&L->router, max_batch));
            if (experts_quantized(L)) {
                qx = max_size(qx, kern_act_size(L->x_gate.type, E, max_batch));
                qg = max_size(qg, kern_act_size(L->x_gate.type, E, (int64_t)(B * K)));
                qu = max_size(qu, kern_act_size(L->x_up.type, E, (int64_t)(B * K)));
                qh = max_size(qh, kern_act_size(L->x_down.type, FE, (int64_t)(B * K)));
            }
        }
        f->qx = malloc(qx);
        f->qg = malloc(qg);
        f->qu = malloc(qu);
        f->qh = malloc(qh);
        ok = ok && f->qx && f->qg && f->qu && f->qh;
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
    free(f->qx);
    free(f->qg);
    free(f->qu);
    free(f->qh);
    free(f->by_count);
    free(f->jobs);
    free(f->sh);
    free(f->sg);
    free(f->xe);
    free(f->xr);
    free(f->m2);
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

/* gate_act (u != NULL) or the plain activation (u == NULL: g = act(g))
 * over n_tok rows, split by rows over the pool when the batch is big. */
typedef struct {
    arch_act_t act;
    float *g;
    const float *u;
    int64_t n, g_stride, u_stride;
} act_job_t;

static void act_rows(void *arg, int64_t lo, int64_t hi)
{
    const act_job_t *j = arg;
    if (j->u) {
        gate_act(j->act, j->g + lo * j->g_stride, j->u + lo * j->u_stride, hi - lo, j->n, j->g_stride, j->u_stride);
        return;
    }
    float *g = j->g + lo * j->g_stride;
    if (j->act == ARCH_ACT_SILU)
        gx_silu_row(g, g, (hi - lo) * j->n);
    else
        ops_gelu_row(g, g, (hi - lo) * j->n);
}

static void act_run(tpool_t *pool, const act_job_t *j, int64_t n_tok)
{
    enum { GRAIN = 16384 };
    int64_t grain = j->n >= GRAIN ? 1 : GRAIN / j->n;
    if (!j->u) /* gx_silu_row over a slice takes 16 lanes at a time from its start, as over the whole */
        grain = (grain + 15) / 16 * 16;
    tpool_run_range(pool, n_tok, grain, act_rows, (void *)j);
}

/* The matrices of one gated (or plain) FFN and their biases (NULL: none). */
typedef struct {
    const model_tensor_t *gate; /* NULL or no data: no gate (bert: act(up x)) */
    const model_tensor_t *up;   /* fused: gate | up (2 FF rows, phi3, jina) */
    const model_tensor_t *down;
    const float *b_gate, *b_up, *b_down;
    bool fused;
} ffn_mats_t;

/* down(act(gate x) * up x) with the given matrices (FF = their width). */
static void ffn_gated_with(ffn_t *f, tpool_t *pool, arch_act_t act, const ffn_mats_t *m, int64_t FF, const float *x,
                           int32_t n, const uint8_t *order, float *out)
{
    if (m->fused) {
        /* one product of 2 n_ff rows: gate | up, split per token */
        lin_run(pool, f->act, m->up, m->b_up, x, n, order, f->a);
        act_run(pool, &(act_job_t){act, f->a, f->a + FF, FF, 2 * FF, 2 * FF}, n);
        for (int32_t t = 0; t < n; t++) /* compact the rows for the down product */
            memmove(f->a + t * FF, f->a + t * 2 * FF, (size_t)FF * sizeof(float));
    } else if (!m->gate || !m->gate->data) {
        /* no gate (bert): act(up x + b) */
        lin_run(pool, f->act, m->up, m->b_up, x, n, order, f->a);
        act_run(pool, &(act_job_t){act, f->a, NULL, FF, FF, 0}, n);
    } else {
        lin_run_n(pool, f->act, 2, (const model_tensor_t *[]){m->gate, m->up}, (const float *[]){m->b_gate, m->b_up},
                  x, n, order, (float *[]){f->a, f->b});
        act_run(pool, &(act_job_t){act, f->a, f->b, FF, FF, FF}, n);
    }
    lin_run(pool, f->act, m->down, m->b_down, f->a, n, order, out);
}

static void ffn_gated(ffn_t *f, tpool_t *pool, const model_layer_t *L, const float *x, int32_t n,
                      const uint8_t *order, float *out)
{
    const ffn_mats_t m = {&L->w_gate, &L->w_up, &L->w_down, L->b_gate, L->b_up, L->b_down, L->up_fused};
    ffn_gated_with(f, pool, f->arch->act, &m, L->n_ff, x, n, order, out);
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
                            (const uint8_t *)x->data + (size_t)e * x->expert_bytes, NULL};
}

/* Expert e's packed copy (weights_pack.h), or NULL. */
static const void *expert_packed(const model_experts_t *x, int32_t e)
{
    return x->packed ? (const uint8_t *)x->packed + (size_t)e * x->packed_expert_bytes : NULL;
}

static const float *expert_bias(const model_experts_t *x, int32_t e)
{
    return x->bias ? x->bias + (int64_t)e * x->n_out : NULL;
}

/* F32/F16 experts: one expert at a time through linear.c (the decode
 * order, as ggml's mul_mat_id). */
static void experts_exact(ffn_t *f, tpool_t *pool, const model_layer_t *L, const float *x)
{
    const int32_t NE = f->hp->n_expert, K = f->hp->n_expert_used;
    const int64_t E = f->hp->n_embd, FE = f->hp->n_ff_exp;
    for (int32_t e = 0; e < NE; e++) {
        const int32_t c = f->first[e + 1] - f->first[e];
        if (!c)
            continue;
        const int32_t *it = f->items + f->first[e];
        for (int32_t i = 0; i < c; i++)
            memcpy(f->xg + i * E, x + (int64_t)(it[i] / K) * E, (size_t)E * sizeof(float));
        const model_tensor_t wg = expert_mat(&L->x_gate, e), wu = expert_mat(&L->x_up, e),
                             wd = expert_mat(&L->x_down, e);
        float *hg = f->hg + (int64_t)f->first[e] * FE, *hu = f->hu + (int64_t)f->first[e] * FE;
        lin_run_n(pool, f->act, 2, (const model_tensor_t *[]){&wg, &wu},
                  (const float *[]){expert_bias(&L->x_gate, e), expert_bias(&L->x_up, e)}, f->xg, c, NULL,
                  (float *[]){hg, hu});
        gate_act(f->arch->act, hg, hu, c, FE, FE, FE);
        lin_run(pool, f->act, &wd, expert_bias(&L->x_down, e), hg, c, NULL, f->dn + (int64_t)f->first[e] * E);
    }
}

/* The experts holding tokens, by increasing token count (experts with the
 * same count share pool runs). Returns how many. */
static int32_t experts_by_count(ffn_t *f)
{
    const int32_t NE = f->hp->n_expert;
    int32_t n = 0;
    for (int32_t e = 0; e < NE; e++)
        if (f->first[e + 1] > f->first[e])
            f->by_count[n++] = e;
    for (int32_t i = 1; i < n; i++) { /* insertion sort: n_expert is small */
        const int32_t e = f->by_count[i], c = f->first[e + 1] - f->first[e];
        int32_t j = i;
        for (; j > 0 && f->first[f->by_count[j - 1] + 1] - f->first[f->by_count[j - 1]] > c; j--)
            f->by_count[j] = f->by_count[j - 1];
        f->by_count[j] = e;
    }
    return n;
}

/* Runs f->jobs[0..n_jobs) (jobs_per_expert per expert, in by_count order):
 * consecutive experts with the same token count in shared pool runs. */
static void run_jobs(ffn_t *f, tpool_t *pool, int32_t n_exp, int jobs_per_expert)
{
    for (int32_t a = 0; a < n_exp;) {
        const int32_t c = f->first[f->by_count[a] + 1] - f->first[f->by_count[a]];
        int32_t b = a + 1;
        while (b < n_exp && f->first[f->by_count[b] + 1] - f->first[f->by_count[b]] == c)
            b++;
        kern_matmul_multi(pool, (b - a) * jobs_per_expert, f->jobs + a * jobs_per_expert, c);
        a = b;
    }
}

/* Quantized experts: the batch's rows are converted once, gathered per
 * expert, and the products of all experts run in few pool runs (in a
 * decode step: the k chosen experts' gate and up together, then their
 * down). Values are those of linear.c, bit for bit. */
static void experts_quant(ffn_t *f, tpool_t *pool, const model_layer_t *L, const float *x, int32_t n)
{
    const int32_t K = f->hp->n_expert_used, NI = n * K;
    const int64_t E = f->hp->n_embd, FE = f->hp->n_ff_exp;
    const qtype_t tg = L->x_gate.type, tu = L->x_up.type, td = L->x_down.type;
    const bool same = qtype_info(tg)->vec_dot_type == qtype_info(tu)->vec_dot_type;
    const size_t rg = kern_act_size(tg, E, 1), ru = kern_act_size(tu, E, 1), rd = kern_act_size(td, FE, 1);
    /* gate/up inputs: x converted once, rows gathered in item order */
    kern_quantize_act_pool(pool, tg, x, E, n, f->qx);
    for (int32_t i = 0; i < NI; i++)
        memcpy((uint8_t *)f->qg + (size_t)i * rg, (const uint8_t *)f->qx + (size_t)(f->items[i] / K) * rg, rg);
    if (!same) {
        kern_quantize_act_pool(pool, tu, x, E, n, f->qx);
        for (int32_t i = 0; i < NI; i++)
            memcpy((uint8_t *)f->qu + (size_t)i * ru, (const uint8_t *)f->qx + (size_t)(f->items[i] / K) * ru, ru);
    }
    const void *qu = same ? f->qg : f->qu;
    const int32_t n_exp = experts_by_count(f);
    for (int32_t j = 0; j < n_exp; j++) {
        const int32_t e = f->by_count[j], i0 = f->first[e];
        f->jobs[2 * j] = (kern_mm_t){tg, (const uint8_t *)L->x_gate.data + (size_t)e * L->x_gate.expert_bytes, FE, E,
                                     (const uint8_t *)f->qg + (size_t)i0 * rg, f->hg + (int64_t)i0 * FE,
                                     expert_packed(&L->x_gate, e)};
        f->jobs[2 * j + 1] = (kern_mm_t){tu, (const uint8_t *)L->x_up.data + (size_t)e * L->x_up.expert_bytes, FE, E,
                                         (const uint8_t *)qu + (size_t)i0 * (same ? rg : ru),
                                         f->hu + (int64_t)i0 * FE, expert_packed(&L->x_up, e)};
    }
    run_jobs(f, pool, n_exp, 2);
    for (int32_t j = 0; j < n_exp; j++) {
        const int32_t e = f->by_count[j], i0 = f->first[e], c = f->first[e + 1] - i0;
        const float *bg = expert_bias(&L->x_gate, e), *bu = expert_bias(&L->x_up, e);
        for (int32_t i = i0; i < i0 + c; i++)
            for (int64_t r = 0; r < FE; r++) {
                if (bu)
                    f->hu[i * FE + r] += bu[r];
                if (bg)
                    f->hg[i * FE + r] += bg[r];
            }
    }
    gate_act(f->arch->act, f->hg, f->hu, NI, FE, FE, FE);
    /* down: the activations are already grouped by expert */
    kern_quantize_act_pool(pool, td, f->hg, FE, NI, f->qh);
    for (int32_t j = 0; j < n_exp; j++) {
        const int32_t e = f->by_count[j], i0 = f->first[e];
        f->jobs[j] = (kern_mm_t){td, (const uint8_t *)L->x_down.data + (size_t)e * L->x_down.expert_bytes, E, FE,
                                 (const uint8_t *)f->qh + (size_t)i0 * rd, f->dn + (int64_t)i0 * E,
                                 expert_packed(&L->x_down, e)};
    }
    run_jobs(f, pool, n_exp, 1);
    for (int32_t j = 0; j < n_exp; j++) {
        const int32_t e = f->by_count[j], i0 = f->first[e], c = f->first[e + 1] - i0;
        const float *bd = expert_bias(&L->x_down, e);
        for (int32_t i = i0; bd && i < i0 + c; i++)
            for (int64_t r = 0; r < E; r++)
                f->dn[i * E + r] += bd[r];
    }
}

/* The routed experts on x, routed by the router applied to rx (x unless
 * the family scales the router input), plus the shared expert. */
static void ffn_moe(ffn_t *f, tpool_t *pool, const model_layer_t *L, const float *x, const float *rx, int32_t n,
                    const uint8_t *order, float *out)
{
    const int32_t NE = f->hp->n_expert, K = f->hp->n_expert_used;
    const int64_t E = f->hp->n_embd;
    moe_route(f, pool, L, rx, n, order);
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
    if (experts_quantized(L))
        experts_quant(f, pool, L, x, n);
    else
        experts_exact(f, pool, L, x);
    /* per-expert output scale (gemma4): ggml_mul before the weights */
    if (L->x_down_scale)
        for (int32_t i = 0; i < n * K; i++) {
            float *d = f->dn + (int64_t)f->where[i] * E;
            const float sc = L->x_down_scale[f->sel[i]];
            for (int64_t j = 0; j < E; j++)
                d[j] = d[j] * sc;
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

/* The shared expert (qwen35moe): out += SwiGLU FFN(x) * sigmoid(s_gate_inp x). */
static void ffn_shexp(ffn_t *f, tpool_t *pool, const model_layer_t *L, const float *x, int32_t n,
                      const uint8_t *order, float *out)
{
    const int64_t E = f->hp->n_embd;
    const ffn_mats_t m = {&L->s_gate, &L->s_up, &L->s_down, NULL, NULL, NULL, false};
    ffn_gated_with(f, pool, ARCH_ACT_SILU, &m, L->s_up.n_out, x, n, order, f->sh);
    lin_run(pool, f->act, &L->s_gate_inp, NULL, x, n, order, f->sg);
    for (int32_t t = 0; t < n; t++) {
        const float g = 1.0f / (1.0f + expf(-f->sg[t]));
        for (int64_t j = 0; j < E; j++)
            out[t * E + j] = out[t * E + j] + f->sh[t * E + j] * g;
    }
}

void ffn_run(ffn_t *f, tpool_t *pool, const model_layer_t *L, const float *x, int32_t n, const uint8_t *order,
             float *out)
{
    if (f->arch->ffn == ARCH_FFN_MOE) {
        ffn_moe(f, pool, L, x, x, n, order, out);
        if (L->s_up.data)
            ffn_shexp(f, pool, L, x, n, order, out);
    } else {
        ffn_gated(f, pool, L, x, n, order, out);
    }
}

void ffn_run_par(ffn_t *f, tpool_t *pool, const model_layer_t *L, const float *x, int32_t n, const uint8_t *order,
                 float *out)
{
    const model_hparams_t *hp = f->hp;
    const int64_t E = hp->n_embd;
    const float rs = 1.0f / sqrtf((float)E);
    /* the three inputs: dense MLP, experts, router (rms_norm, / sqrt(E), * scale) */
    for (int32_t t = 0; t < n; t++) {
        const float *xr = x + t * E;
        ops_rms_norm(xr, L->ffn_norm, f->m2 + t * E, E, hp->rms_eps);
        ops_rms_norm(xr, L->ffn_pre_norm_2, f->xe + t * E, E, hp->rms_eps);
        float *r = f->xr + t * E;
        ops_rms_norm(xr, NULL, r, E, hp->rms_eps);
        for (int64_t j = 0; j < E; j++)
            r[j] = (r[j] * rs) * L->router_in_scale[j];
    }
    ffn_gated(f, pool, L, f->m2, n, order, out);
    for (int32_t t = 0; t < n; t++)
        ops_rms_norm(out + t * E, L->ffn_post_norm_1, out + t * E, E, hp->rms_eps);
    ffn_moe(f, pool, L, f->xe, f->xr, n, order, f->m2);
    for (int32_t t = 0; t < n; t++) {
        ops_rms_norm(f->m2 + t * E, L->ffn_post_norm_2, f->m2 + t * E, E, hp->rms_eps);
        for (int64_t j = 0; j < E; j++)
            out[t * E + j] = out[t * E + j] + f->m2[t * E + j];
    }
}
