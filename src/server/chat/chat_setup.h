/* chat_setup.h - the server's chat configuration: at start-up the chat
 * template (--chat-template FILE or the model's, ChatML with a warning when
 * there is none; what it expects of the messages is probed then, see
 * chat_render_caps.h), and the reasoning and tool-call parsers
 * (--reasoning-parser, --tool-call-parser; by default detected from the
 * template in use with reasoning_mode_detect / toolcall_format_detect;
 * ChatML: none; --reasoning-start / --reasoning-end give the generic
 * parser's markers); per request, the output parsers' configuration.
 */
#ifndef LF_CHAT_SETUP_H
#define LF_CHAT_SETUP_H

#include "server/chat/chat_output.h"
#include "server/chat/chat_render_tmpl.h"
#include "server/server.h"

/* Fills s->render / s->render_ctx / s->reasoning / s->tool_format from cfg
 * (the parser names must be valid or NULL/"" = detect; cmd_serve checks
 * them). Logs what is used on stderr. Returns 0 and the renderer in *out
 * (free with chat_tmpl_renderer_free after serving), or -1 after printing
 * why (unreadable or non-compiling --chat-template, out of memory). */
int srv_chat_setup(srv_t *s, const srv_config_t *cfg, chat_tmpl_renderer_t **out);

/* The output parsers of one chat request whose prompt rendered to `prompt`:
 * the server's reasoning parser (starting inside the reasoning when the
 * prompt opened it), and its tool-call parser when the request has tools
 * and tool_choice is not "none" (parameters typed by the request's tools);
 * parallel_tool_calls. *parse is false when neither parser applies (the
 * plain text path). Returns false when the request has tools but the server
 * parses no tool calls (the caller answers 400, as vLLM). */
bool srv_chat_out_config(const srv_t *s, const chat_req_t *q, const char *prompt, chat_out_cfg_t *oc, bool *parse);

#endif
