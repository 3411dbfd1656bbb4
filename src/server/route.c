/* route.c - routing table lookup, Bearer auth, the request pipeline. */
#include "server/server.h"
#include "server/api/api_messages.h"
#include "server/api/api_embed.h"
#include "server/api/api_tgi.h"
#include "engine/embed/embed_sched.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/utf8.h"
#include "pull/sha256.h"
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

/* The key part of "Bearer KEY" (trimmed), or NULL. */
static const char *bearer_key(const char *h, size_t *len)
{
    if (!h || strncasecmp(h, "Bearer ", 7))
        return NULL;
    h += 7;
    while (*h == ' ')
        h++;
    size_t glen = strlen(h);
    while (glen && (h[glen - 1] == ' ' || h[glen - 1] == '\t'))
        glen--;
    *len = glen;
    return h;
}

/* Index of the key equal to given[0..glen), -1: none; every key compared. */
static int key_find(const srv_config_t *c, const char *given, size_t glen)
{
    int found = -1;
    for (int i = 0; i < c->n_keys; i++)
        if (key_equal(c->keys[i], given, glen) && glen > 0 && found < 0)
            found = i;
    return found;
}

bool auth_check(const srv_config_t *c, const char *h)
{
    return auth_key_index(c, h, NULL) != -1;
}

int auth_key_index(const srv_config_t *c, const char *authorization, const char *x_api_key)
{
    if (c->n_keys == 0)
        return -2;
    size_t glen = 0;
    const char *g = bearer_key(authorization, &glen);
    int i = g ? key_find(c, g, glen) : -1;
    if (i < 0 && x_api_key) {
        size_t l = strlen(x_api_key);
        while (l && (x_api_key[l - 1] == ' ' || x_api_key[l - 1] == '\t'))
            l--;
        while (l && *x_api_key == ' ')
            x_api_key++, l--;
        i = key_find(c, x_api_key, l);
    }
    return i;
}

void srv_request_owner(const srv_t *s, const http_req_t *r, char out[65])
{
    out[0] = '\0';
    int i = auth_key_index(&s->cfg, r->auth, r->api_key);
    if (i < 0)
        return;
    sha256_t h;
    uint8_t d[32];
    sha256_init(&h);
    sha256_update(&h, s->cfg.keys[i], strlen(s->cfg.keys[i]));
    sha256_final(&h, d);
    sha256_hex(d, out);
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
    /* OpenAI Responses (api_responses*.c) and Anthropic Messages (api_messages.c) */
    {"POST", "/v1/responses", ROUTE_EXACT, false, api_responses_create, ROUTE_ERR_OPENAI},
    {"GET", "/v1/responses/", ROUTE_PREFIX, false, api_responses_get, ROUTE_ERR_OPENAI},
    {"DELETE", "/v1/responses/", ROUTE_PREFIX, false, api_responses_delete, ROUTE_ERR_OPENAI},
    {"POST", "/v1/responses/", ROUTE_PREFIX, false, api_responses_cancel, ROUTE_ERR_OPENAI},
    {"POST", "/v1/messages", ROUTE_EXACT, false, api_messages, ROUTE_ERR_ANTHROPIC},
    {"POST", "/v1/messages/count_tokens", ROUTE_EXACT, false, api_messages_count, ROUTE_ERR_ANTHROPIC},
    /* embeddings and reranking (api_embed.c) */
    {"POST", "/v1/embeddings", ROUTE_EXACT, false, api_embeddings, ROUTE_ERR_OPENAI},
    {"POST", "/embeddings", ROUTE_EXACT, false, api_embedding_llama, ROUTE_ERR_OPENAI},
    {"POST", "/embedding", ROUTE_EXACT, false, api_embedding_llama, ROUTE_ERR_OPENAI},
    {"POST", "/embed", ROUTE_EXACT, false, api_tei_embed, ROUTE_ERR_TGI},
    {"POST", "/rerank", ROUTE_EXACT, false, api_rerank, ROUTE_ERR_OPENAI},
    {"POST", "/v1/rerank", ROUTE_EXACT, false, api_rerank, ROUTE_ERR_OPENAI},
    {"POST", "/v2/rerank", ROUTE_EXACT, false, api_rerank, ROUTE_ERR_OPENAI},
    {"POST", "/reranking", ROUTE_EXACT, false, api_rerank, ROUTE_ERR_OPENAI},
    {"POST", "/v1/reranking", ROUTE_EXACT, false, api_rerank, ROUTE_ERR_OPENAI},
    {"POST", "/score", ROUTE_EXACT, false, api_score, ROUTE_ERR_OPENAI},
    {"POST", "/v1/score", ROUTE_EXACT, false, api_score, ROUTE_ERR_OPENAI},
};

