/* kernels_x86_iq4tx.h - the tiles of the VNNI level for the codebook
 * types: 16 weight rows with the rows in the 16 lanes of a register, for
 * any number of tokens. Included by kernels_x86_iq4.h when KERN_VNNI.
 * Uses kernels_x86_q4tx.h's k_tr16, k_bc4, k_tx_offsets, k_tx_store and
 * K_FOR_T4, kernels_x86_ktile.h's pair tree (k_pairs_sum8) and
 * kernels_x86_q8tx.h's per-token Q8_0 steps (q8tx_g*, k_q8_qs2,
 * K_Q8_LQ). Not a public header.
 *
 * IQ4_XS (against Q8_K). Per 256-value super-block, the 16 rows' 128 nibble
 * bytes are transposed (16 x 16 dwords, twice) so that lane r of register
 * D holds bytes 4D..4D+3 of row r's qs; each nibble is looked up (vpshufb)
 * in the codebook biased by +128, an unsigned byte. Then per token,
 * vpdpbusd of those bytes against the broadcast 4 activations they
 * multiply gives, per row lane and sub-block ib, U_ib = sum (w + 128) * a;
 * vpmulld by the sub-block scale ls - 32 and a sum over the 8 sub-blocks
 * give sum_ib sc_ib * U_ib, from which 128 * sum_ib sc_ib * A_ib is taken
 * (A_ib = the sub-block's activation sum, two Q8_K bsums: vpdpwssd of
 * (sc, sc) pairs against the broadcast bsum pairs). The scales are decoded
 * for the 16 rows at once from gathered dwords. All integer, exact, inside
 * int32 (|sum sc U| < 8 * 32 * 32 * 241 * 127 < 2^28).
 *
 * One token (decode) takes a fused copy of this that keeps the looked-up
 * values in registers instead of storing them for the token groups.
 *
 * Float operations per (row, token), per super-block in order, lane-wise:
 *   a = fma(d * dy, (float)S, a)      (S the exact super-block total)
 * and the result is a, whatever nr, nt, the row's lane or the token's
 * place: a single row or token is the same tile (batch invariance). This
 * differs from the AVX2 level's float order (8 lanes, then a horizontal
 * sum), within the tolerance kernels.h allows between levels.
 *
 * IQ4_NL and MXFP4 (against Q8_0). Per two 32-value blocks, each row's 32
 * nibble bytes become its 64 signed values (vpshufb in the codebook) in
 * one register, the 16 registers are transposed (lane r of register d:
 * values 4d..4d+3 of row r; d < 8 the first block, d >= 8 the second), and
 * the tokens go through the Q8_0 rows-in-lanes machinery of
 * kernels_x86_q8tx.h (activations made unsigned, seeds -128 * sum(w) per
 * row and block). One token skips the transposition: each row's values
 * + 128 against the signed activations, the (row, block) sums reduced by
 * the pair tree (as kernels_x86_q8tx.h's Q8_0 tree). Float operations per
 * (row, token), per block in order, in both:
 *   a = fma(dw * da, (float)S, a)
 * (dw the fp16 d, or 2^(e-128) for MXFP4), the result a, for every nt.
 *
 * Rows past nr repeat row 0 (their lanes are not stored).
 */

/* The codebook + 128 as unsigned bytes, in the four 128-bit lanes. */
KB __m512i k_lut512_biased(const int8_t values[16])
{
    const __m128i v = _mm_loadu_si128((const __m128i *)values);
    return _mm512_broadcast_i32x4(_mm_xor_si128(v, _mm_set1_epi8((char)0x80)));
}

/* Prefetches the lines of [p, p + len) into L1 or L2 (l2). */
KB void k_iq4_prefetch(const uint8_t *p, size_t len, const int l2)
{
    for (size_t o = 0; o <= len + 62; o += 64) {
        const char *q = (const char *)p + (o < len ? o : len - 1);
        if (l2)
            _mm_prefetch(q, _MM_HINT_T1);
        else
            _mm_prefetch(q, _MM_HINT_T0);
    }
}

/* The d (as floats) and sub-block scales ls - 32 (sc[ib], and as int16
 * pairs (sc, sc) in scp[ib]) of the 16 rows' super-block at base + offs. */
