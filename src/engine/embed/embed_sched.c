/* embed_sched.c - the embedding scheduler (embed_sched.h).
 *
 * One mutex guards the queue, the jobs' shared fields and the statistics;
 * the forward pass runs without it. References to a job: its owner's, one
 * while it is in the queue and one per admitted sequence; whoever drops the
 * last one frees it.
 */
#include "engine/embed/embed_sched.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/embed/pool.h"
#include "engine/model/forward.h"

struct embed_job {
    embed_sched_t *s;
    int32_t n;
    int32_t **toks;        /* [n] copies */
    int32_t *lens;         /* [n] */
    float **out;           /* [n] pooled outputs (scheduler writes) */
    int64_t *n_out;
    int32_t next;          /* next sequence to admit (scheduler) */
    int32_t n_done;        /* sequences finished (under the mutex) */
    bool done;             /* all finished or failed (under the mutex) */
    lf_code_t code;
    char msg[512];
    atomic_bool cancelled;
    int refs;              /* under the mutex */
    pthread_cond_t cond;
    embed_job_t *qnext;    /* queue link */
    bool queued;           /* in the queue (under the mutex) */
};

/* A sequence being evaluated. */
typedef struct {
    embed_job_t *job;
    int32_t idx;           /* sequence index in the job */
    int32_t fed;           /* tokens already in a forward pass */
    int32_t slot;          /* fwd sequence id (KV slot for cache families) */
    float *hidden;         /* [wanted rows][n_embd] collected so far */
    int32_t n_hidden;
} active_t;

struct embed_sched {
    const model_t *m;
    embed_opts_t o;
    fwd_t *fwd;
    pool_ctx_t *pool;
    bool cache;            /* the family has a KV cache: sequences may be split */
    int32_t max_tokens;
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t work;
    bool stop;
    embed_job_t *qhead, *qtail;
    int32_t waiting;       /* sequences queued or active */
    active_t *act;         /* [n_seq] */
    int32_t n_act;
    bool *slot_used;       /* [n_seq] */
    fwd_tok_t *batch;      /* [max_batch] */
    int32_t *tok_act;      /* [max_batch] active index of each batch token */
    embed_stats_t st;
};

static void job_release(embed_job_t *j) /* under the mutex or after the thread is gone */
{
    if (--j->refs > 0)
        return;
    for (int32_t i = 0; i < j->n; i++) {
        free(j->toks[i]);
        free(j->out[i]);
    }
    free(j->toks);
    free(j->lens);
    free(j->out);
    free(j->n_out);
    pthread_cond_destroy(&j->cond);
    free(j);
}

/* Ends job j (under the mutex): with an error, or normally when every
 * sequence is done. */
static void job_finish(embed_sched_t *s, embed_job_t *j, lf_code_t code, const char *msg)
{
    if (j->done)
        return;
    j->done = true;
    j->code = code;
    if (msg)
        snprintf(j->msg, sizeof j->msg, "%s", msg);
    s->waiting -= j->n - j->n_done;
    pthread_cond_broadcast(&j->cond);
}

static void queue_remove(embed_sched_t *s, embed_job_t *j)
{
    embed_job_t **pp = &s->qhead, *prev = NULL;
    while (*pp && *pp != j) {
        prev = *pp;
        pp = &(*pp)->qnext;
    }
    if (!*pp)
        return;
    *pp = j->qnext;
    if (s->qtail == j)
        s->qtail = prev;
    j->queued = false;
    j->qnext = NULL;
    job_release(j); /* the queue's reference */
}

/* Frees active sequence a's slot and buffer and drops its reference. */
static void drop_active(embed_sched_t *s, int32_t a)
{
    active_t *x = &s->act[a];
    embed_job_t *j = x->job;
    fwd_seq_rm(s->fwd, x->slot);
    s->slot_used[x->slot] = false;
    free(x->hidden);
    s->act[a] = s->act[--s->n_act];
    job_release(j);
}

/* Removes the sequences of cancelled and ended jobs (under the mutex). */
static void sweep(embed_sched_t *s)
{
    for (int32_t a = 0; a < s->n_act;) {
        embed_job_t *j = s->act[a].job;
        if (atomic_load(&j->cancelled) || j->done) {
            job_finish(s, j, LF_ERR_CANCELLED, "cancelled");
            drop_active(s, a);
        } else {
            a++;
        }
    }
    for (embed_job_t *j = s->qhead, *nx; j; j = nx) {
        nx = j->qnext;
        if (atomic_load(&j->cancelled) || j->done) {
            job_finish(s, j, LF_ERR_CANCELLED, "cancelled");
            queue_remove(s, j);
        }
    }
}

