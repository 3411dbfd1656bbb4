/* cmd_bench.c - `llm-fcgi bench`: prompt-processing and generation speed,
 * measured like llama-bench (random tokens, empty cache before each run, one
 * warm-up run, mean and standard deviation over the repetitions). */
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "engine/model/forward.h"
#include "engine/sched/spec.h"
#include "engine/kernels/kernels.h"
#include "engine/model/model.h"
#include "cli/membw.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: llm-fcgi bench -m MODEL [-t THREADS] [-p N] [-n N] [-d N] [-r REPS] [--batch B] [--json]\n"
            "       llm-fcgi bench --mmproj FILE --image FILE [-t THREADS] [-r REPS] [--warmup N] [--json]\n\n"
            "  -p N       prompt tokens processed as one batch (pp N; default 512, 0 = skip)\n"
            "  -n N       tokens generated one step at a time (tg N; default 128, 0 = skip)\n"
            "  -d N, --depth N  both measured after N tokens of context already in the cache\n"
            "             (as llama-bench -d: the context is filled first, untimed)\n"
            "  -fa, --flash-attn auto|on|off   attention as for serve (default auto)\n"
            "  -ctk, --cache-type-k T, -ctv, --cache-type-v T   KV cache types f16|q8_0|q4_0\n"
            "  -r REPS    repetitions (default 5); mean and standard deviation are printed\n"
            "  -t N       compute threads (default: number of cores)\n"
            "  --batch B  B sequences decode together (one token each per step); tg reports\n"
            "             the aggregate tokens/s (default 1)\n"
            "  --prefix N prefix-cache case: time to the first token of an N-token prompt\n"
            "             computed from scratch and with its first N-16 tokens cached\n"
            "  --json     one JSON object with pp_tokens_per_s and tg_tokens_per_s\n"
            "  --spec M   speculative decoding through the scheduler, greedy from random prompts:\n"
            "             tg N with and without it, runs alternating, --batch streams at once; M is\n"
            "             predict (each output as its prediction), edit (the output with its middle\n"
            "             tenth replaced), unrelated (a prediction that never matches), ngram,\n"
            "             draft (with --model-draft FILE) or mtp (the model's MTP block)\n"
            "  --spec-text  predictions as text tokenized back (as the API does), not the tokens\n"
            "  --spec-draft-max K, --spec-row-cost F   as for serve (default 16, measured)\n"
            "  --mmproj FILE --image FILE  the vision encoder alone: time to encode the image (all its\n"
            "             pixel arrays; --warmup N unmeasured runs (default 1), then REPS runs, wall\n"
            "             clock), as llama-mtmd-cli reports its image encode time; no text model needed\n");
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static unsigned long long rng_state = 88172645463325252ull;
static int32_t rand_token(int32_t n_vocab)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (int32_t)(rng_state % (unsigned long long)n_vocab);
}

/* Brings sequence seq to `depth` positions of context (bench -d): random
 * tokens after BOS, untimed. Kept between runs (truncated back to it)
 * where the model allows, refilled otherwise. */
static lf_code_t to_depth(fwd_t *fw, int32_t seq, int32_t depth, int32_t n_vocab, int32_t bos, lf_err_t *err)
{
    if (depth > 0 && fwd_can_truncate(fw) && fwd_seq_len(fw, seq) >= depth)
        return fwd_seq_truncate(fw, seq, depth, err);
    fwd_seq_rm(fw, seq);
    if (depth <= 0)
        return LF_OK;
    int32_t *t = malloc((size_t)depth * sizeof *t);
    if (!t)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; i < depth; i++)
        t[i] = i == 0 && bos >= 0 ? bos : rand_token(n_vocab);
    lf_code_t rc = fwd_prefill(fw, seq, t, depth, false, err);
    free(t);
    return rc;
}

/* One pp run: n random tokens in batches of max_batch after `depth`
 * positions of context, logits of the last. */
static lf_code_t run_pp(fwd_t *fw, int32_t n, int32_t depth, int32_t n_vocab, int32_t bos, int32_t *toks,
                        lf_err_t *err)
{
    lf_code_t rc = to_depth(fw, 0, depth, n_vocab, bos, err);
    if (rc != LF_OK)
        return rc;
    for (int32_t i = 0; i < n; i++)
        toks[i] = rand_token(n_vocab);
    return fwd_prefill(fw, 0, toks, n, true, err);
}

