/* test_vocab.c - unit tests of the vocab module: incremental detokenization,
 * control-token rendering, BOS/EOS and EOG rules, pieces, the pre-tokenizer
 * fallback, the Gemma 4 tokenizer model, the 2026 special-token rules,
 * WordPiece normalizer options, vocab_open and load errors (on small GGUF
 * files written here and on the golden vocabularies). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/gguf/gguf.h"
#include "engine/vocab/vocab.h"
#include "tap.h"

static const char *gdir, *mdir;

static vocab_t *load(const char *path)
{
    lf_err_t err;
    gguf_file_t *f = gguf_open(path, &err);
    vocab_t *v = f ? vocab_load(f, &err) : NULL;
    gguf_close(f);
    if (!v)
        tap_diag("load %s: %s", path, err.msg);
    return v;
}

static vocab_t *load_model(const char *name)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s.gguf", mdir, name);
    return load(p);
}

static vocab_t *load_golden(const char *name)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/tokenizer/ggml-vocab-%s.gguf", gdir, name);
    return load(p);
}

static size_t tok(const vocab_t *v, const char *s, bool add_special, bool parse_special, int32_t *out, size_t cap)
{
    int32_t *ids = NULL;
    size_t n = 0;
    if (vocab_tokenize(v, s, strlen(s), add_special, parse_special, &ids, &n, NULL) != LF_OK)
        return (size_t)-1;
    for (size_t i = 0; i < n && i < cap; i++)
        out[i] = ids[i];
    free(ids);
    return n;
}

/* ---- a tiny GGUF writer for synthetic vocabularies ------------------------ */

typedef struct {
    FILE *f;
    unsigned n_kv;
} gw_t;

static void w_u32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }
static void w_u64(FILE *f, uint64_t v) { fwrite(&v, 8, 1, f); }
static void w_str(FILE *f, const char *s)
{
    w_u64(f, strlen(s));
    fwrite(s, 1, strlen(s), f);
}
static void kv_str(FILE *f, const char *k, const char *v)
{
    w_str(f, k);
    w_u32(f, 8);
    w_str(f, v);
}
static void kv_strs(FILE *f, const char *k, const char *const *v, size_t n)
{
    w_str(f, k);
    w_u32(f, 9);
    w_u32(f, 8);
    w_u64(f, n);
    for (size_t i = 0; i < n; i++)
        w_str(f, v[i]);
}

/* Optional extras of a synthetic vocabulary file. */
typedef struct {
    const int32_t *types;   /* tokenizer.ggml.token_type (NULL: absent) */
    int bos;                /* tokenizer.ggml.bos_token_id (-1: absent) */
    const char *bool_key;   /* one boolean key (NULL: none) */
    bool bool_val;
    bool odd_tensor;        /* one tensor of an unknown type (id 99) */
} extras_t;

/* Writes a GGUF with tokenizer.ggml.model = model (NULL: absent), pre (NULL:
 * absent), the given tokens and merges (merges NULL: absent). */
static char *write_vocab_ex(const char *model, const char *pre, const char *const *toks, size_t nt,
                            const char *const *merges, size_t nm, const extras_t *x)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/test_vocab_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "wb");
    uint64_t n_kv = 1 + (model != NULL) + (pre != NULL) + (merges != NULL);
    if (x)
        n_kv += (x->types != NULL) + (x->bos >= 0) + (x->bool_key != NULL);
    fwrite("GGUF", 1, 4, f);
    w_u32(f, 3);
    w_u64(f, x && x->odd_tensor ? 1 : 0);
    w_u64(f, n_kv);
    if (model)
        kv_str(f, "tokenizer.ggml.model", model);
    if (pre)
        kv_str(f, "tokenizer.ggml.pre", pre);
    kv_strs(f, "tokenizer.ggml.tokens", toks, nt);
    if (merges)
        kv_strs(f, "tokenizer.ggml.merges", merges, nm);
    if (x && x->types) {
        w_str(f, "tokenizer.ggml.token_type");
        w_u32(f, 9);
        w_u32(f, 5); /* int32 */
        w_u64(f, nt);
        fwrite(x->types, 4, nt, f);
    }
    if (x && x->bos >= 0) {
        w_str(f, "tokenizer.ggml.bos_token_id");
        w_u32(f, 4); /* uint32 */
        w_u32(f, (uint32_t)x->bos);
    }
    if (x && x->bool_key) {
        w_str(f, x->bool_key);
        w_u32(f, 7); /* bool */
        fputc(x->bool_val, f);
    }
    if (x && x->odd_tensor) {
        w_str(f, "weird.weight");
        w_u32(f, 1);
        w_u64(f, 32);
        w_u32(f, 99); /* a type id this build does not know */
        w_u64(f, 0);
    }
    fclose(f);
    return path;
}

