/* srv_media.c - image inputs of the server (see srv_media.h). */
#include "server/media/srv_media.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base64.h"
#include "engine/vision/vis_media.h"
#include "engine/vision/vis_prompt.h"
#include "server/media/media_fetch.h"

struct srv_media {
    srv_media_cfg_t cfg;
    vis_model_t *v;
    vis_layout_t *layout;
    char *media_dir;    /* realpath of cfg.media_dir, or NULL */
};

void srv_media_cfg_defaults(srv_media_cfg_t *c)
{
    if (c->max_images <= 0)
        c->max_images = 8;
    if (c->max_image_bytes <= 0)
        c->max_image_bytes = 20 << 20;
    if (c->max_image_pixels <= 0)
        c->max_image_pixels = 8192LL * 4096;
    if (c->image_cache_mb < 0)
        c->image_cache_mb = 0;
    if (c->media_timeout_s <= 0)
        c->media_timeout_s = 10;
    if (c->media_max_redirects < 0)
        c->media_max_redirects = 0;
}

srv_media_t *srv_media_open(const srv_media_cfg_t *cfg, const model_t *m, const char *model_path, lf_err_t *err)
{
    srv_media_t *sm = calloc(1, sizeof *sm);
    if (!sm) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    sm->cfg = *cfg;
    srv_media_cfg_defaults(&sm->cfg);
    const model_hparams_t *hp = model_hparams(m);
    const bool mrope = hp->rope_sections[0] + hp->rope_sections[1] + hp->rope_sections[2] > 0;
    if (!(sm->v = vis_model_load(cfg->mmproj_path, err)) ||
        vis_model_check_text(sm->v, cfg->mmproj_path, m, model_path, err) != LF_OK ||
        !(sm->layout = vis_layout_create(sm->v, model_vocab(m), mrope, err))) {
        srv_media_close(sm);
        return NULL;
    }
    if (cfg->media_dir && *cfg->media_dir) {
        char buf[PATH_MAX];
        if (!realpath(cfg->media_dir, buf) || !(sm->media_dir = strdup(buf))) {
            lf_err_set(err, LF_ERR_IO, "--media-dir %s: no such directory", cfg->media_dir);
            srv_media_close(sm);
            return NULL;
        }
    }
    media_fetch_global_init();
    return sm;
}

void srv_media_close(srv_media_t *sm)
{
    if (!sm)
        return;
    vis_layout_free(sm->layout);
    vis_model_free(sm->v);
    free(sm->media_dir);
    free(sm);
}

const vis_model_t *srv_media_vision(const srv_media_t *sm) { return sm->v; }
const srv_media_cfg_t *srv_media_cfg(const srv_media_t *sm) { return &sm->cfg; }

static int decode_b64(const srv_media_t *sm, const char *s, size_t len, const char *param, uint8_t **bytes,
                      size_t *n, req_err_t *e)
{
    if (len / 4 * 3 > (size_t)sm->cfg.max_image_bytes + 3 + len / 4) /* whitespace allowed for */
        return req_err_set(e, 400, param, "image_too_large", "%s: the image is larger than the limit of %lld bytes",
                           param, (long long)sm->cfg.max_image_bytes);
    uint8_t *b = malloc(base64_max_decoded(len));
    if (!b)
        return req_err_set(e, 503, NULL, NULL, "out of memory");
    if (!base64_decode(s, len, b, n)) {
        free(b);
        return req_err_set(e, 400, param, "invalid_image", "%s: the image data is not valid base64", param);
    }
    if ((int64_t)*n > sm->cfg.max_image_bytes) {
        free(b);
        return req_err_set(e, 400, param, "image_too_large", "%s: the image is larger than the limit of %lld bytes",
                           param, (long long)sm->cfg.max_image_bytes);
    }
    *bytes = b;
    return 0;
}

static int from_file(const srv_media_t *sm, const char *url, const char *param, uint8_t **bytes, size_t *n,
                     req_err_t *e)
{
    if (!sm->media_dir)
        return req_err_set(e, 400, param, "image_url_not_allowed",
                           "%s: file:// images are disabled on this server (start it with --media-dir)", param);
    char buf[PATH_MAX];
    const char *path = url + 7;
    if (strncmp(path, "/", 1) || !realpath(path, buf))
        return req_err_set(e, 400, param, "invalid_image", "%s: no such file under the media directory", param);
    const size_t dl = strlen(sm->media_dir);
    if (strncmp(buf, sm->media_dir, dl) || buf[dl] != '/')
        return req_err_set(e, 400, param, "image_url_not_allowed", "%s: the file is outside the media directory",
                           param);
    FILE *f = fopen(buf, "rb");
    if (!f)
        return req_err_set(e, 400, param, "invalid_image", "%s: the file cannot be read", param);
    uint8_t *b = malloc((size_t)sm->cfg.max_image_bytes + 1);
    size_t got = b ? fread(b, 1, (size_t)sm->cfg.max_image_bytes + 1, f) : 0;
    fclose(f);
    if (!b)
        return req_err_set(e, 503, NULL, NULL, "out of memory");
    if ((int64_t)got > sm->cfg.max_image_bytes) {
        free(b);
        return req_err_set(e, 400, param, "image_too_large", "%s: the image is larger than the limit of %lld bytes",
                           param, (long long)sm->cfg.max_image_bytes);
    }
    *bytes = b;
    *n = got;
    return 0;
}

