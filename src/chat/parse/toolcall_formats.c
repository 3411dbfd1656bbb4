/* toolcall_formats.c - the tool-call formats: their descriptions (exact
 * markup, see toolcall_format_desc_t), names and detection from a chat
 * template (see toolcall.h). */
#include "chat/parse/toolcall.h"
#include "chat/parse/parser_names.h"

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
/* DeepSeek V3.2 / V4 "DSML" markup: every tag starts with "<｜DSML｜" */
#define DSMLT "\xef\xbd\x9c" "DSML" "\xef\xbd\x9c"
#define DSML_OPEN(t) "<" DSMLT t
#define DSML_CLOSE(t) "</" DSMLT t
static const char *const dsml_tokens[] = {DSMLT, NULL};
static const char *const gemma_tokens[] = {"<|tool_call>", "<tool_call|>", "<|\"|>", NULL};
static const char *const nemotron_tokens[] = {"<TOOLCALL>", "</TOOLCALL>", NULL};
static const char *const k3_tokens[] = {"<|open|>", "<|close|>", "<|sep|>", NULL};
static const char *const cohere_tokens[] = {"<|START_ACTION|>", "<|END_ACTION|>", NULL};
static const char *const tool_calls_tokens[] = {"<tool_calls>", "</tool_calls>", NULL};
static const char *const giga_tokens[] = {"<|message_sep|>", "<|role_sep|>", "<|function_call|>", NULL};
static const char *const apertus_tokens[] = {"<|tools_prefix|>", "<|tools_suffix|>", NULL};
#define MM3 "]<]minimax[>["
static const char *const mm3_tokens[] = {MM3, "<tool_call>", "</tool_call>", NULL};
#define HY(t) "<" t ":opensource>"
#define HYC(t) "</" t ":opensource>"
static const char *const hy_tokens[] = {HY("tool_calls"), HYC("tool_calls"), HY("tool_call"), HYC("tool_call"),
                                        HY("tool_sep"), HY("arg_key"), HYC("arg_key"), HY("arg_value"),
                                        HYC("arg_value"), NULL};
static const char *const solar_tokens[] = {"<|tool_calls|>", "<|tool_call:begin|>", "<|tool_call:name|>",
                                           "<|tool_call:args|>", "<|tool_call:end|>", "<|calls|>", NULL};
