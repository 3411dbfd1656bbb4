/* test_chat_output.c - the server's chat output post-processing
 * (src/server/chat/chat_output.c) fed token by token with the tokens of a REAL
 * vocabulary: each model answer below is tokenized with the GPT-2 vocab of
 * tinyqwen2-q8_0.gguf (so tags and markup arrive split across several
 * tokens, as from a model) and pushed one token id at a time through the
 * same code the server runs, then finished with the end-of-generation token.
 * Checks: reasoning / content / calls as expected, the streamed events add
 * up to the non-streamed message, markup never reaches content, reasoning
 * events come before content events, the message and delta JSON shapes.
 * A second part feeds stories260K's SPM vocab (control token </s>), a third
 * a synthetic byte-level vocab in which the markup (<think>, <tool_call>,
 * [TOOL_CALLS], [ARGS], <|python_tag|>) are CONTROL tokens, as in Qwen3,
 * Mistral and Llama 3 vocabularies: the parsers must see them while other
 * control tokens (and all of them without a parser) stay invisible. */
#include "server/chat/chat_output.h"
#include "tap.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/gguf/gguf.h"
#include "engine/vocab/vocab.h"

typedef struct {
    const char *name;
    reasoning_mode_t rmode;
    bool inside;
    toolcall_format_t tools;
    bool parallel;
    const char *text;       /* the model's answer */
    const char *reasoning;  /* expected, NULL = none */
    const char *content;    /* expected, NULL = none; "*PREFIX" = starts with PREFIX */
    int n_calls;
    const char *call[4];    /* name0, args0, name1, args1 */
} ocase_t;

#define WEATHER "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"C\"}}"
static const ocase_t cases[] = {
    {"hermes: one call, no content", REASONING_MODE_NONE, false, TOOLCALL_FORMAT_HERMES, true,
     "<tool_call>\n" WEATHER "\n</tool_call>", NULL, NULL, 1, {"get_weather", "{\"city\":\"Paris\",\"unit\":\"C\"}"}},
    {"hermes: text then two calls", REASONING_MODE_NONE, false, TOOLCALL_FORMAT_HERMES, true,
     "Let me check both.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n"
     "<tool_call>\n{\"name\": \"b\", \"arguments\": {\"y\": [true, null]}}\n</tool_call>",
     NULL, "Let me check both.", 2, {"a", "{\"x\":1}", "b", "{\"y\":[true,null]}"}},
    {"hermes: parallel_tool_calls false keeps the first", REASONING_MODE_NONE, false, TOOLCALL_FORMAT_HERMES, false,
     "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"b\", \"arguments\": {}}"
     "</tool_call>", NULL, NULL, 1, {"a", "{}"}},
    {"hermes: </tool_call> inside a string argument", REASONING_MODE_NONE, false, TOOLCALL_FORMAT_HERMES, true,
     "<tool_call>{\"name\": \"echo\", \"arguments\": {\"s\": \"x </tool_call> y\"}}</tool_call>", NULL, NULL, 1,
     {"echo", "{\"s\":\"x </tool_call> y\"}"}},
    {"hermes: unicode arguments", REASONING_MODE_NONE, false, TOOLCALL_FORMAT_HERMES, true,
     "<tool_call>{\"name\": \"find\", \"arguments\": {\"q\": \"Z\xc3\xbcrich \xe6\x9d\xb1\xe4\xba\xac \xf0\x9f\x98\x80\"}}"
     "</tool_call>", NULL, NULL, 1, {"find", "{\"q\":\"Z\xc3\xbcrich \xe6\x9d\xb1\xe4\xba\xac \xf0\x9f\x98\x80\"}"}},
    {"hermes: malformed call is content", REASONING_MODE_NONE, false, TOOLCALL_FORMAT_HERMES, true,
     "<tool_call>not json at all", NULL, "*<tool_call>not json", 0, {NULL}},
    {"hermes: plain answer", REASONING_MODE_NONE, false, TOOLCALL_FORMAT_HERMES, true,
     "It is sunny in Paris.", NULL, "It is sunny in Paris.", 0, {NULL}},
    {"qwen3 reasoning then a call", REASONING_MODE_QWEN3, false, TOOLCALL_FORMAT_HERMES, true,
     "<think>\nThe user wants weather.\n</think>\n\n<tool_call>\n" WEATHER "\n</tool_call>",
     "\nThe user wants weather.\n", NULL, 1, {"get_weather", "{\"city\":\"Paris\",\"unit\":\"C\"}"}},
    {"deepseek_r1 starts inside the reasoning", REASONING_MODE_DEEPSEEK_R1, true, TOOLCALL_FORMAT_NONE, true,
     "Okay, 2+2.\n</think>\n\nThe answer is 4.", "Okay, 2+2.\n", "\n\nThe answer is 4.", 0, {NULL}},
    {"deepseek_r1 unterminated reasoning", REASONING_MODE_DEEPSEEK_R1, true, TOOLCALL_FORMAT_NONE, true,
     "thinking and thinking", "thinking and thinking", NULL, 0, {NULL}},
    {"no parsers: markup is plain content", REASONING_MODE_NONE, false, TOOLCALL_FORMAT_NONE, true,
     "<think>x</think><tool_call>{}</tool_call>", NULL, "<think>x</think><tool_call>{}</tool_call>", 0, {NULL}},
    {"tool call markup inside reasoning is reasoning", REASONING_MODE_QWEN3, false, TOOLCALL_FORMAT_HERMES, true,
     "<think>maybe <tool_call>{\"name\": \"a\"}</tool_call></think>Done.",
     "maybe <tool_call>{\"name\": \"a\"}</tool_call>", "Done.", 0, {NULL}},
    {"llama3_json call", REASONING_MODE_NONE, false, TOOLCALL_FORMAT_LLAMA3_JSON, true,
     "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}", NULL, NULL, 1, {"get_weather",
     "{\"city\":\"Oslo\"}"}},
    {"mistral call (text form)", REASONING_MODE_NONE, false, TOOLCALL_FORMAT_MISTRAL, true,
     "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": \"b\"}}]", NULL, NULL, 1, {"f", "{\"a\":\"b\"}"}},
};

