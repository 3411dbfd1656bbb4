/* api_constraint.h - the grammar that constrains a generation request:
 * its structured-output field (request_format.h), the forced tool calls of
 * tool_choice "required" / a named function, the arguments of calls the
 * model starts in "auto" mode when a function is strict, all after the
 * reasoning block when a reasoning parser is on. Grammars are cached by
 * content in the server's grammar engine.
 */
#ifndef LF_API_CONSTRAINT_H
#define LF_API_CONSTRAINT_H

#include "grammar/grammar.h"
#include "server/chat/chat_output.h"
#include "server/request/request.h"
#include "server/server.h"

/* *out: the grammar (a reference the caller releases) or NULL when the
 * request is unconstrained. chat / oc: the chat request and its output
 * parsers, NULL for completions. On a bad or unenforceable constraint it
 * replies 400 (param: the field) and returns -1. */
int api_constraint_build(srv_t *s, http_req_t *r, const req_gen_t *gen, const chat_req_t *chat,
                         const chat_out_cfg_t *oc, grammar_t **out);

#endif
