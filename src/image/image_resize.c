/* image_resize.c - Pillow's resampler, letterboxing and cropping (see
 * image.h).
 *
 * The resampler follows Pillow's libImaging/Resample.c as llama.cpp's
 * mtmd-image.cpp reproduces it: for each output pixel the filter (widened
 * by the downscale factor) is evaluated in double over the input pixels it
 * covers, normalised, and rounded to 22-bit fixed point (+-0.5 then
 * truncation); a pass accumulates in int32 from 1 << 21 and shifts right
 * by 22 (arithmetic), clamping to 0..255. Horizontal pass first, uint8
 * between the passes; a pass whose size does not change is skipped.
 */
#include "image/image.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PRECISION_BITS = 32 - 8 - 2 };

static double filter_at(img_filter_t f, double x)
{
    if (f == IMG_RESIZE_LANCZOS) {
        if (-3.0 <= x && x < 3.0) {
            const double pi = 3.141592653589793238462643383279502884;
            double a = x == 0.0 ? 1.0 : sin(pi * x) / (pi * x);
            double xb = x / 3.0;
            double b = xb == 0.0 ? 1.0 : sin(pi * xb) / (pi * xb);
            return a * b;
        }
        return 0.0;
    }
    if (x < 0.0)
        x = -x;
    if (f == IMG_RESIZE_BILINEAR)
        return x < 1.0 ? 1.0 - x : 0.0;
    const double a = -0.5;
    if (x < 1.0)
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0)
        return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

typedef struct {
    int ksize;
    int *bounds;     /* [out][2]: first input pixel, count */
    int32_t *kk;     /* [out][ksize] fixed-point weights */
} coeffs_t;

static void coeffs_free(coeffs_t *c)
{
    free(c->bounds);
    free(c->kk);
}

static bool coeffs_make(int in, int out, img_filter_t f, coeffs_t *c)
{
    const double support0 = f == IMG_RESIZE_BILINEAR ? 1.0 : f == IMG_RESIZE_BICUBIC ? 2.0 : 3.0;
    double scale = (double)in / out, filterscale = scale < 1.0 ? 1.0 : scale;
    double support = support0 * filterscale;
    c->ksize = (int)ceil(support) * 2 + 1;
    c->bounds = malloc((size_t)out * 2 * sizeof *c->bounds);
    c->kk = malloc((size_t)out * (size_t)c->ksize * sizeof *c->kk);
    double *w = malloc((size_t)c->ksize * sizeof *w);
    if (!c->bounds || !c->kk || !w) {
        free(w);
        coeffs_free(c);
        return false;
    }
    const double fxp = ldexp(1.0, PRECISION_BITS);
    for (int xx = 0; xx < out; xx++) {
        double center = (xx + 0.5) * scale, ww = 0.0, ss = 1.0 / filterscale;
        int xmin = (int)(center - support + 0.5), xmax;
        if (xmin < 0)
            xmin = 0;
        xmax = (int)(center + support + 0.5);
        if (xmax > in)
            xmax = in;
        xmax -= xmin;
        if (xmax > c->ksize)
            xmax = c->ksize; /* cannot happen: support bounds the span */
        int x;
        for (x = 0; x < xmax; x++) {
            w[x] = filter_at(f, (x + xmin - center + 0.5) * ss);
            ww += w[x];
        }
        for (x = 0; x < xmax; x++)
            if (ww != 0.0)
                w[x] /= ww;
        for (; x < c->ksize; x++)
            w[x] = 0.0;
        c->bounds[2 * xx] = xmin;
        c->bounds[2 * xx + 1] = xmax;
        for (x = 0; x < c->ksize; x++)
            c->kk[(size_t)xx * c->ksize + x] = (int32_t)(w[x] * fxp + (w[x] < 0 ? -0.5 : 0.5));
    }
    free(w);
    return true;
}

