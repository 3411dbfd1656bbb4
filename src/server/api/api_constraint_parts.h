/* api_constraint_parts.h - the pieces the request grammar is composed of
 * (api_constraint.c): markers, free text, the reasoning block in the
 * reasoning parser's own markers, schema values, and the tool calls in a
 * format's layout (api_constraint_calls.c). Internal to src/server/api.
 *
 * Contract: every builder appends to the session's arena and rules; on a
 * failure it sets c->failed and returns NULL, having replied to the request
 * with a 400 naming the parameter when the request is at fault (otherwise
 * c->err says why: a limit, or out of memory). One session per request
 * compile, one thread.
 */
#ifndef LF_API_CONSTRAINT_PARTS_H
#define LF_API_CONSTRAINT_PARTS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "chat/parse/toolcall_layout.h"
#include "grammar/automata/dfa.h"
#include "grammar/grammar.h"
#include "server/chat/chat_output.h"
#include "server/request/request.h"
#include "server/server.h"

/* One compile of a request's grammar. */
typedef struct {
    srv_t *s;
    gr_arena_t a;
    gr_rules_t R;
    gr_limits_t lim;
    lf_err_t err;
    bool failed;
} cb_t;

const char *cb_to_json(json_object *o); /* compact; valid until o changes */
json_object *cb_jget(json_object *o, const char *k); /* NULL for absent or null */

/* A format marker: its special token when the vocabulary has one, or its text. */
gr_ex_t *cb_marker(cb_t *c, const char *text);
/* Any text (valid UTF-8) containing none of needles[0..n) / not needle:
 * the automaton (NULL + c->failed on a failure), or a piece holding it. */
gr_dfa_t *cb_dfa_without_any(cb_t *c, const char *const *needles, size_t n);
gr_ex_t *cb_text_without_any(cb_t *c, const char *const *needles, size_t n);
gr_ex_t *cb_text_without(cb_t *c, const char *needle);
/* One of the markup texts[0..) (NULL-terminated), the control tokens
 * tokens[] inside them as the token or its text. */
gr_ex_t *cb_any_marker(cb_t *c, const char *const *texts, const char *const *tokens);
/* 0 to max spaces and newlines in any mix. */
gr_ex_t *cb_ws_run(cb_t *c, int max);
/* Up to 4 spaces and newlines. */
gr_ex_t *cb_short_ws(cb_t *c);
/* The free reasoning block before the constrained part, in the format's
 * own markers (empty without a reasoning parser); NULL + reply for a
 * format the grammar cannot follow. */
gr_ex_t *cb_reasoning_prefix(cb_t *c, const chat_out_cfg_t *oc, http_req_t *r);
/* What opens the constrained answer after the reasoning (gpt-oss's final
 * channel header), else empty. */
gr_ex_t *cb_answer_header(cb_t *c, const chat_out_cfg_t *oc);
/* How cb_schema_value writes a value: JSON text; JSON inside markup (no
 * raw '<' in strings: gr_schema_opts_t.escape_lt); or the delimited syntax
 * of gr_schema_opts_t.str_delim (the delimiter as its control token or
 * text). doc: the document the schema is part of ($ref resolves there:
 * one parameter's schema inside the function's parameters), or NULL. */
typedef struct {
    bool in_markup;
    const char *str_delim;
    json_object *doc;
} cb_syntax_t;

/* A value of the schema in that syntax (NULL: JSON text); 400 naming
 * param when it cannot be enforced. */
gr_ex_t *cb_schema_value(cb_t *c, json_object *schema, bool strict, bool compact, const cb_syntax_t *syn,
                         const char *param, http_req_t *r);

/* The arguments in an XML-style layout (L->param_open set): one element
 * per property of the function's parameters, in the schema's order, the
 * required ones always (api_constraint_params.c). */
gr_ex_t *cb_params_expr(cb_t *c, const toolcall_force_layout_t *L, json_object *params, bool strict,
                        const char *param, http_req_t *r);

/* Layout text with its free spaces, markers and call numbers
 * (toolcall_layout.h); word_left / word_right: the function name is next to
 * that edge. */
gr_ex_t *cb_layout_text(cb_t *c, const char *s, const char *const *markers, bool word_left, bool word_right);
/* The calls to the tools funcs[0..n) (objects) in layout L: one or, with
 * parallel, several. */
gr_ex_t *cb_calls_expr(cb_t *c, const toolcall_force_layout_t *L, json_object **funcs, size_t n, bool parallel,
                       http_req_t *r);

#endif
