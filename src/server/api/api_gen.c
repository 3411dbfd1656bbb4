/* api_gen.c - /v1/chat/completions, /v1/completions and /invocations.
 *
 * The acceptor side of a generation: validate, render (chat), tokenize,
 * submit the jobs (one per prompt) into one channel, then pop token events,
 * detokenize each choice incrementally (UTF-8 safe) and either stream SSE
 * chunks (flushed per event) or accumulate the texts for one JSON reply.
 * Between events the client socket is polled; a client that went away
 * cancels its jobs at once (the scheduler frees their slots next step).
 * Per-choice text handling (stop strings, logprobs, echo) is in
 * api_choice.c, the logprobs JSON in api_logprobs.c.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/utf8.h"
#include "engine/sample/stopstr.h"
#include "engine/vocab/vocab.h"
#include "server/api/api_constraint.h"
#include "server/api/api_embed.h"
#include "server/api/api_gen.h"
#include "server/api/api_logprobs.h"
#include "server/chat/chat_setup.h"
#include "server/request/request.h"
#include "server/server.h"
#include "server/request/request_chat.h"
#include "server/transport/sse.h"

const char *finish_name(sched_finish_t f)
{
    switch (f) {
    case SCHED_FINISH_STOP: return "stop";
    case SCHED_FINISH_LENGTH: return "length";
    case SCHED_FINISH_CANCELLED: return "abort";
    case SCHED_FINISH_ERROR: return "error";
    default: return NULL;
    }
}

const char *finish_name_lmi(const choice_t *c)
{
    if (c->finish == SCHED_FINISH_LENGTH)
        return "length";
    if (c->finish != SCHED_FINISH_STOP)
        return NULL;
    return c->stop_reason && json_object_is_type(c->stop_reason, json_type_string) ? "stop_sequence" : "eos_token";
}

const char *run_finish_reason(const run_t *g, const choice_t *c)
{
    const char *f = choice_finish_reason(c);
    if (g->lmi_finish && f && strcmp(f, "tool_calls"))
        return finish_name_lmi(c);
    return f;
}

/* Errors before anything was sent: OpenAI's body, or the format's. */
static void gen_fail(const gen_fmt_t *fmt, http_req_t *r, int status, const char *msg, const char *param,
                     const char *code)
{
    if (fmt)
        fmt->reply_error(r, status, msg, param, code);
    else
        http_reply_error(r, status, msg, param, code, NULL);
}

/* gen_fail with extra response headers on the OpenAI endpoints (a format
 * adds its own: TGI's 429 carries Retry-After too). */
static void gen_fail_extra(const gen_fmt_t *fmt, http_req_t *r, int status, const char *msg, const char *param,
                           const char *code, const char *extra)
{
    if (fmt)
        fmt->reply_error(r, status, msg, param, code);
    else
        http_reply_error(r, status, msg, param, code, extra);
}

static void gen_fail_err(const gen_fmt_t *fmt, http_req_t *r, const lf_err_t *e, const char *param,
                         const char *code)
{
    if (!code && e->code == LF_ERR_CONTEXT)
        code = "context_length_exceeded";
    gen_fail(fmt, r, http_status_of(e->code), e->msg, param, code);
}

