/* chat_render_tmpl.c - the model's Jinja chat template as the server's
 * chat renderer (see chat_render.h), ChatML when there is none. */
#include "server/chat_render_tmpl.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat_template.h"
#include "engine/vocab.h"

struct chat_tmpl_renderer {
    chat_template_t *tmpl;   /* NULL: ChatML fallback */
    char *bos, *eos;         /* token texts or NULL */
};

static char *token_text(const vocab_t *v, int32_t id)
{
    return id >= 0 ? strdup(vocab_token_text(v, id)) : NULL;
}

chat_tmpl_renderer_t *chat_tmpl_renderer_create(const model_t *m, char *note, size_t cap)
{
    return chat_tmpl_renderer_create_with(m, NULL, note, cap);
}

chat_tmpl_renderer_t *chat_tmpl_renderer_create_with(const model_t *m, const char *override, char *note, size_t cap)
{
    chat_tmpl_renderer_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    const vocab_t *v = model_vocab(m);
    r->bos = token_text(v, vocab_bos(v));
    r->eos = token_text(v, vocab_eos(v));
    const char *src = override ? override : model_chat_template(m);
    const char *whose = override ? "the --chat-template file" : "the model's chat template";
    lf_err_t err = {0};
    if (!src) {
        snprintf(note, cap, "the model has no chat template: using ChatML");
    } else if (chat_template_compile(src, strlen(src), &r->tmpl, &err) != LF_OK) {
        snprintf(note, cap, "%s does not compile (%s): using ChatML", whose, err.msg);
        r->tmpl = NULL;
    } else {
        snprintf(note, cap, "using %s", whose);
    }
    return r;
}

void chat_tmpl_renderer_free(chat_tmpl_renderer_t *r)
{
    if (!r)
        return;
    chat_template_free(r->tmpl);
    free(r->bos);
    free(r->eos);
    free(r);
}

lf_code_t chat_tmpl_render(void *ctx, const chat_req_t *req, bool add_generation_prompt, char **out, lf_err_t *err)
{
    chat_tmpl_renderer_t *r = ctx;
    if (!r || !r->tmpl || !req->raw)
        return chat_render_chatml(NULL, req, add_generation_prompt, out, err);
    json_object *c = chat_template_context(req->raw, r->bos, r->eos, err);
    if (!c)
        return err ? err->code : LF_ERR_INVALID;
    if (!add_generation_prompt) /* the default (true) may come from chat_template_kwargs */
        json_object_object_add(c, "add_generation_prompt", json_object_new_boolean(false));
    lf_code_t rc = chat_template_render(r->tmpl, c, NULL, out, NULL, NULL, err);
    json_object_put(c);
    return rc;
}
