/* api_responses_out.c - the OpenAI Responses output format of the
 * generation runner (see api_responses.h): output items from the parsed
 * blocks, the streamed events in OpenAI's order with sequence_number,
 * the response object, and its write to the store.
 *
 * Stream of one response:
 *   response.created, response.in_progress,
 *   per block: response.output_item.added,
 *     text:      response.content_part.added, response.output_text.delta...,
 *                response.output_text.done, response.content_part.done
 *     reasoning: response.content_part.added (reasoning_text),
 *                response.reasoning_text.delta..., response.reasoning_text.done,
 *                response.content_part.done
 *     tool call: response.function_call_arguments.delta...,
 *                response.function_call_arguments.done
 *   response.output_item.done;
 *   then response.completed (or response.incomplete when cut by
 *   max_output_tokens / the context, response.failed on an engine error).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/api/api_responses.h"
#include "server/store/store.h"
#include "server/transport/sse.h"

const char *resp_json(json_object *o)
{
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* ------------------------------------------------------------ objects */

static json_object *field(json_object *o, const char *k)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, k, &v) || json_object_is_type(v, json_type_null))
        return NULL;
    return v;
}

/* o[k] (a new reference) or dflt (taken; may be NULL). */
static json_object *echo(json_object *o, const char *k, json_object *dflt)
{
    json_object *v = field(o, k);
    if (v) {
        json_object_put(dflt);
        return json_object_get(v);
    }
    return dflt;
}

json_object *resp_object(const resp_job_t *j, const char *status, json_object *output, json_object *usage,
                         json_object *error, const char *incomplete)
{
    json_object *q = j->q.raw, *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_string(j->id));
    json_object_object_add(o, "object", json_object_new_string("response"));
    json_object_object_add(o, "created_at", json_object_new_int64(j->created_at));
    json_object_object_add(o, "status", json_object_new_string(status));
    json_object_object_add(o, "background", json_object_new_boolean(j->q.background));
    json_object_object_add(o, "error", error);
    json_object *inc = NULL;
    if (incomplete) {
        inc = json_object_new_object();
        json_object_object_add(inc, "reason", json_object_new_string(incomplete));
    }
    json_object_object_add(o, "incomplete_details", inc);
    json_object_object_add(o, "instructions", echo(q, "instructions", NULL));
    json_object_object_add(o, "max_output_tokens", echo(q, "max_output_tokens", NULL));
    json_object_object_add(o, "max_tool_calls", echo(q, "max_tool_calls", NULL));
    json_object_object_add(o, "model", json_object_new_string(j->s->cfg.names[0]));
    json_object_object_add(o, "output", output ? output : json_object_new_array());
    json_object_object_add(o, "parallel_tool_calls", echo(q, "parallel_tool_calls", json_object_new_boolean(true)));
    json_object_object_add(o, "previous_response_id", echo(q, "previous_response_id", NULL));
    json_object *rq = field(q, "reasoning"), *rs = json_object_new_object();
    json_object_object_add(rs, "effort", rq ? echo(rq, "effort", NULL) : NULL);
    json_object_object_add(rs, "summary", rq ? echo(rq, "summary", NULL) : NULL);
    json_object_object_add(o, "reasoning", rs);
    json_object_object_add(o, "service_tier", json_object_new_string("default"));
    json_object_object_add(o, "store", json_object_new_boolean(j->store));
    json_object_object_add(o, "temperature", echo(q, "temperature", json_object_new_double(1.0)));
    json_object *tx = field(q, "text"), *txo = json_object_new_object();
    json_object *fmt = tx ? field(tx, "format") : NULL;
    if (fmt) {
        json_object_object_add(txo, "format", json_object_get(fmt));
    } else {
        json_object *f = json_object_new_object();
        json_object_object_add(f, "type", json_object_new_string("text"));
        json_object_object_add(txo, "format", f);
    }
    json_object_object_add(o, "text", txo);
    json_object_object_add(o, "tool_choice", echo(q, "tool_choice", json_object_new_string("auto")));
    json_object_object_add(o, "tools", echo(q, "tools", json_object_new_array()));
    json_object_object_add(o, "top_logprobs", json_object_new_int(0));
    json_object_object_add(o, "top_p", echo(q, "top_p", json_object_new_double(1.0)));
    json_object_object_add(o, "truncation", echo(q, "truncation", json_object_new_string("disabled")));
    json_object_object_add(o, "usage", usage);
    json_object_object_add(o, "user", echo(q, "user", NULL));
    json_object_object_add(o, "metadata", echo(q, "metadata", json_object_new_object()));
    return o;
}

