/* test_scripted.c - the scripted fixture model (tests/fixtures/
 * scripted_model.h) run by the real engine: it is written to a temporary
 * file, loaded with model_load, and for every case (a trigger in a
 * ChatML prompt, reasoning on or off; every per-format script with its
 * trigger in a user or tool message) greedy decoding must emit the
 * script's pieces token for token, each with a clear logit margin, and
 * stop at <|im_end|> (or the format's own end of generation). Also: the
 * trigger is one token of the prompt, the chat template is stored, the
 * pieces decode to the expected texts, and the special markers are
 * CONTROL tokens. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "fixtures/scripted_model.h"
#include "tap.h"

typedef struct {
    const char *name;
    const char *user;        /* user message */
    const char *tool_result; /* NULL, or a tool message after an assistant call */
    int think;               /* the generation prompt opens <think> */
    scripted_mode_t want;
} case_t;

static const case_t cases[] = {
    {"default, thinking", "Hello there.", NULL, 1, SCRIPTED_DEFAULT},
    {"default, no thinking", "Hello there.", NULL, 0, SCRIPTED_DEFAULT},
    {"weather, thinking", "What is the weather in Paris?", NULL, 1, SCRIPTED_WEATHER},
    {"weather, no thinking", "What is the weather in Paris?", NULL, 0, SCRIPTED_WEATHER},
    {"tool result wins over weather", "What is the weather in Paris?", "{\"sky\": \"clear\"}", 1, SCRIPTED_RESULT},
    {"tool result, no thinking", "What is the weather in Paris?", "{\"sky\": \"clear\"}", 0, SCRIPTED_RESULT},
    {"twice wins over weather", "What is the weather in Paris and London? Call the tool twice.", NULL, 1,
     SCRIPTED_TWICE},
    {"twice, no thinking", "Weather in London, twice please.", NULL, 0, SCRIPTED_TWICE},
    {"broken", "Show me broken markup.", NULL, 1, SCRIPTED_BROKEN},
    {"broken, no thinking", "Show me broken markup.", NULL, 0, SCRIPTED_BROKEN},
};

static void append(char *buf, size_t cap, const char *s) { strncat(buf, s, cap - strlen(buf) - 1); }

