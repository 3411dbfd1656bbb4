/* kernels_x86_packed_avx2.h - the AVX2 level's kernels on packed weights
 * (the x16 layout of kpack.h): one group of 16 rows x nt (1..KERN_NT_MAX)
 * tokens. Included by kernels_x86_body.h when the level has no VNNI. Not a
 * public header.
 *
 * A 64-byte vector of the layout is two 256-bit halves, rows 0-7 and rows
 * 8-15, each with one row per 32-bit lane, so these kernels read the same
 * packed copy as the VNNI level's (kernels_x86_packed.h) with no gathers,
 * transpositions or horizontal sums. Tokens go in groups of up to 4 (one
 * out-of-line function per group size keeps the accumulators in
 * registers); each group streams the whole group of rows (from L1/L2 after
 * the first). With more than 4 tokens the K-quants (Q4_K, Q5_K, Q6_K), whose
 * unpacking costs as much as the products of a few tokens, run block-major
 * instead: each block's 8-row half is unpacked once into an L1 buffer and
 * every token group runs on it, the blocks still in order per accumulator.
 *
 * The integer sums are exact and equal to the VNNI level's: without VNNI,
 * u8 x s8 products go through vpmaddubsw where the int16 pair sums cannot
 * saturate (Q8_0 / Q5_0: |w| against sign-adjusted activations, |pair| <=
 * 2 * 128 * 127; Q4_K: nibbles, eight pair sums added in int16, <= 30480;
 * Q5_K: 5-bit values, four added, <= 31496; Q6_K: 6-bit values, two
 * added, <= 32004) and vpmaddwd with the scale in
 * both int16 halves applies a sub-block scale. The float operations per
 * (row, token), block by block, are the VNNI tiles' (kernels_x86_q8tx.h,
 * kernels_x86_q4tx.h, kernels_x86_q6tx.h):
 *   Q8_0, Q5_0: a = fma(dw * da, (float)S, a)
 *   Q4_K, Q5_K: a = fma(d * dy, (float)S, a); a = a - (dmin * dy) * (float)M
 *   Q6_K:       a = fma(d * dy, (float)(S - 32 O), a)
 * so a packed matrix gives bitwise the same values at both levels, for any
 * token count (batch invariance holds). They differ from this level's
 * original-row kernels (8 float lanes summed at the end) by rounding only,
 * within the tolerance kernels.h allows between levels.
 *
 * With KERN_AVXVNNI (kernels_avxvnni.c) the products are summed by
 * vpdpbusd into int32 lanes instead (k_p2_dot_acc: whole sub-blocks, then
 * vpmulld by the scale): the same integers, so the same values.
 */

#include "engine/kernels/kpack.h"

/* Prefetch while working on a block of `bytes`: the same span K_PACK_PF
 * bytes past the next block's start. A fixed distance from the current
 * block (1 KiB until 2026-11-28) fell inside the block itself for the
 * large ones (Q6_K 3,392 bytes, Q4_K 2,304): the last lines of a block,
 * where its scales lie, were requested just before their use, and decode
 * stalled on DRAM there (perf: 31 % of the Q6_K kernel's samples on the
 * first scale load). Measurements: docs/performance.md, "Session 4: a
 * quiet machine; the packed kernels' prefetch". */
#ifndef K_PACK_PF
#define K_PACK_PF 1024
#endif

#define K_FOR_G(t) _Pragma("GCC unroll 4") for (int t = 0; t < ng; t++)

KB void k_p2_pf(const uint8_t *p, size_t bytes)
{
    for (size_t o = 0; o < bytes; o += 64)
        _mm_prefetch((const char *)p + bytes + K_PACK_PF + o, _MM_HINT_T0);
}

/* Half h (rows 8h..8h+7) of vector j of a packed block. */
KB __m256i k_p2_half(const uint8_t *blk, int j, int h)
{
    return _mm256_load_si256((const __m256i *)(blk + (size_t)j * KPACK_VEC + 32 * h));
}

/* A dword of activation bytes, broadcast. */
KB __m256i k_p2_bc4(const void *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* The low (hi = 0) or high 16 bits of each dword, as 8 fp16 -> floats. */
KB __m256 k_p2_half_ps(__m256i dw, const int hi)
{
    const __m256i v = hi ? _mm256_srli_epi32(dw, 16) : _mm256_and_si256(dw, _mm256_set1_epi32(0xFFFF));
    return _mm256_cvtph_ps(_mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
}

/* t plus the u8 x s8 products of w and a: int32 lanes with AVX-VNNI,
 * else int16 pair sums (the callers bound how many words they add before
 * k_p2_scaled, K_P2_RUN words at most); k_p2_scaled: those sums times the
 * scale of sc (int16 pairs (s, s)), as int32 lanes. */
#if KERN_AVXVNNI
#define K_P2_RUN(n) 8
KB __m256i k_p2_dot_acc(__m256i t, __m256i w, __m256i a)
{
    return _mm256_dpbusd_avx_epi32(t, w, a);
}
KB __m256i k_p2_scaled(__m256i t, __m256i sc)
{
    return _mm256_mullo_epi32(t, _mm256_srai_epi32(_mm256_slli_epi32(sc, 16), 16));
}
#else
#define K_P2_RUN(n) (n)
KB __m256i k_p2_dot_acc(__m256i t, __m256i w, __m256i a)
{
    return _mm256_add_epi16(t, _mm256_maddubs_epi16(w, a));
}
KB __m256i k_p2_scaled(__m256i t, __m256i sc)
{
    return _mm256_madd_epi16(t, sc);
}
#endif

/* Stores lanes of acc whose bit is set in keep8. */
KB void k_p2_store(__m256 acc, unsigned keep8, float *out)
{
    if (keep8 == 0xFF) {
        _mm256_storeu_ps(out, acc);
        return;
    }
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i m = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)keep8), bit), bit);
    _mm256_maskstore_ps(out, m, acc);
}

