/* sse.c - Server-Sent Events framing (see sse.h). */
#include "server/transport/sse.h"

#include <stdlib.h>
#include <string.h>

int sse_start(http_req_t *r)
{
    if (http_send_headers(r, 200, "text/event-stream",
                          "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n") < 0)
        return -1;
    return http_flush(r);
}

int sse_data(http_req_t *r, const char *json)
{
    if (strchr(json, '\n'))
        return -1;
    char *owned;
    json = http_utf8_text(json, &owned);
    int rc = http_write(r, "data: ", 6) < 0 || http_write(r, json, strlen(json)) < 0 || http_write(r, "\n\n", 2) < 0
                 ? -1
                 : http_flush(r);
    free(owned);
    return rc;
}

int sse_event(http_req_t *r, const char *name, const char *json)
{
    if (strchr(name, '\n') || strchr(json, '\n'))
        return -1;
    if (http_write(r, "event: ", 7) < 0 || http_write(r, name, strlen(name)) < 0 || http_write(r, "\n", 1) < 0)
        return -1;
    return sse_data(r, json);
}

int sse_comment(http_req_t *r, const char *text)
{
    if (strchr(text, '\n'))
        return -1;
    if (http_write(r, ": ", 2) < 0 || http_write(r, text, strlen(text)) < 0 || http_write(r, "\n\n", 2) < 0)
        return -1;
    return http_flush(r);
}

int sse_done(http_req_t *r)
{
    if (http_write(r, "data: [DONE]\n\n", 14) < 0)
        return -1;
    return http_flush(r);
}

int sse_error(http_req_t *r, int status, const char *message, const char *code)
{
    char *j = http_error_json(status, message, NULL, code);
    int rc = j ? sse_data(r, j) : -1;
    free(j);
    if (rc == 0)
        rc = sse_done(r);
    return rc;
}
