/* jinja_filters.c - the Jinja2 filters and tests chat templates use, with
 * the exact behaviour of Jinja2 3.1 (map/select/selectattr/reject/rejectattr
 * return generators, which tojson refuses and length cannot measure; unique
 * ignores case by default; indent follows do_indent's splitlines rules) and
 * transformers' tojson (ensure_ascii=False, Python separators, key order). */
#include "chat/template/jinja.h"

#include <json-c/json.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static jv_t *oom(jctx_t *c)
{
    jctx_fail(c, "template rendering ran out of memory");
    return NULL;
}

/* Argument `name` at position pos (after the filtered value) or keyword. */
static jv_t *arg(jv_t **args, size_t nargs, const char **kwn, jv_t **kwv, size_t nkw, size_t pos, const char *name)
{
    for (size_t k = 0; k < nkw; k++)
        if (!strcmp(kwn[k], name))
            return kwv[k];
    return pos < nargs ? args[pos] : NULL;
}

static jv_t *str_of(jctx_t *c, jv_t *v)
{
    jv_t *s = jv_stringify(jctx_arena(c), v, jctx_limit(c));
    if (!s)
        jctx_fail(c, "string too large or out of memory");
    return s;
}

static bool as_int(const jv_t *v, int64_t *o)
{
    if (v->kind == JV_INT) { *o = v->u.i; return true; }
    if (v->kind == JV_BOOL) { *o = v->u.b; return true; }
    return false;
}

static jv_t *gen(jctx_t *c)
{
    jv_t *g = jv_list(jctx_arena(c));
    if (!g)
        return oom(c);
    g->is_gen = true;
    return g;
}

/* Dotted attribute lookup as make_attrgetter does (getitem first). */
static jv_t *attr_get(jctx_t *c, jv_t *item, jv_t *attr)
{
    if (attr->kind == JV_INT)
        return jctx_getitem(c, item, attr);
    if (attr->kind != JV_STR) {
        jctx_fail(c, "attribute must be a string");
        return NULL;
    }
    const char *p = attr->u.str.s;
    size_t n = attr->u.str.n;
    jv_t *v = item;
    while (v) {
        const char *dot = memchr(p, '.', n);
        size_t l = dot ? (size_t)(dot - p) : n;
        jv_t *key = jv_str(jctx_arena(c), p, l);
        if (!key)
            return oom(c);
        bool digits = l > 0;
        for (size_t i = 0; i < l; i++)
            digits = digits && p[i] >= '0' && p[i] <= '9';
        if (digits)
            key = jv_int(jctx_arena(c), strtoll(key->u.str.s, NULL, 10));
        v = jctx_getitem(c, v, key);
        if (!dot)
            break;
        p = dot + 1;
        n -= l + 1;
    }
    return v;
}

static size_t len_of(jctx_t *c, jv_t *v, bool *ok)
{
    *ok = true;
    switch (v->kind) {
    case JV_UNDEF: return 0;
    case JV_STR: return jutf8_len(v->u.str.s, v->u.str.n);
    case JV_LIST:
        if (!v->is_gen)
            return v->u.list->n;
        break;
    case JV_DICT: return v->u.dict->n;
    default: break;
    }
    *ok = false;
    jctx_fail(c, "object of type '%s' has no len()", jv_type_name(v));
    return 0;
}

static jv_t *do_tojson(jctx_t *c, jv_t *v, jv_t **args, size_t nargs, const char **kwn, jv_t **kwv, size_t nkw)
{
    jjson_opts_t o = {false, false, -1, NULL, NULL};
    jv_t *ea = arg(args, nargs, kwn, kwv, nkw, 0, "ensure_ascii");
    jv_t *ind = arg(args, nargs, kwn, kwv, nkw, 1, "indent");
    jv_t *sep = arg(args, nargs, kwn, kwv, nkw, 2, "separators");
    jv_t *sk = arg(args, nargs, kwn, kwv, nkw, 3, "sort_keys");
    int64_t iv;
    if (ea)
        o.ensure_ascii = jv_truthy(ea);
    if (sk)
        o.sort_keys = jv_truthy(sk);
    if (ind && ind->kind != JV_NONE) {
        if (!as_int(ind, &iv) || iv < 0 || iv > 64) {
            jctx_fail(c, "tojson: indent must be a small non-negative integer");
            return NULL;
        }
        o.indent = (int)iv;
    }
    if (sep && sep->kind != JV_NONE) {
        if (sep->kind != JV_LIST || sep->u.list->n != 2 || sep->u.list->items[0]->kind != JV_STR ||
            sep->u.list->items[1]->kind != JV_STR) {
            jctx_fail(c, "tojson: separators must be a pair of strings");
            return NULL;
        }
        o.item_sep = sep->u.list->items[0]->u.str.s;
        o.key_sep = sep->u.list->items[1]->u.str.s;
    }
    jbuf_t b = {0};
    b.limit = jctx_limit(c);
    char msg[200];
    if (!jv_to_json(&b, v, &o, msg, sizeof msg)) {
        free(b.buf);
        jctx_fail(c, "%s", msg);
        return NULL;
    }
    jv_t *r = jv_str(jctx_arena(c), b.buf ? b.buf : "", b.len);
    free(b.buf);
    return r ? r : oom(c);
}

/* Python str.splitlines() boundaries. */
static size_t line_break(const char *s, size_t n, size_t i, size_t *blen)
{
    unsigned char ch = (unsigned char)s[i];
    if (ch == '\r') { *blen = (i + 1 < n && s[i + 1] == '\n') ? 2 : 1; return 1; }
    if (ch == '\n' || ch == '\v' || ch == '\f' || (ch >= 0x1C && ch <= 0x1E)) { *blen = 1; return 1; }
    if (ch == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] == 0x85) { *blen = 2; return 1; }
    if (ch == 0xE2 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 &&
        ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9)) { *blen = 3; return 1; }
    return 0;
}

