/* api_tgi_out.c - TGI and LMI response, stream and error shapes as an
 * output format of the generation runner (see api_tgi.h, api_gen.h).
 *
 * Every token goes through on_token: its Token object is kept for the
 * details and, when streaming, sent at once, except the token that ends
 * the choice, which is held until on_end knows the finish reason and the
 * final text, because TGI and LMI put those on the last token's event.
 */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/api_gen.h"
#include "server/api/api_tgi.h"
#include "server/transport/sse.h"

static const char *to_json(json_object *o)
{
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* ------------------------------------------------------------- errors */

static char *error_body(int status, const char *msg, const char *type, bool lmi)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "error", json_object_new_string(msg ? msg : ""));
    json_object_object_add(o, "error_type", json_object_new_string(type));
    if (lmi)
        json_object_object_add(o, "code", json_object_new_int(status));
    char *s = strdup(to_json(o));
    json_object_put(o);
    return s;
}

static void reply_error(http_req_t *r, int status, const char *msg, const char *type, bool lmi, const char *extra)
{
    char *j = error_body(status, msg, type, lmi);
    if (j)
        http_reply_json(r, status, j, extra);
    else
        http_reply_json(r, 503, "{\"error\":\"out of memory\",\"error_type\":\"overloaded\"}", NULL);
    free(j);
}

void tgi_reply_error(http_req_t *r, int status, const char *msg, const char *error_type, const char *extra)
{
    reply_error(r, status, msg, error_type, false, extra);
}

/* An OpenAI-style status in TGI's terms: request problems are validation
 * errors (422; a body that is not JSON stays 400 when keep_400), a full
 * queue is "overloaded", an engine failure a generation error (424). */
static void reply_mapped(http_req_t *r, bool lmi, int status, const char *msg, bool keep_400)
{
    char buf[700];
    const char *type = "generation";
    if (status == 400 || status == 404 || status == 422) {
        snprintf(buf, sizeof buf, "Input validation error: %s", msg);
        status = status == 400 && keep_400 ? 400 : 422;
        type = "validation";
    } else if (status == 413) {
        snprintf(buf, sizeof buf, "Input validation error: %s", msg);
        type = "validation";
    } else if (status == 429 || status == 503) {
        snprintf(buf, sizeof buf, "%s", status == 429 ? "Model is overloaded" : msg);
        type = "overloaded";
    } else {
        snprintf(buf, sizeof buf, "Request failed during generation: %s", msg);
        status = 424;
    }
    /* a full queue: come back in a second (as on the OpenAI endpoints) */
    reply_error(r, status, buf, type, lmi, status == 429 ? "Retry-After: 1\r\n" : NULL);
}

void tgi_reply_req_err(http_req_t *r, bool lmi, const req_err_t *e)
{
    reply_mapped(r, lmi, e->status, e->msg, true);
}

static void fmt_error_tgi(http_req_t *r, int status, const char *msg, const char *param, const char *code)
{
    (void)param, (void)code;
    reply_mapped(r, false, status, msg, false);
}

static void fmt_error_lmi(http_req_t *r, int status, const char *msg, const char *param, const char *code)
{
    (void)param, (void)code;
    reply_mapped(r, true, status, msg, false);
}

/* ------------------------------------------------------------- tokens */

static json_object *logprob_json(bool has, float lp)
{
    if (!has)
        return NULL;
    return json_object_new_double(isfinite(lp) ? (double)lp : -9999.0);
}

static bool is_special(const vocab_t *v, int32_t id)
{
    return vocab_is_control(v, id) || vocab_is_eog(v, id);
}

/* {"id","text","logprob","special"} (TGI) or {"id","text","log_prob",
 * "special_token"?} (LMI). special < 0: not reported (prefill). */
static json_object *token_json(const tgi_ctx_t *x, int32_t id, const char *text, size_t len, bool has_lp, float lp,
                               int special)
{
    bool lmi = x->out == TGI_OUT_LMI;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_int(id));
    json_object_object_add(o, "text", json_object_new_string_len(text, (int)len));
    json_object_object_add(o, lmi ? "log_prob" : "logprob", logprob_json(has_lp, lp));
    if (!lmi && special >= 0)
        json_object_object_add(o, "special", json_object_new_boolean(special));
    else if (lmi && special > 0)
        json_object_object_add(o, "special_token", json_object_new_boolean(true));
    return o;
}

