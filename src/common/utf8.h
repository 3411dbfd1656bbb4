/* utf8.h - strict UTF-8 (RFC 3629): validation, cutting at character
 * boundaries, and repair of text that must be written out.
 *
 * "Valid" means: shortest encodings only, no surrogates (U+D800..DFFF), at
 * most U+10FFFF. Repair replaces each byte that cannot start a valid
 * character (and a character cut short at the end of the input) with
 * U+FFFD, as Python's errors="replace" and Hugging Face's decoders do.
 * Pure functions, no allocation except utf8_repair_dup.
 */
#ifndef LF_UTF8_H
#define LF_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Writes code point c (<= U+10FFFF) to o[0..4) as UTF-8 (surrogates are
 * encoded as they are: callers that must not write them check first);
 * returns the length, 1..4. */
size_t utf8_encode(uint32_t c, unsigned char *o);

/* Length (1..4) of the valid character at s[0..n), 0 when s is a valid
 * but incomplete start of one, -1 when s[0] cannot start a valid
 * character here (n >= 1). */
int utf8_char_len(const unsigned char *s, size_t n);

/* Whether s[0..n) is valid UTF-8; on false, *bad (may be NULL) is the
 * offset of the first byte that is not. */
bool utf8_valid(const char *s, size_t n, size_t *bad);

/* The largest length <= max (and <= n) that does not end inside a
 * character of s: for "%.*s" and other cuts. */
size_t utf8_clip(const char *s, size_t n, size_t max);

/* The length of s[0..n) without a character cut short at its end (for a
 * buffer that snprintf filled to the brim). */
size_t utf8_trim_partial(const char *s, size_t n);

/* Copies s[0..n) into dst (cap >= 1 bytes, always NUL-terminated),
 * invalid bytes as U+FFFD, stopping before a character that does not fit.
 * Returns the bytes written (without the NUL). */
size_t utf8_repair(char *dst, size_t cap, const char *s, size_t n);

/* The repaired copy of s[0..n) (malloc'd, NUL-terminated; *out_len its
 * length, may be NULL). NULL when out of memory. */
char *utf8_repair_dup(const char *s, size_t n, size_t *out_len);

#endif
