/* image_fuzz.c - mutational fuzzer of the image path: decoding (img_decode:
 * stb_image for PNG/JPEG, libwebp), every family's preprocessing
 * (vis_preprocess: resizing, letterboxing, tiling) and base64.
 *
 * Built with AddressSanitizer and UBSan whatever the project's flags
 * (mk/vision.am), with stb_image compiled into this program from Debian's
 * header (the server links Debian's libstb; here the decoder's own code is
 * instrumented too). Seeds: the golden images and WebP files made here with
 * libwebp's encoder. Each case mutates a seed (bit flips, interesting
 * bytes, truncation, block duplication and insertion, header dimension
 * fields, splices of two seeds) and runs it through everything; a crash or
 * a sanitizer report fails the run. Emits TAP (one line per 500 cases).
 *
 *   image_fuzz [--cases N] [--seed S] IMAGE_DIR
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <webp/encode.h>

#include "common/base64.h"
#include "engine/vision/vis_internal.h"
#include "image/image.h"

typedef struct {
    uint8_t *p;
    size_t n;
} buf_t;

static uint64_t rng;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static size_t below(size_t n) { return n ? (size_t)(next() % n) : 0; }

static int add_seed(buf_t **seeds, int n, const uint8_t *p, size_t len)
{
    buf_t *s = realloc(*seeds, (size_t)(n + 1) * sizeof *s);
    if (!s)
        return n;
    *seeds = s;
    s[n].p = malloc(len);
    memcpy(s[n].p, p, len);
    s[n].n = len;
    return n + 1;
}

static int load_seeds(const char *dir, buf_t **seeds)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        const char *x = strrchr(e->d_name, '.');
        if (!x || (strcmp(x, ".png") && strcmp(x, ".jpg")))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        uint8_t *b = malloc(1 << 22);
        size_t len = fread(b, 1, 1 << 22, f);
        fclose(f);
        n = add_seed(seeds, n, b, len);
        free(b);
    }
    if (d)
        closedir(d);
    /* WebP seeds: lossy and lossless, from a small gradient */
    uint8_t px[32 * 24 * 3];
    for (int i = 0; i < 32 * 24 * 3; i++)
        px[i] = (uint8_t)(i * 7);
    uint8_t *out = NULL;
    size_t len = WebPEncodeRGB(px, 32, 24, 32 * 3, 80.0f, &out);
    if (len)
        n = add_seed(seeds, n, out, len);
    WebPFree(out);
    len = WebPEncodeLosslessRGB(px, 32, 24, 32 * 3, &out);
    if (len)
        n = add_seed(seeds, n, out, len);
    WebPFree(out);
    return n;
}

static void mutate(buf_t *b, const buf_t *seeds, int n_seeds)
{
    static const uint8_t interesting[] = {0, 1, 0x7f, 0x80, 0xff, 0xfe, 0x10, 0x40};
    int rounds = 1 + (int)below(4);
    for (int r = 0; r < rounds && b->n; r++) {
        switch (below(8)) {
        case 0: /* bit flips */
            for (int k = 0; k < 1 + (int)below(8); k++)
                b->p[below(b->n)] ^= (uint8_t)(1u << below(8));
            break;
        case 1: /* interesting bytes */
            b->p[below(b->n)] = interesting[below(sizeof interesting)];
            break;
        case 2: /* truncation */
            b->n = below(b->n) + 1;
            break;
        case 3: { /* duplicate a block */
            size_t a = below(b->n), l = below(b->n - a) % 256 + 1;
            uint8_t *nb = realloc(b->p, b->n + l);
            if (!nb)
                break;
            b->p = nb;
            memmove(b->p + a + l, b->p + a, b->n - a);
            b->n += l;
            break;
        }
        case 4: { /* insert random bytes */
            size_t a = below(b->n), l = below(32) + 1;
            uint8_t *nb = realloc(b->p, b->n + l);
            if (!nb)
                break;
            b->p = nb;
            memmove(b->p + a + l, b->p + a, b->n - a);
            for (size_t i = 0; i < l; i++)
                b->p[a + i] = (uint8_t)next();
            b->n += l;
            break;
        }
        case 5: /* header dimension fields: PNG IHDR, or a random 16-bit word early on */
            if (b->n > 24 && b->p[0] == 0x89) {
                size_t at = 16 + below(8);
                b->p[at] = (uint8_t)next();
            } else if (b->n > 4) {
                size_t at = below(b->n < 600 ? b->n - 2 : 598);
                b->p[at] = (uint8_t)next();
                b->p[at + 1] = (uint8_t)next();
            }
            break;
        case 6: { /* splice with another seed */
            const buf_t *o = &seeds[below((size_t)n_seeds)];
            size_t a = below(b->n), c = below(o->n);
            size_t l = o->n - c;
            uint8_t *nb = realloc(b->p, a + l);
            if (!nb)
                break;
            b->p = nb;
            memcpy(b->p + a, o->p + c, l);
            b->n = a + l;
            break;
        }
        default: /* zero a run */
            {
                size_t a = below(b->n), l = below(b->n - a) % 64 + 1;
                memset(b->p + a, 0, l);
            }
        }
    }
}

