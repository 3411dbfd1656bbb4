/* test_request_edges - hostile input at the request edge (issue 13):
 * bodies that are not UTF-8 or not objects, integers at and beyond the
 * 64-bit edges (the message names the field, the real range and what the
 * client sent), cuts that never split a character, and, through the whole
 * pipeline over the real engine, that every byte the server writes is
 * valid UTF-8 (paths, echo of byte tokens, repaired output). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/utf8.h"
#include "server/request/req_json.h"
#include "server/request/request.h"
#include "server/server.h"
#include "server/transport/sse.h"
#include "tap.h"
#include "unit/mem_io.h"

#define MSG(x) "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]," x "}"
#define PROMPT(x) "{\"prompt\":\"x\"," x "}"

typedef struct {
    const char *name;
    bool chat;
    const char *body;
    size_t len;          /* 0: strlen */
    int status;          /* 0: parses */
    const char *param;
    const char *want;    /* substring of the message */
} edge_t;

static const edge_t EDGES[] = {
    /* the body itself */
    {"body null", true, "null", 0, 400, "", "must be a JSON object, got null"},
    {"body null with spaces", false, " null\n", 0, 400, "", "got null"},
    {"body a number", false, "12", 0, 400, "", "got a number"},
    {"body a string", false, "\"hi\"", 0, 400, "", "got a string"},
    {"body true", false, "true", 0, 400, "", "got a boolean"},
    {"body an array", true, "[]", 0, 400, "", "got an array"},
    {"body cut short", true, "{\"messages\":[", 0, 400, "", "not valid JSON"},
    /* UTF-8 (RFC 8259): the examples */
    {"model with an overlong NUL (C0 80)", false, "{\"prompt\":\"x\",\"model\":\"\xc0\x80name\"}", 0, 400, "",
     "not valid UTF-8 (byte 0xC0 at offset 23)"},
    {"role 0xFF", true, "{\"messages\":[{\"role\":\"\xff\",\"content\":\"x\"}]}", 0, 400, "", "byte 0xFF"},
    {"prompt FF FE with echo", false, "{\"prompt\":\"\xff\xfe\",\"echo\":true}", 0, 400, "", "not valid UTF-8"},
    {"surrogate bytes in a string", false, "{\"prompt\":\"\xed\xa0\x80\"}", 0, 400, "", "byte 0xED"},
    {"a lone surrogate escape parses (json-c gives U+FFFD)", false, "{\"prompt\":\"a\\ud800b\"}", 0, 0, "", NULL},
    {"NUL byte in the body", false, "{\"prompt\":\"a\0b\"}", 15, 400, "", "not valid JSON"},
    {"role of 300 x e-acute: cut at a character", true,
     "{\"messages\":[{\"role\":\""
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
     "\"," "\"content\":\"x\"}]}", 0, 400, "messages[0].role", "unknown role"},
    {"role of emoji: cut at a character", true,
     "{\"messages\":[{\"role\":\""
     "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
     "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
     "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
     "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
     "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
     "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
     "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
     "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
     "\"," "\"content\":\"x\"}]}", 0, 400, "messages[0].role", "unknown role"},
    /* integers at the edges */
    {"max_tokens 2^64", false, PROMPT("\"max_tokens\":18446744073709551616"), 0, 400, "max_tokens",
     "'max_tokens' must be an integer from 1 to 2147483647, got 18446744073709551616"},
    {"max_tokens 2^64-1", false, PROMPT("\"max_tokens\":18446744073709551615"), 0, 400, "max_tokens",
     "got 18446744073709551615"},
    {"max_tokens 2^31", false, PROMPT("\"max_tokens\":2147483648"), 0, 400, "max_tokens", "got 2147483648"},
    {"max_tokens 2^31-1 parses (the context check comes later)", false, PROMPT("\"max_tokens\":2147483647"), 0, 0,
     "", NULL},
    {"max_tokens -2^63-1", false, PROMPT("\"max_tokens\":-9223372036854775809"), 0, 400, "max_tokens",
     "got -9223372036854775809"},
    {"max_tokens 1.5", false, PROMPT("\"max_tokens\":1.5"), 0, 400, "max_tokens", "got 1.5"},
    {"max_tokens \"3\"", false, PROMPT("\"max_tokens\":\"3\""), 0, 400, "max_tokens", "got a string"},
    {"max_completion_tokens 0", true, MSG("\"max_completion_tokens\":0"), 0, 400, "max_completion_tokens",
     "from 1 to 2147483647, got 0"},
    {"max_tokens written with an escaped key", false, "{\"prompt\":\"x\",\"max\\u005ftokens\":99999999999999999999}",
     0, 400, "max_tokens", "got 99999999999999999999"},
    {"seed 2^64", false, PROMPT("\"seed\":18446744073709551616"), 0, 400, "seed",
     "from -9223372036854775808 to 18446744073709551615 (64 bits), got 18446744073709551616"},
    {"seed -2^63-1", false, PROMPT("\"seed\":-9223372036854775809"), 0, 400, "seed", "got -9223372036854775809"},
    {"seed 1e3", false, PROMPT("\"seed\":1e3"), 0, 400, "seed", "got 1e3"},
    {"seed 2^64-1 parses", false, PROMPT("\"seed\":18446744073709551615"), 0, 0, "", NULL},
    {"seed -2^63 parses", false, PROMPT("\"seed\":-9223372036854775808"), 0, 0, "", NULL},
    {"n 0 (server allows 1..4)", false, PROMPT("\"n\":0"), 0, 400, "n", "'n' must be an integer from 1 to 4, got 0"},
    {"n 5 (server allows 1..4)", true, MSG("\"n\":5"), 0, 400, "n", "from 1 to 4, got 5"},
    {"n 2^64", false, PROMPT("\"n\":18446744073709551616"), 0, 400, "n", "from 1 to 4, got 18446744073709551616"},
    {"n 4 parses", false, PROMPT("\"n\":4"), 0, 0, "", NULL},
    {"best_of 2^64", false, PROMPT("\"best_of\":18446744073709551616"), 0, 400, "best_of", "got 18446744073709551616"},
    {"top_k -10^23", false, PROMPT("\"top_k\":-99999999999999999999999"), 0, 400, "top_k",
     "from -1 to 2147483647, got -99999999999999999999999"},
    {"top_logprobs 21", true, MSG("\"logprobs\":true,\"top_logprobs\":21"), 0, 400, "top_logprobs",
     "from 0 to 20, got 21"},
    {"logprobs 6 (completions)", false, PROMPT("\"logprobs\":6"), 0, 400, "logprobs", "from 0 to 5, got 6"},
    {"min_tokens 2^64", false, PROMPT("\"min_tokens\":18446744073709551616"), 0, 400, "min_tokens",
     "got 18446744073709551616"},
    {"prompt_logprobs -1", false, PROMPT("\"prompt_logprobs\":-1"), 0, 400, "prompt_logprobs", "from 0 to 20, got -1"},
    {"token id 2^64 in a prompt", false, "{\"prompt\":[1,18446744073709551616]}", 0, 400, "prompt",
     "token id 18446744073709551616 is out of range"},
    {"token id 2^64 in a nested prompt", false, "{\"prompt\":[[1],[2,18446744073709551617]]}", 0, 400, "prompt",
     "token id 18446744073709551617"},
    {"stop_token_ids with 2^64", false, PROMPT("\"stop_token_ids\":[18446744073709551616]"), 0, 400,
     "stop_token_ids", "got 18446744073709551616"},
    {"top_p 1e400", false, PROMPT("\"top_p\":1e400"), 0, 400, "top_p", "got 1e400"},
    {"logit_bias 1e400", false, PROMPT("\"logit_bias\":{\"5\":1e400}"), 0, 400, "logit_bias", "got 1e400"},
};

