/* test_toolcall.c - tool-call parsers hermes, llama3_json and mistral
 * through the table harness (toolcall_harness.h), call ids, detection and
 * names, event timing, and the reasoning -> tool-call chain. The newer
 * formats are in test_toolcall_formats.c. */
#include "chat/parse/reasoning.h"
#include "toolcall_harness.h"

#define H TOOLCALL_FORMAT_HERMES
#define L TOOLCALL_FORMAT_LLAMA3_JSON
#define M TOOLCALL_FORMAT_MISTRAL

static const tcase_t cases[] = {
    {"hermes one call, tags split", H,
     {"<tool", "_call>", "\n{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": ", "\"Paris\"}}\n",
      "</tool", "_call>"},
     NULL, 1, {{"get_weather", "{\"city\":\"Paris\"}", true}}},
    {"hermes content before and after", H,
     {"Let me check.", "\n<tool_call>", "{\"name\":\"f\",\"arguments\":{}}", "</tool_call>", "\nDone", "."},
     "Let me check.Done.", 1, {{"f", "{}", true}}},
    {"hermes two calls", H,
     {"<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n",
      "<tool_call>\n{\"name\": \"b\", \"arguments\": {\"y\": [true, false, null]}}\n</tool_call>"},
     NULL, 2, {{"a", "{\"x\":1}", true}, {"b", "{\"y\":[true,false,null]}", true}}},
    {"hermes args with </tool_call> and escapes in strings", H,
     {"<tool_call>{\"name\": \"echo\", \"arguments\": {\"text\": \"a </tool_call> \\\"q\\\"",
      " } ] \\\\\", \"b\": \"<tool_call>\"}}", "</tool_call>"},
     NULL, 1, {{"echo", "{\"text\":\"a </tool_call> \\\"q\\\" } ] \\\\\",\"b\":\"<tool_call>\"}", true}}},
    {"hermes unicode in arguments", H,
     {"<tool_call>{\"name\": \"translate\", \"arguments\": {\"text\": \"\xe6\x97\xa5\xe6\x9c\xac ",
      "caf\xc3\xa9 \xf0\x9f\x98\x80\", \"e\": \"\\u00e9\"}}</tool_call>"},
     NULL, 1, {{"translate", "{\"text\":\"\xe6\x97\xa5\xe6\x9c\xac caf\xc3\xa9 \xf0\x9f\x98\x80\",\"e\":\"\\u00e9\"}", true}}},
    {"hermes nested args are compacted", H,
     {"<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": [1, 2, {\"b\": null}],\n \"c\": true, \"d\": -1.5e3 }}</tool_call>"},
     NULL, 1, {{"f", "{\"a\":[1,2,{\"b\":null}],\"c\":true,\"d\":-1.5e3}", true}}},
    {"hermes arguments before name, extra keys ignored", H,
     {"<tool_call>{\"arguments\": {\"x\": 1}, \"id\": 7, \"name\": \"f\"}</tool_call>"},
     NULL, 1, {{"f", "{\"x\":1}", true}}},
    {"hermes missing arguments is {}", H, {"<tool_call>{\"name\": \"now\"}</tool_call>"}, NULL, 1,
     {{"now", "{}", true}}},
    {"hermes parameters key, escaped name", H,
     {"<tool_call>{\"name\": \"a\\u005fb\", \"parameters\": {\"k\": \"v\"}}</tool_call>"}, NULL, 1,
     {{"a_b", "{\"k\":\"v\"}", true}}},
    {"hermes two objects in one block", H,
     {"<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n", "{\"name\": \"b\", \"arguments\": {\"q\": 1}}\n</tool_call>"},
     NULL, 2, {{"a", "{}", true}, {"b", "{\"q\":1}", true}}},
    {"hermes second object in a block not a call", H,
     {"<tool_call>{\"name\": \"a\"}\n{\"x\": 1}</tool_call>"}, "{\"x\": 1}", 1, {{"a", "{}", true}}},
    {"hermes stray close after a call is dropped", H,
     {"<tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call> ok</tool_call>"}, "ok", 1, {{"f", "{}", true}}},
    {"hermes failed block then a call", H,
     {"<tool_call>oops</tool_call>", "<tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call></tool_call>"},
     "<tool_call>oops</tool_call>", 1, {{"f", "{}", true}}},
    {"hermes content between calls", H,
     {"A <tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call> B ",
      "<tool_call>{\"name\":\"g\",\"arguments\":{}}</tool_call>C"},
     "ABC", 2, {{"f", "{}", true}, {"g", "{}", true}}},
    {"hermes not json is content", H, {"<tool_call>", "not json", "</tool_call>"},
     "<tool_call>not json</tool_call>", 0, {{0}}},
    {"hermes object without name is content", H, {"<tool_call>{\"foo\": 1}", "</tool_call>"},
     "<tool_call>{\"foo\": 1}</tool_call>", 0, {{0}}},
    {"hermes name not a string is content", H,
     {"<tool_call>{\"name\": 5, \"arguments\": {}}</tool_call>"},
     "<tool_call>{\"name\": 5, \"arguments\": {}}</tool_call>", 0, {{0}}},
    {"hermes arguments not an object is content", H,
     {"<tool_call>{\"name\": \"f\", \"arguments\": \"x\"}</tool_call>"},
     "<tool_call>{\"name\": \"f\", \"arguments\": \"x\"}</tool_call>", 0, {{0}}},
    {"hermes arguments as a JSON string holding an object", H,
     {"<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": [1, ", "2], \\\"s\\\": \\\"\\\\\\\"q\\\"}\"}</tool_call>"},
     NULL, 1, {{"f", "{\"a\":[1,2],\"s\":\"\\\"q\"}", true}}},
    {"arguments string holding a list is content", M,
     {"[TOOL_CALLS][{\"name\": \"f\", \"arguments\": \"[1]\"}]"},
     "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": \"[1]\"}]", 0, {{0}}},
    {"hermes truncated before commit is content", H, {"Hi ", "<tool_call>{\"name\": \"f\""},
     "Hi <tool_call>{\"name\": \"f\"", 0, {{0}}},
    {"hermes truncated inside arguments: incomplete call", H,
     {"<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"x", "y"}, NULL, 1,
     {{"f", "{\"a\":\"xy", false}}},
    {"hermes broken arguments after commit", H,
     {"<tool_call>{\"name\":\"f\",\"arguments\":{\"a\":1 x}}</tool_call>after"}, "x}}after", 1,
     {{"f", "{\"a\":1", false}}},
    {"hermes missing outer brace tolerated", H,
     {"<tool_call>{\"name\":\"f\",\"arguments\":{\"a\":1}</tool_call>"}, NULL, 1,
     {{"f", "{\"a\":1}", true}}},
    {"hermes missing close tag tolerated", H, {"<tool_call>{\"name\":\"f\",\"arguments\":{}}\n"}, NULL, 1,
     {{"f", "{}", true}}},
    {"hermes lookalike tags are content", H, {"a < b <tool", "s> <tool_cal"}, "a < b <tools> <tool_cal", 0,
     {{0}}},
    {"hermes plain answer keeps whitespace", H, {" Hello", " there!", "\n"}, " Hello there!\n", 0, {{0}}},
    {"none format keeps markup", TOOLCALL_FORMAT_NONE,
     {"<tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>"},
     "<tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>", 0, {{0}}},

    {"llama3 one call", L, {"{\"name\": \"get_weather\", ", "\"parameters\": {\"city\": \"Paris\"}}"}, NULL, 1,
     {{"get_weather", "{\"city\":\"Paris\"}", true}}},
    {"llama3 python_tag", L, {"<|python", "_tag|>", "{\"name\": \"f\", \"parameters\": {}}"}, NULL, 1,
     {{"f", "{}", true}}},
    {"llama3 several calls ; and newline", L,
     {"{\"name\":\"a\",\"parameters\":{\"x\":1}}; ", "{\"name\":\"b\",\"parameters\":{}}\n",
      "{\"name\":\"c\",\"parameters\":{\"s\":\"}\"}}"},
     NULL, 3, {{"a", "{\"x\":1}", true}, {"b", "{}", true}, {"c", "{\"s\":\"}\"}", true}}},
    {"llama3 type key", L,
     {"\n{\"type\": \"function\", \"name\": \"f\", \"parameters\": {\"a\": 1}}"}, NULL, 1,
     {{"f", "{\"a\":1}", true}}},
    {"llama3 JSON answer is content", L, {"{\"name\": \"Ann\", ", "\"age\": 3}"},
     "{\"name\": \"Ann\", \"age\": 3}", 0, {{0}}},
    {"llama3 missing parameters is content", L, {"{\"name\":\"f\"}"}, "{\"name\":\"f\"}", 0, {{0}}},
    {"llama3 text is content", L, {"The weather", " is nice."}, "The weather is nice.", 0, {{0}}},
    {"llama3 text before json is content", L, {"Sure: ", "{\"name\":\"f\",\"parameters\":{}}"},
     "Sure: {\"name\":\"f\",\"parameters\":{}}", 0, {{0}}},
    {"llama3 text after call", L, {"{\"name\":\"f\",\"parameters\":{}}", " Done"}, "Done", 1,
     {{"f", "{}", true}}},
    {"llama3 broken json is content", L, {"{\"name\" \"f\"}"}, "{\"name\" \"f\"}", 0, {{0}}},

    {"mistral two calls", M,
     {"[TOOL_", "CALLS]", "[{\"name\": \"a\", \"arguments\": {\"x\": \"]\"}}, ",
      "{\"name\": \"b\", \"arguments\": {}}]"},
     NULL, 2, {{"a", "{\"x\":\"]\"}", true}, {"b", "{}", true}}},
    {"mistral content before", M, {"Checking. ", "[TOOL_CALLS][{\"name\":\"f\",\"arguments\":{\"q\":2}}]"},
     "Checking.", 1, {{"f", "{\"q\":2}", true}}},
    {"mistral bare object", M, {"[TOOL_CALLS]{\"name\":\"f\",\"arguments\":{\"k\":[1,2]}}"}, NULL, 1,
     {{"f", "{\"k\":[1,2]}", true}}},
    {"mistral unicode", M,
     {"[TOOL_CALLS][{\"name\":\"say\",\"arguments\":{\"t\":\"\xc3\xbc\xe2\x82\xac\"}}]"}, NULL, 1,
     {{"say", "{\"t\":\"\xc3\xbc\xe2\x82\xac\"}", true}}},
    {"mistral v11 name[ARGS]{...} calls", M,
     {"[TOOL_CALLS]get_", "weather[AR", "GS]{\"city\": ", "\"Paris\"}", "[TOOL_CALLS]now[ARGS] {}"}, NULL, 2,
     {{"get_weather", "{\"city\":\"Paris\"}", true}, {"now", "{}", true}}},
    {"mistral v11 broken marker is content", M, {"[TOOL_CALLS]f[ARG]{}"}, "[TOOL_CALLS]f[ARG]{}", 0, {{0}}},
    {"mistral v11 truncated arguments", M, {"[TOOL_CALLS]f[ARGS]{\"a\": [1"}, NULL, 1,
     {{"f", "{\"a\":[1", false}}},
    {"mistral malformed is content", M, {"[TOOL_CALLS] oops"}, "[TOOL_CALLS] oops", 0, {{0}}},
    {"mistral second element malformed", M,
     {"[TOOL_CALLS][{\"name\":\"a\",\"arguments\":{}}, {\"x\":1}]"}, ", {\"x\":1}]", 1,
     {{"a", "{}", true}}},
};

static uint64_t zero_rng(void *ctx)
{
    (*(int *)ctx)++;
    return 0;
}

static void test_ids(void)
{
    const char *text = "<tool_call>{\"name\":\"a\"}</tool_call><tool_call>{\"name\":\"b\"}</tool_call>";
    toolcall_config_t c1 = {TOOLCALL_FORMAT_HERMES, NULL, NULL, 7, NULL};
    toolcall_t *a = toolcall_parse(&c1, text, strlen(text), NULL);
    toolcall_t *b = toolcall_parse(&c1, text, strlen(text), NULL);
    c1.seed = 8;
    toolcall_t *d = toolcall_parse(&c1, text, strlen(text), NULL);
    toolcall_call_t x, y, z, w;
    toolcall_get(a, 0, &x);
    toolcall_get(b, 0, &y);
    toolcall_get(d, 0, &z);
    toolcall_get(a, 1, &w);
    tap_ok(!strcmp(x.id, y.id), "same seed, same ids");
    tap_ok(strcmp(x.id, z.id) != 0, "other seed, other ids");
    tap_ok(strcmp(x.id, w.id) != 0 && id_ok(w.id, H), "ids differ between calls");
    const char *mt = "[TOOL_CALLS][{\"name\":\"a\",\"arguments\":{},\"id\":\"abcdefghi\"}]";
    toolcall_config_t cm = {M, NULL, NULL, 7, NULL};
    toolcall_t *m = toolcall_parse(&cm, mt, strlen(mt), NULL);
    tap_ok(m && toolcall_get(m, 0, &x) && id_ok(x.id, M), "mistral ids are 9 alphanumerics");
    toolcall_free(m);
    tap_ok(!toolcall_get(a, 2, &x), "get beyond count fails");
    toolcall_free(a);
    toolcall_free(b);
    toolcall_free(d);

    int calls = 0;
    toolcall_config_t c2 = {TOOLCALL_FORMAT_HERMES, zero_rng, &calls, 0, NULL};
    toolcall_t *e = toolcall_parse(&c2, text, 36, NULL);
    tap_ok(e && toolcall_get(e, 0, &x) && !strcmp(x.id, "call_AAAAAAAAAAAAAAAAAAAAAAAA") && calls == 24,
           "caller rng draws the 24 characters");
    toolcall_free(e);
}

static void test_detect(void)
{
    static const struct {
        const char *tmpl;
        toolcall_format_t want;
    } t[] = {
        {"{% for tool in tools %}...<tool_call>\\n{\"name\": <function-name>}</tool_call>", H},
        {"{{ '[AVAILABLE_TOOLS]' }}...[TOOL_CALLS]", M},
        {"{{- '<|python_tag|>' + tool_call.name }}", L},
        {"<|start_header_id|>user<|end_header_id|>{\"name\": function name, \"parameters\": ...}", L},
        {"<|im_start|>{{ message.content }}<|im_end|>", TOOLCALL_FORMAT_NONE},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        tap_ok(toolcall_format_detect(t[i].tmpl, strlen(t[i].tmpl)) == t[i].want, "detect template %zu", i);
    tap_ok(toolcall_format_detect(NULL, 0) == TOOLCALL_FORMAT_NONE, "detect NULL template");

    toolcall_format_t f = TOOLCALL_FORMAT_NONE;
    lf_err_t e;
    tap_ok(toolcall_format_from_name("llama3_json", &f, &e) == LF_OK && f == L, "name llama3_json");
    tap_ok(toolcall_format_from_name("mistral", &f, &e) == LF_OK && f == M, "name mistral");
    tap_ok(toolcall_format_from_name("pythonic2", &f, &e) == LF_ERR_INVALID && strstr(e.msg, "hermes"),
           "unknown name rejected with the list");
    tap_ok(!strcmp(toolcall_format_name(H), "hermes"), "format name");
    toolcall_config_t bogus = {(toolcall_format_t)99, NULL, NULL, 0, NULL};
    tap_ok(!toolcall_create(&bogus, &e) && e.code == LF_ERR_INVALID, "bad format rejected");
    toolcall_free(NULL);
}

/* When things are released: per piece, the kinds of the events emitted. */
typedef struct {
    const char *piece;
    const char *kinds; /* one letter per event: C content, S start, A args */
} tstep_t;

static void test_timing(const char *title, toolcall_format_t fmt, const tstep_t *steps)
{
    toolcall_config_t cfg = {fmt, NULL, NULL, 1, NULL};
    toolcall_t *p = toolcall_create(&cfg, NULL);
    bool ok = true;
    for (int i = 0; steps[i].piece; i++) {
        toolcall_out_t o;
        char got[16] = "";
        if (steps[i].piece[0])
            toolcall_push(p, steps[i].piece, strlen(steps[i].piece), &o, NULL);
        else
            toolcall_finish(p, &o, NULL);
        for (size_t k = 0; k < o.n && k < sizeof got - 1; k++)
            got[k] = "CSA"[o.events[k].kind];
        if (strcmp(got, steps[i].kinds)) {
            tap_diag("step %d [%s]: events %s want %s", i, steps[i].piece, got, steps[i].kinds);
            ok = false;
        }
    }
    tap_ok(ok, "timing: %s", title);
    toolcall_free(p);
}

/* The server's chain for one choice: reasoning parser first, its content
 * segments into the tool-call parser; collects what a client would see. */
typedef struct {
    reasoning_t *rp;
    toolcall_t *tc;
    char reasoning[1024], content[1024], args[1024];
    int rtokens;
} chain_t;

static void chain_tool_events(chain_t *ch, const toolcall_out_t *to)
{
    for (size_t e = 0; e < to->n; e++) {
        if (to->events[e].kind == TOOLCALL_EV_CONTENT)
            strncat(ch->content, to->events[e].text, to->events[e].len);
        else if (to->events[e].kind == TOOLCALL_EV_ARGS)
            strncat(ch->args, to->events[e].text, to->events[e].len);
    }
}

static void chain_segments(chain_t *ch, const reasoning_out_t *ro)
{
    for (int k = 0; k < ro->n; k++) {
        if (ro->segs[k].kind == REASONING_SEG_REASONING) {
            strncat(ch->reasoning, ro->segs[k].text, ro->segs[k].len);
            continue;
        }
        toolcall_out_t to;
        toolcall_push(ch->tc, ro->segs[k].text, ro->segs[k].len, &to, NULL);
        chain_tool_events(ch, &to);
    }
}

/* Feeds the pieces as listed (step 0) or in chunks of step bytes. */
static int pipeline(const char *const *pieces, size_t step, chain_t *ch)
{
    memset(ch, 0, sizeof *ch);
    ch->rp = reasoning_create(REASONING_MODE_QWEN3, false, NULL);
    toolcall_config_t cfg = {H, NULL, NULL, 5, NULL};
    ch->tc = toolcall_create(&cfg, NULL);
    char text[1024] = "";
    size_t bounds[MAXP + 1], nb = 0;
    for (int i = 0; pieces[i]; i++) {
        strcat(text, pieces[i]);
        bounds[nb++] = strlen(text);
    }
    size_t n = strlen(text), off = 0, bi = 0;
    reasoning_out_t ro;
    while (off < n) {
        size_t end = step ? (off + step < n ? off + step : n) : bounds[bi++];
        reasoning_push(ch->rp, text + off, end - off, &ro, NULL);
        ch->rtokens += ro.token_in_reasoning;
        chain_segments(ch, &ro);
        off = end;
    }
    reasoning_finish(ch->rp, &ro, NULL);
    chain_segments(ch, &ro);
    toolcall_out_t to;
    toolcall_finish(ch->tc, &to, NULL);
    chain_tool_events(ch, &to);
    int ncalls = (int)toolcall_count(ch->tc);
    reasoning_free(ch->rp);
    toolcall_free(ch->tc);
    return ncalls;
}

static void test_pipeline(void)
{
    static const char *const pieces[] = {
        "<think>", "\nThe user wants", " the weather", " in M\xc3\xbcnchen.\n", "</think>", "\n\n",
        "<tool_call>", "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"M\xc3\xbcnchen\"}}",
        "\n</tool_call>", NULL};
    static chain_t ch;
    bool ok = true;
    for (size_t step = 0; step < 5; step++) {
        int ncalls = pipeline(pieces, step, &ch);
        bool good = !strcmp(ch.reasoning, "\nThe user wants the weather in M\xc3\xbcnchen.\n") &&
                    ch.content[0] == '\0' && ncalls == 1 &&
                    !strcmp(ch.args, "{\"city\":\"M\xc3\xbcnchen\"}") && (step || ch.rtokens == 5);
        if (!good)
            tap_diag("step %zu: r [%s] c [%s] a [%s] calls %d rt %d", step, ch.reasoning, ch.content,
                     ch.args, ncalls, ch.rtokens);
        ok = ok && good;
    }
    tap_ok(ok, "reasoning then hermes call: reasoning, no content, one call, 5 reasoning tokens");
}

int main(void)
{
    test_pipeline();
    test_timing("hermes announces at the arguments' '{' and streams them", H,
                (const tstep_t[]){{"Hi", "C"},
                                  {" <tool_", ""},
                                  {"call>{\"name\": \"f\", ", ""},
                                  {"\"arguments\": {\"a", "SA"},
                                  {"\": 1", "A"},
                                  {"}}", "A"},
                                  {"</tool_call>", ""},
                                  {"", ""},
                                  {NULL, NULL}});
    test_timing("llama3 JSON answer released when its key rules out a call", L,
                (const tstep_t[]){{"{\"name\": \"Ann\", ", ""},
                                  {"\"ag", ""},
                                  {"e\": 3}", "C"},
                                  {"", ""},
                                  {NULL, NULL}});
    test_timing("trailing whitespace held until finish", H,
                (const tstep_t[]){{"a ", "C"}, {"\n", ""}, {"", "C"}, {NULL, NULL}});
    test_timing("mistral v11 announces at '{'", M,
                (const tstep_t[]){{"[TOOL_CALLS]f", ""}, {"[ARGS]", ""}, {"{", "SA"}, {"}", "A"},
                                  {"", ""}, {NULL, NULL}});
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
    test_ids();
    test_detect();
    return tap_done();
}
