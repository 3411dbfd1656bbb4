/* jinja_value.c - the value model of the interpreter with Python semantics.
 *
 * Values are Python objects as far as chat templates can tell: truthiness,
 * str() and repr() (dict/list print with single quotes), == across int/float/
 * bool, ordering, and json.dumps output (Python's separators, key order kept,
 * ensure_ascii off by default, float repr). */
#include "chat/template/jinja.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool jbuf_put(jbuf_t *b, const char *s, size_t n)
{
    if (b->overflow)
        return false;
    if (b->limit && b->len + n > b->limit) {
        b->overflow = true;
        return false;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *nb = realloc(b->buf, cap);
        if (!nb) {
            b->overflow = true;
            return false;
        }
        b->buf = nb;
        b->cap = cap;
    }
    if (n)
        memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = 0;
    return true;
}

bool jbuf_puts(jbuf_t *b, const char *s) { return jbuf_put(b, s, strlen(s)); }

jv_t *jv_new(jarena_t *a, jv_kind_t k)
{
    jv_t *v = jarena_alloc(a, sizeof *v);
    if (v)
        v->kind = k;
    return v;
}

jv_t *jv_undef(jarena_t *a) { return jv_new(a, JV_UNDEF); }
jv_t *jv_none(jarena_t *a) { return jv_new(a, JV_NONE); }

jv_t *jv_bool(jarena_t *a, bool b)
{
    jv_t *v = jv_new(a, JV_BOOL);
    if (v)
        v->u.b = b;
    return v;
}

jv_t *jv_int(jarena_t *a, int64_t i)
{
    jv_t *v = jv_new(a, JV_INT);
    if (v)
        v->u.i = i;
    return v;
}

jv_t *jv_float(jarena_t *a, double f)
{
    jv_t *v = jv_new(a, JV_FLOAT);
    if (v)
        v->u.f = f;
    return v;
}

jv_t *jv_str_own(jarena_t *a, const char *s, size_t n)
{
    jv_t *v = jv_new(a, JV_STR);
    if (v) {
        v->u.str.s = s;
        v->u.str.n = n;
    }
    return v;
}

jv_t *jv_str(jarena_t *a, const char *s, size_t n)
{
    char *p = jarena_strndup(a, s, n);
    return p ? jv_str_own(a, p, n) : NULL;
}

jv_t *jv_list(jarena_t *a)
{
    jv_t *v = jv_new(a, JV_LIST);
    if (v && !(v->u.list = jarena_alloc(a, sizeof(jlist_t))))
        return NULL;
    return v;
}

jv_t *jv_dict(jarena_t *a, jv_kind_t kind)
{
    jv_t *v = jv_new(a, kind);
    if (v && !(v->u.dict = jarena_alloc(a, sizeof(jdict_t))))
        return NULL;
    return v;
}

bool jv_list_push(jarena_t *a, jv_t *lv, jv_t *item)
{
    jlist_t *l = lv->u.list;
    if (!item)
        return false;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        jv_t **ni = jarena_alloc(a, cap * sizeof *ni);
        if (!ni)
            return false;
        if (l->n)
            memcpy(ni, l->items, l->n * sizeof *ni);
        l->items = ni;
        l->cap = cap;
    }
    l->items[l->n++] = item;
    return true;
}

jv_t *jv_dict_get(const jv_t *dv, const char *k, size_t kn)
{
    const jdict_t *d = dv->u.dict;
    for (size_t i = 0; i < d->n; i++)
        if (d->klens[i] == kn && !memcmp(d->keys[i], k, kn))
            return d->vals[i];
    return NULL;
}

