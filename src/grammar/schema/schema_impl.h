/* schema_impl.h - internals of the JSON Schema compiler (schema.h), shared
 * by its files: the compile context, $ref resolution (schema_ref.c),
 * numbers (schema_number.c), strings and formats (schema_string.c), the
 * literal validator for enum/const filtering (schema_validate.c), strings
 * in the delimited raw syntax (schema_delim.c) and the structure compiler
 * (schema_compile.c). Not a public header.
 */
#ifndef LF_GR_SCHEMA_IMPL_H
#define LF_GR_SCHEMA_IMPL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "grammar/schema/schema.h"

#define SC_MAX_CONJ 64          /* schemas merged in one conjunction */
#define SC_MAX_NODES 50000      /* distinct conjunctions compiled */

typedef struct {
    const json_object *s;
    uint8_t skip;               /* SK_* keywords already expanded */
} sc_ent_t;

enum { SK_REF = 1, SK_ALLOF = 2, SK_ANYOF = 4, SK_ONEOF = 8 };

typedef struct {
    sc_ent_t *ents;
    int32_t n;
    int32_t rule;
} sc_memo_t;

typedef struct {
    const json_object *node;
    char *base;                 /* absolute base URI of the node */
} sc_base_t;

typedef struct {
    char *uri;                  /* absolute URI (no fragment) or uri#anchor */
    const json_object *node;
} sc_res_t;

typedef struct sc {
    gr_arena_t *a;
    const gr_schema_opts_t *o;
    lf_err_t *err;
    bool failed;
    const json_object *root;
    int draft;                  /* 4, 6, 7, 2019, 2020 */
    bool draft_declared;        /* by "$schema" (else 2020 by default) */
    gr_rules_t *R;              /* rules and DFAs (the caller's) */
    sc_memo_t *memo;
    int32_t n_memo, cap_memo;
    sc_base_t *bases;
    int32_t n_bases, cap_bases;
    sc_res_t *res;
    int32_t n_res, cap_res;
    json_object **owned;        /* objects created while compiling */
    int32_t n_owned, cap_owned;
    gr_ex_t *ws;                /* optional bounded whitespace */
    int32_t any_rule;           /* "any JSON value" rule, -1 until built */
    int64_t n_nodes;
    int depth;
} sc_t;

