/* kernels_x86_q4tx.h - the Q4_K tile of the VNNI level for 2+ tokens: 16
 * weight rows x nt (1..KERN_NT_MAX) tokens with the rows in the 16 lanes
 * of a register (tokens in groups of 4, one out-of-line function per group
 * size). Included by kernels_x86_ktile.h (uses its helpers). Not a public
 * header.
 *
 * Per 256-element super-block, the 16 rows' packed nibbles are transposed
 * (16 x 16 dwords, twice) so that lane r of register d holds bytes 4d..4d+3
 * of row r's qs; low / high nibbles are split once into an L1 scratch.
 * Then for each token, vpdpbusd against the broadcast 4 activation bytes
 * they multiply accumulates sub-block sums with one row per lane (no
 * horizontal sums at all); the sub-block scale is applied by vpmulld (the
 * 32-element sums are < 2^16, the products < 2^22), and the mins term
 * sum_k m_k * (bsum_2k + bsum_2k+1) by vpdpwssd against the broadcast bsum
 * pairs. Scales and mins are unpacked for the 16 rows at once (ggml's bit
 * manipulation, lane-wise on gathered dwords). Rows past nr repeat row 0
 * (their lanes are not stored).
 *
 * Integer sums are exact. Float operations per (row, token) and block, in
 * this order, lane-wise (so the same whatever nr, nt, the row's lane or the
 * token's place; a single row is the same tile):
 *   a = fma(d * dy, (float)S, a);  a = a - (dmin * dy) * (float)M  (fnmadd)
 * and the result is a: those of the pair-tree k_q45_k_tile, which does
 * single tokens (the transposition does not pay for one token).
 */

#define K_FOR_T4(t) _Pragma("GCC unroll 4") for (int t = 0; t < ng; t++)

/* In place: v[r] lane j -> v[j] lane r (16 x 16 dwords). */
KB void k_tr16(__m512i v[16])
{
    __m512i t[16], u[16];
    _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) {
        t[2 * j] = _mm512_unpacklo_epi32(v[2 * j], v[2 * j + 1]);
        t[2 * j + 1] = _mm512_unpackhi_epi32(v[2 * j], v[2 * j + 1]);
    }
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
        u[4 * j + 0] = _mm512_unpacklo_epi64(t[4 * j], t[4 * j + 2]);
        u[4 * j + 1] = _mm512_unpackhi_epi64(t[4 * j], t[4 * j + 2]);
        u[4 * j + 2] = _mm512_unpacklo_epi64(t[4 * j + 1], t[4 * j + 3]);
        u[4 * j + 3] = _mm512_unpackhi_epi64(t[4 * j + 1], t[4 * j + 3]);
    }
    /* u[4j + m], 128-bit lane q: dword 4q + m of rows 4j..4j+3 */
    _Pragma("GCC unroll 4") for (int m = 0; m < 4; m++) {
        const __m512i a0 = _mm512_shuffle_i32x4(u[m], u[4 + m], 0x44), a1 = _mm512_shuffle_i32x4(u[m], u[4 + m], 0xEE);
        const __m512i b0 = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0x44),
                      b1 = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0xEE);
        v[m] = _mm512_shuffle_i32x4(a0, b0, 0x88);
        v[4 + m] = _mm512_shuffle_i32x4(a0, b0, 0xDD);
        v[8 + m] = _mm512_shuffle_i32x4(a1, b1, 0x88);
        v[12 + m] = _mm512_shuffle_i32x4(a1, b1, 0xDD);
    }
}

