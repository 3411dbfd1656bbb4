/* test_toolcall_xml.c - the name + typed parameters formats of DeepSeek
 * V3.2 / V4 (DSML, string="true|false"), Kimi K3 (XTML attributes, type=,
 * JSON blocks), MiniMax M3 (values as nested XML elements), Hy3 and
 * MiniCPM5 (CDATA values) and Muse Glimmer (ATEM blocks) through the table harness (toolcall_harness.h:
 * token by token, every 2-way split, byte by byte, non-streamed): calls,
 * parallel calls, typing, content around them, malformed markup back as
 * content. */
#include "toolcall_harness.h"

#define DSMLT "\xef\xbd\x9c" "DSML" "\xef\xbd\x9c"
#define DO(t) "<" DSMLT t
#define DC(t) "</" DSMLT t
#define MM3 "]<]minimax[>["
#define HY(t) "<" t ":opensource>"
#define HYC(t) "</" t ":opensource>"

#define V32 TOOLCALL_FORMAT_DEEPSEEK_V32
#define V4 TOOLCALL_FORMAT_DEEPSEEK_V4
#define K3 TOOLCALL_FORMAT_KIMI_K3
#define M3 TOOLCALL_FORMAT_MINIMAX_M3
#define HY3 TOOLCALL_FORMAT_HY_V3
#define CPM TOOLCALL_FORMAT_MINICPM5
#define MUSE TOOLCALL_FORMAT_MUSE_GLIMMER