static void test_edges(void)
{
    req_limits_t lim = {.max_n = 4};
    for (size_t i = 0; i < sizeof EDGES / sizeof EDGES[0]; i++) {
        const edge_t *c = &EDGES[i];
        size_t len = c->len ? c->len : strlen(c->body);
        req_err_t e = {0};
        int rc;
        if (c->chat) {
            chat_req_t q;
            rc = req_chat_parse_limited(c->body, len, &lim, &q, &e);
            if (rc == 0)
                req_chat_free(&q);
        } else {
            cmpl_req_t q;
            rc = req_cmpl_parse_limited(c->body, len, &lim, &q, &e);
            if (rc == 0)
                req_cmpl_free(&q);
        }
        bool ok = c->status == 0 ? rc == 0
                                 : rc < 0 && e.status == c->status && !strcmp(e.param, c->param) &&
                                       (!c->want || strstr(e.msg, c->want)) && utf8_valid(e.msg, strlen(e.msg), NULL);
        tap_ok(ok, "%s -> %d '%s' (got %d '%s': %s)", c->name, c->status, c->param, rc < 0 ? e.status : 0, e.param,
               rc < 0 ? e.msg : "parsed");
    }
    /* values kept exactly */
    cmpl_req_t q;
    req_err_t e;
    const char *b = PROMPT("\"seed\":18446744073709551615");
    tap_ok(req_cmpl_parse(b, strlen(b), &q, &e) == 0 && q.gen.has_seed && q.gen.seed == UINT64_MAX,
           "seed 2^64-1 kept as 2^64-1");
    req_cmpl_free(&q);
    b = PROMPT("\"seed\":-1");
    tap_ok(req_cmpl_parse(b, strlen(b), &q, &e) == 0 && q.gen.seed == UINT64_MAX, "seed -1 kept as its 64 bits");
    req_cmpl_free(&q);
    b = PROMPT("\"n\":100");
    tap_ok(req_cmpl_parse(b, strlen(b), &q, &e) == 0 && q.gen.samp.n == 100, "without server limits n is an int32");
    req_cmpl_free(&q);
}

