/* reasoning_formats.c - the reasoning formats: their descriptions, names
 * and detection from a chat template (see reasoning.h). */
#include "chat/parse/reasoning.h"
#include "chat/parse/parser_names.h"

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

/* DeepSeek V3.2 / V4: the DSML tool-call block also ends the reasoning */
#define DSML "\xef\xbd\x9c" "DSML" "\xef\xbd\x9c"
static const char *const ds_implicit[] = {"<" DSML "function_calls>", "<" DSML "tool_calls>", NULL};
static const char *const ds_tokens[] = {THINK_OPEN, THINK_CLOSE, DSML, NULL};

/* Gemma 4: <|channel>thought\n ... <channel|>; a tool call ends it too */
static const char *const gemma_open[] = {"<|channel>", NULL};
static const char *const gemma_close[] = {"<channel|>", NULL};
static const char *const gemma_implicit[] = {"<|tool_call>", NULL};
static const char *const gemma_tokens[] = {"<|channel>", "<channel|>", "<|tool_call>", NULL};

/* Kimi K3 (XTML sections): the response section ends the think section,
 * its markers are dropped; the tools section ends it and stays content */
#define K3_OPEN(t) "<|open|>" t "<|sep|>"
#define K3_CLOSE(t) "<|close|>" t "<|sep|>"
static const char *const k3_open[] = {K3_OPEN("think"), NULL};
static const char *const k3_close[] = {K3_CLOSE("think"), K3_OPEN("response"), NULL};
static const char *const k3_implicit[] = {K3_OPEN("tools"), NULL};
static const char *const k3_drop[] = {K3_OPEN("response"), K3_CLOSE("response"), K3_CLOSE("message"), NULL};
static const char *const k3_tokens[] = {"<|open|>", "<|close|>", "<|sep|>", NULL};

/* Cohere Command R7B / Command A / Cohere2 */
static const char *const cohere_open[] = {"<|START_THINKING|>", NULL};
static const char *const cohere_close[] = {"<|END_THINKING|>", NULL};
static const char *const cohere_drop[] = {"<|START_RESPONSE|>", "<|END_RESPONSE|>", "<|START_TEXT|>", "<|END_TEXT|>",
                                          NULL};
static const char *const cohere_tokens[] = {"<|START_THINKING|>", "<|END_THINKING|>", "<|START_RESPONSE|>",
                                            "<|END_RESPONSE|>", "<|START_TEXT|>", "<|END_TEXT|>", NULL};

static const char *const apertus_open[] = {"<|inner_prefix|>", NULL};
static const char *const apertus_close[] = {"<|inner_suffix|>", NULL};
static const char *const apertus_tokens[] = {"<|inner_prefix|>", "<|inner_suffix|>", NULL};

/* Apriel: the prompt opens the reasoning with a phrase, a marker ends it */
static const char *const apriel_open[] = {"Here are my reasoning steps:\n", NULL};
static const char *const apriel_close[] = {"[BEGIN FINAL RESPONSE]", NULL};
static const char *const apriel_drop[] = {"[END FINAL RESPONSE]", "<|end|>", NULL};
static const char *const apriel_tokens[] = {"<|end|>", NULL};

static const char *const mm3_open[] = {"<mm:think>", NULL};
static const char *const mm3_close[] = {"</mm:think>", NULL};
static const char *const mm3_tokens[] = {"<mm:think>", "</mm:think>", NULL};

static const char *const hy_open[] = {"<think:opensource>", NULL};
static const char *const hy_close[] = {"</think:opensource>", NULL};
static const char *const hy_tokens[] = {"<think:opensource>", "</think:opensource>", NULL};

/* Solar Open: channels after "<|begin|>assistant": <|think|> ... <|end|>,
 * then <|content|> (dropped with its <|end|>) or <|tool_calls|> (content,
 * for the tool-call parser) */
static const char *const solar_open[] = {"<|think|>", NULL};
static const char *const solar_close[] = {"<|end|>", NULL};
static const char *const solar_drop[] = {"<|begin|>assistant", "<|content|>", "<|end|>", "<|flush|>", NULL};
static const char *const solar_tokens[] = {"<|think|>", "<|end|>", "<|begin|>", "<|content|>", "<|flush|>", NULL};

static const char *const muse_tokens[] = {"<|start|>", "<|message|>", "<|eom|>", "<|eot|>", NULL};