static jv_t *do_indent(jctx_t *c, jv_t *v, jv_t **args, size_t nargs, const char **kwn, jv_t **kwv, size_t nkw)
{
    jv_t *w = arg(args, nargs, kwn, kwv, nkw, 0, "width");
    jv_t *first = arg(args, nargs, kwn, kwv, nkw, 1, "first");
    jv_t *blank = arg(args, nargs, kwn, kwv, nkw, 2, "blank");
    char ind[256];
    size_t il;
    int64_t wi = 4;
    if (w && w->kind == JV_STR) {
        il = w->u.str.n < sizeof ind ? w->u.str.n : sizeof ind - 1;
        memcpy(ind, w->u.str.s, il);
    } else {
        if (w && (!as_int(w, &wi) || wi < 0 || wi > 200)) {
            jctx_fail(c, "indent width must be a small integer");
            return NULL;
        }
        il = (size_t)wi;
        memset(ind, ' ', il);
    }
    if (v->kind != JV_STR) { /* do_indent does `s += "\n"` */
        jctx_fail(c, "unsupported operand type(s) for +=: '%s' and 'str'", jv_type_name(v));
        return NULL;
    }
    jv_t *s = v;
    /* lines = (s + "\n").splitlines() */
    jbuf_t b = {0};
    b.limit = jctx_limit(c);
    const char *p = s->u.str.s;
    size_t n = s->u.str.n, i = 0, start = 0, lineno = 0;
    bool do_blank = blank && jv_truthy(blank);
    for (;;) {
        size_t bl = 0;
        bool at_end = i >= n;
        if (!at_end && !line_break(p, n, i, &bl)) {
            i++;
            continue;
        }
        /* a line p[start..i) (the implicit "\n" ends the last one) */
        size_t ll = i - start;
        if (lineno > 0) {
            jbuf_put(&b, "\n", 1);
            if (do_blank || ll > 0)
                jbuf_put(&b, ind, il);
        }
        jbuf_put(&b, p + start, ll);
        lineno++;
        if (at_end)
            break;
        i += bl;
        start = i;
    }
    jv_t *r = NULL;
    if (!b.overflow) {
        jbuf_t o = {0};
        o.limit = jctx_limit(c);
        if (first && jv_truthy(first))
            jbuf_put(&o, ind, il);
        jbuf_put(&o, b.buf ? b.buf : "", b.len);
        if (!o.overflow)
            r = jv_str(jctx_arena(c), o.buf ? o.buf : "", o.len);
        free(o.buf);
    }
    free(b.buf);
    if (!r)
        jctx_fail(c, "string too large");
    return r;
}

/* Jinja2's generators fail only when consumed: keep the error for then. */
static jv_t *lazy_error(jctx_t *c, jv_t *g, jv_t *v)
{
    char msg[128];
    snprintf(msg, sizeof msg, "'%s' object is not iterable", jv_type_name(v));
    g->u.list->gen_error = jarena_strndup(jctx_arena(c), msg, strlen(msg));
    return g->u.list->gen_error ? g : oom(c);
}

static jv_t *select_like(jctx_t *c, const char *name, jv_t *v, jv_t **args, size_t nargs)
{
    bool attr_mode = !strcmp(name, "selectattr") || !strcmp(name, "rejectattr");
    bool reject = name[0] == 'r';
    jv_t *g = gen(c);
    if (!g)
        return NULL;
    if (!jv_truthy(v))
        return g;
    if (!jv_is_iterable(v))
        return lazy_error(c, g, v);
    jv_t *it = jctx_iterate(c, v);
    if (!it)
        return NULL;
    size_t ai = 0;
    jv_t *attr = NULL;
    if (attr_mode) {
        if (nargs < 1) {
            jctx_fail(c, "%s needs an attribute", name);
            return NULL;
        }
        attr = args[ai++];
    }
    const char *test = NULL;
    if (ai < nargs) {
        if (args[ai]->kind != JV_STR) {
            jctx_fail(c, "%s: test name must be a string", name);
            return NULL;
        }
        test = args[ai++]->u.str.s;
    }
    for (size_t i = 0; i < it->u.list->n; i++) {
        jv_t *item = it->u.list->items[i], *x = item;
        if (attr && !(x = attr_get(c, item, attr)))
            return NULL;
        int r;
        if (test) {
            r = jinja_test(c, test, x, args + ai, nargs - ai);
            if (r < 0)
                return NULL;
        } else
            r = jv_truthy(x);
        if (r != reject && !jv_list_push(jctx_arena(c), g, item))
            return oom(c);
    }
    return g;
}

static jv_t *do_map(jctx_t *c, jv_t *v, jv_t **args, size_t nargs, const char **kwn, jv_t **kwv, size_t nkw)
{
    jv_t *g = gen(c);
    if (!g)
        return NULL;
    jv_t *attr = arg(NULL, 0, kwn, kwv, nkw, 0, "attribute");
    jv_t *def = arg(NULL, 0, kwn, kwv, nkw, 0, "default");
    if (!attr && (nargs < 1 || args[0]->kind != JV_STR)) {
        jctx_fail(c, "map requires a filter name or attribute=");
        return NULL;
    }
    if (!jv_truthy(v))
        return g;
    if (!jv_is_iterable(v))
        return lazy_error(c, g, v);
    jv_t *it = jctx_iterate(c, v);
    if (!it)
        return NULL;
    for (size_t i = 0; i < it->u.list->n; i++) {
        jv_t *item = it->u.list->items[i], *x;
        if (attr) {
            if (!(x = attr_get(c, item, attr)))
                return NULL;
            if (x->kind == JV_UNDEF && def)
                x = def;
        } else if (!(x = jinja_filter(c, args[0]->u.str.s, item, args + 1, nargs - 1, NULL, NULL, 0)))
            return NULL;
        if (!jv_list_push(jctx_arena(c), g, x))
            return oom(c);
    }
    return g;
}

