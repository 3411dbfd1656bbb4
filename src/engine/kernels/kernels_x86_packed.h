/* kernels_x86_packed.h - the VNNI level's kernels on packed weights (the
 * x16 layout of kpack.h): one group of 16 rows x nt (1..KERN_NT_MAX)
 * tokens. Included by kernels_x86_body.h after the rows-in-lanes tiles
 * (kernels_x86_q4tx.h, kernels_x86_q6tx.h, kernels_x86_q8tx.h,
 * kernels_x86_q5tx.h), whose
 * per-token functions they call. Not a public header.
 *
 * The packed group already holds what those tiles build with gathers and
 * 16 x 16 transpositions (lane r of vector j: word j of row r), so these
 * kernels read it as one sequential stream of aligned vectors and go
 * straight to the per-token sums. The integer sums and the float
 * operations per (row, token) are exactly the unpacked tiles' (the same
 * per-token functions), so a packed matrix gives bitwise the values of its
 * original rows whatever the token count: batch invariance holds across
 * the two layouts too. Lanes not in `keep` are computed but not stored
 * (padding rows, or rows another chunk owns).
 */

#include "engine/kernels/kpack.h"

/* Prefetch distance in the group's stream (bytes): the hardware prefetcher
 * follows one sequential stream, this covers the DRAM latency at the
 * start of each page. */
#ifndef K_PACK_PF
#define K_PACK_PF 1024
#endif

KB void k_pk_pf(const uint8_t *p, size_t bytes)
{
    for (size_t o = 0; o < bytes; o += 64)
        _mm_prefetch((const char *)p + K_PACK_PF + o, _MM_HINT_T0);
}

KB void k_pk_store(const __m512 *acc, __mmask16 keep, int nt, float *out, size_t out_stride)
{
    for (int t = 0; t < nt; t++)
        _mm512_mask_storeu_ps(out + (size_t)t * out_stride, keep, acc[t]);
}

static void KNAME(pk_q8_0_)(int64_t n, const void *group, const void *act, size_t act_stride, int nt, float *out,
                            size_t out_stride, unsigned keep)
{
    const int64_t nb = n / QK8_0;
    const uint8_t *g = group;
    const uint16_t *scales = (const uint16_t *)(g + (size_t)nb * KPACK_Q8_0_VECS * KPACK_VEC);
    __m512 acc[KERN_NT_MAX];
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i += 2) {
        const int two = i + 1 < nb;
        const __m512i *v = (const __m512i *)(g + (size_t)i * KPACK_Q8_0_VECS * KPACK_VEC);
        k_pk_pf((const uint8_t *)v, (two ? 2 : 1) * KPACK_Q8_0_VECS * KPACK_VEC);
        const __m512 dw0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(scales + 16 * i)));
        if (two)
            k_q8tx_blocks(v, dw0, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(scales + 16 * (i + 1)))), act,
                          act_stride, i, nt, acc, 1);
        else
            k_q8tx_blocks(v, dw0, _mm512_setzero_ps(), act, act_stride, i, nt, acc, 0);
    }
    k_pk_store(acc, (__mmask16)keep, nt, out, out_stride);
}

/* Q4_K (q5 = 0) and Q5_K (q5 = 1: Q4_K's nibbles plus bit 4 from qh,
 * vectors 4..11; chunk sp of 64 elements takes bits 2 sp (low nibbles) and
 * 2 sp + 1 (high)): the block sums and float steps of the Q4_K / Q5_K tiles
 * (k_q4tx_block, k_q45_k_tile). */
