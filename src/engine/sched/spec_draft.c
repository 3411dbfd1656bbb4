/* spec_draft.c - the draft model of speculative decoding (see spec_draft.h). */
#include "engine/sched/spec_draft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/model/forward.h"
#include "engine/sched/spec.h"
#include "engine/vocab/vocab.h"

#define SPEC_DRAFT_VOCAB_SLACK 128 /* llama.cpp's SPEC_VOCAB_MAX_SIZE_DIFFERENCE */

struct spec_draft {
    fwd_t *f;
    int32_t n_seq, n_ctx, max_batch, n_vocab;
    int32_t **toks;   /* [n_seq][n_ctx]: the tokens in each sequence's cache */
    int32_t *ntok;
    uint64_t *owner;
    fwd_tok_t *batch; /* [max_batch] */
    int32_t *row_req; /* [max_batch]: the request of each logits row */
    double step_s;    /* EMA of one draft step's time */
};

bool spec_draft_compatible(const model_t *draft, const model_t *target, char *why, size_t n)
{
    const vocab_t *a = model_vocab(draft), *b = model_vocab(target);
    const int32_t na = vocab_n_tokens(a), nb = vocab_n_tokens(b);
    if (vocab_type(a) != vocab_type(b) || strcmp(vocab_model_name(a), vocab_model_name(b))) {
        snprintf(why, n, "the draft model's tokenizer is %s, the model's %s", vocab_model_name(a), vocab_model_name(b));
        return false;
    }
    if (na - nb > SPEC_DRAFT_VOCAB_SLACK || nb - na > SPEC_DRAFT_VOCAB_SLACK) {
        snprintf(why, n, "the draft model has %d tokens, the model %d (at most %d apart)", na, nb,
                 SPEC_DRAFT_VOCAB_SLACK);
        return false;
    }
    if (vocab_bos(a) != vocab_bos(b) || vocab_eos(a) != vocab_eos(b)) {
        snprintf(why, n, "the draft model's BOS/EOS are %d/%d, the model's %d/%d", vocab_bos(a), vocab_eos(a),
                 vocab_bos(b), vocab_eos(b));
        return false;
    }
    const int32_t m = na < nb ? na : nb;
    for (int32_t i = 0; i < m; i++) {
        const char *ta = vocab_token_text(a, i), *tb = vocab_token_text(b, i);
        if (!ta || !tb || strcmp(ta, tb)) {
            snprintf(why, n, "token %d differs: '%.40s' in the draft model, '%.40s' in the model", i, ta ? ta : "",
                     tb ? tb : "");
            return false;
        }
    }
    return true;
}

spec_draft_t *spec_draft_create(const model_t *draft, const model_t *target, int32_t n_seq, int32_t n_ctx,
                                int32_t max_batch, int32_t n_threads, lf_err_t *err)
{
    char why[200];
    if (!spec_draft_compatible(draft, target, why, sizeof why)) {
        lf_err_set(err, LF_ERR_INVALID, "the draft model cannot draft for this model: %s", why);
        return NULL;
    }
    spec_draft_t *d = calloc(1, sizeof *d);
    if (!d) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    fwd_opts_t fo = {.n_seq = n_seq, .n_ctx = n_ctx, .max_batch = max_batch, .n_threads = n_threads};
    d->f = fwd_create(draft, &fo, err);
    d->n_seq = n_seq;
    d->n_ctx = d->f ? fwd_n_ctx(d->f) : n_ctx;
    d->max_batch = d->f ? fwd_max_batch(d->f) : max_batch;
    const int32_t na = vocab_n_tokens(model_vocab(draft)), nb = vocab_n_tokens(model_vocab(target));
    d->n_vocab = na < nb ? na : nb;
    d->toks = calloc((size_t)n_seq, sizeof *d->toks);
    d->ntok = calloc((size_t)n_seq, sizeof *d->ntok);
    d->owner = calloc((size_t)n_seq, sizeof *d->owner);
    d->batch = malloc((size_t)d->max_batch * sizeof *d->batch);
    d->row_req = malloc((size_t)d->max_batch * sizeof *d->row_req);
    bool ok = d->f && d->toks && d->ntok && d->owner && d->batch && d->row_req;
    for (int32_t i = 0; ok && i < n_seq; i++)
        ok = (d->toks[i] = malloc((size_t)d->n_ctx * sizeof(int32_t))) != NULL;
    if (!ok) {
        if (d->f)
            lf_err_set(err, LF_ERR_NOMEM, "out of memory for the draft model");
        spec_draft_free(d);
        return NULL;
    }
    return d;
}

