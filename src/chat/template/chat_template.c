/* chat_template.c - public API of the chat-template renderer: compiled
 * template lifecycle, json-c -> value conversion and render limits. */
#include "chat/template/chat_template.h"
#include "chat/template/jinja.h"

#include <stdlib.h>
#include <string.h>

const char chat_template_chatml[] =
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

struct chat_template {
    jarena_t *arena; /* owns the tokens and the AST */
    const jnode_t *body;
};

lf_code_t chat_template_compile(const char *src, size_t len, chat_template_t **out, lf_err_t *err)
{
    *out = NULL;
    chat_template_t *t = calloc(1, sizeof *t);
    if (!t || !(t->arena = jarena_new(0))) {
        free(t);
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory compiling chat template");
    }
    char msg[512];
    jtoks_t toks = {0};
    if (!jinja_lex(t->arena, src ? src : "", src ? len : 0, &toks, msg, sizeof msg) ||
        !(t->body = jinja_parse(t->arena, &toks, msg, sizeof msg))) {
        chat_template_free(t);
        return lf_err_set(err, LF_ERR_INVALID, "%s", msg);
    }
    *out = t;
    return LF_OK;
}

void chat_template_free(chat_template_t *t)
{
    if (!t)
        return;
    jarena_free(t->arena);
    free(t);
}

/* Whether the subtree at n names the variable `name` (depth-bounded: the
 * parser bounds nesting too). */
static bool node_reads(const jnode_t *n, const char *name, size_t len, int depth)
{
    if (!n || depth > 1000)
        return false;
    if (n->kind == JN_NAME && n->slen == len && !memcmp(n->s, name, len))
        return true;
    if (node_reads(n->a, name, len, depth + 1) || node_reads(n->b, name, len, depth + 1) ||
        node_reads(n->c, name, len, depth + 1))
        return true;
    for (size_t i = 0; i < n->list.n; i++)
        if (node_reads(n->list.v[i], name, len, depth + 1))
            return true;
    for (size_t i = 0; i < n->list2.n; i++)
        if (node_reads(n->list2.v[i], name, len, depth + 1))
            return true;
    return false;
}

bool chat_template_reads(const chat_template_t *t, const char *name)
{
    return t && name && node_reads(t->body, name, strlen(name), 0);
}

lf_code_t chat_template_render(const chat_template_t *t, json_object *context, const chat_render_opts_t *opts,
                               char **out, size_t *out_len, bool *raised, lf_err_t *err)
{
    *out = NULL;
    if (raised)
        *raised = false;
    chat_render_opts_t o = {0};
    if (opts)
        o = *opts;
    jrender_limits_t lim = {
        .max_output = o.max_output ? o.max_output : (size_t)4 << 20,
        .max_depth = o.max_depth ? o.max_depth : 64,
        .max_steps = o.max_steps ? o.max_steps : 20000000,
        .arena_budget = o.max_memory ? o.max_memory : (size_t)256 << 20,
        .now = o.now ? o.now : (time_t)-1,
        .extensions = o.extensions,
    };
    if (context && !json_object_is_type(context, json_type_object))
        return lf_err_set(err, LF_ERR_INVALID, "chat template context must be a JSON object");
    jarena_t *a = jarena_new(lim.arena_budget);
    if (!a)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory rendering chat template");
    jv_t *vars = context ? jv_from_json(a, context, 0) : jv_dict(a, JV_DICT);
    if (!vars) {
        jarena_free(a);
        return lf_err_set(err, LF_ERR_INVALID, "chat template context too large or too deeply nested");
    }
    char msg[512], *text;
    size_t len;
    bool is_raise;
    if (!jinja_render(a, t->body, vars, &lim, &text, &len, msg, sizeof msg, &is_raise)) {
        jarena_free(a);
        if (raised)
            *raised = is_raise;
        return lf_err_set(err, LF_ERR_INVALID, "%s", msg);
    }
    *out = malloc(len + 1);
    if (!*out) {
        jarena_free(a);
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory rendering chat template");
    }
    memcpy(*out, text, len + 1);
    if (out_len)
        *out_len = len;
    jarena_free(a);
    return LF_OK;
}

lf_code_t chat_template_render_string(const char *src, json_object *context, const chat_render_opts_t *opts,
                                      char **out, lf_err_t *err)
{
    chat_template_t *t;
    *out = NULL;
    lf_code_t rc = chat_template_compile(src, src ? strlen(src) : 0, &t, err);
    if (rc != LF_OK)
        return rc;
    rc = chat_template_render(t, context, opts, out, NULL, NULL, err);
    chat_template_free(t);
    return rc;
}

json_object *chat_template_context(json_object *request, const char *bos_token, const char *eos_token,
                                   lf_err_t *err)
{
    json_object *messages, *tools = NULL, *agp, *kw;
    if (!request || !json_object_object_get_ex(request, "messages", &messages) ||
        !json_object_is_type(messages, json_type_array)) {
        lf_err_set(err, LF_ERR_INVALID, "request needs a 'messages' array");
        return NULL;
    }
    json_object *ctx = json_object_new_object();
    if (!ctx) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    json_object_object_add(ctx, "messages", json_object_get(messages));
    json_object_object_get_ex(request, "tools", &tools);
    json_object_object_add(ctx, "tools", tools ? json_object_get(tools) : NULL);
    json_object *docs = NULL;
    json_object_object_get_ex(request, "documents", &docs);
    json_object_object_add(ctx, "documents", docs ? json_object_get(docs) : NULL);
    bool gp = true;
    if (json_object_object_get_ex(request, "add_generation_prompt", &agp))
        gp = json_object_get_boolean(agp);
    json_object_object_add(ctx, "add_generation_prompt", json_object_new_boolean(gp));
    if (bos_token)
        json_object_object_add(ctx, "bos_token", json_object_new_string(bos_token));
    if (eos_token)
        json_object_object_add(ctx, "eos_token", json_object_new_string(eos_token));
    if (json_object_object_get_ex(request, "chat_template_kwargs", &kw) && json_object_is_type(kw, json_type_object)) {
        json_object_object_foreach(kw, k, v) {
            json_object_object_add(ctx, k, json_object_get(v));
        }
    }
    return ctx;
}
