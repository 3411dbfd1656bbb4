/* api_gen.h - private to the generation handlers (api_gen.c, api_choice.c,
 * api_tgi*.c): the state of one request's run and of each of its choices,
 * and the hooks of an output format other than OpenAI's (gen_fmt_t).
 *
 * A run owns its choices (array of n = prompts x `n`); a choice owns its
 * stop-string matcher, accumulated text and pending logprobs JSON, all
 * released by the handler (api_gen.c: generate) at the end of the request.
 * Everything runs on the request's acceptor thread.
 */
#ifndef LF_API_GEN_H
#define LF_API_GEN_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/sched/sched.h"
#include "engine/sample/stopstr.h"
#include "engine/vocab/vocab.h"
#include "grammar/grammar.h"
#include "server/api/api_blocks.h"
#include "server/api/api_logprobs.h"
#include "server/chat/chat_output.h"
#include "server/request/request.h"
#include "server/server.h"

typedef struct {
    vocab_detok_t detok;
    stopstr_t *ss;         /* stop strings + UTF-8-safe hold-back */
    char *text;            /* accumulated (non-streamed; streamed: full_text) */
    size_t len, cap;
    int32_t n_prompt;
    int32_t max_tokens;    /* the job's limit (a token reaching it is the last) */
    int32_t n_cached;
    int32_t n_gen;
    sched_finish_t finish;
    json_object *stop_reason; /* matched stop string / stop token id, or NULL */
    bool done;             /* final chunk sent / result fixed */
    bool dead;             /* the job's DONE event was read */
    int prev_kind;         /* spaces_between_special_tokens: 0 none, 1 text, 2 special */
    int32_t text_off;      /* bytes of text produced so far (legacy text_offset) */
    json_object *lp_chat;  /* chat logprobs.content entries not yet sent / all */
    lp_legacy_t lp_leg;    /* completions logprobs not yet sent / all */
    bool has_lp;
    json_object *prompt_lp;/* vLLM prompt_logprobs (non-streamed) */
    const char *echo;      /* completions echo: the prompt text (borrowed) */
    double t_first, t_last;
    json_object *decode_ms;/* MindIE decode_time_arr */
    chat_out_t *co;        /* chat with a reasoning/tool-call parser, else NULL */
    int32_t pred_accepted; /* prediction tokens kept / rejected (DONE event) */
    int32_t pred_rejected;
} choice_t;

struct gen_fmt;

typedef struct {
    srv_t *s;
    http_req_t *r;
    const struct gen_fmt *fmt; /* NULL: OpenAI chunks and replies */
    void *fmt_ctx;         /* the format's state (owned by its handler) */
    bool lmi_finish;       /* chat finish_reason eos_token / stop_sequence */
    bool chat;
    const req_gen_t *gen;
    char id[64];
    int64_t created;
    const char *model;
    size_t n;
    choice_t *ch;
    double t0, last_tok, last_write;
    int32_t prompt_total;
    const req_sampling_t *sp;
    size_t per;            /* choices per prompt (n) */
    bool mindie;           /* MindIE extras (full_text streaming, timings) */
    bool prediction;       /* the request has a `prediction` (usage details) */
    char fingerprint[96];
} run_t;

/* An output format other than OpenAI's Chat Completions (api_tgi_out.c:
 * TGI and LMI; api_responses_out.c: OpenAI Responses; api_messages_out.c:
 * Anthropic Messages). With a format, the choices' text always accumulates
 * in choice_t.text (stop strings applied, the end token's text left out)
 * and the format writes everything the client sees through these hooks;
 * streaming, disconnects and cancellation stay with the runner. A chat run
 * with output parsers (chat_out) gives the format the parsed events:
 * on_text for the answer's text, on_chat for reasoning and tool calls, in
 * output order; on_token is then not called. Optional hooks may be NULL. */
typedef struct gen_fmt {
    /* An error before anything was sent: status, message, param, code. */
    void (*reply_error)(http_req_t *r, int status, const char *msg, const char *param, const char *code);
    /* Streaming: the response headers; -1 when the client is gone. */
    int (*stream_start)(run_t *g);
    /* Streaming: a keep-alive while waiting (NULL: the format has none). */
    int (*stream_ping)(run_t *g);
    /* Streaming: an error after the headers were sent. */
    void (*stream_error)(run_t *g, int status, const char *msg);
    /* Streaming: every choice ended. */
    void (*stream_done)(run_t *g);
    /* The prompt logprobs of choice idx (p stays the caller's). */
    void (*on_prompt)(run_t *g, size_t idx, const sched_prompt_lp_t *p, const int32_t *prompt);
    /* A generated token of choice idx, after its text went through the
     * stop-string matcher; last: it ends the choice (end token, stop
     * string, max_tokens). Optional. */
    void (*on_token)(run_t *g, size_t idx, const sched_event_t *ev, bool last);
    /* Answer text of choice idx that passed the stop-string matcher (also
     * appended to choice_t.text). Optional. */
    void (*on_text)(run_t *g, size_t idx, const char *p, size_t n);
    /* A reasoning or tool-call event of a parsed chat choice (never
     * CHAT_OUT_CONTENT: that comes through on_text). Optional. */
    void (*on_chat)(run_t *g, size_t idx, const chat_out_ev_t *ev);
    /* Choice idx ended: finish and text are final. */
    void (*on_end)(run_t *g, size_t idx);
    /* Not streaming: the reply, once every choice ended. */
    void (*reply)(run_t *g);
} gen_fmt_t;