static bool dict_put(jarena_t *a, jv_t *dv, const char *k, size_t kn, jv_t *kobj, jv_t *v)
{
    jdict_t *d = dv->u.dict;
    if (!v)
        return false;
    for (size_t i = 0; i < d->n; i++)
        if (d->klens[i] == kn && !memcmp(d->keys[i], k, kn)) {
            d->vals[i] = v;
            return true;
        }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4;
        const char **nk = jarena_alloc(a, cap * sizeof *nk);
        size_t *nl = jarena_alloc(a, cap * sizeof *nl);
        jv_t **no = jarena_alloc(a, cap * sizeof *no);
        jv_t **nv = jarena_alloc(a, cap * sizeof *nv);
        if (!nk || !nl || !no || !nv)
            return false;
        if (d->n) {
            memcpy(nk, d->keys, d->n * sizeof *nk);
            memcpy(nl, d->klens, d->n * sizeof *nl);
            memcpy(no, d->kobj, d->n * sizeof *no);
            memcpy(nv, d->vals, d->n * sizeof *nv);
        }
        d->keys = nk;
        d->klens = nl;
        d->kobj = no;
        d->vals = nv;
        d->cap = cap;
    }
    char *kc = jarena_strndup(a, k, kn);
    if (!kc)
        return false;
    d->keys[d->n] = kc;
    d->klens[d->n] = kn;
    d->kobj[d->n] = kobj;
    d->vals[d->n] = v;
    d->n++;
    return true;
}

bool jv_dict_set(jarena_t *a, jv_t *dv, const char *k, size_t kn, jv_t *v)
{
    return dict_put(a, dv, k, kn, NULL, v);
}

bool jv_is_hashable(const jv_t *v)
{
    switch (v->kind) {
    case JV_DICT: return false;
    case JV_LIST:
        if (v->is_gen)
            return true;
        if (!v->is_tuple || v->u.list->view != JVIEW_NONE)
            return false;
        for (size_t i = 0; i < v->u.list->n; i++)
            if (!jv_is_hashable(v->u.list->items[i]))
                return false;
        return true;
    default: return true; /* scalars; functions, macros, Undefined hash by identity */
    }
}

/* Canonical text of a non-str hashable key (see jdict_t). Equal numbers
 * share one encoding, as hash(1) == hash(1.0) == hash(True) in Python. */
static bool key_encode(jbuf_t *b, const jv_t *k, int depth)
{
    char tmp[48];
    if (depth > 32)
        return false;
    switch (k->kind) {
    case JV_STR:
        snprintf(tmp, sizeof tmp, "s%zu:", k->u.str.n);
        return jbuf_puts(b, tmp) && jbuf_put(b, k->u.str.s, k->u.str.n);
    case JV_NONE: return jbuf_puts(b, "n");
    case JV_BOOL: return jbuf_puts(b, k->u.b ? "i1" : "i0");
    case JV_INT: snprintf(tmp, sizeof tmp, "i%lld", (long long)k->u.i); return jbuf_puts(b, tmp);
    case JV_FLOAT:
        if (k->u.f == floor(k->u.f) && fabs(k->u.f) < 9.2e18)
            snprintf(tmp, sizeof tmp, "i%lld", (long long)k->u.f);
        else
            snprintf(tmp, sizeof tmp, "f%.17g", k->u.f);
        return jbuf_puts(b, tmp);
    case JV_LIST:
        if (k->is_gen)
            break;
        snprintf(tmp, sizeof tmp, "t%zu(", k->u.list->n);
        if (!jbuf_puts(b, tmp))
            return false;
        for (size_t i = 0; i < k->u.list->n; i++)
            if (!key_encode(b, k->u.list->items[i], depth + 1) || !jbuf_puts(b, ","))
                return false;
        return jbuf_puts(b, ")");
    default: break;
    }
    snprintf(tmp, sizeof tmp, "p%p", (const void *)k); /* identity hash */
    return jbuf_puts(b, tmp);
}

/* Encodes a key into b (malloc'ed, caller frees b->buf); str keys are
 * returned directly in *k without using b. */
static bool key_text(jbuf_t *b, const jv_t *key, const char **k, size_t *kn)
{
    if (key->kind == JV_STR) {
        *k = key->u.str.s;
        *kn = key->u.str.n;
        return true;
    }
    if (!jv_is_hashable(key) || !jbuf_puts(b, "\xff") || !key_encode(b, key, 0))
        return false;
    *k = b->buf;
    *kn = b->len;
    return true;
}

