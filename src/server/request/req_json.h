/* req_json.h - the JSON edge of request parsing, shared by every parser
 * under src/server/request/ (and any new one): the body as one JSON
 * object, error filling, and typed field readers whose messages name the
 * field and its real range.
 *
 * - req_json_parse_object: the body must be valid UTF-8 (RFC 8259) and one
 *   JSON object; anything else is a 400 saying what is wrong ("not valid
 *   UTF-8: byte 0xFF at offset 9", "must be a JSON object, got null").
 *   json-c silently clamps integers beyond 64 bits; this keeps the literal
 *   text of every such number (req_json_literal), so messages quote what
 *   the client sent and the range checks below refuse it.
 * - req_err_set: fills a req_err_t; a message cut to fit is cut at a
 *   character boundary (never inside a UTF-8 character).
 * - req_json_int / req_json_seed: integers in a range; out of range ->
 *   400 "'NAME' must be an integer from LO to HI, got X".
 *
 * Field readers return 0 when the field is absent or null, 1 when it was
 * read, -1 with *e filled on a bad value.
 */
#ifndef LF_REQ_JSON_H
#define LF_REQ_JSON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

struct json_object;
struct req_err; /* request.h */

struct json_object *req_json_parse_object(const char *body, size_t len, struct req_err *e);
/* 0 when body is valid UTF-8, else -1 with the 400 in *e (the check
 * req_json_parse_object starts with, for callers at the edge). */
int req_body_utf8(const char *body, size_t len, struct req_err *e);

int req_err_set(struct req_err *e, int status, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int req_err_vset(struct req_err *e, int status, const char *param, const char *code, const char *fmt, va_list ap)
    __attribute__((format(printf, 5, 0)));

/* The JSON text of a number as the client wrote it when it did not fit 64
 * bits (json-c keeps a clamped value), else its json-c text. */
const char *req_json_literal(struct json_object *v);
/* Whether integer v lies in [lo, hi] (false for clamped out-of-64-bit
 * values, whatever lo and hi are). */
int req_json_int_in(struct json_object *v, int64_t lo, int64_t hi);

/* o[key] when o is an object and the field is there and not null, else
 * NULL (borrowed). */
struct json_object *req_json_get(struct json_object *o, const char *key);
/* o[key] when it is a string, else NULL (borrowed). */
const char *req_json_str(struct json_object *o, const char *key);

/* o[key] as a boolean into *out ("'KEY' must be a boolean" otherwise). */
int req_json_flag(struct json_object *o, const char *key, bool *out, struct req_err *e);

/* o[key] as an integer in [lo, hi]; param names it in errors (NULL: key). */
int req_json_int(struct json_object *o, const char *key, const char *param, int64_t lo, int64_t hi, int64_t *out,
                 struct req_err *e);
/* o[key] as a 64-bit seed: any integer from -2^63 to 2^64-1, kept as its
 * two's-complement bits. */
int req_json_seed(struct json_object *o, const char *key, uint64_t *out, struct req_err *e);

#endif
