/* stopstr.h - stop-string matching on streamed, decoded text.
 *
 * The generator feeds decoded text chunks (any split: bytes of one UTF-8
 * character may arrive in different chunks) and gets back, per chunk, the
 * bytes that are safe to send to the client now. Text is held back while it
 * could still be the beginning of a stop string, and while it ends in an
 * incomplete UTF-8 character; released text never splits a character
 * (invalid bytes are released as they are, so they cannot block the stream).
 *
 * Which match wins: the stop string occurrence that ENDS first in the text;
 * for equal ends, the longest one (it starts earlier); for identical strings,
 * the lowest index. "Ends first" is what a streaming generator can decide
 * the moment the text is complete, so the result does not depend on how the
 * text was split into chunks and generation stops as early as possible.
 * (vLLM checks stop strings in list order within each new token's text, so
 * when two complete inside the same token it picks the earlier list entry;
 * here position decides.) Example: stops {"ab", "abc"} on "abc" match "ab";
 * stops {"bc", "abc"} on "abc" match "abc".
 *
 * On a match the released text is everything before the stop string (plus
 * the stop string itself with include_stop_str_in_output); whatever followed
 * it is dropped, and the matcher is done: later feeds release nothing.
 * stopstr_flush() at the end of generation releases the held-back tail.
 *
 * Any number of stop strings (OpenAI allows 4; we do not limit). Empty stop
 * strings are rejected. stopstr_set_active(false) (min_tokens) keeps holding
 * back but ignores matches that END inside text fed while inactive; a match
 * that starts there and ends in later, active text still counts (as vLLM).
 *
 * A stopstr_t belongs to one stream; it owns copies of the stop strings and
 * a buffer that grows with the longest chunk (allocation only when a chunk
 * is larger than any before). Not thread-safe.
 */
#ifndef LF_STOPSTR_H
#define LF_STOPSTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

typedef struct stopstr stopstr_t;

typedef struct {
    const char *text;     /* bytes safe to emit now; valid until the next call
                             on this matcher (feed, flush, free) */
    size_t len;
    int32_t stop_index;   /* -1, or the index of the stop string matched now */
    const char *stop_str; /* that stop string (not NUL-terminated) or NULL */
    size_t stop_len;
    bool done;            /* matched or flushed: nothing more will come */
} stopstr_out_t;

/* Copies n stop strings stops[i] of lens[i] bytes (lens NULL: NUL-terminated
 * strings). Returns NULL + err: LF_ERR_INVALID for an empty stop string,
 * LF_ERR_NOMEM. n == 0 is allowed (only UTF-8-safe release then). */
stopstr_t *stopstr_create(const char *const *stops, const size_t *lens, int32_t n,
                          bool include_stop_str_in_output, lf_err_t *err);
void stopstr_free(stopstr_t *ss); /* accepts NULL */

/* Enables / disables matching for the text fed from now on (default on). */
void stopstr_set_active(stopstr_t *ss, bool active);

/* Feeds len bytes of chunk (len 0 is fine) and fills *out. LF_ERR_NOMEM if
 * the buffer cannot grow (out then releases nothing). After done, feeding
 * is allowed and releases nothing. */
lf_code_t stopstr_feed(stopstr_t *ss, const char *chunk, size_t len,
                       stopstr_out_t *out, lf_err_t *err);

/* End of generation: releases everything still held (no match is reported:
 * a held tail is by construction not a complete stop string). */
void stopstr_flush(stopstr_t *ss, stopstr_out_t *out);

/* Bytes currently held back. */
size_t stopstr_held(const stopstr_t *ss);

/* Index of the matched stop string, or -1 (no match yet, or flushed). */
int32_t stopstr_matched(const stopstr_t *ss);

#endif
