/* toolcall_params.c - values of tool-call parameters written as raw text
 * (the XML-style formats) or as Python literals (pythonic), turned into
 * JSON: typing by the function's schema in the request's tools, JSON
 * string escaping, and a small Python-literal reader (see toolcall.h,
 * "Name, then key/value parameters", and toolcall_impl.h). */
#include "chat/parse/toolcall_impl.h"

#include <ctype.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <strings.h>

#include "common/utf8.h"

#define PY_MAX_DEPTH 64

void tc_json_string(toolcall_t *tc, buf_t *out, const char *s, size_t n)
{
    buf_addc(tc, out, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        switch (c) {
        case '"': buf_add(tc, out, "\\\"", 2); break;
        case '\\': buf_add(tc, out, "\\\\", 2); break;
        case '\n': buf_add(tc, out, "\\n", 2); break;
        case '\r': buf_add(tc, out, "\\r", 2); break;
        case '\t': buf_add(tc, out, "\\t", 2); break;
        case '\b': buf_add(tc, out, "\\b", 2); break;
        case '\f': buf_add(tc, out, "\\f", 2); break;
        default:
            if (c < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", c);
                buf_add(tc, out, esc, 6);
            } else {
                buf_addc(tc, out, (char)c);
            }
        }
    }
    buf_addc(tc, out, '"');
}

/* ---- schema lookup ----------------------------------------------------- */

static json_object *member(json_object *o, const char *k)
{
    json_object *v = NULL;
    return json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

/* The member a JSON pointer ("#/a/b", ~0 ~1 escapes) names in root, or NULL. */
static json_object *pointer_get(json_object *root, const char *ptr)
{
    if (strncmp(ptr, "#/", 2))
        return NULL;
    json_object *cur = root;
    for (const char *p = ptr + 2; cur && *p;) {
        char tok[256];
        size_t n = 0;
        for (; *p && *p != '/' && n + 1 < sizeof tok; p++) {
            if (p[0] == '~' && (p[1] == '0' || p[1] == '1')) {
                tok[n++] = p[1] == '0' ? '~' : '/';
                p++;
            } else {
                tok[n++] = *p;
            }
        }
        tok[n] = 0;
        if (*p == '/')
            p++;
        if (json_object_is_type(cur, json_type_array)) {
            char *end;
            long i = strtol(tok, &end, 10);
            cur = *end || i < 0 ? NULL : json_object_array_get_idx(cur, (size_t)i);
        } else {
            cur = member(cur, tok);
        }
    }
    return cur;
}

const struct json_object *toolcall_param_deref(const struct json_object *params, const struct json_object *schema)
{
    json_object *s = (json_object *)schema;
    for (int hop = 0; hop < 8; hop++) {
        json_object *ref = member(s, "$ref");
        json_object *t = ref && json_object_is_type(ref, json_type_string)
                             ? pointer_get((json_object *)params, json_object_get_string(ref)) : NULL;
        if (!t)
            break;
        s = t;
    }
    return s;
}

/* The schema of parameter key of function fn (its $ref followed), or NULL. */
static json_object *param_schema(json_object *tools, const char *fn, const char *key)
{
    size_t n = json_object_is_type(tools, json_type_array) ? json_object_array_length(tools) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *f = member(json_object_array_get_idx(tools, i), "function");
        json_object *name = member(f, "name");
        if (name && json_object_is_type(name, json_type_string) && !strcmp(json_object_get_string(name), fn)) {
            json_object *params = member(f, "parameters");
            return (json_object *)toolcall_param_deref(params, member(member(params, "properties"), key));
        }
    }
    return NULL;
}

/* The declared type of a schema, lower case, in t (cap bytes): "type" (a
 * string, or the first non-null of a list), else the one type all anyOf /
 * oneOf branches share, "string" for enums, "" when unknown. */
