/* api_constraint_calls.c - tool calls in a format's layout (see
 * api_constraint_parts.h and chat/parse/toolcall_layout.h): the layout's
 * texts with their free spaces, markers and call numbers, the arguments as
 * a JSON value of the function's parameters or, in the XML-style formats,
 * one element per parameter. */
#include "server/api/api_constraint_parts.h"

#include <stdio.h>
#include <string.h>

#include "grammar/regex/regex.h"
#include "grammar/schema/schema.h"

gr_ex_t *cb_layout_text(cb_t *c, const char *s, const char *const *markers, bool word_left, bool word_right)
{
    const char *s0 = s;
    gr_arena_t *a = &c->a;
    gr_exlist_t l = {0};
    while (s && *s) {
        const char *mk = NULL;
        for (const char *const *m = markers; m && *m && !mk; m++)
            if (**m && !strncmp(s, *m, strlen(*m)))
                mk = *m;
        if (mk) {
            gr_exlist_push(a, &l, cb_marker(c, mk));
            s += strlen(mk);
            continue;
        }
        if (*s == TOOLCALL_LAYOUT_NUMBER[0]) { /* a call number */
            gr_exlist_push(a, &l, gr_ex_rep(a, gr_ex_range(a, '0', '9'), 1, 4));
            s++;
            continue;
        }
        if (*s == TOOLCALL_LAYOUT_JSON_TYPE[0]) { /* a JSON type name other than string */
            static const char *const types[] = {"number", "integer", "boolean", "array", "object", "null"};
            gr_ex_t *alts[6];
            for (int k = 0; k < 6; k++)
                alts[k] = gr_ex_str(a, types[k]);
            gr_exlist_push(a, &l, gr_ex_alt(a, alts, 6));
            s++;
            continue;
        }
        if (*s == TOOLCALL_LAYOUT_ID[0]) { /* a call id the model makes up */
            gr_range_t ir[5] = {{'-', '-'}, {'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
            gr_cset_t ics = {ir, 5, 5};
            gr_exlist_push(a, &l, gr_ex_rep(a, gr_ex_chars(a, &ics), 1, 32));
            s++;
            continue;
        }
        size_t w = strspn(s, " \n");
        if (w) {
            size_t i = (size_t)(s - s0);
            if (toolcall_layout_space_free(s0, i, i + w, word_left, word_right))
                gr_exlist_push(a, &l, cb_ws_run(c, TOOLCALL_LAYOUT_FREE_MAX));
            else
                gr_exlist_push(a, &l, gr_ex_bytes(a, s, w));
            s += w;
            continue;
        }
        /* text up to the next space, newline or marker */
        size_t n = 1;
        while (s[n] && s[n] != ' ' && s[n] != '\n' && s[n] != TOOLCALL_LAYOUT_NUMBER[0] && s[n] != TOOLCALL_LAYOUT_ID[0] &&
               s[n] != TOOLCALL_LAYOUT_JSON_TYPE[0]) {
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

/* A raw string parameter: the language X of the values the parser must
 * produce (any text without the closing markup, its enum, pattern, format
 * and length), then the texts T the parser turns into a value of X. Where
 * the parser drops one newline at each end (raw_newlines), T is
 *   "\n" X "\n" | "\n" X' | X" "\n" | X"'
 * with X' the values not ending with a newline, X" those not starting with
 * one, X"' neither: exactly the ways the parser's stripping reads back a
 * value of X, so no text can strip to a value outside it. */
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
        if (x && np && json_object_is_type(np, json_type_string)) {
            lf_err_t e = {0};
            const char *re = json_object_get_string(np);
            gr_ex_t *rx = gr_regex_parse(a, re, strlen(re), GR_REGEX_SEARCH, &e);
            if (!rx) {
                gr_dfa_free(x);
                char msg[600];
                snprintf(msg, sizeof msg, "%s: 'not': 'pattern': %.400s", param, e.msg);
                http_reply_error(r, 400, msg, param, e.code == LF_ERR_UNSUPPORTED ? "unsupported_parameter" : NULL, NULL);
                c->failed = true;
                return NULL;
            }
            x = dfa_op(c, x, dfa_of(c, rx), true);
        }
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
    for (int k = 0; k < 2 && x; k++) {
        if (!res[k])
            continue;
        lf_err_t e = {0};
        gr_ex_t *re = gr_regex_parse(a, res[k], strlen(res[k]), k == 0 ? GR_REGEX_SEARCH : GR_REGEX_FULL, &e);
        if (!re) {
            gr_dfa_free(x);
            char msg[600];
            snprintf(msg, sizeof msg, "%s: 'pattern': %.400s", param, e.msg);
            http_reply_error(r, 400, msg, param, e.code == LF_ERR_UNSUPPORTED ? "unsupported_parameter" : NULL, NULL);
            c->failed = true;
            return NULL;
        }
        x = dfa_op(c, x, dfa_of(c, re), false);
    }
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

/* The value of one parameter in the XML-style formats: raw text when the
 * parser reads the parameter as a raw string (raw_value), else a JSON
 * value of its schema. */
static gr_ex_t *param_value(cb_t *c, const toolcall_force_layout_t *L, json_object *params, json_object *ps,
                            bool strict, const char *param, http_req_t *r)
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
        return v ? gr_ex_seq3(a, ws, v, ws) : NULL;
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

/* The last text of the arguments (for the gap after them). */
static const char *args_end(const toolcall_force_layout_t *L)
{
    return !L->param_open ? "}" : L->param_close ? L->param_close : L->param_mid_raw;
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
        gr_ex_t *v = param_value(c, L, params, ps, strict, pp, r);
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

/* A free run of spaces / newlines between two layout pieces where the
 * layout allows one (toolcall_layout_gap), else nothing. */
static gr_ex_t *gap(cb_t *c, const char *left, const char *right)
{
    return toolcall_layout_gap(left, right) ? cb_ws_run(c, TOOLCALL_LAYOUT_FREE_MAX) : gr_ex_empty(&c->a);
}

/* The forced / allowed calls; funcs: the tools to offer (objects). */
gr_ex_t *cb_calls_expr(cb_t *c, const toolcall_force_layout_t *L, json_object **funcs, size_t n, bool parallel,
                           http_req_t *r)
{
    gr_arena_t *a = &c->a;
    const char *const *mk = L->markers;
    gr_exlist_t alts = {0};
    for (size_t i = 0; i < n && !c->failed; i++) {
        json_object *fn = cb_jget(funcs[i], "function"), *params = cb_jget(fn, "parameters"), *strict = cb_jget(fn, "strict");
        json_object *name = cb_jget(fn, "name");
        json_object *def = NULL;
        if (!params)
            params = def = json_tokener_parse("{\"type\":\"object\"}");
        char param[80];
        snprintf(param, sizeof param, "tools[%zu].function.parameters", i);
        bool st = strict && json_object_is_type(strict, json_type_boolean) && json_object_get_boolean(strict);
        gr_ex_t *args = L->param_open ? params_expr(c, L, params, st, param, r)
                                      : cb_schema_value(c, params, st, false, &(cb_syntax_t){.str_delim = L->value_delim},
                                                        param, r);
        json_object_put(def);
        if (!args)
            return NULL;
        /* the name as JSON string content */
        const char *q = cb_to_json(name);
        size_t ql = strlen(q);
        gr_ex_t *nm = gr_ex_bytes(a, q + 1, ql >= 2 ? ql - 2 : 0);
        gr_ex_t *parts[] = {cb_layout_text(c, L->call_prefix, mk, false, true), nm,
                            cb_layout_text(c, L->name_suffix, mk, true, false), args,
                            gap(c, args_end(L), L->call_suffix),
                            cb_layout_text(c, L->call_suffix, mk, false, false)};
        gr_exlist_push(a, &alts, gr_ex_seq(a, parts, 6));
    }
    if (c->failed)
        return NULL;
    gr_ex_t *call = alts.fail ? NULL : gr_ex_alt(a, alts.v, alts.n);
    /* a call's last text: call_suffix, or the arguments' end when it is empty */
    const char *end = L->call_suffix && *L->call_suffix ? L->call_suffix : args_end(L);
    gr_ex_t *sep = *L->call_sep ? gr_ex_seq3(a, gap(c, end, L->call_sep), cb_layout_text(c, L->call_sep, mk, false, false),
                                             gap(c, L->call_sep, L->call_prefix))
                                : gap(c, end, L->call_prefix);
    gr_ex_t *more = parallel ? gr_ex_rep(a, gr_ex_seq2(a, sep, call), 0, -1) : gr_ex_empty(a);
    gr_ex_t *parts[] = {cb_layout_text(c, L->open, mk, false, false), gap(c, L->open, L->call_prefix), call, more,
                        gap(c, end, L->close), cb_layout_text(c, L->close, mk, false, false)};
    return gr_ex_seq(a, parts, 6);
}
