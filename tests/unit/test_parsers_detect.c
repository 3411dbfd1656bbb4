/* test_parsers_detect.c - parser detection on the 70 real chat templates of
 * the golden set (LLM_GOLDEN_DIR/templates), detected as the server does
 * (the source with what the template renders for a probe conversation),
 * and the "output starts inside
 * the reasoning" rule on their rendered prompts (templates-rendered.jsonl:
 * only the R1 templates open the block; templates-rendered-2026.jsonl: the
 * thinking switches of the newer templates). */
#include "chat/parse/reasoning.h"
#include "chat/parse/toolcall.h"
#include "server/chat/chat_render_tmpl.h"
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
    {"Apertus-8B-Instruct.jinja", TOOLCALL_FORMAT_APERTUS, REASONING_MODE_APERTUS},
    {"Apriel-1.6-15b-Thinker-fixed.jinja", TOOLCALL_FORMAT_APRIEL, REASONING_MODE_APRIEL},
    {"Bielik-11B-v3.0-Instruct.jinja", TOOLCALL_FORMAT_HERMES, REASONING_MODE_QWEN3},
    {"ByteDance-Seed-OSS.jinja", TOOLCALL_FORMAT_SEED_OSS, REASONING_MODE_SEED_OSS},
    {"Cohere2MoE.jinja", TOOLCALL_FORMAT_COHERE, REASONING_MODE_COHERE},
    {"CohereForAI-c4ai-command-r-plus-tool_use.jinja", TOOLCALL_FORMAT_NONE, REASONING_MODE_NONE},
    {"CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", TOOLCALL_FORMAT_COHERE, REASONING_MODE_COHERE},
    {"GLM-4.6.jinja", TOOLCALL_FORMAT_GLM45, REASONING_MODE_GLM45},
    {"GLM-4.7-Flash.jinja", TOOLCALL_FORMAT_GLM45, REASONING_MODE_GLM45},
    {"GigaChat3-10B-A1.8B.jinja", TOOLCALL_FORMAT_GIGACHAT3, REASONING_MODE_NONE},
    {"GigaChat3.1-10B-A1.8B.jinja", TOOLCALL_FORMAT_GIGACHAT31, REASONING_MODE_NONE},
    {"HuggingFaceTB-SmolLM3-3B.jinja", TOOLCALL_FORMAT_NONE, REASONING_MODE_QWEN3},
    {"Kimi-K2-Instruct.jinja", TOOLCALL_FORMAT_KIMI_K2, REASONING_MODE_NONE},
    {"Kimi-K2-Thinking.jinja", TOOLCALL_FORMAT_KIMI_K2, REASONING_MODE_KIMI_K2},
    {"Kimi-K3.jinja", TOOLCALL_FORMAT_KIMI_K3, REASONING_MODE_KIMI_K3},
    {"LFM2-8B-A1B.jinja", TOOLCALL_FORMAT_PYTHONIC, REASONING_MODE_NONE},
    {"LFM2.5-8B-A1B.jinja", TOOLCALL_FORMAT_PYTHONIC, REASONING_MODE_QWEN3},
    {"LFM2.5-Instruct.jinja", TOOLCALL_FORMAT_PYTHONIC, REASONING_MODE_QWEN3},
    {"MiMo-VL.jinja", TOOLCALL_FORMAT_HERMES, REASONING_MODE_NONE},
    {"MiniMax-M1.jinja", TOOLCALL_FORMAT_MINIMAX, REASONING_MODE_NONE},
    {"MiniMax-M2.jinja", TOOLCALL_FORMAT_MINIMAX_M2, REASONING_MODE_MINIMAX_M2},
    {"MiniMax-M3.jinja", TOOLCALL_FORMAT_MINIMAX_M3, REASONING_MODE_MINIMAX_M3},
    {"Mistral-Small-3.2-24B-Instruct-2506.jinja", TOOLCALL_FORMAT_MISTRAL, REASONING_MODE_NONE},
    {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja", TOOLCALL_FORMAT_QWEN3_CODER, REASONING_MODE_QWEN3},
    {"NVIDIA-Nemotron-Nano-v2.jinja", TOOLCALL_FORMAT_NEMOTRON, REASONING_MODE_QWEN3},
    {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", TOOLCALL_FORMAT_HERMES, REASONING_MODE_NONE},
    {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", TOOLCALL_FORMAT_HERMES, REASONING_MODE_NONE},
    {"Qwen-QwQ-32B.jinja", TOOLCALL_FORMAT_HERMES, REASONING_MODE_QWEN3},
    {"Qwen-Qwen2.5-7B-Instruct.jinja", TOOLCALL_FORMAT_HERMES, REASONING_MODE_NONE},
    {"Qwen-Qwen3-0.6B.jinja", TOOLCALL_FORMAT_HERMES, REASONING_MODE_QWEN3},
    {"Qwen3-Coder.jinja", TOOLCALL_FORMAT_QWEN3_CODER, REASONING_MODE_NONE},
    {"Qwen3.5-4B.jinja", TOOLCALL_FORMAT_QWEN3_CODER, REASONING_MODE_QWEN3},
    {"Reka-Edge.jinja", TOOLCALL_FORMAT_HERMES, REASONING_MODE_QWEN3},
    {"Spark2.5.jinja", TOOLCALL_FORMAT_GLM45, REASONING_MODE_GLM45},
    {"StepFun3.5-Flash.jinja", TOOLCALL_FORMAT_QWEN3_CODER, REASONING_MODE_QWEN3},
    {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", TOOLCALL_FORMAT_DEEPSEEK_V3, REASONING_MODE_DEEPSEEK_R1},
    {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", TOOLCALL_FORMAT_DEEPSEEK_V3, REASONING_MODE_DEEPSEEK_R1},
    {"deepseek-ai-DeepSeek-V3.1.jinja", TOOLCALL_FORMAT_DEEPSEEK_V31, REASONING_MODE_DEEPSEEK_V3},
    {"deepseek-ai-DeepSeek-V3.2.jinja", TOOLCALL_FORMAT_DEEPSEEK_V32, REASONING_MODE_DEEPSEEK_V3},
    {"deepseek-ai-DeepSeek-V4-Flash-0731.jinja", TOOLCALL_FORMAT_DEEPSEEK_V4, REASONING_MODE_DEEPSEEK_V3},
    {"deepseek-ai-DeepSeek-V4.jinja", TOOLCALL_FORMAT_DEEPSEEK_V4, REASONING_MODE_DEEPSEEK_V3},
    {"fireworks-ai-llama-3-firefunction-v2.jinja", TOOLCALL_FORMAT_PHI4_MINI_JSON, REASONING_MODE_NONE},
    {"google-gemma-2-2b-it.jinja", TOOLCALL_FORMAT_NONE, REASONING_MODE_NONE},
    {"google-gemma-4-31B-it-interleaved.jinja", TOOLCALL_FORMAT_GEMMA4, REASONING_MODE_GEMMA4},
    {"google-gemma-4-31B-it.jinja", TOOLCALL_FORMAT_GEMMA4, REASONING_MODE_GEMMA4},
    {"ibm-granite-granite-3.3-2B-Instruct.jinja", TOOLCALL_FORMAT_GRANITE, REASONING_MODE_GRANITE},
    {"ibm-granite-granite-4.0.jinja", TOOLCALL_FORMAT_HERMES, REASONING_MODE_NONE},
    {"ibm-granite-granite-4.1.jinja", TOOLCALL_FORMAT_HERMES, REASONING_MODE_NONE},
    {"inclusionai-ling-3.0-flash.jinja", TOOLCALL_FORMAT_GLM45, REASONING_MODE_GLM45},
    {"llama-cpp-deepseek-r1.jinja", TOOLCALL_FORMAT_DEEPSEEK_V3, REASONING_MODE_DEEPSEEK_R1},
    {"llama-cpp-rwkv-world.jinja", TOOLCALL_FORMAT_NONE, REASONING_MODE_QWEN3},
    {"meetkai-functionary-medium-v3.1.jinja", TOOLCALL_FORMAT_FUNCTIONARY_V31, REASONING_MODE_NONE},
    {"meetkai-functionary-medium-v3.2.jinja", TOOLCALL_FORMAT_FUNCTIONARY_V32, REASONING_MODE_NONE},
    {"meta-llama-Llama-3.1-8B-Instruct.jinja", TOOLCALL_FORMAT_LLAMA3_JSON, REASONING_MODE_NONE},
    {"meta-llama-Llama-3.2-3B-Instruct.jinja", TOOLCALL_FORMAT_LLAMA3_JSON, REASONING_MODE_NONE},
    {"meta-llama-Llama-3.3-70B-Instruct.jinja", TOOLCALL_FORMAT_LLAMA3_JSON, REASONING_MODE_NONE},
    {"microsoft-Phi-3.5-mini-instruct.jinja", TOOLCALL_FORMAT_NONE, REASONING_MODE_NONE},
    {"mistralai-Ministral-3-14B-Reasoning-2512.jinja", TOOLCALL_FORMAT_MISTRAL, REASONING_MODE_MISTRAL},
    {"mistralai-Mistral-Nemo-Instruct-2407.jinja", TOOLCALL_FORMAT_MISTRAL, REASONING_MODE_NONE},
    {"moonshotai-Kimi-K2.jinja", TOOLCALL_FORMAT_KIMI_K2, REASONING_MODE_NONE},
    {"muse-glimmer.jinja", TOOLCALL_FORMAT_MUSE_GLIMMER, REASONING_MODE_MUSE_GLIMMER},
    {"openai-gpt-oss-120b.jinja", TOOLCALL_FORMAT_GPT_OSS, REASONING_MODE_GPT_OSS},
    {"openbmb-MiniCPM5-1B.jinja", TOOLCALL_FORMAT_MINICPM5, REASONING_MODE_QWEN3},
    {"poolside-Laguna-S-2.1.jinja", TOOLCALL_FORMAT_GLM45, REASONING_MODE_GLM45},
    {"poolside-Laguna-XS-2.1.jinja", TOOLCALL_FORMAT_GLM45, REASONING_MODE_GLM45},
    {"poolside-Laguna-XS.2.jinja", TOOLCALL_FORMAT_GLM45, REASONING_MODE_GLM45},
    {"tencent-Hy3.jinja", TOOLCALL_FORMAT_HY_V3, REASONING_MODE_HY_V3},
    {"unsloth-Apriel-1.5.jinja", TOOLCALL_FORMAT_APRIEL, REASONING_MODE_APRIEL},
    {"unsloth-mistral-Devstral-Small-2507.jinja", TOOLCALL_FORMAT_MISTRAL, REASONING_MODE_NONE},
    {"upstage-Solar-Open-100B.jinja", TOOLCALL_FORMAT_SOLAR_OPEN, REASONING_MODE_SOLAR_OPEN},
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

/* Generation prompts of templates-rendered-2026.jsonl: does the output
 * start inside the reasoning (the template opened the block)? */
static const struct {
    const char *file, *conversation;
    bool inside;
} inside2026[] = {
    {"Apertus-8B-Instruct.jinja", "single_user", false},
    {"Apertus-8B-Instruct.jinja", "multi_turn_enable_thinking", false},
    {"Apriel-1.6-15b-Thinker-fixed.jinja", "single_user", true},
    {"unsloth-Apriel-1.5.jinja", "single_user", true},
    {"Cohere2MoE.jinja", "single_user", true},
    {"Cohere2MoE.jinja", "multi_turn_reasoning_effort", false},
    {"Kimi-K3.jinja", "single_user", true},
    {"MiniMax-M3.jinja", "single_user", false},
    {"google-gemma-4-31B-it.jinja", "single_user", false},
    {"google-gemma-4-31B-it.jinja", "multi_turn_enable_thinking", false},
    {"google-gemma-4-31B-it-interleaved.jinja", "single_user", false},
    {"tencent-Hy3.jinja", "single_user", false},
    {"tencent-Hy3.jinja", "multi_turn_reasoning_effort", true},
    {"upstage-Solar-Open-100B.jinja", "single_user", false},
    {"upstage-Solar-Open-100B.jinja", "multi_turn_reasoning_effort", false},
    {"Bielik-11B-v3.0-Instruct.jinja", "multi_turn_enable_thinking", true},
    {"Bielik-11B-v3.0-Instruct.jinja", "single_user", false},
    {"ByteDance-Seed-OSS.jinja", "single_user", false},
    {"GLM-4.6.jinja", "multi_turn_enable_thinking", false},
    {"GLM-4.6.jinja", "single_user", false},
    {"GLM-4.7-Flash.jinja", "multi_turn_enable_thinking", false},
    {"GLM-4.7-Flash.jinja", "single_user", true},
    {"HuggingFaceTB-SmolLM3-3B.jinja", "multi_turn_enable_thinking", false},
    {"HuggingFaceTB-SmolLM3-3B.jinja", "single_user", false},
    {"Kimi-K2-Thinking.jinja", "single_user", true},
    {"LFM2.5-8B-A1B.jinja", "single_user", false},
    {"LFM2.5-Instruct.jinja", "single_user", false},
    {"MiniMax-M2.jinja", "single_user", true},
    {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja", "multi_turn_enable_thinking", false},
    {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja", "single_user", true},
    {"NVIDIA-Nemotron-Nano-v2.jinja", "single_user", true},
    {"Qwen-QwQ-32B.jinja", "multi_turn_enable_thinking", true},
    {"Qwen-QwQ-32B.jinja", "single_user", false},
    {"Qwen-Qwen3-0.6B.jinja", "multi_turn_enable_thinking", false},
    {"Qwen-Qwen3-0.6B.jinja", "single_user", false},
    {"Qwen3.5-4B.jinja", "multi_turn_enable_thinking", false},
    {"Qwen3.5-4B.jinja", "single_user", true},
    {"Reka-Edge.jinja", "multi_turn_enable_thinking", true},
    {"Reka-Edge.jinja", "single_user", false},
    {"Spark2.5.jinja", "multi_turn_enable_thinking", false},
    {"Spark2.5.jinja", "single_user", true},
    {"StepFun3.5-Flash.jinja", "single_user", true},
    {"deepseek-ai-DeepSeek-V3.1.jinja", "multi_turn_enable_thinking", true},
    {"deepseek-ai-DeepSeek-V3.1.jinja", "single_user", false},
    {"deepseek-ai-DeepSeek-V3.2.jinja", "multi_turn_enable_thinking", true},
    {"deepseek-ai-DeepSeek-V3.2.jinja", "single_user", false},
    {"deepseek-ai-DeepSeek-V4-Flash-0731.jinja", "multi_turn_enable_thinking", true},
    {"deepseek-ai-DeepSeek-V4-Flash-0731.jinja", "multi_turn_reasoning_effort", true},
    {"deepseek-ai-DeepSeek-V4-Flash-0731.jinja", "single_user", false},
    {"deepseek-ai-DeepSeek-V4.jinja", "multi_turn_enable_thinking", true},
    {"deepseek-ai-DeepSeek-V4.jinja", "multi_turn_reasoning_effort", true},
    {"deepseek-ai-DeepSeek-V4.jinja", "single_user", false},
    {"ibm-granite-granite-3.3-2B-Instruct.jinja", "single_user", false},
    {"inclusionai-ling-3.0-flash.jinja", "multi_turn_enable_thinking", false},
    {"inclusionai-ling-3.0-flash.jinja", "single_user", true},
    {"llama-cpp-rwkv-world.jinja", "multi_turn_enable_thinking", false},
    {"llama-cpp-rwkv-world.jinja", "single_user", false},
    {"mistralai-Ministral-3-14B-Reasoning-2512.jinja", "single_user", false},
    {"openai-gpt-oss-120b.jinja", "multi_turn_reasoning_effort", false},
    {"openai-gpt-oss-120b.jinja", "single_user", false},
    {"openbmb-MiniCPM5-1B.jinja", "multi_turn_enable_thinking", false},
    {"openbmb-MiniCPM5-1B.jinja", "single_user", false},
    {"poolside-Laguna-S-2.1.jinja", "multi_turn_enable_thinking", false},
    {"poolside-Laguna-S-2.1.jinja", "single_user", true},
    {"poolside-Laguna-XS-2.1.jinja", "multi_turn_enable_thinking", true},
    {"poolside-Laguna-XS-2.1.jinja", "single_user", false},
    {"poolside-Laguna-XS.2.jinja", "multi_turn_enable_thinking", true},
    {"poolside-Laguna-XS.2.jinja", "single_user", false},
};
#define NINSIDE (sizeof inside2026 / sizeof inside2026[0])

static void test_inside_2026(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/templates-rendered-2026.jsonl", dir);
    FILE *f = fopen(path, "r");
    if (!tap_ok(f != NULL, "read templates-rendered-2026.jsonl"))
        return;
    char *line = NULL;
    size_t cap = 0;
    int checked = 0, wrong = 0;
    while (getline(&line, &cap, f) > 0) {
        json_object *rec = json_tokener_parse(line), *tn, *cn, *rn;
        if (rec && json_object_object_get_ex(rec, "template", &tn) &&
            json_object_object_get_ex(rec, "conversation", &cn) && json_object_object_get_ex(rec, "rendered", &rn))
            for (size_t i = 0; i < NINSIDE; i++) {
                if (strcmp(inside2026[i].file, json_object_get_string(tn)) ||
                    strcmp(inside2026[i].conversation, json_object_get_string(cn)))
                    continue;
                reasoning_mode_t m = REASONING_MODE_NONE;
                for (size_t k = 0; k < NEXPECT; k++)
                    if (!strcmp(expect[k].file, inside2026[i].file))
                        m = expect[k].reasoning;
                bool got = reasoning_starts_inside(m, json_object_get_string(rn),
                                                   (size_t)json_object_get_string_len(rn));
                checked++;
                if (got != inside2026[i].inside) {
                    wrong++;
                    tap_diag("%s %s: starts inside %d", inside2026[i].file, inside2026[i].conversation, got);
                }
            }
        json_object_put(rec);
    }
    free(line);
    fclose(f);
    tap_ok(checked == (int)NINSIDE && wrong == 0, "starts_inside on %d newer prompts (thinking on and off)", checked);
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
        /* as the server detects: the source with the probe's render */
        char note[600];
        bool failed = false;
        chat_tmpl_renderer_t *r = chat_tmpl_renderer_new(t, "<s>", "</s>", note, sizeof note, &failed);
        const char *dt = chat_tmpl_renderer_detect_text(r);
        size_t dl = dt ? strlen(dt) : 0;
        toolcall_format_t f = toolcall_format_detect(dt, dl);
        reasoning_mode_t m = reasoning_mode_detect(dt, dl);
        tap_ok(f == expect[i].tools, "%s: tool parser %s", expect[i].file, toolcall_format_name(f));
        tap_ok(m == expect[i].reasoning, "%s: reasoning parser %s", expect[i].file, reasoning_mode_name(m));
        chat_tmpl_renderer_free(r);
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
    test_inside_2026(dir);
    return tap_done();
}