static const char *const minicpm_tokens[] = {"<function", "</function>", "<param", "</param>", NULL};
static const char *const fv31_tokens[] = {"<function=", "</function>", NULL};
static const char *const fv32_tokens[] = {">>>", NULL};
static const char *const muse_tokens[] = {"<atem:function_calls>", "</atem:function_calls>", "<atem:invoke",
                                          "</atem:invoke>", "<atem:parameter", "</atem:parameter>", NULL};

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
    [TOOLCALL_FORMAT_DEEPSEEK_V32] = {
        .format = TOOLCALL_FORMAT_DEEPSEEK_V32, .name = "deepseek_v32", .layout = L_NP,
        .section_open = DSML_OPEN("function_calls>"), .section_close = DSML_CLOSE("function_calls>"),
        .call_open = DSML_OPEN("invoke name=\""), .call_close = DSML_CLOSE("invoke>"), .call_sep = "\n",
        .name_close = "\">", .key_open = DSML_OPEN("parameter name=\""), .key_close = "\"",
        .value_attr = " string=\"", .value_attr_string = "true", .value_attr_json = "false", .key_end = ">",
        .value_close = DSML_CLOSE("parameter>"), .tokens = dsml_tokens,
        .example = DSML_OPEN("function_calls>\n") DSML_OPEN("invoke name=\"get_weather\">\n")
                   DSML_OPEN("parameter name=\"city\" string=\"true\">Paris") DSML_CLOSE("parameter>\n")
                   DSML_CLOSE("invoke>\n") DSML_CLOSE("function_calls>")},
    [TOOLCALL_FORMAT_DEEPSEEK_V4] = {
        .format = TOOLCALL_FORMAT_DEEPSEEK_V4, .name = "deepseek_v4", .layout = L_NP,
        .section_open = DSML_OPEN("tool_calls>"), .section_close = DSML_CLOSE("tool_calls>"),
        .call_open = DSML_OPEN("invoke name=\""), .call_close = DSML_CLOSE("invoke>"), .call_sep = "\n",
        .name_close = "\">", .key_open = DSML_OPEN("parameter name=\""), .key_close = "\"",
        .value_attr = " string=\"", .value_attr_string = "true", .value_attr_json = "false", .key_end = ">",
        .value_close = DSML_CLOSE("parameter>"), .tokens = dsml_tokens,
        .example = DSML_OPEN("tool_calls>\n") DSML_OPEN("invoke name=\"get_weather\">\n")
                   DSML_OPEN("parameter name=\"city\" string=\"true\">Paris") DSML_CLOSE("parameter>\n")
                   DSML_CLOSE("invoke>\n") DSML_CLOSE("tool_calls>")},
    [TOOLCALL_FORMAT_GEMMA4] = {
        .format = TOOLCALL_FORMAT_GEMMA4, .name = "gemma4", .layout = L_NJ,
        .call_open = "<|tool_call>", .call_close = "<tool_call|>", .name_prefix = "call:", .string_delim = "<|\"|>",
        .tokens = gemma_tokens, .example = "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>"},
    [TOOLCALL_FORMAT_NEMOTRON] = {
        .format = TOOLCALL_FORMAT_NEMOTRON, .name = "nemotron_json", .layout = L_JSON,
        .section_open = "<TOOLCALL>[", .section_close = "]</TOOLCALL>", .call_sep = ", ", .tokens = nemotron_tokens,
        .example = "<TOOLCALL>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]</TOOLCALL>"},
    [TOOLCALL_FORMAT_KIMI_K3] = {
        .format = TOOLCALL_FORMAT_KIMI_K3, .name = "kimi_k3", .layout = L_NP,
        .section_open = "<|open|>tools<|sep|>", .section_close = "<|close|>tools<|sep|>",
        .call_open = "<|open|>call tool=\"", .call_close = "<|close|>call<|sep|>", .name_close = "\"",
        .name_attr = " index=\"", .name_end = "<|sep|>", .key_open = "<|open|>argument key=\"", .key_close = "\"",
        .value_attr = " type=\"", .value_attr_string = "string", .key_end = "<|sep|>",
        .value_close = "<|close|>argument<|sep|>", .args_open = "<|open|>json type=\"object\"<|sep|>",
        .args_close = "<|close|>json<|sep|>", .tokens = k3_tokens,
        .example = "<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|>"
                   "<|open|>argument key=\"city\" type=\"string\"<|sep|>Paris<|close|>argument<|sep|>"
                   "<|close|>call<|sep|><|close|>tools<|sep|>"},
    [TOOLCALL_FORMAT_COHERE] = {
        .format = TOOLCALL_FORMAT_COHERE, .name = "cohere_command3", .layout = L_JSON,
        .section_open = "<|START_ACTION|>[", .section_close = "]<|END_ACTION|>", .call_sep = ",",
        .name_key = "tool_name", .args_key = "parameters", .tokens = cohere_tokens,
        .example = "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", "
                   "\"parameters\": {\"city\": \"Paris\"}}\n]<|END_ACTION|>"},
    [TOOLCALL_FORMAT_APRIEL] = {
        .format = TOOLCALL_FORMAT_APRIEL, .name = "apriel", .layout = L_JSON,
        .section_open = "<tool_calls>[", .section_close = "]</tool_calls>", .call_sep = ", ",
        .tokens = tool_calls_tokens,
        .example = "<tool_calls>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]</tool_calls>"},
    [TOOLCALL_FORMAT_MINIMAX] = {
        .format = TOOLCALL_FORMAT_MINIMAX, .name = "minimax", .layout = L_JSON,
        .section_open = "<tool_calls>\n", .section_close = "</tool_calls>", .call_sep = "\n",
        .tokens = tool_calls_tokens,
        .example = "<tool_calls>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_calls>"},
    [TOOLCALL_FORMAT_GIGACHAT3] = {
        .format = TOOLCALL_FORMAT_GIGACHAT3, .name = "gigachat3", .layout = L_JSON,
        .call_open = "<|message_sep|>\n\nfunction call<|role_sep|>\n", .tokens = giga_tokens,
        .example = "<|message_sep|>\n\nfunction call<|role_sep|>\n"
                   "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}"},
    [TOOLCALL_FORMAT_GIGACHAT31] = {
        .format = TOOLCALL_FORMAT_GIGACHAT31, .name = "gigachat31", .layout = L_JSON,
        .call_open = "<|function_call|>", .tokens = giga_tokens,
        .example = "<|function_call|>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}"},
    [TOOLCALL_FORMAT_APERTUS] = {
        .format = TOOLCALL_FORMAT_APERTUS, .name = "apertus", .layout = TOOLCALL_LAYOUT_JSON_NAMED,
        .section_open = "<|tools_prefix|>[", .section_close = "]<|tools_suffix|>", .call_sep = ", ",
        .tokens = apertus_tokens,
        .example = "<|tools_prefix|>[{\"get_weather\": {\"city\": \"Paris\"}}]<|tools_suffix|>"},
    [TOOLCALL_FORMAT_MINIMAX_M3] = {
        .format = TOOLCALL_FORMAT_MINIMAX_M3, .name = "minimax_m3", .layout = L_NP,
        .section_open = MM3 "<tool_call>", .section_close = MM3 "</tool_call>", .call_open = MM3 "<invoke name=\"",
        .call_close = MM3 "</invoke>", .call_sep = "\n", .name_close = "\">", .key_open = MM3 "<", .key_close = ">",
        .item_tag = "item", .tokens = mm3_tokens,
        .example = MM3 "<tool_call>\n" MM3 "<invoke name=\"get_weather\">" MM3 "<city>Paris" MM3 "</city>" MM3
                   "</invoke>\n" MM3 "</tool_call>"},
    [TOOLCALL_FORMAT_HY_V3] = {
        .format = TOOLCALL_FORMAT_HY_V3, .name = "hy_v3", .layout = L_NP,
        .section_open = HY("tool_calls"), .section_close = HYC("tool_calls"), .call_open = HY("tool_call"),
        .call_close = HYC("tool_call"), .call_sep = "\n", .name_close = HY("tool_sep"), .key_open = HY("arg_key"),
        .key_close = HYC("arg_key"), .value_open = HY("arg_value"), .value_close = HYC("arg_value"),
        .tokens = hy_tokens,
        .example = HY("tool_calls") "\n" HY("tool_call") "get_weather" HY("tool_sep") "\n" HY("arg_key") "city"
                   HYC("arg_key") "\n" HY("arg_value") "Paris" HYC("arg_value") "\n" HYC("tool_call") "\n"
                   HYC("tool_calls")},
    [TOOLCALL_FORMAT_SOLAR_OPEN] = {
        .format = TOOLCALL_FORMAT_SOLAR_OPEN, .name = "solar_open", .layout = L_NJ,
        .section_open = "<|tool_calls|>", .section_close = "<|calls|>", .call_open = "<|tool_call:begin|>",
        .call_close = "<|tool_call:end|>", .id_close = "<|tool_call:name|>", .name_close = "<|tool_call:args|>",
        .tokens = solar_tokens,
        .example = "<|tool_calls|><|tool_call:begin|>a1b2c3d4e5<|tool_call:name|>get_weather<|tool_call:args|>"
                   "{\"city\": \"Paris\"}<|tool_call:end|><|calls|>"},
    [TOOLCALL_FORMAT_MINICPM5] = {
        .format = TOOLCALL_FORMAT_MINICPM5, .name = "minicpm5", .layout = L_NP,
        .call_open = "<function name=\"", .call_close = "</function>", .name_close = "\">",
        .key_open = "<param name=\"", .key_close = "\">", .value_close = "</param>", .tokens = minicpm_tokens,
        .example = "<function name=\"get_weather\"><param name=\"city\">Paris</param></function>"},
    [TOOLCALL_FORMAT_FUNCTIONARY_V31] = {
        .format = TOOLCALL_FORMAT_FUNCTIONARY_V31, .name = "functionary_v31", .layout = L_NJ,
        .call_open = "<function=", .call_close = "</function>", .name_close = ">", .tokens = fv31_tokens,
        .example = "<function=get_weather>{\"city\": \"Paris\"}</function>"},
    [TOOLCALL_FORMAT_FUNCTIONARY_V32] = {
        .format = TOOLCALL_FORMAT_FUNCTIONARY_V32, .name = "functionary_v32", .layout = L_NJ,
        .call_open = ">>>", .name_close = "\n", .prompt_opens = true, .content_recipient = "all",
        .tokens = fv32_tokens, .example = "get_weather\n{\"city\": \"Paris\"}"},
    [TOOLCALL_FORMAT_MUSE_GLIMMER] = {
        .format = TOOLCALL_FORMAT_MUSE_GLIMMER, .name = "muse_glimmer", .layout = L_NP,
        .section_open = "<atem:function_calls>", .section_close = "</atem:function_calls>",
        .call_open = "<atem:invoke name=\"", .call_close = "</atem:invoke>", .call_sep = "\n", .name_close = "\">",
        .key_open = "<atem:parameter name=\"", .key_close = "\">", .value_close = "</atem:parameter>",
        .tokens = muse_tokens,
        .example = "<atem:function_calls>\n<atem:invoke name=\"get_weather\">\n<atem:parameter name=\"city\">Paris"
                   "</atem:parameter>\n</atem:invoke>\n</atem:function_calls>"},
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

