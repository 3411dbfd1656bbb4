/* media_fetch.c - remote images with SSRF protection (see media_fetch.h). */
#include "server/media/media_fetch.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

void media_fetch_global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

bool media_host_allowed(const char *allowed, const char *host)
{
    if (!allowed || !*allowed || !host || !*host)
        return false;
    const size_t hl = strlen(host);
    for (const char *p = allowed; *p;) {
        while (*p == ',' || *p == ' ')
            p++;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ')
            e++;
        size_t l = (size_t)(e - p);
        if (l == 1 && *p == '*')
            return true;
        if (l && *p == '.') { /* ".example.com" is the same as "example.com" */
            p++;
            l--;
        }
        if (l && (hl == l || (hl > l && host[hl - l - 1] == '.')) && !strncasecmp(host + hl - l, p, l))
            return true;
        p = e;
    }
    return false;
}

bool media_addr_internal(int family, const void *addr)
{
    if (family == AF_INET) {
        const uint8_t *a = addr;
        return a[0] == 0 || a[0] == 10 || a[0] == 127 || (a[0] == 169 && a[1] == 254) ||
               (a[0] == 172 && (a[1] & 0xf0) == 16) || (a[0] == 192 && a[1] == 168) ||
               (a[0] == 100 && (a[1] & 0xc0) == 64) || a[0] >= 224 || (a[0] == 192 && a[1] == 0 && a[2] == 0) ||
               (a[0] == 198 && (a[1] & 0xfe) == 18);
    }
    if (family == AF_INET6) {
        const uint8_t *a = addr;
        static const uint8_t zero[16];
        if (!memcmp(a, zero, 15) && (a[15] == 0 || a[15] == 1)) /* :: and ::1 */
            return true;
        if ((a[0] & 0xfe) == 0xfc || (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) || a[0] == 0xff)
            return true;
        /* IPv4-mapped / compatible and NAT64 forms: judge the IPv4 inside */
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
        if (!memcmp(a, mapped, 12) || !memcmp(a, zero, 12) || !memcmp(a, nat64, 12))
            return media_addr_internal(AF_INET, a + 12);
        return false;
    }
    return true; /* anything else (unix sockets...) is never allowed */
}

typedef struct {
    const media_fetch_opts_t *o;
    uint8_t *buf;
    size_t len, cap;
    bool too_big, blocked;
} fetch_t;

static size_t on_data(char *p, size_t size, size_t nmemb, void *ud)
{
    fetch_t *f = ud;
    const size_t n = size * nmemb;
    if ((int64_t)(f->len + n) > f->o->max_bytes) {
        f->too_big = true;
        return 0;
    }
    if (f->len + n > f->cap) {
        size_t cap = f->cap ? f->cap : 1 << 16;
        while (cap < f->len + n)
            cap *= 2;
        uint8_t *nb = realloc(f->buf, cap);
        if (!nb)
            return 0;
        f->buf = nb;
        f->cap = cap;
    }
    memcpy(f->buf + f->len, p, n);
    f->len += n;
    return n;
}

/* Refuses internal addresses at connect time (after any DNS resolution). */
static curl_socket_t on_open(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
    fetch_t *f = ud;
    (void)purpose;
    const void *ip = NULL;
    if (a->family == AF_INET)
        ip = &((const struct sockaddr_in *)&a->addr)->sin_addr;
    else if (a->family == AF_INET6)
        ip = &((const struct sockaddr_in6 *)&a->addr)->sin6_addr;
    if (!f->o->allow_private && (!ip || media_addr_internal(a->family, ip))) {
        f->blocked = true;
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype, a->protocol);
}

/* The host of an http(s) URL, into host (cap bytes); false if none. */
static bool url_host(const char *url, char *host, size_t cap)
{
    CURLU *u = curl_url();
    char *h = NULL, *scheme = NULL;
    bool ok = u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
              (!strcasecmp(scheme, "http") || !strcasecmp(scheme, "https")) &&
              curl_url_get(u, CURLUPART_HOST, &h, 0) == CURLUE_OK && strlen(h) < cap;
    if (ok) {
        /* IPv6 literals come bracketed */
        size_t l = strlen(h);
        if (l >= 2 && h[0] == '[' && h[l - 1] == ']')
            snprintf(host, cap, "%.*s", (int)(l - 2), h + 1);
        else
            snprintf(host, cap, "%s", h);
    }
    curl_free(h);
    curl_free(scheme);
    curl_url_cleanup(u);
    return ok;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

int media_fetch(const media_fetch_opts_t *o, const char *url, uint8_t **out, size_t *n, bool *timeout, char *why,
                size_t cap)
{
    *out = NULL;
    *n = 0;
    *timeout = false;
    if (!o->allowed_hosts || !*o->allowed_hosts) {
        snprintf(why, cap, "remote images are disabled on this server (send the image as base64 data, or start "
                           "the server with --media-domains)");
        return -1;
    }
    char *cur = strdup(url);
    const double deadline = now_ms() + (o->timeout_ms > 0 ? o->timeout_ms : 10000);
    int rc = -1;
    for (int hop = 0; cur; hop++) {
        char host[256];
        if (!url_host(cur, host, sizeof host)) {
            snprintf(why, cap, "not an http(s) URL with a host");
            break;
        }
        if (!media_host_allowed(o->allowed_hosts, host)) {
            snprintf(why, cap, "the host '%.100s' is not on the server's allow-list of image domains", host);
            break;
        }
        const double left = deadline - now_ms();
        if (left <= 0) {
            *timeout = true;
            snprintf(why, cap, "fetching the image timed out");
            break;
        }
        CURL *c = curl_easy_init();
        if (!c) {
            snprintf(why, cap, "out of memory");
            break;
        }
        fetch_t f = {.o = o};
        char err[CURL_ERROR_SIZE] = "";
        curl_easy_setopt(c, CURLOPT_URL, cur);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)left);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)left);
        curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)o->max_bytes);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
        curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, on_open);
        curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, &f);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
        curl_easy_setopt(c, CURLOPT_USERAGENT, "llm-fcgi");
        CURLcode cc = curl_easy_perform(c);
        long status = 0;
        char *loc = NULL;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        if (cc == CURLE_OK && status >= 300 && status < 400)
            curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &loc);
        free(cur);
        cur = NULL;
        if (f.blocked) {
            snprintf(why, cap, "the host '%.100s' resolves to a loopback, private or link-local address, which "
                               "the server does not fetch from", host);
        } else if (f.too_big || cc == CURLE_FILESIZE_EXCEEDED) {
            snprintf(why, cap, "the image is larger than the limit of %lld bytes", (long long)o->max_bytes);
        } else if (cc == CURLE_OPERATION_TIMEDOUT) {
            *timeout = true;
            snprintf(why, cap, "fetching the image timed out");
        } else if (cc != CURLE_OK) {
            snprintf(why, cap, "fetching the image failed: %.200s", *err ? err : curl_easy_strerror(cc));
        } else if (loc) {
            if (hop >= o->max_redirects)
                snprintf(why, cap, "too many redirects (more than %d)", o->max_redirects);
            else
                cur = strdup(loc); /* checked again at the top */
        } else if (status != 200) {
            snprintf(why, cap, "fetching the image failed: HTTP status %ld", status);
        } else {
            *out = f.buf;
            *n = f.len;
            f.buf = NULL;
            rc = 0;
        }
        free(f.buf);
        curl_easy_cleanup(c);
        if (rc == 0)
            break;
    }
    free(cur);
    return rc;
}
