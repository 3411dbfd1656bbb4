/* sched.c - continuous batching loop (see sched.h for the contract).
 *
 * Locking: s->mu protects the queue, the slots and the stats; each channel
 * has its own mutex + condvar for its event ring. Lock order: s->mu, then a
 * channel's mu. fwd_decode runs with no lock held so acceptors can submit
 * and read events while the engine works.
 */
#include "engine/sched.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/forward.h"
#include "engine/vocab.h"

struct sched_chan {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sched_event_t *ring;
    int32_t cap, head, count;
    int32_t refs;        /* owner + jobs not yet retired */
    int32_t jobs_live;   /* jobs that have not sent DONE */
    bool submitted;
    atomic_bool cancelled;
};

typedef enum { JOB_WAITING, JOB_PREFILL, JOB_DECODE } job_state_t;

typedef struct job {
    struct job *next;     /* queue link */
    sched_chan_t *ch;
    int32_t index;
    int32_t *prompt;
    int32_t n_prompt;
    sched_params_t params;
    job_state_t state;
    int32_t slot;
    int32_t n_past;       /* positions in the KV cache */
    int32_t n_gen;
    int32_t last;         /* last sampled token (decode input) */
    sampler_t *smp;
    int32_t logit_j;      /* index into fwd_logits for this step, -1 none */
} job_t;

struct sched {
    const model_t *model;
    const vocab_t *vocab;
    fwd_t *fwd;
    sched_opts_t o;
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    job_t *qhead, *qtail;
    int32_t n_waiting;
    job_t **slots;        /* n_parallel entries, NULL when free */
    int32_t n_running;
    fwd_tok_t *batch;
    job_t **batch_owner;  /* job per logits-wanted token, in order */
    sched_stats_t st;
};

/* ---- channels ---- */

sched_chan_t *sched_chan_create(sched_t *s)
{
    sched_chan_t *ch = calloc(1, sizeof *ch);
    if (!ch)
        return NULL;
    ch->cap = s->o.chan_cap;
    ch->ring = calloc((size_t)ch->cap, sizeof *ch->ring);
    if (!ch->ring) {
        free(ch);
        return NULL;
    }
    pthread_mutex_init(&ch->mu, NULL);
    pthread_cond_init(&ch->cv, NULL);
    ch->refs = 1;
    atomic_init(&ch->cancelled, false);
    return ch;
}

static void chan_unref(sched_chan_t *ch)
{
    pthread_mutex_lock(&ch->mu);
    int left = --ch->refs;
    pthread_mutex_unlock(&ch->mu);
    if (left == 0) {
        pthread_mutex_destroy(&ch->mu);
        pthread_cond_destroy(&ch->cv);
        free(ch->ring);
        free(ch);
    }
}

/* Room for one more event? DONE events always fit: see chan_push. */
static bool chan_has_room(sched_chan_t *ch)
{
    pthread_mutex_lock(&ch->mu);
    /* keep one slot per live job free for its DONE event */
    bool ok = ch->count + ch->jobs_live < ch->cap;
    pthread_mutex_unlock(&ch->mu);
    return ok;
}

static void chan_push(sched_chan_t *ch, const sched_event_t *ev)
{
    pthread_mutex_lock(&ch->mu);
    if (ch->count < ch->cap) {
        ch->ring[(ch->head + ch->count) % ch->cap] = *ev;
        ch->count++;
    }
    if (ev->kind == SCHED_EV_DONE)
        ch->jobs_live--;
    pthread_cond_broadcast(&ch->cv);
    pthread_mutex_unlock(&ch->mu);
}

