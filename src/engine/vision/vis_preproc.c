/* vis_preproc.c - image preprocessing per projector family, as llama.cpp's
 * mtmd-image.cpp does it (see vision.h):
 *
 *  gemma3   letterbox (bilinear) into image_size x image_size, black pad;
 *  qwen     the "smart resize" target (multiples of patch x merge, token
 *           count within min/max pixels, float32 arithmetic, rounding half
 *           away from zero), then letterbox (bicubic) into it;
 *  idefics3 longest edge to preproc_image_size (Lanczos, odd sides made
 *           even), then up to whole tiles (Lanczos, no aspect kept), cut
 *           into image_size tiles in raster order, plus an overview tile
 *           resized from the tiled image; tiles first, overview last.
 */
#include "engine/vision/vis_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t black[3] = {0, 0, 0};

static int32_t round_by(float x, int32_t f) { return (int32_t)roundf(x / (float)f) * f; }
static int32_t ceil_by(float x, int32_t f) { return (int32_t)ceilf(x / (float)f) * f; }
static int32_t floor_by(float x, int32_t f) { return (int32_t)floorf(x / (float)f) * f; }

/* llama.cpp's img_tool::calc_size_preserved_ratio without longest_edge. */
static void smart_size(int32_t w, int32_t h, int32_t align, int32_t min_px, int32_t max_px, int32_t *ow, int32_t *oh)
{
    int32_t wb = round_by((float)w, align), hb = round_by((float)h, align);
    if (wb < align)
        wb = align;
    if (hb < align)
        hb = align;
    if (max_px > 0 && (int64_t)hb * wb > max_px) {
        const float beta = sqrtf((float)h * (float)w / (float)max_px);
        hb = floor_by((float)h / beta, align);
        wb = floor_by((float)w / beta, align);
        if (hb < align)
            hb = align;
        if (wb < align)
            wb = align;
    } else if (min_px > 0 && (int64_t)hb * wb < min_px) {
        const float beta = sqrtf((float)min_px / ((float)h * (float)w));
        hb = ceil_by((float)h * beta, align);
        wb = ceil_by((float)w * beta, align);
    }
    *ow = wb;
    *oh = hb;
}

static lf_code_t add_array(vis_prep_t *p, img_rgb_t *px, int32_t n_tokens, int32_t nx, int32_t ny, lf_err_t *err)
{
    vis_array_t *a = realloc(p->a, (size_t)(p->n + 1) * sizeof *a);
    if (!a) {
        img_rgb_free(px);
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    }
    p->a = a;
    a[p->n++] = (vis_array_t){.px = *px, .n_tokens = n_tokens, .nx = nx, .ny = ny};
    memset(px, 0, sizeof *px);
    return LF_OK;
}

int32_t vis_tokens_for_grid(const vis_model_t *v, int32_t gw, int32_t gh)
{
    const vis_hparams_t *hp = &v->hp;
    return (gw / hp->n_merge) * (gh / hp->n_merge);
}

static lf_code_t prep_idefics3(const vis_model_t *v, const img_rgb_t *img, vis_prep_t *out, lf_err_t *err)
{
    const vis_hparams_t *hp = &v->hp;
    const int32_t tile = hp->image_size, le = hp->longest_edge;
    if (le <= 0)
        return lf_err_set(err, LF_ERR_UNSUPPORTED, "idefics3 projector without preproc_image_size");
    const double aspect = (double)img->w / img->h;
    int32_t rw, rh;
    if (img->w >= img->h) {
        rw = le;
        rh = (int32_t)(le / aspect);
        rh += rh % 2;
    } else {
        rh = le;
        rw = (int32_t)(le * aspect);
        rw += rw % 2;
    }
    if (rw <= 0 || rh <= 0)
        return lf_err_set(err, LF_ERR_INVALID, "a %dx%d image is too narrow to tile (aspect ratio beyond %d:1)",
                          img->w, img->h, le);
    const int32_t gx = (rw + tile - 1) / tile, gy = (rh + tile - 1) / tile;
    img_rgb_t resized = {0}, refined = {0}, t = {0};
    lf_code_t rc = img_resize(img, rw, rh, IMG_RESIZE_LANCZOS, &resized, err);
    if (rc == LF_OK)
        rc = img_resize(&resized, gx * tile, gy * tile, IMG_RESIZE_LANCZOS, &refined, err);
    img_rgb_free(&resized);
    const int32_t per = vis_tokens_for_grid(v, tile / hp->patch_size, tile / hp->patch_size);
    for (int32_t y = 0; rc == LF_OK && y < gy; y++)
        for (int32_t x = 0; rc == LF_OK && x < gx; x++)
            if ((rc = img_crop(&refined, x * tile, y * tile, tile, tile, &t, err)) == LF_OK)
                rc = add_array(out, &t, per, per, 1, err);
    if (rc == LF_OK && (rc = img_resize(&refined, tile, tile, IMG_RESIZE_LANCZOS, &t, err)) == LF_OK)
        rc = add_array(out, &t, per, per, 1, err);
    img_rgb_free(&refined);
    out->grid_x = gx;
    out->grid_y = gy;
    return rc;
}

lf_code_t vis_preprocess(const vis_model_t *v, const img_rgb_t *img, vis_prep_t *out, lf_err_t *err)
{
    memset(out, 0, sizeof *out);
    const vis_hparams_t *hp = &v->hp;
    if (img->w <= 0 || img->h <= 0)
        return lf_err_set(err, LF_ERR_INVALID, "empty image");
    img_rgb_t px = {0};
    lf_code_t rc;
    switch (hp->proj) {
    case VIS_PROJ_GEMMA3: {
        rc = img_letterbox(img, hp->image_size, hp->image_size, IMG_RESIZE_BILINEAR, black, &px, err);
        const int32_t side = hp->image_size / hp->patch_size;
        const int32_t n = vis_tokens_for_grid(v, side, side);
        if (rc == LF_OK)
            rc = add_array(out, &px, n, n, 1, err);
        break;
    }
    case VIS_PROJ_QWEN25VL:
    case VIS_PROJ_QWEN3VL: {
        const int32_t align = hp->patch_size * hp->n_merge;
        int32_t w, h;
        smart_size(img->w, img->h, align, hp->min_pixels, hp->max_pixels, &w, &h);
        rc = img_letterbox(img, w, h, IMG_RESIZE_BICUBIC, black, &px, err);
        const int32_t nx = w / align, ny = h / align;
        if (rc == LF_OK)
            rc = add_array(out, &px, nx * ny, nx, ny, err);
        break;
    }
    case VIS_PROJ_IDEFICS3:
        rc = prep_idefics3(v, img, out, err);
        break;
    default:
        rc = lf_err_set(err, LF_ERR_INTERNAL, "unknown projector");
    }
    if (rc != LF_OK)
        vis_prep_free(out);
    return rc;
}

void vis_prep_free(vis_prep_t *p)
{
    if (!p)
        return;
    for (int32_t i = 0; i < p->n; i++)
        img_rgb_free(&p->a[i].px);
    free(p->a);
    memset(p, 0, sizeof *p);
}
