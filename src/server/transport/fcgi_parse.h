/* fcgi_parse.h - the input side of one FastCGI connection, parsed and
 * checked before anything else sees it (the guard in front of libfcgi).
 *
 * A responder connection carries: BEGIN_REQUEST, the PARAMS stream, the
 * STDIN stream, each stream ended by an empty record; management records
 * (request id 0) may come at any time, and records of other request ids
 * (multiplexing) too. fcgi_parser_feed() takes the bytes as they arrive, in
 * pieces of any size, and checks every record: version 1, known types in
 * the right order, lengths within the limits, padding skipped, name-value
 * pairs whose lengths fit inside the stream, no NUL bytes in parameters.
 * It answers what the protocol says must be answered (GET_VALUES,
 * UNKNOWN_TYPE for other management types, END_REQUEST CANT_MPX_CONN for a
 * second request on the connection, UNKNOWN_ROLE for roles other than
 * responder) by queueing reply bytes for the caller to send.
 *
 * Invariants: memory is bounded by the limits (PARAMS bytes, kept body
 * bytes, a 64 KiB reply queue); the parser never reads past the end of the
 * request it is parsing (bytes after the empty STDIN record are left to the
 * caller). Pure: no I/O, no globals; one parser per connection, not
 * thread-safe.
 *
 * Errors: FCGI_PARSE_ERROR with a message (fcgi_parser_error) means the
 * connection must be closed; FCGI_PARSE_CLOSE means: send the queued reply,
 * then close. Allocation failure is reported as FCGI_PARSE_ERROR.
 */
#ifndef LF_FCGI_PARSE_H
#define LF_FCGI_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    size_t max_params;  /* bytes of the PARAMS stream (0: 1 MiB) */
    size_t max_body;    /* STDIN bytes kept; beyond, parsing stops with
                           body_over (0: no limit) */
    size_t max_other;   /* bytes of records that carry nothing for the
                           request: management, other request ids
                           (0: 1 MiB) */
    int max_conns;      /* reported for FCGI_MAX_CONNS / FCGI_MAX_REQS */
} fcgi_limits_t;

typedef struct {
    const char *name;
    const char *value;
} fcgi_param_t;

/* One request's input, owned by whoever took it from the parser. */
typedef struct {
    uint16_t id;               /* FastCGI request id (1..65535) */
    bool keep_conn;            /* FCGI_KEEP_CONN was set */
    fcgi_param_t *params;      /* n_params pairs, strings NUL-terminated */
    size_t n_params;
    char *body;                /* body_len bytes + NUL */
    size_t body_len;
    bool body_over;            /* the body is larger than max_body: not all
                                  of it was read */
    uint64_t body_announced;   /* CONTENT_LENGTH (0 if absent) */
} fcgi_req_t;

typedef enum {
    FCGI_PARSE_MORE,   /* all bytes consumed, the request is not complete */
    FCGI_PARSE_DONE,   /* the request's input is complete */
    FCGI_PARSE_CLOSE,  /* send the queued reply, then close */
    FCGI_PARSE_ERROR   /* protocol violation or limit: close */
} fcgi_parse_status_t;

typedef struct fcgi_parser fcgi_parser_t;

/* A new parser; NULL when out of memory. */
fcgi_parser_t *fcgi_parser_create(const fcgi_limits_t *lim);
void fcgi_parser_free(fcgi_parser_t *p);
/* Starts over for the next request on the same connection (keep-conn). */
void fcgi_parser_reset(fcgi_parser_t *p);

/* Consumes up to n bytes; *used says how many (less than n only with
 * FCGI_PARSE_DONE, CLOSE or ERROR). Once DONE, CLOSE or ERROR, further calls
 * return the same status and consume nothing. */
fcgi_parse_status_t fcgi_parser_feed(fcgi_parser_t *p, const uint8_t *data, size_t n, size_t *used);
/* Why FCGI_PARSE_ERROR / CLOSE (static text with details), "" otherwise. */
const char *fcgi_parser_error(const fcgi_parser_t *p);
/* Reply bytes waiting to be sent to the peer (may be 0). */
const uint8_t *fcgi_parser_reply(const fcgi_parser_t *p, size_t *n);
/* The caller sent n of them. */
void fcgi_parser_reply_sent(fcgi_parser_t *p, size_t n);
/* After FCGI_PARSE_DONE: moves the request out (the parser keeps nothing). */
void fcgi_parser_take(fcgi_parser_t *p, fcgi_req_t *out);

/* The value of a parameter (first match), NULL if absent. */
const char *fcgi_req_param(const fcgi_req_t *r, const char *name);
/* Frees what a request owns; accepts NULL and zeroed requests. */
void fcgi_req_free(fcgi_req_t *r);

/* The 8-byte record header for the records the server writes itself. */
void fcgi_header_put(uint8_t out[8], int type, int id, size_t content_len, int padding);

#endif
