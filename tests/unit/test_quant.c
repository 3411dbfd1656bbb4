/* test_quant.c - dequantization (hand-built blocks + an independent decoder
 * on random blocks), activation quantization (hand cases with halfway
 * values, zero rows, invariants) and the reference dot products (against
 * the float dot of dequantized rows). Real-file checks: test_quant_files.c. */
#include "engine/quant/fp16.h"
#include "engine/quant/quant.h"
#include "engine/quant/quant_blocks.h"
#include "quant_test_util.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define H1 0x3c00   /* fp16 1.0 */
#define H05 0x3800  /* fp16 0.5 */
#define H025 0x3400 /* fp16 0.25 */
#define HM1 0xbc00  /* fp16 -1.0 */

/* ---- 1. hand-built blocks ------------------------------------------- */

typedef struct { int idx; float want; } el_t;
typedef struct {
    const char *name;
    qtype_t t;
    void (*build)(void *blk);
    el_t el[6];
    int n_el;
} hand_case_t;

static void b_q4_0(void *p)
{
    block_q4_0 *b = p;
    b->d = H05;
    b->qs[0] = 0x1F;  /* e0 = (15-8)*.5 = 3.5, e16 = (1-8)*.5 = -3.5 */
    b->qs[15] = 0x80; /* e15 = -4, e31 = 0 */
}
static void b_q4_1(void *p)
{
    block_q4_1 *b = p;
    b->d = H05;
    b->m = HM1;
    b->qs[0] = 0x1F; /* e0 = 15*.5-1 = 6.5, e16 = .5-1 = -.5 */
    b->qs[3] = 0x00; /* e3 = -1 */
}
static void b_q5_0(void *p)
{
    block_q5_0 *b = p;
    b->d = H1;
    b->qh[0] = 0x01; /* bit 0: element 0 */
    b->qh[2] = 0x01; /* bit 16: element 16 */
    b->qh[3] = 0x80; /* bit 31: element 31 */
    b->qs[0] = 0x21; /* e0 = 17-16 = 1, e16 = 18-16 = 2 */
    b->qs[15] = 0xF0; /* e15 = 0-16 = -16, e31 = (15|16)-16 = 15 */
}
static void b_q5_1(void *p)
{
    block_q5_1 *b = p;
    b->d = H1;
    b->m = H05;
    b->qh[0] = 0x01;
    b->qh[2] = 0x01;
    b->qs[0] = 0x21; /* e0 = 17.5, e16 = 18.5 */
    /* e1 = 0 + .5 */
}
static void b_q8_0(void *p)
{
    block_q8_0 *b = p;
    b->d = H025;
    b->qs[3] = -128; /* -32 */
    b->qs[31] = 127; /* 31.75 */
}
static void b_q2_K(void *p)
{
    block_q2_K *b = p;
    b->d = H1;
    b->dmin = H05;
    b->scales[0] = 0x21; /* scale 1, min 2 */
    b->scales[2] = 0x13; /* scale 3, min 1 */
    b->scales[6] = 0x05;
    b->scales[8] = 0xF7;
    b->qs[0] = 0xE4;  /* bits: e0 = 0, e32 = 1, e64 = 2, e96 = 3 */
    b->qs[32] = 0x03; /* e128 = 3 with scales[8] */
    /* e0 = 1*0 - .5*2 = -1; e32 = 3*1 - .5 = 2.5; e96 = 5*3 - 0 = 15;
     * e128 = 7*3 - .5*15 = 13.5; e64: scales[4] = 0 -> 0 */
}
static void b_q3_K(void *p)
{
    block_q3_K *b = p;
    b->d = H05;
    /* scale 0: low nibble scales[0] & 15, high bits scales[8] & 3
     * scale 5: low nibble scales[5] & 15, high bits (scales[9] >> 2) & 3
     * scale 9: low (scales[1] >> 4), high (scales[9] >> 4) & 3 */
    b->scales[0] = 0x05;            /* s0 low 5 */
    b->scales[8] = 0x02;            /* s0 high 2 -> s0 = 37 -> 5 */
    b->scales[5] = 0x0F;            /* s5 low 15 */
    b->scales[9] = (1 << 2) | (3 << 4); /* s5 high 1 -> 31 -> -1; s9 high 3 */
    b->scales[1] = 0x00;            /* s9 low 0 -> s9 = 48 -> 16 */
    b->qs[0] = 0x03;  /* e0: q=3 */
    b->hmask[0] = 0x01; /* e0 high bit set -> no -4: value 3 */
    /* e1: q=0, hmask clear -> -4 */
    /* e80 (h0 r80 j=2 l=16, scale 5): q = (qs[16]>>4)&3 */
    b->qs[16] = 0x20; /* q=2 */
    b->hmask[16] = 0x04; /* bit j=2 set -> 2 */
    /* e144 (h1 r16 j0 l16, scale 9): q = qs[48]&3 = 1, hmask[16] bit 4 clear -> -3 */
    b->qs[48] = 0x01;
    /* e0 = .5*5*3 = 7.5; e1 = .5*5*-4 = -10; e80 = .5*-1*2 = -1; e144 = .5*16*-3 = -24 */
}
static void b_q4_K(void *p)
{
    block_q4_K *b = p;
    b->d = H05;
    b->dmin = H1;
    b->scales[0] = 3;  /* sb0 scale 3 */
    b->scales[4] = 2;  /* sb0 min 2 */
    b->scales[1] = 0x40 | 4; /* sb1 scale 4, top bits (1) -> high bits of sb5 scale */
    b->scales[5] = 0x80 | 1; /* sb1 min 1, top bits (2) -> high bits of sb5 min */
    b->scales[9] = 0x37;     /* sb5: scale low 7, min low 3 -> scale 16+7 = 23, min 32+3 = 35 */
    b->qs[0] = 0x5A;  /* e0 = 10 (sb0), e32 = 5 (sb1) */
    b->qs[64] = 0x90; /* chunk 2 byte 0: e128 = 0 (sb4), e160 = 9 (sb5) */
    /* e0 = .5*3*10 - 2 = 13; e32 = .5*4*5 - 1 = 9; e160 = .5*23*9 - 35 = 68.5
     * e128: sb4 scale = (scales[8]&15)|((scales[0]>>6)<<4) = 0, min = 0 -> 0 */
}
static void b_q5_K(void *p)
{
    block_q5_K *b = p;
    b->d = H05;
    b->dmin = H1;
    b->scales[0] = 3;
    b->scales[4] = 2;
    b->scales[1] = 4;
    b->scales[5] = 1;
    b->qs[0] = 0x5A;
    b->qh[0] = 0x03; /* bit0: e0 +16, bit1: e32 +16 */
    b->qh[1] = 0x08; /* bit3: element 64+32+1 = 97 (sb3) +16 */
    /* e0 = .5*3*26 - 2 = 37; e32 = .5*4*21 - 1 = 41; e97: sb3 scale/min 0 -> 0 */
    b->scales[3] = 2; /* sb3 scale 2, min scales[7] = 0 */
    /* e97 = .5*2*16 = 16 */
}
static void b_q6_K(void *p)
{
    block_q6_K *b = p;
    b->d = H05;
    b->scales[0] = 2;
    b->scales[3] = -3;  /* h0 g1 l>=16 */
    b->scales[12] = 4;  /* h1 g2 l<16 */
    b->ql[0] = 0x0F;    /* e0 low 15 */
    b->qh[0] = 0x03;    /* e0 high 3 -> 63 - 32 = 31 */
    b->ql[48] = 0x01;   /* e48 (h0 g1 l16) low = ql[16+32] & 15 = 1 */
    b->qh[16] = 0x00;   /* high 0 -> 1 - 32 = -31 */
    b->ql[64] = 0x70;   /* e192 (h1 g2 l0): ql[64] >> 4 = 7 */
    b->qh[32] = 0x20;   /* bits 4-5 = 2 -> 7 | 32 = 39 - 32 = 7 */
    /* e0 = .5*2*31 = 31; e48 = .5*-3*-31 = 46.5; e192 = .5*4*7 = 14;
     * e1: scale 2, q = 0 - 32 -> -32 */
}