static const char *to_json(json_object *o)
{
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

static json_object *usage_json(const run_t *g)
{
    int32_t gen = 0, cached = 0, pred_acc = 0, pred_rej = 0;
    for (size_t i = 0; i < g->n; i++) {
        gen += g->ch[i].n_gen;
        pred_acc += g->ch[i].pred_accepted;
        pred_rej += g->ch[i].pred_rejected;
        if (i % g->per == 0) /* the prompt is counted once, not per choice */
            cached += g->ch[i].n_cached;
    }
    /* OpenAI counts rejected prediction tokens as completion tokens (they
     * were computed): completion_tokens_details says how many */
    gen += pred_rej;
    json_object *u = json_object_new_object();
    json_object_object_add(u, "prompt_tokens", json_object_new_int(g->prompt_total));
    json_object_object_add(u, "total_tokens", json_object_new_int(g->prompt_total + gen));
    json_object_object_add(u, "completion_tokens", json_object_new_int(gen));
    json_object *d = json_object_new_object();
    json_object_object_add(d, "cached_tokens", json_object_new_int(cached));
    json_object_object_add(u, "prompt_tokens_details", d);
    json_object *cd = NULL;
    if (g->n && g->ch[0].co && chat_out_reasoning_on(g->ch[0].co)) {
        int32_t rt = 0;
        for (size_t i = 0; i < g->n; i++)
            rt += g->ch[i].co ? chat_out_reasoning_tokens(g->ch[i].co) : 0;
        cd = json_object_new_object();
        json_object_object_add(cd, "reasoning_tokens", json_object_new_int(rt));
    }
    if (g->prediction) {
        if (!cd)
            cd = json_object_new_object();
        json_object_object_add(cd, "accepted_prediction_tokens", json_object_new_int(pred_acc));
        json_object_object_add(cd, "rejected_prediction_tokens", json_object_new_int(pred_rej));
    }
    if (cd)
        json_object_object_add(u, "completion_tokens_details", cd);
    if (g->mindie && g->n > 0) {
        const choice_t *c = &g->ch[0];
        json_object_object_add(u, "prefill_time",
                               json_object_new_double(c->t_first > 0 ? (c->t_first - g->t0) * 1000.0 : 0.0));
        json_object_object_add(u, "decode_time_arr", json_object_get(c->decode_ms));
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
    json_object_object_add(o, "system_fingerprint", json_object_new_string(g->fingerprint));
    return o;
}

/* The logprobs gathered since the last chunk (moved into the chunk). */
static json_object *take_logprobs(run_t *g, choice_t *ch)
{
    if (!ch->has_lp)
        return NULL;
    json_object *o;
    if (g->chat) {
        o = json_object_new_object();
        json_object_object_add(o, "content", ch->lp_chat);
        ch->lp_chat = json_object_new_array();
    } else {
        o = lp_legacy_take(&ch->lp_leg);
        lp_legacy_init(&ch->lp_leg);
    }
    return o;
}

int emit_chunk(run_t *g, size_t idx, const char *text, size_t len, bool role, const char *finish)
{
    choice_t *ch = &g->ch[idx];
    json_object *o = head_json(g, g->chat ? "chat.completion.chunk" : "text_completion");
    json_object *choices = json_object_new_array(), *c = json_object_new_object();
    json_object_object_add(c, "index", json_object_new_int((int32_t)idx));
    if (g->mindie && (text || finish)) { /* full_text streaming: the whole text so far */
        text_append(ch, text ? text : "", text ? len : 0);
        text = ch->text ? ch->text : "";
        len = ch->len;
    }
    if (g->chat) {
        json_object *d = json_object_new_object();
        if (role || g->mindie)
            json_object_object_add(d, "role", json_object_new_string("assistant"));
        if (text)
            json_object_object_add(d, "content", json_object_new_string_len(text, (int)len));
        json_object_object_add(c, "delta", d);
    } else {
        json_object_object_add(c, "text", json_object_new_string_len(text ? text : "", text ? (int)len : 0));
    }
    json_object_object_add(c, "logprobs", role ? NULL : take_logprobs(g, ch));
    json_object_object_add(c, "finish_reason", finish ? json_object_new_string(finish) : NULL);
    json_object_object_add(c, "stop_reason", finish ? json_object_get(ch->stop_reason) : NULL);
    json_object_array_add(choices, c);
    json_object_object_add(o, "choices", choices);
    if (g->mindie && finish) {
        json_object_object_add(o, "full_text", json_object_new_string_len(ch->text ? ch->text : "", (int)ch->len));
        json_object_object_add(o, "usage", usage_json(g));
    } else if (g->gen->continuous_usage) {
        json_object_object_add(o, "usage", usage_json(g));
    }
    int rc = sse_data(g->r, to_json(o));
    json_object_put(o);
    g->last_write = now_s();
    return rc;
}

int emit_delta(run_t *g, size_t idx, json_object *delta)
{
    json_object *o = head_json(g, "chat.completion.chunk");
    json_object *choices = json_object_new_array(), *c = json_object_new_object();
    json_object_object_add(c, "index", json_object_new_int((int32_t)idx));
    json_object_object_add(c, "delta", delta);
    json_object_object_add(c, "logprobs", take_logprobs(g, &g->ch[idx]));
    json_object_object_add(c, "finish_reason", NULL);
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

static int emit_usage_chunk(run_t *g)
{
    json_object *o = head_json(g, g->chat ? "chat.completion.chunk" : "text_completion");
    json_object_object_add(o, "choices", json_object_new_array());
    json_object_object_add(o, "usage", usage_json(g));
    int rc = sse_data(g->r, to_json(o));
    json_object_put(o);
    return rc;
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
            json_object_object_add(j, "message", chat_choice_message(c));
        } else if (g->chat) {
            json_object *m = json_object_new_object();
            json_object_object_add(m, "role", json_object_new_string("assistant"));
            json_object_object_add(m, "content", txt);
            json_object_object_add(m, "tool_calls", json_object_new_array());
            json_object_object_add(j, "message", m);
        } else {
            json_object_object_add(j, "text", txt);
        }
        json_object_object_add(j, "logprobs", take_logprobs(g, c));
        const char *f = run_finish_reason(g, c);
        json_object_object_add(j, "finish_reason", f ? json_object_new_string(f) : NULL);
        json_object_object_add(j, "stop_reason", json_object_get(c->stop_reason));
        if (!g->chat)
            json_object_object_add(j, "prompt_logprobs", json_object_get(c->prompt_lp));
        json_object_array_add(choices, j);
    }
    json_object_object_add(o, "choices", choices);
    json_object_object_add(o, "usage", usage_json(g));
    if (g->chat)
        json_object_object_add(o, "prompt_logprobs", g->n ? json_object_get(g->ch[0].prompt_lp) : NULL);
    json_object_object_add(o, "kv_transfer_params", NULL);
    http_reply_json(g->r, 200, to_json(o), NULL);
    json_object_put(o);
}

/* Pops events until every job is done or the client is gone. */
static void run_events(run_t *g, sched_chan_t *chan, int32_t **job_prompts)
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
            if (stream && now_s() - g->last_write >= s->cfg.ping_seconds &&
                (g->fmt ? g->fmt->stream_ping && g->fmt->stream_ping(g) == 0 : sse_comment(r, "ping") == 0))
                g->last_write = now_s();
            continue;
        }
        if ((size_t)ev.index >= g->n) {
            if (ev.kind == SCHED_EV_PROMPT)
                free(ev.prompt_lp);
            continue;
        }
        choice_t *c = &g->ch[ev.index];
        if (ev.kind == SCHED_EV_PROMPT) {
            choice_on_prompt_lp(g, (size_t)ev.index, ev.prompt_lp, job_prompts[ev.index]);
            continue;
        }
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
            choice_on_token(g, chan, (size_t)ev.index, &ev);
            continue;
        }
        /* SCHED_EV_DONE */
        c->dead = true;
        c->n_cached = ev.n_cached;
        c->pred_accepted = ev.n_pred_accepted;
        c->pred_rejected = ev.n_pred_rejected;
        n_done++;
        if (ev.finish == SCHED_FINISH_ERROR) {
            lf_err_t e;
            lf_err_set(&e, ev.code, "generation failed in the engine (%s)", lf_code_name(ev.code));
            if (stream) {
                if (g->fmt)
                    g->fmt->stream_error(g, 500, e.msg);
                else
                    sse_error(r, 500, e.msg, NULL);
                r->status = 500;
            } else {
                gen_fail(g->fmt, r, 500, e.msg, NULL, NULL);
            }
            sched_chan_cancel(chan);
            return;
        }
        if (c->done)
            continue; /* ended by a stop string */
        c->n_gen = ev.n_gen;
        if (ev.stop_token >= 0)
            c->stop_reason = json_object_new_int(ev.stop_token);
        int w = vocab_detok_flush(&c->detok, piece, sizeof piece);
        sched_finish_t why = ev.finish;
        if (c->co && chat_choice_finish(g, (size_t)ev.index))
            why = SCHED_FINISH_STOP;
        else if (choice_feed(g, (size_t)ev.index, piece, w > 0 ? (size_t)w : 0, true))
            why = SCHED_FINISH_STOP;
        choice_end(g, (size_t)ev.index, why);
    }
    if (stream && g->fmt) {
        g->fmt->stream_done(g);
    } else if (stream) {
        if (g->gen->include_usage)
            emit_usage_chunk(g);
        sse_done(r);
    } else if (g->fmt) {
        g->fmt->reply(g);
    } else {
        reply_full(g);
    }
}