/* s plus one dword of w (signed bytes, rows in lanes; aw = |w|) times the
 * 4 activation bytes at a, exact, into int32 lanes: |w| against the
 * activations with w's signs (|pair| <= 2 * 127 * 127, no saturation). */
KB __m256i k_p2_s8_word(__m256i s, __m256i w, __m256i aw, const int8_t *a)
{
    const __m256i sa = _mm256_sign_epi8(k_p2_bc4(a), w);
#if KERN_AVXVNNI
    return _mm256_dpbusd_avx_epi32(s, aw, sa);
#else
    return _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sa), _mm256_set1_epi16(1)));
#endif
}

/* The sum over 8 dwords of w times the activation bytes a[0..31], exact,
 * into int32 lanes (two chains: even and odd words). */
KB __m256i k_p2_s8_block(const __m256i w[8], const int8_t *a)
{
    __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
    _Pragma("GCC unroll 8") for (int d = 0; d < 8; d += 2) {
        s0 = k_p2_s8_word(s0, w[d], _mm256_sign_epi8(w[d], w[d]), a + 4 * d);
        s1 = k_p2_s8_word(s1, w[d + 1], _mm256_sign_epi8(w[d + 1], w[d + 1]), a + 4 * d + 4);
    }
    return _mm256_add_epi32(s0, s1);
}

/* A Q8_0 / Q5_0 block's float step for one token: acc + dw dy S. */
KB __m256 k_p2_int8_finish(__m256 acc, __m256 dw, __m256i s, const block_q8_0 *y)
{
    return _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(k_h2f(y->d))), _mm256_cvtepi32_ps(s), acc);
}

/* ---- Q8_0 and Q5_0: int8 blocks of 32 ---------------------------------- */

/* Block i of half h as 8 dwords of signed bytes. */
KB void k_p2_q8_0_words(const uint8_t *g, int64_t i, int h, __m256i w[8])
{
    const uint8_t *blk = g + (size_t)i * KPACK_Q8_0_VECS * KPACK_VEC;
    _Pragma("GCC unroll 8") for (int d = 0; d < 8; d++) w[d] = k_p2_half(blk, d, h);
}

KB void k_p2_q5_0_words(const uint8_t *g, int64_t i, int h, __m256i w[8])
{
    const uint8_t *blk = g + (size_t)i * KPACK_Q5_0_VECS * KPACK_VEC;
    const __m256i m4 = _mm256_set1_epi8(0xF), b1 = _mm256_set1_epi32(0x01010101);
    const __m256i spread = _mm256_set1_epi32(0x00204081), k16 = _mm256_set1_epi8(16);
    const __m256i nib4 = _mm256_set1_epi32(0xF), qh = k_p2_half(blk, 4, h);
    _Pragma("GCC unroll 8") for (int d = 0; d < 8; d++) {
        const __m256i qs = k_p2_half(blk, d & 3, h);
        const __m256i nib = d < 4 ? _mm256_and_si256(qs, m4) : _mm256_and_si256(_mm256_srli_epi16(qs, 4), m4);
        const __m256i bits = _mm256_and_si256(_mm256_srli_epi32(qh, 4 * d), nib4);
        const __m256i hb = _mm256_slli_epi32(_mm256_and_si256(_mm256_mullo_epi32(bits, spread), b1), 4);
        w[d] = _mm256_sub_epi8(_mm256_or_si256(nib, hb), k16);
    }
}

/* Tokens 0..ng-1 of one group: kind 0 Q8_0, 1 Q5_0 (decoded to int8
 * blocks); the scales (16 fp16 per block, 32 bytes) follow the blocks. */
KB void k_p2_int8_tokens(int64_t n, const uint8_t *g, const void *act, size_t act_stride, float *out,
                         size_t out_stride, unsigned keep, const int ng, const int kind)
{
    const int64_t nb = n / QK8_0;
    const size_t vecs = kind == 1 ? KPACK_Q5_0_VECS : KPACK_Q8_0_VECS;
    const uint8_t *scales = g + (size_t)nb * vecs * KPACK_VEC;
    __m256 acc[2][4];
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) K_FOR_G(t) acc[h][t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        k_p2_pf(g + (size_t)i * vecs * KPACK_VEC, vecs * KPACK_VEC);
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
            __m256i w[8];
            if (kind == 1)
                k_p2_q5_0_words(g, i, h, w);
            else
                k_p2_q8_0_words(g, i, h, w);
            const __m256 dw = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(scales + 32 * i + 16 * h)));
            K_FOR_G(t) {
                const block_q8_0 *y = K_ACT(block_q8_0, t, i);
                acc[h][t] = k_p2_int8_finish(acc[h][t], dw, k_p2_s8_block(w, y->qs), y);
            }
        }
    }
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) K_FOR_G(t)
        k_p2_store(acc[h][t], (keep >> (8 * h)) & 0xFF, out + (size_t)t * out_stride + 8 * h);
}

/* Q8_0 for 2-4 tokens: one 8-row half at a time over the whole row, each
 * word loaded once for all tokens, so the integer sums of every token, its
 * accumulator, the word and its |w| stay in registers (k_p2_int8_tokens
 * holds both halves' accumulators and all eight words, and at 4 tokens gcc
 * spilled in the inner loop). The same sums S and float steps per (row,
 * token) as k_p2_int8_tokens: the same bits. The second half reads the
 * group again, from L2. */