KB __m512 k_iq4xs_scales(const uint8_t *base, __m512i vofs, __m512i sc[8], __m512i scp[8])
{
    const __m512i m15 = _mm512_set1_epi32(15), m3 = _mm512_set1_epi32(3), c32 = _mm512_set1_epi32(32);
    /* d | scales_h << 16, and scales_l */
    const __m512i dsh = _mm512_i32gather_epi32(vofs, (const void *)base, 1);
    const __m512i sl = _mm512_i32gather_epi32(vofs, (const void *)(base + 4), 1);
    const __m512i sh = _mm512_srli_epi32(dsh, 16);
    _Pragma("GCC unroll 8") for (int ib = 0; ib < 8; ib++) {
        const __m512i lo = _mm512_and_si512(_mm512_srli_epi32(sl, 4 * ib), m15);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi32(sh, 2 * ib), m3);
        sc[ib] = _mm512_sub_epi32(_mm512_or_si512(lo, _mm512_slli_epi32(hi, 4)), c32);
        scp[ib] = _mm512_or_si512(_mm512_and_si512(sc[ib], _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(sc[ib], 16));
    }
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dsh));
}

/* v[d] lane r = qs dword 16c + d of row r (half c of the super-block's
 * 128 nibble bytes); prefetches [pf, pf + 136) of each row's block. */
KB void k_iq4xs_half(const uint8_t *base, const int32_t offs[16], const int c, size_t pf, const int l2,
                     __m512i v[16])
{
    _Pragma("GCC unroll 16") for (int r = 0; r < 16; r++) {
        const uint8_t *p = base + offs[r];
        if (c == 0)
            k_iq4_prefetch(p + pf, sizeof(block_iq4_xs), l2);
        v[r] = _mm512_loadu_si512((const void *)(p + 8 + 64 * c));
    }
    k_tr16(v);
}

/* The block's term for the 16 rows: tot = sum_ib sc_ib * U_ib - 128 *
 * sum_ib sc_ib * A_ib (see the file comment), then the float step. */
KB __m512 k_iq4xs_finish(__m512i s, const __m512i scp[8], const block_q8_K *y, __m512 dx, __m512 acc)
{
    __m512i m = _mm512_setzero_si512();
    _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) m = _mm512_dpwssd_epi32(m, scp[k], k_bc4(y->bsums + 2 * k));
    const __m512i tot = _mm512_sub_epi32(s, _mm512_slli_epi32(m, 7));
    return _mm512_fmadd_ps(_mm512_mul_ps(dx, _mm512_set1_ps(y->d)), _mm512_cvtepi32_ps(tot), acc);
}

/* Tokens 0..ng-1 (ng <= 4) of super-block i: acc[t] gets the block's term.
 * wq[0][D] / wq[1][D]: biased values of the low / high nibbles of qs dword
 * D; sc[ib]: ls - 32 per row lane; scp[ib]: (sc, sc) as int16 pairs. */
KB void k_iq4xs_tokens(const void *act, size_t act_stride, int64_t i, const __m512i wq[2][32],
                       const __m512i sc[8], const __m512i scp[8], __m512 dx, __m512 *acc, const int ng)
{
    /* at least 8 independent vpdpbusd chains whatever ng */
    const int nh = ng >= 4 ? 1 : ng >= 2 ? 2 : 4;
    __m512i s[4];
    K_FOR_T4(t) s[t] = _mm512_setzero_si512();
    /* not unrolled (decoded-uop cache, as kernels_x86_q4tx.h) */
    _Pragma("GCC unroll 1") for (int ib = 0; ib < 8; ib++) {
        __m512i u[4][4];
        _Pragma("GCC unroll 4") for (int h = 0; h < nh; h++) K_FOR_T4(t) u[h][t] = _mm512_setzero_si512();
        _Pragma("GCC unroll 8") for (int g = 0; g < 8; g++) {
            const int h = g % nh, q = g % 4, hi = g / 4;
            const __m512i wv = wq[hi][4 * ib + q];
            K_FOR_T4(t) {
                const int8_t *y = K_ACT(block_q8_K, t, i)->qs + 32 * ib + 16 * hi + 4 * q;
                u[h][t] = _mm512_dpbusd_epi32(u[h][t], wv, k_bc4(y));
            }
        }
        K_FOR_T4(t) {
            __m512i v = u[0][t];
            _Pragma("GCC unroll 4") for (int h = 1; h < nh; h++) v = _mm512_add_epi32(v, u[h][t]);
            s[t] = _mm512_add_epi32(s[t], _mm512_mullo_epi32(v, sc[ib]));
        }
    }
    K_FOR_T4(t) acc[t] = k_iq4xs_finish(s[t], scp, K_ACT(block_q8_K, t, i), dx, acc[t]);
}

