/* spec_mtp.c - MTP drafting (see spec_mtp.h). */
#include "engine/sched/spec_mtp.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/model/forward.h"
#include "engine/model/nextn.h"
#include "engine/sched/spec.h"

enum { MTP_K_MAX = 16 };

struct spec_mtp {
    model_t *view;
    fwd_t *f;
    int32_t n_seq, max_batch, n_vocab;
    int64_t E;
    int32_t *base;    /* [n_seq] target position of the slot's row 0, -1: nothing fed */
    bool *broken;     /* [n_seq] no drafts until reset */
    float *pend;      /* [n_seq][E] the target's hidden state at the slot's last row */
    /* one batch: the block's rows and their inputs */
    fwd_tok_t *toks;
    fwd_mm_t *mm;
    const float **hs;
    int32_t *tok;
    const float **prev; /* [n_seq] during a feed: the hidden state before the next row */
    int32_t *next_pos;  /* [n_seq] during a feed: the block's position of the next row */
    int32_t last_row[SPEC_MTP_SEQ_MAX]; /* drafting: each request's row in the last batch */
    float *in;          /* [max_batch][E] input rows */
    void *scratch;
    double step_s, ratio;
};

spec_mtp_t *spec_mtp_create(const model_t *target, int32_t n_seq, int32_t n_ctx, int32_t max_batch,
                            int32_t n_threads, lf_err_t *err)
{
    model_t *view = model_nextn_view(target, err);
    if (!view)
        return NULL;
    spec_mtp_t *m = calloc(1, sizeof *m);
    if (!m) {
        model_free(view);
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    m->view = view;
    /* room for the drafting rows after a full context */
    fwd_opts_t fo = {.n_seq = n_seq, .n_ctx = n_ctx + MTP_K_MAX + 1, .max_batch = max_batch, .n_threads = n_threads};
    m->f = fwd_create(view, &fo, err);
    m->n_seq = n_seq;
    m->max_batch = m->f ? fwd_max_batch(m->f) : max_batch;
    m->E = model_hparams(target)->n_embd;
    m->n_vocab = model_hparams(target)->n_vocab;
    m->ratio = (double)model_decode_bytes(view) / (double)model_decode_bytes(target);
    const size_t B = (size_t)m->max_batch;
    m->base = malloc((size_t)n_seq * sizeof *m->base);
    m->broken = calloc((size_t)n_seq, sizeof *m->broken);
    m->pend = calloc((size_t)n_seq * (size_t)m->E, sizeof *m->pend);
    m->toks = calloc(B, sizeof *m->toks);
    m->mm = calloc(B, sizeof *m->mm);
    m->hs = calloc(B, sizeof *m->hs);
    m->tok = calloc(B, sizeof *m->tok);
    m->prev = calloc((size_t)n_seq, sizeof *m->prev);
    m->next_pos = calloc((size_t)n_seq, sizeof *m->next_pos);
    m->in = malloc(B * (size_t)m->E * sizeof *m->in);
    m->scratch = malloc(nextn_input_scratch(view, m->max_batch));
    if (!m->f || !m->base || !m->broken || !m->pend || !m->toks || !m->mm || !m->hs || !m->tok || !m->prev || !m->next_pos ||
        !m->in || !m->scratch) {
        if (m->f)
            lf_err_set(err, LF_ERR_NOMEM, "out of memory for the MTP block");
        spec_mtp_free(m);
        return NULL;
    }
    for (int32_t i = 0; i < n_seq; i++)
        m->base[i] = -1;
    return m;
}

void spec_mtp_free(spec_mtp_t *m)
{
    if (!m)
        return;
    fwd_free(m->f);
    model_free(m->view);
    free(m->base);
    free(m->broken);
    free(m->pend);
    free(m->toks);
    free(m->mm);
    free(m->hs);
    free(m->tok);
    free(m->prev);
    free(m->next_pos);
    free(m->in);
    free(m->scratch);
    free(m);
}

void spec_mtp_reset(spec_mtp_t *m, int32_t seq)
{
    if (seq < 0 || seq >= m->n_seq)
        return;
    fwd_seq_rm(m->f, seq);
    m->base[seq] = -1;
    m->broken[seq] = false;
    memset(m->pend + (int64_t)seq * m->E, 0, (size_t)m->E * sizeof(float));
}

/* Runs the batch's n rows (tokens tok[], hidden states hs[]); `out` sets
 * FWD_OUT_* on every row. */
static lf_code_t run(spec_mtp_t *m, int32_t n, uint8_t out, lf_err_t *err)
{
    nextn_input(fwd_pool(m->f), m->view, m->tok, m->hs, n, m->scratch, m->in);
    for (int32_t i = 0; i < n; i++) {
        m->mm[i] = (fwd_mm_t){.embd = m->in + (int64_t)i * m->E};
        m->toks[i].token = m->tok[i];
        m->toks[i].logits = out;
        m->toks[i].prompt = false;
    }
    return fwd_decode_mm(m->f, m->toks, m->mm, n, err);
}

lf_code_t spec_mtp_feed(spec_mtp_t *m, const spec_mtp_row_t *rows, int32_t n, lf_err_t *err)
{
    for (int32_t s = 0; s < m->n_seq; s++)
        m->prev[s] = NULL;
    int32_t nb = 0;
    lf_code_t rc = LF_OK;
    for (int32_t i = 0; i < n && rc == LF_OK; i++) {
        const spec_mtp_row_t *r = &rows[i];
        const int32_t s = r->seq;
        if (s < 0 || s >= m->n_seq || m->broken[s] || r->pos < 0)
            continue;
        if (m->base[s] < 0)
            m->base[s] = r->pos; /* a reused prompt prefix: start here */
        if (!m->prev[s]) { /* the slot's first row in this feed */
            m->prev[s] = m->pend + (int64_t)s * m->E;
            m->next_pos[s] = fwd_seq_len(m->f, s);
        }
        if (r->pos - m->base[s] != m->next_pos[s]) {
            m->broken[s] = true;
            continue;
        }
        m->toks[nb] = (fwd_tok_t){.seq = s, .pos = m->next_pos[s]++};
        m->tok[nb] = r->token;
        m->hs[nb++] = m->prev[s];
        m->prev[s] = r->h;
        if (nb == m->max_batch) {
            rc = run(m, nb, 0, err);
            nb = 0;
        }
    }
    if (rc == LF_OK && nb > 0)
        rc = run(m, nb, 0, err);
    for (int32_t s = 0; s < m->n_seq; s++) {
        if (!m->prev[s])
            continue;
        if (rc != LF_OK)
            m->broken[s] = true;
        else if (m->prev[s] != m->pend + (int64_t)s * m->E)
            memcpy(m->pend + (int64_t)s * m->E, m->prev[s], (size_t)m->E * sizeof(float));
    }
    return rc;
}

bool spec_mtp_ready(const spec_mtp_t *m, int32_t seq)
{
    return seq >= 0 && seq < m->n_seq && !m->broken[seq] && m->base[seq] >= 0;
}

void spec_mtp_draft_many(spec_mtp_t *m, spec_mtp_req_t *reqs, int32_t n)
{
    int32_t kmax = 0, len[SPEC_MTP_SEQ_MAX];
    const int32_t cap = m->max_batch < SPEC_MTP_SEQ_MAX ? m->max_batch : SPEC_MTP_SEQ_MAX;
    const int32_t nr = n < cap ? n : cap; /* one row per request and draft step */
    for (int32_t r = 0; r < n; r++) {
        spec_mtp_req_t *q = &reqs[r];
        bool dup = false;
        for (int32_t o = 0; o < r && !dup; o++)
            dup = reqs[o].seq == q->seq;
        if (r >= nr || dup || !spec_mtp_ready(m, q->seq) || q->next < 0 || q->next >= m->n_vocab || q->k <= 0) {
            q->k = 0;
            continue;
        }
        if (q->k > MTP_K_MAX)
            q->k = MTP_K_MAX;
        len[r] = fwd_seq_len(m->f, q->seq);
        if (q->k > kmax)
            kmax = q->k;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int32_t row[SPEC_MTP_SEQ_MAX]; /* each request's row in the last batch, -1: none */
    for (int32_t step = 0; step < kmax; step++) {
        int32_t nb = 0;
        for (int32_t r = 0; r < nr; r++) {
            spec_mtp_req_t *q = &reqs[r];
            row[r] = -1;
            if (q->k <= step)
                continue;
            m->toks[nb] = (fwd_tok_t){.seq = q->seq, .pos = len[r] + step};
            m->tok[nb] = step == 0 ? q->next : q->out[step - 1];
            m->hs[nb] = step == 0 ? m->pend + (int64_t)q->seq * m->E : fwd_hidden(m->f, m->last_row[r]);
            row[r] = nb++;
        }
        if (nb == 0 || run(m, nb, FWD_OUT_LOGITS | FWD_OUT_HIDDEN, NULL) != LF_OK) {
            for (int32_t r = 0; r < nr; r++) /* keep what was drafted before */
                if (reqs[r].k > step)
                    reqs[r].k = step;
            break;
        }
        for (int32_t r = 0; r < nr; r++)
            if (row[r] >= 0) {
                reqs[r].out[step] = spec_argmax(fwd_logits(m->f, row[r]), m->n_vocab);
                m->last_row[r] = row[r];
            }
    }
    /* the drafting rows are not the target's */
    for (int32_t r = 0; r < nr; r++) {
        spec_mtp_req_t *q = &reqs[r];
        if (q->k <= 0)
            continue;
        if (fwd_seq_len(m->f, q->seq) != len[r] && fwd_seq_truncate(m->f, q->seq, len[r], NULL) != LF_OK) {
            m->broken[q->seq] = true;
            q->k = 0;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (kmax > 0) {
        const double sec = ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec)) / kmax;
        m->step_s = m->step_s > 0 ? 0.9 * m->step_s + 0.1 * sec : sec;
    }
}

int32_t spec_mtp_draft(spec_mtp_t *m, int32_t seq, int32_t next, int32_t k, int32_t *out)
{
    spec_mtp_req_t q = {seq, next, k, out};
    spec_mtp_draft_many(m, &q, 1);
    return q.k;
}

double spec_mtp_step_seconds(const spec_mtp_t *m) { return m->step_s; }
double spec_mtp_cost_ratio(const spec_mtp_t *m) { return m->ratio; }
