/* spec.c - draft sources and adaptive draft lengths (see spec.h). */
#include "engine/sched/spec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Prior acceptance of each source, as the (accepted, rejections) counts a
 * sequence starts with (they decay with the measured ones, so drafts that
 * keep failing drive the estimate to 0): a prediction is the client's
 * claim that the output will be this text; n-grams and a draft model are
 * guesses. */
static const double spec_prior[SPEC_SRC_COUNT][2] = {
    [SPEC_SRC_PREDICTION] = {4.0, 1.0},
    [SPEC_SRC_NGRAM] = {1.0, 1.0},
    [SPEC_SRC_DRAFT] = {3.0, 1.0},
};
/* Each verification's counts weigh this much more than the one before:
 * the estimate follows a prediction that stops matching within a few
 * steps (0.8^8 = 0.17). */
#define SPEC_DECAY 0.8

struct spec_seq {
    int32_t *pred;          /* the prediction's tokens */
    int32_t n_pred;
    int32_t pred_pos;       /* prediction index the output is aligned to: next expected */
    bool pred_aligned;
    int32_t pred_synced;    /* output tokens taken into account by the alignment */
    bool ngram, draft_model;
    int32_t k_max;
    double acc[SPEC_SRC_COUNT], rej[SPEC_SRC_COUNT]; /* decayed counts */
    int64_t n_drafted[SPEC_SRC_COUNT], n_accepted[SPEC_SRC_COUNT];
    int32_t idle[SPEC_SRC_COUNT]; /* steps since the source last drafted (probing) */
    int32_t probe_every[SPEC_SRC_COUNT]; /* steps between probes (backs off) */
    bool probing[SPEC_SRC_COUNT];        /* the last drafts were a probe */
};

const char *spec_src_name(spec_src_t src)
{
    switch (src) {
    case SPEC_SRC_PREDICTION: return "prediction";
    case SPEC_SRC_NGRAM: return "ngram";
    case SPEC_SRC_DRAFT: return "draft_model";
    default: return "none";
    }
}

spec_seq_t *spec_seq_create(const spec_params_t *p, lf_err_t *err)
{
    if (!p || (p->n_prediction <= 0 && !p->ngram && !p->draft_model))
        return NULL;
    spec_seq_t *sp = calloc(1, sizeof *sp);
    if (sp && p->n_prediction > 0) {
        sp->pred = malloc((size_t)p->n_prediction * sizeof *sp->pred);
        if (sp->pred) {
            memcpy(sp->pred, p->prediction, (size_t)p->n_prediction * sizeof *sp->pred);
            sp->n_pred = p->n_prediction;
        }
    }
    if (!sp || (p->n_prediction > 0 && !sp->pred)) {
        spec_seq_free(sp);
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    sp->pred_aligned = true; /* the output starts where the prediction does */
    sp->ngram = p->ngram;
    sp->draft_model = p->draft_model;
    sp->k_max = p->k_max > 0 && p->k_max <= SPEC_K_MAX ? p->k_max : SPEC_K_MAX;
    for (int s = 0; s < SPEC_SRC_COUNT; s++) {
        sp->acc[s] = spec_prior[s][0];
        sp->rej[s] = spec_prior[s][1];
        sp->probe_every[s] = SPEC_PROBE_EVERY;
    }
    return sp;
}

void spec_seq_free(spec_seq_t *sp)
{
    if (!sp)
        return;
    free(sp->pred);
    free(sp);
}

int32_t spec_argmax(const float *x, int32_t n)
{
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[b])
            b = i;
    return b;
}

double spec_expected_accepted(double a, int32_t k)
{
    double e = 0, p = 1;
    for (int32_t i = 0; i < k; i++) {
        p *= a;
        e += p;
    }
    return e;
}

int32_t spec_match_suffix(const int32_t *seq, int32_t n_seq, int32_t before, const int32_t *out, int32_t n_out,
                          int32_t min_len, int32_t max_len, int32_t from)
{
    if (before > n_seq)
        before = n_seq;
    if (max_len > n_out)
        max_len = n_out;
    if (min_len < 1)
        min_len = 1;
    int32_t best_len = 0, best_after = -1, best_before = -1;
    for (int32_t e = min_len; e <= before; e++) {
        int32_t l = 0;
        while (l < max_len && l < e && seq[e - 1 - l] == out[n_out - 1 - l])
            l++;
        if (l < min_len || l < best_len)
            continue;
        if (l > best_len) {
            best_len = l;
            best_after = best_before = -1;
        }
        if (e >= from) {
            if (best_after < 0)
                best_after = e;
        } else {
            best_before = e;
        }
    }
    return best_after >= 0 ? best_after : best_before;
}

/* Brings the prediction's alignment up to the output hist[n_prompt..n_hist):
 * token by token while the output follows the prediction, else by finding
 * the output's last tokens in it. */