static void schema_type(json_object *s, char *t, size_t cap)
{
    t[0] = '\0';
    json_object *ty = member(s, "type");
    if (ty && json_object_is_type(ty, json_type_string)) {
        snprintf(t, cap, "%s", json_object_get_string(ty));
    } else if (ty && json_object_is_type(ty, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(ty) && !t[0]; i++) {
            const char *x = json_object_get_string(json_object_array_get_idx(ty, i));
            if (x && strcmp(x, "null"))
                snprintf(t, cap, "%s", x);
        }
    } else {
        json_object *alt = member(s, "anyOf") ? member(s, "anyOf") : member(s, "oneOf");
        size_t n = json_object_is_type(alt, json_type_array) ? json_object_array_length(alt) : 0;
        for (size_t i = 0; i < n; i++) {
            char sub[32];
            schema_type(json_object_array_get_idx(alt, i), sub, sizeof sub);
            if (!sub[0] || !strcmp(sub, "null"))
                continue;
            if (t[0] && strcmp(t, sub)) {
                t[0] = '\0'; /* branches differ: any JSON */
                return;
            }
            snprintf(t, cap, "%s", sub);
        }
        if (!t[0] && member(s, "enum"))
            snprintf(t, cap, "string");
    }
    for (char *p = t; *p; p++)
        *p = (char)tolower((unsigned char)*p);
}

static bool starts(const char *s, const char *p)
{
    return !strncmp(s, p, strlen(p));
}

/* ---- numbers and JSON text --------------------------------------------- */

/* Appends a number with Python's / JSON's shortest round-trip text; an
 * integral value as an integer (as vLLM's conversion does). */
static void put_number(toolcall_t *tc, buf_t *out, double v)
{
    char tmp[64];
    if (v == floor(v) && fabs(v) < 9e15) {
        snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    } else {
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(tmp, sizeof tmp, "%.*g", prec, v);
            if (strtod(tmp, NULL) == v)
                break;
        }
    }
    buf_add(tc, out, tmp, strlen(tmp));
}

/* s (n bytes, no NUL needed) as a finite number; false if not exactly one. */
static bool parse_number(const char *s, size_t n, double *v)
{
    char tmp[64];
    if (n == 0 || n >= sizeof tmp)
        return false;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *end;
    *v = strtod(tmp, &end);
    return end == tmp + n && isfinite(*v) && !strpbrk(tmp, "xXnNiI");
}

bool tc_json_value(toolcall_t *tc, buf_t *out, const char *s, size_t n)
{
    json_tokener *tok = json_tokener_new_ex(TCSCAN_MAX_DEPTH + 1);
    if (!tok)
        return false;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    json_object *o = json_tokener_parse_ex(tok, s, (int)n);
    bool ok = json_tokener_get_error(tok) == json_tokener_success;
    size_t end = ok ? json_tokener_get_parse_end(tok) : 0;
    json_object_put(o);
    json_tokener_free(tok);
    while (ok && end < n && is_ws((unsigned char)s[end]))
        end++;
    if (!ok || end != n)
        return false;
    bool in_str = false, esc = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            in_str = esc || c != '"';
            esc = !esc && c == '\\';
        } else if (c == '"') {
            in_str = true;
        } else if (is_ws((unsigned char)c)) {
            continue;
        }
        buf_addc(tc, out, c);
    }
    return true;
}

/* ---- Python literals ---------------------------------------------------- */

typedef struct {
    toolcall_t *tc;
    const char *s;
    size_t n, i;
    int depth;
} py_t;

static void py_ws(py_t *p)
{
    while (p->i < p->n && is_ws((unsigned char)p->s[p->i]))
        p->i++;
}

static void put_utf8(toolcall_t *tc, buf_t *out, uint32_t cp)
{
    unsigned char u[4];
    buf_add(tc, out, (const char *)u, utf8_encode(cp, u));
}

static bool hexval(const char *s, size_t n, uint32_t *v)
{
    *v = 0;
    for (size_t i = 0; i < n; i++) {
        int c = tolower((unsigned char)s[i]);
        if (!isxdigit(c))
            return false;
        *v = *v * 16 + (uint32_t)(isdigit(c) ? c - '0' : c - 'a' + 10);
    }
    return true;
}

