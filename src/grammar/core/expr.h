/* expr.h - the grammar expression IR shared by every grammar source.
 *
 * JSON Schema, regexes, GBNF and the server's tool-call / reasoning
 * wrappers all compile into expressions: sequences, alternatives, bounded
 * or unbounded repetition, literal bytes, code point sets, references to
 * rules (nonterminals), special tokens, JSON strings and prebuilt DFAs. The
 * CFG builder (cfg/cfg.h) then splits them into terminals (regular parts,
 * compiled to DFAs) and rules (the parts that refer to rules).
 *
 * Encoding: GR_EX_CHARS is a set of code points. Outside a JSON string it
 * stands for their raw UTF-8; inside the content of a GR_EX_JSTR it stands
 * for every JSON encoding the engine accepts (raw UTF-8 where JSON allows
 * it, the short escapes, \u00XX for control characters). GR_EX_BYTES are
 * raw bytes everywhere.
 *
 * Memory: every node lives in a gr_arena_t, freed at once. The arena has a
 * byte budget: allocation beyond it fails (NULL) and sets arena->over, so a
 * huge schema is refused with "memory limit" instead of exhausting RAM.
 * Constructors accept NULL children and then return NULL, so a chain of
 * calls needs one check at the end.
 */
#ifndef LF_GR_EXPR_H
#define LF_GR_EXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grammar/core/charset.h"

typedef struct gr_arena_block gr_arena_block_t;

typedef struct {
    gr_arena_block_t *head;
    size_t used, budget;   /* bytes handed out, limit (0: none) */
    bool over;             /* the budget was hit */
    bool oom;              /* malloc failed */
} gr_arena_t;

void gr_arena_init(gr_arena_t *a, size_t budget);
void gr_arena_free(gr_arena_t *a);
void *gr_arena_alloc(gr_arena_t *a, size_t n);  /* zeroed; NULL on failure */
char *gr_arena_strdup(gr_arena_t *a, const char *s, size_t n);

typedef enum {
    GR_EX_NONE = 0, /* matches nothing */
    GR_EX_EMPTY,    /* matches the empty string */
    GR_EX_BYTES,    /* literal bytes */
    GR_EX_CHARS,    /* one code point from a set (see Encoding) */
    GR_EX_SEQ,
    GR_EX_ALT,
    GR_EX_REP,      /* kid{min,max}, max < 0: unbounded */
    GR_EX_REF,      /* rule (nonterminal) number `ref` */
    GR_EX_TOKEN,    /* the special token `token` */
    GR_EX_JSTR,     /* a JSON string "..." whose decoded content is in kid's
                       language (NULL kid: any content) and has min..max code
                       points (max < 0: unbounded) */
    GR_EX_DFA       /* a prebuilt terminal language (struct gr_dfa *) */
} gr_ex_kind_t;

struct gr_dfa;

typedef struct gr_ex {
    gr_ex_kind_t kind;
    uint32_t n;               /* BYTES: length; SEQ/ALT: number of kids */
    const uint8_t *bytes;     /* BYTES */
    gr_cset_t cs;             /* CHARS (ranges live in the arena) */
    struct gr_ex **kids;      /* SEQ/ALT */
    struct gr_ex *kid;        /* REP, JSTR */
    int64_t min, max;         /* REP, JSTR */
    int32_t ref;              /* REF */
    int32_t token;            /* TOKEN */
    const struct gr_dfa *dfa; /* DFA (not owned: must outlive the expression) */
    bool dfa_nullable;        /* DFA: accepts the empty string */
    bool dfa_counted;         /* DFA: a whole JSON string terminal whose
                                 code points are counted (min..max) */
    bool esc_lt;              /* JSTR: '<' only as the escape \u003c, never
                                 raw (so no markup can appear in the string) */
    uint8_t memo;             /* cfg.c: cached analysis bits (0: not yet) */
    bool hashed;              /* dfa_build.c: h1/h2 computed */
    uint64_t h1, h2;          /* dfa_build.c: structural hash (DFA cache key) */
} gr_ex_t;

gr_ex_t *gr_ex_none(gr_arena_t *a);
gr_ex_t *gr_ex_empty(gr_arena_t *a);
gr_ex_t *gr_ex_bytes(gr_arena_t *a, const void *p, size_t n);
gr_ex_t *gr_ex_str(gr_arena_t *a, const char *s); /* NUL-terminated literal */
gr_ex_t *gr_ex_chars(gr_arena_t *a, const gr_cset_t *cs); /* copies the ranges */
gr_ex_t *gr_ex_range(gr_arena_t *a, uint32_t lo, uint32_t hi);
/* SEQ / ALT of n kids (copied array). n == 1 returns the kid itself. */
gr_ex_t *gr_ex_seq(gr_arena_t *a, gr_ex_t *const *kids, size_t n);
gr_ex_t *gr_ex_alt(gr_arena_t *a, gr_ex_t *const *kids, size_t n);
gr_ex_t *gr_ex_seq2(gr_arena_t *a, gr_ex_t *x, gr_ex_t *y);
gr_ex_t *gr_ex_seq3(gr_arena_t *a, gr_ex_t *x, gr_ex_t *y, gr_ex_t *z);
gr_ex_t *gr_ex_alt2(gr_arena_t *a, gr_ex_t *x, gr_ex_t *y);
gr_ex_t *gr_ex_rep(gr_arena_t *a, gr_ex_t *kid, int64_t min, int64_t max);
gr_ex_t *gr_ex_opt(gr_arena_t *a, gr_ex_t *kid);
gr_ex_t *gr_ex_ref(gr_arena_t *a, int32_t rule);
gr_ex_t *gr_ex_token(gr_arena_t *a, int32_t token);
gr_ex_t *gr_ex_jstr(gr_arena_t *a, gr_ex_t *content, int64_t min, int64_t max);
/* nullable: whether d accepts the empty string (gr_dfa_nullable). */
gr_ex_t *gr_ex_dfa(gr_arena_t *a, const struct gr_dfa *d, bool nullable);
/* A whole JSON string terminal (d built with tags, dfa.h) whose content has
 * min..max code points (max < 0: unbounded). Never fused with neighbours. */
gr_ex_t *gr_ex_dfa_string(gr_arena_t *a, const struct gr_dfa *d, int64_t min, int64_t max);

/* A growable list of kids built in the arena (for SEQ/ALT assembly). */
typedef struct {
    gr_ex_t **v;
    size_t n, cap;
    bool fail;
} gr_exlist_t;

void gr_exlist_push(gr_arena_t *a, gr_exlist_t *l, gr_ex_t *e);

/* A growable set of rules (expressions by rule number) plus the DFAs they
 * point to (owned). Grammar sources append to one; the CFG builder reads
 * it. */
typedef struct {
    gr_ex_t **v;
    int32_t n, cap;
    struct gr_dfa **dfas;
    int32_t n_dfas, cap_dfas;
} gr_rules_t;

/* A new rule (expression NULL until set); -1 on allocation failure. */
int32_t gr_rules_add(gr_rules_t *r);
/* Takes ownership of d (freed on failure too). */
bool gr_rules_keep_dfa(gr_rules_t *r, struct gr_dfa *d);
void gr_rules_free(gr_rules_t *r); /* frees the arrays and the DFAs */

/* Whether e refers to no rule and no token (a regular expression over bytes,
 * compilable to one DFA). */
bool gr_ex_is_regular(const gr_ex_t *e);
/* Whether e can match the empty string (rules: assumed non-nullable unless
 * nullable_rule says so; may be NULL). */
bool gr_ex_nullable(const gr_ex_t *e, const bool *nullable_rule);

#endif
