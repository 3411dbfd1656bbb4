/* test_embed_golden.c - every embedding / reranking golden under
 * LLM_GOLDEN_DIR/embed (../shared/golden/embed/README.md), discovered, not
 * listed:
 *  - tokenizer-<vocab>.jsonl: the unigram tokenizer, add_special false,
 *    without and with parse_special (the vocabulary <vocab>.gguf next to
 *    the file, else LLM_MODELS_DIR/<vocab>.gguf);
 *  - embed-<model>[-pooling-<p>].jsonl: the tokens of each input exact, and
 *    its vector: F32 files within 1e-4 (max abs of the L2-normalised
 *    vector, the bar) and 5e-4 raw; Q8_0 files within the README's
 *    tolerance (5e-2 raw, cosine >= 0.999); per-token vectors (pooling
 *    none) within 1e-3 raw;
 *  - rerank-<model>.jsonl: the pair's tokens exact, its score within 1e-3,
 *    and each query group's order.
 * All inputs of a file go to the embedding scheduler as one job, so they
 * share forward passes as a server's would.
 */
#include <dirent.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/embed/embed_input.h"
#include "engine/embed/embed_sched.h"
#include "engine/embed/pool.h"
#include "engine/model/model.h"
#include "tap.h"

static const char *gdir, *mdir;

typedef struct {
    json_object **r;
    int n;
} recs_t;

static recs_t read_jsonl(const char *path)
{
    recs_t out = {0};
    FILE *f = fopen(path, "r");
    if (!f)
        return out;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_object *o = json_tokener_parse(line);
        if (!o)
            continue;
        out.r = realloc(out.r, (size_t)(out.n + 1) * sizeof *out.r);
        out.r[out.n++] = o;
    }
    free(line);
    fclose(f);
    return out;
}

static void recs_free(recs_t *r)
{
    for (int i = 0; i < r->n; i++)
        json_object_put(r->r[i]);
    free(r->r);
}

static const char *str_of(json_object *o, const char *k, size_t *len)
{
    json_object *v;
    if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    if (len)
        *len = (size_t)json_object_get_string_len(v);
    return json_object_get_string(v);
}

static json_object *arr_of(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_array) ? v : NULL;
}

static bool ids_equal(json_object *want, const int32_t *got, int32_t n)
{
    if (!want || (int32_t)json_object_array_length(want) != n)
        return false;
    for (int32_t i = 0; i < n; i++)
        if (json_object_get_int(json_object_array_get_idx(want, (size_t)i)) != got[i])
            return false;
    return true;
}

/* ---- tokenizer ---- */

static void tokenizer_file(const char *file, const char *vocab_name)
{
    char path[1024], vpath[1024];
    snprintf(path, sizeof path, "%s/%s", gdir, file);
    snprintf(vpath, sizeof vpath, "%s/%s.gguf", gdir, vocab_name);
    if (access(vpath, R_OK) != 0)
        snprintf(vpath, sizeof vpath, "%s/%s.gguf", mdir, vocab_name);
    lf_err_t err;
    vocab_t *v = vocab_open(vpath, &err);
    if (!tap_ok(v != NULL, "%s: vocabulary %s loads", file, vocab_name)) {
        tap_diag("%s", err.msg);
        return;
    }
    recs_t rs = read_jsonl(path);
    for (int i = 0; i < rs.n; i++) {
        size_t len;
        const char *text = str_of(rs.r[i], "text", &len);
        for (int ps = 0; ps < 2 && text; ps++) {
            int32_t *ids = NULL;
            size_t n = 0;
            vocab_tokenize(v, text, len, false, ps, &ids, &n, &err);
            json_object *want = arr_of(rs.r[i], ps ? "ids_parse_special" : "ids");
            const bool ok = ids_equal(want, ids, (int32_t)n);
            if (!tap_ok(ok, "%s #%d%s", file, i, ps ? " parse_special" : ""))
                tap_diag("text %.80s: want %s", text, json_object_to_json_string(want));
            free(ids);
        }
    }
    recs_free(&rs);
    vocab_free(v);
}

/* ---- embeddings and rerank ---- */

typedef struct {
    model_t *m;
    embed_sched_t *es;
} engine_t;

