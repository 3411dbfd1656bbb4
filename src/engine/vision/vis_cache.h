/* vis_cache.h - encoded images by content: the rows a pixel array of an
 * image encodes to, keyed by the image file's hash and the array index, in
 * a bounded LRU (bytes of rows), so a follow-up question about the same
 * image encodes nothing.
 *
 * Entries are reference-counted: vis_cache_get / vis_cache_put hand out a
 * reference the holder releases (vis_embd_release); eviction only drops
 * the cache's own reference, so rows in use stay valid. Thread-safe (one
 * mutex; the rows themselves are immutable once put).
 */
#ifndef LF_VIS_CACHE_H
#define LF_VIS_CACHE_H

#include <stdint.h>

typedef struct vis_cache vis_cache_t;
typedef struct vis_embd vis_embd_t;

/* max_bytes <= 0: nothing is kept (put still returns a usable entry). */
vis_cache_t *vis_cache_create(int64_t max_bytes);
void vis_cache_free(vis_cache_t *c); /* accepts NULL; entries in use survive */

/* A reference to the cached rows of (hash, array), or NULL (counts a miss). */
vis_embd_t *vis_cache_get(vis_cache_t *c, const uint8_t hash[32], int32_t array);
/* Stores rows (n_floats, taken) under (hash, array) and returns a reference
 * (NULL only when out of memory; then rows are freed). c may be NULL. */
vis_embd_t *vis_cache_put(vis_cache_t *c, const uint8_t hash[32], int32_t array, float *rows, int64_t n_floats);
const float *vis_embd_rows(const vis_embd_t *e);
void vis_embd_release(vis_embd_t *e); /* accepts NULL */

typedef struct {
    uint64_t entries, bytes, max_bytes;
    uint64_t hits, misses, evictions;
} vis_cache_stats_t;
void vis_cache_stats(vis_cache_t *c, vis_cache_stats_t *out);

#endif
