/* api_messages.c - Anthropic Messages: POST /v1/messages and
 * /v1/messages/count_tokens (see api_messages.h). The request becomes a
 * chat request (request_messages.h) run by the Chat Completions runner;
 * this file is its output format: content blocks (thinking, text,
 * tool_use) from the parsed output (api_blocks.h), streamed as Anthropic's
 * events or summed into the message.
 *
 * Stream: message_start, ping, per block content_block_start,
 * content_block_delta (text_delta / thinking_delta / input_json_delta; a
 * thinking block ends with a signature_delta), content_block_stop; then
 * message_delta (stop_reason, stop_sequence, usage) and message_stop.
 * Keep-alives are ping events. An error after the start is an `error`
 * event.
 *
 * stop_reason: end_turn (the model's end), max_tokens (max_tokens or the
 * context end), stop_sequence (with the matched stop_sequence), tool_use
 * (the answer called tools). usage: input_tokens are the prompt tokens not
 * read from the prefix cache, cache_read_input_tokens those that were
 * (Anthropic's split), output_tokens every generated token.
 * A thinking block's signature is the SHA-256 of its text (this server
 * does not check signatures it gets back).
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "pull/sha256.h"
#include "server/api/api_blocks.h"
#include "server/api/api_gen.h"
#include "server/api/api_messages.h"
#include "server/request/request_messages.h"
#include "server/transport/sse.h"

static const char *to_json(json_object *o)
{
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* -------------------------------------------------------------- errors */

const char *anthropic_error_type(int status)
{
    switch (status) {
    case 400: case 405: case 422: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: case 529: return "overloaded_error";
    default: return "api_error";
    }
}

char *anthropic_error_json(int status, const char *message, const char *param, const char *code)
{
    (void)param, (void)code;
    char *msg = utf8_repair_dup(message ? message : "", message ? strlen(message) : 0, NULL);
    json_object *o = json_object_new_object(), *err = json_object_new_object();
    json_object_object_add(o, "type", json_object_new_string("error"));
    json_object_object_add(err, "type", json_object_new_string(anthropic_error_type(status)));
    json_object_object_add(err, "message", json_object_new_string(msg ? msg : ""));
    json_object_object_add(o, "error", err);
    free(msg);
    char *s = strdup(to_json(o));
    json_object_put(o);
    return s;
}

/* ------------------------------------------------------------- blocks */

typedef struct {
    blk_run_t br;        /* first: the blocks of the run (api_gen.h) */
    char id[64];
} msg_run_t;

static void signature(const blk_t *b, char out[65])
{
    sha256_t h;
    uint8_t d[32];
    sha256_init(&h);
    sha256_update(&h, b->text ? b->text : "", b->len);
    sha256_final(&h, d);
    sha256_hex(d, out);
}

/* The tool call's arguments as an object ({} when they are not one). */
static json_object *tool_input(const blk_t *b)
{
    json_object *in = b->len ? json_tokener_parse(b->text) : NULL;
    if (!in || !json_object_is_type(in, json_type_object)) {
        json_object_put(in);
        in = json_object_new_object();
    }
    return in;
}

/* Content block i; full: as finished (else as content_block_start has it). */
static json_object *block_json(const blk_t *b, bool full)
{
    json_object *o = json_object_new_object();
    const char *text = full && b->text ? b->text : "";
    int len = full ? (int)b->len : 0;
    switch (b->kind) {
    case BLK_TEXT:
        json_object_object_add(o, "type", json_object_new_string("text"));
        json_object_object_add(o, "text", json_object_new_string_len(text, len));
        break;
    case BLK_REASONING: {
        char sig[65] = "";
        if (full)
            signature(b, sig);
        json_object_object_add(o, "type", json_object_new_string("thinking"));
        json_object_object_add(o, "thinking", json_object_new_string_len(text, len));
        json_object_object_add(o, "signature", json_object_new_string(sig));
        break;
    }
    case BLK_TOOL:
        json_object_object_add(o, "type", json_object_new_string("tool_use"));
        json_object_object_add(o, "id", json_object_new_string(b->call_id ? b->call_id : ""));
        json_object_object_add(o, "name", json_object_new_string(b->name ? b->name : ""));
        json_object_object_add(o, "input", full ? tool_input(b) : json_object_new_object());
        break;
    }
    return o;
}

