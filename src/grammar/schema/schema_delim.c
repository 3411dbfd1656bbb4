/* schema_delim.c - strings in the delimited raw syntax (opts.str_delim,
 * Gemma 4's tool-call arguments): a string is the delimiter, its text as
 * it is (no escapes; never containing the delimiter), the delimiter again;
 * an object key is that, or bare (the text alone, its ':' right after it).
 *
 * Every constraint of a string (pattern, format, enum / not exclusions,
 * minLength / maxLength in code points) is an automaton over the raw text,
 * intersected; the delimiter's absence is one more. The delimiter must have
 * no border (no proper prefix that is also a suffix, as "<|\"|>"): then a
 * text without it, followed by it, contains it only at the end, so the
 * reader ends the string exactly there.
 */
#include <string.h>

#include "grammar/schema/schema_impl.h"

/* Bare keys: what the reader takes as one (its key state reads up to ':'
 * and refuses these; the first character is not space nor the
 * delimiter's first byte, which would start a delimited key). */
#define KEY_STOP ":,{}["

bool sc_delim_check(sc_t *c)
{
    const char *d = c->o->str_delim;
    size_t n = strlen(d);
    if (n == 0)
        return sc_fail(c, LF_ERR_INVALID, "an empty string delimiter");
    for (size_t k = 1; k < n; k++)
        if (!memcmp(d, d + n - k, k))
            return sc_fail(c, LF_ERR_UNSUPPORTED, "a string delimiter whose prefix is also its suffix");
    return true;
}

static gr_ex_t *delim_ex(sc_t *c)
{
    return c->o->str_delim_ex ? c->o->str_delim_ex : gr_ex_str(c->a, c->o->str_delim);
}

static gr_dfa_t *dfa_of(sc_t *c, gr_ex_t *e)
{
    gr_dfa_t *d = e ? gr_dfa_from_expr(e, false, c->o->lim, c->err) : NULL;
    if (!d)
        c->failed = true;
    return d;
}

/* a op b (intersect, or subtract b); frees both; NULL (and failed) on error */
static gr_dfa_t *dfa_op(sc_t *c, gr_dfa_t *a, gr_dfa_t *b, bool subtract)
{
    gr_dfa_t *d = NULL;
    if (a && b)
        d = subtract ? gr_dfa_subtract(a, b, c->o->lim, c->err) : gr_dfa_intersect(a, b, c->o->lim, c->err);
    gr_dfa_free(a);
    gr_dfa_free(b);
    if (!d)
        c->failed = true;
    return d;
}

static gr_ex_t *any_text(gr_arena_t *a, int64_t min, int64_t max)
{
    return gr_ex_rep(a, gr_ex_range(a, 0, GR_CP_MAX), min, max);
}

/* One character not in `stop` (nor the delimiter's first byte and spaces
 * when first). */
static gr_ex_t *key_char(sc_t *c, gr_arena_t *a, bool first)
{
    gr_range_t r[16];
    size_t n = 0;
    char stop[16] = KEY_STOP;
    if (first) {
        strcat(stop, " \t\n\r");
        size_t l = strlen(stop);
        stop[l] = c->o->str_delim[0];
        stop[l + 1] = 0;
    }
    /* the ranges between the stop bytes, in order */
    uint32_t lo = 0;
    for (uint32_t b = 0; b < 0x80; b++)
        if (strchr(stop, (int)b) && b) {
            if (b > lo)
                r[n++] = (gr_range_t){lo, b - 1};
            lo = b + 1;
        }
    r[n++] = (gr_range_t){lo, GR_CP_MAX};
    gr_cset_t cs = {r, n, n};
    return gr_ex_chars(a, &cs);
}

/* The raw texts satisfying s (key: only those a bare key can be). */
static gr_dfa_t *text_dfa(sc_t *c, const sc_str_t *s, bool key)
{
    gr_arena_t a;
    gr_arena_init(&a, 64u << 20);
    gr_dfa_t *d = dfa_of(c, any_text(&a, 0, -1));
    d = dfa_op(c, d, dfa_of(c, gr_ex_seq3(&a, any_text(&a, 0, -1), gr_ex_str(&a, c->o->str_delim), any_text(&a, 0, -1))),
               true);
    if (key)
        d = dfa_op(c, d, dfa_of(c, gr_ex_seq2(&a, key_char(c, &a, true), gr_ex_rep(&a, key_char(c, &a, false), 0, -1))),
                   false);
    for (int32_t i = 0; d && i < s->n_patterns; i++)
        d = dfa_op(c, d, dfa_of(c, sc_constraint_expr(c, &a, s->patterns[i], true)), false);
    for (int32_t i = 0; d && i < s->n_formats; i++) {
        const char *re = gr_schema_format_regex(s->formats[i]);
        if (re)
            d = dfa_op(c, d, dfa_of(c, sc_constraint_expr(c, &a, re, false)), false);
    }
    for (int32_t i = 0; d && i < s->n_neg_patterns; i++)
        d = dfa_op(c, d, dfa_of(c, sc_constraint_expr(c, &a, s->neg_patterns[i], true)), true);
    for (int32_t i = 0; d && i < s->n_exclude; i++) {
        const json_object *v = s->exclude[i];
        if (json_object_is_type(v, json_type_string))
            d = dfa_op(c, d,
                       dfa_of(c, gr_ex_bytes(&a, json_object_get_string((json_object *)v),
                                             (size_t)json_object_get_string_len(v))),
                       true);
    }
    if (d && (s->min_len > 0 || s->max_len >= 0))
        d = dfa_op(c, d, dfa_of(c, any_text(&a, s->min_len, s->max_len)), false);
    gr_arena_free(&a);
    return d;
}