lf_code_t resp_save(resp_job_t *j, json_object *resp, lf_err_t *e)
{
    if (!j->store || !j->s->store)
        return LF_OK;
    int64_t now = (int64_t)time(NULL);
    json_object *st = field(resp, "status");
    int64_t ttl = j->s->cfg.store_ttl > 0 ? j->s->cfg.store_ttl : 30 * 86400;
    store_rec_t rec = {.id = j->id, .owner = j->owner, .created_at = j->created_at,
                       .expires_at = j->created_at + ttl, .updated_at = now,
                       .status = (char *)(st ? json_object_get_string(st) : "completed"),
                       .response = strdup(resp_json(resp)), .items = NULL};
    rec.items = strdup(resp_json(j->items));
    lf_code_t c = rec.response && rec.items ? store_put(j->s->store, &rec, e) : lf_err_set(e, LF_ERR_NOMEM, "out of memory");
    free(rec.response);
    free(rec.items);
    return c;
}

/* ------------------------------------------------------------- items */

static void item_id(const resp_job_t *j, const blk_t *b, size_t i, char *out, size_t cap)
{
    const char *p = b->kind == BLK_TEXT ? "msg" : b->kind == BLK_TOOL ? "fc" : "rs";
    snprintf(out, cap, "%s_%s%04zx", p, j->base, i & 0xffff);
}

static json_object *text_part(const blk_t *b, bool with_text)
{
    json_object *p = json_object_new_object();
    bool r = b->kind == BLK_REASONING;
    json_object_object_add(p, "type", json_object_new_string(r ? "reasoning_text" : "output_text"));
    json_object_object_add(p, "text", with_text ? json_object_new_string_len(b->text ? b->text : "", (int)b->len)
                                                : json_object_new_string(""));
    if (!r) {
        json_object_object_add(p, "annotations", json_object_new_array());
        json_object_object_add(p, "logprobs", json_object_new_array());
    }
    return p;
}

/* The output item of block i; full: with its text (else as it opens). */
static json_object *item_json(const resp_job_t *j, const blk_t *b, size_t i, const char *status, bool full)
{
    char id[96];
    item_id(j, b, i, id, sizeof id);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_string(id));
    if (b->kind == BLK_TOOL) {
        json_object_object_add(o, "type", json_object_new_string("function_call"));
        json_object_object_add(o, "status", json_object_new_string(status));
        json_object_object_add(o, "call_id", json_object_new_string(b->call_id ? b->call_id : ""));
        json_object_object_add(o, "name", json_object_new_string(b->name ? b->name : ""));
        json_object_object_add(o, "arguments",
                               json_object_new_string_len(full && b->text ? b->text : "", full ? (int)b->len : 0));
        return o;
    }
    json_object *content = json_object_new_array();
    if (full)
        json_object_array_add(content, text_part(b, true));
    if (b->kind == BLK_REASONING) {
        json_object_object_add(o, "type", json_object_new_string("reasoning"));
        json_object_object_add(o, "summary", json_object_new_array());
        json_object_object_add(o, "content", content);
        json_object_object_add(o, "status", json_object_new_string(status));
        return o;
    }
    json_object_object_add(o, "type", json_object_new_string("message"));
    json_object_object_add(o, "status", json_object_new_string(status));
    json_object_object_add(o, "role", json_object_new_string("assistant"));
    json_object_object_add(o, "content", content);
    return o;
}

/* ------------------------------------------------------------- events */

/* Sends event `type` with the fields of ev (taken) and the next
 * sequence_number. */
static void emit(run_t *g, resp_job_t *j, const char *type, json_object *ev)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "type", json_object_new_string(type));
    json_object_object_foreach(ev, k, v) json_object_object_add(o, k, json_object_get(v));
    json_object_object_add(o, "sequence_number", json_object_new_int64(j->seq++));
    json_object_put(ev);
    sse_event(g->r, type, resp_json(o));
    json_object_put(o);
    g->last_write = now_s();
}

