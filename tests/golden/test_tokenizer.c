/* test_tokenizer.c - every tokenizer golden under LLM_GOLDEN_DIR.
 *
 * The vocabularies are discovered, not listed: every tokenizer/<name>.gguf
 * (with its .gguf.inp/.gguf.out pair and <name>.jsonl when present) and
 * every tokenizer/<name>.jsonl without a GGUF there, whose model is then
 * LLM_MODELS_DIR/<name>.gguf. A vocabulary that cannot be opened or loaded,
 * or an .inp/.out pair whose counts differ, is a failure, never a skip.
 *
 * Per case (one TAP line each):
 *  - .inp/.out: tokenize(add_special=false, parse_special=false) == ids;
 *  - .jsonl: the same for `ids`, and parse_special=true for
 *    `ids_parse_special` (never BOS);
 *  - detokenization round trip of the golden ids through vocab_detok_*
 *    wherever the tokenizer is lossless for that text (see roundtrip_want);
 *  - greedy-<model>.jsonl: prompt_tokens == tokenize(prompt, add_special,
 *    parse_special), as llama-server's /tokenize does, for every model found.
 */
#include <dirent.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/gguf/gguf.h"
#include "engine/vocab/vocab.h"
#include "tap.h"

#define MAX_IDS 16384

typedef struct {
    int pass, total;
} tally_t;

static void show_ids(const char *what, const int32_t *ids, size_t n)
{
    char line[1024];
    size_t o = 0;
    for (size_t i = 0; i < n && o < sizeof line - 16; i++)
        o += (size_t)snprintf(line + o, sizeof line - o, " %d", ids[i]);
    line[o] = '\0';
    tap_diag("%s:%s", what, line);
}

static void count(tally_t *t, int ok)
{
    t->pass += ok != 0;
    t->total++;
}

/* Tokenizes text and compares with want[0..nw). */
static int check_ids(const vocab_t *v, const char *text, size_t len, bool parse_special, const int32_t *want,
                     size_t nw, const char *label)
{
    int32_t *ids = NULL;
    size_t n = 0;
    lf_err_t err;
    lf_code_t rc = vocab_tokenize(v, text, len, false, parse_special, &ids, &n, &err);
    bool ok = rc == LF_OK && n == nw && (n == 0 || memcmp(ids, want, n * sizeof *ids) == 0);
    tap_ok(ok, "%s", label);
    if (!ok) {
        tap_diag("text: %.*s", (int)(len > 200 ? 200 : len), text);
        show_ids("want", want, nw);
        show_ids("got ", ids, n);
    }
    free(ids);
    return ok;
}