KB void k_pk_q45_k(int64_t n, const void *group, const void *act, size_t act_stride, int nt, float *out,
                   size_t out_stride, unsigned keep, const int q5)
{
    const int64_t nb = n / QK_K;
    const size_t vecs = q5 ? KPACK_Q5_K_VECS : KPACK_Q4_K_VECS;
    const int qs0 = q5 ? 12 : 4;
    const __m512i m4 = _mm512_set1_epi8(0xF), m1 = _mm512_set1_epi8(1);
    __m512 acc[KERN_NT_MAX];
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const __m512i *blk = (const __m512i *)((const uint8_t *)group + (size_t)i * vecs * KPACK_VEC);
        k_pk_pf((const uint8_t *)blk, vecs * KPACK_VEC);
        const __m512i dm = _mm512_load_si512(blk), u0 = _mm512_load_si512(blk + 1);
        const __m512i u1 = _mm512_load_si512(blk + 2), u2 = _mm512_load_si512(blk + 3);
        const __m512 dx = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dm));
        const __m512 dmx = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dm, 16)));
        __m512i sc[8], mp[8];
        k_q4_scales_mins(u0, u1, u2, sc, mp);
        __m512i wq[2][32];
        _Pragma("GCC unroll 32") for (int d = 0; d < 32; d++) {
            const __m512i v = _mm512_load_si512(blk + qs0 + d);
            wq[0][d] = _mm512_and_si512(v, m4);
            wq[1][d] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
            if (q5) {
                const int sp = d / 8;
                const __m512i qh = _mm512_load_si512(blk + 4 + d % 8);
                wq[0][d] = _mm512_or_si512(wq[0][d], _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh, 2 * sp), m1), 4));
                wq[1][d] = _mm512_or_si512(wq[1][d],
                                           _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh, 2 * sp + 1), m1), 4));
            }
        }
        k_q4tx_block((const __m512i(*)[32])wq, sc, mp, dx, dmx, act, act_stride, i, nt, acc);
    }
    k_pk_store(acc, (__mmask16)keep, nt, out, out_stride);
}

static void KNAME(pk_q4_k_)(int64_t n, const void *group, const void *act, size_t act_stride, int nt, float *out,
                            size_t out_stride, unsigned keep)
{
    k_pk_q45_k(n, group, act, act_stride, nt, out, out_stride, keep, 0);
}

static void KNAME(pk_q5_k_)(int64_t n, const void *group, const void *act, size_t act_stride, int nt, float *out,
                            size_t out_stride, unsigned keep)
{
    k_pk_q45_k(n, group, act, act_stride, nt, out, out_stride, keep, 1);
}

static void KNAME(pk_q6_k_)(int64_t n, const void *group, const void *act, size_t act_stride, int nt, float *out,
                            size_t out_stride, unsigned keep)
{
    const int64_t nb = n / QK_K;
    __m512 acc[KERN_NT_MAX];
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const __m512i *blk = (const __m512i *)((const uint8_t *)group + (size_t)i * KPACK_Q6_K_VECS * KPACK_VEC);
        k_pk_pf((const uint8_t *)blk, KPACK_Q6_K_VECS * KPACK_VEC);
        const __m512 dx = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(blk + 52)));
        /* words 0..31: ql, 32..47: qh, 48..51: the scales */
        __m512i sc[16], scp[8], v[64];
        k_q6_scales(blk + 48, sc, scp);
        k_q6_assemble(blk, blk + 32, v);
        k_q6tx_block(v, sc, scp, dx, act, act_stride, i, nt, acc);
    }
    k_pk_store(acc, (__mmask16)keep, nt, out, out_stride);
}

/* Q5_0: decoded to int8 blocks as its tile does (kernels_x86_q5tx.h),
 * then the Q8_0 sums. */
