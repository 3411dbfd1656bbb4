/* image.h - decoding image files into 8-bit RGB pixels, and the pixel
 * operations vision preprocessing is made of.
 *
 * Decoding: PNG and JPEG through stb_image (Debian's libstb, the decoder
 * llama.cpp uses, so the pixels are bit-identical to its: alpha dropped,
 * not composited; palette expanded; gray replicated; 16-bit samples to
 * their high byte), WebP through libwebp (alpha dropped the same way).
 * Other formats are refused by their signature before any decoder sees
 * them, and the dimensions are read from the header and checked against
 * the caller's pixel limit before any pixel memory is allocated.
 *
 * Resizing: Pillow's separable resampler (bilinear, bicubic with a = -0.5,
 * Lanczos-3; 22-bit fixed-point weights, horizontal pass then vertical,
 * uint8 between the passes), which is what llama.cpp's preprocessing
 * reproduces; a pass whose size does not change is skipped.
 *
 * Ownership: an img_rgb_t owns its pixels (img_rgb_free, accepts a zeroed
 * struct). All functions are thread-safe and never abort on input.
 */
#ifndef LF_IMAGE_H
#define LF_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

typedef struct {
    int32_t w, h;
    uint8_t *rgb; /* [h][w][3], row-major */
} img_rgb_t;

typedef enum {
    IMG_FMT_UNKNOWN = 0,
    IMG_FMT_PNG,
    IMG_FMT_JPEG,
    IMG_FMT_WEBP,
    IMG_FMT_GIF,  /* recognised to name it in the error, not decoded */
    IMG_FMT_BMP,  /* idem */
} img_format_t;

/* The format of p[0..n) by its signature (IMG_FMT_UNKNOWN if none). */
img_format_t img_sniff(const uint8_t *p, size_t n);
/* "PNG", "JPEG", "WebP", "GIF", "BMP" or "unknown". */
const char *img_format_name(img_format_t f);

/* Largest side accepted whatever the pixel limit (stb_image's own bound). */
#define IMG_MAX_SIDE 16384

/* Decodes p[0..n) into *out (3 channels). Fails with LF_ERR_UNSUPPORTED for
 * a format other than PNG, JPEG or WebP, LF_ERR_INVALID for a file that is
 * truncated or corrupt or larger than max_pixels (w * h; <= 0: no limit
 * beyond IMG_MAX_SIDE per side), LF_ERR_NOMEM. The message says which. */
lf_code_t img_decode(const uint8_t *p, size_t n, int64_t max_pixels, img_rgb_t *out, lf_err_t *err);

/* The dimensions in the header of p[0..n) without decoding (false if not a
 * supported image or the header is unreadable). */
bool img_probe(const uint8_t *p, size_t n, int32_t *w, int32_t *h, img_format_t *fmt);

void img_rgb_free(img_rgb_t *im);
/* A w x h image filled with (r, g, b); LF_ERR_NOMEM or LF_ERR_INVALID (bad size). */
lf_code_t img_rgb_alloc(img_rgb_t *out, int32_t w, int32_t h, const uint8_t fill[3], lf_err_t *err);

typedef enum { IMG_RESIZE_BILINEAR, IMG_RESIZE_BICUBIC, IMG_RESIZE_LANCZOS } img_filter_t;

/* dst = src resized to w x h with Pillow's resampler (a copy when the size
 * is the same). LF_ERR_INVALID for sizes outside 1..65536, LF_ERR_NOMEM. */
lf_code_t img_resize(const img_rgb_t *src, int32_t w, int32_t h, img_filter_t filter, img_rgb_t *dst,
                     lf_err_t *err);

/* Letterboxing (llama.cpp's PAD_CEIL): scale = min(w / sw, h / sh) in
 * float, the image resized to (min(ceil(sw * scale), w), min(ceil(sh *
 * scale), h)) and pasted centred ((w - nw) / 2, (h - nh) / 2) on a w x h
 * canvas of colour pad. Same size as src: a copy. */
lf_code_t img_letterbox(const img_rgb_t *src, int32_t w, int32_t h, img_filter_t filter, const uint8_t pad[3],
                        img_rgb_t *dst, lf_err_t *err);

/* dst = the w x h rectangle of src at (x, y) (must lie inside src). */
lf_code_t img_crop(const img_rgb_t *src, int32_t x, int32_t y, int32_t w, int32_t h, img_rgb_t *dst, lf_err_t *err);

#endif