typedef struct {
    char *s;
    size_t len;
} sbuf_t;

static void sadd(sbuf_t *b, const char *s, size_t n)
{
    b->s = realloc(b->s, b->len + n + 1);
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

#define MAXC 4
typedef struct {
    sbuf_t reasoning, content, args[MAXC];
    char names[MAXC][64];
    char ids[MAXC][40];
    int n_start;
    bool content_before_reasoning; /* a CONTENT event came before a REASONING one */
    bool seen_content;
    bool bad_delta;
} coll_t;

static void collect(coll_t *c, const chat_out_ev_t *evs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const chat_out_ev_t *e = &evs[i];
        json_object *d = chat_out_delta_json(e), *v;
        switch (e->kind) {
        case CHAT_OUT_REASONING:
            if (c->seen_content)
                c->content_before_reasoning = true;
            sadd(&c->reasoning, e->text, e->len);
            if (!json_object_object_get_ex(d, "reasoning_content", &v))
                c->bad_delta = true;
            break;
        case CHAT_OUT_CONTENT:
            c->seen_content = true;
            sadd(&c->content, e->text, e->len);
            if (!json_object_object_get_ex(d, "content", &v))
                c->bad_delta = true;
            break;
        case CHAT_OUT_TOOL_START: {
            if (e->index != c->n_start || e->index >= MAXC) {
                c->bad_delta = true;
                break;
            }
            snprintf(c->names[e->index], sizeof c->names[0], "%s", e->name);
            snprintf(c->ids[e->index], sizeof c->ids[0], "%s", e->id);
            c->n_start++;
            /* {"tool_calls":[{"index","id","type":"function","function":{"name","arguments":""}}]} */
            const char *js = json_object_to_json_string_ext(d, JSON_C_TO_STRING_PLAIN);
            char want[300];
            snprintf(want, sizeof want,
                     "{\"tool_calls\":[{\"index\":%d,\"id\":\"%s\",\"type\":\"function\",\"function\":"
                     "{\"name\":\"%s\",\"arguments\":\"\"}}]}", e->index, e->id, e->name);
            if (strcmp(js, want))
                c->bad_delta = true;
            break;
        }
        case CHAT_OUT_TOOL_ARGS:
            if (e->index < 0 || e->index >= c->n_start)
                c->bad_delta = true;
            else
                sadd(&c->args[e->index], e->text, e->len);
            break;
        }
        json_object_put(d);
    }
}

static bool same(const char *got, const char *want)
{
    if (!want)
        return got == NULL;
    if (!got)
        return false;
    if (want[0] == '*')
        return strncmp(got, want + 1, strlen(want + 1)) == 0;
    return strcmp(got, want) == 0;
}