/* a message cut to fit its buffer never ends inside a character */
static void test_err_cut(void)
{
    char big[2000];
    size_t n = 0;
    while (n + 4 < sizeof big)
        memcpy(big + n, "\xf0\x9f\x98\x80", 4), n += 4;
    big[n] = 0;
    int ok = 1;
    for (int shift = 0; shift < 4; shift++) {
        req_err_t e;
        req_err_set(&e, 400, "p", NULL, "%.*s%s", shift, "abc", big);
        ok &= utf8_valid(e.msg, strlen(e.msg), NULL) && strlen(e.msg) > sizeof e.msg - 5;
    }
    tap_ok(ok, "req_err_set cuts long messages at a character (4 alignments)");
    ok = 1;
    for (int shift = 0; shift < 4; shift++) {
        lf_err_t le;
        lf_err_set(&le, LF_ERR_INVALID, "%.*s%s", shift, "abc", big);
        ok &= utf8_valid(le.msg, strlen(le.msg), NULL);
        lf_err_prefix(&le, "%.*s", shift + 1, "xyz");
        ok &= utf8_valid(le.msg, strlen(le.msg), NULL);
    }
    tap_ok(ok, "lf_err_set and lf_err_prefix cut at a character too");
}

static bool body_utf8(const mem_t *m)
{
    return utf8_valid(m->buf, m->len, NULL);
}

