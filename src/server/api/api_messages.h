/* api_messages.h - the Anthropic Messages API (api_messages.c): POST
 * /v1/messages (streamed or not) and /v1/messages/count_tokens, served by
 * the Chat Completions runner with an output format of their own, and
 * Anthropic's error shape, which the routing sets for every error of these
 * routes (http_req_t.error_json):
 *   {"type":"error","error":{"type":T,"message":M}}
 * T by status: 400 invalid_request_error, 401 authentication_error,
 * 403 permission_error, 404 not_found_error, 413 request_too_large,
 * 429 rate_limit_error, 503 / 529 overloaded_error, else api_error.
 */
#ifndef LF_API_MESSAGES_H
#define LF_API_MESSAGES_H

/* The error body (malloc'd; caller frees); param and code are not part of
 * Anthropic's shape and are left out. */
char *anthropic_error_json(int status, const char *message, const char *param, const char *code);
/* Anthropic's error type for an HTTP status. */
const char *anthropic_error_type(int status);

#endif
