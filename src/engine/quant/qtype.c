/* qtype.c - the table of ggml type traits (sizes as in ggml.c). */
#include "engine/quant/qtype.h"

#include <string.h>

#define T(id, nm, bs, ts, sup, vd) [id] = {nm, bs, ts, sup, vd}

static const qtype_info_t table[QTYPE_COUNT] = {
    T(QTYPE_F32, "f32", 1, 4, true, QTYPE_F32),
    T(QTYPE_F16, "f16", 1, 2, true, QTYPE_F16),
    T(QTYPE_Q4_0, "q4_0", 32, 18, true, QTYPE_Q8_0),
    T(QTYPE_Q4_1, "q4_1", 32, 20, true, QTYPE_Q8_1),
    T(QTYPE_Q5_0, "q5_0", 32, 22, true, QTYPE_Q8_0),
    T(QTYPE_Q5_1, "q5_1", 32, 24, true, QTYPE_Q8_1),
    T(QTYPE_Q8_0, "q8_0", 32, 34, true, QTYPE_Q8_0),
    T(QTYPE_Q8_1, "q8_1", 32, 36, false, QTYPE_Q8_1),
    T(QTYPE_Q2_K, "q2_K", QK_K, 84, true, QTYPE_Q8_K),
    T(QTYPE_Q3_K, "q3_K", QK_K, 110, true, QTYPE_Q8_K),
    T(QTYPE_Q4_K, "q4_K", QK_K, 144, true, QTYPE_Q8_K),
    T(QTYPE_Q5_K, "q5_K", QK_K, 176, true, QTYPE_Q8_K),
    T(QTYPE_Q6_K, "q6_K", QK_K, 210, true, QTYPE_Q8_K),
    T(QTYPE_Q8_K, "q8_K", QK_K, 292, false, QTYPE_Q8_K),
    /* Non-linear 4-bit types (a 16-value codebook, see quant_blocks.h). */
    T(QTYPE_IQ4_NL, "iq4_nl", 32, 18, true, QTYPE_Q8_0),
    T(QTYPE_IQ4_XS, "iq4_xs", QK_K, 136, true, QTYPE_Q8_K),
    T(QTYPE_MXFP4, "mxfp4", 32, 17, true, QTYPE_Q8_0),
    /* Known layouts we do not compute with (other IQ types, ternary, ...):
     * listed so the loader can validate extents and name them in the
     * error. */
    T(16, "iq2_xxs", QK_K, 66, false, 16),
    T(17, "iq2_xs", QK_K, 74, false, 17),
    T(18, "iq3_xxs", QK_K, 98, false, 18),
    T(19, "iq1_s", QK_K, 50, false, 19),
    T(21, "iq3_s", QK_K, 110, false, 21),
    T(22, "iq2_s", QK_K, 82, false, 22),
    T(24, "i8", 1, 1, false, 24),
    T(25, "i16", 1, 2, false, 25),
    T(26, "i32", 1, 4, false, 26),
    T(27, "i64", 1, 8, false, 27),
    T(28, "f64", 1, 8, false, 28),
    T(29, "iq1_m", QK_K, 56, false, 29),
    T(QTYPE_BF16, "bf16", 1, 2, true, QTYPE_BF16),
    T(34, "tq1_0", QK_K, 54, false, 34),
    T(35, "tq2_0", QK_K, 66, false, 35),
    T(40, "nvfp4", 64, 36, false, 40),
    T(41, "q1_0", 128, 18, false, 41),
    T(42, "q2_0", 64, 18, false, 42),
};

const qtype_info_t *qtype_info(uint32_t t)
{
    if (t >= QTYPE_COUNT || !table[t].name)
        return NULL;
    return &table[t];
}

const char *qtype_name(uint32_t t)
{
    const qtype_info_t *info = qtype_info(t);
    return info ? info->name : "unknown";
}

size_t qtype_row_size(qtype_t t, int64_t n)
{
    const qtype_info_t *info = qtype_info(t);
    if (!info || n < 0 || n % info->block_size)
        return 0;
    return (size_t)(n / info->block_size) * (size_t)info->type_size;
}

void qtype_supported_names(char *buf, size_t cap)
{
    size_t len = 0;
    if (!cap)
        return;
    buf[0] = '\0';
    for (uint32_t t = 0; t < QTYPE_COUNT; t++) {
        if (!table[t].name || !table[t].supported)
            continue;
        const char *sep = len ? ", " : "";
        size_t need = strlen(sep) + strlen(table[t].name);
        if (len + need >= cap)
            return;
        strcpy(buf + len, sep);
        strcpy(buf + len + strlen(sep), table[t].name);
        len += need;
    }
}
