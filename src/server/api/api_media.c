/* api_media.c - the prompts of requests with images (see server.h):
 * where the rendered prompt has each image (the chat template's own
 * marker, or CHAT_MEDIA_MARKER), the images fetched, decoded and laid out
 * (srv_media.h), and the 400s naming the content part. */
#include <stdlib.h>
#include <string.h>

#include "server/chat/chat_render_caps.h"
#include "server/chat/chat_render_tmpl.h"
#include "server/server.h"

/* The text the rendered chat prompt holds where each image goes. */
static const char *image_marker(const srv_t *s)
{
    if (s->render == chat_tmpl_render && s->render_ctx) {
        const chat_caps_t *caps = chat_tmpl_renderer_caps(s->render_ctx);
        if (caps && caps->content_parts && caps->image_marker[0])
            return caps->image_marker;
    }
    return CHAT_MEDIA_MARKER;
}

/* 0, or -1 with e filled (nothing replied). */
static int media_prompt(srv_t *s, req_gen_t *gen, const char *prompt, const char *marker, const char *const *urls,
                        const char *const *params, size_t n, int32_t **ids, size_t *n_ids, req_err_t *e)
{
    if (!s->media)
        return req_err_set(e, 400, params[0], "image_input_unsupported",
                           "%s: image input is not supported by this server (it was started without --mmproj)",
                           params[0]);
    sched_media_t *m = NULL;
    if (srv_media_prompt(s->media, s->vocab, prompt, marker, urls, params, n, true, &m, e) < 0)
        return -1;
    const vis_prompt_t *vp = sched_media_prompt(m);
    *ids = malloc((size_t)(vp->n ? vp->n : 1) * sizeof **ids);
    if (!*ids) {
        sched_media_release(m);
        return req_err_set(e, 503, NULL, NULL, "out of memory");
    }
    memcpy(*ids, vp->tokens, (size_t)vp->n * sizeof **ids);
    *n_ids = (size_t)vp->n;
    gen->media = m;
    return 0;
}

int api_chat_media(srv_t *s, http_req_t *r, chat_req_t *q, const char *prompt, int32_t **ids, size_t *n_ids)
{
    const char **urls = calloc(q->n_images, sizeof *urls), **params = calloc(q->n_images, sizeof *params);
    if (!urls || !params) {
        free(urls);
        free(params);
        http_reply_error(r, 503, "out of memory", NULL, NULL, NULL);
        return -1;
    }
    for (size_t i = 0; i < q->n_images; i++) {
        urls[i] = q->images[i].url;
        params[i] = q->images[i].param;
    }
    req_err_t e = {0};
    int rc = media_prompt(s, &q->gen, prompt, image_marker(s), urls, params, q->n_images, ids, n_ids, &e);
    if (rc < 0)
        srv_reply_req_err(r, &e);
    free(urls);
    free(params);
    return rc;
}

int api_text_media(srv_t *s, req_gen_t *gen, const char *prompt, const char *const *urls, const char *const *params,
                   size_t n_images, int32_t **ids, size_t *n_ids, req_err_t *e)
{
    return media_prompt(s, gen, prompt, CHAT_MEDIA_MARKER, urls, params, n_images, ids, n_ids, e);
}
