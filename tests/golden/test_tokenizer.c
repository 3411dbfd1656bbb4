/* test_tokenizer.c - every tokenizer golden of ../shared/golden/tokenizer.
 *
 * For each ggml-vocab-*.gguf: every .inp/.out pair (add_special=false,
 * parse_special=false), and every record of <vocab>.jsonl in both modes
 * (`ids`: parse_special=false, `ids_parse_special`: true; never BOS). The
 * two model vocabularies (stories260K, llama-2-tiny-random) come from
 * LLM_MODELS_DIR. One TAP line per case.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/gguf/gguf.h"
#include "engine/vocab/vocab.h"
#include "tap.h"

static void show_ids(const char *what, const int32_t *ids, size_t n)
{
    char line[1024];
    size_t o = 0;
    for (size_t i = 0; i < n && o < sizeof line - 16; i++)
        o += (size_t)snprintf(line + o, sizeof line - o, " %d", ids[i]);
    line[o] = '\0';
    tap_diag("%s:%s", what, line);
}

/* Tokenizes text and compares with want[0..nw). */
static int check(const vocab_t *v, const char *text, size_t len, bool parse_special, const int32_t *want,
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

static void run_inp_out(const vocab_t *v, const char *dir, const char *name, int *pass, int *total)
{
    char p1[1024], p2[1024];
    snprintf(p1, sizeof p1, "%s/tokenizer/%s.gguf.inp", dir, name);
    snprintf(p2, sizeof p2, "%s/tokenizer/%s.gguf.out", dir, name);
    size_t li, lo;
    char *inp = tap_read_file(p1, &li), *outp = tap_read_file(p2, &lo);
    if (!inp || !outp) {
        tap_ok(0, "%s: read %s / %s", name, p1, p2);
        free(inp);
        free(outp);
        return;
    }
    const char *sep = "\n__ggml_vocab_test__\n";
    size_t sl = strlen(sep);
    char *pos = inp, *end = inp + li;
    char *line = outp;
    int idx = 0;
    for (;;) {
        char *m = memmem(pos, (size_t)(end - pos), sep, sl);
        if (!m)
            break;
        char *nl = strchr(line, '\n');
        if (!nl)
            nl = line + strlen(line);
        int32_t want[4096];
        size_t nw = 0;
        for (char *q = line; q < nl && nw < 4096;) {
            while (q < nl && *q == ' ')
                q++;
            if (q >= nl)
                break;
            want[nw++] = (int32_t)strtol(q, &q, 10);
        }
        char label[300];
        snprintf(label, sizeof label, "%s inp/out case %d", name, idx);
        *pass += check(v, pos, (size_t)(m - pos), false, want, nw, label);
        (*total)++;
        idx++;
        pos = m + sl;
        line = *nl ? nl + 1 : nl;
    }
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

static void run_jsonl(const vocab_t *v, const char *path, const char *name, int *pass, int *total)
{
    size_t len;
    char *all = tap_read_file(path, &len);
    if (!all) {
        tap_ok(0, "%s: read %s", name, path);
        return;
    }
    int rec = 0;
    for (char *line = all; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (*line) {
            json_object *o = json_tokener_parse(line);
            json_object *jt = NULL, *ji = NULL, *jp = NULL;
            if (!o || !json_object_object_get_ex(o, "text", &jt)) {
                tap_ok(0, "%s jsonl record %d parses", name, rec);
            } else {
                const char *text = json_object_get_string(jt);
                size_t tl = (size_t)json_object_get_string_len(jt);
                json_object_object_get_ex(o, "ids", &ji);
                json_object_object_get_ex(o, "ids_parse_special", &jp);
                static int32_t want[8192];
                char label[300];
                size_t nw = json_ids(ji, want, 8192);
                snprintf(label, sizeof label, "%s jsonl record %d ids", name, rec);
                *pass += check(v, text, tl, false, want, nw, label);
                nw = json_ids(jp, want, 8192);
                snprintf(label, sizeof label, "%s jsonl record %d ids_parse_special", name, rec);
                *pass += check(v, text, tl, true, want, nw, label);
                *total += 2;
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

/* greedy-<model>.jsonl: prompt_tokens = tokenize(prompt, add_special=true,
 * parse_special=true), as llama-server's /tokenize and /completion do. */
static void run_greedy_prompts(const char *gdir, const char *mdir, const char *model)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.gguf", mdir, model);
    lf_err_t err;
    gguf_file_t *f = gguf_open(path, &err);
    vocab_t *v = f ? vocab_load(f, &err) : NULL;
    gguf_close(f);
    if (!v) {
        tap_ok(0, "%s: load: %s", model, err.msg);
        return;
    }
    snprintf(path, sizeof path, "%s/greedy-%s.jsonl", gdir, model);
    size_t len;
    char *all = tap_read_file(path, &len);
    if (!all) {
        tap_ok(0, "read %s", path);
        vocab_free(v);
        return;
    }
    int rec = 0;
    for (char *line = all; *line; rec++) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        json_object *o = json_tokener_parse(line), *jp = NULL, *jt = NULL;
        if (o && json_object_object_get_ex(o, "prompt", &jp) && json_object_object_get_ex(o, "prompt_tokens", &jt)) {
            int32_t *ids = NULL, want[4096];
            size_t n = 0, nw = json_ids(jt, want, 4096);
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
    static const char *vocabs[] = {"llama-spm", "phi-3", "gpt-2", "deepseek-coder", "deepseek-llm",
                                   "falcon", "mpt", "refact", "starcoder", "bert-bge"};
    static const char *models[] = {"stories260K", "llama-2-tiny-random"};
    char path[1024], name[128];
    for (size_t k = 0; k < sizeof vocabs / sizeof vocabs[0] + 2; k++) {
        bool is_model = k >= sizeof vocabs / sizeof vocabs[0];
        if (is_model) {
            const char *m = models[k - sizeof vocabs / sizeof vocabs[0]];
            snprintf(name, sizeof name, "%s", m);
            snprintf(path, sizeof path, "%s/%s.gguf", mdir, m);
        } else {
            snprintf(name, sizeof name, "ggml-vocab-%s", vocabs[k]);
            snprintf(path, sizeof path, "%s/tokenizer/%s.gguf", gdir, name);
        }
        lf_err_t err;
        gguf_file_t *f = gguf_open(path, &err);
        if (!f) {
            tap_ok(0, "%s: open: %s", name, err.msg);
            continue;
        }
        vocab_t *v = vocab_load(f, &err);
        gguf_close(f);
        if (!v) {
            if (err.code == LF_ERR_UNSUPPORTED) {
                tap_ok(1, "%s # SKIP %s", name, err.msg);
                continue;
            }
            tap_ok(0, "%s: load: %s", name, err.msg);
            continue;
        }
        int pass = 0, total = 0;
        if (!is_model)
            run_inp_out(v, gdir, name, &pass, &total);
        snprintf(path, sizeof path, "%s/tokenizer/%s.jsonl", gdir, name);
        run_jsonl(v, path, name, &pass, &total);
        tap_diag("%s: %d/%d golden cases pass", name, pass, total);
        vocab_free(v);
    }
    static const char *greedy[] = {"stories260K", "llama-2-tiny-random", "tinyqwen2-f16", "tiny256-f32"};
    for (size_t k = 0; k < sizeof greedy / sizeof greedy[0]; k++)
        run_greedy_prompts(gdir, mdir, greedy[k]);
    return tap_done();
}
