/* sse.h - Server-Sent Events framing.
 *
 * An event is "data: " + one line of JSON + "\n\n"; the stream ends with
 * "data: [DONE]\n\n"; a comment ": ping\n\n" keeps proxies from timing out
 * during a long prefill. JSON from json-c's plain printer never contains a
 * raw newline, so one data line per event is always enough (sse_data
 * refuses a payload with a newline rather than corrupting the stream).
 * Each function writes and flushes; -1 when the client is gone.
 */
#ifndef LF_SSE_H
#define LF_SSE_H

#include "server/transport/http.h"

/* Sends the streaming headers (text/event-stream, no-cache,
 * X-Accel-Buffering: no) with status 200. */
int sse_start(http_req_t *r);
int sse_data(http_req_t *r, const char *json);
/* A named event: "event: NAME\n" + "data: JSON\n\n" (the Responses and
 * Anthropic Messages streams, whose clients dispatch on the name). */
int sse_event(http_req_t *r, const char *name, const char *json);
int sse_comment(http_req_t *r, const char *text);
int sse_done(http_req_t *r);
/* An error after the stream started: data: {"error":...} then [DONE]. */
int sse_error(http_req_t *r, int status, const char *message, const char *code);

#endif
