/* kernels_x86_q5tx.h - the Q5_0 and Q4_0 tiles of the VNNI level: 16 weight rows
 * with the rows in the 16 lanes of a register, any token count. Included
 * by kernels_x86_body.h after kernels_x86_q8tx.h, whose k_q8tx_blocks does
 * the sums: a Q5_0 block decoded to 32 int8 values
 * (nibble | high bit << 4) - 16 is a Q8_0 block with the same scale, and
 * Q5_0's activations are Q8_0. Not a public header.
 *
 * Per block, the 16 rows' qs words (4) and qh word are read with gathers
 * (the packed layout of kpack.h has them in place: kernels_x86_packed.h)
 * and decoded lane-wise: dword d of the int8 values is the low (d < 4) or
 * high (d >= 4) nibbles of qs word d % 4, or'ed with qh bits 4d..4d+3
 * spread one per byte (a multiply by 0x00204081 moves bit k to byte k
 * without carries) and shifted to bit 4.
 *
 * Q4_0 is the same without qh: (nibble - 8) per byte, its qs words at
 * block byte 2.
 *
 * Integer block sums are exact. Float operations per (row, token), per
 * block in order, lane-wise: a = fma(dw * da, (float)S, a) (the Q8_0
 * tile's), and the result is a, whatever nr, nt or layout. These differ
 * from the AVX2 level's order (8 float lanes summed at the end), within
 * the tolerance kernels.h allows between levels.
 */

/* The 8 decoded int8 dwords of one block: qs[j] lane r = qs word j of row
 * r, qh lane r = row r's qh. */
KB void k_q5_decode(const __m512i qs[4], __m512i qh, __m512i v[8])
{
    const __m512i m4 = _mm512_set1_epi8(0xF), b1 = _mm512_set1_epi32(0x01010101);
    const __m512i spread = _mm512_set1_epi32(0x00204081), k16 = _mm512_set1_epi8(16);
    const __m512i nib4 = _mm512_set1_epi32(0xF);
    _Pragma("GCC unroll 8") for (int d = 0; d < 8; d++) {
        const __m512i nib = d < 4 ? _mm512_and_si512(qs[d], m4) : _mm512_and_si512(_mm512_srli_epi16(qs[d - 4], 4), m4);
        const __m512i bits = _mm512_and_si512(_mm512_srli_epi32(qh, 4 * d), nib4);
        const __m512i hb = _mm512_slli_epi32(_mm512_and_si512(_mm512_mullo_epi32(bits, spread), b1), 4);
        v[d] = _mm512_sub_epi8(_mm512_or_si512(nib, hb), k16);
    }
}

/* Q4_0: the 8 int8 dwords (nibble - 8) of one block from its 4 qs words. */
KB void k_q4_0_decode(const __m512i qs[4], __m512i v[8])
{
    const __m512i m4 = _mm512_set1_epi8(0xF), k8 = _mm512_set1_epi8(8);
    _Pragma("GCC unroll 8") for (int d = 0; d < 8; d++) {
        const __m512i nib = d < 4 ? _mm512_and_si512(qs[d], m4) : _mm512_and_si512(_mm512_srli_epi16(qs[d - 4], 4), m4);
        v[d] = _mm512_sub_epi8(nib, k8);
    }
}

/* Block i of the 16 rows at w + offs[r] (original layout): decoded
 * dwords to v[0..7], the scales returned. */
KB __m512 k_q5_gather(const uint8_t *w, __m512i vofs, int64_t i, __m512i v[8])
{
    const uint8_t *base = w + (size_t)i * sizeof(block_q5_0);
    __m512i qs[4];
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
        qs[j] = _mm512_i32gather_epi32(vofs, (const void *)(base + 6 + 4 * j), 1);
    const __m512i qh = _mm512_i32gather_epi32(vofs, (const void *)(base + 2), 1);
    k_q5_decode(qs, qh, v);
    /* d: the low half of the dword at 0 */
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(vofs, (const void *)base, 1)));
}

/* Q4_0: block i of the 16 rows (original layout), as k_q5_gather. */
KB __m512 k_q4_0_gather(const uint8_t *w, __m512i vofs, int64_t i, __m512i v[8])
{
    const uint8_t *base = w + (size_t)i * sizeof(block_q4_0);
    __m512i qs[4];
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
        qs[j] = _mm512_i32gather_epi32(vofs, (const void *)(base + 2 + 4 * j), 1);
    k_q4_0_decode(qs, v);
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(vofs, (const void *)base, 1)));
}

/* 16 rows of Q5_0 (q4 = 0) or Q4_0 (q4 = 1), all nt tokens. */
KB void k_q45_0_tx(int64_t n, const uint8_t *w, size_t w_stride, int nr, const void *act, size_t act_stride,
                   float *out, size_t out_stride, const int nt, const int q4)
{
    const int64_t nb = n / QK5_0;
    int32_t offs[16];
    const __m512i vofs = k_tx_offsets(offs, w_stride, nr);
    __m512 acc[KERN_NT_MAX];
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i += 2) {
        const int two = i + 1 < nb;
        __m512i v[16];
        const __m512 dw0 = q4 ? k_q4_0_gather(w, vofs, i, v) : k_q5_gather(w, vofs, i, v);
        const __m512 dw1 = !two ? _mm512_setzero_ps() : q4 ? k_q4_0_gather(w, vofs, i + 1, v + 8)
                                                           : k_q5_gather(w, vofs, i + 1, v + 8);
        if (two)
            k_q8tx_blocks(v, dw0, dw1, act, act_stride, i, nt, acc, 1);
        else
            k_q8tx_blocks(v, dw0, dw1, act, act_stride, i, nt, acc, 0);
    }
    k_tx_store(acc, nr, nt, out, out_stride);
}

static void KNAME(tile_q5_0x_)(int64_t n, const void *w, size_t w_stride, int nr, const void *act,
                               size_t act_stride, int nt, float *out, size_t out_stride)
{
    for (int r = 0; r < nr; r += 16)
        k_q45_0_tx(n, (const uint8_t *)w + (size_t)r * w_stride, w_stride, nr - r < 16 ? nr - r : 16, act, act_stride,
                   out + r, out_stride, nt, 0);
}

static void KNAME(dot1_q5_0_)(int64_t n, const void *w, const void *act, size_t act_stride, int nt, float *out,
                              size_t out_stride)
{
    KNAME(tile_q5_0x_)(n, w, 0, 1, act, act_stride, nt, out, out_stride);
}

static void KNAME(tile_q4_0x_)(int64_t n, const void *w, size_t w_stride, int nr, const void *act,
                               size_t act_stride, int nt, float *out, size_t out_stride)
{
    for (int r = 0; r < nr; r += 16)
        k_q45_0_tx(n, (const uint8_t *)w + (size_t)r * w_stride, w_stride, nr - r < 16 ? nr - r : 16, act, act_stride,
                   out + r, out_stride, nt, 1);
}

static void KNAME(dot1_q4_0_)(int64_t n, const void *w, const void *act, size_t act_stride, int nt, float *out,
                              size_t out_stride)
{
    KNAME(tile_q4_0x_)(n, w, 0, 1, act, act_stride, nt, out, out_stride);
}