static bool engine_open(engine_t *e, const char *model, int pooling)
{
    char path[1024];
    lf_err_t err;
    snprintf(path, sizeof path, "%s/%s", mdir, model);
    e->m = model_load(path, &err);
    if (!e->m) {
        tap_diag("%s", err.msg);
        return false;
    }
    embed_opts_t o = {.n_threads = 2, .pooling = pooling < 0 ? pool_default_type(e->m) : pooling};
    e->es = embed_sched_create(e->m, &o, &err);
    if (!e->es) {
        tap_diag("%s", err.msg);
        model_free(e->m);
        return false;
    }
    return true;
}

static void engine_close(engine_t *e)
{
    embed_sched_free(e->es);
    model_free(e->m);
}

/* Runs all sequences as one job; NULL on failure. */
static embed_job_t *run_all(engine_t *e, int32_t **seqs, int32_t *lens, int n)
{
    lf_err_t err;
    embed_job_t *j = embed_submit(e->es, (const int32_t *const *)seqs, lens, n, &err);
    if (!j || (embed_job_wait(j, -1), embed_job_status(j, &err)) != LF_OK) {
        tap_diag("embedding failed: %s", err.msg);
        embed_job_free(j);
        return NULL;
    }
    return j;
}

static double max_abs_diff(json_object *want, const float *got, int64_t n)
{
    if (!want || (int64_t)json_object_array_length(want) != n)
        return INFINITY;
    double d = 0.0;
    for (int64_t i = 0; i < n; i++)
        d = fmax(d, fabs(json_object_get_double(json_object_array_get_idx(want, (size_t)i)) - (double)got[i]));
    return d;
}

static double cosine(json_object *want, const float *got, int64_t n)
{
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < n; i++) {
        const double a = json_object_get_double(json_object_array_get_idx(want, (size_t)i)), b = got[i];
        ab += a * b, aa += a * a, bb += b * b;
    }
    return ab / sqrt(aa * bb);
}

static void embed_file(const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", gdir, file);
    recs_t rs = read_jsonl(path);
    if (rs.n == 0) {
        tap_ok(0, "%s: records", file);
        return;
    }
    const char *model = str_of(rs.r[0], "model", NULL);
    const char *pp = strstr(file, "-pooling-");
    int pooling = -1;
    if (pp) {
        char name[16];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(pp + 9, "."), pp + 9);
        pooling = pool_type_parse(name);
    }
    const bool q8 = strstr(file, "q8_0") != NULL;
    engine_t e;
    if (!tap_ok(model && engine_open(&e, model, pooling), "%s: model %s loads", file, model ? model : "?")) {
        recs_free(&rs);
        return;
    }
    int32_t **seqs = calloc((size_t)rs.n, sizeof *seqs), *lens = calloc((size_t)rs.n, sizeof *lens);
    bool tok_ok = true;
    for (int i = 0; i < rs.n; i++) {
        size_t len;
        const char *in = str_of(rs.r[i], "input", &len);
        lf_err_t err;
        embed_tokens_text(model_vocab(e.m), in ? in : "", in ? len : 0, 0, false, &seqs[i], &lens[i], &err);
        const bool ok = ids_equal(arr_of(rs.r[i], "tokens"), seqs[i], lens[i]);
        tok_ok &= ok;
        if (!tap_ok(ok, "%s #%d tokens", file, i))
            tap_diag("input %.80s", in ? in : "");
    }
    embed_job_t *j = tok_ok ? run_all(&e, seqs, lens, rs.n) : NULL;
    for (int i = 0; j && i < rs.n; i++) {
        int64_t n;
        float *v = embed_job_out(j, i, &n);
        json_object *per_tok = arr_of(rs.r[i], "token_embeddings");
        if (per_tok) {
            const int64_t E = n / lens[i];
            double d = 0;
            for (int32_t t = 0; t < lens[i]; t++)
                d = fmax(d, max_abs_diff(json_object_array_get_idx(per_tok, (size_t)t), v + t * E, E));
            if (!tap_ok(d <= 1e-3, "%s #%d per-token vectors (max abs %.2g)", file, i, d))
                tap_diag("tolerance 1e-3");
            continue;
        }
        const double raw = max_abs_diff(arr_of(rs.r[i], "embedding"), v, n);
        if (q8) {
            const double c = cosine(arr_of(rs.r[i], "embedding"), v, n);
            tap_ok(raw <= 5e-2 && c >= 0.999, "%s #%d vector (Q8_0: max abs %.2g, cosine %.6f)", file, i, raw, c);
            continue;
        }
        pool_normalize(v, n, 2);
        const double l2 = max_abs_diff(arr_of(rs.r[i], "embedding_l2"), v, n);
        tap_ok(l2 <= 1e-4 && raw <= 5e-4, "%s #%d vector (normalised max abs %.2g, raw %.2g)", file, i, l2, raw);
    }
    embed_job_free(j);
    for (int i = 0; i < rs.n; i++)
        free(seqs[i]);
    free(seqs);
    free(lens);
    engine_close(&e);
    recs_free(&rs);
}

