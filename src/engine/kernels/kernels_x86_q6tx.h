/* kernels_x86_q6tx.h - the Q6_K tile of the VNNI level for 9+ tokens: 16
 * weight rows in the 16 lanes of a register, as kernels_x86_q4tx.h does
 * for Q4_K (same transposition, k_tr16, row offsets and store, k_tx_offsets /
 * k_tx_store, and the same per-lane float step).
 * Included by kernels_x86_ktile.h after kernels_x86_q4tx.h. Not a public
 * header.
 *
 * Per block: ql (32 dwords) and qh (16 dwords) of the 16 rows are
 * transposed and the 6-bit values (0..63) of every 4 consecutive elements
 * assembled into one register (64 registers, L1 scratch). Per token and
 * 16-element sub-block g: 4 vpdpbusd against broadcast activations, times
 * the int8 scale (vpmulld); the -32 offset is 32 * sum_g sc_g * bsum_g
 * (vpdpwssd on scale pairs against broadcast bsum pairs). Exact integers;
 * then per (row, token), lane-wise: a = fma(d * dy, (float)S, a), as the
 * pair-tree kernel k_q6_k_tile does, so smaller groups can stay there.
 */

/* Tokens 0..ng-1 (ng <= 4) of block i. */
KB void k_q6tx_tokens(const void *act, size_t act_stride, int64_t i, const __m512i v[64], const __m512i sc[16],
                      const __m512i scp[8], __m512 dx, __m512 *acc, const int ng)
{
    __m512i s[4];
    K_FOR_T4(t) s[t] = _mm512_setzero_si512();
    /* four sub-blocks at once: 4 * ng independent vpdpbusd chains */
    _Pragma("GCC unroll 1") for (int sq = 0; sq < 4; sq++) {
        __m512i tmp[4][4];
        _Pragma("GCC unroll 4") for (int b = 0; b < 4; b++) K_FOR_T4(t) tmp[b][t] = _mm512_setzero_si512();
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
            _Pragma("GCC unroll 4") for (int b = 0; b < 4; b++) {
                const int g = 4 * sq + b;
                const __m512i wv = v[4 * g + j];
                K_FOR_T4(t) tmp[b][t] = _mm512_dpbusd_epi32(tmp[b][t], wv, k_bc4(K_ACT(block_q8_K, t, i)->qs + 16 * g + 4 * j));
            }
        }
        _Pragma("GCC unroll 4") for (int b = 0; b < 4; b++) K_FOR_T4(t)
            s[t] = _mm512_add_epi32(s[t], _mm512_mullo_epi32(tmp[b][t], sc[4 * sq + b]));
    }
    K_FOR_T4(t) {
        const block_q8_K *y = K_ACT(block_q8_K, t, i);
        __m512i o = _mm512_setzero_si512();
        _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) o = _mm512_dpwssd_epi32(o, scp[k], k_bc4(y->bsums + 2 * k));
        const __m512i tot = _mm512_sub_epi32(s[t], _mm512_slli_epi32(o, 5));
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dx, _mm512_set1_ps(y->d)), _mm512_cvtepi32_ps(tot), acc[t]);
    }
}

#define K_Q6TX_GROUP(ng)                                                                                        \
    static __attribute__((noinline)) void KNAME(q6tx_g##ng##_)(const void *act, size_t act_stride, int64_t i,   \
                                                               const __m512i v[64], const __m512i sc[16],      \
                                                               const __m512i scp[8], __m512 dx, __m512 *acc)   \
    {                                                                                                           \
        k_q6tx_tokens(act, act_stride, i, v, sc, scp, dx, acc, ng);                                             \
    }
K_Q6TX_GROUP(1)
K_Q6TX_GROUP(2)
K_Q6TX_GROUP(3)
K_Q6TX_GROUP(4)

/* The 16 int8 scales of the 16 rows (su[u] lane r: scale bytes 4u..4u+3
 * of row r) as sc[16], and the pairs (sc_2k, sc_2k+1) as int16 for the -32
 * offset. */
KB void k_q6_scales(const __m512i su[4], __m512i sc[16], __m512i scp[8])
{
    const __m512i lo16 = _mm512_set1_epi32(0xFFFF);
    _Pragma("GCC unroll 4") for (int u = 0; u < 4; u++)
        _Pragma("GCC unroll 4") for (int b = 0; b < 4; b++)
            sc[4 * u + b] = _mm512_srai_epi32(_mm512_slli_epi32(su[u], 24 - 8 * b), 24);
    _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
        scp[k] = _mm512_or_si512(_mm512_and_si512(sc[2 * k], lo16), _mm512_slli_epi32(sc[2 * k + 1], 16));
}

/* v[E]: the 6-bit values (0..63) of elements 4E..4E+3, from the rows-in-
 * lanes ql (32 dwords) and qh (16 dwords), in ggml's order: per half h,
 * l < 32: l, l + 32, l + 64, l + 96 from ql[l], ql[l + 32] low and high
 * nibbles and qh[l] bits 0-1, 2-3, 4-5, 6-7. */