/* A quoted string (' or "), decoded, written as a JSON string. */
static bool py_string(py_t *p, buf_t *out)
{
    char q = p->s[p->i++];
    buf_t raw = {0};
    bool ok = false;
    while (p->i < p->n) {
        char c = p->s[p->i++];
        if (c == q) {
            ok = true;
            break;
        }
        if (c == '\n')
            break;
        if (c != '\\') {
            buf_addc(p->tc, &raw, c);
            continue;
        }
        if (p->i >= p->n)
            break;
        char e = p->s[p->i++];
        uint32_t cp;
        size_t hl = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        if (hl) {
            if (p->i + hl > p->n || !hexval(p->s + p->i, hl, &cp) || cp > 0x10FFFF)
                break;
            p->i += hl;
            put_utf8(p->tc, &raw, cp);
            continue;
        }
        /* JSON's "\/" is a slash too (models write JSON strings in calls) */
        const char *from = "nrtbf0\\'\"\n/", *to = "\n\r\t\b\f\0\\'\"\n/";
        const char *k = strchr(from, e);
        if (!k || !e) { /* unknown escapes keep the backslash, as Python */
            buf_addc(p->tc, &raw, '\\');
            buf_addc(p->tc, &raw, e);
        } else if (e != '\n') { /* backslash-newline: a continuation */
            buf_addc(p->tc, &raw, to[k - from]);
        }
    }
    if (ok)
        tc_json_string(p->tc, out, raw.p ? raw.p : "", raw.len);
    buf_free(&raw);
    return ok;
}

static bool py_value(py_t *p, buf_t *out);

