/* jinja_builtins.c - global functions (range, namespace, raise_exception,
 * strftime_now, dict) and the str/dict methods templates call
 * (s.strip(), s.split(), d.items(), d.get(k, default), ...), with Python's
 * semantics. Lists have no methods: the ImmutableSandboxedEnvironment of
 * transformers forbids list.append and friends. */
#include "chat/template/jinja.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const jinja_func_names[JF_COUNT] = {"range", "namespace", "raise_exception", "strftime_now", "dict"};

static jv_t *oom(jctx_t *c)
{
    jctx_fail(c, "template rendering ran out of memory");
    return NULL;
}

static bool to_int(const jv_t *v, int64_t *o)
{
    if (v->kind == JV_INT) { *o = v->u.i; return true; }
    if (v->kind == JV_BOOL) { *o = v->u.b; return true; }
    return false;
}

jv_t *jinja_call_func(jctx_t *c, int func, jv_t **args, size_t nargs, const char **kwn, jv_t **kwv, size_t nkw)
{
    jarena_t *a = jctx_arena(c);
    switch (func) {
    case JF_RANGE: {
        int64_t v[3] = {0, 0, 1};
        if (nargs < 1 || nargs > 3 || nkw) {
            jctx_fail(c, "range expected 1 to 3 integer arguments");
            return NULL;
        }
        for (size_t i = 0; i < nargs; i++)
            if (!to_int(args[i], &v[i])) {
                jctx_fail(c, "'%s' object cannot be interpreted as an integer", jv_type_name(args[i]));
                return NULL;
            }
        int64_t start = nargs == 1 ? 0 : v[0], stop = nargs == 1 ? v[0] : v[1], step = nargs == 3 ? v[2] : 1;
        if (step == 0) {
            jctx_fail(c, "range() arg 3 must not be zero");
            return NULL;
        }
        jv_t *l = jv_list(a);
        if (!l)
            return oom(c);
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
            if (l->u.list->n >= 100000) {
                jctx_fail(c, "range too large (limit 100000 items)");
                return NULL;
            }
            if (!jv_list_push(a, l, jv_int(a, i)))
                return oom(c);
        }
        l->u.list->view = JVIEW_RANGE;
        l->u.list->range[0] = start;
        l->u.list->range[1] = stop;
        l->u.list->range[2] = step;
        return l;
    }
    case JF_NAMESPACE:
    case JF_DICT: {
        jv_t *d = jv_dict(a, func == JF_NAMESPACE ? JV_NS : JV_DICT);
        if (!d)
            return oom(c);
        for (size_t i = 0; i < nargs; i++) {
            if (args[i]->kind != JV_DICT && args[i]->kind != JV_NS) {
                jctx_fail(c, "%s() positional argument must be a mapping", jinja_func_names[func]);
                return NULL;
            }
            jdict_t *src = args[i]->u.dict;
            for (size_t k = 0; k < src->n; k++)
                if (!jv_dict_setv(a, d, jv_dict_key(a, args[i], k), src->vals[k]))
                    return oom(c);
        }
        for (size_t k = 0; k < nkw; k++)
            if (!jv_dict_set(a, d, kwn[k], strlen(kwn[k]), kwv[k]))
                return oom(c);
        return d;
    }
    case JF_RAISE: {
        jv_t *m = nargs ? jv_stringify(a, args[0], jctx_limit(c)) : jv_str(a, "", 0);
        if (!m)
            return oom(c);
        jctx_raise(c, m->u.str.s, m->u.str.n);
        return NULL;
    }
    case JF_STRFTIME: {
        if (nargs != 1 || args[0]->kind != JV_STR) {
            jctx_fail(c, "strftime_now expects one format string");
            return NULL;
        }
        time_t now = jctx_now(c);
        struct tm tm;
        if (!localtime_r(&now, &tm)) {
            jctx_fail(c, "strftime_now: bad clock");
            return NULL;
        }
        char buf[512];
        size_t n = strftime(buf, sizeof buf, args[0]->u.str.s, &tm);
        return jv_str(a, buf, n) ? jv_str(a, buf, n) : oom(c);
    }
    }
    jctx_fail(c, "unknown function");
    return NULL;
}

