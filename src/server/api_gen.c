/* api_gen.c - /v1/chat/completions, /v1/completions and /invocations.
 *
 * The acceptor side of a generation: validate, render (chat), tokenize,
 * submit the jobs (one per prompt) into one channel, then pop token events,
 * detokenize each choice incrementally (UTF-8 safe) and either stream SSE
 * chunks (flushed per event) or accumulate the texts for one JSON reply.
 * Between events the client socket is polled; a client that went away
 * cancels its jobs at once (the scheduler frees their slots next step).
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/vocab.h"
#include "server/chat_output.h"
#include "server/request_chat.h"
#include "server/request.h"
#include "server/server.h"
#include "server/sse.h"

typedef struct {
    vocab_detok_t detok;
    chat_out_t *co;        /* chat: reasoning + tool calls (chat_output.h) */
    char *text;            /* accumulated (non-streamed) */
    size_t len, cap;
    int32_t n_prompt;
    int32_t n_cached;
    int32_t n_gen;
    sched_finish_t finish;
    bool done;
} choice_t;

typedef struct {
    srv_t *s;
    http_req_t *r;
    bool chat;
    const req_gen_t *gen;
    char id[64];
    int64_t created;
    const char *model;
    size_t n;
    choice_t *ch;
    double t0, last_tok, last_write;
    int32_t prompt_total;
} run_t;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const char *finish_name(sched_finish_t f)
{
    switch (f) {
    case SCHED_FINISH_STOP: return "stop";
    case SCHED_FINISH_LENGTH: return "length";
    case SCHED_FINISH_CANCELLED: return "abort";
    case SCHED_FINISH_ERROR: return "error";
    default: return NULL;
    }
}

/* finish_reason of a choice: "tool_calls" when it called tools and ended
 * on its own. */
static const char *choice_finish(const choice_t *c)
{
    if (c->co && c->finish == SCHED_FINISH_STOP && chat_out_n_calls(c->co) > 0)
        return "tool_calls";
    return finish_name(c->finish);
}

static const char *to_json(json_object *o)
{
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

static json_object *usage_json(const run_t *g)
{
    int32_t gen = 0, cached = 0;
    for (size_t i = 0; i < g->n; i++) {
        gen += g->ch[i].n_gen;
        cached += g->ch[i].n_cached;
    }
    json_object *u = json_object_new_object();
    json_object_object_add(u, "prompt_tokens", json_object_new_int(g->prompt_total));
    json_object_object_add(u, "total_tokens", json_object_new_int(g->prompt_total + gen));
    json_object_object_add(u, "completion_tokens", json_object_new_int(gen));
    json_object *d = json_object_new_object();
    json_object_object_add(d, "cached_tokens", json_object_new_int(cached));
    json_object_object_add(u, "prompt_tokens_details", d);
    if (g->n && g->ch[0].co && chat_out_reasoning_on(g->ch[0].co)) {
        int32_t rt = 0;
        for (size_t i = 0; i < g->n; i++)
            rt += g->ch[i].co ? chat_out_reasoning_tokens(g->ch[i].co) : 0;
        json_object *cd = json_object_new_object();
        json_object_object_add(cd, "reasoning_tokens", json_object_new_int(rt));
        json_object_object_add(u, "completion_tokens_details", cd);
    }
    return u;
}

static json_object *head_json(const run_t *g, const char *object)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_string(g->id));
    json_object_object_add(o, "object", json_object_new_string(object));
    json_object_object_add(o, "created", json_object_new_int64(g->created));
    json_object_object_add(o, "model", json_object_new_string(g->model));
    return o;
}

/* One streamed chunk for choice idx: text (may be NULL), role (first chat
 * chunk), finish reason (last chunk). */
