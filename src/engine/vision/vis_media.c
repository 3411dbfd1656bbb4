/* vis_media.c - image inputs for a vision model (see vis_media.h). */
#include "engine/vision/vis_media.h"

#include <string.h>

#include "image/image.h"
#include "pull/sha256.h"

lf_code_t vis_media_load(const vis_model_t *v, const uint8_t *bytes, size_t n, int64_t max_pixels, vis_media_t *out,
                         lf_err_t *err)
{
    memset(out, 0, sizeof *out);
    sha256_t s;
    sha256_init(&s);
    sha256_update(&s, bytes, n);
    sha256_final(&s, out->hash);
    img_rgb_t rgb;
    lf_code_t rc = img_decode(bytes, n, max_pixels, &rgb, err);
    if (rc != LF_OK)
        return rc;
    out->w = rgb.w;
    out->h = rgb.h;
    rc = vis_preprocess(v, &rgb, &out->prep, err);
    img_rgb_free(&rgb);
    return rc;
}

void vis_media_free(vis_media_t *m)
{
    if (!m)
        return;
    vis_prep_free(&m->prep);
    memset(m, 0, sizeof *m);
}

int32_t vis_media_rows(const vis_media_t *m)
{
    int32_t n = 0;
    for (int32_t i = 0; i < m->prep.n; i++)
        n += m->prep.a[i].n_tokens;
    return n;
}
