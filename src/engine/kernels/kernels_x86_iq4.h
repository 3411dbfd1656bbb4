/* kernels_x86_iq4.h - x86 dot kernels of the codebook 4-bit types: IQ4_NL
 * and MXFP4 (32-blocks against Q8_0) and IQ4_XS (256-blocks against Q8_K).
 * Included by kernels_x86_body.h at both levels (uses its helpers and
 * macros: KB, KNAME, K_FOR_T, K_ACT, K_EXPORT, k_h2f, k_hsum8,
 * k_nibbles32, k_q8_step, k_madd_acc). Not a public header.
 *
 * A block's 32 nibbles become its 32 signed values with one vpshufb: the
 * 16-entry codebook (quant_blocks.h) sits in both 128-bit lanes and the
 * nibbles index it. Then the Q4_0 arithmetic: vpmaddubsw / vpdpbusd on
 * |w| and sign(a, w), which is exact since |w| <= 127 and the activations
 * are in [-127, 127] (two products of at most 127 * 127 fit int16).
 *
 * Float operations per (row, token), so the same whatever nt (batch
 * invariance, see kernels_x86_body.h):
 *   IQ4_NL, MXFP4: 8 lanes, per block acc = fma(dw * da, (float)S_lane,
 *                  acc); result hsum8(acc) (ggml's AVX2 kernels sum the
 *                  same block integers, in two such chains).
 *   IQ4_XS:        per super-block the 8 sub-block sums times (ls - 32)
 *                  are summed exactly in 8 int32 lanes, then acc = fma(d *
 *                  dy, (float)S_lane, acc); result hsum8(acc) (as ggml's
 *                  AVX2 kernel).
 * With KERN_VNNI, the level's own tiles replace these where
 * kernels_x86_iq4tx.h says so.
 */

/* The codebook in both 128-bit lanes. */
KB __m256i k_lut256(const int8_t values[16])
{
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)values));
}

/* The 32 values of a block from its 16 nibble bytes (element order). */
KB __m256i k_lut_values32(const uint8_t *qs, __m256i lut)
{
    return _mm256_shuffle_epi8(lut, k_nibbles32(qs));
}

/* IQ4_NL and MXFP4 share this body: BLOCK_T's qs are its 16 nibble bytes,
 * SCALE(block) its float scale, VALUES its codebook. */
#define K_LUT32_BODY(BLOCK_T, VALUES, SCALE)                                                  \
    const BLOCK_T *x = w;                                                                     \
    const int64_t nb = n / 32;                                                                \
    const __m256i lut = k_lut256(VALUES);                                                     \
    __m256 acc[KERN_NT_MAX];                                                                  \
    K_FOR_T(t)                                                                                \
        acc[t] = _mm256_setzero_ps();                                                         \
    for (int64_t i = 0; i < nb; i++) {                                                        \
        const __m256i qx = k_lut_values32(x[i].qs, lut);                                     \
        const __m256i ax = _mm256_sign_epi8(qx, qx);                                          \
        const float dx = SCALE(x[i]);                                                         \
        K_FOR_T(t)                                                                            \
            acc[t] = k_q8_step(acc[t], ax, qx, K_ACT(block_q8_0, t, i), dx);                  \
    }                                                                                         \
    K_FOR_T(t)                                                                                \
        out[(size_t)t * out_stride] = k_hsum8(acc[t]);

#define K_SCALE_FP16(b) k_h2f((b).d)
#define K_SCALE_E8M0(b) quant_e8m0_half((b).e)

KB void k_iq4_nl(int64_t n, const void *w, const void *act, size_t act_stride, float *out, size_t out_stride,
                 const int nt)
{
    K_LUT32_BODY(block_iq4_nl, quant_iq4nl_values, K_SCALE_FP16)
}

KB void k_mxfp4(int64_t n, const void *w, const void *act, size_t act_stride, float *out, size_t out_stride,
                const int nt)
{
    K_LUT32_BODY(block_mxfp4, quant_mxfp4_values, K_SCALE_E8M0)
}

