/* mutate.h - byte mutations for the request parsers' fuzz loops (every
 * new parser is fuzzed: flipped, dropped and duplicated bytes of valid
 * bodies must give a parse or a filled 4xx, never a crash; run under ASan).
 * A fixed seed makes the cases the same every run. Header-only. */
#ifndef LF_TEST_MUTATE_H
#define LF_TEST_MUTATE_H

#include <stddef.h>
#include <string.h>

/* Applies `edits` random edits to buf (len bytes + NUL, cap bytes room):
 * a byte replaced, removed or duplicated; *rng advances (an LCG). */
static inline void mutate(char *buf, size_t *len, size_t cap, unsigned long long *rng, int edits)
{
    for (int k = 0; k < edits && *len > 0; k++) {
        *rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
        size_t pos = (size_t)(*rng >> 33) % *len;
        int op = (int)((*rng >> 20) % 3);
        if (op == 0) {
            buf[pos] = (char)(*rng >> 40);
        } else if (op == 1 && *len > 1) {
            memmove(buf + pos, buf + pos + 1, *len - pos);
            (*len)--;
        } else if (*len + 1 < cap) {
            memmove(buf + pos + 1, buf + pos, *len - pos + 1);
            (*len)++;
        }
    }
}

#endif
