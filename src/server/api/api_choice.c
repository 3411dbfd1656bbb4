/* api_choice.c - one choice of a generation: decoded text through the
 * stop-string matcher to the client, logprobs, timings (see api_gen.h). */
#include <stdlib.h>
#include <string.h>

#include "server/api/api_gen.h"
#include "server/transport/sse.h"

double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void text_append(choice_t *c, const char *p, size_t n)
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

void choice_deliver(run_t *g, size_t idx, const char *p, size_t n)
{
    if (n == 0)
        return;
    if (g->gen->stream && !g->fmt) {
        emit_chunk(g, idx, p, n, false, NULL);
        return;
    }
    text_append(&g->ch[idx], p, n);
    if (g->fmt && g->fmt->on_text)
        g->fmt->on_text(g, idx, p, n);
}

/* Feeds decoded text through the stop-string matcher (flush: end of the
 * generation). Returns true when a stop string matched. */
bool choice_feed(run_t *g, size_t idx, const char *p, size_t n, bool flush)
{
    choice_t *c = &g->ch[idx];
    stopstr_out_t out;
    lf_err_t e;
    if (stopstr_feed(c->ss, p, n, &out, &e) == LF_OK) {
        choice_deliver(g, idx, out.text, out.len);
        if (out.stop_index >= 0) {
            json_object_put(c->stop_reason);
            c->stop_reason = json_object_new_string_len(out.stop_str, (int)out.stop_len);
            return true;
        }
    }
    if (flush) {
        stopstr_flush(c->ss, &out);
        choice_deliver(g, idx, out.text, out.len);
    }
    return false;
}

void choice_end(run_t *g, size_t idx, sched_finish_t why)
{
    choice_t *c = &g->ch[idx];
    c->done = true;
    c->finish = why;
    if (g->fmt)
        g->fmt->on_end(g, idx);
    else if (g->gen->stream)
        emit_chunk(g, idx, g->chat ? NULL : "", 0, false, run_finish_reason(g, c));
}

void choice_on_token(run_t *g, sched_chan_t *chan, size_t idx, const sched_event_t *ev)
{
    choice_t *c = &g->ch[idx];
    const req_sampling_t *sp = g->sp;
    if (c->done)
        return; /* stopped by a stop string; the job is being cancelled */
    double t = now_s();
    if (c->n_gen == 0)
        c->t_first = t;
    else if (c->decode_ms)
        json_object_array_add(c->decode_ms, json_object_new_double((t - c->t_last) * 1000.0));
    c->t_last = t;
    c->n_gen++;
    if (ev->lp.has && !g->fmt) {
        if (g->chat)
            json_object_array_add(c->lp_chat, lp_chat_entry(g->s->vocab, &ev->lp));
        else
            lp_legacy_add(&c->lp_leg, g->s->vocab, ev->token, &ev->lp, c->text_off);
    }
    if (c->co) { /* reasoning / tool-call parsing (api_chat_out.c) */
        stopstr_set_active(c->ss, c->n_gen >= sp->min_tokens);
        if (chat_choice_token(g, idx, ev->token, !ev->ends || sp->include_stop_str_in_output)) {
            sched_chan_cancel_job(chan, (int32_t)idx);
            choice_end(g, idx, SCHED_FINISH_STOP);
        }
        return;
    }
    char piece[VOCAB_DETOK_MAX + 1];
    size_t off = 0;
    if (!sp->skip_special_tokens && sp->spaces_between_special_tokens) {
        int kind = vocab_is_control(g->s->vocab, ev->token) ? 2 : 1;
        if (c->prev_kind && (kind == 2 || c->prev_kind == 2))
            piece[off++] = ' ';
        c->prev_kind = kind;
    }
    int w = vocab_detok_push(&c->detok, ev->token, piece + off, sizeof piece - off);
    size_t len = off + (size_t)(w > 0 ? w : 0);
    /* as vLLM: the EOS / stop token's text is not part of the output; in
     * the TGI / LMI formats never (a special token, skipped there) */
    if (ev->ends && (!sp->include_stop_str_in_output || g->fmt))
        len = 0;
    c->text_off += (int32_t)len;
    stopstr_set_active(c->ss, c->n_gen >= sp->min_tokens);
    bool stopped = choice_feed(g, idx, piece, len, false);
    if (g->fmt && g->fmt->on_token)
        g->fmt->on_token(g, idx, ev, stopped || ev->ends || c->n_gen >= c->max_tokens);
    if (stopped) {
        sched_chan_cancel_job(chan, (int32_t)idx);
        choice_end(g, idx, SCHED_FINISH_STOP);
    }
}

void choice_on_prompt_lp(run_t *g, size_t idx, sched_prompt_lp_t *p, const int32_t *prompt)
{
    choice_t *c = &g->ch[idx];
    if (g->fmt) {
        if (g->fmt->on_prompt)
            g->fmt->on_prompt(g, idx, p, prompt);
        free(p);
        return;
    }
    if (g->sp->prompt_logprobs >= 0 && !c->prompt_lp)
        c->prompt_lp = lp_prompt_json(g->s->vocab, p);
    if (c->echo && g->sp->logprobs && !g->chat) {
        /* text_offset into the echoed prompt text: the token pieces may
         * add a leading space (SentencePiece), so align them at the end */
        char buf[512];
        int32_t total = 0, off = 0, echo_len = (int32_t)strlen(c->echo);
        for (int32_t i = 0; i < p->n; i++) {
            int n = vocab_token_to_piece(g->s->vocab, prompt[i], !g->sp->skip_special_tokens, buf, sizeof buf);
            total += n > 0 ? n : 0;
        }
        int32_t shift = total > echo_len ? total - echo_len : 0;
        for (int32_t i = 0; i < p->n; i++) {
            lp_legacy_add(&c->lp_leg, g->s->vocab, prompt[i], &p->e[i], off > shift ? off - shift : 0);
            int n = vocab_token_to_piece(g->s->vocab, prompt[i], !g->sp->skip_special_tokens, buf, sizeof buf);
            off += n > 0 ? n : 0;
        }
    }
    free(p);
}

/* Sampling parameters: the request's, else the server's defaults, else
 * OpenAI's (sampler_params_default). */
void gen_fill_sampling(const srv_t *s, const req_gen_t *gen, sampler_params_t *p)
{
    const req_sampling_t *q = &gen->samp;
    const srv_config_t *c = &s->cfg;
    sampler_params_default(p);
    p->temperature = (q->has & REQ_HAS_TEMPERATURE) || !c->def_set.temperature ? gen->temperature : c->def_temperature;
    p->top_p = (q->has & REQ_HAS_TOP_P) || !c->def_set.top_p ? q->top_p : c->def_top_p;
    p->top_k = (q->has & REQ_HAS_TOP_K) || !c->def_set.top_k ? q->top_k : c->def_top_k;
    p->min_p = (q->has & REQ_HAS_MIN_P) || !c->def_set.min_p ? q->min_p : c->def_min_p;
    p->typical_p = q->typical_p > 0.0f ? q->typical_p : 1.0f;
    p->repetition_penalty = (q->has & REQ_HAS_REP_PENALTY) || !c->def_set.repetition_penalty
                                ? q->repetition_penalty : c->def_repetition_penalty;
    p->frequency_penalty = q->frequency_penalty;
    p->presence_penalty = q->presence_penalty;
    p->logit_bias = q->logit_bias;
    p->n_logit_bias = q->n_logit_bias;
    p->min_tokens = q->min_tokens;
    p->has_seed = gen->has_seed;
    p->seed = gen->seed;
}
