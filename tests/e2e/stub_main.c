/* stub_main.c - llm-fcgi-stub: `serve` over the stub engine (engine_stub.c),
 * for end-to-end tests of the HTTP layer that do not depend on a model. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "serve")) {
        fprintf(stderr, "usage: llm-fcgi-stub serve [OPTIONS]\n");
        return 2;
    }
    return cmd_serve(argc - 1, argv + 1);
}
