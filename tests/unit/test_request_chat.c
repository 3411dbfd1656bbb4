/* test_request_chat.c - the chat-only request fields (request_chat.c):
 * tools / tool_choice / parallel_tool_calls / template switches validated
 * table-driven, then what the chat template sees (chat_render_tmpl.c with a
 * --chat-template override over the real stories260K model): tools, tool
 * call arguments as objects, tool messages, developer -> system,
 * add_generation_prompt, continue_final_message, kwargs, raise_exception. */
#include "server/request/request_chat.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/model.h"
#include "server/chat/chat_render_tmpl.h"

#define U "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"
#define TOOL(n) "{\"type\":\"function\",\"function\":{\"name\":\"" n "\",\"parameters\":{\"type\":\"object\"}}}"

typedef struct {
    const char *body;
    int status;          /* 0: accepted */
    const char *param;   /* expected param on error */
    tool_choice_t choice;
    size_t n_tools;
    bool parallel, agp, cont;
} vcase_t;

static const vcase_t vcases[] = {
    {"{" U "}", 0, NULL, TOOL_CHOICE_NONE, 0, true, true, false},
    {"{" U ",\"tools\":[" TOOL("f") "]}", 0, NULL, TOOL_CHOICE_AUTO, 1, true, true, false},
    {"{" U ",\"tools\":[" TOOL("f") "," TOOL("g") "],\"tool_choice\":\"required\",\"parallel_tool_calls\":false}", 0,
     NULL, TOOL_CHOICE_REQUIRED, 2, false, true, false},
    {"{" U ",\"tools\":[" TOOL("f") "],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}}}", 0, NULL,
     TOOL_CHOICE_NAMED, 1, true, true, false},
    {"{" U ",\"tools\":[" TOOL("f") "],\"tool_choice\":\"none\"}", 0, NULL, TOOL_CHOICE_NONE, 1, true, true, false},
    {"{" U ",\"tool_choice\":\"none\"}", 0, NULL, TOOL_CHOICE_NONE, 0, true, true, false},
    {"{" U ",\"tools\":null,\"tool_choice\":null}", 0, NULL, TOOL_CHOICE_NONE, 0, true, true, false},
    {"{" U ",\"tools\":[]}", 400, "tools", 0, 0, 0, 0, 0},
    {"{" U ",\"tools\":{}}", 400, "tools", 0, 0, 0, 0, 0},
    {"{" U ",\"tools\":[{\"type\":\"retrieval\"}]}", 400, "tools", 0, 0, 0, 0, 0},
    {"{" U ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"\"}}]}", 400, "tools", 0, 0, 0, 0, 0},
    {"{" U ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":3}}]}", 400, "tools", 0, 0,
     0, 0, 0},
    {"{" U ",\"tool_choice\":\"auto\"}", 400, "tool_choice", 0, 0, 0, 0, 0},
    {"{" U ",\"tool_choice\":\"required\"}", 400, "tool_choice", 0, 0, 0, 0, 0},
    {"{" U ",\"tools\":[" TOOL("f") "],\"tool_choice\":\"sometimes\"}", 400, "tool_choice", 0, 0, 0, 0, 0},
    {"{" U ",\"tools\":[" TOOL("f") "],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}}}", 400,
     "tool_choice", 0, 0, 0, 0, 0},
    {"{" U ",\"tools\":[" TOOL("f") "],\"tool_choice\":{\"type\":\"function\"}}", 400, "tool_choice", 0, 0, 0, 0, 0},
    {"{" U ",\"tools\":[" TOOL("f") "],\"parallel_tool_calls\":\"yes\"}", 400, "parallel_tool_calls", 0, 0, 0, 0, 0},
    {"{" U ",\"continue_final_message\":true}", 400, "continue_final_message", 0, 0, 0, 0, 0},
    {"{" U ",\"continue_final_message\":true,\"add_generation_prompt\":false}", 400, "continue_final_message", 0, 0,
     0, 0, 0},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\"Hel\"}],"
     "\"continue_final_message\":true,\"add_generation_prompt\":false}", 0, NULL, TOOL_CHOICE_NONE, 0, true, false,
     true},
    {"{" U ",\"add_generation_prompt\":1}", 400, "add_generation_prompt", 0, 0, 0, 0, 0},
    {"{" U ",\"chat_template_kwargs\":[1]}", 400, "chat_template_kwargs", 0, 0, 0, 0, 0},
    {"{" U ",\"chat_template_kwargs\":{\"enable_thinking\":false}}", 0, NULL, TOOL_CHOICE_NONE, 0, true, true, false},
    {"{" U ",\"documents\":\"x\"}", 400, "documents", 0, 0, 0, 0, 0},
    {"{" U ",\"documents\":[{\"title\":\"t\",\"text\":\"x\"}]}", 0, NULL, TOOL_CHOICE_NONE, 0, true, true, false},
    {"{\"messages\":[{\"role\":\"tool\",\"content\":\"22C\"}]}", 400, "messages[0].tool_call_id", 0, 0, 0, 0, 0},
    {"{\"messages\":[{\"role\":\"tool\",\"content\":\"22C\",\"tool_call_id\":7}]}", 400, "messages[0].tool_call_id",
     0, 0, 0, 0, 0},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"w?\"},{\"role\":\"assistant\",\"content\":null,\"tool_calls\":"
     "[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},{\"role\":"
     "\"tool\",\"content\":\"22C\",\"tool_call_id\":\"call_1\"}]}", 0, NULL, TOOL_CHOICE_NONE, 0, true, true, false},
    {"{\"messages\":[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"function\":{\"name\":\"f\","
     "\"arguments\":{}}}]}]}", 400, "messages[0].tool_calls", 0, 0, 0, 0, 0},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"tool_calls\":[]}]}", 400, "messages[0].tool_calls", 0, 0,
     0, 0, 0},
    {"{\"messages\":[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":\"f\"}]}", 400, "messages[0].tool_calls",
     0, 0, 0, 0, 0},
};

