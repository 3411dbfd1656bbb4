/* api_responses.c - the OpenAI Responses routes (see api_responses.h):
 *   POST   /v1/responses                    create (streamed or not, background)
 *   GET    /v1/responses/{id}               a stored response
 *   GET    /v1/responses/{id}/input_items   its input items, paginated
 *   DELETE /v1/responses/{id}
 *   POST   /v1/responses/{id}/cancel        a background response
 * Stored responses belong to the API key that created them: with another
 * key they are 404, exactly as an unknown id.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/utf8.h"
#include "server/api/api_responses.h"
#include "server/store/store.h"

void resp_job_free(resp_job_t *j)
{
    if (!j)
        return;
    req_chat_free(&j->chat);
    req_responses_free(&j->q);
    json_object_put(j->items);
    json_object_put(j->final);
    blk_free(&j->br.blk);
    free(j);
}

/* ------------------------------------------------------------- create */

/* A stored response of this owner as its object and items; replies the
 * error (param: who asked for it) and returns -1 when there is none. */
static int load(srv_t *s, http_req_t *r, const char *id, const char *owner, const char *param, store_rec_t *rec,
                json_object **resp, json_object **items)
{
    lf_err_t e;
    char msg[300], name[204];
    utf8_repair(name, sizeof name, id, strlen(id));
    lf_code_t c = store_get(s->store, id, owner, (int64_t)time(NULL), rec, &e);
    if (c == LF_ERR_NOT_FOUND) {
        if (param) {
            snprintf(msg, sizeof msg, "Previous response with id '%s' not found.", name);
            http_reply_error(r, 400, msg, param, "previous_response_not_found", NULL);
        } else {
            snprintf(msg, sizeof msg, "No response found with id '%s'.", name);
            http_reply_error(r, 404, msg, NULL, "not_found", NULL);
        }
        return -1;
    }
    if (c != LF_OK) {
        fprintf(stderr, "req %s: store: %s\n", r->id, e.msg);
        http_reply_error(r, 500, "the response store failed (see the server log)", NULL, "store_error", NULL);
        return -1;
    }
    *resp = json_tokener_parse(rec->response);
    if (items)
        *items = json_tokener_parse(rec->items);
    if (!*resp || !json_object_is_type(*resp, json_type_object) ||
        (items && (!*items || !json_object_is_type(*items, json_type_array)))) {
        json_object_put(*resp);
        if (items)
            json_object_put(*items);
        store_rec_free(rec);
        http_reply_error(r, 500, "a stored response is damaged", NULL, "store_error", NULL);
        return -1;
    }
    return 0;
}

static json_object *get_field(json_object *o, const char *k)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, k, &v) ? v : NULL;
}

/* A stored running response whose process stopped (kill -9, crash) has no
 * heartbeat: it is reported failed. */
static void mark_stale(json_object *resp, const store_rec_t *rec)
{
    if (strcmp(rec->status, "queued") && strcmp(rec->status, "in_progress"))
        return;
    if ((int64_t)time(NULL) - rec->updated_at < 30)
        return;
    json_object_object_add(resp, "status", json_object_new_string("failed"));
    json_object *err = json_object_new_object();
    json_object_object_add(err, "code", json_object_new_string("server_error"));
    json_object_object_add(err, "message",
                           json_object_new_string("the server generating this response stopped before it finished"));
    json_object_object_add(resp, "error", err);
}

/* The conversation a request continues: the stored context of its
 * previous response, that response's output, then the new input. */