static void b_iq4_nl(void *p)
{
    block_iq4_nl *b = p;
    b->d = H05;
    b->qs[0] = 0xF0; /* e0 = .5 * -127 = -63.5, e16 = .5 * 113 = 56.5 */
    b->qs[5] = 0x78; /* e5 = .5 * 1 = .5, e21 = .5 * -10 = -5 */
}
static void b_iq4_xs(void *p)
{
    block_iq4_xs *b = p;
    b->d = H025;
    /* sub-block 0: ls = 0x5 | (0b10 << 4) = 37 -> 5; sub-block 3: ls =
     * (scales_l[1] >> 4) | ((scales_h >> 6) & 3) << 4 = 0xA | 0 = 10 -> -22;
     * sub-block 7: ls = 0xF | 0b11 << 4 = 63 -> 31 */
    b->scales_l[0] = 0x05;
    b->scales_l[1] = 0xA0;
    b->scales_l[3] = 0xF0;
    b->scales_h = (uint16_t)(2u | 3u << 14);
    b->qs[0] = 0x9F;       /* e0 = .25*5*113 = 141.25, e16 = .25*5*13 = 16.25 */
    b->qs[48 + 2] = 0x03;  /* e98 = .25*-22*-65 = 357.5, e114 = .25*-22*-127 = 698.5 */
    b->qs[112 + 15] = 0xE1; /* e239 = .25*31*-104 = -806, e255 = .25*31*89 = 689.75 */
}
static void b_mxfp4(void *p)
{
    block_mxfp4 *b = p;
    b->e = 127;       /* scale 2^0: doubled values * 2^-1 */
    b->qs[0] = 0xF7;  /* e0 = 6, e16 = -6 */
    b->qs[1] = 0x83;  /* e1 = 1.5, e17 = (+)0 (code 8, -0 in E2M1) */
    b->qs[15] = 0x19; /* e15 = -0.5, e31 = 0.5 */
}