/* One tg run: n steps, each one token per sequence for B sequences, after
 * `depth` positions of context (to_depth must have run: untimed). */
static lf_code_t run_tg(fwd_t *fw, int32_t n, int32_t B, int32_t depth, int32_t n_vocab, int32_t bos,
                        fwd_tok_t *batch, lf_err_t *err)
{
    for (int32_t i = 0; i < n; i++) {
        for (int32_t s = 0; s < B; s++)
            batch[s] = (fwd_tok_t){i == 0 && depth == 0 && bos >= 0 ? bos : rand_token(n_vocab), s, depth + i,
                                   true, false};
        lf_code_t rc = fwd_decode(fw, batch, B, err);
        if (rc != LF_OK)
            return rc;
    }
    return LF_OK;
}

/* Prefix-cache case: best-of-reps time to the logits of an n-token prompt,
 * computed whole (seq 0) and with its registered prefix reused (seq 1). */
static lf_code_t run_prefix(fwd_t *fw, int32_t n, int32_t n_vocab, int reps, double *uncached_ms,
                            double *cached_ms, lf_err_t *err)
{
    int32_t *toks = malloc((size_t)n * sizeof *toks);
    double best_u = 1e30, best_c = 1e30;
    lf_code_t rc = toks ? LF_OK : lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; rc == LF_OK && i < n; i++)
        toks[i] = rand_token(n_vocab);
    for (int r = 0; rc == LF_OK && r < reps; r++) {
        fwd_seq_rm(fw, 0);
        fwd_seq_rm(fw, 1);
        double t0 = now();
        rc = fwd_prefill(fw, 0, toks, n, true, err);
        double t1 = now();
        if (rc != LF_OK)
            break;
        fwd_seq_commit(fw, 0, toks, n);
        double t2 = now();
        int32_t reused = fwd_seq_attach_prefix(fw, 1, toks, n);
        rc = fwd_prefill(fw, 1, toks + reused, n - reused, true, err);
        double t3 = now();
        if (t1 - t0 < best_u)
            best_u = t1 - t0;
        if (t3 - t2 < best_c)
            best_c = t3 - t2;
    }
    free(toks);
    *uncached_ms = best_u * 1e3;
    *cached_ms = best_c * 1e3;
    return rc;
}

void bench_mean_sd(const double *v, int n, double *mean, double *sd)
{
    double s = 0, q = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    *mean = s / n;
    for (int i = 0; i < n; i++)
        q += (v[i] - *mean) * (v[i] - *mean);
    *sd = n > 1 ? sqrt(q / (n - 1)) : 0;
}

