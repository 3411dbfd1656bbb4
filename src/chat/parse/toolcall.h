/* toolcall.h - incremental tool-call parsers for model output.
 *
 * The server feeds the decoded content text of each generated token (after
 * the reasoning parser: tool calls are looked for in content only) and gets
 * back, per push, an ordered list of events in OpenAI's streaming shape:
 *   TOOLCALL_EV_CONTENT  text outside calls (delta.content);
 *   TOOLCALL_EV_START    a new call: index, id, name (the server sends
 *                        {index, id, type:"function", function:{name,
 *                        arguments:""}});
 *   TOOLCALL_EV_ARGS     a fragment of that call's arguments (function.
 *                        arguments); the fragments of one call concatenate
 *                        to exactly its final arguments string.
 * After toolcall_finish() the whole result is available: the calls (id,
 * name, arguments) and the content (concatenation of the CONTENT events).
 * The non-streamed result is by construction the streamed one: the parser
 * is a byte-wise state machine, so its output does not depend on how the
 * text was split into pieces (token by token, two halves, byte by byte).
 *
 * Formats (names as vLLM's --tool-call-parser):
 *   hermes       <tool_call>{"name": N, "arguments": {...}}</tool_call>, any
 *                number of them, text around them is content. A block
 *                that is not a valid call is content, its "</tool_call>"
 *                included (malformed output is returned, not dropped); any
 *                other stray "</tool_call>" is dropped. A missing "</tool_call>" after a complete object
 *                is tolerated (generation often stops there). Several
 *                objects inside one block (separated by whitespace) are
 *                several calls.
 *   llama3_json  the whole message is the call(s): optional leading
 *                whitespace and "<|python_tag|>", then {"name": N,
 *                "parameters": {...}} objects separated by whitespace or ';'.
 *                Only the keys name, parameters/arguments and type are
 *                allowed in the object (so a JSON answer to the user such as
 *                {"name": "Ann", "age": 3} is content); the arguments key is
 *                required. Text after the calls is content; a message that
 *                does not start (after whitespace) with "<|python_tag|>" or
 *                "{" is all content.
 *   mistral      [TOOL_CALLS][{"name": N, "arguments": {...}}, ...] (a bare
 *                object after [TOOL_CALLS] is accepted too), and the v11
 *                tokenizer form [TOOL_CALLS]N[ARGS]{...} (N made of
 *                [A-Za-z0-9_.-], one call per [TOOL_CALLS]); text before and
 *                after is content. [TOOL_CALLS] and [ARGS] are control
 *                tokens: the detokenizer must render them for this parser.
 *   In every format the arguments key may be "arguments" or "parameters",
 *   its value must be a JSON object, or a JSON string whose text is an
 *   object (some fine-tunes write "arguments": "{\"a\": 1}"; the object
 *   inside is used, and that call is announced when the string closes);
 *   other keys are ignored (hermes, mistral), and hermes/mistral accept a
 *   missing arguments key as "{}".
 *
 * Arguments string: the model's own JSON text of the arguments object with
 * the whitespace outside strings removed (compact), validated with json-c
 * when the object closes. It is not re-serialised by json-c, because
 * re-serialising rewrites escapes and numbers and the streamed fragments
 * (which must be sent before the object is complete) could then not add up
 * to it. JSON strings are tracked with their escapes, so "</tool_call>" or
 * "]" inside a string never ends a call.
 *
 * When is text a call (commit point): a call is announced (START) once its
 * name is complete and its arguments object has begun (or, for an object
 * without arguments, when the object closes). Before that, everything since
 * the opening markup is held back; if it turns out not to be a call (not
 * JSON, no name, a name that is not a string, arguments that are not an
 * object, an unknown key for llama3_json, end of output) the held text is
 * released verbatim as content, markup included, and parsing goes on after
 * it. After the commit the call stays a call: if its JSON breaks later (or
 * the output ends inside the arguments) the call keeps the arguments sent so
 * far and is marked incomplete (complete == false), and the text after the
 * break is content.
 *
 * Whitespace: whitespace right before a call's markup and right after a
 * call is dropped, so an answer made only of calls has no content (NULL);
 * other whitespace is kept, but trailing whitespace of content is held back
 * until the next non-space byte or finish decides it.
 *
 * Ids: "call_" + 24 characters of [A-Za-z0-9]; for mistral, 9 characters
 * of [A-Za-z0-9] and no prefix, because Mistral's chat templates raise
 * "Tool call IDs should be alphanumeric strings with length 9!" when the
 * call comes back in the next request (vLLM does the same). Drawn from the
 * caller's rng callback when given (one draw per character), else from an
 * internal splitmix64 seeded with cfg.seed (a seeded request gives
 * reproducible ids).
 *
 * Typical use (one choice): text -> reasoning_push (reasoning.h) -> its
 * content segments -> toolcall_push -> events to SSE chunks; at the end
 * reasoning_finish, toolcall_push of its content, toolcall_finish. When
 * toolcall_count() > 0 the choice's finish_reason is "tool_calls" (unless
 * the server decides "length"); message.content is toolcall_content()
 * (JSON null when NULL).
 *
 * Ownership and threads: one toolcall_t per choice of one request; not
 * thread-safe. Event texts, ids and names point into the parser and are
 * valid until the next push/finish/free; so are the call views of
 * toolcall_get (after finish: until free). Memory grows with the output
 * (content and arguments are kept for the result, text before a commit is
 * held), so it is bounded by the request's max_tokens.
 */
