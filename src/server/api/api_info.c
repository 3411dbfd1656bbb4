/* api_info.c - /v1/models, /health, /ping, /tokenize, /detokenize, /metrics. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/vocab/vocab.h"
#include "server/request/request.h"
#include "server/server.h"
#include "grammar/grammar.h"
#include "server/transport/fcgi_guard.h"
#include "server/api/api_embed.h"

static void reply_obj(http_req_t *r, json_object *o)
{
    http_reply_json(r, 200, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                    NULL);
    json_object_put(o);
}

static json_object *model_card(const srv_t *s, const char *name)
{
    json_object *m = json_object_new_object();
    json_object_object_add(m, "id", json_object_new_string(name));
    json_object_object_add(m, "object", json_object_new_string("model"));
    json_object_object_add(m, "created", json_object_new_int64((int64_t)s->created));
    json_object_object_add(m, "owned_by", json_object_new_string("llm-fcgi"));
    /* vLLM's "root" is the model it loaded: here the file's name, never
     * the server's directory */
    const char *base = strrchr(s->cfg.model_path, '/');
    json_object_object_add(m, "root", json_object_new_string(base && base[1] ? base + 1 : s->cfg.model_path));
    json_object_object_add(m, "parent", NULL);
    json_object_object_add(m, "max_model_len", json_object_new_int(srv_n_ctx(s)));
    return m;
}

void api_models(srv_t *s, http_req_t *r)
{
    json_object *o = json_object_new_object(), *data = json_object_new_array();
    json_object_object_add(o, "object", json_object_new_string("list"));
    for (int i = 0; i < s->cfg.n_names; i++)
        json_object_array_add(data, model_card(s, s->cfg.names[i]));
    json_object_object_add(o, "data", data);
    reply_obj(r, o);
}

void api_model_one(srv_t *s, http_req_t *r)
{
    const char *id = r->path + strlen("/v1/models/");
    if (!srv_require_model(s, r, id))
        return;
    reply_obj(r, model_card(s, id));
}

void api_health(srv_t *s, http_req_t *r)
{
    (void)s;
    http_reply_json(r, 200, "{\"status\":\"ok\"}", NULL);
}

void api_ping(srv_t *s, http_req_t *r)
{
    /* the server only accepts once the model is loaded */
    (void)s;
    http_reply_json(r, 200, "{\"status\":\"healthy\"}", NULL);
}

void api_tokenize(srv_t *s, http_req_t *r)
{
    tokenize_req_t q;
    req_err_t e;
    if (req_tokenize_parse(r->body, r->body_len, &q, &e) < 0) {
        srv_reply_req_err(r, &e);
        return;
    }
    char *rendered = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    lf_err_t le = {0};
    if (!srv_require_model(s, r, q.model))
        goto out;
    const char *text = q.prompt;
    if (!text) {
        if (s->render(s->render_ctx, &q.chat, q.add_generation_prompt, &rendered, &le) != LF_OK) {
            http_reply_err(r, &le, "messages", NULL);
            goto out;
        }
        text = rendered;
    }
    if (vocab_tokenize(s->vocab, text, strlen(text), q.add_special, true, &ids, &n, &le) != LF_OK) {
        http_reply_err(r, &le, NULL, NULL);
        goto out;
    }
    json_object *o = json_object_new_object(), *arr = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        json_object_array_add(arr, json_object_new_int(ids[i]));
    json_object_object_add(o, "count", json_object_new_int((int32_t)n));
    json_object_object_add(o, "max_model_len", json_object_new_int(srv_n_ctx(s)));
    json_object_object_add(o, "tokens", arr);
    json_object_object_add(o, "token_strs", NULL);
    reply_obj(r, o);
out:
    free(ids);
    free(rendered);
    req_tokenize_free(&q);
}

void api_detokenize(srv_t *s, http_req_t *r)
{
    detok_req_t q;
    req_err_t e;
    if (req_detok_parse(r->body, r->body_len, &q, &e) < 0) {
        srv_reply_req_err(r, &e);
        return;
    }
    if (!srv_require_model(s, r, q.model)) {
        req_detok_free(&q);
        return;
    }
    int32_t nv = vocab_n_tokens(s->vocab);
    for (size_t i = 0; i < q.n_toks; i++)
        if (q.toks[i] >= nv) {
            char msg[120];
            snprintf(msg, sizeof msg, "token id %d is out of vocabulary (0..%d)", q.toks[i], nv - 1);
            http_reply_error(r, 400, msg, "tokens", NULL, NULL);
            req_detok_free(&q);
            return;
        }
    vocab_detok_t d;
    vocab_detok_init(&d, s->vocab, false);
    size_t cap = 0, len = 0;
    char *out = NULL;
    for (size_t i = 0; i <= q.n_toks; i++) {
        if (cap - len < VOCAB_DETOK_MAX + 1) { /* room for one more piece */
            size_t nc = cap ? cap * 2 : 4 * VOCAB_DETOK_MAX;
            char *p = realloc(out, nc);
            if (!p) {
                free(out);
                http_reply_error(r, 503, "out of memory", NULL, NULL, NULL);
                req_detok_free(&q);
                return;
            }
            out = p;
            cap = nc;
        }
        if (i == q.n_toks)
            break;
        int w = vocab_detok_push(&d, q.toks[i], out + len, cap - len);
        if (w > 0)
            len += (size_t)w;
    }
    int w = vocab_detok_flush(&d, out + len, cap - len);
    if (w > 0)
        len += (size_t)w;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "prompt", json_object_new_string_len(out, (int)len));
    reply_obj(r, o);
    free(out);
    req_detok_free(&q);
}