/* A token on its own (prefill, alternatives): its characters with special
 * tokens rendered, invalid UTF-8 as U+FFFD. */
static json_object *lone_token_json(const tgi_ctx_t *x, int32_t id, bool has_lp, float lp, int special)
{
    char buf[2 * VOCAB_DETOK_MAX];
    vocab_detok_t d;
    vocab_detok_init(&d, x->vocab, true);
    int n = vocab_detok_push(&d, id, buf, VOCAB_DETOK_MAX);
    n = n > 0 ? n : 0;
    int m = vocab_detok_flush(&d, buf + n, VOCAB_DETOK_MAX);
    return token_json(x, id, buf, (size_t)n + (size_t)(m > 0 ? m : 0), has_lp, lp, special);
}

/* --------------------------------------------------------- the pieces */

static const char *input_text(const tgi_ctx_t *x, size_t idx)
{
    return idx < x->q->n_inputs ? x->q->inputs[idx] : "";
}

static json_object *generated_text(const tgi_ctx_t *x, const choice_t *c, size_t idx)
{
    const char *in = x->full_text ? input_text(x, idx) : "";
    size_t li = strlen(in);
    char *t = malloc(li + c->len + 1);
    if (!t)
        return json_object_new_string("");
    memcpy(t, in, li);
    if (c->len)
        memcpy(t + li, c->text, c->len);
    json_object *o = json_object_new_string_len(t, (int)(li + c->len));
    free(t);
    return o;
}

/* The details object; stream: the short form of the last event. */
static json_object *details_json(const run_t *g, const tgi_ctx_t *x, size_t idx, bool stream)
{
    const choice_t *c = &g->ch[idx];
    const tgi_choice_t *tc = &x->c[idx];
    const char *fin = finish_name_lmi(c);
    json_object *d = json_object_new_object();
    json_object_object_add(d, "finish_reason", json_object_new_string(fin ? fin : "error"));
    json_object_object_add(d, "generated_tokens", json_object_new_int(c->n_gen));
    if (x->out == TGI_OUT_LMI) {
        json_object_object_add(d, "inputs", json_object_new_string(input_text(x, idx)));
        if (!stream)
            json_object_object_add(d, "tokens", json_object_get(tc->tokens));
        if (tc->prefill)
            json_object_object_add(d, "prefill", json_object_get(tc->prefill));
        if (x->q->top_n_tokens > 0)
            json_object_object_add(d, "top_tokens", json_object_get(tc->top));
        return d;
    }
    bool seeded = x->q->sampling && x->q->gen.has_seed;
    json_object_object_add(d, "seed", seeded ? json_object_new_uint64(x->q->gen.seed) : NULL);
    if (stream) {
        json_object_object_add(d, "input_length", json_object_new_int(tc->n_input));
        return d;
    }
    json_object_object_add(d, "prefill", tc->prefill ? json_object_get(tc->prefill) : json_object_new_array());
    json_object_object_add(d, "tokens", json_object_get(tc->tokens));
    if (x->q->top_n_tokens > 0)
        json_object_object_add(d, "top_tokens", json_object_get(tc->top));
    return d;
}

/* -------------------------------------------------------------- stream */

/* One stream event for choice idx: tok (taken), top (taken, may be NULL);
 * final: with generated_text and details. */
static int emit(run_t *g, size_t idx, json_object *tok, json_object *top, bool final)
{
    tgi_ctx_t *x = g->fmt_ctx;
    tgi_choice_t *tc = &x->c[idx];
    json_object *o = json_object_new_object();
    int rc;
    if (x->out == TGI_OUT_LMI) {
        json_object_object_add(o, "token", tok);
        json_object_put(top); /* LMI sends the alternatives in the details */
        if (final) {
            json_object_object_add(o, "generated_text", generated_text(x, &g->ch[idx], idx));
            if (x->q->details)
                json_object_object_add(o, "details", details_json(g, x, idx, true));
        }
        const char *s = to_json(o);
        rc = http_write(g->r, s, strlen(s));
        if (rc == 0)
            rc = http_write(g->r, "\n", 1);
        if (rc == 0)
            rc = http_flush(g->r);
    } else {
        json_object_object_add(o, "index", json_object_new_int(++tc->n_events));
        json_object_object_add(o, "token", tok);
        if (top)
            json_object_object_add(o, "top_tokens", top);
        json_object_object_add(o, "generated_text", final ? generated_text(x, &g->ch[idx], idx) : NULL);
        json_object_object_add(o, "details", final && x->q->details ? details_json(g, x, idx, true) : NULL);
        rc = sse_data(g->r, to_json(o));
    }
    json_object_put(o);
    g->last_write = now_s();
    return rc;
}

