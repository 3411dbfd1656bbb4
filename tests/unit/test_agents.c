/* test_agents.c - the agent APIs' request parsers and their translation
 * onto the chat request (request_responses.c, request_messages.c), and
 * the output blocks both formats are built from (api_blocks.c):
 *   - Responses: accepted bodies and what the chat request holds (roles,
 *     reasoning_content, tool_calls, tools, response_format, ...), the
 *     normalized input items (ids, parts), and a table of bad bodies with
 *     the field each 400 names;
 *   - Messages: the same for Anthropic's shapes (tool_result -> tool
 *     messages, thinking -> reasoning, prefill, tool_choice any/tool/none);
 *   - blocks: event sequences -> blocks and the sink's calls;
 *   - mutation fuzzing of both parsers: flipped, dropped and duplicated
 *     bytes of valid bodies give a parse or a filled 4xx, never a crash
 *     (run it under ASan: configure --enable-sanitizers; LLM_FUZZ_ROUNDS
 *     sets the number of rounds, 6000 by default).
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/api_blocks.h"
#include "server/request/request_messages.h"
#include "server/request/request_responses.h"
#include "tap.h"
#include "unit/mutate.h"

/* The value at a dotted path ("messages.1.tool_calls.0.id"), or NULL. */
static json_object *at(json_object *o, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *tok = strtok(buf, "."); tok && o; tok = strtok(NULL, ".")) {
        if (json_object_is_type(o, json_type_array)) {
            o = json_object_array_get_idx(o, (size_t)atoi(tok));
        } else {
            json_object *v = NULL;
            o = json_object_object_get_ex(o, tok, &v) ? v : NULL;
        }
    }
    return o;
}

/* The string at path, "" when absent, "(null)" when JSON null. */
static const char *s_at(json_object *o, const char *path)
{
    json_object *v = at(o, path);
    if (!v)
        return "";
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : json_object_to_json_string(v);
}

typedef struct {
    const char *path, *want;
} expect_t;

/* ---------------------------------------------------------- Responses */

#define TOOL "{\"type\":\"function\",\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\"}}"

typedef struct {
    const char *body;
    expect_t chat[8];      /* paths in the translated chat request */
    expect_t items[4];     /* paths in the normalized input items */
} rgood_t;

