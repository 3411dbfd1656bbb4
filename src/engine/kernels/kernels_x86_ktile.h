/* kernels_x86_ktile.h - the pair-tree K-quant tiles of the VNNI level
 * (Q4_K, Q5_K, Q6_K weights against Q8_K activations): 16 (row, token)
 * pairs per pass, as 16 x 1, 8 x 2, 4 x 4 or 2 x 8 rows x tokens. Included
 * by kernels_x86_body.h when KERN_VNNI (it uses that file's helpers and
 * macros). Not a public header.
 *
 * Layout of the work: per 256-element super-block, the integer sum of each
 * (row, token) pair is accumulated exactly in a 16-lane int32 register
 * (vpmaddubsw + vpdpwssd against 64 contiguous activations; the unpacked
 * weights are shared by the tokens, the activation loads by the rows).
 * Then the 16 pair registers are reduced together by a transposing tree
 * (k_pairs_sum16: lane L of its result is the total of pair K_PL(L)), so
 * the float work of a block is a handful of 16-lane instructions for the
 * whole tile instead of ~9 per pair. Q4_K / Q5_K: the mins term
 * sum_j m_j * (bsum_2j + bsum_2j+1) goes through the same tree; Q6_K: the
 * -32 offset (32 * sum_g sc_g * bsum_g) seeds the integer accumulator.
 *
 * Float operations per (row, token) pair, the same in whichever lane it
 * sits (lane-wise vector operations), so whatever nr, nt and the pair's
 * place in the tile (batch invariance; a single row is a 1 x 1 tile):
 *   Q4_K/Q5_K: a = fma(d * dy, (float)S, a); a = a - (dmin * dy) * (float)M
 *              (fnmadd), per block in order; result a.
 *   Q6_K:      a = fma(d * dy, (float)S, a), per block; result a.
 * These differ from the AVX2 level's order (which sums 8 lanes in float),
 * within the tolerance kernels.h allows between levels. The rows-in-lanes
 * kernels (kernels_x86_q4tx.h, kernels_x86_q6tx.h, included at the end)
 * do the same operations, so the entry points choose by token count: Q4_K
 * uses this file's tile for single tokens only, Q6_K for up to 8; Q5_K
 * always (measured shapes in docs/performance.md).
 *
 * Code size matters: the loop bodies are long EVEX instructions, and fully
 * unrolled 16-row blocks ran from the legacy decoders (front-end bound);
 * the 1- and 2-token shapes therefore walk their rows in a plain loop.
 */

/* ---- 16 horizontal sums at once ------------------------------------- */

/* a, b: 16 lanes each -> [a folded to 8 lanes | b folded to 8 lanes]. */
KB __m512i k_fold_a(__m512i a, __m512i b)
{
    return _mm512_add_epi32(_mm512_shuffle_i64x2(a, b, 0x44), _mm512_shuffle_i64x2(a, b, 0xEE));
}

/* [p0 x8 | p1 x8], [p2 x8 | p3 x8] -> 128-bit chunk k holds pair k, 4 lanes. */
KB __m512i k_fold_b(__m512i c, __m512i d)
{
    return _mm512_add_epi32(_mm512_shuffle_i64x2(c, d, 0x88), _mm512_shuffle_i64x2(c, d, 0xDD));
}

/* Within each 128-bit chunk: [e x4], [f x4] -> [e x2, f x2]. */
KB __m512i k_fold_c(__m512i e, __m512i f)
{
    return _mm512_add_epi32(_mm512_unpacklo_epi64(e, f), _mm512_unpackhi_epi64(e, f));
}

/* Within each 128-bit chunk: [h x2, h' x2], [m x2, m' x2] -> [h, h', m, m']. */
KB __m512i k_fold_d(__m512i h, __m512i m)
{
    const __m512 hf = _mm512_castsi512_ps(h), mf = _mm512_castsi512_ps(m);
    return _mm512_add_epi32(_mm512_castps_si512(_mm512_shuffle_ps(hf, mf, 0x88)),
                            _mm512_castps_si512(_mm512_shuffle_ps(hf, mf, 0xDD)));
}