#ifndef LF_TOOLCALL_H
#define LF_TOOLCALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

typedef enum {
    TOOLCALL_FORMAT_NONE = 0, /* no parsing: everything is content */
    TOOLCALL_FORMAT_HERMES,
    TOOLCALL_FORMAT_LLAMA3_JSON,
    TOOLCALL_FORMAT_MISTRAL
} toolcall_format_t;

typedef struct {
    toolcall_format_t format;
    /* Random source for call ids: returns 64 random bits. NULL: internal
     * splitmix64 seeded with seed. */
    uint64_t (*rng)(void *ctx);
    void *rng_ctx;
    uint64_t seed;
} toolcall_config_t;

typedef enum {
    TOOLCALL_EV_CONTENT = 0,
    TOOLCALL_EV_START,
    TOOLCALL_EV_ARGS
} toolcall_ev_kind_t;

typedef struct {
    toolcall_ev_kind_t kind;
    int32_t index;    /* START/ARGS: call index (0, 1, ...); CONTENT: -1 */
    const char *text; /* CONTENT: text; ARGS: fragment; START: NULL */
    size_t len;
    const char *id;   /* START: NUL-terminated id (see "Ids"); else NULL */
    const char *name; /* START: NUL-terminated function name; else NULL */
} toolcall_event_t;

typedef struct {
    const toolcall_event_t *events; /* in output order; valid until next call */
    size_t n;
} toolcall_out_t;

typedef struct {
    const char *id;        /* NUL-terminated, see "Ids" */
    const char *name;      /* decoded function name (JSON escapes applied) */
    const char *arguments; /* compact JSON text, NUL-terminated */
    size_t arguments_len;
    bool complete;         /* arguments object closed and valid JSON */
} toolcall_call_t;

typedef struct toolcall toolcall_t;

#define TOOLCALL_ID_LEN 29         /* strlen("call_") + 24 */
#define TOOLCALL_ID_LEN_MISTRAL 9  /* mistral ids: 9 alphanumerics */

/* Creates a parser. NULL + err: LF_ERR_INVALID (unknown format),
 * LF_ERR_NOMEM. */
toolcall_t *toolcall_create(const toolcall_config_t *cfg, lf_err_t *err);
void toolcall_free(toolcall_t *tc); /* accepts NULL */

/* Feeds len bytes (0 is fine); *out receives the events decided now.
 * LF_ERR_NOMEM when a buffer cannot grow (out is then empty and the parser
 * is unusable except for free). After finish, pushed text is content. */
lf_code_t toolcall_push(toolcall_t *tc, const char *piece, size_t len,
                        toolcall_out_t *out, lf_err_t *err);

/* End of output: releases what is held (see "commit point") and closes an
 * open call. Errors as push. */
lf_code_t toolcall_finish(toolcall_t *tc, toolcall_out_t *out, lf_err_t *err);

/* Calls announced so far (all of them after finish; arguments and
 * complete are final only after finish). */
size_t toolcall_count(const toolcall_t *tc);
/* Fills *call for call i < toolcall_count(); returns false otherwise. */
bool toolcall_get(const toolcall_t *tc, size_t i, toolcall_call_t *call);

/* All content released so far (NUL-terminated, *len set when len != NULL),
 * or NULL when no content byte was released. */
const char *toolcall_content(const toolcall_t *tc, size_t *len);

/* Non-streaming convenience: create, push the whole text, finish. Returns
 * the finished parser (caller frees) or NULL + err. */
toolcall_t *toolcall_parse(const toolcall_config_t *cfg, const char *text, size_t len,
                           lf_err_t *err);

/* Format for a chat template text, documented rules, first match wins:
 *   "<tool_call>"                          -> HERMES (Hermes, Qwen2.5/3)
 *   "[TOOL_CALLS]"                         -> MISTRAL
 *   "<function=", ">>>" or "functools"     -> NONE (functionary v3.1/v3.2,
 *                                            firefunction v2: other formats)
 *   "<|python_tag|>"                       -> LLAMA3_JSON
 *   "<|start_header_id|>" and "parameters" -> LLAMA3_JSON (Llama 3.1+
 *                                            JSON tool prompt)
 *   otherwise                              -> NONE */
toolcall_format_t toolcall_format_detect(const char *tmpl, size_t len);

/* "none" / "hermes" / "llama3_json" / "mistral" <-> format. from_name
 * returns LF_ERR_INVALID (message lists the names) for anything else. */
lf_code_t toolcall_format_from_name(const char *name, toolcall_format_t *fmt, lf_err_t *err);
const char *toolcall_format_name(toolcall_format_t fmt);

#endif
