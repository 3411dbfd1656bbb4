/* test_chat_template.c - table-driven tests of the chat-template Jinja
 * interpreter: whitespace control, loops, macros, set/filter blocks,
 * expressions, filters, tests, methods, errors (chat_cases.h, expectations
 * generated from real Jinja2), plus the API: compile once / render many,
 * concurrent rendering, the injectable clock, raise_exception reporting,
 * request -> context building, and the resource guards. */
#include "chat/template/chat_template.h"
#include "tap.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "chat_cases.h"

static void run_cases(void)
{
    json_object *ctx = json_tokener_parse(chat_case_context);
    tap_ok(ctx != NULL, "case context parses");
    for (size_t i = 0; i < sizeof chat_cases / sizeof chat_cases[0]; i++) {
        const char *src = chat_cases[i].src;
        chat_template_t *t = NULL;
        char *out = NULL;
        bool raised = false;
        lf_err_t err = {0};
        lf_code_t rc = chat_template_compile(src, strlen(src), &t, &err);
        if (rc == LF_OK)
            rc = chat_template_render(t, ctx, NULL, &out, NULL, &raised, &err);
        bool ok;
        switch (chat_cases[i].expect) {
        case 0:
            ok = rc == LF_OK && !strcmp(out, chat_cases[i].text);
            if (!ok)
                tap_diag("got %s '%s', want '%s'", rc == LF_OK ? "text" : "error", rc == LF_OK ? out : err.msg,
                         chat_cases[i].text);
            break;
        case 1:
            ok = rc == LF_ERR_INVALID && !raised;
            if (!ok)
                tap_diag("expected a failure, got rc=%d '%s'", rc, out ? out : "");
            break;
        default:
            ok = rc == LF_ERR_INVALID && raised && !strcmp(err.msg, chat_cases[i].text);
            if (!ok)
                tap_diag("expected raise '%s', got rc=%d '%s'", chat_cases[i].text, rc, err.msg);
        }
        size_t n = strlen(src);
        tap_ok(ok, "case %zu: %.60s%s", i, src, n > 60 ? "..." : "");
        free(out);
        chat_template_free(t);
    }
    json_object_put(ctx);
}

typedef struct {
    const chat_template_t *t;
    json_object *ctx;
    int good;
} worker_t;

static void *worker(void *arg)
{
    worker_t *w = arg;
    for (int i = 0; i < 50; i++) {
        char *out = NULL;
        if (chat_template_render(w->t, w->ctx, NULL, &out, NULL, NULL, NULL) == LF_OK &&
            !strcmp(out, "<u>hi</u><u>there</u><a>"))
            w->good++;
        free(out);
    }
    return NULL;
}