/* {item_id, output_index[, content_index]} */
static json_object *where(const resp_job_t *j, const blk_t *b, size_t i, bool content)
{
    char id[96];
    item_id(j, b, i, id, sizeof id);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "item_id", json_object_new_string(id));
    json_object_object_add(o, "output_index", json_object_new_int((int32_t)i));
    if (content)
        json_object_object_add(o, "content_index", json_object_new_int(0));
    return o;
}

static void blk_open(void *ctx, size_t i, const blk_t *b)
{
    resp_job_t *j = ctx;
    run_t *g = j->br.run;
    if (!g->gen->stream)
        return;
    json_object *ev = json_object_new_object();
    json_object_object_add(ev, "output_index", json_object_new_int((int32_t)i));
    json_object_object_add(ev, "item", item_json(j, b, i, "in_progress", false));
    emit(g, j, "response.output_item.added", ev);
    if (b->kind == BLK_TOOL)
        return;
    ev = where(j, b, i, true);
    json_object_object_add(ev, "part", text_part(b, false));
    emit(g, j, "response.content_part.added", ev);
}

static void blk_delta(void *ctx, size_t i, const blk_t *b, const char *p, size_t n)
{
    resp_job_t *j = ctx;
    run_t *g = j->br.run;
    if (!g->gen->stream)
        return;
    json_object *ev = where(j, b, i, b->kind != BLK_TOOL);
    json_object_object_add(ev, "delta", json_object_new_string_len(p, (int)n));
    if (b->kind == BLK_TEXT)
        json_object_object_add(ev, "logprobs", json_object_new_array());
    emit(g, j,
         b->kind == BLK_TOOL ? "response.function_call_arguments.delta"
         : b->kind == BLK_TEXT ? "response.output_text.delta" : "response.reasoning_text.delta",
         ev);
}

/* The status of block i's item: the last block of a choice cut by the
 * token limit is incomplete. */
static const char *item_status(const run_t *g, const resp_job_t *j, size_t i)
{
    return g->ch[0].finish == SCHED_FINISH_LENGTH && i + 1 == j->br.blk.n ? "incomplete" : "completed";
}

static void blk_close(void *ctx, size_t i, const blk_t *b)
{
    resp_job_t *j = ctx;
    run_t *g = j->br.run;
    if (!g->gen->stream)
        return;
    json_object *ev = where(j, b, i, b->kind != BLK_TOOL);
    if (b->kind == BLK_TOOL) {
        json_object_object_add(ev, "name", json_object_new_string(b->name ? b->name : ""));
        json_object_object_add(ev, "arguments", json_object_new_string_len(b->text ? b->text : "", (int)b->len));
        emit(g, j, "response.function_call_arguments.done", ev);
    } else {
        json_object_object_add(ev, "text", json_object_new_string_len(b->text ? b->text : "", (int)b->len));
        if (b->kind == BLK_TEXT)
            json_object_object_add(ev, "logprobs", json_object_new_array());
        emit(g, j, b->kind == BLK_TEXT ? "response.output_text.done" : "response.reasoning_text.done", ev);
        ev = where(j, b, i, true);
        json_object_object_add(ev, "part", text_part(b, true));
        emit(g, j, "response.content_part.done", ev);
    }
    ev = json_object_new_object();
    json_object_object_add(ev, "output_index", json_object_new_int((int32_t)i));
    json_object_object_add(ev, "item", item_json(j, b, i, item_status(g, j, i), true));
    emit(g, j, "response.output_item.done", ev);
}

const blk_sink_t resp_sink = {blk_open, blk_delta, blk_close};

/* The job of a run (its blocks set up on first use). */
static resp_job_t *job_of(run_t *g)
{
    return (resp_job_t *)blk_run_of(g);
}

/* ------------------------------------------------------------- hooks */

static void fmt_error(http_req_t *r, int status, const char *msg, const char *param, const char *code)
{
    http_reply_error(r, status, msg, param, code, NULL);
}