static const char *const str_methods[] = {
    "strip", "lstrip", "rstrip", "split", "startswith", "endswith", "replace", "upper", "lower", "title",
    "capitalize", "format", "join", "find", "count", "splitlines", "isdigit", "isalpha", "isspace", "rsplit",
    "removeprefix", "removesuffix", "rfind", "index", "rindex", "partition", "rpartition", "isalnum", "isupper",
    "islower", "isnumeric", "isdecimal", "zfill", "ljust", "rjust", "center", "casefold", NULL};
static const char *const dict_methods[] = {"items", "keys", "values", "get", NULL};
static const char *const list_methods[] = {"index", "count", NULL}; /* the non-mutating ones */
/* with extensions (llama.cpp's engine allows them; transformers' sandbox
 * refuses them) */
static const char *const list_methods_ext[] = {"append", "extend", "pop", "insert", "remove", "clear", NULL};
static const char *const dict_methods_ext[] = {"update", "pop", "setdefault", NULL};

static bool listed(const char *const *m, const char *name)
{
    for (; m && *m; m++)
        if (!strcmp(*m, name))
            return true;
    return false;
}

bool jinja_has_method(jctx_t *c, const jv_t *obj, const char *name)
{
    bool ext = c && jctx_extensions(c);
    switch (obj->kind) {
    case JV_STR: return listed(str_methods, name);
    case JV_DICT: return listed(dict_methods, name) || (ext && listed(dict_methods_ext, name));
    case JV_LIST:
        if (obj->is_gen || obj->u.list->view != JVIEW_NONE)
            return false;
        return listed(list_methods, name) || (ext && !obj->is_tuple && listed(list_methods_ext, name));
    default: return false;
    }
}

/* The mutating list methods (extensions only). */
static jv_t *list_mutate(jctx_t *c, jv_t *self, const char *name, jv_t **args, size_t nargs)
{
    jarena_t *a = jctx_arena(c);
    jlist_t *l = self->u.list;
    jv_t *arg0 = nargs ? args[0] : NULL;
    if (!jctx_charge(c, l->n + 1))
        return NULL;
    if (!strcmp(name, "append")) {
        if (nargs != 1)
            return jctx_fail(c, "append() takes exactly one argument"), NULL;
        return jv_list_push(a, self, arg0) ? jv_none(a) : oom(c);
    }
    if (!strcmp(name, "extend")) {
        jv_t *it = nargs == 1 ? jctx_iterate(c, arg0) : NULL;
        if (!it)
            return nargs == 1 ? NULL : (jctx_fail(c, "extend() takes exactly one argument"), NULL);
        size_t n = it->u.list->n; /* it may be self */
        for (size_t i = 0; i < n; i++)
            if (!jv_list_push(a, self, it->u.list->items[i]))
                return oom(c);
        return jv_none(a);
    }
    if (!strcmp(name, "clear")) {
        l->n = 0;
        return jv_none(a);
    }
    int64_t idx = -1;
    if (!strcmp(name, "insert") || !strcmp(name, "pop")) {
        if ((!strcmp(name, "insert") && nargs != 2) || (!strcmp(name, "pop") && nargs > 1) ||
            (arg0 && arg0->kind != JV_INT && arg0->kind != JV_BOOL))
            return jctx_fail(c, "%s(): bad arguments", name), NULL;
        idx = arg0 ? (arg0->kind == JV_INT ? arg0->u.i : arg0->u.b) : -1;
        if (idx < 0)
            idx += (int64_t)l->n + (name[0] == 'i');
        if (name[0] == 'i') { /* insert clamps like Python */
            if (idx < 0)
                idx = 0;
            if (idx > (int64_t)l->n)
                idx = (int64_t)l->n;
            if (!jv_list_push(a, self, args[1]))
                return oom(c);
            memmove(l->items + idx + 1, l->items + idx, ((size_t)l->n - 1 - (size_t)idx) * sizeof *l->items);
            l->items[idx] = args[1];
            return jv_none(a);
        }
        if (l->n == 0 || idx < 0 || idx >= (int64_t)l->n)
            return jctx_fail(c, l->n ? "pop index out of range" : "pop from empty list"), NULL;
    } else { /* remove */
        if (nargs != 1)
            return jctx_fail(c, "remove() takes exactly one argument"), NULL;
        for (size_t i = 0; i < l->n && idx < 0; i++)
            if (jv_equal(l->items[i], arg0))
                idx = (int64_t)i;
        if (idx < 0)
            return jctx_fail(c, "list.remove(x): x not in list"), NULL;
    }
    jv_t *x = l->items[idx];
    memmove(l->items + idx, l->items + idx + 1, ((size_t)l->n - 1 - (size_t)idx) * sizeof *l->items);
    l->n--;
    return name[0] == 'p' ? x : jv_none(a);
}