static void test_pipeline(srv_t *s)
{
    mem_t m;
    /* paths and methods come as raw bytes */
    http_req_t r = mem_req(&m, "GET", "/v1/x\xff\xfe\xc0\x80", NULL, NULL);
    srv_handle(s, &r);
    tap_ok(r.status == 404 && body_utf8(&m) && strstr(m.buf, "/v1/x\xef\xbf\xbd"),
           "404 quoting a path with invalid bytes: U+FFFD, valid UTF-8");
    r = mem_req(&m, "B\xff" "D", "/v1/models", NULL, NULL);
    srv_handle(s, &r);
    tap_ok(r.status == 405 && body_utf8(&m), "405 quoting a method with invalid bytes: valid UTF-8");
    char longpath[700] = "/";
    for (int i = 0; i < 300; i++)
        strcat(longpath, "\xc3\xa9");
    r = mem_req(&m, "GET", longpath, NULL, NULL);
    srv_handle(s, &r);
    tap_ok(r.status == 404 && body_utf8(&m), "404 quoting a long path of 2-byte characters: cut at a character");
    /* a body that is not UTF-8 is refused at the edge, for every endpoint */
    const char *paths[] = {"/tokenize", "/detokenize", "/v1/completions", "/v1/chat/completions", "/invocations"};
    for (size_t i = 0; i < 5; i++) {
        r = mem_req(&m, "POST", paths[i], NULL, "{\"prompt\":\"\xff\xfe\"}");
        srv_handle(s, &r);
        tap_ok(r.status == 400 && strstr(m.buf, "not valid UTF-8") && body_utf8(&m), "%s: invalid UTF-8 -> 400",
               paths[i]);
    }
    /* the model name is quoted whole characters only */
    char body[1200] = "{\"prompt\":\"x\",\"model\":\"";
    for (int i = 0; i < 150; i++)
        strcat(body, "\xe2\x82\xac");
    strcat(body, "\"}");
    r = mem_req(&m, "POST", "/v1/completions", NULL, body);
    srv_handle(s, &r);
    tap_ok(r.status == 404 && body_utf8(&m) && strstr(m.buf, "\xe2\x82\xac` does not exist"),
           "404 quoting a 450-byte model name: cut at a character");
    /* echo of a token prompt made of byte tokens: U+FFFD, never raw bytes */
    int32_t ff = -1, fe = -1;
    for (int32_t id = 0; id < vocab_n_tokens(s->vocab) && (ff < 0 || fe < 0); id++) {
        char piece[8];
        int n = vocab_token_to_piece(s->vocab, id, false, piece, sizeof piece);
        if (n == 1 && (unsigned char)piece[0] == 0xFF)
            ff = id;
        if (n == 1 && (unsigned char)piece[0] == 0xFE)
            fe = id;
    }
    if (tap_ok(ff >= 0 && fe >= 0, "the vocabulary has byte tokens 0xFF (%d) and 0xFE (%d)", ff, fe)) {
        snprintf(body, sizeof body, "{\"prompt\":[%d,%d],\"echo\":true,\"max_tokens\":2,\"temperature\":0}", ff, fe);
        r = mem_req(&m, "POST", "/v1/completions", NULL, body);
        srv_handle(s, &r);
        tap_ok(r.status == 200 && body_utf8(&m) && strstr(m.buf, "\"text\":\"\xef\xbf\xbd\xef\xbf\xbd"),
               "echo of byte tokens FF FE: U+FFFD U+FFFD, valid UTF-8");
        snprintf(body, sizeof body, "{\"prompt\":[%d,%d],\"echo\":true,\"max_tokens\":2,\"stream\":true}", ff, fe);
        r = mem_req(&m, "POST", "/v1/completions", NULL, body);
        srv_handle(s, &r);
        tap_ok(r.status == 200 && body_utf8(&m) && strstr(m.buf, "data: [DONE]"), "the same, streamed");
    }
    /* n against --max-n through the handler */
    r = mem_req(&m, "POST", "/v1/completions", NULL, "{\"prompt\":\"x\",\"n\":0}");
    srv_handle(s, &r);
    tap_ok(r.status == 400 && strstr(m.buf, "'n' must be an integer from 1 to 3, got 0"),
           "n 0 with --max-n 3: 'n' must be an integer from 1 to 3");
    /* the last line of defence: JSON written out is repaired */
    r = mem_req(&m, "POST", "/x", NULL, NULL);
    http_reply_json(&r, 200, "{\"a\":\"\xff\xc0\"}", NULL);
    tap_ok(body_utf8(&m) && strstr(m.buf, "{\"a\":\"\xef\xbf\xbd\xef\xbf\xbd\"}"), "http_reply_json repairs invalid bytes");
    r = mem_req(&m, "POST", "/x", NULL, NULL);
    sse_data(&r, "{\"a\":\"\xe2\x82\"}");
    tap_ok(body_utf8(&m) && strstr(m.buf, "data: {\"a\":\"\xef\xbf\xbd"), "sse_data repairs a cut character");
    char *j = http_error_json(400, "bad \xff", "p\xc0", NULL);
    tap_ok(j && utf8_valid(j, strlen(j), NULL), "http_error_json repairs message and param");
    free(j);
}

