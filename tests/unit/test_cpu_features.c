/* test_cpu_features.c - the kernel-level dispatcher on the feature sets of
 * real CPU families (this machine is only one of them): which level each
 * gets, what each level lacks there, and the name lists of
 * LLM_FCGI_CPU_DISABLE. */
#include <stdlib.h>
#include <string.h>

#include "engine/kernels/cpu_features.h"
#include "tap.h"

#define AVX2_SET (CPUF_AVX | CPUF_FMA | CPUF_F16C | CPUF_AVX2 | CPUF_OS_YMM)
#define AVX512_SET (CPUF_AVX512F | CPUF_AVX512DQ | CPUF_AVX512BW | CPUF_AVX512VL | CPUF_OS_ZMM)

static const struct {
    const char *cpu;
    cpuf_t have;
    int best;
    const char *missing[CPUF_LEVEL_COUNT]; /* what each level lacks there */
} cpus[] = {
    {"Sandy Bridge (AVX only)", CPUF_AVX | CPUF_OS_YMM, CPUF_LEVEL_SCALAR,
     {"", "fma,f16c,avx2", "fma,f16c,avx2,avxvnni",
      "fma,f16c,avx2,avx512f,avx512dq,avx512bw,avx512vl,avx512vnni,os-zmm-state"}},
    {"Haswell / Skylake client / Zen 2 / Zen 3", AVX2_SET, CPUF_LEVEL_AVX2,
     {"", "", "avxvnni", "avx512f,avx512dq,avx512bw,avx512vl,avx512vnni,os-zmm-state"}},
    {"Skylake-SP (AVX-512 without VNNI)", AVX2_SET | AVX512_SET, CPUF_LEVEL_AVX2,
     {"", "", "avxvnni", "avx512vnni"}},
    {"Cascade Lake / Ice Lake-SP (no AVX-VNNI)", AVX2_SET | AVX512_SET | CPUF_AVX512VNNI, CPUF_LEVEL_AVX512,
     {"", "", "avxvnni", ""}},
    {"Zen 4 (no AVX-VNNI)", AVX2_SET | AVX512_SET | CPUF_AVX512VNNI, CPUF_LEVEL_AVX512,
     {"", "", "avxvnni", ""}},
    {"Sapphire Rapids / Zen 5 (both VNNIs)", AVX2_SET | AVX512_SET | CPUF_AVX512VNNI | CPUF_AVXVNNI,
     CPUF_LEVEL_AVX512, {"", "", "", ""}},
    {"Alder Lake (AVX-VNNI, no AVX-512)", AVX2_SET | CPUF_AVXVNNI, CPUF_LEVEL_AVXVNNI,
     {"", "", "", "avx512f,avx512dq,avx512bw,avx512vl,avx512vnni,os-zmm-state"}},
    {"Cascade Lake, OS without the ZMM state", AVX2_SET | (AVX512_SET & ~CPUF_OS_ZMM) | CPUF_AVX512VNNI,
     CPUF_LEVEL_AVX2, {"", "", "avxvnni", "os-zmm-state"}},
    {"Haswell, OS without the YMM state", AVX2_SET & ~CPUF_OS_YMM, CPUF_LEVEL_SCALAR,
     {"", "os-ymm-state", "os-ymm-state,avxvnni",
      "os-ymm-state,avx512f,avx512dq,avx512bw,avx512vl,avx512vnni,os-zmm-state"}},
    {"Knights Landing (AVX-512F without BW/VL/VNNI)", AVX2_SET | CPUF_AVX512F | CPUF_OS_ZMM, CPUF_LEVEL_AVX2,
     {"", "", "avxvnni", "avx512dq,avx512bw,avx512vl,avx512vnni"}},
    {"no x86 features (another architecture)", 0, CPUF_LEVEL_SCALAR,
     {"", "avx,fma,f16c,avx2,os-ymm-state", "avx,fma,f16c,avx2,os-ymm-state,avxvnni",
      "avx,fma,f16c,avx2,os-ymm-state,avx512f,avx512dq,avx512bw,avx512vl,avx512vnni,os-zmm-state"}},
};

static const char *level_name(int l)
{
    static const char *names[] = {"scalar", "avx2", "avxvnni", "avx512"};
    return names[l];
}

