/* api_constraint_calls.c - tool calls in a format's layout (see
 * api_constraint_parts.h and chat/parse/toolcall_layout.h): the layout's
 * texts with their free spaces, markers and call numbers, the arguments as
 * a JSON value of the function's parameters or, in the XML-style formats,
 * one element per parameter (api_constraint_params.c). */
#include "server/api/api_constraint_parts.h"

#include <stdio.h>
#include <string.h>


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

/* The last text of the arguments (for the gap after them). */
static const char *args_end(const toolcall_force_layout_t *L)
{
    return !L->param_open ? "}" : L->param_close ? L->param_close : L->param_mid_raw;
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
        gr_ex_t *args = L->param_open ? cb_params_expr(c, L, params, st, param, r)
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
