/* main.c - the llm-fcgi binary: dispatches to a subcommand. */
#include "cli/cli.h"
#include "engine/kernels/kernels.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    bool kernels; /* runs the engine: refused when the kernel level asked for cannot run */
} command_t;

/* Keep this table sorted by the order a new user meets the commands. */
static const command_t commands[] = {
    {"serve", cmd_serve, "serve the OpenAI-compatible API over FastCGI (behind nginx)", true},
    {"pull", cmd_pull, "download a GGUF model from a Hugging Face-style hub or a URL", false},
    {"info", cmd_info, "describe a GGUF model (architecture, vocabulary, tensors, KV memory)", true},
    {"tokenize", cmd_tokenize, "print the token ids of a text", false},
    {"embed", cmd_embed, "print the embeddings (or rerank scores) of texts as JSON", true},
    {"generate", cmd_generate, "generate a completion of a prompt on the command line", true},
    {"chat-template", cmd_chat_template, "render a chat request's prompt with a model's chat template", false},
    {"bench", cmd_bench, "measure prompt-processing and generation speed", true},
    {"grammar", cmd_grammar, "compile a JSON schema / regex / GBNF constraint and check instances (MaskBench style)", false},
    {"help", NULL, "list the subcommands", false},
};

static int print_help(FILE *out)
{
    fprintf(out,
            "usage: llm-fcgi COMMAND [OPTIONS]\n\n"
            "An OpenAI-compatible LLM inference server for nginx (FastCGI).\n\n"
            "Commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-14s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun `llm-fcgi COMMAND --help` for the options of a command.\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_help(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (!strcmp(name, "help") || !strcmp(name, "--help") || !strcmp(name, "-h"))
        return print_help(stdout);
    if (!strcmp(name, "--version")) {
        printf("llm-fcgi %s\n", PACKAGE_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (commands[i].run && !strcmp(name, commands[i].name)) {
            /* LLM_FCGI_ISA naming a level this CPU cannot run (or a bad
             * LLM_FCGI_CPU_DISABLE) is refused before anything loads, not
             * at the first request */
            const char *isa_err = commands[i].kernels ? kern_isa_error() : NULL;
            if (isa_err) {
                fprintf(stderr, "llm-fcgi: %s\n", isa_err);
                return 2;
            }
            return commands[i].run(argc - 1, argv + 1);
        }
    fprintf(stderr, "llm-fcgi: unknown command '%s' (try `llm-fcgi help`)\n", name);
    return 2;
}
