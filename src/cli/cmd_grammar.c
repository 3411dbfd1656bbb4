/* cmd_grammar.c - `llm-fcgi grammar`: compiles constraints with the grammar
 * engine and checks JSON instances against them, token by token, as a
 * decoder would (MaskBench style). Loads only the vocabulary of the model
 * (a vocabulary-only GGUF is enough).
 *
 *   --json-schema FILE | --regex RE | --gbnf FILE [--print]
 *       compiles one constraint; --print writes its productions/terminals.
 *   --batch CASES.jsonl
 *       each line {"schema": S, "valid": [...], "invalid": [...]} gives one
 *       output line, in order:
 *       {"compiled":bool,"error":"..."(only when not),"compile_us":N,
 *        "valid":[accepted?],"invalid":[accepted?],"mask_us":[...]}
 *       An instance is serialized compactly by json-c (PLAIN|NOSLASHESCAPE),
 *       tokenized without BOS and accepted when every token is in the mask
 *       at its step and end-of-sequence is allowed after the last one.
 *       Everything runs on one thread; compile_us and mask_us (every mask
 *       computed) are CPU times of that thread, in microseconds.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "engine/gguf/gguf.h"
#include "engine/vocab/vocab.h"
#include "grammar/grammar.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: llm-fcgi grammar -m MODEL (--json-schema FILE | --regex RE | --gbnf FILE) [--print]\n"
            "       llm-fcgi grammar -m MODEL --batch CASES.jsonl\n\n"
            "Compiles a constraint with the grammar engine (and prints it with --print), or\n"
            "checks JSON instances against JSON schemas token by token (--batch; one JSON\n"
            "line out per line in, see docs/performance.md).\n\n"
            "  -m, --model MODEL   GGUF file whose vocabulary to use (vocabulary-only files work)\n"
            "  --no-strict         JSON Schema: ignore keywords that cannot be enforced\n"
            "  --compact           JSON output without optional whitespace\n"
            "  --explain           --batch: report on stderr where each instance was rejected\n");
}

/* CPU time of this thread: the machine's other load does not inflate it
 * (on an idle machine it equals the wall-clock time of the one thread). */
static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0)
            break;
        if (n + 1 == cap) {
            char *p = realloc(buf, cap * 2);
            if (!p) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = p;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

typedef struct {
    grammar_engine_t *e;
    const vocab_t *v;
    uint32_t *mask;
    json_object *mask_us;
    bool explain;          /* --explain: where each instance was rejected */
} run_t;

/* Checks one instance; appends mask times. */
static bool check_instance(run_t *r, grammar_t *g, json_object *inst)
{
    const char *text = json_object_to_json_string_ext(inst, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    int32_t *ids = NULL;
    size_t n = 0;
    lf_err_t e = {0};
    if (vocab_tokenize(r->v, text, strlen(text), false, false, &ids, &n, &e) != LF_OK)
        return false;
    grammar_matcher_t *m = grammar_matcher_create(r->e, g, &e);
    bool ok = m != NULL;
    int32_t eos = vocab_eos(r->v);
    for (size_t i = 0; ok && i <= n; i++) {
        double t0 = now_us();
        if (grammar_matcher_mask(m, r->mask, &e) != LF_OK) {
            ok = false;
            break;
        }
        double dt = now_us() - t0;
        json_object_array_add(r->mask_us, json_object_new_double(dt));
        int32_t want = i < n ? ids[i] : eos;
        if (want < 0) { /* no EOS token: any end-of-generation token */
            ok = grammar_matcher_accepting(m);
            break;
        }
        ok = (r->mask[want >> 5] >> (want & 31)) & 1u;
        if (ok && i < n)
            ok = grammar_matcher_accept(m, ids[i]);
        if (!ok && r->explain) {
            size_t off = 0;
            char piece[256];
            for (size_t k = 0; k < i && k < n; k++) {
                int pl = vocab_token_to_piece(r->v, ids[k], false, piece, sizeof piece);
                off += pl > 0 ? (size_t)pl : 0;
            }
            fprintf(stderr, "rejected at byte %zu (%s): %.*s<<HERE>>%.60s\n", off, i < n ? "token" : "end",
                    (int)(off > 300 ? 300 : off), text + (off > 300 ? off - 300 : 0), text + off);
        }
    }
    grammar_matcher_free(m);
    free(ids);
    return ok;
}

static json_object *round_us(double us)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.1f", us);
    return json_object_new_double_s(us, buf);
}

static int run_batch(run_t *r, const char *path, const grammar_opts_t *o)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "llm-fcgi grammar: cannot open %s\n", path);
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0)
            continue;
        json_object *row = json_tokener_parse(line), *out = json_object_new_object();
        json_object *schema = NULL, *valid = NULL, *invalid = NULL;
        if (!row || !json_object_is_type(row, json_type_object) || !json_object_object_get_ex(row, "schema", &schema)) {
            json_object_object_add(out, "compiled", json_object_new_boolean(0));
            json_object_object_add(out, "error", json_object_new_string("the line is not {\"schema\": ...}"));
            json_object_object_add(out, "compile_us", json_object_new_int(0));
            json_object_object_add(out, "valid", json_object_new_array());
            json_object_object_add(out, "invalid", json_object_new_array());
            json_object_object_add(out, "mask_us", json_object_new_array());
            printf("%s\n", json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN));
            json_object_put(out);
            json_object_put(row);
            continue;
        }
        json_object_object_get_ex(row, "valid", &valid);
        json_object_object_get_ex(row, "invalid", &invalid);
        lf_err_t e = {0};
        double t0 = now_us();
        grammar_t *g = grammar_from_schema_object(r->e, schema, o, &e);
        double cus = now_us() - t0;
        json_object_object_add(out, "compiled", json_object_new_boolean(g != NULL));
        if (!g)
            json_object_object_add(out, "error", json_object_new_string(e.msg));
        json_object_object_add(out, "compile_us", json_object_new_int64((int64_t)(cus + 0.5)));
        r->mask_us = json_object_new_array();
        json_object *lists[2] = {valid, invalid};
        const char *names[2] = {"valid", "invalid"};
        for (int k = 0; k < 2; k++) {
            json_object *res = json_object_new_array();
            size_t n = lists[k] && json_object_is_type(lists[k], json_type_array) ? json_object_array_length(lists[k]) : 0;
            for (size_t i = 0; i < n; i++)
                json_object_array_add(res, json_object_new_boolean(g && check_instance(r, g, json_object_array_get_idx(lists[k], i))));
            json_object_object_add(out, names[k], res);
        }
        /* masks as rounded numbers */
        json_object *mu = json_object_new_array();
        for (size_t i = 0; i < json_object_array_length(r->mask_us); i++)
            json_object_array_add(mu, round_us(json_object_get_double(json_object_array_get_idx(r->mask_us, i))));
        json_object_put(r->mask_us);
        json_object_object_add(out, "mask_us", mu);
        printf("%s\n", json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN));
        fflush(stdout);
        grammar_release(g);
        json_object_put(out);
        json_object_put(row);
    }
    free(line);
    fclose(f);
    return 0;
}