int main(void)
{
    char buf[256];
    for (size_t i = 0; i < sizeof cpus / sizeof cpus[0]; i++) {
        const int best = cpuf_best_level(cpus[i].have);
        tap_ok(best == cpus[i].best, "%s gets the %s level (got %s)", cpus[i].cpu, level_name(cpus[i].best),
               level_name(best));
        for (int l = 0; l < CPUF_LEVEL_COUNT; l++) {
            cpuf_format(cpuf_missing(l, cpus[i].have), buf, sizeof buf);
            tap_ok(!strcmp(buf, cpus[i].missing[l]), "%s, %s level lacks '%s' (got '%s')", cpus[i].cpu,
                   level_name(l), cpus[i].missing[l], buf);
        }
        /* the best level never lacks anything, and no better one runs */
        int better_runs = 0;
        for (int l = best + 1; l < CPUF_LEVEL_COUNT; l++)
            better_runs |= !cpuf_missing(l, cpus[i].have);
        tap_ok(!cpuf_missing(best, cpus[i].have) && !better_runs, "%s: the best runnable level", cpus[i].cpu);
    }

    /* every level's needs include the AVX2 level's (they all build on it) */
    for (int l = CPUF_LEVEL_AVX2; l < CPUF_LEVEL_COUNT; l++)
        tap_ok((cpuf_level_needs(l) & cpuf_level_needs(CPUF_LEVEL_AVX2)) == cpuf_level_needs(CPUF_LEVEL_AVX2),
               "%s needs everything avx2 needs", level_name(l));
    tap_ok(cpuf_level_needs(CPUF_LEVEL_SCALAR) == 0, "scalar needs nothing");
    tap_ok(cpuf_level_needs(99) == CPUF_ALL && cpuf_missing(99, CPUF_ALL) == 0 && cpuf_best_level(CPUF_ALL) == 3,
           "an unknown level needs everything");

    /* names: parse and format */
    static const struct {
        const char *list;
        int rc;
        cpuf_t set;
        const char *err;
    } parses[] = {
        {"", 0, 0, NULL},
        {"avx2", 0, CPUF_AVX2, NULL},
        {"avx512f,avxvnni", 0, CPUF_AVX512F | CPUF_AVXVNNI, NULL},
        {" avx512vnni , os-zmm-state ,", 0, CPUF_AVX512VNNI | CPUF_OS_ZMM, NULL},
        {"avx2,avx3", -1, 0, "unknown CPU feature 'avx3'"},
        {"AVX2", -1, 0, "unknown CPU feature 'AVX2'"},
        {"avx512", -1, 0, "unknown CPU feature 'avx512'"},
    };
    for (size_t i = 0; i < sizeof parses / sizeof parses[0]; i++) {
        cpuf_t set = 1u << 30;
        char err[80] = "";
        const int rc = cpuf_parse(parses[i].list, &set, err, sizeof err);
        tap_ok(rc == parses[i].rc && (rc || set == parses[i].set) && (!parses[i].err || !strcmp(err, parses[i].err)),
               "parse '%s' -> rc %d set %#x '%s'", parses[i].list, rc, (unsigned)set, err);
    }
    int names_ok = 1;
    for (int b = 0; b < 12; b++) {
        const char *n = cpuf_feature_name(1u << b);
        cpuf_t back = 0;
        names_ok &= n && cpuf_parse(n, &back, buf, sizeof buf) == 0 && back == (1u << b);
    }
    tap_ok(names_ok && !cpuf_feature_name(1u << 12) && !cpuf_feature_name(CPUF_AVX | CPUF_FMA),
           "every feature has a name that parses back; sets and unknown bits have none");
    cpuf_format(CPUF_ALL, buf, 10);
    tap_ok(strlen(buf) < 10, "format truncates to the buffer ('%s')", buf);

    /* this machine: LLM_FCGI_CPU_DISABLE takes features away, never adds */
    const cpuf_t raw = cpuf_detect_raw();
    tap_diag("this CPU: %s (best level %s)", cpuf_format(raw, buf, sizeof buf), level_name(cpuf_best_level(raw)));
    tap_ok((cpuf_detect() & ~raw) == 0, "the features in use are the CPU's");
    setenv("LLM_FCGI_CPU_DISABLE", "avx2,avx512f", 1);
    const cpuf_t off = cpuf_detect();
    tap_ok(off == (raw & ~(CPUF_AVX2 | CPUF_AVX512F)) && cpuf_best_level(off) == CPUF_LEVEL_SCALAR,
           "LLM_FCGI_CPU_DISABLE=avx2,avx512f leaves the scalar level");
    setenv("LLM_FCGI_CPU_DISABLE", "avxvnni", 1);
    tap_ok(cpuf_best_level(cpuf_detect()) == (cpuf_best_level(raw) == CPUF_LEVEL_AVXVNNI ? CPUF_LEVEL_AVX2
                                                                                        : cpuf_best_level(raw)),
           "LLM_FCGI_CPU_DISABLE=avxvnni never leaves the avxvnni level");
    unsetenv("LLM_FCGI_CPU_DISABLE");
    return tap_done();
}
