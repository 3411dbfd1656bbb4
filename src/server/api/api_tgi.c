/* api_tgi.c - POST /generate, /generate_stream, / (TGI), /invocations with
 * `inputs` (LMI) and GET /info: parse (request_tgi.c), tokenize, apply
 * TGI's input limits, then the shared runner (api_gen.c) with the TGI /
 * LMI output format (api_tgi_out.c). See api_tgi.h for the shapes.
 */
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/api_constraint.h"
#include "server/api/api_gen.h"
#include "server/api/api_tgi.h"

#define LMI_DEFAULT_MAX_NEW_TOKENS 30 /* LMI's documented default */

/* A validation error in the dialect's shape. */
static void refuse(http_req_t *r, bool lmi, int status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void refuse(http_req_t *r, bool lmi, int status, const char *param, const char *fmt, ...)
{
    req_err_t e;
    va_list ap;
    va_start(ap, fmt);
    req_err_vset(&e, status, param, NULL, fmt, ap);
    va_end(ap);
    tgi_reply_req_err(r, lmi, &e);
}

/* TGI's `grammar` (json / json_schema / regex) compiled by the grammar
 * engine as the output's constraint: 0 with *g set (NULL when the request
 * has none), or -1 after replying 422 (TGI's status for a grammar it
 * cannot use) or 503. The schema is enforced strictly: a keyword the engine
 * cannot enforce is refused, never ignored. */
static int tgi_grammar(srv_t *s, http_req_t *r, bool lmi, const tgi_req_t *q, grammar_t **g)
{
    *g = NULL;
    if (q->grammar.kind == TGI_GRAMMAR_NONE)
        return 0;
    json_object *v = q->grammar.value;
    if (q->grammar.kind == TGI_GRAMMAR_JSON_SCHEMA)
        v = json_object_object_get(v, "schema");
    req_constraint_t k = {.kind = q->grammar.kind == TGI_GRAMMAR_REGEX ? REQ_CONSTRAINT_REGEX
                                                                        : REQ_CONSTRAINT_JSON_SCHEMA,
                          .strict = true};
    snprintf(k.param, sizeof k.param, "grammar");
    if (!v || (k.kind == REQ_CONSTRAINT_REGEX && !json_object_is_type(v, json_type_string))) {
        refuse(r, lmi, 422, "grammar", "`grammar.value` must be %s",
               k.kind == REQ_CONSTRAINT_REGEX ? "a string" : "a JSON schema");
        return -1;
    }
    k.text = (char *)(json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                : json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
    lf_err_t e = {0};
    *g = api_constraint_compile(s, &k, &e);
    if (!*g) {
        refuse(r, lmi, e.code == LF_ERR_NOMEM ? 503 : 422, "grammar", "`grammar`: %s", e.msg);
        return -1;
    }
    return 0;
}

/* The seed a sampling request reports: its own, else a random one drawn
 * from the request id (below 2^53, so JavaScript clients can send it back
 * exactly). Greedy requests have none (TGI reports null). */
static void resolve_seed(const http_req_t *r, tgi_req_t *q)
{
    if (!q->sampling || q->gen.has_seed)
        return;
    char hex[17];
    memcpy(hex, r->id + 16, 16); /* the second half: the first seeds `entropy` */
    hex[16] = '\0';
    q->gen.has_seed = true;
    q->gen.seed = strtoull(hex, NULL, 16) & ((1ull << 53) - 1);
}

/* Markdown images in input i, as TGI takes them: "![](URL)" (data: URL,
 * base64 or a URL) where the image goes. 1 when there were some (ids
 * set), 0 when none, -1 after replying. */
static int tgi_media_inputs(srv_t *s, http_req_t *r, tgi_req_t *q, bool lmi, size_t i, int32_t **ids, size_t *n_ids)
{
    const char *in = q->inputs[i];
    if (!strstr(in, "![]("))
        return 0;
    size_t len = strlen(in), n = 0, cap = 0;
    char *text = malloc(len + 1), **urls = NULL, (*params)[48] = NULL;
    size_t w = 0;
    int rc = text ? 1 : -1;
    for (const char *p = in; rc > 0 && *p;) {
        const char *m = strstr(p, "![](");
        const char *e = m ? strchr(m + 4, ')') : NULL;
        if (!m || !e) {
            size_t l = strlen(p);
            memcpy(text + w, p, l);
            w += l;
            break;
        }
        memcpy(text + w, p, (size_t)(m - p));
        w += (size_t)(m - p);
        if (n == cap) {
            cap = cap ? 2 * cap : 4;
            char **nu = realloc(urls, cap * sizeof *nu);
            char(*np)[48] = nu ? realloc(params, cap * sizeof *np) : NULL;
            if (nu)
                urls = nu;
            if (!np) {
                rc = -1;
                break;
            }
            params = np;
        }
        urls[n] = strndup(m + 4, (size_t)(e - m - 4));
        snprintf(params[n], sizeof params[n], "inputs image %zu", n + 1);
        n++;
        if (w + strlen(CHAT_MEDIA_MARKER) > len) { /* "![](x)" is longer than the marker: cannot happen */
            rc = -1;
            break;
        }
        memcpy(text + w, CHAT_MEDIA_MARKER, strlen(CHAT_MEDIA_MARKER));
        w += strlen(CHAT_MEDIA_MARKER);
        p = e + 1;
    }
    if (rc > 0) {
        text[w] = '\0';
        const char **pp = calloc(n, sizeof *pp);
        req_err_t err = {0};
        for (size_t k = 0; pp && k < n; k++)
            pp[k] = params[k];
        if (!pp || q->n_inputs > 1 || q->gen.media) {
            req_err_set(&err, 422, "inputs", NULL, "images are accepted in one input per request");
            rc = -1;
        } else if (api_text_media(s, &q->gen, text, (const char *const *)urls, pp, n, ids, n_ids, &err) < 0) {
            rc = -1;
        }
        if (rc < 0) {
            if (err.status == 400) /* TGI answers a bad input 422 */
                err.status = 422;
            tgi_reply_req_err(r, lmi, &err);
        }
        free(pp);
    } else {
        http_reply_error(r, 503, "out of memory", NULL, NULL, NULL);
    }
    for (size_t k = 0; k < n; k++)
        free(urls[k]);
    free(urls);
    free(params);
    free(text);
    return rc;
}

/* Tokenizes every input, applies `truncate` and TGI's length limits, and
 * fixes max_new_tokens. 0, or -1 after replying. */
static int prepare_inputs(srv_t *s, http_req_t *r, tgi_req_t *q, bool lmi, int32_t **ids, size_t *n_ids)
{
    int32_t n_ctx = sched_n_ctx(s->sched), max_input = n_ctx - 1;
    if (q->truncate > max_input) {
        refuse(r, lmi, 422, "truncate", "`truncate` must be strictly positive and less than %d. Given: %d",
               max_input + 1, q->truncate);
        return -1;
    }
    int32_t max_new = q->gen.max_tokens;
    for (size_t i = 0; i < q->n_inputs; i++) {
        lf_err_t le = {0};
        if (s->cfg.log_prompts)
            fprintf(stderr, "req %s inputs[%zu]: %s\n", r->id, i, q->inputs[i]);
        int mi = tgi_media_inputs(s, r, q, lmi, i, &ids[i], &n_ids[i]);
        if (mi < 0)
            return -1;
        if (mi == 0 &&
            vocab_tokenize(s->vocab, q->inputs[i], strlen(q->inputs[i]), true, true, &ids[i], &n_ids[i], &le) !=
            LF_OK) {
            refuse(r, lmi, http_status_of(le.code), "inputs", "%s", le.msg);
            return -1;
        }
        if (mi > 0 && q->truncate > 0 && n_ids[i] > (size_t)q->truncate) {
            refuse(r, lmi, 422, "truncate", "`truncate` cannot cut an input with images (%zu tokens, truncate %d)",
                   n_ids[i], q->truncate);
            return -1;
        }
        if (q->truncate > 0 && n_ids[i] > (size_t)q->truncate) { /* keep the end, as TGI */
            memmove(ids[i], ids[i] + (n_ids[i] - (size_t)q->truncate), (size_t)q->truncate * sizeof **ids);
            n_ids[i] = (size_t)q->truncate;
        }
        if (n_ids[i] == 0 || n_ids[i] > (size_t)max_input) {
            refuse(r, lmi, 422, "inputs", "`inputs` must have between 1 and %d tokens. Given: %zu", max_input,
                   n_ids[i]);
            return -1;
        }
        int32_t room = n_ctx - (int32_t)n_ids[i];
        if (q->gen.max_tokens > room) {
            refuse(r, lmi, 422, "max_new_tokens",
                   "`inputs` tokens + `max_new_tokens` must be <= %d. Given: %zu `inputs` tokens and %d "
                   "`max_new_tokens`",
                   n_ctx, n_ids[i], q->gen.max_tokens);
            return -1;
        }
        if (q->gen.max_tokens < 0) { /* TGI: up to the context end; LMI: 30 */
            int32_t d = lmi && room > LMI_DEFAULT_MAX_NEW_TOKENS ? LMI_DEFAULT_MAX_NEW_TOKENS : room;
            max_new = i == 0 || d < max_new ? d : max_new;
        }
    }
    q->gen.max_tokens = max_new;
    return 0;
}

/* One request of either dialect. stream: 0 / 1 fixed by the endpoint, -1
 * from the body's "stream". */
static void tgi_handle(srv_t *s, http_req_t *r, tgi_out_t out, int stream)
{
    bool lmi = out == TGI_OUT_LMI;
    tgi_req_t q;
    req_err_t e;
    if (req_tgi_parse(r->body, r->body_len, lmi ? TGI_DIALECT_LMI : TGI_DIALECT_TGI, &q, &e) < 0) {
        tgi_reply_req_err(r, lmi, &e);
        return;
    }
    int32_t **ids = calloc(q.n_inputs, sizeof *ids);
    size_t *n_ids = calloc(q.n_inputs, sizeof *n_ids);
    tgi_ctx_t x = {0};
    grammar_t *g = NULL;
    if (!ids || !n_ids) {
        refuse(r, lmi, 503, NULL, "out of memory");
        goto out;
    }
    if (stream >= 0 && req_tgi_set_stream(&q, stream == 1, &e) < 0) {
        tgi_reply_req_err(r, lmi, &e);
        goto out;
    }
    if (tgi_grammar(s, r, lmi, &q, &g) < 0 || prepare_inputs(s, r, &q, lmi, ids, n_ids) < 0)
        goto out;
    resolve_seed(r, &q);
    /* sampling asked for while the server's default temperature is greedy */
    if (q.sampling && !(q.gen.samp.has & REQ_HAS_TEMPERATURE) && s->cfg.def_set.temperature &&
        s->cfg.def_temperature < SAMPLER_GREEDY_EPS) {
        q.gen.temperature = 1.0f;
        q.gen.samp.has |= REQ_HAS_TEMPERATURE;
    }
    bool full_text = q.return_full_text >= 0 ? q.return_full_text == 1 : out == TGI_OUT_COMPAT;
    if (tgi_ctx_init(&x, out, &q, s->vocab, full_text) < 0) {
        refuse(r, lmi, 503, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < q.n_inputs; i++)
        x.c[i].n_input = (int32_t)n_ids[i];
    gen_run(s, r, false, &q.gen, ids, n_ids, q.n_inputs, NULL, NULL, tgi_format(out), &x, g);
out:
    grammar_release(g);
    tgi_ctx_free(&x);
    for (size_t i = 0; ids && i < q.n_inputs; i++)
        free(ids[i]);
    free(ids);
    free(n_ids);
    sched_media_release(q.gen.media);
    req_tgi_free(&q);
}

void api_tgi_generate(srv_t *s, http_req_t *r)
{
    tgi_handle(s, r, TGI_OUT_TGI, 0);
}

void api_tgi_generate_stream(srv_t *s, http_req_t *r)
{
    tgi_handle(s, r, TGI_OUT_TGI, 1);
}

void api_tgi_compat(srv_t *s, http_req_t *r)
{
    tgi_handle(s, r, TGI_OUT_COMPAT, -1);
}

void api_lmi_invocations(srv_t *s, http_req_t *r)
{
    tgi_handle(s, r, TGI_OUT_LMI, -1);
}

/* TGI's Info: the router's limits as this server applies them. */
void api_tgi_info(srv_t *s, http_req_t *r)
{
    int32_t n_ctx = srv_n_ctx(s);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "model_id", json_object_new_string(s->cfg.names[0]));
    json_object_object_add(o, "model_sha", NULL);
    json_object_object_add(o, "model_pipeline_tag", json_object_new_string("text-generation"));
    json_object_object_add(o, "max_concurrent_requests", json_object_new_int(s->cfg.parallel + s->cfg.max_queue));
    json_object_object_add(o, "max_best_of", json_object_new_int(1));
    json_object_object_add(o, "max_stop_sequences", json_object_new_int(1024));
    json_object_object_add(o, "max_input_tokens", json_object_new_int(n_ctx - 1));
    json_object_object_add(o, "max_total_tokens", json_object_new_int(n_ctx));
    json_object_object_add(o, "validation_workers", json_object_new_int(s->cfg.http_threads));
    json_object_object_add(o, "max_client_batch_size", json_object_new_int(TGI_MAX_INPUTS));
    json_object_object_add(o, "router", json_object_new_string("llm-fcgi"));
    json_object_object_add(o, "version", json_object_new_string(PACKAGE_VERSION));
    json_object_object_add(o, "sha", NULL);
    json_object_object_add(o, "docker_label", NULL);
    http_reply_json(r, 200, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                    NULL);
    json_object_put(o);
}
