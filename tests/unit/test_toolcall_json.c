/* test_toolcall_json.c - the JSON-object formats added for the 2026
 * models: nemotron_json (<TOOLCALL>[...]</TOOLCALL>), cohere_command3
 * (<|START_ACTION|>[{"tool_name", "parameters"}]<|END_ACTION|>), apriel
 * (<tool_calls>[...]</tool_calls>), minimax (MiniMax-M1: objects one per
 * line in <tool_calls>), gigachat3 / gigachat31 (one object after the
 * "function call" role header or <|function_call|>) and apertus
 * ({"NAME": {...}} in <|tools_prefix|>[...]<|tools_suffix|>), through the
 * table harness (toolcall_harness.h: token by token, every 2-way split,
 * byte by byte, non-streamed): calls, parallel calls, text around them,
 * malformed markup back as content. */
#include "toolcall_harness.h"

#define NEM TOOLCALL_FORMAT_NEMOTRON
#define COH TOOLCALL_FORMAT_COHERE
#define APR TOOLCALL_FORMAT_APRIEL
#define MMX TOOLCALL_FORMAT_MINIMAX
#define GC3 TOOLCALL_FORMAT_GIGACHAT3
#define GC31 TOOLCALL_FORMAT_GIGACHAT31
#define APE TOOLCALL_FORMAT_APERTUS

static const tcase_t cases[] = {
    /* nemotron_json */
    {"nemotron one call", NEM,
     {"<TOOLCALL>", "[{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Paris\"}}]", "</TOOLCALL>"}, NULL, 1,
     {{"get_weather", "{\"city\":\"Paris\"}", true}}},
    {"nemotron two calls, text before", NEM,
     {"Checking both.\n", "<TOOLCALL>[{\"name\": \"a\", \"arguments\": {}}, ",
      "{\"name\": \"b\", \"arguments\": {\"x\": [1, 2]}}]</TOOLCALL>"},
     "Checking both.", 2, {{"a", "{}", true}, {"b", "{\"x\":[1,2]}", true}}},
    {"nemotron malformed is content", NEM, {"<TOOLCALL>", "[oops]", "</TOOLCALL>"}, "<TOOLCALL>[oops]</TOOLCALL>", 0,
     {{0}}},
    {"nemotron unterminated arguments", NEM, {"<TOOLCALL>[{\"name\": \"a\", \"arguments\": {\"k\": 1"}, NULL, 1,
     {{"a", "{\"k\":1", false}}},
    /* cohere_command3 (Command R7B, Command A, Cohere2) */
    {"cohere one action", COH,
     {"<|START_ACTION|>", "[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", ",
      "\"parameters\": {\"city\": \"Paris\"}}\n]", "<|END_ACTION|>"},
     NULL, 1, {{"get_weather", "{\"city\":\"Paris\"}", true}}},
    {"cohere parallel actions", COH,
     {"<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"a\", \"parameters\": {}},\n",
      "    {\"tool_call_id\": \"1\", \"tool_name\": \"b\", \"parameters\": {\"q\": \"x\"}}\n]<|END_ACTION|>"},
     NULL, 2, {{"a", "{}", true}, {"b", "{\"q\":\"x\"}", true}}},
    {"cohere broken action is content", COH, {"<|START_ACTION|>[{\"tool_name\": 5}]<|END_ACTION|>"},
     "<|START_ACTION|>[{\"tool_name\": 5}]<|END_ACTION|>", 0, {{0}}},
    /* apriel */
    {"apriel list", APR,
     {"\n<tool_calls>", "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, ",
      "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}, \"id\": \"x1\"}]", "</tool_calls>"},
     NULL, 2, {{"get_weather", "{\"city\":\"Paris\"}", true}, {"get_weather", "{\"city\":\"Rome\"}", true}}},
    {"apriel text with a lookalike tag", APR, {"Use <tool_calls> like this."}, "Use <tool_calls> like this.", 0,
     {{0}}},
    /* minimax (M1) */
    {"minimax objects per line", MMX,
     {"<tool_calls>\n", "{\"name\": \"a\", \"arguments\": {\"k\": 1}}\n", "{\"name\": \"b\", \"arguments\": {}}\n",
      "</tool_calls>"},
     NULL, 2, {{"a", "{\"k\":1}", true}, {"b", "{}", true}}},
    {"minimax text after the block", MMX, {"<tool_calls>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_calls>\nDone."},
     "Done.", 1, {{"a", "{}", true}}},
    /* gigachat3 / gigachat31 */
    {"gigachat3 content then a call", GC3,
     {"Let me check.", "<|message_sep|>", "\n\nfunction call", "<|role_sep|>", "\n",
      "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}"},
     "Let me check.", 1, {{"get_weather", "{\"city\":\"Paris\"}", true}}},
    {"gigachat3 message end without a call", GC3, {"Hello.", "<|message_sep|>"}, "Hello.", 0, {{0}}},
    {"gigachat31 token then a call", GC31,
     {"<|function_call|>", "{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Paris\"}}"}, NULL, 1,
     {{"get_weather", "{\"city\":\"Paris\"}", true}}},
    {"gigachat31 broken is content", GC31, {"<|function_call|>", "not json"}, "<|function_call|>not json", 0, {{0}}},
    /* apertus: the name is the key */
    {"apertus named objects", APE,
     {"<|tools_prefix|>", "[{\"get_weather\": ", "{\"city\": \"Paris\"}}, ", "{\"now\": {}}]", "<|tools_suffix|>"},
     NULL, 2, {{"get_weather", "{\"city\":\"Paris\"}", true}, {"now", "{}", true}}},
    {"apertus arguments must be an object", APE, {"<|tools_prefix|>[{\"f\": 3}]<|tools_suffix|>"},
     "<|tools_prefix|>[{\"f\": 3}]<|tools_suffix|>", 0, {{0}}},
    {"apertus text before", APE, {"Sure.", "<|tools_prefix|>[{\"f\": {\"a\": \"}\"}}]<|tools_suffix|>"}, "Sure.", 1,
     {{"f", "{\"a\":\"}\"}", true}}},
};

int main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
    return tap_done();
}
