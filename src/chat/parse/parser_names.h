/* parser_names.h - what the reasoning and tool-call parser tables share:
 * looking a parser up by its name or one of its aliases (vLLM's and
 * llama.cpp's other names), with an error that lists every name, and the
 * substring test the detection rules are written with. Pure functions, no
 * state.
 */
#ifndef LF_PARSER_NAMES_H
#define LF_PARSER_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "common/status.h"

typedef struct {
    const char *name;
    int id;
} parser_alias_t;

/* The id (0 .. count-1) whose name_of(id) is name, else the id of the
 * alias called name. LF_ERR_INVALID otherwise, the message "unknown WHAT
 * 'NAME' (expected a, b or c)" listing every name. */
lf_code_t parser_name_lookup(const char *what, const char *name, int count, const char *(*name_of)(int),
                             const parser_alias_t *aliases, size_t n_aliases, int *id, lf_err_t *err);

/* Whether needle occurs in hay (len bytes; hay may be NULL). */
bool parser_text_has(const char *hay, size_t len, const char *needle);

#endif
