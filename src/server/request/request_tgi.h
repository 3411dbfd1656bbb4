/* request_tgi.h - the text-generation schema of Hugging Face TGI and
 * SageMaker LMI: {"inputs": ..., "parameters": {...}, "stream": bool},
 * parsed and validated into the generation controls the OpenAI endpoints
 * use (req_gen_t), so the same runner serves both schemas.
 *
 * Two dialects share one parser; they differ only where the two servers do:
 *   TGI  (/generate, /generate_stream, POST /): `inputs` is one string; stop
 *        sequences stay in the generated text (include_stop_str_in_output).
 *   LMI  (/invocations with `inputs`): `inputs` may also be an array of
 *        strings (a batch, at most TGI_MAX_INPUTS); stop sequences are cut
 *        from the text unless include_stop_str_in_output is given.
 * Both accept LMI's spellings `stop_sequences` (merged with `stop`) and
 * `ignore_eos_token` (= `ignore_eos`), and the vLLM extras LMI passes
 * through: min_p, presence_penalty, min_tokens, stop_token_ids,
 * include_stop_str_in_output.
 *
 * Sampling switch: do_sample false is greedy whatever the temperature;
 * do_sample true samples; without do_sample the request samples when it
 * sets temperature, top_k, top_p or typical_p, else it is greedy (TGI's
 * default and LMI >= 0.32's inference). Greedy requests carry temperature 0
 * (marked as given, so no server default overrides it).
 *
 * Refused (422, `param` names the field): watermark true, best_of / n /
 * num_beams > 1, adapter_id, a malformed grammar. A well-formed `grammar`
 * ({"type": "json" | "json_object" | "json_schema" | "regex", "value": ...})
 * is parsed into `grammar`; the handler compiles it with the grammar
 * engine (api_tgi.c), 422 when the engine cannot enforce it.
 *
 * Errors: 400 for a body that is not a JSON object, 422 for everything
 * else (TGI's validation status); msg is TGI's wording without the
 * "Input validation error: " prefix the reply adds.
 *
 * Ownership: req_tgi_parse allocates everything in *out, req_tgi_free
 * releases it (accepts a zeroed struct, and is called on failure).
 */
#ifndef LF_REQUEST_TGI_H
#define LF_REQUEST_TGI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/request/request.h"

#define TGI_MAX_INPUTS 32     /* LMI batch: inputs per request */
#define TGI_TOP_N_MAX 20      /* top_n_tokens limit (LOGPROB_TOP_MAX) */

typedef enum { TGI_DIALECT_TGI, TGI_DIALECT_LMI } tgi_dialect_t;

typedef enum {
    TGI_GRAMMAR_NONE = 0,
    TGI_GRAMMAR_JSON,        /* "json" / "json_object": value a schema object
                                (or a string holding one) */
    TGI_GRAMMAR_JSON_SCHEMA, /* "json_schema": value {"schema": {...}, "name"?} */
    TGI_GRAMMAR_REGEX        /* "regex": value a string */
} tgi_grammar_kind_t;

struct json_object;

typedef struct {
    tgi_grammar_kind_t kind;
    struct json_object *value; /* owned: the schema object or regex string */
} tgi_grammar_t;

typedef struct {
    char **inputs;             /* n_inputs NUL-terminated strings */
    size_t n_inputs;
    bool inputs_list;          /* `inputs` was an array (LMI batch) */
    bool stream;               /* the body's "stream" (/, /invocations) */
    req_gen_t gen;             /* max_tokens -1: the dialect's default */
    bool sampling;             /* resolved do_sample */
    bool details;              /* details or decoder_input_details */
    bool decoder_input_details;
    int return_full_text;      /* -1 absent, else 0 / 1 */
    int32_t top_n_tokens;      /* 0..TGI_TOP_N_MAX */
    int32_t truncate;          /* keep the last N input tokens; 0 = off */
    tgi_grammar_t grammar;
} tgi_req_t;

/* Returns 0, or -1 with *e filled (see above). gen.stream is the body's
 * `stream`. */
int req_tgi_parse(const char *body, size_t len, tgi_dialect_t dialect, tgi_req_t *out, req_err_t *e);
/* Sets gen.stream (the endpoint decides: /generate_stream always streams),
 * asks for token logprobs when they are reported (stream events or
 * details) and refuses what cannot stream: decoder_input_details, a list of
 * inputs. 0, or -1 with *e filled (422). */
int req_tgi_set_stream(tgi_req_t *q, bool stream, req_err_t *e);
void req_tgi_free(tgi_req_t *q);

/* /v1/completions: @huggingface/inference's textGeneration, pointed at a
 * custom endpoint, speaks OpenAI completions and puts the TGI parameters at
 * the top level of the body (max_new_tokens becomes max_tokens). The ones
 * that change what is generated are honoured there too: do_sample false
 * (greedy), typical_p, return_full_text (= echo); watermark true is
 * refused (400, unsupported_parameter); `grammar` there is llama.cpp's
 * GBNF string (request_format.h). details,
 * decoder_input_details, top_n_tokens and truncate only shape TGI's
 * response and limits: ignored like any unknown field. 0, or -1 with *e
 * filled (400). */
int req_tgi_flat_apply(struct json_object *o, req_gen_t *g, req_err_t *e);

#endif