static json_object *usage_json(const run_t *g)
{
    const choice_t *c = &g->ch[0];
    int32_t rt = c->co ? chat_out_reasoning_tokens(c->co) : 0;
    json_object *u = json_object_new_object(), *d = json_object_new_object(), *od = json_object_new_object();
    json_object_object_add(u, "input_tokens", json_object_new_int(g->prompt_total));
    json_object_object_add(d, "cached_tokens", json_object_new_int(c->n_cached));
    json_object_object_add(u, "input_tokens_details", d);
    json_object_object_add(u, "output_tokens", json_object_new_int(c->n_gen));
    json_object_object_add(od, "reasoning_tokens", json_object_new_int(rt));
    json_object_object_add(u, "output_tokens_details", od);
    json_object_object_add(u, "total_tokens", json_object_new_int(g->prompt_total + c->n_gen));
    return u;
}

/* The finished response object (j->final) from the run. */
static json_object *finish(run_t *g, resp_job_t *j)
{
    job_of(g);
    const choice_t *c = &g->ch[0];
    json_object *out = json_object_new_array();
    for (size_t i = 0; i < j->br.blk.n; i++)
        json_object_array_add(out, item_json(j, &j->br.blk.v[i], i, item_status(g, j, i), true));
    const char *status = "completed", *inc = NULL;
    json_object *err = NULL;
    if (c->finish == SCHED_FINISH_LENGTH) {
        status = "incomplete";
        inc = "max_output_tokens";
    } else if (c->finish == SCHED_FINISH_CANCELLED) {
        status = "cancelled";
    } else if (c->finish == SCHED_FINISH_ERROR) {
        status = "failed";
        err = json_object_new_object();
        json_object_object_add(err, "code", json_object_new_string("server_error"));
        json_object_object_add(err, "message", json_object_new_string("generation failed in the engine"));
    }
    json_object_put(j->final);
    j->final = resp_object(j, status, out, usage_json(g), err, inc);
    return j->final;
}

static int fmt_stream_start(run_t *g)
{
    resp_job_t *j = job_of(g);
    if (sse_start(g->r) < 0)
        return -1;
    json_object *ev = json_object_new_object();
    json_object_object_add(ev, "response", resp_object(j, "in_progress", NULL, NULL, NULL, NULL));
    emit(g, j, "response.created", ev);
    ev = json_object_new_object();
    json_object_object_add(ev, "response", resp_object(j, "in_progress", NULL, NULL, NULL, NULL));
    emit(g, j, "response.in_progress", ev);
    return g->r->write_failed ? -1 : 0;
}

static int fmt_stream_ping(run_t *g)
{
    return sse_comment(g->r, "ping");
}

static void fmt_stream_error(run_t *g, int status, const char *msg)
{
    resp_job_t *j = g->fmt_ctx;
    json_object *ev = json_object_new_object();
    json_object_object_add(ev, "code", json_object_new_string(status == 429 ? "rate_limit_exceeded" : "server_error"));
    json_object_object_add(ev, "message", json_object_new_string(msg));
    json_object_object_add(ev, "param", NULL);
    emit(g, j, "error", ev);
}

/* The finished response, stored; NULL after logging why it could not be
 * stored (msg: the client's message). */
static json_object *finish_saved(run_t *g, char *msg, size_t cap)
{
    resp_job_t *j = job_of(g);
    json_object *resp = finish(g, j);
    lf_err_t e;
    if (resp_save(j, resp, &e) == LF_OK)
        return resp;
    fprintf(stderr, "req %s: store: %s\n", g->r->id, e.msg);
    snprintf(msg, cap, "the response was generated but could not be stored: %s", e.msg);
    return NULL;
}

static void fmt_stream_done(run_t *g)
{
    char msg[600];
    json_object *resp = finish_saved(g, msg, sizeof msg);
    if (!resp) {
        fmt_stream_error(g, 500, msg);
        return;
    }
    const char *st = json_object_get_string(field(resp, "status"));
    char type[48];
    snprintf(type, sizeof type, "response.%s", !strcmp(st, "cancelled") ? "failed" : st);
    json_object *ev = json_object_new_object();
    json_object_object_add(ev, "response", json_object_get(resp));
    emit(g, job_of(g), type, ev);
}

static void fmt_reply(run_t *g)
{
    char msg[600];
    json_object *resp = finish_saved(g, msg, sizeof msg);
    if (!resp)
        http_reply_error(g->r, 500, msg, NULL, "store_error", NULL);
    else
        http_reply_json(g->r, 200, resp_json(resp), NULL);
}

const gen_fmt_t resp_fmt = {
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