static const char tools_json[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\","
    " \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\"},"
    " \"metric\": {\"type\": \"boolean\"}, \"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
    " \"where\": {\"type\": \"object\", \"properties\": {\"lat\": {\"type\": \"number\"},"
    " \"name\": {\"type\": \"string\"}}},"
    " \"spots\": {\"type\": \"array\", \"items\": {\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}}}},"
    " \"when\": {\"$ref\": \"#/$defs/Day\"}, \"at\": {\"$ref\": \"#/$defs/Spot\"}"
    "}, \"$defs\": {\"Day\": {\"$ref\": \"#/$defs/Int\"}, \"Int\": {\"type\": \"integer\"},"
    " \"Spot\": {\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}}}}}}}]";

static const tcase_t cases[] = {
    /* DeepSeek V3.2: <｜DSML｜function_calls> */
    {"dsml v3.2 one call", V32,
     {"\n\n", DO("function_calls>"), "\n", DO("invoke name=\"get_weather\">"), "\n",
      DO("parameter name=\"city\" string=\"true\">"), "Paris", DC("parameter>"), "\n",
      DO("parameter name=\"days\" string=\"false\">3") DC("parameter>\n"), DC("invoke>"), "\n", DC("function_calls>")},
     NULL, 1, {{"get_weather", "{\"city\":\"Paris\",\"days\":3}", true}}},
    {"dsml v3.2 parallel calls, content before", V32,
     {"Looking.", "\n\n" DO("function_calls>\n") DO("invoke name=\"get_weather\">\n"),
      DO("parameter name=\"city\" string=\"true\">A") DC("parameter>\n") DC("invoke>\n"),
      DO("invoke name=\"get_weather\">\n") DO("parameter name=\"city\" string=\"true\">B") DC("parameter>\n"),
      DC("invoke>\n") DC("function_calls>")},
     "Looking.", 2, {{"get_weather", "{\"city\":\"A\"}", true}, {"get_weather", "{\"city\":\"B\"}", true}}},
    {"dsml string=\"true\" is a string whatever the schema, string=\"false\" is JSON", V32,
     {DO("function_calls>") DO("invoke name=\"get_weather\">"),
      DO("parameter name=\"days\" string=\"true\">3") DC("parameter>"),
      DO("parameter name=\"tags\" string=\"false\">[\"a\", \"b\"]") DC("parameter>"),
      DO("parameter name=\"where\" string=\"false\">{\"lat\": 1.5}") DC("parameter>"),
      DO("parameter name=\"metric\" string=\"false\">true") DC("parameter>"), DC("invoke>") DC("function_calls>")},
     NULL, 1, {{"get_weather", "{\"days\":\"3\",\"tags\":[\"a\",\"b\"],\"where\":{\"lat\":1.5},\"metric\":true}", true}}},
    {"dsml string=\"false\" that is not JSON falls back to the schema", V32,
     {DO("function_calls>") DO("invoke name=\"get_weather\">") DO("parameter name=\"days\" string=\"false\"> 4 ")
      DC("parameter>") DO("parameter name=\"city\" string=\"false\">Rome") DC("parameter>") DC("invoke>")
      DC("function_calls>")},
     NULL, 1, {{"get_weather", "{\"days\":4,\"city\":\"Rome\"}", true}}},
    {"dsml code with markup in a string value", V32,
     {DO("function_calls>") DO("invoke name=\"write\">") DO("parameter name=\"code\" string=\"true\">"),
      "if a < b:\n    print(\"</x>\")", DC("parameter>") DC("invoke>") DC("function_calls>")},
     NULL, 1, {{"write", "{\"code\":\"if a < b:\\n    print(\\\"</x>\\\")\"}", true}}},
    {"dsml no parameters", V32, {DO("function_calls>\n") DO("invoke name=\"now\">\n") DC("invoke>\n") DC("function_calls>")},
     NULL, 1, {{"now", "{}", true}}},
    {"dsml malformed block is content", V32, {DO("function_calls>"), "oops", DC("function_calls>")},
     DO("function_calls>") "oops" DC("function_calls>"), 0, {{0}}},
    {"dsml cut in a value", V32, {DO("function_calls>") DO("invoke name=\"get_weather\">"),
      DO("parameter name=\"city\" string=\"true\">Par")}, NULL, 1, {{"get_weather", "{\"city\":\"Par\"}", false}}},
    /* DeepSeek V4: <｜DSML｜tool_calls> */
    {"dsml v4 one call", V4,
     {"\n\n", DO("tool_calls>\n"), DO("invoke name=\"get_weather\">\n"),
      DO("parameter name=\"city\" string=\"true\">Paris") DC("parameter>\n"), DC("invoke>\n"), DC("tool_calls>")},
     NULL, 1, {{"get_weather", "{\"city\":\"Paris\"}", true}}},
    {"dsml v4 does not take the v3.2 block", V4, {DO("function_calls>x") DC("function_calls>")},
     DO("function_calls>x") DC("function_calls>"), 0, {{0}}},
    /* Kimi K3: XTML */
    {"kimi_k3 one call with typed arguments", K3,
     {"<|open|>", "tools", "<|sep|>", "<|open|>", "call tool=\"get_weather\" index=\"1\"", "<|sep|>",
      "<|open|>argument key=\"city\" type=\"string\"<|sep|>", "Paris", "<|close|>argument<|sep|>",
      "<|open|>argument key=\"days\" type=\"number\"<|sep|>2<|close|>argument<|sep|>",
      "<|open|>argument key=\"tags\" type=\"array\"<|sep|>[\"x\"]<|close|>argument<|sep|>",
      "<|close|>call<|sep|>", "<|close|>tools<|sep|>"},
     NULL, 1, {{"get_weather", "{\"city\":\"Paris\",\"days\":2,\"tags\":[\"x\"]}", true}}},
    {"kimi_k3 parallel, attribute escapes", K3,
     {"<|open|>tools<|sep|><|open|>call tool=\"a\" index=\"1\"<|sep|>",
      "<|open|>argument key=\"q&quot;x\" type=\"string\"<|sep|>1 &amp; 2<|close|>argument<|sep|><|close|>call<|sep|>",
      "<|open|>call tool=\"b\" index=\"2\"<|sep|><|close|>call<|sep|><|close|>tools<|sep|>"},
     NULL, 2, {{"a", "{\"q\\\"x\":\"1 &amp; 2\"}", true}, {"b", "{}", true}}},
    {"kimi_k3 arguments as a JSON block", K3,
     {"<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|>",
      "<|open|>json type=\"object\"<|sep|>", "{\"city\": \"Oslo\", \"days\": 1}", "<|close|>json<|sep|>",
      "<|close|>call<|sep|><|close|>tools<|sep|>"},
     NULL, 1, {{"get_weather", "{\"city\":\"Oslo\",\"days\":1}", true}}},
    {"kimi_k3 broken JSON block is content", K3,
     {"<|open|>tools<|sep|><|open|>call tool=\"f\" index=\"1\"<|sep|><|open|>json type=\"object\"<|sep|>",
      "[1]<|close|>json<|sep|>tail"},
     "<|open|>json type=\"object\"<|sep|>[1]<|close|>json<|sep|>tail", 1, {{"f", "{}", false}}},
    {"kimi_k3 tools section without calls is content", K3, {"<|open|>tools<|sep|>nothing"},
     "<|open|>tools<|sep|>nothing", 0, {{0}}},
    /* MiniMax M3: namespaced XML, nested values */
    {"minimax_m3 nested values", M3,
     {MM3 "<tool_call>\n", MM3 "<invoke name=\"get_weather\">", MM3 "<city>Paris" MM3 "</city>",
      MM3 "<days>3" MM3 "</days>", MM3 "<metric>true" MM3 "</metric>",
      MM3 "<tags>" MM3 "<item>a" MM3 "</item>" MM3 "<item>b" MM3 "</item>" MM3 "</tags>",
      MM3 "<where>" MM3 "<lat>4.5" MM3 "</lat>" MM3 "<name>X" MM3 "</name>" MM3 "</where>",
      MM3 "<spots>" MM3 "<item>" MM3 "<n>1" MM3 "</n>" MM3 "</item>" MM3 "</spots>",
      MM3 "</invoke>\n", MM3 "</tool_call>"},
     NULL, 1,
     {{"get_weather",
       "{\"city\":\"Paris\",\"days\":3,\"metric\":true,\"tags\":[\"a\",\"b\"],\"where\":{\"lat\":4.5,\"name\":\"X\"},"
       "\"spots\":[{\"n\":1}]}",
       true}}},
    {"minimax_m3 parallel calls and a value with its own tag inside", M3,
     {"Two.", MM3 "<tool_call>\n" MM3 "<invoke name=\"f\">" MM3 "<a>" MM3 "<a>1" MM3 "</a>" MM3 "</a>" MM3 "</invoke>\n",
      MM3 "<invoke name=\"g\">" MM3 "</invoke>\n" MM3 "</tool_call>"},
     "Two.", 2, {{"f", "{\"a\":{\"a\":\"1\"}}", true}, {"g", "{}", true}}},
    {"minimax_m3 $ref into the parameters' $defs types the value (two hops; an object)", M3,
     {MM3 "<tool_call>\n" MM3 "<invoke name=\"get_weather\">" MM3 "<when>3" MM3 "</when>",
      MM3 "<at>" MM3 "<n>2" MM3 "</n>" MM3 "</at>" MM3 "</invoke>\n" MM3 "</tool_call>"},
     NULL, 1, {{"get_weather", "{\"when\":3,\"at\":{\"n\":2}}", true}}},
    {"minimax_m3 broken markup is content", M3,
     {MM3 "<tool_call>\n" MM3 "<invoke name=\"f\">" MM3 "</oops>rest"}, MM3 "</oops>rest", 1, {{"f", "{}", false}}},
    {"minimax_m3 plain text is content", M3, {"Hello ]<]minimax", " there"}, "Hello ]<]minimax there", 0, {{0}}},
    /* Hy3: glm-like keys and values with the :opensource markers */
    {"hy_v3 one call", HY3,
     {HY("tool_calls") "\n", HY("tool_call"), "get_weather", HY("tool_sep") "\n", HY("arg_key") "city" HYC("arg_key") "\n",
      HY("arg_value") "Paris" HYC("arg_value") "\n", HY("arg_key") "days" HYC("arg_key") "\n" HY("arg_value") "2"
      HYC("arg_value") "\n", HYC("tool_call") "\n", HYC("tool_calls")},
     NULL, 1, {{"get_weather", "{\"city\":\"Paris\",\"days\":2}", true}}},
    {"hy_v3 two calls", HY3,
     {HY("tool_calls") "\n" HY("tool_call") "a" HY("tool_sep") "\n" HYC("tool_call") "\n",
      HY("tool_call") "b" HY("tool_sep") "\n" HY("arg_key") "x" HYC("arg_key") "\n" HY("arg_value") "{\"k\": 1}"
      HYC("arg_value") "\n" HYC("tool_call") "\n" HYC("tool_calls")},
     NULL, 2, {{"a", "{}", true}, {"b", "{\"x\":\"{\\\"k\\\": 1}\"}", true}}},
    /* MiniCPM5: <function name=...><param name=...>, CDATA values */
    {"minicpm5 call with CDATA", CPM,
     {"Sure. ", "<function name=\"get_weather\">", "<param name=\"city\">Paris</param>",
      "<param name=\"note\"><![CDATA[a </param> b\nc]]></param>", "<param name=\"days\">3</param>", "</function>"},
     "Sure.", 1, {{"get_weather", "{\"city\":\"Paris\",\"note\":\"a </param> b\\nc\",\"days\":3}", true}}},
    {"minicpm5 parallel, Python literals typed", CPM,
     {"<function name=\"get_weather\"><param name=\"metric\">True</param><param name=\"tags\">['a']</param></function>",
      "\n<function name=\"now\"></function>"},
     NULL, 2, {{"get_weather", "{\"metric\":true,\"tags\":[\"a\"]}", true}, {"now", "{}", true}}},
    {"minicpm5 lookalike is content", CPM, {"<function name=x y>"}, "<function name=x y>", 0, {{0}}},
    /* muse_glimmer: ATEM blocks (the bodies of the tool messages) */
    {"muse_glimmer two tool messages", MUSE,
     {"<atem:function_calls>\n", "<atem:invoke name=\"get_weather\">\n", "<atem:parameter name=\"city\">Paris",
      "</atem:parameter>\n<atem:parameter name=\"days\">2</atem:parameter>\n", "</atem:invoke>\n</atem:function_calls>",
      "<atem:function_calls>\n<atem:invoke name=\"now\">\n</atem:invoke>\n</atem:function_calls>"},
     NULL, 2, {{"get_weather", "{\"city\":\"Paris\",\"days\":2}", true}, {"now", "{}", true}}},
    {"muse_glimmer malformed block is content", MUSE, {"<atem:function_calls>", "oops", "</atem:function_calls>"},
     "<atem:function_calls>oops</atem:function_calls>", 0, {{0}}},
};

int main(void)
{
    harness_tools = json_tokener_parse(tools_json);
    tap_ok(harness_tools != NULL, "tools parse");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
    json_object_put(harness_tools);
    return tap_done();
}