static int emit_chunk(run_t *g, size_t idx, const char *text, size_t len, bool role, const char *finish)
{
    json_object *o = head_json(g, g->chat ? "chat.completion.chunk" : "text_completion");
    json_object *choices = json_object_new_array(), *c = json_object_new_object();
    json_object_object_add(c, "index", json_object_new_int((int32_t)idx));
    if (g->chat) {
        json_object *d = json_object_new_object();
        if (role)
            json_object_object_add(d, "role", json_object_new_string("assistant"));
        if (text)
            json_object_object_add(d, "content", json_object_new_string_len(text, (int)len));
        json_object_object_add(c, "delta", d);
    } else {
        json_object_object_add(c, "text", json_object_new_string_len(text ? text : "", text ? (int)len : 0));
    }
    json_object_object_add(c, "logprobs", NULL);
    json_object_object_add(c, "finish_reason", finish ? json_object_new_string(finish) : NULL);
    if (finish || !g->chat)
        json_object_object_add(c, "stop_reason", NULL);
    json_object_array_add(choices, c);
    json_object_object_add(o, "choices", choices);
    if (g->gen->continuous_usage)
        json_object_object_add(o, "usage", usage_json(g));
    int rc = sse_data(g->r, to_json(o));
    json_object_put(o);
    g->last_write = now_s();
    return rc;
}

/* Streamed chat events of one choice (chat_output.h): one chunk each. */
static void emit_chat_events(run_t *g, size_t idx, const chat_out_ev_t *evs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_object *o = head_json(g, "chat.completion.chunk");
        json_object *choices = json_object_new_array(), *c = json_object_new_object();
        json_object_object_add(c, "index", json_object_new_int((int32_t)idx));
        json_object_object_add(c, "delta", chat_out_delta_json(&evs[i]));
        json_object_object_add(c, "logprobs", NULL);
        json_object_object_add(c, "finish_reason", NULL);
        json_object_array_add(choices, c);
        json_object_object_add(o, "choices", choices);
        if (g->gen->continuous_usage)
            json_object_object_add(o, "usage", usage_json(g));
        sse_data(g->r, to_json(o));
        json_object_put(o);
        g->last_write = now_s();
    }
}

static int emit_usage_chunk(run_t *g)
{
    json_object *o = head_json(g, g->chat ? "chat.completion.chunk" : "text_completion");
    json_object_object_add(o, "choices", json_object_new_array());
    json_object_object_add(o, "usage", usage_json(g));
    int rc = sse_data(g->r, to_json(o));
    json_object_put(o);
    return rc;
}

static void text_append(choice_t *c, const char *p, size_t n)
{
    if (c->len + n + 1 > c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 256;
        while (nc < c->len + n + 1)
            nc *= 2;
        char *t = realloc(c->text, nc);
        if (!t)
            return; /* keep what we have; the reply is still valid JSON */
        c->text = t;
        c->cap = nc;
    }
    memcpy(c->text + c->len, p, n);
    c->len += n;
    c->text[c->len] = '\0';
}

static void reply_full(run_t *g)
{
    json_object *o = head_json(g, g->chat ? "chat.completion" : "text_completion");
    json_object *choices = json_object_new_array();
    for (size_t i = 0; i < g->n; i++) {
        choice_t *c = &g->ch[i];
        json_object *j = json_object_new_object();
        json_object_object_add(j, "index", json_object_new_int((int32_t)i));
        json_object *txt = c->co ? NULL : json_object_new_string_len(c->text ? c->text : "", (int)c->len);
        if (c->co) {
            json_object_object_add(j, "message", chat_out_message_json(c->co));
        } else if (g->chat) {
            json_object *m = json_object_new_object();
            json_object_object_add(m, "role", json_object_new_string("assistant"));
            json_object_object_add(m, "content", txt);
            json_object_object_add(m, "tool_calls", json_object_new_array());
            json_object_object_add(j, "message", m);
        } else {
            json_object_object_add(j, "text", txt);
        }
        json_object_object_add(j, "logprobs", NULL);
        const char *f = choice_finish(c);
        json_object_object_add(j, "finish_reason", f ? json_object_new_string(f) : NULL);
        json_object_object_add(j, "stop_reason", NULL);
        if (!g->chat)
            json_object_object_add(j, "prompt_logprobs", NULL);
        json_object_array_add(choices, j);
    }
    json_object_object_add(o, "choices", choices);
    json_object_object_add(o, "usage", usage_json(g));
    if (g->chat)
        json_object_object_add(o, "prompt_logprobs", NULL);
    json_object_object_add(o, "kv_transfer_params", NULL);
    http_reply_json(g->r, 200, to_json(o), NULL);
    json_object_put(o);
}