jv_t *jv_dict_getv(const jv_t *dv, const jv_t *key)
{
    jbuf_t b = {0};
    const char *k;
    size_t kn;
    jv_t *r = key_text(&b, key, &k, &kn) ? jv_dict_get(dv, k, kn) : NULL;
    free(b.buf);
    return r;
}

bool jv_dict_setv(jarena_t *a, jv_t *dv, jv_t *key, jv_t *v)
{
    jbuf_t b = {0};
    const char *k;
    size_t kn;
    bool r = key_text(&b, key, &k, &kn) && dict_put(a, dv, k, kn, key->kind == JV_STR ? NULL : key, v);
    free(b.buf);
    return r;
}

bool jv_dict_del(jv_t *dv, const jv_t *key)
{
    jdict_t *d = dv->u.dict;
    jbuf_t b = {0};
    const char *k;
    size_t kn;
    bool found = false;
    if (key_text(&b, key, &k, &kn))
        for (size_t i = 0; i < d->n && !found; i++)
            if (d->klens[i] == kn && !memcmp(d->keys[i], k, kn)) {
                size_t rest = d->n - 1 - i;
                memmove(d->keys + i, d->keys + i + 1, rest * sizeof *d->keys);
                memmove(d->klens + i, d->klens + i + 1, rest * sizeof *d->klens);
                memmove(d->kobj + i, d->kobj + i + 1, rest * sizeof *d->kobj);
                memmove(d->vals + i, d->vals + i + 1, rest * sizeof *d->vals);
                d->n--;
                found = true;
            }
    free(b.buf);
    return found;
}

jv_t *jv_dict_key(jarena_t *a, const jv_t *dv, size_t i)
{
    const jdict_t *d = dv->u.dict;
    return d->kobj[i] ? d->kobj[i] : jv_str(a, d->keys[i], d->klens[i]);
}

bool jv_truthy(const jv_t *v)
{
    switch (v->kind) {
    case JV_UNDEF:
    case JV_NONE: return false;
    case JV_BOOL: return v->u.b;
    case JV_INT: return v->u.i != 0;
    case JV_FLOAT: return v->u.f != 0.0;
    case JV_STR: return v->u.str.n != 0;
    case JV_LIST: return v->is_gen || v->u.list->n != 0;
    case JV_DICT: return v->u.dict->n != 0;
    default: return true;
    }
}

const char *jv_type_name(const jv_t *v)
{
    switch (v->kind) {
    case JV_UNDEF: return "Undefined";
    case JV_NONE: return "NoneType";
    case JV_BOOL: return "bool";
    case JV_INT: return "int";
    case JV_FLOAT: return "float";
    case JV_STR: return "str";
    case JV_LIST: return v->is_gen ? "generator" : v->is_tuple ? "tuple" : "list";
    case JV_DICT: return "dict";
    case JV_NS: return "Namespace";
    case JV_MACRO: return "Macro";
    case JV_FUNC: return "function";
    case JV_METHOD: return "builtin_function_or_method";
    }
    return "object";
}

bool jv_is_iterable(const jv_t *v)
{
    return v->kind == JV_UNDEF || v->kind == JV_STR || v->kind == JV_LIST || v->kind == JV_DICT;
}

/* ---- UTF-8 helpers ---------------------------------------------------- */

static size_t utf8_clen(unsigned char c)
{
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) return 2;
    if ((c & 0xF0) == 0xE0) return 3;
    if ((c & 0xF8) == 0xF0) return 4;
    return 1;
}

size_t jutf8_len(const char *s, size_t n)
{
    size_t cnt = 0;
    for (size_t i = 0; i < n; cnt++) {
        size_t l = utf8_clen((unsigned char)s[i]);
        i += l > n - i ? n - i : l;
    }
    return cnt;
}

size_t jutf8_offset(const char *s, size_t n, size_t idx)
{
    size_t i = 0;
    while (idx-- > 0 && i < n) {
        size_t l = utf8_clen((unsigned char)s[i]);
        i += l > n - i ? n - i : l;
    }
    return i;
}

