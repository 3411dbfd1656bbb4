/* kernels_x86_q8tx.h - the Q8_0 tiles of the VNNI level: 16 weight rows
 * with the rows in the 16 lanes of a register. Included by
 * kernels_x86_body.h after kernels_x86_ktile.h (uses its pair tree and
 * kernels_x86_q4tx.h's k_tr16, k_tx_offsets and k_tx_store). Not a public header.
 *
 * Blocks are taken two at a time (an odd last block alone). Several tokens
 * (k_q8tx_tokens): the 16 rows' 2 x 32 weight bytes are transposed (16 x 16
 * dwords) so that lane r of register d holds bytes 4d..4d+3 of row r; each
 * token's activations are made unsigned (a + 128, a xor) and vpdpbusd
 * against the broadcast activation dword accumulates a block sum per lane;
 * the bias 128 * sum(w) per (row, block) seeds the sums (computed once per
 * block for all tokens). Single tokens (k_q8_0_tree): the weights are made
 * unsigned instead (w + 128) against the signed activations, the lane-wise
 * bias 128 * sum(a) seeds each row's vpdpbusd, and the 32 (row, block)
 * 8-lane sums are reduced together by the pair tree of kernels_x86_ktile.h,
 * then permuted to rows in lanes.
 *
 * Integer block sums are exact. Float operations per (row, token), per
 * block in order, lane-wise (the same whatever nr, nt, the row's lane or
 * the token's place; a single row is the same tile):
 *   a = fma(dw * da, (float)S, a)
 * and the result is a. Both kernels do exactly these, so the entry point
 * chooses by token count.
 */

/* 16 floats: the fp16 scales of the 16 rows' block at base + offs[r] (hi:
 * the scale is the high half of the dword read). */
KB __m512 k_q8_scales(__m512i vofs, const uint8_t *p, const int hi)
{
    __m512i d = _mm512_i32gather_epi32(vofs, (const void *)p, 1);
    if (hi)
        d = _mm512_srli_epi32(d, 16);
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d));
}

/* The qs of blocks b[0] and b[1] (two) or of b[0] and zeros. */
KB __m512i k_q8_qs2(const block_q8_0 *b, const int two)
{
    if (two)
        return k_load2_q8(b);
    return _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)b[0].qs));
}

/* Tokens 0..ng-1 (ng <= 4) of blocks i, i+1 (two) or i: v[d] lane r holds
 * dword d of row r (d < 8: block i, d >= 8: block i+1); cw0 / cw1 the
 * seeds -128 * sum(w); dw0 / dw1 the weight scales. */
KB void k_q8tx_tokens(const void *act, size_t act_stride, int64_t i, const __m512i v[16], __m512i cw0,
                      __m512i cw1, __m512 dw0, __m512 dw1, __m512 *acc, const int ng, const int two)
{
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    int32_t au[4][16] __attribute__((aligned(64)));
    K_FOR_T4(t) {
        const block_q8_0 *y = K_ACT(block_q8_0, t, i);
        _mm_prefetch((const char *)(y + 4), _MM_HINT_T0); /* two steps ahead (L2 -> L1) */
        _mm_prefetch((const char *)(y + 4) + 64, _MM_HINT_T0);
        _mm512_store_si512((void *)au[t], _mm512_xor_si512(k_q8_qs2(y, two), bias));
    }
    /* keeps the dwords in memory: broadcasts from memory are load-port
     * only, while GCC otherwise extracts them from registers (shuffle-port
     * uops, the bottleneck) */
    __asm__ volatile("" : : "r"(au) : "memory");
    /* at least 8 independent vpdpbusd chains whatever ng */
    const int nh = (ng >= 4 ? 1 : ng >= 2 ? 2 : 4) * (two ? 1 : 2);
    __m512i s0[8][4], s1[8][4];
    _Pragma("GCC unroll 8") for (int h = 0; h < nh; h++) K_FOR_T4(t) {
        s0[h][t] = h ? _mm512_setzero_si512() : cw0;
        s1[h][t] = h ? _mm512_setzero_si512() : cw1;
    }
    _Pragma("GCC unroll 8") for (int d = 0; d < 8; d++) {
        const int h = d % nh;
        K_FOR_T4(t) {
            s0[h][t] = _mm512_dpbusd_epi32(s0[h][t], _mm512_set1_epi32(au[t][d]), v[d]);
            if (two)
                s1[h][t] = _mm512_dpbusd_epi32(s1[h][t], _mm512_set1_epi32(au[t][8 + d]), v[8 + d]);
        }
    }
    K_FOR_T4(t) {
        __m512i a0 = s0[0][t], a1 = s1[0][t];
        _Pragma("GCC unroll 8") for (int h = 1; h < nh; h++) {
            a0 = _mm512_add_epi32(a0, s0[h][t]);
            a1 = _mm512_add_epi32(a1, s1[h][t]);
        }
        const block_q8_0 *y = K_ACT(block_q8_0, t, i);
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw0, _mm512_set1_ps(k_h2f(y[0].d))), _mm512_cvtepi32_ps(a0), acc[t]);
        if (two)
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw1, _mm512_set1_ps(k_h2f(y[1].d))), _mm512_cvtepi32_ps(a1),
                                     acc[t]);
    }
}