/* Pops events until every job is done or the client is gone. */
static void run_events(run_t *g, sched_chan_t *chan)
{
    srv_t *s = g->s;
    http_req_t *r = g->r;
    bool stream = g->gen->stream, first = true;
    char piece[VOCAB_DETOK_MAX];
    size_t n_done = 0;
    while (n_done < g->n) {
        sched_event_t ev;
        int got = sched_chan_next(chan, &ev, 200);
        if (got < 0)
            break;
        if (got == 0 || ev.kind == SCHED_EV_TOKEN) {
            if ((r->io.gone && r->io.gone(r->io.io)) || r->write_failed) {
                metrics_disconnect(&s->metrics);
                r->write_failed = true;
                if (!r->headers_sent) { /* nothing to answer: log 499 like nginx */
                    r->headers_sent = true;
                    r->status = 499;
                }
                sched_chan_cancel(chan);
                return;
            }
        }
        if (got == 0) {
            if (stream && now_s() - g->last_write >= s->cfg.ping_seconds && sse_comment(r, "ping") == 0)
                g->last_write = now_s();
            continue;
        }
        if ((size_t)ev.index >= g->n)
            continue;
        choice_t *c = &g->ch[ev.index];
        if (ev.kind == SCHED_EV_TOKEN) {
            double t = now_s();
            if (first) {
                r->ttft_ms = (t - g->t0) * 1000.0;
                metrics_ttft(&s->metrics, t - g->t0);
                first = false;
            } else {
                metrics_itl(&s->metrics, t - g->last_tok);
            }
            g->last_tok = t;
            c->n_gen++;
            if (c->co) {
                const chat_out_ev_t *evs;
                size_t nev;
                lf_err_t ce;
                if (chat_out_push_token(c->co, ev.token, &evs, &nev, &ce) == LF_OK && stream)
                    emit_chat_events(g, (size_t)ev.index, evs, nev);
                continue;
            }
            int w = vocab_detok_push(&c->detok, ev.token, piece, sizeof piece);
            if (w <= 0)
                continue;
            if (stream)
                emit_chunk(g, (size_t)ev.index, piece, (size_t)w, false, NULL);
            else
                text_append(c, piece, (size_t)w);
            continue;
        }
        /* SCHED_EV_DONE */
        c->done = true;
        c->finish = ev.finish;
        c->n_gen = ev.n_gen;
        c->n_cached = ev.n_cached;
        n_done++;
        int w = vocab_detok_flush(&c->detok, piece, sizeof piece);
        if (c->co) {
            const chat_out_ev_t *evs;
            size_t nev;
            lf_err_t ce;
            w = 0;
            if (ev.finish != SCHED_FINISH_ERROR && chat_out_finish(c->co, &evs, &nev, &ce) == LF_OK && stream)
                emit_chat_events(g, (size_t)ev.index, evs, nev);
        }
        if (ev.finish == SCHED_FINISH_ERROR) {
            lf_err_t e;
            lf_err_set(&e, ev.code, "generation failed in the engine (%s)", lf_code_name(ev.code));
            if (stream) {
                sse_error(r, 500, e.msg, NULL);
                r->status = 500;
            } else {
                http_reply_error(r, 500, e.msg, NULL, NULL, NULL);
            }
            sched_chan_cancel(chan);
            return;
        }
        if (stream)
            emit_chunk(g, (size_t)ev.index, w > 0 ? piece : (g->chat ? NULL : ""), w > 0 ? (size_t)w : 0, false,
                       choice_finish(c));
        else if (w > 0)
            text_append(c, piece, (size_t)w);
    }
    if (stream) {
        if (g->gen->include_usage)
            emit_usage_chunk(g);
        sse_done(r);
    } else {
        reply_full(g);
    }
}

/* Checks the model name, sizes max_tokens against the context, submits
 * and runs. prompts[i] are token arrays (borrowed). */
