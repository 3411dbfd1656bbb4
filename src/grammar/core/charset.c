/* charset.c - code point range sets (see charset.h). */
#include "grammar/core/charset.h"

#include <stdlib.h>
#include <string.h>

void gr_cset_init(gr_cset_t *s)
{
    s->r = NULL;
    s->n = s->cap = 0;
}

void gr_cset_free(gr_cset_t *s)
{
    free(s->r);
    gr_cset_init(s);
}

static bool reserve(gr_cset_t *s, size_t n)
{
    if (n <= s->cap)
        return true;
    size_t cap = s->cap ? s->cap * 2 : 8;
    while (cap < n)
        cap *= 2;
    gr_range_t *r = realloc(s->r, cap * sizeof *r);
    if (!r)
        return false;
    s->r = r;
    s->cap = cap;
    return true;
}

bool gr_cset_copy(gr_cset_t *dst, const gr_cset_t *src)
{
    gr_cset_init(dst);
    if (!reserve(dst, src->n ? src->n : 1))
        return false;
    if (src->n)
        memcpy(dst->r, src->r, src->n * sizeof *src->r);
    dst->n = src->n;
    return true;
}

bool gr_cset_add(gr_cset_t *s, uint32_t lo, uint32_t hi)
{
    if (lo > hi)
        return true;
    if (hi > GR_CP_MAX)
        hi = GR_CP_MAX;
    if (lo > GR_CP_MAX)
        return true;
    /* find the first range that could merge: r.hi + 1 >= lo */
    size_t i = 0;
    while (i < s->n && s->r[i].hi + 1 < lo)
        i++;
    size_t j = i;
    uint32_t nlo = lo, nhi = hi;
    while (j < s->n && s->r[j].lo <= (hi == UINT32_MAX ? hi : hi + 1)) {
        if (s->r[j].lo < nlo)
            nlo = s->r[j].lo;
        if (s->r[j].hi > nhi)
            nhi = s->r[j].hi;
        j++;
    }
    /* ranges [i, j) merge into one */
    if (j == i) {
        if (!reserve(s, s->n + 1))
            return false;
        memmove(s->r + i + 1, s->r + i, (s->n - i) * sizeof *s->r);
        s->n++;
    } else if (j > i + 1) {
        memmove(s->r + i + 1, s->r + j, (s->n - j) * sizeof *s->r);
        s->n -= j - i - 1;
    }
    s->r[i].lo = nlo;
    s->r[i].hi = nhi;
    return true;
}

bool gr_cset_add_set(gr_cset_t *s, const gr_cset_t *o)
{
    for (size_t i = 0; i < o->n; i++)
        if (!gr_cset_add(s, o->r[i].lo, o->r[i].hi))
            return false;
    return true;
}

bool gr_cset_negate(gr_cset_t *s)
{
    gr_cset_t t;
    gr_cset_init(&t);
    uint32_t next = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (s->r[i].lo > next && !gr_cset_add(&t, next, s->r[i].lo - 1)) {
            gr_cset_free(&t);
            return false;
        }
        next = s->r[i].hi + 1;
    }
    if (next <= GR_CP_MAX && !gr_cset_add(&t, next, GR_CP_MAX)) {
        gr_cset_free(&t);
        return false;
    }
    gr_cset_free(s);
    *s = t;
    return true;
}

bool gr_cset_intersect(gr_cset_t *s, const gr_cset_t *o)
{
    gr_cset_t t;
    gr_cset_init(&t);
    size_t i = 0, j = 0;
    while (i < s->n && j < o->n) {
        uint32_t lo = s->r[i].lo > o->r[j].lo ? s->r[i].lo : o->r[j].lo;
        uint32_t hi = s->r[i].hi < o->r[j].hi ? s->r[i].hi : o->r[j].hi;
        if (lo <= hi && !gr_cset_add(&t, lo, hi)) {
            gr_cset_free(&t);
            return false;
        }
        if (s->r[i].hi < o->r[j].hi)
            i++;
        else
            j++;
    }
    gr_cset_free(s);
    *s = t;
    return true;
}

bool gr_cset_subtract(gr_cset_t *s, const gr_cset_t *o)
{
    gr_cset_t neg;
    if (!gr_cset_copy(&neg, o))
        return false;
    bool ok = gr_cset_negate(&neg) && gr_cset_intersect(s, &neg);
    gr_cset_free(&neg);
    return ok;
}

bool gr_cset_has(const gr_cset_t *s, uint32_t c)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (s->r[m].hi < c)
            lo = m + 1;
        else if (s->r[m].lo > c)
            hi = m;
        else
            return true;
    }
    return false;
}

bool gr_cset_empty(const gr_cset_t *s)
{
    return s->n == 0;
}

bool gr_cset_equal(const gr_cset_t *a, const gr_cset_t *b)
{
    return a->n == b->n && (a->n == 0 || !memcmp(a->r, b->r, a->n * sizeof *a->r));
}

/* Simple one-to-one case pairs: ASCII, Latin-1 (except U+00D7/U+00F7/U+00DF),
 * Greek and Cyrillic basic blocks. Enough for patterns written in practice. */
static uint32_t other_case(uint32_t c)
{
    if (c >= 'A' && c <= 'Z')
        return c + 32;
    if (c >= 'a' && c <= 'z')
        return c - 32;
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7)
        return c + 32;
    if (c >= 0xE0 && c <= 0xFE && c != 0xF7)
        return c - 32;
    if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2)
        return c + 32;
    if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2)
        return c - 32;
    if (c >= 0x410 && c <= 0x42F)
        return c + 32;
    if (c >= 0x430 && c <= 0x44F)
        return c - 32;
    return c;
}

bool gr_cset_add_case(gr_cset_t *s)
{
    gr_cset_t t;
    if (!gr_cset_copy(&t, s))
        return false;
    bool ok = true;
    for (size_t i = 0; ok && i < t.n; i++) {
        uint32_t lo = t.r[i].lo, hi = t.r[i].hi;
        if (lo > 0x44F)
            break;
        if (hi > 0x44F)
            hi = 0x44F;
        for (uint32_t c = lo; ok && c <= hi; c++) {
            uint32_t o = other_case(c);
            if (o != c)
                ok = gr_cset_add(s, o, o);
        }
    }
    gr_cset_free(&t);
    return ok;
}
