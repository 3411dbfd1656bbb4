/* cmd_generate.c - `llm-fcgi generate`: one prompt, one completion, on the
 * command line (for trying a model and for scripts and tests). */
#include <getopt.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/gen_media.h"
#include "engine/model/forward.h"
#include "engine/sample/logprob.h"
#include "engine/model/model.h"
#include "engine/sample/sampler.h"

#define TOP_N 5

static void usage(FILE *out)
{
    fprintf(out,
            "usage: llm-fcgi generate -m MODEL [options] PROMPT\n\n"
            "  -m, --model FILE     GGUF model\n"
            "  -n, --n-predict N    tokens to generate (default 128; stops earlier at end of text)\n"
            "      --temp T         temperature, 0 = greedy (default 0.8)\n"
            "      --top-k K        keep the K most likely tokens, 0 = off (default 40)\n"
            "      --top-p P        nucleus sampling mass (default 0.95)\n"
            "      --min-p P        minimum probability relative to the best (default 0.05)\n"
            "      --seed S         random seed (default: from the clock)\n"
            "  -c, --ctx-size N     context size (default: the model's, at most 4096)\n"
            "  -t, --threads N      compute threads (default: number of cores)\n"
            "      --no-bos         do not add the BOS/EOS tokens the model asks for\n"
            "      --json           print one JSON object: prompt_tokens, tokens, text and\n"
            "                       the top-5 logprobs (raw log-softmax) of every step\n"
            "      --mmproj FILE    vision projector (mmproj GGUF) for --image\n"
            "      --image FILE     an image (PNG, JPEG, WebP); repeatable: each <__media__>\n"
            "                       in the prompt is replaced by the next image (the images\n"
            "                       go first when the prompt has no marker)\n"
            "The prompt is tokenized with special-token parsing, as llama-server does.\n");
}

#define GEN_MAX_IMAGES 64

typedef struct {
    const char *model;
    const char *mmproj;
    const char *images[GEN_MAX_IMAGES];
    int n_images;
    long n_predict, top_k, ctx, threads;
    double temp, top_p, min_p;
    unsigned long long seed;
    int has_seed, no_bos, json;
} gen_opts_t;

static int parse(int argc, char **argv, gen_opts_t *o)
{
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'}, {"n-predict", required_argument, 0, 'n'},
        {"temp", required_argument, 0, 'T'},  {"top-k", required_argument, 0, 'K'},
        {"top-p", required_argument, 0, 'P'}, {"min-p", required_argument, 0, 'M'},
        {"seed", required_argument, 0, 'S'},  {"ctx-size", required_argument, 0, 'c'},
        {"threads", required_argument, 0, 't'}, {"no-bos", no_argument, 0, 'B'},
        {"json", no_argument, 0, 'J'},        {"help", no_argument, 0, 'h'},
        {"mmproj", required_argument, 0, 'V'}, {"image", required_argument, 0, 'I'},
        {0}};
    *o = (gen_opts_t){.n_predict = 128, .top_k = 40, .temp = 0.8, .top_p = 0.95, .min_p = 0.05};
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "m:n:c:t:h", opts, NULL)) != -1) {
        end = NULL;
        switch (c) {
        case 'm': o->model = optarg; break;
        case 'n': o->n_predict = strtol(optarg, &end, 10); break;
        case 'T': o->temp = strtod(optarg, &end); break;
        case 'K': o->top_k = strtol(optarg, &end, 10); break;
        case 'P': o->top_p = strtod(optarg, &end); break;
        case 'M': o->min_p = strtod(optarg, &end); break;
        case 'S': o->seed = strtoull(optarg, &end, 10); o->has_seed = 1; break;
        case 'c': o->ctx = strtol(optarg, &end, 10); break;
        case 't': o->threads = strtol(optarg, &end, 10); break;
        case 'B': o->no_bos = 1; break;
        case 'J': o->json = 1; break;
        case 'V': o->mmproj = optarg; break;
        case 'I':
            if (o->n_images == GEN_MAX_IMAGES) {
                fprintf(stderr, "llm-fcgi generate: at most %d images\n", GEN_MAX_IMAGES);
                return -1;
            }
            o->images[o->n_images++] = optarg;
            break;
        case 'h': usage(stdout); exit(0);
        default: return -1;
        }
        if (end && *end) {
            fprintf(stderr, "llm-fcgi generate: invalid number '%s'\n", optarg);
            return -1;
        }
    }
    if (!o->model || optind != argc - 1 || o->n_predict < 0 || o->ctx < 0 || o->threads < 0) {
        fprintf(stderr, "llm-fcgi generate: need -m MODEL and one PROMPT argument\n");
        return -1;
    }
    if (o->n_images && !o->mmproj) {
        fprintf(stderr, "llm-fcgi generate: --image needs --mmproj\n");
        return -1;
    }
    return 0;
}