/* A dword of activation bytes, broadcast. */
KB __m512i k_bc4(const void *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* Tokens 0..ng-1 (ng <= 4) of block i: acc[t] gets the block's terms. */
KB void k_q4tx_tokens(const void *act, size_t act_stride, int64_t i, const __m512i wq[2][32],
                      const __m512i sc[8], const __m512i mp[8], __m512 dx, __m512 dmx, __m512 *acc,
                      const int ng)
{
    /* sub-blocks 2sp (low nibbles) and 2sp + 1 (high) together, each
     * split into nh interleaved chains: at least 8 independent vpdpbusd
     * chains whatever ng (latency 5, two per cycle) */
    const int nh = ng >= 4 ? 1 : ng >= 2 ? 2 : 4;
    __m512i s[4];
    K_FOR_T4(t) s[t] = _mm512_setzero_si512();
    /* not unrolled: the loop body must stay small for the decoded-uop
     * cache (long EVEX instructions; a fully unrolled block was
     * front-end bound) */
    _Pragma("GCC unroll 1") for (int sp = 0; sp < 4; sp++) {
        __m512i tl[4][4], th[4][4];
        _Pragma("GCC unroll 4") for (int h = 0; h < nh; h++) K_FOR_T4(t) tl[h][t] = th[h][t] = _mm512_setzero_si512();
        _Pragma("GCC unroll 8") for (int g = 0; g < 8; g++) {
            const int h = g % nh;
            const __m512i wl = wq[0][8 * sp + g], wh = wq[1][8 * sp + g];
            K_FOR_T4(t) {
                const int8_t *q = K_ACT(block_q8_K, t, i)->qs + 64 * sp + 4 * g;
                tl[h][t] = _mm512_dpbusd_epi32(tl[h][t], wl, k_bc4(q));
                th[h][t] = _mm512_dpbusd_epi32(th[h][t], wh, k_bc4(q + 32));
            }
        }
        K_FOR_T4(t) {
            __m512i lo = tl[0][t], hi = th[0][t];
            _Pragma("GCC unroll 4") for (int h = 1; h < nh; h++) {
                lo = _mm512_add_epi32(lo, tl[h][t]);
                hi = _mm512_add_epi32(hi, th[h][t]);
            }
            s[t] = _mm512_add_epi32(s[t], _mm512_mullo_epi32(lo, sc[2 * sp]));
            s[t] = _mm512_add_epi32(s[t], _mm512_mullo_epi32(hi, sc[2 * sp + 1]));
        }
    }
    K_FOR_T4(t) {
        const block_q8_K *y = K_ACT(block_q8_K, t, i);
        __m512i m = _mm512_setzero_si512();
        _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) m = _mm512_dpwssd_epi32(m, mp[k], k_bc4(y->bsums + 2 * k));
        const __m512 dy = _mm512_set1_ps(y->d);
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dx, dy), _mm512_cvtepi32_ps(s[t]), acc[t]);
        acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(dmx, dy), _mm512_cvtepi32_ps(m), acc[t]);
    }
}

/* One out-of-line copy per group size keeps the block loop small. */
#define K_Q4TX_GROUP(ng)                                                                                        \
    static __attribute__((noinline)) void KNAME(q4tx_g##ng##_)(const void *act, size_t act_stride, int64_t i,   \
                                                               const __m512i wq[2][32], const __m512i sc[8],   \
                                                               const __m512i mp[8], __m512 dx, __m512 dmx,     \
                                                               __m512 *acc)                                   \
    {                                                                                                           \
        k_q4tx_tokens(act, act_stride, i, wq, sc, mp, dx, dmx, acc, ng);                                        \
    }
K_Q4TX_GROUP(1)
K_Q4TX_GROUP(2)
K_Q4TX_GROUP(3)
K_Q4TX_GROUP(4)

/* The 16 rows' 6-bit scales and mins of one super-block (ggml's bit
 * manipulation, lane-wise): u0, u1, u2 hold scale bytes 0..3, 4..7, 8..11
 * of each row. sc[k]: scale k; mp[k]: (min k, min k) as int16 pairs. */
KB void k_q4_scales_mins(__m512i u0, __m512i u1, __m512i u2, __m512i sc[8], __m512i mp[8])
{
    const __m512i km1 = _mm512_set1_epi32(0x3f3f3f3f), km2 = _mm512_set1_epi32(0x0f0f0f0f);
    const __m512i km3 = _mm512_set1_epi32(0x03030303), b255 = _mm512_set1_epi32(0xFF);
    /* s03 = scales 0..3, s47 = scales 4..7, m03 / m47 the mins */
    const __m512i s03 = _mm512_and_si512(u0, km1), m03 = _mm512_and_si512(u1, km1);
    const __m512i s47 = _mm512_or_si512(_mm512_and_si512(u2, km2),
                                        _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u0, 6), km3), 4));
    const __m512i m47 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u2, 4), km2),
                                        _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u1, 6), km3), 4));
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
        sc[k] = _mm512_and_si512(_mm512_srli_epi32(s03, 8 * k), b255);
        sc[4 + k] = _mm512_and_si512(_mm512_srli_epi32(s47, 8 * k), b255);
        const __m512i ma = _mm512_and_si512(_mm512_srli_epi32(m03, 8 * k), b255);
        const __m512i mb = _mm512_and_si512(_mm512_srli_epi32(m47, 8 * k), b255);
        mp[k] = _mm512_or_si512(ma, _mm512_slli_epi32(ma, 16));
        mp[4 + k] = _mm512_or_si512(mb, _mm512_slli_epi32(mb, 16));
    }
}

/* Super-block i of 16 rows, all nt tokens, into acc (groups of 4 tokens
 * by the out-of-line functions above). Shared by the original-layout and
 * the packed Q4_K tiles. */
KB void k_q4tx_block(const __m512i wq[2][32], const __m512i sc[8], const __m512i mp[8], __m512 dx, __m512 dmx,
                     const void *act, size_t act_stride, int64_t i, int nt, __m512 *acc)
{
    for (int t = 0; t < nt; t += 4) {
        const void *a = (const uint8_t *)act + (size_t)t * act_stride;
        switch (nt - t < 4 ? nt - t : 4) {
        case 1: KNAME(q4tx_g1_)(a, act_stride, i, wq, sc, mp, dx, dmx, acc + t); break;
        case 2: KNAME(q4tx_g2_)(a, act_stride, i, wq, sc, mp, dx, dmx, acc + t); break;
        case 3: KNAME(q4tx_g3_)(a, act_stride, i, wq, sc, mp, dx, dmx, acc + t); break;
        default: KNAME(q4tx_g4_)(a, act_stride, i, wq, sc, mp, dx, dmx, acc + t); break;
        }
    }
}