KB void k_q6_assemble(const __m512i *ql, const __m512i *qh, __m512i v[64])
{
    const __m512i m4 = _mm512_set1_epi8(0xF), m3 = _mm512_set1_epi8(3), m30 = _mm512_set1_epi8(0x30);
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
        _Pragma("GCC unroll 8") for (int d = 0; d < 8; d++) {
            const __m512i a = ql[16 * h + d], b = ql[16 * h + 8 + d], hb = qh[8 * h + d];
            v[32 * h + d] = _mm512_or_si512(_mm512_and_si512(a, m4), _mm512_slli_epi16(_mm512_and_si512(hb, m3), 4));
            v[32 * h + 8 + d] = _mm512_or_si512(_mm512_and_si512(b, m4),
                                                _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, 2), m3), 4));
            v[32 * h + 16 + d] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(a, 4), m4), _mm512_and_si512(hb, m30));
            v[32 * h + 24 + d] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(b, 4), m4),
                                                 _mm512_and_si512(_mm512_srli_epi16(hb, 2), m30));
        }
    }
}

/* Block i of 16 rows, all nt tokens, into acc. Shared by the original-
 * layout and the packed Q6_K tiles. */
KB void k_q6tx_block(const __m512i v[64], const __m512i sc[16], const __m512i scp[8], __m512 dx, const void *act,
                     size_t act_stride, int64_t i, int nt, __m512 *acc)
{
    for (int t = 0; t < nt; t += 4) {
        const void *a = (const uint8_t *)act + (size_t)t * act_stride;
        switch (nt - t < 4 ? nt - t : 4) {
        case 1: KNAME(q6tx_g1_)(a, act_stride, i, v, sc, scp, dx, acc + t); break;
        case 2: KNAME(q6tx_g2_)(a, act_stride, i, v, sc, scp, dx, acc + t); break;
        case 3: KNAME(q6tx_g3_)(a, act_stride, i, v, sc, scp, dx, acc + t); break;
        default: KNAME(q6tx_g4_)(a, act_stride, i, v, sc, scp, dx, acc + t); break;
        }
    }
}

static void KNAME(q6_k_tx_)(int64_t n, const uint8_t *w, size_t w_stride, int nr, const void *act,
                            size_t act_stride, float *out, size_t out_stride, const int nt)
{
    const int64_t nb = n / QK_K;
    int32_t offs[16];
    const __m512i vofs = k_tx_offsets(offs, w_stride, nr);
    __m512 acc[KERN_NT_MAX];
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *base = w + (size_t)i * sizeof(block_q6_K);
        /* d (the upper half of the dword at 206: stays inside the block)
         * and the 16 int8 scales */
        const __m512i dwd = _mm512_i32gather_epi32(vofs, (const void *)(base + 206), 1);
        const __m512 dx = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dwd, 16)));
        __m512i su[4], sc[16], scp[8];
        _Pragma("GCC unroll 4") for (int u = 0; u < 4; u++)
            su[u] = _mm512_i32gather_epi32(vofs, (const void *)(base + 192 + 4 * u), 1);
        k_q6_scales(su, sc, scp);
        /* transposed ql (ql[d]: bytes 4d..4d+3) and qh */
        __m512i ql[32], qh[16];
        _Pragma("GCC unroll 3") for (int c = 0; c < 3; c++) {
            __m512i tv[16];
            _Pragma("GCC unroll 16") for (int r = 0; r < 16; r++) {
                const uint8_t *p = base + offs[r];
#if K_PF_DIST > 0
                if (c == 0)
                    _Pragma("GCC unroll 4") for (int l = 0; l < 4; l++)
                        _mm_prefetch((const char *)p + K_PF_DIST + 64 * l, _MM_HINT_T0);
#endif
                tv[r] = _mm512_loadu_si512((const void *)(p + 64 * c));
            }
            k_tr16(tv);
            _Pragma("GCC unroll 16") for (int d = 0; d < 16; d++) {
                if (c < 2)
                    ql[16 * c + d] = tv[d];
                else
                    qh[d] = tv[d];
            }
        }
        __m512i v[64];
        k_q6_assemble(ql, qh, v);
        k_q6tx_block(v, sc, scp, dx, act, act_stride, i, nt, acc);
    }
    k_tx_store(acc, nr, nt, out, out_stride);
}

/* Up to 8 tokens by the pair-tree kernel, more by the transposed one (same
 * float operations per (row, token)): the transposition and assembly of
 * the 6-bit values (~450 instructions per 16 rows) only pays off over
 * many tokens (measured: 1.3x at 64 tokens, even at 8, slower at 2). */
static void KNAME(tile_q6_k_)(int64_t n, const void *w, size_t w_stride, int nr, const void *act,
                              size_t act_stride, int nt, float *out, size_t out_stride)
{
    if (nt <= 8) {
        KNAME(tile_q6_k_tree_)(n, w, w_stride, nr, act, act_stride, nt, out, out_stride);
        return;
    }
    for (int r = 0; r < nr; r += 16)
        KNAME(q6_k_tx_)(n, (const uint8_t *)w + (size_t)r * w_stride, w_stride, nr - r < 16 ? nr - r : 16, act,
                        act_stride, out + r, out_stride, nt);
}

static void KNAME(dot1_q6_k_)(int64_t n, const void *w, const void *act, size_t act_stride, int nt, float *out,
                              size_t out_stride)
{
    KNAME(tile_q6_k_)(n, w, 0, 1, act, act_stride, nt, out, out_stride);
}