#define K_IQ4XS_GROUP(ng)                                                                                       \
    static __attribute__((noinline)) void KNAME(iq4xs_g##ng##_)(const void *act, size_t act_stride, int64_t i, \
                                                                const __m512i wq[2][32], const __m512i sc[8],  \
                                                                const __m512i scp[8], __m512 dx, __m512 *acc)  \
    {                                                                                                           \
        k_iq4xs_tokens(act, act_stride, i, wq, sc, scp, dx, acc, ng);                                           \
    }
K_IQ4XS_GROUP(1)
K_IQ4XS_GROUP(2)
K_IQ4XS_GROUP(3)
K_IQ4XS_GROUP(4)

/* One token: the looked-up values go straight into the dot products (no
 * copy of the block's 64 registers as for several tokens). The same
 * integers and float operations as k_iq4xs_tokens. */
static void KNAME(iq4_xs_tx1_)(int64_t n, const uint8_t *w, size_t w_stride, int nr, const void *act, float *out)
{
    const int64_t nb = n / QK_K;
    int32_t offs[16];
    const __m512i vofs = k_tx_offsets(offs, w_stride, nr);
    const __m512i m4 = _mm512_set1_epi8(0xF), lut = k_lut512_biased(quant_iq4nl_values);
    const block_q8_K *y = act;
    /* the same block of the next tile's rows, into L2 (weights streamed
     * once; into L1 it was 1.6x slower from DRAM: bench_kernels stream) */
    const size_t pf = 16 * w_stride;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++, y++) {
        const uint8_t *base = w + (size_t)i * sizeof(block_iq4_xs);
        __m512i sc[8], scp[8];
        const __m512 dx = k_iq4xs_scales(base, vofs, sc, scp);
        __m512i s = _mm512_setzero_si512();
        _Pragma("GCC unroll 1") for (int c = 0; c < 2; c++) {
            __m512i v[16];
            k_iq4xs_half(base, offs, c, pf, 1, v);
            _Pragma("GCC unroll 4") for (int q4 = 0; q4 < 4; q4++) {
                const int ib = 4 * c + q4;
                __m512i ul = _mm512_setzero_si512(), uh = _mm512_setzero_si512();
                _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) {
                    const __m512i x = v[4 * q4 + q];
                    const __m512i lo = _mm512_shuffle_epi8(lut, _mm512_and_si512(x, m4));
                    const __m512i hi = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(x, 4), m4));
                    ul = _mm512_dpbusd_epi32(ul, lo, k_bc4(y->qs + 32 * ib + 4 * q));
                    uh = _mm512_dpbusd_epi32(uh, hi, k_bc4(y->qs + 32 * ib + 16 + 4 * q));
                }
                s = _mm512_add_epi32(s, _mm512_mullo_epi32(_mm512_add_epi32(ul, uh), sc[ib]));
            }
        }
        acc = k_iq4xs_finish(s, scp, y, dx, acc);
    }
    _mm512_mask_storeu_ps(out, (__mmask16)((1u << nr) - 1), acc);
}