static void rerank_file(const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", gdir, file);
    recs_t rs = read_jsonl(path);
    const char *model = rs.n ? str_of(rs.r[0], "model", NULL) : NULL;
    engine_t e;
    if (!tap_ok(model && engine_open(&e, model, MODEL_POOLING_RANK), "%s: model loads", file)) {
        recs_free(&rs);
        return;
    }
    int32_t **seqs = calloc((size_t)rs.n, sizeof *seqs), *lens = calloc((size_t)rs.n, sizeof *lens);
    bool tok_ok = true;
    for (int i = 0; i < rs.n; i++) {
        size_t ql = 0, dl = 0;
        const char *q = str_of(rs.r[i], "query", &ql), *d = str_of(rs.r[i], "document", &dl);
        lf_err_t err;
        embed_tokens_pair(e.m, q ? q : "", ql, d ? d : "", dl, 0, &seqs[i], &lens[i], &err);
        const bool ok = ids_equal(arr_of(rs.r[i], "tokens"), seqs[i], lens[i]);
        tok_ok &= ok;
        if (!tap_ok(ok, "%s #%d pair tokens", file, i))
            tap_diag("query %.60s document %.60s", q ? q : "", d ? d : "");
    }
    embed_job_t *j = tok_ok ? run_all(&e, seqs, lens, rs.n) : NULL;
    float *score = calloc((size_t)rs.n, sizeof *score);
    for (int i = 0; j && i < rs.n; i++) {
        int64_t n;
        score[i] = embed_job_out(j, i, &n)[0];
        json_object *w;
        json_object_object_get_ex(rs.r[i], "score", &w);
        const double d = fabs(json_object_get_double(w) - (double)score[i]);
        tap_ok(d <= 1e-3, "%s #%d score (diff %.2g)", file, i, d);
    }
    /* the order within each query group */
    for (int i = 0; j && i < rs.n; i++)
        for (int k = i + 1; k < rs.n; k++) {
            json_object *gi, *gk, *si, *sk;
            json_object_object_get_ex(rs.r[i], "group", &gi);
            json_object_object_get_ex(rs.r[k], "group", &gk);
            if (json_object_get_int(gi) != json_object_get_int(gk))
                continue;
            json_object_object_get_ex(rs.r[i], "score", &si);
            json_object_object_get_ex(rs.r[k], "score", &sk);
            const double a = json_object_get_double(si), b = json_object_get_double(sk);
            if (a != b)
                tap_ok((a > b) == (score[i] > score[k]), "%s: order of pairs %d and %d", file, i, k);
        }
    free(score);
    embed_job_free(j);
    for (int i = 0; i < rs.n; i++)
        free(seqs[i]);
    free(seqs);
    free(lens);
    engine_close(&e);
    recs_free(&rs);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(void)
{
    static char g[1024];
    const char *base = getenv("LLM_GOLDEN_DIR");
    mdir = getenv("LLM_MODELS_DIR");
    snprintf(g, sizeof g, "%s/embed", base ? base : "../shared/golden");
    gdir = g;
    if (!mdir)
        mdir = "../shared/models";
    DIR *d = opendir(gdir);
    if (!tap_ok(d != NULL, "golden folder %s", gdir))
        return tap_done();
    char *names[256];
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 256;)
        if (strstr(e->d_name, ".jsonl"))
            names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
        const char *f = names[i];
        char stem[512];
        snprintf(stem, sizeof stem, "%.*s", (int)(strlen(f) - 6), f);
        if (!strncmp(f, "tokenizer-", 10))
            tokenizer_file(f, stem + 10);
        else if (!strncmp(f, "embed-", 6))
            embed_file(f);
        else if (!strncmp(f, "rerank-", 7) && !strstr(f, "-http"))
            rerank_file(f);
        free(names[i]);
    }
    return tap_done();
}