static void generate(srv_t *s, http_req_t *r, bool chat, const req_gen_t *gen, int32_t **prompts,
                     size_t *n_prompts, size_t n, const chat_out_cfg_t *oc)
{
    int32_t n_ctx = sched_n_ctx(s->sched);
    sched_params_t *params = calloc(n, sizeof *params);
    choice_t *ch = calloc(n, sizeof *ch);
    sched_chan_t *chan = NULL;
    if (!params || !ch) {
        http_reply_error(r, 503, "out of memory", NULL, NULL, NULL);
        goto out;
    }
    run_t g = {.s = s, .r = r, .chat = chat, .gen = gen, .created = (int64_t)time(NULL),
               .model = s->cfg.names[0], .n = n, .ch = ch, .t0 = now_s()};
    snprintf(g.id, sizeof g.id, "%s%s", chat ? "chatcmpl-" : "cmpl-", r->id);
    for (size_t i = 0; i < n; i++) {
        g.prompt_total += (int32_t)n_prompts[i];
        int32_t mt = gen->max_tokens;
        if (mt < 0) {
            mt = n_ctx - (int32_t)n_prompts[i];
            if (mt < 1) {
                char msg[300];
                snprintf(msg, sizeof msg,
                         "This model's maximum context length is %d tokens. However, your prompt has %zu tokens, "
                         "which leaves no room for a completion. Please reduce the length of the %s.",
                         n_ctx, n_prompts[i], chat ? "messages" : "prompt");
                http_reply_error(r, 400, msg, chat ? "messages" : "prompt", "context_length_exceeded", NULL);
                goto out;
            }
        }
        if ((int64_t)n_prompts[i] + mt > n_ctx) {
            char msg[400];
            snprintf(msg, sizeof msg,
                     "This model's maximum context length is %d tokens. However, you requested %lld tokens "
                     "(%zu in the %s, %d in the completion). Please reduce the length of the %s or completion.",
                     n_ctx, (long long)n_prompts[i] + mt, n_prompts[i], chat ? "messages" : "prompt", mt,
                     chat ? "messages" : "prompt");
            http_reply_error(r, 400, msg, chat ? "messages" : "prompt", "context_length_exceeded", NULL);
            goto out;
        }
        /* unseeded requests draw their seed from the request's random id */
        char hex[17];
        memcpy(hex, r->id, 16);
        hex[16] = '\0';
        uint64_t seed = strtoull(hex, NULL, 16) + (uint64_t)i;
        params[i].max_tokens = mt;
        sampler_params_default(&params[i].sampling);
        params[i].sampling.temperature = gen->temperature;
        params[i].sampling.has_seed = gen->has_seed;
        params[i].sampling.seed = gen->seed;
        params[i].entropy = seed;
        vocab_detok_init(&ch[i].detok, s->vocab, false);
        if (oc) {
            chat_out_cfg_t c1 = *oc;
            c1.seed = seed;
            lf_err_t ce = {0};
            if (!(ch[i].co = chat_out_create(&c1, &ce))) {
                http_reply_err(r, &ce, NULL, NULL);
                goto out;
            }
        }
        ch[i].n_prompt = (int32_t)n_prompts[i];
    }
    r->prompt_tokens = g.prompt_total;
    chan = sched_chan_create(s->sched);
    lf_err_t e = {0};
    if (!chan) {
        http_reply_error(r, 503, "out of memory", NULL, NULL, NULL);
        goto out;
    }
    if (sched_submit(s->sched, chan, (const int32_t *const *)prompts, n_prompts, params, (int32_t)n, &e) != LF_OK) {
        const char *param = e.code == LF_ERR_CONTEXT ? (chat ? "messages" : "prompt")
                            : e.code == LF_ERR_INVALID ? "prompt" : NULL;
        http_reply_err(r, &e, param, e.code == LF_ERR_OVERLOAD ? "server_overloaded" : NULL);
        goto out;
    }
    if (gen->stream) {
        if (sse_start(r) < 0)
            goto out;
        g.last_write = now_s();
        for (size_t i = 0; chat && i < n; i++)
            emit_chunk(&g, i, "", 0, true, NULL);
    }
    run_events(&g, chan);
    for (size_t i = 0; i < n; i++)
        r->completion_tokens += ch[i].n_gen;
out:
    sched_chan_free(chan);
    for (size_t i = 0; ch && i < n; i++) {
        free(ch[i].text);
        chat_out_free(ch[i].co);
    }
    free(ch);
    free(params);
}

static void reply_req_err(http_req_t *r, const req_err_t *e)
{
    http_reply_error(r, e->status, e->msg, e->param[0] ? e->param : NULL, e->code[0] ? e->code : NULL, NULL);
}

static bool check_model(srv_t *s, http_req_t *r, const char *model)
{
    if (srv_model_ok(s, model))
        return true;
    char msg[300];
    snprintf(msg, sizeof msg, "The model `%.200s` does not exist.", model);
    http_reply_error(r, 404, msg, "model", "model_not_found", NULL);
    return false;
}