gr_ex_t *sc_dstr_expr(sc_t *c, const sc_str_t *s)
{
    if (s->max_len >= 0 && s->max_len < s->min_len)
        return gr_ex_none(c->a);
    gr_dfa_t *d = text_dfa(c, s, false);
    if (!d || !sc_keep_dfa(c, d))
        return NULL;
    if (d->n_states == 0)
        return gr_ex_none(c->a);
    return gr_ex_seq3(c->a, delim_ex(c), gr_ex_dfa(c->a, d, gr_dfa_nullable(d)), delim_ex(c));
}

gr_dfa_t *sc_dstr_key_dfa(sc_t *c, const sc_str_t *s)
{
    return text_dfa(c, s, false);
}

gr_dfa_t *sc_dstr_len_dfa(sc_t *c, int64_t min, int64_t max)
{
    gr_arena_t a;
    gr_arena_init(&a, 1u << 20);
    gr_dfa_t *d = dfa_of(c, any_text(&a, min, max));
    gr_arena_free(&a);
    return d;
}

gr_ex_t *sc_dstr_value(sc_t *c, const char *s, size_t n)
{
    const char *dl = c->o->str_delim;
    if (memmem(s, n, dl, strlen(dl)))
        return gr_ex_none(c->a);
    return gr_ex_seq3(c->a, delim_ex(c), gr_ex_bytes(c->a, s, n), delim_ex(c));
}

/* Whether name can be written bare. */
static bool bare_ok(const char *s, size_t n)
{
    if (n == 0 || strchr(" \t\n\r", s[0]) || !s[0])
        return false;
    for (size_t i = 0; i < n; i++)
        if (!s[i] || strchr(KEY_STOP, s[i]))
            return false;
    return true;
}

gr_ex_t *sc_dstr_key_head(sc_t *c, const char *s, size_t n)
{
    gr_arena_t *a = c->a;
    gr_exlist_t l = {0};
    if (bare_ok(s, n) && s[0] != c->o->str_delim[0])
        gr_exlist_push(a, &l, gr_ex_seq2(a, gr_ex_bytes(a, s, n), gr_ex_str(a, ":")));
    gr_exlist_push(a, &l, gr_ex_seq3(a, sc_dstr_value(c, s, n), c->ws, gr_ex_str(a, ":")));
    if (l.fail)
        return NULL;
    return gr_ex_seq2(a, gr_ex_alt(a, l.v, l.n), c->ws);
}

gr_ex_t *sc_dstr_key_head_dfa(sc_t *c, gr_dfa_t *keys)
{
    gr_arena_t *a = c->a;
    /* the bare ones: keys of bare characters */
    gr_dfa_t *bare = dfa_op(c, gr_dfa_copy(keys),
                            dfa_of(c, gr_ex_seq2(a, key_char(c, a, true), gr_ex_rep(a, key_char(c, a, false), 0, -1))),
                            false);
    if (!bare || !sc_keep_dfa(c, bare))
        return NULL;
    gr_exlist_t l = {0};
    if (bare->n_states)
        gr_exlist_push(a, &l, gr_ex_seq2(a, gr_ex_dfa(a, bare, false), gr_ex_str(a, ":")));
    gr_ex_t *delimited = gr_ex_seq3(a, delim_ex(c), gr_ex_dfa(a, keys, gr_dfa_nullable(keys)), delim_ex(c));
    gr_exlist_push(a, &l, gr_ex_seq3(a, delimited, c->ws, gr_ex_str(a, ":")));
    return l.fail ? NULL : gr_ex_seq2(a, gr_ex_alt(a, l.v, l.n), c->ws);
}

gr_ex_t *sc_dstr_any_key_head(sc_t *c)
{
    sc_str_t none = {.max_len = -1};
    gr_dfa_t *keys = sc_dstr_key_dfa(c, &none);
    if (!keys || !sc_keep_dfa(c, keys))
        return NULL;
    return sc_dstr_key_head_dfa(c, keys);
}
