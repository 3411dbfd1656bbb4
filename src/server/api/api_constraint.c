/* api_constraint.c - builds the grammar of a request (see api_constraint.h).
 *
 * A plain constraint (response_format, guided_*, ...) without reasoning or
 * tools compiles directly. Otherwise the pieces are composed as expression
 * rules:
 *   root = [reasoning] body
 *   reasoning = the reasoning parser's block, free text between its own
 *               markers, optional when the output does not start inside
 *               it (api_constraint_parts.c)
 *   body = [answer header] ws value ws          (a JSON schema, regex, ...)
 *        | calls                                (forced tool calls)
 *        | text-without-trigger [calls [ \n]*]  ("auto" with strict tools)
 *        | ws value ws | calls                  (response_format + auto)
 * calls follow the format's layout (chat/parse/toolcall_layout.h) with one
 * alternative per function, its arguments constrained by its parameters.
 */
#include "server/api/api_constraint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/regex/regex.h"
#include "grammar/schema/schema.h"
#include "server/api/api_constraint_parts.h"
#include "server/request/request_chat.h"

typedef struct {
    char *p;
    size_t n, cap;
} kbuf_t;

static void kadd(kbuf_t *k, const char *s, size_t n)
{
    if (!k->p && k->cap == (size_t)-1)
        return;
    if (k->n + n + 1 > k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 1024;
        while (cap < k->n + n + 1)
            cap *= 2;
        char *p = realloc(k->p, cap);
        if (!p) {
            free(k->p);
            k->p = NULL;
            k->cap = (size_t)-1;
            return;
        }
        k->p = p;
        k->cap = cap;
    }
    memcpy(k->p + k->n, s, n);
    k->n += n;
    k->p[k->n] = '\0';
}

static void kstr(kbuf_t *k, const char *s)
{
    kadd(k, s ? s : "-", strlen(s ? s : "-"));
    kadd(k, "\x1f", 1);
}

/* ---- entry ---------------------------------------------------------------------- */

static int reply_compile_error(http_req_t *r, const req_constraint_t *k, const lf_err_t *e)
{
    char msg[700];
    snprintf(msg, sizeof msg, "%s: %s", k->param, e->msg);
    http_reply_error(r, e->code == LF_ERR_NOMEM ? 503 : 400, msg, k->param,
                     e->code == LF_ERR_UNSUPPORTED ? "unsupported_parameter" : NULL, NULL);
    return -1;
}

/* The value expression of a plain constraint (composition path). */
static gr_ex_t *constraint_expr(cb_t *c, const req_constraint_t *k, http_req_t *r)
{
    gr_arena_t *a = &c->a;
    switch (k->kind) {
    case REQ_CONSTRAINT_JSON_OBJECT:
    case REQ_CONSTRAINT_JSON_SCHEMA: {
        json_object *s = k->kind == REQ_CONSTRAINT_JSON_SCHEMA ? json_tokener_parse(k->text)
                                                               : json_tokener_parse("{\"type\":\"object\"}");
        if (!s) {
            http_reply_error(r, 400, "the JSON schema is not valid JSON", k->param, NULL, NULL);
            c->failed = true;
            return NULL;
        }
        gr_ex_t *v = cb_schema_value(c, s, k->strict, k->compact, NULL, k->param, r);
        json_object_put(s);
        if (!v)
            return NULL;
        gr_schema_opts_t so = {.no_whitespace = k->compact};
        gr_ex_t *ws = gr_schema_ws(a, &so);
        return gr_ex_seq3(a, ws, v, ws);
    }
    case REQ_CONSTRAINT_REGEX: {
        gr_ex_t *e = gr_regex_parse(a, k->text, strlen(k->text), GR_REGEX_FULL, &c->err);
        if (!e) {
            reply_compile_error(r, k, &c->err);
            c->failed = true;
        }
        return e;
    }
    case REQ_CONSTRAINT_CHOICE: {
        gr_exlist_t l = {0};
        for (size_t i = 0; i < k->n_choices; i++)
            gr_exlist_push(a, &l, gr_ex_bytes(a, k->choices[i], k->choice_lens[i]));
        return l.fail ? NULL : gr_ex_alt(a, l.v, l.n);
    }
    default:
        return NULL;
    }
}

