/* grammar.h - the constraint engine: grammars compiled from JSON Schema,
 * regular expressions, choice lists and GBNF, and matchers that yield, at
 * each decode step, the set of vocabulary tokens that keep the output valid.
 *
 * Layers (sub-folders of src/grammar):
 *   core/     code point sets, the expression IR every source compiles to
 *   regex/    ECMAScript regexes -> IR          gbnf/    GBNF -> IR
 *   schema/   JSON Schema -> IR                 automata/ byte NFAs/DFAs
 *   cfg/      IR -> terminals + productions     match/   lexer + Earley
 *   mask/     vocabulary tries, token masks and their shared cache
 *
 * Objects:
 *   grammar_engine_t  one per vocabulary (and process): the tries, the mask
 *                     cache, the compiled-grammar cache (by content) and
 *                     statistics. Thread-safe.
 *   grammar_t         a compiled grammar: immutable, reference-counted,
 *                     shared by every request that uses the same
 *                     constraint (the engine caches it).
 *   grammar_matcher_t one output being constrained: not thread-safe (one
 *                     sequence, one thread at a time), owns a reference to
 *                     its grammar.
 *
 * Errors: compile functions return NULL with err: LF_ERR_INVALID (bad
 * schema / regex / grammar syntax, or a grammar that admits no output),
 * LF_ERR_UNSUPPORTED (a keyword or construct that cannot be enforced, or a
 * limit: the message names it), LF_ERR_NOMEM.
 *
 * Masks are bitsets of n_words uint32 words (bit t of word t / 32).
 */
#ifndef LF_GRAMMAR_H
#define LF_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/vocab/vocab.h"
#include "grammar/core/expr.h"

struct json_object;

typedef struct grammar_engine grammar_engine_t;
typedef struct grammar grammar_t;
typedef struct grammar_matcher grammar_matcher_t;

typedef struct {
    bool strict;            /* JSON Schema: unenforceable keyword -> error (default true) */
    bool compact;           /* no optional whitespace in JSON output */
    int64_t time_limit_ms;  /* compile time limit (default 5000) */
    size_t memory_limit;    /* compile memory limit in bytes (default 256 MiB) */
} grammar_opts_t;

typedef struct {
    uint64_t compiles, compile_errors, cache_hits;
    double compile_seconds;
    uint64_t masks;
    double mask_seconds;
    uint64_t mask_hist[12];          /* masks by duration: <= 10us, 25, 50, 100, 250, 500,
                                        1ms, 2.5, 5, 10, 25, > 25 ms */
    uint64_t mask_cache_hits, mask_cache_misses;
    size_t mask_cache_bytes;
} grammar_stats_t;

void grammar_opts_default(grammar_opts_t *o);

/* cache_bytes: budget of the token-mask cache (0: 256 MiB). */
grammar_engine_t *grammar_engine_create(const vocab_t *v, size_t cache_bytes, lf_err_t *err);
void grammar_engine_free(grammar_engine_t *e);
int32_t grammar_engine_n_words(const grammar_engine_t *e);
const vocab_t *grammar_engine_vocab(const grammar_engine_t *e);
void grammar_engine_stats(grammar_engine_t *e, grammar_stats_t *out);
/* Records one mask computation (the scheduler times them). */
void grammar_engine_note_mask(grammar_engine_t *e, double seconds);

/* ---- compiling (results cached by content in the engine) ---- */
grammar_t *grammar_from_json_schema(grammar_engine_t *e, const char *json, size_t len, const grammar_opts_t *o,
                                    lf_err_t *err);
grammar_t *grammar_from_schema_object(grammar_engine_t *e, const struct json_object *schema,
                                      const grammar_opts_t *o, lf_err_t *err);
/* Any JSON value (object_only: a JSON object), as "json_object" mode. */
grammar_t *grammar_from_any_json(grammar_engine_t *e, bool object_only, const grammar_opts_t *o, lf_err_t *err);
/* The whole output matches the regex (ECMAScript syntax). */
grammar_t *grammar_from_regex(grammar_engine_t *e, const char *re, size_t len, const grammar_opts_t *o,
                              lf_err_t *err);
grammar_t *grammar_from_gbnf(grammar_engine_t *e, const char *text, size_t len, const grammar_opts_t *o,
                             lf_err_t *err);
/* The output is exactly one of the strings. */
grammar_t *grammar_from_choices(grammar_engine_t *e, const char *const *choices, const size_t *lens, size_t n,
                                lf_err_t *err);
/* From rules built by a caller (tool calls, reasoning wrappers): takes
 * ownership of R's DFAs and arrays and of arena a (both emptied). `key`
 * (may be NULL) caches the result by content. */
grammar_t *grammar_from_rules(grammar_engine_t *e, gr_arena_t *a, gr_rules_t *R, int32_t start, const char *key,
                              lf_err_t *err);

/* The cached grammar for key (a reference), or NULL. */
grammar_t *grammar_lookup(grammar_engine_t *e, const char *key);

void grammar_retain(grammar_t *g);
void grammar_release(grammar_t *g); /* accepts NULL */
/* Seconds the compilation took (0 for a cache hit). */
double grammar_compile_seconds(const grammar_t *g);
/* Readable dump of the productions and terminals (malloc'd). */
char *grammar_dump(const grammar_t *g);

/* ---- matching ---- */
grammar_matcher_t *grammar_matcher_create(grammar_engine_t *e, grammar_t *g, lf_err_t *err);
void grammar_matcher_free(grammar_matcher_t *m);
/* The allowed tokens now into mask[n_words]: the end-of-generation tokens
 * are in it when the output may end here. */
lf_code_t grammar_matcher_mask(grammar_matcher_t *m, uint32_t *mask, lf_err_t *err);
/* Advances by one generated token. false (state unchanged) if the token is
 * not allowed. An end-of-generation token is accepted when the output is
 * complete (the matcher is then finished). */
bool grammar_matcher_accept(grammar_matcher_t *m, int32_t token);
/* Advances by raw bytes (a prefix forced by the caller). */
bool grammar_matcher_accept_bytes(grammar_matcher_t *m, const void *p, size_t n);
/* The output so far is complete. */
bool grammar_matcher_accepting(const grammar_matcher_t *m);
/* Nothing but the end of the output can follow (complete, no continuation). */
bool grammar_matcher_done(const grammar_matcher_t *m);

#endif
