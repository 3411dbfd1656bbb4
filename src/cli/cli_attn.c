/* cli_attn.c - the attention and KV cache options shared by serve, bench
 * and generate (cli.h). */
#include <string.h>

#include "cli/cli.h"

bool cli_parse_flash_attn(const char *s, fwd_attn_t *out)
{
    static const struct {
        const char *name;
        fwd_attn_t v;
    } names[] = {{"auto", FWD_ATTN_AUTO}, {"on", FWD_ATTN_FLASH}, {"off", FWD_ATTN_EXACT}};
    for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].name)) {
            *out = names[i].v;
            return true;
        }
    return false;
}

const char *cli_flash_attn_name(fwd_attn_t a)
{
    return a == FWD_ATTN_FLASH ? "on" : a == FWD_ATTN_EXACT ? "off" : "auto";
}

void cli_llama_aliases(int argc, char **argv)
{
    static const char *const map[][2] = {
        {"-fa", "--flash-attn"}, {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"}};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            break;
        for (size_t j = 0; j < sizeof map / sizeof map[0]; j++)
            if (!strcmp(argv[i], map[j][0]))
                argv[i] = (char *)map[j][1];
    }
}