/* errors: message "'keyword': ..." */
bool sc_fail(sc_t *c, lf_code_t code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool sc_oom(sc_t *c);
/* An unenforceable keyword: error when strict, else true (ignore it). */
bool sc_unsupported(sc_t *c, const char *keyword, const char *why);

int32_t sc_new_rule(sc_t *c);
bool sc_keep_dfa(sc_t *c, gr_dfa_t *d);  /* takes ownership */
json_object *sc_get(const json_object *o, const char *k); /* member or NULL */

/* schema_draft.c: the keywords of the schema's declared draft. */
bool sc_draft_has(const sc_t *c, const char *kw);            /* kw exists in c's draft */
json_object *sc_kw(const sc_t *c, const json_object *s, const char *kw); /* sc_get if it does */
/* As json_object_object_get_ex (a null member is *out NULL, true), false
 * where kw is not a keyword of c's draft. */
bool sc_kw_ex(const sc_t *c, const json_object *s, const char *kw, json_object **out);
/* Whether v is an integer in c's draft (draft-04: no fraction or exponent
 * in its text; later: an integral value, 2.0 included). */
bool sc_is_integer(const sc_t *c, const json_object *v);

/* schema_ref.c */
bool sc_ref_index(sc_t *c);
/* Target of the $ref of node s (NULL + error). */
const json_object *sc_ref_resolve(sc_t *c, const json_object *s, const char *ref);

/* schema_number.c: numbers with bounds and multipleOf as an expression;
 * integer: integral values only. Bounds are JSON numbers (NULL: none). */
typedef struct {
    bool integer;
    const json_object *lo, *hi; /* bound values */
    bool lo_excl, hi_excl;
    const json_object **mult;   /* multipleOf values */
    int32_t n_mult;
} sc_num_t;
gr_ex_t *sc_number_expr(sc_t *c, const sc_num_t *n);
/* Decimal comparison of two JSON numbers: <0, 0, >0. */
int sc_num_cmp(const json_object *a, const json_object *b);

/* schema_string.c */
typedef struct {
    int64_t min_len, max_len;   /* max < 0: none */
    const char **patterns;
    int32_t n_patterns;
    const char **formats;
    int32_t n_formats;
    const json_object **exclude;/* string values excluded (not/enum) */
    int32_t n_exclude;
    const char **neg_patterns;  /* patterns the string must not match */
    int32_t n_neg_patterns;
} sc_str_t;
gr_ex_t *sc_string_expr(sc_t *c, const sc_str_t *s);
/* gr_ex_jstr with the options' escape_lt. */
gr_ex_t *sc_jstr(sc_t *c, gr_arena_t *a, gr_ex_t *content, int64_t min, int64_t max);
/* The DFA of JSON strings (all encodings) satisfying s without length
 * bounds, or NULL (error). Owned by the caller. */
gr_dfa_t *sc_string_dfa(sc_t *c, const sc_str_t *s);
/* The code points of UTF-8 text s as a sequence of one-character sets
 * (encoded by whoever embeds it: all JSON encodings inside a JSON string). */
gr_ex_t *sc_literal_chars(gr_arena_t *a, const char *s, size_t n);
/* The code-point expression of a pattern (search semantics) or of a
 * format's regex (whole text); NULL and c->failed on an error. */
gr_ex_t *sc_constraint_expr(sc_t *c, gr_arena_t *a, const char *re, bool pattern);
/* Whether a format name is enforced. */
bool sc_format_known(const char *name);
/* Whether UTF-8 text matches the format / pattern (literal validation). */
bool sc_format_match(sc_t *c, const char *name, const char *text, size_t len);
bool sc_pattern_match(sc_t *c, const char *pattern, const char *text, size_t len, bool *ok);

/* schema_validate.c: validates a literal value against a conjunction of
 * schemas (every keyword, for enum/const filtering). */
bool sc_validate(sc_t *c, const json_object *v, const sc_ent_t *ents, int32_t n);
bool sc_json_equal(const json_object *a, const json_object *b);

/* schema_delim.c: strings in the delimited raw syntax (opts.str_delim).
 * sc_delim_check: the delimiter is usable (else an error). sc_dstr_expr:
 * the string values satisfying s; sc_dstr_value: one string value;
 * sc_dstr_key_head: one key (bare or delimited), its ':' and the
 * whitespace after it; sc_dstr_any_key_head: any key so; the DFAs of the
 * key texts satisfying s (sc_dstr_key_dfa) and of texts of min..max code
 * points (owned by the caller); sc_dstr_key_head_dfa: a
 * key whose text that DFA (kept by the caller) accepts, bare where it can
 * be or delimited, then ':' and whitespace. */
bool sc_delim_check(sc_t *c);
gr_ex_t *sc_dstr_expr(sc_t *c, const sc_str_t *s);
gr_ex_t *sc_dstr_value(sc_t *c, const char *s, size_t n);
gr_ex_t *sc_dstr_key_head(sc_t *c, const char *s, size_t n);
gr_ex_t *sc_dstr_any_key_head(sc_t *c);
gr_ex_t *sc_dstr_key_head_dfa(sc_t *c, gr_dfa_t *bare);
gr_dfa_t *sc_dstr_key_dfa(sc_t *c, const sc_str_t *s);
gr_dfa_t *sc_dstr_len_dfa(sc_t *c, int64_t min, int64_t max);

/* schema_compile.c */
gr_ex_t *sc_literal(sc_t *c, const json_object *v);

#endif
