/* vis_media.h - one image input made ready for a vision model: its bytes
 * hashed (the cache key), decoded (image.h, with the caller's pixel limit)
 * and preprocessed for the model's family (vis_preprocess).
 *
 * Ownership: vis_media_free releases what vis_media_load filled (accepts a
 * zeroed struct). Thread-safe: the model is only read.
 */
#ifndef LF_VIS_MEDIA_H
#define LF_VIS_MEDIA_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/vision/vision.h"

typedef struct {
    uint8_t hash[32];     /* sha256 of the file bytes */
    int32_t w, h;         /* decoded size */
    vis_prep_t prep;      /* the pixel arrays for the encoder */
} vis_media_t;

/* Decodes and preprocesses bytes[0..n) for v. Errors are those of
 * img_decode (unsupported format, corrupt or truncated data, more than
 * max_pixels) and vis_preprocess, with a message fit for a client. */
lf_code_t vis_media_load(const vis_model_t *v, const uint8_t *bytes, size_t n, int64_t max_pixels, vis_media_t *out,
                         lf_err_t *err);
void vis_media_free(vis_media_t *m);
/* Image rows the media gives the prompt (all arrays). */
int32_t vis_media_rows(const vis_media_t *m);

#endif