static void run_case_ex(const vocab_t *v, const ocase_t *k, bool parse_special)
{
    int32_t *ids = NULL;
    size_t n = 0;
    lf_err_t err = {0};
    if (vocab_tokenize(v, k->text, strlen(k->text), false, parse_special, &ids, &n, &err) != LF_OK) {
        tap_ok(0, "%s: tokenize", k->name);
        return;
    }
    chat_out_cfg_t cfg = {.vocab = v, .reasoning = k->rmode, .starts_in_reasoning = k->inside, .tools = k->tools,
                          .parallel_tool_calls = k->parallel, .seed = 42};
    chat_out_t *co = chat_out_create(&cfg, &err);
    coll_t c = {0};
    const chat_out_ev_t *evs;
    size_t nev;
    bool ok = co != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        ok = chat_out_push_token(co, ids[i], &evs, &nev, &err) == LF_OK;
        if (ok)
            collect(&c, evs, nev);
    }
    int32_t eos = vocab_eos(v);
    if (ok && eos >= 0 && (ok = chat_out_push_token(co, eos, &evs, &nev, &err) == LF_OK))
        collect(&c, evs, nev);
    if (ok && (ok = chat_out_finish(co, &evs, &nev, &err) == LF_OK))
        collect(&c, evs, nev);
    tap_ok(ok, "%s: %zu tokens pushed one by one", k->name, n);
    if (!ok) {
        tap_diag("%s", err.msg);
        chat_out_free(co);
        free(ids);
        return;
    }
    const char *r = chat_out_reasoning(co, NULL), *ct = chat_out_content(co, NULL);
    tap_ok(same(r, k->reasoning), "%s: reasoning", k->name);
    if (!same(r, k->reasoning))
        tap_diag("got [%s] want [%s]", r ? r : "(null)", k->reasoning ? k->reasoning : "(null)");
    tap_ok(same(ct, k->content), "%s: content", k->name);
    if (!same(ct, k->content))
        tap_diag("got [%s] want [%s]", ct ? ct : "(null)", k->content ? k->content : "(null)");
    tap_ok(same(c.reasoning.s, r) && same(c.content.s, ct), "%s: streamed reasoning/content == final", k->name);
    tap_ok(!c.content_before_reasoning && !c.bad_delta, "%s: reasoning before content, delta shapes", k->name);
    if (k->tools != TOOLCALL_FORMAT_NONE && k->rmode != REASONING_MODE_NONE)
        tap_ok(!ct || (!strstr(ct, "<tool_call>") && !strstr(ct, "</think>")), "%s: no markup in content",
               k->name);
    size_t nc = chat_out_n_calls(co);
    bool calls_ok = (int)nc == k->n_calls && c.n_start == k->n_calls;
    const char *names[2] = {k->call[0], k->call[2]}, *args[2] = {k->call[1], k->call[3]};
    for (size_t i = 0; calls_ok && i < nc && i < 2; i++) {
        toolcall_call_t call;
        calls_ok = chat_out_call(co, i, &call) && !strcmp(call.name, names[i]) && !strcmp(call.arguments, args[i]) &&
                   !strcmp(c.names[i], names[i]) && same(c.args[i].s ? c.args[i].s : "", args[i]) &&
                   !strcmp(c.ids[i], call.id) &&
                   (k->tools == TOOLCALL_FORMAT_MISTRAL ? strlen(call.id) == TOOLCALL_ID_LEN_MISTRAL
                                                        : !strncmp(call.id, "call_", 5));
        if (!calls_ok)
            tap_diag("call %zu: %s %s (streamed %s %s)", i, call.name, call.arguments, c.names[i],
                     c.args[i].s ? c.args[i].s : "");
    }
    tap_ok(calls_ok, "%s: %d call(s), streamed fragments == final arguments", k->name, k->n_calls);
    /* the non-streamed message */
    json_object *m = chat_out_message_json(co), *f = NULL, *tcs = NULL;
    json_object_object_get_ex(m, "content", &f);
    json_object_object_get_ex(m, "tool_calls", &tcs);
    bool mok = (ct ? f && !strcmp(json_object_get_string(f), ct) : f == NULL) &&
               json_object_array_length(tcs) == nc;
    if (nc) {
        json_object *fn = NULL, *a = NULL, *ty = NULL;
        json_object_object_get_ex(json_object_array_get_idx(tcs, 0), "function", &fn);
        json_object_object_get_ex(json_object_array_get_idx(tcs, 0), "type", &ty);
        json_object_object_get_ex(fn, "arguments", &a);
        mok = mok && json_object_is_type(a, json_type_string) && !strcmp(json_object_get_string(a), k->call[1]) &&
              !strcmp(json_object_get_string(ty), "function");
    }
    json_object *rc = NULL;
    bool has_r = json_object_object_get_ex(m, "reasoning_content", &rc);
    mok = mok && has_r == (k->rmode != REASONING_MODE_NONE);
    tap_ok(mok, "%s: message JSON %s", k->name, json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN));
    json_object_put(m);
    if (k->rmode != REASONING_MODE_NONE && !ct && !nc && r)
        tap_ok(chat_out_reasoning_tokens(co) == (int32_t)n, "%s: every token is a reasoning token (%d)", k->name,
               chat_out_reasoning_tokens(co));
    else if (k->rmode != REASONING_MODE_NONE && r)
        tap_ok(chat_out_reasoning_tokens(co) > 0 && chat_out_reasoning_tokens(co) < (int32_t)n,
               "%s: reasoning tokens %d of %zu", k->name, chat_out_reasoning_tokens(co), n);
    chat_out_free(co);
    free(ids);
    free(c.reasoning.s);
    free(c.content.s);
    for (int i = 0; i < MAXC; i++)
        free(c.args[i].s);
}