static uint32_t utf8_decode(const char *s, size_t n, size_t *len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t l = utf8_clen(u[0]);
    if (l > n)
        l = 1;
    *len = l;
    if (l == 1)
        return u[0];
    uint32_t c = u[0] & (0xFF >> (l + 1));
    for (size_t i = 1; i < l; i++)
        c = (c << 6) | (u[i] & 0x3F);
    return c;
}

/* Python str.isspace() code points. */
bool jv_is_pyspace(const char *s, size_t n, size_t *clen)
{
    uint32_t c = utf8_decode(s, n, clen);
    if ((c >= 9 && c <= 13) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
        c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
        c == 0x202F || c == 0x205F || c == 0x3000)
        return true;
    return false;
}

/* ---- str() and repr() ------------------------------------------------- */

void jv_format_float(double f, char *out, size_t n)
{
    if (isnan(f)) {
        snprintf(out, n, "nan");
        return;
    }
    if (isinf(f)) {
        snprintf(out, n, f < 0 ? "-inf" : "inf");
        return;
    }
    char tmp[64];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f)
            break;
    }
    /* tmp = [-]d.ddde[+-]XX : split digits and exponent */
    char digits[32];
    size_t nd = 0;
    const char *p = tmp;
    bool neg = false;
    if (*p == '-') {
        neg = true;
        p++;
    }
    for (; *p && *p != 'e'; p++)
        if (*p != '.')
            digits[nd++] = *p;
    digits[nd] = 0;
    int exp = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        digits[--nd] = 0;
    char res[64];
    size_t r = 0;
    if (neg)
        res[r++] = '-';
    if (exp >= -5 + 1 && exp < 16) {
        if (exp >= 0) {
            for (int i = 0; i <= exp; i++)
                res[r++] = (size_t)i < nd ? digits[i] : '0';
            res[r++] = '.';
            if ((size_t)exp + 1 < nd)
                for (size_t i = (size_t)exp + 1; i < nd; i++)
                    res[r++] = digits[i];
            else
                res[r++] = '0';
        } else {
            res[r++] = '0';
            res[r++] = '.';
            for (int i = 0; i < -exp - 1; i++)
                res[r++] = '0';
            for (size_t i = 0; i < nd; i++)
                res[r++] = digits[i];
        }
        res[r] = 0;
    } else {
        res[r++] = digits[0];
        if (nd > 1) {
            res[r++] = '.';
            for (size_t i = 1; i < nd; i++)
                res[r++] = digits[i];
        }
        res[r] = 0;
        snprintf(res + r, sizeof res - r, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
    snprintf(out, n, "%s", res);
}

static bool repr_str(jbuf_t *b, const char *s, size_t n)
{
    bool has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = (has_sq && !has_dq) ? '"' : '\'';
    jbuf_put(b, &q, 1);
    for (size_t i = 0; i < n;) {
        size_t l;
        uint32_t c = utf8_decode(s + i, n - i, &l);
        char esc[16];
        if (c == (uint32_t)q || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            jbuf_put(b, esc, 2);
        } else if (c == '\n') jbuf_puts(b, "\\n");
        else if (c == '\r') jbuf_puts(b, "\\r");
        else if (c == '\t') jbuf_puts(b, "\\t");
        else if (c < 0x20 || c == 0x7F || (c >= 0x80 && c < 0xA0)) {
            snprintf(esc, sizeof esc, "\\x%02x", c);
            jbuf_puts(b, esc);
        } else if (c == 0xAD || c == 0x2028 || c == 0x2029 || (c >= 0x200B && c <= 0x200F) ||
                   (c >= 0x202A && c <= 0x202E) || (c >= 0x2060 && c <= 0x2064) || c == 0xFEFF) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            jbuf_puts(b, esc);
        } else
            jbuf_put(b, s + i, l);
        i += l;
    }
    return jbuf_put(b, &q, 1);
}

/* Nesting guard for the recursive walks below: templates can build lists
 * nested thousands deep ({% set ns.x = [ns.x] %} in a loop). Beyond the
 * limit repr prints "...", == says false and ordering fails. Per thread,
 * since renders run concurrently. */
#define JV_MAX_NEST 200
static _Thread_local int jv_nest;

