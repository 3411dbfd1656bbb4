/* api_constraint.c - builds the grammar of a request (see api_constraint.h).
 *
 * A plain constraint (response_format, guided_*, ...) without reasoning or
 * tools compiles directly. Otherwise the pieces are composed as expression
 * rules:
 *   root = [reasoning] body
 *   reasoning = (text without "</think>") "</think>" [ \n]{0,4}, preceded
 *               by "<think>" and optional when the output does not start
 *               inside the block
 *   body = ws value ws                          (a JSON schema, regex, ...)
 *        | calls                                (forced tool calls)
 *        | text-without-trigger [calls [ \n]*]  ("auto" with strict tools)
 *        | ws value ws | calls                  (response_format + auto)
 * calls follow the format's layout (chat/parse/toolcall_layout.h) with one
 * alternative per function, its arguments constrained by its parameters.
 */
#include "server/api/api_constraint.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/parse/toolcall_layout.h"
#include "grammar/regex/regex.h"
#include "grammar/schema/schema.h"
#include "server/request/request_chat.h"

typedef struct {
    srv_t *s;
    gr_arena_t a;
    gr_rules_t R;
    gr_limits_t lim;
    lf_err_t err;
    bool failed;
} cb_t;

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

static const char *to_json(json_object *o)
{
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

static json_object *jget(json_object *o, const char *k)
{
    json_object *v = NULL;
    if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, k, &v) ||
        json_object_is_type(v, json_type_null))
        return NULL;
    return v;
}

/* ---- pieces --------------------------------------------------------------------- */

/* A format marker: its special token when the vocabulary has one, or its text. */
static gr_ex_t *marker(cb_t *c, const char *text)
{
    if (!text || !*text)
        return gr_ex_empty(&c->a);
    const vocab_t *v = c->s->vocab;
    int32_t id = vocab_find(v, text, strlen(text));
    gr_ex_t *lit = gr_ex_str(&c->a, text);
    if (id >= 0 && vocab_is_control(v, id))
        return gr_ex_alt2(&c->a, gr_ex_token(&c->a, id), lit);
    return lit;
}

/* Any text (valid UTF-8) that contains none of needles[0..n). */
static gr_ex_t *text_without_any(cb_t *c, const char *const *needles, size_t n)
{
    gr_exlist_t l = {0};
    gr_ex_t *any = gr_ex_rep(&c->a, gr_ex_range(&c->a, 0, GR_CP_MAX), 0, -1);
    for (size_t i = 0; i < n; i++)
        if (needles[i] && *needles[i])
            gr_exlist_push(&c->a, &l, gr_ex_str(&c->a, needles[i]));
    gr_ex_t *bad = l.n ? gr_ex_seq3(&c->a, any, gr_ex_alt(&c->a, l.v, l.n), any) : gr_ex_none(&c->a);
    gr_dfa_t *all = any ? gr_dfa_from_expr(any, false, &c->lim, &c->err) : NULL;
    gr_dfa_t *with = bad && !l.fail ? gr_dfa_from_expr(bad, false, &c->lim, &c->err) : NULL;
    gr_dfa_t *d = all && with ? gr_dfa_subtract(all, with, &c->lim, &c->err) : NULL;
    gr_dfa_free(all);
    gr_dfa_free(with);
    if (!d || !gr_rules_keep_dfa(&c->R, d)) {
        c->failed = true;
        return NULL;
    }
    return gr_ex_dfa(&c->a, d, gr_dfa_nullable(d));
}

static gr_ex_t *text_without(cb_t *c, const char *needle)
{
    return text_without_any(c, &needle, 1);
}

static gr_ex_t *layout_text(cb_t *c, const char *s, const char *const *markers, bool word_left, bool word_right);

/* One of the markup texts[0..) (NULL-terminated): the control tokens
 * tokens[] inside them as the token or its text (K3's "<|open|>think<|sep|>"
 * is three tokens), a text without tokens as its own token or text. */
static gr_ex_t *any_marker(cb_t *c, const char *const *texts, const char *const *tokens)
{
    gr_exlist_t l = {0};
    for (const char *const *t = texts; t && *t; t++)
        gr_exlist_push(&c->a, &l, tokens && tokens[0] ? layout_text(c, *t, tokens, false, false) : marker(c, *t));
    return l.fail || !l.n ? NULL : gr_ex_alt(&c->a, l.v, l.n);
}