static const hand_case_t hand_cases[] = {
    {"q4_0", QTYPE_Q4_0, b_q4_0, {{0, 3.5f}, {16, -3.5f}, {15, -4.0f}, {31, 0.0f}, {1, -4.0f}}, 5},
    {"q4_1", QTYPE_Q4_1, b_q4_1, {{0, 6.5f}, {16, -0.5f}, {3, -1.0f}}, 3},
    {"q5_0", QTYPE_Q5_0, b_q5_0, {{0, 1.0f}, {16, 2.0f}, {15, -16.0f}, {31, 15.0f}, {1, -16.0f}}, 5},
    {"q5_1", QTYPE_Q5_1, b_q5_1, {{0, 17.5f}, {16, 18.5f}, {1, 0.5f}}, 3},
    {"q8_0", QTYPE_Q8_0, b_q8_0, {{3, -32.0f}, {31, 31.75f}, {0, 0.0f}}, 3},
    {"q2_K", QTYPE_Q2_K, b_q2_K, {{0, -1.0f}, {32, 2.5f}, {96, 15.0f}, {128, 13.5f}, {64, 0.0f}}, 5},
    {"q3_K", QTYPE_Q3_K, b_q3_K, {{0, 7.5f}, {1, -10.0f}, {80, -1.0f}, {144, -24.0f}}, 4},
    {"q4_K", QTYPE_Q4_K, b_q4_K, {{0, 13.0f}, {32, 9.0f}, {160, 68.5f}, {128, 0.0f}}, 4},
    {"q5_K", QTYPE_Q5_K, b_q5_K, {{0, 37.0f}, {32, 41.0f}, {97, 16.0f}}, 3},
    {"q6_K", QTYPE_Q6_K, b_q6_K, {{0, 31.0f}, {48, 46.5f}, {192, 14.0f}, {1, -32.0f}}, 4},
    {"iq4_nl", QTYPE_IQ4_NL, b_iq4_nl, {{0, -63.5f}, {16, 56.5f}, {5, 0.5f}, {21, -5.0f}, {1, -63.5f}}, 5},
    {"iq4_xs", QTYPE_IQ4_XS, b_iq4_xs,
     {{0, 141.25f}, {16, 16.25f}, {98, 357.5f}, {114, 698.5f}, {239, -806.0f}, {255, 689.75f}}, 6},
    {"mxfp4", QTYPE_MXFP4, b_mxfp4, {{0, 6.0f}, {16, -6.0f}, {1, 1.5f}, {17, 0.0f}, {15, -0.5f}, {31, 0.5f}}, 6},
};