static void validation(void)
{
    for (size_t i = 0; i < sizeof vcases / sizeof vcases[0]; i++) {
        const vcase_t *k = &vcases[i];
        chat_req_t q;
        req_err_t e = {0};
        int rc = req_chat_parse(k->body, strlen(k->body), &q, &e);
        if (k->status) {
            tap_ok(rc < 0 && e.status == k->status && !strcmp(e.param, k->param), "case %zu: %d %s (%s)", i,
                   k->status, k->param, rc < 0 ? e.msg : "accepted");
            continue;
        }
        const chat_ext_t *x = rc == 0 ? q.ext : NULL;
        tap_ok(x && x->tool_choice == k->choice && x->n_tools == k->n_tools && x->parallel_tool_calls == k->parallel &&
                   x->add_generation_prompt == k->agp && x->continue_final_message == k->cont,
               "case %zu: accepted with the expected fields%s%s", i, rc < 0 ? ": " : "", rc < 0 ? e.msg : "");
        if (rc == 0)
            req_chat_free(&q);
    }
}

/* ---- rendering through the template ---- */

#define T_SHOW                                                                                                 \
    "{%- if tools %}[tools:{% for t in tools %}{{ t.function.name }};{% endfor %}]{% endif %}"                  \
    "{%- for m in messages %}<{{ m.role }}>{{ m.content if m.content is string else '' }}"                      \
    "{%- if m.tool_calls %}{% for c in m.tool_calls %}(call {{ c.function.name }} {{ c.function.arguments | tojson }})" \
    "{% endfor %}{% endif %}{% if m.tool_call_id %}(for {{ m.tool_call_id }}){% endif %}</>{% endfor %}"         \
    "{%- if add_generation_prompt %}<assistant>{% endif %}{% if enable_thinking is defined %}"                 \
    "think={{ enable_thinking }}{% endif %}"

typedef struct {
    const char *tmpl;
    const char *body;
    const char *want;   /* NULL: error */
    const char *errsub; /* error message contains */
} rcase_t;

