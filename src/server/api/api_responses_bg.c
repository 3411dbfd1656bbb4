/* api_responses_bg.c - background responses (`background: true`): the
 * request is answered at once with the queued response, stored; a thread
 * of its own runs the generation through the same runner, with an HTTP
 * exchange that writes nowhere, and stores the result (completed,
 * incomplete, failed with the error it got, or cancelled).
 *
 * Cancellation reaches the run through its exchange's "client gone" check,
 * which the runner polls between tokens: it is true once the job's cancel
 * flag is set (POST .../cancel or DELETE on this backend) or, polled once a
 * second, once the stored row carries the cancel request (set by another
 * backend sharing the store) or is gone. Every 10 s the running response
 * is stored again as a heartbeat: a row left in_progress by a process that
 * died (kill -9) is reported failed once its heartbeat is 30 s old
 * (api_responses.c).
 *
 * On shutdown the threads get the drain time of the requests; what still
 * runs then stops and is stored failed ("the server shut down").
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/api/api_responses.h"
#include "server/store/store.h"

typedef struct bg_job {
    srv_t *s;
    resp_job_t *j;
    pthread_t th;
    http_req_t req;           /* the exchange the runner writes to */
    char out[8192];           /* what it wrote (an error body, if any) */
    size_t out_len;
    atomic_bool done;
    atomic_bool shutdown;     /* stopped by the server's shutdown */
    bool deleted;             /* the row was deleted meanwhile: store nothing */
    double last_poll;
    struct bg_job *next;
} bg_job_t;

struct bg_registry {
    pthread_mutex_t mu;
    bg_job_t *head;
};

/* ------------------------------------------------ the silent exchange */

static int bg_write(void *io, const char *p, size_t n)
{
    bg_job_t *b = io;
    size_t room = sizeof b->out - 1 - b->out_len;
    if (n > room)
        n = room;
    memcpy(b->out + b->out_len, p, n);
    b->out_len += n;
    b->out[b->out_len] = '\0';
    return 0;
}

static int bg_flush(void *io)
{
    (void)io;
    return 0;
}

static void save_as(bg_job_t *b, const char *status, json_object *error);

/* The runner's "client gone": cancelled here, or (polled every second)
 * in the store by another backend, or deleted. Also the heartbeat. */
static bool bg_gone(void *io)
{
    bg_job_t *b = io;
    resp_job_t *j = b->j;
    if (atomic_load(&j->cancel) || atomic_load(&b->shutdown))
        return true;
    double t = now_s();
    if (t - b->last_poll < 1.0)
        return false;
    b->last_poll = t;
    store_rec_t rec;
    lf_err_t e;
    lf_code_t c = store_get(b->s->store, j->id, j->owner, (int64_t)time(NULL), &rec, &e);
    if (c == LF_ERR_NOT_FOUND) {
        b->deleted = true;
        return true;
    }
    bool cancel = c == LF_OK && rec.cancel;
    store_rec_free(&rec);
    if (cancel)
        atomic_store(&j->cancel, true);
    else if (t - j->last_beat >= 10.0) {
        j->last_beat = t;
        save_as(b, "in_progress", NULL);
    }
    return cancel;
}

/* ---------------------------------------------------------- the run */