static jv_t *to_number(jctx_t *c, jv_t *v, bool want_float, jv_t *def)
{
    jarena_t *a = jctx_arena(c);
    if (v->kind == JV_UNDEF) { /* int(Undefined) raises UndefinedError, not caught by do_int */
        jctx_fail(c, "an undefined value cannot be converted to a number");
        return NULL;
    }
    if (v->kind == JV_INT || v->kind == JV_BOOL)
        return want_float ? jv_float(a, (double)(v->kind == JV_INT ? v->u.i : v->u.b))
                          : jv_int(a, v->kind == JV_INT ? v->u.i : v->u.b);
    if (v->kind == JV_FLOAT)
        return want_float ? v : jv_int(a, (int64_t)v->u.f);
    if (v->kind == JV_STR) {
        char *end;
        const char *s = v->u.str.s;
        while (*s == ' ' || *s == '\t' || *s == '\n')
            s++;
        if (want_float) {
            double f = strtod(s, &end);
            if (end != s)
                return jv_float(a, f);
        } else {
            long long i = strtoll(s, &end, 10);
            if (end != s && (*end == 0 || *end == ' ' || *end == '\n'))
                return jv_int(a, i);
            double f = strtod(s, &end);
            if (end != s)
                return jv_int(a, (int64_t)f);
        }
    }
    if (def)
        return def;
    return want_float ? jv_float(a, 0.0) : jv_int(a, 0);
}

jv_t *jinja_escape(jctx_t *c, jv_t *v)
{
    if (v->kind == JV_STR && v->is_safe)
        return v;
    jv_t *s = str_of(c, v);
    if (!s)
        return NULL;
    jbuf_t b = {0};
    b.limit = jctx_limit(c);
    for (size_t i = 0; i < s->u.str.n; i++) {
        char ch = s->u.str.s[i];
        switch (ch) {
        case '&': jbuf_puts(&b, "&amp;"); break;
        case '<': jbuf_puts(&b, "&lt;"); break;
        case '>': jbuf_puts(&b, "&gt;"); break;
        case '"': jbuf_puts(&b, "&#34;"); break;
        case '\'': jbuf_puts(&b, "&#39;"); break;
        default: jbuf_put(&b, &ch, 1);
        }
    }
    jv_t *r = b.overflow ? NULL : jv_str(jctx_arena(c), b.buf ? b.buf : "", b.len);
    free(b.buf);
    if (r)
        r->is_safe = true;
    return r ? r : oom(c);
}

/* center(width=80), wordcount, truncate(length=255, killwords=False,
 * end='...', leeway=5) as Jinja2 defines them (code points, not bytes). */
static jv_t *text_filter(jctx_t *c, const char *name, jv_t *v, jv_t **args, size_t nargs, const char **kwn,
                         jv_t **kwv, size_t nkw)
{
    jarena_t *a = jctx_arena(c);
    if (name[0] == 't' && v->kind == JV_UNDEF)
        return v;
    if (name[0] == 't' && v->kind != JV_STR) { /* do_truncate: `if len(s) <= length + leeway: return s` */
        bool ok;
        size_t len = len_of(c, v, &ok);
        jv_t *lv = arg(args, nargs, kwn, kwv, nkw, 0, "length"), *lw = arg(args, nargs, kwn, kwv, nkw, 3, "leeway");
        int64_t length = 255, leeway = 5;
        if (lv)
            as_int(lv, &length);
        if (lw)
            as_int(lw, &leeway);
        if (!ok)
            return NULL;
        if ((int64_t)len <= length + leeway)
            return v;
        jctx_fail(c, "cannot truncate a %s", jv_type_name(v));
        return NULL;
    }
    jv_t *s = str_of(c, v);
    if (!s)
        return NULL;
    const char *p = s->u.str.s;
    size_t n = s->u.str.n, cps = jutf8_len(p, n), l;
    if (name[0] == 'w') { /* len(re.findall(r"\w+", s)) for ASCII word chars and non-ASCII letters */
        int64_t words = 0;
        bool in = false;
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = (unsigned char)p[i];
            bool w = ch >= 0x80 || ch == '_' || (ch >= '0' && ch <= '9') || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z');
            if (w && !in)
                words++;
            in = w;
        }
        return jv_int(a, words);
    }
    int64_t width;
    jv_t *w = arg(args, nargs, kwn, kwv, nkw, 0, name[0] == 'c' ? "width" : "length");
    width = name[0] == 'c' ? 80 : 255;
    if (w && !as_int(w, &width)) {
        jctx_fail(c, "%s: width must be an integer", name);
        return NULL;
    }
    jbuf_t b = {0};
    b.limit = jctx_limit(c);
    if (name[0] == 'c') { /* str.center: extra space goes right when odd... as CPython */
        if (width > (int64_t)cps && width < 100000) {
            size_t pad = (size_t)width - cps, left = pad / 2 + (pad & (size_t)width & 1);
            for (size_t i = 0; i < left; i++)
                jbuf_put(&b, " ", 1);
            jbuf_put(&b, p, n);
            for (size_t i = 0; i < pad - left; i++)
                jbuf_put(&b, " ", 1);
        } else
            jbuf_put(&b, p, n);
    } else {
        jv_t *kw = arg(args, nargs, kwn, kwv, nkw, 1, "killwords");
        jv_t *end = arg(args, nargs, kwn, kwv, nkw, 2, "end");
        jv_t *lw = arg(args, nargs, kwn, kwv, nkw, 3, "leeway");
        int64_t leeway = 5;
        if (lw && !as_int(lw, &leeway))
            leeway = 5;
        if (end && !(end = str_of(c, end)))
            return NULL;
        const char *es = end ? end->u.str.s : "...";
        size_t en = end ? end->u.str.n : 3, ecp = jutf8_len(es, en);
        if (width < (int64_t)ecp) {
            jctx_fail(c, "expected length >= %zu, got %lld", ecp, (long long)width);
            return NULL;
        }
        if ((int64_t)cps <= width + leeway)
            jbuf_put(&b, p, n);
        else {
            size_t cut = jutf8_offset(p, n, (size_t)(width - (int64_t)ecp));
            if (!(kw && jv_truthy(kw))) { /* s[:length - len(end)].rsplit(" ", 1)[0] */
                size_t k = cut;
                while (k > 0 && p[k - 1] != ' ')
                    k--;
                if (k > 0)
                    cut = k - 1;
            }
            jbuf_put(&b, p, cut);
            jbuf_put(&b, es, en);
        }
    }
    (void)l;
    jv_t *r = b.overflow ? NULL : jv_str(a, b.buf ? b.buf : "", b.len);
    free(b.buf);
    if (!r)
        jctx_fail(c, "string too large");
    return r;
}

