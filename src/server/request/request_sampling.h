/* request_sampling.h - the decoding controls of a generation request.
 *
 * Parsed from the JSON body by req_sampling_parse() (request_sampling.c),
 * called from request.c for chat and completions. Every field is validated
 * for type and range (400 with `param`); checks that need the vocabulary
 * (token ids in logit_bias / stop_token_ids) happen at submission through
 * sampler_params_validate(). Fields the request leaves out are marked in
 * `has` so server-flag defaults can fill them (srv_config_t.def_*).
 *
 * Rejected here with 400: best_of > 1 (or != n), suffix, completions
 * logprobs > 5, chat top_logprobs > 20 or without logprobs,
 * prompt_logprobs with stream, n outside 1..--max-n (the limits given).
 *
 * Ownership: the arrays are malloc'd by req_sampling_parse and released by
 * req_sampling_free (accepts a zeroed struct).
 */
#ifndef LF_REQUEST_SAMPLING_H
#define LF_REQUEST_SAMPLING_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/sample/sampler.h"

enum {
    REQ_HAS_TEMPERATURE = 1 << 0,
    REQ_HAS_TOP_P = 1 << 1,
    REQ_HAS_TOP_K = 1 << 2,
    REQ_HAS_MIN_P = 1 << 3,
    REQ_HAS_REP_PENALTY = 1 << 4,
    REQ_HAS_MAX_TOKENS = 1 << 5
};

typedef struct {
    unsigned has;                 /* REQ_HAS_* given by the request */
    int32_t top_k;                /* -1 off */
    float top_p, min_p;
    float typical_p;              /* (0, 1]; 1 or 0 (unset) = off; TGI schema only */
    float frequency_penalty, presence_penalty, repetition_penalty;
    sampler_bias_t *logit_bias;
    int32_t n_logit_bias;
    char **stop;                  /* stop strings (any number) */
    int32_t n_stop;
    int32_t *stop_token_ids;
    int32_t n_stop_token_ids;
    bool ignore_eos;
    int32_t min_tokens;
    bool skip_special_tokens;     /* default true */
    bool spaces_between_special_tokens; /* default true */
    bool include_stop_str_in_output;
    int32_t n;                    /* choices per prompt, default 1 */
    bool logprobs;                /* chat logprobs:true / completions logprobs:int */
    int32_t top_logprobs;         /* alternatives per token (0..20 chat, 0..5 completions) */
    bool echo;                    /* completions */
    int32_t prompt_logprobs;      /* -1: none, else top-N per prompt token */
    int32_t mindie;               /* -1 absent, 0/1: MindIE extras (full_text, timings) */
    char *prediction;             /* OpenAI Predicted Outputs: the expected text
                                     (parts joined), NULL when absent */
} req_sampling_t;

struct json_object;
struct req_err; /* request.h */
typedef struct req_limits req_limits_t; /* request.h */

/* Parses the fields of o into *out (defaults first). chat selects the
 * logprobs flavour (chat: boolean + top_logprobs; completions: integer).
 * stream is the request's stream flag; lim (may be NULL) the server's
 * limits (n). Returns 0 or -1 with *e filled
 */
int req_sampling_parse(struct json_object *o, bool chat, bool stream, const req_limits_t *lim, req_sampling_t *out,
                       struct req_err *e);
void req_sampling_free(req_sampling_t *s);

#endif