/* Checks the model name, sizes max_tokens against the context, submits
 * and runs. prompts[i] are token arrays (borrowed); texts[i] the prompt
 * texts for echo (NULL: detokenized). Jobs are prompt-major: job i*n + k
 * is choice k of prompt i. */
/* gram: the output grammar (NULL: unconstrained). Under a grammar the stop
 * strings and stop_token_ids do not apply: the grammar decides where the
 * output ends, so a response that ends with "stop" is always complete. */
void gen_run(srv_t *s, http_req_t *r, bool chat, const req_gen_t *gen, int32_t **prompts, size_t *n_prompts,
             size_t n_in, char **texts, const chat_out_cfg_t *oc, const gen_fmt_t *fmt, void *fmt_ctx,
             grammar_t *gram)
{
    const req_sampling_t *sp = &gen->samp;
    int32_t n_ctx = sched_n_ctx(s->sched);
    size_t per = (size_t)sp->n, n = n_in * per;
    sched_params_t *params = NULL;
    choice_t *ch = NULL;
    int32_t **jp = NULL;
    size_t *jn = NULL;
    char **echo_owned = NULL;
    sched_chan_t *chan = NULL;
    int32_t *pred = NULL; /* the prediction's tokens (OpenAI Predicted Outputs) */
    size_t n_pred = 0;
    int32_t max_n = srv_max_n(s);
    if (sp->n > max_n) { /* parsed with the server's limits, so only for other parsers */
        char msg[160];
        snprintf(msg, sizeof msg, "'n' must be an integer from 1 to %d, got %d", max_n, sp->n);
        gen_fail(fmt, r, 400, msg, "n", NULL);
        return;
    }
    if (sp->mindie == 1 && !s->cfg.mindie) {
        gen_fail(fmt, r, 400, "'mindie' extras are not enabled on this server (start it with --mindie-extras)",
                 "mindie", "unsupported_parameter");
        return;
    }
    params = calloc(n, sizeof *params);
    ch = calloc(n, sizeof *ch);
    jp = calloc(n, sizeof *jp);
    jn = calloc(n, sizeof *jn);
    echo_owned = calloc(n_in, sizeof *echo_owned);
    if (!params || !ch || !jp || !jn || !echo_owned) {
        gen_fail(fmt, r, 503, "out of memory", NULL, NULL);
        goto out;
    }
    run_t g = {.s = s, .r = r, .fmt = fmt, .fmt_ctx = fmt_ctx, .lmi_finish = chat && s->cfg.lmi_finish_reasons,
               .chat = chat, .gen = gen, .created = (int64_t)time(NULL),
               .model = s->cfg.names[0], .n = n, .ch = ch, .t0 = now_s(), .sp = sp, .per = per,
               .mindie = s->cfg.mindie && sp->mindie == 1};
    snprintf(g.id, sizeof g.id, "%s%s", chat ? "chatcmpl-" : "cmpl-", r->id);
    snprintf(g.fingerprint, sizeof g.fingerprint, "%s", s->fingerprint);
    sampler_params_t base;
    gen_fill_sampling(s, gen, &base);
    const char *bad_param = NULL;
    lf_err_t e = {0};
    if (sampler_params_validate(&base, vocab_n_tokens(s->vocab), &bad_param, &e) != LF_OK) {
        gen_fail(fmt, r, 400, e.msg, bad_param, NULL);
        goto out;
    }
    for (int32_t k = 0; k < sp->n_stop_token_ids; k++)
        if (sp->stop_token_ids[k] >= vocab_n_tokens(s->vocab)) {
            char msg[160];
            snprintf(msg, sizeof msg, "stop_token_ids: token id %d is out of vocabulary (0..%d)",
                     sp->stop_token_ids[k], vocab_n_tokens(s->vocab) - 1);
            gen_fail(fmt, r, 400, msg, "stop_token_ids", NULL);
            goto out;
        }
    /* the prediction, tokenized as text (no BOS, control-token text
     * literal): where the output follows it, it drafts the next tokens */
    if (sp->prediction && *sp->prediction) {
        if (vocab_tokenize(s->vocab, sp->prediction, strlen(sp->prediction), false, false, &pred, &n_pred, &e) !=
            LF_OK) {
            gen_fail_err(fmt, r, &e, "prediction", NULL);
            goto out;
        }
        if (n_pred > (size_t)n_ctx)
            n_pred = (size_t)n_ctx; /* beyond what any output can reach */
    }
    g.prediction = sp->prediction != NULL;
    bool want_plp = sp->prompt_logprobs >= 0 || (sp->echo && sp->logprobs);
    for (size_t i = 0; i < n_in; i++) {
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
                gen_fail(fmt, r, 400, msg, chat ? "messages" : "prompt", "context_length_exceeded");
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
            gen_fail(fmt, r, 400, msg, chat ? "messages" : "prompt", "context_length_exceeded");
            goto out;
        }
        if (sp->echo && !texts) { /* token prompt: echo its text */
            size_t cap = n_prompts[i] * 64 + 1, w = 0;
            echo_owned[i] = malloc(cap);
            for (size_t t = 0; echo_owned[i] && t < n_prompts[i]; t++) {
                int m = vocab_token_to_piece(s->vocab, prompts[i][t], !sp->skip_special_tokens, echo_owned[i] + w,
                                             cap - w - 1);
                w += m > 0 && (size_t)m < cap - w - 1 ? (size_t)m : 0;
            }
            if (echo_owned[i]) {
                echo_owned[i][w] = '\0';
                if (!utf8_valid(echo_owned[i], w, NULL)) { /* byte tokens: echoed as U+FFFD */
                    char *fixed = utf8_repair_dup(echo_owned[i], w, NULL);
                    free(echo_owned[i]);
                    echo_owned[i] = fixed;
                }
            }
        }
        for (size_t k = 0; k < per; k++) {
            size_t j = i * per + k;
            jp[j] = prompts[i];
            jn[j] = n_prompts[i];
            /* unseeded requests draw their seed from the request's random id */
            char hex[17];
            memcpy(hex, r->id, 16);
            hex[16] = '\0';
            params[j].max_tokens = mt;
            params[j].sampling = base;
            params[j].sampling.seed = gen->seed + (uint64_t)k; /* choice k of a seeded request: seed + k */
            params[j].entropy = strtoull(hex, NULL, 16) + (uint64_t)j;
            params[j].ignore_eos = sp->ignore_eos;
            params[j].stop_token_ids = gram ? NULL : sp->stop_token_ids;
            params[j].n_stop_token_ids = gram ? 0 : sp->n_stop_token_ids;
            params[j].grammar = gram;
            params[j].grammar_engine = gram ? s->grammar : NULL;
            params[j].media = gen->media;
            params[j].logprobs = sp->logprobs;
            params[j].top_logprobs = sp->top_logprobs;
            /* chat: prompt_logprobs once (root); completions: per choice */
            params[j].prompt_logprobs = want_plp && (!chat || k == 0) && (sp->echo || sp->prompt_logprobs >= 0);
            params[j].n_prompt_top = sp->prompt_logprobs >= 0 ? sp->prompt_logprobs : sp->top_logprobs;
            params[j].share_group = per > 1 && !params[j].prompt_logprobs ? (int32_t)i + 1 : 0;
            params[j].spec.prediction = pred;
            params[j].spec.n_prediction = (int32_t)n_pred;
            vocab_detok_init(&ch[j].detok, s->vocab, !sp->skip_special_tokens);
            ch[j].ss = stopstr_create((const char *const *)sp->stop, NULL, gram ? 0 : sp->n_stop,
                                      sp->include_stop_str_in_output, &e);
            if (!ch[j].ss) {
                gen_fail_err(fmt, r, &e, "stop", NULL);
                goto out;
            }
            ch[j].n_prompt = (int32_t)n_prompts[i];
            ch[j].max_tokens = mt;
            ch[j].has_lp = sp->logprobs && !fmt; /* a format keeps its own token records */
            if (ch[j].has_lp) {
                if (chat)
                    ch[j].lp_chat = json_object_new_array();
                else
                    lp_legacy_init(&ch[j].lp_leg);
            }
            if (g.mindie)
                ch[j].decode_ms = json_object_new_array();
            ch[j].echo = !sp->echo ? NULL : texts ? texts[i] : echo_owned[i];
            if (oc) {
                chat_out_cfg_t c1 = *oc;
                c1.special = !sp->skip_special_tokens;
                c1.seed = params[j].entropy;
                if (!(ch[j].co = chat_out_create(&c1, &e))) {
                    gen_fail_err(fmt, r, &e, NULL, NULL);
                    goto out;
                }
            }
        }
    }
    /* a share group leader must come before its followers: already so */
    r->prompt_tokens = g.prompt_total;
    chan = sched_chan_create(s->sched);
    if (!chan) {
        gen_fail(fmt, r, 503, "out of memory", NULL, NULL);
        goto out;
    }
    if (sched_submit(s->sched, chan, (const int32_t *const *)jp, jn, params, (int32_t)n, &e) != LF_OK) {
        const char *param = e.code == LF_ERR_CONTEXT ? (chat ? "messages" : "prompt")
                            : e.code == LF_ERR_INVALID ? (per > 1 ? "n" : "prompt") : NULL;
        if (e.code == LF_ERR_OVERLOAD) /* queue full: come back in a second */
            gen_fail_extra(fmt, r, 429, e.msg, NULL, "server_overloaded", "Retry-After: 1\r\n");
        else
            gen_fail_err(fmt, r, &e, param, NULL);
        goto out;
    }
    if (gen->stream) {
        if ((fmt ? fmt->stream_start(&g) : sse_start(r)) < 0)
            goto out;
        g.last_write = now_s();
        for (size_t i = 0; chat && !fmt && i < n; i++)
            emit_chunk(&g, i, "", 0, true, NULL);
    }
    for (size_t j = 0; j < n; j++)
        if (ch[j].echo) {
            ch[j].text_off = (int32_t)strlen(ch[j].echo);
            choice_deliver(&g, j, ch[j].echo, strlen(ch[j].echo));
        }
    run_events(&g, chan, jp);
    for (size_t i = 0; i < n; i++)
        r->completion_tokens += ch[i].n_gen;