static int stream_start(run_t *g)
{
    tgi_ctx_t *x = g->fmt_ctx;
    if (x->out != TGI_OUT_LMI)
        return sse_start(g->r);
    if (http_send_headers(g->r, 200, "application/jsonlines", "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n") <
        0)
        return -1;
    return http_flush(g->r);
}

static int stream_ping(run_t *g)
{
    return sse_comment(g->r, "ping");
}

/* An error after the headers: TGI's error event; LMI's documented error
 * line (a token with id -1, finish_reason "error") plus the message. */
static void stream_fail(run_t *g, const char *msg, const char *type)
{
    tgi_ctx_t *x = g->fmt_ctx;
    if (x->out != TGI_OUT_LMI) {
        char *j = error_body(0, msg, type, false);
        if (j)
            sse_data(g->r, j);
        free(j);
        return;
    }
    json_object *o = json_object_new_object(), *t = json_object_new_object(), *d = json_object_new_object();
    json_object_object_add(t, "id", json_object_new_int(-1));
    json_object_object_add(t, "text", json_object_new_string(""));
    json_object_object_add(t, "log_prob", json_object_new_int(-1));
    json_object_object_add(t, "special_token", json_object_new_boolean(true));
    json_object_object_add(o, "token", t);
    json_object_object_add(o, "generated_text", json_object_new_string(""));
    json_object_object_add(d, "finish_reason", json_object_new_string("error"));
    json_object_object_add(d, "generated_tokens", NULL);
    json_object_object_add(d, "inputs", NULL);
    json_object_object_add(o, "details", d);
    json_object_object_add(o, "error", json_object_new_string(msg));
    const char *s = to_json(o);
    if (http_write(g->r, s, strlen(s)) == 0 && http_write(g->r, "\n", 1) == 0)
        http_flush(g->r);
    json_object_put(o);
}

static void stream_error(run_t *g, int status, const char *msg)
{
    char buf[600];
    (void)status;
    snprintf(buf, sizeof buf, "Request failed during generation: %s", msg);
    stream_fail(g, buf, "generation");
}

static void stream_done(run_t *g)
{
    http_flush(g->r); /* TGI's stream simply ends (no [DONE]); so do JSON lines */
}

/* ------------------------------------------------------------- hooks */

static void on_prompt(run_t *g, size_t idx, const sched_prompt_lp_t *p, const int32_t *prompt)
{
    tgi_ctx_t *x = g->fmt_ctx;
    tgi_choice_t *tc = &x->c[idx];
    if (tc->prefill || !x->q->decoder_input_details)
        return;
    tc->prefill = json_object_new_array();
    for (int32_t i = 0; i < p->n; i++)
        json_object_array_add(tc->prefill, lone_token_json(x, prompt[i], p->e[i].has, p->e[i].logprob, -1));
}

static void on_token(run_t *g, size_t idx, const sched_event_t *ev, bool last)
{
    tgi_ctx_t *x = g->fmt_ctx;
    tgi_choice_t *tc = &x->c[idx];
    const vocab_t *v = x->vocab;
    if (!g->gen->stream && !x->q->details)
        return; /* only generated_text is reported */
    char buf[2 * VOCAB_DETOK_MAX];
    int n = vocab_detok_push(&tc->detok, ev->token, buf, VOCAB_DETOK_MAX);
    n = n > 0 ? n : 0;
    if (last) { /* the last token also carries what the decoder still held */
        int m = vocab_detok_flush(&tc->detok, buf + n, VOCAB_DETOK_MAX);
        n += m > 0 ? m : 0;
    }
    json_object *tok = token_json(x, ev->token, buf, (size_t)n, ev->lp.has, ev->lp.logprob, is_special(v, ev->token));
    json_object *top = NULL;
    if (x->q->top_n_tokens > 0) {
        top = json_object_new_array();
        for (int32_t k = 0; k < ev->lp.n_top; k++)
            json_object_array_add(top, lone_token_json(x, ev->lp.top[k].token, true, ev->lp.top[k].logprob,
                                                       is_special(v, ev->lp.top[k].token)));
        json_object_array_add(tc->top, json_object_get(top));
    }
    json_object_array_add(tc->tokens, json_object_get(tok));
    if (!g->gen->stream) {
        json_object_put(tok);
        json_object_put(top);
        return;
    }
    if (last) {
        tc->held = tok;
        tc->held_top = top;
        return;
    }
    emit(g, idx, tok, top, false);
}

