/* chat_render_tmpl.c - the model's Jinja chat template as the server's
 * chat renderer (see chat_render.h), ChatML when there is none. */
#include "server/chat/chat_render_tmpl.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/template/chat_template.h"
#include "engine/vocab/vocab.h"
#include "server/chat/chat_render_caps.h"
#include "server/request/request_chat.h"

struct chat_tmpl_renderer {
    chat_template_t *tmpl;   /* NULL: ChatML fallback */
    char *src;               /* template source (NULL with ChatML) */
    char *detect;            /* source + the probe's render, for parser detection */
    chat_caps_t caps;        /* probed at creation */
    char *bos, *eos;         /* token texts or NULL */
    time_t now;              /* strftime_now clock (0: real time) */
};

static char *token_text(const vocab_t *v, int32_t id)
{
    return id >= 0 ? strdup(vocab_token_text(v, id)) : NULL;
}

/* Compiles src (NULL: ChatML) and probes it. An override that does not
 * compile fails; the model's own falls back to ChatML with a warning. */
static chat_tmpl_renderer_t *chat_tmpl_renderer_make(const char *src, bool override, const char *bos,
                                                     const char *eos, char *note, size_t cap, bool *failed)
{
    *failed = false;
    chat_tmpl_renderer_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    if ((bos && !(r->bos = strdup(bos))) || (eos && !(r->eos = strdup(eos)))) {
        chat_tmpl_renderer_free(r);
        return NULL;
    }
    lf_err_t err = {0};
    if (!src) {
        snprintf(note, cap, "warning: the model has no chat template: using ChatML (see --chat-template)");
    } else if (chat_template_compile(src, strlen(src), &r->tmpl, &err) != LF_OK) {
        r->tmpl = NULL;
        if (override) {
            snprintf(note, cap, "the --chat-template file does not compile: %s", err.msg);
            *failed = true;
            chat_tmpl_renderer_free(r);
            return NULL;
        }
        snprintf(note, cap, "warning: the model's chat template does not compile (%s): using ChatML", err.msg);
    } else {
        if (!(r->src = strdup(src))) {
            chat_tmpl_renderer_free(r);
            return NULL;
        }
        chat_caps_probe(r->tmpl, r->src, r->bos, r->eos, &r->caps);
        char *probe = chat_caps_probe_text(r->tmpl, r->bos, r->eos);
        size_t sl = strlen(src), pl = probe ? strlen(probe) : 0;
        if ((r->detect = malloc(sl + pl + 2))) {
            memcpy(r->detect, src, sl);
            r->detect[sl] = '\n';
            memcpy(r->detect + sl + 1, probe ? probe : "", pl);
            r->detect[sl + 1 + pl] = '\0';
        }
        free(probe);
        if (!r->detect) {
            chat_tmpl_renderer_free(r);
            return NULL;
        }
        snprintf(note, cap, override ? "using the --chat-template file" : "using the model's chat template");
    }
    return r;
}

chat_tmpl_renderer_t *chat_tmpl_renderer_new(const char *src, const char *bos, const char *eos, char *note, size_t cap,
                                             bool *failed)
{
    return chat_tmpl_renderer_make(src, false, bos, eos, note, cap, failed);
}

chat_tmpl_renderer_t *chat_tmpl_renderer_create_src(const model_t *m, const char *override_src, char *note,
                                                    size_t cap, bool *failed)
{
    const vocab_t *v = model_vocab(m);
    char *bos = token_text(v, vocab_bos(v)), *eos = token_text(v, vocab_eos(v));
    chat_tmpl_renderer_t *r = chat_tmpl_renderer_make(override_src ? override_src : model_chat_template(m),
                                                      override_src != NULL, bos, eos, note, cap, failed);
    free(bos);
    free(eos);
    return r;
}

chat_tmpl_renderer_t *chat_tmpl_renderer_create(const model_t *m, char *note, size_t cap)
{
    bool failed;
    return chat_tmpl_renderer_create_src(m, NULL, note, cap, &failed);
}

const char *chat_tmpl_renderer_source(const chat_tmpl_renderer_t *r)
{
    return r ? r->src : NULL;
}

const char *chat_tmpl_renderer_detect_text(const chat_tmpl_renderer_t *r)
{
    return r ? r->detect : NULL;
}

