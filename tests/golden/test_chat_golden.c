/* test_chat_golden.c - renders every record of templates-rendered.jsonl (17
 * real chat templates x 7 conversations) and templates-rendered-2026.jsonl
 * (53 newer templates x 8 conversations + thinking / effort switches), both
 * produced by Jinja2 set up like transformers, and checks the text byte for
 * byte. Records with an error must fail (transformers' sandbox fails there
 * too, including list.append and the missing from_json filter); for
 * raise_exception the message must match exactly. */
#include "chat/template/chat_template.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *str_member(json_object *o, const char *k)
{
    json_object *v;
    if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

static void first_diff(const char *a, const char *b)
{
    size_t i = 0;
    while (a[i] && a[i] == b[i])
        i++;
    size_t from = i > 40 ? i - 40 : 0;
    tap_diag("first difference at byte %zu", i);
    tap_diag("  got:  %.80s", a + from);
    tap_diag("  want: %.80s", b + from);
}

static int run_file(const char *dir, const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    if (!tap_ok(f != NULL, "open %s", path))
        return 0;
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    while (getline(&line, &cap, f) > 0) {
        json_object *rec = json_tokener_parse(line);
        if (!rec)
            continue;
        n++;
        const char *tname = str_member(rec, "template"), *conv = str_member(rec, "conversation");
        snprintf(path, sizeof path, "%s/templates/%s", dir, tname ? tname : "?");
        char *src = tap_read_file(path, NULL);
        json_object *ctx = json_object_new_object(), *v;
        json_object_object_get_ex(rec, "messages", &v);
        json_object_object_add(ctx, "messages", json_object_get(v));
        json_object_object_get_ex(rec, "tools", &v);
        json_object_object_add(ctx, "tools", json_object_get(v));
        json_object_object_add(ctx, "documents", NULL);
        json_object_object_get_ex(rec, "add_generation_prompt", &v);
        json_object_object_add(ctx, "add_generation_prompt", json_object_get(v));
        if (str_member(rec, "bos_token"))
            json_object_object_add(ctx, "bos_token", json_object_new_string(str_member(rec, "bos_token")));
        if (str_member(rec, "eos_token"))
            json_object_object_add(ctx, "eos_token", json_object_new_string(str_member(rec, "eos_token")));
        if (json_object_object_get_ex(rec, "extra_context", &v)) {
            json_object_object_foreach(v, k, x) {
                json_object_object_add(ctx, k, json_object_get(x));
            }
        }
        chat_render_opts_t opts = {0};
        opts.now = 1722002400; /* 2024-07-26 14:00 UTC, like the golden's fixed date */
        const char *want = str_member(rec, "rendered"), *want_err = str_member(rec, "error");
        const char *kind = str_member(rec, "error_kind");
        char *out = NULL;
        lf_err_t err = {0};
        lf_code_t rc = LF_ERR_IO;
        chat_template_t *t = NULL;
        bool raised = false;
        if (src && (rc = chat_template_compile(src, strlen(src), &t, &err)) == LF_OK)
            rc = chat_template_render(t, ctx, &opts, &out, NULL, &raised, &err);
        bool ok;
        if (want) {
            ok = rc == LF_OK && !strcmp(out, want);
            if (!ok && rc == LF_OK)
                first_diff(out, want);
            else if (!ok)
                tap_diag("error: %s", err.msg);
        } else {
            ok = rc == LF_ERR_INVALID;
            if (ok && kind && !strcmp(kind, "raise_exception"))
                ok = raised && want_err && !strcmp(err.msg, want_err);
            if (!ok)
                tap_diag("expected error '%s', got rc=%d msg='%s'", want_err ? want_err : "", rc, err.msg);
            else
                tap_diag("error as expected: %s", err.msg);
        }
        tap_ok(ok, "%s %s", tname ? tname : "?", conv ? conv : "?");
        free(out);
        chat_template_free(t);
        free(src);
        json_object_put(ctx);
        json_object_put(rec);
    }
    free(line);
    fclose(f);
    return n;
}

int main(void)
{
    const char *dir = tap_env_dir("LLM_GOLDEN_DIR", "../shared/golden");
    int n = run_file(dir, "templates-rendered.jsonl");
    tap_ok(n == 119, "templates-rendered.jsonl has 119 records (%d)", n);
    n = run_file(dir, "templates-rendered-2026.jsonl");
    tap_ok(n == 453, "templates-rendered-2026.jsonl has 453 records (%d)", n);
    return tap_done();
}