KB void k_p2_q8_0_tokens(int64_t n, const uint8_t *g, const void *act, size_t act_stride, float *out,
                         size_t out_stride, unsigned keep, const int ng)
{
    const int64_t nb = n / QK8_0;
    const uint8_t *scales = g + (size_t)nb * KPACK_Q8_0_VECS * KPACK_VEC;
    _Pragma("GCC unroll 1") for (int h = 0; h < 2; h++) {
        __m256 acc[4];
        K_FOR_G(t) acc[t] = _mm256_setzero_ps();
        for (int64_t i = 0; i < nb; i++) {
            const uint8_t *blk = g + (size_t)i * KPACK_Q8_0_VECS * KPACK_VEC;
            if (h == 0)
                k_p2_pf(blk, KPACK_Q8_0_VECS * KPACK_VEC);
            __m256i s[4];
            K_FOR_G(t) s[t] = _mm256_setzero_si256();
            _Pragma("GCC unroll 2") for (int d = 0; d < 8; d++) {
                const __m256i w = k_p2_half(blk, d, h), aw = _mm256_sign_epi8(w, w);
                K_FOR_G(t) s[t] = k_p2_s8_word(s[t], w, aw, K_ACT(block_q8_0, t, i)->qs + 4 * d);
            }
            const __m256 dw = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(scales + 32 * i + 16 * h)));
            K_FOR_G(t) acc[t] = k_p2_int8_finish(acc[t], dw, s[t], K_ACT(block_q8_0, t, i));
        }
        K_FOR_G(t) k_p2_store(acc[t], (keep >> (8 * h)) & 0xFF, out + (size_t)t * out_stride + 8 * h);
    }
}

/* Q4_0 by its unsigned nibbles, as the VNNI level's pk_q4_0_: S =
 * sum(nib * a) - 8 sum(a); the eight words' pair sums add up in int16
 * (<= 8 * 2 * 15 * 127 = 30480) before one vpmaddwd (AVX-VNNI: vpdpbusd
 * into int32). The same S and float steps as k_p2_int8_tokens. */
KB void k_p2_q4_0_tokens(int64_t n, const uint8_t *g, const void *act, size_t act_stride, float *out,
                         size_t out_stride, unsigned keep, const int ng)
{
    const int64_t nb = n / QK4_0;
    const uint8_t *scales = g + (size_t)nb * KPACK_Q4_0_VECS * KPACK_VEC;
    const __m256i m4 = _mm256_set1_epi8(0xF), ones = _mm256_set1_epi16(1), one8 = _mm256_set1_epi8(1);
    __m256 acc[2][4];
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) K_FOR_G(t) acc[h][t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *blk = g + (size_t)i * KPACK_Q4_0_VECS * KPACK_VEC;
        k_p2_pf(blk, KPACK_Q4_0_VECS * KPACK_VEC);
        __m256i sa[4];
        K_FOR_G(t) { /* -8 sum(a) of each token's block, in every lane */
            const __m256i ay = _mm256_loadu_si256((const __m256i *)K_ACT(block_q8_0, t, i)->qs);
            __m256i s8 = _mm256_madd_epi16(_mm256_maddubs_epi16(one8, ay), ones);
            s8 = _mm256_add_epi32(s8, _mm256_permute2x128_si256(s8, s8, 1));
            s8 = _mm256_add_epi32(s8, _mm256_shuffle_epi32(s8, 0x4E));
            s8 = _mm256_add_epi32(s8, _mm256_shuffle_epi32(s8, 0xB1));
            sa[t] = _mm256_slli_epi32(_mm256_sub_epi32(_mm256_setzero_si256(), s8), 3);
        }
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
            __m256i v[8];
            _Pragma("GCC unroll 4") for (int d = 0; d < 4; d++) {
                const __m256i q = k_p2_half(blk, d, h);
                v[d] = _mm256_and_si256(q, m4);
                v[4 + d] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            }
            const __m256 dw = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(scales + 32 * i + 16 * h)));
            K_FOR_G(t) {
                const block_q8_0 *y = K_ACT(block_q8_0, t, i);
                __m256i p = KERN_AVXVNNI ? sa[t] : _mm256_setzero_si256();
                _Pragma("GCC unroll 8") for (int d = 0; d < 8; d++) p = k_p2_dot_acc(p, v[d], k_p2_bc4(y->qs + 4 * d));
                const __m256i s = KERN_AVXVNNI ? p : _mm256_add_epi32(_mm256_madd_epi16(p, ones), sa[t]);
                acc[h][t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(k_h2f(y->d))), _mm256_cvtepi32_ps(s),
                                            acc[h][t]);
            }
        }
    }
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) K_FOR_G(t)
        k_p2_store(acc[h][t], (keep >> (8 * h)) & 0xFF, out + (size_t)t * out_stride + 8 * h);
}

/* ---- Q4_K ---------------------------------------------------------------- */

/* Scales (as int16 pairs (s, s)) and mins (pairs (m, m)) of half h's 8
 * rows: ggml's bit manipulation, lane-wise (as k_q4_scales_mins). */