int cmd_bench(int argc, char **argv)
{
    static const struct option opts[] = {{"model", required_argument, 0, 'm'}, {"threads", required_argument, 0, 't'},
                                         {"batch", required_argument, 0, 'B'}, {"json", no_argument, 0, 'J'},
                                         {"prefix", required_argument, 0, 'X'},
                                         {"spec", required_argument, 0, 'S'},
                                         {"spec-draft-max", required_argument, 0, 'K'},
                                         {"spec-row-cost", required_argument, 0, 'C'},
                                         {"model-draft", required_argument, 0, 'D'},
                                         {"spec-text", no_argument, 0, 'T'},
                                         {"depth", required_argument, 0, 'd'},
                                         {"flash-attn", required_argument, 0, 'F'},
                                         {"cache-type-k", required_argument, 0, 'k'},
                                         {"cache-type-v", required_argument, 0, 'v'},
                                         {"mmproj", required_argument, 0, 'V'},
                                         {"image", required_argument, 0, 'I'},
                                         {"warmup", required_argument, 0, 'W'},
                                         {"help", no_argument, 0, 'h'}, {0}};
    const char *path = NULL;
    long threads = 0, pp = 512, tg = 128, reps = 5, B = 1, prefix = 0, depth = 0;
    fwd_attn_t attn = FWD_ATTN_AUTO;
    kv_type_t ctk = KV_F16, ctv = KV_F16;
    int json = 0, c;
    const char *spec = NULL, *draft = NULL;
    long spec_k = 0;
    double spec_cost = 0;
    int spec_text = 0;
    const char *mmproj = NULL, *image = NULL;
    long warmup = 1;
    cli_llama_aliases(argc, argv);
    while ((c = getopt_long(argc, argv, "m:t:p:n:r:d:h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': depth = strtol(optarg, NULL, 10); break;
        case 'F':
            if (!cli_parse_flash_attn(optarg, &attn)) {
                fprintf(stderr, "llm-fcgi: --flash-attn takes auto, on or off\n");
                return 2;
            }
            break;
        case 'k':
        case 'v':
            if (!kv_type_parse(optarg, c == 'k' ? &ctk : &ctv)) {
                fprintf(stderr, "llm-fcgi: --cache-type-%c takes f16, q8_0 or q4_0\n", c);
                return 2;
            }
            break;
        case 'm': path = optarg; break;
        case 't': threads = strtol(optarg, NULL, 10); break;
        case 'p': pp = strtol(optarg, NULL, 10); break;
        case 'n': tg = strtol(optarg, NULL, 10); break;
        case 'r': reps = strtol(optarg, NULL, 10); break;
        case 'B': B = strtol(optarg, NULL, 10); break;
        case 'X': prefix = strtol(optarg, NULL, 10); break;
        case 'J': json = 1; break;
        case 'S': spec = optarg; break;
        case 'K': spec_k = strtol(optarg, NULL, 10); break;
        case 'C': spec_cost = strtod(optarg, NULL); break;
        case 'D': draft = optarg; break;
        case 'T': spec_text = 1; break;
        case 'V': mmproj = optarg; break;
        case 'I': image = optarg; break;
        case 'W': warmup = strtol(optarg, NULL, 10); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (mmproj || image) {
        if (!mmproj || !image || path || optind != argc || reps < 1 || reps > 1000 || threads < 0 || warmup < 0 ||
            warmup > 100) {
            usage(stderr);
            return 2;
        }
        return bench_vision(mmproj, image, (int32_t)threads, (int32_t)reps, (int32_t)warmup, json);
    }
    if (!path || optind != argc || pp < 0 || tg < 0 || reps < 1 || reps > 1000 || B < 1 || B > 256 ||
        threads < 0 || pp > 65536 || tg > 65536 || prefix < 0 || prefix > 65536 || (prefix && prefix < 32) ||
        depth < 0 || depth > (1 << 20)) {
        usage(stderr);
        return 2;
    }
    if (spec) {
        if (spec_k < 0 || spec_k > SPEC_K_MAX || spec_cost < 0) {
            usage(stderr);
            return 2;
        }
        return bench_spec(path, spec, draft, (int32_t)threads, (int32_t)tg, (int32_t)reps, (int32_t)B, (int32_t)spec_k,
                          spec_cost, spec_text, json);
    }
    lf_err_t err;
    model_t *m = model_load(path, &err);
    if (!m) {
        fprintf(stderr, "llm-fcgi: %s\n", err.msg);
        return 1;
    }
    const model_hparams_t *hp = model_hparams(m);
    int32_t n_ctx = (int32_t)depth + (int32_t)(pp > tg ? pp : tg) + 1;
    if (prefix + 1 > n_ctx)
        n_ctx = (int32_t)prefix + 1;
    int32_t max_batch = (int32_t)(pp > B ? (pp < 512 ? pp : 512) : B);
    /* the untimed depth fill is a prompt: batches of up to 512 tokens, not
     * one decode step per position */
    if (depth > max_batch)
        max_batch = depth < 512 ? (int32_t)depth : 512;
    if (max_batch < 1)
        max_batch = 1;
    fwd_opts_t fo = {.n_seq = (int32_t)(B > 2 ? B : 2), .n_ctx = n_ctx, .max_batch = max_batch,
                     .n_threads = (int32_t)threads, .attn = attn, .type_k = ctk, .type_v = ctv};
    fwd_t *fw = fwd_create(m, &fo, &err);
    int32_t *toks = malloc((size_t)(pp + 1) * sizeof *toks);
    fwd_tok_t *batch = malloc((size_t)B * sizeof *batch);
    double *pp_ts = calloc((size_t)reps, sizeof(double)), *tg_ts = calloc((size_t)reps, sizeof(double));
    int status = 1;
    if (!fw || !toks || !batch || !pp_ts || !tg_ts)
        goto out;
    uint64_t tg_runs = 0, tg_wait_ns = 0;
    double tg_secs = 0;
    int32_t bos = vocab_add_bos(model_vocab(m)) ? vocab_bos(model_vocab(m)) : -1;
    const int32_t D = (int32_t)depth;
    /* warm-up: touch every weight page once (and fill the depth) */
    if ((pp && run_pp(fw, (int32_t)(pp < 16 ? pp : 16), D, hp->n_vocab, bos, toks, &err) != LF_OK))
        goto out;
    for (int32_t s = 0; tg && s < B; s++)
        if (to_depth(fw, s, D, hp->n_vocab, bos, &err) != LF_OK)
            goto out;
    if (tg && run_tg(fw, 2, (int32_t)B, D, hp->n_vocab, bos, batch, &err) != LF_OK)
        goto out;
    for (long r = 0; r < reps; r++) {
        double t0 = now();
        if (pp && run_pp(fw, (int32_t)pp, D, hp->n_vocab, bos, toks, &err) != LF_OK)
            goto out;
        const double t1 = now();
        /* untimed: back to the depth */
        for (int32_t s = 0; tg && s < B; s++)
            if (to_depth(fw, s, D, hp->n_vocab, bos, &err) != LF_OK)
                goto out;
        uint64_t runs, wait_ns;
        tpool_stats(fwd_pool(fw), &runs, &wait_ns, true);
        const double t1b = now();
        if (tg && run_tg(fw, (int32_t)tg, (int32_t)B, D, hp->n_vocab, bos, batch, &err) != LF_OK)
            goto out;
        double t2 = now();
        tpool_stats(fwd_pool(fw), &runs, &wait_ns, true);
        tg_runs += runs;
        tg_wait_ns += wait_ns;
        tg_secs += t2 - t1b;
        pp_ts[r] = pp ? (double)pp / (t1 - t0) : 0;
        tg_ts[r] = tg ? (double)(tg * B) / (t2 - t1b) : 0;
    }
    double ppm, pps, tgm, tgs, unc_ms = 0, cac_ms = 0;
    bench_mean_sd(pp_ts, (int)reps, &ppm, &pps);
    bench_mean_sd(tg_ts, (int)reps, &tgm, &tgs);
    if (prefix && run_prefix(fw, (int32_t)prefix, hp->n_vocab, (int)reps, &unc_ms, &cac_ms, &err) != LF_OK)
        goto out;
    const char *isa = kern_isa_name(kern_isa());
    /* decode against the memory ceiling: weight bytes per step / step time */
    double step_bytes = (double)model_decode_bytes(m);
    long bw_threads = threads > 0 ? threads : sysconf(_SC_NPROCESSORS_ONLN);
    double bw = tg ? membw_read(bw_threads > 0 ? (int)bw_threads : 1) : 0;
    double tg_bw = step_bytes * tgm / (double)B; /* one step reads the weights once for all B */
    int n_packed;
    size_t pack_bytes;
    model_pack_info(m, &n_packed, &pack_bytes);
    char at_depth[32] = "";
    if (depth)
        snprintf(at_depth, sizeof at_depth, " @ d%ld", depth);
    if (json) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "depth", json_object_new_int((int)depth));
        json_object_object_add(o, "flash_attn", json_object_new_string(cli_flash_attn_name(attn)));
        json_object_object_add(o, "cache_type_k", json_object_new_string(kv_type_name(ctk)));
        json_object_object_add(o, "cache_type_v", json_object_new_string(kv_type_name(ctv)));
        json_object_object_add(o, "kv_bytes", json_object_new_int64((int64_t)fwd_kv_bytes(fw)));
        json_object_object_add(o, "model", json_object_new_string(path));
        json_object_object_add(o, "threads", json_object_new_int((int)(threads ? threads : 0)));
        json_object_object_add(o, "isa", json_object_new_string(isa));
        json_object_object_add(o, "batch", json_object_new_int((int)B));
        json_object_object_add(o, "n_prompt", json_object_new_int((int)pp));
        json_object_object_add(o, "n_gen", json_object_new_int((int)tg));
        json_object_object_add(o, "repetitions", json_object_new_int((int)reps));
        json_object_object_add(o, "pp_tokens_per_s", json_object_new_double(ppm));
        json_object_object_add(o, "pp_stddev", json_object_new_double(pps));
        json_object_object_add(o, "tg_tokens_per_s", json_object_new_double(tgm));
        json_object_object_add(o, "tg_stddev", json_object_new_double(tgs));
        json_object_object_add(o, "decode_bytes_per_step", json_object_new_int64((int64_t)step_bytes));
        if (tg) {
            json_object_object_add(o, "tg_read_bytes_per_s", json_object_new_double(tg_bw));
            json_object_object_add(o, "memory_read_bytes_per_s", json_object_new_double(bw));
            json_object_object_add(o, "tg_percent_of_memory_bw", json_object_new_double(bw > 0 ? 100 * tg_bw / bw : 0));
        }
        if (tg && tg_secs > 0) {
            json_object_object_add(o, "tg_pool_runs_per_step", json_object_new_double((double)tg_runs / (double)(tg * reps)));
            json_object_object_add(o, "tg_wait_share", json_object_new_double(1e-9 * (double)tg_wait_ns / tg_secs));
        }
        json_object_object_add(o, "packed_matrices", json_object_new_int(n_packed));
        json_object_object_add(o, "packed_bytes", json_object_new_int64((int64_t)pack_bytes));
        if (prefix) {
            json_object_object_add(o, "prefix_tokens", json_object_new_int((int)prefix));
            json_object_object_add(o, "prefix_uncached_ms", json_object_new_double(unc_ms));
            json_object_object_add(o, "prefix_cached_ms", json_object_new_double(cac_ms));
        }
        printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
    } else {
        printf("| model | params | isa | threads | batch | test | t/s |\n|---|---|---|---|---|---|---|\n");
        if (pp)
            printf("| %s | %.2f M | %s | %ld | 1 | pp%ld%s | %.2f ± %.2f |\n", hp->name[0] ? hp->name : hp->arch,
                   (double)hp->n_params / 1e6, isa, threads, pp, at_depth, ppm, pps);
        if (tg)
            printf("| %s | %.2f M | %s | %ld | %ld | tg%ld%s | %.2f ± %.2f |\n", hp->name[0] ? hp->name : hp->arch,
                   (double)hp->n_params / 1e6, isa, threads, B, tg, at_depth, tgm, tgs);
        printf("\nattention: flash-attn %s, KV cache K %s V %s, %.1f MiB for %d positions x %d sequences\n",
               cli_flash_attn_name(attn), kv_type_name(ctk), kv_type_name(ctv), (double)fwd_kv_bytes(fw) / 1048576.0,
               n_ctx, fo.n_seq);
        printf("\nkernels: %s (%s); %d matrices packed for decode (%.1f MiB)\n", isa, kern_isa_reason(), n_packed,
               (double)pack_bytes / 1048576.0);
        if (tg && tg_secs > 0)
            printf("hand-offs: %.0f pool runs per decode step, %.1f us waiting for the other threads per step "
                   "(%.1f%% of the step)\n",
                   (double)tg_runs / (double)(tg * reps), 1e-3 * (double)tg_wait_ns / (double)(tg * reps),
                   100.0 * 1e-9 * (double)tg_wait_ns / tg_secs);
        if (tg && bw > 0)
            printf("decode: %.1f MiB of weights per step, %.2f GB/s at tg (%.0f%% of the %.2f GB/s this machine "
                   "reads with %ld thread%s)\n",
                   step_bytes / 1048576.0, tg_bw / 1e9, 100 * tg_bw / bw, bw / 1e9, bw_threads,
                   bw_threads == 1 ? "" : "s");
        if (prefix)
            printf("\nprefix cache, %ld-token prompt: first token after %.2f ms uncached, %.2f ms with %ld "
                   "tokens cached (%.3fx)\n",
                   prefix, unc_ms, cac_ms, (prefix - 1) / FWD_KV_BLOCK_TOKENS * FWD_KV_BLOCK_TOKENS, cac_ms / unc_ms);
    }
    status = 0;
out:
    if (status)
        fprintf(stderr, "llm-fcgi: %s\n", err.msg);
    free(pp_ts);
    free(tg_ts);
    free(toks);
    free(batch);
    fwd_free(fw);
    model_free(m);
    return status;
}