static void run_case(const vocab_t *v, const ocase_t *k)
{
    run_case_ex(v, k, false);
}

static void run_case_special(const vocab_t *v, const ocase_t *k)
{
    run_case_ex(v, k, true);
}

static vocab_t *load_vocab(const char *dir, const char *file, gguf_file_t **gf)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    lf_err_t err = {0};
    *gf = gguf_open(path, &err);
    vocab_t *v = *gf ? vocab_load(*gf, &err) : NULL;
    if (!v)
        tap_diag("cannot load %s: %s", path, err.msg);
    return v;
}

/* ---- control-token markup: a synthetic GGUF vocab ---- */

static void w_u32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }
static void w_u64(FILE *f, uint64_t v) { fwrite(&v, 8, 1, f); }
static void w_str(FILE *f, const char *s)
{
    w_u64(f, strlen(s));
    fwrite(s, 1, strlen(s), f);
}

static const char *specials[] = {"<think>", "</think>", "<tool_call>", "</tool_call>", "[TOOL_CALLS]", "[ARGS]",
                                 "<|python_tag|>", "<|im_end|>"};
#define N_SPECIAL 8

/* gpt2 vocab: the 94 printable ASCII characters, U+0120 (space), U+010A
 * (newline), then the special tokens as control tokens; no merges. */
static char *write_special_vocab(void)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/test_chat_output_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "wb");
    uint64_t n = 94 + 2 + N_SPECIAL;
    fwrite("GGUF", 1, 4, f);
    w_u32(f, 3);
    w_u64(f, 0);
    w_u64(f, 6);
    w_str(f, "tokenizer.ggml.eos_token_id"), w_u32(f, 4), w_u32(f, (uint32_t)(n - 1)); /* <|im_end|> */
    w_str(f, "tokenizer.ggml.model"), w_u32(f, 8), w_str(f, "gpt2");
    w_str(f, "tokenizer.ggml.pre"), w_u32(f, 8), w_str(f, "default");
    w_str(f, "tokenizer.ggml.tokens"), w_u32(f, 9), w_u32(f, 8), w_u64(f, n);
    for (int c = 0x21; c <= 0x7e; c++) {
        char t[2] = {(char)c, 0};
        w_str(f, t);
    }
    w_str(f, "\xc4\xa0");
    w_str(f, "\xc4\x8a");
    for (int i = 0; i < N_SPECIAL; i++)
        w_str(f, specials[i]);
    w_str(f, "tokenizer.ggml.token_type"), w_u32(f, 9), w_u32(f, 5), w_u64(f, n);
    for (uint64_t i = 0; i < n; i++)
        w_u32(f, i < 96 ? 1 : 3);
    w_str(f, "tokenizer.ggml.merges"), w_u32(f, 9), w_u32(f, 8), w_u64(f, 0);
    fclose(f);
    return path;
}