/* a[i] = [pair 2i, 8 lanes | pair 2i+1, 8 lanes] -> lane L holds the sum
 * of pair p = 4 * (L % 4) + L / 4 (K_PL below). Exact (int32 wrap-around
 * is associative and the totals fit). */
KB __m512i k_pairs_sum8(const __m512i a[8])
{
    const __m512i b0 = k_fold_b(a[0], a[1]), b1 = k_fold_b(a[2], a[3]);
    const __m512i b2 = k_fold_b(a[4], a[5]), b3 = k_fold_b(a[6], a[7]);
    return k_fold_d(k_fold_c(b0, b1), k_fold_c(b2, b3));
}

/* v[p]: 16 lanes of pair p -> lane L holds the sum of pair K_PL(L). */
KB __m512i k_pairs_sum16(const __m512i v[16])
{
    __m512i a[8];
    _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) a[i] = k_fold_a(v[2 * i], v[2 * i + 1]);
    return k_pairs_sum8(a);
}

/* Tile shapes: NRT rows x NTT tokens, NRT * NTT == 16 (16 x 1 for decode,
 * 8 x 2, 4 x 4 for batches); pair p = NTT * r + t. After k_pairs_sum16,
 * lane L holds pair K_PL(L). Pairs with r >= nr or t >= nt (a partial
 * tile) are zero. */
#define K_PL(L) (4 * ((L) % 4) + (L) / 4)
#define K_LROW(L, ntt) (K_PL(L) / (ntt))
#define K_LTOK(L, ntt) (K_PL(L) % (ntt))
#define K_LIDX(F, ntt)                                                                                   \
    _mm512_set_epi32(F(15, ntt), F(14, ntt), F(13, ntt), F(12, ntt), F(11, ntt), F(10, ntt), F(9, ntt), \
                     F(8, ntt), F(7, ntt), F(6, ntt), F(5, ntt), F(4, ntt), F(3, ntt), F(2, ntt),       \
                     F(1, ntt), F(0, ntt))

/* Lane L of the result: the row value x[row of pair K_PL(L)] (x: 16 floats). */
KB __m512 k_lane_row(__m512 x, const int ntt)
{
    return _mm512_permutexvar_ps(K_LIDX(K_LROW, ntt), x);
}

/* Lane L of the result: the token value y[token of pair K_PL(L)]. */
KB __m512 k_lane_tok(__m512 y, const int ntt)
{
    return _mm512_permutexvar_ps(K_LIDX(K_LTOK, ntt), y);
}

/* 16 fp16 values (rows 0..15, zeros past nr) as floats. */
KB __m512 k_h16(const uint16_t h[16])
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)h));
}

/* out[r + t * out_stride] = value of pair (r, t), r < nr, t < nt. */
KB void k_tile_store(__m512 v, float *out, size_t out_stride, const int nr, const int nt, const int ntt)
{
    float tmp[16];
    _mm512_storeu_ps(tmp, v);
    _Pragma("GCC unroll 16") for (int L = 0; L < 16; L++) {
        const int r = K_LROW(L, ntt), t = K_LTOK(L, ntt);
        if (r < nr && t < nt)
            out[r + (size_t)t * out_stride] = tmp[L];
    }
}

/* ---- Q4_K / Q5_K ------------------------------------------------------ */

/* Words 0..15 take scale 2j, 16..31 scale 2j+1 (vpshufb index into the 8
 * int16 scales of a 128-bit lane). */
KB __m512i k_q45_sidx(const int j)
{
    const int lo = (4 * j + 1) << 24 | (4 * j) << 16 | (4 * j + 1) << 8 | (4 * j);
    const int hi = (4 * j + 3) << 24 | (4 * j + 2) << 16 | (4 * j + 3) << 8 | (4 * j + 2);
    return _mm512_set_epi32(hi, hi, hi, hi, hi, hi, hi, hi, lo, lo, lo, lo, lo, lo, lo, lo);
}

/* Unpacked weights of chunk j (64 values: low nibbles of qs[32j..32j+31]
 * in the lower half, high nibbles in the upper half; Q5_K adds bit 4). */
