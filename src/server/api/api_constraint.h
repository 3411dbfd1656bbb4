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

/* The grammar of a structured-output field alone (no tools, no reasoning
 * block), for endpoints that answer errors in their own shape (TGI's
 * `grammar`). A new reference, or NULL with *e filled (LF_ERR_UNSUPPORTED:
 * a keyword the engine cannot enforce, LF_ERR_NOMEM, else the reason the
 * constraint is invalid). k->kind must not be REQ_CONSTRAINT_NONE. */
grammar_t *api_constraint_compile(srv_t *s, const req_constraint_t *k, lf_err_t *e);

#endif