static uint8_t clip8(int32_t v)
{
    return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

static void pass_h(const uint8_t *src, int in_w, int h, int out_w, const coeffs_t *c, uint8_t *dst)
{
    for (int y = 0; y < h; y++) {
        const uint8_t *row = src + (size_t)y * in_w * 3;
        uint8_t *drow = dst + (size_t)y * out_w * 3;
        for (int xx = 0; xx < out_w; xx++) {
            const int xmin = c->bounds[2 * xx], xcnt = c->bounds[2 * xx + 1];
            const int32_t *k = c->kk + (size_t)xx * c->ksize;
            const uint8_t *p = row + (size_t)xmin * 3;
            int32_t s0 = 1 << (PRECISION_BITS - 1), s1 = s0, s2 = s0;
            for (int x = 0; x < xcnt; x++, p += 3) {
                s0 += p[0] * k[x];
                s1 += p[1] * k[x];
                s2 += p[2] * k[x];
            }
            drow[3 * xx] = clip8(s0 >> PRECISION_BITS);
            drow[3 * xx + 1] = clip8(s1 >> PRECISION_BITS);
            drow[3 * xx + 2] = clip8(s2 >> PRECISION_BITS);
        }
    }
}

static bool pass_v(const uint8_t *src, int w, int out_h, const coeffs_t *c, uint8_t *dst)
{
    const size_t n = (size_t)w * 3;
    int32_t *acc = malloc(n * sizeof *acc);
    if (!acc)
        return false;
    for (int yy = 0; yy < out_h; yy++) {
        const int ymin = c->bounds[2 * yy], ycnt = c->bounds[2 * yy + 1];
        const int32_t *k = c->kk + (size_t)yy * c->ksize;
        for (size_t i = 0; i < n; i++)
            acc[i] = 1 << (PRECISION_BITS - 1);
        for (int y = 0; y < ycnt; y++) {
            const uint8_t *row = src + (size_t)(ymin + y) * n;
            for (size_t i = 0; i < n; i++)
                acc[i] += row[i] * k[y];
        }
        uint8_t *drow = dst + (size_t)yy * n;
        for (size_t i = 0; i < n; i++)
            drow[i] = clip8(acc[i] >> PRECISION_BITS);
    }
    free(acc);
    return true;
}

lf_code_t img_resize(const img_rgb_t *src, int32_t w, int32_t h, img_filter_t filter, img_rgb_t *dst, lf_err_t *err)
{
    if (w <= 0 || h <= 0 || w > 65536 || h > 65536 || src->w <= 0 || src->h <= 0)
        return lf_err_set(err, LF_ERR_INVALID, "resize target %dx%d out of range", w, h);
    lf_code_t rc = img_rgb_alloc(dst, w, h, NULL, err);
    if (rc != LF_OK)
        return rc;
    if (w == src->w && h == src->h) {
        memcpy(dst->rgb, src->rgb, (size_t)w * (size_t)h * 3);
        return LF_OK;
    }
    coeffs_t ch = {0}, cv = {0};
    uint8_t *tmp = NULL;
    bool ok = true;
    if (w != src->w)
        ok = coeffs_make(src->w, w, filter, &ch);
    if (ok && h != src->h)
        ok = coeffs_make(src->h, h, filter, &cv);
    if (ok && w != src->w && h != src->h) {
        ok = (tmp = malloc((size_t)w * (size_t)src->h * 3)) != NULL;
        if (ok) {
            pass_h(src->rgb, src->w, src->h, w, &ch, tmp);
            ok = pass_v(tmp, w, h, &cv, dst->rgb);
        }
    } else if (ok && w != src->w) {
        pass_h(src->rgb, src->w, src->h, w, &ch, dst->rgb);
    } else if (ok) {
        ok = pass_v(src->rgb, w, h, &cv, dst->rgb);
    }
    free(tmp);
    if (ch.kk)
        coeffs_free(&ch);
    if (cv.kk)
        coeffs_free(&cv);
    if (!ok) {
        img_rgb_free(dst);
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory resizing to %dx%d", w, h);
    }
    return LF_OK;
}

lf_code_t img_crop(const img_rgb_t *src, int32_t x, int32_t y, int32_t w, int32_t h, img_rgb_t *dst, lf_err_t *err)
{
    if (x < 0 || y < 0 || w <= 0 || h <= 0 || x + w > src->w || y + h > src->h)
        return lf_err_set(err, LF_ERR_INVALID, "crop %dx%d at (%d, %d) outside a %dx%d image", w, h, x, y, src->w,
                          src->h);
    lf_code_t rc = img_rgb_alloc(dst, w, h, NULL, err);
    if (rc != LF_OK)
        return rc;
    for (int32_t r = 0; r < h; r++)
        memcpy(dst->rgb + (size_t)r * w * 3, src->rgb + ((size_t)(y + r) * src->w + x) * 3, (size_t)w * 3);
    return LF_OK;
}

lf_code_t img_letterbox(const img_rgb_t *src, int32_t w, int32_t h, img_filter_t filter, const uint8_t pad[3],
                        img_rgb_t *dst, lf_err_t *err)
{
    if (src->w == w && src->h == h)
        return img_resize(src, w, h, filter, dst, err);
    const float sw = (float)w / (float)src->w, sh = (float)h / (float)src->h;
    const float scale = sw < sh ? sw : sh;
    int32_t nw = (int32_t)ceilf((float)src->w * scale), nh = (int32_t)ceilf((float)src->h * scale);
    if (nw > w)
        nw = w;
    if (nh > h)
        nh = h;
    if (nw < 1)
        nw = 1;
    if (nh < 1)
        nh = 1;
    img_rgb_t r;
    lf_code_t rc = img_resize(src, nw, nh, filter, &r, err);
    if (rc == LF_OK)
        rc = img_rgb_alloc(dst, w, h, pad, err);
    if (rc == LF_OK) {
        const int32_t ox = (w - nw) / 2, oy = (h - nh) / 2;
        for (int32_t y = 0; y < nh; y++)
            memcpy(dst->rgb + ((size_t)(y + oy) * w + ox) * 3, r.rgb + (size_t)y * nw * 3, (size_t)nw * 3);
    }
    img_rgb_free(&r);
    return rc;
}