/* 16 rows (nr real) x nt (2..KERN_NT_MAX) tokens. */
static void KNAME(iq4_xs_tx_)(int64_t n, const uint8_t *w, size_t w_stride, int nr, const void *act,
                              size_t act_stride, float *out, size_t out_stride, const int nt)
{
    const int64_t nb = n / QK_K;
    int32_t offs[16];
    const __m512i vofs = k_tx_offsets(offs, w_stride, nr);
    const __m512i m4 = _mm512_set1_epi8(0xF), lut = k_lut512_biased(quant_iq4nl_values);
    __m512 acc[KERN_NT_MAX];
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *base = w + (size_t)i * sizeof(block_iq4_xs);
        __m512i sc[8], scp[8];
        const __m512 dx = k_iq4xs_scales(base, vofs, sc, scp);
        /* wq[0][D] / wq[1][D]: the low / high nibbles of dword D, looked up */
        __m512i wq[2][32];
        _Pragma("GCC unroll 2") for (int c = 0; c < 2; c++) {
            __m512i v[16];
            k_iq4xs_half(base, offs, c, K_PF_DIST, 0, v);
            _Pragma("GCC unroll 16") for (int d = 0; d < 16; d++) {
                wq[0][16 * c + d] = _mm512_shuffle_epi8(lut, _mm512_and_si512(v[d], m4));
                wq[1][16 * c + d] = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v[d], 4), m4));
            }
        }
        const __m512i(*wc)[32] = (const __m512i(*)[32])wq;
        for (int t = 0; t < nt; t += 4) {
            const void *a = (const uint8_t *)act + (size_t)t * act_stride;
            switch (nt - t < 4 ? nt - t : 4) {
            case 1: KNAME(iq4xs_g1_)(a, act_stride, i, wc, sc, scp, dx, acc + t); break;
            case 2: KNAME(iq4xs_g2_)(a, act_stride, i, wc, sc, scp, dx, acc + t); break;
            case 3: KNAME(iq4xs_g3_)(a, act_stride, i, wc, sc, scp, dx, acc + t); break;
            default: KNAME(iq4xs_g4_)(a, act_stride, i, wc, sc, scp, dx, acc + t); break;
            }
        }
    }
    k_tx_store(acc, nr, nt, out, out_stride);
}

/* ---- IQ4_NL / MXFP4 ---------------------------------------------------- */

/* The 64 values of blocks b0 and b0 + bsize (two) or of b0 and zeros, from
 * their nibble bytes at qs_off: [b0 elements 0..31 | second block 0..31]. */
KB __m512i k_lut64(const uint8_t *b0, size_t bsize, size_t qs_off, __m512i lut, const int two)
{
    const __m128i a = _mm_loadu_si128((const __m128i *)(b0 + qs_off));
    const __m128i b = two ? _mm_loadu_si128((const __m128i *)(b0 + bsize + qs_off)) : _mm_setzero_si128();
    /* [a, a, b, b], the high nibbles in the odd 128-bit lanes */
    __m512i z = _mm512_shuffle_i64x2(_mm512_castsi128_si512(a), _mm512_castsi128_si512(b), 0x00);
    z = _mm512_mask_srli_epi16(z, (__mmask32)0xFF00FF00u, z, 4);
    const __m512i vals = _mm512_shuffle_epi8(lut, _mm512_and_si512(z, _mm512_set1_epi8(0xF)));
    return two ? vals : _mm512_maskz_mov_epi32((__mmask16)0x00FF, vals);
}

/* 16 floats: the block scales of 16 rows from the first two bytes of
 * their blocks (h[r]: IQ4_NL's fp16 d; MXFP4's e is the low byte). The
 * bytes are collected by scalar loads: with vpgatherdd the single-token
 * kernel took ~1.5x as long on Zen 4 (bench_kernels decode, median). */
KB __m512 k_lut32_scales(const uint16_t h[16], const int is_mx)
{
    const __m256i w = _mm256_loadu_si256((const __m256i *)h);
    if (!is_mx)
        return _mm512_cvtph_ps(w);
    /* E8M0 halved: e < 2 -> 0x00200000 << e (subnormal), else (e - 1) << 23 */
    const __m512i e = _mm512_and_si512(_mm512_cvtepu16_epi32(w), _mm512_set1_epi32(0xFF));
    const __m512i norm = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
    const __m512i sub = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
    const __mmask16 small = _mm512_cmplt_epi32_mask(e, _mm512_set1_epi32(2));
    return _mm512_castsi512_ps(_mm512_mask_blend_epi32(small, norm, sub));
}

/* 16 rows (nr real) x nt (1..KERN_NT_MAX) tokens of a bsize-byte 32-block
 * type with its nibbles at qs_off (IQ4_NL: fp16 d at 0; MXFP4: e at 0). */
