/* jinja_case.c - upper/lower/title/capitalize over UTF-8 with simple
 * Unicode case mapping for the scripts chat content commonly uses (ASCII,
 * Latin-1, Latin Extended-A, Greek, Cyrillic, fullwidth Latin) plus Python's
 * 'ß'.upper() == 'SS'. Other code points are left unchanged (documented gap:
 * no full Unicode case tables). */
#include "chat/template/jinja.h"

#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

static uint32_t decode(const char *s, size_t n, size_t *len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t l = u[0] < 0x80 ? 1 : (u[0] & 0xE0) == 0xC0 ? 2 : (u[0] & 0xF0) == 0xE0 ? 3 : (u[0] & 0xF8) == 0xF0 ? 4 : 1;
    if (l > n)
        l = 1;
    *len = l;
    if (l == 1)
        return u[0] < 0x80 ? u[0] : 0xFFFFFFFF; /* stray byte: copied as is */
    uint32_t c = u[0] & (0xFF >> (l + 1));
    for (size_t i = 1; i < l; i++)
        c = (c << 6) | (u[i] & 0x3F);
    return c;
}

/* Latin Extended-A pairs: upper is even in these ranges, odd in the others. */
static bool exta_even_upper(uint32_t c)
{
    return (c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177);
}

static uint32_t to_upper(uint32_t c)
{
    if (c >= 'a' && c <= 'z') return c - 32;
    if (c < 0x80) return c;
    if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
    if (c == 0xFF) return 0x178;
    if (c == 0xB5) return 0x39C;
    if (c == 0x131) return 'I';
    if (c == 0x17F) return 'S';
    if (c >= 0x100 && c <= 0x17E) {
        if (exta_even_upper(c)) return (c & 1) ? c - 1 : c;
        if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c : c - 1;
        return c;
    }
    if (c >= 0x3B1 && c <= 0x3C9) return c == 0x3C2 ? 0x3A3 : c - 32;
    if (c == 0x3AC) return 0x386;
    if (c >= 0x3AD && c <= 0x3AF) return c - 37;
    if (c == 0x3CC) return 0x38C;
    if (c == 0x3CD || c == 0x3CE) return c - 63;
    if (c >= 0x430 && c <= 0x44F) return c - 32;
    if (c >= 0x450 && c <= 0x45F) return c - 80;
    if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF)) return (c & 1) ? c - 1 : c;
    if (c >= 0xFF41 && c <= 0xFF5A) return c - 32;
    return c;
}

static uint32_t to_lower(uint32_t c)
{
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c < 0x80) return c;
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
    if (c == 0x178) return 0xFF;
    if (c >= 0x100 && c <= 0x17E) {
        if (exta_even_upper(c)) return (c & 1) ? c : c + 1;
        if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c + 1 : c;
        return c;
    }
    if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
    if (c == 0x386) return 0x3AC;
    if (c >= 0x388 && c <= 0x38A) return c + 37;
    if (c == 0x38C) return 0x3CC;
    if (c == 0x38E || c == 0x38F) return c + 63;
    if (c >= 0x410 && c <= 0x42F) return c + 32;
    if (c >= 0x400 && c <= 0x40F) return c + 80;
    if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF)) return (c & 1) ? c : c + 1;
    if (c >= 0xFF21 && c <= 0xFF3A) return c + 32;
    return c;
}

static bool is_cased(uint32_t c) { return c != 0xFFFFFFFF && (to_upper(c) != c || to_lower(c) != c || c == 0xDF); }

jv_t *jinja_str_case(jctx_t *c, jv_t *s, int mode)
{
    const char *p = s->u.str.s;
    size_t n = s->u.str.n, o = 0;
    if (n > (SIZE_MAX - 1) / 2)
        return NULL;
    char *out = jarena_alloc(jctx_arena(c), n * 2 + 1); /* 'ß' -> "SS" at most doubles */
    if (!out) {
        jctx_fail(c, "template rendering ran out of memory");
        return NULL;
    }
    bool prev = false; /* mode 2: previous char cased; mode 4: previous char a separator */
    for (size_t i = 0; i < n;) {
        size_t l;
        uint32_t ch = decode(p + i, n - i, &l);
        bool up;
        switch (mode) {
        case 0: up = false; break;
        case 1: up = true; break;
        case 2: up = !prev; break;
        case 4: up = i == 0 || prev; break;
        default: up = i == 0; break;
        }
        if (ch == 0xFFFFFFFF) {
            memcpy(out + o, p + i, l);
            o += l;
        } else if (up && ch == 0xDF && mode == 1) {
            out[o++] = 'S';
            out[o++] = 'S';
        } else
            o += utf8_encode(up ? to_upper(ch) : to_lower(ch), (unsigned char *)out + o);
        if (mode == 4) {
            size_t sl;
            prev = ch == '-' || ch == '(' || ch == '{' || ch == '[' || ch == '<' ||
                   (ch != 0xFFFFFFFF && jv_is_pyspace(p + i, n - i, &sl));
        } else
            prev = is_cased(ch);
        i += l;
    }
    out[o] = 0;
    jv_t *r = jv_str_own(jctx_arena(c), out, o);
    if (!r)
        jctx_fail(c, "template rendering ran out of memory");
    return r;
}