void chat_tmpl_renderer_set_now(chat_tmpl_renderer_t *r, time_t now)
{
    if (r)
        r->now = now;
}

const struct chat_caps *chat_tmpl_renderer_caps(const chat_tmpl_renderer_t *r)
{
    return r && r->tmpl ? &r->caps : NULL;
}

void chat_tmpl_renderer_free(chat_tmpl_renderer_t *r)
{
    if (!r)
        return;
    chat_template_free(r->tmpl);
    free(r->src);
    free(r->detect);
    free(r->bos);
    free(r->eos);
    free(r);
}

/* continue_final_message: cut the prompt right after the last message's
 * content, as transformers' apply_chat_template does. */
static lf_code_t cut_after_final(const chat_req_t *req, char *prompt, lf_err_t *err)
{
    const char *fm = req->n_msgs ? req->msgs[req->n_msgs - 1].content : "";
    const char *b = fm, *e = fm + strlen(fm);
    while (b < e && strchr(" \t\r\n", *b))
        b++;
    while (e > b && strchr(" \t\r\n", e[-1]))
        e--;
    size_t sl = (size_t)(e - b), ll = strlen(b);
    if (!sl)
        return LF_OK;
    char *needle = strndup(b, sl), *loc = NULL;
    if (!needle)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    for (char *p = prompt, *q; (q = strstr(p, needle)); p = q + 1)
        loc = q; /* rindex */
    free(needle);
    if (!loc)
        return lf_err_set(err, LF_ERR_INVALID, "continue_final_message is set but the final message does not "
                                               "appear in the chat after applying the chat template");
    size_t keep = strncmp(loc, b, ll) == 0 ? ll : sl;
    loc[keep] = '\0';
    return LF_OK;
}

static lf_code_t render_view(const chat_tmpl_renderer_t *r, const chat_caps_t *caps, const chat_req_t *req, bool agp,
                             char **out, lf_err_t *err)
{
    json_object *view = chat_caps_view(caps, req, agp, r->now);
    json_object *c = view ? chat_template_context(view, r->bos, r->eos, err) : NULL;
    json_object_put(view);
    if (!c)
        return err && err->code != LF_OK ? err->code : lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    chat_render_opts_t opts = {.now = r->now, .extensions = true};
    lf_code_t rc = chat_template_render(r->tmpl, c, &opts, out, NULL, NULL, err);
    json_object_put(c);
    return rc;
}

/* Whether the request has earlier tool calls (their form may be retried). */
static bool has_tool_calls(const chat_req_t *req)
{
    json_object *msgs, *calls;
    if (!req->raw || !json_object_object_get_ex(req->raw, "messages", &msgs))
        return false;
    for (size_t i = 0; i < json_object_array_length(msgs); i++)
        if (json_object_object_get_ex(json_object_array_get_idx(msgs, i), "tool_calls", &calls) && calls)
            return true;
    return false;
}

lf_code_t chat_tmpl_render(void *ctx, const chat_req_t *req, bool add_generation_prompt, char **out, lf_err_t *err)
{
    chat_tmpl_renderer_t *r = ctx;
    const chat_ext_t *x = req->ext;
    bool agp = add_generation_prompt && (!x || x->add_generation_prompt);
    lf_code_t rc;
    if (!r || !r->tmpl || !req->raw) {
        rc = chat_render_chatml(NULL, req, agp, out, err);
    } else {
        rc = render_view(r, &r->caps, req, agp, out, err);
        /* The probe could not see every case (a template that needs
         * variables it did not have, ...): when earlier tool calls are in
         * the request, the other argument and content forms are tried
         * before failing; the error reported is the probed form's. */
        for (int k = 1; rc == LF_ERR_INVALID && k < 4 && has_tool_calls(req); k++) {
            chat_caps_t alt = r->caps;
            alt.args_as_string ^= (k & 1) != 0;
            alt.null_content ^= (k & 2) != 0;
            lf_err_t e2 = {0};
            if (render_view(r, &alt, req, agp, out, &e2) == LF_OK)
                rc = LF_OK;
        }
    }
    if (rc == LF_OK && x && x->continue_final_message && (rc = cut_after_final(req, *out, err)) != LF_OK) {
        free(*out);
        *out = NULL;
    }
    return rc;
}