KB void k_p2_q4_scales_mins(__m256i u0, __m256i u1, __m256i u2, __m256i sc[8], __m256i mp[8])
{
    const __m256i km1 = _mm256_set1_epi32(0x3f3f3f3f), km2 = _mm256_set1_epi32(0x0f0f0f0f);
    const __m256i km3 = _mm256_set1_epi32(0x03030303), b255 = _mm256_set1_epi32(0xFF);
    const __m256i s03 = _mm256_and_si256(u0, km1), m03 = _mm256_and_si256(u1, km1);
    const __m256i s47 = _mm256_or_si256(_mm256_and_si256(u2, km2),
                                        _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u0, 6), km3), 4));
    const __m256i m47 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u2, 4), km2),
                                        _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u1, 6), km3), 4));
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
        const __m256i sa = _mm256_and_si256(_mm256_srli_epi32(s03, 8 * k), b255);
        const __m256i sb = _mm256_and_si256(_mm256_srli_epi32(s47, 8 * k), b255);
        const __m256i ma = _mm256_and_si256(_mm256_srli_epi32(m03, 8 * k), b255);
        const __m256i mb = _mm256_and_si256(_mm256_srli_epi32(m47, 8 * k), b255);
        sc[k] = _mm256_or_si256(sa, _mm256_slli_epi32(sa, 16));
        sc[4 + k] = _mm256_or_si256(sb, _mm256_slli_epi32(sb, 16));
        mp[k] = _mm256_or_si256(ma, _mm256_slli_epi32(ma, 16));
        mp[4 + k] = _mm256_or_si256(mb, _mm256_slli_epi32(mb, 16));
    }
}

/* Word d of chunk sp of half h (8 rows x 4 values each): low and high
 * nibbles, with bit 4 from qh for Q5_K. */
KB void k_p2_q45_word(const uint8_t *blk, int h, int sp, int d, const int q5, __m256i *wl, __m256i *wh)
{
    const __m256i m4 = _mm256_set1_epi8(0xF), m1 = _mm256_set1_epi8(1);
    const __m256i v = k_p2_half(blk, (q5 ? 12 : 4) + 8 * sp + d, h);
    *wl = _mm256_and_si256(v, m4);
    *wh = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    if (q5) {
        const __m256i qh = k_p2_half(blk, 4 + d, h);
        *wl = _mm256_or_si256(*wl, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * sp), m1), 4));
        *wh = _mm256_or_si256(*wh, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * sp + 1), m1), 4));
    }
}

/* A block's two float steps for one token: acc + d dy S - dmin dy M, with
 * M the mins (pairs mp) against the token's 16-element sums. */
KB __m256 k_p2_q45_finish(__m256 acc, __m256i s, const __m256i mp[8], __m256 dx, __m256 dmx, const block_q8_K *y)
{
    __m256i m = _mm256_setzero_si256();
    _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
        m = _mm256_add_epi32(m, _mm256_madd_epi16(mp[k], k_p2_bc4(y->bsums + 2 * k)));
    const __m256 dy = _mm256_set1_ps(y->d);
    acc = _mm256_fmadd_ps(_mm256_mul_ps(dx, dy), _mm256_cvtepi32_ps(s), acc);
    return _mm256_fnmadd_ps(_mm256_mul_ps(dmx, dy), _mm256_cvtepi32_ps(m), acc);
}

typedef struct {
    __m256i w[4][8][2]; /* [chunk sp][word d][low / high nibbles (+ bit 4)] */
    __m256i sc[8], mp[8];
    __m256 dx, dmx;
} k_p2_q45_half_t;

/* s[t] = the block's scaled integer sums of half h for tokens 0..ng-1, the
 * words taken from u when `unpacked` (block-major: unpacked once), else
 * unpacked from blk as they are used. */
KB void k_p2_q45_sums(const uint8_t *blk, int h, const k_p2_q45_half_t *u, const __m256i sc[8], const void *act,
                      size_t act_stride, int64_t i, __m256i s[4], const int ng, const int q5, const int unpacked)
{
    const int run = q5 ? K_P2_RUN(4) : 8;
    K_FOR_G(t) s[t] = _mm256_setzero_si256();
    _Pragma("GCC unroll 1") for (int sp = 0; sp < 4; sp++) {
        _Pragma("GCC unroll 2") for (int d0 = 0; d0 < 8; d0 += run) {
            __m256i tl[4], th[4];
            K_FOR_G(t) tl[t] = th[t] = _mm256_setzero_si256();
            _Pragma("GCC unroll 8") for (int d = d0; d < d0 + run; d++) {
                __m256i wl, wh;
                if (unpacked)
                    wl = u->w[sp][d][0], wh = u->w[sp][d][1];
                else
                    k_p2_q45_word(blk, h, sp, d, q5, &wl, &wh);
                K_FOR_G(t) {
                    const int8_t *q = K_ACT(block_q8_K, t, i)->qs + 64 * sp + 4 * d;
                    tl[t] = k_p2_dot_acc(tl[t], wl, k_p2_bc4(q));
                    th[t] = k_p2_dot_acc(th[t], wh, k_p2_bc4(q + 32));
                }
            }
            K_FOR_G(t) {
                s[t] = _mm256_add_epi32(s[t], k_p2_scaled(tl[t], sc[2 * sp]));
                s[t] = _mm256_add_epi32(s[t], k_p2_scaled(th[t], sc[2 * sp + 1]));
            }
        }
    }
}

/* Q4_K (q5 = 0) and Q5_K (q5 = 1: bit 4 of each value from qh, vectors
 * 4..11, bit 2 sp for chunk sp's low nibbles and 2 sp + 1 for its high
 * ones; the 5-bit values' pair sums are added 4 words at a time in int16,
 * the nibbles' 8 at a time). */
