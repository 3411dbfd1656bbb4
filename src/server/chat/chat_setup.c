/* chat_setup.c - chat template and parsers at start-up (see chat_setup.h). */
#include "server/chat/chat_setup.h"
#include "server/chat/chat_render_caps.h"
#include "server/request/request_chat.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEMPLATE_BYTES (1u << 20)

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "llm-fcgi: cannot read --chat-template %s\n", path);
        return NULL;
    }
    char *s = malloc(MAX_TEMPLATE_BYTES + 1);
    size_t n = s ? fread(s, 1, MAX_TEMPLATE_BYTES + 1, f) : 0;
    fclose(f);
    if (!s || n > MAX_TEMPLATE_BYTES || memchr(s, 0, n)) {
        fprintf(stderr, "llm-fcgi: --chat-template %s: %s\n", path,
                !s ? "out of memory" : n > MAX_TEMPLATE_BYTES ? "larger than 1 MiB" : "not a text file");
        free(s);
        return NULL;
    }
    s[n] = '\0';
    return s;
}

int srv_chat_setup(srv_t *s, const srv_config_t *cfg, chat_tmpl_renderer_t **out)
{
    *out = NULL;
    char *src = NULL;
    if (cfg->chat_template_file && *cfg->chat_template_file && !(src = read_file(cfg->chat_template_file)))
        return -1;
    char note[600] = "";
    bool failed = false;
    chat_tmpl_renderer_t *r = chat_tmpl_renderer_create_src(s->model, src, note, sizeof note, &failed);
    free(src);
    if (!r) {
        fprintf(stderr, "llm-fcgi: %s\n", failed ? note : "out of memory");
        return -1;
    }
    s->render = chat_tmpl_render;
    s->render_ctx = r;
    const char *tsrc = chat_tmpl_renderer_detect_text(r);
    size_t tlen = tsrc ? strlen(tsrc) : 0;
    lf_err_t err = {0};
    const char *how_r = "detected", *how_t = "detected";
    s->reasoning = tsrc ? reasoning_mode_detect(tsrc, tlen) : REASONING_MODE_NONE;
    if (cfg->reasoning_parser && *cfg->reasoning_parser) {
        reasoning_config_t rc = {REASONING_MODE_GENERIC, false, cfg->reasoning_start, cfg->reasoning_end};
        reasoning_t *probe = NULL;
        if (reasoning_mode_from_name(cfg->reasoning_parser, &s->reasoning, &err) != LF_OK ||
            (s->reasoning == REASONING_MODE_GENERIC && !(probe = reasoning_create_cfg(&rc, &err)))) {
            fprintf(stderr, "llm-fcgi: %s\n", err.msg);
            chat_tmpl_renderer_free(r);
            return -1;
        }
        reasoning_free(probe);
        how_r = "--reasoning-parser";
    }
    s->tool_format = tsrc ? toolcall_format_detect(tsrc, tlen) : TOOLCALL_FORMAT_NONE;
    if (cfg->tool_call_parser && *cfg->tool_call_parser) {
        if (toolcall_format_from_name(cfg->tool_call_parser, &s->tool_format, &err) != LF_OK) {
            fprintf(stderr, "llm-fcgi: %s\n", err.msg);
            chat_tmpl_renderer_free(r);
            return -1;
        }
        how_t = "--tool-call-parser";
    }
    const chat_caps_t *caps = chat_tmpl_renderer_caps(r);
    fprintf(stderr, "llm-fcgi: chat: %s; reasoning parser %s (%s); tool-call parser %s (%s)%s\n", note,
            reasoning_mode_name(s->reasoning), how_r, toolcall_format_name(s->tool_format), how_t,
            !caps ? "" : caps->args_as_string ? "; tool call arguments passed as JSON strings"
                                              : "; tool call arguments passed as objects");
    *out = r;
    return 0;
}

bool srv_chat_out_config(const srv_t *s, const chat_req_t *q, const char *prompt, chat_out_cfg_t *oc, bool *parse)
{
    bool tools = req_chat_wants_tools(q->ext);
    *parse = false;
    if (tools && s->tool_format == TOOLCALL_FORMAT_NONE)
        return false;
    reasoning_config_t rc = {s->reasoning, false, s->cfg.reasoning_start, s->cfg.reasoning_end};
    json_object *tl = NULL;
    if (tools && q->raw)
        json_object_object_get_ex(q->raw, "tools", &tl);
    *oc = (chat_out_cfg_t){.vocab = s->vocab, .reasoning = s->reasoning,
                           .starts_in_reasoning = reasoning_starts_inside_cfg(&rc, prompt, prompt ? strlen(prompt) : 0),
                           .reasoning_open = s->cfg.reasoning_start, .reasoning_close = s->cfg.reasoning_end,
                           .tools = tools ? s->tool_format : TOOLCALL_FORMAT_NONE, .tool_defs = tl,
                           .parallel_tool_calls = !q->ext || q->ext->parallel_tool_calls};
    *parse = oc->reasoning != REASONING_MODE_NONE || oc->tools != TOOLCALL_FORMAT_NONE;
    return true;
}
