/* cmd_info.c - `llm-fcgi info MODEL`: what a GGUF file holds.
 *
 * A file the engine can run gets the full report. Any other GGUF that holds
 * a vocabulary (a vocabulary-only file, or an architecture the engine does
 * not run) gets the metadata and vocabulary part and a line saying why it is
 * not runnable; that is not an error (exit 0). Files that are not GGUF, are
 * damaged, or hold no vocabulary exit 1 with the loader's message.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/kernels/kernels.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "engine/sched/spec_draft.h"
#include "engine/vision/vision.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: llm-fcgi info [--ctx-size N] [--cache-type-k T] [--cache-type-v T] [--model-draft FILE]\n"
                 "                     MODEL.gguf\n\n"
                 "Prints the architecture, size, vocabulary, special tokens, chat template\n"
                 "presence, tensor types, the longest context the model supports and the KV\n"
                 "cache memory for a context of N tokens (default: the model's training context;\n"
                 "sliding-window layers count their window, not the context) with the cache\n"
                 "types given (default f16; -ctk/-ctv as llama.cpp), and with each type for\n"
                 "comparison. With --model-draft: the draft model serve would\n"
                 "speculate with, and whether it can draft for MODEL (the same vocabulary).\n");
}

static void print_token(const vocab_t *v, const char *label, int32_t id)
{
    if (id < 0)
        printf("  %-18s none\n", label);
    else
        printf("  %-18s %d '%s'\n", label, id, vocab_token_text(v, id));
}

static const char *vocab_kind(const vocab_t *v)
{
    static const struct {
        const char *model, *kind;
    } kinds[] = {{"llama", "SentencePiece BPE"},
                 {"gpt2", "byte-level BPE"},
                 {"gemma4", "SentencePiece-style BPE with merges"},
                 {"bert", "WordPiece"}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(kinds[i].model, vocab_model_name(v)))
            return kinds[i].kind;
    return "unknown kind";
}

/* The vocabulary lines, shared by both reports. */
static void print_vocab(const vocab_t *v)
{
    printf("vocabulary:         %s (%s), %d tokens, pre-tokenizer '%s'\n", vocab_model_name(v), vocab_kind(v),
           vocab_n_tokens(v), vocab_pre_name(v));
    printf("special tokens:\n");
    print_token(v, "bos", vocab_bos(v));
    print_token(v, "eos", vocab_eos(v));
    printf("  %-18s %s / %s\n", "add bos / eos", vocab_add_bos(v) ? "yes" : "no", vocab_add_eos(v) ? "yes" : "no");
    int n_eog = 0;
    for (int32_t id = 0; id < vocab_n_tokens(v); id++)
        n_eog += vocab_is_eog(v, id);
    printf("  %-18s %d\n", "end of generation", n_eog);
}

static void print_meta_str(const gguf_file_t *f, const char *label, const char *key)
{
    gguf_str_t s;
    if (gguf_get_str(f, key, &s))
        printf("%-20s%.*s\n", label, (int)(s.len > 200 ? 200 : s.len), s.ptr);
    else
        printf("%-20s(none)\n", label);
}

/* A GGUF the engine cannot run: what it holds and why it does not run.
 * Returns the exit status. */
static int info_not_runnable(const char *path, const lf_err_t *model_err)
{
    lf_err_t err;
    gguf_file_t *f = gguf_open(path, &err);
    bool tensors_read = f != NULL;
    if (!f)
        f = gguf_open_metadata(path, &err);
    vocab_t *v = f ? vocab_load(f, &err) : NULL;
    if (!v) {
        fprintf(stderr, "llm-fcgi: %s\n", model_err->msg);
        gguf_close(f);
        return 1;
    }
    const char *why = model_err->msg;
    size_t pl = strlen(path);
    if (!strncmp(why, path, pl) && !strncmp(why + pl, ": ", 2))
        why += pl + 2; /* the file is named on the first line already */
    printf("file:               %s (GGUF v%u, %.1f MiB)\n", path, gguf_version(f), (double)gguf_file_size(f) / (1 << 20));
    print_meta_str(f, "architecture:", "general.architecture");
    print_meta_str(f, "name:", "general.name");
    if (tensors_read && gguf_n_tensors(f) == 0)
        printf("runnable:           no (vocabulary-only file: no tensors)\n");
    else
        printf("runnable:           no (%s)\n", why);
    print_vocab(v);
    gguf_str_t tmpl;
    printf("chat template:      %s\n", gguf_get_str(f, "tokenizer.chat_template", &tmpl) ? "present" : "absent");
    if (tensors_read)
        printf("tensors:            %llu\n", (unsigned long long)gguf_n_tensors(f));
    else
        printf("tensors:            not read (%s)\n", err.msg);
    vocab_free(v);
    gguf_close(f);
    return 0;
}

