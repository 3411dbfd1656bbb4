/* fcgi_peer.c - raw FastCGI peer for tests (see fcgi_peer.h). */
#include "tools/fcgi_peer.h"

#include <errno.h>
#include <fastcgi.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

void fbuf_put(fbuf_t *b, const void *p, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->n + n + 1 > cap)
            cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q) {
            fprintf(stderr, "fcgi_peer: out of memory\n");
            abort();
        }
        b->p = q;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0; /* text replies can be used as strings */
}

void fbuf_free(fbuf_t *b)
{
    free(b->p);
    *b = (fbuf_t){0};
}

void fbuf_rec_raw(fbuf_t *b, int version, int type, int id, size_t content_len_field, int pad_field,
                  const void *content, size_t len, size_t pad)
{
    uint8_t h[8] = {(uint8_t)version, (uint8_t)type, (uint8_t)(id >> 8), (uint8_t)id,
                    (uint8_t)(content_len_field >> 8), (uint8_t)content_len_field, (uint8_t)pad_field, 0};
    fbuf_put(b, h, 8);
    fbuf_put(b, content, len);
    static const uint8_t zeros[256];
    while (pad) {
        size_t k = pad < sizeof zeros ? pad : sizeof zeros;
        fbuf_put(b, zeros, k);
        pad -= k;
    }
}

void fbuf_rec(fbuf_t *b, int type, int id, const void *content, size_t len)
{
    size_t pad = (8 - len % 8) % 8;
    fbuf_rec_raw(b, FCGI_VERSION_1, type, id, len, (int)pad, content, len, pad);
}

static void put_len(fbuf_t *b, size_t l)
{
    if (l < 128) {
        uint8_t c = (uint8_t)l;
        fbuf_put(b, &c, 1);
    } else {
        uint8_t c[4] = {(uint8_t)((l >> 24) | 0x80), (uint8_t)(l >> 16), (uint8_t)(l >> 8), (uint8_t)l};
        fbuf_put(b, c, 4);
    }
}

void fbuf_pair(fbuf_t *b, const char *name, size_t nl, const char *value, size_t vl)
{
    put_len(b, nl);
    put_len(b, vl);
    fbuf_put(b, name, nl);
    fbuf_put(b, value, vl);
}

void fbuf_stream(fbuf_t *b, int type, int id, const void *content, size_t len)
{
    const uint8_t *p = content;
    while (len) {
        size_t k = len > FCGI_MAX_LENGTH ? FCGI_MAX_LENGTH : len;
        fbuf_rec(b, type, id, p, k);
        p += k;
        len -= k;
    }
    fbuf_rec(b, type, id, NULL, 0);
}

static void add_param(fbuf_t *ps, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq)
        fbuf_pair(ps, kv, strlen(kv), "", 0);
    else
        fbuf_pair(ps, kv, (size_t)(eq - kv), eq + 1, strlen(eq + 1));
}

void fbuf_request(fbuf_t *b, int id, const char *method, const char *uri, const char *const *extra,
                  const char *body, size_t blen)
{
    uint8_t begin[8] = {0, FCGI_RESPONDER, 0, 0, 0, 0, 0, 0};
    fbuf_rec(b, FCGI_BEGIN_REQUEST, id, begin, sizeof begin);
    fbuf_t ps = {0};
    char kv[1100];
    snprintf(kv, sizeof kv, "REQUEST_METHOD=%s", method);
    add_param(&ps, kv);
    snprintf(kv, sizeof kv, "REQUEST_URI=%.1000s", uri);
    add_param(&ps, kv);
    snprintf(kv, sizeof kv, "CONTENT_LENGTH=%zu", blen);
    add_param(&ps, kv);
    add_param(&ps, "CONTENT_TYPE=application/json");
    for (size_t i = 0; extra && extra[i]; i++)
        add_param(&ps, extra[i]);
    fbuf_stream(b, FCGI_PARAMS, id, ps.p, ps.n);
    fbuf_free(&ps);
    fbuf_stream(b, FCGI_STDIN, id, body, blen);
}

int fcgi_peer_connect(const char *addr)
{
    if (!strncmp(addr, "unix:", 5))
        addr += 5;
    const char *colon = strrchr(addr, ':');
    if (addr[0] == '/' || addr[0] == '.' || !colon) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(addr) >= sizeof sa.sun_path)
            return -1;
        strcpy(sa.sun_path, addr);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            return fd;
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0)
        return -1;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

