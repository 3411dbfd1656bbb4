/* jinja_lex.c - Jinja2 lexer with trim_blocks and lstrip_blocks.
 *
 * Mirrors jinja2.lexer (3.1) for the default delimiters:
 *  - the source's newlines are normalized to "\n" and one trailing newline
 *    is dropped (keep_trailing_newline=False);
 *  - "{%-"/"{{-"/"{#-" strip all whitespace before the tag, "-%}"/"-}}"/"-#}"
 *    all whitespace after it;
 *  - lstrip_blocks: spaces/tabs between a line start and "{%" or "{#" are
 *    removed (not before "{{", not with "{%+");
 *  - trim_blocks: the first newline after "%}" or "#}" is removed (not after
 *    "+%}"). */
#include "chat/template/jinja.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

typedef struct {
    jarena_t *a;
    jtoks_t *out;
    char *err;
    size_t errn;
    int line;
} lexer_t;

static bool push(lexer_t *L, jtok_kind_t k, const char *s, size_t n)
{
    jtoks_t *t = L->out;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        jtok_t *nv = jarena_alloc(L->a, cap * sizeof *nv);
        if (!nv)
            return false;
        if (t->n)
            memcpy(nv, t->v, t->n * sizeof *nv);
        t->v = nv;
        t->cap = cap;
    }
    jtok_t *tok = &t->v[t->n++];
    memset(tok, 0, sizeof *tok);
    tok->kind = k;
    tok->line = L->line;
    if (s) {
        tok->s = jarena_strndup(L->a, s, n);
        if (!tok->s)
            return false;
    }
    tok->n = n;
    return true;
}

static bool fail(lexer_t *L, const char *msg)
{
    snprintf(L->err, L->errn, "template syntax error (line %d): %s", L->line, msg);
    return false;
}

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A quoted string starting at s[0] (the quote); Python unicode-escape rules. */
static bool lex_string(lexer_t *L, const char *s, size_t n, size_t *used)
{
    char q = s[0];
    size_t i = 1;
    char *o = jarena_alloc(L->a, n * 4 + 1); /* unescaped text is never longer */
    if (!o)
        return fail(L, "out of memory");
    size_t on = 0;
    int line0 = L->line;
    while (i < n && s[i] != q) {
        if (s[i] == '\n')
            L->line++;
        if (s[i] != '\\' || i + 1 >= n) {
            o[on++] = s[i++];
            continue;
        }
        char e = s[i + 1];
        i += 2;
        switch (e) {
        case 'n': o[on++] = '\n'; break;
        case 't': o[on++] = '\t'; break;
        case 'r': o[on++] = '\r'; break;
        case 'b': o[on++] = '\b'; break;
        case 'f': o[on++] = '\f'; break;
        case 'v': o[on++] = '\v'; break;
        case 'a': o[on++] = '\a'; break;
        case '\\': o[on++] = '\\'; break;
        case '\'': o[on++] = '\''; break;
        case '"': o[on++] = '"'; break;
        case '\n': break;
        case 'x': case 'u': case 'U': {
            int nd = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t c = 0;
            for (int k = 0; k < nd; k++) {
                int h = i + (size_t)k < n ? hexval(s[i + k]) : -1;
                if (h < 0)
                    return fail(L, "bad escape in string literal");
                c = c * 16 + (uint32_t)h;
            }
            if (c > 0x10FFFF)
                return fail(L, "bad escape in string literal");
            i += (size_t)nd;
            on += utf8_encode(c, (unsigned char *)o + on);
            break;
        }
        default:
            if (e >= '0' && e <= '7') {
                uint32_t c = (uint32_t)(e - '0');
                for (int k = 0; k < 2 && i < n && s[i] >= '0' && s[i] <= '7'; k++)
                    c = c * 8 + (uint32_t)(s[i++] - '0');
                on += utf8_encode(c, (unsigned char *)o + on);
            } else {
                o[on++] = '\\';
                o[on++] = e;
            }
        }
    }
    if (i >= n) {
        L->line = line0;
        return fail(L, "unterminated string");
    }
    o[on] = 0;
    if (!push(L, JT_STRING, NULL, 0))
        return fail(L, "out of memory");
    jtok_t *t = &L->out->v[L->out->n - 1];
    t->s = o;
    t->n = on;
    *used = i + 1;
    return true;
}

static const char *const ops2[] = {"//", "**", "==", "!=", "<=", ">=", NULL};
static const char ops1[] = "+-*/%~<>=()[]{},.:|";

/* Tokens inside a tag until its end delimiter `end` ("%}" or "}}").
 * Returns the position after the delimiter; *strip_after for "-%}". */
