/* req_json.c - the JSON edge of request parsing (see req_json.h). */
#include "server/request/req_json.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "server/request/request.h"

int req_err_vset(req_err_t *e, int status, const char *param, const char *code, const char *fmt, va_list ap)
{
    e->status = status;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    snprintf(e->code, sizeof e->code, "%s", code ? code : "");
    int n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    if (n >= (int)sizeof e->msg) /* cut to fit: never inside a character */
        e->msg[utf8_trim_partial(e->msg, strlen(e->msg))] = '\0';
    return -1;
}

int req_err_set(req_err_t *e, int status, const char *param, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    req_err_vset(e, status, param, code, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- integers beyond 64 bits ----
 *
 * json-c turns 18446744073709551616 into 18446744073709551615 without a
 * word. A second, small scan of the (already parsed, so well-formed) text
 * finds integer literals outside [-2^63, 2^64-1], walks the same path in
 * the json-c tree and keeps the literal as the number's userdata (json-c
 * does not use an integer's userdata). */

typedef struct {
    const char *s;
    size_t n, i;
} scan_t;

static void skip_ws(scan_t *c)
{
    while (c->i < c->n) {
        char ch = c->s[c->i];
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
            c->i++;
        } else if (ch == '/' && c->i + 1 < c->n && c->s[c->i + 1] == '*') { /* json-c allows comments */
            const char *end = strstr(c->s + c->i + 2, "*/");
            c->i = end ? (size_t)(end - c->s) + 2 : c->n;
        } else if (ch == '/' && c->i + 1 < c->n && c->s[c->i + 1] == '/') {
            while (c->i < c->n && c->s[c->i] != '\n')
                c->i++;
        } else {
            break;
        }
    }
}

static int hex4(const char *p)
{
    int v = 0;
    for (int k = 0; k < 4; k++) {
        char h = p[k];
        v = v * 16 + (h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1000);
    }
    return v;
}

/* Skips a string; with key != NULL decodes it as json-c does (a lone
 * surrogate becomes U+FFFD, \u0000 ends the C string). false when it does
 * not fit in cap. */
static bool scan_string(scan_t *c, char *key, size_t cap)
{
    char q = c->s[c->i++];
    size_t w = 0;
    bool fits = true;
    while (c->i < c->n && c->s[c->i] != q) {
        char buf[8];
        size_t k = 0;
        if (c->s[c->i] == '\\' && c->i + 1 < c->n) {
            char esc = c->s[c->i + 1];
            c->i += 2;
            if (esc == 'u' && c->i + 4 <= c->n) {
                int cp = hex4(c->s + c->i);
                c->i += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF && c->i + 6 <= c->n && c->s[c->i] == '\\' &&
                    c->s[c->i + 1] == 'u') {
                    int lo = hex4(c->s + c->i + 2);
                    if (lo >= 0xDC00 && lo <= 0xDFFF) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        c->i += 6;
                    }
                }
                if (cp >= 0xD800 && cp <= 0xDFFF)
                    cp = 0xFFFD; /* a lone surrogate */
                k = cp < 0 ? 0 : utf8_encode((uint32_t)cp, (unsigned char *)buf);
            } else {
                const char *from = "bfnrt", *to = "\b\f\n\r\t";
                const char *p = strchr(from, esc);
                buf[0] = p && esc ? to[p - from] : esc;
                k = 1;
            }
        } else {
            buf[0] = c->s[c->i++];
            k = 1;
        }
        if (key && fits) {
            if (w + k >= cap)
                fits = false;
            else
                memcpy(key + w, buf, k), w += k;
        }
    }
    c->i++; /* closing quote */
    if (key)
        key[fits ? w : 0] = '\0';
    return fits;
}

static void free_literal(json_object *o, void *ud)
{
    (void)o;
    free(ud);
}

/* Whether integer literal [p, p+l) lies outside [-2^63, 2^64-1]. */
static bool beyond_64_bits(const char *p, size_t l)
{
    bool neg = *p == '-';
    if (neg || *p == '+')
        p++, l--;
    while (l > 1 && *p == '0')
        p++, l--;
    const char *lim = neg ? "9223372036854775808" : "18446744073709551615";
    size_t ll = strlen(lim);
    return l > ll || (l == ll && memcmp(p, lim, l) > 0);
}

