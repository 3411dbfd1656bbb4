/* chat_render_tmpl.c - the model's Jinja chat template as the server's
 * chat renderer (see chat_render.h), ChatML when there is none. */
#include "server/chat/chat_render_tmpl.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/template/chat_template.h"
#include "engine/vocab/vocab.h"
#include "server/request/request_chat.h"

struct chat_tmpl_renderer {
    chat_template_t *tmpl;   /* NULL: ChatML fallback */
    char *src;               /* template source (NULL with ChatML) */
    bool knows_developer;    /* the template mentions the developer role */
    char *bos, *eos;         /* token texts or NULL */
};

static char *token_text(const vocab_t *v, int32_t id)
{
    return id >= 0 ? strdup(vocab_token_text(v, id)) : NULL;
}

chat_tmpl_renderer_t *chat_tmpl_renderer_create_src(const model_t *m, const char *override_src, char *note,
                                                    size_t cap, bool *failed)
{
    *failed = false;
    chat_tmpl_renderer_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    const vocab_t *v = model_vocab(m);
    r->bos = token_text(v, vocab_bos(v));
    r->eos = token_text(v, vocab_eos(v));
    const char *src = override_src ? override_src : model_chat_template(m);
    lf_err_t err = {0};
    if (!src) {
        snprintf(note, cap, "warning: the model has no chat template: using ChatML (see --chat-template)");
    } else if (chat_template_compile(src, strlen(src), &r->tmpl, &err) != LF_OK) {
        r->tmpl = NULL;
        if (override_src) {
            snprintf(note, cap, "the --chat-template file does not compile: %s", err.msg);
            *failed = true;
            chat_tmpl_renderer_free(r);
            return NULL;
        }
        snprintf(note, cap, "warning: the model's chat template does not compile (%s): using ChatML", err.msg);
    } else {
        r->src = strdup(src);
        r->knows_developer = strstr(src, "developer") != NULL;
        snprintf(note, cap, override_src ? "using the --chat-template file" : "using the model's chat template");
    }
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

void chat_tmpl_renderer_free(chat_tmpl_renderer_t *r)
{
    if (!r)
        return;
    chat_template_free(r->tmpl);
    free(r->src);
    free(r->bos);
    free(r->eos);
    free(r);
}

/* The request as the template sees it: normalized messages (developer ->
 * system unless the template knows it), tools, documents, kwargs. */
static json_object *template_view(const chat_tmpl_renderer_t *r, const chat_req_t *req, bool agp)
{
    json_object *view = json_object_new_object(), *v;
    if (!view)
        return NULL;
    json_object *msgs = req->ext && req->ext->tmpl_messages ? req->ext->tmpl_messages : NULL;
    if (msgs) {
        json_object *copy = json_object_new_array();
        for (size_t i = 0; copy && i < json_object_array_length(msgs); i++) {
            json_object *m = json_object_array_get_idx(msgs, i), *role = NULL;
            if (!r->knows_developer && json_object_object_get_ex(m, "role", &role) &&
                !strcmp(json_object_get_string(role), "developer")) {
                json_object *mc = json_object_new_object();
                json_object_object_foreach(m, k, val) {
                    json_object_object_add(mc, k, !strcmp(k, "role") ? json_object_new_string("system")
                                                                      : json_object_get(val));
                }
                json_object_array_add(copy, mc);
            } else {
                json_object_array_add(copy, json_object_get(m));
            }
        }
        json_object_object_add(view, "messages", copy);
    } else if (json_object_object_get_ex(req->raw, "messages", &v)) {
        json_object_object_add(view, "messages", json_object_get(v));
    }
    const char *keep[] = {"tools", "documents", "chat_template_kwargs"};
    for (size_t i = 0; i < 3; i++)
        if (json_object_object_get_ex(req->raw, keep[i], &v) && v)
            json_object_object_add(view, keep[i], json_object_get(v));
    json_object_object_add(view, "add_generation_prompt", json_object_new_boolean(agp));
    return view;
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

lf_code_t chat_tmpl_render(void *ctx, const chat_req_t *req, bool add_generation_prompt, char **out, lf_err_t *err)
{
    chat_tmpl_renderer_t *r = ctx;
    const chat_ext_t *x = req->ext;
    bool agp = add_generation_prompt && (!x || x->add_generation_prompt);
    lf_code_t rc;
    if (!r || !r->tmpl || !req->raw) {
        rc = chat_render_chatml(NULL, req, agp, out, err);
    } else {
        json_object *view = template_view(r, req, agp);
        json_object *c = view ? chat_template_context(view, r->bos, r->eos, err) : NULL;
        json_object_put(view);
        if (!c)
            return err && err->code != LF_OK ? err->code : LF_ERR_NOMEM;
        rc = chat_template_render(r->tmpl, c, NULL, out, NULL, NULL, err);
        json_object_put(c);
    }
    if (rc == LF_OK && x && x->continue_final_message && (rc = cut_after_final(req, *out, err)) != LF_OK) {
        free(*out);
        *out = NULL;
    }
    return rc;
}
