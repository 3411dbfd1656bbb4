/* sched_media.c - a job's images in the scheduler (see sched_media.h). */
#include "engine/sched/sched_media.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    vis_embd_t *embd;    /* the rows, once had */
    vis_enc_t *enc;      /* the encode in progress */
    bool looked;         /* the cache was asked once (a miss counts once) */
} span_state_t;

struct sched_media {
    atomic_int refs;
    const vis_model_t *v;
    vis_prompt_t prompt;
    vis_media_t *media;
    int32_t n_media;
    span_state_t *st;        /* [n_spans] */
    const float **rows;      /* [n_spans] rows of ready spans */
    int32_t n_out;
    bool failed;
};

sched_media_t *sched_media_create(const vis_model_t *v, vis_prompt_t *prompt, vis_media_t *media, int32_t n_media,
                                  lf_err_t *err)
{
    sched_media_t *m = calloc(1, sizeof *m);
    const int32_t ns = prompt->n_spans ? prompt->n_spans : 1;
    if (m) {
        m->st = calloc((size_t)ns, sizeof *m->st);
        m->rows = calloc((size_t)ns, sizeof *m->rows);
    }
    if (!m || !m->st || !m->rows) {
        if (m) {
            free(m->st);
            free(m->rows);
            free(m);
        }
        vis_prompt_free(prompt);
        for (int32_t i = 0; i < n_media; i++)
            vis_media_free(&media[i]);
        free(media);
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    atomic_init(&m->refs, 1);
    m->v = v;
    m->prompt = *prompt;
    memset(prompt, 0, sizeof *prompt);
    m->media = media;
    m->n_media = n_media;
    m->n_out = vis_hparams(v)->n_out;
    return m;
}

void sched_media_retain(sched_media_t *m)
{
    atomic_fetch_add(&m->refs, 1);
}

void sched_media_release(sched_media_t *m)
{
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    for (int32_t s = 0; s < m->prompt.n_spans; s++) {
        vis_embd_release(m->st[s].embd);
        vis_enc_free(m->st[s].enc);
    }
    free(m->st);
    free(m->rows);
    vis_prompt_free(&m->prompt);
    for (int32_t i = 0; i < m->n_media; i++)
        vis_media_free(&m->media[i]);
    free(m->media);
    free(m);
}

const vis_prompt_t *sched_media_prompt(const sched_media_t *m) { return &m->prompt; }

int32_t sched_media_max_bidir(const sched_media_t *m)
{
    int32_t best = 0;
    for (int32_t s = 0; s < m->prompt.n_spans; s++)
        if (m->prompt.spans[s].bidir && m->prompt.spans[s].n > best)
            best = m->prompt.spans[s].n;
    return best;
}

static const uint8_t *span_hash(const sched_media_t *m, int32_t s)
{
    return m->media[m->prompt.spans[s].image].hash;
}

int32_t sched_media_ready_until(sched_media_t *m, vis_cache_t *c, int32_t from)
{
    for (int32_t s = 0; s < m->prompt.n_spans; s++) {
        const vis_span_t *sp = &m->prompt.spans[s];
        if (sp->start + sp->n <= from || m->rows[s])
            continue;
        vis_embd_t *e = m->st[s].looked ? NULL : vis_cache_get(c, span_hash(m, s), sp->array);
        m->st[s].looked = true;
        if (e) {
            m->st[s].embd = e;
            m->rows[s] = vis_embd_rows(e);
            vis_enc_free(m->st[s].enc);
            m->st[s].enc = NULL;
            continue;
        }
        return sp->start > from ? sp->start : from;
    }
    return m->prompt.n;
}

bool sched_media_encode_step(sched_media_t *m, vis_cache_t *c, tpool_t *pool, int32_t from)
{
    for (int32_t s = 0; s < m->prompt.n_spans; s++) {
        const vis_span_t *sp = &m->prompt.spans[s];
        if (sp->start + sp->n <= from || m->rows[s])
            continue;
        span_state_t *st = &m->st[s];
        if (!st->enc) {
            lf_err_t err;
            st->enc = vis_enc_begin(m->v, &m->media[sp->image].prep.a[sp->array], &err);
            if (!st->enc) {
                m->failed = true;
                return false;
            }
        }
        if (vis_enc_step(st->enc, pool)) {
            int32_t n = 0;
            float *rows = vis_enc_take(st->enc, &n);
            vis_enc_free(st->enc);
            st->enc = NULL;
            if (rows && n == sp->n && (st->embd = vis_cache_put(c, span_hash(m, s), sp->array, rows,
                                                                (int64_t)n * m->n_out))) {
                m->rows[s] = vis_embd_rows(st->embd);
            } else {
                if (rows && n != sp->n)
                    free(rows);
                m->failed = true;
            }
        }
        return true;
    }
    return false;
}

void sched_media_row(const sched_media_t *m, int32_t pos, fwd_mm_t *mm)
{
    if (pos >= m->prompt.n) {
        memset(mm, 0, sizeof *mm);
        mm->dpos = vis_prompt_dpos_end(&m->prompt);
        return;
    }
    vis_prompt_row(&m->prompt, pos, m->rows, m->n_out, mm);
}

bool sched_media_failed(const sched_media_t *m) { return m->failed; }

int32_t sched_media_bidir_end(const sched_media_t *m, int32_t pos)
{
    const int32_t s = pos < m->prompt.n ? vis_prompt_span_at(&m->prompt, pos) : -1;
    if (s < 0 || !m->prompt.spans[s].bidir)
        return -1;
    return m->prompt.spans[s].start + m->prompt.spans[s].n;
}