static const rcase_t rcases[] = {
    {T_SHOW, "{" U "}", "<user>hi</><assistant>", NULL},
    {T_SHOW, "{" U ",\"tools\":[" TOOL("get_weather") "]}", "[tools:get_weather;]<user>hi</><assistant>", NULL},
    {T_SHOW,
     "{\"messages\":[{\"role\":\"developer\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\"w?\"},"
     "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":"
     "{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\": \\\"Paris\\\"}\"}}]},"
     "{\"role\":\"tool\",\"content\":\"22C\",\"tool_call_id\":\"call_1\"}]}",
     "<system>be brief</><user>w?</><assistant>(call get_weather {\"city\": \"Paris\"})</><tool>22C(for call_1)</>"
     "<assistant>", NULL},
    {"{% for m in messages %}{{ m.role }}{% endfor %}{# developer aware #}",
     "{\"messages\":[{\"role\":\"developer\",\"content\":\"x\"}]}", "developer", NULL},
    {T_SHOW, "{" U ",\"add_generation_prompt\":false}", "<user>hi</>", NULL},
    {T_SHOW, "{" U ",\"chat_template_kwargs\":{\"enable_thinking\":false}}", "<user>hi</><assistant>think=False",
     NULL},
    {T_SHOW,
     "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\"Once upon\"}],"
     "\"continue_final_message\":true,\"add_generation_prompt\":false}",
     "<user>hi</><assistant>Once upon", NULL},
    {"{{ raise_exception('System role not supported') }}", "{" U "}", NULL, "System role not supported"},
    {"{% for m in messages %}{{ m.content }}{% endfor %}",
     "{\"messages\":[{\"role\":\"assistant\",\"content\":\"abc\"}],\"continue_final_message\":true,"
     "\"add_generation_prompt\":false}",
     "abc", NULL},
    {"{% for m in messages %}X{% endfor %}",
     "{\"messages\":[{\"role\":\"assistant\",\"content\":\"abc\"}],\"continue_final_message\":true,"
     "\"add_generation_prompt\":false}",
     NULL, "final message does not appear"},
};

static void rendering(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/stories260K.gguf", dir);
    lf_err_t err = {0};
    model_t *m = model_load(path, &err);
    tap_ok(m != NULL, "stories260K loads (%s)", m ? "ok" : err.msg);
    if (!m)
        return;
    char note[600];
    bool failed;
    chat_tmpl_renderer_t *bad = chat_tmpl_renderer_create_src(m, "{% if %}", note, sizeof note, &failed);
    tap_ok(!bad && failed && strstr(note, "does not compile"), "a --chat-template that does not compile: %s", note);
    chat_tmpl_renderer_t *dflt = chat_tmpl_renderer_create_src(m, NULL, note, sizeof note, &failed);
    tap_ok(dflt && !chat_tmpl_renderer_source(dflt) && strstr(note, "warning") && strstr(note, "ChatML"),
           "no template in the model: ChatML with a warning (%s)", note);
    chat_tmpl_renderer_free(dflt);
    for (size_t i = 0; i < sizeof rcases / sizeof rcases[0]; i++) {
        const rcase_t *k = &rcases[i];
        chat_tmpl_renderer_t *r = chat_tmpl_renderer_create_src(m, k->tmpl, note, sizeof note, &failed);
        chat_req_t q;
        req_err_t e = {0};
        char *out = NULL;
        lf_err_t le = {0};
        bool ok = r && req_chat_parse(k->body, strlen(k->body), &q, &e) == 0;
        if (!ok) {
            tap_ok(0, "render case %zu: parse (%s)", i, e.msg);
            chat_tmpl_renderer_free(r);
            continue;
        }
        lf_code_t rc = chat_tmpl_render(r, &q, true, &out, &le);
        if (k->want) {
            tap_ok(rc == LF_OK && !strcmp(out, k->want), "render case %zu: %s", i, k->want);
            if (rc != LF_OK || strcmp(out, k->want))
                tap_diag("got [%s] %s", out ? out : "(null)", le.msg);
        } else {
            tap_ok(rc == LF_ERR_INVALID && !out && strstr(le.msg, k->errsub), "render case %zu: error '%s'", i,
                   le.msg);
        }
        free(out);
        req_chat_free(&q);
        chat_tmpl_renderer_free(r);
    }
    model_free(m);
}

int main(void)
{
    validation();
    rendering(tap_env_dir("LLM_MODELS_DIR", "../shared/models"));
    return tap_done();
}
