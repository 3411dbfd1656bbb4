/* api_constraint_params.c - the arguments of the XML-style tool-call
 * formats (see api_constraint_parts.h): one element per parameter, its
 * value raw text (the closing markup excluded, the string keywords as
 * automata over the text) or JSON of its schema (no raw '<' in strings),
 * typed as the format's parser types it. */
#include "server/api/api_constraint_parts.h"

#include <stdio.h>
#include <string.h>

#include "grammar/regex/regex.h"
#include "grammar/schema/schema.h"

/* Refuses (400 naming the tool's parameters) a keyword that the XML-style
 * layout cannot honour under strict; false when it replied. */
static bool params_keyword_ok(cb_t *c, json_object *schema, const char *const *refused, bool strict, const char *param,
                              const char *where, http_req_t *r)
{
    for (const char *const *k = refused; strict && *k; k++)
        if (cb_jget(schema, *k)) {
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

/* DFA helpers of raw_value: NULL (and c->failed) on a failure. */
static gr_dfa_t *dfa_of(cb_t *c, gr_ex_t *e)
{
    gr_dfa_t *d = e ? gr_dfa_from_expr(e, false, &c->lim, &c->err) : NULL;
    if (!d)
        c->failed = true;
    return d;
}

static gr_dfa_t *dfa_op(cb_t *c, gr_dfa_t *a, gr_dfa_t *b, bool subtract)
{
    gr_dfa_t *d = a && b ? (subtract ? gr_dfa_subtract(a, b, &c->lim, &c->err) : gr_dfa_intersect(a, b, &c->lim, &c->err))
                         : NULL;
    gr_dfa_free(a);
    gr_dfa_free(b);
    if (!d)
        c->failed = true;
    return d;
}

/* An expression piece holding d (kept with the rules). */
static gr_ex_t *dfa_piece(cb_t *c, gr_dfa_t *d)
{
    if (!d || !gr_rules_keep_dfa(&c->R, d)) {
        c->failed = true;
        return NULL;
    }
    return gr_ex_dfa(&c->a, d, gr_dfa_nullable(d));
}

/* The string values of a schema's const / enum as raw texts (an
 * alternation; NONE when it has no string), or NULL when it has neither. */
static gr_ex_t *raw_literals(cb_t *c, json_object *s)
{
    gr_arena_t *a = &c->a;
    json_object *en = cb_jget(s, "enum"), *cst = cb_jget(s, "const");
    if (!cst && !(en && json_object_is_type(en, json_type_array)))
        return NULL;
    gr_exlist_t l = {0};
    size_t n = cst ? 1 : json_object_array_length(en);
    for (size_t i = 0; i < n; i++) {
        json_object *v = cst ? cst : json_object_array_get_idx(en, i);
        if (json_object_is_type(v, json_type_string))
            gr_exlist_push(a, &l, gr_ex_bytes(a, json_object_get_string(v), (size_t)json_object_get_string_len(v)));
    }
    return l.fail ? NULL : l.n ? gr_ex_alt(a, l.v, l.n) : gr_ex_none(a);
}

/* x intersected with the texts of regex re (search: a pattern, which may
 * match anywhere; else the whole text), or without them (subtract). An
 * unusable regex is a 400 naming param and `what`; NULL (x freed) then or
 * on a failure. */
static gr_dfa_t *regex_op(cb_t *c, gr_dfa_t *x, const char *re, bool search, bool subtract, const char *what,
                          const char *param, http_req_t *r)
{
    lf_err_t e = {0};
    gr_ex_t *rx = gr_regex_parse(&c->a, re, strlen(re), search ? GR_REGEX_SEARCH : GR_REGEX_FULL, &e);
    if (!rx) {
        gr_dfa_free(x);
        char msg[600];
        snprintf(msg, sizeof msg, "%s: %s: %.400s", param, what, e.msg);
        http_reply_error(r, 400, msg, param, e.code == LF_ERR_UNSUPPORTED ? "unsupported_parameter" : NULL, NULL);
        c->failed = true;
        return NULL;
    }
    return dfa_op(c, x, dfa_of(c, rx), subtract);
}

/* A raw string parameter: the language X of the values the parser must
 * produce (any text without the closing markup, its enum, pattern, format
 * and length), then the texts T the parser turns into a value of X. Where
 * the parser drops one newline at each end (raw_newlines), T is
 *   "\n" X "\n" | "\n" X' | X" "\n" | X"'
 * with X' the values not ending with a newline, X" those not starting with
 * one, X"' neither: exactly the ways the parser's stripping reads back a
 * value of X, so no text can strip to a value outside it. */
static gr_ex_t *raw_value(cb_t *c, const toolcall_force_layout_t *L, json_object *ps, const char *param, http_req_t *r)
{
    gr_arena_t *a = &c->a;
    gr_ex_t *any = gr_ex_rep(a, gr_ex_range(a, 0, GR_CP_MAX), 0, -1);
    gr_dfa_t *x = cb_dfa_without_any(c, L->param_close ? &L->param_close : &L->param_open, 1);
    /* not: excluded literals (const / enum) and a pattern the text must not match */
    json_object *no = cb_jget(ps, "not");
    if (no && x) {
        gr_ex_t *ex = raw_literals(c, no);
        if (ex)
            x = dfa_op(c, x, dfa_of(c, ex), true);
        json_object *np = cb_jget(no, "pattern");
        if (x && np && json_object_is_type(np, json_type_string))
            x = regex_op(c, x, json_object_get_string(np), true, true, "'not': 'pattern'", param, r);
    }
    gr_ex_t *lits = raw_literals(c, ps);
    if (lits && x) {
        if (lits->kind == GR_EX_NONE) {
            gr_dfa_free(x);
            http_reply_error(r, 400, "a raw string parameter's enum has no string value", param, NULL, NULL);
            c->failed = true;
            return NULL;
        }
        x = dfa_op(c, x, dfa_of(c, lits), false);
    }
    json_object *pat = cb_jget(ps, "pattern"), *fmt = cb_jget(ps, "format");
    const char *res[2] = {pat && json_object_is_type(pat, json_type_string) ? json_object_get_string(pat) : NULL,
                          fmt && json_object_is_type(fmt, json_type_string)
                              ? gr_schema_format_regex(json_object_get_string(fmt)) : NULL};
    for (int k = 0; k < 2 && x; k++)
        if (res[k])
            x = regex_op(c, x, res[k], k == 0, false, "'pattern'", param, r);
    json_object *mn = cb_jget(ps, "minLength"), *mx = cb_jget(ps, "maxLength");
    if (x && (mn || mx)) {
        int64_t lo = mn ? json_object_get_int64(mn) : 0, hi = mx ? json_object_get_int64(mx) : -1;
        x = dfa_op(c, x, dfa_of(c, gr_ex_rep(a, gr_ex_range(a, 0, GR_CP_MAX), lo < 0 ? 0 : lo, hi)), false);
    }
    if (!x)
        return NULL;
    if (x->n_states == 0) {
        gr_dfa_free(x);
        http_reply_error(r, 400, "no raw text satisfies this string parameter's schema", param, NULL, NULL);
        c->failed = true;
        return NULL;
    }
    if (!L->raw_newlines)
        return dfa_piece(c, x);
    gr_ex_t *nl = gr_ex_str(a, "\n");
    gr_dfa_t *x_ns = dfa_op(c, gr_dfa_copy(x), dfa_of(c, gr_ex_seq2(a, nl, any)), true);  /* X" */
    gr_dfa_t *x_ne = dfa_op(c, gr_dfa_copy(x), dfa_of(c, gr_ex_seq2(a, any, nl)), true);  /* X' */
    gr_dfa_t *x_n = dfa_op(c, gr_dfa_copy(x_ns), dfa_of(c, gr_ex_seq2(a, any, nl)), true); /* X"' */
    gr_ex_t *alts[] = {gr_ex_seq3(a, nl, dfa_piece(c, x), nl), gr_ex_seq2(a, nl, dfa_piece(c, x_ne)),
                       gr_ex_seq2(a, dfa_piece(c, x_ns), nl), dfa_piece(c, x_n)};
    return c->failed ? NULL : gr_ex_alt(a, alts, 4);
}

static gr_ex_t *param_value(cb_t *c, const toolcall_force_layout_t *L, json_object *params, json_object *ps,
                            bool strict, const char *param, int depth, http_req_t *r);
static gr_ex_t *param_end(cb_t *c, const toolcall_force_layout_t *L, const char *key);

/* Whether a schema only says what the element form can write: no
 * combinators, counts or conditions, and no $ref below it (the element
 * reader types nested values by their own schemas). */
static bool elem_plain(json_object *s)
{
    static const char *const ks[] = {"anyOf", "oneOf", "allOf", "not", "if", "$ref", "patternProperties",
                                     "propertyNames", "minProperties", "maxProperties", "dependentRequired",
                                     "dependentSchemas", "uniqueItems", "contains", "prefixItems", "additionalItems",
                                     "enum", "const", NULL};
    for (const char *const *k = ks; *k; k++)
        if (cb_jget(s, *k))
            return false;
    return true;
}

/* minimax_m3: an object or array value as nested elements, the way its
 * reader takes them (toolcall_params.c: children named by property, array
 * items named L->item_tag) and its model writes them; NONE where the
 * schema asks what that form cannot say (JSON text remains). An object
 * needs a required property (no children reads as text), an array at
 * least one item. */
static gr_ex_t *elem_nested(cb_t *c, const toolcall_force_layout_t *L, json_object *params, json_object *s, bool strict,
                            const char *param, int depth, http_req_t *r)
{
    gr_arena_t *a = &c->a;
    const char *const *mk = L->markers;
    json_object *ty = cb_jget(s, "type");
    const char *t = ty && json_object_is_type(ty, json_type_string) ? json_object_get_string(ty) : "";
    if (depth >= 4 || !elem_plain(s))
        return gr_ex_none(a);
    gr_ex_t *ws = cb_short_ws(c);
    if (!strcmp(t, "array")) {
        json_object *it = cb_jget(s, "items"), *mn = cb_jget(s, "minItems"), *mx = cb_jget(s, "maxItems");
        if (!it || !json_object_is_type(it, json_type_object) || !elem_plain(it))
            return gr_ex_none(a);
        int64_t lo = mn ? json_object_get_int64(mn) : 0, hi = mx ? json_object_get_int64(mx) : -1;
        if (lo < 1)
            lo = 1;
        if (hi >= 0 && hi < lo)
            return gr_ex_none(a);
        gr_ex_t *v = param_value(c, L, params, it, strict, param, depth + 1, r);
        if (!v)
            return NULL;
        gr_ex_t *parts[] = {ws, cb_layout_text(c, L->param_open, mk, false, true), gr_ex_str(a, L->item_tag),
                            cb_layout_text(c, L->param_mid_raw, mk, true, false), v, param_end(c, L, L->item_tag)};
        return gr_ex_seq2(a, gr_ex_rep(a, gr_ex_seq(a, parts, 6), lo, hi), ws);
    }
    json_object *props = cb_jget(s, "properties"), *req = cb_jget(s, "required");
    if (strcmp(t, "object") || !props || !json_object_is_type(props, json_type_object) || !req ||
        !json_object_is_type(req, json_type_array) || !json_object_array_length(req) || cb_jget(props, L->item_tag))
        return gr_ex_none(a);
    gr_exlist_t l = {0};
    json_object_object_foreach(props, key, cs)
    {
        if (!json_object_is_type(cs, json_type_object) || !elem_plain(cs))
            return gr_ex_none(a);
        bool required = false;
        for (size_t i = 0; i < json_object_array_length(req); i++)
            required = required || !strcmp(json_object_get_string(json_object_array_get_idx(req, i)), key);
        gr_ex_t *v = param_value(c, L, params, cs, strict, param, depth + 1, r);
        if (!v)
            return NULL;
        gr_ex_t *parts[] = {ws, cb_layout_text(c, L->param_open, mk, false, true), gr_ex_str(a, key),
                            cb_layout_text(c, L->param_mid_raw, mk, true, false), v, param_end(c, L, key)};
        gr_ex_t *e = gr_ex_seq(a, parts, 6);
        gr_exlist_push(a, &l, required ? e : gr_ex_opt(a, e));
    }
    gr_exlist_push(a, &l, ws);
    return l.fail ? NULL : gr_ex_seq(a, l.v, l.n);
}

/* The value of one parameter in the XML-style formats: raw text when the
 * parser reads the parameter as a raw string (raw_value), else a JSON
 * value of its schema, or (minimax_m3) nested elements. depth: the
 * nesting of element values. */
static gr_ex_t *param_value(cb_t *c, const toolcall_force_layout_t *L, json_object *params, json_object *ps,
                            bool strict, const char *param, int depth, http_req_t *r)
{
    gr_arena_t *a = &c->a;
    /* typed as the parser types it: by the schema its $ref names */
    json_object *pt = (json_object *)toolcall_param_deref(params, ps);
    if (L->json_values || !toolcall_param_raw_string(pt)) {
        gr_schema_opts_t so = {0};
        gr_ex_t *ws = gr_schema_ws(a, &so);
        /* inside the element: no string may hold markup (a closing tag);
         * $ref resolves in the function's parameters (their $defs) */
        const cb_syntax_t in_markup = {.in_markup = !L->json_values, .doc = params};
        gr_ex_t *v = cb_schema_value(c, ps, strict, false, &in_markup, param, r);
        if (!v)
            return NULL;
        if (depth == 0) /* a nested element's scalar is written tight, as its model does */
            v = gr_ex_seq3(a, ws, v, ws);
        if (!L->elem_close)
            return v;
        gr_ex_t *nested = elem_nested(c, L, params, pt, strict, param, depth, r);
        return nested ? gr_ex_alt2(a, v, nested) : NULL;
    }
    if (pt != ps && strict) { /* a raw value follows the target alone: keywords beside $ref are refused */
        json_object_object_foreach(ps, k, v)
        {
            (void)v;
            static const char *const notes[] = {"$ref", "description", "title", "default", "examples", "$comment", NULL};
            bool note = false;
            for (const char *const *n = notes; *n && !note; n++)
                note = !strcmp(k, *n);
            if (!note) {
                const char *const refused[] = {k, NULL};
                if (!params_keyword_ok(c, ps, refused, strict, param, "beside $ref on a raw string parameter", r))
                    return NULL;
            }
        }
    }
    ps = pt;
    /* not: only excluded values and patterns on raw text */
    json_object *no = cb_jget(ps, "not");
    if (strict && no) {
        bool ok = json_object_is_type(no, json_type_object);
        if (ok) {
            json_object_object_foreach(no, k, v)
            {
                (void)v;
                ok = ok && (!strcmp(k, "const") || !strcmp(k, "enum") || !strcmp(k, "pattern"));
            }
        }
        static const char *const refused[] = {"not", NULL};
        if (!ok && !params_keyword_ok(c, ps, refused, strict, param, "other than const / enum / pattern on a raw string parameter", r))
            return NULL;
    }
    return raw_value(c, L, ps, param, r);
}

/* The text that ends a parameter: param_close, or the element's own
 * closing tag (elem_close KEY param_mid_raw). */
static gr_ex_t *param_end(cb_t *c, const toolcall_force_layout_t *L, const char *key)
{
    const char *const *mk = L->markers;
    if (L->param_close)
        return cb_layout_text(c, L->param_close, mk, false, false);
    return gr_ex_seq3(&c->a, cb_layout_text(c, L->elem_close, mk, false, true), gr_ex_str(&c->a, key),
                      cb_layout_text(c, L->param_mid_raw, mk, true, false));
}

/* ARGUMENTS in the XML-style formats: one element per property of the
 * function's object schema, in the schema's order, the required ones
 * always, the others optional. */
gr_ex_t *cb_params_expr(cb_t *c, const toolcall_force_layout_t *L, json_object *params, bool strict,
                        const char *param, http_req_t *r)
{
    gr_arena_t *a = &c->a;
    static const char *const refused[] = {"patternProperties", "allOf", "anyOf", "oneOf", "$ref", "minProperties",
                                          "maxProperties", "dependentRequired", "if", "not", NULL};
    if (!params_keyword_ok(c, params, refused, strict, param, "at the top of the parameters", r))
        return NULL;
    json_object *props = cb_jget(params, "properties"), *req = cb_jget(params, "required");
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
        gr_ex_t *v = param_value(c, L, params, ps, strict, pp, 0, r);
        if (!v)
            return NULL;
        const char *const *mk = L->markers;
        gr_ex_t *parts[] = {first ? gr_ex_empty(a) : cb_layout_text(c, L->param_sep, mk, false, false),
                            cb_layout_text(c, L->param_open, mk, false, true), gr_ex_str(a, key),
                            cb_layout_text(c, toolcall_param_raw_string(toolcall_param_deref(params, ps)) ? L->param_mid_raw : L->param_mid_json, mk, true, false),
                            v, param_end(c, L, key)};
        gr_ex_t *elem = gr_ex_seq(a, parts, 6);
        gr_exlist_push(a, &l, required ? elem : gr_ex_opt(a, elem));
        first = false;
    }
    return l.fail ? NULL : gr_ex_seq(a, l.v, l.n);
}

