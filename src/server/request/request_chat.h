/* request_chat.h - the chat-only request fields: tools, tool_choice,
 * parallel_tool_calls, chat_template_kwargs, add_generation_prompt,
 * continue_final_message, documents, and the per-message tool fields
 * (assistant tool_calls, tool messages' tool_call_id).
 *
 * req_chat_parse (request.c) calls req_chat_ext_parse after the common
 * fields; the result hangs off chat_req_t.ext. Validation follows vLLM /
 * OpenAI: every failure is a 400 naming the `param`:
 *   - tools: an array of {"type":"function","function":{"name": non-empty
 *     string, "description"?: string, "parameters"?: object}}; an empty
 *     array is an error;
 *   - tool_choice: "none" | "auto" | "required" | {"type":"function",
 *     "function":{"name": N}}; N must name one of the tools; any value other
 *     than "none" needs tools;
 *   - parallel_tool_calls: boolean (default true);
 *   - add_generation_prompt (default true) and continue_final_message
 *     (default false) are booleans, not both true; continue_final_message
 *     needs a last message from the assistant;
 *   - chat_template_kwargs: an object; documents: an array of objects;
 *   - reasoning_effort: OpenAI's "none", "minimal", "low", "medium", "high"
 *     or "xhigh" (given to templates that read the variable; see
 *     chat_render_tmpl.h);
 *   - messages: a tool message needs a string tool_call_id; an assistant
 *     message's tool_calls is an array of {"id"?: string, "type"?:
 *     "function", "function": {"name": string, "arguments": string}};
 *     its content may then be null.
 * How the messages are shaped for the chat template (arguments as objects
 * or strings, ...) is the renderer's business (chat_render_tmpl.h).
 *
 * Ownership: the chat_ext_t and everything in it belong to the chat_req_t;
 * req_chat_ext_free (called by req_chat_free) releases them (NULL is fine).
 */
#ifndef LF_REQUEST_CHAT_H
#define LF_REQUEST_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include "server/request/request.h"

typedef enum {
    TOOL_CHOICE_AUTO = 0,   /* default when tools are given */
    TOOL_CHOICE_NONE,       /* also the default without tools */
    TOOL_CHOICE_REQUIRED,
    TOOL_CHOICE_NAMED       /* tool_name */
} tool_choice_t;

typedef struct chat_ext {
    size_t n_tools;                 /* function tools in the request */
    tool_choice_t tool_choice;
    char *tool_name;                /* TOOL_CHOICE_NAMED: the function */
    bool parallel_tool_calls;       /* default true */
    bool add_generation_prompt;     /* default true */
    bool continue_final_message;    /* default false */
    char *reasoning_effort;         /* NULL when not given */
} chat_ext_t;

/* Parses the fields above from the request object `o` (a json_object *)
 * into r->ext. Returns 0, or -1 with *e filled (r->ext may then be set and
 * is freed by req_chat_free). */
int req_chat_ext_parse(struct json_object *o, chat_req_t *r, req_err_t *e);
void req_chat_ext_free(chat_ext_t *x);

/* Whether the output of this request is parsed for tool calls: tools given
 * and tool_choice is not "none". NULL ext: false. */
bool req_chat_wants_tools(const chat_ext_t *x);

#endif