/* a full server answers 429 with Retry-After: its one slot is held by a
 * job whose channel nobody reads (the scheduler skips it once the channel
 * is full), and there is no queue */
static void test_overload(const model_t *model)
{
    srv_t s = {.render = chat_render_chatml, .model = (model_t *)model, .vocab = model_vocab(model)};
    s.cfg.names[0] = "m";
    s.cfg.n_names = 1;
    s.cfg.ping_seconds = 10;
    lf_err_t err;
    sched_opts_t so = {.n_parallel = 1, .n_ctx = 128, .max_queue = 0, .n_threads = 1};
    s.sched = sched_create(model, &so, &err);
    metrics_init(&s.metrics);
    sched_chan_t *ch = sched_chan_create(s.sched);
    int32_t prompt[2] = {1, 100};
    const int32_t *prompts[1] = {prompt};
    size_t np[1] = {2};
    sched_params_t p = {.max_tokens = 120};
    sampler_params_default(&p.sampling);
    bool held = s.sched && ch && sched_submit(s.sched, ch, prompts, np, &p, 1, &err) == LF_OK;
    sched_stats_t st = {0};
    for (int i = 0; held && i < 2000 && st.running < 1; i++) { /* until admitted (a condition, not a time) */
        sched_stats(s.sched, &st);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    mem_t m;
    http_req_t r = mem_req(&m, "POST", "/v1/completions", NULL, "{\"prompt\":\"Hi\",\"max_tokens\":2}");
    srv_handle(&s, &r);
    tap_ok(held && st.running == 1 && r.status == 429 && strstr(m.buf, "Retry-After: 1\r\n") &&
               strstr(m.buf, "\"type\":\"rate_limit_error\""),
           "server full: 429 rate_limit_error with Retry-After: 1");
    sched_chan_free(ch);
    sched_free(s.sched);
    metrics_destroy(&s.metrics);
}

int main(void)
{
    test_edges();
    test_err_cut();
    char mpath[1024];
    snprintf(mpath, sizeof mpath, "%s/stories260K.gguf", tap_env_dir("LLM_MODELS_DIR", "../shared/models"));
    srv_t s = {.render = chat_render_chatml};
    s.cfg.names[0] = "m";
    s.cfg.n_names = 1;
    s.cfg.max_body = 1 << 20;
    s.cfg.max_n = 3;
    s.cfg.ping_seconds = 10;
    lf_err_t err;
    s.model = model_load(mpath, &err);
    if (!tap_ok(s.model != NULL, "load %s", mpath))
        return tap_done();
    s.vocab = model_vocab(s.model);
    sched_opts_t so = {.n_parallel = 2, .n_ctx = 128, .max_queue = 4, .n_threads = 1};
    s.sched = sched_create(s.model, &so, &err);
    metrics_init(&s.metrics);
    if (tap_ok(s.sched != NULL, "scheduler over the real engine"))
        test_pipeline(&s);
    test_overload(s.model);
    sched_free(s.sched);
    metrics_destroy(&s.metrics);
    model_free(s.model);
    return tap_done();
}
