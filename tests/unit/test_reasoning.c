/* test_reasoning.c - every reasoning format (<think> variants, [THINK],
 * <seed:think>, Granite's phrases, harmony channels, generic markers) gives
 * the same reasoning and content whatever the split of the text: token by
 * token (as listed in the table), at every 2-way split, byte by byte;
 * markup never leaks. */
#include "chat/parse/reasoning.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

#define MAXP 24

typedef struct {
    const char *name;
    reasoning_mode_t mode;
    bool inside;
    const char *pieces[MAXP]; /* the "tokens"; NULL-terminated */
    const char *reasoning;    /* expected, NULL = none */
    const char *content;      /* expected, NULL = none */
    int reasoning_tokens;     /* expected count when fed token by token */
    const char *gopen, *gclose; /* GENERIC: the markers */
} rcase_t;

#define HARMONY_CALL_TEXT "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json" \
                          "<|message|>{\"city\":\"Paris\"}<|call|>"

static const rcase_t cases[] = {
    {"r1 explicit open and close", REASONING_MODE_DEEPSEEK_R1, false,
     {"<think>", "\nOkay", ", let", " me", "</think>", "\n\nAnswer", "."},
     "\nOkay, let me", "\n\nAnswer.", 5, NULL, NULL},
    {"r1 implicit open (prompt opened <think>)", REASONING_MODE_DEEPSEEK_R1, true,
     {"\n", "Okay", ".", "</think>", "\n\n", "Yes"}, "\nOkay.", "\n\nYes", 4, NULL, NULL},
    {"r1 implicit open with redundant <think>", REASONING_MODE_DEEPSEEK_R1, true,
     {"<think>", "hm", "</think>", "ok"}, "hm", "ok", 3, NULL, NULL},
    {"tags split across tokens", REASONING_MODE_QWEN3, false,
     {"<th", "ink>a", "b</", "thi", "nk", ">c"}, "ab", "c", 5, NULL, NULL},
    {"tag merged with text in one token", REASONING_MODE_QWEN3, false,
     {"pre<think>x</think>post"}, "x", "prepost", 1, NULL, NULL},
    {"qwen3 no tags at all", REASONING_MODE_QWEN3, false,
     {"Hello", " world", "\n"}, NULL, "Hello world\n", 0, NULL, NULL},
    {"qwen3 thinking disabled by prompt: no tags", REASONING_MODE_QWEN3, false,
     {"Just", " answer"}, NULL, "Just answer", 0, NULL, NULL},
    {"unterminated reasoning (length)", REASONING_MODE_DEEPSEEK_R1, true,
     {"thinking", " more", "</th"}, "thinking more</th", NULL, 3, NULL, NULL},
    {"unicode inside reasoning", REASONING_MODE_QWEN3, false,
     {"<think>", "caf\xc3\xa9 ", "\xe2\x9c\x93 \xf0\x9f\x98\x80", "</think>", "\xe6\x97\xa5"},
     "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80", "\xe6\x97\xa5", 4, NULL, NULL},
    {"lookalike tags stay text", REASONING_MODE_QWEN3, false,
     {"<thin", "g> <", "think", ">a < /think> <", "/thinker", "</think>b"},
     "a < /think> </thinker", "<thing> b", 3, NULL, NULL},
    {"second block is content verbatim", REASONING_MODE_QWEN3, false,
     {"<think>a</think>", "b<think>c</think>"}, "a", "b<think>c</think>", 1, NULL, NULL},
    {"empty reasoning", REASONING_MODE_QWEN3, false, {"<think>", "</think>", "x"}, NULL, "x", 2, NULL, NULL},
    {"partial open tag at end is content", REASONING_MODE_QWEN3, false,
     {"a", "<thi"}, NULL, "a<thi", 0, NULL, NULL},
    {"mode none keeps tags", REASONING_MODE_NONE, false,
     {"<think>", "x", "</think>"}, NULL, "<think>x</think>", 0, NULL, NULL},
    {"stray close tag in content (not inside)", REASONING_MODE_QWEN3, false,
     {"a", "</think>", "b<think>"}, NULL, "ab<think>", 0, NULL, NULL},
    {"inside start: close right away", REASONING_MODE_DEEPSEEK_R1, true,
     {"</think>", "x"}, NULL, "x", 1, NULL, NULL},
    {"inside start: '<' then close", REASONING_MODE_DEEPSEEK_R1, true,
     {"<", "/think>", "x"}, "", "x", 2, NULL, NULL},
    /* deepseek_v3: the thinking switch decides from the prompt */
    {"deepseek_v3 thinking on", REASONING_MODE_DEEPSEEK_V3, true, {"hm", "</think>", "ok"}, "hm", "ok", 2, NULL, NULL},
    {"deepseek_v3 thinking off: tags are content", REASONING_MODE_DEEPSEEK_V3, false,
     {"<think>", "x", "</think>", "y"}, NULL, "<think>x</think>y", 0, NULL, NULL},
    /* glm45, seed_oss, mistral: the model opens the block itself */
    {"glm45", REASONING_MODE_GLM45, false, {"\n<think>", "Let me see.", "</think>", "Done."},
     "Let me see.", "\nDone.", 3, NULL, NULL},
    {"seed_oss split markers", REASONING_MODE_SEED_OSS, false,
     {"<seed:", "think>", "a<seed:cot_budget_reflect>1</seed:cot_budget_reflect>", "</seed:th", "ink>", "b"},
     "a<seed:cot_budget_reflect>1</seed:cot_budget_reflect>", "b", 4, NULL, NULL},
    {"seed_oss ignores <think>", REASONING_MODE_SEED_OSS, false, {"<think>x</think>"}, NULL, "<think>x</think>", 0, NULL, NULL},
    {"mistral [THINK]", REASONING_MODE_MISTRAL, false, {"[THINK]", "Two", " steps", "[/THINK]", "Answer"},
     "Two steps", "Answer", 4, NULL, NULL},
    {"mistral split [/THINK]", REASONING_MODE_MISTRAL, false, {"[THI", "NK]a[/", "THI", "NK]b"}, "a", "b", 3, NULL, NULL},
    /* kimi_k2 and minimax_m2 start inside (R1-like) */
    {"kimi_k2 redundant <think>", REASONING_MODE_KIMI_K2, true, {"<think>", "plan", "</think>", "text"},
     "plan", "text", 3, NULL, NULL},
    {"kimi_k2 tool section ends the reasoning and stays content", REASONING_MODE_KIMI_K2, true,
     {"<think>", "call it", "<|tool_calls_section_begin|>", "<|tool_call_begin|>"}, "call it",
     "<|tool_calls_section_begin|><|tool_call_begin|>", 3, NULL, NULL},
    {"minimax_m2 no open marker", REASONING_MODE_MINIMAX_M2, true, {"The user", " wants", "</think>", "\n\nHi"},
     "The user wants", "\n\nHi", 3, NULL, NULL},
    /* granite: phrases, not tags */
    {"granite phrases", REASONING_MODE_GRANITE, false,
     {"Here is my thought", " process:", " think", " hard ", "Here is my", " response:", " 42"},
     " think hard ", " 42", 5, NULL, NULL},
    {"granite Here's variant", REASONING_MODE_GRANITE, false,
     {"Here's my thought process:", "x", "Here's my response:", "y"}, "x", "y", 3, NULL, NULL},
    {"granite <think> and <response> dropped", REASONING_MODE_GRANITE, false,
     {"<think>", "t", "</think>", "<response>", "Hello", "</response>"}, "t", "Hello", 3, NULL, NULL},
    {"granite lookalike phrase stays content", REASONING_MODE_GRANITE, false,
     {"Here is my answer: no thinking."}, NULL, "Here is my answer: no thinking.", 0, NULL, NULL},
    /* generic: configured markers */
    {"generic markers", REASONING_MODE_GENERIC, false, {"<|begin_of_thought|>", "deep", "<|end_of", "_thought|>", "x"},
     "deep", "x", 4, "<|begin_of_thought|>", "<|end_of_thought|>"},
    {"generic starting inside", REASONING_MODE_GENERIC, true, {"a", "[/R]", "b"}, "a", "b", 2, "[R]", "[/R]"},
    /* gpt-oss: harmony channels */
    {"harmony analysis then final", REASONING_MODE_GPT_OSS, false,
     {"<|channel|>", "analysis", "<|message|>", "Need", " facts.", "<|end|>", "<|start|>", "assistant", "<|channel|>",
      "final", "<|message|>", "It", " is", " 4.", "<|return|>"},
     "Need facts.", "It is 4.", 4, NULL, NULL},
    {"harmony tool call goes to the content verbatim", REASONING_MODE_GPT_OSS, false,
     {"<|channel|>", "analysis", "<|message|>", "Weather.", "<|end|>", "<|start|>", "assistant", "<|channel|>",
      "commentary to=functions.get_weather", " ", "<|constrain|>", "json", "<|message|>", "{\"city\":",
      "\"Paris\"}", "<|call|>"},
     "Weather.", HARMONY_CALL_TEXT, 3, NULL, NULL},
    {"harmony commentary preamble is content", REASONING_MODE_GPT_OSS, false,
     {"<|channel|>commentary<|message|>", "Checking.", "<|end|>"}, NULL, "Checking.", 0, NULL, NULL},
    {"harmony built-in tool is reasoning", REASONING_MODE_GPT_OSS, false,
     {"<|channel|>analysis to=browser.search<|message|>", "{\"q\": 1}", "<|call|>"}, "{\"q\": 1}", NULL, 3, NULL, NULL},
    {"harmony missing terminator before the next header", REASONING_MODE_GPT_OSS, false,
     {"<|channel|>analysis<|message|>", "a", "<|start|>assistant<|channel|>final<|message|>", "b"}, "a", "b", 3, NULL, NULL},
    {"harmony plain text without markup", REASONING_MODE_GPT_OSS, false, {"Just", " text <|x|>"}, NULL,
     "Just text <|x|>", 0, NULL, NULL},
    {"harmony unterminated analysis", REASONING_MODE_GPT_OSS, false, {"<|channel|>analysis<|message|>", "th", "<|e"},
     "th<|e", NULL, 3, NULL, NULL},
    {"harmony header cut by the end", REASONING_MODE_GPT_OSS, false, {"<|channel|>anal"}, NULL,
     "<|channel|>anal", 0, NULL, NULL},
    {"harmony commentary to a built-in tool is dropped (vLLM)", REASONING_MODE_GPT_OSS, false,
     {"<|channel|>commentary to=python <|constrain|>code<|message|>", "print(1)", "<|call|>"}, NULL, NULL, 0, NULL,
     NULL},
    {"harmony built-in call after the analysis", REASONING_MODE_GPT_OSS, false,
     {"<|channel|>analysis<|message|>", "Search it.", "<|end|>", "<|start|>assistant<|channel|>commentary",
      " to=browser.search", "<|message|>", "{\"query\": \"x\"}", "<|call|>"}, "Search it.", NULL, 3, NULL, NULL},
    /* deepseek_v3 (V3.2 / V4): the DSML tool block ends the thinking */
    {"deepseek_v3 DSML block ends the reasoning", REASONING_MODE_DEEPSEEK_V3, true,
     {"plan", "<\xef\xbd\x9c" "DSML\xef\xbd\x9c" "function_calls>", "\n<x>"}, "plan",
     "<\xef\xbd\x9c" "DSML\xef\xbd\x9c" "function_calls>\n<x>", 2, NULL, NULL},
    /* gemma4: <|channel>thought\n ... <channel|>, several blocks */
    {"gemma4 thought channel", REASONING_MODE_GEMMA4, false,
     {"<|channel>", "thought", "\n", "Let me", " think.", "<channel|>", "The answer."}, "Let me think.",
     "The answer.", 6, NULL, NULL},
    {"gemma4 channel without the label", REASONING_MODE_GEMMA4, false, {"<|channel>", "plain", "<channel|>", "x"},
     "plain", "x", 3, NULL, NULL},
    {"gemma4 label lookalike is reasoning", REASONING_MODE_GEMMA4, false,
     {"<|channel>", "thoughtful", " idea", "<channel|>", "x"}, "thoughtful idea", "x", 4, NULL, NULL},
    {"gemma4 empty trailing block and stray close dropped", REASONING_MODE_GEMMA4, false,
     {"<|channel>thought\na<channel|>", "b", "<|channel>thought\n<channel|>", "<channel|>", "c"}, "a", "bc", 2, NULL,
     NULL},
    {"gemma4 tool call ends the reasoning and stays content", REASONING_MODE_GEMMA4, false,
     {"<|channel>thought\n", "x", "<|tool_call>", "call:f{}<tool_call|>"}, "x", "<|tool_call>call:f{}<tool_call|>",
     3, NULL, NULL},
    /* kimi_k3: XTML sections */
    {"kimi_k3 think then response", REASONING_MODE_KIMI_K3, true,
     {"plan", "<|close|>", "think", "<|sep|>", "<|open|>", "response", "<|sep|>", "Hi", "<|close|>response<|sep|>",
      "<|close|>message<|sep|>"}, "plan", "Hi", 4, NULL, NULL},
    {"kimi_k3 tools section stays content", REASONING_MODE_KIMI_K3, true,
     {"p", "<|close|>think<|sep|>", "<|open|>response<|sep|><|close|>response<|sep|>", "<|open|>tools<|sep|>", "X"},
     "p", "<|open|>tools<|sep|>X", 2, NULL, NULL},
    {"kimi_k3 response opener without the think closer", REASONING_MODE_KIMI_K3, true,
     {"p", "<|open|>response<|sep|>", "Hi"}, "p", "Hi", 2, NULL, NULL},
    {"kimi_k3 thinking off", REASONING_MODE_KIMI_K3, false, {"Hi", "<|close|>response<|sep|>"}, NULL, "Hi", 0, NULL,
     NULL},
    /* cohere: <|START_THINKING|>, response / text wrappers dropped */
    {"cohere thinking and response", REASONING_MODE_COHERE, false,
     {"<|START_THINKING|>", "plan", "<|END_THINKING|>", "<|START_RESPONSE|>", "Hi", "<|END_RESPONSE|>"}, "plan", "Hi",
     3, NULL, NULL},
    {"cohere2 prompt opened the thinking", REASONING_MODE_COHERE, true,
     {"plan", "<|END_THINKING|>", "<|START_TEXT|>", "Hi", "<|END_TEXT|>"}, "plan", "Hi", 2, NULL, NULL},
    {"apertus inner markers", REASONING_MODE_APERTUS, false,
     {"<|inner_prefix|>", "t", "<|inner_suffix|>", "ans"}, "t", "ans", 3, NULL, NULL},
    {"apriel starts inside, final-response markers", REASONING_MODE_APRIEL, true,
     {"Step 1.", "\n[BEGIN FINAL", " RESPONSE]", "Answer", "[END FINAL RESPONSE]", "<|end|>"}, "Step 1.\n", "Answer",
     3, NULL, NULL},
    {"minimax_m3 think", REASONING_MODE_MINIMAX_M3, false, {"<mm:think>", "t", "</mm:think>", "Hi"}, "t", "Hi", 3,
     NULL, NULL},
    {"minimax_m3 adaptive: no thinking", REASONING_MODE_MINIMAX_M3, false, {"</mm:think>", "Hi"}, NULL, "Hi", 0,
     NULL, NULL},
    {"hy_v3 prompt opened the thinking", REASONING_MODE_HY_V3, true,
     {"t", "</think:", "opensource>", "Hi"}, "t", "Hi", 3, NULL, NULL},
    {"solar_open channels", REASONING_MODE_SOLAR_OPEN, false,
     {"<|think|>", "t", "<|end|>", "<|begin|>", "assistant", "<|content|>", "Hi", "<|end|>"}, "t", "Hi", 3, NULL,
     NULL},
    /* muse_glimmer: addressed messages, the prompt ends inside the header */
    {"muse_glimmer reasoning then a tool message", REASONING_MODE_MUSE_GLIMMER, false,
     {" to=self", "<|message|>", "Need it.", "<|eom|>", "<|start|>", "assistant to=get_weather", "<|message|>",
      "<atem:function_calls>\n<atem:invoke name=\"f\">\n</atem:invoke>\n</atem:function_calls>", "<|eom|>"},
     "Need it.", "<atem:function_calls>\n<atem:invoke name=\"f\">\n</atem:invoke>\n</atem:function_calls>", 3, NULL,
     NULL},
    {"muse_glimmer reasoning then the answer", REASONING_MODE_MUSE_GLIMMER, false,
     {" to=self<|message|>r", "<|eom|><|start|>assistant to=user<|message|>", "ans", "<|eot|>"}, "r", "ans", 2, NULL,
     NULL},
    {"muse_glimmer answer without a recipient", REASONING_MODE_MUSE_GLIMMER, false, {"<|message|>", "Hi."}, NULL, "Hi.",
     0, NULL, NULL},
    {"solar_open tool calls stay content", REASONING_MODE_SOLAR_OPEN, false,
     {"<|think|>t<|end|>", "<|begin|>assistant<|tool_calls|>", "X"}, "t", "<|tool_calls|>X", 1, NULL, NULL},
};

