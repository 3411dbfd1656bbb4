/* gen_media.c - images on the command line (see gen_media.h). */
#include "cli/gen_media.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/vision/vis_media.h"
#include "engine/vision/vis_prompt.h"

struct gen_media {
    vis_model_t *v;
    vis_layout_t *layout;
    vis_media_t *media;
    int n_media;
    vis_prompt_t prompt;
    int32_t *text;     /* text ids of the prompt */
    int32_t n_text;
    float **embd;      /* per span */
};

uint8_t *gen_media_read(const char *path, size_t *n, lf_err_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        lf_err_set(err, LF_ERR_IO, "cannot open image %s", path);
        return NULL;
    }
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 1 << 16;
            uint8_t *nb = cap <= (1u << 30) ? realloc(buf, cap) : NULL;
            if (!nb) {
                free(buf);
                fclose(f);
                lf_err_set(err, LF_ERR_NOMEM, "image %s is too large", path);
                return NULL;
            }
            buf = nb;
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (r == 0)
            break;
    }
    fclose(f);
    *n = len;
    return buf;
}

gen_media_t *gen_media_open(const char *mmproj, const char *const *images, int n_images, const model_t *m,
                            const char *model_path, const char *prompt, bool add_special, lf_err_t *err)
{
    gen_media_t *g = calloc(1, sizeof *g);
    if (!g) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    const model_hparams_t *hp = model_hparams(m);
    const bool mrope = hp->rope_sections[0] + hp->rope_sections[1] + hp->rope_sections[2] > 0;
    if (!(g->v = vis_model_load(mmproj, err)) || vis_model_check_text(g->v, mmproj, m, model_path, err) != LF_OK ||
        !(g->layout = vis_layout_create(g->v, model_vocab(m), mrope, err)))
        goto fail;
    g->media = calloc((size_t)(n_images ? n_images : 1), sizeof *g->media);
    if (!g->media) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < n_images; i++) {
        size_t n = 0;
        uint8_t *bytes = gen_media_read(images[i], &n, err);
        if (!bytes)
            goto fail;
        lf_code_t rc = vis_media_load(g->v, bytes, n, 0, &g->media[i], err);
        free(bytes);
        g->n_media = i + 1;
        if (rc != LF_OK) {
            lf_err_prefix(err, "image %s", images[i]);
            goto fail;
        }
    }
    vis_prep_t *preps = calloc((size_t)(n_images ? n_images : 1), sizeof *preps);
    uint8_t(*hashes)[32] = calloc((size_t)(n_images ? n_images : 1), 32);
    lf_code_t rc = preps && hashes ? LF_OK : lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    for (int i = 0; rc == LF_OK && i < n_images; i++) {
        preps[i] = g->media[i].prep;
        memcpy(hashes[i], g->media[i].hash, 32);
    }
    if (rc == LF_OK)
        rc = vis_prompt_from_text(g->layout, prompt, strlen(prompt), "<__media__>", preps,
                                  (const uint8_t(*)[32])hashes, n_images, true, add_special, &g->prompt, err);
    free(preps);
    free(hashes);
    if (rc != LF_OK)
        goto fail;
    g->text = malloc((size_t)(g->prompt.n ? g->prompt.n : 1) * sizeof *g->text);
    g->embd = calloc((size_t)(g->prompt.n_spans ? g->prompt.n_spans : 1), sizeof *g->embd);
    if (!g->text || !g->embd) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int32_t i = 0; i < g->prompt.n; i++)
        if (!vis_prompt_is_image(g->prompt.tokens[i]))
            g->text[g->n_text++] = g->prompt.tokens[i];
    return g;
fail:
    gen_media_free(g);
    return NULL;
}

void gen_media_free(gen_media_t *g)
{
    if (!g)
        return;
    for (int32_t s = 0; g->embd && s < g->prompt.n_spans; s++)
        free(g->embd[s]);
    free(g->embd);
    free(g->text);
    vis_prompt_free(&g->prompt);
    for (int i = 0; i < g->n_media; i++)
        vis_media_free(&g->media[i]);
    free(g->media);
    vis_layout_free(g->layout);
    vis_model_free(g->v);
    free(g);
}

int32_t gen_media_n_cells(const gen_media_t *g) { return g->prompt.n; }

const int32_t *gen_media_text_tokens(const gen_media_t *g, int32_t *n)
{
    *n = g->n_text;
    return g->text;
}

lf_code_t gen_media_prefill(gen_media_t *g, fwd_t *f, lf_err_t *err)
{
    for (int32_t s = 0; s < g->prompt.n_spans; s++) {
        const vis_span_t *sp = &g->prompt.spans[s];
        int32_t n = 0;
        lf_code_t rc = vis_encode(g->v, fwd_pool(f), &g->media[sp->image].prep.a[sp->array], &g->embd[s], &n, err);
        if (rc != LF_OK)
            return rc;
        if (n != sp->n)
            return lf_err_set(err, LF_ERR_INTERNAL, "image rows: %d encoded, %d laid out", n, sp->n);
    }
    return vis_prompt_eval(f, 0, &g->prompt, (const float *const *)g->embd, vis_hparams(g->v)->n_out, err);
}

void gen_media_next_row(const gen_media_t *g, fwd_mm_t *mm)
{
    memset(mm, 0, sizeof *mm);
    mm->dpos = vis_prompt_dpos_end(&g->prompt);
}

json_object *gen_media_prompt_json(const gen_media_t *g)
{
    json_object *a = json_object_new_array();
    for (int32_t i = 0; i < g->prompt.n;) {
        const int32_t s = vis_prompt_span_at(&g->prompt, i);
        if (s < 0) {
            json_object_array_add(a, json_object_new_int(g->prompt.tokens[i++]));
            continue;
        }
        const vis_span_t *sp = &g->prompt.spans[s];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "image", json_object_new_int(sp->image));
        json_object_object_add(o, "array", json_object_new_int(sp->array));
        json_object_object_add(o, "n_tokens", json_object_new_int(sp->n));
        json_object_object_add(o, "nx", json_object_new_int(sp->nx));
        json_object_object_add(o, "ny", json_object_new_int(sp->ny));
        json_object_object_add(o, "n_pos", json_object_new_int(sp->n_pos));
        json_object_array_add(a, o);
        i += sp->n;
    }
    return a;
}
