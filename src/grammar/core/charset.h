/* charset.h - sets of Unicode code points as sorted, disjoint, non-adjacent
 * ranges [lo, hi] (0 <= lo <= hi <= 0x10FFFF).
 *
 * Used by the regex and GBNF parsers for character classes and by the NFA
 * builder, which turns a set into UTF-8 (or JSON-escaped) byte sequences.
 * A gr_cset_t owns its range array; every operation keeps the invariant.
 * Operations that grow a set return false on allocation failure (the set is
 * then unchanged or partially built but still valid to free).
 */
#ifndef LF_GR_CHARSET_H
#define LF_GR_CHARSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GR_CP_MAX 0x10FFFFu

typedef struct {
    uint32_t lo, hi;
} gr_range_t;

typedef struct {
    gr_range_t *r;
    size_t n, cap;
} gr_cset_t;

void gr_cset_init(gr_cset_t *s);
void gr_cset_free(gr_cset_t *s);
bool gr_cset_copy(gr_cset_t *dst, const gr_cset_t *src);   /* dst initialised or not */
bool gr_cset_add(gr_cset_t *s, uint32_t lo, uint32_t hi);   /* union with [lo,hi] */
bool gr_cset_add_set(gr_cset_t *s, const gr_cset_t *o);     /* union */
bool gr_cset_negate(gr_cset_t *s);                          /* complement in 0..GR_CP_MAX */
bool gr_cset_intersect(gr_cset_t *s, const gr_cset_t *o);   /* s := s & o */
bool gr_cset_subtract(gr_cset_t *s, const gr_cset_t *o);    /* s := s - o */
bool gr_cset_has(const gr_cset_t *s, uint32_t c);
bool gr_cset_empty(const gr_cset_t *s);
bool gr_cset_equal(const gr_cset_t *a, const gr_cset_t *b);
/* Adds the simple case variants (ASCII and Latin-1/Greek/Cyrillic basic
 * pairs) of every member: used for case-insensitive classes. */
bool gr_cset_add_case(gr_cset_t *s);

#endif
