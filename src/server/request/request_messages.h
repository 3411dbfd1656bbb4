/* request_messages.h - the Anthropic Messages API request (POST
 * /v1/messages and /v1/messages/count_tokens), validated, and translated
 * into the typed chat request (request.h) the Chat Completions runner
 * serves: the Messages API is a thin layer over the same templates,
 * parsers, grammar engine and scheduler.
 *
 * Validation follows Anthropic (a 400 naming the field, in Anthropic's
 * error shape at the route): model (string), max_tokens (required integer
 * >= 1; not for count_tokens), messages (non-empty; role user or
 * assistant; content a string or blocks: text, image (base64 or url
 * source), tool_use (assistant), tool_result (user), thinking and
 * redacted_thinking (assistant); other block types are a 400), system (a
 * string or text blocks), tools (custom tools with an input_schema object;
 * Anthropic's server tools are a 400), tool_choice (auto, any, tool with a
 * name, none; disable_parallel_tool_use), stop_sequences, temperature
 * (0..1), top_p, top_k, thinking ({"type": "enabled", "budget_tokens": N}
 * with 1024 <= N < max_tokens, or {"type": "disabled"}), stream,
 * metadata.user_id.
 *
 * Translation: system -> a system message; a user message's tool_result
 * blocks -> tool messages (before its other blocks, a user message); an
 * assistant message's thinking -> reasoning_content, text -> content,
 * tool_use -> tool_calls (input as JSON text); image blocks -> image_url
 * parts (data: URLs for base64); a last assistant message is continued
 * (Anthropic's prefill: continue_final_message); tools -> function tools
 * (input_schema as parameters); tool_choice any -> "required", tool ->
 * a named function; stop_sequences -> stop; thinking -> the template's
 * enable_thinking and a reasoning_effort from the budget (< 4096 low,
 * < 16384 medium, else high); no thinking field -> enable_thinking false.
 *
 * Ownership: req_messages_free releases what parse allocated.
 */
#ifndef LF_REQUEST_MESSAGES_H
#define LF_REQUEST_MESSAGES_H

#include <stdbool.h>

#include "server/request/request.h"

typedef struct {
    chat_req_t chat;       /* the translated request */
    bool stream;
    bool thinking;         /* thinking enabled */
    bool prefill;          /* the last message is the assistant's, continued */
} req_messages_t;

/* count: parse for count_tokens (max_tokens not required, never streams).
 * 0, or -1 with *e filled. */
int req_messages_parse(const char *body, size_t len, bool count, const req_limits_t *lim, req_messages_t *out,
                       req_err_t *e);
void req_messages_free(req_messages_t *q);

#endif
