/* strbuf.h - a growable byte string for building output (JSON bodies,
 * normalised text).
 *
 * Contract: a zeroed strbuf_t is empty and valid. Appends keep the bytes
 * NUL-terminated (p[n] == '\0' once anything was appended) and never fail
 * loudly: out of memory sets `oom`, after which appends do nothing; check
 * it once at the end. strbuf_free releases the bytes and zeroes the
 * buffer. Not thread-safe (one owner).
 */
#ifndef LF_STRBUF_H
#define LF_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *p;   /* the bytes, or NULL while empty */
    size_t n;  /* bytes used (the NUL not counted) */
    size_t cap;
    bool oom;  /* an append ran out of memory */
} strbuf_t;

void strbuf_put(strbuf_t *b, const char *s, size_t n);
void strbuf_str(strbuf_t *b, const char *s);
/* printf-style, any length. */
void strbuf_fmt(strbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_free(strbuf_t *b);

#endif