static void build_prompt(const case_t *c, char *buf, size_t cap)
{
    if (c->want >= SCRIPTED_BROKEN + 1) { /* a per-format script: its trigger */
        const scripted_script_t *sc = &scripted_scripts()[c->want];
        bool result = strstr(sc->name, "-result") != NULL;
        buf[0] = '\0';
        append(buf, cap, "<|im_start|>user\nWhat is the weather in Rome? ");
        append(buf, cap, result ? "@" : sc->trigger);
        append(buf, cap, "<|im_end|>\n");
        if (result) {
            append(buf, cap, "<|im_start|>user\n<tool_response>\n{\"sky\": \"clear\"} ");
            append(buf, cap, sc->trigger);
            append(buf, cap, "\n</tool_response><|im_end|>\n");
        }
        append(buf, cap, "<|im_start|>assistant\n");
        if (c->think)
            append(buf, cap, SCRIPTED_THINK_OPEN);
        return;
    }
    buf[0] = '\0';
    append(buf, cap, "<|im_start|>system\nYou are a test.<|im_end|>\n<|im_start|>user\n");
    append(buf, cap, c->user);
    append(buf, cap, "<|im_end|>\n");
    if (c->tool_result) {
        append(buf, cap, "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                         "{\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n");
        append(buf, cap, c->tool_result);
        append(buf, cap, "\n</tool_response><|im_end|>\n");
    }
    append(buf, cap, "<|im_start|>assistant\n");
    if (c->think)
        append(buf, cap, SCRIPTED_THINK_OPEN);
}

/* The expected tokens of script m (thinking or not), ending with EOS. */
static int expected(const vocab_t *v, scripted_mode_t m, int think, int32_t *out, int cap)
{
    const scripted_script_t *s = &scripted_scripts()[m];
    const char *const *lists[] = {s->reasoning, s->close, s->content};
    int n = 0;
    for (int l = think ? 0 : 2; l < 3; l++)
        for (const char *const *p = lists[l]; p && *p && n < cap; p++)
            out[n++] = vocab_find(v, *p, strlen(*p));
    if (n < cap && !(n > 0 && vocab_is_eog(v, out[n - 1])))
        out[n++] = vocab_eos(v);
    return n;
}

static void run_case(const model_t *m, const case_t *c)
{
    const vocab_t *v = model_vocab(m);
    char prompt[1024];
    build_prompt(c, prompt, sizeof prompt);
    int32_t *ids = NULL;
    size_t n = 0;
    lf_err_t err;
    if (!tap_ok(vocab_tokenize(v, prompt, strlen(prompt), false, true, &ids, &n, &err) == LF_OK && n > 0,
                "%s: prompt tokenizes", c->name))
        return;
    const char *trig = scripted_scripts()[c->want].trigger;
    if (trig) {
        int32_t tid = vocab_find(v, trig, strlen(trig));
        int found = 0;
        for (size_t i = 0; i < n; i++)
            found |= ids[i] == tid;
        tap_ok(tid >= 0 && found, "%s: the trigger '%s' is one token of the prompt", c->name, trig);
    }
    const char *last = c->think ? SCRIPTED_THINK_OPEN : "<0x0A>";
    tap_ok(ids[n - 1] == vocab_find(v, last, strlen(last)), "%s: the prompt ends with %s", c->name,
           c->think ? "the <think>\\n piece" : "the newline byte");

    int32_t want[64];
    int n_want = expected(v, c->want, c->think, want, 64);
    fwd_opts_t fo = {.n_seq = 1, .n_ctx = 1024, .n_threads = 1};
    fwd_t *f = fwd_create(m, &fo, &err);
    if (!tap_ok(f != NULL, "%s: forward state", c->name)) {
        free(ids);
        return;
    }
    int ok = fwd_prefill(f, 0, ids, (int32_t)n, true, &err) == LF_OK;
    int32_t pos = (int32_t)n, step = 0, bad_step = -1, got = -1;
    float min_margin = INFINITY;
    const int32_t n_vocab = model_hparams(m)->n_vocab;
    for (; ok && step < n_want; step++) {
        const float *lg = fwd_logits(f, 0);
        int32_t best = 0;
        for (int32_t t = 1; t < n_vocab; t++)
            if (lg[t] > lg[best])
                best = t;
        float second = -INFINITY;
        for (int32_t t = 0; t < n_vocab; t++)
            if (t != best && lg[t] > second)
                second = lg[t];
        if (lg[best] - second < min_margin)
            min_margin = lg[best] - second;
        if (best != want[step]) {
            bad_step = step, got = best;
            break;
        }
        if (step + 1 < n_want) {
            fwd_tok_t t = {best, 0, pos++, true, false};
            ok = fwd_decode(f, &t, 1, &err) == LF_OK;
        }
    }
    if (!tap_ok(ok && bad_step < 0, "%s: greedy decoding follows script '%s' for %d tokens", c->name,
                scripted_scripts()[c->want].name, n_want))
        tap_diag("step %d: wanted '%s', got '%s'", bad_step, bad_step >= 0 ? vocab_token_text(v, want[bad_step]) : "",
                 got >= 0 ? vocab_token_text(v, got) : "(error)");
    tap_ok(min_margin >= 10.0f, "%s: every step wins by >= 10 logits (min %.1f)", c->name, min_margin);
    fwd_free(f);
    free(ids);
}

/* The pieces of a script, decoded and concatenated. */
static void script_text(const vocab_t *v, scripted_mode_t m, int think, char *buf, size_t cap)
{
    int32_t ids[64];
    int n = expected(v, m, think, ids, 64);
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        char piece[256];
        int len = vocab_token_to_piece(v, ids[i], false, piece, sizeof piece - 1);
        if (len < 0 || len >= (int)sizeof piece)
            len = 0;
        piece[len] = '\0';
        append(buf, cap, piece);
    }
}

static void test_texts(const model_t *m)
{
    const vocab_t *v = model_vocab(m);
    static const struct {
        scripted_mode_t m;
        int think;
        const char *text;
    } t[] = {
        {SCRIPTED_WEATHER, 0, "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>"},
        {SCRIPTED_WEATHER, 1, "The user asks about the weather. I will call get_weather.</think><tool_call>{\"name\": "
                              "\"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>"},
        {SCRIPTED_RESULT, 1, "The tool says it is clear.</think>It is sunny in Paris."},
        {SCRIPTED_TWICE, 0, "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>"
                            "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"London\"}}\n"
                            "</tool_call>"},
        {SCRIPTED_BROKEN, 0, "<tool_call>{\"name\": oops</tool_call>"},
        {SCRIPTED_DEFAULT, 0, "Hello from the scripted model."},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char buf[512];
        script_text(v, t[i].m, t[i].think, buf, sizeof buf);
        if (!tap_ok(!strcmp(buf, t[i].text), "text of script '%s'%s", scripted_scripts()[t[i].m].name,
                    t[i].think ? " with reasoning" : ""))
            tap_diag("got '%s'", buf);
    }
    /* a space in a prompt is the "▁" token, which decodes to " " */
    int32_t *ids = NULL;
    size_t n = 0;
    char back[64] = "";
    if (vocab_tokenize(v, "a b", 3, false, true, &ids, &n, NULL) == LF_OK)
        for (size_t i = 0; i < n; i++) {
            char piece[16];
            int len = vocab_token_to_piece(v, ids[i], false, piece, sizeof piece - 1);
            piece[len > 0 && len < 16 ? len : 0] = '\0';
            append(back, sizeof back, piece);
        }
    tap_ok(n == 3 && !strcmp(back, "a b"), "spaces tokenize to one token and decode back (%zu tokens)", n);
    free(ids);
}

/* The special markers are CONTROL tokens; harmony's turn ends are ends of
 * generation, its message end <|end|> is not (llama.cpp's rule). */
static void test_vocab(const model_t *m)
{
    const vocab_t *v = model_vocab(m);
    /* (harmony's <|channel|> / <|message|> / <|start|> may be rendered always,
     * as llama.cpp does; they are not checked) */
    static const char *const ctl[] = {"<|return|>", "[TOOL_CALLS]", "[THINK]", "<|tool_call_begin|>", "<|tool_call|>"};
    bool ok = true;
    for (size_t i = 0; i < sizeof ctl / sizeof ctl[0]; i++) {
        int32_t id = vocab_find(v, ctl[i], strlen(ctl[i]));
        ok = ok && id >= 0 && vocab_is_control(v, id) && scripted_is_control(ctl[i]);
    }
    tap_ok(ok, "the special markers are CONTROL tokens");
    int32_t ret = vocab_find(v, "<|return|>", 10), call = vocab_find(v, "<|call|>", 8), end = vocab_find(v, "<|end|>", 7);
    tap_ok(vocab_is_eog(v, ret) && vocab_is_eog(v, call) && end >= 0 && !vocab_is_eog(v, end),
           "<|return|> and <|call|> end the generation, <|end|> does not");
    tap_ok(scripted_count() > SCRIPTED_BROKEN + 30 && scripted_find("qwen3_coder-result") &&
               !scripted_find("nonexistent"), "%zu scripts, found by name", scripted_count());
}

int main(void)
{
    char path[] = "/tmp/llm-scripted-XXXXXX";
    int fd = mkstemp(path);
    if (!tap_ok(fd >= 0, "temporary file"))
        return tap_done();
    close(fd);
    lf_err_t err;
    const char *tmpl = "{{ 'scripted template' }}";
    if (!tap_ok(scripted_model_write(path, tmpl, &err) == LF_OK, "the fixture is written")) {
        tap_diag("%s", err.msg);
        unlink(path);
        return tap_done();
    }
    model_t *m = model_load(path, &err);
    if (tap_ok(m != NULL, "the fixture loads")) {
        const model_hparams_t *hp = model_hparams(m);
        tap_ok(!strcmp(hp->arch, "llama") && hp->n_layer == 1 && hp->n_embd % 64 == 0 && hp->n_embd > hp->n_vocab,
               "llama, one layer, n_embd %d > vocabulary %d", hp->n_embd, hp->n_vocab);
        tap_ok(model_chat_template(m) && !strcmp(model_chat_template(m), tmpl), "the chat template is stored");
        tap_ok(vocab_eos(model_vocab(m)) == vocab_find(model_vocab(m), SCRIPTED_IM_END, strlen(SCRIPTED_IM_END)) &&
                   !vocab_add_bos(model_vocab(m)),
               "EOS is <|im_end|>, no BOS added");
        test_texts(m);
        test_vocab(m);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_case(m, &cases[i]);
        for (size_t i = SCRIPTED_BROKEN + 1; i < scripted_count(); i++) {
            const scripted_script_t *sc = &scripted_scripts()[i];
            for (int think = 0; think < 2; think++) {
                if (think && !sc->reasoning)
                    continue;
                char name[96];
                snprintf(name, sizeof name, "%s%s", sc->name, think ? ", thinking" : "");
                case_t c = {name, NULL, NULL, think, (scripted_mode_t)i};
                run_case(m, &c);
            }
        }
    } else {
        tap_diag("%s", err.msg);
    }
    model_free(m);
    unlink(path);
    return tap_done();
}
