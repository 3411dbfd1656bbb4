/* cmd_pull.c - `llm-fcgi pull`: download a GGUF model into the model
 * directory (see src/pull/pull.h). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "pull/pull.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: llm-fcgi pull [OPTIONS] OWNER/NAME[:QUANT] | URL\n"
            "\n"
            "Downloads a GGUF model from a Hugging Face-style hub (or any http(s) URL) into the model\n"
            "directory and prints its path. OWNER/NAME[:QUANT] names a repository and a quantization,\n"
            "e.g. HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q8_0 (without QUANT: the only GGUF, else\n"
            "Q4_K_M, else Q8_0). A partial download is resumed, the file is checked against the hub's\n"
            "SHA-256 and validated as GGUF before it is moved into place; a file already there is not\n"
            "downloaded again. When the repository has a vision projector for the model (a file named\n"
            "mmproj-*.gguf; the F16 one when there are several), it is pulled too, beside the model, and\n"
            "its path printed on a second line (serve it with --mmproj FILE; scripts/run.sh does).\n"
            "\n"
            "Options:\n"
            "      --models-dir DIR   where models go (default $LLM_MODELS_DIR, else\n"
            "                         ~/.cache/llm-fcgi) [LLM_MODELS_DIR]\n"
            "      --sha256 HEX       expected SHA-256 of a URL's file (the hub's is used otherwise)\n"
            "      --force            download again even if the file is there\n"
            "      --no-mmproj        the model only, not the repository's vision projector\n"
            "  -q, --quiet            no progress output\n"
            "  -h, --help             this help\n"
            "\n"
            "Environment: HF_ENDPOINT (the hub, default https://huggingface.co), HF_TOKEN (a token\n"
            "for private or gated repositories).\n"
            "Exit status: 0 the file is there (its path on stdout, then the projector's if any), 1 download\n"
            "or check failed (of the model or of its projector),\n"
            "2 usage error.\n");
}

int cmd_pull(int argc, char **argv)
{
    enum { O_DIR = 256, O_SHA, O_FORCE, O_NOMM };
    static const struct option opts[] = {{"models-dir", required_argument, 0, O_DIR},
                                         {"sha256", required_argument, 0, O_SHA},
                                         {"force", no_argument, 0, O_FORCE},
                                         {"no-mmproj", no_argument, 0, O_NOMM},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    pull_opts_t o = {.progress = pull_progress_for(stderr), .log = stderr};
    int c;
    bool mm = true;
    optind = 1;
    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        switch (c) {
        case O_DIR: o.models_dir = optarg; break;
        case O_SHA: o.sha256 = optarg; break;
        case O_FORCE: o.force = true; break;
        case O_NOMM: mm = false; break;
        case 'q': o.progress = DL_PROGRESS_NONE; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return 2;
    }
    char path[4096] = "", mmproj[4096] = "";
    bool fetched = false;
    lf_err_t err = {0};
    if (pull_model(argv[optind], &o, path, sizeof path, mm ? mmproj : NULL, sizeof mmproj, &fetched, &err) !=
        LF_OK) {
        fprintf(stderr, "llm-fcgi pull: %s\n", err.msg);
        if (err.code != LF_ERR_INVALID && path[0] && !access(path, R_OK))
            fprintf(stderr, "llm-fcgi pull: the model itself is there (%s); --no-mmproj pulls it alone\n", path);
        return err.code == LF_ERR_INVALID ? 2 : 1;
    }
    if (!fetched && o.progress != DL_PROGRESS_NONE)
        fprintf(stderr, "pull: already there: %s%s%s\n", path, mmproj[0] ? ", " : "", mmproj);
    printf("%s\n", path);
    if (mmproj[0])
        printf("%s\n", mmproj);
    return 0;
}
