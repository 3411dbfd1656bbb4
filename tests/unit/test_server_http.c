/* test_server_http.c - routing, Bearer auth, SSE framing and the request
 * pipeline (status, headers, OpenAI error bodies), over a memory "socket"
 * and the real engine on stories260K.gguf (which has no chat template of
 * its own: templates come as --chat-template sources). */
#include "server/chat/chat_render_tmpl.h"
#include "server/server.h"
#include "server/transport/sse.h"
#include "tap.h"
#include "unit/mem_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void dummy(srv_t *s, http_req_t *r) { (void)s; (void)r; }

int main(void)
{
    /* ---- routing table ---- */
    static const route_t table[] = {
        {"POST", "/v1/chat/completions", ROUTE_EXACT, false, dummy, false},
        {"GET", "/v1/models", ROUTE_EXACT, false, dummy, false},
        {"GET", "/v1/models/", ROUTE_PREFIX, false, dummy, false},
        {"GET", "/x", ROUTE_EXACT, false, dummy, false},
        {"POST", "/x", ROUTE_EXACT, false, dummy, false},
    };
    const struct { const char *m, *p; int found_index, status; const char *allow; } rc[] = {
        {"POST", "/v1/chat/completions", 0, 0, ""},
        {"GET", "/v1/chat/completions", -1, 405, "POST"},
        {"GET", "/v1/models", 1, 0, ""},
        {"GET", "/v1/models/abc", 2, 0, ""},
        {"GET", "/v1/models/", -1, 404, ""},
        {"DELETE", "/x", -1, 405, "GET, POST"},
        {"GET", "/nope", -1, 404, ""},
        {"GET", "/v1/chat/completions/extra", -1, 404, ""},
    };
    for (size_t i = 0; i < sizeof rc / sizeof rc[0]; i++) {
        int st = 0;
        char allow[64];
        const route_t *r = route_find(table, 5, rc[i].m, rc[i].p, &st, allow, sizeof allow);
        if (rc[i].found_index >= 0)
            tap_ok(r == &table[rc[i].found_index], "route %s %s found", rc[i].m, rc[i].p);
        else
            tap_ok(!r && st == rc[i].status && !strcmp(allow, rc[i].allow), "route %s %s -> %d Allow '%s' (got %d '%s')",
                   rc[i].m, rc[i].p, rc[i].status, rc[i].allow, st, allow);
    }

    /* ---- auth ---- */
    srv_config_t c = {0};
    tap_ok(auth_check(&c, NULL), "no keys: everything allowed");
    c.keys[0] = "sk-alpha";
    c.keys[1] = "sk-beta";
    c.n_keys = 2;
    const struct { const char *h; bool ok; } ac[] = {
        {"Bearer sk-alpha", true}, {"Bearer sk-beta", true}, {"bearer sk-beta", true}, {"Bearer  sk-alpha ", true},
        {NULL, false}, {"", false}, {"Bearer ", false}, {"Bearer sk-alph", false}, {"Bearer sk-alphaX", false},
        {"Basic sk-alpha", false}, {"sk-alpha", false}, {"Bearer SK-ALPHA", false},
    };
    for (size_t i = 0; i < sizeof ac / sizeof ac[0]; i++)
        tap_ok(auth_check(&c, ac[i].h) == ac[i].ok, "auth '%s' -> %s", ac[i].h ? ac[i].h : "(none)",
               ac[i].ok ? "ok" : "refused");

    /* ---- SSE framing ---- */
    mem_t m;
    http_req_t r = mem_req(&m, "POST", "/", NULL, NULL);
    tap_ok(sse_start(&r) == 0 && strstr(m.buf, "Status: 200 OK\r\n") == m.buf &&
               strstr(m.buf, "Content-Type: text/event-stream\r\n") && strstr(m.buf, "Cache-Control: no-cache\r\n") &&
               strstr(m.buf, "X-Accel-Buffering: no\r\n") && strstr(m.buf, "\r\n\r\n"),
           "sse_start sends the streaming headers");
    size_t h = m.len;
    int f0 = m.flushes;
    tap_ok(sse_data(&r, "{\"a\":1}") == 0 && !strcmp(m.buf + h, "data: {\"a\":1}\n\n") && m.flushes == f0 + 1,
           "sse_data frames one event and flushes");
    h = m.len;
    tap_ok(sse_comment(&r, "ping") == 0 && !strcmp(m.buf + h, ": ping\n\n"), "sse_comment");
    h = m.len;
    tap_ok(sse_data(&r, "{\"a\":\n1}") < 0 && m.len == h, "a payload with a newline is refused");
    tap_ok(sse_done(&r) == 0 && !strcmp(m.buf + h, "data: [DONE]\n\n"), "sse_done");
    h = m.len;
    tap_ok(sse_error(&r, 500, "boom", NULL) == 0 &&
               !strcmp(m.buf + h, "data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n"
                                  "data: [DONE]\n\n"),
           "sse_error: error event then [DONE]");
    m.gone = true;
    tap_ok(sse_data(&r, "{}") < 0 && r.write_failed, "writes fail once the client is gone");

    /* ---- error bodies and status mapping ---- */
    char *j = http_error_json(400, "bad \"x\"", "temperature", "c1");
    tap_ok(j && !strcmp(j, "{\"error\":{\"message\":\"bad \\\"x\\\"\",\"type\":\"invalid_request_error\",\"param\":\"temperature\",\"code\":\"c1\"}}"),
           "error JSON shape: %s", j);
    free(j);
    const struct { lf_code_t code; int st; } sm[] = {{LF_ERR_INVALID, 400}, {LF_ERR_CONTEXT, 400}, {LF_ERR_NOT_FOUND, 404},
                                                     {LF_ERR_AUTH, 401}, {LF_ERR_OVERLOAD, 429}, {LF_ERR_INTERNAL, 500}};
    for (size_t i = 0; i < sizeof sm / sizeof sm[0]; i++)
        tap_ok(http_status_of(sm[i].code) == sm[i].st, "%s -> %d", lf_code_name(sm[i].code), sm[i].st);

    /* ---- ChatML fallback renderer ---- */
    chat_msg_t msgs[] = {{CHAT_ROLE_DEVELOPER, "be nice", NULL}, {CHAT_ROLE_USER, "hi", NULL},
                         {CHAT_ROLE_ASSISTANT, "", NULL}, {CHAT_ROLE_TOOL, "42", NULL}};
    char *out = NULL;
    chat_req_t cr = {.msgs = msgs, .n_msgs = 4};
    tap_ok(chat_render_chatml(NULL, &cr, true, &out, NULL) == LF_OK && out &&
               !strcmp(out, "<|im_start|>system\nbe nice<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
                            "<|im_start|>assistant\n<|im_end|>\n<|im_start|>tool\n42<|im_end|>\n<|im_start|>assistant\n"),
           "ChatML: roles, developer as system, generation prompt");
    free(out);
    cr = (chat_req_t){.msgs = msgs + 1, .n_msgs = 1};
    tap_ok(chat_render_chatml(NULL, &cr, false, &out, NULL) == LF_OK && !strcmp(out, "<|im_start|>user\nhi<|im_end|>\n"),
           "ChatML without generation prompt");
    free(out);

    char mpath[1024];
    snprintf(mpath, sizeof mpath, "%s/stories260K.gguf", tap_env_dir("LLM_MODELS_DIR", "../shared/models"));
    /* ---- a chat template (--chat-template source) ---- */
    {
        lf_err_t le = {0};
        model_t *tm = model_load(mpath, &le);
        if (!tap_ok(tm != NULL, "load %s", mpath))
            return tap_done();
        char note[300];
        const char *body = "{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"hi\"}]}";
        chat_req_t q;
        req_err_t qe;
        req_chat_parse(body, strlen(body), &q, &qe);
        bool failed = false;
        chat_tmpl_renderer_t *tr = chat_tmpl_renderer_create_src(tm,
               "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
               "{% if add_generation_prompt %}[assistant]{% endif %}", note, sizeof note, &failed);
        tap_ok(tr && strstr(note, "--chat-template"), "template compiled: %s", note);
        out = NULL;
        lf_code_t trc = chat_tmpl_render(tr, &q, true, &out, &le);
        tap_ok(trc == LF_OK && out && !strcmp(out, "<s>[system]s[user]hi[assistant]"),
               "template renders messages, bos_token, generation prompt: %s", out ? out : le.msg);
        free(out);
        out = NULL;
        tap_ok(chat_tmpl_render(tr, &q, false, &out, &le) == LF_OK && out && !strcmp(out, "<s>[system]s[user]hi"),
               "add_generation_prompt false");
        free(out);
        chat_tmpl_renderer_free(tr);
        tr = chat_tmpl_renderer_create_src(tm, "{{ raise_exception('only user turns please') }}", note, sizeof note,
                                           &failed);
        out = NULL;
        trc = chat_tmpl_render(tr, &q, true, &out, &le);
        tap_ok(trc == LF_ERR_INVALID && !out && strstr(le.msg, "only user turns please"),
               "raise_exception -> invalid with the template's message: %s", le.msg);
        chat_tmpl_renderer_free(tr);
        tr = chat_tmpl_renderer_create_src(tm, "{% for %}", note, sizeof note, &failed);
        tap_ok(!tr && failed && strstr(note, "does not compile"),
               "a --chat-template source that does not compile is refused (%s)", note);
        out = NULL;
        tap_ok(chat_tmpl_render(NULL, &q, true, &out, &le) == LF_OK && out && !strncmp(out, "<|im_start|>system", 18),
               "no renderer context: ChatML");
        free(out);
        tr = chat_tmpl_renderer_create(tm, note, sizeof note);
        tap_ok(tr && strstr(note, "no chat template"), "no template: ChatML (%s)", note);
        chat_tmpl_renderer_free(tr);
        req_chat_free(&q);
        model_free(tm);
    }

    /* ---- the pipeline over the real engine ---- */
    srv_t s = {.render = chat_render_chatml};
    s.cfg.names[0] = "m";
    s.cfg.names[1] = "alias";
    s.cfg.n_names = 2;
    s.cfg.keys[0] = "k";
    s.cfg.n_keys = 1;
    s.cfg.max_body = 200;
    s.cfg.model_path = mpath;
    s.cfg.ping_seconds = 10;
    lf_err_t err;
    s.model = model_load(mpath, &err);
    s.vocab = model_vocab(s.model);
    sched_opts_t so = {.n_parallel = 2, .n_ctx = 128, .max_queue = 4, .n_threads = 1};
    s.sched = sched_create(s.model, &so, &err);
    metrics_init(&s.metrics);
    if (!tap_ok(s.sched != NULL, "scheduler over the real engine"))
        return tap_done();

    r = mem_req(&m, "GET", "/nope", "Bearer k", NULL);
    srv_handle(&s, &r);
    tap_ok(r.status == 404 && strstr(m.buf, "Content-Type: application/json") && strstr(m.buf, "\"type\":\"invalid_request_error\""),
           "unknown path -> 404 JSON");
    r = mem_req(&m, "GET", "/v1/chat/completions", "Bearer k", NULL);
    srv_handle(&s, &r);
    tap_ok(r.status == 405 && strstr(m.buf, "Allow: POST\r\n"), "wrong method -> 405 Allow: POST");
    r = mem_req(&m, "GET", "/v1/models", NULL, NULL);
    srv_handle(&s, &r);
    tap_ok(r.status == 401 && strstr(m.buf, "WWW-Authenticate: Bearer\r\n") && strstr(m.buf, "\"code\":\"invalid_api_key\""),
           "missing key -> 401 WWW-Authenticate, invalid_api_key");
    r = mem_req(&m, "GET", "/health", NULL, NULL);
    srv_handle(&s, &r);
    tap_ok(r.status == 200 && strstr(m.buf, "{\"status\":\"ok\"}"), "/health open");
    r = mem_req(&m, "GET", "/ping", NULL, NULL);
    srv_handle(&s, &r);
    tap_ok(r.status == 200, "/ping open");
    r = mem_req(&m, "GET", "/v1/models/alias", "Bearer k", NULL);
    srv_handle(&s, &r);
    tap_ok(r.status == 200 && strstr(m.buf, "\"id\":\"alias\"") && strstr(m.buf, "\"max_model_len\":128"), "model by alias");
    char big[400];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    r = mem_req(&m, "POST", "/v1/completions", "Bearer k", big);
    srv_handle(&s, &r);
    tap_ok(r.status == 413, "body over max_body -> 413");
    r = mem_req(&m, "POST", "/v1/completions", "Bearer k", "{\"prompt\":\"Hi\",\"max_tokens\":5,\"temperature\":0,\"model\":\"m\"}");
    srv_handle(&s, &r);
    const char *t1 = strstr(m.buf, "\"text\":\"");
    char first[256] = "";
    if (t1)
        snprintf(first, sizeof first, "%.*s", (int)strcspn(t1 + 8, "\""), t1 + 8);
    tap_ok(r.status == 200 && strstr(m.buf, "\"object\":\"text_completion\"") && strlen(first) > 2 &&
               strstr(m.buf, "\"id\":\"cmpl-0123456789abcdef0123456789abcdef\"") && r.completion_tokens == 5,
           "greedy completion: %s", strstr(m.buf, "{"));
    r = mem_req(&m, "POST", "/v1/completions", "Bearer k", "{\"prompt\":\"Hi\",\"max_tokens\":5,\"temperature\":0,\"stream\":true}");
    srv_handle(&s, &r);
    {
        /* the streamed pieces concatenated == the non-streamed text */
        char joined[256] = "";
        for (const char *q = strstr(m.buf, "\"text\":\""); q; q = strstr(q + 1, "\"text\":\""))
            snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%.*s", (int)strcspn(q + 8, "\""), q + 8);
        tap_ok(r.status == 200 && !strcmp(joined, first), "streamed == non-streamed ('%s' vs '%s')", joined, first);
    }
    r = mem_req(&m, "POST", "/v1/chat/completions", "Bearer k",
            "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":3,\"stream\":true,\"model\":\"alias\"}");
    srv_handle(&s, &r);
    const char *body = strstr(m.buf, "\r\n\r\n");
    tap_ok(r.status == 200 && body && !strncmp(body + 4, "data: {", 7) && strstr(m.buf, "\"delta\":{\"role\":\"assistant\",\"content\":\"\"}") &&
               strstr(m.buf, "\"finish_reason\":\"length\"") && strstr(m.buf, "data: [DONE]\n\n") &&
               m.len > 13 && !strcmp(m.buf + m.len - 14, "data: [DONE]\n\n"),
           "streamed chat");
    r = mem_req(&m, "POST", "/v1/completions", "Bearer k", "{\"prompt\":\"Hi\",\"model\":\"other\"}");
    srv_handle(&s, &r);
    tap_ok(r.status == 404 && strstr(m.buf, "The model `other` does not exist."), "unknown model -> 404");
    r = mem_req(&m, "POST", "/v1/completions", "Bearer k", "{\"prompt\":\"Hi\",\"max_tokens\":200}");
    srv_handle(&s, &r);
    tap_ok(r.status == 400 && strstr(m.buf, "context_length_exceeded") && strstr(m.buf, "maximum context length is 128 tokens"),
           "context exceeded -> 400 context_length_exceeded");
    /* the server says what sets the limit (issue 30: the model's training
     * length when its file has no rope scaling to extend it) */
    snprintf(s.ctx_why, sizeof s.ctx_why, "the longest this model supports: the context it was trained for");
    r = mem_req(&m, "POST", "/v1/completions", "Bearer k", "{\"prompt\":\"Hi\",\"max_tokens\":200}");
    srv_handle(&s, &r);
    tap_ok(r.status == 400 && strstr(m.buf, "maximum context length is 128 tokens (the longest this model supports: "
                                            "the context it was trained for). However"),
           "the 400 says what sets the context length");
    s.ctx_why[0] = '\0';
    r = mem_req(&m, "GET", "/metrics", "Bearer k", NULL);
    srv_handle(&s, &r);
    tap_ok(r.status == 200 && strstr(m.buf, "llm_requests_total{model_name=\"m\",status=\"404\"} 2"),
           "metrics count requests by status");
    tap_ok(strstr(m.buf, "llm_kv_cache_info{model_name=\"m\",cache_type_k=\"f16\",cache_type_v=\"f16\","
                         "flash_attn=\"auto\"} 1") && strstr(m.buf, "llm_kv_cache_bytes{model_name=\"m\"} "),
           "metrics report the KV cache types, the attention and the memory");

    metrics_t fresh;
    metrics_init(&fresh);
    metrics_ttft(&fresh, 0.003);
    metrics_ttft(&fresh, 20.0);
    sched_stats_t st;
    sched_stats(s.sched, &st);
    char *text = metrics_render(&fresh, &st, "a\"b");
    metrics_destroy(&fresh);
    tap_ok(text && strstr(text, "llm_time_to_first_token_seconds_bucket{model_name=\"a\\\"b\",le=\"0.005\"} 1\n") &&
               strstr(text, "llm_time_to_first_token_seconds_bucket{model_name=\"a\\\"b\",le=\"+Inf\"} 2\n") &&
               strstr(text, "llm_time_to_first_token_seconds_count{model_name=\"a\\\"b\"} 2\n"),
           "histogram buckets are cumulative, labels escaped");
    free(text);
    sched_free(s.sched);
    metrics_destroy(&s.metrics);
    model_free(s.model);
    return tap_done();
}