static int conversation(srv_t *s, http_req_t *r, resp_job_t *j)
{
    j->items = json_object_new_array();
    if (j->q.previous_response_id) {
        store_rec_t rec;
        json_object *prev = NULL, *ctx = NULL;
        if (load(s, r, j->q.previous_response_id, j->owner, "previous_response_id", &rec, &prev, &ctx) < 0)
            return -1;
        mark_stale(prev, &rec);
        const char *st = json_object_get_string(get_field(prev, "status"));
        if (!st || (strcmp(st, "completed") && strcmp(st, "incomplete"))) {
            char msg[200];
            snprintf(msg, sizeof msg, "Previous response with id '%.100s' is %s: only a completed response can be "
                     "continued.", rec.id, st ? st : "unknown");
            http_reply_error(r, 400, msg, "previous_response_id", NULL, NULL);
            json_object_put(prev);
            json_object_put(ctx);
            store_rec_free(&rec);
            return -1;
        }
        for (size_t i = 0; i < json_object_array_length(ctx); i++)
            json_object_array_add(j->items, json_object_get(json_object_array_get_idx(ctx, i)));
        json_object *out = get_field(prev, "output");
        for (size_t i = 0; out && i < json_object_array_length(out); i++)
            json_object_array_add(j->items, json_object_get(json_object_array_get_idx(out, i)));
        json_object_put(prev);
        json_object_put(ctx);
        store_rec_free(&rec);
    }
    for (size_t i = 0; i < json_object_array_length(j->q.input); i++)
        json_object_array_add(j->items, json_object_get(json_object_array_get_idx(j->q.input, i)));
    return 0;
}

void api_responses_create(srv_t *s, http_req_t *r)
{
    resp_job_t *j = calloc(1, sizeof *j);
    if (!j) {
        http_reply_error(r, 503, "out of memory", NULL, NULL, NULL);
        return;
    }
    j->s = s;
    j->br.sink = &resp_sink;
    j->created_at = (int64_t)time(NULL);
    snprintf(j->id, sizeof j->id, "resp_%s", r->id);
    snprintf(j->base, sizeof j->base, "%s", r->id);
    srv_request_owner(s, r, j->owner);
    req_err_t e;
    if (req_responses_parse(r->body, r->body_len, j->base, &j->q, &e) < 0) {
        srv_reply_req_err(r, &e);
        goto out;
    }
    if (!srv_require_model(s, r, j->q.model))
        goto out;
    if (!s->store && (j->q.previous_response_id || j->q.background)) {
        http_reply_error(r, 400, "this server keeps no responses (it was started with --store none)",
                         j->q.background ? "background" : "previous_response_id", NULL, NULL);
        goto out;
    }
    j->store = j->q.store && s->store;
    if (conversation(s, r, j) < 0)
        goto out;
    req_limits_t lim = {.max_n = srv_max_n(s)};
    if (req_responses_chat(&j->q, j->items, &lim, &j->chat, &e) < 0) {
        srv_reply_req_err(r, &e);
        goto out;
    }
    if (j->q.background) {
        resp_bg_start(s, r, j);
        return;
    }
    api_chat_generate(s, r, &j->chat, &resp_fmt, j);
out:
    resp_job_free(j);
}

/* ------------------------------------------------------- stored ones */

/* "/v1/responses/{id}[/{action}]": id and action (cap bytes each);
 * false when the path has another shape. */
static bool split_path(const char *path, char *id, size_t cap, char *action, size_t acap)
{
    const char *p = path + strlen("/v1/responses/");
    size_t l = strcspn(p, "/");
    if (l == 0 || l >= cap)
        return false;
    memcpy(id, p, l);
    id[l] = '\0';
    p += l;
    action[0] = '\0';
    if (*p == '/') {
        p++;
        if (strchr(p, '/') || strlen(p) >= acap)
            return false;
        snprintf(action, acap, "%s", p);
    }
    return true;
}

static void not_found(http_req_t *r)
{
    char msg[300], path[204];
    utf8_repair(path, sizeof path, r->path, strlen(r->path));
    snprintf(msg, sizeof msg, "Not found: %s", path);
    http_reply_error(r, 404, msg, NULL, "not_found", NULL);
}

/* A query parameter's value (cap bytes, %XX and + decoded); false when
 * absent. */
