/* reasoning_formats.c - the reasoning formats: their descriptions, names
 * and detection from a chat template (see reasoning.h). */
#include "chat/parse/reasoning.h"

#include <string.h>

#define THINK_OPEN "<think>"
#define THINK_CLOSE "</think>"

static const char *const think_open[] = {THINK_OPEN, NULL};
static const char *const think_close[] = {THINK_CLOSE, NULL};
static const char *const think_tokens[] = {THINK_OPEN, THINK_CLOSE, NULL};

static const char *const kimi_implicit[] = {"<|tool_calls_section_begin|>", NULL};
static const char *const kimi_tokens[] = {THINK_OPEN, THINK_CLOSE, "<|tool_calls_section_begin|>", NULL};

static const char *const seed_open[] = {"<seed:think>", NULL};
static const char *const seed_close[] = {"</seed:think>", NULL};
static const char *const seed_tokens[] = {"<seed:think>", "</seed:think>", NULL};

static const char *const mistral_open[] = {"[THINK]", NULL};
static const char *const mistral_close[] = {"[/THINK]", NULL};
static const char *const mistral_tokens[] = {"[THINK]", "[/THINK]", NULL};

static const char *const granite_open[] = {"Here is my thought process:", "Here's my thought process:", THINK_OPEN,
                                           NULL};
static const char *const granite_close[] = {"Here is my response:", "Here's my response:", THINK_CLOSE, NULL};
static const char *const granite_drop[] = {"<response>", "</response>", NULL};

static const char *const harmony_tokens[] = {"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>",
                                             "<|end|>", "<|call|>", "<|return|>", NULL};

static const reasoning_format_t formats[REASONING_MODE_COUNT] = {
    [REASONING_MODE_DEEPSEEK_R1] = {REASONING_MODE_DEEPSEEK_R1, "deepseek_r1", think_open, think_close, NULL, NULL,
                                    REASONING_START_INSIDE, think_tokens},
    [REASONING_MODE_QWEN3] = {REASONING_MODE_QWEN3, "qwen3", think_open, think_close, NULL, NULL,
                              REASONING_START_CONTENT, think_tokens},
    [REASONING_MODE_DEEPSEEK_V3] = {REASONING_MODE_DEEPSEEK_V3, "deepseek_v3", think_open, think_close, NULL, NULL,
                                    REASONING_START_TOGGLE, think_tokens},
    [REASONING_MODE_GPT_OSS] = {REASONING_MODE_GPT_OSS, "gpt-oss", NULL, NULL, NULL, NULL, REASONING_START_HARMONY,
                                harmony_tokens},
    [REASONING_MODE_MISTRAL] = {REASONING_MODE_MISTRAL, "mistral", mistral_open, mistral_close, NULL, NULL,
                                REASONING_START_CONTENT, mistral_tokens},
    [REASONING_MODE_GRANITE] = {REASONING_MODE_GRANITE, "granite", granite_open, granite_close, NULL, granite_drop,
                                REASONING_START_CONTENT, think_tokens},
    [REASONING_MODE_GLM45] = {REASONING_MODE_GLM45, "glm45", think_open, think_close, NULL, NULL,
                              REASONING_START_CONTENT, think_tokens},
    [REASONING_MODE_KIMI_K2] = {REASONING_MODE_KIMI_K2, "kimi_k2", think_open, think_close, kimi_implicit, NULL,
                                REASONING_START_INSIDE, kimi_tokens},
    [REASONING_MODE_MINIMAX_M2] = {REASONING_MODE_MINIMAX_M2, "minimax_m2", think_open, think_close, NULL, NULL,
                                   REASONING_START_INSIDE, think_tokens},
    [REASONING_MODE_SEED_OSS] = {REASONING_MODE_SEED_OSS, "seed_oss", seed_open, seed_close, NULL, NULL,
                                 REASONING_START_CONTENT, seed_tokens},
};

