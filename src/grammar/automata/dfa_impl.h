/* dfa_impl.h - internals shared by the automaton core (dfa.c) and the
 * constructions from expressions (dfa_build.c); not part of dfa.h's API.
 *
 * A raw_t is a table under construction: any numbering, maybe useless
 * states; dfa_finalize() turns it into a gr_dfa_t (trimmed, minimized when
 * asked, canonically numbered, hashed) and leaves the raw table to the
 * caller. An idmap_t maps caller-computed hashes to ids. Scratch slots
 * (core/scratch.h) are split between the stages so that none overlaps a
 * caller's.
 */
#ifndef LF_GR_DFA_IMPL_H
#define LF_GR_DFA_IMPL_H

#include <stddef.h>

#include "grammar/automata/dfa.h"
#include "grammar/core/scratch.h"

/* scratch slots: hopcroft, finalize, determinize, glue */
enum { SL_HOP = 0, SL_FIN = 13, SL_DET = 23, SL_GLUE = 28 };

typedef struct {
    int32_t n, cap, ncls;
    uint8_t cls[256];
    int32_t *next;
    uint8_t *accept, *tag;
    bool has_tag;
    int32_t start;
} raw_t;

/* Hash table of int32 ids keyed by caller-computed hashes. */
typedef struct {
    int32_t *slot;
    uint64_t *hash;
    size_t mask;
    size_t n;
} idmap_t;

static inline uint64_t dfa_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xFF51AFD7ED558CCDull;
    return h ^ (h >> 33);
}
/* d->h1, d->h2 from its table (every construction's last step). */
void dfa_content_hash(gr_dfa_t *d);
bool dfa_raw_grow(raw_t *r, int32_t need);
void dfa_raw_free(raw_t *r);
bool dfa_idmap_init(idmap_t *m, size_t want);
void dfa_idmap_free(idmap_t *m);
bool dfa_idmap_grow(idmap_t *m);
/* The canonical automaton of r (minimized when minimize); NULL + err. */
gr_dfa_t *dfa_finalize(raw_t *r, bool keep_tags, bool minimize, const gr_limits_t *lim, lf_err_t *err);
/* The state limit of lim. */
int64_t dfa_max_states(const gr_limits_t *lim);
/* The state and time limits of a construction that has made n states and
 * is at state id; false with the error naming the limit. */
bool dfa_within_limits(int64_t n, int32_t id, const gr_limits_t *lim, lf_err_t *err);

#endif