static void test_hand_blocks(void)
{
    for (size_t c = 0; c < sizeof hand_cases / sizeof hand_cases[0]; c++) {
        const hand_case_t *hc = &hand_cases[c];
        const qtype_info_t *info = qtype_info(hc->t);
        uint8_t blk[512];
        float out[QK_K];
        memset(blk, 0, sizeof blk);
        hc->build(blk);
        quant_dequantize_row(hc->t, blk, out, info->block_size);
        int bad = 0, bad_ind = 0;
        for (int k = 0; k < hc->n_el; k++) {
            if (out[hc->el[k].idx] != hc->el[k].want) {
                bad++;
                tap_diag("%s e%d = %g, want %g", hc->name, hc->el[k].idx, out[hc->el[k].idx],
                         hc->el[k].want);
            }
            if (qt_el(hc->t, blk, hc->el[k].idx) != hc->el[k].want)
                bad_ind++;
        }
        tap_ok(bad == 0 && bad_ind == 0, "%s hand-built block: %d checked values (%d/%d wrong)",
               hc->name, hc->n_el, bad, bad_ind);
    }
}

/* ---- 1b. the type table and the E8M0 scale ---------------------------- */

static const struct {
    uint32_t id;
    const char *name;
    int block_size, type_size;
    bool supported;
    qtype_t vec_dot;
} type_cases[] = {
    {QTYPE_IQ4_NL, "iq4_nl", 32, 18, true, QTYPE_Q8_0},
    {QTYPE_IQ4_XS, "iq4_xs", 256, 136, true, QTYPE_Q8_K},
    {QTYPE_MXFP4, "mxfp4", 32, 17, true, QTYPE_Q8_0},
    {QTYPE_Q4_K, "q4_K", 256, 144, true, QTYPE_Q8_K},
    {16, "iq2_xxs", 256, 66, false, 16},
    {21, "iq3_s", 256, 110, false, 21},
    {29, "iq1_m", 256, 56, false, 29},
    {40, "nvfp4", 64, 36, false, 40},
    {41, "q1_0", 128, 18, false, 41},
    {42, "q2_0", 64, 18, false, 42},
};

static void test_type_table(void)
{
    for (size_t i = 0; i < sizeof type_cases / sizeof type_cases[0]; i++) {
        const qtype_info_t *q = qtype_info(type_cases[i].id);
        tap_ok(q && !strcmp(q->name, type_cases[i].name) && q->block_size == type_cases[i].block_size &&
                   q->type_size == type_cases[i].type_size && q->supported == type_cases[i].supported &&
                   q->vec_dot_type == type_cases[i].vec_dot,
               "type %u is %s: %d values in %d bytes, %s", type_cases[i].id, type_cases[i].name,
               type_cases[i].block_size, type_cases[i].type_size, type_cases[i].supported ? "supported" : "refused");
    }
    tap_ok(!qtype_info(4) && !qtype_info(31) && !qtype_info(36) && !qtype_info(QTYPE_COUNT) && !qtype_info(1000),
           "retired and unknown ids have no traits");
    tap_ok(qtype_row_size(QTYPE_MXFP4, 96) == 51 && qtype_row_size(QTYPE_IQ4_XS, 512) == 272 &&
               qtype_row_size(QTYPE_IQ4_NL, 48) == 0,
           "row sizes (an MXFP4 row of 96 is 51 bytes; ragged rows 0)");
    char names[256];
    qtype_supported_names(names, sizeof names);
    tap_ok(!strcmp(names, "f32, f16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs, "
                          "bf16, mxfp4"),
           "supported names: %s", names);
    char small[12];
    qtype_supported_names(small, sizeof small);
    tap_ok(!strcmp(small, "f32, f16"), "supported names truncate at a whole name: '%s'", small);
}

