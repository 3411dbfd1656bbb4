/* route.c - routing table lookup, Bearer auth, the request pipeline. */
#include "server/server.h"
#include "server/api/api_embed.h"
#include "server/api/api_tgi.h"
#include "engine/embed/embed_sched.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/utf8.h"
#include "server/request/req_json.h"

static bool path_matches(const route_t *rt, const char *path)
{
    if (rt->match == ROUTE_EXACT)
        return !strcmp(rt->path, path);
    size_t l = strlen(rt->path);
    return !strncmp(rt->path, path, l) && path[l] != '\0';
}

const route_t *route_find(const route_t *table, size_t n, const char *method, const char *path,
                          int *status, char *allow, size_t cap)
{
    bool known = false;
    if (cap)
        allow[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (!path_matches(&table[i], path))
            continue;
        if (!strcmp(table[i].method, method))
            return &table[i];
        if (cap && !strstr(allow, table[i].method)) {
            size_t l = strlen(allow);
            snprintf(allow + l, cap - l, "%s%s", l ? ", " : "", table[i].method);
        }
        known = true;
    }
    *status = known ? 405 : 404;
    return NULL;
}

/* Compares without an early exit so timing does not leak the key: every
 * configured key is compared over the full presented length. */
static bool key_equal(const char *key, const char *given, size_t glen)
{
    size_t klen = strlen(key);
    volatile unsigned char diff = (unsigned char)(klen != glen);
    for (size_t i = 0; i < glen; i++)
        diff |= (unsigned char)(given[i] ^ (i < klen ? key[i] : 0));
    return diff == 0;
}

bool auth_check(const srv_config_t *c, const char *h)
{
    if (c->n_keys == 0)
        return true;
    if (!h || strncasecmp(h, "Bearer ", 7))
        return false;
    h += 7;
    while (*h == ' ')
        h++;
    size_t glen = strlen(h);
    while (glen && (h[glen - 1] == ' ' || h[glen - 1] == '\t'))
        glen--;
    bool ok = false;
    for (int i = 0; i < c->n_keys; i++)
        ok |= key_equal(c->keys[i], h, glen);
    return ok && glen > 0;
}

bool srv_model_ok(const srv_t *s, const char *model)
{
    if (!model)
        return true;
    for (int i = 0; i < s->cfg.n_names; i++)
        if (!strcmp(s->cfg.names[i], model))
            return true;
    return false;
}

bool srv_require_model(const srv_t *s, http_req_t *r, const char *model)
{
    if (srv_model_ok(s, model))
        return true;
    char msg[300], name[204];
    utf8_repair(name, sizeof name, model, strlen(model)); /* at most 200 bytes, whole characters */
    snprintf(msg, sizeof msg, "The model `%s` does not exist.", name);
    http_reply_error(r, 404, msg, "model", "model_not_found", NULL);
    return false;
}

int32_t srv_max_n(const srv_t *s)
{
    return s->cfg.max_n > 0 ? s->cfg.max_n : 16;
}

int32_t srv_n_ctx(const srv_t *s)
{
    return s->sched ? sched_n_ctx(s->sched) : s->embed ? embed_sched_max_tokens(s->embed) : 0;
}

void srv_reply_req_err(http_req_t *r, const req_err_t *e)
{
    http_reply_error(r, e->status, e->msg, e->param[0] ? e->param : NULL, e->code[0] ? e->code : NULL, NULL);
}

static const route_t routes[] = {
    {"POST", "/v1/chat/completions", ROUTE_EXACT, false, api_chat, false},
    {"POST", "/v1/completions", ROUTE_EXACT, false, api_completions, false},
    {"POST", "/invocations", ROUTE_EXACT, false, api_invocations, false},
    {"GET", "/v1/models", ROUTE_EXACT, false, api_models, false},
    {"GET", "/v1/models/", ROUTE_PREFIX, false, api_model_one, false},
    {"GET", "/health", ROUTE_EXACT, true, api_health, false},
    {"GET", "/ping", ROUTE_EXACT, true, api_ping, false},
    {"POST", "/tokenize", ROUTE_EXACT, false, api_tokenize, false},
    {"POST", "/detokenize", ROUTE_EXACT, false, api_detokenize, false},
    {"GET", "/metrics", ROUTE_EXACT, false, api_metrics, false},
    /* Hugging Face TGI (api_tgi.c) */
    {"POST", "/generate", ROUTE_EXACT, false, api_tgi_generate, true},
    {"POST", "/generate_stream", ROUTE_EXACT, false, api_tgi_generate_stream, true},
    {"POST", "/", ROUTE_EXACT, false, api_tgi_compat, true},
    {"GET", "/info", ROUTE_EXACT, false, api_tgi_info, true},
    /* embeddings and reranking (api_embed.c) */
    {"POST", "/v1/embeddings", ROUTE_EXACT, false, api_embeddings, false},
    {"POST", "/embeddings", ROUTE_EXACT, false, api_embedding_llama, false},
    {"POST", "/embedding", ROUTE_EXACT, false, api_embedding_llama, false},
    {"POST", "/embed", ROUTE_EXACT, false, api_tei_embed, true},
    {"POST", "/rerank", ROUTE_EXACT, false, api_rerank, false},
    {"POST", "/v1/rerank", ROUTE_EXACT, false, api_rerank, false},
    {"POST", "/v2/rerank", ROUTE_EXACT, false, api_rerank, false},
    {"POST", "/reranking", ROUTE_EXACT, false, api_rerank, false},
    {"POST", "/v1/reranking", ROUTE_EXACT, false, api_rerank, false},
    {"POST", "/score", ROUTE_EXACT, false, api_score, false},
    {"POST", "/v1/score", ROUTE_EXACT, false, api_score, false},
};