static json_object *top_entries(const float *logits, int32_t n_vocab, float *scratch)
{
    logprob_entry_t top[TOP_N];
    json_object *arr = json_object_new_array();
    if (logprob_compute(logits, n_vocab, scratch, NULL) != LF_OK)
        return arr;
    int32_t k = logprob_top(scratch, n_vocab, TOP_N, top);
    for (int32_t i = 0; i < k; i++) {
        json_object *e = json_object_new_object();
        json_object_object_add(e, "id", json_object_new_int(top[i].token));
        json_object_object_add(e, "logprob", json_object_new_double(top[i].logprob));
        json_object_array_add(arr, e);
    }
    return arr;
}

int cmd_generate(int argc, char **argv)
{
    gen_opts_t o;
    if (parse(argc, argv, &o) < 0) {
        usage(stderr);
        return 2;
    }
    const char *prompt = argv[optind];
    lf_err_t err;
    int status = 1;
    model_t *m = model_load(o.model, &err);
    if (!m) {
        fprintf(stderr, "llm-fcgi: %s\n", err.msg);
        return 1;
    }
    const model_hparams_t *hp = model_hparams(m);
    const vocab_t *v = model_vocab(m);
    int32_t n_ctx = (int32_t)(o.ctx ? o.ctx : (hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096));
    fwd_opts_t fo = {.n_seq = 1, .n_ctx = n_ctx, .max_batch = 512, .n_threads = (int32_t)o.threads};
    sampler_params_t sp;
    sampler_params_default(&sp);
    sp.temperature = (float)o.temp;
    sp.top_k = (int32_t)o.top_k;
    sp.top_p = (float)o.top_p;
    sp.min_p = (float)o.min_p;
    sp.has_seed = o.has_seed;
    sp.seed = o.seed;
    int32_t *ids = NULL, *gen = NULL;
    gen_media_t *media = NULL;
    size_t n_ids = 0;
    int32_t n_gen = 0;
    float *scratch = malloc((size_t)hp->n_vocab * sizeof(float));
    json_object *tops = json_object_new_array();
    fwd_t *fw = fwd_create(m, &fo, &err);
    sampler_t *s = fw ? sampler_create(&sp, hp->n_vocab, (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32), &err)
                      : NULL;
    if (!fw || !s || !scratch)
        goto out;
    if (o.mmproj) {
        /* the prompt with its images: ids keeps the text tokens (penalties) */
        if (!(media = gen_media_open(o.mmproj, o.images, o.n_images, m, o.model, prompt, !o.no_bos, &err)))
            goto out;
        int32_t nt;
        const int32_t *tt = gen_media_text_tokens(media, &nt);
        if (!(ids = malloc(((size_t)nt + 1) * sizeof *ids)))
            goto out;
        memcpy(ids, tt, (size_t)nt * sizeof *ids);
        n_ids = (size_t)nt;
    } else if (vocab_tokenize(v, prompt, strlen(prompt), !o.no_bos, true, &ids, &n_ids, &err) != LF_OK)
        goto out;
    const int32_t n_cells = media ? gen_media_n_cells(media) : (int32_t)n_ids;
    if (n_cells == 0) {
        lf_err_set(&err, LF_ERR_INVALID, "the prompt is empty and the model adds no BOS token");
        goto out;
    }
    if ((int64_t)n_cells + o.n_predict > n_ctx) {
        lf_err_set(&err, LF_ERR_CONTEXT, "%d prompt tokens + %ld to generate exceed the context of %d", n_cells,
                   o.n_predict, n_ctx);
        goto out;
    }
    gen = malloc(((size_t)o.n_predict + 1) * sizeof *gen);
    struct timespec t0, t1, t2;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!gen || (media ? gen_media_prefill(media, fw, &err) : fwd_prefill(fw, 0, ids, (int32_t)n_ids, true, &err)) !=
                    LF_OK ||
        sampler_add_prompt(s, ids, (int32_t)n_ids, &err) != LF_OK)
        goto out;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    vocab_detok_t detok;
    vocab_detok_init(&detok, v, false);
    char piece[VOCAB_DETOK_MAX];
    json_object *text = json_object_new_string("");
    struct printbuf *pb = printbuf_new();
    bool failed = false;
    fwd_mm_t next_row = {0};
    if (media)
        gen_media_next_row(media, &next_row);
    for (int32_t pos = n_cells; n_gen < o.n_predict; pos++) {
        const float *logits = fwd_logits(fw, 0);
        int32_t tok;
        if (o.json)
            json_object_array_add(tops, top_entries(logits, hp->n_vocab, scratch));
        if (sampler_sample(s, logits, &tok, &err) != LF_OK || sampler_accept(s, tok, &err) != LF_OK) {
            failed = true;
            break;
        }
        gen[n_gen++] = tok;
        int len = vocab_detok_push(&detok, tok, piece, sizeof piece);
        if (len > 0) {
            printbuf_memappend(pb, piece, len);
            if (!o.json) {
                fwrite(piece, 1, (size_t)len, stdout);
                fflush(stdout);
            }
        }
        if (vocab_is_eog(v, tok) || n_gen == o.n_predict)
            break;
        fwd_tok_t t = {tok, 0, pos, true, false};
        if (fwd_decode_mm(fw, &t, media ? &next_row : NULL, 1, &err) != LF_OK) {
            failed = true;
            break;
        }
    }
    int len = vocab_detok_flush(&detok, piece, sizeof piece);
    if (len > 0) {
        printbuf_memappend(pb, piece, len);
        if (!o.json)
            fwrite(piece, 1, (size_t)len, stdout);
    }
    clock_gettime(CLOCK_MONOTONIC, &t2);
    json_object_set_string_len(text, pb->buf, pb->bpos);
    printbuf_free(pb);
    double pp = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    double tg = (double)(t2.tv_sec - t1.tv_sec) + 1e-9 * (double)(t2.tv_nsec - t1.tv_nsec);
    if (o.json) {
        json_object *out = json_object_new_object(), *pa = json_object_new_array(), *ta = json_object_new_array();
        if (media) {
            json_object_put(pa);
            pa = gen_media_prompt_json(media);
        } else {
            for (size_t i = 0; i < n_ids; i++)
                json_object_array_add(pa, json_object_new_int(ids[i]));
        }
        for (int32_t i = 0; i < n_gen; i++)
            json_object_array_add(ta, json_object_new_int(gen[i]));
        json_object_object_add(out, "prompt_tokens", pa);
        json_object_object_add(out, "tokens", ta);
        json_object_object_add(out, "text", text);
        json_object_object_add(out, "top_logprobs", json_object_get(tops));
        printf("%s\n", json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(out);
    } else {
        json_object_put(text);
        printf("\n");
        fprintf(stderr, "prompt: %d tokens in %.3f s (%.1f t/s); generated: %d tokens in %.3f s (%.1f t/s)\n",
                n_cells, pp, (double)n_cells / pp, n_gen, tg, n_gen > 1 ? (double)(n_gen - 1) / tg : 0.0);
    }
    status = failed;
out:
    if (status)
        fprintf(stderr, "llm-fcgi: %s\n", err.msg);
    json_object_put(tops);
    gen_media_free(media);
    free(gen);
    free(ids);
    free(scratch);
    sampler_free(s);
    fwd_free(fw);
    model_free(m);
    return status;
}
