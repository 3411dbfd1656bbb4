/* test_toolcall_formats.c - the tool-call formats of the 2025-26 models
 * (granite, phi4_mini_json, deepseek_v3, deepseek_v31, kimi_k2,
 * qwen3_coder, seed_oss, glm45, minimax_m2, pythonic, gpt-oss) through the
 * table harness (toolcall_harness.h: token by token, every 2-way split,
 * byte by byte, non-streamed), parameter typing by the request's schema,
 * kimi's ids, every format's own example, and the descriptions. */
#include "toolcall_harness.h"

#define DS_BAR "\xef\xbd\x9c"
#define DS_SP "\xe2\x96\x81"
#define DSB "<" DS_BAR "tool" DS_SP "calls" DS_SP "begin" DS_BAR ">"
#define DSE "<" DS_BAR "tool" DS_SP "calls" DS_SP "end" DS_BAR ">"
#define DCB "<" DS_BAR "tool" DS_SP "call" DS_SP "begin" DS_BAR ">"
#define DCE "<" DS_BAR "tool" DS_SP "call" DS_SP "end" DS_BAR ">"
#define DSEP "<" DS_BAR "tool" DS_SP "sep" DS_BAR ">"

#define GR TOOLCALL_FORMAT_GRANITE
#define PHI TOOLCALL_FORMAT_PHI4_MINI_JSON
#define DV3 TOOLCALL_FORMAT_DEEPSEEK_V3
#define DV31 TOOLCALL_FORMAT_DEEPSEEK_V31
#define KIMI TOOLCALL_FORMAT_KIMI_K2
#define QC TOOLCALL_FORMAT_QWEN3_CODER
#define SEED TOOLCALL_FORMAT_SEED_OSS
#define GLM TOOLCALL_FORMAT_GLM45
#define MM TOOLCALL_FORMAT_MINIMAX_M2
#define PY TOOLCALL_FORMAT_PYTHONIC
#define OSS TOOLCALL_FORMAT_GPT_OSS

