/* status.h - the one error type of llm-fcgi.
 *
 * Every fallible function returns an lf_code_t and, on failure, fills an
 * lf_err_t with a human-readable message. The message travels up to the one
 * place that shows it (the CLI prints it, the HTTP layer maps the code to a
 * status and an OpenAI-style error body). Functions accept a NULL lf_err_t
 * when the caller does not want the message.
 */
#ifndef LF_STATUS_H
#define LF_STATUS_H

#include <stdarg.h>

typedef enum {
    LF_OK = 0,
    LF_ERR_INVALID,      /* bad argument or request (HTTP 400) */
    LF_ERR_IO,           /* file or socket I/O failed */
    LF_ERR_FORMAT,       /* malformed file contents (e.g. GGUF) */
    LF_ERR_UNSUPPORTED,  /* valid but not supported (type, arch, feature) */
    LF_ERR_NOMEM,        /* allocation failed or budget exhausted */
    LF_ERR_NOT_FOUND,    /* missing key, tensor, model, path (HTTP 404) */
    LF_ERR_AUTH,         /* missing or wrong credentials (HTTP 401) */
    LF_ERR_OVERLOAD,     /* queue full (HTTP 429) */
    LF_ERR_CONTEXT,      /* prompt + completion beyond context (HTTP 400) */
    LF_ERR_CANCELLED,    /* the client went away */
    LF_ERR_INTERNAL      /* a bug: should never reach a user (HTTP 500) */
} lf_code_t;

typedef struct {
    lf_code_t code;
    char msg[512];
} lf_err_t;

/* Sets err (if not NULL) to code and the printf-formatted message; returns
 * code so callers can write `return lf_err_set(err, LF_ERR_IO, ...)`. */
lf_code_t lf_err_set(lf_err_t *err, lf_code_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes the message already in err with "prefix: " (for context such as a
 * file name); returns err->code (LF_ERR_INTERNAL if err is NULL). */
lf_code_t lf_err_prefix(lf_err_t *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Short stable name of a code, e.g. "invalid", for logs and tests. */
const char *lf_code_name(lf_code_t code);

#endif