#define K_Q8TX_GROUP(ng, two)                                                                                   \
    static __attribute__((noinline)) void KNAME(q8tx_g##ng##_##two##_)(                                         \
        const void *act, size_t act_stride, int64_t i, const __m512i v[16], __m512i cw0, __m512i cw1,           \
        __m512 dw0, __m512 dw1, __m512 *acc)                                                                     \
    {                                                                                                           \
        k_q8tx_tokens(act, act_stride, i, v, cw0, cw1, dw0, dw1, acc, ng, two);                                 \
    }
K_Q8TX_GROUP(1, 1)
K_Q8TX_GROUP(2, 1)
K_Q8TX_GROUP(3, 1)
K_Q8TX_GROUP(4, 1)
K_Q8TX_GROUP(1, 0)
K_Q8TX_GROUP(2, 0)
K_Q8TX_GROUP(3, 0)
K_Q8TX_GROUP(4, 0)

/* -128 * the sum of each lane's 32 weights of one block (v: its 8 dwords
 * with the rows in lanes): the seed of the unsigned-activation sums. */
KB __m512i k_q8_seed(const __m512i *v)
{
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    __m512i c0 = _mm512_setzero_si512(), c1 = _mm512_setzero_si512();
    _Pragma("GCC unroll 4") for (int d = 0; d < 8; d += 2) {
        c0 = _mm512_dpbusd_epi32(c0, bias, v[d]);
        c1 = _mm512_dpbusd_epi32(c1, bias, v[d + 1]);
    }
    return _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_add_epi32(c0, c1));
}

/* Blocks i and i + 1 (two) or i of 16 rows, all nt tokens, into acc: v
 * holds the blocks' int8 dwords with the rows in lanes (v[8..15]: block
 * i + 1), dw0 / dw1 their scales. Shared by every rows-in-lanes tile whose
 * weights become Q8_0-like int8 blocks (Q8_0, Q5_0, IQ4_NL, IQ4_XS, MXFP4;
 * original or packed layout). */