static void test_e8m0(void)
{
    static const struct { uint8_t e; float want; } c[] = {
        {0, 0x1p-128f}, {1, 0x1p-127f}, {2, 0x1p-126f}, {3, 0x1p-125f}, {127, 0.5f}, {128, 1.0f}, {254, 0x1p126f},
    };
    int ok = 1;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        if (quant_e8m0_half(c[i].e) != c[i].want) {
            ok = 0;
            tap_diag("e8m0 %u: %g, want %g", c[i].e, quant_e8m0_half(c[i].e), c[i].want);
        }
    tap_ok(ok, "E8M0 half scale: 2^(e-128), subnormal at e = 0 and 1");
}

/* ---- 2. random blocks vs the independent decoder --------------------- */

static const qtype_t weight_types[] = {
    QTYPE_F32, QTYPE_F16, QTYPE_BF16, QTYPE_Q4_0, QTYPE_Q4_1, QTYPE_Q5_0, QTYPE_Q5_1,
    QTYPE_Q8_0, QTYPE_Q2_K, QTYPE_Q3_K, QTYPE_Q4_K, QTYPE_Q5_K, QTYPE_Q6_K,
    QTYPE_IQ4_NL, QTYPE_IQ4_XS, QTYPE_MXFP4,
};
#define N_WTYPES (sizeof weight_types / sizeof weight_types[0])

static void test_random_dequant(void)
{
    enum { N = 4 * QK_K };
    static uint8_t row[N * 4];
    static float out[N];
    for (size_t k = 0; k < N_WTYPES; k++) {
        qtype_t t = weight_types[k];
        const qtype_info_t *info = qtype_info(t);
        int bad = 0;
        for (int rep = 0; rep < 8; rep++) {
            qt_random_blocks(t, row, N / info->block_size);
            quant_dequantize_row(t, row, out, N);
            for (int64_t i = 0; i < N; i++) {
                float want = qt_el(t, row, i);
                if (memcmp(&want, &out[i], 4) && !bad++)
                    tap_diag("%s elem %lld: %g vs decoder %g", info->name, (long long)i, out[i], want);
            }
        }
        tap_ok(bad == 0, "%s: dequantize == independent decoder, bit for bit, 8 random rows (%d bad)",
               info->name, bad);
    }
}

/* ---- 3. activation quantization ------------------------------------- */

static void test_q8_0_hand(void)
{
    float x[32] = {0};
    x[0] = 127.0f; /* amax 127: d = 1, id = 127/127 = 1 exactly */
    x[1] = 2.5f;   /* half to even -> 2 (roundf would give 3) */
    x[2] = 3.5f;   /* -> 4 */
    x[3] = -2.5f;  /* -> -2 (roundf: -3) */
    x[4] = 0.5f;   /* -> 0 (roundf: 1) */
    x[5] = -126.5f; /* -> -126 */
    x[6] = 1.49f;  /* -> 1 */
    static const int8_t want[7] = {127, 2, 4, -2, 0, -126, 1};
    block_q8_0 b;
    quant_quantize_row(QTYPE_Q8_0, x, &b, 32);
    int ok = b.d == H1 && !memcmp(b.qs, want, 7);
    for (int j = 7; j < 32; j++)
        ok &= b.qs[j] == 0;
    tap_ok(ok, "q8_0 halfway values round half to even (AVX2), d = fp16(1)");

    block_q8_1 b1;
    quant_quantize_row(QTYPE_Q8_1, x, &b1, 32);
    int sum = 0;
    for (int j = 0; j < 7; j++)
        sum += want[j];
    tap_ok(b1.d == H1 && !memcmp(b1.qs, want, 7) && b1.s == fp16_from_fp32((float)sum),
           "q8_1 same quants, s = fp16(d * sum q) = %d", sum);

    float z[64] = {0};
    block_q8_0 bz[2];
    block_q8_1 bz1[2];
    memset(bz, 0x55, sizeof bz);
    memset(bz1, 0x55, sizeof bz1);
    quant_quantize_row(QTYPE_Q8_0, z, bz, 64);
    quant_quantize_row(QTYPE_Q8_1, z, bz1, 64);
    int zok = 1;
    for (int i = 0; i < 2; i++) {
        zok &= bz[i].d == 0 && bz1[i].d == 0 && bz1[i].s == 0;
        for (int j = 0; j < 32; j++)
            zok &= bz[i].qs[j] == 0 && bz1[i].qs[j] == 0;
    }
    tap_ok(zok, "q8_0/q8_1 all-zero rows give d = 0, q = 0, s = 0");

    /* id = 127/amax (AVX2) vs 1/d (ref) picks a different integer here:
     * x*id lands on either side of -126.5 (found by search) */
    float w[32] = {0};
    uint32_t wa = 0x3f800011u, wx = 0xbf7efe1eu;
    memcpy(&w[0], &wa, 4);
    memcpy(&w[1], &wx, 4);
    block_q8_0 bw;
    block_q8_1 bw1;
    quant_quantize_row(QTYPE_Q8_0, w, &bw, 32);
    quant_quantize_row(QTYPE_Q8_1, w, &bw1, 32);
    tap_ok(bw.qs[0] == 127 && bw.qs[1] == -126 && bw1.qs[1] == -126,
           "q8_0/q8_1 use id = 127/amax, not 1/d: q = %d (ref code would give -127)", bw.qs[1]);

    /* negative zero and a lone negative max */
    float y[32] = {0};
    y[9] = -0.0f;
    y[31] = -3.0f;
    block_q8_0 bn;
    quant_quantize_row(QTYPE_Q8_0, y, &bn, 32);
    tap_ok(bn.qs[31] == -127 && bn.qs[9] == 0 && bn.d == fp16_from_fp32(3.0f / 127.f),
           "q8_0 negative max maps to -127, d = fp16(3/127)");
}

