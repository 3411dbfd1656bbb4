/* chat_render.c - the ChatML fallback renderer (see chat_render.h). */
#include "server/chat/chat_render.h"

#include <stdlib.h>
#include <string.h>

lf_code_t chat_render_chatml(void *ctx, const chat_req_t *req, bool add_generation_prompt, char **out,
                             lf_err_t *err)
{
    (void)ctx;
    const chat_msg_t *msgs = req->msgs;
    size_t n = req->n_msgs;
    size_t cap = 64;
    for (size_t i = 0; i < n; i++)
        cap += strlen(msgs[i].content) + 48;
    char *s = malloc(cap), *w = s;
    if (!s)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *role = msgs[i].role == CHAT_ROLE_DEVELOPER ? "system" : chat_role_name(msgs[i].role);
        w = stpcpy(w, "<|im_start|>");
        w = stpcpy(w, role);
        w = stpcpy(w, "\n");
        w = stpcpy(w, msgs[i].content);
        w = stpcpy(w, "<|im_end|>\n");
    }
    if (add_generation_prompt)
        w = stpcpy(w, "<|im_start|>assistant\n");
    *w = '\0';
    *out = s;
    return LF_OK;
}