KB void k_p2_q45_k_tokens(int64_t n, const uint8_t *g, const void *act, size_t act_stride, float *out,
                          size_t out_stride, unsigned keep, const int ng, const int q5)
{
    const int64_t nb = n / QK_K;
    const size_t vecs = q5 ? KPACK_Q5_K_VECS : KPACK_Q4_K_VECS;
    __m256 acc[2][4];
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) K_FOR_G(t) acc[h][t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *blk = g + (size_t)i * vecs * KPACK_VEC;
        k_p2_pf(blk, vecs * KPACK_VEC);
        _Pragma("GCC unroll 1") for (int h = 0; h < 2; h++) {
            const __m256i dm = k_p2_half(blk, 0, h);
            const __m256 dx = k_p2_half_ps(dm, 0), dmx = k_p2_half_ps(dm, 1);
            __m256i sc[8], mp[8];
            k_p2_q4_scales_mins(k_p2_half(blk, 1, h), k_p2_half(blk, 2, h), k_p2_half(blk, 3, h), sc, mp);
            __m256i s[4];
            k_p2_q45_sums(blk, h, NULL, sc, act, act_stride, i, s, ng, q5, 0);
            K_FOR_G(t) acc[h][t] = k_p2_q45_finish(acc[h][t], s[t], mp, dx, dmx, K_ACT(block_q8_K, t, i));
        }
    }
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) K_FOR_G(t)
        k_p2_store(acc[h][t], (keep >> (8 * h)) & 0xFF, out + (size_t)t * out_stride + 8 * h);
}

/* Q4_K / Q5_K for more than 4 tokens (prefill): block-major. Each block's
 * 8-row half is unpacked once - the values as bytes, scales, mins, d and
 * dmin - into an L1 buffer, and every 4-token group of the call runs on
 * it, instead of each group unpacking the whole row group again (which
 * the token-group order above does). Every (row, token) accumulator still
 * takes the blocks in order with the same two float steps, so the values
 * are bitwise those of k_p2_q45_k_tokens. */
KB void k_p2_q45_unpack(const uint8_t *blk, int h, const int q5, k_p2_q45_half_t *u)
{
    const __m256i dm = k_p2_half(blk, 0, h);
    u->dx = k_p2_half_ps(dm, 0);
    u->dmx = k_p2_half_ps(dm, 1);
    k_p2_q4_scales_mins(k_p2_half(blk, 1, h), k_p2_half(blk, 2, h), k_p2_half(blk, 3, h), u->sc, u->mp);
    _Pragma("GCC unroll 1") for (int sp = 0; sp < 4; sp++) _Pragma("GCC unroll 8") for (int d = 0; d < 8; d++)
        k_p2_q45_word(blk, h, sp, d, q5, &u->w[sp][d][0], &u->w[sp][d][1]);
}

/* Tokens 0..ng-1 of block i on an unpacked half: acc[t] (8 rows) takes the
 * block's steps as in k_p2_q45_k_tokens. */
KB void k_p2_q45_half_tokens(const k_p2_q45_half_t *u, const void *act, size_t act_stride, int64_t i, __m256 *acc,
                             const int ng, const int q5)
{
    __m256i s[4];
    k_p2_q45_sums(NULL, 0, u, u->sc, act, act_stride, i, s, ng, q5, 1);
    K_FOR_G(t) acc[t] = k_p2_q45_finish(acc[t], s[t], u->mp, u->dx, u->dmx, K_ACT(block_q8_K, t, i));
}

#define K_P2_Q45_HALF(ng, q5, suffix)                                                                          \
    static __attribute__((noinline)) void KNAME(p2_q45h_##suffix##_g##ng##_)(                                  \
        const k_p2_q45_half_t *u, const void *act, size_t act_stride, int64_t i, __m256 *acc)                 \
    {                                                                                                       \
        k_p2_q45_half_tokens(u, act, act_stride, i, acc, ng, q5);                                           \
    }
K_P2_Q45_HALF(1, 0, q4)
K_P2_Q45_HALF(2, 0, q4)
K_P2_Q45_HALF(3, 0, q4)
K_P2_Q45_HALF(4, 0, q4)
K_P2_Q45_HALF(1, 1, q5)
K_P2_Q45_HALF(2, 1, q5)
K_P2_Q45_HALF(3, 1, q5)
K_P2_Q45_HALF(4, 1, q5)

/* One group of 16 rows x nt (<= KERN_NT_MAX) tokens, block-major: each
 * block's 8-row half unpacked once by unpack(blk, h, &u) into a half_t,
 * then half<ng>_(&u, ...) for every group of up to 4 tokens. */