static const rgood_t rgood[] = {
    {"{\"input\":\"Hi\"}", {{"messages.0.role", "user"}, {"messages.0.content", "Hi"}, {"tools", ""}},
     {{"0.type", "message"}, {"0.content.0.type", "input_text"}, {"0.id", "msg_abc0000"}, {"0.status", "completed"}}},
    {"{\"input\":\"Hi\",\"instructions\":\"Be brief.\",\"max_output_tokens\":9,\"temperature\":0.5,\"top_p\":0.9}",
     {{"messages.0.role", "system"}, {"messages.0.content", "Be brief."}, {"messages.1.content", "Hi"},
      {"max_completion_tokens", "9"}, {"temperature", "0.5"}, {"top_p", "0.9"}}, {{NULL, NULL}}},
    {"{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"a\"},{\"type\":\"input_text\","
     "\"text\":\"b\"}]},{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"ok\"},{\"role\":\"developer\","
     "\"content\":\"d\"}]}",
     {{"messages.0.content", "ab"}, {"messages.1.role", "assistant"}, {"messages.1.content", "ok"},
      {"messages.2.role", "developer"}},
     {{"1.content.0.type", "output_text"}, {"1.id", "msg_abc0001"}}},
    /* one assistant turn: reasoning + text + two calls; then outputs */
    {"{\"input\":[{\"role\":\"user\",\"content\":\"w\"},{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[],"
     "\"content\":[{\"type\":\"reasoning_text\",\"text\":\"think\"}]},{\"type\":\"message\",\"role\":\"assistant\","
     "\"content\":[{\"type\":\"output_text\",\"text\":\"let me see\"}]},{\"type\":\"function_call\",\"call_id\":\"c1\","
     "\"name\":\"get_weather\",\"arguments\":\"{}\"},{\"type\":\"function_call\",\"call_id\":\"c2\",\"name\":"
     "\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"},{\"type\":\"function_call_output\",\"call_id\":"
     "\"c1\",\"output\":\"sunny\"},{\"type\":\"function_call_output\",\"call_id\":\"c2\",\"output\":[{\"type\":"
     "\"input_text\",\"text\":\"rain\"}]}],\"tools\":[" TOOL "]}",
     {{"messages.1.role", "assistant"}, {"messages.1.reasoning_content", "think"}, {"messages.1.content", "let me see"},
      {"messages.1.tool_calls.1.function.arguments", "{\"city\":\"Oslo\"}"}, {"messages.2.role", "tool"},
      {"messages.2.tool_call_id", "c1"}, {"messages.3.content", "rain"}, {"tools.0.function.strict", "true"}},
     {{"1.id", "rs_1"}, {"3.id", "fc_abc0002"}, {"5.id", "fco_abc0004"}, {"3.status", "completed"}}},
    /* reasoning summary only; text.format json_schema; tool_choice named; effort */
    {"{\"input\":[{\"type\":\"reasoning\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"s\"}]},{\"type\":"
     "\"function_call\",\"call_id\":\"c\",\"name\":\"get_weather\",\"arguments\":\"{}\"}],\"tools\":[" TOOL "],"
     "\"tool_choice\":{\"type\":\"function\",\"name\":\"get_weather\"},\"reasoning\":{\"effort\":\"low\"},\"text\":"
     "{\"format\":{\"type\":\"json_schema\",\"name\":\"x\",\"schema\":{\"type\":\"object\"},\"strict\":true}}}",
     {{"messages.0.reasoning_content", "s"}, {"messages.0.content", ""},
      {"tool_choice.function.name", "get_weather"}, {"reasoning_effort", "low"},
      {"response_format.type", "json_schema"}, {"response_format.json_schema.name", "x"}}, {{NULL, NULL}}},
    {"{\"input\":\"x\",\"text\":{\"format\":{\"type\":\"json_object\"}},\"tools\":[{\"type\":\"function\",\"name\":"
     "\"f\",\"strict\":false}],\"tool_choice\":\"required\",\"parallel_tool_calls\":false,\"seed\":7,"
     "\"chat_template_kwargs\":{\"enable_thinking\":false}}",
     {{"response_format.type", "json_object"}, {"tools.0.function.strict", "false"}, {"tool_choice", "required"},
      {"parallel_tool_calls", "false"}, {"seed", "7"}, {"chat_template_kwargs.enable_thinking", "false"}},
     {{NULL, NULL}}},
    {"{\"input\":\"x\",\"store\":false,\"metadata\":{\"k\":\"v\"},\"include\":[\"reasoning.encrypted_content\"]}",
     {{"messages.0.content", "x"}}, {{NULL, NULL}}},
};

typedef struct {
    const char *body;
    int status;
    const char *param;
} bad_t;