static bool put_seq(jbuf_t *b, const jv_t *v)
{
    const jlist_t *l = v->u.list;
    jbuf_puts(b, v->is_tuple ? "(" : "[");
    for (size_t i = 0; i < l->n; i++) {
        if (i)
            jbuf_puts(b, ", ");
        jv_repr(b, l->items[i]);
    }
    if (v->is_tuple && l->n == 1)
        jbuf_puts(b, ",");
    return jbuf_puts(b, v->is_tuple ? ")" : "]");
}

static bool repr_inner(jbuf_t *b, const jv_t *v);

bool jv_repr(jbuf_t *b, const jv_t *v)
{
    if (jv_nest >= JV_MAX_NEST)
        return jbuf_puts(b, "...");
    jv_nest++;
    bool r = repr_inner(b, v);
    jv_nest--;
    return r;
}

static bool repr_inner(jbuf_t *b, const jv_t *v)
{
    switch (v->kind) {
    case JV_STR: return repr_str(b, v->u.str.s, v->u.str.n);
    case JV_UNDEF: return jbuf_puts(b, "Undefined");
    case JV_LIST: {
        static const char *const views[] = {"", "dict_items(", "dict_keys(", "dict_values("};
        const jlist_t *l = v->u.list;
        if (v->is_gen)
            return jbuf_puts(b, "<generator object>");
        if (l->view == JVIEW_RANGE) {
            char tmp[96];
            if (l->range[2] == 1)
                snprintf(tmp, sizeof tmp, "range(%lld, %lld)", (long long)l->range[0], (long long)l->range[1]);
            else
                snprintf(tmp, sizeof tmp, "range(%lld, %lld, %lld)", (long long)l->range[0], (long long)l->range[1],
                         (long long)l->range[2]);
            return jbuf_puts(b, tmp);
        }
        if (l->view != JVIEW_NONE) {
            jbuf_puts(b, views[l->view]);
            jv_t tmp = *v;
            jlist_t tl = *l;
            tl.view = JVIEW_NONE;
            tmp.u.list = &tl;
            put_seq(b, &tmp);
            return jbuf_puts(b, ")");
        }
        return put_seq(b, v);
    }
    case JV_DICT: {
        const jdict_t *d = v->u.dict;
        jbuf_puts(b, "{");
        for (size_t i = 0; i < d->n; i++) {
            if (i)
                jbuf_puts(b, ", ");
            if (d->kobj[i])
                jv_repr(b, d->kobj[i]);
            else
                repr_str(b, d->keys[i], d->klens[i]);
            jbuf_puts(b, ": ");
            jv_repr(b, d->vals[i]);
        }
        return jbuf_puts(b, "}");
    }
    default: return jv_to_str(b, v);
    }
}

bool jv_to_str(jbuf_t *b, const jv_t *v)
{
    char tmp[64];
    switch (v->kind) {
    case JV_UNDEF: return true;
    case JV_NONE: return jbuf_puts(b, "None");
    case JV_BOOL: return jbuf_puts(b, v->u.b ? "True" : "False");
    case JV_INT:
        snprintf(tmp, sizeof tmp, "%lld", (long long)v->u.i);
        return jbuf_puts(b, tmp);
    case JV_FLOAT:
        jv_format_float(v->u.f, tmp, sizeof tmp);
        return jbuf_puts(b, tmp);
    case JV_STR: return jbuf_put(b, v->u.str.s, v->u.str.n);
    case JV_LIST:
    case JV_DICT: return jv_repr(b, v);
    case JV_NS: {
        jv_t tmp = *v;
        tmp.kind = JV_DICT;
        jbuf_puts(b, "<Namespace ");
        jv_repr(b, &tmp);
        return jbuf_puts(b, ">");
    }
    case JV_MACRO: return jbuf_puts(b, "<Macro>");
    case JV_FUNC: return jbuf_puts(b, "<function>");
    case JV_METHOD: return jbuf_puts(b, "<built-in method>");
    }
    return true;
}

