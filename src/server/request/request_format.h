/* request_format.h - the structured-output fields of a generation request,
 * parsed into one typed constraint (compiled later by the grammar engine):
 *
 *   response_format   {"type": "text"}                    -> none
 *                     {"type": "json_object"}             -> any JSON object
 *                     {"type": "json_object", "schema": S} -> S (llama.cpp)
 *                     {"type": "json_schema", "json_schema": {"name": N,
 *                      "schema": S, "strict": B, "description": D}}
 *   structured_outputs (vLLM) {"json": S | "S text", "regex": R,
 *                      "choice": [..], "grammar": G, "json_object": true}
 *   guided_json, guided_regex, guided_choice, guided_grammar (vLLM legacy)
 *   json_schema (llama.cpp, object), grammar (llama.cpp GBNF, string)
 *
 * At most one of them may carry a constraint (400 naming the second one).
 * "strict": only an explicit false relaxes JSON Schema enforcement to best
 * effort (unenforceable keywords ignored); otherwise they are a 400.
 * Accepted and ignored: guided_decoding_backend, structured_outputs'
 * "disable_fallback"/"disable_any_whitespace"/"disable_additional_properties"
 * are refused (400) except disable_any_whitespace, which selects compact JSON.
 *
 * Ownership: req_format_parse allocates inside the struct; req_format_free
 * releases it (accepts a zeroed struct).
 */
#ifndef LF_REQUEST_FORMAT_H
#define LF_REQUEST_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    REQ_CONSTRAINT_NONE = 0,
    REQ_CONSTRAINT_JSON_OBJECT,  /* any JSON object */
    REQ_CONSTRAINT_JSON_SCHEMA,  /* text: the schema as JSON */
    REQ_CONSTRAINT_REGEX,        /* text: the regex */
    REQ_CONSTRAINT_CHOICE,       /* choices */
    REQ_CONSTRAINT_GRAMMAR       /* text: GBNF */
} req_constraint_kind_t;

typedef struct {
    req_constraint_kind_t kind;
    char *text;                  /* schema JSON / regex / GBNF (malloc'd) */
    char **choices;              /* CHOICE: malloc'd strings */
    size_t *choice_lens;
    size_t n_choices;
    bool strict;                 /* false only when the request says so */
    bool compact;                /* no optional whitespace in JSON */
    char param[48];              /* the request field it came from */
} req_constraint_t;

struct json_object;
struct req_err;

/* Parses the fields above from o. Returns 0 or -1 with *e filled (400). */
int req_format_parse(struct json_object *o, req_constraint_t *out, struct req_err *e);
void req_format_free(req_constraint_t *c);

#endif