static void pred_align(spec_seq_t *sp, const int32_t *hist, int32_t n_hist, int32_t n_prompt)
{
    const int32_t *out = hist + n_prompt;
    const int32_t n_out = n_hist - n_prompt;
    for (int32_t i = sp->pred_synced; i < n_out; i++) {
        if (sp->pred_aligned && sp->pred_pos < sp->n_pred && sp->pred[sp->pred_pos] == out[i])
            sp->pred_pos++;
        else
            sp->pred_aligned = false;
    }
    if (sp->pred_synced < n_out && !sp->pred_aligned && n_out > 0) {
        /* a match of one token only while the output is that short (its
         * start may be tokenized differently from the prediction's) */
        const int32_t min_len = n_out < 3 ? 1 : 2;
        const int32_t at = spec_match_suffix(sp->pred, sp->n_pred, sp->n_pred, out, n_out, min_len, 8, sp->pred_pos);
        if (at >= 0) {
            sp->pred_pos = at;
            sp->pred_aligned = true;
        }
    }
    sp->pred_synced = n_out > sp->pred_synced ? n_out : sp->pred_synced;
}

/* The n-gram continuation: where the latest earlier occurrence of hist's
 * last 2-5 tokens ends (-1: none). */
static int32_t ngram_at(const int32_t *hist, int32_t n_hist)
{
    if (n_hist < 3)
        return -1;
    return spec_match_suffix(hist, n_hist, n_hist - 1, hist, n_hist, 2, 5, n_hist);
}

spec_src_t spec_seq_next_source(spec_seq_t *sp, const int32_t *hist, int32_t n_hist, int32_t n_prompt)
{
    if (!sp)
        return SPEC_SRC_NONE;
    if (sp->n_pred > 0 && n_hist > n_prompt)
        pred_align(sp, hist, n_hist, n_prompt);
    if (sp->n_pred > 0 && sp->pred_aligned && sp->pred_pos < sp->n_pred)
        return SPEC_SRC_PREDICTION;
    if (sp->ngram && ngram_at(hist, n_hist) >= 0)
        return SPEC_SRC_NGRAM;
    return sp->draft_model ? SPEC_SRC_DRAFT : SPEC_SRC_NONE;
}

int32_t spec_seq_propose(spec_seq_t *sp, const int32_t *hist, int32_t n_hist, int32_t n_prompt, int32_t k,
                         int32_t *draft, spec_src_t *src)
{
    *src = SPEC_SRC_NONE;
    if (!sp || k <= 0 || n_hist <= n_prompt)
        return 0;
    if (sp->n_pred > 0)
        pred_align(sp, hist, n_hist, n_prompt);
    if (sp->n_pred > 0 && sp->pred_aligned && sp->pred_pos < sp->n_pred) {
        int32_t n = sp->n_pred - sp->pred_pos < k ? sp->n_pred - sp->pred_pos : k;
        memcpy(draft, sp->pred + sp->pred_pos, (size_t)n * sizeof *draft);
        *src = SPEC_SRC_PREDICTION;
        return n;
    }
    if (sp->ngram) {
        const int32_t at = ngram_at(hist, n_hist);
        if (at >= 0) {
            int32_t n = n_hist - at < k ? n_hist - at : k;
            memcpy(draft, hist + at, (size_t)n * sizeof *draft);
            *src = SPEC_SRC_NGRAM;
            return n;
        }
    }
    if (sp->draft_model)
        *src = SPEC_SRC_DRAFT;
    return 0;
}

int32_t spec_seq_length(spec_seq_t *sp, spec_src_t src, const spec_cost_t *cost, int32_t rows, int32_t k_cap)
{
    if (!sp || src <= SPEC_SRC_NONE || src >= SPEC_SRC_COUNT || k_cap <= 0)
        return 0;
    if (k_cap > sp->k_max)
        k_cap = sp->k_max;
    const double a = sp->acc[src] / (sp->acc[src] + sp->rej[src] + 1e-9);
    /* c: the share of the step's time that one more row costs, in rows of
     * progress; the i-th draft token is accepted with probability a^i, so
     * drafts are worth adding while a^i > c */
    double t0 = cost && cost->t0 > 0 ? cost->t0 : 1.0, t1 = cost && cost->t1 > 0 ? cost->t1 : 0.05 * t0;
    if (rows < 1)
        rows = 1;
    /* a draft-model token also costs its draft step (before one was
     * measured: the draft's share of the weights read) */
    double extra = 0;
    if (src == SPEC_SRC_DRAFT && cost)
        extra = cost->t_draft > 0 ? cost->t_draft : cost->draft_ratio * t0;
    const double c = (t1 * rows + extra) / (t0 + t1 * rows);
    /* with refeed, the k-th draft also turns "all k - 1 accepted" (p) into
     * "k - 1 accepted, then a rejection" with probability 1 - a, which
     * costs k rows again (one row's share of the step: t1 / (t0 + ...)) */
    const double c_row = t1 / (t0 + t1 * rows);
    int32_t k = 0;
    double p = 1;
    while (k < k_cap) {
        const double again = cost && cost->refeed ? p * (1 - a) * (k + 1) * c_row : 0;
        p *= a;
        if (p <= c + again)
            break;
        k++;
    }
    sp->probing[src] = false;
    if (k > 0) {
        sp->idle[src] = 0;
        return k;
    }
    /* a draft model's probe first brings its cache up to every token
     * since its last drafts (a prefill on the draft model): only a cheap
     * draft is worth probing */
    if (src == SPEC_SRC_DRAFT && c >= SPEC_DRAFT_PROBE_C)
        return 0;
    /* c >= 1: not even drafts that are always right would pay */
    const int32_t every = c >= 1 ? SPEC_PROBE_MAX : sp->probe_every[src];
    if (++sp->idle[src] >= every) {
        sp->idle[src] = 0;
        sp->probing[src] = true;
        return 1; /* a probe: the source may have started matching again */
    }
    return 0;
}

