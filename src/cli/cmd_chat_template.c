/* cmd_chat_template.c - `llm-fcgi chat-template`: render a chat request's
 * prompt with a model's (or a file's) chat template. Reads an OpenAI chat
 * request JSON from stdin (messages, tools, add_generation_prompt,
 * chat_template_kwargs) and prints the prompt exactly (no newline added):
 * by default strictly as transformers' apply_chat_template renders the
 * request as given; with --server as the server renders it (the request
 * validated, its messages shaped for the template as probed at start-up,
 * the interpreter's extensions on; chat_render_caps.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/template/chat_template.h"
#include "cli/cli.h"
#include "engine/gguf/gguf.h"
#include "server/chat/chat_render_caps.h"
#include "server/chat/chat_render_tmpl.h"
#include "server/request/request.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: llm-fcgi chat-template (-m MODEL.gguf | --template FILE) [--bos S] [--eos S]\n"
                 "                              [--now EPOCH] [--server] < request.json\n\n"
                 "Renders the prompt of an OpenAI chat request (read from stdin) with the model's\n"
                 "tokenizer.chat_template (or the Jinja file given), like transformers'\n"
                 "apply_chat_template. bos_token/eos_token come from the model's vocabulary unless\n"
                 "given (with both -m and --template, the file's template and the model's tokens\n"
                 "are used); --now fixes the clock of strftime_now (seconds since the epoch).\n"
                 "Without a template in the model, ChatML is used. --server renders as `serve`\n"
                 "does: the request validated, tool call arguments and content in the form the\n"
                 "template was probed to need, reasoning under the names it reads, list.append and\n"
                 "from_json allowed (the probe's findings are printed on stderr).\n");
}

static char *read_stream(FILE *f, size_t limit)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0)
            break;
        if (n + 1 == cap) {
            if (cap >= limit) {
                free(buf);
                return NULL;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                free(buf);
            buf = nb;
            cap *= 2;
        }
    }
    if (buf)
        buf[n] = 0;
    return buf;
}

/* Text of token tokenizer.ggml.<which>_token_id, or NULL. Caller frees. */
static char *special_token(const gguf_file_t *f, const char *which)
{
    char key[64];
    uint32_t id;
    snprintf(key, sizeof key, "tokenizer.ggml.%s_token_id", which);
    if (!gguf_get_u32(f, key, &id))
        return NULL;
    const gguf_kv_t *toks = gguf_get_arr(f, "tokenizer.ggml.tokens");
    if (!toks || toks->arr_type != GGUF_VT_STRING || id >= toks->arr_len)
        return NULL;
    return gguf_str_dup(toks->strs[id]);
}

/* --server: the server's renderer (probe, message view, extensions). */
static int render_as_server(const char *src, const char *bos, const char *eos, const char *body, time_t now)
{
    char note[600];
    bool failed = false;
    chat_req_t q;
    req_err_t e = {0};
    lf_err_t err = {0};
    char *out = NULL;
    int rc = 1;
    chat_tmpl_renderer_t *r = src ? chat_tmpl_renderer_new(src, bos, eos, note, sizeof note, &failed) : NULL;
    if (!r) {
        fprintf(stderr, "llm-fcgi: %s\n", src && failed ? note : "cannot read the template");
        return 1;
    }
    chat_tmpl_renderer_set_now(r, now);
    const chat_caps_t *caps = chat_tmpl_renderer_caps(r);
    if (caps)
        fprintf(stderr, "llm-fcgi: template probe: tool call arguments as %s, null content %s\n",
                caps->args_as_string ? "JSON strings" : "objects", caps->null_content ? "kept" : "as \"\"");
    if (!body || req_chat_parse(body, strlen(body), &q, &e) < 0) {
        fprintf(stderr, "llm-fcgi: %s\n", body ? e.msg : "cannot read stdin");
    } else {
        if (chat_tmpl_render(r, &q, true, &out, &err) != LF_OK)
            fprintf(stderr, "llm-fcgi: chat template: %s\n", err.msg);
        else if (fwrite(out, 1, strlen(out), stdout) == strlen(out) && fflush(stdout) == 0)
            rc = 0;
        req_chat_free(&q);
    }
    free(out);
    chat_tmpl_renderer_free(r);
    return rc;
}

