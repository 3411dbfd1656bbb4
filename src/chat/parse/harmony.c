/* harmony.c - harmony header parsing (see harmony.h). */
#include "chat/parse/harmony.h"

#include <string.h>

const char *const harmony_body_ends[] = {HARMONY_END, HARMONY_CALL, HARMONY_RETURN, HARMONY_START, HARMONY_CHANNEL,
                                         NULL};
const char *const harmony_header_starts[] = {HARMONY_START, HARMONY_CHANNEL, NULL};

/* Copies the word at h[i..] (up to whitespace, '<' or the end) into out. */
static void word(const char *h, size_t n, size_t i, char *out, size_t cap)
{
    size_t w = 0;
    while (i < n && !strchr(" \t\r\n<", h[i])) {
        if (w + 1 < cap)
            out[w++] = h[i];
        i++;
    }
    out[w] = '\0';
}

void harmony_header_parse(const char *h, size_t n, harmony_header_t *out)
{
    memset(out, 0, sizeof *out);
    const size_t cl = strlen(HARMONY_CHANNEL);
    for (size_t i = 0; i < n; i++) {
        if (n - i >= cl && !memcmp(h + i, HARMONY_CHANNEL, cl))
            word(h, n, i + cl, out->channel, sizeof out->channel);
        else if (n - i >= 3 && !memcmp(h + i, "to=", 3) && (i == 0 || strchr(" \t\r\n>", h[i - 1])))
            word(h, n, i + 3, out->recipient, sizeof out->recipient);
    }
}