static gr_ex_t *short_ws(cb_t *c)
{
    gr_cset_t cs;
    gr_range_t r[2] = {{'\n', '\n'}, {' ', ' '}};
    cs.r = r;
    cs.n = cs.cap = 2;
    return gr_ex_rep(&c->a, gr_ex_chars(&c->a, &cs), 0, 4);
}

/* The reasoning before the constrained part, free text in the format's own
 * markup (reasoning.h): a marker format's block up to one of its close
 * markers, optional unless the prompt opened it (and absent when the
 * prompt did not switch it on, for the toggle formats); gpt-oss's
 * analysis messages before the final or commentary message. NULL with a
 * reply for a format the grammar cannot follow (Muse Glimmer's messages). */
static gr_ex_t *reasoning_prefix(cb_t *c, const chat_out_cfg_t *oc, http_req_t *r)
{
    gr_arena_t *a = &c->a;
    if (!oc || oc->reasoning == REASONING_MODE_NONE)
        return gr_ex_empty(a);
    if (oc->reasoning == REASONING_MODE_GPT_OSS) {
        /* [<|channel|>analysis<|message|> ... <|end|><|start|>assistant]... */
        gr_ex_t *parts[] = {marker(c, "<|channel|>"), gr_ex_str(a, "analysis"), marker(c, "<|message|>"),
                            text_without(c, "<|end|>"), marker(c, "<|end|>"), marker(c, "<|start|>"),
                            gr_ex_str(a, "assistant")};
        return gr_ex_rep(a, gr_ex_seq(a, parts, 7), 0, -1);
    }
    const char *generic_open[2] = {oc->reasoning_open, NULL}, *generic_close[2] = {oc->reasoning_close, NULL};
    const char *const *open = generic_open, *const *close = generic_close, *const *tokens = NULL;
    const char *label = NULL;
    reasoning_start_t start = REASONING_START_CONTENT;
    const reasoning_format_t *rf = reasoning_format(oc->reasoning);
    if (rf) {
        open = rf->open;
        close = rf->close;
        label = rf->open_label;
        start = rf->start;
        tokens = rf->tokens;
    }
    if (start == REASONING_START_HARMONY || !close || !close[0] || !open || !open[0]) {
        http_reply_error(r, 400, "structured output and forced tool calls are not supported with this reasoning parser",
                         "reasoning_parser", "unsupported_parameter", NULL);
        c->failed = true;
        return NULL;
    }
    if (start == REASONING_START_TOGGLE && !oc->starts_in_reasoning)
        return gr_ex_empty(a); /* the thinking switch is off: no block */
    size_t n_close = 0;
    while (close[n_close])
        n_close++;
    gr_ex_t *block = gr_ex_seq3(a, text_without_any(c, close, n_close), any_marker(c, close, tokens), short_ws(c));
    if (oc->starts_in_reasoning)
        return block;
    gr_ex_t *opener = any_marker(c, open, tokens);
    if (label && opener)
        opener = gr_ex_seq2(a, opener, gr_ex_opt(a, gr_ex_str(a, label)));
    return gr_ex_opt(a, gr_ex_seq2(a, opener, block));
}

/* What opens the constrained answer after the reasoning: gpt-oss writes
 * it as the final channel's message. */
static gr_ex_t *answer_header(cb_t *c, const chat_out_cfg_t *oc)
{
    if (oc && oc->reasoning == REASONING_MODE_GPT_OSS)
        return gr_ex_seq3(&c->a, marker(c, "<|channel|>"), gr_ex_str(&c->a, "final"), marker(c, "<|message|>"));
    return gr_ex_empty(&c->a);
}

static gr_ex_t *schema_value(cb_t *c, json_object *schema, bool strict, bool compact, const char *param,
                             http_req_t *r)
{
    gr_schema_opts_t so = {.strict = strict, .no_whitespace = compact, .lim = &c->lim};
    gr_ex_t *v = NULL;
    if (gr_schema_compile(schema, &so, &c->a, &c->R, &v, &c->err) != LF_OK) {
        char msg[700];
        snprintf(msg, sizeof msg, "%s: %s", param, c->err.msg);
        http_reply_error(r, c->err.code == LF_ERR_NOMEM ? 503 : 400, msg, param,
                         c->err.code == LF_ERR_UNSUPPORTED ? "unsupported_parameter" : NULL, NULL);
        c->failed = true;
        return NULL;
    }
    return v;
}