#define F(m, n, ...) [REASONING_MODE_##m] = {.mode = REASONING_MODE_##m, .name = n, __VA_ARGS__}

static const reasoning_format_t formats[REASONING_MODE_COUNT] = {
    F(DEEPSEEK_R1, "deepseek_r1", .open = think_open, .close = think_close, .start = REASONING_START_INSIDE,
      .tokens = think_tokens),
    F(QWEN3, "qwen3", .open = think_open, .close = think_close, .start = REASONING_START_CONTENT,
      .tokens = think_tokens),
    F(DEEPSEEK_V3, "deepseek_v3", .open = think_open, .close = think_close, .implicit_close = ds_implicit,
      .start = REASONING_START_TOGGLE, .tokens = ds_tokens),
    F(GPT_OSS, "gpt-oss", .start = REASONING_START_HARMONY, .tokens = harmony_tokens),
    F(MISTRAL, "mistral", .open = mistral_open, .close = mistral_close, .start = REASONING_START_CONTENT,
      .tokens = mistral_tokens),
    F(GRANITE, "granite", .open = granite_open, .close = granite_close, .drop = granite_drop,
      .start = REASONING_START_CONTENT, .tokens = think_tokens),
    F(GLM45, "glm45", .open = think_open, .close = think_close, .start = REASONING_START_CONTENT,
      .tokens = think_tokens),
    F(KIMI_K2, "kimi_k2", .open = think_open, .close = think_close, .implicit_close = kimi_implicit,
      .start = REASONING_START_INSIDE, .tokens = kimi_tokens),
    F(MINIMAX_M2, "minimax_m2", .open = think_open, .close = think_close, .start = REASONING_START_INSIDE,
      .tokens = think_tokens),
    F(SEED_OSS, "seed_oss", .open = seed_open, .close = seed_close, .start = REASONING_START_CONTENT,
      .tokens = seed_tokens),
    F(GEMMA4, "gemma4", .open = gemma_open, .close = gemma_close, .implicit_close = gemma_implicit,
      .open_label = "thought\n", .multi_block = true, .start = REASONING_START_CONTENT, .tokens = gemma_tokens),
    F(KIMI_K3, "kimi_k3", .open = k3_open, .close = k3_close, .implicit_close = k3_implicit, .drop = k3_drop,
      .start = REASONING_START_CONTENT, .tokens = k3_tokens),
    F(COHERE, "cohere_command3", .open = cohere_open, .close = cohere_close, .drop = cohere_drop,
      .start = REASONING_START_CONTENT, .tokens = cohere_tokens),
    F(APERTUS, "apertus", .open = apertus_open, .close = apertus_close, .start = REASONING_START_CONTENT,
      .tokens = apertus_tokens),
    F(APRIEL, "apriel", .open = apriel_open, .close = apriel_close, .drop = apriel_drop,
      .start = REASONING_START_INSIDE, .tokens = apriel_tokens),
    F(MINIMAX_M3, "minimax_m3", .open = mm3_open, .close = mm3_close, .start = REASONING_START_CONTENT,
      .tokens = mm3_tokens),
    F(HY_V3, "hy_v3", .open = hy_open, .close = hy_close, .start = REASONING_START_CONTENT, .tokens = hy_tokens),
    F(SOLAR_OPEN, "solar_open", .open = solar_open, .close = solar_close, .drop = solar_drop,
      .start = REASONING_START_CONTENT, .tokens = solar_tokens),
    F(MUSE_GLIMMER, "muse_glimmer", .start = REASONING_START_HARMONY, .tokens = muse_tokens),
};

#undef F

const reasoning_format_t *reasoning_format(reasoning_mode_t mode)
{
    if ((unsigned)mode >= REASONING_MODE_COUNT || !formats[mode].name)
        return NULL;
    return &formats[mode];
}

/* vLLM's and llama.cpp's other names for the same parsers */
static const parser_alias_t aliases[] = {
    {"openai_gptoss", REASONING_MODE_GPT_OSS}, {"gpt_oss", REASONING_MODE_GPT_OSS},
    {"deepseek_v32", REASONING_MODE_DEEPSEEK_V3}, {"deepseek_v4", REASONING_MODE_DEEPSEEK_V3},
    {"cohere_command4", REASONING_MODE_COHERE}, {"glm47", REASONING_MODE_GLM45},
    {"mimo", REASONING_MODE_QWEN3}, {"nemotron_v3", REASONING_MODE_QWEN3}, {"nemotron", REASONING_MODE_QWEN3},
};

