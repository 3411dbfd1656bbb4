/* cmd_embed.c - `llm-fcgi embed`: embeddings (or rerank scores) of texts on
 * the command line, as JSON, for scripts and for comparison with
 * llama.cpp's llama-embedding.
 *
 * The texts go through the server's path: embed_input.h builds the token
 * sequences, the embedding scheduler (embed_sched.h) evaluates them all in
 * shared forward passes, pool.h normalises.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/embed/embed_input.h"
#include "engine/embed/embed_sched.h"
#include "engine/embed/pool.h"
#include "engine/model/model.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: llm-fcgi embed -m MODEL [OPTIONS] TEXT...\n\n"
            "Prints the embedding of each TEXT as JSON ({\"object\": \"list\", \"data\": [{\"index\",\n"
            "\"embedding\"}...]}). TEXT - reads one text per line from stdin.\n\n"
            "  -m, --model MODEL     GGUF embedding or reranking model\n"
            "  --pooling P           none | mean | cls | last | rank (default: the model's)\n"
            "  --normalize N         -1 none, 0 max-abs (int16 range), 1 taxicab, 2 euclidean\n"
            "                        (default), N > 2 p-norm; never applied to pooling none\n"
            "  --rerank QUERY        score each TEXT as a document for QUERY (pooling rank):\n"
            "                        prints \"score\" instead of \"embedding\"\n"
            "  --tokens              also print each input's token ids\n"
            "  -t, --threads N       engine threads (default: all cores)\n"
            "  -b, --batch N         tokens per forward pass (default 512; also the longest\n"
            "                        input of an encoder model)\n");
}

typedef struct {
    char **s;
    size_t n, cap;
} texts_t;

static bool push_text(texts_t *t, const char *s, size_t len)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **p = realloc(t->s, cap * sizeof *p);
        if (!p)
            return false;
        t->s = p;
        t->cap = cap;
    }
    char *c = malloc(len + 1);
    if (!c)
        return false;
    memcpy(c, s, len);
    c[len] = '\0';
    t->s[t->n++] = c;
    return true;
}

static bool read_lines(texts_t *t)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    bool ok = true;
    while (ok && (n = getline(&line, &cap, stdin)) >= 0) {
        if (n > 0 && line[n - 1] == '\n')
            n--;
        ok = push_text(t, line, (size_t)n);
    }
    free(line);
    return ok;
}

static void print_floats(const float *v, int64_t n)
{
    putchar('[');
    for (int64_t i = 0; i < n; i++)
        printf("%s%.9g", i ? ", " : "", (double)v[i]);
    putchar(']');
}

static int parse_int(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < -1000000 || v > 1000000)
        return -1;
    *out = (int)v;
    return 0;
}

int cmd_embed(int argc, char **argv)
{
    const char *model_path = NULL, *query = NULL, *pooling_name = NULL;
    int normalize = 2, threads = 0, batch = 0;
    bool show_tokens = false;
    texts_t texts = {0};
    int status = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const bool has_val = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && has_val) {
            model_path = argv[++i];
        } else if (!strcmp(a, "--pooling") && has_val) {
            pooling_name = argv[++i];
        } else if (!strcmp(a, "--rerank") && has_val) {
            query = argv[++i];
        } else if (!strcmp(a, "--normalize") && has_val) {
            if (parse_int(argv[++i], &normalize) < 0 || normalize < -1) {
                fprintf(stderr, "llm-fcgi embed: --normalize wants -1, 0, 1, 2 or a larger p\n");
                return 2;
            }
        } else if ((!strcmp(a, "-t") || !strcmp(a, "--threads")) && has_val) {
            if (parse_int(argv[++i], &threads) < 0 || threads < 1) {
                fprintf(stderr, "llm-fcgi embed: --threads wants a positive number\n");
                return 2;
            }
        } else if ((!strcmp(a, "-b") || !strcmp(a, "--batch")) && has_val) {
            if (parse_int(argv[++i], &batch) < 0 || batch < 1 || batch > 65536) {
                fprintf(stderr, "llm-fcgi embed: --batch wants 1 to 65536\n");
                return 2;
            }
        } else if (!strcmp(a, "--tokens")) {
            show_tokens = true;
        } else if (!strcmp(a, "-")) {
            if (!read_lines(&texts))
                goto oom;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "llm-fcgi embed: unknown option or missing value: %s\n", a);
            usage(stderr);
            return 2;
        } else if (!push_text(&texts, a, strlen(a))) {
            goto oom;
        }
    }
    if (!model_path || texts.n == 0) {
        usage(stderr);
        status = 2;
        goto out;
    }
    lf_err_t err = {0};
    model_t *m = model_load(model_path, &err);
    if (!m) {
        fprintf(stderr, "llm-fcgi embed: %s\n", err.msg);
        goto out;
    }
    int pooling = query ? MODEL_POOLING_RANK : pool_default_type(m);
    if (pooling_name && (pooling = pool_type_parse(pooling_name)) < 0) {
        fprintf(stderr, "llm-fcgi embed: unknown pooling '%s' (none, mean, cls, last, rank)\n", pooling_name);
        model_free(m);
        status = 2;
        goto out;
    }
    embed_opts_t eo = {.max_batch = batch, .n_threads = threads, .pooling = pooling};
    embed_sched_t *es = embed_sched_create(m, &eo, &err);
    int32_t **seqs = calloc(texts.n, sizeof *seqs);
    int32_t *lens = calloc(texts.n, sizeof *lens);
    embed_job_t *job = NULL;
    if (!es || !seqs || !lens) {
        fprintf(stderr, "llm-fcgi embed: %s\n", es ? "out of memory" : err.msg);
        goto done;
    }
    for (size_t i = 0; i < texts.n; i++) {
        const char *t = texts.s[i];
        lf_code_t rc = query ? embed_tokens_pair(m, query, strlen(query), t, strlen(t), 0, &seqs[i], &lens[i], &err)
                             : embed_tokens_text(model_vocab(m), t, strlen(t), 0, false, &seqs[i], &lens[i], &err);
        if (rc != LF_OK) {
            fprintf(stderr, "llm-fcgi embed: input %zu: %s\n", i, err.msg);
            goto done;
        }
    }
    job = embed_submit(es, (const int32_t *const *)seqs, lens, (int32_t)texts.n, &err);
    if (!job || (embed_job_wait(job, -1), embed_job_status(job, &err)) != LF_OK) {
        fprintf(stderr, "llm-fcgi embed: %s\n", err.msg);
        goto done;
    }
    printf("{\"object\": \"list\", \"pooling\": \"%s\", \"data\": [", pool_type_name(pooling));
    const int64_t E = model_hparams(m)->n_embd;
    for (size_t i = 0; i < texts.n; i++) {
        int64_t n;
        float *v = embed_job_out(job, (int32_t)i, &n);
        printf("%s\n  {\"object\": \"embedding\", \"index\": %zu, ", i ? "," : "", i);
        if (show_tokens) {
            printf("\"tokens\": [");
            for (int32_t k = 0; k < lens[i]; k++)
                printf("%s%d", k ? ", " : "", seqs[i][k]);
            printf("], ");
        }
        if (pooling == MODEL_POOLING_RANK) {
            printf("\"score\": %.9g}", (double)v[0]);
        } else if (pooling == MODEL_POOLING_NONE) {
            printf("\"embedding\": [");
            for (int64_t r = 0; r < n / E; r++) {
                printf("%s", r ? ", " : "");
                print_floats(v + r * E, E);
            }
            printf("]}");
        } else {
            pool_normalize(v, n, normalize);
            printf("\"embedding\": ");
            print_floats(v, n);
            putchar('}');
        }
    }
    printf("\n]}\n");
    status = 0;
done:
    embed_job_free(job);
    embed_sched_free(es);
    for (size_t i = 0; seqs && i < texts.n; i++)
        free(seqs[i]);
    free(seqs);
    free(lens);
    model_free(m);
out:
    for (size_t i = 0; i < texts.n; i++)
        free(texts.s[i]);
    free(texts.s);
    return status;
oom:
    fprintf(stderr, "llm-fcgi embed: out of memory\n");
    status = 1;
    goto out;
}