jv_t *jv_stringify(jarena_t *a, const jv_t *v, size_t limit)
{
    if (v->kind == JV_STR)
        return (jv_t *)v;
    jbuf_t b = {0};
    b.limit = limit;
    jv_to_str(&b, v);
    jv_t *r = b.overflow ? NULL : jv_str(a, b.buf ? b.buf : "", b.len);
    free(b.buf);
    return r;
}

/* ---- equality and ordering -------------------------------------------- */

static bool is_num(const jv_t *v) { return v->kind == JV_INT || v->kind == JV_FLOAT || v->kind == JV_BOOL; }

static double num_f(const jv_t *v)
{
    return v->kind == JV_FLOAT ? v->u.f : v->kind == JV_INT ? (double)v->u.i : (double)v->u.b;
}

static int64_t num_i(const jv_t *v) { return v->kind == JV_INT ? v->u.i : (int64_t)v->u.b; }

static bool equal_inner(const jv_t *x, const jv_t *y);

bool jv_equal(const jv_t *x, const jv_t *y)
{
    if (jv_nest >= JV_MAX_NEST)
        return false;
    jv_nest++;
    bool r = equal_inner(x, y);
    jv_nest--;
    return r;
}

static bool equal_inner(const jv_t *x, const jv_t *y)
{
    if (is_num(x) && is_num(y)) {
        if (x->kind == JV_FLOAT || y->kind == JV_FLOAT)
            return num_f(x) == num_f(y);
        return num_i(x) == num_i(y);
    }
    if (x->kind != y->kind)
        return false;
    switch (x->kind) {
    case JV_UNDEF:
    case JV_NONE: return true;
    case JV_STR: return x->u.str.n == y->u.str.n && !memcmp(x->u.str.s, y->u.str.s, x->u.str.n);
    case JV_LIST: {
        if (x->is_tuple != y->is_tuple || x->u.list->n != y->u.list->n)
            return false;
        for (size_t i = 0; i < x->u.list->n; i++)
            if (!jv_equal(x->u.list->items[i], y->u.list->items[i]))
                return false;
        return true;
    }
    case JV_DICT: {
        const jdict_t *d = x->u.dict;
        if (d->n != y->u.dict->n)
            return false;
        for (size_t i = 0; i < d->n; i++) {
            jv_t *o = jv_dict_get(y, d->keys[i], d->klens[i]);
            if (!o || !jv_equal(d->vals[i], o))
                return false;
        }
        return true;
    }
    default: return x == y;
    }
}

static int compare_inner(const jv_t *x, const jv_t *y, int *res);

int jv_compare(const jv_t *x, const jv_t *y, int *res)
{
    if (jv_nest >= JV_MAX_NEST)
        return -1;
    jv_nest++;
    int r = compare_inner(x, y, res);
    jv_nest--;
    return r;
}

static int compare_inner(const jv_t *x, const jv_t *y, int *res)
{
    if (is_num(x) && is_num(y)) {
        if (x->kind == JV_FLOAT || y->kind == JV_FLOAT) {
            double a = num_f(x), b = num_f(y);
            *res = a < b ? -1 : a > b ? 1 : 0;
        } else {
            int64_t a = num_i(x), b = num_i(y);
            *res = a < b ? -1 : a > b ? 1 : 0;
        }
        return 0;
    }
    if (x->kind == JV_STR && y->kind == JV_STR) {
        size_t n = x->u.str.n < y->u.str.n ? x->u.str.n : y->u.str.n;
        int c = memcmp(x->u.str.s, y->u.str.s, n);
        if (c == 0)
            c = x->u.str.n < y->u.str.n ? -1 : x->u.str.n > y->u.str.n ? 1 : 0;
        *res = c < 0 ? -1 : c > 0 ? 1 : 0;
        return 0;
    }
    if (x->kind == JV_LIST && y->kind == JV_LIST && !x->is_gen && !y->is_gen && x->is_tuple == y->is_tuple &&
        x->u.list->view == JVIEW_NONE && y->u.list->view == JVIEW_NONE) {
        const jlist_t *a = x->u.list, *b = y->u.list;
        for (size_t i = 0; i < a->n && i < b->n; i++) {
            if (jv_equal(a->items[i], b->items[i]))
                continue;
            return jv_compare(a->items[i], b->items[i], res);
        }
        *res = a->n < b->n ? -1 : a->n > b->n ? 1 : 0;
        return 0;
    }
    return -1;
}

