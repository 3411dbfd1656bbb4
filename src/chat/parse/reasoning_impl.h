/* reasoning_impl.h - internals shared by reasoning.c (the parser object,
 * output segments, the marker-format state machine, public API) and
 * reasoning_harmony.c (the gpt-oss channel machine). Not a public header:
 * see reasoning.h for the contract.
 */
#ifndef LF_REASONING_IMPL_H
#define LF_REASONING_IMPL_H

#include "chat/parse/reasoning.h"

#include <stdint.h>

/* Longest header of a harmony message kept while it is parsed; a longer
 * one is not a header and is released as text. */
#define REASONING_HARMONY_HEADER_MAX 512

struct reasoning {
    reasoning_mode_t mode;
    const reasoning_format_t *fmt; /* NULL for GENERIC: see the markers below */
    /* marker lists in use (the format's, or GENERIC's configured ones) */
    const char *const *open, *const *close, *const *implicit_close, *const *drop;
    char gen_open[REASONING_MARKER_MAX + 1], gen_close[REASONING_MARKER_MAX + 1];
    const char *gen_open_list[2], *gen_close_list[2];
    int st;            /* state (reasoning.c or reasoning_harmony.c) */
    bool finished;
    /* held tail that may start markup (markers: <= REASONING_MARKER_MAX) */
    char *hold;
    size_t hold_len, hold_cap;
    /* harmony: the current message */
    int h_route;       /* where the body goes (reasoning_harmony.c) */
    size_t h_keep;     /* bytes of hold to keep when routing a header */
    /* output of the current push */
    char *buf;
    size_t len, cap;
    reasoning_seg_t *segs;
    size_t *offs;
    int nseg, seg_cap;
    bool touched; /* in the reasoning at some point during this push */
    bool nomem;
};

/* Appends output bytes of a kind (extends the last segment or opens one). */
void rs_emit(reasoning_t *rp, reasoning_seg_kind_t kind, const char *s, size_t n);
/* Adds bytes to the held tail. */
void rs_hold_add(reasoning_t *rp, const char *s, size_t n);
/* Drops the first n held bytes. */
void rs_hold_drop(reasoning_t *rp, size_t n);

/* Harmony machine (reasoning_harmony.c). */
void rs_harmony_init(reasoning_t *rp);
void rs_harmony_step(reasoning_t *rp, char c);
void rs_harmony_finish(reasoning_t *rp);
bool rs_harmony_in_reasoning(const reasoning_t *rp);

#endif
