/* chat_render.h - turning chat messages into a prompt string.
 *
 * The server calls a chat_render_fn; the default is chat_render_chatml, the
 * ChatML layout used when the model has no usable template:
 *   <|im_start|>ROLE\nCONTENT<|im_end|>\n ... <|im_start|>assistant\n
 * ("developer" is rendered as "system"). The chat-template module plugs in
 * here: set srv_t.render to a function that runs the model's
 * tokenizer.chat_template and falls back to ChatML when it cannot.
 *
 * The prompt is malloc'd into *out (caller frees).
 */
#ifndef LF_CHAT_RENDER_H
#define LF_CHAT_RENDER_H

#include <stdbool.h>

#include "common/status.h"
#include "engine/model.h"
#include "server/request.h"

typedef lf_code_t (*chat_render_fn)(const model_t *m, const chat_msg_t *msgs, size_t n,
                                    bool add_generation_prompt, char **out, lf_err_t *err);

lf_code_t chat_render_chatml(const model_t *m, const chat_msg_t *msgs, size_t n,
                             bool add_generation_prompt, char **out, lf_err_t *err);

#endif
