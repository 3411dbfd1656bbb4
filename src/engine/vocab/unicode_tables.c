/* unicode_tables.c - lookups over the generated tables (binary search). */
#include "engine/vocab/unicode_tables.h"

#include <stddef.h>

#include "engine/vocab/unicode_data.inc"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Index of the row whose first column is the largest <= c, or -1. */
static long find_row(const uint32_t *rows, size_t n, size_t stride, uint32_t c)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (rows[mid * stride] <= c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (long)lo - 1;
}

static bool in_ranges(const uint32_t (*r)[2], size_t n, uint32_t c)
{
    long i = find_row(&r[0][0], n, 2, c);
    return i >= 0 && c <= r[i][1];
}

uint32_t unicode_nfd_first(uint32_t c)
{
    long i = find_row(&nfd_ranges[0][0], COUNT(nfd_ranges), 3, c);
    return i >= 0 && c <= nfd_ranges[i][1] ? nfd_ranges[i][2] : c;
}

uint32_t unicode_to_lower(uint32_t c)
{
    long i = find_row(&lower_pairs[0][0], COUNT(lower_pairs), 2, c);
    return i >= 0 && lower_pairs[i][0] == c ? lower_pairs[i][1] : c;
}

bool unicode_is_punct(uint32_t c) { return in_ranges(punct_ranges, COUNT(punct_ranges), c); }
bool unicode_is_symbol(uint32_t c) { return in_ranges(symbol_ranges, COUNT(symbol_ranges), c); }
bool unicode_is_control(uint32_t c) { return in_ranges(control_ranges, COUNT(control_ranges), c); }
bool unicode_is_mark(uint32_t c) { return in_ranges(mark_ranges, COUNT(mark_ranges), c); }

bool unicode_is_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}