static bool query_param(const char *q, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    for (const char *p = q; p && *p;) {
        size_t l = strcspn(p, "&");
        if (l > nl && !strncmp(p, name, nl) && p[nl] == '=') {
            size_t w = 0;
            for (size_t i = nl + 1; i < l && w + 1 < cap; i++) {
                char c = p[i];
                if (c == '+') {
                    c = ' ';
                } else if (c == '%' && i + 2 < l) {
                    char hex[3] = {p[i + 1], p[i + 2], 0};
                    char *end;
                    long v = strtol(hex, &end, 16);
                    if (end == hex + 2) {
                        c = (char)v;
                        i += 2;
                    }
                }
                out[w++] = c;
            }
            out[w] = '\0';
            return true;
        }
        p += l;
        if (*p == '&')
            p++;
    }
    return false;
}

static bool no_store(srv_t *s, http_req_t *r)
{
    if (s->store)
        return false;
    http_reply_error(r, 404, "this server keeps no responses (it was started with --store none)", NULL, "not_found",
                     NULL);
    return true;
}

/* GET .../input_items: {object: list, data, first_id, last_id, has_more};
 * limit 1..100 (default 20), order asc | desc (default desc), after. */
static void list_items(http_req_t *r, json_object *items)
{
    char v[128];
    long limit = 20;
    bool asc = false;
    if (query_param(r->query, "limit", v, sizeof v)) {
        char *end;
        limit = strtol(v, &end, 10);
        if (end == v || *end || limit < 1 || limit > 100) {
            http_reply_error(r, 400, "'limit' must be an integer from 1 to 100", "limit", NULL, NULL);
            return;
        }
    }
    if (query_param(r->query, "order", v, sizeof v)) {
        if (strcmp(v, "asc") && strcmp(v, "desc")) {
            http_reply_error(r, 400, "'order' must be asc or desc", "order", NULL, NULL);
            return;
        }
        asc = !strcmp(v, "asc");
    }
    size_t n = json_object_array_length(items), start = 0;
    char after[128];
    bool has_after = query_param(r->query, "after", after, sizeof after);
    for (size_t k = 0; has_after && k < n; k++) {
        size_t i = asc ? k : n - 1 - k;
        json_object *id = get_field(json_object_array_get_idx(items, i), "id");
        if (id && !strcmp(json_object_get_string(id), after)) {
            start = k + 1;
            break;
        }
    }
    json_object *o = json_object_new_object(), *data = json_object_new_array();
    for (size_t k = start; k < n && (long)(k - start) < limit; k++)
        json_object_array_add(data, json_object_get(json_object_array_get_idx(items, asc ? k : n - 1 - k)));
    size_t got = json_object_array_length(data);
    json_object_object_add(o, "object", json_object_new_string("list"));
    json_object_object_add(o, "data", data);
    json_object *first = got ? get_field(json_object_array_get_idx(data, 0), "id") : NULL;
    json_object *last = got ? get_field(json_object_array_get_idx(data, got - 1), "id") : NULL;
    json_object_object_add(o, "first_id", first ? json_object_get(first) : NULL);
    json_object_object_add(o, "last_id", last ? json_object_get(last) : NULL);
    json_object_object_add(o, "has_more", json_object_new_boolean(start + got < n));
    http_reply_json(r, 200, resp_json(o), NULL);
    json_object_put(o);
}