/* Sort key: the attribute (if any), lower-cased when not case-sensitive. */
static jv_t *sort_key(jctx_t *c, jv_t *x, jv_t *attr, bool sens)
{
    if (attr && !(x = attr_get(c, x, attr)))
        return NULL;
    if (!sens && x->kind == JV_STR)
        return jinja_str_case(c, x, 0);
    return x;
}

static jv_t *sort_like(jctx_t *c, const char *name, jv_t *v, jv_t **args, size_t nargs, const char **kwn,
                       jv_t **kwv, size_t nkw)
{
    jarena_t *a = jctx_arena(c);
    bool dictsort = name[0] == 'd', minmax = name[0] == 'm';
    jv_t *rev = NULL, *cs, *attr = NULL, *by = NULL;
    if (dictsort) {
        cs = arg(args, nargs, kwn, kwv, nkw, 0, "case_sensitive");
        by = arg(args, nargs, kwn, kwv, nkw, 1, "by");
        rev = arg(args, nargs, kwn, kwv, nkw, 2, "reverse");
    } else if (minmax) {
        cs = arg(args, nargs, kwn, kwv, nkw, 0, "case_sensitive");
        attr = arg(args, nargs, kwn, kwv, nkw, 1, "attribute");
    } else {
        rev = arg(args, nargs, kwn, kwv, nkw, 0, "reverse");
        cs = arg(args, nargs, kwn, kwv, nkw, 1, "case_sensitive");
        attr = arg(args, nargs, kwn, kwv, nkw, 2, "attribute");
    }
    bool sens = cs && jv_truthy(cs), reverse = rev && jv_truthy(rev);
    jv_t *it;
    if (dictsort) {
        if (v->kind != JV_DICT) {
            jctx_fail(c, "You can only sort by either \"key\" or \"value\" of a mapping");
            return NULL;
        }
        it = jinja_call_method(c, v, "items", NULL, 0, NULL, NULL, 0);
        if (!it || !(attr = jv_int(a, by && by->kind == JV_STR && !strcmp(by->u.str.s, "value") ? 1 : 0)))
            return it ? oom(c) : NULL;
    } else if (!(it = jctx_iterate(c, v)))
        return NULL;
    size_t n = it->u.list->n;
    jv_t *out = jv_list(a);
    jv_t **keys = jarena_alloc(a, (n + 1) * sizeof *keys);
    if (!out || !keys)
        return oom(c);
    for (size_t i = 0; i < n; i++) {
        if (!(keys[i] = sort_key(c, it->u.list->items[i], attr, sens)))
            return NULL;
        if (!jv_list_push(a, out, it->u.list->items[i]))
            return oom(c);
    }
    if (minmax) { /* the first smallest / largest, like Python's min/max */
        if (n == 0)
            return jv_undef(a);
        size_t best = 0;
        for (size_t i = 1; i < n; i++) {
            int r;
            if (jv_compare(keys[i], keys[best], &r) < 0) {
                jctx_fail(c, "'<' not supported between instances of '%s' and '%s'", jv_type_name(keys[i]),
                          jv_type_name(keys[best]));
                return NULL;
            }
            if (name[1] == 'i' ? r < 0 : r > 0)
                best = i;
        }
        return it->u.list->items[best];
    }
    /* stable insertion sort (Python's sort is stable) */
    jv_t **items = out->u.list->items;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0; j--) {
            int r;
            if (jv_compare(keys[j - 1], keys[j], &r) < 0) {
                jctx_fail(c, "'<' not supported between instances of '%s' and '%s'", jv_type_name(keys[j - 1]),
                          jv_type_name(keys[j]));
                return NULL;
            }
            if (!(reverse ? r < 0 : r > 0))
                break;
            jv_t *t = keys[j]; keys[j] = keys[j - 1]; keys[j - 1] = t;
            t = items[j]; items[j] = items[j - 1]; items[j - 1] = t;
            if (!jctx_step(c))
                return NULL;
        }
    return out;
}

/* groupby(attribute, default=None, case_sensitive=False): (grouper, list)
 * tuples sorted by the key; without case_sensitive, string keys compare
 * lower-cased and each group shows the first item's key. */