/* The 2026 families: layer kinds, per-layer shapes, recurrent state. */
static void info_hybrid(const model_t *m)
{
    const model_hparams_t *hp = model_hparams(m);
    const model_weights_t *w = model_weights(m);
    if (hp->n_nextn > 0)
        printf("MTP blocks:         %d (nextn: drafts tokens with `serve --spec mtp`)\n", hp->n_nextn);
    if (hp->head_dim_swa != hp->head_dim && hp->n_swa > 0)
        printf("window layers:      head size %d, rope dims %d (full layers: %d, %d)\n", hp->head_dim_swa,
               hp->n_rot_swa, hp->head_dim, hp->n_rot);
    if (hp->n_kv_from < hp->n_layer)
        printf("KV sharing:         layers %d-%d attend earlier layers' caches\n", hp->n_kv_from, hp->n_layer - 1);
    if (hp->n_embd_per_layer > 0)
        printf("per-layer embeddings: %d per layer\n", hp->n_embd_per_layer);
    if (!model_is_hybrid(m))
        return;
    char kinds[1024];
    size_t o = 0;
    for (int l = 0; l < hp->n_layer && o + 2 < sizeof kinds; l++)
        kinds[o++] = w->layers[l].kind == MODEL_LAYER_GDN ? 'D' : w->layers[l].kind == MODEL_LAYER_SHORTCONV ? 'C' : 'A';
    kinds[o] = 0;
    printf("layers by kind:     %s (A attention, D Gated DeltaNet, C short convolution)\n", kinds);
    if (hp->ssm_d_state > 0)
        printf("Gated DeltaNet:     %d v heads / %d q,k heads of %d, conv kernel %d\n", hp->ssm_dt_rank,
               hp->ssm_n_group, hp->ssm_d_state, hp->ssm_d_conv);
    if (hp->shortconv_l > 0)
        printf("short convolution:  kernel %d\n", hp->shortconv_l);
    printf("recurrent state:    %.3f MiB per sequence (F32, every recurrent layer; the prefix cache\n"
           "                    keeps snapshots of it at block boundaries, speculative decoding one\n"
           "                    checkpoint per sequence that rejected drafts go back to)\n",
           (double)model_state_bytes(m) / (1 << 20));
}