/* The mutating dict methods (extensions only). */
static jv_t *dict_mutate(jctx_t *c, jv_t *self, const char *name, jv_t **args, size_t nargs, const char **kwn,
                         jv_t **kwv, size_t nkw)
{
    jarena_t *a = jctx_arena(c);
    if (!jctx_charge(c, self->u.dict->n + 1))
        return NULL;
    if (!strcmp(name, "update")) {
        if (nargs > 1 || (nargs && args[0]->kind != JV_DICT && args[0]->kind != JV_NS))
            return jctx_fail(c, "update() takes a mapping"), NULL;
        for (size_t k = 0; nargs && k < args[0]->u.dict->n; k++)
            if (!jv_dict_setv(a, self, jv_dict_key(a, args[0], k), args[0]->u.dict->vals[k]))
                return oom(c);
        for (size_t k = 0; k < nkw; k++)
            if (!jv_dict_set(a, self, kwn[k], strlen(kwn[k]), kwv[k]))
                return oom(c);
        return jv_none(a);
    }
    if (nargs < 1 || nargs > 2 || !jv_is_hashable(args[0]))
        return jctx_fail(c, "%s() needs a hashable key", name), NULL;
    jv_t *v = jv_dict_getv(self, args[0]);
    if (!strcmp(name, "setdefault")) {
        if (v)
            return v;
        v = nargs > 1 ? args[1] : jv_none(a);
        return jv_dict_setv(a, self, args[0], v) ? v : oom(c);
    }
    if (!v) { /* pop of a missing key */
        if (nargs > 1)
            return args[1];
        jbuf_t b = {0};
        jv_repr(&b, args[0]);
        jctx_fail(c, "%s", b.buf ? b.buf : "KeyError");
        free(b.buf);
        return NULL;
    }
    jv_dict_del(self, args[0]);
    return v;
}

/* ---- string helpers shared with the filters --------------------------- */

static bool in_chars(const char *s, size_t n, const char *chars, size_t cn, size_t *clen)
{
    size_t l = jutf8_offset(s, n, 1);
    *clen = l;
    for (size_t i = 0; i < cn;) {
        size_t cl = jutf8_offset(chars + i, cn - i, 1);
        if (cl == l && !memcmp(chars + i, s, l))
            return true;
        i += cl;
    }
    return false;
}

/* Python str.strip family. chars NULL = whitespace. which: 1 left, 2 right, 3 both. */
jv_t *jinja_str_strip(jctx_t *c, jv_t *s, const jv_t *chars, int which)
{
    const char *p = s->u.str.s;
    size_t b = 0, e = s->u.str.n, l;
    bool ws = !chars || chars->kind == JV_NONE;
    if (which & 1)
        while (b < e && (ws ? jv_is_pyspace(p + b, e - b, &l) : in_chars(p + b, e - b, chars->u.str.s, chars->u.str.n, &l)))
            b += l;
    if (which & 2)
        while (e > b) {
            size_t k = e - 1;
            while (k > b && ((unsigned char)p[k] & 0xC0) == 0x80)
                k--;
            if (!(ws ? jv_is_pyspace(p + k, e - k, &l) : in_chars(p + k, e - k, chars->u.str.s, chars->u.str.n, &l)))
                break;
            e = k;
        }
    jv_t *r = jv_str(jctx_arena(c), p + b, e - b);
    return r ? r : oom(c);
}

static size_t find_sub(const char *s, size_t n, const char *t, size_t tn, size_t from)
{
    if (tn == 0)
        return from <= n ? from : (size_t)-1;
    for (size_t i = from; i + tn <= n; i++)
        if (!memcmp(s + i, t, tn))
            return i;
    return (size_t)-1;
}