void api_responses_get(srv_t *s, http_req_t *r)
{
    char id[128], action[32], owner[65];
    if (!split_path(r->path, id, sizeof id, action, sizeof action) || (*action && strcmp(action, "input_items"))) {
        not_found(r);
        return;
    }
    if (no_store(s, r))
        return;
    char v[16];
    if (!*action && query_param(r->query, "stream", v, sizeof v) && !strcmp(v, "true")) {
        http_reply_error(r, 400, "streaming a stored response is not supported by this server", "stream", NULL, NULL);
        return;
    }
    srv_request_owner(s, r, owner);
    store_rec_t rec;
    json_object *resp = NULL, *items = NULL;
    if (load(s, r, id, owner, NULL, &rec, &resp, *action ? &items : NULL) < 0)
        return;
    if (*action) {
        list_items(r, items);
    } else {
        mark_stale(resp, &rec);
        http_reply_json(r, 200, resp_json(resp), NULL);
    }
    json_object_put(resp);
    json_object_put(items);
    store_rec_free(&rec);
}

void api_responses_delete(srv_t *s, http_req_t *r)
{
    char id[128], action[32], owner[65], msg[300], name[204];
    if (!split_path(r->path, id, sizeof id, action, sizeof action) || *action) {
        not_found(r);
        return;
    }
    if (no_store(s, r))
        return;
    srv_request_owner(s, r, owner);
    lf_err_t e;
    lf_code_t c = store_delete(s->store, id, owner, (int64_t)time(NULL), &e);
    utf8_repair(name, sizeof name, id, strlen(id));
    if (c == LF_ERR_NOT_FOUND) {
        snprintf(msg, sizeof msg, "No response found with id '%s'.", name);
        http_reply_error(r, 404, msg, NULL, "not_found", NULL);
        return;
    }
    if (c != LF_OK) {
        fprintf(stderr, "req %s: store: %s\n", r->id, e.msg);
        http_reply_error(r, 500, "the response store failed (see the server log)", NULL, "store_error", NULL);
        return;
    }
    resp_bg_cancel_local(s, id); /* a deleted background response stops too */
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_string(name));
    json_object_object_add(o, "object", json_object_new_string("response.deleted"));
    json_object_object_add(o, "deleted", json_object_new_boolean(true));
    http_reply_json(r, 200, resp_json(o), NULL);
    json_object_put(o);
}

void api_responses_cancel(srv_t *s, http_req_t *r)
{
    char id[128], action[32], owner[65];
    if (!split_path(r->path, id, sizeof id, action, sizeof action) || strcmp(action, "cancel")) {
        not_found(r);
        return;
    }
    if (no_store(s, r))
        return;
    srv_request_owner(s, r, owner);
    store_rec_t rec;
    json_object *resp = NULL;
    if (load(s, r, id, owner, NULL, &rec, &resp, NULL) < 0)
        return;
    json_object *bg = get_field(resp, "background");
    if (!bg || !json_object_get_boolean(bg)) {
        http_reply_error(r, 400, "Only responses created with background set to true can be cancelled.", NULL, NULL,
                         NULL);
        goto out;
    }
    if (!strcmp(rec.status, "queued") || !strcmp(rec.status, "in_progress")) {
        lf_err_t e;
        resp_bg_cancel_local(s, id);
        if (store_request_cancel(s->store, id, owner, (int64_t)time(NULL), &e) != LF_OK)
            fprintf(stderr, "req %s: store: %s\n", r->id, e.msg);
        /* the backend running it (this one or another sharing the store)
         * sees the flag within a second and stores the cancelled response */
        for (int i = 0; i < 100; i++) {
            struct timespec ts = {0, 50 * 1000000L};
            nanosleep(&ts, NULL);
            store_rec_t now;
            json_object *cur = NULL;
            if (store_get(s->store, id, owner, (int64_t)time(NULL), &now, &e) != LF_OK)
                break;
            bool done = strcmp(now.status, "queued") && strcmp(now.status, "in_progress");
            if (done && (cur = json_tokener_parse(now.response))) {
                json_object_put(resp);
                resp = cur;
            }
            store_rec_free(&now);
            if (done)
                break;
        }
    }
    mark_stale(resp, &rec);
    http_reply_json(r, 200, resp_json(resp), NULL);
out:
    json_object_put(resp);
    store_rec_free(&rec);
}