KB void k_q8tx_blocks(const __m512i *v, __m512 dw0, __m512 dw1, const void *act, size_t act_stride, int64_t i,
                      int nt, __m512 *acc, const int two)
{
    const __m512i cw0 = k_q8_seed(v), cw1 = two ? k_q8_seed(v + 8) : _mm512_setzero_si512();
    for (int t = 0; t < nt; t += 4) {
        const void *a = (const uint8_t *)act + (size_t)t * act_stride;
        const int ng = nt - t < 4 ? nt - t : 4;
        if (two) {
            switch (ng) {
            case 1: KNAME(q8tx_g1_1_)(a, act_stride, i, v, cw0, cw1, dw0, dw1, acc + t); break;
            case 2: KNAME(q8tx_g2_1_)(a, act_stride, i, v, cw0, cw1, dw0, dw1, acc + t); break;
            case 3: KNAME(q8tx_g3_1_)(a, act_stride, i, v, cw0, cw1, dw0, dw1, acc + t); break;
            default: KNAME(q8tx_g4_1_)(a, act_stride, i, v, cw0, cw1, dw0, dw1, acc + t); break;
            }
        } else {
            switch (ng) {
            case 1: KNAME(q8tx_g1_0_)(a, act_stride, i, v, cw0, cw1, dw0, dw1, acc + t); break;
            case 2: KNAME(q8tx_g2_0_)(a, act_stride, i, v, cw0, cw1, dw0, dw1, acc + t); break;
            case 3: KNAME(q8tx_g3_0_)(a, act_stride, i, v, cw0, cw1, dw0, dw1, acc + t); break;
            default: KNAME(q8tx_g4_0_)(a, act_stride, i, v, cw0, cw1, dw0, dw1, acc + t); break;
            }
        }
    }
}

static void KNAME(q8_0_tx_)(int64_t n, const uint8_t *w, size_t w_stride, int nr, const void *act,
                            size_t act_stride, float *out, size_t out_stride, const int nt)
{
    const int64_t nb = n / QK8_0;
    int32_t offs[16];
    const __m512i vofs = k_tx_offsets(offs, w_stride, nr);
    __m512 acc[KERN_NT_MAX];
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i += 2) {
        const int two = i + 1 < nb;
        const uint8_t *base = w + (size_t)i * sizeof(block_q8_0);
        __m512i v[16];
        _Pragma("GCC unroll 16") for (int r = 0; r < 16; r++) {
            const uint8_t *p = base + offs[r];
#if K_PF_DIST > 0
            _mm_prefetch((const char *)p + K_PF_DIST, _MM_HINT_T0);
            _mm_prefetch((const char *)p + K_PF_DIST + 64, _MM_HINT_T0);
#endif
            v[r] = k_q8_qs2((const block_q8_0 *)p, two);
        }
        k_tr16(v);
        const __m512 dw0 = k_q8_scales(vofs, base, 0);
        if (two)
            k_q8tx_blocks(v, dw0, k_q8_scales(vofs, base + 32, 1), act, act_stride, i, nt, acc, 1);
        else
            k_q8tx_blocks(v, dw0, _mm512_setzero_ps(), act, act_stride, i, nt, acc, 0);
    }
    k_tx_store(acc, nr, nt, out, out_stride);
}

/* Lane of pair q in k_pairs_sum8's result (inverse of K_PL). */
#define K_Q8_LQ(q) (4 * ((q) % 4) + (q) / 4)

/* Blocks i, i+1 (two) or i of the 16 rows at base + offs[r], one token. */
KB __m512 k_q8_tree_step(const uint8_t *base, const int32_t offs[16], __m512i vofs, size_t pf,
                         const block_q8_0 *y, __m512i i0, __m512i i1, __m512 acc, const int two)
{
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    const __m512i a = k_q8_qs2(y, two);
    const __m512i negc = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, a));
    __m512i p[16];
    _Pragma("GCC unroll 16") for (int r = 0; r < 16; r++) {
        const uint8_t *x = base + offs[r];
#if K_PF_DIST > 0
        _mm_prefetch((const char *)x + pf, _MM_HINT_T0);
#endif
        p[r] = _mm512_dpbusd_epi32(negc, _mm512_xor_si512(k_q8_qs2((const block_q8_0 *)x, two), bias), a);
    }
    const __m512i r0 = k_pairs_sum8(p), r1 = k_pairs_sum8(p + 8);
    const __m512 dw0 = k_q8_scales(vofs, base, 0);
    acc = _mm512_fmadd_ps(_mm512_mul_ps(dw0, _mm512_set1_ps(k_h2f(y[0].d))),
                          _mm512_cvtepi32_ps(_mm512_permutex2var_epi32(r0, i0, r1)), acc);
    if (two) {
        const __m512 dw1 = k_q8_scales(vofs, base + 32, 1);
        acc = _mm512_fmadd_ps(_mm512_mul_ps(dw1, _mm512_set1_ps(k_h2f(y[1].d))),
                              _mm512_cvtepi32_ps(_mm512_permutex2var_epi32(r0, i1, r1)), acc);
    }
    return acc;
}

