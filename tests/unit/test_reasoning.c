/* test_reasoning.c - the <think> splitter gives the same reasoning and
 * content whatever the split of the text: token by token (as listed in the
 * table), at every 2-way split, byte by byte; tags never leak. */
#include "chat/parse/reasoning.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

#define MAXP 16

typedef struct {
    const char *name;
    reasoning_mode_t mode;
    bool inside;
    const char *pieces[MAXP]; /* the "tokens"; NULL-terminated */
    const char *reasoning;    /* expected, NULL = none */
    const char *content;      /* expected, NULL = none */
    int reasoning_tokens;     /* expected count when fed token by token */
} rcase_t;

static const rcase_t cases[] = {
    {"r1 explicit open and close", REASONING_MODE_DEEPSEEK_R1, false,
     {"<think>", "\nOkay", ", let", " me", "</think>", "\n\nAnswer", "."},
     "\nOkay, let me", "\n\nAnswer.", 5},
    {"r1 implicit open (prompt opened <think>)", REASONING_MODE_DEEPSEEK_R1, true,
     {"\n", "Okay", ".", "</think>", "\n\n", "Yes"}, "\nOkay.", "\n\nYes", 4},
    {"r1 implicit open with redundant <think>", REASONING_MODE_DEEPSEEK_R1, true,
     {"<think>", "hm", "</think>", "ok"}, "hm", "ok", 3},
    {"tags split across tokens", REASONING_MODE_QWEN3, false,
     {"<th", "ink>a", "b</", "thi", "nk", ">c"}, "ab", "c", 5},
    {"tag merged with text in one token", REASONING_MODE_QWEN3, false,
     {"pre<think>x</think>post"}, "x", "prepost", 1},
    {"qwen3 no tags at all", REASONING_MODE_QWEN3, false,
     {"Hello", " world", "\n"}, NULL, "Hello world\n", 0},
    {"qwen3 thinking disabled by prompt: no tags", REASONING_MODE_QWEN3, false,
     {"Just", " answer"}, NULL, "Just answer", 0},
    {"unterminated reasoning (length)", REASONING_MODE_DEEPSEEK_R1, true,
     {"thinking", " more", "</th"}, "thinking more</th", NULL, 3},
    {"unicode inside reasoning", REASONING_MODE_QWEN3, false,
     {"<think>", "caf\xc3\xa9 ", "\xe2\x9c\x93 \xf0\x9f\x98\x80", "</think>", "\xe6\x97\xa5"},
     "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80", "\xe6\x97\xa5", 4},
    {"lookalike tags stay text", REASONING_MODE_QWEN3, false,
     {"<thin", "g> <", "think", ">a < /think> <", "/thinker", "</think>b"},
     "a < /think> </thinker", "<thing> b", 3},
    {"second block is content verbatim", REASONING_MODE_QWEN3, false,
     {"<think>a</think>", "b<think>c</think>"}, "a", "b<think>c</think>", 1},
    {"empty reasoning", REASONING_MODE_QWEN3, false, {"<think>", "</think>", "x"}, NULL, "x", 2},
    {"partial open tag at end is content", REASONING_MODE_QWEN3, false,
     {"a", "<thi"}, NULL, "a<thi", 0},
    {"mode none keeps tags", REASONING_MODE_NONE, false,
     {"<think>", "x", "</think>"}, NULL, "<think>x</think>", 0},
    {"stray close tag in content (not inside)", REASONING_MODE_QWEN3, false,
     {"a", "</think>", "b<think>"}, NULL, "ab<think>", 0},
    {"inside start: close right away", REASONING_MODE_DEEPSEEK_R1, true,
     {"</think>", "x"}, NULL, "x", 1},
    {"inside start: '<' then close", REASONING_MODE_DEEPSEEK_R1, true,
     {"<", "/think>", "x"}, "", "x", 2},
};

typedef struct {
    char r[1024], c[1024];
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
        if (*dl + s->len >= 1024) {
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
    reasoning_t *rp = reasoning_create(tc->mode, tc->inside, NULL);
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
    reasoning_finish(rp, &o);
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
    char text[1024] = "";
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
        reasoning_t *rp = reasoning_create(tc->mode, tc->inside, NULL);
        reasoning_out_t o;
        int rt = 0;
        for (int i = 0; tc->pieces[i]; i++) {
            reasoning_push(rp, tc->pieces[i], strlen(tc->pieces[i]), &o, NULL);
            acc_add(&a, &o);
            rt += o.token_in_reasoning;
        }
        reasoning_finish(rp, &o);
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
    lf_code_t rc = reasoning_split(tc->mode, tc->inside, text, n, &r, &c, NULL);
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
    tap_ok(reasoning_create((reasoning_mode_t)7, false, &e) == NULL && e.code == LF_ERR_INVALID,
           "bad mode rejected");
}

static void test_push_after_finish(void)
{
    reasoning_t *rp = reasoning_create(REASONING_MODE_QWEN3, true, NULL);
    reasoning_out_t o;
    reasoning_push(rp, "a", 1, &o, NULL);
    tap_ok(reasoning_in_reasoning(rp), "inside while reasoning");
    reasoning_finish(rp, &o);
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