static const bad_t rbad[] = {
    {"[]", 400, ""},
    {"{}", 400, "input"},
    {"{\"input\":7}", 400, "input"},
    {"{\"input\":[]}", 400, "input"},
    {"{\"input\":[7]}", 400, "input[0]"},
    {"{\"input\":[{\"role\":\"robot\",\"content\":\"x\"}]}", 400, "input[0].role"},
    {"{\"input\":[{\"role\":\"user\"}]}", 400, "input[0].content"},
    {"{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\"}]}]}", 400, "input[0].content[0]"},
    {"{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"bogus\",\"text\":\"x\"}]}]}", 400,
     "input[0].content[0]"},
    {"{\"input\":[{\"type\":\"web_search_call\"}]}", 400, "input[0]"},
    {"{\"input\":[{\"type\":\"item_reference\",\"id\":\"msg_1\"}]}", 400, "input[0]"},
    {"{\"input\":[{\"type\":\"function_call\",\"name\":\"f\",\"arguments\":\"{}\"}]}", 400, "input[0].call_id"},
    {"{\"input\":[{\"type\":\"function_call_output\",\"call_id\":\"c\"}]}", 400, "input[0].output"},
    {"{\"input\":[{\"type\":\"reasoning\",\"summary\":[{\"type\":\"x\"}]}]}", 400, "input[0].summary"},
    {"{\"input\":\"x\",\"tools\":[{\"type\":\"web_search\"}]}", 400, "tools[0]"},
    {"{\"input\":\"x\",\"tools\":[{\"type\":\"function\"}]}", 400, "tools[0]"},
    {"{\"input\":\"x\",\"tool_choice\":\"sometimes\"}", 400, "tool_choice"},
    {"{\"input\":\"x\",\"tool_choice\":\"required\"}", 400, "tool_choice"},
    {"{\"input\":\"x\",\"tools\":[" TOOL "],\"tool_choice\":{\"type\":\"function\",\"name\":\"nope\"}}", 400,
     "tool_choice"},
    {"{\"input\":\"x\",\"text\":{\"format\":{\"type\":\"json_schema\"}}}", 400, "text.format.name"},
    {"{\"input\":\"x\",\"text\":{\"format\":{\"type\":\"yaml\"}}}", 400, "text.format.type"},
    {"{\"input\":\"x\",\"reasoning\":{\"effort\":\"max\"}}", 400, "reasoning.effort"},
    {"{\"input\":\"x\",\"max_output_tokens\":0}", 400, "max_output_tokens"},
    {"{\"input\":\"x\",\"max_output_tokens\":\"9\"}", 400, "max_output_tokens"},
    {"{\"input\":\"x\",\"temperature\":\"hot\"}", 400, "temperature"},
    {"{\"input\":\"x\",\"temperature\":3}", 400, "temperature"},
    {"{\"input\":\"x\",\"store\":\"yes\"}", 400, "store"},
    {"{\"input\":\"x\",\"background\":true,\"store\":false}", 400, "background"},
    {"{\"input\":\"x\",\"background\":true,\"stream\":true}", 400, "background"},
    {"{\"input\":\"x\",\"previous_response_id\":7}", 400, "previous_response_id"},
    {"{\"input\":\"x\",\"metadata\":{\"k\":7}}", 400, "metadata"},
    {"{\"input\":\"x\",\"conversation\":\"conv_1\"}", 400, "conversation"},
    {"{\"input\":\"x\",\"truncation\":\"sometimes\"}", 400, "truncation"},
    {"{\"input\":\"x\",\"seed\":\"s\"}", 400, "seed"},
};

static void test_responses(void)
{
    req_limits_t lim = {.max_n = 16};
    for (size_t i = 0; i < sizeof rgood / sizeof rgood[0]; i++) {
        req_responses_t q;
        req_err_t e = {0};
        const char *b = rgood[i].body;
        if (!tap_ok(req_responses_parse(b, strlen(b), "abc", &q, &e) == 0, "responses good %zu parses (%s: %s)", i,
                    e.param, e.msg))
            continue;
        chat_req_t c;
        if (tap_ok(req_responses_chat(&q, q.input, &lim, &c, &e) == 0, "responses good %zu translates (%s: %s)", i,
                   e.param, e.msg)) {
            for (size_t k = 0; k < 8 && rgood[i].chat[k].path; k++)
                tap_ok(!strcmp(s_at(c.raw, rgood[i].chat[k].path), rgood[i].chat[k].want),
                       "responses good %zu: chat %s = '%s' (got '%s')", i, rgood[i].chat[k].path,
                       rgood[i].chat[k].want, s_at(c.raw, rgood[i].chat[k].path));
            req_chat_free(&c);
        }
        for (size_t k = 0; k < 4 && rgood[i].items[k].path; k++)
            tap_ok(!strcmp(s_at(q.input, rgood[i].items[k].path), rgood[i].items[k].want),
                   "responses good %zu: item %s = '%s' (got '%s')", i, rgood[i].items[k].path, rgood[i].items[k].want,
                   s_at(q.input, rgood[i].items[k].path));
        req_responses_free(&q);
    }
    for (size_t i = 0; i < sizeof rbad / sizeof rbad[0]; i++) {
        req_responses_t q;
        req_err_t e = {0};
        const char *b = rbad[i].body;
        int rc = req_responses_parse(b, strlen(b), "abc", &q, &e);
        if (rc == 0) { /* some errors come from the chat parser */
            chat_req_t c;
            rc = req_responses_chat(&q, q.input, &lim, &c, &e);
            if (rc == 0)
                req_chat_free(&c);
            req_responses_free(&q);
        }
        tap_ok(rc < 0 && e.status == rbad[i].status && !strcmp(e.param, rbad[i].param) && e.msg[0],
               "responses bad %zu -> %d '%s' (got %d '%s': %s)", i, rbad[i].status, rbad[i].param, e.status, e.param,
               e.msg);
    }
}

/* ----------------------------------------------------------- Messages */