static void scan_value(scan_t *c, json_object *node, int depth);

static void scan_number(scan_t *c, json_object *node)
{
    size_t start = c->i;
    bool integer = true;
    while (c->i < c->n && strchr("+-0123456789.eE", c->s[c->i])) {
        if (strchr(".eE", c->s[c->i]))
            integer = false;
        c->i++;
    }
    size_t l = c->i - start;
    if (!integer || !l || !node || !json_object_is_type(node, json_type_int) || json_object_get_userdata(node))
        return;
    if (!beyond_64_bits(c->s + start, l))
        return;
    char *lit = malloc(l + 1);
    if (!lit)
        return;
    memcpy(lit, c->s + start, l);
    lit[l] = '\0';
    json_object_set_userdata(node, lit, free_literal);
}

static void scan_value(scan_t *c, json_object *node, int depth)
{
    skip_ws(c);
    if (c->i >= c->n || depth > 64)
        return;
    char ch = c->s[c->i];
    if (ch == '{') {
        c->i++;
        for (;;) {
            skip_ws(c);
            if (c->i >= c->n || c->s[c->i] == '}') {
                c->i++;
                return;
            }
            if (c->s[c->i] == ',') {
                c->i++;
                continue;
            }
            char key[256];
            bool ok = (c->s[c->i] == '"' || c->s[c->i] == '\'') ? scan_string(c, key, sizeof key) : false;
            if (!ok && c->s[c->i - 1] != '"' && c->s[c->i - 1] != '\'')
                return; /* not the JSON we know: give up quietly */
            skip_ws(c);
            if (c->i < c->n && c->s[c->i] == ':')
                c->i++;
            json_object *child = NULL;
            if (ok && node && json_object_is_type(node, json_type_object))
                json_object_object_get_ex(node, key, &child);
            scan_value(c, child, depth + 1);
        }
    } else if (ch == '[') {
        c->i++;
        size_t idx = 0;
        for (;;) {
            skip_ws(c);
            if (c->i >= c->n || c->s[c->i] == ']') {
                c->i++;
                return;
            }
            if (c->s[c->i] == ',') {
                c->i++;
                continue;
            }
            json_object *child = node && json_object_is_type(node, json_type_array) &&
                                         idx < json_object_array_length(node)
                                     ? json_object_array_get_idx(node, idx)
                                     : NULL;
            size_t before = c->i;
            scan_value(c, child, depth + 1);
            if (c->i == before)
                return; /* no progress: give up */
            idx++;
        }
    } else if (ch == '"' || ch == '\'') {
        scan_string(c, NULL, 0);
    } else if (ch == '-' || ch == '+' || (ch >= '0' && ch <= '9')) {
        scan_number(c, node);
    } else { /* true, false, null, NaN, Infinity */
        while (c->i < c->n && ((c->s[c->i] >= 'a' && c->s[c->i] <= 'z') || (c->s[c->i] >= 'A' && c->s[c->i] <= 'Z')))
            c->i++;
    }
}

/* ---- the body ---- */

static const char *type_phrase(json_object *o)
{
    switch (json_object_get_type(o)) {
    case json_type_null: return "null";
    case json_type_boolean: return "a boolean";
    case json_type_int:
    case json_type_double: return "a number";
    case json_type_string: return "a string";
    case json_type_array: return "an array";
    default: return "something else";
    }
}

int req_body_utf8(const char *body, size_t len, req_err_t *e)
{
    size_t bad = 0;
    if (utf8_valid(body, len, &bad))
        return 0;
    return req_err_set(e, 400, NULL, NULL,
                       "The request body is not valid UTF-8 (byte 0x%02X at offset %zu); JSON text must be UTF-8 "
                       "(RFC 8259)",
                       (unsigned char)body[bad], bad);
}