/* vLLM's and llama.cpp's other names for the same parsers */
static const parser_alias_t aliases[] = {
    {"openai", TOOLCALL_FORMAT_GPT_OSS}, {"gpt_oss", TOOLCALL_FORMAT_GPT_OSS},
    {"cohere_command4", TOOLCALL_FORMAT_COHERE}, {"lfm2", TOOLCALL_FORMAT_PYTHONIC},
    {"llama4_pythonic", TOOLCALL_FORMAT_PYTHONIC}, {"qwen3_xml", TOOLCALL_FORMAT_QWEN3_CODER},
    {"glm47", TOOLCALL_FORMAT_GLM45}, {"granite4", TOOLCALL_FORMAT_HERMES},
    {"llama4_json", TOOLCALL_FORMAT_LLAMA3_JSON}, {"nemotron", TOOLCALL_FORMAT_NEMOTRON},
};

const char *toolcall_format_name(toolcall_format_t fmt)
{
    if (fmt == TOOLCALL_FORMAT_NONE)
        return "none";
    const toolcall_format_desc_t *d = toolcall_format_desc(fmt);
    return d ? d->name : "unknown";
}

static const char *name_of(int i)
{
    return toolcall_format_name((toolcall_format_t)i);
}

lf_code_t toolcall_format_from_name(const char *name, toolcall_format_t *fmt, lf_err_t *err)
{
    int id = 0;
    lf_code_t rc = parser_name_lookup("tool-call parser", name, TOOLCALL_FORMAT_COUNT, name_of, aliases,
                                      sizeof aliases / sizeof aliases[0], &id, err);
    if (rc == LF_OK)
        *fmt = (toolcall_format_t)id;
    return rc;
}

