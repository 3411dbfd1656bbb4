/* cmd_tokenize.c - `llm-fcgi tokenize`: prints the token ids of a text.
 *
 * Loads only the vocabulary of the file (vocab_open: no tensor is read, any
 * architecture, vocabulary-only files included). Output is
 * one "id<TAB>piece" line per token (the piece with control characters and
 * backslashes escaped), or a JSON array of ids with --json.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/vocab/vocab.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: llm-fcgi tokenize -m MODEL [--no-bos] [--parse-special] [--json] TEXT\n\n"
            "Prints the token ids of TEXT (use - to read TEXT from stdin).\n\n"
            "  -m, --model MODEL   GGUF file whose vocabulary to use\n"
            "  --no-bos            do not add BOS/EOS (default: as the model says)\n"
            "  --parse-special     control-token text (e.g. </s>) becomes the control token\n"
            "  --json              print a JSON array of ids instead of id<TAB>piece lines\n");
}

static char *read_stdin(size_t *len)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n, stdin);
        n += r;
        if (r == 0)
            break;
        if (n == cap) {
            char *p = realloc(buf, cap * 2);
            if (!p) {
                free(buf);
                return NULL;
            }
            buf = p;
            cap *= 2;
        }
    }
    *len = n;
    return buf;
}

static void print_piece(const char *s, int n)
{
    for (int i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\')
            fputs("\\\\", stdout);
        else if (c == '\n')
            fputs("\\n", stdout);
        else if (c == '\t')
            fputs("\\t", stdout);
        else if (c == '\r')
            fputs("\\r", stdout);
        else if (c < 0x20 || c == 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
}

int cmd_tokenize(int argc, char **argv)
{
    const char *model = NULL, *text = NULL;
    bool add_special = true, parse_special = false, json = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (++i >= argc) {
                fprintf(stderr, "llm-fcgi tokenize: %s needs a value\n", a);
                return 2;
            }
            model = argv[i];
        } else if (!strcmp(a, "--no-bos"))
            add_special = false;
        else if (!strcmp(a, "--parse-special"))
            parse_special = true;
        else if (!strcmp(a, "--json"))
            json = true;
        else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "llm-fcgi tokenize: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (text) {
            fprintf(stderr, "llm-fcgi tokenize: more than one TEXT given (quote it)\n");
            return 2;
        } else
            text = a;
    }
    if (!model || !text) {
        fprintf(stderr, "llm-fcgi tokenize: %s\n", !model ? "missing -m MODEL" : "missing TEXT");
        usage(stderr);
        return 2;
    }

    lf_err_t err;
    vocab_t *v = vocab_open(model, &err);
    if (!v) {
        fprintf(stderr, "llm-fcgi tokenize: %s\n", err.msg);
        return 1;
    }
    char *owned = NULL;
    size_t len;
    if (!strcmp(text, "-")) {
        owned = read_stdin(&len);
        if (!owned) {
            fprintf(stderr, "llm-fcgi tokenize: cannot read stdin\n");
            vocab_free(v);
            return 1;
        }
        text = owned;
    } else
        len = strlen(text);

    int32_t *ids = NULL;
    size_t n = 0;
    int status = 0;
    if (vocab_tokenize(v, text, len, add_special, parse_special, &ids, &n, &err) != LF_OK) {
        fprintf(stderr, "llm-fcgi tokenize: %s\n", err.msg);
        status = 1;
    } else if (json) {
        putchar('[');
        for (size_t i = 0; i < n; i++)
            printf(i ? ", %d" : "%d", ids[i]);
        puts("]");
    } else {
        char piece[512];
        for (size_t i = 0; i < n; i++) {
            int pl = vocab_token_to_piece(v, ids[i], true, piece, sizeof piece);
            if (pl > (int)sizeof piece)
                pl = (int)sizeof piece;
            printf("%d\t", ids[i]);
            if (pl > 0)
                print_piece(piece, pl);
            putchar('\n');
        }
    }
    free(ids);
    free(owned);
    vocab_free(v);
    if (fflush(stdout) != 0)
        status = 1;
    return status;
}
