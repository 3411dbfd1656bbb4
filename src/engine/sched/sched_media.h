/* sched_media.h - the images of a job's prompt, as the scheduler sees them:
 * the prompt layout (vis_prompt.h), the preprocessed pixel arrays, and per
 * image span its encoded rows (from the encoded-image cache, or encoded
 * by the scheduler one stage per step so other streams keep decoding).
 *
 * The acceptor builds it (sched_media_create) and hands it to sched_submit
 * through sched_params_t.media; jobs of one request share it (reference
 * counted). Only the scheduler thread calls the functions below the line.
 */
#ifndef LF_SCHED_MEDIA_H
#define LF_SCHED_MEDIA_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/kernels/tpool.h"
#include "engine/model/forward.h"
#include "engine/vision/vis_cache.h"
#include "engine/vision/vis_media.h"
#include "engine/vision/vis_prompt.h"

typedef struct sched_media sched_media_t;

/* Takes prompt (its contents) and media (a malloc'd array of n_media).
 * NULL on allocation failure (then both are freed). */
sched_media_t *sched_media_create(const vis_model_t *v, vis_prompt_t *prompt, vis_media_t *media, int32_t n_media,
                                  lf_err_t *err);
void sched_media_retain(sched_media_t *m);
void sched_media_release(sched_media_t *m); /* accepts NULL */
const vis_prompt_t *sched_media_prompt(const sched_media_t *m);
/* Rows of the largest bidirectional span (0: none): it must fit one batch. */
int32_t sched_media_max_bidir(const sched_media_t *m);

/* ---- scheduler thread ---- */

/* The first cell >= from whose span has no rows yet (spans found in cache c
 * are taken from it first); the prompt length when every span is ready. */
int32_t sched_media_ready_until(sched_media_t *m, vis_cache_t *c, int32_t from);
/* Advances the encode of the first span without rows at or after cell
 * from by one stage on pool; a finished encode goes into cache c.
 * Returns false when there was nothing to do. */
bool sched_media_encode_step(sched_media_t *m, vis_cache_t *c, tpool_t *pool, int32_t from);
/* The multimodal row of cell pos (its span ready); pos beyond the prompt:
 * a generated token. */
void sched_media_row(const sched_media_t *m, int32_t pos, fwd_mm_t *mm);
/* Whether an encode failed (the job cannot go on). */
bool sched_media_failed(const sched_media_t *m);
/* The end of the bidirectional span holding cell pos, else -1. */
int32_t sched_media_bidir_end(const sched_media_t *m, int32_t pos);

#endif