KB __m512i k_q45_q(const uint8_t *blk, const int has_qh, const int j)
{
    const __m512i m4z = _mm512_set1_epi8(0xF), onez = _mm512_set1_epi8(1);
    const uint8_t *qs = blk + (has_qh ? 48 : 16);
    __m512i bz = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(qs + 32 * j)));
    bz = _mm512_mask_srli_epi16(bz, (__mmask32)0xFFFF0000u, bz, 4);
    __m512i q = _mm512_and_si512(bz, m4z);
    if (has_qh) {
        __m512i hz = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(blk + 16)));
        hz = _mm512_srli_epi16(hz, 2 * j);
        hz = _mm512_mask_srli_epi16(hz, (__mmask32)0xFFFF0000u, hz, 1);
        q = _mm512_or_si512(q, _mm512_slli_epi16(_mm512_and_si512(hz, onez), 4));
    }
    return q;
}

#define K_FOR_RT(r) _Pragma("GCC unroll 16") for (int r = 0; r < nrt; r++)
#define K_FOR_TT(t) _Pragma("GCC unroll 8") for (int t = 0; t < ntt; t++)

/* Q4_K / Q5_K tile of shape (16 / ntt) x ntt, the first nr rows and nt
 * tokens real (compile-time constants). */
KB void k_q45_k_tile(int64_t n, const uint8_t *w, size_t w_stride, size_t bsize, const int has_qh,
                     const void *act, size_t act_stride, float *out, size_t out_stride, const int ntt,
                     const int nr, const int nt)
{
    const int64_t nb = n / QK_K;
    const int nrt = ntt == 1 ? 16 : ntt == 2 ? 8 : ntt == 4 ? 4 : 2; /* 16 / ntt */
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m128i smv[16]; /* per row: 8 scales, 8 mins (bytes) */
        uint16_t dh[16] = {0}, mh[16] = {0};
        float dyf[16] = {0};
        __m256i bs[8];
        K_FOR_TT(t) if (t < nt) {
            const block_q8_K *y = K_ACT(block_q8_K, t, i);
            dyf[t] = y->d;
            bs[t] = _mm256_loadu_si256((const __m256i *)y->bsums);
        }
        /* mins term: m_j * (bsum_2j + bsum_2j+1) summed over j (each min
         * twice against the 16 bsums), through the pair tree from its
         * second stage (8 lanes per pair) */
        __m256i mp[16];
        __m512i sumz[16];
        if (ntt <= 2) {
            /* one or two tokens: rows outer, in a loop that is not
             * unrolled (a fully unrolled 16-row block was bound by
             * instruction decoding); the activations of the 4 chunks stay
             * in registers, the pair sums go to the stack */
            __m512i yz[4][2];
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) K_FOR_TT(t) if (t < nt)
                yz[j][t] = _mm512_loadu_si512((const void *)(K_ACT(block_q8_K, t, i)->qs + 64 * j));
            _Pragma("GCC unroll 1") for (int r = 0; r < nrt; r++) {
                if (r >= nr) {
                    K_FOR_TT(t) {
                        mp[ntt * r + t] = _mm256_setzero_si256();
                        sumz[ntt * r + t] = _mm512_setzero_si512();
                    }
                    continue;
                }
                const uint8_t *blk = w + (size_t)r * w_stride + (size_t)i * bsize;
                {
                    /* the same block of the next tile's row (decode streams
                     * the weights from memory once: the next tile starts
                     * nrt rows further) */
                    const char *pf = (const char *)blk + (size_t)nrt * w_stride;
                    _mm_prefetch(pf, _MM_HINT_T0);
                    _mm_prefetch(pf + 64, _MM_HINT_T0);
                    _mm_prefetch(pf + 128, _MM_HINT_T0);
                }
                memcpy(&dh[r], blk, 2);
                memcpy(&mh[r], blk + 2, 2);
                const __m128i sm = k_q45_scales(blk + 4);
                const __m128i m8 = _mm_srli_si128(sm, 8);
                const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
                K_FOR_TT(t) mp[ntt * r + t] = t < nt ? _mm256_madd_epi16(bs[t], mins16) : _mm256_setzero_si256();
                const __m512i scz = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(sm));
                __m512i sr[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
                _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
                    const __m512i q = k_q45_q(blk, has_qh, j);
                    const __m512i sz = _mm512_shuffle_epi8(scz, k_q45_sidx(j));
                    K_FOR_TT(t) if (t < nt) sr[t] = _mm512_dpwssd_epi32(sr[t], sz, _mm512_maddubs_epi16(q, yz[j][t]));
                }
                K_FOR_TT(t) sumz[ntt * r + t] = sr[t];
            }
        } else {
        K_FOR_RT(r) {
            if (r < nr) {
                const uint8_t *blk = w + (size_t)r * w_stride + (size_t)i * bsize;
#if K_PF_DIST > 0
                _mm_prefetch((const char *)blk + K_PF_DIST, _MM_HINT_T0);
                _mm_prefetch((const char *)blk + K_PF_DIST + 64, _MM_HINT_T0);
                _mm_prefetch((const char *)blk + K_PF_DIST + 128, _MM_HINT_T0);
#endif
                memcpy(&dh[r], blk, 2);
                memcpy(&mh[r], blk + 2, 2);
                smv[r] = k_q45_scales(blk + 4);
                const __m128i m8 = _mm_srli_si128(smv[r], 8);
                const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
                K_FOR_TT(t) mp[ntt * r + t] = t < nt ? _mm256_madd_epi16(bs[t], mins16) : _mm256_setzero_si256();
            } else {
                K_FOR_TT(t) mp[ntt * r + t] = _mm256_setzero_si256();
            }
        }

        /* integer sums: one register holds a chunk's 64 weights against
         * the 64 contiguous activations they multiply */
        _Pragma("GCC unroll 16") for (int p = 0; p < 16; p++) sumz[p] = _mm512_setzero_si512();
        {
            /* chunks outer: the rows' scales stay in registers */
            __m512i scz[4];
            K_FOR_RT(r) if (r < nr) scz[r & 3] = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(smv[r]));
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
                __m512i yz[8];
                K_FOR_TT(t) if (t < nt) yz[t] = _mm512_loadu_si512((const void *)(K_ACT(block_q8_K, t, i)->qs + 64 * j));
                K_FOR_RT(r) if (r < nr) {
                    const __m512i q = k_q45_q(w + (size_t)r * w_stride + (size_t)i * bsize, has_qh, j);
                    const __m512i sz = _mm512_shuffle_epi8(scz[r & 3], k_q45_sidx(j));
                    K_FOR_TT(t) if (t < nt)
                        sumz[ntt * r + t] = _mm512_dpwssd_epi32(sumz[ntt * r + t], sz, _mm512_maddubs_epi16(q, yz[t]));
                }
            }
        }
        }
        __m512i mz[8];
        _Pragma("GCC unroll 8") for (int p = 0; p < 8; p++)
            mz[p] = _mm512_inserti64x4(_mm512_castsi256_si512(mp[2 * p]), mp[2 * p + 1], 1);
        const __m512i msum = k_pairs_sum8(mz);
        const __m512i ssum = k_pairs_sum16(sumz);

        const __m512 dyv = k_lane_tok(_mm512_loadu_ps(dyf), ntt);
        acc = _mm512_fmadd_ps(_mm512_mul_ps(k_lane_row(k_h16(dh), ntt), dyv), _mm512_cvtepi32_ps(ssum), acc);
        acc = _mm512_fnmadd_ps(_mm512_mul_ps(k_lane_row(k_h16(mh), ntt), dyv), _mm512_cvtepi32_ps(msum), acc);
    }
    k_tile_store(acc, out, out_stride, nr, nt, ntt);
}

