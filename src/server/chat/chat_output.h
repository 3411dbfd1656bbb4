/* chat_output.h - post-processing of one chat choice's generated tokens:
 * detokenize, split reasoning from content (reasoning.h), parse tool calls
 * out of the content (toolcall.h), and build the OpenAI message / streamed
 * deltas. The same code serves streamed and non-streamed requests: the
 * non-streamed message is the sum of the streamed events.
 *
 * Pipeline per token:
 *   token -> text: the incremental detokenizer without special tokens,
 *            except the control tokens an active parser needs (the
 *            `tokens` of its format description: "<think>", "[THINK]",
 *            "<|channel|>", "<tool_call>", "[TOOL_CALLS]", ...), which are
 *            given to the parser as their text. Other control tokens (EOS,
 *            ...) stay empty, and markup never reaches the user-visible
 *            fields: the parsers drop it.
 *         -> reasoning parser (mode NONE: all content)
 *         -> content -> tool-call parser (format NONE: all content)
 *         -> events: REASONING, CONTENT, TOOL_START, TOOL_ARGS, in output
 *            order, consecutive texts of one kind merged.
 * Stop strings, when the server matches them, must look at the CONTENT
 * events only (reasoning and call markup are not the answer).
 *
 * parallel_tool_calls false keeps only the first call (later calls are
 * dropped, streamed and not, as vLLM does).
 *
 * Ownership: one chat_out_t per choice, not thread-safe. Event texts, ids
 * and names stay valid until the next push/finish/free. Result accessors
 * are valid after finish, until free.
 */
#ifndef LF_CHAT_OUTPUT_H
#define LF_CHAT_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chat/parse/reasoning.h"
#include "chat/parse/toolcall.h"
#include "common/status.h"
#include "engine/vocab/vocab.h"

struct json_object;

typedef struct {
    const vocab_t *vocab;          /* for token pieces (may be NULL: text pushes only) */
    reasoning_mode_t reasoning;    /* REASONING_MODE_NONE: no split */
    bool starts_in_reasoning;      /* reasoning_starts_inside(prompt) */
    const char *reasoning_open;    /* REASONING_MODE_GENERIC: its markers */
    const char *reasoning_close;
    toolcall_format_t tools;       /* TOOLCALL_FORMAT_NONE: no tool parsing */
    struct json_object *tool_defs; /* the request's tools (parameter types; borrowed) */
    bool parallel_tool_calls;
    bool special;                  /* render every control token (skip_special_tokens false) */
    uint64_t seed;                 /* call ids */
} chat_out_cfg_t;

typedef enum {
    CHAT_OUT_REASONING = 0,
    CHAT_OUT_CONTENT,
    CHAT_OUT_TOOL_START,           /* index, id, name */
    CHAT_OUT_TOOL_ARGS             /* index, text: an arguments fragment */
} chat_out_kind_t;

typedef struct {
    chat_out_kind_t kind;
    int32_t index;                 /* tool events: call index; else -1 */
    const char *text;              /* REASONING/CONTENT/TOOL_ARGS */
    size_t len;
    const char *id, *name;         /* TOOL_START, NUL-terminated */
} chat_out_ev_t;

typedef struct chat_out chat_out_t;

/* NULL + err (LF_ERR_NOMEM, LF_ERR_INVALID for a bad mode/format). */
chat_out_t *chat_out_create(const chat_out_cfg_t *cfg, lf_err_t *err);
void chat_out_free(chat_out_t *co); /* accepts NULL */

/* Feeds one generated token (or text, for tests and the flush); *evs and *n
 * receive the events decided now. Errors: LF_ERR_NOMEM, LF_ERR_INVALID
 * (bad token id). */
lf_code_t chat_out_push_token(chat_out_t *co, int32_t token, const chat_out_ev_t **evs, size_t *n, lf_err_t *err);
lf_code_t chat_out_push_text(chat_out_t *co, const char *text, size_t len, const chat_out_ev_t **evs, size_t *n,
                             lf_err_t *err);
/* End of generation: releases everything held back. */
lf_code_t chat_out_finish(chat_out_t *co, const chat_out_ev_t **evs, size_t *n, lf_err_t *err);

/* Results (complete after finish). Texts are NULL when empty. */
const char *chat_out_reasoning(const chat_out_t *co, size_t *len);
const char *chat_out_content(const chat_out_t *co, size_t *len);
size_t chat_out_n_calls(const chat_out_t *co);
bool chat_out_call(const chat_out_t *co, size_t i, toolcall_call_t *call);
int32_t chat_out_reasoning_tokens(const chat_out_t *co);
bool chat_out_reasoning_on(const chat_out_t *co);
bool chat_out_tools_on(const chat_out_t *co);

/* The non-streamed message {role, [reasoning_content], content, tool_calls}
 * (content null when a parser is on and there is no text outside the
 * calls; reasoning_content only when a reasoning parser is on, null when
 * empty). New object, caller puts it. NULL on allocation failure. */
struct json_object *chat_out_message_json(const chat_out_t *co);
/* Same with the content given (the server's content after stop strings;
 * NULL or len 0: none). */
struct json_object *chat_out_message_json_content(const chat_out_t *co, const char *content, size_t len);

/* The streamed delta for one event: {"reasoning_content": t},
 * {"content": t}, {"tool_calls": [{index, id, type, function: {name,
 * arguments: ""}}]} or {"tool_calls": [{index, function: {arguments: t}}]}.
 * New object, caller puts it. */
struct json_object *chat_out_delta_json(const chat_out_ev_t *ev);

#endif