grammar_t *api_constraint_compile(srv_t *s, const req_constraint_t *k, lf_err_t *e)
{
    grammar_opts_t o;
    grammar_opts_default(&o);
    o.strict = k->strict;
    o.compact = k->compact;
    switch (k->kind) {
    case REQ_CONSTRAINT_JSON_OBJECT:
        return grammar_from_any_json(s->grammar, true, &o, e);
    case REQ_CONSTRAINT_JSON_SCHEMA:
        return grammar_from_json_schema(s->grammar, k->text, strlen(k->text), &o, e);
    case REQ_CONSTRAINT_REGEX:
        return grammar_from_regex(s->grammar, k->text, strlen(k->text), &o, e);
    case REQ_CONSTRAINT_GRAMMAR:
        return grammar_from_gbnf(s->grammar, k->text, strlen(k->text), &o, e);
    case REQ_CONSTRAINT_CHOICE:
        return grammar_from_choices(s->grammar, (const char *const *)k->choices, k->choice_lens, k->n_choices, e);
    default:
        return NULL;
    }
}

int api_constraint_build(srv_t *s, http_req_t *r, const req_gen_t *gen, const chat_req_t *chat,
                         const chat_out_cfg_t *oc, grammar_t **out)
{
    *out = NULL;
    const req_constraint_t *k = &gen->constraint;
    const chat_ext_t *x = chat ? chat->ext : NULL;
    bool tools = x && req_chat_wants_tools(x);
    bool forced = tools && (x->tool_choice == TOOL_CHOICE_REQUIRED || x->tool_choice == TOOL_CHOICE_NAMED);
    json_object *tl = chat ? cb_jget(chat->raw, "tools") : NULL;
    bool any_strict = false;
    for (size_t i = 0; tools && tl && i < json_object_array_length(tl); i++) {
        json_object *st = cb_jget(cb_jget(json_object_array_get_idx(tl, i), "function"), "strict");
        any_strict = any_strict || (st && json_object_is_type(st, json_type_boolean) && json_object_get_boolean(st));
    }
    bool auto_calls = tools && !forced && any_strict;
    bool reasoning = oc && oc->reasoning != REASONING_MODE_NONE;
    if (k->kind == REQ_CONSTRAINT_NONE && !forced && !auto_calls)
        return 0;
    if (!forced && !auto_calls && !reasoning) {
        lf_err_t e = {0};
        *out = api_constraint_compile(s, k, &e);
        return *out ? 0 : reply_compile_error(r, k, &e);
    }
    if (k->kind == REQ_CONSTRAINT_GRAMMAR) {
        /* a GBNF grammar is taken as the whole output, reasoning included */
        if (forced || auto_calls) {
            http_reply_error(r, 400, "a GBNF grammar cannot be combined with tool calls", k->param, NULL, NULL);
            return -1;
        }
        lf_err_t e = {0};
        *out = api_constraint_compile(s, k, &e);
        return *out ? 0 : reply_compile_error(r, k, &e);
    }
    const toolcall_force_layout_t *L = toolcall_force_layout(oc ? oc->tools : TOOLCALL_FORMAT_NONE);
    if ((forced || auto_calls) && (!L || (auto_calls && !forced && !L->auto_trigger))) {
        if (forced) {
            http_reply_error(r, 400, "this server's tool-call format cannot force a call (tool_choice)", "tool_choice",
                             NULL, NULL);
            return -1;
        }
        auto_calls = false; /* strict arguments only where the format has a clear start */
        if (k->kind == REQ_CONSTRAINT_NONE && !reasoning)
            return 0;
    }
    /* the functions offered */
    size_t nf = tl ? json_object_array_length(tl) : 0;
    json_object **funcs = calloc(nf + 1, sizeof *funcs);
    if (!funcs) {
        http_reply_error(r, 503, "out of memory", NULL, NULL, NULL);
        return -1;
    }
    size_t n_use = 0;
    for (size_t i = 0; (forced || auto_calls) && i < nf; i++) {
        json_object *t = json_object_array_get_idx(tl, i);
        json_object *nm = cb_jget(cb_jget(t, "function"), "name");
        if (x->tool_choice == TOOL_CHOICE_NAMED && (!nm || strcmp(json_object_get_string(nm), x->tool_name)))
            continue;
        funcs[n_use++] = t;
    }
    /* cache key: everything the grammar depends on */
    kbuf_t key = {0};
    kstr(&key, "request-v1");
    kstr(&key, forced ? "forced" : auto_calls ? "auto" : "none");
    kstr(&key, toolcall_format_name(oc ? oc->tools : TOOLCALL_FORMAT_NONE));
    kstr(&key, x && x->parallel_tool_calls ? "par" : "one");
    kstr(&key, reasoning_mode_name(oc ? oc->reasoning : REASONING_MODE_NONE));
    kstr(&key, oc && oc->starts_in_reasoning ? "in" : "out");
    char kind[32];
    snprintf(kind, sizeof kind, "%d|%d|%d", (int)k->kind, k->strict, k->compact);
    kstr(&key, kind);
    kstr(&key, k->text);
    for (size_t i = 0; i < k->n_choices; i++)
        kstr(&key, k->choices[i]);
    for (size_t i = 0; i < n_use; i++)
        kstr(&key, cb_to_json(funcs[i]));
    if (!key.p) {
        free(funcs);
        http_reply_error(r, 503, "out of memory", NULL, NULL, NULL);
        return -1;
    }
    grammar_t *g = grammar_lookup(s->grammar, key.p);
    if (g) {
        free(funcs);
        free(key.p);
        *out = g;
        return 0;
    }
    cb_t *c = calloc(1, sizeof *c);
    if (!c) {
        free(funcs);
        free(key.p);
        http_reply_error(r, 503, "out of memory", NULL, NULL, NULL);
        return -1;
    }
    c->s = s;
    gr_arena_init(&c->a, (size_t)256 << 20);
    c->lim.deadline_ns = gr_now_ns() + 5000LL * 1000000LL;
    gr_arena_t *a = &c->a;
    gr_ex_t *prefix = cb_reasoning_prefix(c, oc, r);
    gr_ex_t *body = NULL;
    gr_ex_t *value = k->kind != REQ_CONSTRAINT_NONE && !c->failed ? constraint_expr(c, k, r) : NULL;
    if (value)
        value = gr_ex_seq2(a, cb_answer_header(c, oc), value);
    if (!c->failed) {
        if (forced) { /* the calls, after a little whitespace */
            gr_ex_t *calls = cb_calls_expr(c, L, funcs, n_use, x->parallel_tool_calls, r);
            body = calls ? gr_ex_seq2(a, L->at_once ? gr_ex_empty(a) : cb_short_ws(c), calls) : NULL;
        } else if (auto_calls) {
            gr_ex_t *calls = cb_calls_expr(c, L, funcs, n_use, x->parallel_tool_calls, r);
            gr_ex_t *text_or_calls = gr_ex_seq2(a, cb_text_without(c, L->auto_trigger),
                                                gr_ex_opt(a, gr_ex_seq2(a, calls, cb_short_ws(c))));
            body = value ? gr_ex_alt2(a, value, calls) : text_or_calls;
        } else {
            body = value;
        }
    }
    free(funcs);
    int32_t start = -1;
    if (!c->failed && body && prefix) {
        start = gr_rules_add(&c->R);
        if (start >= 0)
            c->R.v[start] = gr_ex_seq2(a, prefix, body);
    }
    if (c->failed || start < 0 || !c->R.v[start]) {
        if (!c->failed) /* nothing replied yet */
            http_reply_error(r, c->err.code == LF_ERR_UNSUPPORTED ? 400 : 503,
                             c->err.msg[0] ? c->err.msg : "out of memory building the output grammar", k->param[0] ? k->param : "tools",
                             NULL, NULL);
        gr_rules_free(&c->R);
        gr_arena_free(&c->a);
        free(c);
        free(key.p);
        return -1;
    }
    lf_err_t e = {0};
    g = grammar_from_rules(s->grammar, &c->a, &c->R, start, key.p, &e);
    free(c);
    free(key.p);
    if (!g) {
        char msg[700];
        snprintf(msg, sizeof msg, "the output constraint cannot be compiled: %s", e.msg);
        http_reply_error(r, e.code == LF_ERR_NOMEM ? 503 : 400, msg, k->param[0] ? k->param : "tools", NULL, NULL);
        return -1;
    }
    *out = g;
    return 0;
}