/* Layout text: its free runs of spaces and newlines take 0 to 2 of them
 * (toolcall_layout.h), the others are written as they are; the format's
 * markers in it are accepted as their special token or text. word_left /
 * word_right: the function name is next to that edge. */
static gr_ex_t *layout_text(cb_t *c, const char *s, const char *const *markers, bool word_left, bool word_right)
{
    const char *s0 = s;
    gr_arena_t *a = &c->a;
    gr_exlist_t l = {0};
    gr_range_t r[2] = {{'\n', '\n'}, {' ', ' '}};
    gr_cset_t cs = {r, 2, 2};
    while (s && *s) {
        const char *mk = NULL;
        for (const char *const *m = markers; m && *m && !mk; m++)
            if (**m && !strncmp(s, *m, strlen(*m)))
                mk = *m;
        if (mk) {
            gr_exlist_push(a, &l, marker(c, mk));
            s += strlen(mk);
            continue;
        }
        if (*s == TOOLCALL_LAYOUT_NUMBER[0]) { /* a call number */
            gr_exlist_push(a, &l, gr_ex_rep(a, gr_ex_range(a, '0', '9'), 1, 4));
            s++;
            continue;
        }
        size_t w = strspn(s, " \n");
        if (w) {
            size_t i = (size_t)(s - s0);
            if (toolcall_layout_space_free(s0, i, i + w, word_left, word_right))
                gr_exlist_push(a, &l, gr_ex_rep(a, gr_ex_chars(a, &cs), 0, TOOLCALL_LAYOUT_FREE_MAX));
            else
                gr_exlist_push(a, &l, gr_ex_bytes(a, s, w));
            s += w;
            continue;
        }
        /* text up to the next space, newline or marker */
        size_t n = 1;
        while (s[n] && s[n] != ' ' && s[n] != '\n' && s[n] != TOOLCALL_LAYOUT_NUMBER[0]) {
            bool at_marker = false;
            for (const char *const *m = markers; m && *m && !at_marker; m++)
                at_marker = **m && !strncmp(s + n, *m, strlen(*m));
            if (at_marker)
                break;
            n++;
        }
        gr_exlist_push(a, &l, gr_ex_bytes(a, s, n));
        s += n;
    }
    return l.fail ? NULL : gr_ex_seq(a, l.v, l.n);
}

/* Refuses (400 naming the tool's parameters) a keyword that the XML-style
 * layout cannot honour under strict; false when it replied. */
static bool params_keyword_ok(cb_t *c, json_object *schema, const char *const *refused, bool strict, const char *param,
                              const char *where, http_req_t *r)
{
    for (const char *const *k = refused; strict && *k; k++)
        if (jget(schema, *k)) {
            char msg[400];
            snprintf(msg, sizeof msg,
                     "%s: '%s' %s cannot be enforced when the tool-call format writes each parameter as an element "
                     "(set \"strict\": false on the function to allow it unenforced)",
                     param, *k, where);
            http_reply_error(r, 400, msg, param, "unsupported_parameter", NULL);
            c->failed = true;
            return false;
        }
    return true;
}

/* The value of one parameter in the XML-style formats: raw text when the
 * parser reads the parameter as a raw string (an enum as its literals,
 * else any text without the closing markup; one newline at each end may be
 * the markup's where the parser drops it), else a JSON value of its
 * schema. */