static jv_t *do_groupby(jctx_t *c, jv_t *v, jv_t **args, size_t nargs, const char **kwn, jv_t **kwv, size_t nkw)
{
    jarena_t *a = jctx_arena(c);
    jv_t *attr = arg(args, nargs, kwn, kwv, nkw, 0, "attribute");
    jv_t *def = arg(args, nargs, kwn, kwv, nkw, 1, "default");
    jv_t *cs = arg(args, nargs, kwn, kwv, nkw, 2, "case_sensitive");
    bool sens = cs && jv_truthy(cs);
    if (!attr) {
        jctx_fail(c, "groupby() missing required argument 'attribute'");
        return NULL;
    }
    jv_t *it = jctx_iterate(c, v);
    if (!it)
        return NULL;
    size_t n = it->u.list->n;
    jv_t **keys = jarena_alloc(a, (n + 1) * sizeof *keys), **outk = jarena_alloc(a, (n + 1) * sizeof *outk);
    jv_t **items = jarena_alloc(a, (n + 1) * sizeof *items);
    if (!keys || !outk || !items)
        return oom(c);
    for (size_t i = 0; i < n; i++) {
        items[i] = it->u.list->items[i];
        jv_t *k = attr_get(c, items[i], attr);
        if (!k)
            return NULL;
        if (k->kind == JV_UNDEF && def && def->kind != JV_NONE)
            k = def;
        outk[i] = k;
        if (!sens && k->kind == JV_STR && !(k = jinja_str_case(c, k, 0)))
            return NULL;
        keys[i] = k;
    }
    /* stable insertion sort by key (Python's sorted) */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0; j--) {
            int r;
            if (jv_compare(keys[j - 1], keys[j], &r) < 0) {
                jctx_fail(c, "'<' not supported between instances of '%s' and '%s'", jv_type_name(keys[j]),
                          jv_type_name(keys[j - 1]));
                return NULL;
            }
            if (r <= 0)
                break;
            jv_t *t = keys[j]; keys[j] = keys[j - 1]; keys[j - 1] = t;
            t = outk[j]; outk[j] = outk[j - 1]; outk[j - 1] = t;
            t = items[j]; items[j] = items[j - 1]; items[j - 1] = t;
            if (!jctx_step(c))
                return NULL;
        }
    jv_t *out = jv_list(a), *grp = NULL;
    if (!out)
        return oom(c);
    for (size_t i = 0; i < n; i++) {
        if (!grp || !jv_equal(keys[i - 1], keys[i])) {
            jv_t *lst = jv_list(a);
            if (!lst || !(grp = jv_list(a)) || !jv_list_push(a, grp, outk[i]) || !jv_list_push(a, grp, lst) ||
                !jv_list_push(a, out, grp))
                return oom(c);
            grp->is_tuple = grp->is_group = true;
        }
        if (!jv_list_push(a, grp->u.list->items[1], items[i]))
            return oom(c);
    }
    return out;
}

/* slice(slices, fill_with=None): the items in `slices` columns (a
 * generator of lists), the first len % slices one longer, the others
 * padded with fill_with when given. */
static jv_t *do_slice(jctx_t *c, jv_t *v, jv_t **args, size_t nargs, const char **kwn, jv_t **kwv, size_t nkw)
{
    jarena_t *a = jctx_arena(c);
    jv_t *sl = arg(args, nargs, kwn, kwv, nkw, 0, "slices"), *fill = arg(args, nargs, kwn, kwv, nkw, 1, "fill_with");
    int64_t k;
    if (!sl || !as_int(sl, &k)) {
        jctx_fail(c, "slice needs an integer number of slices");
        return NULL;
    }
    if (k == 0) {
        jctx_fail(c, "integer division or modulo by zero");
        return NULL;
    }
    if (k < 0 || k > 100000) {
        jctx_fail(c, "slice: %lld slices", (long long)k);
        return NULL;
    }
    jv_t *it = jctx_iterate(c, v), *g = gen(c);
    if (!it || !g)
        return NULL;
    int64_t len = (int64_t)it->u.list->n, per = len / k, extra = len % k, offset = 0;
    for (int64_t s = 0; s < k; s++) {
        int64_t start = offset + s * per;
        if (s < extra)
            offset++;
        int64_t end = offset + (s + 1) * per;
        jv_t *col = jv_list(a);
        if (!col || !jv_list_push(a, g, col) || !jctx_charge(c, (uint64_t)(end - start + 1)))
            return col ? NULL : oom(c);
        for (int64_t i = start; i < end; i++)
            if (!jv_list_push(a, col, it->u.list->items[i]))
                return oom(c);
        if (fill && fill->kind != JV_NONE && s >= extra && !jv_list_push(a, col, fill))
            return oom(c);
    }
    return g;
}

/* wordwrap(width=79, break_long_words=True, wrapstring=None,
 * break_on_hyphens=True): each line of the text (str.splitlines) wrapped
 * by textwrap.wrap(expand_tabs=False, replace_whitespace=False), lines
 * and wrapped pieces joined with wrapstring ("\n"). */
