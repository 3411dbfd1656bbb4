/* test_toolcall_tagged.c - the name + arguments formats added for the 2026
 * models: gemma4 (<|tool_call>call:NAME{key:<|"|>text<|"|>,...}
 * <tool_call|>, Gemma's own argument syntax turned into JSON), solar_open
 * (<|tool_call:begin|>ID<|tool_call:name|>NAME<|tool_call:args|>{...}, the
 * model's ids), functionary_v31 (<function=NAME>{...}</function>) and
 * functionary_v32 (>>>NAME\n{...}, the prompt ends with ">>>"), through
 * the table harness (toolcall_harness.h: token by token, every 2-way
 * split, byte by byte, non-streamed). */
#include "toolcall_harness.h"

#define G4 TOOLCALL_FORMAT_GEMMA4
#define SOL TOOLCALL_FORMAT_SOLAR_OPEN
#define F31 TOOLCALL_FORMAT_FUNCTIONARY_V31
#define F32 TOOLCALL_FORMAT_FUNCTIONARY_V32
#define Q "<|\"|>"

static const tcase_t cases[] = {
    /* gemma4 */
    {"gemma4 one call", G4,
     {"<|tool_call>", "call:get_weather{", "city:", Q, "Paris", Q, ",days:3}", "<tool_call|>"}, NULL, 1,
     {{"get_weather", "{\"city\":\"Paris\",\"days\":3}", true}}},
    {"gemma4 nested values and literals", G4,
     {"<|tool_call>call:f{a:[" Q "x" Q ",1.5,true],b:{c:null," Q "d e" Q ":false},s:" Q "quote \" and \\ and\nline" Q
      "}<tool_call|>"},
     NULL, 1, {{"f", "{\"a\":[\"x\",1.5,true],\"b\":{\"c\":null,\"d e\":false},\"s\":\"quote \\\" and \\\\ and\\nline\"}",
                true}}},
    {"gemma4 string holding markup", G4, {"<|tool_call>call:f{s:" Q "a <| b } c" Q "}<tool_call|>"}, NULL, 1,
     {{"f", "{\"s\":\"a <| b } c\"}", true}}},
    {"gemma4 parallel calls, content before", G4,
     {"Two.", "<|tool_call>call:a{}<tool_call|>", "<|tool_call>call:b{k:" Q "v" Q "}<tool_call|>"}, "Two.", 2,
     {{"a", "{}", true}, {"b", "{\"k\":\"v\"}", true}}},
    {"gemma4 missing call: prefix is content", G4, {"<|tool_call>get{}<tool_call|>"}, "<|tool_call>get{}<tool_call|>", 0,
     {{0}}},
    {"gemma4 bare word value breaks the call", G4, {"<|tool_call>call:f{a:sunny}<tool_call|>"},
     "sunny}<tool_call|>", 1, {{"f", "{\"a\":", false}}},
    {"gemma4 cut in a string", G4, {"<|tool_call>call:f{a:" Q "par"}, NULL, 1, {{"f", "{\"a\":\"par", false}}},
    /* solar_open */
    {"solar_open one call, the model's id", SOL,
     {"<|tool_calls|>", "<|tool_call:begin|>", "a1b2c3d4e5", "<|tool_call:name|>", "get_weather", "<|tool_call:args|>",
      "{\"city\": \"Paris\"}", "<|tool_call:end|>", "<|calls|>"},
     NULL, 1, {{"get_weather", "{\"city\":\"Paris\"}", true}}},
    {"solar_open parallel, section end cut (EOG)", SOL,
     {"<|tool_calls|><|tool_call:begin|>x1<|tool_call:name|>a<|tool_call:args|>{}<|tool_call:end|>",
      "<|tool_call:begin|>x2<|tool_call:name|>b<|tool_call:args|>{\"n\": 2}<|tool_call:end|>"},
     NULL, 2, {{"a", "{}", true}, {"b", "{\"n\":2}", true}}},
    {"solar_open header without a name marker is content", SOL,
     {"<|tool_calls|><|tool_call:begin|>get_weather<|tool_call:args|>{}"},
     "<|tool_calls|><|tool_call:begin|>get_weather<|tool_call:args|>{}", 0, {{0}}},
    /* functionary v3.1 */
    {"functionary_v31 one call", F31, {"<function=", "get_weather>", "{\"city\": \"Paris\"}", "</function>"}, NULL, 1,
     {{"get_weather", "{\"city\":\"Paris\"}", true}}},
    {"functionary_v31 two calls and text", F31,
     {"Sure.<function=a>{}</function>", "<function=b>{\"x\": 1}</function>"}, "Sure.", 2,
     {{"a", "{}", true}, {"b", "{\"x\":1}", true}}},
    /* functionary v3.2: the prompt ends with ">>>" */
    {"functionary_v32 content", F32, {"all\n", "Hello", " there."}, "Hello there.", 0, {{0}}},
    {"functionary_v32 call", F32, {"get_weather\n", "{\"city\": \"Paris\"}"}, NULL, 1,
     {{"get_weather", "{\"city\":\"Paris\"}", true}}},
    {"functionary_v32 content then calls", F32,
     {"all\nLet me look.", ">>>get_weather\n{\"city\": \"Paris\"}", ">>>", "get_time\n{}"}, "Let me look.", 2,
     {{"get_weather", "{\"city\":\"Paris\"}", true}, {"get_time", "{}", true}}},
    {"functionary_v32 no recipient: content", F32, {"Just text without a header"}, "Just text without a header", 0,
     {{0}}},
};

static void test_solar_ids(void)
{
    const char *t = "<|tool_calls|><|tool_call:begin|>a1b2c3d4e5<|tool_call:name|>f<|tool_call:args|>{}"
                    "<|tool_call:end|><|tool_call:begin|>bad id<|tool_call:name|>g<|tool_call:args|>{}<|tool_call:end|>";
    toolcall_config_t cfg = {SOL, NULL, NULL, 1, NULL};
    toolcall_t *p = toolcall_parse(&cfg, t, strlen(t), NULL);
    toolcall_call_t a, b;
    tap_ok(p && toolcall_get(p, 0, &a) && toolcall_get(p, 1, &b) && !strcmp(a.id, "a1b2c3d4e5") &&
               !strncmp(b.id, "call_", 5), "solar_open: the model's id is the call's id, a bad one is replaced");
    toolcall_free(p);
}

int main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
    test_solar_ids();
    return tap_done();
}
