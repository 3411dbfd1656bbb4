/* schema_string.c - string schemas (pattern, format, minLength/maxLength,
 * excluded values) as JSON string terminals, and the format definitions.
 *
 * A string with one pattern or format is a GR_EX_JSTR over the pattern's
 * code point expression; several constraints (or excluded values) are
 * intersected as DFAs of the whole encoded string (tags kept, dfa.h), so
 * lengths are still counted by the terminal. Formats follow the checkers of
 * Python's jsonschema (what JSONSchemaBench used) restricted to what ajv's
 * ajv-formats also accepts, so generated values pass both.
 */
#include "grammar/schema/schema_impl.h"

#include <stdlib.h>
#include <string.h>

#include "grammar/regex/regex.h"

#define LEAPY "(\\d\\d(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)"
#define YEAR "(000[1-9]|00[1-9]\\d|0[1-9]\\d\\d|[1-9]\\d{3})"
#define DATE                                                                                    \
    "(" YEAR "-(0[13578]|1[02])-(0[1-9]|[12]\\d|3[01])|" YEAR "-(0[469]|11)-(0[1-9]|[12]\\d|30)|" \
    YEAR "-02-(0[1-9]|1\\d|2[0-8])|" LEAPY "-02-29)"
#define TIME "([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(\\.\\d+)?([zZ]|[+-]([01]\\d|2[0-3]):[0-5]\\d)"
#define H16 "[0-9a-fA-F]{1,4}"
#define V4O "(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)"
#define IPV4 V4O "(\\." V4O "){3}"
#define LS32 "(" H16 ":" H16 "|" IPV4 ")"
#define IPV6                                                                                          \
    "((" H16 ":){6}" LS32 "|::(" H16 ":){5}" LS32 "|(" H16 ")?::(" H16 ":){4}" LS32 "|((" H16           \
    ":){0,1}" H16 ")?::(" H16 ":){3}" LS32 "|((" H16 ":){0,2}" H16 ")?::(" H16 ":){2}" LS32 "|((" H16 \
    ":){0,3}" H16 ")?::" H16 ":" LS32 "|((" H16 ":){0,4}" H16 ")?::" LS32 "|((" H16 ":){0,5}" H16        \
    ")?::" H16 "|((" H16 ":){0,6}" H16 ")?::)"
#define LABEL "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
#define UNRES "A-Za-z0-9\\-._~"
#define SUBD "!$&'()*+,;="
#define PCT "%[0-9a-fA-F]{2}"
#define PCHAR "([" UNRES SUBD ":@]|" PCT ")"
#define URI                                                                                           \
    "[A-Za-z][A-Za-z0-9+\\-.]*:(//(([" UNRES SUBD ":]|" PCT ")*@)?(\\[(" IPV6 ")\\]|" IPV4 "|([" UNRES  \
    SUBD "]|" PCT ")*)(:\\d*)?(/" PCHAR "*)*|/(" PCHAR "+(/" PCHAR "*)*)?|" PCHAR "+(/" PCHAR "*)*|)" \
    "(\\?(" PCHAR "|[/?])*)?(#(" PCHAR "|[/?])*)?"
#define EMAIL_ATOM "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
#define EMAIL EMAIL_ATOM "(\\." EMAIL_ATOM ")*@(" LABEL "\\.)+" LABEL

static const struct {
    const char *name, *re;
} formats[] = {
    {"date", DATE},
    {"time", TIME},
    {"date-time", DATE "[tT]" TIME},
    {"email", EMAIL},
    {"uuid", "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"},
    {"ipv4", IPV4},
    {"ipv6", IPV6},
    {"uri", URI},
    {"hostname", LABEL "(\\." LABEL ")*"},
};

static const char *format_re(const char *name)
{
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
        if (!strcmp(formats[i].name, name))
            return formats[i].re;
    return NULL;
}

bool sc_format_known(const char *name)
{
    return format_re(name) != NULL;
}

const char *gr_schema_format_regex(const char *name)
{
    return name ? format_re(name) : NULL;
}

/* Code point expression of a constraint (pattern: search semantics). */
gr_ex_t *sc_constraint_expr(sc_t *c, gr_arena_t *a, const char *re, bool pattern)
{
    gr_ex_t *e = gr_regex_parse(a, re, strlen(re), pattern ? GR_REGEX_SEARCH : GR_REGEX_FULL, c->err);
    if (!e) {
        if (pattern && c->err) {
            lf_err_t inner = *c->err;
            sc_fail(c, inner.code == LF_ERR_UNSUPPORTED ? LF_ERR_UNSUPPORTED : LF_ERR_INVALID,
                    "'pattern': %.400s", inner.msg);
        }
        c->failed = true;
    }
    return e;
}

gr_ex_t *sc_jstr(sc_t *c, gr_arena_t *a, gr_ex_t *content, int64_t min, int64_t max)
{
    gr_ex_t *e = gr_ex_jstr(a, content, min, max);
    if (e)
        e->esc_lt = c->o->escape_lt;
    return e;
}

/* DFA of the whole JSON string for one content expression (tags kept). */
static gr_dfa_t *jstr_dfa(sc_t *c, gr_arena_t *a, gr_ex_t *content)
{
    gr_ex_t *j = sc_jstr(c, a, content, 0, -1);
    gr_dfa_t *d = j ? gr_dfa_from_expr(j, true, c->o->lim, c->err) : NULL;
    if (!d) {
        if (!j)
            sc_oom(c);
        c->failed = true;
    }
    return d;
}