const char *reasoning_mode_name(reasoning_mode_t mode)
{
    if (mode == REASONING_MODE_NONE)
        return "none";
    if (mode == REASONING_MODE_GENERIC)
        return "generic";
    const reasoning_format_t *f = reasoning_format(mode);
    return f ? f->name : "unknown";
}

static const char *name_of(int i)
{
    return reasoning_mode_name((reasoning_mode_t)i);
}

lf_code_t reasoning_mode_from_name(const char *name, reasoning_mode_t *mode, lf_err_t *err)
{
    int id = 0;
    lf_code_t rc = parser_name_lookup("reasoning parser", name, REASONING_MODE_COUNT, name_of, aliases,
                                      sizeof aliases / sizeof aliases[0], &id, err);
    if (rc == LF_OK)
        *mode = (reasoning_mode_t)id;
    return rc;
}

reasoning_mode_t reasoning_mode_detect(const char *tmpl, size_t len)
{
    if (parser_text_has(tmpl, len, "<|channel|>"))
        return REASONING_MODE_GPT_OSS;
    if (parser_text_has(tmpl, len, "<|channel>") && parser_text_has(tmpl, len, "<channel|>"))
        return REASONING_MODE_GEMMA4;
    if (parser_text_has(tmpl, len, "<atem:function_calls>") && parser_text_has(tmpl, len, "to=self"))
        return REASONING_MODE_MUSE_GLIMMER;
    if (parser_text_has(tmpl, len, "<|open|>") && parser_text_has(tmpl, len, "<|close|>") &&
        parser_text_has(tmpl, len, "<|sep|>") &&
        parser_text_has(tmpl, len, "think"))
        return REASONING_MODE_KIMI_K3;
    if (parser_text_has(tmpl, len, "[THINK]"))
        return REASONING_MODE_MISTRAL;
    if (parser_text_has(tmpl, len, "<seed:think>"))
        return REASONING_MODE_SEED_OSS;
    if (parser_text_has(tmpl, len, "<|START_THINKING|>"))
        return REASONING_MODE_COHERE;
    if (parser_text_has(tmpl, len, "<|inner_prefix|>") && parser_text_has(tmpl, len, "<|inner_suffix|>"))
        return REASONING_MODE_APERTUS;
    if (parser_text_has(tmpl, len, "[BEGIN FINAL RESPONSE]"))
        return REASONING_MODE_APRIEL;
    if (parser_text_has(tmpl, len, "<mm:think>"))
        return REASONING_MODE_MINIMAX_M3;
    if (parser_text_has(tmpl, len, "<think:opensource>"))
        return REASONING_MODE_HY_V3;
    if (parser_text_has(tmpl, len, "<|think|>") && parser_text_has(tmpl, len, "<|begin|>assistant"))
        return REASONING_MODE_SOLAR_OPEN;
    if (parser_text_has(tmpl, len, "thought process") && parser_text_has(tmpl, len, "<|start_of_role|>"))
        return REASONING_MODE_GRANITE;
    if (!parser_text_has(tmpl, len, THINK_OPEN) && !parser_text_has(tmpl, len, THINK_CLOSE))
        return REASONING_MODE_NONE;
    if (parser_text_has(tmpl, len, "<minimax:tool_call>"))
        return REASONING_MODE_MINIMAX_M2;
    if (parser_text_has(tmpl, len, "<|tool_calls_section_begin|>"))
        return REASONING_MODE_KIMI_K2;
    if (parser_text_has(tmpl, len, "<arg_key>") || parser_text_has(tmpl, len, "[gMASK]"))
        return REASONING_MODE_GLM45;
    if (parser_text_has(tmpl, len, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>"))
        return parser_text_has(tmpl, len, "thinking") ? REASONING_MODE_DEEPSEEK_V3 : REASONING_MODE_DEEPSEEK_R1;
    if (parser_text_has(tmpl, len, "enable_thinking"))
        return REASONING_MODE_QWEN3;
    if (parser_text_has(tmpl, len, "<|im_start|>"))
        return REASONING_MODE_QWEN3;
    return REASONING_MODE_DEEPSEEK_R1;
}