KB void k_lut32_tx(int64_t n, const uint8_t *w, size_t w_stride, int nr, const void *act, size_t act_stride,
                   float *out, size_t out_stride, const int nt, const size_t bsize, const size_t qs_off,
                   const int8_t values[16], const int is_mx)
{
    const int64_t nb = n / 32;
    int32_t offs[16];
    k_tx_offsets(offs, w_stride, nr);
    const __m512i lut = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)values));
    /* one token: the same blocks of the next tile's rows, into L2 */
    const size_t pf = nt == 1 ? 16 * w_stride : K_PF_DIST;
    __m512 acc[KERN_NT_MAX];
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i += 2) {
        const int two = i + 1 < nb;
        const uint8_t *base = w + (size_t)i * bsize;
        uint16_t h0[16], h1[16];
        __m512i v[16];
        _Pragma("GCC unroll 16") for (int r = 0; r < 16; r++) {
            const uint8_t *p = base + offs[r];
            if (nt == 1)
                k_iq4_prefetch(p + pf, 2 * bsize, 1);
            else
                k_iq4_prefetch(p + pf, 2 * bsize, 0);
            v[r] = two ? k_lut64(p, bsize, qs_off, lut, 1) : k_lut64(p, bsize, qs_off, lut, 0);
            memcpy(&h0[r], p, 2);
            if (two)
                memcpy(&h1[r], p + bsize, 2);
        }
        k_tr16(v);
        const __m512 dw0 = k_lut32_scales(h0, is_mx);
        if (two)
            k_q8tx_blocks(v, dw0, k_lut32_scales(h1, is_mx), act, act_stride, i, nt, acc, 1);
        else
            k_q8tx_blocks(v, dw0, _mm512_setzero_ps(), act, act_stride, i, nt, acc, 0);
    }
    k_tx_store(acc, nr, nt, out, out_stride);
}

/* One token, 16 rows (nr real): no transposition. Per row and pair of
 * blocks, the values + 128 (the biased codebook) against the signed
 * activations by vpdpbusd, seeded with -128 * sum(a) per lane; the 16
 * rows' (row, block) 8-lane sums reduced together by the pair tree of
 * kernels_x86_ktile.h, then permuted to rows in lanes. The same integers
 * and float operations as k_lut32_tx (as kernels_x86_q8tx.h's tree does
 * for Q8_0). */
KB void k_lut32_tree(int64_t n, const uint8_t *w, size_t w_stride, int nr, const void *act, float *out,
                     const size_t bsize, const size_t qs_off, const int8_t values[16], const int is_mx)
{
    /* lane r: (row r, first block) and (row r, second block) of the two
     * trees' results: pair 2r (2r + 1) of rows 0..7 in lane K_Q8_LQ(2r)
     * of the first, rows 8..15 in the second (index + 16) */
    int32_t ix[2][16];
    for (int r = 0; r < 16; r++)
        for (int b = 0; b < 2; b++)
            ix[b][r] = (r < 8 ? 0 : 16) + K_Q8_LQ(2 * (r % 8) + b);
    const __m512i i0 = _mm512_loadu_si512((const void *)ix[0]), i1 = _mm512_loadu_si512((const void *)ix[1]);
    const int64_t nb = n / 32;
    int32_t offs[16];
    k_tx_offsets(offs, w_stride, nr);
    const __m512i bias = _mm512_set1_epi8((char)0x80), lut = k_lut512_biased(values);
    const size_t pf = 16 * w_stride; /* the next tile's rows, into L2 */
    const block_q8_0 *y = act;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i += 2) {
        const int two = i + 1 < nb;
        const uint8_t *base = w + (size_t)i * bsize;
        const __m512i a = k_q8_qs2(y + i, two);
        const __m512i negc =
            _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, a));
        uint16_t h0[16], h1[16];
        __m512i p[16];
        _Pragma("GCC unroll 16") for (int r = 0; r < 16; r++) {
            const uint8_t *x = base + offs[r];
            k_iq4_prefetch(x + pf, 2 * bsize, 1);
            const __m512i wu = two ? k_lut64(x, bsize, qs_off, lut, 1) : k_lut64(x, bsize, qs_off, lut, 0);
            p[r] = _mm512_dpbusd_epi32(negc, wu, a);
            memcpy(&h0[r], x, 2);
            if (two)
                memcpy(&h1[r], x + bsize, 2);
        }
        const __m512i r0 = k_pairs_sum8(p), r1 = k_pairs_sum8(p + 8);
        const __m512 dw0 = k_lut32_scales(h0, is_mx);
        acc = _mm512_fmadd_ps(_mm512_mul_ps(dw0, _mm512_set1_ps(k_h2f(y[i].d))),
                              _mm512_cvtepi32_ps(_mm512_permutex2var_epi32(r0, i0, r1)), acc);
        if (two) {
            const __m512 dw1 = k_lut32_scales(h1, is_mx);
            acc = _mm512_fmadd_ps(_mm512_mul_ps(dw1, _mm512_set1_ps(k_h2f(y[i + 1].d))),
                                  _mm512_cvtepi32_ps(_mm512_permutex2var_epi32(r0, i1, r1)), acc);
        }
    }
    _mm512_mask_storeu_ps(out, (__mmask16)((1u << nr) - 1), acc);
}

