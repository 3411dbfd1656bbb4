/* mem_io.h - a memory "socket" for tests of the HTTP pipeline: an
 * http_req_t whose writes land in a buffer, and a switch that makes the
 * client "go away". Header-only (static functions), for test programs. */
#ifndef LF_TEST_MEM_IO_H
#define LF_TEST_MEM_IO_H

#include <stdbool.h>
#include <string.h>

#include "server/transport/http.h"

typedef struct {
    char buf[1 << 16];
    size_t len;
    int flushes;
    bool gone;
} mem_t;

static inline int mem_write(void *io, const char *p, size_t n)
{
    mem_t *m = io;
    if (m->gone || m->len + n >= sizeof m->buf)
        return -1;
    memcpy(m->buf + m->len, p, n);
    m->len += n;
    m->buf[m->len] = '\0';
    return 0;
}
static inline int mem_flush(void *io) { ((mem_t *)io)->flushes++; return ((mem_t *)io)->gone ? -1 : 0; }
static inline bool mem_gone(void *io) { return ((mem_t *)io)->gone; }

/* A request whose reply goes to m (cleared); body may be NULL. */
static inline http_req_t mem_req(mem_t *m, const char *method, const char *path, const char *auth, const char *body)
{
    memset(m, 0, sizeof *m);
    http_req_t r = {.io = {mem_write, mem_flush, mem_gone, m}, .method = method, .path = path, .auth = auth,
                    .body = body ? body : "", .body_len = body ? strlen(body) : 0};
    strcpy(r.id, "0123456789abcdef0123456789abcdef");
    return r;
}

#endif
