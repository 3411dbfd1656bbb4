/* test_parsers_detect.c - parser detection on the 17 real chat templates of
 * the golden set (LLM_GOLDEN_DIR/templates), and the "output starts inside
 * the reasoning" rule on their rendered prompts (templates-rendered.jsonl). */
#include "chat/parse/reasoning.h"
#include "chat/parse/toolcall.h"
#include "tap.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *file;
    toolcall_format_t tools;
    reasoning_mode_t reasoning;
} expect[] = {
    {"CohereForAI-c4ai-command-r-plus-tool_use.jinja", TOOLCALL_FORMAT_NONE, REASONING_MODE_NONE},
    {"CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", TOOLCALL_FORMAT_NONE, REASONING_MODE_NONE},
    {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", TOOLCALL_FORMAT_HERMES, REASONING_MODE_NONE},
    {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", TOOLCALL_FORMAT_HERMES, REASONING_MODE_NONE},
    {"Qwen-Qwen2.5-7B-Instruct.jinja", TOOLCALL_FORMAT_HERMES, REASONING_MODE_NONE},
    {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", TOOLCALL_FORMAT_NONE, REASONING_MODE_DEEPSEEK_R1},
    {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", TOOLCALL_FORMAT_NONE, REASONING_MODE_DEEPSEEK_R1},
    {"fireworks-ai-llama-3-firefunction-v2.jinja", TOOLCALL_FORMAT_NONE, REASONING_MODE_NONE},
    {"google-gemma-2-2b-it.jinja", TOOLCALL_FORMAT_NONE, REASONING_MODE_NONE},
    {"llama-cpp-deepseek-r1.jinja", TOOLCALL_FORMAT_NONE, REASONING_MODE_DEEPSEEK_R1},
    {"meetkai-functionary-medium-v3.1.jinja", TOOLCALL_FORMAT_NONE, REASONING_MODE_NONE},
    {"meetkai-functionary-medium-v3.2.jinja", TOOLCALL_FORMAT_NONE, REASONING_MODE_NONE},
    {"meta-llama-Llama-3.1-8B-Instruct.jinja", TOOLCALL_FORMAT_LLAMA3_JSON, REASONING_MODE_NONE},
    {"meta-llama-Llama-3.2-3B-Instruct.jinja", TOOLCALL_FORMAT_LLAMA3_JSON, REASONING_MODE_NONE},
    {"meta-llama-Llama-3.3-70B-Instruct.jinja", TOOLCALL_FORMAT_LLAMA3_JSON, REASONING_MODE_NONE},
    {"microsoft-Phi-3.5-mini-instruct.jinja", TOOLCALL_FORMAT_NONE, REASONING_MODE_NONE},
    {"mistralai-Mistral-Nemo-Instruct-2407.jinja", TOOLCALL_FORMAT_MISTRAL, REASONING_MODE_NONE},
};
#define NEXPECT (sizeof expect / sizeof expect[0])

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

int main(void)
{
    const char *dir = tap_env_dir("LLM_GOLDEN_DIR", "../shared/golden");
    char path[4096];
    for (size_t i = 0; i < NEXPECT; i++) {
        snprintf(path, sizeof path, "%s/templates/%s", dir, expect[i].file);
        size_t len = 0;
        char *t = read_all(path, &len);
        if (!tap_ok(t != NULL, "read %s", expect[i].file))
            continue;
        toolcall_format_t f = toolcall_format_detect(t, len);
        reasoning_mode_t m = reasoning_mode_detect(t, len);
        tap_ok(f == expect[i].tools, "%s: tool parser %s", expect[i].file, toolcall_format_name(f));
        tap_ok(m == expect[i].reasoning, "%s: reasoning parser %s", expect[i].file, reasoning_mode_name(m));
        free(t);
    }

    /* Rendered prompts: the R1 templates open <think> in the generation
     * prompt, so their output starts inside the reasoning; no other does. */
    snprintf(path, sizeof path, "%s/templates-rendered.jsonl", dir);
    FILE *f = fopen(path, "r");
    if (!tap_ok(f != NULL, "read templates-rendered.jsonl"))
        return tap_done();
    char *line = NULL;
    size_t cap = 0;
    int checked = 0, wrong = 0;
    while (getline(&line, &cap, f) > 0) {
        json_object *rec = json_tokener_parse(line), *tn, *rn;
        if (rec && json_object_object_get_ex(rec, "template", &tn) &&
            json_object_object_get_ex(rec, "rendered", &rn)) {
            const char *name = json_object_get_string(tn);
            reasoning_mode_t want_mode = REASONING_MODE_NONE;
            for (size_t i = 0; i < NEXPECT; i++)
                if (!strcmp(name, expect[i].file))
                    want_mode = expect[i].reasoning;
            bool inside = reasoning_starts_inside(want_mode, json_object_get_string(rn),
                                                  (size_t)json_object_get_string_len(rn));
            bool want = want_mode == REASONING_MODE_DEEPSEEK_R1;
            checked++;
            if (inside != want) {
                wrong++;
                tap_diag("%s: starts inside %d", name, inside);
            }
        }
        json_object_put(rec);
    }
    free(line);
    fclose(f);
    tap_ok(checked > 50 && wrong == 0, "starts_inside on %d rendered prompts", checked);
    return tap_done();
}