static void run_api(void)
{
    const char *src = "{% for m in messages %}<{{ m.role[0] }}>{{ m.content }}</{{ m.role[0] }}>{% endfor %}"
                      "{% if add_generation_prompt %}<a>{% endif %}";
    json_object *req = json_tokener_parse(
        "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"user\", \"content\": \"there\"}]}");
    lf_err_t err = {0};
    json_object *ctx = chat_template_context(req, "<s>", NULL, &err);
    tap_ok(ctx != NULL, "context from request");
    json_object *v;
    tap_ok(ctx && json_object_object_get_ex(ctx, "tools", &v) && v == NULL, "tools defaults to null");
    tap_ok(ctx && json_object_object_get_ex(ctx, "bos_token", &v), "bos_token passed");
    tap_ok(ctx && !json_object_object_get_ex(ctx, "eos_token", &v), "eos_token omitted when NULL");
    json_object *bad = json_tokener_parse("{\"messages\": 3}");
    tap_ok(chat_template_context(bad, NULL, NULL, &err) == NULL && err.code == LF_ERR_INVALID,
           "messages must be an array");
    json_object_put(bad);
    json_object *kw = json_tokener_parse("{\"messages\": [], \"add_generation_prompt\": false,"
                                         " \"chat_template_kwargs\": {\"enable_thinking\": false}}");
    json_object *kctx = chat_template_context(kw, NULL, NULL, &err);
    char *o = NULL;
    tap_ok(kctx && chat_template_render_string("{{ add_generation_prompt }}{{ enable_thinking }}", kctx, NULL, &o,
                                               &err) == LF_OK && !strcmp(o, "FalseFalse"),
           "chat_template_kwargs become variables");
    free(o);
    json_object_put(kctx);
    json_object_put(kw);

    chat_template_t *t = NULL;
    tap_ok(chat_template_compile(src, strlen(src), &t, &err) == LF_OK, "compile");
    worker_t w[2] = {{t, ctx, 0}, {t, ctx, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, worker, &w[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    tap_ok(w[0].good == 50 && w[1].good == 50, "two threads render one compiled template (%d, %d)", w[0].good,
           w[1].good);
    chat_template_free(t);
    chat_template_free(NULL);

    chat_render_opts_t opts = {0};
    opts.now = 1722002400; /* 2024-07-26 */
    o = NULL;
    tap_ok(chat_template_render_string("{{ strftime_now('%d %b %Y') }}", NULL, &opts, &o, &err) == LF_OK &&
               !strcmp(o, "26 Jul 2024"),
           "strftime_now uses the injected clock (%s)", o ? o : err.msg);
    free(o);
    o = NULL;
    tap_ok(chat_template_render_string("{{ strftime_now('%Y') | int > 2020 }}", NULL, NULL, &o, &err) == LF_OK &&
               !strcmp(o, "True"),
           "strftime_now defaults to the real clock");
    free(o);

    bool raised = false;
    o = NULL;
    const char *rs = "{{ raise_exception('System role not supported') }}";
    tap_ok(chat_template_compile(rs, strlen(rs), &t, &err) == LF_OK &&
               chat_template_render(t, NULL, NULL, &o, NULL, &raised, &err) == LF_ERR_INVALID && raised &&
               !strcmp(err.msg, "System role not supported") && o == NULL,
           "raise_exception: exact message and raised flag");
    chat_template_free(t);

    opts = (chat_render_opts_t){0};
    opts.max_output = 100;
    tap_ok(chat_template_render_string("{{ 'x' * 101 }}", NULL, &opts, &o, &err) == LF_ERR_INVALID,
           "output limit is enforced");
    opts.max_output = 0;
    opts.max_depth = 3;
    tap_ok(chat_template_render_string("{% macro f(n) %}{{ f(n+1) if n < 3 else n }}{% endmacro %}{{ f(0) }}",
                                       NULL, &opts, &o, &err) == LF_ERR_INVALID,
           "macro depth limit is enforced (%s)", err.msg);
    tap_ok(chat_template_compile("{% if %}", 8, &t, &err) == LF_ERR_INVALID && t == NULL &&
               strstr(err.msg, "syntax error") != NULL,
           "syntax errors name themselves (%s)", err.msg);
    json_object *arr = json_object_new_array();
    tap_ok(chat_template_render_string("x", arr, NULL, &o, &err) == LF_ERR_INVALID, "context must be an object");
    json_object_put(arr);
    json_object_put(ctx);
    json_object_put(req);
}

/* llama.cpp's extensions to the sandbox (opts.extensions): mutation
 * methods and from_json; refused without them, as transformers does. */
static void run_extensions(void)
{
    static const struct {
        const char *src, *want;
    } t[] = {
        {"{% set l = [1] %}{% set _ = l.append(2) %}{{ l }}", "[1, 2]"},
        {"{% set ns = namespace(q=[]) %}{% set _ = ns.q.append('a') %}{% set _ = ns.q.append('b') %}{{ ns.q|join }}",
         "ab"},
        {"{% set l = [1, 2, 3] %}{{ l.pop() }}{{ l.pop(0) }}{{ l }}", "31[2]"},
        {"{% set l = [1, 3] %}{% set _ = l.insert(1, 2) %}{% set _ = l.insert(-9, 0) %}{{ l }}", "[0, 1, 2, 3]"},
        {"{% set l = [1, 2, 1] %}{% set _ = l.remove(1) %}{% set _ = l.extend([5, 6]) %}{{ l }}", "[2, 1, 5, 6]"},
        {"{% set l = [1] %}{% set _ = l.clear() %}{{ l }}{{ l|length }}", "[]0"},
        {"{% set d = {'a': 1} %}{% set _ = d.update({'b': 2}, c=3) %}{{ d }}{{ d.pop('a') }}{{ d }}",
         "{'a': 1, 'b': 2, 'c': 3}1{'b': 2, 'c': 3}"},
        {"{% set d = {} %}{{ d.setdefault('k', 5) }}{{ d.setdefault('k', 6) }}{{ d.pop('x', 'none') }}", "55none"},
        {"{% set o = '{\"a\": [1, 2.5, null], \"b\": {\"c\": \"x\"}}' | from_json %}{{ o.a[1] }}{{ o.b.c }}"
         "{{ o.a[2] is none }}",
         "2.5xTrue"},
    };
    chat_render_opts_t ext = {.extensions = true}, strict = {0};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char *o = NULL;
        lf_err_t err = {0};
        lf_code_t rc = chat_template_render_string(t[i].src, NULL, &ext, &o, &err);
        if (!tap_ok(rc == LF_OK && !strcmp(o, t[i].want), "extension %zu: %s", i, t[i].want))
            tap_diag("got [%s] %s", o ? o : "", err.msg);
        free(o);
        o = NULL;
        tap_ok(chat_template_render_string(t[i].src, NULL, &strict, &o, &err) == LF_ERR_INVALID && !o,
               "extension %zu refused without extensions (%s)", i, err.msg);
    }
    char *o = NULL;
    lf_err_t err = {0};
    tap_ok(chat_template_render_string("{{ (1, 2).append(3) }}", NULL, &ext, &o, &err) == LF_ERR_INVALID,
           "tuples stay immutable");
    tap_ok(chat_template_render_string("{{ [].pop() }}", NULL, &ext, &o, &err) == LF_ERR_INVALID &&
               strstr(err.msg, "empty"), "pop from an empty list fails (%s)", err.msg);
    tap_ok(chat_template_render_string("{{ 'x' | from_json }}", NULL, &ext, &o, &err) == LF_ERR_INVALID,
           "from_json of bad JSON fails");
    ext.max_steps = 100000;
    tap_ok(chat_template_render_string("{% set l = [0] %}{% for i in range(100000) %}{% set _ = l.extend(l) %}"
                                       "{% endfor %}", NULL, &ext, &o, &err) == LF_ERR_INVALID && !o,
           "runaway list growth hits the limits (%s)", err.msg);
}

int main(void)
{
    run_cases();
    run_api();
    run_extensions();
    return tap_done();
}
