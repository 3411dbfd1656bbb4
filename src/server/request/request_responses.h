/* request_responses.h - the OpenAI Responses API request (POST
 * /v1/responses), parsed and validated, and its translation into the
 * typed chat request (request.h) that the Chat Completions runner serves:
 * the Responses API is a thin layer over the same templates, parsers,
 * grammar engine and scheduler.
 *
 * req_responses_parse checks every field it knows (400 naming the field:
 * "input[2].content[0].type", "tools[0].name", "text.format.schema", ...):
 *   - input: a string (one user message) or an array of items: messages
 *     (type "message" or none; role user / system / developer / assistant;
 *     content a string or input_text / output_text / refusal / input_image
 *     parts), function_call, function_call_output and reasoning items;
 *     other item types are a 400 (item_reference: use
 *     previous_response_id);
 *   - instructions, previous_response_id, store (default true), background,
 *     stream, metadata (at most 16 string values), tools (function tools
 *     only), tool_choice, parallel_tool_calls, text.format (text,
 *     json_object, json_schema), reasoning.effort / summary,
 *     max_output_tokens, temperature, top_p, user, truncation, include;
 *     conversation and prompt (other OpenAI features) are a 400.
 * The input items come out normalized (req_responses_t.input): every item
 * has its `type` and an `id` (made from id_base when absent), a message's
 * content is an array of parts, so stored items read back as OpenAI lists
 * them (GET /v1/responses/{id}/input_items).
 *
 * req_responses_chat turns a conversation (items: the stored context of
 * previous_response_id, its output, then this input) plus the request's
 * fields into a chat request: instructions as the first system message;
 * consecutive assistant-side items (message, reasoning, function_call) as
 * one assistant message with reasoning_content and tool_calls;
 * function_call_output as tool messages; tools as chat function tools
 * (strict defaults to true, as OpenAI); text.format as response_format;
 * reasoning.effort as reasoning_effort; max_output_tokens as
 * max_completion_tokens. The vLLM-style extras chat accepts (seed, top_k,
 * min_p, repetition_penalty, frequency_penalty, presence_penalty, stop,
 * chat_template_kwargs, ignore_eos, min_tokens) pass through with the chat
 * parser's checks.
 *
 * Ownership: req_responses_free releases everything parse allocated (a
 * zeroed struct is fine); string fields point into `raw`.
 */
#ifndef LF_REQUEST_RESPONSES_H
#define LF_REQUEST_RESPONSES_H

#include <stdbool.h>
#include <stdint.h>

#include "server/request/request.h"

struct json_object;

typedef struct {
    struct json_object *raw;      /* the whole body (owned) */
    struct json_object *input;    /* normalized input items (owned array) */
    const char *model;            /* NULL when absent */
    const char *instructions;     /* NULL when absent */
    const char *previous_response_id;
    bool store;                   /* default true */
    bool stream;
    bool background;
    int32_t max_output_tokens;    /* -1: none */
} req_responses_t;

/* 0, or -1 with *e filled (400). id_base: a hex string from which missing
 * item ids are made ("msg_<id_base>_<n>"). */
int req_responses_parse(const char *body, size_t len, const char *id_base, req_responses_t *out, req_err_t *e);
void req_responses_free(req_responses_t *q);

/* The chat request for conversation `items` (a JSON array of normalized
 * items; borrowed) under the fields of q. 0, or -1 with *e filled. */
int req_responses_chat(const req_responses_t *q, struct json_object *items, const req_limits_t *lim, chat_req_t *out,
                       req_err_t *e);

#endif