/* The preprocessing of each family, with the fixtures' settings. */
static void make_models(vis_model_t m[4])
{
    memset(m, 0, 4 * sizeof *m);
    const vis_proj_t proj[4] = {VIS_PROJ_GEMMA3, VIS_PROJ_QWEN25VL, VIS_PROJ_QWEN3VL, VIS_PROJ_IDEFICS3};
    for (int i = 0; i < 4; i++) {
        vis_hparams_t *hp = &m[i].hp;
        hp->proj = proj[i];
        hp->image_size = i == 3 ? 64 : 224;
        hp->patch_size = i == 2 ? 16 : i == 3 ? 8 : 14;
        hp->n_merge = i == 0 ? 4 : 2;
        hp->longest_edge = 192;
        const int32_t area = hp->patch_size * hp->patch_size * 4;
        hp->min_pixels = 8 * area;
        hp->max_pixels = 256 * area; /* fewer tokens than real models: fast under ASan */
    }
}

int main(int argc, char **argv)
{
    long cases = 2000;
    rng = 0x9e3779b97f4a7c15ull;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cases") && i + 1 < argc)
            cases = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            rng = strtoull(argv[++i], NULL, 0) | 1;
        else
            dir = argv[i];
    }
    buf_t *seeds = NULL;
    int n_seeds = dir ? load_seeds(dir, &seeds) : 0;
    if (n_seeds < 3) {
        printf("not ok 1 - seeds: %d images found in %s\n1..1\n", n_seeds, dir ? dir : "(none)");
        return 1;
    }
    vis_model_t models[4];
    make_models(models);
    long decoded = 0, refused = 0, prepped = 0;
    int t = 0;
    for (long c = 0; c < cases; c++) {
        const buf_t *s = &seeds[below((size_t)n_seeds)];
        buf_t b = {malloc(s->n), s->n};
        memcpy(b.p, s->p, s->n);
        mutate(&b, seeds, n_seeds);
        img_rgb_t im;
        lf_err_t err;
        if (img_decode(b.p, b.n, 1 << 20, &im, &err) == LF_OK) {
            decoded++;
            vis_prep_t p;
            if (vis_preprocess(&models[c % 4], &im, &p, &err) == LF_OK) {
                prepped++;
                vis_prep_free(&p);
            }
            img_rgb_free(&im);
        } else {
            refused++;
        }
        /* base64 of the mutated bytes, then the bytes as if they were base64 */
        uint8_t *o = malloc(base64_max_decoded(b.n));
        size_t on;
        base64_decode((const char *)b.p, b.n, o, &on);
        free(o);
        free(b.p);
        if ((c + 1) % 500 == 0 || c + 1 == cases)
            printf("ok %d - %ld cases survived (decoded %ld, refused %ld, preprocessed %ld)\n", ++t, c + 1, decoded,
                   refused, prepped);
        fflush(stdout);
    }
    printf("ok %d - the fuzzer decoded some mutants and refused others\n", ++t);
    if (decoded == 0 || refused == 0)
        printf("# decoded %ld refused %ld: mutations too weak or too strong\n", decoded, refused);
    printf("1..%d\n", t);
    for (int i = 0; i < n_seeds; i++)
        free(seeds[i].p);
    free(seeds);
    return 0;
}
