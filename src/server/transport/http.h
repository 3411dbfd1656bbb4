/* http.h - one HTTP exchange as the handlers see it, independent of FastCGI.
 *
 * The FastCGI layer (fcgi_server.c) fills an http_req_t from the request's
 * parameters and body and provides the I/O callbacks; unit tests provide
 * a memory buffer instead. Handlers write through the http_reply_* helpers,
 * which send the CGI header block ("Status: ...") exactly once.
 *
 * Error replies are OpenAI-shaped:
 *   {"error":{"message":M,"type":T,"param":P|null,"code":C|null}}
 * and the one mapping from lf_code_t to an HTTP status lives here.
 *
 * Strings in http_req_t are borrowed from the FastCGI request (valid for the
 * exchange); the body is owned by the FastCGI layer.
 */
#ifndef LF_HTTP_H
#define LF_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

typedef struct {
    /* write n bytes; -1 when the client is gone */
    int (*write)(void *io, const char *p, size_t n);
    /* push buffered bytes to the client; -1 when the client is gone */
    int (*flush)(void *io);
    /* true when the client has disconnected (never blocks) */
    bool (*gone)(void *io);
    void *io;
} http_io_t;

typedef struct {
    http_io_t io;
    const char *method;     /* "GET", "POST", ... */
    const char *path;       /* without the query string */
    const char *query;      /* the query string without '?' (NULL: none) */
    const char *auth;       /* Authorization header or NULL */
    const char *api_key;    /* x-api-key header (Anthropic's clients) or NULL */
    const char *body;       /* NUL-terminated copy of the body (may be "") */
    size_t body_len;
    char id[40];            /* request id for logs and response ids (hex) */
    /* filled by handlers for the log line and metrics */
    int status;
    bool headers_sent;
    bool write_failed;
    int32_t prompt_tokens;
    int32_t completion_tokens;
    double ttft_ms;         /* < 0: no token produced */
    /* The error body of http_reply_error for this exchange (NULL:
     * OpenAI's, http_error_json): set for routes whose API has its own
     * shape (Anthropic Messages). malloc'd text, caller frees. */
    char *(*error_json)(int status, const char *message, const char *param, const char *code);
} http_req_t;

/* HTTP status for an lf_code_t (LF_ERR_INVALID -> 400, ...). */
int http_status_of(lf_code_t code);
const char *http_status_text(int status);
/* OpenAI error "type" for a status: invalid_request_error, authentication_error, ... */
const char *http_error_type(int status);

/* Sends the header block: status, content type, extra header lines (each
 * ending with "\r\n", may be NULL). No-op after the first call. */
int http_send_headers(http_req_t *r, int status, const char *content_type, const char *extra);
/* Writes raw bytes (after headers). -1 when the client is gone. */
int http_write(http_req_t *r, const char *p, size_t n);
int http_flush(http_req_t *r);

/* Every text the server writes is valid UTF-8: returns text itself when
 * it is, else a repaired copy (invalid bytes as U+FFFD) stored in *owned
 * for the caller to free (*owned NULL otherwise). */
const char *http_utf8_text(const char *text, char **owned);

/* Complete JSON reply: headers + body + flush (body made valid UTF-8). */
int http_reply_json(http_req_t *r, int status, const char *json, const char *extra);
/* Complete error reply. param/code may be NULL (-> JSON null). The body
 * is r->error_json's when set, else OpenAI's. */
int http_reply_error(http_req_t *r, int status, const char *message, const char *param,
                     const char *code, const char *extra);
/* Error reply from an lf_err_t (status from its code). */
int http_reply_err(http_req_t *r, const lf_err_t *e, const char *param, const char *code);

/* The JSON text of an error object (malloc'd, caller frees); message and
 * param are made valid UTF-8. */
char *http_error_json(int status, const char *message, const char *param, const char *code);

#endif