static bool valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t l = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!l || i + l > n || (l == 2 && c < 0xC2))
            return false;
        uint32_t cp = l == 1 ? c : (uint32_t)(c & (0x7F >> l));
        for (size_t k = 1; k < l; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if ((l == 3 && cp < 0x800) || (l == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += l;
    }
    return true;
}

/* What detokenizing ids (control tokens rendered) must give back, in *want
 * (malloc'd); false when the tokenizer is not lossless for this text:
 * WordPiece (lowercases, drops accents), invalid UTF-8 (becomes U+FFFD),
 * unknown tokens, and SentencePiece texts with special tokens (a space is
 * added after each, Phi-3 strips spaces). SentencePiece adds one leading
 * space when the vocabulary asks for it. */
static bool roundtrip_want(const vocab_t *v, const char *text, size_t len, const int32_t *ids, size_t n, char **want,
                           size_t *wlen)
{
    if (vocab_type(v) == VOCAB_TYPE_WPM || !valid_utf8((const unsigned char *)text, len))
        return false;
    for (size_t i = 0; i < n; i++) {
        const char *t = vocab_token_text(v, ids[i]);
        if (!t || vocab_is_unknown(v, ids[i]))
            return false;
        if (vocab_type(v) == VOCAB_TYPE_SPM && vocab_is_special(v, ids[i]))
            return false;
    }
    bool space = vocab_type(v) == VOCAB_TYPE_SPM && vocab_add_space_prefix(v) && len > 0;
    *want = malloc(len + 2);
    if (!*want)
        return false;
    size_t o = 0;
    if (space)
        (*want)[o++] = ' ';
    memcpy(*want + o, text, len);
    *wlen = o + len;
    return true;
}

static void check_roundtrip(const vocab_t *v, const char *text, size_t len, const int32_t *ids, size_t n,
                            const char *label, tally_t *t)
{
    char *want = NULL;
    size_t wl = 0;
    if (!roundtrip_want(v, text, len, ids, n, &want, &wl))
        return;
    size_t cap = (n + 1) * VOCAB_DETOK_MAX, got_n = 0;
    char *got = malloc(cap);
    bool ok = got != NULL;
    vocab_detok_t d;
    vocab_detok_init(&d, v, true);
    for (size_t i = 0; ok && i < n; i++) {
        int w = vocab_detok_push(&d, ids[i], got + got_n, cap - got_n);
        ok = w >= 0;
        got_n += ok ? (size_t)w : 0;
    }
    if (ok)
        got_n += (size_t)vocab_detok_flush(&d, got + got_n, cap - got_n);
    ok = ok && got_n == wl && memcmp(got, want, wl) == 0;
    count(t, tap_ok(ok, "%s detokenizes back", label));
    if (!ok && got)
        tap_diag("want '%.*s'\n# got  '%.*s'", (int)(wl > 200 ? 200 : wl), want, (int)(got_n > 200 ? 200 : got_n), got);
    free(got);
    free(want);
}

static size_t parse_out_line(const char *line, const char *end, int32_t *want)
{
    size_t nw = 0;
    for (const char *q = line; q < end && nw < MAX_IDS;) {
        while (q < end && *q == ' ')
            q++;
        if (q >= end)
            break;
        char *e;
        want[nw++] = (int32_t)strtol(q, &e, 10);
        if (e == q)
            break;
        q = e;
    }
    return nw;
}

/* X.gguf.inp: tests joined by the separator; the text after the last one is
 * a test too when not empty (test-tokenizer-0's reader). */
static void run_inp_out(const vocab_t *v, const char *dir, const char *name, tally_t *t)
{
    char p1[1024], p2[1024];
    snprintf(p1, sizeof p1, "%s/%s.gguf.inp", dir, name);
    snprintf(p2, sizeof p2, "%s/%s.gguf.out", dir, name);
    size_t li, lo;
    char *inp = tap_read_file(p1, &li), *outp = tap_read_file(p2, &lo);
    if (!inp && !outp)
        return;
    if (!inp || !outp) {
        count(t, tap_ok(0, "%s: both %s and %s are readable", name, p1, p2));
        free(inp);
        free(outp);
        return;
    }
    const char *sep = "\n__ggml_vocab_test__\n";
    size_t sl = strlen(sep);
    static int32_t want[MAX_IDS];
    char *pos = inp, *end = inp + li, *line = outp, *oend = outp + lo;
    int idx = 0;
    bool lines_ok = true;
    while (pos < end) {
        char *m = memmem(pos, (size_t)(end - pos), sep, sl);
        size_t tl = m ? (size_t)(m - pos) : (size_t)(end - pos);
        if (line >= oend) {
            lines_ok = false;
            break;
        }
        char *nl = memchr(line, '\n', (size_t)(oend - line));
        if (!nl)
            nl = oend;
        size_t nw = parse_out_line(line, nl, want);
        char label[300];
        snprintf(label, sizeof label, "%s inp/out case %d", name, idx);
        count(t, check_ids(v, pos, tl, false, want, nw, label));
        check_roundtrip(v, pos, tl, want, nw, label, t);
        idx++;
        line = nl < oend ? nl + 1 : oend;
        if (!m)
            break;
        pos = m + sl;
    }
    if (line < oend && !(line + 1 == oend && *line == '\n'))
        lines_ok = false;
    count(t, tap_ok(lines_ok, "%s: .inp has as many tests as .out has lines (%d)", name, idx));
    free(inp);
    free(outp);
}

static size_t json_ids(json_object *arr, int32_t *out, size_t cap)
{
    size_t n = arr ? json_object_array_length(arr) : 0;
    if (n > cap)
        n = cap;
    for (size_t i = 0; i < n; i++)
        out[i] = json_object_get_int(json_object_array_get_idx(arr, i));
    return n;
}

static void run_jsonl(const vocab_t *v, const char *path, const char *name, tally_t *t)
{
    size_t len;
    char *all = tap_read_file(path, &len);
    if (!all)
        return;
    int rec = 0;
    static int32_t want[MAX_IDS];
    for (char *line = all; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (*line) {
            json_object *o = json_tokener_parse(line);
            json_object *jt = NULL, *ji = NULL, *jp = NULL;
            if (!o || !json_object_object_get_ex(o, "text", &jt) || !json_object_object_get_ex(o, "ids", &ji) ||
                !json_object_object_get_ex(o, "ids_parse_special", &jp)) {
                count(t, tap_ok(0, "%s jsonl record %d has text, ids, ids_parse_special", name, rec));
            } else {
                const char *text = json_object_get_string(jt);
                size_t tl = (size_t)json_object_get_string_len(jt);
                char label[300];
                size_t nw = json_ids(ji, want, MAX_IDS);
                snprintf(label, sizeof label, "%s jsonl record %d ids", name, rec);
                count(t, check_ids(v, text, tl, false, want, nw, label));
                check_roundtrip(v, text, tl, want, nw, label, t);
                nw = json_ids(jp, want, MAX_IDS);
                snprintf(label, sizeof label, "%s jsonl record %d ids_parse_special", name, rec);
                count(t, check_ids(v, text, tl, true, want, nw, label));
                check_roundtrip(v, text, tl, want, nw, label, t);
            }
            json_object_put(o);
            rec++;
        }
        if (!nl)
            break;
        line = nl + 1;
    }
    free(all);
}

static vocab_t *open_vocab(const char *path, const char *name)
{
    lf_err_t err;
    vocab_t *v = vocab_open(path, &err);
    if (!v)
        tap_ok(0, "%s: the vocabulary loads (%s)", name, err.msg);
    return v;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted names in dir ending with suffix (suffix removed); NULL-terminated. */
static char **list_dir(const char *dir, const char *prefix, const char *suffix, size_t *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    size_t cap = 64;
    char **names = malloc(cap * sizeof *names);
    struct dirent *e;
    while (names && (e = readdir(d))) {
        if (!ends_with(e->d_name, suffix) || strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        if (*n + 1 >= cap) {
            char **p = realloc(names, (cap *= 2) * sizeof *names);
            if (!p)
                break;
            names = p;
        }
        names[(*n)++] = strndup(e->d_name, strlen(e->d_name) - strlen(suffix));
    }
    closedir(d);
    if (names)
        qsort(names, *n, sizeof *names, cmp_names);
    return names;
}

static void free_list(char **l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

static void run_vocab(const char *gguf, const char *tdir, const char *name, bool inp_out)
{
    vocab_t *v = open_vocab(gguf, name);
    if (!v)
        return;
    tally_t t = {0};
    if (inp_out)
        run_inp_out(v, tdir, name, &t);
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.jsonl", tdir, name);
    run_jsonl(v, path, name, &t);
    if (t.total == 0)
        tap_ok(0, "%s: has golden cases (.gguf.inp/.out or .jsonl)", name);
    tap_diag("%s (%s, pre-tokenizer %s): %d/%d golden cases pass", name, vocab_model_name(v), vocab_pre_name(v),
             t.pass, t.total);
    vocab_free(v);
}

/* greedy-<model>.jsonl: prompt_tokens = tokenize(prompt, add_special=true,
 * parse_special=true), as llama-server's /tokenize and /completion do. */
static void run_greedy_prompts(const char *gdir, const char *mdir, const char *model)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.gguf", mdir, model);
    vocab_t *v = open_vocab(path, model);
    if (!v)
        return;
    snprintf(path, sizeof path, "%s/greedy-%s.jsonl", gdir, model);
    size_t len;
    char *all = tap_read_file(path, &len);
    if (!all) {
        tap_ok(0, "read %s", path);
        vocab_free(v);
        return;
    }
    int rec = 0;
    static int32_t want[MAX_IDS];
    for (char *line = all; *line; rec++) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        json_object *o = json_tokener_parse(line), *jp = NULL, *jt = NULL;
        if (o && json_object_object_get_ex(o, "prompt", &jp) && json_object_object_get_ex(o, "prompt_tokens", &jt)) {
            int32_t *ids = NULL;
            size_t n = 0, nw = json_ids(jt, want, MAX_IDS);
            lf_err_t err;
            lf_code_t rc = vocab_tokenize(v, json_object_get_string(jp), (size_t)json_object_get_string_len(jp),
                                          true, true, &ids, &n, &err);
            bool ok = rc == LF_OK && n == nw && (n == 0 || memcmp(ids, want, n * sizeof *ids) == 0);
            tap_ok(ok, "greedy-%s prompt %d tokens (add_special, parse_special)", model, rec);
            if (!ok) {
                show_ids("want", want, nw);
                show_ids("got ", ids, n);
            }
            free(ids);
        } else if (*line)
            tap_ok(0, "greedy-%s record %d parses", model, rec);
        json_object_put(o);
        if (!nl)
            break;
        line = nl + 1;
    }
    free(all);
    vocab_free(v);
}

int main(void)
{
    const char *gdir = tap_env_dir("LLM_GOLDEN_DIR", "../shared/golden");
    const char *mdir = tap_env_dir("LLM_MODELS_DIR", "../shared/models");
    char tdir[1024], path[1200];
    snprintf(tdir, sizeof tdir, "%s/tokenizer", gdir);

    size_t ng, nj;
    char **ggufs = list_dir(tdir, "", ".gguf", &ng);
    char **jsonls = list_dir(tdir, "", ".jsonl", &nj);
    tap_ok(ng > 0, "vocabulary GGUFs found in %s", tdir);
    for (size_t i = 0; i < ng; i++) {
        snprintf(path, sizeof path, "%s/%s.gguf", tdir, ggufs[i]);
        run_vocab(path, tdir, ggufs[i], true);
    }
    /* extra strings for model GGUFs that live in the models folder */
    for (size_t i = 0; i < nj; i++) {
        bool has_gguf = false;
        for (size_t k = 0; k < ng && !has_gguf; k++)
            has_gguf = strcmp(ggufs[k], jsonls[i]) == 0;
        if (has_gguf)
            continue;
        snprintf(path, sizeof path, "%s/%s.gguf", mdir, jsonls[i]);
        run_vocab(path, tdir, jsonls[i], false);
    }
    free_list(ggufs, ng);
    free_list(jsonls, nj);

    size_t nm;
    char **greedy = list_dir(gdir, "greedy-", ".jsonl", &nm);
    tap_ok(nm > 0, "greedy goldens found in %s", gdir);
    for (size_t i = 0; i < nm; i++)
        run_greedy_prompts(gdir, mdir, greedy[i] + strlen("greedy-"));
    free_list(greedy, nm);
    return tap_done();
}