/* The documented AVX2 formula, written out again for random rows. */
static void test_q8_0_random(void)
{
    enum { N = 32 * 64 };
    static float x[N];
    static block_q8_0 b[N / 32];
    static block_q8_1 b1[N / 32];
    int bad = 0, bad1 = 0, bad_err = 0, ref_differs = 0;
    for (int i = 0; i < N; i++)
        x[i] = qt_gauss() * (i % 97 == 0 ? 30.0f : 1.0f);
    quant_quantize_row(QTYPE_Q8_0, x, b, N);
    quant_quantize_row(QTYPE_Q8_1, x, b1, N);
    for (int i = 0; i < N / 32; i++) {
        float amax = 0;
        for (int j = 0; j < 32; j++)
            amax = fmaxf(amax, fabsf(x[i * 32 + j]));
        const float d = amax / 127.f, id = 127.f / amax;
        int sum = 0;
        for (int j = 0; j < 32; j++) {
            float v = x[i * 32 + j] * id;
            int q = (int)nearbyintf(v);
            sum += q;
            if (b[i].qs[j] != q || b[i].qs[j] < -127)
                bad++;
            if (b1[i].qs[j] != q)
                bad1++;
            if ((int)roundf(x[i * 32 + j] * (1.0f / d)) != q)
                ref_differs++;
            /* |x - q d| <= d/2 up to float rounding */
            if (fabsf(x[i * 32 + j] - q * d) > 0.5f * d * (1 + 1e-5f))
                bad_err++;
        }
        if (b[i].d != fp16_from_fp32(d) || b1[i].d != b[i].d || b1[i].s != fp16_from_fp32(d * (float)sum))
            bad++;
    }
    tap_ok(bad == 0, "q8_0 random: q = rint(x * (127/amax)), d = fp16(amax/127) (%d bad)", bad);
    tap_ok(bad1 == 0, "q8_1 random: same quants and s = fp16(d * sum) (%d bad)", bad1);
    tap_ok(bad_err == 0, "q8_0 random: |x - q*d| <= d/2 (%d bad)", bad_err);
    tap_diag("q8_0: %d of %d quants differ from quantize_row_q8_0_ref's roundf(x/d) choice", ref_differs, N);
}