static bool lex_tag(lexer_t *L, const char *src, size_t n, size_t *pos, char endc, char *sign)
{
    size_t i = *pos;
    int depth = 0;
    for (;;) {
        while (i < n && is_ws(src[i])) {
            if (src[i] == '\n')
                L->line++;
            i++;
        }
        if (i >= n)
            return fail(L, "unexpected end of template inside a tag");
        /* end delimiter (only outside brackets for "}}") */
        if ((src[i] == '-' || src[i] == '+') && i + 2 < n && src[i + 1] == endc && src[i + 2] == '}' &&
            !(endc == '}' && depth > 0)) {
            *sign = src[i];
            *pos = i + 3;
            return true;
        }
        if (src[i] == endc && i + 1 < n && src[i + 1] == '}' && !(endc == '}' && depth > 0)) {
            *sign = 0;
            *pos = i + 2;
            return true;
        }
        char c = src[i];
        if (isalpha((unsigned char)c) || c == '_') {
            size_t j = i;
            while (j < n && (isalnum((unsigned char)src[j]) || src[j] == '_'))
                j++;
            if (!push(L, JT_NAME, src + i, j - i))
                return fail(L, "out of memory");
            i = j;
        } else if (isdigit((unsigned char)c)) {
            size_t j = i;
            bool isf = false;
            while (j < n && (isdigit((unsigned char)src[j]) || src[j] == '_'))
                j++;
            if (j + 1 < n && src[j] == '.' && isdigit((unsigned char)src[j + 1])) {
                isf = true;
                j++;
                while (j < n && isdigit((unsigned char)src[j]))
                    j++;
            }
            if (j < n && (src[j] == 'e' || src[j] == 'E')) {
                size_t k = j + 1;
                if (k < n && (src[k] == '+' || src[k] == '-'))
                    k++;
                if (k < n && isdigit((unsigned char)src[k])) {
                    isf = true;
                    while (k < n && isdigit((unsigned char)src[k]))
                        k++;
                    j = k;
                }
            }
            char buf[64];
            size_t m = 0;
            for (size_t k = i; k < j && m < sizeof buf - 1; k++)
                if (src[k] != '_')
                    buf[m++] = src[k];
            buf[m] = 0;
            if (!push(L, isf ? JT_FLOAT : JT_INT, NULL, 0))
                return fail(L, "out of memory");
            jtok_t *t = &L->out->v[L->out->n - 1];
            if (isf)
                t->f = strtod(buf, NULL);
            else
                t->i = strtoll(buf, NULL, 10);
            i = j;
        } else if (c == '\'' || c == '"') {
            size_t used;
            if (!lex_string(L, src + i, n - i, &used))
                return false;
            i += used;
        } else {
            size_t len = 0;
            for (int k = 0; ops2[k]; k++)
                if (i + 1 < n && src[i] == ops2[k][0] && src[i + 1] == ops2[k][1])
                    len = 2;
            if (!len && strchr(ops1, c))
                len = 1;
            if (!len) {
                char m[64];
                snprintf(m, sizeof m, "unexpected character '%c'", c);
                return fail(L, m);
            }
            if (c == '(' || c == '[' || c == '{')
                depth++;
            else if ((c == ')' || c == ']' || c == '}') && depth > 0)
                depth--;
            if (!push(L, JT_OP, src + i, len))
                return fail(L, "out of memory");
            i += len;
        }
    }
}

/* Does the tag body at p read `[ws] word [ws] ('-%}' | '+%}' | '%}')`? On
 * success *end is the position after the closing delimiter (after the
 * whitespace a '-' strips) and *esign its sign. */
static bool is_word_tag(const char *src, size_t n, size_t p, const char *word, size_t *end, char *esign)
{
    size_t wl = strlen(word);
    while (p < n && is_ws(src[p]))
        p++;
    if (p + wl > n || memcmp(src + p, word, wl))
        return false;
    p += wl;
    if (p < n && (isalnum((unsigned char)src[p]) || src[p] == '_'))
        return false;
    while (p < n && is_ws(src[p]))
        p++;
    *esign = 0;
    if (p + 2 < n && (src[p] == '-' || src[p] == '+') && src[p + 1] == '%' && src[p + 2] == '}') {
        *esign = src[p];
        p += 3;
        if (*esign == '-')
            while (p < n && is_ws(src[p]))
                p++;
        *end = p;
        return true;
    }
    if (p + 1 < n && src[p] == '%' && src[p + 1] == '}') {
        *end = p + 2;
        return true;
    }
    return false;
}

static bool is_raw(const char *src, size_t n, size_t p, const char *word, size_t *end)
{
    char es;
    return is_word_tag(src, n, p, word, end, &es) && es != '+';
}

static size_t count_nl(const char *s, size_t n);

/* The body of a raw block starting at `from`, up to its {% endraw %}:
 * Jinja2 applies whitespace control and lstrip_blocks before endraw and
 * trim_blocks after it (not after {% raw %}). */