static int tokenize_text(srv_t *s, http_req_t *r, const char *text, bool add_special, int32_t **ids, size_t *n)
{
    lf_err_t e = {0};
    if (vocab_tokenize(s->vocab, text, strlen(text), add_special, true, ids, n, &e) != LF_OK) {
        http_reply_err(r, &e, NULL, NULL);
        return -1;
    }
    return 0;
}

/* The output parsers of a chat request: the server's reasoning parser, its
 * tool-call parser when the request has tools (tool_choice not "none").
 * Tools without a tool-call parser: 400 (vLLM does the same). */
static int chat_output_config(srv_t *s, http_req_t *r, const chat_req_t *q, const char *prompt,
                              chat_out_cfg_t *oc)
{
    bool tools = req_chat_wants_tools(q->ext);
    if (tools && s->tool_format == TOOLCALL_FORMAT_NONE) {
        http_reply_error(r, 400, "this server parses no tool calls: start it with --tool-call-parser "
                         "(hermes, llama3_json, mistral) or use a model whose template it detects",
                         "tools", NULL, NULL);
        return -1;
    }
    *oc = (chat_out_cfg_t){.vocab = s->vocab, .reasoning = s->reasoning,
                           .starts_in_reasoning = reasoning_starts_inside(s->reasoning, prompt, strlen(prompt)),
                           .tools = tools ? s->tool_format : TOOLCALL_FORMAT_NONE,
                           .parallel_tool_calls = !q->ext || q->ext->parallel_tool_calls};
    return 0;
}

void api_chat(srv_t *s, http_req_t *r)
{
    chat_req_t q;
    req_err_t e;
    if (req_chat_parse(r->body, r->body_len, &q, &e) < 0) {
        reply_req_err(r, &e);
        return;
    }
    char *prompt = NULL;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    lf_err_t le = {0};
    if (!check_model(s, r, q.gen.model))
        goto out;
    if (s->render(s->render_ctx, &q, true, &prompt, &le) != LF_OK) {
        http_reply_err(r, &le, "messages", NULL);
        goto out;
    }
    if (s->cfg.log_prompts)
        fprintf(stderr, "req %s prompt: %s\n", r->id, prompt);
    if (tokenize_text(s, r, prompt, true, &ids, &n_ids) < 0)
        goto out;
    chat_out_cfg_t oc;
    if (chat_output_config(s, r, &q, prompt, &oc) < 0)
        goto out;
    generate(s, r, true, &q.gen, &ids, &n_ids, 1, &oc);
out:
    free(ids);
    free(prompt);
    req_chat_free(&q);
}

void api_completions(srv_t *s, http_req_t *r)
{
    cmpl_req_t q;
    req_err_t e;
    if (req_cmpl_parse(r->body, r->body_len, &q, &e) < 0) {
        reply_req_err(r, &e);
        return;
    }
    int32_t **ids = NULL;
    size_t *n_ids = NULL;
    if (!check_model(s, r, q.gen.model))
        goto out;
    if (q.toks) {
        generate(s, r, false, &q.gen, q.toks, q.n_toks, q.n_prompts, NULL);
        goto out;
    }
    ids = calloc(q.n_prompts, sizeof *ids);
    n_ids = calloc(q.n_prompts, sizeof *n_ids);
    if (!ids || !n_ids) {
        http_reply_error(r, 503, "out of memory", NULL, NULL, NULL);
        goto out;
    }
    for (size_t i = 0; i < q.n_prompts; i++) {
        if (s->cfg.log_prompts)
            fprintf(stderr, "req %s prompt[%zu]: %s\n", r->id, i, q.texts[i]);
        if (tokenize_text(s, r, q.texts[i], true, &ids[i], &n_ids[i]) < 0)
            goto out;
    }
    generate(s, r, false, &q.gen, ids, n_ids, q.n_prompts, NULL);
out:
    for (size_t i = 0; ids && i < q.n_prompts; i++)
        free(ids[i]);
    free(ids);
    free(n_ids);
    req_cmpl_free(&q);
}

void api_invocations(srv_t *s, http_req_t *r)
{
    switch (req_sniff_kind(r->body, r->body_len)) {
    case REQ_KIND_CHAT: api_chat(s, r); return;
    case REQ_KIND_COMPLETION: api_completions(s, r); return;
    default:
        http_reply_error(r, 400,
                         "The body must be a JSON object with 'messages' (chat) or 'prompt' (completion)", NULL,
                         NULL, NULL);
    }
}
