/* sched.c - continuous batching loop (see sched.h for the contract).
 *
 * Locking: s->mu protects the queue, the slots and the stats; each channel
 * has its own mutex + condvar for its event ring. Lock order: s->mu, then a
 * channel's mu. fwd_decode runs with no lock held so acceptors can submit
 * and read events while the engine works.
 */
#include "engine/sched/sched.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/model/forward.h"
#include "engine/sched/sched_media.h"
#include "engine/sched/spec_draft.h"
#include "engine/sched/spec_mtp.h"
#include "engine/vocab/vocab.h"
#include "grammar/grammar.h"

struct sched_chan {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sched_event_t *ring;
    int32_t cap, head, count;
    int32_t refs;        /* owner + jobs not yet retired */
    int32_t jobs_live;   /* jobs that have not sent DONE */
    int32_t planned;     /* TOKEN events the current step will push */
    bool submitted;
    atomic_bool cancelled;
    atomic_bool *job_cancel; /* per job index (sched_chan_cancel_job) */
    bool *group_ready;       /* per share group: the leader's prompt is in */
    int32_t n_jobs;
};

typedef enum { JOB_WAITING, JOB_PREFILL, JOB_DECODE } job_state_t;

typedef struct job {
    struct job *next;     /* queue link */
    sched_chan_t *ch;
    int32_t index;
    int32_t *prompt;      /* prompt, then the generated tokens: [n_prompt + max_tokens] */
    int32_t n_prompt;
    uint64_t arrival;     /* submit order: the newest running job is preempted first */
    sched_params_t params;
    job_state_t state;
    int32_t slot;
    int32_t n_past;       /* positions in the KV cache */
    int32_t target;       /* JOB_PREFILL: positions to compute before decoding (the
                             prompt; after a preemption, prompt + generated - 1) */
    bool resumed;         /* readmitted after a preemption: no new prompt stats */
    int32_t n_cached;     /* prompt positions reused from the prefix cache */
    int32_t n_gen;
    int32_t last;         /* last sampled token (decode input) */
    sampler_t *smp;
    int32_t logit_j;      /* index into fwd_logits for this step, -1 none */
    int32_t *stop_ids;    /* params.stop_token_ids (owned copy) */
    bool follower;        /* share_group member that waits for its leader */
    sched_prompt_lp_t *plp; /* prompt logprobs being built (owned until sent) */
    /* structured output: the matcher and its next-token mask (mask.c) */
    grammar_matcher_t *gm;
    uint32_t *mask;
    int mask_state;       /* MASK_* (guarded by sched.gmu) */
    lf_code_t mask_code;
    struct job *gnext;    /* mask queue link */
    sched_media_t *media; /* the prompt's images (NULL: text only) */
    /* speculative decoding (spec.h): this step's drafts follow `last` */
    spec_seq_t *spec;     /* NULL: the job never speculates */
    int32_t draft[SPEC_K_MAX];
    int32_t n_draft;
    int32_t refeed_to;    /* > n_past: positions [n_past, refeed_to) of prompt[] are
                             evaluated again before `last` (a recurrent state
                             rolled back to its checkpoint, fwd_seq_rewind) */
    spec_src_t draft_src;
    int32_t pred_accepted, pred_rejected;
} job_t;

enum { MASK_NONE = 0, MASK_QUEUED, MASK_READY, MASK_FAILED };

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
    uint64_t arrivals;
    bool kv_tight;        /* a preemption happened: admit nothing until a job leaves */
    fwd_tok_t *batch;
    fwd_mm_t *batch_mm;   /* multimodal rows of the batch (used when has_mm) */
    bool has_mm;
    vis_cache_t *vcache;  /* encoded images (image_cache_mb) */
    job_t **batch_owner;  /* job per logits-wanted token, in order */
    int32_t *batch_lpos;  /* position of each logits-wanted token */
    float *lp_buf;        /* n_vocab: log-softmax scratch */
    sched_stats_t st;
    spec_cost_t cost;     /* measured step time per row (draft lengths) */
    spec_draft_t *draft;  /* the draft model's context, or NULL */
    spec_mtp_t *mtp;      /* the model's MTP block drafting instead (--spec mtp), or NULL */
    spec_mtp_row_t *mtp_rows; /* this step's rows for it [batch_tokens] */
    spec_mtp_req_t *mreq;     /* this step's drafting requests to it [n_parallel] */
    spec_draft_req_t *dreq; /* this step's draft-model requests [n_parallel] */
    int32_t *dreq_row;    /* batch index of each request's first draft row */
    int32_t n_dreq;
    bool spec_hold;       /* this step: no drafts (the last one ran out of KV) */
    /* mask thread: computes constrained jobs' token masks */
    pthread_t gthread;
    bool gstarted, gstop;
    pthread_mutex_t gmu;
    pthread_cond_t gcv;   /* work queued / a mask finished */
    job_t *gq_head, *gq_tail;
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
        for (int32_t i = 0; i < ch->count; i++)
            if (ch->ring[(ch->head + i) % ch->cap].kind == SCHED_EV_PROMPT)
                free(ch->ring[(ch->head + i) % ch->cap].prompt_lp);
        free(ch->ring);
        free(ch->job_cancel);
        free(ch->group_ready);
        free(ch);
    }
}

/* Reserves room for one TOKEN event of this step; false when the channel
 * is full. One slot per live job stays free for its DONE event, so DONE
 * events always fit (see chan_push). Only the scheduler thread calls this. */
static bool chan_reserve(sched_chan_t *ch)
{
    pthread_mutex_lock(&ch->mu);
    bool ok = ch->count + ch->planned + ch->jobs_live < ch->cap;
    if (ok)
        ch->planned++;
    pthread_mutex_unlock(&ch->mu);
    return ok;
}

static void chan_unplan(sched_chan_t *ch)
{
    pthread_mutex_lock(&ch->mu);
    ch->planned = 0;
    pthread_mutex_unlock(&ch->mu);
}

