/* chat_render_tmpl.h - the model's own chat template (tokenizer.chat_template,
 * rendered by the chat module's Jinja interpreter) as the server's chat
 * renderer, with the ChatML layout as fallback.
 *
 * chat_tmpl_renderer_create compiles the template once at start-up (a model
 * without a template, or one that does not compile, falls back to ChatML and
 * says so in `note`); chat_tmpl_render is a chat_render_fn whose ctx is the
 * renderer. The renderer is immutable after creation, so acceptor threads
 * render concurrently. Free with chat_tmpl_renderer_free (accepts NULL).
 */
#ifndef LF_CHAT_RENDER_TMPL_H
#define LF_CHAT_RENDER_TMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/model/model.h"
#include "server/chat/chat_render.h"

typedef struct chat_tmpl_renderer chat_tmpl_renderer_t;

/* NULL only on allocation failure; note (cap bytes) says what is used. */
chat_tmpl_renderer_t *chat_tmpl_renderer_create(const model_t *m, char *note, size_t cap);
/* Same with an override template source (--chat-template; NULL: the
 * model's). An override that does not compile is an error: NULL with the
 * reason in note (the caller refuses to start); *failed tells it apart from
 * allocation failure. */
chat_tmpl_renderer_t *chat_tmpl_renderer_create_src(const model_t *m, const char *override_src, char *note,
                                                    size_t cap, bool *failed);
/* The template source in use (for parser detection), NULL for ChatML. */
const char *chat_tmpl_renderer_source(const chat_tmpl_renderer_t *r);
void chat_tmpl_renderer_free(chat_tmpl_renderer_t *r);

/* A chat_render_fn: ctx is a chat_tmpl_renderer_t (NULL: ChatML). Template
 * errors (including raise_exception) are LF_ERR_INVALID -> HTTP 400.
 * With req->ext (request_chat.h) it renders the normalized messages (tool
 * call arguments as objects), gives `developer` messages to the template as
 * `system` when the template never mentions "developer", honours
 * add_generation_prompt and continue_final_message (as transformers: the
 * prompt is cut right after the last message's content, which must appear
 * in the rendered text). */
lf_code_t chat_tmpl_render(void *ctx, const chat_req_t *req, bool add_generation_prompt, char **out, lf_err_t *err);

#endif