static int32_t free_slot(const embed_sched_t *s)
{
    for (int32_t i = 0; i < s->o.n_seq; i++)
        if (!s->slot_used[i])
            return i;
    return -1;
}

static int32_t wanted_rows(const embed_sched_t *s, int32_t n_tok)
{
    int32_t r = 0;
    for (int32_t p = 0; p < n_tok; p++)
        r += pool_wants(s->m, s->o.pooling, p, n_tok);
    return r;
}

/* Admits queued sequences (under the mutex): the oldest first, then later
 * ones while slots last and, for families without a cache, while they fit
 * the batch budget `room` (tokens not yet claimed by active sequences). */
static void admit(embed_sched_t *s)
{
    int32_t room = s->o.max_batch;
    for (int32_t a = 0; a < s->n_act; a++)
        room -= s->act[a].job->lens[s->act[a].idx] - s->act[a].fed;
    int32_t skipped = 0;
    for (embed_job_t *j = s->qhead, *nx; j && s->n_act < s->o.n_seq; j = nx) {
        nx = j->qnext;
        while (j->next < j->n && s->n_act < s->o.n_seq) {
            const int32_t len = j->lens[j->next];
            if (!s->cache && len > room) {
                if (++skipped > 64) /* look no further for a sequence that fits */
                    return;
                break; /* try the next job's sequences */
            }
            const int32_t slot = free_slot(s);
            const int32_t rows = wanted_rows(s, len);
            float *h = malloc((size_t)(rows > 0 ? rows : 1) * (size_t)model_hparams(s->m)->n_embd * sizeof(float));
            if (slot < 0 || !h) {
                free(h);
                return;
            }
            s->slot_used[slot] = true;
            s->act[s->n_act++] = (active_t){j, j->next, 0, slot, h, 0};
            j->refs++;
            j->next++;
            room -= len;
        }
        if (j->next == j->n)
            queue_remove(s, j);
    }
}

/* Builds the next batch from the active sequences; returns its size. */
static int32_t build_batch(embed_sched_t *s)
{
    int32_t n = 0;
    for (int32_t a = 0; a < s->n_act && n < s->o.max_batch; a++) {
        active_t *x = &s->act[a];
        const int32_t len = x->job->lens[x->idx];
        int32_t take = len - x->fed;
        if (take > s->o.max_batch - n) {
            if (!s->cache)
                continue; /* whole sequences only: next step */
            take = s->o.max_batch - n;
        }
        const int32_t *t = x->job->toks[x->idx];
        for (int32_t i = 0; i < take; i++) {
            const int32_t pos = x->fed + i;
            s->batch[n] = (fwd_tok_t){.token = t[pos], .seq = x->slot, .pos = pos,
                                      .prompt = fwd_prompt_order(s->fwd, len, pos),
                                      .logits = pool_wants(s->m, s->o.pooling, pos, len) ? FWD_OUT_HIDDEN : 0};
            s->tok_act[n++] = a;
        }
    }
    return n;
}

/* After a pass: hands the hidden rows to their sequences, pools the
 * finished ones; returns the number of tokens evaluated. */
static void collect(embed_sched_t *s, int32_t n)
{
    const int64_t E = model_hparams(s->m)->n_embd;
    int32_t j = 0;
    for (int32_t i = 0; i < n; i++) {
        active_t *x = &s->act[s->tok_act[i]];
        x->fed++;
        if (s->batch[i].logits & FWD_OUT_HIDDEN) {
            memcpy(x->hidden + (int64_t)x->n_hidden * E, fwd_hidden(s->fwd, j++), (size_t)E * sizeof(float));
            x->n_hidden++;
        }
    }
    for (int32_t a = 0; a < s->n_act; a++) {
        active_t *x = &s->act[a];
        embed_job_t *jb = x->job;
        const int32_t len = jb->lens[x->idx];
        if (x->fed < len || jb->out[x->idx])
            continue;
        const int64_t no = pool_out_floats(s->m, s->o.pooling, len);
        float *out = malloc((size_t)(no > 0 ? no : 1) * sizeof(float));
        if (out)
            pool_run(s->pool, s->o.pooling, x->hidden, len, out);
        pthread_mutex_lock(&s->mu);
        if (!out) {
            job_finish(s, jb, LF_ERR_NOMEM, "out of memory for the pooled outputs");
        } else if (!jb->done) {
            jb->out[x->idx] = out;
            jb->n_out[x->idx] = no;
            out = NULL;
            jb->n_done++;
            s->waiting--;
            s->st.inputs++;
            s->st.tokens += (uint64_t)len;
            if (jb->n_done == jb->n)
                job_finish(s, jb, LF_OK, NULL);
        }
        pthread_mutex_unlock(&s->mu);
        free(out);
    }
}

