/* api_embed.c - the embedding and reranking endpoints over the embedding
 * scheduler (embed_sched.h): a thin translation between each API's JSON
 * (request_embed.h) and token sequences in, pooled vectors / scores out.
 *
 *   POST /v1/embeddings          OpenAI (a body with `content`: llama-server's shape)
 *   POST /embedding, /embeddings llama-server's non-OAI shape [{"index", "embedding": [[...]]}]
 *   POST /embed                  TEI: [[...], ...]
 *   POST /rerank, /v1/rerank, /v2/rerank, /reranking, /v1/reranking
 *                                Jina / Cohere / vLLM shape; TEI's when the body has `texts`
 *   POST /score, /v1/score       vLLM: cross-encoder scores, or the cosine of two
 *                                embeddings on an embedding model
 *   POST /invocations            SageMaker: TEI's shapes (api_embed_invocations)
 *
 * Errors come in the endpoint's format: OpenAI's for the OpenAI, Jina,
 * vLLM and llama-server shapes, TEI's {"error", "error_type"} for /embed
 * and TEI-shaped rerank bodies. Bad input is a 400 (the limit and the
 * length for a long input), more inputs than --max-batch-inputs a 413, a
 * full queue a 429; a route this server's mode does not serve a 404 that
 * says how to start it.
 */
#include "server/api/api_embed.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/embed/embed_input.h"
#include "engine/embed/embed_sched.h"
#include "engine/embed/pool.h"
#include "server/api/api_tgi.h"
#include "server/request/request_embed.h"

/* ---- output text ---- */

typedef struct {
    char *p;
    size_t n, cap;
    bool oom;
} sb_t;

