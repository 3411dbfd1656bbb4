/* api_tgi.h - the text-generation schema of Hugging Face TGI and SageMaker
 * LMI over the shared generation runner (api_gen.h): handlers in
 * api_tgi.c, response / stream / error shapes in api_tgi_out.c.
 *
 * Shapes (TGI's router and LMI's documented schema):
 *   TGI  /generate        {"generated_text", "details"?: {finish_reason,
 *                          generated_tokens, seed, prefill, tokens,
 *                          top_tokens?}}; POST / wraps it in an array.
 *        /generate_stream SSE, one event per token {"index", "token",
 *                          "top_tokens"?, "generated_text": null,
 *                          "details": null}; the last token's event carries
 *                          generated_text and details {finish_reason,
 *                          generated_tokens, seed, input_length} (null
 *                          without `details`). No [DONE].
 *        Token {"id", "text", "logprob", "special"}; prefill tokens
 *        {"id", "text", "logprob"} (the first one's logprob null).
 *   LMI  /invocations     {"generated_text", "details"?: {finish_reason,
 *                          generated_tokens, inputs, tokens, prefill?,
 *                          top_tokens?}}; a list of inputs gives a list.
 *        stream           JSON lines (application/jsonlines), one
 *                          {"token": {...}} per token, the last one with
 *                          "generated_text" and "details"? {finish_reason,
 *                          generated_tokens, inputs}.
 *        Token {"id", "text", "log_prob", "special_token"?: true}.
 *   Errors {"error": message, "error_type": validation | overloaded |
 *        generation | incomplete_generation | authentication} with TGI's
 *        statuses (422 validation, 429 overloaded, 424 generation, 500
 *        incomplete); LMI adds "code": the status.
 *
 * Token texts are the token's own characters with special tokens rendered
 * (UTF-8 safe: a character split over tokens comes with its last token);
 * generated_text skips special tokens. Logprobs are the model's raw
 * distribution, as everywhere in this server (TGI reports them after its
 * sampling transforms).
 *
 * Ownership: a tgi_ctx_t belongs to the handler that runs the request;
 * tgi_ctx_init / tgi_ctx_free bracket the run (free accepts a zeroed ctx).
 */
#ifndef LF_API_TGI_H
#define LF_API_TGI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/vocab/vocab.h"
#include "server/request/request_tgi.h"
#include "server/transport/http.h"

struct json_object;
struct gen_fmt;

typedef enum {
    TGI_OUT_TGI,     /* /generate, /generate_stream */
    TGI_OUT_COMPAT,  /* POST /: TGI, the non-streamed reply in an array */
    TGI_OUT_LMI      /* /invocations */
} tgi_out_t;

/* What one input's generation has produced for the client so far. */
typedef struct {
    vocab_detok_t detok;          /* special tokens rendered: Token.text */
    struct json_object *tokens;   /* details.tokens (not streamed) */
    struct json_object *top;      /* details.top_tokens (not streamed) */
    struct json_object *prefill;  /* details.prefill, or NULL */
    struct json_object *held;     /* streamed: the last token, sent by on_end */
    struct json_object *held_top;
    int32_t n_events;             /* stream events sent (TGI index) */
    int32_t n_input;              /* input tokens (after truncate) */
} tgi_choice_t;

typedef struct {
    tgi_out_t out;
    const tgi_req_t *q;
    const vocab_t *vocab;
    bool full_text;               /* return_full_text, resolved */
    tgi_choice_t *c;              /* q->n_inputs */
} tgi_ctx_t;

/* 0, or -1 on allocation failure. */
int tgi_ctx_init(tgi_ctx_t *x, tgi_out_t out, const tgi_req_t *q, const vocab_t *v, bool full_text);
void tgi_ctx_free(tgi_ctx_t *x);

/* The output formats (api_tgi_out.c); fmt_ctx is a tgi_ctx_t. */
const struct gen_fmt *tgi_format(tgi_out_t out);

/* {"error": msg, "error_type": type} with the given status (extra: header
 * lines or NULL). */
void tgi_reply_error(http_req_t *r, int status, const char *msg, const char *error_type, const char *extra);
/* A validation failure (req_err_t from request_tgi.c or request.c): its
 * status (422; 400 for an unparsable body), "Input validation error: " +
 * message; other statuses as the runner's (overloaded, generation); lmi
 * adds "code". */
void tgi_reply_req_err(http_req_t *r, bool lmi, const req_err_t *e);

#endif