static gr_ex_t *param_value(cb_t *c, const toolcall_force_layout_t *L, json_object *ps, bool strict, const char *param,
                            http_req_t *r)
{
    gr_arena_t *a = &c->a;
    if (!toolcall_param_raw_string(ps)) {
        gr_schema_opts_t so = {0};
        gr_ex_t *ws = gr_schema_ws(a, &so);
        gr_ex_t *v = schema_value(c, ps, strict, false, param, r);
        return v ? gr_ex_seq3(a, ws, v, ws) : NULL;
    }
    static const char *const refused[] = {"pattern", "format", "minLength", "maxLength", "not", NULL};
    if (!params_keyword_ok(c, ps, refused, strict, param, "on a raw string parameter", r))
        return NULL;
    gr_ex_t *nl = L->raw_newlines ? gr_ex_opt(a, gr_ex_str(a, "\n")) : gr_ex_empty(a);
    json_object *en = jget(ps, "enum"), *cst = jget(ps, "const");
    gr_ex_t *body = NULL;
    if (cst || (en && json_object_is_type(en, json_type_array))) {
        gr_exlist_t l = {0};
        size_t n = cst ? 1 : json_object_array_length(en);
        for (size_t i = 0; i < n; i++) {
            json_object *v = cst ? cst : json_object_array_get_idx(en, i);
            if (json_object_is_type(v, json_type_string))
                gr_exlist_push(a, &l, gr_ex_bytes(a, json_object_get_string(v), (size_t)json_object_get_string_len(v)));
        }
        if (l.n == 0) {
            http_reply_error(r, 400, "a raw string parameter's enum has no string value", param, NULL, NULL);
            c->failed = true;
            return NULL;
        }
        body = l.fail ? NULL : gr_ex_alt(a, l.v, l.n);
    } else {
        body = text_without(c, L->param_close);
    }
    return body ? gr_ex_seq3(a, nl, body, nl) : NULL;
}

/* ARGUMENTS in the XML-style formats: one element per property of the
 * function's object schema, in the schema's order, the required ones
 * always, the others optional. */
static gr_ex_t *params_expr(cb_t *c, const toolcall_force_layout_t *L, json_object *params, bool strict,
                            const char *param, http_req_t *r)
{
    gr_arena_t *a = &c->a;
    static const char *const refused[] = {"patternProperties", "allOf", "anyOf", "oneOf", "$ref", "minProperties",
                                          "maxProperties", "dependentRequired", "if", "not", NULL};
    if (!params_keyword_ok(c, params, refused, strict, param, "at the top of the parameters", r))
        return NULL;
    json_object *props = jget(params, "properties"), *req = jget(params, "required");
    gr_exlist_t l = {0};
    bool first = true;
    if (!props || !json_object_is_type(props, json_type_object))
        return gr_ex_empty(a); /* no parameters */
    json_object_object_foreach(props, key, ps)
    {
        bool required = false;
        for (size_t i = 0; req && json_object_is_type(req, json_type_array) && i < json_object_array_length(req); i++)
            required = required || !strcmp(json_object_get_string(json_object_array_get_idx(req, i)), key);
        char pp[160];
        snprintf(pp, sizeof pp, "%s.properties.%s", param, key);
        gr_ex_t *v = param_value(c, L, ps, strict, pp, r);
        if (!v)
            return NULL;
        const char *const *mk = L->markers;
        gr_ex_t *parts[] = {first ? gr_ex_empty(a) : layout_text(c, L->param_sep, mk, false, false),
                            layout_text(c, L->param_open, mk, false, true), gr_ex_str(a, key),
                            layout_text(c, toolcall_param_raw_string(ps) ? L->param_mid_raw : L->param_mid_json, mk, true, false),
                            v, layout_text(c, L->param_close, mk, false, false)};
        gr_ex_t *elem = gr_ex_seq(a, parts, 6);
        gr_exlist_push(a, &l, required ? elem : gr_ex_opt(a, elem));
        first = false;
    }
    return l.fail ? NULL : gr_ex_seq(a, l.v, l.n);
}

/* A free run of spaces / newlines between two layout pieces where the
 * layout allows one (toolcall_layout_gap), else nothing. */
static gr_ex_t *gap(cb_t *c, const char *left, const char *right)
{
    if (!toolcall_layout_gap(left, right))
        return gr_ex_empty(&c->a);
    gr_range_t r[2] = {{'\n', '\n'}, {' ', ' '}};
    gr_cset_t cs = {r, 2, 2};
    return gr_ex_rep(&c->a, gr_ex_chars(&c->a, &cs), 0, TOOLCALL_LAYOUT_FREE_MAX);
}

