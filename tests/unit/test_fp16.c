/* test_fp16.c - fp16/bf16 conversions: edge cases by table, the software
 * fp32->fp16 path against the F16C instruction on many values, rows. */
#include "engine/quant/fp16.h"
#include "tap.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
__attribute__((target("f16c"))) static uint16_t hw_from(float f) { return (uint16_t)_cvtss_sh(f, 0); }
__attribute__((target("f16c"))) static float hw_to(uint16_t h) { return _cvtsh_ss(h); }
#endif

static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float fbits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* xorshift64*: deterministic pseudo-random patterns */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd32(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

typedef struct { uint32_t in; uint16_t want; const char *what; } f2h_case_t;

static const f2h_case_t f2h_cases[] = {
    {0x00000000u, 0x0000, "+0"},
    {0x80000000u, 0x8000, "-0"},
    {0x3f800000u, 0x3c00, "1"},
    {0xbf800000u, 0xbc00, "-1"},
    {0x40000000u, 0x4000, "2"},
    {0x3eaaaaabu, 0x3555, "1/3 rounds down"},
    {0x477fe000u, 0x7bff, "65504 max half"},
    {0x477fefffu, 0x7bff, "just below 65520 stays max"},
    {0x477ff000u, 0x7c00, "65520 ties to even -> inf"},
    {0x47800000u, 0x7c00, "65536 overflows to inf"},
    {0xc7800000u, 0xfc00, "-65536 -> -inf"},
    {0x7f7fffffu, 0x7c00, "FLT_MAX -> inf"},
    {0x7f800000u, 0x7c00, "+inf"},
    {0xff800000u, 0xfc00, "-inf"},
    {0x7fc00000u, 0x7e00, "qNaN"},
    {0xffc00000u, 0xfe00, "-qNaN"},
    {0x7f800001u, 0x7e00, "sNaN low payload -> quiet"},
    {0x7fa00000u, 0x7f00, "sNaN payload kept, quieted"},
    {0x3f801000u, 0x3c00, "1 + half ulp ties to even (down)"},
    {0x3f803000u, 0x3c02, "1 + 3 half ulps ties to even (up)"},
    {0x3f801001u, 0x3c01, "just above half ulp rounds up"},
    {0x38800000u, 0x0400, "2^-14 min normal"},
    {0x387fc000u, 0x03ff, "largest subnormal"},
    {0x387fe000u, 0x0400, "subnormal halfway rounds up to min normal"},
    {0x33800000u, 0x0001, "2^-24 min subnormal"},
    {0x33000000u, 0x0000, "2^-25 ties to even -> 0"},
    {0x33000001u, 0x0001, "just above 2^-25 -> min subnormal"},
    {0xb3000001u, 0x8001, "negative just above 2^-25"},
    {0x33c00000u, 0x0002, "1.5 * 2^-24 ties to even -> 2"},
    {0x34200000u, 0x0002, "2.5 * 2^-24 ties to even -> 2"},
    {0x32000000u, 0x0000, "2^-27 underflows"},
    {0x00000001u, 0x0000, "float subnormal -> 0"},
    {0x80000001u, 0x8000, "negative float subnormal -> -0"},
    {0x3dcccccdu, 0x2e66, "0.1"},
};

typedef struct { uint32_t in; uint16_t want; const char *what; } f2b_case_t;

static const f2b_case_t f2b_cases[] = {
    {0x00000000u, 0x0000, "+0"},
    {0x80000000u, 0x8000, "-0"},
    {0x3f800000u, 0x3f80, "1"},
    {0x3f808000u, 0x3f80, "tie to even down"},
    {0x3f818000u, 0x3f82, "tie to even up"},
    {0x3f808001u, 0x3f81, "above tie rounds up"},
    {0x3f807fffu, 0x3f80, "below tie rounds down"},
    {0x7f7fffffu, 0x7f80, "FLT_MAX rounds to inf"},
    {0x7f800000u, 0x7f80, "inf"},
    {0xff800000u, 0xff80, "-inf"},
    {0x7fc00000u, 0x7fc0, "qNaN"},
    {0x7f800001u, 0x7fc0, "sNaN quieted (| 64)"},
    {0xff810000u, 0xffc1, "-sNaN payload kept, quieted"},
    {0x00018000u, 0x0002, "subnormal tie rounds to even (not flushed)"},
    {0x00010000u, 0x0001, "subnormal kept"},
    {0x80008001u, 0x8001, "negative subnormal rounds up"},
};

int main(void)
{
    /* fp32 -> fp16 table, both paths */
    for (size_t i = 0; i < sizeof f2h_cases / sizeof f2h_cases[0]; i++) {
        const f2h_case_t *c = &f2h_cases[i];
        uint16_t s = fp16_from_fp32_soft(fbits(c->in));
        uint16_t d = fp16_from_fp32(fbits(c->in));
        tap_ok(s == c->want && d == c->want, "fp16 from 0x%08x (%s): soft %04x disp %04x want %04x",
               c->in, c->what, s, d, c->want);
    }

    /* fp16 -> fp32: every half; round trip for non-NaN */
    int bad_rt = 0, bad_nan = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = fp16_to_fp32((uint16_t)h);
        int is_nan = ((h & 0x7c00) == 0x7c00) && (h & 0x3ff);
        if (is_nan) {
            if (!isnan(f) || (bits(f) >> 31) != (h >> 15))
                bad_nan++;
        } else if (fp16_from_fp32_soft(f) != h || fp16_from_fp32(f) != h) {
            bad_rt++;
        }
    }
    tap_ok(bad_rt == 0, "all 63488 non-NaN halves round-trip exactly (%d bad)", bad_rt);
    tap_ok(bad_nan == 0, "half NaNs stay NaN with their sign (%d bad)", bad_nan);
    tap_ok(fp16_to_fp32(0x0001) == 0x1p-24f && fp16_to_fp32(0x8400) == -0x1p-14f &&
               fp16_to_fp32(0x7bff) == 65504.0f && isinf(fp16_to_fp32(0xfc00)),
           "fp16 -> fp32 known values");

#ifdef HAVE_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("f16c")) {
        int bad_to = 0;
        for (uint32_t h = 0; h < 65536; h++)
            if (bits(hw_to((uint16_t)h)) != bits(fp16_to_fp32((uint16_t)h)))
                bad_to++;
        tap_ok(bad_to == 0, "fp16 -> fp32 matches VCVTPH2PS on all 65536 halves (%d bad)", bad_to);

        /* random float patterns, plus dense sweeps of the rounding-critical
         * exponents (subnormal results, the overflow edge) */
        int bad_from = 0;
        uint32_t first_bad = 0;
        for (int i = 0; i < 4000000; i++) {
            uint32_t u = rnd32();
            if (i & 1) /* exponents 100..143: subnormal, normal, overflow */
                u = (u & 0x807fffffu) | ((100u + (u >> 8) % 44u) << 23);
            float f = fbits(u);
            if (hw_from(f) != fp16_from_fp32_soft(f) && !bad_from++)
                first_bad = u;
        }
        for (uint32_t u = 0x33000000u - 4096u; u < 0x33000000u + 4096u; u++)
            if (hw_from(fbits(u)) != fp16_from_fp32_soft(fbits(u)) && !bad_from++)
                first_bad = u;
        for (uint32_t u = 0x477fe000u; u < 0x47800010u; u++)
            if (hw_from(fbits(u)) != fp16_from_fp32_soft(fbits(u)) && !bad_from++)
                first_bad = u;
        tap_ok(bad_from == 0, "software fp32 -> fp16 matches F16C on ~4.1M values (%d bad, first 0x%08x)",
               bad_from, first_bad);
        for (size_t i = 0; i < sizeof f2h_cases / sizeof f2h_cases[0]; i++) {
            uint16_t h = hw_from(fbits(f2h_cases[i].in));
            if (h != f2h_cases[i].want)
                tap_diag("F16C disagrees with table on 0x%08x: %04x", f2h_cases[i].in, h);
        }
    } else {
        tap_diag("no F16C on this CPU: hardware comparison skipped");
    }