#define ATOOL "{\"name\":\"get_weather\",\"input_schema\":{\"type\":\"object\"}}"
#define M(c) "\"messages\":[{\"role\":\"user\",\"content\":" c "}]"

typedef struct {
    const char *body;
    bool count;
    expect_t chat[8];
    bool stream, thinking, prefill;
} mgood_t;

static const mgood_t mgood[] = {
    {"{\"model\":\"m\",\"max_tokens\":5," M("\"hi\"") "}", false,
     {{"messages.0.content", "hi"}, {"max_tokens", "5"}, {"chat_template_kwargs.enable_thinking", "false"},
      {"reasoning_effort", ""}}, false, false, false},
    {"{\"max_tokens\":5,\"system\":[{\"type\":\"text\",\"text\":\"S1\"},{\"type\":\"text\",\"text\":\"S2\"}],"
     "\"stop_sequences\":[\"END\"],\"temperature\":0.2,\"top_k\":3,\"stream\":true," M("[{\"type\":\"text\",\"text\":"
     "\"a\"},{\"type\":\"text\",\"text\":\"b\"}]") "}", false,
     {{"messages.0.role", "system"}, {"messages.0.content", "S1S2"}, {"messages.1.content", "ab"}, {"stop.0", "END"},
      {"top_k", "3"}, {"stream", "true"}}, true, false, false},
    /* a tool round trip: tool_use in the assistant turn, tool_result first */
    {"{\"max_tokens\":2000,\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024},\"tools\":[" ATOOL "],"
     "\"tool_choice\":{\"type\":\"any\",\"disable_parallel_tool_use\":true},\"messages\":[{\"role\":\"user\","
     "\"content\":\"w\"},{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hmm\",\"signature\":"
     "\"x\"},{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"get_weather\",\"input\":{\"city\":\"Paris\"}}]},{\"role\":"
     "\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":[{\"type\":\"text\",\"text\":"
     "\"sunny\"}]},{\"type\":\"text\",\"text\":\"thanks\"}]}]}", false,
     {{"messages.1.reasoning_content", "hmm"}, {"messages.1.content", ""},
      {"messages.1.tool_calls.0.function.arguments", "{\"city\":\"Paris\"}"}, {"messages.2.role", "tool"},
      {"messages.2.content", "sunny"}, {"messages.3.content", "thanks"}, {"tool_choice", "required"},
      {"parallel_tool_calls", "false"}}, false, true, false},
    {"{\"max_tokens\":5,\"tools\":[" ATOOL "],\"tool_choice\":{\"type\":\"tool\",\"name\":\"get_weather\"},"
     "\"metadata\":{\"user_id\":\"u1\"}," M("\"x\"") "}", false,
     {{"tool_choice.function.name", "get_weather"}, {"tools.0.function.parameters.type", "object"}, {"user", "u1"}},
     false, false, false},
    {"{\"max_tokens\":5,\"tools\":[" ATOOL "],\"tool_choice\":{\"type\":\"none\"}," M("\"x\"") "}", false,
     {{"tool_choice", "none"}}, false, false, false},
    /* prefill: the last assistant message is continued */
    {"{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":"
     "\"The answer is\"}]}", false,
     {{"continue_final_message", "true"}, {"add_generation_prompt", "false"}}, false, false, true},
    /* count_tokens: no max_tokens */
    {"{\"model\":\"m\"," M("\"hi\"") "}", true, {{"messages.0.content", "hi"}, {"max_tokens", ""}}, false, false,
     false},
};

static const bad_t mbad[] = {
    {"7", 400, ""},
    {"{" M("\"x\"") "}", 400, "max_tokens"},
    {"{\"max_tokens\":0," M("\"x\"") "}", 400, "max_tokens"},
    {"{\"max_tokens\":\"5\"," M("\"x\"") "}", 400, "max_tokens"},
    {"{\"max_tokens\":5}", 400, "messages"},
    {"{\"max_tokens\":5,\"messages\":[]}", 400, "messages"},
    {"{\"max_tokens\":5,\"messages\":[{\"role\":\"system\",\"content\":\"x\"}]}", 400, "messages.0"},
    {"{\"max_tokens\":5," M("7") "}", 400, "messages.0"},
    {"{\"max_tokens\":5," M("[{\"type\":\"document\"}]") "}", 400, "messages.0.content.0"},
    {"{\"max_tokens\":5," M("[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}]") "}", 400,
     "messages.0.content.0"},
    {"{\"max_tokens\":5,\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_result\","
     "\"tool_use_id\":\"t\"}]}]}", 400, "messages.0.content.0"},
    {"{\"max_tokens\":5," M("[{\"type\":\"image\",\"source\":{\"type\":\"file\"}}]") "}", 400,
     "messages.0.content.0"},
    {"{\"max_tokens\":5," M("[{\"type\":\"text\"}]") "}", 400, "messages.0.content.0"},
    {"{\"max_tokens\":5,\"system\":7," M("\"x\"") "}", 400, "system"},
    {"{\"max_tokens\":5,\"temperature\":1.5," M("\"x\"") "}", 400, "temperature"},
    {"{\"max_tokens\":5,\"top_k\":-1," M("\"x\"") "}", 400, "top_k"},
    {"{\"max_tokens\":5,\"stop_sequences\":\"END\"," M("\"x\"") "}", 400, "stop_sequences"},
    {"{\"max_tokens\":5,\"tools\":[{\"name\":\"f\"}]," M("\"x\"") "}", 400, "tools.0"},
    {"{\"max_tokens\":5,\"tools\":[{\"type\":\"web_search_20250305\",\"name\":\"web_search\"}]," M("\"x\"") "}", 400,
     "tools.0"},
    {"{\"max_tokens\":5,\"tool_choice\":{\"type\":\"maybe\"}," M("\"x\"") "}", 400, "tool_choice"},
    {"{\"max_tokens\":5,\"tool_choice\":{\"type\":\"any\"}," M("\"x\"") "}", 400, "tool_choice"},
    {"{\"max_tokens\":5,\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024}," M("\"x\"") "}", 400,
     "thinking.budget_tokens"},
    {"{\"max_tokens\":5000,\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":100}," M("\"x\"") "}", 400,
     "thinking.budget_tokens"},
    {"{\"max_tokens\":5,\"thinking\":{\"type\":\"sometimes\"}," M("\"x\"") "}", 400, "thinking"},
    {"{\"max_tokens\":5,\"model\":7," M("\"x\"") "}", 400, "model"},
};

