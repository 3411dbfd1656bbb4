/* chat_setup.h - the server's chat configuration at start-up: the chat
 * template (--chat-template FILE or the model's, ChatML with a warning when
 * there is none), and the reasoning and tool-call parsers (--reasoning-parser,
 * --tool-call-parser; by default detected from the template in use with
 * reasoning_mode_detect / toolcall_format_detect; ChatML: none).
 */
#ifndef LF_CHAT_SETUP_H
#define LF_CHAT_SETUP_H

#include "server/chat/chat_render_tmpl.h"
#include "server/server.h"

/* Fills s->render / s->render_ctx / s->reasoning / s->tool_format from cfg
 * (the parser names must be valid or NULL/"" = detect; cmd_serve checks
 * them). Logs what is used on stderr. Returns 0 and the renderer in *out
 * (free with chat_tmpl_renderer_free after serving), or -1 after printing
 * why (unreadable or non-compiling --chat-template, out of memory). */
int srv_chat_setup(srv_t *s, const srv_config_t *cfg, chat_tmpl_renderer_t **out);

#endif
