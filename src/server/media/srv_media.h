/* srv_media.h - image inputs of the server: the vision model (--mmproj),
 * the operator's limits, and turning the images of a request into the
 * prompt the scheduler runs.
 *
 * An image reference (OpenAI's image_url.url, LMI's, TGI's markdown) is
 *  - a data: URL "data:image/<type>;base64,<data>",
 *  - bare base64 (what SageMaker LMI's schema documents),
 *  - http(s)://... when the operator allows remote images
 *    (media_fetch.h: allow-list, SSRF protection, byte / time / redirect
 *    limits),
 *  - file:///path under the operator's --media-dir.
 * Every failure is a 400 whose message names the content part (`param`).
 *
 * srv_media_t is immutable after srv_media_open and shared by the acceptor
 * threads; its functions are thread-safe.
 */
#ifndef LF_SRV_MEDIA_H
#define LF_SRV_MEDIA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/model/model.h"
#include "engine/sched/sched_media.h"
#include "engine/vision/vision.h"
#include "server/request/request.h"

typedef struct {
    const char *mmproj_path;     /* --mmproj [LLM_MMPROJ]; NULL: no image input */
    int32_t max_images;          /* per request (default 8) */
    int64_t max_image_bytes;     /* per image, as sent (default 20 MiB) */
    int64_t max_image_pixels;    /* per image, decoded (default 33,554,432 = 8192 x 4096) */
    int32_t image_cache_mb;      /* encoded-image cache (default 256) */
    const char *media_domains;   /* remote image hosts, comma-separated (NULL: remote images off) */
    bool media_allow_private;    /* remote images may come from loopback / private addresses */
    const char *media_dir;       /* file:// images under this directory (NULL: off) */
    int32_t media_timeout_s;     /* remote fetch time limit (default 10) */
    int32_t media_max_redirects; /* (default 3) */
} srv_media_cfg_t;

/* The defaults above for the zero fields. */
void srv_media_cfg_defaults(srv_media_cfg_t *c);

typedef struct srv_media srv_media_t;

/* Loads the projector and checks it against the text model. */
srv_media_t *srv_media_open(const srv_media_cfg_t *cfg, const model_t *m, const char *model_path, lf_err_t *err);
void srv_media_close(srv_media_t *sm); /* accepts NULL */
const vis_model_t *srv_media_vision(const srv_media_t *sm);
const srv_media_cfg_t *srv_media_cfg(const srv_media_t *sm);

/* The bytes of one image reference (see above). 0, or -1 with e filled
 * (400 naming param). *bytes is malloc'd. */
int srv_media_bytes(const srv_media_t *sm, const char *url, const char *param, uint8_t **bytes, size_t *n,
                    req_err_t *e);

/* The prompt of a request with images: text is the rendered prompt with
 * `marker` where image i (urls[i], named params[i] in errors) goes; the
 * images are fetched, decoded, preprocessed and laid out, and the result
 * is the scheduler's media object (its prompt tokens: sched_media_prompt).
 * 0, or -1 with e filled (400 for any bad image or marker count). */
int srv_media_prompt(const srv_media_t *sm, const vocab_t *voc, const char *text, const char *marker,
                     const char *const *urls, const char *const *params, size_t n_images, bool add_special,
                     sched_media_t **out, req_err_t *e);

#endif