typedef struct {
    char r[2048], c[2048];
    size_t rl, cl;
    bool r_seen, c_seen;
    bool ok; /* structural checks: no empty segment, no overflow */
} acc_t;

static void acc_add(acc_t *a, const reasoning_out_t *o)
{
    for (int i = 0; i < o->n; i++) {
        const reasoning_seg_t *s = &o->segs[i];
        if (s->len == 0 || !s->text)
            a->ok = false;
        char *dst = s->kind == REASONING_SEG_REASONING ? a->r : a->c;
        size_t *dl = s->kind == REASONING_SEG_REASONING ? &a->rl : &a->cl;
        if (*dl + s->len >= 2048) {
            a->ok = false;
            continue;
        }
        memcpy(dst + *dl, s->text, s->len);
        *dl += s->len;
        dst[*dl] = '\0';
        if (s->kind == REASONING_SEG_REASONING)
            a->r_seen = true;
        else
            a->c_seen = true;
    }
}

static bool same(const char *got, size_t gl, bool seen, const char *want)
{
    if (!want)
        return !seen || gl == 0;
    return strlen(want) == gl && memcmp(got, want, gl) == 0;
}

/* Feeds text cut at the given offsets (sorted, ncuts of them). */
static bool run_cuts(const rcase_t *tc, const char *text, const size_t *cuts, int ncuts, acc_t *a)
{
    memset(a, 0, sizeof *a);
    a->ok = true;
    reasoning_config_t cfg = {tc->mode, tc->inside, tc->gopen, tc->gclose};
    reasoning_t *rp = reasoning_create_cfg(&cfg, NULL);
    if (!rp)
        return false;
    size_t prev = 0, n = strlen(text);
    reasoning_out_t o;
    for (int i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : n;
        if (reasoning_push(rp, text + prev, end - prev, &o, NULL) != LF_OK)
            a->ok = false;
        acc_add(a, &o);
        prev = end;
    }
    reasoning_finish(rp, &o, NULL);
    acc_add(a, &o);
    reasoning_free(rp);
    return a->ok;
}