int cmd_info(int argc, char **argv)
{
    static const struct option opts[] = {{"ctx-size", required_argument, 0, 'c'},
                                         {"model-draft", required_argument, 0, 'D'},
                                         {"cache-type-k", required_argument, 0, 'k'},
                                         {"cache-type-v", required_argument, 0, 'v'},
                                         {"help", no_argument, 0, 'h'}, {0}};
    long ctx = 0;
    const char *draft = NULL;
    kv_type_t ctk = KV_F16, ctv = KV_F16;
    int c;
    cli_llama_aliases(argc, argv);
    while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'k':
        case 'v':
            if (!kv_type_parse(optarg, c == 'k' ? &ctk : &ctv)) {
                fprintf(stderr, "llm-fcgi: --cache-type-%c takes f16, q8_0 or q4_0\n", c);
                return 2;
            }
            break;
        case 'c': ctx = strtol(optarg, NULL, 10); break;
        case 'D': draft = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc - 1 || ctx < 0) {
        usage(stderr);
        return 2;
    }
    lf_err_t err;
    vis_model_t *vm = vis_model_load(argv[optind], &err);
    if (vm) { /* a vision projector (mmproj, arch clip) */
        char d[512];
        vis_model_describe(vm, d, sizeof d);
        printf("file:               %s\nvision projector:   %s\n", argv[optind], d);
        vis_model_free(vm);
        return 0;
    }
    model_t *m = model_load(argv[optind], &err);
    if (!m)
        return info_not_runnable(argv[optind], &err);
    const model_hparams_t *hp = model_hparams(m);
    const vocab_t *v = model_vocab(m);
    const gguf_file_t *f = model_gguf(m);
    if (!ctx)
        ctx = hp->n_ctx_train;
    printf("file:               %s (GGUF v%u, %.1f MiB)\n", argv[optind], gguf_version(f),
           (double)gguf_file_size(f) / (1 << 20));
    printf("architecture:       %s\n", hp->arch);
    printf("name:               %s\n", hp->name[0] ? hp->name : "(none)");
    printf("parameters:         %llu (%.1f M)\n", (unsigned long long)hp->n_params, (double)hp->n_params / 1e6);
    char why[160];
    const int32_t ctx_max = model_ctx_max(m, why, sizeof why);
    printf("context length:     %d trained; up to %d (%s)\n", hp->n_ctx_train, ctx_max, why);
    printf("layers:             %d, embedding %d, feed-forward %d\n", hp->n_layer, hp->n_embd, hp->n_ff);
    printf("attention heads:    %d (KV heads %d, head size %d, rope dims %d, base %g%s)\n", hp->n_head,
           hp->n_head_kv, hp->head_dim, hp->n_rot, hp->rope_theta, hp->rope_neox ? ", neox" : "");
    printf("rms norm epsilon:   %g\n", hp->rms_eps);
    print_vocab(v);
    printf("chat template:      %s\n", model_chat_template(m) ? "present" : "absent (ChatML will be used)");
    printf("output matrix:      %s\n", model_weights(m)->output_tied ? "tied to token embeddings" : "separate");
    uint64_t bytes[QTYPE_COUNT] = {0}, count[QTYPE_COUNT] = {0};
    for (uint64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor_t *t = gguf_tensor_at(f, i);
        bytes[t->type] += t->size;
        count[t->type]++;
    }
    printf("tensors:            %llu\n", (unsigned long long)gguf_n_tensors(f));
    for (int t = 0; t < QTYPE_COUNT; t++)
        if (count[t])
            printf("  %-8s %5llu tensors %10.2f MiB\n", qtype_name((uint32_t)t), (unsigned long long)count[t],
                   (double)bytes[t] / (1 << 20));
    if (hp->n_expert > 0)
        printf("experts:            %d, %d per token, feed-forward %d each\n", hp->n_expert, hp->n_expert_used,
               hp->n_ff_exp);
    if (hp->n_swa > 0)
        printf("sliding window:     %d positions on %d of %d layers (their rope base %g)\n", hp->n_swa,
               hp->n_layer_swa, hp->n_layer, hp->rope_theta_swa);
    info_hybrid(m);
    /* what one sequence of ctx positions takes (what serve allocates per
     * --parallel slot): sliding-window layers hold their window only */
    const int32_t nc = ctx > (1 << 24) ? 1 << 24 : (int32_t)ctx;
    const fwd_opts_t fo = {.n_seq = 1, .n_ctx = nc, .type_k = ctk, .type_v = ctv};
    lf_err_t kerr;
    if (fwd_check_attn(m, &fo, &kerr) != LF_OK) {
        printf("KV cache:           %s\n", kerr.msg);
    } else {
        const uint64_t kv = fwd_kv_bytes_planned(m, &fo);
        const uint64_t per = kv_bytes_per_position(ctk, ctv, (int64_t)hp->n_head_kv * hp->head_dim) *
                             (uint64_t)hp->n_layer;
        printf("KV cache (K %s, V %s): %.2f MiB for a context of %ld tokens (%llu bytes per token", kv_type_name(ctk),
               kv_type_name(ctv), (double)kv / (1 << 20), ctx, (unsigned long long)per);
        if (hp->n_swa > 0)
            printf("; %.2f MiB if the window were ignored", (double)per * (double)ctx / (1 << 20));
        printf(")%s\n", ctx > ctx_max ? " -- beyond what the model supports" : "");
    }
    printf("  by cache type:   ");
    for (int t = 0; t < KV_TYPE_COUNT; t++) {
        const fwd_opts_t ft = {.n_seq = 1, .n_ctx = nc, .type_k = (kv_type_t)t, .type_v = (kv_type_t)t};
        if (fwd_check_attn(m, &ft, NULL) == LF_OK)
            printf(" %s %.2f MiB%s", kv_type_name((kv_type_t)t), (double)fwd_kv_bytes_planned(m, &ft) / (1 << 20),
                   t + 1 < KV_TYPE_COUNT ? "," : "");
        else
            printf(" %s n/a (head size %d)%s", kv_type_name((kv_type_t)t), hp->head_dim,
                   t + 1 < KV_TYPE_COUNT ? "," : "");
    }
    printf("\n");
    int n_packed;
    size_t pack_bytes;
    model_pack_info(m, &n_packed, &pack_bytes);
    printf("kernels:            %s (%s)\n", kern_isa_name(kern_isa()), kern_isa_reason());
    printf("decode layout:      %d matrices packed (%.2f MiB); %.2f MiB of weights read per decode step\n", n_packed,
           (double)pack_bytes / (1 << 20), (double)model_decode_bytes(m) / (1 << 20));
    int status = 0;
    if (draft) {
        model_t *dm = model_load(draft, &err);
        char why[200];
        if (!dm) {
            printf("draft model:        %s: cannot load: %s\n", draft, err.msg);
            status = 1;
        } else if (!spec_draft_compatible(dm, m, why, sizeof why)) {
            printf("draft model:        %s: cannot draft for this model: %s\n", draft, why);
            status = 1;
        } else {
            const model_hparams_t *dh = model_hparams(dm);
            printf("draft model:        %s (%s, %.1f M parameters, %.2f MiB read per draft step: %.0f%% of a decode "
                   "step); same vocabulary, can draft\n",
                   draft, dh->arch, (double)dh->n_params / 1e6, (double)model_decode_bytes(dm) / (1 << 20),
                   100.0 * (double)model_decode_bytes(dm) / (double)model_decode_bytes(m));
        }
        model_free(dm);
    }
    model_free(m);
    return status;
}