/* The request's tools: typed parameters for the XML-style formats. */
static const char tools_json[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\","
    " \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\"},"
    " \"metric\": {\"type\": \"boolean\"}, \"ratio\": {\"type\": \"number\"},"
    " \"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}, \"opts\": {\"type\": \"object\"},"
    " \"note\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]},"
    " \"unit\": {\"enum\": [\"c\", \"f\"]}, \"limit\": {\"type\": [\"integer\", \"null\"]},"
    " \"any\": {\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"array\"}]}}}}},"
    " {\"type\": \"function\", \"function\": {\"name\": \"write_file\", \"parameters\": {\"type\": \"object\","
    " \"properties\": {\"path\": {\"type\": \"string\"}, \"content\": {\"type\": \"string\"}}}}}]";

static const tcase_t cases[] = {
    /* granite: <|tool_call|> then a JSON list, the message start */
    {"granite one call", GR, {"<|tool_call|>", "[{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Paris\"}}]"},
     NULL, 1, {{"get_weather", "{\"city\":\"Paris\"}", true}}},
    {"granite two calls, <tool_call> marker", GR,
     {"<tool_call>[{\"name\":\"a\",\"arguments\":{}},", " {\"name\":\"b\",\"arguments\":{\"x\":1}}]"}, NULL, 2,
     {{"a", "{}", true}, {"b", "{\"x\":1}", true}}},
    {"granite bare list", GR, {" [{\"name\":\"a\",\"arguments\":{}}]"}, NULL, 1, {{"a", "{}", true}}},
    {"granite text is content", GR, {"The answer", " is 4."}, "The answer is 4.", 0, {{0}}},
    {"granite object without list is content", GR, {"<|tool_call|>{\"name\":\"a\"}"}, "<|tool_call|>{\"name\":\"a\"}",
     0, {{0}}},
    /* phi4_mini_json: functools[...] anywhere */
    {"phi4 functools list", PHI, {"Let me look. ", "functools[{\"name\": \"get_weather\", \"arguments\": ",
      "{\"city\": \"Paris\"}}]"}, "Let me look.", 1, {{"get_weather", "{\"city\":\"Paris\"}", true}}},
    {"phi4 two calls", PHI, {"functools[{\"name\":\"a\",\"arguments\":{}}, {\"name\":\"b\",\"arguments\":{}}]"}, NULL, 2,
     {{"a", "{}", true}, {"b", "{}", true}}},
    {"phi4 functools without list is content", PHI, {"functools are nice"}, "functools are nice", 0, {{0}}},
    /* deepseek_v3 (and R1): typed header, fenced JSON */
    {"deepseek_v3 one call", DV3,
     {DSB, DCB, "function", DSEP, "get_weather\n", "```json\n", "{\"city\": \"Paris\"}", "\n```", DCE, DSE}, NULL,
     1, {{"get_weather", "{\"city\":\"Paris\"}", true}}},
    {"deepseek_v3 two calls and text before", DV3,
     {"Checking.", DSB, DCB "function" DSEP "a\n```json\n{}\n```" DCE "\n",
      DCB "function" DSEP "b\n```json\n{\"x\": [1, 2]}\n```" DCE, DSE}, "Checking.", 2,
     {{"a", "{}", true}, {"b", "{\"x\":[1,2]}", true}}},
    {"deepseek_v3 missing fence tolerated", DV3, {DSB DCB "function" DSEP "a\n{\"k\": 1}" DCE DSE}, NULL, 1,
     {{"a", "{\"k\":1}", true}}},
    {"deepseek_v3 cut in the arguments", DV3, {DSB DCB "function" DSEP "a\n```json\n{\"k\": [1"}, NULL, 1,
     {{"a", "{\"k\":[1", false}}},
    {"deepseek_v3 header not closed is content", DV3, {DSB DCB "function" DSEP "a b c"},
     DSB DCB "function" DSEP "a b c", 0, {{0}}},
    /* deepseek_v31: name<sep>{...} */
    {"deepseek_v31 one call", DV31, {DSB, DCB, "get_weather", DSEP, "{\"city\":", " \"Paris\"}", DCE, DSE}, NULL, 1,
     {{"get_weather", "{\"city\":\"Paris\"}", true}}},
    {"deepseek_v31 parallel", DV31, {DSB DCB "a" DSEP "{}" DCE DCB "b" DSEP "{\"q\": \"" DCE "\"}" DCE DSE}, NULL,
     2, {{"a", "{}", true}, {"b", "{\"q\":\"" DCE "\"}", true}}},
    {"deepseek_v31 broken JSON after the name", DV31, {DSB DCB "a" DSEP "{\"k\": oops}" DCE DSE "tail"},
     "oops}" DCE DSE "tail", 1, {{"a", "{\"k\":", false}}},
    {"deepseek_v31 section without calls is content", DV31, {DSB "hello"}, DSB "hello", 0, {{0}}},
    {"deepseek_v31 no section end at the end", DV31, {DSB DCB "a" DSEP "{}" DCE}, NULL, 1, {{"a", "{}", true}}},
    /* kimi_k2: functions.NAME:IDX, the id is the model's (checked below) */
    {"kimi_k2 one call", KIMI,
     {"<|tool_calls_section_begin|>", "<|tool_call_begin|>", "functions.get_weather:0",
      "<|tool_call_argument_begin|>", "{\"city\": \"Paris\"}", "<|tool_call_end|>", "<|tool_calls_section_end|>"},
     NULL, 1, {{"get_weather", "{\"city\":\"Paris\"}", true}}},
    {"kimi_k2 parallel with whitespace", KIMI,
     {"<|tool_calls_section_begin|> <|tool_call_begin|> functions.a:0 <|tool_call_argument_begin|> {} "
      "<|tool_call_end|>\n<|tool_call_begin|>functions.b:1<|tool_call_argument_begin|>{\"x\":1}<|tool_call_end|>"
      "<|tool_calls_section_end|>"},
     NULL, 2, {{"a", "{}", true}, {"b", "{\"x\":1}", true}}},
    /* qwen3_coder: XML parameters typed by the schema */
    {"qwen3_coder typed parameters", QC,
     {"<tool_call>\n", "<function=get_weather>\n", "<parameter=city>\nPar", "is\n</parameter>\n",
      "<parameter=days>\n3\n</parameter>\n<parameter=metric>\nTrue\n</parameter>\n",
      "<parameter=ratio>\n0.50\n</parameter>\n<parameter=tags>\n[\"a\", \"b\"]\n</parameter>\n",
      "<parameter=opts>\n{'deep': None, 'n': (1, 2)}\n</parameter>\n", "</function>\n", "</tool_call>"},
     NULL, 1,
     {{"get_weather",
       "{\"city\":\"Paris\",\"days\":3,\"metric\":true,\"ratio\":0.5,\"tags\":[\"a\",\"b\"],"
       "\"opts\":{\"deep\":null,\"n\":[1,2]}}",
       true}}},
    {"qwen3_coder strings keep their text, code included", QC,
     {"<tool_call>\n<function=write_file>\n<parameter=path>\n/tmp/a.py\n</parameter>\n<parameter=content>\n",
      "def f():\n    return \"<tool_call>\" + '\\n'\n\n", "</parameter>\n</function>\n</tool_call>"},
     NULL, 1,
     {{"write_file", "{\"path\":\"/tmp/a.py\",\"content\":\"def f():\\n    return \\\"<tool_call>\\\" + '\\\\n'\\n\"}",
       true}}},
    {"qwen3_coder parallel and content before", QC,
     {"Sure.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n",
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nLondon\n</parameter>\n</function>\n</tool_call>"},
     "Sure.", 2, {{"get_weather", "{\"city\":\"Paris\"}", true}, {"get_weather", "{\"city\":\"London\"}", true}}},
    {"qwen3_coder untyped values, null, enum, nullable", QC,
     {"<tool_call><function=get_weather><parameter=unit>c</parameter><parameter=note>null</parameter>"
      "<parameter=limit>\n7\n</parameter><parameter=days>many</parameter><parameter=other>42</parameter>"
      "<parameter=any>[1]</parameter></function></tool_call>"},
     NULL, 1,
     {{"get_weather", "{\"unit\":\"c\",\"note\":null,\"limit\":7,\"days\":\"many\",\"other\":\"42\",\"any\":[1]}",
       true}}},
    {"qwen3_coder unknown function: strings", QC,
     {"<tool_call><function=other><parameter=n>5</parameter></function></tool_call>"}, NULL, 1,
     {{"other", "{\"n\":\"5\"}", true}}},
    {"qwen3_coder no parameters", QC, {"<tool_call>\n<function=now>\n</function>\n</tool_call>"}, NULL, 1,
     {{"now", "{}", true}}},
    {"qwen3_coder bare function without the section", QC,
     {"<function=get_weather>\n<parameter=days>\n2\n</parameter>\n</function>"}, NULL, 1,
     {{"get_weather", "{\"days\":2}", true}}},
    {"qwen3_coder unterminated value at the end", QC, {"<tool_call>\n<function=get_weather>\n<parameter=city>\nPar"},
     NULL, 1, {{"get_weather", "{\"city\":\"Par\"}", false}}},
    {"qwen3_coder JSON body is content", QC, {"<tool_call>\n{\"name\": \"f\"}\n</tool_call>"},
     "<tool_call>\n{\"name\": \"f\"}\n</tool_call>", 0, {{0}}},
    {"qwen3_coder broken after the name", QC, {"<tool_call><function=get_weather>oops</function>"}, "oops</function>",
     1, {{"get_weather", "{}", false}}},
    {"qwen3_coder lookalike is content", QC, {"a <tool_", "cal b <function x"}, "a <tool_cal b <function x", 0,
     {{0}}},
    /* seed_oss */
    {"seed_oss one call", SEED,
     {"<seed:tool_call>\n<function=get_weather>\n", "<parameter=city>Paris</parameter>\n",
      "<parameter=days>4</parameter>\n</function>\n</seed:tool_call>"},
     NULL, 1, {{"get_weather", "{\"city\":\"Paris\",\"days\":4}", true}}},
    {"seed_oss two functions in one section", SEED,
     {"<seed:tool_call><function=a></function><function=b><parameter=x>1</parameter></function></seed:tool_call>"},
     NULL, 2, {{"a", "{}", true}, {"b", "{\"x\":\"1\"}", true}}},
    /* glm45 (GLM-4.5/4.6 with newlines, 4.7 without) */
    {"glm45 with newlines", GLM,
     {"<tool_call>get_weather\n", "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n",
      "<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>"},
     NULL, 1, {{"get_weather", "{\"city\":\"Paris\",\"days\":2}", true}}},
    {"glm45 compact (4.7)", GLM,
     {"<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>",
      "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Rome</arg_value></tool_call>"},
     NULL, 2, {{"get_weather", "{\"city\":\"Paris\"}", true}, {"get_weather", "{\"city\":\"Rome\"}", true}}},
    {"glm45 no arguments", GLM, {"<tool_call>now</tool_call>"}, NULL, 1, {{"now", "{}", true}}},
    {"glm45 text is content", GLM, {"Hello <tool", " there"}, "Hello <tool there", 0, {{0}}},
    /* minimax_m2 */
    {"minimax_m2 one call", MM,
     {"<minimax:tool_call>\n", "<invoke name=\"get_weather\">\n", "<parameter name=\"city\">Paris</parameter>\n",
      "<parameter name=\"days\">3</parameter>\n", "</invoke>\n", "</minimax:tool_call>"},
     NULL, 1, {{"get_weather", "{\"city\":\"Paris\",\"days\":3}", true}}},
    {"minimax_m2 parallel, quotes optional", MM,
     {"Two.\n<minimax:tool_call>\n<invoke name=get_weather><parameter name='city'>A</parameter></invoke>\n",
      "<invoke name=\"get_weather\"><parameter name=\"city\">B</parameter></invoke>\n</minimax:tool_call>"},
     "Two.", 2, {{"get_weather", "{\"city\":\"A\"}", true}, {"get_weather", "{\"city\":\"B\"}", true}}},
    {"minimax_m2 malformed is content", MM, {"<minimax:tool_call>\nnope\n</minimax:tool_call>"},
     "<minimax:tool_call>\nnope\n</minimax:tool_call>", 0, {{0}}},
    /* pythonic */
    {"pythonic one call", PY, {"[get_weather(", "city=\"Paris\", ", "days=3)]"}, NULL, 1,
     {{"get_weather", "{\"city\":\"Paris\",\"days\":3}", true}}},
    {"pythonic parallel with literals", PY,
     {"<|python_start|>[a(x=[1, 'two', None], y={'k': (True, False)}), b()]<|python_end|>"}, NULL, 2,
     {{"a", "{\"x\":[1,\"two\",null],\"y\":{\"k\":[true,false]}}", true}, {"b", "{}", true}}},
    {"pythonic strings with ) and escapes", PY, {"[f(s='a)b\\'c', t=\"x, y\")]"}, NULL, 1,
     {{"f", "{\"s\":\"a)b'c\",\"t\":\"x, y\"}", true}}},
    {"pythonic text is content", PY, {"[1, 2, 3] are numbers"}, "[1, 2, 3] are numbers", 0, {{0}}},
    {"pythonic prose is content", PY, {"Sure, here it is."}, "Sure, here it is.", 0, {{0}}},
    {"pythonic bad value ends the call", PY, {"[f(a=oops)] x"}, "oops)] x", 1, {{"f", "{}", false}}},
    {"pythonic text after the list", PY, {"[f(a=1)]\nDone"}, "Done", 1, {{"f", "{\"a\":1}", true}}},
    {"pythonic LFM2 markers after text", PY,
     {"Let me check.", "<|tool_call_start|>", "[get_weather(city=\"Paris\")]", "<|tool_call_end|>", " Done"},
     "Let me check.Done", 1, {{"get_weather", "{\"city\":\"Paris\"}", true}}},
    {"pythonic marker without a list is content", PY, {"x <|python_start|>hello"}, "x <|python_start|>hello", 0,
     {{0}}},
    {"pythonic second marked list", PY, {"[a()] and <|python_start|>[b(k=2)]<|python_end|>"}, "and", 2,
     {{"a", "{}", true}, {"b", "{\"k\":2}", true}}},
    /* gpt-oss: harmony */
    {"gpt-oss call message", OSS,
     {"<|start|>assistant", "<|channel|>commentary to=functions.get_weather", " <|constrain|>json",
      "<|message|>", "{\"city\": ", "\"Paris\"}", "<|call|>"},
     NULL, 1, {{"get_weather", "{\"city\":\"Paris\"}", true}}},
    {"gpt-oss recipient before the channel", OSS,
     {"<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\":\"Rome\"}<|call|>"},
     NULL, 1, {{"get_weather", "{\"city\":\"Rome\"}", true}}},
    {"gpt-oss without the reasoning parser: bodies are content", OSS,
     {"<|channel|>analysis<|message|>think<|end|>", "<|start|>assistant<|channel|>final<|message|>Hi.", "<|return|>"},
     "thinkHi.", 0, {{0}}},
    {"gpt-oss two calls", OSS,
     {"<|channel|>commentary to=functions.a <|constrain|>json<|message|>{}<|call|>",
      "<|start|>assistant<|channel|>commentary to=functions.b <|constrain|>json<|message|>{\"x\":1}<|call|>"},
     NULL, 2, {{"a", "{}", true}, {"b", "{\"x\":1}", true}}},
    {"gpt-oss broken arguments", OSS,
     {"<|channel|>commentary to=functions.a<|message|>{\"x\": @}<|call|>after"}, "@}after", 1,
     {{"a", "{\"x\":", false}}},
    {"gpt-oss plain text", OSS, {"Just text."}, "Just text.", 0, {{0}}},
    {"gpt-oss message to a built-in tool is dropped (vLLM)", OSS,
     {"<|channel|>commentary to=python <|constrain|>code<|message|>", "print(\"<|ca\")", "<|call|>",
      "<|start|>assistant<|channel|>final<|message|>Done."}, "Done.", 0, {{0}}},
    {"gpt-oss built-in call then a function call", OSS,
     {"<|channel|>analysis to=browser.search<|message|>{\"q\": 1}<|end|>",
      "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}<|call|>"}, NULL, 1,
     {{"f", "{}", true}}},
};

static void test_kimi_ids(void)
{
    const char *t = "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
                    "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_call_begin|>functions.get_weather:1"
                    "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>";
    toolcall_config_t cfg = {KIMI, NULL, NULL, 1, NULL};
    toolcall_t *p = toolcall_parse(&cfg, t, strlen(t), NULL);
    toolcall_call_t a, b;
    tap_ok(p && toolcall_get(p, 0, &a) && toolcall_get(p, 1, &b) && !strcmp(a.id, "functions.get_weather:0") &&
               !strcmp(b.id, "functions.get_weather:1") && !strcmp(a.name, "get_weather"),
           "kimi_k2: the calls keep the model's ids");
    toolcall_free(p);
}

/* Every format parses its own canonical example into get_weather({"city":
 * "Paris"}), and the description is consistent. */
static void test_descriptions(void)
{
    for (int f = 1; f < TOOLCALL_FORMAT_COUNT; f++) {
        const toolcall_format_desc_t *d = toolcall_format_desc((toolcall_format_t)f);
        if (!tap_ok(d && (int)d->format == f && !strcmp(d->name, toolcall_format_name((toolcall_format_t)f)) &&
                        d->example && d->tokens && d->layout != TOOLCALL_LAYOUT_NONE,
                    "description of %s", toolcall_format_name((toolcall_format_t)f)))
            continue;
        toolcall_config_t cfg = {(toolcall_format_t)f, NULL, NULL, 3, harness_tools};
        toolcall_t *p = toolcall_parse(&cfg, d->example, strlen(d->example), NULL);
        toolcall_call_t c;
        bool ok = p && toolcall_count(p) == 1 && toolcall_get(p, 0, &c) && !strcmp(c.name, "get_weather") &&
                  !strcmp(c.arguments, "{\"city\":\"Paris\"}") && c.complete && !toolcall_content(p, NULL);
        if (!tap_ok(ok, "%s parses its own example", d->name) && p && toolcall_get(p, 0, &c))
            tap_diag("got %s %s content %s", c.name, c.arguments, toolcall_content(p, NULL));
        toolcall_free(p);
        bool markers = true;
        for (const char *const *t = d->tokens; *t; t++)
            markers &= toolcall_format_is_marker((toolcall_format_t)f, *t);
        tap_ok(markers && !toolcall_format_is_marker((toolcall_format_t)f, "hello"),
               "%s: its tokens are markers", d->name);
        toolcall_format_t back;
        tap_ok(toolcall_format_from_name(d->name, &back, NULL) == LF_OK && (int)back == f, "%s: name round-trips",
               d->name);
    }
    tap_ok(!toolcall_format_desc(TOOLCALL_FORMAT_NONE) && !toolcall_format_desc(TOOLCALL_FORMAT_COUNT),
           "no description for none or out of range");
    toolcall_format_t f;
    tap_ok(toolcall_format_from_name("openai", &f, NULL) == LF_OK && f == OSS, "vLLM's name openai is gpt-oss");
}

static void test_detect(void)
{
    static const struct {
        const char *tmpl;
        toolcall_format_t want;
    } t[] = {
        {"<|start|>assistant<|channel|>commentary to=functions.x", OSS},
        {"{{'" DSB "' + '" DCB "' + tool['type'] + '" DSEP "' + name + '\\n```json\\n'}}", DV3},
        {"{{'" DSB DCB "' + name + '" DSEP "' + args }}", DV31},
        {"<|tool_calls_section_begin|>", KIMI},
        {"<minimax:tool_call><invoke name=", MM},
        {"<seed:tool_call><function=x><parameter=y>", SEED},
        {"<tool_call>{{ name }}<arg_key>k</arg_key>", GLM},
        {"<tool_call>\n<function=x>\n<parameter=y>", QC},
        {"<|tool_call|>[...]", GR},
        {"functools[{...}]", PHI},
        {"<|python_start|>[f(a=1)]<|python_end|>", PY},
        {"<|tool_call_start|>[f(a=1)]<|tool_call_end|>", PY},
        {"[func_name1(params_name1=params_value1)]", PY},
        {"<function=f>{...}</function> <|python_tag|>", TOOLCALL_FORMAT_FUNCTIONARY_V31},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        tap_ok(toolcall_format_detect(t[i].tmpl, strlen(t[i].tmpl)) == t[i].want, "detect %s",
               toolcall_format_name(t[i].want));
}

int main(void)
{
    harness_tools = json_tokener_parse(tools_json);
    tap_ok(harness_tools != NULL, "tools parse");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
    test_kimi_ids();
    test_descriptions();
    test_detect();
    json_object_put(harness_tools);
    return tap_done();
}
