/* image_decode.c - image files to RGB pixels (see image.h).
 *
 * stb_image comes from Debian's libstb (not a copy of the header): it is
 * the decoder llama.cpp embeds, so JPEG pixels match its bit for bit
 * (libjpeg-turbo differs by up to 3 levels in a few percent of samples),
 * and security fixes arrive with the distribution. WebP, which stb_image
 * cannot read, goes through libwebp. Only buffers whose signature is PNG,
 * JPEG or WebP reach a decoder, and their header dimensions are checked
 * against the limit first, so a hostile header cannot make either library
 * allocate more than the caller allows.
 */
#include "image/image.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <stb_image.h>
#include <webp/decode.h>

img_format_t img_sniff(const uint8_t *p, size_t n)
{
    static const uint8_t png[8] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
    if (n >= 8 && !memcmp(p, png, 8))
        return IMG_FMT_PNG;
    if (n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff)
        return IMG_FMT_JPEG;
    if (n >= 12 && !memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WEBP", 4))
        return IMG_FMT_WEBP;
    if (n >= 6 && (!memcmp(p, "GIF87a", 6) || !memcmp(p, "GIF89a", 6)))
        return IMG_FMT_GIF;
    if (n >= 2 && p[0] == 'B' && p[1] == 'M')
        return IMG_FMT_BMP;
    return IMG_FMT_UNKNOWN;
}

const char *img_format_name(img_format_t f)
{
    switch (f) {
    case IMG_FMT_PNG: return "PNG";
    case IMG_FMT_JPEG: return "JPEG";
    case IMG_FMT_WEBP: return "WebP";
    case IMG_FMT_GIF: return "GIF";
    case IMG_FMT_BMP: return "BMP";
    default: return "unknown";
    }
}

/* Debian 12's stb_image 2.27 trusts the symbol counts of a JPEG Huffman
 * table (DHT): counts summing past 256 overflow its tables (fixed upstream
 * in 2.28; found by tests/tools/image_fuzz under UBSan). stb_image only
 * ever reads a DHT right after the bytes FF C4, so every such place of the
 * file is walked the way stb_image walks a DHT segment (table after table
 * while the segment length lasts, bytes past the end reading as 0), and a
 * table with more than 256 symbols refuses the file before stb_image sees
 * it. (A valid file never has FF C4 outside a DHT marker: entropy-coded
 * data stuffs every FF.) */
static bool jpeg_tables_ok(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (p[i] != 0xff || p[i + 1] != 0xc4)
            continue;
        size_t j = i + 2;
#define AT(k) ((k) < n ? p[k] : 0)
        long L = (long)((AT(j) << 8) | AT(j + 1)) - 2;
        j += 2;
        while (L > 0) {
            long total = 0;
            for (int k = 1; k <= 16; k++)
                total += AT(j + (size_t)k);
            if (total > 256)
                return false;
            j += 17 + (size_t)total;
            L -= 17 + total;
        }
#undef AT
    }
    return true;
}

bool img_probe(const uint8_t *p, size_t n, int32_t *w, int32_t *h, img_format_t *fmt)
{
    img_format_t f = img_sniff(p, n);
    if (fmt)
        *fmt = f;
    int x = 0, y = 0, c = 0;
    if (n > INT_MAX)
        return false;
    if (f == IMG_FMT_PNG || f == IMG_FMT_JPEG) {
        if (!stbi_info_from_memory(p, (int)n, &x, &y, &c))
            return false;
    } else if (f == IMG_FMT_WEBP) {
        if (!WebPGetInfo(p, n, &x, &y))
            return false;
    } else {
        return false;
    }
    if (x <= 0 || y <= 0)
        return false;
    *w = x;
    *h = y;
    return true;
}

lf_code_t img_decode(const uint8_t *p, size_t n, int64_t max_pixels, img_rgb_t *out, lf_err_t *err)
{
    memset(out, 0, sizeof *out);
    img_format_t f = img_sniff(p, n);
    if (f != IMG_FMT_PNG && f != IMG_FMT_JPEG && f != IMG_FMT_WEBP) {
        if (f == IMG_FMT_UNKNOWN)
            return lf_err_set(err, LF_ERR_UNSUPPORTED, "not a PNG, JPEG or WebP image (unknown format)");
        return lf_err_set(err, LF_ERR_UNSUPPORTED, "%s images are not supported (PNG, JPEG and WebP are)",
                          img_format_name(f));
    }
    int32_t w, h;
    if (!img_probe(p, n, &w, &h, NULL))
        return lf_err_set(err, LF_ERR_INVALID, "the %s image is truncated or corrupt (unreadable header)",
                          img_format_name(f));
    if (w > IMG_MAX_SIDE || h > IMG_MAX_SIDE || (max_pixels > 0 && (int64_t)w * h > max_pixels))
        return lf_err_set(err, LF_ERR_INVALID, "the image is %dx%d = %lld pixels, more than the limit of %lld", w,
                          h, (long long)w * h, (long long)(max_pixels > 0 ? max_pixels : (int64_t)IMG_MAX_SIDE *
                                                                                           IMG_MAX_SIDE));
    if (f == IMG_FMT_JPEG && !jpeg_tables_ok(p, n))
        return lf_err_set(err, LF_ERR_INVALID, "the JPEG image is corrupt (a Huffman table is invalid)");
    uint8_t *px = NULL;
    int x = 0, y = 0, c = 0;
    if (f == IMG_FMT_WEBP) {
        uint8_t *d = WebPDecodeRGB(p, n, &x, &y);
        if (d && x == w && y == h && (px = malloc((size_t)w * (size_t)h * 3)))
            memcpy(px, d, (size_t)w * (size_t)h * 3);
        WebPFree(d);
        if (!d)
            return lf_err_set(err, LF_ERR_INVALID, "the WebP image is truncated or corrupt");
    } else {
        uint8_t *d = stbi_load_from_memory(p, (int)n, &x, &y, &c, 3);
        if (!d) {
            const char *why = stbi_failure_reason();
            return lf_err_set(err, LF_ERR_INVALID, "the %s image is truncated or corrupt (%s)", img_format_name(f),
                              why ? why : "decoder error");
        }
        if (x == w && y == h)
            px = (uint8_t *)d; /* stb allocates with malloc (STBI_MALLOC default) */
        else
            stbi_image_free(d);
    }
    if (!px)
        return lf_err_set(err, x == w && y == h ? LF_ERR_NOMEM : LF_ERR_INVALID,
                          x == w && y == h ? "out of memory for a %dx%d image"
                                           : "the %dx%d image decoded to another size", w, h);
    out->w = w;
    out->h = h;
    out->rgb = px;
    return LF_OK;
}

void img_rgb_free(img_rgb_t *im)
{
    if (!im)
        return;
    free(im->rgb);
    im->rgb = NULL;
    im->w = im->h = 0;
}

lf_code_t img_rgb_alloc(img_rgb_t *out, int32_t w, int32_t h, const uint8_t fill[3], lf_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (w <= 0 || h <= 0 || w > 65536 || h > 65536)
        return lf_err_set(err, LF_ERR_INVALID, "image size %dx%d out of range", w, h);
    size_t n = (size_t)w * (size_t)h;
    out->rgb = malloc(n * 3);
    if (!out->rgb)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory for a %dx%d image", w, h);
    out->w = w;
    out->h = h;
    if (fill)
        for (size_t i = 0; i < n; i++)
            memcpy(out->rgb + 3 * i, fill, 3);
    return LF_OK;
}