json_object *req_json_parse_object(const char *body, size_t len, req_err_t *e)
{
    if (req_body_utf8(body, len, e) < 0)
        return NULL;
    json_tokener *tok = json_tokener_new();
    if (!tok) {
        req_err_set(e, 503, NULL, NULL, "out of memory");
        return NULL;
    }
    json_object *o = json_tokener_parse_ex(tok, body, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t used = json_tokener_get_parse_end(tok);
    if (!o && jerr == json_tokener_continue && len) {
        /* a bare literal (null, 12) only ends at the end of input: say so */
        o = json_tokener_parse_ex(tok, "", 1);
        jerr = json_tokener_get_error(tok);
        used = len;
    }
    json_tokener_free(tok);
    if (jerr != json_tokener_success) {
        json_object_put(o);
        req_err_set(e, 400, NULL, NULL, "The request body is not valid JSON: %s",
                    len == 0 ? "empty body"
                             : json_tokener_error_desc(jerr == json_tokener_continue ? json_tokener_error_parse_eof
                                                                                      : jerr));
        return NULL;
    }
    for (; used < len; used++)
        if (!strchr(" \t\r\n", body[used])) {
            json_object_put(o);
            req_err_set(e, 400, NULL, NULL, "The request body is not valid JSON: trailing data");
            return NULL;
        }
    if (!json_object_is_type(o, json_type_object)) { /* `null` parses to NULL */
        req_err_set(e, 400, NULL, NULL, "The request body must be a JSON object, got %s", type_phrase(o));
        json_object_put(o);
        return NULL;
    }
    scan_t c = {.s = body, .n = len};
    scan_value(&c, o, 0);
    return o;
}

/* ---- typed fields ---- */

const char *req_json_literal(json_object *v)
{
    const char *lit = json_object_is_type(v, json_type_int) ? json_object_get_userdata(v) : NULL;
    return lit ? lit : json_object_get_string(v);
}

int req_json_int_in(json_object *v, int64_t lo, int64_t hi)
{
    if (!json_object_is_type(v, json_type_int) || json_object_get_userdata(v))
        return 0;
    int64_t x = json_object_get_int64(v);
    /* positives beyond INT64_MAX read as INT64_MAX: out of any int64 range
     * that stops below it */
    if (x == INT64_MAX && json_object_get_uint64(v) > (uint64_t)INT64_MAX)
        return 0;
    return x >= lo && x <= hi;
}

json_object *req_json_get(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
        json_object_is_type(v, json_type_null))
        return NULL;
    return v;
}

const char *req_json_str(json_object *o, const char *key)
{
    json_object *v = req_json_get(o, key);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

#define present req_json_get

int req_json_flag(json_object *o, const char *key, bool *out, req_err_t *e)
{
    json_object *v = req_json_get(o, key);
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_boolean))
        return req_err_set(e, 400, key, NULL, "'%s' must be a boolean", key);
    *out = json_object_get_boolean(v);
    return 1;
}

int req_json_int(json_object *o, const char *key, const char *param, int64_t lo, int64_t hi, int64_t *out,
                 req_err_t *e)
{
    json_object *v = present(o, key);
    const char *name = param ? param : key;
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_int))
        return req_err_set(e, 400, name, NULL, "'%s' must be an integer from %lld to %lld, got %.40s", name,
                           (long long)lo, (long long)hi,
                           json_object_is_type(v, json_type_double) ? req_json_literal(v) : type_phrase(v));
    if (!req_json_int_in(v, lo, hi))
        return req_err_set(e, 400, name, NULL, "'%s' must be an integer from %lld to %lld, got %.80s", name,
                           (long long)lo, (long long)hi, req_json_literal(v));
    *out = json_object_get_int64(v);
    return 1;
}

int req_json_seed(json_object *o, const char *key, uint64_t *out, req_err_t *e)
{
    json_object *v = present(o, key);
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_int) || json_object_get_userdata(v))
        return req_err_set(e, 400, key, NULL,
                           "'%s' must be an integer from -9223372036854775808 to 18446744073709551615 (64 bits), "
                           "got %.80s",
                           key, json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)
                                    ? req_json_literal(v)
                                    : type_phrase(v));
    int64_t x = json_object_get_int64(v);
    *out = x < 0 ? (uint64_t)x : json_object_get_uint64(v);
    return 1;
}