void spec_seq_feedback(spec_seq_t *sp, spec_src_t src, int32_t drafted, int32_t accepted)
{
    if (!sp || src <= SPEC_SRC_NONE || src >= SPEC_SRC_COUNT || drafted <= 0)
        return;
    sp->acc[src] = sp->acc[src] * SPEC_DECAY + accepted;
    sp->rej[src] = sp->rej[src] * SPEC_DECAY + (accepted < drafted ? 1 : 0);
    sp->n_drafted[src] += drafted;
    sp->n_accepted[src] += accepted;
    if (sp->probing[src]) { /* a failed probe: the next one comes later */
        const int32_t e = sp->probe_every[src];
        sp->probe_every[src] = accepted > 0 ? SPEC_PROBE_EVERY : e * 2 < SPEC_PROBE_MAX ? e * 2 : SPEC_PROBE_MAX;
        sp->probing[src] = false;
    }
    /* a rejected prediction token: pred_align sees the output leave the
     * prediction at the next proposal and re-aligns there */
}

int32_t spec_verify(const int32_t *draft, int32_t n_draft, spec_sample_fn sample, void *ctx)
{
    int32_t accepted = 0;
    for (int32_t r = 0; r <= n_draft; r++) {
        const int32_t tok = sample(ctx, r);
        if (tok < 0 || r == n_draft || tok != draft[r])
            break;
        accepted++;
    }
    return accepted;
}

void spec_cost_init(spec_cost_t *c)
{
    memset(c, 0, sizeof *c);
    c->t0 = 1.0;
    c->t1 = 0.05; /* memory-bound decode: a row costs little until measured */
}

void spec_cost_fix(spec_cost_t *c, double ratio)
{
    spec_cost_init(c);
    c->t1 = ratio > 0 ? ratio : 0.05;
    c->fixed = true;
}

void spec_cost_observe(spec_cost_t *c, int32_t rows, double secs)
{
    if (c->fixed || rows < 1 || !(secs > 0) || secs > 60)
        return;
    const double d = 0.97; /* about the last 30 steps */
    c->sw = c->sw * d + 1;
    c->sx = c->sx * d + rows;
    c->sy = c->sy * d + secs;
    c->sxx = c->sxx * d + (double)rows * rows;
    c->sxy = c->sxy * d + rows * secs;
    const double den = c->sw * c->sxx - c->sx * c->sx;
    const double mean_t = c->sy / c->sw, mean_r = c->sx / c->sw;
    /* the slope needs steps of different sizes; until then keep the
     * ratio and scale to the measured time */
    double t1 = den > 1e-6 * c->sw * c->sw ? (c->sw * c->sxy - c->sx * c->sy) / den : -1;
    if (t1 < 0 || !isfinite(t1)) {
        const double ratio = c->t0 > 0 ? c->t1 / c->t0 : 0.05;
        c->t0 = mean_t / (1 + ratio * mean_r);
        c->t1 = c->t0 * ratio;
        return;
    }
    double t0 = mean_t - t1 * mean_r;
    if (t0 < 0.05 * mean_t)
        t0 = 0.05 * mean_t; /* a step always has a fixed part: the weights' read */
    c->t0 = t0;
    c->t1 = t1;
}

void spec_seq_counts(const spec_seq_t *sp, spec_src_t src, int64_t *drafted, int64_t *accepted)
{
    if (drafted)
        *drafted = sp && src > SPEC_SRC_NONE && src < SPEC_SRC_COUNT ? sp->n_drafted[src] : 0;
    if (accepted)
        *accepted = sp && src > SPEC_SRC_NONE && src < SPEC_SRC_COUNT ? sp->n_accepted[src] : 0;
}