static void fail_active(embed_sched_t *s, lf_code_t code, const char *msg)
{
    pthread_mutex_lock(&s->mu);
    for (int32_t a = 0; a < s->n_act; a++)
        job_finish(s, s->act[a].job, code, msg);
    pthread_mutex_unlock(&s->mu);
}

static void *sched_main(void *arg)
{
    embed_sched_t *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        sweep(s);
        while (!s->stop && s->n_act == 0 && !s->qhead) {
            pthread_cond_wait(&s->work, &s->mu);
            sweep(s);
        }
        if (s->stop)
            break;
        admit(s);
        pthread_mutex_unlock(&s->mu);
        const int32_t n = build_batch(s);
        lf_err_t err = {0};
        if (n > 0 && fwd_decode(s->fwd, s->batch, n, &err) != LF_OK)
            fail_active(s, err.code, err.msg);
        else if (n > 0)
            collect(s, n);
        pthread_mutex_lock(&s->mu);
        if (n > 0)
            s->st.passes++;
        /* finished sequences free their slots */
        for (int32_t a = 0; a < s->n_act;) {
            active_t *x = &s->act[a];
            if (x->fed < x->job->lens[x->idx] && !x->job->done)
                a++;
            else
                drop_active(s, a);
        }
    }
    /* stopping: every job left ends */
    while (s->n_act > 0) {
        job_finish(s, s->act[s->n_act - 1].job, LF_ERR_OVERLOAD, "server stopping");
        drop_active(s, s->n_act - 1);
    }
    while (s->qhead) {
        job_finish(s, s->qhead, LF_ERR_OVERLOAD, "server stopping");
        queue_remove(s, s->qhead);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

embed_sched_t *embed_sched_create(const model_t *m, const embed_opts_t *opts, lf_err_t *err)
{
    if (pool_check(m, opts->pooling, err) != LF_OK)
        return NULL;
    embed_sched_t *s = calloc(1, sizeof *s);
    if (!s)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory"), NULL;
    s->m = m;
    s->o = *opts;
    s->cache = !model_arch(m)->no_cache;
    if (s->o.max_batch <= 0)
        s->o.max_batch = 512;
    if (s->o.n_seq <= 0)
        s->o.n_seq = s->cache ? 8 : 64;
    if (s->o.n_ctx <= 0 || s->o.n_ctx > model_hparams(m)->n_ctx_train)
        s->o.n_ctx = model_hparams(m)->n_ctx_train;
    if (s->o.max_queue <= 0)
        s->o.max_queue = 65536;
    s->max_tokens = s->cache || s->o.max_batch > s->o.n_ctx ? s->o.n_ctx : s->o.max_batch;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    fwd_opts_t fo = {.n_seq = s->o.n_seq, .n_ctx = s->o.n_ctx, .max_batch = s->o.max_batch,
                     .n_threads = s->o.n_threads};
    s->fwd = fwd_create(m, &fo, err);
    s->pool = s->fwd ? pool_ctx_create(m, err) : NULL;
    s->act = calloc((size_t)s->o.n_seq, sizeof *s->act);
    s->slot_used = calloc((size_t)s->o.n_seq, sizeof *s->slot_used);
    s->batch = calloc((size_t)s->o.max_batch, sizeof *s->batch);
    s->tok_act = calloc((size_t)s->o.max_batch, sizeof *s->tok_act);
    if (!s->fwd || !s->pool || !s->act || !s->slot_used || !s->batch || !s->tok_act) {
        if (s->fwd && s->pool)
            lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        embed_sched_free(s);
        return NULL;
    }
    if (pthread_create(&s->thread, NULL, sched_main, s) != 0) {
        lf_err_set(err, LF_ERR_INTERNAL, "cannot start the embedding thread");
        embed_sched_free(s);
        return NULL;
    }
    s->started = true;
    return s;
}

void embed_sched_stop(embed_sched_t *s)
{
    if (!s || !s->started)
        return;
    pthread_mutex_lock(&s->mu);
    const bool was = s->stop;
    s->stop = true;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    if (!was)
        pthread_join(s->thread, NULL);
}

void embed_sched_free(embed_sched_t *s)
{
    if (!s)
        return;
    embed_sched_stop(s);
    fwd_free(s->fwd);
    pool_ctx_free(s->pool);
    free(s->act);
    free(s->slot_used);
    free(s->batch);
    free(s->tok_act);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work);
    free(s);
}

int32_t embed_sched_max_tokens(const embed_sched_t *s) { return s->max_tokens; }
int embed_sched_pooling(const embed_sched_t *s) { return s->o.pooling; }