static char *write_vocab(const char *model, const char *pre, const char *const *toks, size_t nt,
                         const char *const *merges, size_t nm)
{
    return write_vocab_ex(model, pre, toks, nt, merges, nm, NULL);
}

/* ---- tests ---------------------------------------------------------------- */

static void test_detok_emoji(void)
{
    vocab_t *v = load_model("llama-2-tiny-random");
    if (!tap_ok(v != NULL, "llama-2-tiny-random loads"))
        return;
    int32_t ids[16];
    size_t n = tok(v, "\xf0\x9f\x98\x80!", false, false, ids, 16); /* U+1F600 via byte fallback */
    tap_ok(n >= 5, "emoji falls back to byte tokens (%zu tokens)", n);
    vocab_detok_t d;
    vocab_detok_init(&d, v, false);
    char out[300], all[64] = "";
    size_t total = 0;
    int empties = 0;
    for (size_t i = 0; i < n && i < 16; i++) {
        int w = vocab_detok_push(&d, ids[i], out, sizeof out);
        if (w == 0)
            empties++;
        if (w > 0 && total + (size_t)w < sizeof all) {
            memcpy(all + total, out, (size_t)w);
            total += (size_t)w;
        }
    }
    int w = vocab_detok_flush(&d, out, sizeof out);
    all[total] = '\0';
    tap_ok(empties == 3, "the first three bytes of the emoji are held back (%d empty pushes)", empties);
    tap_ok(strcmp(all, " \xf0\x9f\x98\x80!") == 0, "incremental text is ' <emoji>!' (got '%s')", all);
    tap_ok(w == 0, "nothing left to flush");

    /* incomplete character at the end: one U+FFFD at flush */
    int32_t f0 = vocab_find(v, "<0xF0>", 6), b9f = vocab_find(v, "<0x9F>", 6), b80 = vocab_find(v, "<0x80>", 6);
    vocab_detok_init(&d, v, false);
    int a = vocab_detok_push(&d, f0, out, sizeof out);
    int b = vocab_detok_push(&d, b9f, out, sizeof out);
    w = vocab_detok_flush(&d, out, sizeof out);
    tap_ok(a == 0 && b == 0 && w == 3 && memcmp(out, "\xef\xbf\xbd", 3) == 0,
           "truncated character flushes as one U+FFFD");
    /* a stray continuation byte can never complete: U+FFFD at once */
    vocab_detok_init(&d, v, false);
    w = vocab_detok_push(&d, b80, out, sizeof out);
    tap_ok(w == 3 && memcmp(out, "\xef\xbf\xbd", 3) == 0, "stray continuation byte gives U+FFFD");
    tap_ok(vocab_detok_push(&d, 999999, out, sizeof out) == -1, "bad id gives -1");
    vocab_free(v);
}