static void test_messages(void)
{
    req_limits_t lim = {.max_n = 16};
    for (size_t i = 0; i < sizeof mgood / sizeof mgood[0]; i++) {
        req_messages_t q;
        req_err_t e = {0};
        const char *b = mgood[i].body;
        if (!tap_ok(req_messages_parse(b, strlen(b), mgood[i].count, &lim, &q, &e) == 0,
                    "messages good %zu parses (%s: %s)", i, e.param, e.msg))
            continue;
        for (size_t k = 0; k < 8 && mgood[i].chat[k].path; k++)
            tap_ok(!strcmp(s_at(q.chat.raw, mgood[i].chat[k].path), mgood[i].chat[k].want),
                   "messages good %zu: chat %s = '%s' (got '%s')", i, mgood[i].chat[k].path, mgood[i].chat[k].want,
                   s_at(q.chat.raw, mgood[i].chat[k].path));
        tap_ok(q.stream == mgood[i].stream && q.thinking == mgood[i].thinking && q.prefill == mgood[i].prefill,
               "messages good %zu: stream %d thinking %d prefill %d", i, q.stream, q.thinking, q.prefill);
        req_messages_free(&q);
    }
    for (size_t i = 0; i < sizeof mbad / sizeof mbad[0]; i++) {
        req_messages_t q;
        req_err_t e = {0};
        const char *b = mbad[i].body;
        int rc = req_messages_parse(b, strlen(b), false, &lim, &q, &e);
        if (rc == 0)
            req_messages_free(&q);
        tap_ok(rc < 0 && e.status == mbad[i].status && !strcmp(e.param, mbad[i].param) && e.msg[0],
               "messages bad %zu -> %d '%s' (got %d '%s': %s)", i, mbad[i].status, mbad[i].param, e.status, e.param,
               e.msg);
    }
}

/* ------------------------------------------------------------- blocks */

typedef struct {
    char log[512];
} sink_log_t;