static bool check(const rcase_t *tc, const acc_t *a)
{
    bool ok = a->ok && same(a->r, a->rl, a->r_seen, tc->reasoning) &&
              same(a->c, a->cl, a->c_seen, tc->content);
    if (!ok)
        tap_diag("got reasoning [%s] content [%s]", a->r, a->c);
    return ok;
}

static void run_case(const rcase_t *tc)
{
    char text[2048] = "";
    size_t cuts[MAXP];
    int ncuts = 0;
    for (int i = 0; tc->pieces[i]; i++) {
        if (i > 0)
            cuts[ncuts++] = strlen(text);
        strcat(text, tc->pieces[i]);
    }
    size_t n = strlen(text);
    acc_t a;

    /* token by token, with the reasoning-token count */
    bool ok = true;
    {
        memset(&a, 0, sizeof a);
        a.ok = true;
        reasoning_config_t cfg = {tc->mode, tc->inside, tc->gopen, tc->gclose};
        reasoning_t *rp = reasoning_create_cfg(&cfg, NULL);
        reasoning_out_t o;
        int rt = 0;
        for (int i = 0; tc->pieces[i]; i++) {
            reasoning_push(rp, tc->pieces[i], strlen(tc->pieces[i]), &o, NULL);
            acc_add(&a, &o);
            rt += o.token_in_reasoning;
        }
        reasoning_finish(rp, &o, NULL);
        acc_add(&a, &o);
        reasoning_free(rp);
        ok = check(tc, &a);
        tap_ok(ok, "%s: token by token", tc->name);
        if (!tap_ok(rt == tc->reasoning_tokens, "%s: reasoning tokens", tc->name))
            tap_diag("got %d want %d", rt, tc->reasoning_tokens);
    }
    (void)ncuts;
    (void)cuts;

    /* every 2-way split */
    ok = true;
    for (size_t k = 0; k <= n && ok; k++) {
        size_t c1[1] = {k};
        run_cuts(tc, text, c1, 1, &a);
        ok = check(tc, &a);
        if (!ok)
            tap_diag("split at %zu", k);
    }
    tap_ok(ok, "%s: every 2-way split", tc->name);

    /* byte by byte */
    size_t *cb = malloc((n + 1) * sizeof *cb);
    for (size_t k = 1; k < n; k++)
        cb[k - 1] = k;
    run_cuts(tc, text, cb, n > 1 ? (int)n - 1 : 0, &a);
    free(cb);
    tap_ok(check(tc, &a), "%s: byte by byte", tc->name);

    /* whole text at once through the convenience function */
    char *r = NULL, *c = NULL;
    reasoning_config_t cfg = {tc->mode, tc->inside, tc->gopen, tc->gclose};
    lf_code_t rc = reasoning_split_cfg(&cfg, text, n, &r, &c, NULL);
    bool sok = rc == LF_OK && (tc->reasoning && *tc->reasoning ? r && !strcmp(r, tc->reasoning) : !r) &&
               (tc->content ? c && !strcmp(c, tc->content) : !c);
    tap_ok(sok, "%s: reasoning_split", tc->name);
    free(r);
    free(c);
}