#define K_P2_BLOCK_MAJOR(fname, half_t, vecs, unpack, half)                                                    \
    static void KNAME(fname)(int64_t n, const uint8_t *g, const void *act, size_t act_stride, int nt, float *out, \
                             size_t out_stride, unsigned keep)                                                \
    {                                                                                                       \
        const int64_t nb = n / QK_K;                                                                        \
        __m256 acc[2][KERN_NT_MAX];                                                                         \
        half_t u;                                                                                           \
        for (int h = 0; h < 2; h++)                                                                         \
            for (int t = 0; t < nt; t++)                                                                    \
                acc[h][t] = _mm256_setzero_ps();                                                            \
        for (int64_t i = 0; i < nb; i++) {                                                                  \
            const uint8_t *blk = g + (size_t)i * (vecs) * KPACK_VEC;                                        \
            k_p2_pf(blk, (vecs) * KPACK_VEC);                                                               \
            for (int h = 0; h < 2; h++) {                                                                   \
                unpack(blk, h, &u);                                                                         \
                for (int t = 0; t < nt; t += 4) {                                                           \
                    const void *a = (const uint8_t *)act + (size_t)t * act_stride;                           \
                    switch (nt - t < 4 ? nt - t : 4) {                                                      \
                    case 1: KNAME(half##1_)(&u, a, act_stride, i, acc[h] + t); break;                       \
                    case 2: KNAME(half##2_)(&u, a, act_stride, i, acc[h] + t); break;                       \
                    case 3: KNAME(half##3_)(&u, a, act_stride, i, acc[h] + t); break;                       \
                    default: KNAME(half##4_)(&u, a, act_stride, i, acc[h] + t); break;                      \
                    }                                                                                       \
                }                                                                                           \
            }                                                                                               \
        }                                                                                                   \
        for (int h = 0; h < 2; h++)                                                                         \
            for (int t = 0; t < nt; t++)                                                                    \
                k_p2_store(acc[h][t], (keep >> (8 * h)) & 0xFF, out + (size_t)t * out_stride + 8 * h);      \
    }
#define K_P2_UNPACK_Q4(blk, h, u) k_p2_q45_unpack(blk, h, 0, u)
#define K_P2_UNPACK_Q5(blk, h, u) k_p2_q45_unpack(blk, h, 1, u)
K_P2_BLOCK_MAJOR(p2_q45bm_q4_, k_p2_q45_half_t, KPACK_Q4_K_VECS, K_P2_UNPACK_Q4, p2_q45h_q4_g)
K_P2_BLOCK_MAJOR(p2_q45bm_q5_, k_p2_q45_half_t, KPACK_Q5_K_VECS, K_P2_UNPACK_Q5, p2_q45h_q5_g)

/* ---- Q6_K ---------------------------------------------------------------- */

/* The 6-bit values (0..63) of the four element groups that share ql words
 * a (ql[16 hh + d]) and b (ql[16 hh + 8 + d]) and qh word hb (qh[8 hh +
 * d]), in ggml's order (as k_q6_assemble): w[q] is element group 4 g + j
 * of sub-block g = 8 hh + 2 q + d / 4, j = d % 4. */
KB void k_p2_q6_words(__m256i a, __m256i b, __m256i hb, __m256i w[4])
{
    const __m256i m4 = _mm256_set1_epi8(0xF), m30 = _mm256_set1_epi8(0x30);
    const __m256i hb2 = _mm256_srli_epi16(hb, 2);
    w[0] = _mm256_or_si256(_mm256_and_si256(a, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30));
    w[1] = _mm256_or_si256(_mm256_and_si256(b, m4), _mm256_and_si256(_mm256_slli_epi16(hb2, 4), m30));
    w[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), m4), _mm256_and_si256(hb, m30));
    w[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), m4), _mm256_and_si256(hb2, m30));
}

/* One element group of k_p2_q6_words: w[q] for j = d % 4 of sub-block g. */
KB __m256i k_p2_q6_word(const uint8_t *blk, int h, int g, int j)
{
    const int hh = g / 8, q = (g % 8) / 2, d = 4 * (g % 2) + j; /* q, d: constants when g % 8 is */
    __m256i w[4];
    k_p2_q6_words(k_p2_half(blk, 16 * hh + d, h), k_p2_half(blk, 16 * hh + 8 + d, h), k_p2_half(blk, 32 + 8 * hh + d, h),
                  w);
    return w[q];
}

/* pshufb control that puts scale byte b of each dword (row) in the high
 * byte of both of its int16 halves (the low bytes zeroed): an arithmetic
 * shift right by 8 then gives the pair (s, s), sign-extended. */
KB __m256i k_p2_q6_scale_shuf(const int b)
{
    const int m0 = 0x80 | b << 8 | 0x80 << 16 | b << 24, step = 4 << 8 | 4 << 24;
    return _mm256_setr_epi32(m0, m0 + step, m0 + 2 * step, m0 + 3 * step, m0, m0 + step, m0 + 2 * step,
                             m0 + 3 * step);
}

/* Sub-block sg's 16 products for one token (words w0..w3, activations
 * q = its 16 bytes), scaled, added to s. */
KB __m256i k_p2_q6_sub(__m256i s, __m256i w0, __m256i w1, __m256i w2, __m256i w3, __m256i sc16, const int8_t *q)
{
    const __m256i z = _mm256_setzero_si256();
    const __m256i p01 = k_p2_dot_acc(k_p2_dot_acc(z, w0, k_p2_bc4(q)), w1, k_p2_bc4(q + 4));
    const __m256i p23 = k_p2_dot_acc(k_p2_dot_acc(z, w2, k_p2_bc4(q + 8)), w3, k_p2_bc4(q + 12));
    s = _mm256_add_epi32(s, k_p2_scaled(p01, sc16));
    return _mm256_add_epi32(s, k_p2_scaled(p23, sc16));
}

/* A block's float step for one token: acc + d dy (S - 32 O), O the scale
 * pairs scp against the token's 16-element sums. */
KB __m256 k_p2_q6_finish(__m256 acc, __m256i s, const __m256i scp[8], __m256 dx, const block_q8_K *y)
{
    __m256i o = _mm256_setzero_si256();
    _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
        o = _mm256_add_epi32(o, _mm256_madd_epi16(scp[k], k_p2_bc4(y->bsums + 2 * k)));
    const __m256i tot = _mm256_sub_epi32(s, _mm256_slli_epi32(o, 5));
    return _mm256_fmadd_ps(_mm256_mul_ps(dx, _mm256_set1_ps(y->d)), _mm256_cvtepi32_ps(tot), acc);
}