static void KNAME(pk_q5_0_)(int64_t n, const void *group, const void *act, size_t act_stride, int nt, float *out,
                            size_t out_stride, unsigned keep)
{
    const int64_t nb = n / QK5_0;
    const size_t vecs = KPACK_Q5_0_VECS;
    const uint8_t *g = group;
    const uint16_t *scales = (const uint16_t *)(g + (size_t)nb * vecs * KPACK_VEC);
    __m512 acc[KERN_NT_MAX];
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i += 2) {
        const int two = i + 1 < nb;
        __m512i v[16];
        _Pragma("GCC unroll 2") for (int b = 0; b < 1 + two; b++) {
            const __m512i *blk = (const __m512i *)(g + (size_t)(i + b) * vecs * KPACK_VEC);
            k_pk_pf((const uint8_t *)blk, vecs * KPACK_VEC);
            const __m512i qs[4] = {_mm512_load_si512(blk), _mm512_load_si512(blk + 1), _mm512_load_si512(blk + 2),
                                   _mm512_load_si512(blk + 3)};
            k_q5_decode(qs, _mm512_load_si512(blk + 4), v + 8 * b);
        }
        const __m512 dw0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(scales + 16 * i)));
        if (two)
            k_q8tx_blocks(v, dw0, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(scales + 16 * (i + 1)))), act,
                          act_stride, i, nt, acc, 1);
        else
            k_q8tx_blocks(v, dw0, _mm512_setzero_ps(), act, act_stride, i, nt, acc, 0);
    }
    k_pk_store(acc, (__mmask16)keep, nt, out, out_stride);
}

/* Q4_0 by its unsigned nibbles: S = sum(nib * a) - 8 sum(a), with each
 * token's sum(a) taken once per block, so there is no decoding to int8 and
 * no bias seed. The same S and float steps as the Q4_0 tile (k_q8tx_blocks
 * on nibble - 8): the same values. */
static void KNAME(pk_q4_0_)(int64_t n, const void *group, const void *act, size_t act_stride, int nt, float *out,
                            size_t out_stride, unsigned keep)
{
    const int64_t nb = n / QK4_0;
    const uint8_t *g = group;
    const uint16_t *scales = (const uint16_t *)(g + (size_t)nb * KPACK_Q4_0_VECS * KPACK_VEC);
    const __m512i m4 = _mm512_set1_epi8(0xF);
    const __m256i one8 = _mm256_set1_epi8(1);
    __m512 acc[KERN_NT_MAX];
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const __m512i *blk = (const __m512i *)(g + (size_t)i * KPACK_Q4_0_VECS * KPACK_VEC);
        k_pk_pf((const uint8_t *)blk, KPACK_Q4_0_VECS * KPACK_VEC);
        __m512i v[8];
        _Pragma("GCC unroll 4") for (int d = 0; d < 4; d++) {
            const __m512i q = _mm512_load_si512(blk + d);
            v[d] = _mm512_and_si512(q, m4);
            v[4 + d] = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(scales + 16 * i)));
        for (int t = 0; t < nt; t++) {
            const block_q8_0 *y = K_ACT(block_q8_0, t, i);
            /* sum(a): eight dword sums of the 32 bytes, then across them */
            __m256i sa8 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), one8, _mm256_loadu_si256((const __m256i *)y->qs));
            __m128i sa4 = _mm_add_epi32(_mm256_castsi256_si128(sa8), _mm256_extracti128_si256(sa8, 1));
            sa4 = _mm_add_epi32(sa4, _mm_shuffle_epi32(sa4, 0x4E));
            sa4 = _mm_add_epi32(sa4, _mm_shuffle_epi32(sa4, 0xB1));
            __m512i s0 = _mm512_set1_epi32(-8 * _mm_cvtsi128_si32(sa4)), s1 = _mm512_setzero_si512();
            _Pragma("GCC unroll 4") for (int d = 0; d < 8; d += 2) {
                s0 = _mm512_dpbusd_epi32(s0, v[d], k_bc4(y->qs + 4 * d));
                s1 = _mm512_dpbusd_epi32(s1, v[d + 1], k_bc4(y->qs + 4 * d + 4));
            }
            const __m512 q = _mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1));
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(k_h2f(y->d))), q, acc[t]);
        }
    }
    k_pk_store(acc, (__mmask16)keep, nt, out, out_stride);
}
