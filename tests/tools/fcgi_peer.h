/* fcgi_peer.h - a raw FastCGI peer for tests: connects to a server's
 * socket, writes records (well-formed or deliberately not) and reads the
 * reply records. Used by the test client (fcgi_client) and the raw-socket
 * fuzzer (fcgi_fuzz); never linked into the server.
 *
 * Buffers (fbuf_t) grow with realloc and abort the test program when memory
 * runs out (test code). Socket functions return -1 on error or timeout and
 * never block longer than the timeout given.
 */
#ifndef LF_TEST_FCGI_PEER_H
#define LF_TEST_FCGI_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint8_t *p;
    size_t n, cap;
} fbuf_t;

void fbuf_put(fbuf_t *b, const void *p, size_t n);
void fbuf_free(fbuf_t *b);

/* One record: 8-byte header (any version/type/id/lengths, so tests can lie),
 * then `len` content bytes and `pad` zero padding bytes. */
void fbuf_rec_raw(fbuf_t *b, int version, int type, int id, size_t content_len_field, int pad_field,
                  const void *content, size_t len, size_t pad);
/* A well-formed record (version 1, lengths that match, padding to 8). */
void fbuf_rec(fbuf_t *b, int type, int id, const void *content, size_t len);
/* A name-value pair in FastCGI's encoding (1- or 4-byte lengths). */
void fbuf_pair(fbuf_t *b, const char *name, size_t nl, const char *value, size_t vl);
/* A stream of records of `type` carrying content (split at 65535 bytes),
 * then the empty record that ends the stream. */
void fbuf_stream(fbuf_t *b, int type, int id, const void *content, size_t len);
/* A whole request as nginx sends it: BEGIN_REQUEST (responder), PARAMS
 * (REQUEST_METHOD, REQUEST_URI, CONTENT_LENGTH, CONTENT_TYPE, then `extra`
 * "NAME=VALUE" strings, NULL-terminated, may be NULL), STDIN. */
void fbuf_request(fbuf_t *b, int id, const char *method, const char *uri, const char *const *extra,
                  const char *body, size_t blen);

/* Connects to "unix:PATH", "PATH" (a unix socket) or "HOST:PORT". */
int fcgi_peer_connect(const char *addr);
/* Writes all of p (poll-bounded by timeout_ms); 0 or -1. */
int fcgi_peer_send(int fd, const void *p, size_t n, int timeout_ms);

/* What came back for one request. */
typedef struct {
    int want_id;         /* the request id whose END_REQUEST ends the reply
                            (0: any); records of other ids count in n_other */
    fbuf_t out;          /* STDOUT content */
    fbuf_t err;          /* STDERR content */
    bool ended;          /* END_REQUEST seen */
    uint32_t app_status;
    int proto_status;    /* FCGI_REQUEST_COMPLETE, FCGI_CANT_MPX_CONN, ... */
    int n_records;
    int n_other;         /* records of other types or ids (e.g. UNKNOWN_TYPE) */
    bool closed;         /* the server closed the connection */
} fcgi_reply_t;

/* Incremental reader state (records can span reads). */
typedef struct {
    uint8_t hdr[8];
    size_t hdr_got;
    size_t content_left, pad_left;
    int type, id;
    uint8_t endbody[8]; /* END_REQUEST body so far */
    size_t endgot;
} fcgi_reader_t;

/* Reads what is available within timeout_ms and folds it into *r.
 * Returns 1 while the reply goes on, 0 once END_REQUEST came or the server
 * closed, -1 on a timeout (nothing arrived) or a socket error. */
int fcgi_peer_read_some(int fd, fcgi_reader_t *st, fcgi_reply_t *r, int timeout_ms);
/* Reads until END_REQUEST or close, at most timeout_ms in all. 0 when the
 * request ended, -1 on timeout or error. */
int fcgi_peer_read_reply(int fd, fcgi_reply_t *r, int timeout_ms);
void fcgi_reply_free(fcgi_reply_t *r);

/* The HTTP status in the CGI header block of a reply ("Status: 404 ..."),
 * 200 when there is none, -1 when there is no header block at all. */
int fcgi_reply_status(const fcgi_reply_t *r);

#endif