/* event NAME with data {"type": NAME, ...fields of ev (taken)} */
static void emit(run_t *g, const char *type, json_object *ev)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "type", json_object_new_string(type));
    if (ev) {
        json_object_object_foreach(ev, k, v) json_object_object_add(o, k, json_object_get(v));
        json_object_put(ev);
    }
    sse_event(g->r, type, to_json(o));
    json_object_put(o);
    g->last_write = now_s();
}

static json_object *indexed(size_t i)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "index", json_object_new_int((int32_t)i));
    return o;
}

static void blk_open(void *ctx, size_t i, const blk_t *b)
{
    run_t *g = ((msg_run_t *)ctx)->br.run;
    if (!g->gen->stream)
        return;
    json_object *ev = indexed(i);
    json_object_object_add(ev, "content_block", block_json(b, false));
    emit(g, "content_block_start", ev);
}

static void blk_delta(void *ctx, size_t i, const blk_t *b, const char *p, size_t n)
{
    run_t *g = ((msg_run_t *)ctx)->br.run;
    if (!g->gen->stream)
        return;
    json_object *ev = indexed(i), *d = json_object_new_object();
    const char *type = b->kind == BLK_TEXT ? "text_delta" : b->kind == BLK_REASONING ? "thinking_delta"
                                                                                      : "input_json_delta";
    const char *key = b->kind == BLK_TEXT ? "text" : b->kind == BLK_REASONING ? "thinking" : "partial_json";
    json_object_object_add(d, "type", json_object_new_string(type));
    json_object_object_add(d, key, json_object_new_string_len(p, (int)n));
    json_object_object_add(ev, "delta", d);
    emit(g, "content_block_delta", ev);
}

static void blk_close(void *ctx, size_t i, const blk_t *b)
{
    run_t *g = ((msg_run_t *)ctx)->br.run;
    if (!g->gen->stream)
        return;
    if (b->kind == BLK_REASONING) {
        char sig[65];
        signature(b, sig);
        json_object *ev = indexed(i), *d = json_object_new_object();
        json_object_object_add(d, "type", json_object_new_string("signature_delta"));
        json_object_object_add(d, "signature", json_object_new_string(sig));
        json_object_object_add(ev, "delta", d);
        emit(g, "content_block_delta", ev);
    }
    emit(g, "content_block_stop", indexed(i));
}

static const blk_sink_t msg_sink = {blk_open, blk_delta, blk_close};

static msg_run_t *run_of(run_t *g)
{
    return (msg_run_t *)blk_run_of(g);
}

/* ---------------------------------------------------------------- hooks */

static const char *stop_reason(const choice_t *c)
{
    if (c->finish == SCHED_FINISH_LENGTH)
        return "max_tokens";
    if (c->stop_reason && json_object_is_type(c->stop_reason, json_type_string))
        return "stop_sequence";
    if (c->co && chat_out_n_calls(c->co) > 0)
        return "tool_use";
    return "end_turn";
}

static json_object *stop_sequence(const choice_t *c)
{
    return c->finish != SCHED_FINISH_LENGTH && c->stop_reason && json_object_is_type(c->stop_reason, json_type_string)
               ? json_object_get(c->stop_reason) : NULL;
}

static json_object *usage_json(const run_t *g, bool started)
{
    const choice_t *c = &g->ch[0];
    int32_t cached = started ? 0 : c->n_cached;
    json_object *u = json_object_new_object();
    json_object_object_add(u, "input_tokens", json_object_new_int(g->prompt_total - cached));
    json_object_object_add(u, "cache_creation_input_tokens", json_object_new_int(0));
    json_object_object_add(u, "cache_read_input_tokens", json_object_new_int(cached));
    json_object_object_add(u, "output_tokens", json_object_new_int(started ? 0 : c->n_gen));
    return u;
}