/* The forced / allowed calls; funcs: the tools to offer (objects). */
static gr_ex_t *calls_expr(cb_t *c, const toolcall_force_layout_t *L, json_object **funcs, size_t n, bool parallel,
                           http_req_t *r)
{
    gr_arena_t *a = &c->a;
    const char *const *mk = L->markers;
    gr_exlist_t alts = {0};
    for (size_t i = 0; i < n && !c->failed; i++) {
        json_object *fn = jget(funcs[i], "function"), *params = jget(fn, "parameters"), *strict = jget(fn, "strict");
        json_object *name = jget(fn, "name");
        json_object *def = NULL;
        if (!params)
            params = def = json_tokener_parse("{\"type\":\"object\"}");
        char param[80];
        snprintf(param, sizeof param, "tools[%zu].function.parameters", i);
        bool st = strict && json_object_is_type(strict, json_type_boolean) && json_object_get_boolean(strict);
        gr_ex_t *args = L->param_open ? params_expr(c, L, params, st, param, r) : schema_value(c, params, st, false, param, r);
        json_object_put(def);
        if (!args)
            return NULL;
        /* the name as JSON string content */
        const char *q = to_json(name);
        size_t ql = strlen(q);
        gr_ex_t *nm = gr_ex_bytes(a, q + 1, ql >= 2 ? ql - 2 : 0);
        gr_ex_t *parts[] = {layout_text(c, L->call_prefix, mk, false, true), nm,
                            layout_text(c, L->name_suffix, mk, true, false), args,
                            gap(c, L->param_open ? L->param_close : "}", L->call_suffix),
                            layout_text(c, L->call_suffix, mk, false, false)};
        gr_exlist_push(a, &alts, gr_ex_seq(a, parts, 6));
    }
    if (c->failed)
        return NULL;
    gr_ex_t *call = alts.fail ? NULL : gr_ex_alt(a, alts.v, alts.n);
    /* a call's last text: call_suffix, or the arguments' end when it is empty */
    const char *end = L->call_suffix && *L->call_suffix ? L->call_suffix : L->param_open ? L->param_close : "}";
    gr_ex_t *sep = *L->call_sep ? gr_ex_seq3(a, gap(c, end, L->call_sep), layout_text(c, L->call_sep, mk, false, false),
                                             gap(c, L->call_sep, L->call_prefix))
                                : gap(c, end, L->call_prefix);
    gr_ex_t *more = parallel ? gr_ex_rep(a, gr_ex_seq2(a, sep, call), 0, -1) : gr_ex_empty(a);
    gr_ex_t *parts[] = {layout_text(c, L->open, mk, false, false), gap(c, L->open, L->call_prefix), call, more,
                        gap(c, end, L->close), layout_text(c, L->close, mk, false, false)};
    return gr_ex_seq(a, parts, 6);
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
        gr_ex_t *v = schema_value(c, s, k->strict, k->compact, k->param, r);
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
    json_object *tl = chat ? jget(chat->raw, "tools") : NULL;
    bool any_strict = false;
    for (size_t i = 0; tools && tl && i < json_object_array_length(tl); i++) {
        json_object *st = jget(jget(json_object_array_get_idx(tl, i), "function"), "strict");
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
        json_object *nm = jget(jget(t, "function"), "name");
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
        kstr(&key, to_json(funcs[i]));
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
    gr_ex_t *prefix = reasoning_prefix(c, oc, r);
    gr_ex_t *body = NULL;
    gr_ex_t *value = k->kind != REQ_CONSTRAINT_NONE && !c->failed ? constraint_expr(c, k, r) : NULL;
    if (value)
        value = gr_ex_seq2(a, answer_header(c, oc), value);
    if (!c->failed) {
        if (forced) { /* the calls, after a little whitespace */
            gr_ex_t *calls = calls_expr(c, L, funcs, n_use, x->parallel_tool_calls, r);
            body = calls ? gr_ex_seq2(a, short_ws(c), calls) : NULL;
        } else if (auto_calls) {
            gr_ex_t *calls = calls_expr(c, L, funcs, n_use, x->parallel_tool_calls, r);
            gr_ex_t *text_or_calls = gr_ex_seq2(a, text_without(c, L->auto_trigger),
                                                gr_ex_opt(a, gr_ex_seq2(a, calls, short_ws(c))));
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