/* IQ4_XS: per super-block, per sub-block ib: 32 values by the lookup, 16
 * int16 pair sums (vpmaddubsw), multiplied by ls - 32 and added into 8
 * int32 lanes (vpmaddwd / vpdpwssd). Lane sums stay below 2^31: 8
 * sub-blocks x 2 pairs x 32258 x 32. */
KB void k_iq4_xs(int64_t n, const void *w, const void *act, size_t act_stride, float *out, size_t out_stride,
                 const int nt)
{
    const block_iq4_xs *x = w;
    const int64_t nb = n / QK_K;
    const __m256i lut = k_lut256(quant_iq4nl_values);
    __m256 acc[KERN_NT_MAX];
    K_FOR_T(t)
        acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        /* one or two tokens: even and odd sub-blocks in two chains (exact
         * integers: the split changes no value, only the length of the
         * dependency chain; with more tokens the registers are short) */
        const int split = nt <= 2;
        __m256i sumi[KERN_NT_MAX], sumo[KERN_NT_MAX];
        K_FOR_T(t)
            sumi[t] = sumo[t] = _mm256_setzero_si256();
        for (int ib = 0; ib < QK_K / 32; ib += 2) {
            const __m256i qx0 = k_lut_values32(x[i].qs + 16 * ib, lut);
            const __m256i qx1 = k_lut_values32(x[i].qs + 16 * ib + 16, lut);
            const __m256i ax0 = _mm256_sign_epi8(qx0, qx0), ax1 = _mm256_sign_epi8(qx1, qx1);
            const __m256i sc0 = _mm256_set1_epi16((short)(quant_iq4xs_scale(&x[i], ib) - 32));
            const __m256i sc1 = _mm256_set1_epi16((short)(quant_iq4xs_scale(&x[i], ib + 1) - 32));
            K_FOR_T(t) {
                const int8_t *q8 = K_ACT(block_q8_K, t, i)->qs + 32 * ib;
                const __m256i qy0 = _mm256_loadu_si256((const __m256i *)q8);
                const __m256i qy1 = _mm256_loadu_si256((const __m256i *)(q8 + 32));
                sumi[t] = k_madd_acc(sumi[t], sc0, _mm256_maddubs_epi16(ax0, _mm256_sign_epi8(qy0, qx0)));
                const __m256i p1 = _mm256_maddubs_epi16(ax1, _mm256_sign_epi8(qy1, qx1));
                if (split)
                    sumo[t] = k_madd_acc(sumo[t], sc1, p1);
                else
                    sumi[t] = k_madd_acc(sumi[t], sc1, p1);
            }
        }
        if (split)
            K_FOR_T(t)
                sumi[t] = _mm256_add_epi32(sumi[t], sumo[t]);
        const float dx = k_h2f(x[i].d);
        K_FOR_T(t)
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dx * K_ACT(block_q8_K, t, i)->d), _mm256_cvtepi32_ps(sumi[t]),
                                     acc[t]);
    }
    K_FOR_T(t)
        out[(size_t)t * out_stride] = k_hsum8(acc[t]);
}

K_EXPORT(dot_iq4_nl_, k_iq4_nl)
K_EXPORT(dot_mxfp4_, k_mxfp4)
K_EXPORT(dot_iq4_xs_, k_iq4_xs)

#if KERN_VNNI
#include "engine/kernels/kernels_x86_iq4tx.h"
#endif

/* The entries of this file's types (called by the level's kern_fill_). */
static void KNAME(kern_fill_iq4_)(kern_dot_fn_t tab[QTYPE_COUNT], kern_tile_fn_t tiles[QTYPE_COUNT])
{
    tab[QTYPE_IQ4_NL] = KNAME(dot_iq4_nl_);
    tab[QTYPE_MXFP4] = KNAME(dot_mxfp4_);
    tab[QTYPE_IQ4_XS] = KNAME(dot_iq4_xs_);
#if KERN_VNNI
    KNAME(kern_fill_iq4tx_)(tab, tiles);
#else
    (void)tiles;
#endif
}