static jv_t *do_wordwrap(jctx_t *c, jv_t *v, jv_t **args, size_t nargs, const char **kwn, jv_t **kwv, size_t nkw)
{
    jarena_t *a = jctx_arena(c);
    jv_t *w = arg(args, nargs, kwn, kwv, nkw, 0, "width"), *bl = arg(args, nargs, kwn, kwv, nkw, 1, "break_long_words");
    jv_t *ws = arg(args, nargs, kwn, kwv, nkw, 2, "wrapstring");
    jv_t *bh = arg(args, nargs, kwn, kwv, nkw, 3, "break_on_hyphens");
    int64_t width = 79;
    if (w && !as_int(w, &width)) {
        jctx_fail(c, "wordwrap: width must be an integer");
        return NULL;
    }
    if (width <= 0) {
        jctx_fail(c, "invalid width %lld (must be > 0)", (long long)width);
        return NULL;
    }
    if (v->kind != JV_STR) { /* textwrap needs a str */
        jctx_fail(c, "'%s' object has no attribute 'splitlines'", jv_type_name(v));
        return NULL;
    }
    jv_t *s = v, *sep = ws && ws->kind != JV_NONE ? str_of(c, ws) : jv_str(a, "\n", 1);
    if (!s || !sep)
        return sep ? NULL : oom(c);
    bool long_words = !bl || jv_truthy(bl), hyphens = !bh || jv_truthy(bh);
    jbuf_t b = {0};
    b.limit = jctx_limit(c);
    const char *p = s->u.str.s;
    size_t n = s->u.str.n, i = 0;
    bool first = true;
    while (i < n) { /* str.splitlines(): \n, \r\n, \r, \v, \f, \x1c-\x1e, \x85, U+2028, U+2029 */
        size_t e = i, brk = 0;
        for (; e < n; e++) {
            unsigned char ch = (unsigned char)p[e];
            if (ch == '\r') {
                brk = e + 1 < n && p[e + 1] == '\n' ? 2 : 1;
                break;
            }
            if (ch == '\n' || ch == '\v' || ch == '\f' || (ch >= 0x1c && ch <= 0x1e)) {
                brk = 1;
                break;
            }
            if (ch == 0xc2 && e + 1 < n && (unsigned char)p[e + 1] == 0x85) {
                brk = 2;
                break;
            }
            if (ch == 0xe2 && e + 2 < n && (unsigned char)p[e + 1] == 0x80 &&
                ((unsigned char)p[e + 2] == 0xa8 || (unsigned char)p[e + 2] == 0xa9)) {
                brk = 3;
                break;
            }
        }
        if (!first)
            jbuf_put(&b, sep->u.str.s, sep->u.str.n);
        first = false;
        if (!jinja_wrap_line(c, &b, p + i, e - i, width, long_words, hyphens, sep)) {
            free(b.buf);
            return NULL;
        }
        i = e + brk;
    }
    jv_t *r = b.overflow ? NULL : jv_str(a, b.buf ? b.buf : "", b.len);
    free(b.buf);
    if (!r)
        jctx_fail(c, "string too large");
    return r;
}

