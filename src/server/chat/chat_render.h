/* chat_render.h - turning a chat request into a prompt string.
 *
 * The server calls srv_t.render(srv_t.render_ctx, request, ...). The default
 * is chat_render_chatml, the ChatML layout used when the model has no usable
 * template:
 *   <|im_start|>ROLE\nCONTENT<|im_end|>\n ... <|im_start|>assistant\n
 * ("developer" is rendered as "system").
 *
 * Plugging in the chat-template module: at start-up compile the model's
 * tokenizer.chat_template once (model_chat_template), put the compiled
 * template in render_ctx, and set render to a function that builds the
 * context from req->raw (the whole request JSON: messages with tool_calls,
 * tools, chat_template_kwargs) plus bos/eos token texts and renders it;
 * fall back to chat_render_chatml when the model has no template or it
 * does not compile. A renderer must be thread-safe (acceptors call it
 * concurrently) and may fail with LF_ERR_INVALID (-> HTTP 400).
 *
 * The prompt is malloc'd into *out (caller frees).
 */
#ifndef LF_CHAT_RENDER_H
#define LF_CHAT_RENDER_H

#include <stdbool.h>

#include "common/status.h"
#include "server/request/request.h"

typedef lf_code_t (*chat_render_fn)(void *ctx, const chat_req_t *req, bool add_generation_prompt, char **out,
                                    lf_err_t *err);

/* ctx is unused (may be NULL). */
lf_code_t chat_render_chatml(void *ctx, const chat_req_t *req, bool add_generation_prompt, char **out,
                             lf_err_t *err);

#endif