/* Stores the job's response with status (output: the blocks so far). */
static void save_as(bg_job_t *b, const char *status, json_object *error)
{
    resp_job_t *j = b->j;
    json_object *out = json_object_new_array();
    for (size_t i = 0; i < j->br.blk.n; i++) {
        const blk_t *k = &j->br.blk.v[i];
        json_object *it = json_object_new_object();
        /* the items as far as they got (api_responses_out.c writes the
         * finished ones); ids as there */
        char id[96];
        snprintf(id, sizeof id, "%s_%s%04zx", k->kind == BLK_TEXT ? "msg" : k->kind == BLK_TOOL ? "fc" : "rs", j->base,
                 i & 0xffff);
        json_object_object_add(it, "id", json_object_new_string(id));
        if (k->kind == BLK_TOOL) {
            json_object_object_add(it, "type", json_object_new_string("function_call"));
            json_object_object_add(it, "status", json_object_new_string("incomplete"));
            json_object_object_add(it, "call_id", json_object_new_string(k->call_id ? k->call_id : ""));
            json_object_object_add(it, "name", json_object_new_string(k->name ? k->name : ""));
            json_object_object_add(it, "arguments", json_object_new_string_len(k->text ? k->text : "", (int)k->len));
        } else {
            json_object *part = json_object_new_object(), *content = json_object_new_array();
            bool r = k->kind == BLK_REASONING;
            json_object_object_add(part, "type", json_object_new_string(r ? "reasoning_text" : "output_text"));
            json_object_object_add(part, "text", json_object_new_string_len(k->text ? k->text : "", (int)k->len));
            if (!r)
                json_object_object_add(part, "annotations", json_object_new_array());
            json_object_array_add(content, part);
            json_object_object_add(it, "type", json_object_new_string(r ? "reasoning" : "message"));
            if (r)
                json_object_object_add(it, "summary", json_object_new_array());
            else
                json_object_object_add(it, "role", json_object_new_string("assistant"));
            json_object_object_add(it, "status", json_object_new_string("incomplete"));
            json_object_object_add(it, "content", content);
        }
        json_object_array_add(out, it);
    }
    json_object *resp = resp_object(j, status, out, NULL, error, NULL);
    lf_err_t e;
    if (resp_save(j, resp, &e) != LF_OK)
        fprintf(stderr, "llm-fcgi: background %s: store: %s\n", j->id, e.msg);
    json_object_put(resp);
}

static json_object *error_obj(const char *code, const char *msg)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "code", json_object_new_string(code));
    json_object_object_add(o, "message", json_object_new_string(msg));
    return o;
}

/* The error the runner answered (status >= 400), from its body. */
static json_object *captured_error(bg_job_t *b)
{
    const char *body = strstr(b->out, "\r\n\r\n");
    json_object *o = body ? json_tokener_parse(body + 4) : NULL, *err = NULL, *m = NULL, *c = NULL;
    json_object_object_get_ex(o, "error", &err);
    json_object_object_get_ex(err, "message", &m);
    json_object_object_get_ex(err, "code", &c);
    json_object *r = error_obj(c && json_object_is_type(c, json_type_string) ? json_object_get_string(c)
                                                                               : "server_error",
                               m ? json_object_get_string(m) : "the response failed");
    json_object_put(o);
    return r;
}

static void *bg_main(void *arg)
{
    bg_job_t *b = arg;
    resp_job_t *j = b->j;
    j->last_beat = now_s();
    save_as(b, "in_progress", NULL);
    api_chat_generate(b->s, &b->req, &j->chat, &resp_fmt, j);
    store_rec_t rec;
    lf_err_t e;
    if (!j->final && !b->deleted) { /* deleted meanwhile: stays deleted */
        if (store_get(b->s->store, j->id, j->owner, (int64_t)time(NULL), &rec, &e) == LF_ERR_NOT_FOUND)
            b->deleted = true;
        else
            store_rec_free(&rec);
    }
    if (!j->final && !b->deleted) { /* the run did not finish: why */
        if (atomic_load(&b->shutdown))
            save_as(b, "failed", error_obj("server_error", "the server shut down before the response finished"));
        else if (atomic_load(&j->cancel))
            save_as(b, "cancelled", NULL);
        else
            save_as(b, "failed", b->req.status >= 400 ? captured_error(b)
                                                      : error_obj("server_error", "the response failed"));
    }
    fprintf(stderr, "req %s background %s %s prompt=%d completion=%d\n", b->req.id, j->id,
            j->final ? json_object_get_string(json_object_object_get(j->final, "status"))
                     : atomic_load(&j->cancel) ? "cancelled" : "failed",
            b->req.prompt_tokens, b->req.completion_tokens);
    atomic_store(&b->done, true);
    return NULL;
}

