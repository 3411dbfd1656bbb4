/* fcgi_guard.h - reads every FastCGI connection's request before a worker
 * thread (and libfcgi) sees it.
 *
 * One thread with epoll accepts connections on the listening socket and
 * reads each with its own fcgi_parser (non-blocking): management records
 * are answered, peers that break the protocol are dropped, and so are
 * peers that stay silent longer than the I/O timeout. Only complete,
 * checked requests go into a queue that the worker threads pop. A slow or
 * hostile peer therefore costs a small buffer, never a worker.
 *
 * Bounds: at most max_conns connections are being read at once and at most
 * max_buffered input bytes are held for them; beyond either, the
 * connection that started first is dropped (legitimate requests arrive
 * complete within a millisecond, so the oldest is the slowest). At most
 * max_ready complete requests wait for a worker; beyond, new connections
 * stay in the kernel's listen backlog until a worker takes one.
 *
 * Threads: fcgi_guard_next may be called from any number of threads;
 * fcgi_guard_stop from any thread. The guard owns the connections it
 * reads; a connection handed out by fcgi_guard_next belongs to the caller
 * (blocking mode, close it when done).
 */
#ifndef LF_FCGI_GUARD_H
#define LF_FCGI_GUARD_H

#include <stdint.h>

#include "common/status.h"
#include "server/transport/fcgi_parse.h"

typedef struct {
    int listen_fd;            /* listening socket (the guard makes it non-blocking) */
    fcgi_limits_t lim;        /* per-request limits (fcgi_parse.h) */
    int io_timeout_ms;        /* longest silence while reading a request */
    int max_conns;            /* connections read at once (<= 0: 1024) */
    size_t max_buffered;      /* input bytes held for them (0: 64 MiB) */
    int max_ready;            /* complete requests waiting (<= 0: 64) */
    const char *allowed_addrs; /* TCP: comma-separated peer addresses
                                  allowed (FCGI_WEB_SERVER_ADDRS); NULL: any */
} fcgi_guard_opts_t;

/* A complete request and its connection. */
typedef struct {
    int fd;                   /* blocking mode; the caller closes it */
    fcgi_req_t req;
    uint8_t *reply;           /* protocol answers not yet sent (send them
                                 before the response); malloc'd, may be NULL */
    size_t reply_len;
} fcgi_conn_t;

typedef struct {
    uint64_t accepted;        /* connections accepted */
    uint64_t requests;        /* complete requests handed to workers */
    uint64_t protocol_errors; /* dropped: broke the protocol or a limit */
    uint64_t timeouts;        /* dropped: silent longer than the timeout */
    uint64_t evicted;         /* dropped: oldest when over the bounds */
    uint64_t closed_early;    /* the peer closed before the request ended */
    uint64_t refused;         /* TCP peers not in allowed_addrs */
} fcgi_guard_stats_t;

typedef struct fcgi_guard fcgi_guard_t;

/* Starts the guard thread. NULL + err on failure. */
fcgi_guard_t *fcgi_guard_start(const fcgi_guard_opts_t *o, lf_err_t *err);
/* Waits for a complete request: 1 with *out filled, 0 once the guard was
 * stopped and nothing is left. */
int fcgi_guard_next(fcgi_guard_t *g, fcgi_conn_t *out);
/* Frees what a handed-out connection still owns (not the fd). */
void fcgi_conn_release(fcgi_conn_t *c);
/* Stops accepting and drops the connections still being read; requests
 * already complete are still handed out. Idempotent. */
void fcgi_guard_stop(fcgi_guard_t *g);
/* Stops, joins the thread, closes what is left. Accepts NULL. */
void fcgi_guard_free(fcgi_guard_t *g);
void fcgi_guard_stats(fcgi_guard_t *g, fcgi_guard_stats_t *out);

#endif
