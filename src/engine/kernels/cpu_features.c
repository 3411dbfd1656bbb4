/* cpu_features.c - CPUID/XGETBV reading and the kernel levels' needs
 * (see cpu_features.h).
 *
 * Read directly rather than through __builtin_cpu_supports, so that every
 * level's needs, the OS register state included, are spelled out in one
 * place, and the choice is a pure function tests can drive. */
#include "engine/kernels/cpu_features.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define CPUF_X86 1
#endif

static const struct {
    cpuf_t bit;
    const char *name;
} cpuf_names[] = {
    {CPUF_AVX, "avx"},
    {CPUF_FMA, "fma"},
    {CPUF_F16C, "f16c"},
    {CPUF_AVX2, "avx2"},
    {CPUF_OS_YMM, "os-ymm-state"},
    {CPUF_AVXVNNI, "avxvnni"},
    {CPUF_AVX512F, "avx512f"},
    {CPUF_AVX512DQ, "avx512dq"},
    {CPUF_AVX512BW, "avx512bw"},
    {CPUF_AVX512VL, "avx512vl"},
    {CPUF_AVX512VNNI, "avx512vnni"},
    {CPUF_OS_ZMM, "os-zmm-state"},
};

#define CPUF_NEEDS_AVX2 (CPUF_AVX | CPUF_FMA | CPUF_F16C | CPUF_AVX2 | CPUF_OS_YMM)

/* What each level's code is compiled for (the target pragmas and
 * attributes of kernels_*.c, ggml_exact.c and attn_lanes.c), plus the OS
 * state those registers need. */
static const cpuf_t cpuf_needs[CPUF_LEVEL_COUNT] = {
    [CPUF_LEVEL_SCALAR] = 0,
    [CPUF_LEVEL_AVX2] = CPUF_NEEDS_AVX2,
    [CPUF_LEVEL_AVXVNNI] = CPUF_NEEDS_AVX2 | CPUF_AVXVNNI,
    [CPUF_LEVEL_AVX512] = CPUF_NEEDS_AVX2 | CPUF_AVX512F | CPUF_AVX512DQ | CPUF_AVX512BW | CPUF_AVX512VL |
                          CPUF_AVX512VNNI | CPUF_OS_ZMM,
};

cpuf_t cpuf_level_needs(int level)
{
    return level >= 0 && level < CPUF_LEVEL_COUNT ? cpuf_needs[level] : CPUF_ALL;
}

cpuf_t cpuf_missing(int level, cpuf_t have)
{
    return cpuf_level_needs(level) & ~have;
}

int cpuf_best_level(cpuf_t have)
{
    for (int l = CPUF_LEVEL_COUNT - 1; l > CPUF_LEVEL_SCALAR; l--)
        if (!cpuf_missing(l, have))
            return l;
    return CPUF_LEVEL_SCALAR;
}

const char *cpuf_feature_name(cpuf_t bit)
{
    for (size_t i = 0; i < sizeof cpuf_names / sizeof cpuf_names[0]; i++)
        if (cpuf_names[i].bit == bit)
            return cpuf_names[i].name;
    return NULL;
}

char *cpuf_format(cpuf_t set, char *buf, size_t n)
{
    if (!n)
        return buf;
    buf[0] = '\0';
    size_t len = 0;
    for (size_t i = 0; i < sizeof cpuf_names / sizeof cpuf_names[0]; i++) {
        if (!(set & cpuf_names[i].bit))
            continue;
        int w = snprintf(buf + len, n - len, "%s%s", len ? "," : "", cpuf_names[i].name);
        if (w < 0 || (size_t)w >= n - len)
            break;
        len += (size_t)w;
    }
    return buf;
}

int cpuf_parse(const char *list, cpuf_t *out, char *err, size_t n)
{
    *out = 0;
    const char *p = list;
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && (*p == ' ' || *p == '\t'))
            p++, len--;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len) {
            cpuf_t bit = 0;
            for (size_t i = 0; i < sizeof cpuf_names / sizeof cpuf_names[0] && !bit; i++)
                if (strlen(cpuf_names[i].name) == len && !strncmp(cpuf_names[i].name, p, len))
                    bit = cpuf_names[i].bit;
            if (!bit) {
                if (n)
                    snprintf(err, n, "unknown CPU feature '%.*s'", (int)(len > 40 ? 40 : len), p);
                return -1;
            }
            *out |= bit;
        }
        p = end ? end + 1 : NULL;
    }
    return 0;
}

#ifdef CPUF_X86
static uint64_t cpuf_xgetbv0(void)
{
    uint32_t lo, hi;
    /* xgetbv with ecx = 0 (XCR0); only called when CPUID says OSXSAVE */
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

cpuf_t cpuf_detect_raw(void)
{
    cpuf_t f = 0;
#ifdef CPUF_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return 0;
    const unsigned max_leaf = a;
    __get_cpuid(1, &a, &b, &c, &d);
    if (c & (1u << 28))
        f |= CPUF_AVX;
    if (c & (1u << 12))
        f |= CPUF_FMA;
    if (c & (1u << 29))
        f |= CPUF_F16C;
    if (c & (1u << 27)) { /* OSXSAVE: XGETBV is usable */
        const uint64_t xcr0 = cpuf_xgetbv0();
        if ((xcr0 & 0x6) == 0x6)
            f |= CPUF_OS_YMM;
        if ((xcr0 & 0xe6) == 0xe6)
            f |= CPUF_OS_ZMM;
    }
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        const unsigned max_sub = a;
        if (b & (1u << 5))
            f |= CPUF_AVX2;
        if (b & (1u << 16))
            f |= CPUF_AVX512F;
        if (b & (1u << 17))
            f |= CPUF_AVX512DQ;
        if (b & (1u << 30))
            f |= CPUF_AVX512BW;
        if (b & (1u << 31))
            f |= CPUF_AVX512VL;
        if (c & (1u << 11))
            f |= CPUF_AVX512VNNI;
        if (max_sub >= 1) {
            __cpuid_count(7, 1, a, b, c, d);
            if (a & (1u << 4))
                f |= CPUF_AVXVNNI;
        }
    }
#endif
    return f;
}

cpuf_t cpuf_detect(void)
{
    cpuf_t f = cpuf_detect_raw(), off = 0;
    const char *env = getenv("LLM_FCGI_CPU_DISABLE");
    char err[80];
    if (env && cpuf_parse(env, &off, err, sizeof err) == 0)
        f &= ~off;
    return f;
}