int sched_chan_next(sched_chan_t *ch, sched_event_t *ev, int timeout_ms)
{
    struct timespec until;
    if (timeout_ms >= 0) {
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    int ret = 0;
    pthread_mutex_lock(&ch->mu);
    for (;;) {
        if (ch->count > 0) {
            *ev = ch->ring[ch->head];
            ch->head = (ch->head + 1) % ch->cap;
            ch->count--;
            ret = 1;
            break;
        }
        if (ch->jobs_live == 0) {
            ret = -1;
            break;
        }
        int rc = timeout_ms < 0 ? pthread_cond_wait(&ch->cv, &ch->mu)
                                : pthread_cond_timedwait(&ch->cv, &ch->mu, &until);
        if (rc == ETIMEDOUT) {
            ret = 0;
            break;
        }
    }
    pthread_mutex_unlock(&ch->mu);
    return ret;
}

void sched_chan_cancel(sched_chan_t *ch)
{
    if (ch)
        atomic_store(&ch->cancelled, true);
}

void sched_chan_free(sched_chan_t *ch)
{
    if (!ch)
        return;
    sched_chan_cancel(ch);
    chan_unref(ch);
}

/* ---- jobs ---- */

static void job_free(job_t *j)
{
    if (!j)
        return;
    sampler_free(j->smp);
    free(j->prompt);
    free(j);
}

static void job_finish(sched_t *s, job_t *j, sched_finish_t why, lf_code_t code)
{
    sched_event_t ev = {.kind = SCHED_EV_DONE, .index = j->index, .finish = why,
                        .code = code, .n_prompt = j->n_prompt, .n_gen = j->n_gen};
    chan_push(j->ch, &ev);
    if (j->state != JOB_WAITING) {
        fwd_seq_rm(s->fwd, j->slot);
        s->slots[j->slot] = NULL;
        s->n_running--;
    }
    chan_unref(j->ch);
    job_free(j);
}

static void admit(sched_t *s)
{
    for (int32_t i = 0; i < s->o.n_parallel && s->qhead; i++) {
        if (s->slots[i])
            continue;
        job_t *j = s->qhead;
        s->qhead = j->next;
        if (!s->qhead)
            s->qtail = NULL;
        s->n_waiting--;
        if (atomic_load(&j->ch->cancelled)) {
            job_finish(s, j, SCHED_FINISH_CANCELLED, LF_OK);
            i--; /* the slot is still free */
            continue;
        }
        fwd_seq_rm(s->fwd, i);
        j->slot = i;
        j->state = JOB_PREFILL;
        j->n_past = 0;
        s->slots[i] = j;
        s->n_running++;
    }
}

/* Builds this step's batch; returns its token count. */
static int32_t batch_build(sched_t *s, int32_t *n_logits)
{
    int32_t n = 0, nl = 0, budget = s->o.batch_tokens;
    for (int32_t i = 0; i < s->o.n_parallel; i++)
        if (s->slots[i])
            s->slots[i]->logit_j = -1;
    /* decode tokens first: running streams never wait for a long prefill */
    for (int32_t i = 0; i < s->o.n_parallel && n < budget; i++) {
        job_t *j = s->slots[i];
        if (!j)
            continue;
        if (j->state != JOB_DECODE || !chan_has_room(j->ch))
            continue;
        s->batch[n++] = (fwd_tok_t){.token = j->last, .seq = i, .pos = j->n_past, .logits = true};
        j->logit_j = nl;
        s->batch_owner[nl++] = j;
    }
    for (int32_t i = 0; i < s->o.n_parallel && n < budget; i++) {
        job_t *j = s->slots[i];
        if (!j || j->state != JOB_PREFILL || !chan_has_room(j->ch))
            continue;
        int32_t take = j->n_prompt - j->n_past;
        if (take > budget - n)
            take = budget - n;
        for (int32_t k = 0; k < take; k++) {
            int32_t pos = j->n_past + k;
            bool last = pos == j->n_prompt - 1;
            s->batch[n++] = (fwd_tok_t){.token = j->prompt[pos], .seq = i, .pos = pos, .logits = last};
            if (last) {
                j->logit_j = nl;
                s->batch_owner[nl++] = j;
            }
        }
    }
    *n_logits = nl;
    return n;
}

/* After a successful fwd_decode: advance positions, sample, emit. */
static void step_commit(sched_t *s, int32_t n_tok)
{
    /* advance n_past for every job by the tokens it had in the batch */
    for (int32_t k = 0; k < n_tok; k++) {
        job_t *j = s->slots[s->batch[k].seq];
        if (j)
            j->n_past++;
    }
    for (int32_t i = 0; i < s->o.n_parallel; i++) {
        job_t *j = s->slots[i];
        if (!j)
            continue;
        if (j->state == JOB_PREFILL && j->n_past < j->n_prompt)
            continue;
        if (j->logit_j < 0)
            continue;
        if (j->state == JOB_PREFILL) {
            j->state = JOB_DECODE;
            s->st.prompt_tokens += (uint64_t)j->n_prompt;
        }
        const float *logits = fwd_logits(s->fwd, j->logit_j);
        if (!logits) {
            job_finish(s, j, SCHED_FINISH_ERROR, LF_ERR_INTERNAL);
            continue;
        }
        int32_t tok = -1;
        lf_err_t serr;
        if (sampler_sample(j->smp, logits, &tok, &serr) != LF_OK || sampler_accept(j->smp, tok, &serr) != LF_OK) {
            job_finish(s, j, SCHED_FINISH_ERROR, serr.code);
            continue;
        }
        j->last = tok;
        j->n_gen++;
        s->st.gen_tokens++;
        sched_event_t ev = {.kind = SCHED_EV_TOKEN, .index = j->index, .token = tok};
        chan_push(j->ch, &ev);
        if (!j->params.ignore_eos && vocab_is_eog(s->vocab, tok))
            job_finish(s, j, SCHED_FINISH_STOP, LF_OK);
        else if (j->n_gen >= j->params.max_tokens || j->n_past >= s->o.n_ctx)
            job_finish(s, j, SCHED_FINISH_LENGTH, LF_OK);
    }
}

static void drop_cancelled(sched_t *s)
{
    for (int32_t i = 0; i < s->o.n_parallel; i++) {
        job_t *j = s->slots[i];
        if (j && (s->stop || atomic_load(&j->ch->cancelled)))
            job_finish(s, j, SCHED_FINISH_CANCELLED, LF_OK);
    }
    if (s->stop) {
        while (s->qhead) {
            job_t *j = s->qhead;
            s->qhead = j->next;
            s->n_waiting--;
            job_finish(s, j, SCHED_FINISH_CANCELLED, LF_OK);
        }
        s->qtail = NULL;
    }
}

static void *sched_main(void *arg)
{
    sched_t *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        drop_cancelled(s);
        if (s->stop)
            break;
        admit(s);
        int32_t nl = 0, n = batch_build(s, &nl);
        if (n == 0) {
            /* idle, or every channel is full: wait for work or a reader */
            struct timespec t;
            clock_gettime(CLOCK_REALTIME, &t);
            t.tv_nsec += 5 * 1000000L;
            if (t.tv_nsec >= 1000000000L) {
                t.tv_sec++;
                t.tv_nsec -= 1000000000L;
            }
            if (s->n_running == 0)
                pthread_cond_wait(&s->cv, &s->mu);
            else
                pthread_cond_timedwait(&s->cv, &s->mu, &t);
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        lf_err_t err = {0};
        lf_code_t rc = fwd_decode(s->fwd, s->batch, n, &err);
        pthread_mutex_lock(&s->mu);
        s->st.steps++;
        if (rc != LF_OK) {
            /* fail every sequence that was in the batch; the cache is
             * unchanged, the others keep running */
            for (int32_t i = 0; i < s->o.n_parallel; i++) {
                job_t *j = s->slots[i];
                for (int32_t k = 0; j && k < n; k++)
                    if (s->batch[k].seq == i) {
                        job_finish(s, j, rc == LF_ERR_CONTEXT ? SCHED_FINISH_LENGTH : SCHED_FINISH_ERROR,
                                   rc == LF_ERR_CONTEXT ? LF_OK : rc);
                        break;
                    }
            }
            continue;
        }
        step_commit(s, n);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- public ---- */

sched_t *sched_create(const model_t *m, const sched_opts_t *opts, lf_err_t *err)
{
    sched_t *s = calloc(1, sizeof *s);
    if (!s) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->model = m;
    s->vocab = model_vocab(m);
    s->o = *opts;
    if (s->o.n_parallel < 1)
        s->o.n_parallel = 1;
    if (s->o.batch_tokens <= 0)
        s->o.batch_tokens = 512;
    if (s->o.chan_cap <= 0)
        s->o.chan_cap = 64;
    if (s->o.max_queue < 0)
        s->o.max_queue = 0;
    fwd_opts_t fo = {.n_seq = s->o.n_parallel, .n_ctx = s->o.n_ctx,
                     .max_batch = s->o.batch_tokens, .n_threads = s->o.n_threads};
    s->fwd = fwd_create(m, &fo, err);
    if (!s->fwd) {
        free(s);
        return NULL;
    }
    s->o.n_ctx = fwd_n_ctx(s->fwd);
    if (fwd_max_batch(s->fwd) > 0 && fwd_max_batch(s->fwd) < s->o.batch_tokens)
        s->o.batch_tokens = fwd_max_batch(s->fwd);
    s->slots = calloc((size_t)s->o.n_parallel, sizeof *s->slots);
    s->batch = calloc((size_t)s->o.batch_tokens, sizeof *s->batch);
    s->batch_owner = calloc((size_t)s->o.batch_tokens + (size_t)s->o.n_parallel, sizeof *s->batch_owner);
    if (!s->slots || !s->batch || !s->batch_owner) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        goto fail;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->thread, NULL, sched_main, s) != 0) {
        lf_err_set(err, LF_ERR_INTERNAL, "cannot start the scheduler thread");
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        goto fail;
    }
    s->started = true;
    return s;
fail:
    fwd_free(s->fwd);
    free(s->slots);
    free(s->batch);
    free(s->batch_owner);
    free(s);
    return NULL;
}

void sched_stop(sched_t *s)
{
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->started) {
        pthread_join(s->thread, NULL);
        s->started = false;
    }
}

