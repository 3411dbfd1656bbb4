/* test_image.c - image decoding, resizing and base64, table-driven:
 * signatures, WebP round trips through libwebp (lossless: exact pixels,
 * alpha dropped), refusals (formats, truncation, the pixel limit), the
 * letterbox geometry of llama.cpp, resize identities, and base64 forms.
 * (Bit-exactness against llama.cpp's decoder and resampler is
 * test_vision_embd's.) */
#include <stdlib.h>
#include <string.h>

#include <webp/encode.h>

#include "common/base64.h"
#include "image/image.h"
#include "tap.h"

static void test_sniff(void)
{
    static const struct {
        const char *bytes;
        size_t n;
        img_format_t f;
    } cases[] = {
        {"\x89PNG\r\n\x1a\n....", 12, IMG_FMT_PNG},
        {"\xff\xd8\xff\xe0", 4, IMG_FMT_JPEG},
        {"RIFF\0\0\0\0WEBPVP8 ", 16, IMG_FMT_WEBP},
        {"RIFF\0\0\0\0WAVEfmt ", 16, IMG_FMT_UNKNOWN},
        {"GIF89a..", 8, IMG_FMT_GIF},
        {"BM......", 8, IMG_FMT_BMP},
        {"\x89PN", 3, IMG_FMT_UNKNOWN},
        {"", 0, IMG_FMT_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        tap_ok(img_sniff((const uint8_t *)cases[i].bytes, cases[i].n) == cases[i].f, "sniff case %zu is %s", i,
               img_format_name(cases[i].f));
}

static void test_webp(void)
{
    enum { W = 37, H = 21 };
    uint8_t rgba[W * H * 4], rgb[W * H * 3];
    for (int i = 0; i < W * H; i++) {
        rgb[3 * i] = rgba[4 * i] = (uint8_t)(i * 3);
        rgb[3 * i + 1] = rgba[4 * i + 1] = (uint8_t)(i * 5 + 7);
        rgb[3 * i + 2] = rgba[4 * i + 2] = (uint8_t)(255 - i);
        rgba[4 * i + 3] = (uint8_t)(i % 2 ? 255 : 128); /* alpha, dropped */
    }
    uint8_t *out = NULL;
    size_t n = WebPEncodeLosslessRGBA(rgba, W, H, W * 4, &out);
    img_rgb_t im;
    lf_err_t err;
    if (tap_ok(n > 0 && img_decode(out, n, 0, &im, &err) == LF_OK, "lossless WebP with alpha decodes")) {
        tap_ok(im.w == W && im.h == H && !memcmp(im.rgb, rgb, sizeof rgb), "WebP pixels exact, alpha dropped");
        img_rgb_free(&im);
    }
    int32_t w, h;
    img_format_t f;
    tap_ok(img_probe(out, n, &w, &h, &f) && w == W && h == H && f == IMG_FMT_WEBP, "WebP probed");
    tap_ok(img_decode(out, n, W * H - 1, &im, &err) == LF_ERR_INVALID && strstr(err.msg, "more than the limit"),
           "pixel limit refuses before decoding (%s)", err.msg);
    tap_ok(img_decode(out, n / 2, 0, &im, &err) == LF_ERR_INVALID, "half a WebP is refused (%s)", err.msg);
    WebPFree(out);
    n = WebPEncodeRGB(rgb, W, H, W * 3, 75.0f, &out);
    tap_ok(n > 0 && img_decode(out, n, 0, &im, &err) == LF_OK && im.w == W && im.h == H, "lossy WebP decodes");
    img_rgb_free(&im);
    WebPFree(out);
}

static void test_refusals(void)
{
    img_rgb_t im;
    lf_err_t err;
    const uint8_t gif[] = "GIF89a\x01\x00\x01\x00\x00\x00\x00;";
    tap_ok(img_decode(gif, sizeof gif, 0, &im, &err) == LF_ERR_UNSUPPORTED && strstr(err.msg, "GIF"),
           "GIF refused as unsupported (%s)", err.msg);
    const uint8_t junk[] = "not an image";
    tap_ok(img_decode(junk, sizeof junk, 0, &im, &err) == LF_ERR_UNSUPPORTED && strstr(err.msg, "unknown"),
           "unknown bytes refused (%s)", err.msg);
    const uint8_t png_head[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    tap_ok(img_decode(png_head, sizeof png_head - 1, 0, &im, &err) == LF_ERR_INVALID, "a truncated PNG header (%s)",
           err.msg);
    const uint8_t jpeg_head[] = "\xff\xd8\xff\xe0\0\x10JFIF";
    tap_ok(img_decode(jpeg_head, sizeof jpeg_head - 1, 0, &im, &err) == LF_ERR_INVALID, "a truncated JPEG (%s)",
           err.msg);
}

static void test_resize(void)
{
    lf_err_t err;
    img_rgb_t src, dst;
    const uint8_t grey[3] = {90, 90, 90}, black[3] = {0, 0, 0};
    img_rgb_alloc(&src, 320, 96, grey, &err);
    /* llama.cpp's PAD_CEIL: 320x96 into 224x224 -> 224x68 at y = 78 */
    if (tap_ok(img_letterbox(&src, 224, 224, IMG_RESIZE_BILINEAR, black, &dst, &err) == LF_OK, "letterbox runs")) {
        const uint8_t *row77 = dst.rgb + (size_t)77 * 224 * 3, *row78 = dst.rgb + (size_t)78 * 224 * 3;
        const uint8_t *row145 = dst.rgb + (size_t)145 * 224 * 3, *row146 = dst.rgb + (size_t)146 * 224 * 3;
        tap_ok(row77[0] == 0 && row78[0] == 90 && row145[0] == 90 && row146[0] == 0,
               "320x96 letterboxed into 224x224: rows 78..145 hold the image");
        img_rgb_free(&dst);
    }
    /* a flat image stays flat through every filter, up and down */
    const img_filter_t fs[3] = {IMG_RESIZE_BILINEAR, IMG_RESIZE_BICUBIC, IMG_RESIZE_LANCZOS};
    for (int i = 0; i < 3; i++) {
        bool flat = img_resize(&src, 97, 413, fs[i], &dst, &err) == LF_OK;
        for (int32_t k = 0; flat && k < dst.w * dst.h * 3; k++)
            flat = dst.rgb[k] == 90;
        tap_ok(flat, "filter %d keeps a flat image flat", i);
        img_rgb_free(&dst);
    }
    tap_ok(img_resize(&src, 320, 96, IMG_RESIZE_LANCZOS, &dst, &err) == LF_OK && !memcmp(dst.rgb, src.rgb, 320 * 96 * 3),
           "same size: a copy");
    img_rgb_free(&dst);
    tap_ok(img_resize(&src, 0, 5, IMG_RESIZE_BICUBIC, &dst, &err) == LF_ERR_INVALID, "zero width refused");
    tap_ok(img_crop(&src, 300, 0, 30, 10, &dst, &err) == LF_ERR_INVALID, "crop outside refused");
    img_rgb_free(&src);
}

static void test_base64(void)
{
    static const struct {
        const char *in;
        const char *out; /* NULL: malformed */
    } cases[] = {
        {"", ""}, {"QQ==", "A"}, {"QUI=", "AB"}, {"QUJD", "ABC"}, {"QQ", "A"}, {"QUI", "AB"},
        {"QU\nJD\r\n", "ABC"}, {"Pz8_", "??\x3f"}, {"Pz8/", "??\x3f"}, {"Pz8-", "??\x3e"},
        {"Q", NULL}, {"QQ=", NULL}, {"QQ===", NULL}, {"Q=Q=", NULL}, {"QU*D", NULL}, {"QUJD=", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t out[64];
        size_t n = 0;
        bool ok = base64_decode(cases[i].in, strlen(cases[i].in), out, &n);
        if (cases[i].out)
            tap_ok(ok && n == strlen(cases[i].out) && !memcmp(out, cases[i].out, n), "base64 '%s' decodes",
                   cases[i].in);
        else
            tap_ok(!ok, "base64 '%s' is malformed", cases[i].in);
    }
}

int main(void)
{
    test_sniff();
    test_webp();
    test_refusals();
    test_resize();
    test_base64();
    return tap_done();
}