void spec_draft_free(spec_draft_t *d)
{
    if (!d)
        return;
    for (int32_t i = 0; d->toks && i < d->n_seq; i++)
        free(d->toks[i]);
    free(d->toks);
    free(d->ntok);
    free(d->owner);
    free(d->batch);
    free(d->row_req);
    fwd_free(d->f);
    free(d);
}

double spec_draft_step_seconds(const spec_draft_t *d)
{
    return d ? d->step_s : 0;
}

static void reset(spec_draft_t *d, int32_t slot)
{
    fwd_seq_rm(d->f, slot);
    d->ntok[slot] = 0;
}

/* Runs the batch of `n` rows; the logits rows (row_req set) give each
 * request its draft number `which`. */
static lf_code_t run_batch(spec_draft_t *d, int32_t n, spec_draft_req_t *reqs, int32_t which, lf_err_t *err)
{
    lf_code_t rc = fwd_decode(d->f, d->batch, n, err);
    if (rc != LF_OK)
        return rc;
    int32_t j = 0;
    for (int32_t i = 0; i < n; i++) {
        const fwd_tok_t *t = &d->batch[i];
        d->toks[t->seq][t->pos] = t->token;
        d->ntok[t->seq] = t->pos + 1;
        if (t->logits) {
            spec_draft_req_t *q = &reqs[d->row_req[i]];
            q->out[which] = spec_argmax(fwd_logits(d->f, j++), d->n_vocab);
        }
    }
    return LF_OK;
}

lf_code_t spec_draft_run(spec_draft_t *d, spec_draft_req_t *reqs, int32_t n, lf_err_t *err)
{
    lf_code_t rc = LF_OK;
    int32_t kmax = 0;
    /* bring each cache up to its tokens but the last (computed below, its
     * logits give the first draft) */
    for (int32_t r = 0; r < n; r++) {
        spec_draft_req_t *q = &reqs[r];
        if (q->slot < 0 || q->slot >= d->n_seq || q->n_hist < 1 || q->n_hist + q->k > d->n_ctx) {
            q->k = 0;
            continue;
        }
        if (q->k > kmax)
            kmax = q->k;
        if (d->owner[q->slot] != q->owner) {
            reset(d, q->slot);
            d->owner[q->slot] = q->owner;
        }
        int32_t lcp = 0, have = d->ntok[q->slot];
        const int32_t *t = d->toks[q->slot];
        while (lcp < have && lcp < q->n_hist - 1 && t[lcp] == q->hist[lcp])
            lcp++;
        if (lcp < have) {
            /* a draft model with recurrent layers goes back to its
             * checkpoint (below) and evaluates the tokens from there */
            const int32_t at = fwd_seq_rewind(d->f, q->slot, lcp, NULL);
            if (at < 0)
                reset(d, q->slot), lcp = 0;
            else
                lcp = at;
        }
        d->ntok[q->slot] = lcp;
    }
    /* the missing tokens of every request, batched; the last row of each
     * wants logits */
    int32_t nb = 0;
    for (int32_t r = 0; r < n && rc == LF_OK; r++) {
        spec_draft_req_t *q = &reqs[r];
        if (q->k <= 0)
            continue;
        for (int32_t p = d->ntok[q->slot]; p < q->n_hist && rc == LF_OK; p++) {
            const bool last = p == q->n_hist - 1;
            d->row_req[nb] = r;
            d->batch[nb++] = (fwd_tok_t){q->hist[p], q->slot, p, last, false};
            if (nb == d->max_batch) {
                rc = run_batch(d, nb, reqs, 0, err);
                nb = 0;
            }
        }
    }
    if (rc == LF_OK && nb > 0)
        rc = run_batch(d, nb, reqs, 0, err);
    /* where the next call can come back to: the end of the history */
    for (int32_t r = 0; r < n && rc == LF_OK; r++)
        if (reqs[r].k > 1)
            fwd_seq_checkpoint(d->f, reqs[r].slot, NULL);
    /* then one draft step per further token, every request together */
    for (int32_t s = 1; s < kmax && rc == LF_OK; s++) {
        nb = 0;
        for (int32_t r = 0; r < n; r++) {
            spec_draft_req_t *q = &reqs[r];
            if (q->k <= s)
                continue;
            d->row_req[nb] = r;
            d->batch[nb++] = (fwd_tok_t){q->out[s - 1], q->slot, q->n_hist + s - 1, true, false};
        }
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        rc = run_batch(d, nb, reqs, s, err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        const double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        d->step_s = d->step_s > 0 ? 0.9 * d->step_s + 0.1 * sec : sec;
    }
    if (rc != LF_OK)
        for (int32_t r = 0; r < n; r++)
            if (reqs[r].slot >= 0 && reqs[r].slot < d->n_seq)
                reset(d, reqs[r].slot);
    return rc;
}