KB void k_p2_q6_k_tokens(int64_t n, const uint8_t *g, const void *act, size_t act_stride, float *out,
                         size_t out_stride, unsigned keep, const int ng)
{
    const int64_t nb = n / QK_K;
    __m256 acc[2][4];
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) K_FOR_G(t) acc[h][t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *blk = g + (size_t)i * KPACK_Q6_K_VECS * KPACK_VEC;
        k_p2_pf(blk, KPACK_Q6_K_VECS * KPACK_VEC);
        _Pragma("GCC unroll 1") for (int h = 0; h < 2; h++) {
            const __m256 dx = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(blk + 52 * KPACK_VEC + 16 * h)));
            /* sc16[g]: scale g in both int16 halves; scp[k]: (sc_2k, sc_2k+1) */
            __m256i sc16[16], scp[8];
            _Pragma("GCC unroll 4") for (int u = 0; u < 4; u++) {
                const __m256i su = k_p2_half(blk, 48 + u, h);
                _Pragma("GCC unroll 4") for (int b = 0; b < 4; b++)
                    sc16[4 * u + b] = _mm256_srai_epi16(_mm256_shuffle_epi8(su, k_p2_q6_scale_shuf(b)), 8);
            }
            _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
                scp[k] = _mm256_blend_epi16(sc16[2 * k], sc16[2 * k + 1], 0xAA);
            __m256i s[4];
            K_FOR_G(t) s[t] = _mm256_setzero_si256();
            if (ng == 1) {
                /* per 128-element half hh and group of four ql words (dd): the
                 * 4 x 4 element groups of sub-blocks 8 hh + 2 q + dd, two words
                 * of each sub-block summed in int16 at a time */
                _Pragma("GCC unroll 1") for (int hh = 0; hh < 2; hh++) _Pragma("GCC unroll 1") for (int dd = 0; dd < 2; dd++) {
                    enum { RUN = K_P2_RUN(2) < 4 ? K_P2_RUN(2) : 4 }; /* words per sum (a sub-block has 4) */
                    _Pragma("GCC unroll 2") for (int j0 = 0; j0 < 4; j0 += RUN) {
                        __m256i t16[4][4];
                        _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) K_FOR_G(t) t16[q][t] = _mm256_setzero_si256();
                        _Pragma("GCC unroll 4") for (int j = j0; j < j0 + RUN; j++) {
                            const int d = 4 * dd + j;
                            __m256i w[4];
                            k_p2_q6_words(k_p2_half(blk, 16 * hh + d, h), k_p2_half(blk, 16 * hh + 8 + d, h),
                                          k_p2_half(blk, 32 + 8 * hh + d, h), w);
                            _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) K_FOR_G(t) {
                                const int8_t *aq = K_ACT(block_q8_K, t, i)->qs + 16 * (8 * hh + 2 * q + dd) + 4 * j;
                                t16[q][t] = k_p2_dot_acc(t16[q][t], w[q], k_p2_bc4(aq));
                            }
                        }
                        _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) K_FOR_G(t)
                            s[t] = _mm256_add_epi32(s[t], k_p2_scaled(t16[q][t], sc16[8 * hh + 2 * q + dd]));
                    }
                }
            } else {
                /* several tokens: one sub-block at a time (fewer live sums) */
                _Pragma("GCC unroll 1") for (int hh = 0; hh < 2; hh++) _Pragma("GCC unroll 8") for (int g8 = 0; g8 < 8; g8++) {
                    const int sg = 8 * hh + g8;
                    const __m256i w0 = k_p2_q6_word(blk, h, sg, 0), w1 = k_p2_q6_word(blk, h, sg, 1);
                    const __m256i w2 = k_p2_q6_word(blk, h, sg, 2), w3 = k_p2_q6_word(blk, h, sg, 3);
                    K_FOR_G(t) s[t] = k_p2_q6_sub(s[t], w0, w1, w2, w3, sc16[sg], K_ACT(block_q8_K, t, i)->qs + 16 * sg);
                }
            }
            K_FOR_G(t) acc[h][t] = k_p2_q6_finish(acc[h][t], s[t], scp, dx, K_ACT(block_q8_K, t, i));
        }
    }
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) K_FOR_G(t)
        k_p2_store(acc[h][t], (keep >> (8 * h)) & 0xFF, out + (size_t)t * out_stride + 8 * h);
}

/* Q6_K for more than 4 tokens (prefill): block-major as Q4_K / Q5_K above.
 * Each block's 8-row half is unpacked once (the 64 words of 6-bit values,
 * the scale pairs, d) and every 4-token group of the call runs on it with
 * the several-token order of k_p2_q6_k_tokens: the same integers and the
 * same float steps, so the same values. */
typedef struct {
    __m256i w[16][4]; /* [sub-block][element group] */
    __m256i sc16[16], scp[8];
    __m256 dx;
} k_p2_q6_half_t;

KB void k_p2_q6_unpack(const uint8_t *blk, int h, k_p2_q6_half_t *u)
{
    u->dx = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(blk + 52 * KPACK_VEC + 16 * h)));
    _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) {
        const __m256i su = k_p2_half(blk, 48 + v, h);
        _Pragma("GCC unroll 4") for (int b = 0; b < 4; b++)
            u->sc16[4 * v + b] = _mm256_srai_epi16(_mm256_shuffle_epi8(su, k_p2_q6_scale_shuf(b)), 8);
    }
    _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
        u->scp[k] = _mm256_blend_epi16(u->sc16[2 * k], u->sc16[2 * k + 1], 0xAA);
    _Pragma("GCC unroll 1") for (int hh = 0; hh < 2; hh++) _Pragma("GCC unroll 8") for (int d = 0; d < 8; d++) {
        __m256i w[4];
        k_p2_q6_words(k_p2_half(blk, 16 * hh + d, h), k_p2_half(blk, 16 * hh + 8 + d, h),
                      k_p2_half(blk, 32 + 8 * hh + d, h), w);
        /* w[q]: element group d % 4 of sub-block 8 hh + 2 q + d / 4 */
        _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) u->w[8 * hh + 2 * q + d / 4][d % 4] = w[q];
    }
}

KB void k_p2_q6_half_tokens(const k_p2_q6_half_t *u, const void *act, size_t act_stride, int64_t i, __m256 *acc,
                            const int ng)
{
    __m256i s[4];
    K_FOR_G(t) s[t] = _mm256_setzero_si256();
    _Pragma("GCC unroll 1") for (int hh = 0; hh < 2; hh++) _Pragma("GCC unroll 8") for (int g8 = 0; g8 < 8; g8++) {
        const int sg = 8 * hh + g8;
        const __m256i w0 = u->w[sg][0], w1 = u->w[sg][1], w2 = u->w[sg][2], w3 = u->w[sg][3];
        K_FOR_G(t) s[t] = k_p2_q6_sub(s[t], w0, w1, w2, w3, u->sc16[sg], K_ACT(block_q8_K, t, i)->qs + 16 * sg);
    }
    K_FOR_G(t) acc[t] = k_p2_q6_finish(acc[t], s[t], u->scp, u->dx, K_ACT(block_q8_K, t, i));
}