jv_t *jinja_str_replace(jctx_t *c, jv_t *s, jv_t *old, jv_t *new, int64_t count)
{
    if (old->kind != JV_STR || new->kind != JV_STR) {
        jctx_fail(c, "replace() arguments must be str");
        return NULL;
    }
    jbuf_t b = {0};
    b.limit = jctx_limit(c);
    const char *p = s->u.str.s;
    size_t n = s->u.str.n, i = 0;
    int64_t done = 0;
    if (old->u.str.n == 0) {
        /* Python inserts `new` between every character and at both ends */
        for (size_t k = 0; k <= n; done++) {
            if (count >= 0 && done >= count) {
                jbuf_put(&b, p + k, n - k);
                break;
            }
            jbuf_put(&b, new->u.str.s, new->u.str.n);
            if (k == n)
                break;
            size_t l = jutf8_offset(p + k, n - k, 1);
            jbuf_put(&b, p + k, l);
            k += l;
        }
    } else {
        while (i <= n) {
            size_t f = (count >= 0 && done >= count) ? (size_t)-1 : find_sub(p, n, old->u.str.s, old->u.str.n, i);
            if (f == (size_t)-1) {
                jbuf_put(&b, p + i, n - i);
                break;
            }
            jbuf_put(&b, p + i, f - i);
            jbuf_put(&b, new->u.str.s, new->u.str.n);
            i = f + old->u.str.n;
            done++;
        }
    }
    jv_t *r = b.overflow ? NULL : jv_str(jctx_arena(c), b.buf ? b.buf : "", b.len);
    free(b.buf);
    if (!r)
        jctx_fail(c, "string too large");
    return r;
}

/* Python str.split(sep=None, maxsplit=-1). */
static jv_t *str_split(jctx_t *c, jv_t *s, jv_t *sep, int64_t maxsplit)
{
    jarena_t *a = jctx_arena(c);
    jv_t *r = jv_list(a);
    if (!r)
        return oom(c);
    const char *p = s->u.str.s;
    size_t n = s->u.str.n, i = 0, l;
    int64_t splits = 0;
    if (!sep || sep->kind == JV_NONE) {
        for (;;) {
            while (i < n && jv_is_pyspace(p + i, n - i, &l))
                i += l;
            if (i >= n)
                break;
            size_t j = i;
            if (maxsplit >= 0 && splits >= maxsplit)
                j = n;
            else
                while (j < n && !jv_is_pyspace(p + j, n - j, &l))
                    j += jutf8_offset(p + j, n - j, 1);
            size_t e = j;
            if (!jv_list_push(a, r, jv_str(a, p + i, e - i)))
                return oom(c);
            splits++;
            i = j;
        }
        return r;
    }
    if (sep->kind != JV_STR || sep->u.str.n == 0) {
        jctx_fail(c, "empty or non-string separator");
        return NULL;
    }
    for (;;) {
        size_t f = (maxsplit >= 0 && splits >= maxsplit) ? (size_t)-1 : find_sub(p, n, sep->u.str.s, sep->u.str.n, i);
        if (f == (size_t)-1) {
            if (!jv_list_push(a, r, jv_str(a, p + i, n - i)))
                return oom(c);
            return r;
        }
        if (!jv_list_push(a, r, jv_str(a, p + i, f - i)))
            return oom(c);
        splits++;
        i = f + sep->u.str.n;
    }
}

/* Python str.rsplit(sep, maxsplit) with maxsplit >= 0. */
static jv_t *str_rsplit(jctx_t *c, jv_t *s, jv_t *sep, int64_t maxsplit)
{
    jarena_t *a = jctx_arena(c);
    const char *p = s->u.str.s;
    size_t n = s->u.str.n;
    jv_t *parts[256];
    size_t np = 0;
    jv_t *r = jv_list(a);
    if (!r)
        return oom(c);
    if (maxsplit > 255)
        return str_split(c, s, sep, -1); /* more splits than we track: same as no limit if they run out */
    if (!sep || sep->kind == JV_NONE) {
        size_t e = n, l;
        for (;;) {
            while (e > 0) { /* skip trailing whitespace */
                size_t k = e - 1;
                while (k > 0 && ((unsigned char)p[k] & 0xC0) == 0x80)
                    k--;
                if (!jv_is_pyspace(p + k, e - k, &l))
                    break;
                e = k;
            }
            if (e == 0)
                break;
            size_t b = e;
            if ((int64_t)np < maxsplit)
                while (b > 0) {
                    size_t k = b - 1;
                    while (k > 0 && ((unsigned char)p[k] & 0xC0) == 0x80)
                        k--;
                    if (jv_is_pyspace(p + k, b - k, &l))
                        break;
                    b = k;
                }
            else
                b = 0;
            if (!(parts[np++] = jv_str(a, p + b, e - b)))
                return oom(c);
            e = b;
            if (b == 0)
                break;
        }
    } else {
        if (sep->kind != JV_STR || sep->u.str.n == 0) {
            jctx_fail(c, "empty or non-string separator");
            return NULL;
        }
        size_t e = n, sl = sep->u.str.n;
        for (;;) {
            size_t f = (size_t)-1;
            if ((int64_t)np < maxsplit)
                for (size_t k = e; k >= sl; k--)
                    if (!memcmp(p + k - sl, sep->u.str.s, sl)) {
                        f = k - sl;
                        break;
                    }
            if (f == (size_t)-1) {
                if (!(parts[np++] = jv_str(a, p, e)))
                    return oom(c);
                break;
            }
            if (!(parts[np++] = jv_str(a, p + f + sl, e - f - sl)))
                return oom(c);
            e = f;
        }
    }
    for (size_t i = np; i > 0; i--)
        if (!jv_list_push(a, r, parts[i - 1]))
            return oom(c);
    return r;
}