static void lg(void *ctx, char what, size_t i, const char *p, size_t n)
{
    sink_log_t *s = ctx;
    size_t l = strlen(s->log);
    snprintf(s->log + l, sizeof s->log - l, "%c%zu%.*s|", what, i, (int)n, p);
}
static void s_open(void *ctx, size_t i, const blk_t *b)
{
    lg(ctx, 'O', i, b->kind == BLK_TEXT ? "t" : b->kind == BLK_TOOL ? "c" : "r", 1);
}
static void s_delta(void *ctx, size_t i, const blk_t *b, const char *p, size_t n)
{
    (void)b;
    lg(ctx, 'D', i, p, n);
}
static void s_close(void *ctx, size_t i, const blk_t *b)
{
    (void)b;
    lg(ctx, 'C', i, "", 0);
}

static void test_blocks(void)
{
    static const blk_sink_t sink = {s_open, s_delta, s_close};
    sink_log_t s = {{0}};
    blk_list_t l;
    blk_init(&l, &sink, &s);
    chat_out_ev_t ev[] = {
        {CHAT_OUT_REASONING, -1, " ", 1, NULL, NULL}, {CHAT_OUT_REASONING, -1, "hm", 2, NULL, NULL},
        {CHAT_OUT_REASONING, -1, "m", 1, NULL, NULL},  {CHAT_OUT_CONTENT, -1, "\n\n", 2, NULL, NULL},
        {CHAT_OUT_TOOL_START, 0, NULL, 0, "id0", "f"}, {CHAT_OUT_TOOL_ARGS, 0, "{}", 2, NULL, NULL},
        {CHAT_OUT_CONTENT, -1, " ", 1, NULL, NULL},    {CHAT_OUT_CONTENT, -1, "ok", 2, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
        blk_chat(&l, &ev[i]);
    blk_finish(&l);
    tap_ok(!strcmp(s.log, "O0r|D0 hm|D0m|C0|O1c|D1{}|C1|O2t|D2 ok|C2|"), "blocks: sink calls (got %s)", s.log);
    tap_ok(l.n == 3 && !strcmp(l.v[0].text, " hmm") && l.v[1].kind == BLK_TOOL && !strcmp(l.v[1].call_id, "id0") &&
               !strcmp(l.v[1].text, "{}") && !strcmp(l.v[2].text, " ok"),
           "blocks: reasoning, call, text; blank-only text between them dropped");
    blk_free(&l);
    blk_init(&l, NULL, NULL);
    blk_text(&l, "  ", 2);
    blk_finish(&l);
    tap_ok(l.n == 0, "blocks: an answer of blanks only makes no block");
    blk_free(&l);
}

/* --------------------------------------------------------------- fuzz */

static void fuzz(void)
{
    const char *seeds[] = {rgood[3].body, rgood[4].body, rgood[5].body, mgood[2].body, mgood[1].body, mgood[6].body};
    unsigned long long rng = 26;
    int bad = 0, total = 0, accepted = 0;
    static char buf[4096];
    req_limits_t lim = {.max_n = 16};
    /* LLM_FUZZ_ROUNDS: more rounds for a long run under ASan */
    const char *env = getenv("LLM_FUZZ_ROUNDS");
    int rounds = env && atoi(env) > 0 ? atoi(env) : 6000;
    for (int round = 0; round < rounds; round++) {
        const char *src = seeds[round % 6];
        size_t len = strlen(src);
        memcpy(buf, src, len + 1);
        mutate(buf, &len, sizeof buf, &rng, 1 + round % 4);
        req_err_t e = {0};
        req_responses_t q;
        if (req_responses_parse(buf, len, "f", &q, &e) == 0) {
            chat_req_t c;
            if (req_responses_chat(&q, q.input, &lim, &c, &e) == 0) {
                req_chat_free(&c);
                accepted++;
            } else if (e.status < 400 || e.status > 503 || !e.msg[0]) {
                bad++;
            }
            req_responses_free(&q);
        } else if (e.status < 400 || e.status > 503 || !e.msg[0]) {
            bad++;
        }
        req_messages_t m;
        memset(&e, 0, sizeof e);
        if (req_messages_parse(buf, len, round % 2, &lim, &m, &e) == 0) {
            req_messages_free(&m);
            accepted++;
        } else if (e.status < 400 || e.status > 503 || !e.msg[0]) {
            bad++;
        }
        total += 2;
    }
    tap_ok(bad == 0 && accepted > 0, "fuzzed bodies: %d parses (%d accepted), every failure a 4xx with a message "
           "(%d bad)", total, accepted, bad);
}

int main(void)
{
    test_responses();
    test_messages();
    test_blocks();
    fuzz();
    return tap_done();
}