jv_t *jinja_filter(jctx_t *c, const char *name, jv_t *v, jv_t **args, size_t nargs, const char **kwn, jv_t **kwv,
                   size_t nkw)
{
    jarena_t *a = jctx_arena(c);
    bool ok;
    if (!strcmp(name, "length") || !strcmp(name, "count")) {
        size_t n = len_of(c, v, &ok);
        return ok ? jv_int(a, (int64_t)n) : NULL;
    }
    if (!strcmp(name, "default") || !strcmp(name, "d")) {
        jv_t *def = arg(args, nargs, kwn, kwv, nkw, 0, "default_value");
        jv_t *boolean = arg(args, nargs, kwn, kwv, nkw, 1, "boolean");
        if (v->kind == JV_UNDEF || (boolean && jv_truthy(boolean) && !jv_truthy(v)))
            return def ? def : jv_str(a, "", 0);
        return v;
    }
    if (!strcmp(name, "trim")) {
        jv_t *chars = arg(args, nargs, kwn, kwv, nkw, 0, "chars");
        jv_t *s = str_of(c, v);
        if (chars && chars->kind != JV_STR && chars->kind != JV_NONE) {
            jctx_fail(c, "trim: chars must be a string");
            return NULL;
        }
        return s ? jinja_str_strip(c, s, chars, 3) : NULL;
    }
    if (!strcmp(name, "string"))
        return str_of(c, v);
    if (!strcmp(name, "safe")) {
        jv_t *s = str_of(c, v), *r;
        if (!s || !(r = jv_str_own(a, s->u.str.s, s->u.str.n)))
            return s ? oom(c) : NULL;
        r->is_safe = true;
        return r;
    }
    if (!strcmp(name, "escape") || !strcmp(name, "e"))
        return jinja_escape(c, v);
    if (!strcmp(name, "upper") || !strcmp(name, "lower") || !strcmp(name, "title") || !strcmp(name, "capitalize")) {
        jv_t *s = str_of(c, v);
        if (!s)
            return NULL;
        if (name[0] == 'c') {
            s = jinja_str_case(c, s, 0);
            return s ? jinja_str_case(c, s, 3) : NULL;
        }
        return jinja_str_case(c, s, name[0] == 'u' ? 1 : name[0] == 'l' ? 0 : 4);
    }
    if (!strcmp(name, "replace")) {
        jv_t *s = str_of(c, v);
        jv_t *old = arg(args, nargs, kwn, kwv, nkw, 0, "old"), *nw = arg(args, nargs, kwn, kwv, nkw, 1, "new");
        jv_t *cnt = arg(args, nargs, kwn, kwv, nkw, 2, "count");
        int64_t count = -1;
        if (!s || !old || !nw) {
            if (s)
                jctx_fail(c, "replace needs old and new");
            return NULL;
        }
        if (cnt && cnt->kind != JV_NONE && !as_int(cnt, &count)) {
            jctx_fail(c, "replace: count must be an integer");
            return NULL;
        }
        if (!(old = str_of(c, old)) || !(nw = str_of(c, nw)))
            return NULL;
        return jinja_str_replace(c, s, old, nw, count);
    }
    if (!strcmp(name, "tojson"))
        return do_tojson(c, v, args, nargs, kwn, kwv, nkw);
    if (!strcmp(name, "from_json") && jctx_extensions(c)) { /* llama.cpp's */
        if (v->kind != JV_STR) {
            jctx_fail(c, "from_json needs a string");
            return NULL;
        }
        json_tokener *tok = json_tokener_new_ex(200);
        json_object *o = tok ? json_tokener_parse_ex(tok, v->u.str.s, (int)v->u.str.n) : NULL;
        bool ok = tok && json_tokener_get_error(tok) == json_tokener_success;
        jv_t *r = ok ? jv_from_json(a, o, 0) : NULL;
        json_object_put(o);
        json_tokener_free(tok);
        if (!ok)
            jctx_fail(c, "from_json: not valid JSON");
        else if (!r)
            oom(c);
        return r;
    }
    if (!strcmp(name, "indent"))
        return do_indent(c, v, args, nargs, kwn, kwv, nkw);
    if (!strcmp(name, "join")) {
        jv_t *sep = arg(args, nargs, kwn, kwv, nkw, 0, "d");
        jv_t *attr = arg(args, nargs, kwn, kwv, nkw, 1, "attribute");
        jv_t *it = jctx_iterate(c, v);
        if (!it || (sep && !(sep = str_of(c, sep))))
            return NULL;
        jbuf_t b = {0};
        b.limit = jctx_limit(c);
        for (size_t i = 0; i < it->u.list->n; i++) {
            jv_t *x = it->u.list->items[i];
            if (attr && !(x = attr_get(c, x, attr))) {
                free(b.buf);
                return NULL;
            }
            if (i && sep)
                jbuf_put(&b, sep->u.str.s, sep->u.str.n);
            jv_to_str(&b, x);
        }
        jv_t *r = b.overflow ? NULL : jv_str(a, b.buf ? b.buf : "", b.len);
        free(b.buf);
        if (!r)
            jctx_fail(c, "string too large");
        return r;
    }
    if (!strcmp(name, "first") || !strcmp(name, "last")) {
        if (name[0] == 'l' && v->kind == JV_LIST && v->is_gen) {
            jctx_fail(c, "'generator' object is not reversible");
            return NULL;
        }
        jv_t *it = jctx_iterate(c, v);
        if (!it)
            return NULL;
        if (it->u.list->n == 0)
            return jv_undef(a);
        return it->u.list->items[name[0] == 'f' ? 0 : it->u.list->n - 1];
    }
    if (!strcmp(name, "list")) {
        jv_t *it = jctx_iterate(c, v);
        if (!it)
            return NULL;
        jv_t *l = jv_list(a);
        if (!l)
            return oom(c);
        for (size_t i = 0; i < it->u.list->n; i++)
            if (!jv_list_push(a, l, it->u.list->items[i]))
                return oom(c);
        return l;
    }
    if (!strcmp(name, "items")) {
        if (v->kind == JV_UNDEF)
            return gen(c);
        if (v->kind != JV_DICT && v->kind != JV_NS) {
            jv_t *g = gen(c);
            if (!g)
                return NULL;
            g->u.list->gen_error = "Can only get item pairs from a mapping.";
            return g;
        }
        jv_t *self = v;
        if (v->kind == JV_NS) {
            self = jv_dict(a, JV_DICT);
            if (!self)
                return oom(c);
            self->u.dict = v->u.dict;
        }
        jv_t *r = jinja_call_method(c, self, "items", NULL, 0, NULL, NULL, 0);
        if (r)
            r->is_gen = true;
        return r;
    }
    if (!strcmp(name, "map"))
        return do_map(c, v, args, nargs, kwn, kwv, nkw);
    if (!strcmp(name, "select") || !strcmp(name, "reject") || !strcmp(name, "selectattr") || !strcmp(name, "rejectattr"))
        return select_like(c, name, v, args, nargs);
    if (!strcmp(name, "unique")) {
        jv_t *cs = arg(args, nargs, kwn, kwv, nkw, 0, "case_sensitive");
        jv_t *attr = arg(args, nargs, kwn, kwv, nkw, 1, "attribute");
        bool sens = cs && jv_truthy(cs);
        if (!jv_is_iterable(v)) {
            jv_t *g = gen(c);
            return g ? lazy_error(c, g, v) : NULL;
        }
        jv_t *it = jctx_iterate(c, v);
        jv_t *g = gen(c), *keys = jv_list(a);
        if (!it || !g || !keys)
            return it ? oom(c) : NULL;
        for (size_t i = 0; i < it->u.list->n; i++) {
            jv_t *x = it->u.list->items[i], *k = x;
            if (attr && !(k = attr_get(c, x, attr)))
                return NULL;
            if (!sens && k->kind == JV_STR && !(k = jinja_str_case(c, k, 0)))
                return NULL;
            if (k->kind == JV_DICT || k->kind == JV_NS || (k->kind == JV_LIST && !k->is_tuple)) {
                jctx_fail(c, "unhashable type: '%s'", jv_type_name(k));
                return NULL;
            }
            bool seen = false;
            if (!jctx_charge(c, keys->u.list->n))
                return NULL;
            for (size_t j = 0; j < keys->u.list->n && !seen; j++)
                seen = jv_equal(keys->u.list->items[j], k);
            if (!seen && (!jv_list_push(a, keys, k) || !jv_list_push(a, g, x)))
                return oom(c);
        }
        return g;
    }
    if (!strcmp(name, "int") || !strcmp(name, "float"))
        return to_number(c, v, name[0] == 'f', arg(args, nargs, kwn, kwv, nkw, 0, "default"));
    if (!strcmp(name, "abs")) {
        if (v->kind == JV_INT)
            return jv_int(a, v->u.i < 0 ? -v->u.i : v->u.i);
        if (v->kind == JV_BOOL)
            return jv_int(a, v->u.b);
        if (v->kind == JV_FLOAT)
            return jv_float(a, fabs(v->u.f));
        jctx_fail(c, "bad operand type for abs(): '%s'", jv_type_name(v));
        return NULL;
    }
    if (!strcmp(name, "round")) {
        jv_t *prec = arg(args, nargs, kwn, kwv, nkw, 0, "precision");
        jv_t *method = arg(args, nargs, kwn, kwv, nkw, 1, "method");
        int64_t p = 0;
        if (prec && !as_int(prec, &p)) {
            jctx_fail(c, "round: precision must be an integer");
            return NULL;
        }
        if (v->kind == JV_INT || v->kind == JV_BOOL)
            return v->kind == JV_INT ? v : jv_int(a, v->u.b);
        if (v->kind != JV_FLOAT) {
            jctx_fail(c, "round: not a number");
            return NULL;
        }
        double m = pow(10.0, (double)p), x = v->u.f * m;
        const char *meth = method && method->kind == JV_STR ? method->u.str.s : "common";
        x = !strcmp(meth, "ceil") ? ceil(x) : !strcmp(meth, "floor") ? floor(x) : nearbyint(x);
        return jv_float(a, x / m);
    }
    if (!strcmp(name, "sum")) {
        jv_t *attr = arg(args, nargs, kwn, kwv, nkw, 0, "attribute");
        jv_t *acc = arg(args, nargs, kwn, kwv, nkw, 1, "start");
        jv_t *it = jctx_iterate(c, v);
        if (!it)
            return NULL;
        if (!acc)
            acc = jv_int(a, 0);
        for (size_t i = 0; i < it->u.list->n && acc; i++) {
            jv_t *x = it->u.list->items[i];
            if (attr && !(x = attr_get(c, x, attr)))
                return NULL;
            bool fl = acc->kind == JV_FLOAT || x->kind == JV_FLOAT;
            int64_t ai, xi;
            if (fl && (acc->kind == JV_FLOAT || as_int(acc, &ai)) && (x->kind == JV_FLOAT || as_int(x, &xi))) {
                double fa = acc->kind == JV_FLOAT ? acc->u.f : (double)ai, fx = x->kind == JV_FLOAT ? x->u.f : (double)xi;
                acc = jv_float(a, fa + fx);
            } else if (as_int(acc, &ai) && as_int(x, &xi))
                acc = jv_int(a, ai + xi);
            else {
                jctx_fail(c, "unsupported operand type(s) for +: '%s' and '%s'", jv_type_name(acc), jv_type_name(x));
                return NULL;
            }
        }
        return acc ? acc : oom(c);
    }
    if (!strcmp(name, "format")) {
        jv_t *s = str_of(c, v);
        if (!s)
            return NULL;
        jv_t *t;
        if (nkw) {
            if (!(t = jv_dict(a, JV_DICT)))
                return oom(c);
            for (size_t k = 0; k < nkw; k++)
                if (!jv_dict_set(a, t, kwn[k], strlen(kwn[k]), kwv[k]))
                    return oom(c);
        } else {
            if (!(t = jv_list(a)))
                return oom(c);
            t->is_tuple = true;
            for (size_t k = 0; k < nargs; k++)
                if (!jv_list_push(a, t, args[k]))
                    return oom(c);
        }
        return jinja_percent_format(c, s, t);
    }
    if (!strcmp(name, "sort") || !strcmp(name, "dictsort") || !strcmp(name, "min") || !strcmp(name, "max"))
        return sort_like(c, name, v, args, nargs, kwn, kwv, nkw);
    if (!strcmp(name, "attr")) {
        jv_t *n = arg(args, nargs, kwn, kwv, nkw, 0, "name");
        if (!n || n->kind != JV_STR) {
            jctx_fail(c, "attr needs an attribute name");
            return NULL;
        }
        if (v->kind == JV_UNDEF)
            return v;
        if (v->kind == JV_DICT && !jinja_has_method(c, v, n->u.str.s))
            return jv_undef(a); /* getattr() only: no fallback to dict items */
        return jctx_getattr(c, v, n->u.str.s, n->u.str.n);
    }
    if (!strcmp(name, "batch")) {
        jv_t *cnt = arg(args, nargs, kwn, kwv, nkw, 0, "linecount");
        jv_t *fill = arg(args, nargs, kwn, kwv, nkw, 1, "fill_with");
        int64_t k;
        if (!cnt || !as_int(cnt, &k) || k <= 0) {
            jctx_fail(c, "batch needs a positive count");
            return NULL;
        }
        jv_t *it = jctx_iterate(c, v), *g = gen(c), *cur = NULL;
        if (!it || !g)
            return NULL;
        for (size_t i = 0; i < it->u.list->n; i++) {
            if (!cur && (!(cur = jv_list(a)) || !jv_list_push(a, g, cur)))
                return oom(c);
            if (!jv_list_push(a, cur, it->u.list->items[i]))
                return oom(c);
            if ((int64_t)cur->u.list->n == k)
                cur = NULL;
        }
        while (cur && fill && fill->kind != JV_NONE && (int64_t)cur->u.list->n < k)
            if (!jv_list_push(a, cur, fill))
                return oom(c);
        return g;
    }
    if (!strcmp(name, "center") || !strcmp(name, "wordcount") || !strcmp(name, "truncate"))
        return text_filter(c, name, v, args, nargs, kwn, kwv, nkw);
    if (!strcmp(name, "wordwrap"))
        return do_wordwrap(c, v, args, nargs, kwn, kwv, nkw);
    if (!strcmp(name, "groupby"))
        return do_groupby(c, v, args, nargs, kwn, kwv, nkw);
    if (!strcmp(name, "slice"))
        return do_slice(c, v, args, nargs, kwn, kwv, nkw);
    if (!strcmp(name, "reverse")) {
        if (v->kind == JV_STR) {
            jv_t *st = jv_int(a, -1);
            return st ? jinja_slice(c, v, NULL, NULL, st) : oom(c);
        }
        jv_t *it = jctx_iterate(c, v), *l = jv_list(a);
        if (!it || !l)
            return it ? oom(c) : NULL;
        for (size_t i = it->u.list->n; i > 0; i--)
            if (!jv_list_push(a, l, it->u.list->items[i - 1]))
                return oom(c);
        l->is_gen = !v->is_gen; /* reversed(list) is an iterator; a generator becomes a list */
        return l;
    }
    jctx_fail(c, "No filter named '%s'.", name);
    return NULL;
}