int fcgi_peer_send(int fd, const void *p, size_t n, int timeout_ms)
{
    const uint8_t *q = p;
    double end = now_ms() + timeout_ms;
    while (n) {
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        int left = (int)(end - now_ms());
        if (left <= 0 || poll(&pf, 1, left) <= 0)
            return -1;
        ssize_t w = send(fd, q, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (w <= 0)
            return -1;
        q += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Consumes bytes [p, p+n) into the reader state and the reply. */
static void fold(fcgi_reader_t *st, fcgi_reply_t *r, const uint8_t *p, size_t n)
{
    while (n) {
        if (st->hdr_got < 8) {
            size_t k = 8 - st->hdr_got < n ? 8 - st->hdr_got : n;
            memcpy(st->hdr + st->hdr_got, p, k);
            st->hdr_got += k;
            p += k;
            n -= k;
            if (st->hdr_got == 8) {
                st->type = st->hdr[1];
                st->id = (st->hdr[2] << 8) | st->hdr[3];
                st->content_left = ((size_t)st->hdr[4] << 8) | st->hdr[5];
                st->pad_left = st->hdr[6];
                r->n_records++;
                st->endgot = 0;
                if ((st->type != FCGI_STDOUT && st->type != FCGI_STDERR && st->type != FCGI_END_REQUEST) ||
                    (r->want_id && st->id != r->want_id)) {
                    r->n_other++;
                    st->type = -1; /* not ours: content skipped */
                }
                if (st->content_left == 0 && st->pad_left == 0)
                    st->hdr_got = 0;
            }
            continue;
        }
        if (st->content_left) {
            size_t k = st->content_left < n ? st->content_left : n;
            if (st->type == FCGI_STDOUT)
                fbuf_put(&r->out, p, k);
            else if (st->type == FCGI_STDERR)
                fbuf_put(&r->err, p, k);
            else if (st->type == FCGI_END_REQUEST)
                for (size_t i = 0; i < k && st->endgot < 8; i++)
                    st->endbody[st->endgot++] = p[i];
            st->content_left -= k;
            p += k;
            n -= k;
            if (st->type == FCGI_END_REQUEST && st->content_left == 0 && st->endgot == 8) {
                r->ended = true;
                r->app_status = ((uint32_t)st->endbody[0] << 24) | ((uint32_t)st->endbody[1] << 16) |
                                ((uint32_t)st->endbody[2] << 8) | st->endbody[3];
                r->proto_status = st->endbody[4];
            }
        } else if (st->pad_left) {
            size_t k = st->pad_left < n ? st->pad_left : n;
            st->pad_left -= k;
            p += k;
            n -= k;
        }
        if (st->content_left == 0 && st->pad_left == 0)
            st->hdr_got = 0;
    }
}

int fcgi_peer_read_some(int fd, fcgi_reader_t *st, fcgi_reply_t *r, int timeout_ms)
{
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    int rc = poll(&pf, 1, timeout_ms);
    if (rc <= 0)
        return -1;
    uint8_t buf[16384];
    ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 1;
    if (n <= 0) {
        r->closed = true;
        return n == 0 ? 0 : -1;
    }
    fold(st, r, buf, (size_t)n);
    return r->ended ? 0 : 1;
}

int fcgi_peer_read_reply(int fd, fcgi_reply_t *r, int timeout_ms)
{
    fcgi_reader_t st = {0};
    double end = now_ms() + timeout_ms;
    for (;;) {
        int left = (int)(end - now_ms());
        if (left <= 0)
            return -1;
        int rc = fcgi_peer_read_some(fd, &st, r, left);
        if (rc == 0)
            return 0;
        if (rc < 0)
            return -1;
    }
}

void fcgi_reply_free(fcgi_reply_t *r)
{
    fbuf_free(&r->out);
    fbuf_free(&r->err);
}

int fcgi_reply_status(const fcgi_reply_t *r)
{
    if (!r->out.n)
        return -1;
    const char *s = (const char *)r->out.p;
    const char *end = strstr(s, "\r\n\r\n");
    if (!end)
        return -1;
    if (!strncmp(s, "Status: ", 8))
        return atoi(s + 8);
    const char *st = strstr(s, "\r\nStatus: ");
    return st && st < end ? atoi(st + 10) : 200;
}