void sched_free(sched_t *s)
{
    if (!s)
        return;
    sched_stop(s);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    fwd_free(s->fwd);
    free(s->slots);
    free(s->batch);
    free(s->batch_owner);
    free(s);
}

int32_t sched_n_ctx(const sched_t *s)
{
    return s->o.n_ctx;
}

void sched_stats(sched_t *s, sched_stats_t *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->st;
    out->running = s->n_running;
    out->waiting = s->n_waiting;
    out->n_parallel = s->o.n_parallel;
    out->n_ctx = s->o.n_ctx;
    out->kv_cap_tokens = (int64_t)s->o.n_parallel * s->o.n_ctx;
    out->kv_used_tokens = 0;
    for (int32_t i = 0; i < s->o.n_parallel; i++)
        if (s->slots[i])
            out->kv_used_tokens += s->slots[i]->n_past;
    out->kv_bytes = fwd_kv_bytes(s->fwd);
    pthread_mutex_unlock(&s->mu);
}

lf_code_t sched_submit(sched_t *s, sched_chan_t *ch, const int32_t *const *prompts,
                       const size_t *n_prompts, const sched_params_t *params,
                       int32_t n, lf_err_t *err)
{
    if (n < 1 || ch->submitted)
        return lf_err_set(err, LF_ERR_INTERNAL, "bad submit");
    if (n > ch->cap / 2)
        return lf_err_set(err, LF_ERR_INVALID, "too many prompts in one request (at most %d)", ch->cap / 2);
    int32_t n_vocab = vocab_n_tokens(s->vocab);
    for (int32_t i = 0; i < n; i++) {
        if (n_prompts[i] == 0)
            return lf_err_set(err, LF_ERR_INVALID, "prompt %d is empty", i);
        if (params[i].max_tokens < 1)
            return lf_err_set(err, LF_ERR_INVALID, "max_tokens must be at least 1");
        if ((int64_t)n_prompts[i] + params[i].max_tokens > s->o.n_ctx)
            return lf_err_set(err, LF_ERR_CONTEXT,
                              "This model's maximum context length is %d tokens. However, you requested "
                              "%lld tokens (%zu in the messages, %d in the completion). Please reduce the "
                              "length of the messages or completion.",
                              s->o.n_ctx, (long long)n_prompts[i] + params[i].max_tokens, n_prompts[i],
                              params[i].max_tokens);
        for (size_t k = 0; k < n_prompts[i]; k++)
            if (prompts[i][k] < 0 || prompts[i][k] >= n_vocab)
                return lf_err_set(err, LF_ERR_INVALID, "token id %d is out of vocabulary (0..%d)",
                                  prompts[i][k], n_vocab - 1);
    }
    job_t **jobs = calloc((size_t)n, sizeof *jobs);
    if (!jobs)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    int32_t eos = vocab_eos(s->vocab);
    for (int32_t i = 0; i < n; i++) {
        sampler_params_t sp = params[i].sampling;
        if (params[i].ignore_eos && eos >= 0) {
            sp.banned = &eos;
            sp.n_banned = 1;
        }
        lf_code_t rc = LF_ERR_NOMEM;
        jobs[i] = calloc(1, sizeof **jobs);
        if (jobs[i])
            jobs[i]->prompt = malloc(n_prompts[i] * sizeof(int32_t));
        if (jobs[i] && jobs[i]->prompt) {
            jobs[i]->smp = sampler_create(&sp, n_vocab, params[i].entropy, err);
            rc = jobs[i]->smp ? sampler_add_prompt(jobs[i]->smp, prompts[i], (int32_t)n_prompts[i], err)
                              : (err ? err->code : LF_ERR_INVALID);
        } else {
            lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        }
        if (rc != LF_OK) {
            for (int32_t k = 0; k <= i; k++)
                job_free(jobs[k]);
            free(jobs);
            return err ? err->code : rc;
        }
        memcpy(jobs[i]->prompt, prompts[i], n_prompts[i] * sizeof(int32_t));
        jobs[i]->n_prompt = (int32_t)n_prompts[i];
        jobs[i]->params = params[i];
        jobs[i]->index = i;
        jobs[i]->ch = ch;
        jobs[i]->state = JOB_WAITING;
        jobs[i]->slot = -1;
    }
    pthread_mutex_lock(&s->mu);
    /* jobs that will find a free slot do not count as queued */
    if (s->stop || s->n_running + s->n_waiting + n - s->o.n_parallel > s->o.max_queue) {
        pthread_mutex_unlock(&s->mu);
        for (int32_t i = 0; i < n; i++)
            job_free(jobs[i]);
        free(jobs);
        return lf_err_set(err, LF_ERR_OVERLOAD, "The server is busy: too many requests waiting; retry later");
    }
    pthread_mutex_lock(&ch->mu);
    ch->submitted = true;
    ch->refs += n;
    ch->jobs_live += n;
    pthread_mutex_unlock(&ch->mu);
    for (int32_t i = 0; i < n; i++) {
        if (s->qtail)
            s->qtail->next = jobs[i];
        else
            s->qhead = jobs[i];
        s->qtail = jobs[i];
        s->n_waiting++;
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    free(jobs);
    return LF_OK;
}
