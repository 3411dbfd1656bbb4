/* base64.c - base64 decoding (see base64.h). */
#include "common/base64.h"

static int value_of(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

bool base64_decode(const char *s, size_t len, uint8_t *out, size_t *n)
{
    uint32_t acc = 0;
    int have = 0, pad = 0;
    size_t w = 0;
    for (size_t i = 0; i < len; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        const int v = value_of(c);
        if (v < 0 || pad) /* a data character after padding */
            return false;
        acc = (acc << 6) | (uint32_t)v;
        if (++have == 4) {
            out[w++] = (uint8_t)(acc >> 16);
            out[w++] = (uint8_t)(acc >> 8);
            out[w++] = (uint8_t)acc;
            acc = 0;
            have = 0;
        }
    }
    if (have == 1 || pad > 2 || (pad && (have + pad) % 4))
        return false;
    if (have == 2) {
        out[w++] = (uint8_t)(acc >> 4);
    } else if (have == 3) {
        out[w++] = (uint8_t)(acc >> 10);
        out[w++] = (uint8_t)(acc >> 2);
    }
    *n = w;
    return true;
}