static bool affix(const jv_t *s, const jv_t *x, bool end)
{
    if (x->kind != JV_STR || x->u.str.n > s->u.str.n)
        return false;
    size_t off = end ? s->u.str.n - x->u.str.n : 0;
    return !memcmp(s->u.str.s + off, x->u.str.s, x->u.str.n);
}

static jv_t *str_format(jctx_t *c, jv_t *s, jv_t **args, size_t nargs, const char **kwn, jv_t **kwv, size_t nkw)
{
    jbuf_t b = {0};
    b.limit = jctx_limit(c);
    const char *p = s->u.str.s;
    size_t n = s->u.str.n, auto_idx = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '{' && i + 1 < n && p[i + 1] == '{') { jbuf_put(&b, "{", 1); i++; continue; }
        if (p[i] == '}' && i + 1 < n && p[i + 1] == '}') { jbuf_put(&b, "}", 1); i++; continue; }
        if (p[i] != '{') { jbuf_put(&b, p + i, 1); continue; }
        size_t j = i + 1, idx;
        while (j < n && p[j] != '}')
            j++;
        if (j >= n) { free(b.buf); jctx_fail(c, "Single '{' encountered in format string"); return NULL; }
        jv_t *v = NULL;
        if (j == i + 1)
            idx = auto_idx++;
        else if (p[i + 1] >= '0' && p[i + 1] <= '9')
            idx = (size_t)strtoul(p + i + 1, NULL, 10);
        else { /* {name} from keyword arguments */
            idx = (size_t)-1;
            for (size_t k = 0; k < nkw && !v; k++)
                if (strlen(kwn[k]) == j - i - 1 && !memcmp(kwn[k], p + i + 1, j - i - 1))
                    v = kwv[k];
            if (!v) {
                free(b.buf);
                jctx_fail(c, "KeyError: '%.*s'", (int)(j - i - 1), p + i + 1);
                return NULL;
            }
        }
        if (!v && idx >= nargs) { free(b.buf); jctx_fail(c, "Replacement index %zu out of range", idx); return NULL; }
        jv_to_str(&b, v ? v : args[idx]);
        i = j;
    }
    jv_t *r = b.overflow ? NULL : jv_str(jctx_arena(c), b.buf ? b.buf : "", b.len);
    free(b.buf);
    return r ? r : oom(c);
}

/* The rarer str methods: removeprefix / removesuffix, rfind / index /
 * rindex, partition / rpartition, the is* tests, padding. Indexes are in
 * code points, as Python's. */
