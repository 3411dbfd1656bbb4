/* media_fetch.h - remote images (http:// and https:// URLs) fetched with
 * libcurl under the operator's rules, safe against server-side request
 * forgery:
 *  - only hosts on the allow-list (a name matches itself and its
 *    subdomains; "*" allows every host), checked for the URL and again for
 *    every redirect, which is followed by hand up to max_redirects;
 *  - every address curl is about to connect to is checked at connect time
 *    (so a name that resolves, or re-resolves, to an internal address is
 *    refused): loopback, private (RFC 1918, fc00::/7), link-local, CGNAT,
 *    multicast, unspecified and IPv4-mapped forms of these, unless the
 *    operator allows private addresses; no proxy is used;
 *  - a byte limit (the body, and Content-Length up front), a total time
 *    limit, HTTP status 200 required.
 * Thread-safe (one curl handle per call; media_fetch_global_init once).
 */
#ifndef LF_MEDIA_FETCH_H
#define LF_MEDIA_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *allowed_hosts;  /* comma-separated; NULL or "": remote images are off */
    bool allow_private;         /* also connect to loopback / private addresses */
    int64_t max_bytes;          /* largest body */
    int32_t timeout_ms;         /* the whole fetch */
    int32_t max_redirects;
} media_fetch_opts_t;

/* curl_global_init; call once before threads start. */
void media_fetch_global_init(void);

/* Whether host (no port) is on the allow-list. */
bool media_host_allowed(const char *allowed_hosts, const char *host);

/* Whether an IPv4 / IPv6 address (network byte order) is one of the
 * internal kinds above. */
bool media_addr_internal(int family, const void *addr);

/* Fetches url into *out (malloc'd, *n bytes). Returns 0, or -1 with a
 * client-facing reason in why (cap bytes) and *timeout set when the time
 * limit ran out. */
int media_fetch(const media_fetch_opts_t *o, const char *url, uint8_t **out, size_t *n, bool *timeout, char *why,
                size_t cap);

#endif