/* Joins and frees the finished jobs (caller holds the mutex). */
static void reap(struct bg_registry *g)
{
    for (bg_job_t **p = &g->head; *p;) {
        bg_job_t *b = *p;
        if (!atomic_load(&b->done)) {
            p = &b->next;
            continue;
        }
        pthread_join(b->th, NULL);
        *p = b->next;
        resp_job_free(b->j);
        free(b);
    }
}

void resp_bg_start(srv_t *s, http_req_t *r, resp_job_t *j)
{
    struct bg_registry *g = s->bg;
    bg_job_t *b = g ? calloc(1, sizeof *b) : NULL;
    if (!b) {
        http_reply_error(r, 503, g ? "out of memory" : "background responses are not available here", NULL, NULL,
                         NULL);
        resp_job_free(j);
        return;
    }
    b->s = s;
    b->j = j;
    b->req = (http_req_t){.io = {bg_write, bg_flush, bg_gone, b}, .method = "POST", .path = "/v1/responses",
                          .body = "", .ttft_ms = -1.0};
    memcpy(b->req.id, r->id, sizeof b->req.id);
    json_object *queued = resp_object(j, "queued", NULL, NULL, NULL, NULL);
    lf_err_t e;
    if (resp_save(j, queued, &e) != LF_OK) {
        fprintf(stderr, "req %s: store: %s\n", r->id, e.msg);
        http_reply_error(r, 500, "the response could not be stored (see the server log)", NULL, "store_error", NULL);
        json_object_put(queued);
        resp_job_free(j);
        free(b);
        return;
    }
    pthread_mutex_lock(&g->mu);
    reap(g);
    bool started = pthread_create(&b->th, NULL, bg_main, b) == 0;
    if (started) {
        b->next = g->head;
        g->head = b;
    }
    pthread_mutex_unlock(&g->mu);
    if (!started) {
        json_object_put(queued);
        b->req.status = 0;
        save_as(b, "failed", error_obj("server_error", "could not start the background response"));
        http_reply_error(r, 503, "could not start the background response", NULL, NULL, NULL);
        resp_job_free(j);
        free(b);
        return;
    }
    http_reply_json(r, 200, resp_json(queued), NULL);
    json_object_put(queued);
}

bool resp_bg_cancel_local(srv_t *s, const char *id)
{
    struct bg_registry *g = s->bg;
    bool found = false;
    if (!g)
        return false;
    pthread_mutex_lock(&g->mu);
    for (bg_job_t *b = g->head; b; b = b->next)
        if (!atomic_load(&b->done) && !strcmp(b->j->id, id)) {
            atomic_store(&b->j->cancel, true);
            found = true;
        }
    pthread_mutex_unlock(&g->mu);
    return found;
}

void api_responses_init(srv_t *s)
{
    struct bg_registry *g = calloc(1, sizeof *g);
    if (!g)
        return;
    pthread_mutex_init(&g->mu, NULL);
    s->bg = g;
}

/* Waits until no background response runs; from deadline (unix s) on,
 * the running ones are told to stop. */
static void wait_idle(struct bg_registry *g, int64_t deadline)
{
    for (;;) {
        pthread_mutex_lock(&g->mu);
        reap(g);
        bool idle = !g->head;
        if (!idle && (int64_t)time(NULL) >= deadline)
            for (bg_job_t *b = g->head; b; b = b->next)
                atomic_store(&b->shutdown, true);
        pthread_mutex_unlock(&g->mu);
        if (idle)
            return;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

void api_responses_drain(srv_t *s, int64_t deadline)
{
    if (s->bg)
        wait_idle(s->bg, deadline);
}

void api_responses_free(srv_t *s)
{
    struct bg_registry *g = s->bg;
    if (!g)
        return;
    wait_idle(g, 0);
    pthread_mutex_destroy(&g->mu);
    free(g);
    s->bg = NULL;
}