/* An output format whose output is blocks (api_blocks.h: the Responses
 * and Anthropic Messages formats): its fmt_ctx starts with a blk_run_t and
 * these are its on_text, on_chat and on_end hooks (api_blocks.c). The list
 * is set up on first use, with `sink` and the blk_run_t as its context. */
typedef struct {
    run_t *run;               /* the run (set by every hook) */
    const blk_sink_t *sink;   /* the format's: set before the run */
    blk_list_t blk;
} blk_run_t;
blk_run_t *blk_run_of(run_t *g);
void blk_fmt_on_text(run_t *g, size_t idx, const char *p, size_t n);
void blk_fmt_on_chat(run_t *g, size_t idx, const chat_out_ev_t *ev);
void blk_fmt_on_end(run_t *g, size_t idx);

/* api_gen.c */
double now_s(void);
const char *finish_name(sched_finish_t f);
/* TGI / LMI names: "length", "eos_token" (end token or stop token id),
 * "stop_sequence" (stop string); NULL when cancelled or failed. */
const char *finish_name_lmi(const choice_t *c);
/* The finish_reason a choice reports: choice_finish_reason, or the LMI
 * names for chat under --lmi-finish-reasons (tool_calls stays). */
const char *run_finish_reason(const run_t *g, const choice_t *c);
/* Runs one generation (see api_gen.c): prompts[i] (n_prompts[i] tokens) for
 * i < n_in, `gen` controls, texts the prompt texts for echo (NULL: token
 * prompts), oc the chat output parsers (NULL: plain text), fmt/fmt_ctx an
 * output format (NULL: OpenAI's), gram the output
 * grammar (NULL: unconstrained; borrowed). Replies to r in every case. */
void gen_run(srv_t *s, http_req_t *r, bool chat, const req_gen_t *gen, int32_t **prompts, size_t *n_prompts,
             size_t n_in, char **texts, const chat_out_cfg_t *oc, const gen_fmt_t *fmt, void *fmt_ctx,
             grammar_t *gram);
/* A parsed chat request, rendered, tokenized and run (the middle of
 * /v1/chat/completions, shared by the APIs that translate to it: Responses,
 * Anthropic Messages): the model name is checked, the output parsers and
 * the grammar (tools, structured output) set up as for chat, then gen_run
 * with fmt (NULL: Chat Completions). Replies to r in every case (errors
 * through fmt->reply_error when there is a format). */
void api_chat_generate(srv_t *s, http_req_t *r, chat_req_t *q, const gen_fmt_t *fmt, void *fmt_ctx);
/* The prompt tokens of a parsed chat request (rendered with the generation
 * prompt; image parts become their rows and q->gen.media holds the images:
 * the caller releases it, sched_media_release); *ids malloc'd, caller
 * frees. -1 after replying the error. */
int api_chat_prompt(srv_t *s, http_req_t *r, chat_req_t *q, char **prompt, int32_t **ids, size_t *n);
/* One streamed chunk for choice idx: text (may be NULL), role (first chat
 * chunk), finish reason (last chunk). */
int emit_chunk(run_t *g, size_t idx, const char *text, size_t len, bool role, const char *finish);

/* One streamed chunk for choice idx with the given delta (taken). */
int emit_delta(run_t *g, size_t idx, json_object *delta);

/* api_chat_out.c: chat choices with reasoning / tool-call parsing
 * (chat_output.h). Content goes on through the stop-string matcher
 * (choice_feed); reasoning and tool calls go straight to the client
 * (streamed) or stay in c->co for the message (not streamed). */
/* A generated token (push false: the token's text is not output, e.g. the
 * EOS); true when a stop string matched in the content. */
bool chat_choice_token(run_t *g, size_t idx, int32_t token, bool push);
/* End of generation: releases what the parsers hold; true on a stop
 * string. */
bool chat_choice_finish(run_t *g, size_t idx);
/* finish_reason of choice c: "tool_calls" when it called tools and
 * ended on its own, else finish_name(). */
const char *choice_finish_reason(const choice_t *c);
/* The non-streamed message of a parsed chat choice (c->co != NULL). */
json_object *chat_choice_message(const choice_t *c);

/* api_choice.c: decoded text -> stop strings -> client, per choice */
void text_append(choice_t *c, const char *p, size_t n);
/* Text safe to send now: streamed at once or accumulated. */
void choice_deliver(run_t *g, size_t idx, const char *p, size_t n);
/* Feeds text through the stop-string matcher (flush: end of generation);
 * true when a stop string matched. */
bool choice_feed(run_t *g, size_t idx, const char *p, size_t n, bool flush);
/* Fixes the finish reason; streamed: sends the choice's last chunk. */
void choice_end(run_t *g, size_t idx, sched_finish_t why);
/* A TOKEN event: count, timings, logprobs, text; ends the choice (and
 * cancels its job) on a stop string. */
void choice_on_token(run_t *g, sched_chan_t *chan, size_t idx, const sched_event_t *ev);
/* A SCHED_EV_PROMPT event (takes p): prompt_logprobs / echo logprobs. */
void choice_on_prompt_lp(run_t *g, size_t idx, sched_prompt_lp_t *p, const int32_t *prompt);
/* Sampling parameters: the request's, else the server's defaults, else
 * OpenAI's. */
void gen_fill_sampling(const srv_t *s, const req_gen_t *gen, sampler_params_t *p);

#endif