static void on_end(run_t *g, size_t idx)
{
    tgi_ctx_t *x = g->fmt_ctx;
    tgi_choice_t *tc = &x->c[idx];
    if (!g->gen->stream)
        return;
    if (!tc->held || !finish_name_lmi(&g->ch[idx])) {
        /* cancelled (server stopping) or ended without its last token */
        if (!g->r->write_failed)
            stream_fail(g, "Incomplete generation stream", "incomplete_generation_stream");
        return;
    }
    json_object *tok = tc->held, *top = tc->held_top;
    tc->held = tc->held_top = NULL;
    emit(g, idx, tok, top, true);
}

static json_object *result_json(const run_t *g, const tgi_ctx_t *x, size_t idx)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "generated_text", generated_text(x, &g->ch[idx], idx));
    if (x->q->details)
        json_object_object_add(o, "details", details_json(g, x, idx, false));
    return o;
}

static void reply(run_t *g)
{
    tgi_ctx_t *x = g->fmt_ctx;
    bool lmi = x->out == TGI_OUT_LMI;
    for (size_t i = 0; i < g->n; i++)
        if (!finish_name_lmi(&g->ch[i])) {
            reply_error(g->r, 500, "Incomplete generation", "incomplete_generation", lmi, NULL);
            return;
        }
    json_object *o;
    if (x->out == TGI_OUT_TGI || (lmi && !x->q->inputs_list)) {
        o = result_json(g, x, 0);
    } else { /* POST / (an array of one) or an LMI batch */
        o = json_object_new_array();
        for (size_t i = 0; i < g->n; i++)
            json_object_array_add(o, result_json(g, x, i));
    }
    http_reply_json(g->r, 200, to_json(o), NULL);
    json_object_put(o);
}

static const gen_fmt_t fmt_tgi = {
    .reply_error = fmt_error_tgi, .stream_start = stream_start, .stream_ping = stream_ping,
    .stream_error = stream_error, .stream_done = stream_done, .on_prompt = on_prompt,
    .on_token = on_token, .on_end = on_end, .reply = reply,
};

/* JSON lines have no comment syntax: no keep-alive while waiting */
static const gen_fmt_t fmt_lmi = {
    .reply_error = fmt_error_lmi, .stream_start = stream_start, .stream_ping = NULL,
    .stream_error = stream_error, .stream_done = stream_done, .on_prompt = on_prompt,
    .on_token = on_token, .on_end = on_end, .reply = reply,
};

const gen_fmt_t *tgi_format(tgi_out_t out)
{
    return out == TGI_OUT_LMI ? &fmt_lmi : &fmt_tgi;
}

int tgi_ctx_init(tgi_ctx_t *x, tgi_out_t out, const tgi_req_t *q, const vocab_t *v, bool full_text)
{
    memset(x, 0, sizeof *x);
    x->out = out;
    x->q = q;
    x->vocab = v;
    x->full_text = full_text;
    x->c = calloc(q->n_inputs ? q->n_inputs : 1, sizeof *x->c);
    if (!x->c)
        return -1;
    for (size_t i = 0; i < q->n_inputs; i++) {
        vocab_detok_init(&x->c[i].detok, v, true);
        x->c[i].tokens = json_object_new_array();
        x->c[i].top = json_object_new_array();
    }
    return 0;
}

void tgi_ctx_free(tgi_ctx_t *x)
{
    for (size_t i = 0; x->c && x->q && i < x->q->n_inputs; i++) {
        json_object_put(x->c[i].tokens);
        json_object_put(x->c[i].top);
        json_object_put(x->c[i].prefill);
        json_object_put(x->c[i].held);
        json_object_put(x->c[i].held_top);
    }
    free(x->c);
    memset(x, 0, sizeof *x);
}