/* The message; content: the blocks (NULL: []). */
static json_object *message_json(run_t *g, msg_run_t *m, bool started)
{
    const choice_t *c = &g->ch[0];
    json_object *o = json_object_new_object(), *content = json_object_new_array();
    json_object_object_add(o, "id", json_object_new_string(m->id));
    json_object_object_add(o, "type", json_object_new_string("message"));
    json_object_object_add(o, "role", json_object_new_string("assistant"));
    json_object_object_add(o, "model", json_object_new_string(g->model));
    for (size_t i = 0; !started && i < m->br.blk.n; i++)
        json_object_array_add(content, block_json(&m->br.blk.v[i], true));
    json_object_object_add(o, "content", content);
    json_object_object_add(o, "stop_reason", started ? NULL : json_object_new_string(stop_reason(c)));
    json_object_object_add(o, "stop_sequence", started ? NULL : stop_sequence(c));
    json_object_object_add(o, "usage", usage_json(g, started));
    return o;
}

static void fmt_error(http_req_t *r, int status, const char *msg, const char *param, const char *code)
{
    http_reply_error(r, status, msg, param, code, NULL); /* r->error_json: Anthropic's shape */
}

static int fmt_stream_start(run_t *g)
{
    msg_run_t *m = run_of(g);
    if (sse_start(g->r) < 0)
        return -1;
    json_object *ev = json_object_new_object();
    json_object_object_add(ev, "message", message_json(g, m, true));
    emit(g, "message_start", ev);
    emit(g, "ping", NULL);
    return g->r->write_failed ? -1 : 0;
}

static int fmt_stream_ping(run_t *g)
{
    emit(g, "ping", NULL);
    return g->r->write_failed ? -1 : 0;
}

static void fmt_stream_error(run_t *g, int status, const char *msg)
{
    json_object *ev = json_object_new_object(), *err = json_object_new_object();
    json_object_object_add(err, "type", json_object_new_string(anthropic_error_type(status)));
    json_object_object_add(err, "message", json_object_new_string(msg));
    json_object_object_add(ev, "error", err);
    emit(g, "error", ev);
}

static void fmt_stream_done(run_t *g)
{
    const choice_t *c = &g->ch[0];
    json_object *ev = json_object_new_object(), *d = json_object_new_object();
    json_object_object_add(d, "stop_reason", json_object_new_string(stop_reason(c)));
    json_object_object_add(d, "stop_sequence", stop_sequence(c));
    json_object_object_add(ev, "delta", d);
    json_object_object_add(ev, "usage", usage_json(g, false));
    emit(g, "message_delta", ev);
    emit(g, "message_stop", NULL);
}

static void fmt_reply(run_t *g)
{
    json_object *o = message_json(g, run_of(g), false);
    http_reply_json(g->r, 200, to_json(o), NULL);
    json_object_put(o);
}

static const gen_fmt_t msg_fmt = {
    .reply_error = fmt_error,
    .stream_start = fmt_stream_start,
    .stream_ping = fmt_stream_ping,
    .stream_error = fmt_stream_error,
    .stream_done = fmt_stream_done,
    .on_text = blk_fmt_on_text,
    .on_chat = blk_fmt_on_chat,
    .on_end = blk_fmt_on_end,
    .reply = fmt_reply,
};

/* -------------------------------------------------------------- routes */

void api_messages(srv_t *s, http_req_t *r)
{
    req_messages_t q;
    req_err_t e;
    req_limits_t lim = {.max_n = srv_max_n(s)};
    if (req_messages_parse(r->body, r->body_len, false, &lim, &q, &e) < 0) {
        srv_reply_req_err(r, &e);
        return;
    }
    msg_run_t m = {.br.sink = &msg_sink};
    snprintf(m.id, sizeof m.id, "msg_%s", r->id);
    api_chat_generate(s, r, &q.chat, &msg_fmt, &m);
    blk_free(&m.br.blk);
    req_messages_free(&q);
}

void api_messages_count(srv_t *s, http_req_t *r)
{
    req_messages_t q;
    req_err_t e;
    if (req_messages_parse(r->body, r->body_len, true, NULL, &q, &e) < 0) {
        srv_reply_req_err(r, &e);
        return;
    }
    char *prompt = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    if (srv_require_model(s, r, q.chat.gen.model) && api_chat_prompt(s, r, &q.chat, &prompt, &ids, &n) == 0) {
        char body[64];
        snprintf(body, sizeof body, "{\"input_tokens\":%zu}", n);
        r->prompt_tokens = (int32_t)n;
        http_reply_json(r, 200, body, NULL);
    }
    free(prompt);
    free(ids);
    sched_media_release(q.chat.gen.media); /* image rows counted, nothing encoded */
    req_messages_free(&q);
}