out:
    sched_chan_free(chan);
    for (size_t i = 0; ch && i < n; i++) {
        free(ch[i].text);
        stopstr_free(ch[i].ss);
        json_object_put(ch[i].stop_reason);
        json_object_put(ch[i].lp_chat);
        lp_legacy_free(&ch[i].lp_leg);
        json_object_put(ch[i].prompt_lp);
        json_object_put(ch[i].decode_ms);
        chat_out_free(ch[i].co);
    }
    for (size_t i = 0; echo_owned && i < n_in; i++)
        free(echo_owned[i]);
    free(echo_owned);
    free(ch);
    free(jp);
    free(jn);
    free(params);
    free(pred);
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

/* The output parsers of a chat request (srv_chat_out_config). Tools
 * without a tool-call parser: 400 (vLLM does the same). */
static int chat_output_config(srv_t *s, http_req_t *r, const chat_req_t *q, const char *prompt,
                              chat_out_cfg_t *oc, bool *parse)
{
    if (!srv_chat_out_config(s, q, prompt, oc, parse)) {
        http_reply_error(r, 400, "this server parses no tool calls: start it with --tool-call-parser "
                         "or use a model whose template it detects", "tools", NULL, NULL);
        return -1;
    }
    return 0;
}

int api_chat_prompt(srv_t *s, http_req_t *r, chat_req_t *q, char **prompt, int32_t **ids, size_t *n)
{
    lf_err_t le = {0};
    *prompt = NULL;
    *ids = NULL;
    *n = 0;
    if (s->render(s->render_ctx, q, true, prompt, &le) != LF_OK) {
        http_reply_err(r, &le, "messages", NULL);
        return -1;
    }
    if (s->cfg.log_prompts)
        fprintf(stderr, "req %s prompt: %s\n", r->id, *prompt);
    /* image parts: the prompt with each image's rows (api_media.c) */
    return q->n_images ? api_chat_media(s, r, q, *prompt, ids, n) : tokenize_text(s, r, *prompt, true, ids, n);
}