static void sb_put(sb_t *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_str(sb_t *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_fmt(sb_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_fmt(sb_t *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        sb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A float32 with the digits that give it back exactly (9 significant). */
static void sb_float(sb_t *b, float v)
{
    if (!isfinite(v)) {
        sb_str(b, "null");
        return;
    }
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%.9g", (double)v);
    sb_put(b, tmp, (size_t)n);
}

static void sb_floats(sb_t *b, const float *v, int64_t n)
{
    sb_put(b, "[", 1);
    for (int64_t i = 0; i < n; i++) {
        if (i)
            sb_put(b, ",", 1);
        sb_float(b, v[i]);
    }
    sb_put(b, "]", 1);
}

/* JSON string (the text is valid UTF-8: request bodies are checked). */
static void sb_json_str(sb_t *b, const char *s, size_t n)
{
    sb_put(b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        sb_put(b, s + run, i - run);
        run = i + 1;
        char esc[8];
        if (c == '"' || c == '\\')
            snprintf(esc, sizeof esc, "\\%c", c);
        else if (c == '\n')
            snprintf(esc, sizeof esc, "\\n");
        else
            snprintf(esc, sizeof esc, "\\u%04x", c);
        sb_str(b, esc);
    }
    sb_put(b, s + run, n - run);
    sb_put(b, "\"", 1);
}

static void sb_base64(sb_t *b, const float *v, int64_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = (const unsigned char *)v; /* little-endian float32 (x86, arm64) */
    const size_t len = (size_t)n * 4;
    sb_put(b, "\"", 1);
    for (size_t i = 0; i < len; i += 3) {
        const uint32_t x = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0) |
                           (i + 2 < len ? p[i + 2] : 0);
        char o[4] = {tab[x >> 18 & 63], tab[x >> 12 & 63], i + 1 < len ? tab[x >> 6 & 63] : '=',
                     i + 2 < len ? tab[x & 63] : '='};
        sb_put(b, o, 4);
    }
    sb_put(b, "\"", 1);
}

/* ---- errors in the endpoint's format ---- */

typedef enum { FMT_OPENAI, FMT_TEI } err_fmt_t;

static void reply_error(http_req_t *r, err_fmt_t f, int status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void reply_error(http_req_t *r, err_fmt_t f, int status, const char *param, const char *fmt, ...)
{
    char msg[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (f == FMT_TEI) {
        const char *type = status == 429 || status == 503 ? "overloaded" : status >= 500 ? "backend" : "validation";
        tgi_reply_error(r, status, msg, type, NULL);
    } else {
        http_reply_error(r, status, msg, param, status == 404 ? "not_found" : NULL, NULL);
    }
}

static void reply_req_err(http_req_t *r, err_fmt_t f, const req_err_t *e)
{
    if (f == FMT_OPENAI)
        srv_reply_req_err(r, e);
    else
        reply_error(r, f, e->status, NULL, "%s", e->msg);
}

/* The scheduler's error as a reply (a cancelled job has no reader). */
static void reply_lf(http_req_t *r, err_fmt_t f, const lf_err_t *e)
{
    if (e->code == LF_ERR_CANCELLED)
        return;
    const int status = e->code == LF_ERR_OVERLOAD ? (strstr(e->msg, "stopping") ? 503 : 429) : http_status_of(e->code);
    reply_error(r, f, status, NULL, "%s", e->msg);
}

/* Whether this server answers the request kind; else a 404 that says how
 * to start one that does. */
static bool served(srv_t *s, http_req_t *r, err_fmt_t f, bool rerank)
{
    if (!s->embed) {
        reply_error(r, f, 404, NULL, "This server does not serve %s: start llm-fcgi serve with %s and an %s model",
                    rerank ? "reranking" : "embeddings", rerank ? "--rerank" : "--embedding",
                    rerank ? "reranking" : "embedding");
        return false;
    }
    const bool is_rank = embed_sched_pooling(s->embed) == MODEL_POOLING_RANK;
    if (is_rank != rerank) {
        reply_error(r, f, 404, NULL, "This server serves %s, not %s (pooling '%s')", is_rank ? "reranking" : "embeddings",
                    rerank ? "reranking" : "embeddings", pool_type_name(embed_sched_pooling(s->embed)));
        return false;
    }
    return true;
}

/* ---- running a job ---- */

typedef struct {
    int32_t **seqs;
    int32_t *lens;
    int32_t n;
    int64_t tokens;
} seqs_t;

static void seqs_free(seqs_t *q)
{
    for (int32_t i = 0; q->seqs && i < q->n; i++)
        free(q->seqs[i]);
    free(q->seqs);
    free(q->lens);
    memset(q, 0, sizeof *q);
}

static bool seqs_alloc(seqs_t *q, int32_t n)
{
    q->n = n;
    q->seqs = calloc((size_t)n, sizeof *q->seqs);
    q->lens = calloc((size_t)n, sizeof *q->lens);
    return q->seqs && q->lens;
}

/* The limit a request's truncate asks for (0: none). */
static int32_t trunc_limit(const srv_t *s, int32_t truncate)
{
    const int32_t max = embed_sched_max_tokens(s->embed);
    return truncate == 0 ? 0 : truncate < 0 || truncate > max ? max : truncate;
}

/* Checks the sequences (empty, ids in the vocabulary, length). */
static bool seqs_check(srv_t *s, http_req_t *r, err_fmt_t f, const seqs_t *q, const char *what)
{
    const int32_t max = embed_sched_max_tokens(s->embed), nv = vocab_n_tokens(s->vocab);
    for (int32_t i = 0; i < q->n; i++) {
        if (q->lens[i] == 0) {
            reply_error(r, f, 400, NULL, "%s %d is empty: it has no tokens", what, i);
            return false;
        }
        if (q->lens[i] > max) {
            reply_error(r, f, 400, NULL,
                        "%s %d has %d tokens; the limit is %d tokens (send \"truncate\": true or "
                        "\"truncate_prompt_tokens\" to cut it)",
                        what, i, q->lens[i], max);
            return false;
        }
        for (int32_t k = 0; k < q->lens[i]; k++)
            if (q->seqs[i][k] >= nv) {
                reply_error(r, f, 400, NULL, "%s %d: token id %d is outside the vocabulary (0..%d)", what, i,
                            q->seqs[i][k], nv - 1);
                return false;
            }
    }
    return true;
}

/* Submits and waits, giving up when the client goes away. NULL after an
 * error reply (or none, for a client that left). */
static embed_job_t *run(srv_t *s, http_req_t *r, err_fmt_t f, const seqs_t *q)
{
    lf_err_t err = {0};
    r->prompt_tokens = (int32_t)(q->tokens < INT32_MAX ? q->tokens : INT32_MAX);
    embed_job_t *j = embed_submit(s->embed, (const int32_t *const *)q->seqs, q->lens, q->n, &err);
    if (!j) {
        reply_lf(r, f, &err);
        return NULL;
    }
    while (!embed_job_wait(j, 250))
        if (r->io.gone && r->io.gone(r->io.io)) {
            metrics_disconnect(&s->metrics);
            embed_job_free(j);
            r->headers_sent = true; /* nobody to answer */
            r->status = 499;
            return NULL;
        }
    if (embed_job_status(j, &err) != LF_OK) {
        reply_lf(r, f, &err);
        embed_job_free(j);
        return NULL;
    }
    return j;
}

static bool too_many(srv_t *s, http_req_t *r, err_fmt_t f, int32_t n, const char *what)
{
    const int32_t max = s->cfg.max_batch_inputs > 0 ? s->cfg.max_batch_inputs : 2048;
    if (n <= max)
        return false;
    reply_error(r, f, 413, NULL, "%d %s in one request; the limit is %d (--max-batch-inputs)", n, what, max);
    return true;
}

/* ---- embeddings ---- */

/* The tokens of input `in` (text then ids), cut to limit. */
static lf_code_t input_tokens(srv_t *s, const embed_in_t *in, int32_t limit, bool left, int32_t **ids, int32_t *n,
                              lf_err_t *err)
{
    int32_t *t = NULL, nt = 0;
    if (in->text) {
        lf_code_t rc = embed_tokens_text(s->vocab, in->text, in->len, in->n_ids ? 0 : limit, left, &t, &nt, err);
        if (rc != LF_OK)
            return rc;
    }
    int32_t *all = realloc(t, (size_t)(nt + in->n_ids + 1) * sizeof *all);
    if (!all) {
        free(t);
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    }
    memcpy(all + nt, in->ids, (size_t)in->n_ids * sizeof *all);
    nt += in->n_ids;
    if (limit > 0 && nt > limit) { /* ids given: cut them as they are */
        if (left)
            memmove(all, all + (nt - limit), (size_t)limit * sizeof *all);
        nt = limit;
    }
    *ids = all;
    *n = nt;
    return LF_OK;
}

static void embeddings(srv_t *s, http_req_t *r, embed_shape_t shape)
{
    const err_fmt_t f = shape == EMBED_SHAPE_TEI ? FMT_TEI : FMT_OPENAI;
    embed_req_t q;
    req_err_t e;
    if (req_embed_parse(r->body, r->body_len, shape, &q, &e) < 0) {
        reply_req_err(r, f, &e);
        return;
    }
    seqs_t sq = {0};
    embed_job_t *j = NULL;
    sb_t b = {0};
    if (!served(s, r, f, false) || too_many(s, r, f, q.n_in, "inputs"))
        goto out;
    const int pooling = embed_sched_pooling(s->embed);
    if (pooling == MODEL_POOLING_NONE && q.shape != EMBED_SHAPE_LLAMA) {
        reply_error(r, f, 400, NULL, "Pooling type 'none' is not OAI compatible. Please use a different pooling type "
                    "(--pooling), or POST /embedding for the per-token vectors");
        goto out;
    }
    const int32_t n_out = model_hparams(s->model)->n_embd_out;
    if (q.dimensions > n_out) {
        reply_error(r, f, 400, "dimensions", "'dimensions' is %d; this model's embeddings have %d dimensions",
                    q.dimensions, n_out);
        goto out;
    }
    if (!seqs_alloc(&sq, q.n_in)) {
        reply_error(r, f, 503, NULL, "out of memory");
        goto out;
    }
    const int32_t limit = trunc_limit(s, q.truncate);
    for (int32_t i = 0; i < q.n_in; i++) {
        lf_err_t err = {0};
        if (input_tokens(s, &q.in[i], limit, q.trunc_left, &sq.seqs[i], &sq.lens[i], &err) != LF_OK) {
            reply_lf(r, f, &err);
            goto out;
        }
        sq.tokens += sq.lens[i];
    }
    if (!seqs_check(s, r, f, &sq, "input") || !(j = run(s, r, f, &sq)))
        goto out;
    const int64_t E = model_hparams(s->model)->n_embd;
    const char *name = q.model ? q.model : s->cfg.names[0];
    if (q.shape == EMBED_SHAPE_OPENAI) {
        sb_str(&b, "{\"object\":\"list\",\"data\":[");
    } else {
        sb_str(&b, "[");
    }
    for (int32_t i = 0; i < q.n_in; i++) {
        int64_t n;
        float *v = embed_job_out(j, i, &n);
        if (pooling != MODEL_POOLING_NONE) {
            if (q.dimensions > 0 && q.dimensions < n)
                n = q.dimensions; /* Matryoshka: the leading dimensions, normalised again below */
            pool_normalize(v, n, q.normalize);
        }
        if (i)
            sb_str(&b, ",");
        switch (q.shape) {
        case EMBED_SHAPE_OPENAI:
            sb_fmt(&b, "{\"object\":\"embedding\",\"index\":%d,\"embedding\":", i);
            if (q.base64)
                sb_base64(&b, v, n);
            else
                sb_floats(&b, v, n);
            if (q.base64)
                sb_str(&b, ",\"encoding_format\":\"base64\"");
            sb_str(&b, "}");
            break;
        case EMBED_SHAPE_LLAMA:
            sb_fmt(&b, "{\"index\":%d,\"embedding\":[", i);
            for (int64_t k = 0; k < (pooling == MODEL_POOLING_NONE ? n / E : 1); k++) {
                if (k)
                    sb_str(&b, ",");
                sb_floats(&b, v + (pooling == MODEL_POOLING_NONE ? k * E : 0), pooling == MODEL_POOLING_NONE ? E : n);
            }
            sb_str(&b, "]}");
            break;
        case EMBED_SHAPE_TEI:
            sb_floats(&b, v, n);
            break;
        }
    }
    if (q.shape == EMBED_SHAPE_OPENAI) {
        sb_str(&b, "],\"model\":");
        sb_json_str(&b, name, strlen(name));
        sb_fmt(&b, ",\"usage\":{\"prompt_tokens\":%lld,\"total_tokens\":%lld}}", (long long)sq.tokens,
               (long long)sq.tokens);
    } else {
        sb_str(&b, "]");
    }
    if (b.oom)
        reply_error(r, f, 503, NULL, "out of memory");
    else
        http_reply_json(r, 200, b.p, NULL);
out:
    free(b.p);
    embed_job_free(j);
    seqs_free(&sq);
    req_embed_free(&q);
}

void api_embeddings(srv_t *s, http_req_t *r) { embeddings(s, r, EMBED_SHAPE_OPENAI); }
void api_embedding_llama(srv_t *s, http_req_t *r) { embeddings(s, r, EMBED_SHAPE_LLAMA); }
void api_tei_embed(srv_t *s, http_req_t *r) { embeddings(s, r, EMBED_SHAPE_TEI); }

/* ---- rerank and score ---- */

/* Scores of n pairs (query_i, doc_i); NULL after an error reply. The
 * caller frees. */
static float *pair_scores(srv_t *s, http_req_t *r, err_fmt_t f, const req_text_t *qs, int32_t nq,
                          const req_text_t *docs, int32_t n, int32_t truncate, int64_t *tokens)
{
    seqs_t sq = {0};
    float *out = NULL;
    embed_job_t *j = NULL;
    if (!seqs_alloc(&sq, n)) {
        reply_error(r, f, 503, NULL, "out of memory");
        goto done;
    }
    const int32_t limit = trunc_limit(s, truncate);
    for (int32_t i = 0; i < n; i++) {
        const req_text_t *q = &qs[nq == 1 ? 0 : i];
        lf_err_t err = {0};
        if (embed_tokens_pair(s->model, q->s, q->n, docs[i].s, docs[i].n, limit, &sq.seqs[i], &sq.lens[i], &err) !=
            LF_OK) {
            reply_lf(r, f, &err);
            goto done;
        }
        sq.tokens += sq.lens[i];
    }
    if (!seqs_check(s, r, f, &sq, "document") || !(j = run(s, r, f, &sq)))
        goto done;
    if (!(out = malloc((size_t)n * sizeof *out))) {
        reply_error(r, f, 503, NULL, "out of memory");
        goto done;
    }
    for (int32_t i = 0; i < n; i++) {
        int64_t k;
        out[i] = embed_job_out(j, i, &k)[0];
    }
    *tokens = sq.tokens;
done:
    embed_job_free(j);
    seqs_free(&sq);
    return out;
}

static const float *sort_scores;
static int by_score(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    const float sx = sort_scores[x], sy = sort_scores[y];
    if (sx != sy)
        return sx > sy ? -1 : 1;
    return x < y ? -1 : x > y; /* stable on ties */
}

/* Indices by descending score (qsort with a file-level pointer: one sort
 * at a time under a lock). */
static void order_by_score(const float *score, int32_t n, int32_t *idx)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    for (int32_t i = 0; i < n; i++)
        idx[i] = i;
    pthread_mutex_lock(&mu);
    sort_scores = score;
    qsort(idx, (size_t)n, sizeof *idx, by_score);
    pthread_mutex_unlock(&mu);
}

void api_rerank(srv_t *s, http_req_t *r)
{
    rerank_req_t q;
    req_err_t e;
    if (req_rerank_parse(r->body, r->body_len, &q, &e) < 0) {
        /* TEI's format when the body looks like TEI's */
        reply_req_err(r, strstr(r->body, "\"texts\"") ? FMT_TEI : FMT_OPENAI, &e);
        return;
    }
    const err_fmt_t f = q.tei ? FMT_TEI : FMT_OPENAI;
    float *score = NULL;
    int32_t *idx = NULL;
    sb_t b = {0};
    int64_t tokens = 0;
    if (!served(s, r, f, true) || too_many(s, r, f, q.n_docs, "documents") ||
        !(score = pair_scores(s, r, f, &q.query, 1, q.docs, q.n_docs, q.truncate, &tokens)))
        goto out;
    /* TEI's raw_scores: false asks for the classifier's activation (a
     * sigmoid of a single logit); absent keeps llama-server's raw logit */
    if (q.raw_scores == 0 && strcmp(model_hparams(s->model)->arch, "qwen3") != 0)
        for (int32_t i = 0; i < q.n_docs; i++)
            score[i] = 1.0f / (1.0f + expf(-score[i]));
    if (!(idx = malloc((size_t)q.n_docs * sizeof *idx))) {
        reply_error(r, f, 503, NULL, "out of memory");
        goto out;
    }
    order_by_score(score, q.n_docs, idx);
    if (!q.tei) {
        const char *name = q.model ? q.model : s->cfg.names[0];
        sb_fmt(&b, "{\"id\":\"rerank-%s\",\"model\":", r->id);
        sb_json_str(&b, name, strlen(name));
        sb_fmt(&b, ",\"object\":\"list\",\"usage\":{\"prompt_tokens\":%lld,\"total_tokens\":%lld},\"results\":",
               (long long)tokens, (long long)tokens);
    }
    sb_str(&b, "[");
    for (int32_t k = 0; k < q.top_n; k++) {
        const int32_t i = idx[k];
        sb_fmt(&b, "%s{\"index\":%d,\"%s\":", k ? "," : "", i, q.tei ? "score" : "relevance_score");
        sb_float(&b, score[i]);
        if (q.tei && q.return_text) {
            sb_str(&b, ",\"text\":");
            sb_json_str(&b, q.docs[i].s, q.docs[i].n);
        } else if (!q.tei && q.return_documents) {
            sb_str(&b, ",\"document\":{\"text\":");
            sb_json_str(&b, q.docs[i].s, q.docs[i].n);
            sb_str(&b, "}");
        }
        sb_str(&b, "}");
    }
    sb_str(&b, q.tei ? "]" : "]}");
    if (b.oom)
        reply_error(r, f, 503, NULL, "out of memory");
    else
        http_reply_json(r, 200, b.p, NULL);
out:
    free(b.p);
    free(idx);
    free(score);
    req_rerank_free(&q);
}

/* cosine(a, b) in double. */
static float cosine(const float *a, const float *b, int64_t n)
{
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < n; i++)
        ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
    return aa > 0 && bb > 0 ? (float)(ab / sqrt(aa * bb)) : 0.0f;
}

/* /score on an embedding model: the cosine of the two texts' embeddings. */
static float *cosine_scores(srv_t *s, http_req_t *r, const score_req_t *q, int64_t *tokens)
{
    seqs_t sq = {0};
    float *out = NULL;
    embed_job_t *j = NULL;
    const int32_t n = q->n1 + q->n2, limit = trunc_limit(s, q->truncate);
    if (!seqs_alloc(&sq, n)) {
        reply_error(r, FMT_OPENAI, 503, NULL, "out of memory");
        goto done;
    }
    for (int32_t i = 0; i < n; i++) {
        const req_text_t *t = i < q->n1 ? &q->t1[i] : &q->t2[i - q->n1];
        lf_err_t err = {0};
        if (embed_tokens_text(s->vocab, t->s, t->n, limit, false, &sq.seqs[i], &sq.lens[i], &err) != LF_OK) {
            reply_lf(r, FMT_OPENAI, &err);
            goto done;
        }
        sq.tokens += sq.lens[i];
    }
    if (!seqs_check(s, r, FMT_OPENAI, &sq, "text") || !(j = run(s, r, FMT_OPENAI, &sq)))
        goto done;
    if (!(out = malloc((size_t)q->n2 * sizeof *out))) {
        reply_error(r, FMT_OPENAI, 503, NULL, "out of memory");
        goto done;
    }
    for (int32_t i = 0; i < q->n2; i++) {
        int64_t na, nb;
        const float *a = embed_job_out(j, q->n1 == 1 ? 0 : i, &na), *b = embed_job_out(j, q->n1 + i, &nb);
        out[i] = cosine(a, b, na < nb ? na : nb);
    }
    *tokens = sq.tokens;
done:
    embed_job_free(j);
    seqs_free(&sq);
    return out;
}

void api_score(srv_t *s, http_req_t *r)
{
    score_req_t q;
    req_err_t e;
    if (req_score_parse(r->body, r->body_len, &q, &e) < 0) {
        srv_reply_req_err(r, &e);
        return;
    }
    float *score = NULL;
    sb_t b = {0};
    int64_t tokens = 0;
    if (!s->embed) {
        served(s, r, FMT_OPENAI, true);
        goto out;
    }
    if (too_many(s, r, FMT_OPENAI, q.n2, "pairs"))
        goto out;
    const bool cross = embed_sched_pooling(s->embed) == MODEL_POOLING_RANK;
    if (!cross && embed_sched_pooling(s->embed) == MODEL_POOLING_NONE) {
        reply_error(r, FMT_OPENAI, 400, NULL, "/score needs a reranker or a pooled embedding model (this server "
                    "runs pooling 'none')");
        goto out;
    }
    score = cross ? pair_scores(s, r, FMT_OPENAI, q.t1, q.n1, q.t2, q.n2, q.truncate, &tokens)
                  : cosine_scores(s, r, &q, &tokens);
    if (!score)
        goto out;
    const char *name = q.model ? q.model : s->cfg.names[0];
    sb_fmt(&b, "{\"id\":\"score-%s\",\"object\":\"list\",\"created\":%lld,\"model\":", r->id,
           (long long)time(NULL));
    sb_json_str(&b, name, strlen(name));
    sb_str(&b, ",\"data\":[");
    for (int32_t i = 0; i < q.n2; i++) {
        sb_fmt(&b, "%s{\"index\":%d,\"object\":\"score\",\"score\":", i ? "," : "", i);
        sb_float(&b, score[i]);
        sb_str(&b, "}");
    }
    sb_fmt(&b, "],\"usage\":{\"prompt_tokens\":%lld,\"total_tokens\":%lld}}", (long long)tokens, (long long)tokens);
    if (b.oom)
        reply_error(r, FMT_OPENAI, 503, NULL, "out of memory");
    else
        http_reply_json(r, 200, b.p, NULL);
out:
    free(b.p);
    free(score);
    req_score_free(&q);
}

void api_embed_invocations(srv_t *s, http_req_t *r)
{
    switch (req_embed_sniff(r->body, r->body_len)) {
    case 'r': api_rerank(s, r); return;
    case 's': api_score(s, r); return;
    case 'e': embeddings(s, r, strstr(r->body, "\"inputs\"") ? EMBED_SHAPE_TEI : EMBED_SHAPE_OPENAI); return;
    default:
        tgi_reply_error(r, 400,
                        "The body must be a JSON object with 'inputs' (embeddings, TEI schema), 'input' (OpenAI "
                        "embeddings), 'query' and 'texts' or 'documents' (rerank) or 'text_1' and 'text_2' (score)",
                        "validation", NULL);
    }
}

char *api_embed_metrics(srv_t *s)
{
    if (!s->embed)
        return NULL;
    embed_stats_t st;
    embed_sched_stats(s->embed, &st);
    char *t = malloc(1024);
    if (!t)
        return NULL;
    snprintf(t, 1024,
             "# HELP llm_fcgi_embedding_inputs_total Inputs embedded or scored (each rerank document counts).\n"
             "# TYPE llm_fcgi_embedding_inputs_total counter\nllm_fcgi_embedding_inputs_total %llu\n"
             "# HELP llm_fcgi_embedding_tokens_total Tokens of the inputs embedded or scored.\n"
             "# TYPE llm_fcgi_embedding_tokens_total counter\nllm_fcgi_embedding_tokens_total %llu\n"
             "# HELP llm_fcgi_embedding_forward_passes_total Forward passes run for embeddings.\n"
             "# TYPE llm_fcgi_embedding_forward_passes_total counter\nllm_fcgi_embedding_forward_passes_total %llu\n"
             "# HELP llm_fcgi_embedding_inputs_waiting Inputs queued or being evaluated.\n"
             "# TYPE llm_fcgi_embedding_inputs_waiting gauge\nllm_fcgi_embedding_inputs_waiting %d\n",
             (unsigned long long)st.inputs, (unsigned long long)st.tokens, (unsigned long long)st.passes, st.waiting);
    return t;
}
