/* utf8.c - strict UTF-8 helpers (see utf8.h). */
#include "common/utf8.h"

#include <stdlib.h>
#include <string.h>

size_t utf8_encode(uint32_t c, unsigned char *o)
{
    if (c < 0x80) {
        o[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (unsigned char)(0xC0 | (c >> 6));
        o[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (c >> 12));
        o[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (c >> 18));
    o[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

int utf8_char_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    int len;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0; /* no overlong 3-byte forms */
        if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90; /* no overlong 4-byte forms */
        if (c == 0xF4)
            hi = 0x8F; /* nothing above U+10FFFF */
    } else {
        return -1;
    }
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n)
            return 0;
        unsigned char b = s[i], l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h)
            return -1;
    }
    return len;
}

bool utf8_valid(const char *s, size_t n, size_t *bad)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        if (u[i] < 0x80) { /* ASCII run: the common case */
            i++;
            continue;
        }
        int l = utf8_char_len(u + i, n - i);
        if (l <= 0) {
            if (bad)
                *bad = i;
            return false;
        }
        i += (size_t)l;
    }
    return true;
}

size_t utf8_clip(const char *s, size_t n, size_t max)
{
    if (max >= n)
        return n;
    const unsigned char *u = (const unsigned char *)s;
    size_t end = max;
    /* back over continuation bytes to the start of the character at max */
    while (end > 0 && (u[end] & 0xC0) == 0x80 && max - end < 4)
        end--;
    if ((u[end] & 0xC0) == 0x80)
        return max; /* not inside a valid character: any cut is as good */
    int l = utf8_char_len(u + end, n - end);
    /* max is inside the character that starts at end: cut before it */
    return l > 0 && end + (size_t)l > max ? end : max;
}

size_t utf8_trim_partial(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned char c = u[n - back];
        if ((c & 0xC0) != 0x80) /* the last lead byte: is its character whole? */
            return c >= 0x80 && utf8_char_len(u + n - back, back) == 0 ? n - back : n;
    }
    return n;
}

static const char REPLACEMENT[3] = {(char)0xEF, (char)0xBF, (char)0xBD};

size_t utf8_repair(char *dst, size_t cap, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t w = 0, i = 0;
    while (i < n) {
        int l = utf8_char_len(u + i, n - i);
        const char *src = l > 0 ? s + i : REPLACEMENT;
        size_t sl = l > 0 ? (size_t)l : 3;
        if (w + sl >= cap)
            break;
        memcpy(dst + w, src, sl);
        w += sl;
        i += l > 0 ? (size_t)l : l == 0 ? n - i : 1; /* a cut-short tail is one U+FFFD */
    }
    dst[w] = '\0';
    return w;
}

char *utf8_repair_dup(const char *s, size_t n, size_t *out_len)
{
    size_t cap = n * 3 + 1; /* each byte becomes at most 3 */
    char *d = malloc(cap);
    if (!d)
        return NULL;
    size_t w = utf8_repair(d, cap, s, n);
    if (out_len)
        *out_len = w;
    return d;
}
