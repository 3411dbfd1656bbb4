/* strbuf.c - a growable byte string (see strbuf.h). */
#include "common/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for n more bytes and the NUL; false (oom set) when there is none. */
static bool reserve(strbuf_t *b, size_t n)
{
    if (b->oom)
        return false;
    if (n > (size_t)-1 / 2 - b->n) {
        b->oom = true;
        return false;
    }
    if (b->n + n + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap * 2 : 256;
    while (cap < b->n + n + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void strbuf_put(strbuf_t *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return;
    if (n)
        memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void strbuf_str(strbuf_t *b, const char *s)
{
    strbuf_put(b, s, strlen(s));
}

void strbuf_fmt(strbuf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

void strbuf_free(strbuf_t *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}
