/* http.c - status mapping, header block and error bodies (see http.h). */
#include "server/transport/http.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

int http_status_of(lf_code_t code)
{
    switch (code) {
    case LF_OK: return 200;
    case LF_ERR_INVALID: return 400;
    case LF_ERR_CONTEXT: return 400;
    case LF_ERR_FORMAT: return 400;
    case LF_ERR_UNSUPPORTED: return 400;
    case LF_ERR_NOT_FOUND: return 404;
    case LF_ERR_AUTH: return 401;
    case LF_ERR_OVERLOAD: return 429;
    case LF_ERR_CANCELLED: return 499;
    case LF_ERR_NOMEM: return 503;
    default: return 500;
    }
}

const char *http_status_text(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 403: return "Forbidden";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
    }
}

const char *http_error_type(int status)
{
    switch (status) {
    case 400: case 404: case 405: case 413: return "invalid_request_error";
    case 401: return "authentication_error";
    case 429: return "rate_limit_error";
    case 503: return "service_unavailable_error";
    default: return "server_error";
    }
}

int http_write(http_req_t *r, const char *p, size_t n)
{
    if (r->write_failed)
        return -1;
    if (n && r->io.write(r->io.io, p, n) < 0) {
        r->write_failed = true;
        return -1;
    }
    return 0;
}

int http_flush(http_req_t *r)
{
    if (r->write_failed)
        return -1;
    if (r->io.flush && r->io.flush(r->io.io) < 0) {
        r->write_failed = true;
        return -1;
    }
    return 0;
}

int http_send_headers(http_req_t *r, int status, const char *content_type, const char *extra)
{
    if (r->headers_sent)
        return 0;
    r->headers_sent = true;
    r->status = status;
    char head[512];
    int n = snprintf(head, sizeof head, "Status: %d %s\r\nContent-Type: %s\r\n", status,
                     http_status_text(status), content_type);
    if (http_write(r, head, (size_t)n) < 0)
        return -1;
    if (extra && http_write(r, extra, strlen(extra)) < 0)
        return -1;
    return http_write(r, "\r\n", 2);
}

const char *http_utf8_text(const char *text, char **owned)
{
    *owned = NULL;
    size_t n = strlen(text);
    if (utf8_valid(text, n, NULL))
        return text;
    *owned = utf8_repair_dup(text, n, NULL);
    return *owned ? *owned : "";
}

int http_reply_json(http_req_t *r, int status, const char *json, const char *extra)
{
    if (http_send_headers(r, status, "application/json", extra) < 0)
        return -1;
    char *owned;
    json = http_utf8_text(json, &owned);
    int rc = http_write(r, json, strlen(json)) < 0 || http_write(r, "\n", 1) < 0 ? -1 : http_flush(r);
    free(owned);
    return rc;
}

char *http_error_json(int status, const char *message, const char *param, const char *code)
{
    /* messages quote what clients sent: never pass invalid UTF-8 on */
    char *msg = utf8_repair_dup(message ? message : "", message ? strlen(message) : 0, NULL);
    char *par = param ? utf8_repair_dup(param, strlen(param), NULL) : NULL;
    json_object *err = json_object_new_object();
    json_object_object_add(err, "message", json_object_new_string(msg ? msg : ""));
    json_object_object_add(err, "type", json_object_new_string(http_error_type(status)));
    json_object_object_add(err, "param", par ? json_object_new_string(par) : NULL);
    free(msg);
    free(par);
    json_object_object_add(err, "code", code ? json_object_new_string(code) : NULL);
    json_object *root = json_object_new_object();
    json_object_object_add(root, "error", err);
    char *s = strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(root);
    return s;
}

int http_reply_error(http_req_t *r, int status, const char *message, const char *param,
                     const char *code, const char *extra)
{
    char *j = (r->error_json ? r->error_json : http_error_json)(status, message, param, code);
    if (!j)
        return -1;
    int rc = http_reply_json(r, status, j, extra);
    free(j);
    return rc;
}

int http_reply_err(http_req_t *r, const lf_err_t *e, const char *param, const char *code)
{
    int status = http_status_of(e->code);
    if (!code && e->code == LF_ERR_CONTEXT)
        code = "context_length_exceeded";
    return http_reply_error(r, status, e->msg, param, code, NULL);
}