static bool lex_raw(lexer_t *L, const char *src, size_t n, size_t from, size_t *pos, bool *line_starting)
{
    for (size_t q = from; q + 1 < n; q++) {
        if (src[q] != '{' || src[q + 1] != '%')
            continue;
        size_t p = q + 2, end;
        char sign = (p < n && (src[p] == '-' || src[p] == '+')) ? src[p] : 0, esign;
        if (sign)
            p++;
        if (!is_word_tag(src, n, p, "endraw", &end, &esign))
            continue;
        size_t tlen = q - from;
        if (sign == '-') {
            while (tlen > 0 && is_ws(src[from + tlen - 1]))
                tlen--;
        } else if (sign != '+') { /* lstrip_blocks before {% endraw %} */
            size_t l = tlen;
            while (l > 0 && src[from + l - 1] != '\n')
                l--;
            bool allws = l < tlen;
            for (size_t k = l; k < tlen; k++)
                if (!is_ws(src[from + k]))
                    allws = false;
            if (allws)
                tlen = l;
        }
        if (tlen && !push(L, JT_DATA, src + from, tlen))
            return fail(L, "out of memory");
        L->line += (int)count_nl(src + from, end - from);
        *line_starting = esign == '-' && end > from && src[end - 1] == '\n';
        if (esign == 0 && end < n && src[end] == '\n') { /* trim_blocks */
            end++;
            L->line++;
            *line_starting = true;
        }
        *pos = end;
        return true;
    }
    return fail(L, "missing end of raw directive");
}

static size_t count_nl(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += s[i] == '\n';
    return c;
}

bool jinja_lex(jarena_t *a, const char *src0, size_t n0, jtoks_t *out, char *err, size_t errn)
{
    lexer_t L = {a, out, err, errn, 1};
    /* normalize newlines, drop one trailing newline */
    char *src = jarena_alloc(a, n0 + 1);
    if (!src)
        return fail(&L, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < n0; i++) {
        if (src0[i] == '\r') {
            src[n++] = '\n';
            if (i + 1 < n0 && src0[i + 1] == '\n')
                i++;
        } else
            src[n++] = src0[i];
    }
    if (n > 0 && src[n - 1] == '\n')
        n--;
    src[n] = 0;

    size_t pos = 0;
    bool line_starting = true;
    while (pos <= n) {
        /* find the next tag start */
        size_t t = pos;
        while (t + 1 < n && !(src[t] == '{' && (src[t + 1] == '{' || src[t + 1] == '%' || src[t + 1] == '#')))
            t++;
        if (t + 1 >= n) {
            if (n > pos && !push(&L, JT_DATA, src + pos, n - pos))
                return fail(&L, "out of memory");
            break;
        }
        char kind = src[t + 1];
        size_t p = t + 2;
        char sign = (p < n && (src[p] == '-' || src[p] == '+')) ? src[p] : 0;
        size_t tlen = t - pos;
        if (sign == '-') {
            while (tlen > 0 && is_ws(src[pos + tlen - 1]))
                tlen--;
        } else if (sign != '+' && kind != '{') {
            size_t l = tlen;
            while (l > 0 && src[pos + l - 1] != '\n')
                l--;
            if (l > 0 || line_starting) {
                bool allws = l < tlen;
                for (size_t k = l; k < tlen; k++)
                    if (!is_ws(src[pos + k]))
                        allws = false;
                if (allws)
                    tlen = l;
            }
        }
        if (tlen && !push(&L, JT_DATA, src + pos, tlen))
            return fail(&L, "out of memory");
        L.line += (int)count_nl(src + pos, t - pos);
        if (sign)
            p++;
        char endsign = 0;
        size_t raw_end;
        if (kind == '%' && is_raw(src, n, p, "raw", &raw_end)) {
            /* {% raw %}...{% endraw %}: the body is data, verbatim */
            if (!lex_raw(&L, src, n, raw_end, &p, &line_starting))
                return false;
            pos = p;
            if (pos >= n)
                break;
            continue;
        }
        if (kind == '#') {
            size_t q = p;
            while (q + 1 < n && !(src[q] == '#' && src[q + 1] == '}'))
                q++;
            if (q + 1 >= n)
                return fail(&L, "unterminated comment");
            L.line += (int)count_nl(src + p, q - p);
            if (q > p && (src[q - 1] == '-' || src[q - 1] == '+'))
                endsign = src[q - 1];
            p = q + 2;
        } else {
            if (!push(&L, kind == '%' ? JT_BLOCK_BEGIN : JT_VAR_BEGIN, NULL, 0))
                return fail(&L, "out of memory");
            if (!lex_tag(&L, src, n, &p, kind == '%' ? '%' : '}', &endsign))
                return false;
            if (!push(&L, kind == '%' ? JT_BLOCK_END : JT_VAR_END, NULL, 0))
                return fail(&L, "out of memory");
        }
        line_starting = false;
        if (endsign == '-') {
            size_t q = p;
            while (q < n && is_ws(src[q]))
                q++;
            L.line += (int)count_nl(src + p, q - p);
            line_starting = q > p && src[q - 1] == '\n';
            p = q;
        } else if (endsign != '+' && kind != '{' && p < n && src[p] == '\n') {
            p++;
            L.line++;
            line_starting = true;
        }
        pos = p;
        if (pos >= n)
            break;
    }
    if (!push(&L, JT_EOF, NULL, 0))
        return fail(&L, "out of memory");
    return true;
}