KB void k_q4_k_tile(int64_t n, const void *w, size_t w_stride, const void *act, size_t act_stride, float *out,
                    size_t out_stride, const int ntt, const int nr, const int nt)
{
    k_q45_k_tile(n, w, w_stride, sizeof(block_q4_K), 0, act, act_stride, out, out_stride, ntt, nr, nt);
}

KB void k_q5_k_tile(int64_t n, const void *w, size_t w_stride, const void *act, size_t act_stride, float *out,
                    size_t out_stride, const int ntt, const int nr, const int nt)
{
    k_q45_k_tile(n, w, w_stride, sizeof(block_q5_K), 1, act, act_stride, out, out_stride, ntt, nr, nt);
}

/* ---- Q6_K ------------------------------------------------------------- */

/* Unpacked weights of chunks m = 2p, 2p + 1 of half h (64 contiguous ql
 * bytes, qh shifted by 2m per half): values 0..63. */
KB __m512i k_q6_q(const block_q6_K *x, const int h, const int p)
{
    const __m512i m4z = _mm512_set1_epi8(0xF), m2z = _mm512_set1_epi8(3);
    __m512i b = _mm512_loadu_si512((const void *)(x->ql + 64 * h));
    __m512i hz = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x->qh + 32 * h)));
    hz = _mm512_srli_epi16(hz, 4 * p);
    hz = _mm512_mask_srli_epi16(hz, (__mmask32)0xFFFF0000u, hz, 2);
    __m512i lo = _mm512_and_si512(p ? _mm512_srli_epi16(b, 4) : b, m4z);
    return _mm512_or_si512(lo, _mm512_slli_epi16(_mm512_and_si512(hz, m2z), 4));
}