#endif

    /* bf16 */
    for (size_t i = 0; i < sizeof f2b_cases / sizeof f2b_cases[0]; i++) {
        const f2b_case_t *c = &f2b_cases[i];
        uint16_t b = bf16_from_fp32(fbits(c->in));
        tap_ok(b == c->want, "bf16 from 0x%08x (%s): %04x want %04x", c->in, c->what, b, c->want);
    }
    tap_ok(bf16_from_fp32_avx512bf16(fbits(0x00018000u)) == 0x0000 &&
               bf16_from_fp32_avx512bf16(fbits(0x80010000u)) == 0x8000 &&
               bf16_from_fp32_avx512bf16(fbits(0x3f808001u)) == 0x3f81,
           "VCVTNEPS2BF16 model flushes subnormals, rounds normals like GGML");
    int bad_b = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = bf16_to_fp32((uint16_t)h);
        if (bits(f) != h << 16)
            bad_b++;
        else if (!isnan(f) && bf16_from_fp32(f) != h)
            bad_b++;
    }
    tap_ok(bad_b == 0, "bf16 -> fp32 exact and round-trips for all non-NaN (%d bad)", bad_b);

    /* rows: same as element-wise, including the tail after the 8-wide part */
    float src[37], back[37];
    uint16_t h[37], b[37];
    for (int i = 0; i < 37; i++)
        src[i] = (i - 18) * 0.3719f + (i % 5) * 1e-6f;
    src[7] = fbits(0x387fe000u);
    src[36] = 70000.0f;
    fp16_row_from_fp32(src, h, 37);
    bf16_row_from_fp32(src, b, 37);
    int bad_row = 0;
    for (int i = 0; i < 37; i++)
        if (h[i] != fp16_from_fp32_soft(src[i]) || b[i] != bf16_from_fp32(src[i]))
            bad_row++;
    tap_ok(bad_row == 0, "row fp32 -> fp16/bf16 equal element-wise (%d bad)", bad_row);
    fp16_row_to_fp32(h, back, 37);
    bad_row = 0;
    for (int i = 0; i < 37; i++)
        if (bits(back[i]) != bits(fp16_to_fp32(h[i])))
            bad_row++;
    bf16_row_to_fp32(b, back, 37);
    for (int i = 0; i < 37; i++)
        if (bits(back[i]) != bits(bf16_to_fp32(b[i])))
            bad_row++;
    tap_ok(bad_row == 0, "row fp16/bf16 -> fp32 equal element-wise (%d bad)", bad_row);
    {
        /* every half through the row conversions (8-wide part and tail) */
        static uint16_t all[65536 + 5], h2[65536 + 5];
        static float f[65536 + 5], r[65536 + 5];
        for (int i = 0; i < 65536 + 5; i++)
            all[i] = (uint16_t)(i * 40503u);
        fp16_row_to_fp32(all, f, 65536 + 5);
        int bad_all = 0;
        for (int i = 0; i < 65536 + 5; i++)
            bad_all += bits(f[i]) != bits(fp16_to_fp32(all[i]));
        tap_ok(bad_all == 0, "row fp16 -> fp32 equals fp16_to_fp32 on all halves (%d bad)", bad_all);
        for (int i = 0; i < 65536 + 5; i++)
            if (f[i] != f[i])
                f[i] = 1.5f; /* NaN payloads aside */
        fp16_row_round_fp32(f, h2, r, 65536 + 5);
        fp16_row_round_fp32(src, h, back, 37);
        bad_all = 0;
        for (int i = 0; i < 65536 + 5; i++)
            bad_all += h2[i] != fp16_from_fp32(f[i]) || bits(r[i]) != bits(fp16_to_fp32(h2[i]));
        for (int i = 0; i < 37; i++)
            bad_all += h[i] != fp16_from_fp32(src[i]) || bits(back[i]) != bits(fp16_to_fp32(h[i]));
        tap_ok(bad_all == 0, "fp16_row_round_fp32: the F16 rounding and its F32 value (%d bad)", bad_all);
    }
    fp16_row_from_fp32(src, h, 0); /* n = 0 is a no-op */
    tap_ok(1, "empty rows accepted");
    return tap_done();
}
