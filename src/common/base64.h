/* base64.h - RFC 4648 base64 decoding (standard and URL-safe alphabets),
 * for images sent inline in requests.
 *
 * Whitespace (space, tab, CR, LF) anywhere is skipped, as browsers and
 * Python's b64decode do; padding is optional at the end; any other byte,
 * a misplaced '=' or a final group of one character is an error. Pure
 * functions; the decoder writes at most base64_max_decoded(len) bytes.
 */
#ifndef LF_BASE64_H
#define LF_BASE64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline size_t base64_max_decoded(size_t len) { return len / 4 * 3 + 3; }

/* Decodes s[0..len) into out (base64_max_decoded(len) bytes); returns true
 * and the decoded length in *n, or false on malformed input. */
bool base64_decode(const char *s, size_t len, uint8_t *out, size_t *n);

#endif