gr_ex_t *sc_literal_chars(gr_arena_t *a, const char *s, size_t n)
{
    gr_exlist_t l = {0};
    for (size_t i = 0; i < n;) {
        unsigned char ch = (unsigned char)s[i];
        uint32_t cp = ch;
        size_t len = ch < 0x80 ? 1 : (ch >> 5) == 6 ? 2 : (ch >> 4) == 14 ? 3 : 4;
        if (i + len > n)
            len = 1;
        if (len > 1) {
            cp = len == 2 ? ch & 0x1F : len == 3 ? ch & 0x0F : ch & 0x07;
            for (size_t k = 1; k < len; k++)
                cp = cp << 6 | ((unsigned char)s[i + k] & 0x3F);
        }
        gr_exlist_push(a, &l, gr_ex_range(a, cp, cp));
        i += len;
    }
    return l.fail ? NULL : gr_ex_seq(a, l.v, l.n);
}

gr_dfa_t *sc_string_dfa(sc_t *c, const sc_str_t *s)
{
    gr_arena_t a;
    gr_arena_init(&a, 64u << 20);
    gr_dfa_t *d = jstr_dfa(c, &a, NULL);
    for (int32_t i = 0; d && i < s->n_patterns; i++) {
        gr_ex_t *e = sc_constraint_expr(c, &a, s->patterns[i], true);
        gr_dfa_t *x = e ? jstr_dfa(c, &a, e) : NULL;
        gr_dfa_t *y = x ? gr_dfa_intersect(d, x, c->o->lim, c->err) : NULL;
        gr_dfa_free(x);
        gr_dfa_free(d);
        d = y;
    }
    for (int32_t i = 0; d && i < s->n_formats; i++) {
        const char *re = format_re(s->formats[i]);
        if (!re)
            continue;
        gr_ex_t *e = sc_constraint_expr(c, &a, re, false);
        gr_dfa_t *x = e ? jstr_dfa(c, &a, e) : NULL;
        gr_dfa_t *y = x ? gr_dfa_intersect(d, x, c->o->lim, c->err) : NULL;
        gr_dfa_free(x);
        gr_dfa_free(d);
        d = y;
    }
    for (int32_t i = 0; d && i < s->n_neg_patterns; i++) {
        gr_ex_t *e = sc_constraint_expr(c, &a, s->neg_patterns[i], true);
        gr_dfa_t *x = e ? jstr_dfa(c, &a, e) : NULL;
        gr_dfa_t *y = x ? gr_dfa_subtract(d, x, c->o->lim, c->err) : NULL;
        gr_dfa_free(x);
        gr_dfa_free(d);
        d = y;
    }
    for (int32_t i = 0; d && i < s->n_exclude; i++) {
        const json_object *v = s->exclude[i];
        if (!json_object_is_type(v, json_type_string))
            continue;
        gr_ex_t *e = sc_literal_chars(&a, json_object_get_string((json_object *)v), (size_t)json_object_get_string_len(v));
        gr_dfa_t *x = e ? jstr_dfa(c, &a, e) : NULL;
        gr_dfa_t *y = x ? gr_dfa_subtract(d, x, c->o->lim, c->err) : NULL;
        gr_dfa_free(x);
        gr_dfa_free(d);
        d = y;
    }
    if (!d)
        c->failed = true;
    gr_arena_free(&a);
    return d;
}

gr_ex_t *sc_string_expr(sc_t *c, const sc_str_t *s)
{
    int32_t n_fmt = 0;
    for (int32_t i = 0; i < s->n_formats; i++)
        n_fmt += format_re(s->formats[i]) != NULL;
    int32_t n = s->n_patterns + n_fmt + s->n_exclude + s->n_neg_patterns;
    if (s->max_len >= 0 && s->max_len < s->min_len)
        return gr_ex_none(c->a);
    if (n == 0)
        return sc_jstr(c, c->a, NULL, s->min_len, s->max_len);
    if (n == 1 && s->n_exclude == 0 && s->n_neg_patterns == 0) {
        const char *re = s->n_patterns ? s->patterns[0] : NULL;
        for (int32_t i = 0; !re && i < s->n_formats; i++)
            re = format_re(s->formats[i]);
        gr_ex_t *e = sc_constraint_expr(c, c->a, re, s->n_patterns > 0);
        return e ? sc_jstr(c, c->a, e, s->min_len, s->max_len) : NULL;
    }
    gr_dfa_t *d = sc_string_dfa(c, s);
    if (!d)
        return NULL;
    if (!sc_keep_dfa(c, d))
        return NULL;
    if (d->n_states == 0)
        return gr_ex_none(c->a);
    return gr_ex_dfa_string(c->a, d, s->min_len, s->max_len);
}

/* ---- literal checks (enum/const filtering) ------------------------------------- */

static bool text_match(sc_t *c, const char *re, bool search, const char *text, size_t len, bool *ok)
{
    gr_arena_t a;
    gr_arena_init(&a, 16u << 20);
    gr_ex_t *e = gr_regex_parse(&a, re, strlen(re), search ? GR_REGEX_SEARCH : GR_REGEX_FULL, c->err);
    gr_dfa_t *d = e ? gr_dfa_from_expr(e, false, c->o->lim, c->err) : NULL;
    gr_arena_free(&a);
    if (!d) {
        *ok = false;
        return false;
    }
    bool m = gr_dfa_matches(d, text, len);
    gr_dfa_free(d);
    *ok = true;
    return m;
}

bool sc_format_match(sc_t *c, const char *name, const char *text, size_t len)
{
    const char *re = format_re(name);
    bool ok;
    return !re || text_match(c, re, false, text, len, &ok) || !ok;
}

bool sc_pattern_match(sc_t *c, const char *pattern, const char *text, size_t len, bool *ok)
{
    return text_match(c, pattern, true, text, len, ok);
}