void api_chat_generate(srv_t *s, http_req_t *r, chat_req_t *q, const gen_fmt_t *fmt, void *fmt_ctx)
{
    char *prompt = NULL;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    grammar_t *g = NULL;
    if (!srv_require_model(s, r, q->gen.model))
        goto out;
    if (api_chat_prompt(s, r, q, &prompt, &ids, &n_ids) < 0)
        goto out;
    chat_out_cfg_t oc;
    bool parse = false;
    if (chat_output_config(s, r, q, prompt, &oc, &parse) < 0)
        goto out;
    if (api_constraint_build(s, r, &q->gen, q, &oc, &g) < 0)
        goto out;
    gen_run(s, r, true, &q->gen, &ids, &n_ids, 1, NULL, parse ? &oc : NULL, fmt, fmt_ctx, g);
out:
    grammar_release(g);
    free(ids);
    free(prompt);
    sched_media_release(q->gen.media);
    q->gen.media = NULL;
}

void api_chat(srv_t *s, http_req_t *r)
{
    chat_req_t q;
    req_err_t e;
    req_limits_t lim = {.max_n = srv_max_n(s)};
    if (req_chat_parse_limited(r->body, r->body_len, &lim, &q, &e) < 0) {
        srv_reply_req_err(r, &e);
        return;
    }
    api_chat_generate(s, r, &q, NULL, NULL);
    req_chat_free(&q);
}

