/* vocab_detok.c - incremental, UTF-8-safe detokenization of one stream.
 *
 * Token pieces are appended to a working buffer (held-back bytes first);
 * complete, valid UTF-8 characters are written out, a possibly-incomplete
 * tail (a valid prefix of a character, at most 3 bytes) is kept in
 * d->pending, and bytes that can never start or continue a valid character
 * are written as U+FFFD, so the output is always valid UTF-8.
 */
#include "engine/vocab_impl.h"

#include <string.h>

void vocab_detok_init(vocab_detok_t *d, const vocab_t *v, bool special)
{
    memset(d, 0, sizeof *d);
    d->vocab = v;
    d->special = special;
}

/* Length of the valid UTF-8 character at s[0..n), 0 if s is a valid but
 * incomplete prefix, -1 if s[0] cannot start a valid character here. */
static int utf8_char(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    int len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F;
    } else
        return -1;
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n)
            return 0;
        unsigned char b = s[i];
        unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h)
            return -1;
    }
    return len;
}

static const char replacement[3] = {(char)0xEF, (char)0xBF, (char)0xBD};

/* Emits the complete characters of buf[0..n) to out; keeps an incomplete
 * tail in d->pending unless `final`. Returns bytes written. */
static size_t drain(vocab_detok_t *d, const unsigned char *buf, size_t n, bool final, char *out, size_t cap)
{
    size_t w = 0, i = 0;
    d->n_pending = 0;
    while (i < n) {
        int l = utf8_char(buf + i, n - i);
        if (l == 0 && !final) {
            memcpy(d->pending, buf + i, n - i);
            d->n_pending = n - i;
            break;
        }
        const char *src;
        size_t sl;
        if (l <= 0) {
            src = replacement;
            sl = 3;
            i += 1;
        } else {
            src = (const char *)buf + i;
            sl = (size_t)l;
            i += (size_t)l;
        }
        if (w + sl > cap)
            break; /* out of room: drop the rest (cap too small) */
        memcpy(out + w, src, sl);
        w += sl;
    }
    return w;
}

int vocab_detok_push(vocab_detok_t *d, int32_t id, char *out, size_t cap)
{
    unsigned char buf[8 + 512];
    size_t np = d->n_pending;
    memcpy(buf, d->pending, np);
    int n = vocab_token_to_piece(d->vocab, id, d->special, (char *)buf + np, sizeof buf - np);
    if (n < 0)
        return -1;
    if ((size_t)n > sizeof buf - np)
        n = (int)(sizeof buf - np);
    return (int)drain(d, buf, np + (size_t)n, false, out, cap);
}

int vocab_detok_flush(vocab_detok_t *d, char *out, size_t cap)
{
    unsigned char buf[8];
    size_t np = d->n_pending;
    memcpy(buf, d->pending, np);
    return (int)drain(d, buf, np, true, out, cap);
}