void embed_sched_stats(embed_sched_t *s, embed_stats_t *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->st;
    out->waiting = s->waiting;
    pthread_mutex_unlock(&s->mu);
    out->max_batch = s->o.max_batch;
    out->n_ctx = s->max_tokens;
    out->pooling = s->o.pooling;
}

embed_job_t *embed_submit(embed_sched_t *s, const int32_t *const *seqs, const int32_t *lens, int32_t n,
                          lf_err_t *err)
{
    const int32_t n_vocab = model_hparams(s->m)->n_vocab;
    if (n <= 0)
        return lf_err_set(err, LF_ERR_INVALID, "no input"), NULL;
    for (int32_t i = 0; i < n; i++) {
        if (lens[i] <= 0)
            return lf_err_set(err, LF_ERR_INVALID, "input %d is empty", i), NULL;
        if (lens[i] > s->max_tokens)
            return lf_err_set(err, LF_ERR_CONTEXT, "input %d has %d tokens; the limit is %d", i, lens[i],
                              s->max_tokens), NULL;
        for (int32_t k = 0; k < lens[i]; k++)
            if (seqs[i][k] < 0 || seqs[i][k] >= n_vocab)
                return lf_err_set(err, LF_ERR_INVALID, "input %d: token id %d is outside the vocabulary (0..%d)",
                                  i, seqs[i][k], n_vocab - 1), NULL;
    }
    embed_job_t *j = calloc(1, sizeof *j);
    if (!j)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory"), NULL;
    j->s = s;
    j->n = n;
    j->toks = calloc((size_t)n, sizeof *j->toks);
    j->lens = calloc((size_t)n, sizeof *j->lens);
    j->out = calloc((size_t)n, sizeof *j->out);
    j->n_out = calloc((size_t)n, sizeof *j->n_out);
    pthread_cond_init(&j->cond, NULL);
    j->refs = 1;
    bool ok = j->toks && j->lens && j->out && j->n_out;
    for (int32_t i = 0; ok && i < n; i++) {
        j->lens[i] = lens[i];
        ok = (j->toks[i] = malloc((size_t)lens[i] * sizeof(int32_t))) != NULL;
        if (ok)
            memcpy(j->toks[i], seqs[i], (size_t)lens[i] * sizeof(int32_t));
    }
    if (!ok) {
        if (!j->toks || !j->out) { /* job_release walks both */
            free(j->toks);
            free(j->lens);
            free(j->out);
            free(j->n_out);
            pthread_cond_destroy(&j->cond);
            free(j);
        } else {
            job_release(j);
        }
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory"), NULL;
    }
    pthread_mutex_lock(&s->mu);
    if (s->stop || s->waiting + n > s->o.max_queue) {
        const bool stopping = s->stop;
        pthread_mutex_unlock(&s->mu);
        job_release(j);
        return lf_err_set(err, LF_ERR_OVERLOAD, stopping ? "server stopping"
                                                          : "too many inputs waiting (%d); try again later",
                          s->o.max_queue), NULL;
    }
    j->refs++; /* the scheduler's */
    j->queued = true;
    if (s->qtail)
        s->qtail->qnext = j;
    else
        s->qhead = j;
    s->qtail = j;
    s->waiting += n;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    return j;
}

int embed_job_wait(embed_job_t *j, int timeout_ms)
{
    embed_sched_t *s = j->s;
    pthread_mutex_lock(&s->mu);
    if (timeout_ms < 0) {
        while (!j->done)
            pthread_cond_wait(&j->cond, &s->mu);
    } else if (!j->done) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += timeout_ms / 1000;
        ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        while (!j->done && pthread_cond_timedwait(&j->cond, &s->mu, &ts) != ETIMEDOUT)
            ;
    }
    const int done = j->done;
    pthread_mutex_unlock(&s->mu);
    return done;
}

lf_code_t embed_job_status(const embed_job_t *j, lf_err_t *err)
{
    if (j->code != LF_OK)
        lf_err_set(err, j->code, "%s", j->msg);
    return j->code;
}

float *embed_job_out(embed_job_t *j, int32_t i, int64_t *n)
{
    if (!j->done || j->code != LF_OK || i < 0 || i >= j->n)
        return NULL;
    *n = j->n_out[i];
    return j->out[i];
}

void embed_job_free(embed_job_t *j)
{
    if (!j)
        return;
    embed_sched_t *s = j->s;
    atomic_store(&j->cancelled, true);
    pthread_mutex_lock(&s->mu);
    pthread_cond_signal(&s->work);
    job_release(j);
    pthread_mutex_unlock(&s->mu);
}
