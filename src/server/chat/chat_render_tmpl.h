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
#include <time.h>

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
/* The same from a template source and the bos / eos token texts (may be
 * NULL), without a model (tests, tools). src NULL: ChatML. */
chat_tmpl_renderer_t *chat_tmpl_renderer_new(const char *src, const char *bos, const char *eos, char *note, size_t cap,
                                             bool *failed);
/* Fixes the clock strftime_now reads (0: the real time, the default); for
 * reproducible renders in tests. Not thread-safe: call before rendering. */
void chat_tmpl_renderer_set_now(chat_tmpl_renderer_t *r, time_t now);
/* The template source in use, NULL for ChatML. */
const char *chat_tmpl_renderer_source(const chat_tmpl_renderer_t *r);
/* The text parsers are detected from (reasoning_mode_detect,
 * toolcall_format_detect): the source, a newline and what the template
 * renders for a probe conversation with a tool call (so markup built from
 * variables shows); NULL for ChatML. */
const char *chat_tmpl_renderer_detect_text(const chat_tmpl_renderer_t *r);
/* What the template expects (chat_render_caps.h); NULL for ChatML. */
const struct chat_caps *chat_tmpl_renderer_caps(const chat_tmpl_renderer_t *r);
void chat_tmpl_renderer_free(chat_tmpl_renderer_t *r);

/* A chat_render_fn: ctx is a chat_tmpl_renderer_t (NULL: ChatML). Template
 * errors (including raise_exception) are LF_ERR_INVALID -> HTTP 400.
 * It renders with the interpreter's extensions (chat_template.h: list
 * append and from_json, which Kimi K2's and DeepSeek V3.2's templates use
 * and llama.cpp allows) the request's messages shaped for the template
 * (chat_render_caps.h: tool call arguments in the probed form, reasoning
 * under the names the template reads, developer -> system, ...), honours
 * add_generation_prompt and continue_final_message (as transformers: the
 * prompt is cut right after the last message's content, which must appear
 * in the rendered text). */
lf_code_t chat_tmpl_render(void *ctx, const chat_req_t *req, bool add_generation_prompt, char **out, lf_err_t *err);

#endif
