/* test_chat_robust.c - hostile-input robustness of the chat-template
 * renderer: every golden template cut at many points and with bytes replaced
 * by Jinja punctuation must compile and render to either text or a clean
 * LF_ERR_INVALID (never a crash, hang or other code). Deterministic: the
 * mutations are a fixed function of the template bytes. One TAP line per
 * template. Best run under the sanitizers (configure --enable-sanitizers). */
#include "chat/template/chat_template.h"
#include "tap.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int try_one(const char *src, size_t n, json_object *ctx, const chat_render_opts_t *opts)
{
    chat_template_t *t = NULL;
    lf_err_t err = {0};
    lf_code_t rc = chat_template_compile(src, n, &t, &err);
    if (rc == LF_OK) {
        char *out = NULL;
        rc = chat_template_render(t, ctx, opts, &out, NULL, NULL, &err);
        if ((rc == LF_OK) != (out != NULL))
            rc = LF_ERR_INTERNAL;
        free(out);
    }
    chat_template_free(t);
    return rc == LF_OK || rc == LF_ERR_INVALID;
}

int main(void)
{
    const char *golden = tap_env_dir("LLM_GOLDEN_DIR", "../shared/golden");
    char dir[1024], path[2048];
    snprintf(dir, sizeof dir, "%s/templates", golden);
    json_object *ctx = json_tokener_parse(
        "{\"messages\": [{\"role\": \"system\", \"content\": \"sys\"}, {\"role\": \"user\", \"content\": \"hi\"},"
        " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"abcdefghi\", \"type\": \"function\","
        " \"function\": {\"name\": \"f\", \"arguments\": {\"a\": 1}}}]},"
        " {\"role\": \"tool\", \"tool_call_id\": \"abcdefghi\", \"content\": \"42\"}],"
        " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"description\": \"d\","
        " \"parameters\": {\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}, \"required\": [\"a\"]}}}],"
        " \"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}");
    chat_render_opts_t opts = {0};
    opts.max_output = 1 << 20;
    opts.max_steps = 200000;
    opts.now = 1722002400;
    DIR *d = opendir(dir);
    if (!tap_ok(d != NULL && ctx != NULL, "open %s", dir))
        return tap_done();
    static const char punct[] = "{}%#-()[]'\"|.,=~+*";
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d))) {
        size_t nl = strlen(e->d_name);
        if (nl < 6 || strcmp(e->d_name + nl - 6, ".jinja"))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t n;
        char *src = tap_read_file(path, &n);
        if (!src)
            continue;
        files++;
        int variants = 0, clean = 0;
        for (size_t cut = 0; cut <= n; cut += 1 + n / 400) {
            variants++;
            clean += try_one(src, cut, ctx, &opts);
        }
        char *mut = malloc(n + 1);
        for (size_t pos = 0; pos < n && mut; pos += 1 + n / 400) {
            memcpy(mut, src, n + 1);
            mut[pos] = punct[(pos + (unsigned char)src[pos]) % (sizeof punct - 1)];
            variants++;
            clean += try_one(mut, n, ctx, &opts);
        }
        free(mut);
        tap_ok(clean == variants, "%s: %d/%d cut or mutated variants handled cleanly", e->d_name, clean, variants);
        free(src);
    }
    closedir(d);
    tap_ok(files >= 17, "found the golden templates (%d, at least the 17 older ones)", files);
    json_object_put(ctx);
    return tap_done();
}