/* The int16 scale of each word of k_q6_q(x, h, p) (sc8: the 8 scales of
 * half h in every 128-bit lane). */
KB __m512i k_q6_sc(__m512i sc8, const int p)
{
#define K_B0(L) (2 * (4 * p + (L)))
#define K_DW(L) ((K_B0(L) + 1) << 24 | K_B0(L) << 16 | (K_B0(L) + 1) << 8 | K_B0(L))
    const __m512i sidx = _mm512_set_epi32(K_DW(3), K_DW(3), K_DW(3), K_DW(3), K_DW(2), K_DW(2), K_DW(2), K_DW(2),
                                          K_DW(1), K_DW(1), K_DW(1), K_DW(1), K_DW(0), K_DW(0), K_DW(0), K_DW(0));
#undef K_DW
#undef K_B0
    return _mm512_shuffle_epi8(sc8, sidx);
}

KB void k_q6_k_tile(int64_t n, const void *w, size_t w_stride, const void *act, size_t act_stride, float *out,
                    size_t out_stride, const int ntt, const int nr, const int nt)
{
    const int64_t nb = n / QK_K;
    const int nrt = ntt == 1 ? 16 : ntt == 2 ? 8 : ntt == 4 ? 4 : 2; /* 16 / ntt */
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        uint16_t dh[16] = {0};
        float dyf[16] = {0};
        __m256i bs[8];
        K_FOR_TT(t) if (t < nt) {
            const block_q8_K *y = K_ACT(block_q8_K, t, i);
            dyf[t] = y->d;
            bs[t] = _mm256_loadu_si256((const __m256i *)y->bsums);
        }
        /* the -32 offset seeds the sums: -32 * sum_g sc_g * bsum_g
         * (|32 sc| <= 4096 fits int16) */
        __m512i sumz[16];
        if (ntt <= 2) {
            /* one or two tokens: rows outer in a loop that is not unrolled
             * (as k_q45_k_tile), the block's activations in registers */
            __m512i yz[2][2][2];
            _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) _Pragma("GCC unroll 2") for (int p = 0; p < 2; p++)
                K_FOR_TT(t) if (t < nt)
                    yz[h][p][t] = _mm512_loadu_si512((const void *)(K_ACT(block_q8_K, t, i)->qs + 128 * h + 64 * p));
            _Pragma("GCC unroll 1") for (int r = 0; r < nrt; r++) {
                if (r >= nr) {
                    K_FOR_TT(t) sumz[ntt * r + t] = _mm512_setzero_si512();
                    continue;
                }
                const block_q6_K *x = (const block_q6_K *)((const uint8_t *)w + (size_t)r * w_stride) + i;
                {
                    /* the same block of the next tile's row (as k_q45_k_tile) */
                    const char *pf = (const char *)x + (size_t)nrt * w_stride;
                    _Pragma("GCC unroll 4") for (int l = 0; l < 4; l++) _mm_prefetch(pf + 64 * l, _MM_HINT_T0);
                }
                memcpy(&dh[r], &x->d, 2);
                const __m256i s16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
                const __m256i nsc = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(s16, 5));
                __m512i sr[2];
                K_FOR_TT(t) sr[t] = t < nt ? _mm512_zextsi256_si512(_mm256_madd_epi16(bs[t], nsc)) : _mm512_setzero_si512();
                _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
                    const __m512i sc8 = _mm512_broadcast_i32x4(h ? _mm256_extracti128_si256(s16, 1)
                                                                 : _mm256_castsi256_si128(s16));
                    _Pragma("GCC unroll 2") for (int p = 0; p < 2; p++) {
                        const __m512i q = k_q6_q(x, h, p), scv = k_q6_sc(sc8, p);
                        K_FOR_TT(t) if (t < nt) sr[t] = _mm512_dpwssd_epi32(sr[t], scv, _mm512_maddubs_epi16(q, yz[h][p][t]));
                    }
                }
                K_FOR_TT(t) sumz[ntt * r + t] = sr[t];
            }
        } else {
            __m256i sc16[4];
            K_FOR_RT(r) {
                if (r < nr) {
                    const block_q6_K *x = (const block_q6_K *)((const uint8_t *)w + (size_t)r * w_stride) + i;
#if K_PF_DIST > 0
                    _mm_prefetch((const char *)x + K_PF_DIST, _MM_HINT_T0);
                    _mm_prefetch((const char *)x + K_PF_DIST + 64, _MM_HINT_T0);
                    _mm_prefetch((const char *)x + K_PF_DIST + 128, _MM_HINT_T0);
                    _mm_prefetch((const char *)x + K_PF_DIST + 192, _MM_HINT_T0);
#endif
                    memcpy(&dh[r], &x->d, 2);
                    const __m256i s16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
                    sc16[r & 3] = s16;
                    const __m256i nsc = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(s16, 5));
                    K_FOR_TT(t) sumz[ntt * r + t] = t < nt ? _mm512_zextsi256_si512(_mm256_madd_epi16(bs[t], nsc))
                                                           : _mm512_setzero_si512();
                } else {
                    K_FOR_TT(t) sumz[ntt * r + t] = _mm512_setzero_si512();
                }
            }
            /* chunks outer: the rows' scales stay in registers */
            _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
                _Pragma("GCC unroll 2") for (int p = 0; p < 2; p++) {
                    __m512i yz[8];
                    K_FOR_TT(t) if (t < nt)
                        yz[t] = _mm512_loadu_si512((const void *)(K_ACT(block_q8_K, t, i)->qs + 128 * h + 64 * p));
                    K_FOR_RT(r) if (r < nr) {
                        const block_q6_K *x = (const block_q6_K *)((const uint8_t *)w + (size_t)r * w_stride) + i;
                        const __m512i sc8 = _mm512_broadcast_i32x4(h ? _mm256_extracti128_si256(sc16[r & 3], 1)
                                                                     : _mm256_castsi256_si128(sc16[r & 3]));
                        const __m512i q = k_q6_q(x, h, p), scv = k_q6_sc(sc8, p);
                        K_FOR_TT(t) if (t < nt)
                            sumz[ntt * r + t] = _mm512_dpwssd_epi32(sumz[ntt * r + t], scv, _mm512_maddubs_epi16(q, yz[t]));
                    }
                }
            }
        }
        const __m512i ssum = k_pairs_sum16(sumz);
        const __m512 dyv = k_lane_tok(_mm512_loadu_ps(dyf), ntt);
        acc = _mm512_fmadd_ps(_mm512_mul_ps(k_lane_row(k_h16(dh), ntt), dyv), _mm512_cvtepi32_ps(ssum), acc);
    }
    k_tile_store(acc, out, out_stride, nr, nt, ntt);
}