/* Routes that generate text: an embedding server (no generation
 * scheduler) answers them 404. */
static bool generation_route(const route_t *rt)
{
    const srv_handler_fn gen[] = {api_chat, api_completions, api_tgi_generate, api_tgi_generate_stream,
                                  api_tgi_compat};
    for (size_t i = 0; i < sizeof gen / sizeof gen[0]; i++)
        if (rt->fn == gen[i])
            return true;
    return false;
}

/* Whether path is served by a route whose errors are TGI-shaped (for a
 * 405, where no route matched the method). */
static bool tgi_path(const char *path)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (routes[i].tgi_errors && path_matches(&routes[i], path))
            return true;
    return false;
}

/* A route-level error: OpenAI's body, or TGI's {"error", "error_type"}
 * (error_type from the OpenAI code: authentication, validation, ...). */
static void route_error(http_req_t *r, bool tgi, int status, const char *msg, const char *code, const char *extra)
{
    if (tgi)
        tgi_reply_error(r, status, msg, status == 401 ? "authentication" : "validation", extra);
    else
        http_reply_error(r, status, msg, NULL, code, extra);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void srv_handle(srv_t *s, http_req_t *r)
{
    double t0 = now_s();
    r->ttft_ms = -1.0;
    int status = 0;
    char allow[64], extra[96];
    const route_t *rt = route_find(routes, sizeof routes / sizeof routes[0], r->method, r->path, &status,
                                   allow, sizeof allow);
    /* HEAD on GET routes behaves like GET for health checkers */
    if (!rt && !strcmp(r->method, "HEAD"))
        rt = route_find(routes, sizeof routes / sizeof routes[0], "GET", r->path, &status, allow, sizeof allow);
    /* the path and method come from the peer as bytes: quoted repaired
     * (U+FFFD for invalid UTF-8) and cut at a character */
    char path[204], method[20];
    utf8_repair(path, sizeof path, r->path, strlen(r->path));
    utf8_repair(method, sizeof method, r->method, strlen(r->method));
    req_err_t bad_body;
    if (!rt && status == 404) {
        char msg[300];
        snprintf(msg, sizeof msg, "Not found: %s", path);
        http_reply_error(r, 404, msg, NULL, "not_found", NULL);
    } else if (!rt) {
        char msg[300];
        snprintf(msg, sizeof msg, "Method %s not allowed on %s", method, path);
        snprintf(extra, sizeof extra, "Allow: %s\r\n", allow);
        route_error(r, tgi_path(r->path), 405, msg, "method_not_allowed", extra);
    } else if (!rt->open && !auth_check(&s->cfg, r->auth)) {
        route_error(r, rt->tgi_errors, 401, "Invalid or missing API key: send 'Authorization: Bearer <key>'",
                    "invalid_api_key", "WWW-Authenticate: Bearer\r\n");
    } else if (s->cfg.max_body && r->body_len > s->cfg.max_body) {
        char msg[160];
        snprintf(msg, sizeof msg, "The request body is %zu bytes; the limit is %zu", r->body_len, s->cfg.max_body);
        route_error(r, rt->tgi_errors, 413, msg, "request_too_large", NULL);
    } else if (req_body_utf8(r->body, r->body_len, &bad_body) < 0) {
        /* every body is JSON, and JSON text is UTF-8 (RFC 8259): checked
         * here once for every endpoint */
        if (rt->tgi_errors)
            route_error(r, true, bad_body.status, bad_body.msg, NULL, NULL);
        else
            srv_reply_req_err(r, &bad_body);
    } else if (!s->sched && generation_route(rt)) {
        char msg[400];
        snprintf(msg, sizeof msg, "This server serves %s, not text generation: %s is not available (start another "
                 "llm-fcgi without --embedding / --rerank for a chat model)", s->embed ? "embeddings" : "no model",
                 path);
        route_error(r, rt->tgi_errors, 404, msg, "not_found", NULL);
    } else {
        rt->fn(s, r);
    }
    if (!r->headers_sent) /* a handler that forgot to answer is a bug */
        http_reply_error(r, 500, "internal error: no response", NULL, NULL, NULL);
    metrics_request(&s->metrics, r->status);
    double dt = (now_s() - t0) * 1000.0;
    char ttft[32] = "-";
    if (r->ttft_ms >= 0)
        snprintf(ttft, sizeof ttft, "%.1fms", r->ttft_ms);
    fprintf(stderr, "req %s %s %s %d prompt=%d completion=%d ttft=%s dur=%.1fms%s\n", r->id, method, path,
            r->status, r->prompt_tokens, r->completion_tokens, ttft, dt, r->write_failed ? " client-gone" : "");
}