static void chan_push(sched_chan_t *ch, const sched_event_t *ev)
{
    pthread_mutex_lock(&ch->mu);
    if (ch->count < ch->cap) {
        ch->ring[(ch->head + ch->count) % ch->cap] = *ev;
        ch->count++;
    } else if (ev->kind == SCHED_EV_PROMPT) {
        free(ev->prompt_lp); /* cannot happen (reserved); never leak */
    }
    if (ev->kind == SCHED_EV_DONE)
        ch->jobs_live--;
    pthread_mutex_unlock(&ch->mu);
    /* Wake the reader after unlocking: woken under the lock it would
     * immediately block on ch->mu again and need a second futex wake (once
     * per token on 2 shared cores). ch stays alive: the pushing job still
     * holds its reference (chan_unref comes after the last push). */
    pthread_cond_broadcast(&ch->cv);
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

void sched_chan_cancel_job(sched_chan_t *ch, int32_t index)
{
    if (ch && ch->job_cancel && index >= 0 && index < ch->n_jobs)
        atomic_store(&ch->job_cancel[index], true);
}

static bool job_cancelled(const job_t *j)
{
    return atomic_load(&j->ch->cancelled) || (j->ch->job_cancel && atomic_load(&j->ch->job_cancel[j->index]));
}

void sched_chan_free(sched_chan_t *ch)
{
    if (!ch)
        return;
    sched_chan_cancel(ch);
    chan_unref(ch);
}

/* ---- mask thread ---- */

static void *mask_main(void *arg)
{
    sched_t *s = arg;
    pthread_mutex_lock(&s->gmu);
    for (;;) {
        while (!s->gq_head && !s->gstop)
            pthread_cond_wait(&s->gcv, &s->gmu);
        if (!s->gq_head && s->gstop)
            break;
        job_t *j = s->gq_head;
        s->gq_head = j->gnext;
        if (!s->gq_head)
            s->gq_tail = NULL;
        j->gnext = NULL;
        pthread_mutex_unlock(&s->gmu);
        lf_err_t err = {0};
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        lf_code_t rc = grammar_matcher_mask(j->gm, j->mask, &err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        grammar_engine_note_mask(j->params.grammar_engine,
                                 (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
        pthread_mutex_lock(&s->gmu);
        j->mask_code = rc;
        j->mask_state = rc == LF_OK ? MASK_READY : MASK_FAILED;
        pthread_cond_broadcast(&s->gcv);
    }
    pthread_mutex_unlock(&s->gmu);
    return NULL;
}

/* Queues the computation of j's next mask. */
static void mask_request(sched_t *s, job_t *j)
{
    pthread_mutex_lock(&s->gmu);
    j->mask_state = MASK_QUEUED;
    j->gnext = NULL;
    if (s->gq_tail)
        s->gq_tail->gnext = j;
    else
        s->gq_head = j;
    s->gq_tail = j;
    pthread_cond_broadcast(&s->gcv);
    pthread_mutex_unlock(&s->gmu);
}

/* Waits until j's mask is no longer being computed; returns its state. */
static int mask_wait(sched_t *s, job_t *j)
{
    pthread_mutex_lock(&s->gmu);
    while (j->mask_state == MASK_QUEUED)
        pthread_cond_wait(&s->gcv, &s->gmu);
    int st = j->mask_state;
    pthread_mutex_unlock(&s->gmu);
    return st;
}

/* ---- jobs ---- */

static void job_free(job_t *j)
{
    if (!j)
        return;
    spec_seq_free(j->spec);
    sampler_free(j->smp);
    free(j->prompt);
    free(j->stop_ids);
    free(j->plp);
    grammar_matcher_free(j->gm);
    grammar_release(j->params.grammar);
    free(j->mask);
    sched_media_release(j->media);
    free(j);
}

static void job_finish_tok(sched_t *s, job_t *j, sched_finish_t why, lf_code_t code, int32_t stop_token)
{
    if (j->gm)
        mask_wait(s, j); /* the mask thread may still hold it */
    sched_event_t ev = {.kind = SCHED_EV_DONE, .index = j->index, .finish = why, .code = code,
                        .n_prompt = j->n_prompt, .n_cached = j->n_cached, .n_gen = j->n_gen,
                        .stop_token = stop_token, .n_pred_accepted = j->pred_accepted,
                        .n_pred_rejected = j->pred_rejected};
    if (j->params.share_group > 0 && !j->follower)
        j->ch->group_ready[j->params.share_group] = true; /* never leave followers waiting */
    chan_push(j->ch, &ev);
    if (j->state != JOB_WAITING) {
        fwd_seq_rm(s->fwd, j->slot);
        s->slots[j->slot] = NULL;
        s->n_running--;
        s->kv_tight = false;
    }
    chan_unref(j->ch);
    job_free(j);
}

static void job_finish(sched_t *s, job_t *j, sched_finish_t why, lf_code_t code)
{
    job_finish_tok(s, j, why, code, -1);
}

/* Whether the KV budget has room for j's positions to compute plus one
 * (blocks not held by a sequence; unused cached blocks can be evicted;
 * sliding-window layers need their window only). */
static bool kv_fits(sched_t *s, const job_t *j)
{
    return fwd_kv_fits(s->fwd, j->target);
}

static job_t *queue_pop(sched_t *s)
{
    job_t *j = s->qhead;
    s->qhead = j->next;
    if (!s->qhead)
        s->qtail = NULL;
    j->next = NULL;
    s->n_waiting--;
    return j;
}

/* First come, first served: the head of the queue takes the next free slot;
 * when the KV budget cannot hold it (or a preemption just happened) nobody
 * overtakes it, it waits for a running job to leave. With no job running it
 * is always admitted (the budget holds at least one full context). */
static void admit(sched_t *s)
{
    for (int32_t i = 0; i < s->o.n_parallel && s->qhead; i++) {
        if (s->slots[i])
            continue;
        job_t *j = s->qhead;
        /* a follower waits (and keeps the FIFO order) until its leader's
         * prompt is in the prefix cache */
        if (j->follower && !j->ch->group_ready[j->params.share_group] && !job_cancelled(j))
            break;
        if (job_cancelled(j)) {
            job_finish(s, queue_pop(s), SCHED_FINISH_CANCELLED, LF_OK);
            i--; /* the slot is still free */
            continue;
        }
        if (s->n_running > 0 && (s->kv_tight || !kv_fits(s, j)))
            break;
        queue_pop(s);
        fwd_seq_rm(s->fwd, i);
        if (s->mtp)
            spec_mtp_reset(s->mtp, i);
        j->slot = i;
        j->state = JOB_PREFILL;
        /* reuse the cached K/V of the longest known prompt prefix (whole
         * blocks; at least one token is left to compute for the logits) */
        j->n_past = j->plp ? 0 : fwd_seq_attach_prefix(s->fwd, i, j->prompt, j->n_prompt);
        if (j->n_past < 0 || j->n_past >= j->n_prompt)
            j->n_past = 0;
        if (!j->resumed)
            j->n_cached = j->n_past;
        s->slots[i] = j;
        s->n_running++;
        if (j->gm && j->mask_state == MASK_NONE)
            mask_request(s, j); /* computed while the prompt is processed */
    }
}

/* KV pressure (fwd_decode said LF_ERR_NOMEM): the running job that arrived
 * last gives its blocks back and goes to the head of the queue; when it is
 * readmitted it recomputes its prompt and the tokens it generated (they are
 * not sent again) and continues with its sampler state untouched. False when
 * fewer than two jobs run (preempting the only one cannot help). */
static bool preempt_newest(sched_t *s)
{
    job_t *v = NULL;
    for (int32_t i = 0; i < s->o.n_parallel; i++)
        if (s->slots[i] && (!v || s->slots[i]->arrival > v->arrival))
            v = s->slots[i];
    if (!v || s->n_running < 2)
        return false;
    fwd_seq_rm(s->fwd, v->slot);
    s->slots[v->slot] = NULL;
    s->n_running--;
    v->state = JOB_WAITING;
    v->slot = -1;
    v->n_past = 0;
    v->refeed_to = 0;
    v->resumed = true;
    /* the KV held the prompt and every generated token but the last (the
     * next decode input) */
    v->target = v->n_gen > 0 ? v->n_prompt + v->n_gen - 1 : v->n_prompt;
    v->next = s->qhead;
    s->qhead = v;
    if (!s->qtail)
        s->qtail = v;
    s->n_waiting++;
    s->kv_tight = true;
    s->st.preemptions++;
    return true;
}

/* The prefill chunk of a job with images: only cells whose image rows are
 * ready, and a bidirectional image wholly in one batch (cut before it when
 * it does not fit what is left of the step; alone in a batch it always
 * fits, submit checks that). False: nothing of this job this step. */
static bool media_limit(sched_t *s, job_t *j, int32_t n_batch, int32_t *take)
{
    const int32_t ready = sched_media_ready_until(j->media, s->vcache, j->n_past);
    if (ready <= j->n_past)
        return false;
    if (j->n_past + *take > ready)
        *take = ready - j->n_past;
    const int32_t end = j->n_past + *take;
    for (int32_t pos = j->n_past; pos < end; pos++) {
        const int32_t be = sched_media_bidir_end(j->media, pos);
        if (be < 0 || be <= end)
            continue;
        if (pos > j->n_past) { /* stop before the image */
            *take = pos - j->n_past;
            return true;
        }
        /* the image starts this chunk: all of it or nothing this step */
        if (be - j->n_past > s->o.batch_tokens - n_batch || be > ready)
            return false;
        *take = be - j->n_past;
        return true;
    }
    return *take > 0;
}

/* One encoder stage for the first job whose prefill waits on an image
 * (called without s->mu: the media is only touched by this thread).
 * Returns whether there was one. */
static bool media_encode(sched_t *s, job_t *const *jobs, int32_t n_jobs)
{
    for (int32_t i = 0; i < n_jobs; i++) {
        job_t *j = jobs[i];
        if (!j || !j->media || j->state != JOB_PREFILL)
            continue;
        if (sched_media_ready_until(j->media, s->vcache, j->n_past) >= j->target)
            continue;
        if (sched_media_encode_step(j->media, s->vcache, fwd_pool(s->fwd), j->n_past))
            return true;
    }
    return false;
}

/* The outputs (FWD_OUT_*) a row of j asks: its logits if wanted, and
 * its hidden state for the MTP block. */
static uint8_t job_out(const sched_t *s, const job_t *j, bool logits)
{
    return (uint8_t)((logits ? FWD_OUT_LOGITS : 0) | (s->mtp && !j->media ? FWD_OUT_HIDDEN : 0));
}

/* Positions the job evaluates again before its decode input. */
static int32_t job_refeed(const job_t *j)
{
    return j->refeed_to > j->n_past ? j->refeed_to - j->n_past : 0;
}

/* Builds this step's batch; returns its token count.
 *
 * Numerics (forward.h): every token is computed with the same flags whatever
 * the batch, the chunking or a preemption, so a sequence's output never
 * depends on its neighbours: prompt tokens (of a prompt of >= 2 tokens) take
 * the prompt order; generated tokens (decode inputs) the decode order with
 * logits. A recomputation after a preemption replays exactly these flags. */
static int32_t batch_build(sched_t *s, int32_t *n_logits)
{
    int32_t n = 0, nl = 0, budget = s->o.batch_tokens;
    s->has_mm = false;
    memset(s->batch_mm, 0, (size_t)s->o.batch_tokens * sizeof *s->batch_mm);
    s->n_dreq = 0;
    for (int32_t i = 0; i < s->o.n_parallel; i++)
        if (s->slots[i])
            s->slots[i]->logit_j = -1;
    /* decode tokens first: running streams never wait for a long prefill */
    int32_t n_dec = 0;
    for (int32_t i = 0; i < s->o.n_parallel && n_dec < budget; i++) {
        job_t *j = s->slots[i];
        if (j)
            j->n_draft = 0;
        if (j && j->state == JOB_DECODE && n_dec + 1 + job_refeed(j) <= budget && chan_reserve(j->ch)) {
            j->logit_j = 0; /* in this step (placed below) */
            n_dec += 1 + job_refeed(j);
        }
    }
    /* then their drafts (spec.h), within what the budget leaves, each
     * followed by its drafts so its rows are consecutive */
    int32_t spare = budget - n_dec;
    for (int32_t i = 0; i < s->o.n_parallel; i++) {
        job_t *j = s->slots[i];
        if (!j || j->state != JOB_DECODE || j->logit_j < 0)
            continue;
        /* generated tokens to evaluate again first (their rope offsets with
         * images: the loop at the end) */
        const int32_t at = j->n_past, n_re = job_refeed(j);
        for (int32_t r = 0; r < n_re; r++)
            s->batch[n++] = (fwd_tok_t){.token = j->prompt[at + r], .seq = i, .pos = at + r, .logits = job_out(s, j, false)};
        const int32_t pos = at + n_re;
        memset(&s->batch_mm[n], 0, sizeof s->batch_mm[n]);
        if (j->media) {
            sched_media_row(j->media, pos, &s->batch_mm[n]);
            s->has_mm = true;
        }
        s->batch[n++] = (fwd_tok_t){.token = j->last, .seq = i, .pos = pos, .logits = job_out(s, j, true)};
        j->logit_j = nl;
        s->batch_lpos[nl] = pos;
        s->batch_owner[nl++] = j;
        if (!j->spec || s->spec_hold || spare <= 0)
            continue;
        /* drafts never run past max_tokens or the context */
        int32_t cap = j->params.max_tokens - j->n_gen - 1;
        if (cap > s->o.n_ctx - pos - 1)
            cap = s->o.n_ctx - pos - 1;
        if (cap > spare)
            cap = spare;
        const int32_t n_hist = j->n_prompt + j->n_gen;
        spec_src_t src = spec_seq_next_source(j->spec, j->prompt, n_hist, j->n_prompt);
        const int32_t want = spec_seq_length(j->spec, src, &s->cost, n_dec, cap);
        int32_t k = spec_seq_propose(j->spec, j->prompt, n_hist, j->n_prompt, want, j->draft, &j->draft_src);
        const bool drafter = s->draft || (s->mtp && !j->media && spec_mtp_ready(s->mtp, i));
        if (k == 0 && j->draft_src == SPEC_SRC_DRAFT && drafter && want > 0) {
            /* the draft model (or the MTP block) fills these rows once the
             * lock is released (sched_main); until then they repeat the
             * input, a valid (if unlikely) draft */
            k = want;
            for (int32_t r = 0; r < k; r++)
                j->draft[r] = j->last;
        }
        /* a recurrent state can come back here if drafts are rejected */
        if (k > 0 && fwd_seq_checkpoint(s->fwd, i, NULL) != LF_OK)
            k = 0;
        int32_t d = 0;
        while (d < k && chan_reserve(j->ch)) /* each draft may become a TOKEN event */
            d++;
        if (d > 0 && j->draft_src == SPEC_SRC_DRAFT && drafter) {
            s->dreq[s->n_dreq] = (spec_draft_req_t){.slot = i, .owner = j->arrival, .hist = j->prompt,
                                                    .n_hist = n_hist, .k = d, .out = j->draft};
            s->dreq_row[s->n_dreq++] = n; /* the rows added below */
        }
        for (int32_t r = 0; r < d; r++) {
            const int32_t dpos = pos + 1 + r;
            s->batch[n++] = (fwd_tok_t){.token = j->draft[r], .seq = i, .pos = dpos, .logits = job_out(s, j, true)};
            s->batch_lpos[nl] = dpos;
            s->batch_owner[nl++] = j;
        }
        j->n_draft = d;
        spare -= d;
    }
    /* then prompt chunks (and recomputations) up to the step's budget */
    for (int32_t i = 0; i < s->o.n_parallel && n < budget; i++) {
        job_t *j = s->slots[i];
        if (!j || j->state != JOB_PREFILL)
            continue;
        int32_t take = j->target - j->n_past;
        if (take > budget - n)
            take = budget - n;
        if (j->media && !media_limit(s, j, n, &take))
            continue;
        /* the chunk that ends a first prefill yields a token: it needs room */
        bool sample = j->n_gen == 0 && j->n_past + take == j->target;
        if (sample) {
            if (!chan_reserve(j->ch))
                continue;
            if (j->plp && !chan_reserve(j->ch)) /* the SCHED_EV_PROMPT event */
                continue;
        }
        for (int32_t k = 0; k < take; k++) {
            int32_t pos = j->n_past + k;
            bool in_prompt = pos < j->n_prompt;
            /* the last prompt token and generated tokens (a recomputation)
             * want logits exactly as when they were first computed */
            bool logits = pos >= j->n_prompt - 1 || (in_prompt && j->plp);
            /* prompt order as llama-server batches the prompt: llama.cpp's
             * numerics (forward.h, fwd_prompt_order) */
            memset(&s->batch_mm[n], 0, sizeof s->batch_mm[n]);
            bool order = in_prompt && fwd_prompt_order(s->fwd, j->n_prompt, pos);
            if (j->media) {
                /* images: each chunk of the layout on its own (forward.h) */
                const vis_prompt_t *vp = sched_media_prompt(j->media);
                sched_media_row(j->media, pos, &s->batch_mm[n]);
                if (in_prompt) {
                    int32_t cs, ce;
                    bool text;
                    vis_prompt_chunk(vp, pos, &cs, &ce, &text);
                    order = fwd_prompt_order_chunk(s->fwd, j->n_prompt, cs, ce, text, pos);
                }
                s->has_mm = true;
            }
            const int32_t tok = s->batch_mm[n].embd ? 0 : j->prompt[pos];
            s->batch[n++] = (fwd_tok_t){.token = tok, .seq = i, .pos = pos, .logits = job_out(s, j, logits), .prompt = order};
            if (sample && pos == j->target - 1)
                j->logit_j = nl;
            if (logits) {
                s->batch_lpos[nl] = pos;
                s->batch_owner[nl++] = j;
            }
        }
    }
    /* every row of a job with images, drafts included: its rope offset */
    for (int32_t k = 0; k < n; k++) {
        job_t *j = s->slots[s->batch[k].seq];
        if (j && j->media && !s->batch_mm[k].embd) {
            sched_media_row(j->media, s->batch[k].pos, &s->batch_mm[k]);
            s->has_mm = true;
        }
    }
    *n_logits = nl;
    return n;
}

/* Raw logprob of token + top-N from logits (top_n < 0: nothing). */
static bool lp_fill(sched_t *s, const float *logits, int32_t token, int32_t top_n, sched_lp_t *out)
{
    int32_t nv = vocab_n_tokens(s->vocab);
    lf_err_t e;
    if (top_n < 0 || logprob_compute(logits, nv, s->lp_buf, &e) != LF_OK ||
        logprob_token(s->lp_buf, nv, token, &out->logprob, &out->rank, &e) != LF_OK)
        return false;
    out->has = true;
    out->token = token;
    out->n_top = logprob_top(s->lp_buf, nv, top_n, out->top);
    return true;
}

/* Prompt logprobs: logits at prompt position p score prompt token p+1. */
static void prompt_lp_collect(sched_t *s, int32_t n_logits)
{
    for (int32_t k = 0; k < n_logits; k++) {
        job_t *j = s->batch_owner[k];
        int32_t pos = s->batch_lpos[k];
        if (!j->plp || j->state != JOB_PREFILL || pos + 1 >= j->n_prompt || j->prompt[pos + 1] < 0)
            continue;
        const float *logits = fwd_logits(s->fwd, k);
        if (logits)
            lp_fill(s, logits, j->prompt[pos + 1], j->params.n_prompt_top, &j->plp->e[pos + 1]);
    }
}

static bool is_stop_id(const job_t *j, int32_t tok)
{
    for (int32_t i = 0; i < j->params.n_stop_token_ids; i++)
        if (j->stop_ids[i] == tok)
            return true;
    return false;
}

/* What one sampled token did to its job. */
typedef struct {
    sched_finish_t finish; /* NONE: the job goes on */
    lf_code_t code;
    int32_t stop_token;    /* a stop_token_ids entry that ended it, else -1 */
} emit_t;

/* Samples j's next token from logits (the grammar's mask must be in
 * j->mask already), records and emits it. Returns false when nothing was
 * emitted (the job must end: *e says how). j->n_past must be the number of
 * positions the sequence holds once this token's row is kept. */
static bool job_emit(sched_t *s, job_t *j, const float *logits, emit_t *e)
{
    *e = (emit_t){.finish = SCHED_FINISH_NONE, .code = LF_OK, .stop_token = -1};
    if (!logits) {
        *e = (emit_t){SCHED_FINISH_ERROR, LF_ERR_INTERNAL, -1};
        return false;
    }
    int32_t tok = -1;
    lf_err_t serr;
    if (j->gm)
        sampler_set_allowed(j->smp, j->mask);
    if (sampler_sample(j->smp, logits, &tok, &serr) != LF_OK || sampler_accept(j->smp, tok, &serr) != LF_OK) {
        /* a complete grammar whose only continuation (the end) is banned
         * (min_tokens, ignore_eos) still ends normally */
        if (j->gm && grammar_matcher_accepting(j->gm))
            *e = (emit_t){SCHED_FINISH_STOP, LF_OK, -1};
        else
            *e = (emit_t){SCHED_FINISH_ERROR, serr.code, -1};
        return false;
    }
    if (j->gm && !grammar_matcher_accept(j->gm, tok)) {
        *e = (emit_t){SCHED_FINISH_ERROR, LF_ERR_INTERNAL, -1};
        return false;
    }
    j->last = tok;
    j->prompt[j->n_prompt + j->n_gen] = tok;
    j->n_gen++;
    s->st.gen_tokens++;
    sched_event_t ev = {.kind = SCHED_EV_TOKEN, .index = j->index, .token = tok};
    if (j->params.logprobs)
        lp_fill(s, logits, tok, j->params.top_logprobs, &ev.lp);
    bool eog = (!j->params.ignore_eos || j->gm) && vocab_is_eog(s->vocab, tok);
    ev.ends = eog || is_stop_id(j, tok);
    chan_push(j->ch, &ev);
    if (eog)
        e->finish = SCHED_FINISH_STOP;
    else if (ev.ends)
        *e = (emit_t){SCHED_FINISH_STOP, LF_OK, tok};
    else if (j->gm && grammar_matcher_done(j->gm))
        e->finish = SCHED_FINISH_STOP; /* the grammar is complete */
    else if (j->n_gen >= j->params.max_tokens || j->n_past >= s->o.n_ctx)
        e->finish = SCHED_FINISH_LENGTH;
    return true;
}

/* One row of a verification (spec_verify's callback). */
typedef struct {
    sched_t *s;
    job_t *j;
    int32_t p; /* position of the decode input */
    emit_t e;
} verify_ctx_t;

static int32_t verify_row(void *arg, int32_t r)
{
    verify_ctx_t *v = arg;
    job_t *j = v->j;
    j->n_past = v->p + r + 1;
    if (r > 0 && j->gm) {
        /* the next row's mask, after the token just accepted */
        lf_err_t gerr = {0};
        lf_code_t rc = grammar_matcher_mask(j->gm, j->mask, &gerr);
        if (rc != LF_OK) {
            v->e = (emit_t){SCHED_FINISH_ERROR, rc, -1};
            return -1;
        }
    }
    if (!job_emit(v->s, j, fwd_logits(v->s->fwd, j->logit_j + r), &v->e) || v->e.finish != SCHED_FINISH_NONE)
        return -1;
    return j->last;
}

/* Samples j's rows of this step (spec_verify): its decode input's row,
 * then one row per draft while the token sampled from the row before
 * equals the draft. The drafts after the first mismatch are rejected:
 * their K/V are forgotten (fwd_seq_truncate). */
static void job_verify(sched_t *s, job_t *j)
{
    verify_ctx_t v = {s, j, j->n_past - 1 - j->n_draft, {SCHED_FINISH_NONE, LF_OK, -1}};
    if (j->gm) {
        int ms = mask_wait(s, j);
        if (ms != MASK_READY) {
            job_finish(s, j, SCHED_FINISH_ERROR, ms == MASK_FAILED ? j->mask_code : LF_ERR_INTERNAL);
            return;
        }
    }
    const int32_t accepted = spec_verify(j->draft, j->n_draft, verify_row, &v);
    if (j->n_draft > 0) {
        const spec_src_t src = j->draft_src;
        spec_seq_feedback(j->spec, src, j->n_draft, accepted);
        s->st.spec_drafted[src] += (uint64_t)j->n_draft;
        s->st.spec_accepted[src] += (uint64_t)accepted;
        s->st.spec_verifications++;
        if (src == SPEC_SRC_PREDICTION) {
            j->pred_accepted += accepted;
            j->pred_rejected += j->n_draft - accepted;
        }
        /* keep the input and the accepted drafts; the next input (the
         * token sampled last) goes at the position after them. A
         * recurrent state returns to its checkpoint (the input's
         * position): the input and the accepted drafts are evaluated
         * again in front of the next input. */
        j->n_past = v.p + 1 + accepted;
        if (v.e.finish == SCHED_FINISH_NONE) {
            lf_err_t terr = {0};
            const int32_t at = fwd_seq_rewind(s->fwd, j->slot, j->n_past, &terr);
            if (at < 0)
                v.e = (emit_t){SCHED_FINISH_ERROR, terr.code, -1};
            else if (at < j->n_past) {
                j->refeed_to = j->n_past;
                j->n_past = at;
                s->st.spec_refed += (uint64_t)(j->refeed_to - at);
            }
        }
        j->n_draft = 0;
    }
    if (v.e.finish != SCHED_FINISH_NONE)
        job_finish_tok(s, j, v.e.finish, v.e.code, v.e.stop_token);
    else if (j->gm)
        mask_request(s, j); /* overlaps the next forward pass */
}

/* The MTP block (spec_mtp.h) takes every position of this step that
 * stays in its sequence, with its token and the target's hidden state. */
static void mtp_feed(sched_t *s, int32_t n_tok)
{
    int32_t n = 0, h = 0;
    for (int32_t k = 0; k < n_tok; k++) {
        const fwd_tok_t *t = &s->batch[k];
        if (!(t->logits & FWD_OUT_HIDDEN))
            continue;
        const float *hid = fwd_hidden(s->fwd, h++);
        job_t *j = s->slots[t->seq];
        if (!j || !hid || t->pos >= j->n_past)
            continue;
        s->mtp_rows[n++] = (spec_mtp_row_t){.seq = t->seq, .pos = t->pos, .token = t->token, .h = hid};
    }
    if (n > 0)
        spec_mtp_feed(s->mtp, s->mtp_rows, n, NULL);
}

/* After a successful fwd_decode: advance positions, sample, emit. */
static void step_commit(sched_t *s, int32_t n_tok, int32_t n_logits)
{
    prompt_lp_collect(s, n_logits);
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
        if (j->state == JOB_PREFILL) {
            if (j->n_past < j->target) {
                /* register the prompt blocks computed so far: with
                 * sliding-window layers their window blocks are only
                 * kept for reuse if registered before they are given back */
                fwd_seq_commit(s->fwd, j->slot, j->prompt, j->n_prompt);
                continue;
            }
            if (j->n_gen > 0) {
                /* recomputed after a preemption: decode `last` next step */
                j->state = JOB_DECODE;
                continue;
            }
        }
        if (j->logit_j < 0)
            continue;
        if (j->state == JOB_PREFILL) {
            j->state = JOB_DECODE;
            s->st.prompt_tokens += (uint64_t)j->n_prompt;
            s->st.cached_tokens += (uint64_t)j->n_cached;
            /* offer this prompt's full blocks to later requests (prompt
             * tokens only: their K/V are in the prompt order, bitwise what a
             * later request would compute; generated ones are not) */
            fwd_seq_commit(s->fwd, j->slot, j->prompt, j->n_prompt);
            if (j->params.share_group > 0 && !j->follower)
                j->ch->group_ready[j->params.share_group] = true;
            if (j->plp) {
                sched_event_t pe = {.kind = SCHED_EV_PROMPT, .index = j->index, .prompt_lp = j->plp};
                j->plp = NULL;
                chan_push(j->ch, &pe);
            }
        }
        job_verify(s, j);
    }
    if (s->mtp)
        mtp_feed(s, n_tok);
}

static void drop_cancelled(sched_t *s)
{
    for (int32_t i = 0; i < s->o.n_parallel; i++) {
        job_t *j = s->slots[i];
        if (j && (s->stop || job_cancelled(j)))
            job_finish(s, j, SCHED_FINISH_CANCELLED, LF_OK);
    }
    if (s->stop) {
        while (s->qhead)
            job_finish(s, queue_pop(s), SCHED_FINISH_CANCELLED, LF_OK);
    }
}

enum { SCHED_MAX_SLOTS_ENC = 64 };

/* Whether a running prefill waits on an image encode. */
static bool media_waiting(sched_t *s)
{
    for (int32_t i = 0; i < s->o.n_parallel; i++) {
        job_t *j = s->slots[i];
        if (j && j->media && j->state == JOB_PREFILL &&
            sched_media_ready_until(j->media, s->vcache, j->n_past) < j->target)
            return true;
    }
    return false;
}

/* The running jobs (the first SCHED_MAX_SLOTS_ENC slots) for media_encode,
 * which runs without the lock: slots are only changed by this thread. */
static int32_t snapshot_slots(sched_t *s, job_t **jobs)
{
    int32_t n = 0;
    for (int32_t i = 0; i < s->o.n_parallel && n < SCHED_MAX_SLOTS_ENC; i++)
        jobs[n++] = s->slots[i];
    return n;
}

/* Jobs whose image could not be encoded end with an error. */
static void fail_media(sched_t *s)
{
    for (int32_t i = 0; i < s->o.n_parallel; i++) {
        job_t *j = s->slots[i];
        if (j && j->media && sched_media_failed(j->media))
            job_finish(s, j, SCHED_FINISH_ERROR, LF_ERR_INTERNAL);
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
        fail_media(s);
        int32_t nl = 0, n = batch_build(s, &nl);
        bool encode = media_waiting(s);
        if (n == 0 && encode) {
            /* only images to encode: one stage, then look again */
            job_t *jobs[SCHED_MAX_SLOTS_ENC];
            int32_t nj = snapshot_slots(s, jobs);
            pthread_mutex_unlock(&s->mu);
            media_encode(s, jobs, nj);
            pthread_mutex_lock(&s->mu);
            s->st.image_encode_stages++;
            continue;
        }
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
        job_t *jobs[SCHED_MAX_SLOTS_ENC];
        int32_t nj = encode ? snapshot_slots(s, jobs) : 0;
        pthread_mutex_unlock(&s->mu);
        lf_err_t err = {0};
        if (s->n_dreq > 0 && s->draft) {
            /* the draft model's rows (only this thread touches the jobs) */
            lf_err_t derr = {0};
            spec_draft_run(s->draft, s->dreq, s->n_dreq, &derr);
            for (int32_t q = 0; q < s->n_dreq; q++)
                for (int32_t r = 0; r < s->dreq[q].k; r++)
                    s->batch[s->dreq_row[q] + r].token = s->dreq[q].out[r];
            if (s->o.spec_draft_cost <= 0)
                s->cost.t_draft = spec_draft_step_seconds(s->draft);
        } else if (s->n_dreq > 0 && s->mtp) {
            /* the MTP block's rows, every slot's i-th draft in one batch */
            for (int32_t q = 0; q < s->n_dreq; q++) {
                const spec_draft_req_t *d = &s->dreq[q];
                s->mreq[q] = (spec_mtp_req_t){.seq = d->slot, .next = d->hist[d->n_hist - 1], .k = d->k, .out = d->out};
            }
            spec_mtp_draft_many(s->mtp, s->mreq, s->n_dreq);
            for (int32_t q = 0; q < s->n_dreq; q++)
                for (int32_t r = 0; r < s->mreq[q].k; r++)
                    s->batch[s->dreq_row[q] + r].token = s->mreq[q].out[r];
            if (s->o.spec_draft_cost <= 0)
                s->cost.t_draft = spec_mtp_step_seconds(s->mtp);
        }
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        lf_code_t rc = fwd_decode_mm(s->fwd, s->batch, s->has_mm ? s->batch_mm : NULL, n, &err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        /* an image encode advances one stage per step, between decode
         * steps: running streams never wait for a whole image */
        bool encoded = nj && media_encode(s, jobs, nj);
        pthread_mutex_lock(&s->mu);
        if (encoded)
            s->st.image_encode_stages++;
        s->st.steps++;
        bool drafted = false;
        for (int32_t i = 0; i < s->o.n_parallel; i++)
            if (s->slots[i]) {
                chan_unplan(s->slots[i]->ch);
                drafted |= s->slots[i]->n_draft > 0;
            }
        if (rc == LF_ERR_NOMEM && drafted && !s->spec_hold) {
            /* drafts are optional: retry the step without them first */
            s->spec_hold = true;
            continue;
        }
        s->spec_hold = false;
        if (rc == LF_ERR_NOMEM && preempt_newest(s))
            continue; /* nothing was added: rebuild the step without it */
        /* the cost of decode rows (prompt rows are computed differently) */
        bool decode_only = true;
        for (int32_t k = 0; k < n && decode_only; k++)
            decode_only = !s->batch[k].prompt && s->batch[k].logits;
        if (rc == LF_OK && decode_only)
            spec_cost_observe(&s->cost, n,
                              (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
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
        step_commit(s, n, nl);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* The sampler's prompt (penalties) without image placeholders. */
static lf_code_t sampler_add_prompt_text(sampler_t *smp, const int32_t *p, int32_t n, lf_err_t *err)
{
    int32_t k = 0;
    while (k < n && p[k] >= 0)
        k++;
    if (k == n)
        return sampler_add_prompt(smp, p, n, err);
    int32_t *t = malloc((size_t)n * sizeof *t);
    if (!t)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (p[i] >= 0)
            t[m++] = p[i];
    lf_code_t rc = sampler_add_prompt(smp, t, m, err);
    free(t);
    return rc;
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
    if (s->o.spec_row_cost > 0)
        spec_cost_fix(&s->cost, s->o.spec_row_cost);
    else
        spec_cost_init(&s->cost);
    if (s->o.n_parallel < 1)
        s->o.n_parallel = 1;
    if (s->o.batch_tokens <= 0)
        s->o.batch_tokens = 512;
    if (s->o.chan_cap <= 0)
        s->o.chan_cap = 64;
    if (s->o.max_queue < 0)
        s->o.max_queue = 0;
    fwd_opts_t fo = {.n_seq = s->o.n_parallel, .n_ctx = s->o.n_ctx,
                     .max_batch = s->o.batch_tokens, .n_threads = s->o.n_threads,
                     .state_snapshots = s->o.state_snapshots,
                     .attn = s->o.attn, .type_k = s->o.type_k, .type_v = s->o.type_v};
    /* MiB -> bytes; forward keeps at least one full context so a lone
     * sequence always fits (sliding-window layers: their window) */
    if (s->o.kv_mb > 0)
        fo.kv_bytes = s->o.kv_mb > ((int64_t)1 << 40) ? (int64_t)1 << 60 : s->o.kv_mb << 20;
    if (s->o.kv_bytes > 0)
        fo.kv_bytes = s->o.kv_bytes;
    s->fwd = fwd_create(m, &fo, err);
    if (!s->fwd) {
        free(s);
        return NULL;
    }
    s->o.n_ctx = fwd_n_ctx(s->fwd);
    if (!fwd_can_rewind(s->fwd))
        s->o.spec_off = true; /* rejected drafts could not be forgotten */
    s->cost.refeed = !fwd_can_truncate(s->fwd); /* a hybrid: rejections cost rows again */
    if (fwd_max_batch(s->fwd) > 0 && fwd_max_batch(s->fwd) < s->o.batch_tokens)
        s->o.batch_tokens = fwd_max_batch(s->fwd);
    s->slots = calloc((size_t)s->o.n_parallel, sizeof *s->slots);
    s->batch = calloc((size_t)s->o.batch_tokens, sizeof *s->batch);
    s->batch_mm = calloc((size_t)s->o.batch_tokens, sizeof *s->batch_mm);
    s->vcache = vis_cache_create(s->o.image_cache_mb > 0 ? s->o.image_cache_mb << 20 : 0);
    s->batch_owner = calloc((size_t)s->o.batch_tokens + (size_t)s->o.n_parallel, sizeof *s->batch_owner);
    s->batch_lpos = calloc((size_t)s->o.batch_tokens + (size_t)s->o.n_parallel, sizeof *s->batch_lpos);
    s->lp_buf = malloc((size_t)vocab_n_tokens(s->vocab) * sizeof *s->lp_buf);
    s->dreq = calloc((size_t)s->o.n_parallel, sizeof *s->dreq);
    s->dreq_row = calloc((size_t)s->o.n_parallel, sizeof *s->dreq_row);
    if (!s->slots || !s->batch || !s->batch_mm || !s->vcache || !s->batch_owner || !s->batch_lpos || !s->lp_buf || !s->dreq || !s->dreq_row) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (opts->spec_mtp && opts->draft_model) {
        lf_err_set(err, LF_ERR_INVALID, "a draft model and the MTP block cannot both draft");
        goto fail;
    }
    if (opts->spec_mtp && !s->o.spec_off) {
        if (!(s->mtp = spec_mtp_create(m, s->o.n_parallel, s->o.n_ctx, s->o.batch_tokens, s->o.n_threads, err)) ||
            !(s->mtp_rows = malloc((size_t)s->o.batch_tokens * sizeof *s->mtp_rows)) ||
            !(s->mreq = malloc((size_t)s->o.n_parallel * sizeof *s->mreq))) {
            if (s->mtp)
                lf_err_set(err, LF_ERR_NOMEM, "out of memory");
            goto fail;
        }
        s->st.spec_mtp_cost = spec_mtp_cost_ratio(s->mtp);
        s->cost.draft_ratio = s->o.spec_draft_cost > 0 ? s->o.spec_draft_cost : s->st.spec_mtp_cost;
        if (s->cost.draft_ratio >= SPEC_DRAFT_PROBE_C) {
            /* its layer and the output matrix cost more than the drafts can
             * give back (a model with few layers for its vocabulary): no
             * feeding, no drafting */
            spec_mtp_free(s->mtp);
            s->mtp = NULL;
        }
        s->st.spec_mtp_used = s->mtp != NULL;
    }
    if (opts->draft_model && !s->o.spec_off &&
        !(s->draft = spec_draft_create(opts->draft_model, m, s->o.n_parallel, s->o.n_ctx, s->o.batch_tokens,
                                       s->o.n_threads, err)))
        goto fail;
    /* a draft step reads the draft's weights as a step reads the target's */
    if (s->draft)
        s->cost.draft_ratio = s->o.spec_draft_cost > 0 ? s->o.spec_draft_cost
                              : (double)model_decode_bytes(opts->draft_model) / (double)model_decode_bytes(m);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_mutex_init(&s->gmu, NULL);
    pthread_cond_init(&s->gcv, NULL);
    if (pthread_create(&s->gthread, NULL, mask_main, s) != 0) {
        lf_err_set(err, LF_ERR_INTERNAL, "cannot start the mask thread");
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->gmu);
        pthread_cond_destroy(&s->gcv);
        goto fail;
    }
    s->gstarted = true;
    if (pthread_create(&s->thread, NULL, sched_main, s) != 0) {
        lf_err_set(err, LF_ERR_INTERNAL, "cannot start the scheduler thread");
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        goto fail;
    }
    s->started = true;
    return s;
fail:
    spec_draft_free(s->draft);
    spec_mtp_free(s->mtp);
    free(s->mtp_rows);
    free(s->mreq);
    free(s->dreq);
    free(s->dreq_row);
    fwd_free(s->fwd);
    free(s->slots);
    free(s->batch);
    free(s->batch_mm);
    vis_cache_free(s->vcache);
    free(s->batch_owner);
    free(s->batch_lpos);
    free(s->lp_buf);
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
    if (s->gstarted) {
        pthread_mutex_lock(&s->gmu);
        s->gstop = true;
        pthread_cond_broadcast(&s->gcv);
        pthread_mutex_unlock(&s->gmu);
        pthread_join(s->gthread, NULL);
        s->gstarted = false;
    }
}

void sched_free(sched_t *s)
{
    if (!s)
        return;
    sched_stop(s);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->gmu);
    pthread_cond_destroy(&s->gcv);
    spec_draft_free(s->draft);
    spec_mtp_free(s->mtp);
    free(s->mtp_rows);
    free(s->mreq);
    free(s->dreq);
    free(s->dreq_row);
    fwd_free(s->fwd);
    free(s->slots);
    free(s->batch);
    free(s->batch_mm);
    vis_cache_free(s->vcache);
    free(s->batch_owner);
    free(s->batch_lpos);
    free(s->lp_buf);
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
    int32_t blocks_total = 0, blocks_used = 0, block_tokens = 0;
    fwd_kv_usage(s->fwd, &blocks_total, &blocks_used, &block_tokens);
    out->kv_cap_tokens = (int64_t)blocks_total * block_tokens;
    out->kv_used_tokens = (int64_t)blocks_used * block_tokens;
    out->seq_tokens = 0;
    for (int32_t i = 0; i < s->o.n_parallel; i++)
        if (s->slots[i])
            out->seq_tokens += s->slots[i]->n_past;
    fwd_kv_usage_bytes(s->fwd, &out->kv_bytes, &out->kv_used_bytes);
    out->kv_type_k = fwd_kv_type_k(s->fwd);
    out->kv_type_v = fwd_kv_type_v(s->fwd);
    out->attn = fwd_attn(s->fwd);
    fwd_state_usage_t su;
    fwd_state_usage(s->fwd, &su);
    out->state_per_seq_bytes = su.per_seq_bytes;
    out->state_bytes = su.live_bytes;
    out->state_snap_bytes = su.snap_bytes;
    out->state_snap_slots = su.snap_slots;
    out->state_snapshots = su.snap_cached;
    out->state_restores = su.snap_restored;
    pthread_mutex_unlock(&s->mu);
    vis_cache_stats_t vc;
    vis_cache_stats(s->vcache, &vc);
    out->image_cache_entries = vc.entries;
    out->image_cache_bytes = vc.bytes;
    out->image_cache_max_bytes = vc.max_bytes;
    out->image_cache_hits = vc.hits;
    out->image_cache_misses = vc.misses;
    out->image_cache_evictions = vc.evictions;
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
            if ((prompts[i][k] < 0 && !params[i].media) || prompts[i][k] >= n_vocab)
                return lf_err_set(err, LF_ERR_INVALID, "token id %d is out of vocabulary (0..%d)",
                                  prompts[i][k], n_vocab - 1);
        if (params[i].media) {
            const vis_prompt_t *vp = sched_media_prompt(params[i].media);
            if ((size_t)vp->n != n_prompts[i] || memcmp(vp->tokens, prompts[i], n_prompts[i] * sizeof(int32_t)))
                return lf_err_set(err, LF_ERR_INTERNAL, "the prompt is not its image layout's");
            if (sched_media_max_bidir(params[i].media) > s->o.batch_tokens)
                return lf_err_set(err, LF_ERR_INVALID, "an image of %d tokens does not fit a batch of %d "
                                  "(--batch-tokens)", sched_media_max_bidir(params[i].media), s->o.batch_tokens);
        }
        if (params[i].spec.n_prediction < 0 || (params[i].spec.n_prediction > 0 && !params[i].spec.prediction))
            return lf_err_set(err, LF_ERR_INVALID, "bad prediction");
        for (int32_t k = 0; k < params[i].spec.n_prediction; k++)
            if (params[i].spec.prediction[k] < 0 || params[i].spec.prediction[k] >= n_vocab)
                return lf_err_set(err, LF_ERR_INVALID, "prediction token id %d is out of vocabulary (0..%d)",
                                  params[i].spec.prediction[k], n_vocab - 1);
    }
    job_t **jobs = calloc((size_t)n, sizeof *jobs);
    if (!jobs)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    int32_t eos = vocab_eos(s->vocab);
    int32_t n_groups = 0;
    for (int32_t i = 0; i < n; i++) {
        if (params[i].n_stop_token_ids < 0 || params[i].n_stop_token_ids > 4096 ||
            params[i].share_group < 0 || params[i].share_group > n)
        {
            free(jobs);
            return lf_err_set(err, LF_ERR_INVALID, "bad job parameters");
        }
        if (params[i].share_group >= n_groups)
            n_groups = params[i].share_group + 1;
    }
    atomic_bool *jc = calloc((size_t)n, sizeof *jc);
    bool *gr = calloc((size_t)n_groups + 1, sizeof *gr);
    if (!jc || !gr) {
        free(jc);
        free(gr);
        free(jobs);
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    }
    for (int32_t i = 0; i < n; i++)
        atomic_init(&jc[i], false);
    for (int32_t i = 0; i < n; i++) {
        sampler_params_t sp = params[i].sampling;
        if (params[i].ignore_eos && eos >= 0) {
            sp.banned = &eos;
            sp.n_banned = 1;
        }
        /* min_tokens: every end-of-generation token and the stop tokens
         * are banned until reached */
        int32_t ban[4096 + 64];
        int32_t nb = 0;
        if (sp.min_tokens > 0) {
            for (int32_t t = 0; t < n_vocab && nb < 64; t++)
                if (vocab_is_eog(s->vocab, t))
                    ban[nb++] = t;
            for (int32_t k = 0; k < params[i].n_stop_token_ids; k++)
                if (params[i].stop_token_ids[k] >= 0 && params[i].stop_token_ids[k] < n_vocab)
                    ban[nb++] = params[i].stop_token_ids[k];
            sp.min_tokens_ban = ban;
            sp.n_min_tokens_ban = nb;
        }
        lf_code_t rc = LF_ERR_NOMEM;
        jobs[i] = calloc(1, sizeof **jobs);
        if (jobs[i])
            jobs[i]->prompt = malloc((n_prompts[i] + (size_t)params[i].max_tokens) * sizeof(int32_t));
        size_t nst = (size_t)params[i].n_stop_token_ids;
        if (jobs[i] && nst)
            jobs[i]->stop_ids = malloc(nst * sizeof(int32_t));
        if (jobs[i] && params[i].prompt_logprobs)
            jobs[i]->plp = calloc(1, sizeof(sched_prompt_lp_t) + n_prompts[i] * sizeof(sched_lp_t));
        if (jobs[i] && params[i].grammar) {
            if (!params[i].grammar_engine) {
                free(jobs[i]->prompt);
                free(jobs[i]->stop_ids);
                free(jobs[i]->plp);
                free(jobs[i]);
                jobs[i] = NULL;
                for (int32_t k = 0; k < i; k++)
                    job_free(jobs[k]);
                free(jobs);
                free(jc);
                free(gr);
                return lf_err_set(err, LF_ERR_INTERNAL, "a grammar without its engine");
            }
            grammar_retain(params[i].grammar);
            jobs[i]->params.grammar = params[i].grammar; /* released by job_free */
            jobs[i]->gm = grammar_matcher_create(params[i].grammar_engine, params[i].grammar, err);
            jobs[i]->mask = malloc((size_t)grammar_engine_n_words(params[i].grammar_engine) * sizeof(uint32_t));
        }
        /* speculation (spec.h): the job's prediction, the server's n-grams */
        spec_params_t spp = params[i].spec;
        spp.ngram = spp.ngram || s->o.spec_ngram;
        spp.draft_model = s->draft != NULL || s->mtp != NULL;
        if (s->o.spec_k_max > 0 && (spp.k_max <= 0 || spp.k_max > s->o.spec_k_max))
            spp.k_max = s->o.spec_k_max;
        bool spec_ok = true;
        if (jobs[i] && !s->o.spec_off) {
            lf_err_t serr = {0};
            jobs[i]->spec = spec_seq_create(&spp, &serr);
            spec_ok = jobs[i]->spec || serr.code == LF_OK;
        }
        if (jobs[i] && jobs[i]->prompt && (!nst || jobs[i]->stop_ids) && spec_ok &&
            (!params[i].prompt_logprobs || jobs[i]->plp) && (!params[i].grammar || (jobs[i]->gm && jobs[i]->mask))) {
            jobs[i]->smp = sampler_create(&sp, n_vocab, params[i].entropy, err);
            rc = jobs[i]->smp ? sampler_add_prompt_text(jobs[i]->smp, prompts[i], (int32_t)n_prompts[i], err)
                              : (err ? err->code : LF_ERR_INVALID);
        } else {
            lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        }
        if (rc != LF_OK) {
            for (int32_t k = 0; k <= i; k++)
                job_free(jobs[k]);
            free(jobs);
            free(jc);
            free(gr);
            return err ? err->code : rc;
        }
        memcpy(jobs[i]->prompt, prompts[i], n_prompts[i] * sizeof(int32_t));
        jobs[i]->n_prompt = (int32_t)n_prompts[i];
        jobs[i]->target = jobs[i]->n_prompt;
        jobs[i]->params = params[i];
        jobs[i]->params.grammar = params[i].grammar && jobs[i]->gm ? params[i].grammar : NULL;
        if (nst)
            memcpy(jobs[i]->stop_ids, params[i].stop_token_ids, nst * sizeof(int32_t));
        jobs[i]->params.stop_token_ids = jobs[i]->stop_ids;
        jobs[i]->params.spec.prediction = NULL; /* borrowed: the spec state has its copy */
        if (jobs[i]->plp)
            jobs[i]->plp->n = (int32_t)n_prompts[i];
        /* the first job of a share group leads, the later ones follow */
        for (int32_t k = 0; k < i && params[i].share_group > 0; k++)
            if (params[k].share_group == params[i].share_group)
                jobs[i]->follower = true;
        jobs[i]->index = i;
        jobs[i]->ch = ch;
        if (params[i].media) {
            sched_media_retain(params[i].media);
            jobs[i]->media = params[i].media;
        }
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
        free(jc);
        free(gr);
        return lf_err_set(err, LF_ERR_OVERLOAD, "The server is busy: too many requests waiting; retry later");
    }
    pthread_mutex_lock(&ch->mu);
    ch->submitted = true;
    ch->job_cancel = jc;
    ch->group_ready = gr;
    ch->n_jobs = n;
    ch->refs += n;
    ch->jobs_live += n;
    pthread_mutex_unlock(&ch->mu);
    for (int32_t i = 0; i < n; i++) {
        jobs[i]->arrival = ++s->arrivals;
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