/* [a, b], (a, b) or {k: v}: closer ']', ')' or '}'. */
static bool py_container(py_t *p, buf_t *out, char closer)
{
    bool dict = closer == '}';
    p->i++;
    buf_addc(p->tc, out, dict ? '{' : '[');
    for (int k = 0;; k++) {
        py_ws(p);
        if (p->i < p->n && p->s[p->i] == closer) {
            p->i++;
            break;
        }
        if (k)
            buf_addc(p->tc, out, ',');
        if (dict) { /* keys: strings, or numbers / bools written as strings */
            if (p->i >= p->n)
                return false;
            if (p->s[p->i] == '\'' || p->s[p->i] == '"') {
                if (!py_string(p, out))
                    return false;
            } else {
                buf_t key = {0};
                bool ok = py_value(p, &key) && key.len && key.p[0] != '[' && key.p[0] != '{';
                if (ok)
                    tc_json_string(p->tc, out, key.p, key.len);
                buf_free(&key);
                if (!ok)
                    return false;
            }
            py_ws(p);
            if (p->i >= p->n || p->s[p->i++] != ':')
                return false;
            buf_addc(p->tc, out, ':');
        }
        if (!py_value(p, out))
            return false;
        py_ws(p);
        if (p->i < p->n && p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        py_ws(p);
        if (p->i < p->n && p->s[p->i] == closer) {
            p->i++;
            break;
        }
        return false;
    }
    buf_addc(p->tc, out, dict ? '}' : ']');
    return true;
}

static bool py_value(py_t *p, buf_t *out)
{
    py_ws(p);
    if (p->i >= p->n || ++p->depth > PY_MAX_DEPTH)
        return false;
    char c = p->s[p->i];
    bool ok;
    if (c == '\'' || c == '"') {
        ok = py_string(p, out);
    } else if (c == '[' || c == '(' || c == '{') {
        ok = py_container(p, out, c == '[' ? ']' : c == '(' ? ')' : '}');
    } else {
        size_t b = p->i;
        while (p->i < p->n && (isalnum((unsigned char)p->s[p->i]) || strchr("+-._", p->s[p->i])))
            p->i++;
        const char *w = p->s + b;
        size_t wl = p->i - b;
        double v;
        ok = true;
        /* JSON's literals too: LFM2 writes them */
        if (wl == 4 && (!memcmp(w, "True", 4) || !memcmp(w, "true", 4)))
            buf_add(p->tc, out, "true", 4);
        else if (wl == 5 && (!memcmp(w, "False", 5) || !memcmp(w, "false", 5)))
            buf_add(p->tc, out, "false", 5);
        else if (wl == 4 && (!memcmp(w, "None", 4) || !memcmp(w, "null", 4)))
            buf_add(p->tc, out, "null", 4);
        else if (wl && wl < 64 && !memchr(w, '_', wl) && parse_number(w, wl, &v)) {
            if (memchr(w, '.', wl) || memchr(w, 'e', wl) || memchr(w, 'E', wl))
                put_number(p->tc, out, v); /* a float */
            else
                buf_add(p->tc, out, w[0] == '+' ? w + 1 : w, w[0] == '+' ? wl - 1 : wl);
        } else
            ok = false;
    }
    p->depth--;
    return ok;
}

bool tc_pyliteral_json(toolcall_t *tc, buf_t *out, const char *s, size_t n)
{
    buf_t tmp = {0};
    py_t p = {tc, s, n, 0, 0};
    bool ok = py_value(&p, &tmp);
    py_ws(&p);
    ok = ok && p.i == n && !tc->nomem;
    if (ok)
        buf_add(tc, out, tmp.p, tmp.len);
    buf_free(&tmp);
    return ok;
}

/* ---- typing ------------------------------------------------------------- */

static bool raw_string_type(json_object *schema, const char *t)
{
    return !schema || starts(t, "str") || !strcmp(t, "text") || starts(t, "varchar") || starts(t, "char") ||
           !strcmp(t, "enum") || (!t[0] && !member(schema, "anyOf") && !member(schema, "oneOf"));
}

bool toolcall_param_raw_string(const struct json_object *schema)
{
    char t[32];
    schema_type((json_object *)schema, t, sizeof t);
    return raw_string_type((json_object *)schema, t);
}

/* Types a raw value by its schema (see tc_param_json). */
static void value_typed(toolcall_t *tc, buf_t *out, json_object *schema, const char *raw, size_t n)
{
    /* one leading and one trailing newline belong to the markup */
    if (n && raw[0] == '\n')
        raw++, n--;
    if (n && raw[n - 1] == '\n')
        n--;
    if (n == 4 && !strncasecmp(raw, "null", 4)) {
        buf_add(tc, out, "null", 4);
        return;
    }
    char t[32];
    schema_type(schema, t, sizeof t);
    if (raw_string_type(schema, t)) {
        tc_json_string(tc, out, raw, n);
        return;
    }
    /* the other types: surrounding whitespace is not part of the value */
    const char *v = raw;
    size_t vl = tc_trim(&v, n);
    double d;
    if (starts(t, "int") || starts(t, "uint") || starts(t, "long") || starts(t, "short") || starts(t, "unsigned")) {
        if (parse_number(v, vl, &d) && d == floor(d) && fabs(d) < 9e15) {
            put_number(tc, out, d);
            return;
        }
    } else if (starts(t, "num") || starts(t, "float") || starts(t, "double") || starts(t, "decimal")) {
        if (parse_number(v, vl, &d)) {
            put_number(tc, out, d);
            return;
        }
    } else if (starts(t, "bool")) {
        if ((vl == 4 && !strncasecmp(v, "true", 4)) || (vl == 1 && v[0] == '1')) {
            buf_add(tc, out, "true", 4);
            return;
        }
        if ((vl == 5 && !strncasecmp(v, "false", 5)) || (vl == 1 && v[0] == '0')) {
            buf_add(tc, out, "false", 5);
            return;
        }
    } else if (tc_json_value(tc, out, v, vl) || tc_pyliteral_json(tc, out, v, vl)) {
        return; /* object, array, or a type we do not know: JSON, else Python */
    }
    tc_json_string(tc, out, raw, n); /* not of its type: the text as is */
}

void tc_param_json(toolcall_t *tc, buf_t *out, const char *fn, const char *key, const char *raw, size_t n)
{
    value_typed(tc, out, param_schema(tc->cfg.tools, fn, key), raw, n);
}

/* ---- element values (minimax_m3) ----------------------------------------- */

#define ELEM_MAX_DEPTH 32

typedef struct {
    const char *tag;   /* the child's tag name */
    size_t tag_len;
    const char *body;  /* its content */
    size_t body_len;
} elem_t;

/* The next child element of s[*i..n): key_open TAG key_close BODY key_open
 * "/" TAG key_close, nested same tags counted. False when the text there
 * is not one. */
static bool next_elem(const toolcall_format_desc_t *d, const char *s, size_t n, size_t *i, elem_t *e)
{
    const char *ko = d->key_open, *kc = d->key_close;
    size_t ol = strlen(ko), cl = strlen(kc), p = *i;
    while (p < n && is_ws((unsigned char)s[p]))
        p++;
    if (p + ol > n || memcmp(s + p, ko, ol) || (p + ol < n && s[p + ol] == '/'))
        return false;
    p += ol;
    const char *end = memmem(s + p, n - p, kc, cl);
    if (!end || end == s + p || (size_t)(end - (s + p)) > 256)
        return false;
    e->tag = s + p;
    e->tag_len = (size_t)(end - (s + p));
    p = (size_t)(end - s) + cl;
    e->body = s + p;
    int depth = 0;
    while (p < n) {
        if (p + ol + e->tag_len + cl <= n && !memcmp(s + p, ko, ol) && !memcmp(s + p + ol, e->tag, e->tag_len) &&
            !memcmp(s + p + ol + e->tag_len, kc, cl)) {
            depth++;
            p += ol + e->tag_len + cl;
        } else if (p + ol + 1 + e->tag_len + cl <= n && !memcmp(s + p, ko, ol) && s[p + ol] == '/' &&
                   !memcmp(s + p + ol + 1, e->tag, e->tag_len) && !memcmp(s + p + ol + 1 + e->tag_len, kc, cl)) {
            if (depth-- == 0) {
                e->body_len = (size_t)(s + p - e->body);
                *i = p + ol + 1 + e->tag_len + cl;
                return true;
            }
            p += ol + 1 + e->tag_len + cl;
        } else {
            p++;
        }
    }
    return false;
}

static bool is_string_schema(json_object *schema)
{
    char t[32];
    schema_type(schema, t, sizeof t);
    return starts(t, "str") || !strcmp(t, "text");
}

static bool element_value(toolcall_t *tc, buf_t *out, json_object *schema, const char *raw, size_t n, int depth);

/* raw as a sequence of child elements: an array when every tag is the
 * item tag, else an object. False (out unchanged) when it is not one. */
static bool element_children(toolcall_t *tc, buf_t *out, json_object *schema, const char *raw, size_t n, int depth)
{
    const toolcall_format_desc_t *d = tc->desc;
    const char *item = d->item_tag ? d->item_tag : "item";
    elem_t e;
    size_t i = 0, count = 0;
    bool all_items = true;
    while (i < n && next_elem(d, raw, n, &i, &e)) {
        count++;
        all_items = all_items && e.tag_len == strlen(item) && !memcmp(e.tag, item, e.tag_len);
    }
    while (i < n && is_ws((unsigned char)raw[i]))
        i++;
    if (!count || i != n)
        return false;
    buf_t tmp = {0};
    buf_addc(tc, &tmp, all_items ? '[' : '{');
    i = 0;
    bool ok = true;
    for (size_t k = 0; ok && k < count && next_elem(d, raw, n, &i, &e); k++) {
        if (k)
            buf_addc(tc, &tmp, ',');
        json_object *sub = member(schema, "items");
        if (!all_items) {
            char tag[257];
            memcpy(tag, e.tag, e.tag_len);
            tag[e.tag_len] = '\0';
            sub = member(member(schema, "properties"), tag);
            tc_json_string(tc, &tmp, e.tag, e.tag_len);
            buf_addc(tc, &tmp, ':');
        }
        ok = element_value(tc, &tmp, sub, e.body, e.body_len, depth + 1);
    }
    buf_addc(tc, &tmp, all_items ? ']' : '}');
    if (ok)
        buf_add(tc, out, tmp.p, tmp.len);
    buf_free(&tmp);
    return ok;
}

static bool element_value(toolcall_t *tc, buf_t *out, json_object *schema, const char *raw, size_t n, int depth)
{
    if (depth > ELEM_MAX_DEPTH)
        return false;
    if (!is_string_schema(schema) && element_children(tc, out, schema, raw, n, depth))
        return true;
    value_typed(tc, out, schema, raw, n);
    return true;
}

void tc_element_json(toolcall_t *tc, buf_t *out, const char *fn, const char *key, const char *raw, size_t n)
{
    element_value(tc, out, param_schema(tc->cfg.tools, fn, key), raw, n, 0);
}