static jv_t *str_more(jctx_t *c, jv_t *self, const char *name, jv_t *arg0, jv_t *arg1)
{
    jarena_t *a = jctx_arena(c);
    const char *s = self->u.str.s;
    size_t n = self->u.str.n;
    if (!strcmp(name, "casefold"))
        return jinja_str_case(c, self, 0);
    if (!strncmp(name, "remove", 6) || !strcmp(name, "rfind") || !strcmp(name, "index") || !strcmp(name, "rindex") ||
        strstr(name, "partition")) {
        if (!arg0 || arg0->kind != JV_STR) {
            jctx_fail(c, "%s() argument must be str", name);
            return NULL;
        }
        const char *t = arg0->u.str.s;
        size_t tn = arg0->u.str.n;
        if (!strcmp(name, "removeprefix"))
            return tn <= n && !memcmp(s, t, tn) ? jv_str(a, s + tn, n - tn) : self;
        if (!strcmp(name, "removesuffix"))
            return tn && tn <= n && !memcmp(s + n - tn, t, tn) ? jv_str(a, s, n - tn) : self;
        bool last = name[0] == 'r';
        size_t at = (size_t)-1;
        for (size_t i = 0; i + tn <= n; i++)
            if (!memcmp(s + i, t, tn)) {
                at = i;
                if (!last)
                    break;
            }
        if (strstr(name, "partition")) {
            if (tn == 0) {
                jctx_fail(c, "empty separator");
                return NULL;
            }
            jv_t *l = jv_list(a);
            if (!l)
                return oom(c);
            l->is_tuple = true;
            bool found = at != (size_t)-1; /* not found: (s, '', '') or, rpartition, ('', '', s) */
            size_t cut = found ? at : last ? 0 : n;
            jv_t *p0 = jv_str(a, s, cut), *p1 = jv_str(a, found ? t : "", found ? tn : 0);
            jv_t *p2 = found ? jv_str(a, s + at + tn, n - at - tn) : jv_str(a, last ? s : "", last ? n : 0);
            if (!jv_list_push(a, l, p0) || !jv_list_push(a, l, p1) || !jv_list_push(a, l, p2))
                return oom(c);
            return l;
        }
        if (at == (size_t)-1 && strcmp(name, "rfind")) { /* index / rindex */
            jctx_fail(c, "substring not found");
            return NULL;
        }
        return jv_int(a, at == (size_t)-1 ? -1 : (int64_t)jutf8_len(s, at));
    }
    if (!strncmp(name, "is", 2)) {
        bool r = n > 0, cased = false;
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = (unsigned char)s[i];
            bool up = ch >= 'A' && ch <= 'Z', low = ch >= 'a' && ch <= 'z', dig = ch >= '0' && ch <= '9';
            cased = cased || up || low;
            if (!strcmp(name, "isalnum")) r = r && (up || low || dig || ch >= 0x80);
            else if (!strcmp(name, "isupper")) r = r && !low;
            else if (!strcmp(name, "islower")) r = r && !up;
            else r = r && dig; /* isnumeric / isdecimal (ASCII digits) */
        }
        if (!strcmp(name, "isupper") || !strcmp(name, "islower"))
            r = r && cased;
        return jv_bool(a, r);
    }
    /* zfill / ljust / rjust / center: width in code points */
    int64_t w;
    if (!arg0 || !to_int(arg0, &w)) {
        jctx_fail(c, "%s() needs an integer width", name);
        return NULL;
    }
    size_t len = jutf8_len(s, n), fl = 1;
    const char *fill = " ";
    if (arg1) {
        if (arg1->kind != JV_STR || jutf8_len(arg1->u.str.s, arg1->u.str.n) != 1) {
            jctx_fail(c, "The fill character must be exactly one character long");
            return NULL;
        }
        fill = arg1->u.str.s;
        fl = arg1->u.str.n;
    }
    if (w <= (int64_t)len)
        return self;
    if (w > (int64_t)jctx_limit(c)) {
        jctx_fail(c, "output too large");
        return NULL;
    }
    size_t pad = (size_t)w - len, left = 0;
    if (!strcmp(name, "rjust") || !strcmp(name, "zfill"))
        left = pad;
    else if (!strcmp(name, "center"))
        left = pad / 2 + (pad & (size_t)w & 1); /* Python's centring */
    bool sign = !strcmp(name, "zfill") && n && (s[0] == '+' || s[0] == '-');
    if (!strcmp(name, "zfill"))
        fill = "0", fl = 1;
    jbuf_t b = {0};
    if (sign)
        jbuf_put(&b, s, 1);
    for (size_t i = 0; i < left; i++)
        jbuf_put(&b, fill, fl);
    jbuf_put(&b, s + sign, n - sign);
    for (size_t i = left; i < pad; i++)
        jbuf_put(&b, fill, fl);
    jv_t *r = b.overflow ? NULL : jv_str(a, b.buf ? b.buf : "", b.len);
    free(b.buf);
    return r ? r : oom(c);
}