/* Shared by the rows-in-lanes tiles (Q4_K, Q6_K, Q8_0): the 16 rows' byte
 * offsets (rows past nr repeat row 0: their lanes are never stored), and
 * the store of lanes r < nr of each token's accumulator to out[r + t *
 * out_stride]. */
KB __m512i k_tx_offsets(int32_t offs[16], size_t w_stride, int nr)
{
    for (int r = 0; r < 16; r++)
        offs[r] = (int32_t)((size_t)(r < nr ? r : 0) * w_stride);
    return _mm512_loadu_si512((const void *)offs);
}

KB void k_tx_store(const __m512 *acc, int nr, int nt, float *out, size_t out_stride)
{
    const __mmask16 keep = (__mmask16)((1u << nr) - 1);
    for (int t = 0; t < nt; t++)
        _mm512_mask_storeu_ps(out + (size_t)t * out_stride, keep, acc[t]);
}

static void KNAME(q4_k_tx_)(int64_t n, const uint8_t *w, size_t w_stride, int nr, const void *act,
                            size_t act_stride, float *out, size_t out_stride, const int nt)
{
    const int64_t nb = n / QK_K;
    int32_t offs[16];
    const __m512i vofs = k_tx_offsets(offs, w_stride, nr);
    const __m512i m4 = _mm512_set1_epi8(0xF);
    __m512 acc[KERN_NT_MAX];
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *base = w + (size_t)i * sizeof(block_q4_K);
        /* d | dmin << 16 and the 12 scale bytes of the 16 rows */
        const __m512i dm = _mm512_i32gather_epi32(vofs, (const void *)base, 1);
        const __m512i u0 = _mm512_i32gather_epi32(vofs, (const void *)(base + 4), 1);
        const __m512i u1 = _mm512_i32gather_epi32(vofs, (const void *)(base + 8), 1);
        const __m512i u2 = _mm512_i32gather_epi32(vofs, (const void *)(base + 12), 1);
        const __m512 dx = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dm));
        const __m512 dmx = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dm, 16)));
        __m512i sc[8], mp[8];
        k_q4_scales_mins(u0, u1, u2, sc, mp);
        /* transposed nibbles: wq[0][d] low, wq[1][d] high nibbles of dword d */
        __m512i wq[2][32];
        _Pragma("GCC unroll 2") for (int c = 0; c < 2; c++) {
            __m512i v[16];
            _Pragma("GCC unroll 16") for (int r = 0; r < 16; r++) {
                const uint8_t *p = base + offs[r];
#if K_PF_DIST > 0
                if (c == 0) {
                    _mm_prefetch((const char *)p + K_PF_DIST, _MM_HINT_T0);
                    _mm_prefetch((const char *)p + K_PF_DIST + 64, _MM_HINT_T0);
                    _mm_prefetch((const char *)p + K_PF_DIST + 128, _MM_HINT_T0);
                }
#endif
                v[r] = _mm512_loadu_si512((const void *)(p + 16 + 64 * c));
            }
            k_tr16(v);
            _Pragma("GCC unroll 16") for (int d = 0; d < 16; d++) {
                wq[0][16 * c + d] = _mm512_and_si512(v[d], m4);
                wq[1][16 * c + d] = _mm512_and_si512(_mm512_srli_epi16(v[d], 4), m4);
            }
        }
        k_q4tx_block((const __m512i(*)[32])wq, sc, mp, dx, dmx, act, act_stride, i, nt, acc);
    }
    k_tx_store(acc, nr, nt, out, out_stride);
}

/* Single tokens (decode) by the pair-tree kernel (16 x 1 tiles: cheaper
 * than transposing for one token), more tokens by the transposed one, up
 * to KERN_NT_MAX at a time. Both do the same float operations per (row,
 * token), so the choice never changes a value. */
static void KNAME(tile_q4_k_)(int64_t n, const void *w, size_t w_stride, int nr, const void *act,
                              size_t act_stride, int nt, float *out, size_t out_stride)
{
    if (nt == 1) {
        KNAME(tile_q4_k_tree_)(n, w, w_stride, nr, act, act_stride, nt, out, out_stride);
        return;
    }
    for (int r = 0; r < nr; r += 16)
        KNAME(q4_k_tx_)(n, (const uint8_t *)w + (size_t)r * w_stride, w_stride, nr - r < 16 ? nr - r : 16, act,
                        act_stride, out + r, out_stride, nt);
}

static void KNAME(dot1_q4_k_)(int64_t n, const void *w, const void *act, size_t act_stride, int nt, float *out,
                              size_t out_stride)
{
    KNAME(tile_q4_k_)(n, w, 0, 1, act, act_stride, nt, out, out_stride);
}