int srv_media_bytes(const srv_media_t *sm, const char *url, const char *param, uint8_t **bytes, size_t *n,
                    req_err_t *e)
{
    *bytes = NULL;
    *n = 0;
    const size_t len = strlen(url);
    if (!strncasecmp(url, "data:", 5)) {
        /* data:[<mediatype>][;base64],<data>: an image type, base64 */
        const char *comma = memchr(url, ',', len);
        if (!comma)
            return req_err_set(e, 400, param, "invalid_image", "%s: a data: URL needs a ',' before its data", param);
        const size_t hl = (size_t)(comma - url);
        if (hl < 7 || strncasecmp(url + hl - 7, ";base64", 7))
            return req_err_set(e, 400, param, "invalid_image", "%s: a data: URL must be base64 encoded "
                               "(data:image/png;base64,...)", param);
        if (strncasecmp(url + 5, "image/", 6))
            return req_err_set(e, 400, param, "invalid_image", "%s: the data: URL is '%.*s', not an image type "
                               "(data:image/...;base64,...)", param, (int)(hl < 60 ? hl : 60), url);
        return decode_b64(sm, comma + 1, len - hl - 1, param, bytes, n, e);
    }
    if (!strncasecmp(url, "http://", 7) || !strncasecmp(url, "https://", 8)) {
        media_fetch_opts_t o = {.allowed_hosts = sm->cfg.media_domains, .allow_private = sm->cfg.media_allow_private,
                                .max_bytes = sm->cfg.max_image_bytes, .timeout_ms = sm->cfg.media_timeout_s * 1000,
                                .max_redirects = sm->cfg.media_max_redirects};
        char why[300];
        bool timeout = false;
        if (media_fetch(&o, url, bytes, n, &timeout, why, sizeof why) < 0)
            return req_err_set(e, 400, param, timeout ? "image_fetch_timeout" : "image_url_not_allowed", "%s: %s",
                               param, why);
        return 0;
    }
    if (!strncasecmp(url, "file://", 7))
        return from_file(sm, url, param, bytes, n, e);
    if (strstr(url, "://"))
        return req_err_set(e, 400, param, "invalid_image", "%s: unsupported URL scheme (data:, http(s):// or "
                           "file:// are accepted)", param);
    /* bare base64 (SageMaker LMI) */
    return decode_b64(sm, url, len, param, bytes, n, e);
}

int srv_media_prompt(const srv_media_t *sm, const vocab_t *voc, const char *text, const char *marker,
                     const char *const *urls, const char *const *params, size_t n_images, bool add_special,
                     sched_media_t **out, req_err_t *e)
{
    (void)voc;
    *out = NULL;
    if (n_images > (size_t)sm->cfg.max_images)
        return req_err_set(e, 400, params[sm->cfg.max_images], "too_many_images",
                           "%s: at most %d images per request", params[sm->cfg.max_images], sm->cfg.max_images);
    vis_media_t *media = calloc(n_images ? n_images : 1, sizeof *media);
    vis_prep_t *preps = calloc(n_images ? n_images : 1, sizeof *preps);
    uint8_t(*hashes)[32] = calloc(n_images ? n_images : 1, 32);
    int rc = media && preps && hashes ? 0 : req_err_set(e, 503, NULL, NULL, "out of memory");
    size_t loaded = 0;
    for (size_t i = 0; rc == 0 && i < n_images; i++) {
        uint8_t *bytes = NULL;
        size_t n = 0;
        if ((rc = srv_media_bytes(sm, urls[i], params[i], &bytes, &n, e)) < 0)
            break;
        lf_err_t le = {0};
        lf_code_t lc = vis_media_load(sm->v, bytes, n, sm->cfg.max_image_pixels, &media[i], &le);
        free(bytes);
        loaded = i + 1;
        if (lc != LF_OK) {
            rc = lc == LF_ERR_NOMEM ? req_err_set(e, 503, NULL, NULL, "out of memory")
                                    : req_err_set(e, 400, params[i],
                                                  lc == LF_ERR_UNSUPPORTED ? "unsupported_image" : "invalid_image",
                                                  "%s: %s", params[i], le.msg);
            break;
        }
        preps[i] = media[i].prep;
        memcpy(hashes[i], media[i].hash, 32);
    }
    vis_prompt_t p = {0};
    if (rc == 0) {
        lf_err_t le = {0};
        if (vis_prompt_from_text(sm->layout, text, strlen(text), marker, preps, (const uint8_t(*)[32])hashes,
                                 (int32_t)n_images, false, add_special, &p, &le) != LF_OK)
            rc = req_err_set(e, le.code == LF_ERR_NOMEM ? 503 : 400, "messages", NULL, "%s", le.msg);
    }
    free(preps);
    free(hashes);
    if (rc == 0) {
        lf_err_t le = {0};
        if (!(*out = sched_media_create(sm->v, &p, media, (int32_t)n_images, &le)))
            return req_err_set(e, 503, NULL, NULL, "out of memory");
        return 0;
    }
    for (size_t i = 0; media && i < loaded; i++)
        vis_media_free(&media[i]);
    free(media);
    vis_prompt_free(&p);
    return -1;
}