jv_t *jinja_call_method(jctx_t *c, jv_t *self, const char *name, jv_t **args, size_t nargs, const char **kwn,
                        jv_t **kwv, size_t nkw)
{
    jarena_t *a = jctx_arena(c);
    bool split = self->kind == JV_STR && (!strcmp(name, "split") || !strcmp(name, "rsplit"));
    if (nkw && !split && !(self->kind == JV_STR && !strcmp(name, "format")) &&
        !(self->kind == JV_DICT && !strcmp(name, "update"))) {
        jctx_fail(c, "%s() takes no keyword arguments", name);
        return NULL;
    }
    jv_t *arg0 = nargs > 0 ? args[0] : NULL, *arg1 = nargs > 1 ? args[1] : NULL;
    if (split) { /* sep= and maxsplit= may be given by keyword */
        for (size_t k = 0; k < nkw; k++) {
            if (!strcmp(kwn[k], "sep"))
                arg0 = kwv[k];
            else if (!strcmp(kwn[k], "maxsplit"))
                arg1 = kwv[k];
            else {
                jctx_fail(c, "%s() got an unexpected keyword argument '%s'", name, kwn[k]);
                return NULL;
            }
        }
    }
    if (self->kind == JV_LIST && listed(list_methods_ext, name))
        return list_mutate(c, self, name, args, nargs);
    if (self->kind == JV_DICT && listed(dict_methods_ext, name) && !listed(dict_methods, name))
        return dict_mutate(c, self, name, args, nargs, kwn, kwv, nkw);
    if (self->kind == JV_LIST) { /* list.index(x) / list.count(x) */
        if (!arg0) {
            jctx_fail(c, "%s() takes exactly one argument", name);
            return NULL;
        }
        int64_t cnt = 0;
        if (!jctx_charge(c, self->u.list->n))
            return NULL;
        for (size_t i = 0; i < self->u.list->n; i++)
            if (jv_equal(self->u.list->items[i], arg0)) {
                if (name[0] == 'i')
                    return jv_int(a, (int64_t)i);
                cnt++;
            }
        if (name[0] == 'i') {
            jctx_fail(c, "x not in list");
            return NULL;
        }
        return jv_int(a, cnt);
    }
    if (self->kind == JV_DICT && !strcmp(name, "cycle")) { /* loop.cycle(a, b, ...) */
        jv_t *i0 = jv_dict_get(self, "index0", 6);
        if (!nargs || !i0 || i0->kind != JV_INT) {
            jctx_fail(c, "cycle needs at least one argument");
            return NULL;
        }
        return args[(size_t)i0->u.i % nargs];
    }
    if (self->kind == JV_DICT) {
        jdict_t *d = self->u.dict;
        if (!strcmp(name, "get")) {
            if (!arg0) {
                jctx_fail(c, "get expected at least 1 argument");
                return NULL;
            }
            if (!jv_is_hashable(arg0)) {
                jctx_fail(c, "unhashable type: '%s'", jv_type_name(arg0));
                return NULL;
            }
            jv_t *v = jv_dict_getv(self, arg0);
            return v ? v : arg1 ? arg1 : jv_none(a);
        }
        jv_t *l = jv_list(a);
        if (!l)
            return oom(c);
        for (size_t i = 0; i < d->n; i++) {
            jv_t *k = jv_dict_key(a, self, i), *item = k;
            if (!strcmp(name, "values"))
                item = d->vals[i];
            else if (!strcmp(name, "items")) {
                item = jv_list(a);
                if (!item || !jv_list_push(a, item, k) || !jv_list_push(a, item, d->vals[i]))
                    return oom(c);
                item->is_tuple = true;
            }
            if (!jv_list_push(a, l, item))
                return oom(c);
        }
        l->u.list->view = name[0] == 'i' ? JVIEW_ITEMS : name[0] == 'k' ? JVIEW_KEYS : JVIEW_VALUES;
        return l;
    }
    /* str methods */
    if (!strcmp(name, "strip") || !strcmp(name, "lstrip") || !strcmp(name, "rstrip")) {
        if (arg0 && arg0->kind != JV_STR && arg0->kind != JV_NONE) {
            jctx_fail(c, "%s arg must be None or str", name);
            return NULL;
        }
        return jinja_str_strip(c, self, arg0, name[0] == 's' ? 3 : name[0] == 'l' ? 1 : 2);
    }
    if (split) {
        int64_t maxsplit = -1;
        if (arg1 && !to_int(arg1, &maxsplit)) {
            jctx_fail(c, "maxsplit must be an integer");
            return NULL;
        }
        if (name[0] == 'r' && maxsplit >= 0)
            return str_rsplit(c, self, arg0, maxsplit);
        return str_split(c, self, arg0, maxsplit); /* rsplit without a limit splits alike */
    }
    if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) {
        bool end = name[0] == 'e';
        if (!arg0) {
            jctx_fail(c, "%s expected 1 argument", name);
            return NULL;
        }
        bool r = false;
        if (arg0->kind == JV_LIST && arg0->is_tuple) {
            for (size_t i = 0; i < arg0->u.list->n; i++)
                r = r || affix(self, arg0->u.list->items[i], end);
        } else if (arg0->kind == JV_STR)
            r = affix(self, arg0, end);
        else {
            jctx_fail(c, "%s first arg must be str or a tuple of str", name);
            return NULL;
        }
        return jv_bool(a, r);
    }
    if (!strcmp(name, "replace")) {
        int64_t count = -1;
        if (!arg1 || (nargs > 2 && !to_int(args[2], &count))) {
            jctx_fail(c, "replace expected 2 or 3 arguments");
            return NULL;
        }
        return jinja_str_replace(c, self, arg0, arg1, count);
    }
    if (!strcmp(name, "upper")) return jinja_str_case(c, self, 1);
    if (!strcmp(name, "lower")) return jinja_str_case(c, self, 0);
    if (!strcmp(name, "title")) return jinja_str_case(c, self, 2);
    if (!strcmp(name, "capitalize")) {
        jv_t *low = jinja_str_case(c, self, 0);
        return low ? jinja_str_case(c, low, 3) : NULL;
    }
    if (!strcmp(name, "format")) return str_format(c, self, args, nargs, kwn, kwv, nkw);
    if (!strcmp(name, "join")) {
        jv_t *it = arg0 ? jctx_iterate(c, arg0) : NULL;
        if (!it) {
            if (!arg0)
                jctx_fail(c, "join expected 1 argument");
            return NULL;
        }
        jbuf_t b = {0};
        b.limit = jctx_limit(c);
        for (size_t i = 0; i < it->u.list->n; i++) {
            jv_t *x = it->u.list->items[i];
            if (x->kind != JV_STR) {
                free(b.buf);
                jctx_fail(c, "sequence item %zu: expected str instance, %s found", i, jv_type_name(x));
                return NULL;
            }
            if (i)
                jbuf_put(&b, self->u.str.s, self->u.str.n);
            jbuf_put(&b, x->u.str.s, x->u.str.n);
        }
        jv_t *r = b.overflow ? NULL : jv_str(a, b.buf ? b.buf : "", b.len);
        free(b.buf);
        return r ? r : oom(c);
    }
    if (!strcmp(name, "find") || !strcmp(name, "count")) {
        if (!arg0 || arg0->kind != JV_STR) {
            jctx_fail(c, "%s expects a string argument", name);
            return NULL;
        }
        if (name[0] == 'f') {
            size_t f = find_sub(self->u.str.s, self->u.str.n, arg0->u.str.s, arg0->u.str.n, 0);
            return jv_int(a, f == (size_t)-1 ? -1 : (int64_t)jutf8_len(self->u.str.s, f));
        }
        int64_t cnt = 0;
        if (arg0->u.str.n == 0)
            return jv_int(a, (int64_t)jutf8_len(self->u.str.s, self->u.str.n) + 1);
        for (size_t i = 0; (i = find_sub(self->u.str.s, self->u.str.n, arg0->u.str.s, arg0->u.str.n, i)) != (size_t)-1;
             i += arg0->u.str.n)
            cnt++;
        return jv_int(a, cnt);
    }
    if (!strcmp(name, "splitlines")) {
        jv_t *l = jv_list(a);
        if (!l)
            return oom(c);
        const char *p = self->u.str.s;
        size_t n = self->u.str.n, i = 0;
        while (i < n) {
            size_t j = i;
            while (j < n && p[j] != '\n' && p[j] != '\r')
                j++;
            if (!jv_list_push(a, l, jv_str(a, p + i, j - i)))
                return oom(c);
            if (j < n && p[j] == '\r' && j + 1 < n && p[j + 1] == '\n')
                j++;
            i = j + 1;
        }
        return l;
    }
    if (!strcmp(name, "isdigit") || !strcmp(name, "isalpha") || !strcmp(name, "isspace")) {
        bool r = self->u.str.n > 0;
        for (size_t i = 0; i < self->u.str.n; i++) {
            char ch = self->u.str.s[i];
            if (name[2] == 'd') r = r && ch >= '0' && ch <= '9';
            else if (name[2] == 'a') r = r && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'));
            else r = r && (ch == ' ' || (ch >= 9 && ch <= 13));
        }
        return jv_bool(a, r);
    }
    return str_more(c, self, name, arg0, arg1);
}
