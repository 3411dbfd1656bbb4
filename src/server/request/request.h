/* request.h - typed API requests, parsed and validated from JSON bodies.
 *
 * json-c stays inside request.c: handlers see only these structs. Every
 * validation failure fills a req_err_t (HTTP status, message, the offending
 * `param`, an optional `code`) that maps 1:1 onto the OpenAI error body.
 *
 * The decoding controls (top_p, stop, logprobs, n, ...) are parsed by
 * request_sampling.c into req_gen_t.samp, the structured-output fields
 * (response_format, guided_*, ...) by request_format.c into
 * req_gen_t.constraint. Fields this server does not implement (functions,
 * ...) are rejected with 400 naming the parameter unless they carry their
 * neutral value, never silently ignored.
 * Unknown fields are ignored, as vLLM does.
 *
 * The body must be valid UTF-8 and a JSON object (req_json.h, shared with
 * every parser); integers are checked against their real range.
 *
 * Ownership: req_*_parse allocate everything inside the struct; the matching
 * req_*_free releases it (accepts a zeroed struct).
 */
#ifndef LF_REQUEST_H
#define LF_REQUEST_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/request/req_json.h"
#include "server/request/request_format.h"
#include "server/request/request_sampling.h"

typedef struct req_err {
    int status;          /* 400, 404, 413 ... */
    char param[64];      /* "" -> null */
    char code[48];       /* "" -> null */
    char msg[512];
} req_err_t;

/* Generation controls shared by chat and completions. */
typedef struct {
    char *model;          /* NULL when absent */
    int32_t max_tokens;   /* -1: up to the end of the context */
    bool stream;
    bool include_usage;   /* stream_options.include_usage */
    bool continuous_usage;/* stream_options.continuous_usage_stats */
    float temperature;    /* default 1 (OpenAI) */
    bool has_seed;
    uint64_t seed;
    req_sampling_t samp;  /* every other decoding control (request_sampling.h) */
    req_constraint_t constraint; /* structured output (request_format.h) */
    struct sched_media *media; /* the prompt's images: set by the handler
                                  after parsing (not a request field), owned
                                  by it; gen_run passes it to the jobs */
} req_gen_t;

typedef enum {
    CHAT_ROLE_SYSTEM,
    CHAT_ROLE_DEVELOPER,
    CHAT_ROLE_USER,
    CHAT_ROLE_ASSISTANT,
    CHAT_ROLE_TOOL
} chat_role_t;

typedef struct {
    chat_role_t role;
    char *content;        /* text parts joined; "" when null */
    char *name;           /* NULL when absent */
} chat_msg_t;

struct json_object;

/* An image content part (issue 29): image_url.url as sent (borrowed from
 * chat_req_t.raw) and the part's name for errors. The message's content
 * holds CHAT_MEDIA_MARKER where the image goes. */
#define CHAT_MEDIA_MARKER "<__media__>"
typedef struct {
    const char *url;
    char param[64];      /* "messages[i].content[j]" */
} chat_image_t;

typedef struct {
    req_gen_t gen;
    chat_msg_t *msgs;
    size_t n_msgs;
    chat_image_t *images; /* image parts in order (n_images of them) */
    size_t n_images;
    /* The whole parsed request body (owned; freed by req_chat_free), for
     * renderers that need more than the typed messages: a Jinja chat
     * template gets messages with tool_calls, tools, chat_template_kwargs. */
    struct json_object *raw;
    /* tools, tool_choice, template switches (request_chat.h); NULL when
     * only the messages were parsed (/tokenize) */
    struct chat_ext *ext;
} chat_req_t;

typedef struct {
    req_gen_t gen;
    size_t n_prompts;
    char **texts;         /* n_prompts strings, or NULL for token prompts */
    int32_t **toks;       /* n_prompts arrays, or NULL for text prompts */
    size_t *n_toks;
} cmpl_req_t;

typedef enum { REQ_KIND_CHAT, REQ_KIND_COMPLETION, REQ_KIND_TGI, REQ_KIND_NONE } req_kind_t;

/* Server limits that integer fields are checked against, so a 400 names
 * the real range ("'n' must be an integer from 1 to 16"). */
typedef struct req_limits {
    int32_t max_n;       /* largest `n` (<= 0: INT32_MAX) */
} req_limits_t;

/* Both return 0 or -1 with *e filled. The plain forms check integers
 * against their type's range only; the _limited forms against lim. */
int req_chat_parse(const char *body, size_t len, chat_req_t *out, req_err_t *e);
int req_cmpl_parse(const char *body, size_t len, cmpl_req_t *out, req_err_t *e);
int req_chat_parse_limited(const char *body, size_t len, const req_limits_t *lim, chat_req_t *out, req_err_t *e);
int req_cmpl_parse_limited(const char *body, size_t len, const req_limits_t *lim, cmpl_req_t *out, req_err_t *e);
/* A chat request from its JSON object o (taken: owned by out, put on
 * failure too), with the same checks as req_chat_parse_limited; lim may be
 * NULL. For the APIs that translate their requests into a chat request
 * (Responses, Anthropic Messages). */
int req_chat_from_json(struct json_object *o, const req_limits_t *lim, chat_req_t *out, req_err_t *e);
void req_chat_free(chat_req_t *r);
void req_cmpl_free(cmpl_req_t *r);

/* SageMaker /invocations: "messages" -> chat, "prompt" -> completion,
 * "inputs" -> TGI / LMI text generation (request_tgi.h), else
 * REQ_KIND_NONE (also for a body that is not a JSON object). */
req_kind_t req_sniff_kind(const char *body, size_t len);

/* /tokenize: {"prompt": str} or {"messages": [...]}, add_special_tokens.
 * /detokenize: {"tokens": [ids]}. */
typedef struct {
    char *model;
    char *prompt;          /* NULL when messages were given */
    chat_req_t chat;       /* messages (chat.n_msgs > 0) */
    bool add_special;      /* default true for prompt, false for messages */
    bool add_generation_prompt;
} tokenize_req_t;
int req_tokenize_parse(const char *body, size_t len, tokenize_req_t *out, req_err_t *e);
void req_tokenize_free(tokenize_req_t *r);

typedef struct {
    char *model;
    int32_t *toks;
    size_t n_toks;
} detok_req_t;
int req_detok_parse(const char *body, size_t len, detok_req_t *out, req_err_t *e);
void req_detok_free(detok_req_t *r);

const char *chat_role_name(chat_role_t r);

/* req_err_set / req_err_vset (req_json.h, included above) fill *e
 * (param / code NULL: none; the message printf-style, cut at a character)
 * and return -1. */

/* The body as one JSON object (the same checks every parser applies:
 * valid JSON, an object, no trailing data); NULL with *e filled (400).
 * The caller owns the result (json_object_put). */
struct json_object *req_json_object(const char *body, size_t len, req_err_t *e);

#endif