void api_completions(srv_t *s, http_req_t *r)
{
    cmpl_req_t q;
    req_err_t e;
    req_limits_t lim = {.max_n = srv_max_n(s)};
    if (req_cmpl_parse_limited(r->body, r->body_len, &lim, &q, &e) < 0) {
        srv_reply_req_err(r, &e);
        return;
    }
    int32_t **ids = NULL;
    size_t *n_ids = NULL;
    grammar_t *g = NULL;
    if (!srv_require_model(s, r, q.gen.model))
        goto out;
    if (api_constraint_build(s, r, &q.gen, NULL, NULL, &g) < 0)
        goto out;
    if (q.toks) {
        gen_run(s, r, false, &q.gen, q.toks, q.n_toks, q.n_prompts, NULL, NULL, NULL, NULL, g);
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
    gen_run(s, r, false, &q.gen, ids, n_ids, q.n_prompts, q.texts, NULL, NULL, NULL, g);
out:
    grammar_release(g);
    for (size_t i = 0; ids && i < q.n_prompts; i++)
        free(ids[i]);
    free(ids);
    free(n_ids);
    req_cmpl_free(&q);
}

void api_invocations(srv_t *s, http_req_t *r)
{
    if (s->embed) { /* SageMaker's TEI containers: embeddings and rerank */
        api_embed_invocations(s, r);
        return;
    }
    switch (req_sniff_kind(r->body, r->body_len)) {
    case REQ_KIND_CHAT: api_chat(s, r); return;
    case REQ_KIND_COMPLETION: api_completions(s, r); return;
    case REQ_KIND_TGI: api_lmi_invocations(s, r); return;
    default:
        http_reply_error(r, 400,
                         "The body must be a JSON object with 'messages' (chat), 'prompt' (completion) or "
                         "'inputs' (text generation, TGI / LMI schema)",
                         NULL, NULL, NULL);
    }
}
