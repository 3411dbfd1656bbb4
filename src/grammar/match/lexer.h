/* lexer.h - combined lexer states: which terminals are still alive, and in
 * which of their states, after the bytes read since a parse position.
 *
 * A lexer state is the sorted list of (terminal, terminal state) pairs that
 * are not dead; it is interned, so equal lists have equal ids. Transitions
 * are computed on first use and cached per state (256 entries), so after a
 * warm-up a byte costs one table read. A state "accepts" when some pair's
 * terminal accepts: then that terminal may end here (the Earley matcher
 * completes it) while the others go on.
 *
 * Content identity: (h1, h2) hash the pairs by terminal *language* hash and
 * state, so two grammars that share a terminal (the same JSON string
 * constraint) have states with equal hashes; the token-mask cache (mask.h)
 * is keyed by it and shared by every grammar of the process.
 *
 * Threads: a lexer belongs to one compiled grammar and is shared by all its
 * matchers; interning takes a mutex, cached transitions are read without
 * one (atomic loads). States are never moved or freed before the lexer.
 * Limits: GR_LEXER_MAX_STATES per grammar; beyond it a transition reports
 * GR_LEXER_FULL and the caller fails the request.
 *
 * Storage: states live in chunks of 1024, and a state is found from its
 * id without a call (gr_lexer_state is inline: the mask's trie walk steps
 * through it for every byte). Measured on the bench: chunks of 64 made the
 * chunk table (2048 pointers) a page-faulting 16 KB per grammar (+20 us per
 * small compile), chunks of 256 crossed malloc's mmap threshold on every
 * chunk (masks 30% slower); 1024 was the fastest of the three.
 */
#ifndef LF_GR_LEXER_H
#define LF_GR_LEXER_H

#include <stdbool.h>
#include <stdint.h>

#include "grammar/cfg/cfg.h"

#define GR_LEXER_MAX_STATES (1 << 17)
#define GR_LEXER_DEAD (-1)
#define GR_LEXER_FULL (-3)

typedef struct {
    int32_t term, state;
} gr_lpair_t;

typedef struct {
    gr_lpair_t *pairs;
    int32_t n_pairs;
    int32_t *acc;           /* accepting terminals */
    int32_t n_acc;
    uint64_t h1, h2;        /* content hash */
    int32_t next[256];      /* -2: not computed; GR_LEXER_DEAD; id */
} gr_lstate_t;

typedef struct gr_lexer gr_lexer_t;

#define GR_LEXER_CHUNK_BITS 10
#define GR_LEXER_N_CHUNKS (GR_LEXER_MAX_STATES >> GR_LEXER_CHUNK_BITS)

/* The first member of every gr_lexer: chunk c holds the states
 * c * 1024 .. c * 1024 + 1023. */
typedef struct {
    gr_lstate_t *chunk[GR_LEXER_N_CHUNKS];
} gr_lexer_chunks_t;

static inline gr_lstate_t *gr_lexer_state(gr_lexer_t *lx, int32_t id)
{
    return &((gr_lexer_chunks_t *)lx)->chunk[id >> GR_LEXER_CHUNK_BITS][id & ((1 << GR_LEXER_CHUNK_BITS) - 1)];
}

gr_lexer_t *gr_lexer_create(const gr_cfg_t *g);
void gr_lexer_free(gr_lexer_t *lx);
/* The state where terms[0..n) (byte terminals) all start; GR_LEXER_DEAD when
 * n == 0, GR_LEXER_FULL at the state limit. */
int32_t gr_lexer_start(gr_lexer_t *lx, const int32_t *terms, int32_t n);
/* The state of the pairs p[0..n) (sorted by terminal, one per terminal,
 * every one alive); GR_LEXER_DEAD when n == 0, GR_LEXER_FULL at the limit. */
int32_t gr_lexer_intern(gr_lexer_t *lx, const gr_lpair_t *p, int32_t n);
/* Computes (and caches) a transition. */
int32_t gr_lexer_next_slow(gr_lexer_t *lx, int32_t id, uint8_t b);
static inline int32_t gr_lexer_next(gr_lexer_t *lx, int32_t id, uint8_t b)
{
    int32_t v = __atomic_load_n(&gr_lexer_state(lx, id)->next[b], __ATOMIC_ACQUIRE);
    return v != -2 ? v : gr_lexer_next_slow(lx, id, b);
}
int32_t gr_lexer_count(const gr_lexer_t *lx);
/* A number unique to this lexer in the process (cache ownership tags). */
uint64_t gr_lexer_serial(const gr_lexer_t *lx);
const gr_cfg_t *gr_lexer_cfg(const gr_lexer_t *lx);

#endif