static void test_control_and_bos(void)
{
    vocab_t *v = load_model("stories260K");
    if (!tap_ok(v != NULL, "stories260K loads"))
        return;
    char buf[64];
    tap_ok(vocab_type(v) == VOCAB_TYPE_SPM, "stories260K is SPM");
    tap_ok(vocab_is_control(v, 2) && vocab_is_eog(v, 2), "</s> is a control, end-of-generation token");
    tap_ok(vocab_token_to_piece(v, 2, false, buf, sizeof buf) == 0, "control token renders empty by default");
    int n = vocab_token_to_piece(v, 2, true, buf, sizeof buf);
    tap_ok(n == 4 && memcmp(buf, "</s>", 4) == 0, "control token renders as its text when special");
    vocab_detok_t d;
    vocab_detok_init(&d, v, true);
    n = vocab_detok_push(&d, 1, buf, sizeof buf);
    tap_ok(n == 3 && memcmp(buf, "<s>", 3) == 0, "detok with special renders <s>");
    tap_ok(vocab_token_to_piece(v, -1, true, buf, sizeof buf) == -1, "negative id gives -1");
    int32_t ids[16];
    size_t k = tok(v, "Once upon a time", true, false, ids, 16);
    tap_ok(k == 5 && ids[0] == 1 && ids[1] == 403 && ids[4] == 378, "add_special adds BOS (1 403 407 261 378)");
    k = tok(v, "Once upon a time", false, false, ids, 16);
    tap_ok(k == 4 && ids[0] == 403, "without add_special there is no BOS");
    tap_ok(tok(v, "", true, false, ids, 16) == 1 && ids[0] == 1, "empty text with add_special is [BOS]");
    tap_ok(tok(v, "", false, false, ids, 16) == 0, "empty text without add_special is []");
    k = tok(v, "a</s>", false, true, ids, 16);
    tap_ok(k >= 2 && ids[k - 1] == 2, "parse_special turns </s> into id 2");
    k = tok(v, "a</s>", false, false, ids, 16);
    tap_ok(k > 2 && ids[k - 1] != 2, "without parse_special </s> is plain text");
    n = vocab_token_to_piece(v, 403, false, buf, 3);
    tap_ok(n == 5 && memcmp(buf, " On", 3) == 0, "short buffer: truncated copy, full length returned");
    tap_ok(vocab_find(v, "<s>", 3) == 1 && strcmp(vocab_token_text(v, 1), "<s>") == 0, "find and text agree");
    tap_ok(vocab_add_bos(v) && !vocab_add_eos(v) && vocab_bos(v) == 1 && vocab_eos(v) == 2,
           "SPM defaults: add BOS, no EOS");
    vocab_free(v);
}

static void test_bpe_rules(void)
{
    vocab_t *v = load_model("tinyqwen2-f16");
    if (tap_ok(v != NULL, "tinyqwen2 loads")) {
        int32_t ids[16];
        size_t k = tok(v, "Hello", true, false, ids, 16);
        tap_ok(!vocab_add_bos(v) && k == 1 && ids[0] == 15496, "add_bos_token=false: no BOS added");
        tap_ok(vocab_is_eog(v, 50256), "<|endoftext|> is end-of-generation");
        vocab_free(v);
    }
    v = load_golden("gpt-2");
    if (tap_ok(v != NULL, "gpt-2 vocab loads")) {
        char buf[64];
        int32_t id = vocab_find(v, "\xc4\xa0world", 7); /* "Ġworld" */
        int n = vocab_token_to_piece(v, id, false, buf, sizeof buf);
        tap_ok(id == 995 && n == 6 && memcmp(buf, " world", 6) == 0, "byte-level piece 'Ġworld' is ' world'");
        tap_ok(!vocab_add_bos(v) && strcmp(vocab_pre_name(v), "gpt-2") == 0, "gpt2 defaults: no BOS, pre gpt-2");
        vocab_free(v);
    }
    v = load_golden("phi-3");
    if (tap_ok(v != NULL, "phi-3 vocab loads")) {
        tap_ok(vocab_is_eog(v, 32007) && vocab_is_eog(v, 32000), "<|end|> and <|endoftext|> are EOG");
        int32_t ids[16];
        /* </s> is user-defined (always matched) and, for Phi-3, eats the spaces after it */
        size_t k = tok(v, "</s>  x", false, false, ids, 16);
        tap_ok(k >= 2 && ids[0] == 2 && ids[1] != vocab_find(v, "\xe2\x96\x81", 3),
               "user-defined </s> matched without parse_special, rstrip applied");
        vocab_free(v);
    }
}

static void test_wpm(void)
{
    vocab_t *v = load_golden("bert-bge");
    if (!tap_ok(v != NULL, "bert-bge vocab loads"))
        return;
    int32_t a[32], b[32];
    size_t na = tok(v, "Hello, World!", true, false, a, 32);
    tap_ok(vocab_type(v) == VOCAB_TYPE_WPM && na >= 4 && a[0] == 101 && a[na - 1] == 102,
           "WordPiece with add_special is [CLS] ... [SEP]");
    size_t nb = tok(v, "h\xc3\xa9llo, world!", true, false, b, 32);
    tap_ok(na == nb && memcmp(a, b, na * sizeof *a) == 0, "case folded, accents stripped: 'héllo' == 'Hello'");
    char buf[64];
    int n = vocab_token_to_piece(v, a[1], false, buf, sizeof buf);
    tap_ok(n == 6 && memcmp(buf, " hello", 6) == 0, "word-initial piece renders with a leading space");
    vocab_free(v);
}

