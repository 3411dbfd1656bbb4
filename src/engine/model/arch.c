/* arch.c - the table of supported architectures. */
#include "engine/model/arch.h"

#include <string.h>

static const arch_desc_t archs[] = {
    /* Llama 2/3.x, TinyLlama, SmolLM/SmolLM2, Mistral-style: interleaved
     * rope pairs, no biases; llama3 rope scaling comes from rope_freqs. */
    {"llama", false, false, 10000.0f, 1e-5f},
    /* Qwen2/2.5: q/k/v biases, NEOX rope, base 1e6 by convention. */
    {"qwen2", true, true, 1000000.0f, 1e-6f},
};

const arch_desc_t *arch_find(const char *name)
{
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (!strcmp(archs[i].name, name))
            return &archs[i];
    return NULL;
}

const char *arch_supported_list(void)
{
    return "llama, qwen2";
}
