/* cmd_bench_vision.c - `llm-fcgi bench --mmproj FILE --image FILE`: the
 * time to encode one image with the vision encoder (what llama.cpp's
 * llama-mtmd-cli prints as "image slice encoded in" / "batch encoding
 * done in"): the image is decoded and preprocessed once, then its pixel
 * arrays are encoded WARMUP times unmeasured and REPS times measured (wall
 * clock, the work buffers' allocation included, as a server's encode pays
 * it). */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/gen_media.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/kernels.h"
#include "engine/kernels/tpool.h"
#include "engine/vision/vis_media.h"
#include "engine/vision/vision.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int bench_vision(const char *mmproj, const char *image, int32_t threads, int32_t reps, int32_t warmup, bool json)
{
    lf_err_t err = {0};
    vis_model_t *v = vis_model_load(mmproj, &err);
    if (!v) {
        fprintf(stderr, "llm-fcgi: %s\n", err.msg);
        return 1;
    }
    const int nth = threads > 0 ? threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    tpool_t *pool = NULL;
    vis_media_t media = {0};
    double *ms = calloc((size_t)reps, sizeof *ms);
    size_t n = 0;
    uint8_t *bytes = ms ? gen_media_read(image, &n, &err) : NULL;
    int status = 1;
    if (!bytes || tpool_create(nth, &pool, &err) != LF_OK || vis_media_load(v, bytes, n, 0, &media, &err) != LF_OK)
        goto out;
    const vis_hparams_t *hp = vis_hparams(v);
    int32_t tokens = 0, patches = 0;
    for (int32_t i = 0; i < media.prep.n; i++) {
        tokens += media.prep.a[i].n_tokens;
        patches += media.prep.a[i].px.w / hp->patch_size * (media.prep.a[i].px.h / hp->patch_size);
    }
    for (int32_t r = -warmup; r < reps; r++) {
        const double t0 = now_s();
        for (int32_t i = 0; i < media.prep.n; i++) {
            float *out = NULL;
            int32_t nt = 0;
            if (vis_encode(v, pool, &media.prep.a[i], &out, &nt, &err) != LF_OK)
                goto out;
            free(out);
        }
        if (r >= 0)
            ms[r] = (now_s() - t0) * 1e3;
        if (r >= 0 && !json)
            fprintf(stderr, "encode %d: %.1f ms\n", r + 1, ms[r]);
    }
    double mean, sd, best = ms[0];
    bench_mean_sd(ms, reps, &mean, &sd);
    for (int32_t r = 1; r < reps; r++)
        best = ms[r] < best ? ms[r] : best;
    if (json) {
        json_object *o = json_object_new_object(), *a = json_object_new_array();
        for (int32_t r = 0; r < reps; r++)
            json_object_array_add(a, json_object_new_double(ms[r]));
        json_object_object_add(o, "projector", json_object_new_string(hp->proj_name));
        json_object_object_add(o, "image_width", json_object_new_int(media.w));
        json_object_object_add(o, "image_height", json_object_new_int(media.h));
        json_object_object_add(o, "arrays", json_object_new_int(media.prep.n));
        json_object_object_add(o, "patches", json_object_new_int(patches));
        json_object_object_add(o, "tokens", json_object_new_int(tokens));
        json_object_object_add(o, "threads", json_object_new_int(nth));
        json_object_object_add(o, "isa", json_object_new_string(kern_isa_name(kern_isa())));
        json_object_object_add(o, "gemm", json_object_new_string(gemm_impl_name()));
        json_object_object_add(o, "encode_ms", a);
        json_object_object_add(o, "mean_ms", json_object_new_double(mean));
        json_object_object_add(o, "sd_ms", json_object_new_double(sd));
        json_object_object_add(o, "min_ms", json_object_new_double(best));
        printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_object_put(o);
    } else {
        printf("| projector | image | arrays | patches | tokens | isa | threads | encode ms (mean +- sd, min) |\n"
               "|---|---|---|---|---|---|---|---|\n| %s | %dx%d | %d | %d | %d | %s (%s) | %d | %.1f +- %.1f, %.1f |\n",
               hp->proj_name, media.w, media.h, media.prep.n, patches, tokens, kern_isa_name(kern_isa()),
               gemm_impl_name(), nth, mean, sd, best);
    }
    status = 0;
out:
    if (status)
        fprintf(stderr, "llm-fcgi: %s\n", err.msg);
    free(bytes);
    free(ms);
    vis_media_free(&media);
    tpool_free(pool);
    vis_model_free(v);
    return status;
}