/* One vocab shared by several threads gives the same ids as one thread. */
typedef struct {
    const vocab_t *v;
    const char *text;
    int32_t *ids;
    size_t n;
} job_t;

static void *tokenize_job(void *arg)
{
    job_t *j = arg;
    for (int rep = 0; rep < 20; rep++) {
        free(j->ids);
        j->ids = NULL;
        if (vocab_tokenize(j->v, j->text, strlen(j->text), true, true, &j->ids, &j->n, NULL) != LF_OK)
            j->n = (size_t)-1;
    }
    return NULL;
}

static void test_threads(void)
{
    vocab_t *v = load_model("tinyqwen2-f16");
    if (!tap_ok(v != NULL, "tinyqwen2 loads (threads)"))
        return;
    const char *text = "Hello world<|endoftext|>  1234567 caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80\n\tx";
    job_t ref = {v, text, NULL, 0};
    tokenize_job(&ref);
    job_t jobs[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (job_t){v, text, NULL, 0};
        pthread_create(&th[i], NULL, tokenize_job, &jobs[i]);
    }
    bool same = ref.n > 0 && ref.n != (size_t)-1;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        same = same && jobs[i].n == ref.n && memcmp(jobs[i].ids, ref.ids, ref.n * sizeof *ref.ids) == 0;
        free(jobs[i].ids);
    }
    tap_ok(same, "4 threads sharing one vocab get the single-thread ids (%zu tokens)", ref.n);
    free(ref.ids);
    vocab_free(v);
}