#define K_P2_Q6_HALF(ng)                                                                                       \
    static __attribute__((noinline)) void KNAME(p2_q6h_g##ng##_)(const k_p2_q6_half_t *u, const void *act,     \
                                                               size_t act_stride, int64_t i, __m256 *acc)     \
    {                                                                                                       \
        k_p2_q6_half_tokens(u, act, act_stride, i, acc, ng);                                                \
    }
K_P2_Q6_HALF(1)
K_P2_Q6_HALF(2)
K_P2_Q6_HALF(3)
K_P2_Q6_HALF(4)

K_P2_BLOCK_MAJOR(p2_q6bm_, k_p2_q6_half_t, KPACK_Q6_K_VECS, k_p2_q6_unpack, p2_q6h_g)

/* ---- entry points: groups of up to 4 tokens -------------------------------- */

#define K_P2_GROUP_FNS(name, call)                                                                              \
    static __attribute__((noinline)) void KNAME(p2_##name##_g1_)(K_P2_ARGS) { call(1); }                        \
    static __attribute__((noinline)) void KNAME(p2_##name##_g2_)(K_P2_ARGS) { call(2); }                        \
    static __attribute__((noinline)) void KNAME(p2_##name##_g3_)(K_P2_ARGS) { call(3); }                        \
    static __attribute__((noinline)) void KNAME(p2_##name##_g4_)(K_P2_ARGS) { call(4); }
/* The tokens of a call in groups of 4, each group over the whole row group. */
#define K_P2_TOKEN_GROUPS(name)                                                                                 \
    for (int t = 0; t < nt; t += 4) {                                                                           \
        const void *a = (const uint8_t *)act + (size_t)t * act_stride;                                          \
        float *o = out + (size_t)t * out_stride;                                                                \
        switch (nt - t < 4 ? nt - t : 4) {                                                                      \
        case 1: KNAME(p2_##name##_g1_)(n, group, a, act_stride, o, out_stride, keep); break;                     \
        case 2: KNAME(p2_##name##_g2_)(n, group, a, act_stride, o, out_stride, keep); break;                     \
        case 3: KNAME(p2_##name##_g3_)(n, group, a, act_stride, o, out_stride, keep); break;                     \
        default: KNAME(p2_##name##_g4_)(n, group, a, act_stride, o, out_stride, keep); break;                    \
        }                                                                                                       \
    }
#define K_P2_GROUPS(name, call)                                                                                 \
    K_P2_GROUP_FNS(name, call)                                                                                  \
    static void KNAME(pk_##name##_)(int64_t n, const void *group, const void *act, size_t act_stride, int nt,   \
                                    float *out, size_t out_stride, unsigned keep)                              \
    {                                                                                                           \
        K_P2_TOKEN_GROUPS(name)                                                                                 \
    }
/* As K_P2_GROUPS, with more than 4 tokens going to the block-major
 * function bm (same values; the weights unpacked once per block). */
#define K_P2_GROUPS_BM(name, call, bm)                                                                          \
    K_P2_GROUP_FNS(name, call)                                                                                  \
    static void KNAME(pk_##name##_)(int64_t n, const void *group, const void *act, size_t act_stride, int nt,   \
                                    float *out, size_t out_stride, unsigned keep)                              \
    {                                                                                                           \
        if (nt > 4) {                                                                                           \
            KNAME(bm)(n, group, act, act_stride, nt, out, out_stride, keep);                                    \
            return;                                                                                             \
        }                                                                                                       \
        K_P2_TOKEN_GROUPS(name)                                                                                 \
    }
#define K_P2_ARGS \
    int64_t n, const void *group, const void *act, size_t act_stride, float *out, size_t out_stride, unsigned keep
#define K_P2_Q8_0(ng)                                                                                           \
    ((ng) == 1 ? k_p2_int8_tokens(n, group, act, act_stride, out, out_stride, keep, 1, 0)                       \
               : k_p2_q8_0_tokens(n, group, act, act_stride, out, out_stride, keep, ng))
#define K_P2_Q5_0(ng) k_p2_int8_tokens(n, group, act, act_stride, out, out_stride, keep, ng, 1)
#define K_P2_Q4_0(ng) k_p2_q4_0_tokens(n, group, act, act_stride, out, out_stride, keep, ng)
#define K_P2_Q4_K(ng) k_p2_q45_k_tokens(n, group, act, act_stride, out, out_stride, keep, ng, 0)
#define K_P2_Q5_K(ng) k_p2_q45_k_tokens(n, group, act, act_stride, out, out_stride, keep, ng, 1)
#define K_P2_Q6_K(ng) k_p2_q6_k_tokens(n, group, act, act_stride, out, out_stride, keep, ng)
K_P2_GROUPS(q8_0, K_P2_Q8_0)
K_P2_GROUPS(q5_0, K_P2_Q5_0)
K_P2_GROUPS(q4_0, K_P2_Q4_0)
K_P2_GROUPS_BM(q4_k, K_P2_Q4_K, p2_q45bm_q4_)
K_P2_GROUPS_BM(q5_k, K_P2_Q5_K, p2_q45bm_q5_)
K_P2_GROUPS_BM(q6_k, K_P2_Q6_K, p2_q6bm_)