/* ---- entry points ----------------------------------------------------- */

/* Shapes by token count: 1 token -> 16 x 1 tiles, 2 -> 8 x 2, 8 or more ->
 * 2 x 8 (groups of 8 tokens), else 4 x 4 (groups of 4 tokens); rows left
 * over from full tiles, and partial 4 x 4 tiles, use the 4 x 4 shape with
 * nr, nt < 4 (compile-time, padded with zero pairs). */
#define K_TILE_44(body, nrc)                                                                         \
    switch (c) {                                                                                     \
    case 1: body(n, w, w_stride, act, act_stride, out, out_stride, 4, nrc, 1); break;                \
    case 2: body(n, w, w_stride, act, act_stride, out, out_stride, 4, nrc, 2); break;                \
    case 3: body(n, w, w_stride, act, act_stride, out, out_stride, 4, nrc, 3); break;                \
    default: body(n, w, w_stride, act, act_stride, out, out_stride, 4, nrc, 4); break;               \
    }
#define K_TILE_EXPORT(name, body)                                                                      \
    static void KNAME(tile44_##name)(int64_t n, const uint8_t *w, size_t w_stride, int nr, const void *act, \
                                     size_t act_stride, int c, float *out, size_t out_stride)          \
    {                                                                                                  \
        for (; nr > 0; nr -= 4, w += 4 * w_stride, out += 4) {                                         \
            switch (nr) {                                                                              \
            case 1: K_TILE_44(body, 1) break;                                                          \
            case 2: K_TILE_44(body, 2) break;                                                          \
            case 3: K_TILE_44(body, 3) break;                                                          \
            default: K_TILE_44(body, 4) break;                                                         \
            }                                                                                          \
        }                                                                                              \
    }                                                                                                  \
    static void KNAME(tile_##name)(int64_t n, const void *wv, size_t w_stride, int nr, const void *act, \
                                   size_t act_stride, int nt, float *out, size_t out_stride)           \
    {                                                                                                  \
        const uint8_t *w = wv;                                                                         \
        while (nt > 0) {                                                                               \
            int c = nt >= 8 ? 8 : nt < 4 ? nt : 4, r = 0;                                              \
            if (c == 8)                                                                                \
                for (; r + 2 <= nr; r += 2)                                                            \
                    body(n, w + (size_t)r * w_stride, w_stride, act, act_stride, out + r, out_stride,  \
                         8, 2, 8);                                                                     \
            else if (c == 1)                                                                           \
                for (; r + 16 <= nr; r += 16)                                                          \
                    body(n, w + (size_t)r * w_stride, w_stride, act, act_stride, out + r, out_stride,  \
                         1, 16, 1);                                                                    \
            else if (c == 2)                                                                           \
                for (; r + 8 <= nr; r += 8)                                                            \
                    body(n, w + (size_t)r * w_stride, w_stride, act, act_stride, out + r, out_stride,  \
                         2, 8, 2);                                                                     \
            for (int c0 = 0; r < nr && c0 < c; c0 += 4)                                                \
                KNAME(tile44_##name)(n, w + (size_t)r * w_stride, w_stride, nr - r,                    \
                                     (const uint8_t *)act + (size_t)c0 * act_stride, act_stride,       \
                                     c - c0 < 4 ? c - c0 : 4, out + r + (size_t)c0 * out_stride,        \
                                     out_stride);                                                      \
            act = (const uint8_t *)act + (size_t)c * act_stride;                                       \
            out += (size_t)c * out_stride;                                                             \
            nt -= c;                                                                                   \
        }                                                                                              \
    }                                                                                                  \
    static __attribute__((unused)) void KNAME(dot1_##name)(int64_t n, const void *w, const void *act,     \
                                                          size_t act_stride, int nt,                   \
                                   float *out, size_t out_stride)                                      \
    {                                                                                                  \
        KNAME(tile_##name)(n, w, 0, 1, act, act_stride, nt, out, out_stride);                          \
    }
K_TILE_EXPORT(q4_k_tree_, k_q4_k_tile)
K_TILE_EXPORT(q5_k_, k_q5_k_tile)
K_TILE_EXPORT(q6_k_tree_, k_q6_k_tile)

#include "engine/kernels/kernels_x86_q4tx.h"
#include "engine/kernels/kernels_x86_q6tx.h"
