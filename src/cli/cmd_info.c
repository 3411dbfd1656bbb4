/* cmd_info.c - `llm-fcgi info MODEL`: what a GGUF file holds. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: llm-fcgi info [--ctx-size N] MODEL.gguf\n\n"
                 "Prints the architecture, size, vocabulary, special tokens, chat template\n"
                 "presence, tensor types and the KV cache memory for a context of N tokens\n"
                 "(default: the model's training context; sliding-window layers count their\n"
                 "window, not the context).\n");
}

static void print_token(const vocab_t *v, const char *label, int32_t id)
{
    if (id < 0)
        printf("  %-18s none\n", label);
    else
        printf("  %-18s %d '%s'\n", label, id, vocab_token_text(v, id));
}

int cmd_info(int argc, char **argv)
{
    static const struct option opts[] = {{"ctx-size", required_argument, 0, 'c'}, {"help", no_argument, 0, 'h'}, {0}};
    long ctx = 0;
    int c;
    while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': ctx = strtol(optarg, NULL, 10); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc - 1 || ctx < 0) {
        usage(stderr);
        return 2;
    }
    lf_err_t err;
    model_t *m = model_load(argv[optind], &err);
    if (!m) {
        fprintf(stderr, "llm-fcgi: %s\n", err.msg);
        return 1;
    }
    const model_hparams_t *hp = model_hparams(m);
    const vocab_t *v = model_vocab(m);
    const gguf_file_t *f = model_gguf(m);
    static const char *vtypes[] = {"llama (SentencePiece BPE)", "gpt2 (byte-level BPE)", "bert (WordPiece)"};
    if (!ctx)
        ctx = hp->n_ctx_train;
    printf("file:               %s (GGUF v%u, %.1f MiB)\n", argv[optind], gguf_version(f),
           (double)gguf_file_size(f) / (1 << 20));
    printf("architecture:       %s\n", hp->arch);
    printf("name:               %s\n", hp->name[0] ? hp->name : "(none)");
    printf("parameters:         %llu (%.1f M)\n", (unsigned long long)hp->n_params, (double)hp->n_params / 1e6);
    printf("context length:     %d\n", hp->n_ctx_train);
    printf("layers:             %d, embedding %d, feed-forward %d\n", hp->n_layer, hp->n_embd, hp->n_ff);
    printf("attention heads:    %d (KV heads %d, head size %d, rope dims %d, base %g%s)\n", hp->n_head,
           hp->n_head_kv, hp->head_dim, hp->n_rot, hp->rope_theta, hp->rope_neox ? ", neox" : "");
    printf("rms norm epsilon:   %g\n", hp->rms_eps);
    printf("vocabulary:         %s, %d tokens, pre-tokenizer '%s'\n", vtypes[vocab_type(v)], vocab_n_tokens(v),
           vocab_pre_name(v));
    printf("special tokens:\n");
    print_token(v, "bos", vocab_bos(v));
    print_token(v, "eos", vocab_eos(v));
    printf("  %-18s %s / %s\n", "add bos / eos", vocab_add_bos(v) ? "yes" : "no", vocab_add_eos(v) ? "yes" : "no");
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
    /* what one sequence of ctx positions takes (what serve allocates per
     * --parallel slot): sliding-window layers hold their window only */
    const fwd_opts_t fo = {.n_seq = 1, .n_ctx = ctx > (1 << 24) ? 1 << 24 : (int32_t)ctx};
    const uint64_t kv = fwd_kv_bytes_planned(m, &fo), kv_full = model_kv_bytes_per_token(m) * (uint64_t)ctx;
    printf("KV cache (F16):     %.2f MiB for a context of %ld tokens (%llu bytes per token", (double)kv / (1 << 20),
           ctx, (unsigned long long)model_kv_bytes_per_token(m));
    if (hp->n_swa > 0)
        printf("; %.2f MiB if the window were ignored", (double)kv_full / (1 << 20));
    printf(")\n");
    model_free(m);
    return 0;
}