static void test_q8_K(void)
{
    float x[QK_K] = {0};
    x[10] = -127.0f; /* signed max: iscale = -127 / -127 = 1, d = 1 */
    x[0] = 2.5f;     /* nearest_int ties to even -> 2 */
    x[1] = 3.5f;     /* -> 4 */
    x[2] = -2.5f;    /* -> -2 */
    x[17] = 126.5f;  /* -> 126 */
    x[200] = 127.0f; /* same magnitude, later: max stays -127 (first wins) */
    block_q8_K b;
    quant_quantize_row(QTYPE_Q8_K, x, &b, QK_K);
    int ok = b.d == 1.0f && b.qs[10] == -127 && b.qs[0] == 2 && b.qs[1] == 4 && b.qs[2] == -2 &&
             b.qs[17] == 126 && b.qs[200] == 127;
    ok &= b.bsums[0] == 2 + 4 - 2 - 127 && b.bsums[1] == 126 && b.bsums[12] == 127 && b.bsums[2] == 0;
    tap_ok(ok, "q8_K hand row: signed max, ties to even, bsums (d=%g)", b.d);

    float y[QK_K] = {0};
    y[5] = 127.0f; /* positive max: iscale = -1, d = -1, quants negated */
    y[6] = 2.5f;
    quant_quantize_row(QTYPE_Q8_K, y, &b, QK_K);
    tap_ok(b.d == -1.0f && b.qs[5] == -127 && b.qs[6] == -2 && b.bsums[0] == -129,
           "q8_K positive max gives d < 0 and negated quants (ggml's sign convention)");

    float z[2 * QK_K] = {0};
    block_q8_K bz[2];
    memset(bz, 0x7f, sizeof bz);
    z[QK_K + 3] = 1.0f; /* second block not zero */
    quant_quantize_row(QTYPE_Q8_K, z, bz, 2 * QK_K);
    int zok = bz[0].d == 0.0f;
    for (int j = 0; j < QK_K; j++)
        zok &= bz[0].qs[j] == 0;
    for (int j = 0; j < QK_K / 16; j++)
        zok &= bz[0].bsums[j] == 0;
    zok &= bz[1].qs[3] == -127 && bz[1].bsums[0] == -127;
    tap_ok(zok, "q8_K all-zero block: d = 0, q = 0, bsums = 0; next block independent");

    enum { NB = 16 };
    static float r[NB * QK_K];
    static block_q8_K rb[NB];
    for (int i = 0; i < NB * QK_K; i++)
        r[i] = qt_gauss() * (float)(1 + i / QK_K);
    quant_quantize_row(QTYPE_Q8_K, r, rb, NB * QK_K);
    int bad_range = 0, bad_bsum = 0, bad_err = 0;
    for (int i = 0; i < NB; i++) {
        for (int j = 0; j < QK_K / 16; j++) {
            int s = 0;
            for (int l = 0; l < 16; l++)
                s += rb[i].qs[16 * j + l];
            bad_bsum += s != rb[i].bsums[j];
        }
        for (int j = 0; j < QK_K; j++) {
            bad_range += rb[i].qs[j] < -127; /* int8 caps the top */
            float e = fabsf(r[i * QK_K + j] - rb[i].d * rb[i].qs[j]);
            bad_err += e > 0.5f * fabsf(rb[i].d) * (1 + 1e-5f);
        }
    }
    tap_ok(bad_range == 0 && bad_bsum == 0, "q8_K random: |q| <= 127 and bsums = group sums");
    tap_ok(bad_err == 0, "q8_K random: |x - d*q| <= |d|/2 (%d bad)", bad_err);
}

static void test_float_acts(void)
{
    float x[48];
    for (int i = 0; i < 48; i++)
        x[i] = qt_gauss();
    float y[48];
    uint16_t h[48], b[48];
    quant_quantize_row(QTYPE_F32, x, y, 48);
    quant_quantize_row(QTYPE_F16, x, h, 48);
    quant_quantize_row(QTYPE_BF16, x, b, 48);
    int ok = !memcmp(x, y, sizeof x);
    for (int i = 0; i < 48; i++)
        ok &= h[i] == fp16_from_fp32(x[i]) && b[i] == bf16_from_fp32(x[i]);
    tap_ok(ok, "f32 copy, f16 and bf16 activation rows equal the scalar conversions");
    tap_ok(quant_can_quantize(QTYPE_Q8_K) && !quant_can_quantize(QTYPE_Q4_K) &&
               quant_can_dequantize(QTYPE_Q6_K) && !quant_can_dequantize((qtype_t)16) &&
               quant_can_vec_dot(QTYPE_Q2_K) && !quant_can_vec_dot(QTYPE_Q8_K),
           "capability predicates");
}

