/* toolcall_formats.c - the tool-call formats: their descriptions (exact
 * markup, see toolcall_format_desc_t), names and detection from a chat
 * template (see toolcall.h). */
#include "chat/parse/toolcall.h"

#include <string.h>

/* DeepSeek's markers use U+FF5C FULLWIDTH VERTICAL LINE and U+2581 LOWER
 * ONE EIGHTH BLOCK. */
#define DS_BAR "\xef\xbd\x9c"
#define DS_SP "\xe2\x96\x81"
#define DS_CALLS_BEGIN "<" DS_BAR "tool" DS_SP "calls" DS_SP "begin" DS_BAR ">"
#define DS_CALLS_END "<" DS_BAR "tool" DS_SP "calls" DS_SP "end" DS_BAR ">"
#define DS_CALL_BEGIN "<" DS_BAR "tool" DS_SP "call" DS_SP "begin" DS_BAR ">"
#define DS_CALL_END "<" DS_BAR "tool" DS_SP "call" DS_SP "end" DS_BAR ">"
#define DS_SEP "<" DS_BAR "tool" DS_SP "sep" DS_BAR ">"

static const char *const hermes_tokens[] = {"<tool_call>", "</tool_call>", NULL};
static const char *const llama3_tokens[] = {"<|python_tag|>", NULL};
static const char *const mistral_tokens[] = {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", NULL};
static const char *const granite_tokens[] = {"<|tool_call|>", "<tool_call>", NULL};
static const char *const no_tokens[] = {NULL};
static const char *const ds_tokens[] = {DS_CALLS_BEGIN, DS_CALLS_END, DS_CALL_BEGIN, DS_CALL_END, DS_SEP, NULL};
static const char *const kimi_tokens[] = {"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>",
                                          "<|tool_call_begin|>", "<|tool_call_end|>",
                                          "<|tool_call_argument_begin|>", NULL};
static const char *const qwen3c_tokens[] = {"<tool_call>", "</tool_call>", NULL};
static const char *const seed_tokens[] = {"<seed:tool_call>", "</seed:tool_call>", NULL};
static const char *const glm_tokens[] = {"<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>",
                                         "</arg_value>", NULL};
static const char *const minimax_tokens[] = {"<minimax:tool_call>", "</minimax:tool_call>", NULL};
static const char *const pythonic_tokens[] = {"<|python_start|>", "<|python_end|>", "<|python_tag|>",
                                              "<|tool_call_start|>", "<|tool_call_end|>", NULL};
static const char *const harmony_tokens[] = {"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>",
                                             "<|call|>", "<|return|>", NULL};

#define L_JSON TOOLCALL_LAYOUT_JSON_OBJECT
#define L_NJ TOOLCALL_LAYOUT_NAME_JSON
#define L_NP TOOLCALL_LAYOUT_NAME_PARAMS

static const toolcall_format_desc_t descs[TOOLCALL_FORMAT_COUNT] = {
    [TOOLCALL_FORMAT_HERMES] = {
        .format = TOOLCALL_FORMAT_HERMES, .name = "hermes", .layout = L_JSON,
        .call_open = "<tool_call>", .call_close = "</tool_call>", .tokens = hermes_tokens,
        .example = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"},
    [TOOLCALL_FORMAT_LLAMA3_JSON] = {
        .format = TOOLCALL_FORMAT_LLAMA3_JSON, .name = "llama3_json", .layout = L_JSON,
        .section_open = "<|python_tag|>", .call_sep = ";", .whole_message = true, .tokens = llama3_tokens,
        .example = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"},
    [TOOLCALL_FORMAT_MISTRAL] = {
        .format = TOOLCALL_FORMAT_MISTRAL, .name = "mistral", .layout = L_NJ,
        .call_open = "[TOOL_CALLS]", .name_close = "[ARGS]", .tokens = mistral_tokens,
        .example = "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}"},
    [TOOLCALL_FORMAT_GRANITE] = {
        .format = TOOLCALL_FORMAT_GRANITE, .name = "granite", .layout = L_JSON,
        .section_open = "<|tool_call|>[", .section_close = "]", .call_sep = ",", .whole_message = true,
        .tokens = granite_tokens,
        .example = "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]"},
    [TOOLCALL_FORMAT_PHI4_MINI_JSON] = {
        .format = TOOLCALL_FORMAT_PHI4_MINI_JSON, .name = "phi4_mini_json", .layout = L_JSON,
        .section_open = "functools[", .section_close = "]", .call_sep = ",", .tokens = no_tokens,
        .example = "functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]"},
    [TOOLCALL_FORMAT_DEEPSEEK_V3] = {
        .format = TOOLCALL_FORMAT_DEEPSEEK_V3, .name = "deepseek_v3", .layout = L_NJ,
        .section_open = DS_CALLS_BEGIN, .section_close = DS_CALLS_END, .call_open = DS_CALL_BEGIN,
        .call_close = DS_CALL_END, .call_sep = "\n", .name_prefix = "function" DS_SEP, .name_close = "\n",
        .args_open = "```json\n", .args_close = "\n```", .tokens = ds_tokens,
        .example = DS_CALLS_BEGIN DS_CALL_BEGIN "function" DS_SEP "get_weather\n```json\n{\"city\": \"Paris\"}\n```"
                   DS_CALL_END DS_CALLS_END},
    [TOOLCALL_FORMAT_DEEPSEEK_V31] = {
        .format = TOOLCALL_FORMAT_DEEPSEEK_V31, .name = "deepseek_v31", .layout = L_NJ,
        .section_open = DS_CALLS_BEGIN, .section_close = DS_CALLS_END, .call_open = DS_CALL_BEGIN,
        .call_close = DS_CALL_END, .name_close = DS_SEP, .tokens = ds_tokens,
        .example = DS_CALLS_BEGIN DS_CALL_BEGIN "get_weather" DS_SEP "{\"city\": \"Paris\"}" DS_CALL_END DS_CALLS_END},
    [TOOLCALL_FORMAT_KIMI_K2] = {
        .format = TOOLCALL_FORMAT_KIMI_K2, .name = "kimi_k2", .layout = L_NJ,
        .section_open = "<|tool_calls_section_begin|>", .section_close = "<|tool_calls_section_end|>",
        .call_open = "<|tool_call_begin|>", .call_close = "<|tool_call_end|>", .name_prefix = "functions.",
        .name_close = "<|tool_call_argument_begin|>", .tokens = kimi_tokens,
        .example = "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
                   "<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_calls_section_end|>"},
    [TOOLCALL_FORMAT_QWEN3_CODER] = {
        .format = TOOLCALL_FORMAT_QWEN3_CODER, .name = "qwen3_coder", .layout = L_NP,
        .section_open = "<tool_call>", .section_close = "</tool_call>", .call_open = "<function=",
        .call_close = "</function>", .name_close = ">", .key_open = "<parameter=", .key_close = ">",
        .value_close = "</parameter>", .tokens = qwen3c_tokens,
        .example = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
                   "</tool_call>"},
    [TOOLCALL_FORMAT_SEED_OSS] = {
        .format = TOOLCALL_FORMAT_SEED_OSS, .name = "seed_oss", .layout = L_NP,
        .section_open = "<seed:tool_call>", .section_close = "</seed:tool_call>", .call_open = "<function=",
        .call_close = "</function>", .name_close = ">", .key_open = "<parameter=", .key_close = ">",
        .value_close = "</parameter>", .tokens = seed_tokens,
        .example = "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</function>\n"
                   "</seed:tool_call>"},
    [TOOLCALL_FORMAT_GLM45] = {
        .format = TOOLCALL_FORMAT_GLM45, .name = "glm45", .layout = L_NP,
        .call_open = "<tool_call>", .call_close = "</tool_call>", .key_open = "<arg_key>",
        .key_close = "</arg_key>", .value_open = "<arg_value>", .value_close = "</arg_value>", .tokens = glm_tokens,
        .example = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"},
    [TOOLCALL_FORMAT_MINIMAX_M2] = {
        .format = TOOLCALL_FORMAT_MINIMAX_M2, .name = "minimax_m2", .layout = L_NP,
        .section_open = "<minimax:tool_call>", .section_close = "</minimax:tool_call>",
        .call_open = "<invoke name=\"", .call_close = "</invoke>", .name_close = "\">",
        .key_open = "<parameter name=\"", .key_close = "\">", .value_close = "</parameter>", .tokens = minimax_tokens,
        .example = "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n"
                   "</invoke>\n</minimax:tool_call>"},
    [TOOLCALL_FORMAT_PYTHONIC] = {
        .format = TOOLCALL_FORMAT_PYTHONIC, .name = "pythonic", .layout = TOOLCALL_LAYOUT_PYTHONIC,
        .section_open = "[", .section_close = "]", .call_sep = ", ", .whole_message = true, .name_close = "(",
        .key_close = "=", .call_close = ")", .tokens = pythonic_tokens,
        .example = "[get_weather(city=\"Paris\")]"},
    [TOOLCALL_FORMAT_GPT_OSS] = {
        .format = TOOLCALL_FORMAT_GPT_OSS, .name = "gpt-oss", .layout = TOOLCALL_LAYOUT_HARMONY,
        .call_open = "<|start|>assistant<|channel|>commentary to=", .name_prefix = "functions.",
        .name_close = " <|constrain|>json<|message|>", .call_close = "<|call|>", .tokens = harmony_tokens,
        .example = "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
                   "{\"city\": \"Paris\"}<|call|>"},
};

const toolcall_format_desc_t *toolcall_format_desc(toolcall_format_t fmt)
{
    if ((unsigned)fmt >= TOOLCALL_FORMAT_COUNT || !descs[fmt].name)
        return NULL;
    return &descs[fmt];
}

bool toolcall_format_is_marker(toolcall_format_t fmt, const char *text)
{
    const toolcall_format_desc_t *d = toolcall_format_desc(fmt);
    for (const char *const *t = d ? d->tokens : NULL; t && *t && text; t++)
        if (!strcmp(*t, text))
            return true;
    return false;
}

static const char *const format_names[TOOLCALL_FORMAT_COUNT] = {
    [TOOLCALL_FORMAT_NONE] = "none",
    [TOOLCALL_FORMAT_HERMES] = "hermes",
    [TOOLCALL_FORMAT_LLAMA3_JSON] = "llama3_json",
    [TOOLCALL_FORMAT_MISTRAL] = "mistral",
    [TOOLCALL_FORMAT_GRANITE] = "granite",
    [TOOLCALL_FORMAT_PHI4_MINI_JSON] = "phi4_mini_json",
    [TOOLCALL_FORMAT_DEEPSEEK_V3] = "deepseek_v3",
    [TOOLCALL_FORMAT_DEEPSEEK_V31] = "deepseek_v31",
    [TOOLCALL_FORMAT_KIMI_K2] = "kimi_k2",
    [TOOLCALL_FORMAT_QWEN3_CODER] = "qwen3_coder",
    [TOOLCALL_FORMAT_SEED_OSS] = "seed_oss",
    [TOOLCALL_FORMAT_GLM45] = "glm45",
    [TOOLCALL_FORMAT_MINIMAX_M2] = "minimax_m2",
    [TOOLCALL_FORMAT_PYTHONIC] = "pythonic",
    [TOOLCALL_FORMAT_GPT_OSS] = "gpt-oss",
};

lf_code_t toolcall_format_from_name(const char *name, toolcall_format_t *fmt, lf_err_t *err)
{
    for (int i = 0; name && i < TOOLCALL_FORMAT_COUNT; i++)
        if (!strcmp(name, format_names[i])) {
            *fmt = (toolcall_format_t)i;
            return LF_OK;
        }
    if (name && (!strcmp(name, "openai") || !strcmp(name, "gpt_oss"))) {
        *fmt = TOOLCALL_FORMAT_GPT_OSS;
        return LF_OK;
    }
    return lf_err_set(err, LF_ERR_INVALID,
                      "unknown tool-call parser '%s' (expected none, hermes, llama3_json, mistral, granite, "
                      "phi4_mini_json, deepseek_v3, deepseek_v31, kimi_k2, qwen3_coder, seed_oss, glm45, minimax_m2, "
                      "pythonic or gpt-oss)",
                      name ? name : "(null)");
}

const char *toolcall_format_name(toolcall_format_t fmt)
{
    return (unsigned)fmt < TOOLCALL_FORMAT_COUNT ? format_names[fmt] : "unknown";
}

static bool contains(const char *hay, size_t len, const char *needle)
{
    return hay && memmem(hay, len, needle, strlen(needle)) != NULL;
}

toolcall_format_t toolcall_format_detect(const char *tmpl, size_t len)
{
    if (contains(tmpl, len, "<|channel|>"))
        return TOOLCALL_FORMAT_GPT_OSS;
    if (contains(tmpl, len, DS_CALLS_BEGIN))
        return contains(tmpl, len, "```json") ? TOOLCALL_FORMAT_DEEPSEEK_V3 : TOOLCALL_FORMAT_DEEPSEEK_V31;
    if (contains(tmpl, len, "<|tool_calls_section_begin|>"))
        return TOOLCALL_FORMAT_KIMI_K2;
    if (contains(tmpl, len, "<minimax:tool_call>"))
        return TOOLCALL_FORMAT_MINIMAX_M2;
    if (contains(tmpl, len, "<seed:tool_call>"))
        return TOOLCALL_FORMAT_SEED_OSS;
    if (contains(tmpl, len, "<arg_key>"))
        return TOOLCALL_FORMAT_GLM45;
    if (contains(tmpl, len, "<function=") && contains(tmpl, len, "<parameter="))
        return TOOLCALL_FORMAT_QWEN3_CODER;
    if (contains(tmpl, len, "<tool_call>"))
        return TOOLCALL_FORMAT_HERMES;
    if (contains(tmpl, len, "[TOOL_CALLS]"))
        return TOOLCALL_FORMAT_MISTRAL;
    if (contains(tmpl, len, "<|tool_call|>"))
        return TOOLCALL_FORMAT_GRANITE;
    if (contains(tmpl, len, "functools"))
        return TOOLCALL_FORMAT_PHI4_MINI_JSON;
    if (contains(tmpl, len, "<|python_start|>") || contains(tmpl, len, "<|tool_call_start|>") ||
        contains(tmpl, len, "[func_name1("))
        return TOOLCALL_FORMAT_PYTHONIC;
    /* Formats we do not parse, whose templates would otherwise look like
     * Llama 3.1's: functionary v3.1 (<function=...>) and v3.2 (>>>name). */
    if (contains(tmpl, len, "<function=") || contains(tmpl, len, ">>>"))
        return TOOLCALL_FORMAT_NONE;
    if (contains(tmpl, len, "<|python_tag|>"))
        return TOOLCALL_FORMAT_LLAMA3_JSON;
    if (contains(tmpl, len, "<|start_header_id|>") && contains(tmpl, len, "parameters"))
        return TOOLCALL_FORMAT_LLAMA3_JSON;
    return TOOLCALL_FORMAT_NONE;
}