static void test_synthetic(void)
{
    static const char *toks[] = {"a", "b", "ab", "\xc4\xa0", "\xc4\xa0" "ab", "1", "<|endoftext|>"};
    static const char *merges[] = {"a b", "\xc4\xa0 ab"};
    char *p = write_vocab("gpt2", "no-such-pre", toks, 7, merges, 2);
    vocab_t *v = p ? load(p) : NULL;
    if (tap_ok(v != NULL, "unknown pre still loads")) {
        tap_ok(strcmp(vocab_pre_name(v), "default") == 0, "unknown pre falls back to 'default'");
        int32_t ids[16];
        size_t k = tok(v, "ab ab", false, false, ids, 16);
        tap_ok(k == 2 && ids[0] == 2 && ids[1] == 4, "default pre-tokenizer + merges: 'ab ab' -> [2 4]");
        tap_ok(vocab_is_eog(v, 6), "<|endoftext|> detected as EOG by text");
        vocab_free(v);
    }
    if (p)
        unlink(p);

    /* every known pre-tokenizer compiles and is used under its own name */
    static const char *pres[] = {"default", "llama3", "llama-v3", "llama-bpe", "falcon3", "dbrx", "smaug-bpe",
                                 "deepseek-llm", "deepseek-v3", "deepseek-coder", "falcon", "starcoder",
                                 "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "gpt-2",
                                 "phi-2", "roberta-bpe", "mpt", "olmo", "jais", "qwen2", "deepseek-r1-qwen",
                                 "megrez", "stablelm2", "poro-chat", "bloom", "gpt3-finnish", "chatglm-bpe",
                                 "viking", "tekken", "gpt-4o", "llama4", "chameleon", "qwen35", "gemma4",
                                 "sarvam-moe", "glm4", "hunyuan-dense", "minimax-m2", "exaone4", "lfm2"};
    int good = 0;
    for (size_t i = 0; i < sizeof pres / sizeof pres[0]; i++) {
        p = write_vocab("gpt2", pres[i], toks, 7, merges, 2);
        vocab_t *pv = p ? load(p) : NULL;
        int32_t *ids = NULL;
        size_t nids = 0;
        const char *txt = "Hello, World! It's 2024-01-02 \xe6\x97\xa5\xe6\x9c\xac  \n\t ab ab";
        if (pv && strcmp(vocab_pre_name(pv), pres[i]) == 0 &&
            vocab_tokenize(pv, txt, strlen(txt), false, false, &ids, &nids, NULL) == LF_OK && nids > 0)
            good++;
        else
            tap_diag("pre-tokenizer '%s' failed", pres[i]);
        free(ids);
        vocab_free(pv);
        if (p)
            unlink(p);
    }
    tap_ok(good == (int)(sizeof pres / sizeof pres[0]), "all %d known pre-tokenizers compile and run (%d ok)",
           (int)(sizeof pres / sizeof pres[0]), good);

    struct {
        const char *model;
        bool merges;
        lf_code_t want;
        const char *what;
    } bad[] = {
        {NULL, true, LF_ERR_FORMAT, "missing tokenizer.ggml.model"},
        {"wordsalad", true, LF_ERR_UNSUPPORTED, "unknown tokenizer model"},
        {"gpt2", false, LF_ERR_FORMAT, "gpt2 without merges"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = write_vocab(bad[i].model, NULL, toks, 7, bad[i].merges ? merges : NULL, 2);
        lf_err_t err = {0};
        gguf_file_t *f = p ? gguf_open(p, &err) : NULL;
        vocab_t *vv = f ? vocab_load(f, &err) : NULL;
        tap_ok(f && !vv && err.code == bad[i].want, "%s is rejected (%s: %s)", bad[i].what, lf_code_name(err.code),
               err.msg);
        vocab_free(vv);
        gguf_close(f);
        if (p)
            unlink(p);
    }
}

/* ---- 2026 vocabularies and special-token rules ------------------------------ */

static void test_gemma4(void)
{
    vocab_t *v = load_golden("gemma-4");
    if (!tap_ok(v != NULL, "gemma-4 vocab loads"))
        return;
    tap_ok(strcmp(vocab_model_name(v), "gemma4") == 0 && strcmp(vocab_pre_name(v), "gemma4") == 0 &&
               vocab_type(v) == VOCAB_TYPE_BPE,
           "tokenizer model gemma4 is BPE with the gemma4 pre-tokenizer");
    tap_ok(vocab_add_bos(v) && vocab_bos(v) == 2, "gemma4 adds <bos> (id 2)");
    static const struct {
        const char *text;
        const char *what;
    } rt[] = {
        {" Hello  world", "runs of spaces"},
        {"line\n\n\nnext\n", "newline runs"},
        {"\t tab\r\n", "tab and CRLF"},
        {"caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", "accents and CJK"},
        {"\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9 \xf0\x9f\x87\xab\xf0\x9f\x87\xb7", "ZWJ emoji and a flag"},
        {"\xf0\x90\x90\x80\xf0\x9d\x92\x9c", "rare characters (byte fallback)"},
    };
    for (size_t i = 0; i < sizeof rt / sizeof rt[0]; i++) {
        int32_t *ids = NULL;
        size_t n = 0;
        vocab_tokenize(v, rt[i].text, strlen(rt[i].text), false, false, &ids, &n, NULL);
        char out[512];
        size_t o = 0;
        for (size_t k = 0; k < n; k++) {
            int w = vocab_token_to_piece(v, ids[k], false, out + o, sizeof out - o);
            o += w > 0 ? (size_t)w : 0;
        }
        tap_ok(n > 0 && o == strlen(rt[i].text) && memcmp(out, rt[i].text, o) == 0, "gemma4 round trip: %s",
               rt[i].what);
        free(ids);
    }
    int32_t ids[8];
    int32_t nl3 = vocab_find(v, "\n\n\n", 3);
    tap_ok(nl3 >= 0 && tok(v, "\n\n\n", false, false, ids, 8) == 1 && ids[0] == nl3,
           "a newline run that is a token is taken whole");
    tap_ok(vocab_is_eog(v, vocab_find(v, "<turn|>", 7)) && vocab_is_eog(v, vocab_find(v, "<|tool_response>", 16)),
           "<turn|> and <|tool_response> end generation");
    int32_t s_end = vocab_find(v, "</s>", 4);
    tap_ok(!vocab_is_eog(v, s_end) && !vocab_is_special(v, s_end), "with <|tool_response>, </s> is ordinary text");
    size_t k = tok(v, "<|tool_response>", false, false, ids, 8);
    tap_ok(k > 1, "<|tool_response> is text without parse_special");
    k = tok(v, "<|tool_response>", false, true, ids, 8);
    tap_ok(k == 1 && ids[0] == vocab_find(v, "<|tool_response>", 16), "and one token with parse_special");
    vocab_free(v);

    /* synthetic: the model alone implies the pre-tokenizer, BOS and fallback */
    static const char *toks[] = {"<pad>", "<eos>", "<bos>", "a", "b", "\xe2\x96\x81", "\xe2\x96\x81" "a", "ab",
                                 "<0x7A>"};
    static const char *merges[] = {"\xe2\x96\x81 a", "a b"};
    static const int32_t types[] = {3, 3, 3, 1, 1, 1, 1, 1, 6};
    extras_t x = {.types = types, .bos = 2};
    char *p = write_vocab_ex("gemma4", "gpt-2", toks, 9, merges, 2, &x);
    v = p ? load(p) : NULL;
    if (tap_ok(v != NULL, "synthetic gemma4 vocab loads")) {
        tap_ok(strcmp(vocab_pre_name(v), "gemma4") == 0, "tokenizer model gemma4 overrides tokenizer.ggml.pre");
        tap_ok(vocab_add_bos(v), "gemma4 adds BOS even when the file does not say so");
        k = tok(v, " ab az", true, false, ids, 8);
        tap_ok(k == 5 && ids[0] == 2 && ids[1] == 6 && ids[2] == 4 && ids[3] == 6 && ids[4] == 8,
               "' ab az' -> <bos> '\u2581a' 'b' '\u2581a' <0x7A>");
        char buf[8];
        tap_ok(vocab_token_to_piece(v, 8, false, buf, sizeof buf) == 1 && buf[0] == 'z', "<0x7A> renders as 'z'");
        tap_ok(vocab_token_to_piece(v, 6, false, buf, sizeof buf) == 2 && memcmp(buf, " a", 2) == 0,
               "U+2581 renders as a space");
        vocab_free(v);
    }
    if (p)
        unlink(p);
}

static void test_special_rules(void)
{
    /* token type 1 normal, 3 control, 4 user-defined */
    static const struct {
        const char *what;
        const char *toks[6];
        int32_t types[6];
        const char *probe; /* token text checked */
        bool eog, plain_match, special_match;
    } cases[] = {
        {"a normal </s> becomes an end-of-generation control token", {"a", "</s>"}, {1, 1}, "</s>", true, false, true},
        {"a user-defined </s> ends generation and stays matched in text", {"a", "</s>"}, {1, 4}, "</s>", true, true,
         true},
        {"</s> is plain text where <|tool_response> exists", {"a", "</s>", "<|tool_response>"}, {1, 1, 4}, "</s>",
         false, false, false},
        {"<|tool_response> becomes an end-of-generation control token", {"a", "</s>", "<|tool_response>"}, {1, 1, 4},
         "<|tool_response>", true, false, true},
        {"<|end|> is not EOG where <|return|> and <|call|> exist", {"a", "<|end|>", "<|return|>", "<|call|>"},
         {1, 3, 3, 3}, "<|end|>", false, true, true},
        {"<|end|> alone ends generation", {"a", "<|end|>"}, {1, 4}, "<|end|>", true, false, true},
        {"<|channel|> is always rendered and matched", {"a", "<|channel|>"}, {1, 3}, "<|channel|>", false, true,
         true},
        {"<|end_of_text|> ends generation", {"a", "<|end_of_text|>"}, {1, 1}, "<|end_of_text|>", true, false,
         true},
    };
    static const char *merges[] = {"a a"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t nt = 0;
        while (nt < 6 && cases[i].toks[nt])
            nt++;
        extras_t x = {.types = cases[i].types, .bos = -1};
        char *p = write_vocab_ex("gpt2", "gpt-2", cases[i].toks, nt, merges, 1, &x);
        vocab_t *v = p ? load(p) : NULL;
        int32_t id = v ? vocab_find(v, cases[i].probe, strlen(cases[i].probe)) : -1;
        int32_t ids[16];
        bool plain = v && tok(v, cases[i].probe, false, false, ids, 16) == 1 && ids[0] == id;
        bool special = v && tok(v, cases[i].probe, false, true, ids, 16) == 1 && ids[0] == id;
        tap_ok(v && id >= 0 && vocab_is_eog(v, id) == cases[i].eog && plain == cases[i].plain_match &&
                   special == cases[i].special_match,
               "%s", cases[i].what);
        vocab_free(v);
        if (p)
            unlink(p);
    }
}

static void test_wpm_options(void)
{
    static const char *toks[] = {"[PAD]", "[UNK]", "\xe2\x96\x81" "hello", "\xe2\x96\x81" "Hello",
                                 "\xe2\x96\x81" "h\xc3\xa9llo"};
    static const struct {
        const char *key;
        bool val;
        const char *text;
        int32_t want;
        const char *what;
    } cases[] = {
        {NULL, false, "HELLO", 2, "lowercases by default"},
        {NULL, false, "he\xcc\x81llo", 2, "drops accent marks by default"},
        {NULL, false, "h\xc3\xa9llo", 2, "reduces precomposed letters by default"},
        {"tokenizer.ggml.normalizer.lowercase", false, "Hello", 3, "lowercase=false keeps case"},
        {"tokenizer.ggml.normalizer.lowercase", false, "h\xc3\xa9llo", 4, "lowercase=false keeps accents too"},
        {"tokenizer.ggml.normalizer.strip_accents", false, "h\xc3\xa9llo", 4, "strip_accents=false keeps accents"},
        {NULL, false, "h\xcd\xb8llo", -1, "keeps an unassigned code point (no match, no [UNK] id)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        extras_t x = {.bos = -1, .bool_key = cases[i].key, .bool_val = cases[i].val};
        char *p = write_vocab_ex("bert", NULL, toks, 5, NULL, 0, &x);
        vocab_t *v = p ? load(p) : NULL;
        int32_t ids[8];
        size_t n = v ? tok(v, cases[i].text, false, false, ids, 8) : 0;
        tap_ok(cases[i].want < 0 ? v && n == 0 : n == 1 && ids[0] == cases[i].want, "WordPiece %s", cases[i].what);
        vocab_free(v);
        if (p)
            unlink(p);
    }
}

static void test_vocab_open(void)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/tokenizer/ggml-vocab-qwen35.gguf", gdir);
    lf_err_t err = {0};
    vocab_t *v = vocab_open(p, &err);
    tap_ok(v && strcmp(vocab_pre_name(v), "qwen35") == 0 && vocab_n_tokens(v) == 151936,
           "vocab_open reads a vocabulary-only file (qwen35)");
    vocab_free(v);
    v = vocab_open("/nonexistent/x.gguf", &err);
    tap_ok(!v && err.code == LF_ERR_IO && strstr(err.msg, "/nonexistent/x.gguf"), "a missing file: LF_ERR_IO naming it");
    static const char *toks[] = {"a", "b"};
    static const char *merges[] = {"a b"};
    extras_t x = {.bos = -1, .odd_tensor = true};
    char *w = write_vocab_ex("gpt2", "gpt-2", toks, 2, merges, 1, &x);
    gguf_file_t *f = w ? gguf_open(w, &err) : NULL;
    tap_ok(!f, "gguf_open refuses an unknown tensor type");
    gguf_close(f);
    v = w ? vocab_open(w, &err) : NULL;
    tap_ok(v && vocab_n_tokens(v) == 2, "vocab_open still reads the vocabulary of that file");
    vocab_free(v);
    if (w)
        unlink(w);
    w = write_vocab(NULL, NULL, toks, 2, NULL, 0);
    v = w ? vocab_open(w, &err) : NULL;
    tap_ok(!v && err.code == LF_ERR_FORMAT && strstr(err.msg, "no vocabulary"), "a GGUF without a vocabulary: %s",
           err.msg);
    if (w)
        unlink(w);
}

int main(void)
{
    gdir = tap_env_dir("LLM_GOLDEN_DIR", "../shared/golden");
    mdir = tap_env_dir("LLM_MODELS_DIR", "../shared/models");
    test_detok_emoji();
    test_control_and_bos();
    test_bpe_rules();
    test_wpm();
    test_threads();
    test_synthetic();
    test_gemma4();
    test_special_rules();
    test_wpm_options();
    test_vocab_open();
    return tap_done();
}