/* ---- 4. reference dot products -------------------------------------- */

static void test_vec_dot_hand(void)
{
    block_q4_0 w;
    block_q8_0 a;
    memset(&w, 0, sizeof w);
    memset(&a, 0, sizeof a);
    w.d = H05;
    a.d = H025;
    for (int j = 0; j < 16; j++)
        w.qs[j] = (uint8_t)((j & 15) | ((15 - j) << 4)); /* low: j-8, high: 7-j */
    for (int j = 0; j < 32; j++)
        a.qs[j] = (int8_t)(j - 16);
    int isum = 0;
    for (int j = 0; j < 16; j++)
        isum += (j - 8) * (j - 16) + (7 - j) * (j + 16 - 16);
    float got = quant_vec_dot_ref(QTYPE_Q4_0, 32, &w, &a);
    tap_ok(got == 0.125f * (float)isum, "q4_0 x q8_0 hand block: %g = 0.5*0.25*%d", got, isum);
}

static void test_vec_dot_random(void)
{
    enum { N = 8 * QK_K };
    static uint8_t w[N * 4], act[N * 4];
    static float wf[N], af[N], x[N];
    for (size_t k = 0; k < N_WTYPES; k++) {
        qtype_t t = weight_types[k];
        const qtype_info_t *info = qtype_info(t);
        const qtype_t at = info->vec_dot_type;
        int bad = 0;
        double worst = 0;
        for (int rep = 0; rep < 6; rep++) {
            const int64_t n = rep < 3 ? N : QK_K; /* long and single-block rows */
            qt_random_blocks(t, w, n / info->block_size);
            for (int64_t i = 0; i < n; i++)
                x[i] = qt_gauss() * (rep == 5 ? 1e-3f : 1.0f);
            quant_quantize_row(at, x, act, n);
            quant_dequantize_row(t, w, wf, n);
            quant_dequantize_row(at, act, af, n);
            double exact = 0, mag = 0;
            for (int64_t i = 0; i < n; i++) {
                exact += (double)wf[i] * (double)af[i];
                mag += fabs((double)wf[i] * (double)af[i]);
            }
            /* Q4_1/Q5_1 use Q8_1's s = fp16(d * sum q) for the min term, as
             * ggml does: that rounding (<= 2^-10 relative, fp16 d vs float
             * d included) is part of the algorithm, not a float-order effect. */
            double s_slack = 0;
            if (at == QTYPE_Q8_1)
                for (int64_t b = 0; b < n / 32; b++) {
                    const block_q8_1 *ab = (const block_q8_1 *)act + b;
                    uint16_t m = t == QTYPE_Q4_1 ? ((const block_q4_1 *)w)[b].m
                                                 : ((const block_q5_1 *)w)[b].m;
                    s_slack += fabs(fp16_to_fp32(m) * fp16_to_fp32(ab->s)) * 0x1p-10;
                }
            mag += s_slack / 2e-6;
            float got = quant_vec_dot_ref(t, n, w, act);
            double rel = fabs((double)got - exact) / (mag + 1e-30);
            if (rel > worst)
                worst = rel;
            if (rel > 2e-6 || !isfinite(got))
                bad++;
        }
        tap_ok(bad == 0, "%s x %s: vec_dot_ref == dot of dequantized rows (worst |diff|/sum|w*a| = %.2g)",
               info->name, qtype_info(at)->name, worst);
    }
}

int main(void)
{
    test_hand_blocks();
    test_type_table();
    test_e8m0();
    test_random_dequant();
    test_q8_0_hand();
    test_q8_0_random();
    test_q8_K();
    test_float_acts();
    test_vec_dot_hand();
    test_vec_dot_random();
    return tap_done();
}