/* The grammar engine's counters (structured output) in Prometheus text. */
static char *grammar_metrics(srv_t *s)
{
    grammar_stats_t g;
    grammar_engine_stats(s->grammar, &g);
    static const char *le[11] = {"1e-05", "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005",
                                 "0.001", "0.0025", "0.005", "0.01", "0.025"};
    size_t cap = 4096;
    char *t = malloc(cap);
    if (!t)
        return NULL;
    int w = snprintf(t, cap,
                     "# HELP llm_fcgi_grammar_compiles_total Grammars compiled (cache misses), by outcome.\n"
                     "# TYPE llm_fcgi_grammar_compiles_total counter\n"
                     "llm_fcgi_grammar_compiles_total{outcome=\"ok\"} %llu\n"
                     "llm_fcgi_grammar_compiles_total{outcome=\"error\"} %llu\n"
                     "# HELP llm_fcgi_grammar_compile_seconds_total Time spent compiling grammars.\n"
                     "# TYPE llm_fcgi_grammar_compile_seconds_total counter\n"
                     "llm_fcgi_grammar_compile_seconds_total %.6f\n"
                     "# HELP llm_fcgi_grammar_cache_hits_total Requests whose grammar came from the cache.\n"
                     "# TYPE llm_fcgi_grammar_cache_hits_total counter\n"
                     "llm_fcgi_grammar_cache_hits_total %llu\n"
                     "# HELP llm_fcgi_grammar_mask_cache_total Token-mask cache lookups.\n"
                     "# TYPE llm_fcgi_grammar_mask_cache_total counter\n"
                     "llm_fcgi_grammar_mask_cache_total{result=\"hit\"} %llu\n"
                     "llm_fcgi_grammar_mask_cache_total{result=\"miss\"} %llu\n"
                     "# HELP llm_fcgi_grammar_mask_cache_bytes Memory held by the token-mask cache.\n"
                     "# TYPE llm_fcgi_grammar_mask_cache_bytes gauge\n"
                     "llm_fcgi_grammar_mask_cache_bytes %zu\n"
                     "# HELP llm_fcgi_grammar_mask_seconds Time to compute one token mask.\n"
                     "# TYPE llm_fcgi_grammar_mask_seconds histogram\n",
                     (unsigned long long)(g.compiles - g.compile_errors), (unsigned long long)g.compile_errors,
                     g.compile_seconds, (unsigned long long)g.cache_hits, (unsigned long long)g.mask_cache_hits,
                     (unsigned long long)g.mask_cache_misses, g.mask_cache_bytes);
    uint64_t cum = 0;
    for (int b = 0; b < 11 && w > 0 && (size_t)w < cap; b++) {
        cum += g.mask_hist[b];
        w += snprintf(t + w, cap - (size_t)w, "llm_fcgi_grammar_mask_seconds_bucket{le=\"%s\"} %llu\n", le[b],
                      (unsigned long long)cum);
    }
    if (w > 0 && (size_t)w < cap)
        snprintf(t + w, cap - (size_t)w,
                 "llm_fcgi_grammar_mask_seconds_bucket{le=\"+Inf\"} %llu\n"
                 "llm_fcgi_grammar_mask_seconds_sum %.6f\nllm_fcgi_grammar_mask_seconds_count %llu\n",
                 (unsigned long long)g.masks, g.mask_seconds, (unsigned long long)g.masks);
    return t;
}

void api_metrics(srv_t *s, http_req_t *r)
{
    sched_stats_t st;
    if (s->sched)
        sched_stats(s->sched, &st);
    char *text = metrics_render(&s->metrics, s->sched ? &st : NULL, s->cfg.names[0]);
    char *gtext = text && s->grammar ? grammar_metrics(s) : NULL;
    char *etext = text && s->embed ? api_embed_metrics(s) : NULL;
    if (!text || (s->grammar && !gtext) || (s->embed && !etext)) {
        free(text);
        free(gtext);
        free(etext);
        http_reply_error(r, 503, "out of memory", NULL, NULL, NULL);
        return;
    }
    char conn[1024] = "";
    if (s->guard) { /* the FastCGI connection reader (fcgi_guard.h) */
        fcgi_guard_stats_t g;
        fcgi_guard_stats(s->guard, &g);
        snprintf(conn, sizeof conn,
                 "# HELP llm_fcgi_connections_total FastCGI connections accepted.\n"
                 "# TYPE llm_fcgi_connections_total counter\nllm_fcgi_connections_total %llu\n"
                 "# HELP llm_fcgi_dropped_total FastCGI connections dropped before their request was complete.\n"
                 "# TYPE llm_fcgi_dropped_total counter\n"
                 "llm_fcgi_dropped_total{reason=\"protocol\"} %llu\n"
                 "llm_fcgi_dropped_total{reason=\"timeout\"} %llu\n"
                 "llm_fcgi_dropped_total{reason=\"evicted\"} %llu\n"
                 "llm_fcgi_dropped_total{reason=\"closed\"} %llu\n"
                 "llm_fcgi_dropped_total{reason=\"address\"} %llu\n",
                 (unsigned long long)g.accepted, (unsigned long long)g.protocol_errors,
                 (unsigned long long)g.timeouts, (unsigned long long)g.evicted, (unsigned long long)g.closed_early,
                 (unsigned long long)g.refused);
    }
    if (http_send_headers(r, 200, "text/plain; version=0.0.4; charset=utf-8", NULL) == 0 &&
        http_write(r, text, strlen(text)) == 0 && http_write(r, conn, strlen(conn)) == 0 &&
        (!gtext || http_write(r, gtext, strlen(gtext)) == 0) && (!etext || http_write(r, etext, strlen(etext)) == 0))
        http_flush(r);
    free(text);
    free(gtext);
    free(etext);
}
