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

#include <stddef.h>

#include "engine/model.h"
#include "server/chat_render.h"

typedef struct chat_tmpl_renderer chat_tmpl_renderer_t;

/* NULL only on allocation failure; note (cap bytes) says what is used. */
chat_tmpl_renderer_t *chat_tmpl_renderer_create(const model_t *m, char *note, size_t cap);
/* The same with the template source `override` (e.g. a --chat-template
 * file) instead of the model's; NULL: the model's. */
chat_tmpl_renderer_t *chat_tmpl_renderer_create_with(const model_t *m, const char *override, char *note, size_t cap);
void chat_tmpl_renderer_free(chat_tmpl_renderer_t *r);

/* A chat_render_fn: ctx is a chat_tmpl_renderer_t (NULL: ChatML). Template
 * errors (including raise_exception) are LF_ERR_INVALID -> HTTP 400. */
lf_code_t chat_tmpl_render(void *ctx, const chat_req_t *req, bool add_generation_prompt, char **out, lf_err_t *err);

#endif