int cmd_grammar(int argc, char **argv)
{
    const char *model = NULL, *schema = NULL, *regex = NULL, *gbnf = NULL, *batch = NULL;
    bool print = false, explain = false;
    grammar_opts_t o;
    grammar_opts_default(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **val = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            val = &model;
        } else if (!strcmp(a, "--json-schema")) {
            val = &schema;
        } else if (!strcmp(a, "--regex")) {
            val = &regex;
        } else if (!strcmp(a, "--gbnf")) {
            val = &gbnf;
        } else if (!strcmp(a, "--batch")) {
            val = &batch;
        } else if (!strcmp(a, "--print")) {
            print = true;
        } else if (!strcmp(a, "--no-strict")) {
            o.strict = false;
        } else if (!strcmp(a, "--compact")) {
            o.compact = true;
        } else if (!strcmp(a, "--explain")) {
            explain = true;
        } else {
            fprintf(stderr, "llm-fcgi grammar: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (val) {
            if (++i >= argc) {
                fprintf(stderr, "llm-fcgi grammar: %s needs a value\n", a);
                return 2;
            }
            *val = argv[i];
        }
    }
    int sources = (schema != NULL) + (regex != NULL) + (gbnf != NULL) + (batch != NULL);
    if (!model || sources != 1) {
        fprintf(stderr, "llm-fcgi grammar: need -m MODEL and exactly one of --json-schema, --regex, --gbnf, --batch\n");
        usage(stderr);
        return 2;
    }
    lf_err_t e = {0};
    gguf_file_t *f = gguf_open(model, &e);
    vocab_t *v = f ? vocab_load(f, &e) : NULL;
    grammar_engine_t *eng = v ? grammar_engine_create(v, 0, &e) : NULL;
    if (!eng) {
        fprintf(stderr, "llm-fcgi grammar: %s\n", e.msg);
        vocab_free(v);
        gguf_close(f);
        return 1;
    }
    int rc = 0;
    if (batch) {
        run_t r = {.e = eng, .v = v, .mask = malloc((size_t)grammar_engine_n_words(eng) * sizeof(uint32_t)),
                   .explain = explain};
        rc = r.mask ? run_batch(&r, batch, &o) : 1;
        free(r.mask);
    } else {
        grammar_t *g = NULL;
        size_t len = 0;
        char *text = NULL;
        if (regex) {
            g = grammar_from_regex(eng, regex, strlen(regex), &o, &e);
        } else {
            text = slurp(schema ? schema : gbnf, &len);
            if (!text) {
                fprintf(stderr, "llm-fcgi grammar: cannot read %s\n", schema ? schema : gbnf);
                rc = 1;
            } else if (schema) {
                g = grammar_from_json_schema(eng, text, len, &o, &e);
            } else {
                g = grammar_from_gbnf(eng, text, len, &o, &e);
            }
        }
        if (!g && rc == 0) {
            fprintf(stderr, "llm-fcgi grammar: %s\n", e.msg);
            rc = 1;
        } else if (g) {
            if (print) {
                char *d = grammar_dump(g);
                if (d)
                    fputs(d, stdout);
                free(d);
            } else {
                printf("compiled in %.3f ms\n", grammar_compile_seconds(g) * 1e3);
            }
        }
        grammar_release(g);
        free(text);
    }
    grammar_engine_free(eng);
    vocab_free(v);
    gguf_close(f);
    return rc;
}