toolcall_format_t toolcall_format_detect(const char *tmpl, size_t len)
{
#define HAS(x) parser_text_has(tmpl, len, x)
    if (HAS("<|channel|>"))
        return TOOLCALL_FORMAT_GPT_OSS;
    /* DSML: the rendered markup names the block; in the source, V3.2 is
     * the one that says "function_calls" (llama.cpp's rule) */
    if (HAS(DSML_OPEN("tool_calls>")))
        return TOOLCALL_FORMAT_DEEPSEEK_V4;
    if (HAS(DSML_OPEN("function_calls>")))
        return TOOLCALL_FORMAT_DEEPSEEK_V32;
    if (HAS("DSML") && HAS("dsml_token") && (HAS("function_calls") || HAS("tool_calls")))
        return HAS("function_calls") ? TOOLCALL_FORMAT_DEEPSEEK_V32 : TOOLCALL_FORMAT_DEEPSEEK_V4;
    if (HAS("<|tool_call>call:"))
        return TOOLCALL_FORMAT_GEMMA4;
    if (HAS("<TOOLCALL>"))
        return TOOLCALL_FORMAT_NEMOTRON;
    if (HAS("<|open|>") && HAS("<|close|>") && HAS("<|sep|>"))
        return TOOLCALL_FORMAT_KIMI_K3;
    if (HAS(DS_CALLS_BEGIN))
        return HAS("```json") ? TOOLCALL_FORMAT_DEEPSEEK_V3 : TOOLCALL_FORMAT_DEEPSEEK_V31;
    if (HAS("<|tool_calls_section_begin|>"))
        return TOOLCALL_FORMAT_KIMI_K2;
    if (HAS(MM3) && HAS("<invoke name="))
        return TOOLCALL_FORMAT_MINIMAX_M3;
    if (HAS("<minimax:tool_call>"))
        return TOOLCALL_FORMAT_MINIMAX_M2;
    if (HAS("<|START_ACTION|>"))
        return TOOLCALL_FORMAT_COHERE;
    if (HAS("<|tools_prefix|>"))
        return TOOLCALL_FORMAT_APERTUS;
    if (HAS("<tool_sep") && HAS("<arg_key"))
        return TOOLCALL_FORMAT_HY_V3;
    if (HAS("<|tool_call:begin|>"))
        return TOOLCALL_FORMAT_SOLAR_OPEN;
    if (HAS("<seed:tool_call>"))
        return TOOLCALL_FORMAT_SEED_OSS;
    if (HAS("<arg_key>"))
        return TOOLCALL_FORMAT_GLM45;
    if (HAS("<function name=\"") && HAS("<param name=\""))
        return TOOLCALL_FORMAT_MINICPM5;
    if (HAS("<atem:function_calls>"))
        return TOOLCALL_FORMAT_MUSE_GLIMMER;
    if (HAS("<function=") && HAS("<parameter="))
        return TOOLCALL_FORMAT_QWEN3_CODER;
    if (HAS("<tool_calls>["))
        return TOOLCALL_FORMAT_APRIEL;
    if (HAS("<tool_calls>"))
        return TOOLCALL_FORMAT_MINIMAX;
    if (HAS("<tool_call>"))
        return TOOLCALL_FORMAT_HERMES;
    if (HAS("[TOOL_CALLS]"))
        return TOOLCALL_FORMAT_MISTRAL;
    if (HAS("<|tool_call|>"))
        return TOOLCALL_FORMAT_GRANITE;
    if (HAS("functools"))
        return TOOLCALL_FORMAT_PHI4_MINI_JSON;
    if (HAS("<|function_call|>"))
        return TOOLCALL_FORMAT_GIGACHAT31;
    if (HAS("function call") && HAS("<|role_sep|>"))
        return TOOLCALL_FORMAT_GIGACHAT3;
    if (HAS("<|python_start|>") || HAS("<|tool_call_start|>") || HAS("[func_name1(") || HAS("<|tool_list_start|>") ||
        HAS("List of tools: ["))
        return TOOLCALL_FORMAT_PYTHONIC;
    if (HAS(">>>all") || HAS(">>>${recipient}"))
        return TOOLCALL_FORMAT_FUNCTIONARY_V32;
    if (HAS("<function="))
        return TOOLCALL_FORMAT_FUNCTIONARY_V31;
    if (HAS("<|python_tag|>"))
        return TOOLCALL_FORMAT_LLAMA3_JSON;
    if (HAS("<|start_header_id|>") && HAS("parameters"))
        return TOOLCALL_FORMAT_LLAMA3_JSON;
    return TOOLCALL_FORMAT_NONE;
#undef HAS
}