/* One token, 16 rows (see the file comment). */
static void KNAME(q8_0_tree_)(int64_t n, const uint8_t *w, size_t w_stride, int nr, const void *act, float *out)
{
    const int64_t nb = n / QK8_0;
    int32_t offs[16];
    const __m512i vofs = k_tx_offsets(offs, w_stride, nr);
    /* block i of row r: pair 2r of rows 0..7 (first tree) or of 8..15 */
    const __m512i i0 = _mm512_set_epi32(
        16 + K_Q8_LQ(14), 16 + K_Q8_LQ(12), 16 + K_Q8_LQ(10), 16 + K_Q8_LQ(8), 16 + K_Q8_LQ(6), 16 + K_Q8_LQ(4),
        16 + K_Q8_LQ(2), 16 + K_Q8_LQ(0), K_Q8_LQ(14), K_Q8_LQ(12), K_Q8_LQ(10), K_Q8_LQ(8), K_Q8_LQ(6), K_Q8_LQ(4),
        K_Q8_LQ(2), K_Q8_LQ(0));
    const __m512i i1 = _mm512_set_epi32(
        16 + K_Q8_LQ(15), 16 + K_Q8_LQ(13), 16 + K_Q8_LQ(11), 16 + K_Q8_LQ(9), 16 + K_Q8_LQ(7), 16 + K_Q8_LQ(5),
        16 + K_Q8_LQ(3), 16 + K_Q8_LQ(1), K_Q8_LQ(15), K_Q8_LQ(13), K_Q8_LQ(11), K_Q8_LQ(9), K_Q8_LQ(7), K_Q8_LQ(5),
        K_Q8_LQ(3), K_Q8_LQ(1));
    const block_q8_0 *y = act;
    /* one line at the same place in the next 16 rows (the next tile):
     * measured better than K_PF_DIST within the row, two lines, an L2 hint
     * or none (bench_kernels decode and stream) */
    const size_t pf = 16 * w_stride;
    __m512 acc = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2)
        acc = k_q8_tree_step(w + (size_t)i * sizeof(block_q8_0), offs, vofs, pf, y + i, i0, i1, acc, 1);
    if (i < nb)
        acc = k_q8_tree_step(w + (size_t)i * sizeof(block_q8_0), offs, vofs, pf, y + i, i0, i1, acc, 0);
    _mm512_mask_storeu_ps(out, (__mmask16)((1u << nr) - 1), acc);
}

/* Single tokens by the tree kernel, more by the transposed one (up to
 * KERN_NT_MAX at a time); the same float operations per (row, token). */
static void KNAME(tile_q8_0x_)(int64_t n, const void *w, size_t w_stride, int nr, const void *act,
                               size_t act_stride, int nt, float *out, size_t out_stride)
{
    for (int r = 0; r < nr; r += 16) {
        const uint8_t *wr = (const uint8_t *)w + (size_t)r * w_stride;
        const int n16 = nr - r < 16 ? nr - r : 16;
        if (nt == 1)
            KNAME(q8_0_tree_)(n, wr, w_stride, n16, act, out + r);
        else
            KNAME(q8_0_tx_)(n, wr, w_stride, n16, act, act_stride, out + r, out_stride, nt);
    }
}

static void KNAME(dot1_q8_0_)(int64_t n, const void *w, const void *act, size_t act_stride, int nt, float *out,
                              size_t out_stride)
{
    KNAME(tile_q8_0x_)(n, w, 0, 1, act, act_stride, nt, out, out_stride);
}
