/* sha256.h - SHA-256 (FIPS 180-4), incremental, for checking downloaded
 * files against the digest the hub publishes (its LFS oid / X-Linked-Etag).
 *
 * Usage: sha256_init, any number of sha256_update calls (any lengths), then
 * sha256_final, which writes the 32-byte digest; sha256_hex formats it as
 * 64 lower-case hex digits plus NUL. A context is plain data: no
 * allocation, nothing to free. None of these functions can fail.
 */
#ifndef LF_SHA256_H
#define LF_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t n_bytes;     /* message length so far */
    uint8_t buf[64];      /* pending partial block */
    size_t n_buf;
} sha256_t;

void sha256_init(sha256_t *s);
void sha256_update(sha256_t *s, const void *data, size_t len);
void sha256_final(sha256_t *s, uint8_t out[32]);
void sha256_hex(const uint8_t digest[32], char out[65]);

#endif