const reasoning_format_t *reasoning_format(reasoning_mode_t mode)
{
    if ((unsigned)mode >= REASONING_MODE_COUNT || !formats[mode].name)
        return NULL;
    return &formats[mode];
}

static const char *const mode_names[REASONING_MODE_COUNT] = {
    [REASONING_MODE_NONE] = "none",           [REASONING_MODE_DEEPSEEK_R1] = "deepseek_r1",
    [REASONING_MODE_QWEN3] = "qwen3",         [REASONING_MODE_DEEPSEEK_V3] = "deepseek_v3",
    [REASONING_MODE_GPT_OSS] = "gpt-oss",     [REASONING_MODE_MISTRAL] = "mistral",
    [REASONING_MODE_GRANITE] = "granite",     [REASONING_MODE_GLM45] = "glm45",
    [REASONING_MODE_KIMI_K2] = "kimi_k2",     [REASONING_MODE_MINIMAX_M2] = "minimax_m2",
    [REASONING_MODE_SEED_OSS] = "seed_oss",   [REASONING_MODE_GENERIC] = "generic",
};

lf_code_t reasoning_mode_from_name(const char *name, reasoning_mode_t *mode, lf_err_t *err)
{
    for (int i = 0; name && i < REASONING_MODE_COUNT; i++)
        if (!strcmp(name, mode_names[i])) {
            *mode = (reasoning_mode_t)i;
            return LF_OK;
        }
    if (name && (!strcmp(name, "openai_gptoss") || !strcmp(name, "gpt_oss"))) {
        *mode = REASONING_MODE_GPT_OSS;
        return LF_OK;
    }
    return lf_err_set(err, LF_ERR_INVALID,
                      "unknown reasoning parser '%s' (expected none, deepseek_r1, qwen3, deepseek_v3, gpt-oss, "
                      "mistral, granite, glm45, kimi_k2, minimax_m2, seed_oss or generic)",
                      name ? name : "(null)");
}

const char *reasoning_mode_name(reasoning_mode_t mode)
{
    return (unsigned)mode < REASONING_MODE_COUNT ? mode_names[mode] : "unknown";
}

static bool contains(const char *hay, size_t len, const char *needle)
{
    return hay && memmem(hay, len, needle, strlen(needle)) != NULL;
}

reasoning_mode_t reasoning_mode_detect(const char *tmpl, size_t len)
{
    if (contains(tmpl, len, "<|channel|>"))
        return REASONING_MODE_GPT_OSS;
    if (contains(tmpl, len, "[THINK]"))
        return REASONING_MODE_MISTRAL;
    if (contains(tmpl, len, "<seed:think>"))
        return REASONING_MODE_SEED_OSS;
    if (contains(tmpl, len, "thought process") && contains(tmpl, len, "<|start_of_role|>"))
        return REASONING_MODE_GRANITE;
    if (!contains(tmpl, len, THINK_OPEN) && !contains(tmpl, len, THINK_CLOSE))
        return REASONING_MODE_NONE;
    if (contains(tmpl, len, "<minimax:tool_call>"))
        return REASONING_MODE_MINIMAX_M2;
    if (contains(tmpl, len, "<|tool_calls_section_begin|>"))
        return REASONING_MODE_KIMI_K2;
    if (contains(tmpl, len, "<arg_key>") || contains(tmpl, len, "[gMASK]"))
        return REASONING_MODE_GLM45;
    if (contains(tmpl, len, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>"))
        return contains(tmpl, len, "thinking") ? REASONING_MODE_DEEPSEEK_V3 : REASONING_MODE_DEEPSEEK_R1;
    if (contains(tmpl, len, "enable_thinking"))
        return REASONING_MODE_QWEN3;
    if (contains(tmpl, len, "<|im_start|>"))
        return REASONING_MODE_QWEN3;
    return REASONING_MODE_DEEPSEEK_R1;
}