int cmd_chat_template(int argc, char **argv)
{
    static const struct option opts[] = {{"model", required_argument, 0, 'm'},
                                         {"template", required_argument, 0, 't'},
                                         {"bos", required_argument, 0, 'b'},
                                         {"eos", required_argument, 0, 'e'},
                                         {"now", required_argument, 0, 'n'},
                                         {"server", no_argument, 0, 's'},
                                         {"help", no_argument, 0, 'h'},
                                         {0}};
    const char *model = NULL, *tfile = NULL, *bos_opt = NULL, *eos_opt = NULL;
    long long now = 0;
    int c, as_server = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:t:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model = optarg; break;
        case 't': tfile = optarg; break;
        case 'b': bos_opt = optarg; break;
        case 'e': eos_opt = optarg; break;
        case 'n': now = strtoll(optarg, NULL, 10); break;
        case 's': as_server = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc || (!model && !tfile)) {
        usage(stderr);
        return 2;
    }
    char *src = NULL, *bos = NULL, *eos = NULL;
    lf_err_t err = {0};
    int rc = 1;
    if (model) {
        gguf_file_t *f = gguf_open(model, &err);
        if (!f) {
            fprintf(stderr, "llm-fcgi: %s\n", err.msg);
            return 1;
        }
        gguf_str_t s;
        if (!tfile)
            src = gguf_get_str(f, "tokenizer.chat_template", &s) ? gguf_str_dup(s) : strdup(chat_template_chatml);
        bos = special_token(f, "bos");
        eos = special_token(f, "eos");
        gguf_close(f);
    }
    if (tfile) {
        FILE *tf = fopen(tfile, "rb");
        if (!tf) {
            fprintf(stderr, "llm-fcgi: cannot open template %s\n", tfile);
            return 1;
        }
        src = read_stream(tf, (size_t)16 << 20);
        fclose(tf);
    }
    if (bos_opt) {
        free(bos);
        bos = strdup(bos_opt);
    }
    if (eos_opt) {
        free(eos);
        eos = strdup(eos_opt);
    }
    char *body = read_stream(stdin, (size_t)64 << 20);
    if (as_server) {
        rc = render_as_server(src, bos, eos, body, (time_t)now);
        free(body);
        free(src);
        free(bos);
        free(eos);
        return rc;
    }
    json_object *req = body ? json_tokener_parse(body) : NULL, *ctx = NULL;
    char *out = NULL;
    size_t out_len = 0;
    chat_template_t *t = NULL;
    if (!src) {
        fprintf(stderr, "llm-fcgi: cannot read the template\n");
    } else if (!req || !json_object_is_type(req, json_type_object)) {
        fprintf(stderr, "llm-fcgi: stdin is not a JSON object\n");
    } else if (!(ctx = chat_template_context(req, bos, eos, &err)) ||
               chat_template_compile(src, strlen(src), &t, &err) != LF_OK) {
        fprintf(stderr, "llm-fcgi: %s\n", err.msg);
    } else {
        chat_render_opts_t ro = {0};
        ro.now = (time_t)now;
        if (chat_template_render(t, ctx, &ro, &out, &out_len, NULL, &err) != LF_OK)
            fprintf(stderr, "llm-fcgi: chat template: %s\n", err.msg);
        else if (fwrite(out, 1, out_len, stdout) == out_len && fflush(stdout) == 0)
            rc = 0;
    }
    free(out);
    chat_template_free(t);
    json_object_put(ctx);
    json_object_put(req);
    free(body);
    free(src);
    free(bos);
    free(eos);
    return rc;
}