/* ---- json.dumps ------------------------------------------------------- */

static void json_str(jbuf_t *b, const char *s, size_t n, bool ascii)
{
    jbuf_puts(b, "\"");
    for (size_t i = 0; i < n;) {
        size_t l;
        uint32_t c = utf8_decode(s + i, n - i, &l);
        char esc[16];
        switch (c) {
        case '"': jbuf_puts(b, "\\\""); break;
        case '\\': jbuf_puts(b, "\\\\"); break;
        case '\n': jbuf_puts(b, "\\n"); break;
        case '\r': jbuf_puts(b, "\\r"); break;
        case '\t': jbuf_puts(b, "\\t"); break;
        case '\b': jbuf_puts(b, "\\b"); break;
        case '\f': jbuf_puts(b, "\\f"); break;
        default:
            if (c < 0x20 || (ascii && c >= 0x7F)) {
                if (c >= 0x10000) {
                    uint32_t v = c - 0x10000;
                    snprintf(esc, sizeof esc, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
                } else
                    snprintf(esc, sizeof esc, "\\u%04x", c);
                jbuf_puts(b, esc);
            } else
                jbuf_put(b, s + i, l);
        }
        i += l;
    }
    jbuf_puts(b, "\"");
}

static void json_nl(jbuf_t *b, const jjson_opts_t *o, int level)
{
    jbuf_puts(b, "\n");
    for (int i = 0; i < o->indent * level; i++)
        jbuf_puts(b, " ");
}

static bool json_val(jbuf_t *b, const jv_t *v, const jjson_opts_t *o, int level, char *msg, size_t msgn)
{
    const char *isep = o->item_sep ? o->item_sep : (o->indent >= 0 ? "," : ", ");
    const char *ksep = o->key_sep ? o->key_sep : ": ";
    char tmp[64];
    if (level > 200) {
        snprintf(msg, msgn, "json nesting too deep");
        return false;
    }
    switch (v->kind) {
    case JV_NONE: jbuf_puts(b, "null"); return true;
    case JV_BOOL: jbuf_puts(b, v->u.b ? "true" : "false"); return true;
    case JV_INT:
        snprintf(tmp, sizeof tmp, "%lld", (long long)v->u.i);
        jbuf_puts(b, tmp);
        return true;
    case JV_FLOAT:
        if (isnan(v->u.f))
            jbuf_puts(b, "NaN");
        else if (isinf(v->u.f))
            jbuf_puts(b, v->u.f < 0 ? "-Infinity" : "Infinity");
        else {
            jv_format_float(v->u.f, tmp, sizeof tmp);
            jbuf_puts(b, tmp);
        }
        return true;
    case JV_STR: json_str(b, v->u.str.s, v->u.str.n, o->ensure_ascii); return true;
    case JV_LIST: {
        if (v->is_gen || v->u.list->view != JVIEW_NONE)
            break;
        const jlist_t *l = v->u.list;
        if (l->n == 0) {
            jbuf_puts(b, "[]");
            return true;
        }
        jbuf_puts(b, "[");
        for (size_t i = 0; i < l->n; i++) {
            if (i)
                jbuf_puts(b, isep);
            if (o->indent >= 0)
                json_nl(b, o, level + 1);
            if (!json_val(b, l->items[i], o, level + 1, msg, msgn))
                return false;
        }
        if (o->indent >= 0)
            json_nl(b, o, level);
        jbuf_puts(b, "]");
        return true;
    }
    case JV_DICT: {
        const jdict_t *d = v->u.dict;
        if (d->n == 0) {
            jbuf_puts(b, "{}");
            return true;
        }
        size_t order[d->n > 0 ? d->n : 1];
        for (size_t i = 0; i < d->n; i++) {
            order[i] = i;
            const jv_t *ko = d->kobj[i];
            if (ko && (ko->kind == JV_LIST || (o->sort_keys && ko->kind != JV_STR))) {
                snprintf(msg, msgn, ko->kind == JV_LIST ? "keys must be str, int, float, bool or None, not tuple"
                                                        : "'<' not supported between instances of dict keys");
                return false;
            }
        }
        if (o->sort_keys) /* insertion sort: dicts in templates are small */
            for (size_t i = 1; i < d->n; i++)
                for (size_t j = i; j > 0; j--) {
                    size_t x = order[j - 1], y = order[j];
                    size_t m = d->klens[x] < d->klens[y] ? d->klens[x] : d->klens[y];
                    int c = memcmp(d->keys[x], d->keys[y], m);
                    if (c > 0 || (c == 0 && d->klens[x] > d->klens[y])) {
                        order[j - 1] = y;
                        order[j] = x;
                    } else
                        break;
                }
        jbuf_puts(b, "{");
        for (size_t k = 0; k < d->n; k++) {
            size_t i = order[k];
            if (k)
                jbuf_puts(b, isep);
            if (o->indent >= 0)
                json_nl(b, o, level + 1);
            const jv_t *ko = d->kobj[i];
            if (!ko)
                json_str(b, d->keys[i], d->klens[i], o->ensure_ascii);
            else { /* json.dumps writes int / float / bool / None keys as strings */
                char kt[64];
                if (ko->kind == JV_NONE)
                    snprintf(kt, sizeof kt, "null");
                else if (ko->kind == JV_BOOL)
                    snprintf(kt, sizeof kt, "%s", ko->u.b ? "true" : "false");
                else if (ko->kind == JV_INT)
                    snprintf(kt, sizeof kt, "%lld", (long long)ko->u.i);
                else
                    jv_format_float(ko->u.f, kt, sizeof kt);
                json_str(b, kt, strlen(kt), o->ensure_ascii);
            }
            jbuf_puts(b, ksep);
            if (!json_val(b, d->vals[i], o, level + 1, msg, msgn))
                return false;
        }
        if (o->indent >= 0)
            json_nl(b, o, level);
        jbuf_puts(b, "}");
        return true;
    }
    default: break;
    }
    snprintf(msg, msgn, "Object of type %s is not JSON serializable", jv_type_name(v));
    if (v->kind == JV_LIST && v->u.list->view != JVIEW_NONE) {
        static const char *const names[] = {"", "dict_items", "dict_keys", "dict_values", "range"};
        snprintf(msg, msgn, "Object of type %s is not JSON serializable", names[v->u.list->view]);
    }
    return false;
}

bool jv_to_json(jbuf_t *b, const jv_t *v, const jjson_opts_t *o, char *msg, size_t msgn)
{
    if (!json_val(b, v, o, 0, msg, msgn))
        return false;
    if (b->overflow) {
        snprintf(msg, msgn, "output too large");
        return false;
    }
    return true;
}

jv_t *jv_from_json(jarena_t *a, json_object *j, int depth)
{
    if (depth > 200)
        return NULL;
    switch (json_object_get_type(j)) {
    case json_type_null: return jv_none(a);
    case json_type_boolean: return jv_bool(a, json_object_get_boolean(j));
    case json_type_int: return jv_int(a, json_object_get_int64(j));
    case json_type_double: return jv_float(a, json_object_get_double(j));
    case json_type_string: return jv_str(a, json_object_get_string(j), (size_t)json_object_get_string_len(j));
    case json_type_array: {
        jv_t *l = jv_list(a);
        if (!l)
            return NULL;
        size_t n = json_object_array_length(j);
        for (size_t i = 0; i < n; i++)
            if (!jv_list_push(a, l, jv_from_json(a, json_object_array_get_idx(j, i), depth + 1)))
                return NULL;
        return l;
    }
    case json_type_object: {
        jv_t *d = jv_dict(a, JV_DICT);
        if (!d)
            return NULL;
        json_object_object_foreach(j, k, v) {
            if (!jv_dict_set(a, d, k, strlen(k), jv_from_json(a, v, depth + 1)))
                return NULL;
        }
        return d;
    }
    }
    return NULL;
}