/* Routes that generate text: an embedding server (no generation
 * scheduler) answers them 404. */
static bool generation_route(const route_t *rt)
{
    const srv_handler_fn gen[] = {api_chat, api_completions, api_tgi_generate, api_tgi_generate_stream,
                                  api_tgi_compat, api_responses_create, api_messages,
                                  api_messages_count};
    for (size_t i = 0; i < sizeof gen / sizeof gen[0]; i++)
        if (rt->fn == gen[i])
            return true;
    return false;
}

/* The error shape of the routes serving path (for a 405, where no route
 * matched the method). */
static route_errors_t path_errors(const char *path)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (routes[i].errors != ROUTE_ERR_OPENAI && path_matches(&routes[i], path))
            return routes[i].errors;
    return ROUTE_ERR_OPENAI;
}

/* A route-level error: OpenAI's body, TGI's {"error", "error_type"}
 * (error_type from the OpenAI code: authentication, validation, ...), or
 * Anthropic's (r->error_json, set by srv_handle). */
static void route_error(http_req_t *r, route_errors_t style, int status, const char *msg, const char *code,
                        const char *extra)
{
    if (style == ROUTE_ERR_TGI)
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
    route_errors_t style = rt ? rt->errors : path_errors(r->path);
    if (style == ROUTE_ERR_ANTHROPIC) /* every error of the exchange in Anthropic's shape */
        r->error_json = anthropic_error_json;
    if (!rt && status == 404) {
        char msg[300];
        snprintf(msg, sizeof msg, "Not found: %s", path);
        http_reply_error(r, 404, msg, NULL, "not_found", NULL);
    } else if (!rt) {
        char msg[300];
        snprintf(msg, sizeof msg, "Method %s not allowed on %s", method, path);
        snprintf(extra, sizeof extra, "Allow: %s\r\n", allow);
        route_error(r, style, 405, msg, "method_not_allowed", extra);
    } else if (!rt->open && auth_key_index(&s->cfg, r->auth, r->api_key) == -1) {
        route_error(r, style, 401,
                    style == ROUTE_ERR_ANTHROPIC
                        ? "Invalid or missing API key: send 'x-api-key: <key>' or 'Authorization: Bearer <key>'"
                        : "Invalid or missing API key: send 'Authorization: Bearer <key>'",
                    "invalid_api_key", "WWW-Authenticate: Bearer\r\n");
    } else if (s->cfg.max_body && r->body_len > s->cfg.max_body) {
        char msg[160];
        snprintf(msg, sizeof msg, "The request body is %zu bytes; the limit is %zu", r->body_len, s->cfg.max_body);
        route_error(r, style, 413, msg, "request_too_large", NULL);
    } else if (req_body_utf8(r->body, r->body_len, &bad_body) < 0) {
        /* every body is JSON, and JSON text is UTF-8 (RFC 8259): checked
         * here once for every endpoint */
        if (style == ROUTE_ERR_TGI)
            route_error(r, style, bad_body.status, bad_body.msg, NULL, NULL);
        else
            srv_reply_req_err(r, &bad_body);
    } else if (!s->sched && generation_route(rt)) {
        char msg[400];
        snprintf(msg, sizeof msg, "This server serves %s, not text generation: %s is not available (start another "
                 "llm-fcgi without --embedding / --rerank for a chat model)", s->embed ? "embeddings" : "no model",
                 path);
        route_error(r, style, 404, msg, "not_found", NULL);
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
