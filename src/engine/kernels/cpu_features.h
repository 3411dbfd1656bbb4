/* cpu_features.h - what the CPU and the operating system let the kernels
 * use, and which kernel level each set of features can run.
 *
 * A feature counts only when the CPU reports it (CPUID) AND the operating
 * system saves the registers it needs (XGETBV: XCR0 has the YMM state for
 * AVX/AVX2/AVX-VNNI, the opmask and ZMM states for AVX-512), so a kernel
 * level is never chosen that would fault on a CPU whose OS or hypervisor
 * hides the state.
 *
 * The levels are not a chain: AVX-VNNI (the VEX vpdpbusd) is missing on
 * every Intel Xeon before Sapphire Rapids and on AMD before Zen 5, which
 * have AVX-512 (with its own EVEX VNNI from Cascade Lake and Zen 4 on).
 * Each level states the full set of features it needs (cpuf_level_needs),
 * and a level is runnable when the CPU has all of them.
 *
 * Pure functions of a feature mask (cpuf_best_level, cpuf_missing) are
 * separate from the detection so tests can check the dispatcher on the
 * feature sets of CPUs this machine is not. No allocation; thread-safe.
 */
#ifndef LF_CPU_FEATURES_H
#define LF_CPU_FEATURES_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t cpuf_t; /* a set of CPUF_* bits */

enum {
    CPUF_AVX = 1u << 0,        /* CPUID.1:ECX.AVX[28] */
    CPUF_FMA = 1u << 1,        /* CPUID.1:ECX.FMA[12] */
    CPUF_F16C = 1u << 2,       /* CPUID.1:ECX.F16C[29] */
    CPUF_AVX2 = 1u << 3,       /* CPUID.7.0:EBX.AVX2[5] */
    CPUF_OS_YMM = 1u << 4,     /* CPUID.1:ECX.OSXSAVE[27] and XCR0 bits 1-2 (SSE, YMM state) */
    CPUF_AVXVNNI = 1u << 5,    /* CPUID.7.1:EAX.AVX-VNNI[4] */
    CPUF_AVX512F = 1u << 6,    /* CPUID.7.0:EBX[16] */
    CPUF_AVX512DQ = 1u << 7,   /* CPUID.7.0:EBX[17] */
    CPUF_AVX512BW = 1u << 8,   /* CPUID.7.0:EBX[30] */
    CPUF_AVX512VL = 1u << 9,   /* CPUID.7.0:EBX[31] */
    CPUF_AVX512VNNI = 1u << 10,/* CPUID.7.0:ECX[11] */
    CPUF_OS_ZMM = 1u << 11,    /* XCR0 bits 5-7 (opmask, ZMM_Hi256, Hi16_ZMM state) */
    CPUF_ALL = (1u << 12) - 1
};

/* Kernel levels, in order of preference (the same values as kern_isa_t). */
enum { CPUF_LEVEL_SCALAR = 0, CPUF_LEVEL_AVX2 = 1, CPUF_LEVEL_AVXVNNI = 2, CPUF_LEVEL_AVX512 = 3,
       CPUF_LEVEL_COUNT = 4 };

/* The features this process may use: CPUID and XCR0 as read once, minus
 * any named in LLM_FCGI_CPU_DISABLE (a comma-separated list of
 * cpuf_feature_name()s, e.g. "avx512f,avxvnni"), which can only take
 * features away: it makes this machine behave as a CPU without them. */
cpuf_t cpuf_detect(void);

/* The features CPUID and XCR0 report, ignoring LLM_FCGI_CPU_DISABLE. */
cpuf_t cpuf_detect_raw(void);

/* The features level needs (0 for scalar). */
cpuf_t cpuf_level_needs(int level);

/* The features of level's needs that have lacks (0: the level runs). */
cpuf_t cpuf_missing(int level, cpuf_t have);

/* The best level whose needs have satisfies (scalar at worst). */
int cpuf_best_level(cpuf_t have);

/* "avx2", "avx512vnni", "os-zmm-state", ... for a single bit; NULL else. */
const char *cpuf_feature_name(cpuf_t bit);

/* Writes the names of the bits of set, comma-separated, into buf (always
 * NUL-terminated when n > 0); returns buf. */
char *cpuf_format(cpuf_t set, char *buf, size_t n);

/* Parses a comma-separated list of feature names into *out. Returns 0, or
 * -1 naming the first unknown name in err. */
int cpuf_parse(const char *list, cpuf_t *out, char *err, size_t n);

#endif