static const ocase_t special_cases[] = {
    {"control tokens: qwen3 + hermes", REASONING_MODE_QWEN3, false, TOOLCALL_FORMAT_HERMES, true,
     "<think>Plan it.</think>Sure.<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call><|im_end|>",
     "Plan it.", "Sure.", 1, {"f", "{\"a\":1}"}},
    {"control tokens: no parsers -> markup invisible", REASONING_MODE_NONE, false, TOOLCALL_FORMAT_NONE, true,
     "<think>Plan it.</think>Sure.<tool_call>{}</tool_call><|im_end|>", NULL, "Plan it.Sure.{}", 0, {NULL}},
    {"control tokens: reasoning only, tool markup invisible", REASONING_MODE_DEEPSEEK_R1, true,
     TOOLCALL_FORMAT_NONE, true, "Hm.</think>Ok<tool_call>", "Hm.", "Ok", 0, {NULL}},
    {"control tokens: mistral [TOOL_CALLS] N [ARGS]", REASONING_MODE_NONE, false, TOOLCALL_FORMAT_MISTRAL, true,
     "Checking.[TOOL_CALLS]get_time[ARGS]{\"tz\": \"UTC\"}", NULL, "Checking.", 1, {"get_time", "{\"tz\":\"UTC\"}"}},
    {"control tokens: llama3_json <|python_tag|>", REASONING_MODE_NONE, false, TOOLCALL_FORMAT_LLAMA3_JSON, true,
     "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"x\": [1, 2]}}", NULL, NULL, 1, {"f", "{\"x\":[1,2]}"}},
};

static void special_vocab(void)
{
    char *p = write_special_vocab();
    lf_err_t err = {0};
    gguf_file_t *gf = p ? gguf_open(p, &err) : NULL;
    vocab_t *v = gf ? vocab_load(gf, &err) : NULL;
    if (!tap_ok(v != NULL, "synthetic vocab with control-token markup loads (%s)", v ? "ok" : err.msg)) {
        gguf_close(gf);
        if (p)
            unlink(p);
        return;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    const char *t = "<think>a</think>";
    vocab_tokenize(v, t, strlen(t), false, true, &ids, &n, &err);
    tap_ok(n == 3 && vocab_is_control(v, ids[0]) && vocab_is_control(v, ids[2]),
           "<think> and </think> are single control tokens");
    free(ids);
    for (size_t i = 0; i < sizeof special_cases / sizeof special_cases[0]; i++)
        run_case_special(v, &special_cases[i]);
    vocab_free(v);
    gguf_close(gf);
    unlink(p);
}

int main(void)
{
    const char *dir = tap_env_dir("LLM_MODELS_DIR", "../shared/models");
    gguf_file_t *gf = NULL;
    vocab_t *v = load_vocab(dir, "tinyqwen2-q8_0.gguf", &gf);
    tap_ok(v != NULL, "tinyqwen2 GPT-2 vocab loads");
    if (v) {
        int32_t *ids = NULL;
        size_t n = 0;
        lf_err_t err;
        vocab_tokenize(v, "<tool_call>", 11, false, false, &ids, &n, &err);
        tap_ok(n > 1, "the markup is split over %zu tokens in this vocab", n);
        free(ids);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_case(v, &cases[i]);
    }
    vocab_free(v);
    gguf_close(gf);

    /* SPM vocab: the control token </s> renders as nothing; a bad id fails */
    v = load_vocab(dir, "stories260K.gguf", &gf);
    tap_ok(v != NULL, "stories260K SPM vocab loads");
    if (v) {
        /* (SPM adds its dummy-prefix space to the first piece) */
        ocase_t k = {"spm: reasoning split", REASONING_MODE_DEEPSEEK_R1, true, TOOLCALL_FORMAT_NONE, true,
                     "Lily was happy.</think>The end.", " Lily was happy.", "The end.", 0, {NULL}};
        run_case(v, &k);
        chat_out_cfg_t cfg = {.vocab = v, .reasoning = REASONING_MODE_NONE};
        lf_err_t err = {0};
        chat_out_t *co = chat_out_create(&cfg, &err);
        const chat_out_ev_t *evs;
        size_t nev;
        tap_ok(chat_out_push_token(co, vocab_n_tokens(v) + 5, &evs, &nev, &err) == LF_ERR_INVALID,
               "a bad token id is an error");
        chat_out_free(co);
    }
    vocab_free(v);
    gguf_close(gf);
    special_vocab();
    return tap_done();
}