/* Single tokens by the tree, more by the transposed tile. */
#define K_LUT32_TILE(name, BLOCK_T, VALUES, IS_MX)                                                              \
    static void KNAME(tile_##name)(int64_t n, const void *w, size_t w_stride, int nr, const void *act,          \
                                   size_t act_stride, int nt, float *out, size_t out_stride)                    \
    {                                                                                                           \
        for (int r = 0; r < nr; r += 16) {                                                                      \
            const uint8_t *wr = (const uint8_t *)w + (size_t)r * w_stride;                                      \
            const int n16 = nr - r < 16 ? nr - r : 16;                                                          \
            if (nt == 1)                                                                                        \
                k_lut32_tree(n, wr, w_stride, n16, act, out + r, sizeof(BLOCK_T), offsetof(BLOCK_T, qs),        \
                             VALUES, IS_MX);                                                                    \
            else                                                                                                \
                k_lut32_tx(n, wr, w_stride, n16, act, act_stride, out + r, out_stride, nt, sizeof(BLOCK_T),     \
                           offsetof(BLOCK_T, qs), VALUES, IS_MX);                                               \
        }                                                                                                       \
    }                                                                                                           \
    static void KNAME(dot1_##name)(int64_t n, const void *w, const void *act, size_t act_stride, int nt,        \
                                   float *out, size_t out_stride)                                               \
    {                                                                                                           \
        KNAME(tile_##name)(n, w, 0, 1, act, act_stride, nt, out, out_stride);                                   \
    }
K_LUT32_TILE(iq4_nl_, block_iq4_nl, quant_iq4nl_values, 0)
K_LUT32_TILE(mxfp4_, block_mxfp4, quant_mxfp4_values, 1)

/* Single tokens by the fused kernel, more by the shared-decode one (the
 * same float operations per (row, token), so the choice never changes a
 * value). */
static void KNAME(tile_iq4_xs_)(int64_t n, const void *w, size_t w_stride, int nr, const void *act,
                                size_t act_stride, int nt, float *out, size_t out_stride)
{
    for (int r = 0; r < nr; r += 16) {
        const uint8_t *wr = (const uint8_t *)w + (size_t)r * w_stride;
        const int n16 = nr - r < 16 ? nr - r : 16;
        if (nt == 1)
            KNAME(iq4_xs_tx1_)(n, wr, w_stride, n16, act, out + r);
        else
            KNAME(iq4_xs_tx_)(n, wr, w_stride, n16, act, act_stride, out + r, out_stride, nt);
    }
}

static void KNAME(dot1_iq4_xs_)(int64_t n, const void *w, const void *act, size_t act_stride, int nt, float *out,
                                size_t out_stride)
{
    KNAME(tile_iq4_xs_)(n, w, 0, 1, act, act_stride, nt, out, out_stride);
}

static void KNAME(kern_fill_iq4tx_)(kern_dot_fn_t tab[QTYPE_COUNT], kern_tile_fn_t tiles[QTYPE_COUNT])
{
    tab[QTYPE_IQ4_XS] = KNAME(dot1_iq4_xs_);
    tiles[QTYPE_IQ4_XS] = KNAME(tile_iq4_xs_);
    tab[QTYPE_IQ4_NL] = KNAME(dot1_iq4_nl_);
    tiles[QTYPE_IQ4_NL] = KNAME(tile_iq4_nl_);
    tab[QTYPE_MXFP4] = KNAME(dot1_mxfp4_);
    tiles[QTYPE_MXFP4] = KNAME(tile_mxfp4_);
}