static void test_detect(void)
{
    static const struct {
        const char *tmpl;
        reasoning_mode_t want;
    } t[] = {
        {"{% for m in messages %}{{ m.content }}{% endfor %}", REASONING_MODE_NONE},
        {"<|im_start|>assistant\n{% if enable_thinking is false %}<think>\n\n</think>{% endif %}",
         REASONING_MODE_QWEN3},
        {"{{'<\xef\xbd\x9c" "Assistant\xef\xbd\x9c><think>\\n'}}", REASONING_MODE_DEEPSEEK_R1},
        {"<|im_start|>assistant\n<think>\n", REASONING_MODE_QWEN3},
        {"{{ content.split('</think>')[-1] }}", REASONING_MODE_DEEPSEEK_R1},
        {"<|start|>assistant<|channel|>final<|message|>", REASONING_MODE_GPT_OSS},
        {"{{ '[THINK]' + t + '[/THINK]' }}", REASONING_MODE_MISTRAL},
        {"<seed:think>{{ r }}</seed:think>", REASONING_MODE_SEED_OSS},
        {"<|start_of_role|>system Here is my thought process: ...", REASONING_MODE_GRANITE},
        {"]~b]ai\n<think>\n<minimax:tool_call>", REASONING_MODE_MINIMAX_M2},
        {"<think></think><|tool_calls_section_begin|>", REASONING_MODE_KIMI_K2},
        {"[gMASK]<sop><|assistant|><think>", REASONING_MODE_GLM45},
        {"{% if thinking %}<\xef\xbd\x9c" "Assistant\xef\xbd\x9c><think>{% else %}</think>{% endif %}",
         REASONING_MODE_DEEPSEEK_V3},
        {"<|turn>model\n<|channel>thought\n<channel|>", REASONING_MODE_GEMMA4},
        {"<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|><|close|>think<|sep|>", REASONING_MODE_KIMI_K3},
        {"<|CHATBOT_TOKEN|><|START_THINKING|>", REASONING_MODE_COHERE},
        {"<|inner_prefix|>x<|inner_suffix|>", REASONING_MODE_APERTUS},
        {"after the marker [BEGIN FINAL RESPONSE].", REASONING_MODE_APRIEL},
        {"]~b]ai\n<mm:think>", REASONING_MODE_MINIMAX_M3},
        {"<\xef\xbd\x9chy_Assistant:opensource\xef\xbd\x9c><think:opensource>", REASONING_MODE_HY_V3},
        {"<|begin|>assistant<|think|><|end|>", REASONING_MODE_SOLAR_OPEN},
        {"'<|start|>assistant to=self<|message|>' '<atem:function_calls>'", REASONING_MODE_MUSE_GLIMMER},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        tap_ok(reasoning_mode_detect(t[i].tmpl, strlen(t[i].tmpl)) == t[i].want, "detect template %zu", i);
    tap_ok(reasoning_mode_detect(NULL, 0) == REASONING_MODE_NONE, "detect NULL template");
}

static void test_starts_inside(void)
{
    static const struct {
        reasoning_mode_t mode;
        const char *prompt;
        bool want;
    } t[] = {
        {REASONING_MODE_QWEN3, "<|im_start|>assistant\n", false},
        {REASONING_MODE_QWEN3, "<|im_start|>assistant\n<think>\n", true},
        {REASONING_MODE_QWEN3, "<|im_start|>assistant\n<think>\n\n</think>\n\n", false},
        {REASONING_MODE_DEEPSEEK_R1, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>", true},
        {REASONING_MODE_DEEPSEEK_R1, "<think>\n\n</think>\n", false},
        {REASONING_MODE_NONE, "<think>\n", false},
        {REASONING_MODE_DEEPSEEK_V3, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c><think>", true},
        {REASONING_MODE_DEEPSEEK_V3, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c></think>", false},
        {REASONING_MODE_MINIMAX_M2, "]~b]ai\n<think>\n", true},
        {REASONING_MODE_KIMI_K2, "<|im_assistant|>assistant<|im_middle|>", true},
        {REASONING_MODE_SEED_OSS, "<seed:bos>assistant\n", false},
        {REASONING_MODE_SEED_OSS, "<seed:bos>assistant\n<seed:think>", true},
        {REASONING_MODE_MISTRAL, "[/INST][THINK]", true},
        {REASONING_MODE_GPT_OSS, "<|start|>assistant", false},
        {REASONING_MODE_KIMI_K3, "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>", true},
        {REASONING_MODE_KIMI_K3, "<|open|>message role=\"assistant\"<|sep|><|open|>response<|sep|>", false},
        {REASONING_MODE_COHERE, "<|CHATBOT_TOKEN|><|START_THINKING|>", true},
        {REASONING_MODE_COHERE, "<|CHATBOT_TOKEN|><|START_THINKING|><|END_THINKING|>", false},
        {REASONING_MODE_APRIEL, "<|begin_assistant|>\nHere are my reasoning steps:\n", true},
        {REASONING_MODE_APRIEL, "<|assistant|>\n", true},
        {REASONING_MODE_GEMMA4, "<|turn>model\n<|channel>thought\n<channel|>", false},
        {REASONING_MODE_GEMMA4, "<|turn>model\n", false},
        {REASONING_MODE_HY_V3, "<think:opensource>", true},
        {REASONING_MODE_HY_V3, "<think:opensource></think:opensource>", false},
        {REASONING_MODE_MINIMAX_M3, "]~b]ai\n<mm:think>", true},
        {REASONING_MODE_SOLAR_OPEN, "<|begin|>assistant", false},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        tap_ok(reasoning_starts_inside(t[i].mode, t[i].prompt, strlen(t[i].prompt)) == t[i].want,
               "starts_inside %zu", i);
}

static void test_names(void)
{
    reasoning_mode_t m = REASONING_MODE_NONE;
    lf_err_t e;
    tap_ok(reasoning_mode_from_name("qwen3", &m, &e) == LF_OK && m == REASONING_MODE_QWEN3, "name qwen3");
    tap_ok(reasoning_mode_from_name("deepseek_r1", &m, &e) == LF_OK && m == REASONING_MODE_DEEPSEEK_R1,
           "name deepseek_r1");
    tap_ok(reasoning_mode_from_name("r2", &m, &e) == LF_ERR_INVALID && strstr(e.msg, "deepseek_r1"),
           "unknown name rejected with the list");
    tap_ok(!strcmp(reasoning_mode_name(REASONING_MODE_NONE), "none"), "mode name none");
    tap_ok(reasoning_create((reasoning_mode_t)77, false, &e) == NULL && e.code == LF_ERR_INVALID,
           "bad mode rejected");
    tap_ok(reasoning_create(REASONING_MODE_GENERIC, false, &e) == NULL && e.code == LF_ERR_INVALID,
           "generic without markers rejected");
    static const char *const names[] = {"none", "deepseek_r1", "qwen3", "deepseek_v3", "gpt-oss", "mistral", "granite",
                                        "glm45", "kimi_k2", "minimax_m2", "seed_oss", "generic", "gemma4", "kimi_k3",
                                        "cohere_command3", "apertus", "apriel", "minimax_m3", "hy_v3", "solar_open",
                                        "muse_glimmer"};
    bool all = true;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        all &= reasoning_mode_from_name(names[i], &m, &e) == LF_OK && !strcmp(reasoning_mode_name(m), names[i]);
    tap_ok(all, "every mode name round-trips");
    tap_ok(reasoning_mode_from_name("openai_gptoss", &m, &e) == LF_OK && m == REASONING_MODE_GPT_OSS,
           "vLLM's name openai_gptoss is gpt-oss");
    tap_ok(reasoning_mode_from_name("deepseek_v4", &m, &e) == LF_OK && m == REASONING_MODE_DEEPSEEK_V3 &&
               reasoning_mode_from_name("cohere_command4", &m, &e) == LF_OK && m == REASONING_MODE_COHERE,
           "vLLM's deepseek_v4 and cohere_command4 names");
    tap_ok(reasoning_mode_from_name("nope", &m, &e) == LF_ERR_INVALID && strstr(e.msg, "solar_open or generic") == NULL &&
               strstr(e.msg, "gemma4") && strstr(e.msg, "none, "), "the error lists every name");
    for (int i = 1; i < REASONING_MODE_COUNT; i++) {
        const reasoning_format_t *f = reasoning_format((reasoning_mode_t)i);
        if (i == REASONING_MODE_GENERIC)
            tap_ok(f == NULL, "generic has no fixed description");
        else
            tap_ok(f && (int)f->mode == i && !strcmp(f->name, reasoning_mode_name((reasoning_mode_t)i)) && f->tokens &&
                       (f->start == REASONING_START_HARMONY || (f->open && f->close)),
                   "description of %s", reasoning_mode_name((reasoning_mode_t)i));
    }
    reasoning_config_t g = {REASONING_MODE_GENERIC, false, "<r>", "</r>"};
    tap_ok(reasoning_is_marker(&g, "</r>") && !reasoning_is_marker(&g, "<think>"), "generic markers are its tokens");
    reasoning_config_t h = {REASONING_MODE_GPT_OSS, false, NULL, NULL};
    tap_ok(reasoning_is_marker(&h, "<|channel|>") && reasoning_is_marker(&h, "<|call|>") &&
               !reasoning_is_marker(&h, "<think>"), "harmony tokens are markers");
}

static void test_push_after_finish(void)
{
    reasoning_t *rp = reasoning_create(REASONING_MODE_QWEN3, true, NULL);
    reasoning_out_t o;
    reasoning_push(rp, "a", 1, &o, NULL);
    tap_ok(reasoning_in_reasoning(rp), "inside while reasoning");
    reasoning_finish(rp, &o, NULL);
    reasoning_push(rp, "<think>", 7, &o, NULL);
    tap_ok(o.n == 1 && o.segs[0].kind == REASONING_SEG_CONTENT && o.segs[0].len == 7,
           "push after finish is content");
    reasoning_free(rp);
    reasoning_free(NULL);
}

int main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
    test_detect();
    test_starts_inside();
    test_names();
    test_push_after_finish();
    return tap_done();
}
