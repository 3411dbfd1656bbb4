/* kernels_x86_body.h - x86 SIMD dot kernels, included by kernels_avx2.c and
 * kernels_avx512.c, which set the target ISA (#pragma GCC target) and
 * KERN_VNNI, KERN_NT_NATIVE (tokens per pass) and KERN_SUFFIX before
 * including it. Not a public header.
 *
 * Each kernel follows ggml's per-block integer arithmetic, so block sums
 * are exact: vpmaddubsw is only applied where the int16 pair sums cannot
 * saturate (unsigned operand <= 63, or <= 128 against activations in
 * [-127, 127] as our quantizers produce). With KERN_VNNI the int8 pair
 * sums of the 32-block types use vpdpbusd (no intermediate saturation).
 *
 * With KERN_VNNI, Q8_0 also has 16-row tiles (kernels_x86_q8tx.h: rows in
 * lanes for several tokens, a pair tree for one) that are the Q8_0 dot
 * kernel of that level (single rows are a 1-row tile), and so do Q5_0, Q4_0
 * (kernels_x86_q5tx.h: decoded to Q8_0 values, the same sums), Q4_K,
 * Q5_K and Q6_K: see kernels_x86_ktile.h (pair-tree tiles),
 * kernels_x86_q4tx.h and kernels_x86_q6tx.h (rows in lanes, for several
 * tokens). Their float operations differ from the AVX2 level's (within
 * the tolerance kernels.h allows between levels).
 *
 * Both levels have kernels on the packed weights of kpack.h
 * (kernels_x86_packed.h with VNNI, kernels_x86_packed_avx2.h without):
 * the same values at both.
 *
 * kernels_x86_quant.h holds the SIMD activation quantizers (Q8_K, Q8_0;
 * bytes identical to quant_quantize_row).
 *
 * Batch invariance: every kernel is written once as an always-inline body
 * taking a compile-time nt; the weight block is decoded once and then, per
 * token, the same sequence of operations runs on that token's own
 * accumulators. The float operations of token t therefore do not depend on
 * nt (no -ffast-math; -std=c11 implies -ffp-contract=off). The VNNI
 * K-quant tiles keep per (row, token) the same lane-wise float operations
 * in every shape and kernel, so they may pick a kernel by group size.
 */
#include <immintrin.h>
#include <string.h>

#include "engine/quant/fp16.h"
#include "engine/kernels/kernels_impl.h"
#include "engine/quant/quant.h"
#include "engine/quant/quant_blocks.h"

#ifndef KERN_AVXVNNI
#define KERN_AVXVNNI 0 /* the packed kernels sum with AVX-VNNI (kernels_avxvnni.c) */
#endif
#define KB static inline __attribute__((always_inline))
#define KCAT2(a, b) a##b
#define KCAT(a, b) KCAT2(a, b)
#define KNAME(x) KCAT(x, KERN_SUFFIX)
/* Token loops must be unrolled so per-token accumulators live in registers. */
#define K_FOR_T(t) _Pragma("GCC unroll 8") for (int t = 0; t < nt; t++)
#define K_FOR_R(r) _Pragma("GCC unroll 4") for (int r = 0; r < nr; r++)

/* Software prefetch distance (bytes ahead in the same row): with rows of a
 * few hundred bytes this reaches the next tile's rows. Single-token decode
 * streaming from DRAM gained ~1.5x with it (bench_kernels stream). */
#ifndef K_PF_DIST
#define K_PF_DIST 2048
#endif

KB float k_h2f(uint16_t h)
{
    return _cvtsh_ss(h);
}

KB float k_hsum8(__m256 x)
{
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

/* Sum of groups of four u8 * s8 products into 8 int32 (exact under the
 * saturation rule in the file comment). */
KB __m256i k_dot_u8s8(__m256i u, __m256i s)
{
#if KERN_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

/* acc + (pairwise int16 products s16 * p16 summed into int32 lanes). */
KB __m256i k_madd_acc(__m256i acc, __m256i s16, __m256i p16)
{
#if KERN_VNNI
    return _mm256_dpwssd_epi32(acc, s16, p16);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(s16, p16));
#endif
}

/* From 16 int16 scales, the vector with scale 2g in lanes 0..7 and scale
 * 2g+1 in lanes 8..15 (the two 16-groups covered by one 32-byte load). */
KB __m256i k_scale_pair(__m256i sc16, int g)
{
    __m256i v = _mm256_permutevar8x32_epi32(sc16, _mm256_set1_epi32(g));
    const __m256i m = _mm256_set_epi8(3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2,
                                      1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0);
    return _mm256_shuffle_epi8(v, m);
}

/* 32 nibbles -> 32 bytes: low nibbles in bytes 0..15, high in 16..31. */
KB __m256i k_nibbles32(const uint8_t *p)
{
    __m128i tmp = _mm_loadu_si128((const __m128i *)p);
    __m256i b = _mm256_set_m128i(_mm_srli_epi16(tmp, 4), tmp);
    return _mm256_and_si256(b, _mm256_set1_epi8(0x0F));
}

/* 32 bits -> 32 bytes of 0xFF (bit set) or 0x00. */
KB __m256i k_bits32(const uint8_t *p)
{
    uint32_t x32;
    memcpy(&x32, p, 4);
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                           0x0101010101010101, 0x0000000000000000);
    __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi32((int)x32), shuf);
    b = _mm256_or_si256(b, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(b, _mm256_set1_epi64x(-1));
}

/* ---- 32-blocks against Q8_0: qx is the signed weight vector ---------- */

/* Shared per-token step of Q4_0/Q5_0/Q8_0: acc += dx*dy * sum(qx*qy). */
KB __m256 k_q8_step(__m256 acc, __m256i ax, __m256i qx, const block_q8_0 *y, float dx)
{
    __m256i qy = _mm256_loadu_si256((const __m256i *)y->qs);
    __m256i sy = _mm256_sign_epi8(qy, qx);
    __m256 q = _mm256_cvtepi32_ps(k_dot_u8s8(ax, sy));
    return _mm256_fmadd_ps(_mm256_set1_ps(dx * k_h2f(y->d)), q, acc);
}

#define K_ACT(type, t, i) ((const type *)((const uint8_t *)act + (size_t)(t) * act_stride) + (i))

KB void k_q8_0(int64_t n, const void *w, const void *act, size_t act_stride, float *out,
               size_t out_stride, const int nt)
{
    const block_q8_0 *x = w;
    const int64_t nb = n / QK8_0;
    __m256 acc[KERN_NT_MAX];
    K_FOR_T(t)
        acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m256i qx = _mm256_loadu_si256((const __m256i *)x[i].qs);
        __m256i ax = _mm256_sign_epi8(qx, qx);
        float dx = k_h2f(x[i].d);
        K_FOR_T(t)
            acc[t] = k_q8_step(acc[t], ax, qx, K_ACT(block_q8_0, t, i), dx);
    }
    K_FOR_T(t)
        out[(size_t)t * out_stride] = k_hsum8(acc[t]);
}

KB void k_q4_0(int64_t n, const void *w, const void *act, size_t act_stride, float *out,
               size_t out_stride, const int nt)
{
    const block_q4_0 *x = w;
    const int64_t nb = n / QK4_0;
    __m256 acc[KERN_NT_MAX];
    K_FOR_T(t)
        acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m256i qx = _mm256_sub_epi8(k_nibbles32(x[i].qs), _mm256_set1_epi8(8));
        __m256i ax = _mm256_sign_epi8(qx, qx);
        float dx = k_h2f(x[i].d);
        K_FOR_T(t)
            acc[t] = k_q8_step(acc[t], ax, qx, K_ACT(block_q8_0, t, i), dx);
    }
    K_FOR_T(t)
        out[(size_t)t * out_stride] = k_hsum8(acc[t]);
}

KB void k_q5_0(int64_t n, const void *w, const void *act, size_t act_stride, float *out,
               size_t out_stride, const int nt)
{
    const block_q5_0 *x = w;
    const int64_t nb = n / QK5_0;
    __m256 acc[KERN_NT_MAX];
    K_FOR_T(t)
        acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        /* (nibble | bit << 4) - 16 == nibble | (bit ? 0 : 0xF0) as int8 */
        __m256i hi = _mm256_andnot_si256(k_bits32(x[i].qh), _mm256_set1_epi8((char)0xF0));
        __m256i qx = _mm256_or_si256(k_nibbles32(x[i].qs), hi);
        __m256i ax = _mm256_sign_epi8(qx, qx);
        float dx = k_h2f(x[i].d);
        K_FOR_T(t)
            acc[t] = k_q8_step(acc[t], ax, qx, K_ACT(block_q8_0, t, i), dx);
    }
    K_FOR_T(t)
        out[(size_t)t * out_stride] = k_hsum8(acc[t]);
}

#if KERN_VNNI
/* The qs of blocks b[0] and b[1] in one register. */
KB __m512i k_load2_q8(const block_q8_0 *b)
{
    __m512i v = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)b[0].qs));
    return _mm512_inserti64x4(v, _mm256_loadu_si256((const __m256i *)b[1].qs), 1);
}
#endif

/* ---- 32-blocks with a min, against Q8_1 ------------------------------ */

KB void k_q4_1(int64_t n, const void *w, const void *act, size_t act_stride, float *out,
               size_t out_stride, const int nt)
{
    const block_q4_1 *x = w;
    const int64_t nb = n / QK4_1;
    __m256 acc[KERN_NT_MAX];
    float summs[KERN_NT_MAX];
    K_FOR_T(t) {
        acc[t] = _mm256_setzero_ps();
        summs[t] = 0.0f;
    }
    for (int64_t i = 0; i < nb; i++) {
        __m256i qx = k_nibbles32(x[i].qs); /* 0..15 */
        float dx = k_h2f(x[i].d), mx = k_h2f(x[i].m);
        K_FOR_T(t) {
            const block_q8_1 *y = K_ACT(block_q8_1, t, i);
            __m256i qy = _mm256_loadu_si256((const __m256i *)y->qs);
            __m256 q = _mm256_cvtepi32_ps(k_dot_u8s8(qx, qy));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dx * k_h2f(y->d)), q, acc[t]);
            summs[t] += mx * k_h2f(y->s);
        }
    }
    K_FOR_T(t)
        out[(size_t)t * out_stride] = k_hsum8(acc[t]) + summs[t];
}

KB void k_q5_1(int64_t n, const void *w, const void *act, size_t act_stride, float *out,
               size_t out_stride, const int nt)
{
    const block_q5_1 *x = w;
    const int64_t nb = n / QK5_1;
    __m256 acc[KERN_NT_MAX];
    float summs[KERN_NT_MAX];
    K_FOR_T(t) {
        acc[t] = _mm256_setzero_ps();
        summs[t] = 0.0f;
    }
    for (int64_t i = 0; i < nb; i++) {
        __m256i hi = _mm256_and_si256(k_bits32(x[i].qh), _mm256_set1_epi8(0x10));
        __m256i qx = _mm256_or_si256(k_nibbles32(x[i].qs), hi); /* 0..31 */
        float dx = k_h2f(x[i].d), mx = k_h2f(x[i].m);
        K_FOR_T(t) {
            const block_q8_1 *y = K_ACT(block_q8_1, t, i);
            __m256i qy = _mm256_loadu_si256((const __m256i *)y->qs);
            __m256 q = _mm256_cvtepi32_ps(k_dot_u8s8(qx, qy));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dx * k_h2f(y->d)), q, acc[t]);
            summs[t] += mx * k_h2f(y->s);
        }
    }
    K_FOR_T(t)
        out[(size_t)t * out_stride] = k_hsum8(acc[t]) + summs[t];
}

/* ---- float rows ------------------------------------------------------- */

/* F32 / F16 / BF16 share one shape: 16 values per step in two chains per
 * token, a scalar tail, then one fixed reduction. LOADW/LOADA(p, i) give
 * 8 floats at element i. */
#define K_FLOAT_BODY(WT, AT, LOADW, LOADA, CVTW, CVTA)                                        \
    const WT *x = w;                                                                          \
    __m256 a0[KERN_NT_MAX], a1[KERN_NT_MAX];                                                  \
    K_FOR_T(t)                                                              \
        a0[t] = a1[t] = _mm256_setzero_ps();                                                  \
    int64_t i = 0;                                                                            \
    for (; i + 16 <= n; i += 16) {                                                            \
        __m256 w0 = LOADW(x, i), w1 = LOADW(x, i + 8);                                        \
        K_FOR_T(t) {                                                        \
            const AT *y = (const AT *)((const uint8_t *)act + (size_t)t * act_stride);       \
            a0[t] = _mm256_fmadd_ps(w0, LOADA(y, i), a0[t]);                                  \
            a1[t] = _mm256_fmadd_ps(w1, LOADA(y, i + 8), a1[t]);                              \
        }                                                                                     \
    }                                                                                         \
    K_FOR_T(t) {                                                            \
        const AT *y = (const AT *)((const uint8_t *)act + (size_t)t * act_stride);           \
        float s = k_hsum8(_mm256_add_ps(a0[t], a1[t]));                                       \
        for (int64_t j = i; j < n; j++)                                                       \
            s += CVTW(x[j]) * CVTA(y[j]);                                                     \
        out[(size_t)t * out_stride] = s;                                                      \
    }

#define K_LD_F32(p, i) _mm256_loadu_ps((p) + (i))
#define K_LD_F16(p, i) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((p) + (i))))
#define K_LD_BF16(p, i) \
    _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((p) + (i)))), 16))
#define K_ID(v) (v)

KB float k_bf2f(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

KB void k_f32(int64_t n, const void *w, const void *act, size_t act_stride, float *out,
              size_t out_stride, const int nt)
{
    K_FLOAT_BODY(float, float, K_LD_F32, K_LD_F32, K_ID, K_ID)
}

KB void k_f16(int64_t n, const void *w, const void *act, size_t act_stride, float *out,
              size_t out_stride, const int nt)
{
    K_FLOAT_BODY(uint16_t, uint16_t, K_LD_F16, K_LD_F16, k_h2f, k_h2f)
}

KB void k_bf16(int64_t n, const void *w, const void *act, size_t act_stride, float *out,
               size_t out_stride, const int nt)
{
    K_FLOAT_BODY(uint16_t, uint16_t, K_LD_BF16, K_LD_BF16, k_bf2f, k_bf2f)
}

/* ---- K-quants against Q8_K ------------------------------------------- */

/* Q4_K / Q5_K scales and mins of one super-block (ggml's unpacking):
 * bytes 0..7 the scales, 8..15 the mins. */
KB __m128i k_q45_scales(const uint8_t *scales)
{
    uint32_t u[4];
    memcpy(u, scales, 12);
    const uint32_t km1 = 0x3f3f3f3f, km2 = 0x0f0f0f0f, km3 = 0x03030303;
    u[3] = ((u[2] >> 4) & km2) | (((u[1] >> 6) & km3) << 4);
    const uint32_t uaux = u[1] & km1;
    u[1] = (u[2] & km2) | (((u[0] >> 6) & km3) << 4);
    u[2] = uaux;
    u[0] &= km1;
    return _mm_loadu_si128((const __m128i *)u);
}

/* Q4_K (qh == NULL) and Q5_K share this body. */
KB void k_q45_k(int64_t n, const uint8_t *xb, size_t bsize, int has_qh, const void *act,
                size_t act_stride, float *out, size_t out_stride, const int nt)
{
    const int64_t nb = n / QK_K;
    const __m256i m4 = _mm256_set1_epi8(0xF), one = _mm256_set1_epi8(1);
    __m256 acc[KERN_NT_MAX], accm[KERN_NT_MAX];
    K_FOR_T(t) acc[t] = accm[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *blk = xb + (size_t)i * bsize;
        uint16_t d16, dmin16;
        memcpy(&d16, blk, 2);
        memcpy(&dmin16, blk + 2, 2);
        const uint8_t *scales = blk + 4;
        const uint8_t *qh = has_qh ? blk + 16 : NULL;
        const uint8_t *qs = has_qh ? blk + 48 : blk + 16;
        const __m128i sm = k_q45_scales(scales);
        const __m256i sc256 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
        const float dx = k_h2f(d16), dmx = k_h2f(dmin16);
        /* each min twice: one vpmaddwd against the 16 bsums gives
         * sum_j mins[j] * (bsums[2j] + bsums[2j+1]) */
        const __m128i m8 = _mm_srli_si128(sm, 8);
        const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
        const __m256i hbits = has_qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
        __m256i sumi[KERN_NT_MAX];
        K_FOR_T(t)
            sumi[t] = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            __m256i bits = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
            __m256i ql = _mm256_and_si256(bits, m4);
            __m256i qhh = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
            if (has_qh) {
                __m256i b0 = _mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j), one);
                __m256i b1 = _mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j + 1), one);
                ql = _mm256_or_si256(ql, _mm256_slli_epi16(b0, 4));
                qhh = _mm256_or_si256(qhh, _mm256_slli_epi16(b1, 4));
            }
            const __m256i s0 = _mm256_shuffle_epi8(sc256, _mm256_set1_epi16((short)((4 * j + 1) << 8 | 4 * j)));
            const __m256i s1 = _mm256_shuffle_epi8(sc256, _mm256_set1_epi16((short)((4 * j + 3) << 8 | (4 * j + 2))));
            K_FOR_T(t) {
                const block_q8_K *y = K_ACT(block_q8_K, t, i);
                __m256i y0 = _mm256_loadu_si256((const __m256i *)(y->qs + 64 * j));
                __m256i y1 = _mm256_loadu_si256((const __m256i *)(y->qs + 64 * j + 32));
                sumi[t] = k_madd_acc(sumi[t], s0, _mm256_maddubs_epi16(ql, y0));
                sumi[t] = k_madd_acc(sumi[t], s1, _mm256_maddubs_epi16(qhh, y1));
            }
        }
        K_FOR_T(t) {
            const block_q8_K *y = K_ACT(block_q8_K, t, i);
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dx * y->d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
            __m256i pm = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)y->bsums), mins16);
            accm[t] = _mm256_fmadd_ps(_mm256_set1_ps(dmx * y->d), _mm256_cvtepi32_ps(pm), accm[t]);
        }
    }
    K_FOR_T(t)
        out[(size_t)t * out_stride] = k_hsum8(acc[t]) - k_hsum8(accm[t]);
}

KB void k_q4_k(int64_t n, const void *w, const void *act, size_t act_stride, float *out,
               size_t out_stride, const int nt)
{
    k_q45_k(n, w, sizeof(block_q4_K), 0, act, act_stride, out, out_stride, nt);
}

KB void k_q5_k(int64_t n, const void *w, const void *act, size_t act_stride, float *out,
               size_t out_stride, const int nt)
{
    k_q45_k(n, w, sizeof(block_q5_K), 1, act, act_stride, out, out_stride, nt);
}

KB void k_q6_k(int64_t n, const void *w, const void *act, size_t act_stride, float *out,
               size_t out_stride, const int nt)
{
    const block_q6_K *x = w;
    const int64_t nb = n / QK_K;
    const __m256i m4 = _mm256_set1_epi8(0xF), m2 = _mm256_set1_epi8(3);
    __m256 acc[KERN_NT_MAX];
    K_FOR_T(t)
        acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const float dx = k_h2f(x[i].d);
        /* 16 int8 scales as int16, for the -32 offset via bsums */
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        __m256i sumi[KERN_NT_MAX];
        K_FOR_T(t)
            sumi[t] = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x[i].ql + 64 * h, *qh = x[i].qh + 32 * h;
            __m256i b1 = _mm256_loadu_si256((const __m256i *)ql);
            __m256i b2 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            __m256i bh = _mm256_loadu_si256((const __m256i *)qh);
            /* one 32-value chunk at a time keeps few registers live
             * next to the per-token accumulators */
            for (int m = 0; m < 4; m++) {
                __m256i lo = _mm256_and_si256(m & 2 ? _mm256_srli_epi16(m & 1 ? b2 : b1, 4) : (m & 1 ? b2 : b1), m4);
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bh, 2 * m), m2);
                __m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
                __m256i scv = k_scale_pair(sc16, 4 * h + m);
                K_FOR_T(t) {
                    const block_q8_K *y = K_ACT(block_q8_K, t, i);
                    __m256i yv = _mm256_loadu_si256((const __m256i *)(y->qs + 128 * h + 32 * m));
                    sumi[t] = k_madd_acc(sumi[t], scv, _mm256_maddubs_epi16(q, yv));
                }
            }
        }
        K_FOR_T(t) {
            const block_q8_K *y = K_ACT(block_q8_K, t, i);
            __m256i bs = _mm256_loadu_si256((const __m256i *)y->bsums);
            __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(bs, sc16), 5); /* 32 * sc * bsum */
            __m256i tot = _mm256_sub_epi32(sumi[t], off);
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dx * y->d), _mm256_cvtepi32_ps(tot), acc[t]);
        }
    }
    K_FOR_T(t)
        out[(size_t)t * out_stride] = k_hsum8(acc[t]);
}

/* Q2_K: 2-bit quants, 4-bit scale and min per group of 16. */
KB void k_q2_k(int64_t n, const void *w, const void *act, size_t act_stride, float *out,
               size_t out_stride, const int nt)
{
    const block_q2_K *x = w;
    const int64_t nb = n / QK_K;
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256 acc[KERN_NT_MAX], accm[KERN_NT_MAX];
    K_FOR_T(t) acc[t] = accm[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const float dx = k_h2f(x[i].d), dmx = k_h2f(x[i].dmin);
        const __m128i sc8 = _mm_loadu_si128((const __m128i *)x[i].scales);
        const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), _mm_set1_epi8(0xF)));
        const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(sc8, _mm_set1_epi8(0xF)));
        __m256i sumi[KERN_NT_MAX];
        K_FOR_T(t) sumi[t] = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * h));
            for (int j = 0; j < 4; j++) {
                __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * j), m3);
                __m256i scv = k_scale_pair(sc16, 4 * h + j);
                K_FOR_T(t) {
                    const block_q8_K *y = K_ACT(block_q8_K, t, i);
                    __m256i yv = _mm256_loadu_si256((const __m256i *)(y->qs + 128 * h + 32 * j));
                    sumi[t] = k_madd_acc(sumi[t], scv, _mm256_maddubs_epi16(q, yv));
                }
            }
        }
        K_FOR_T(t) {
            const block_q8_K *y = K_ACT(block_q8_K, t, i);
            __m256i bs = _mm256_loadu_si256((const __m256i *)y->bsums);
            __m256i pm = _mm256_madd_epi16(bs, mins16);
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dx * y->d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
            accm[t] = _mm256_fmadd_ps(_mm256_set1_ps(dmx * y->d), _mm256_cvtepi32_ps(pm), accm[t]);
        }
    }
    K_FOR_T(t) out[(size_t)t * out_stride] = k_hsum8(acc[t]) - k_hsum8(accm[t]);
}

/* Q3_K: value = low2 + 4 * hbit - 4 (in [-4, 3]); 6-bit scales - 32. The
 * unsigned part low2 + 4 * hbit goes through vpmaddubsw, the -4 through
 * the activation group sums (exact integers). */
KB void k_q3_k(int64_t n, const void *w, const void *act, size_t act_stride, float *out,
               size_t out_stride, const int nt)
{
    const block_q3_K *x = w;
    const int64_t nb = n / QK_K;
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    __m256 acc[KERN_NT_MAX];
    K_FOR_T(t) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const float dx = k_h2f(x[i].d);
        uint32_t aux[4];
        memcpy(aux, x[i].scales, 12);
        const uint32_t tmp = aux[2], km1 = 0x03030303, km2 = 0x0f0f0f0f;
        aux[2] = ((aux[0] >> 4) & km2) | (((tmp >> 4) & km1) << 4);
        aux[3] = ((aux[1] >> 4) & km2) | (((tmp >> 6) & km1) << 4);
        aux[0] = (aux[0] & km2) | (((tmp >> 0) & km1) << 4);
        aux[1] = (aux[1] & km2) | (((tmp >> 2) & km1) << 4);
        int16_t sc[16];
        for (int g = 0; g < 16; g++)
            sc[g] = (int16_t)((int)((const uint8_t *)aux)[g] - 32);
        const __m256i sc16 = _mm256_loadu_si256((const __m256i *)sc);
        const __m256i hm = _mm256_loadu_si256((const __m256i *)x[i].hmask);
        __m256i sumi[KERN_NT_MAX];
        K_FOR_T(t) sumi[t] = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * h));
            for (int j = 0; j < 4; j++) {
                __m256i lo = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * j), m3);
                __m256i hb = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + j), one);
                __m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(hb, 2));
                __m256i scv = k_scale_pair(sc16, 4 * h + j);
                K_FOR_T(t) {
                    const block_q8_K *y = K_ACT(block_q8_K, t, i);
                    __m256i yv = _mm256_loadu_si256((const __m256i *)(y->qs + 128 * h + 32 * j));
                    sumi[t] = k_madd_acc(sumi[t], scv, _mm256_maddubs_epi16(q, yv));
                }
            }
        }
        K_FOR_T(t) {
            const block_q8_K *y = K_ACT(block_q8_K, t, i);
            __m256i bs = _mm256_loadu_si256((const __m256i *)y->bsums);
            __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(bs, sc16), 2); /* 4 * sc * bsum */
            __m256i tot = _mm256_sub_epi32(sumi[t], off);
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dx * y->d), _mm256_cvtepi32_ps(tot), acc[t]);
        }
    }
    K_FOR_T(t) out[(size_t)t * out_stride] = k_hsum8(acc[t]);
}

#if KERN_VNNI
#include "engine/kernels/kernels_x86_ktile.h"
#include "engine/kernels/kernels_x86_q8tx.h"
#include "engine/kernels/kernels_x86_q5tx.h"
#include "engine/kernels/kernels_x86_packed.h"
#else
#include "engine/kernels/kernels_x86_packed_avx2.h"
#endif

/* The packed kernels of this level (both headers define the same names). */
void KNAME(kern_fill_packed_)(kern_ptile_fn_t ptiles[QTYPE_COUNT])
{
    ptiles[QTYPE_Q8_0] = KNAME(pk_q8_0_);
    ptiles[QTYPE_Q5_0] = KNAME(pk_q5_0_);
    ptiles[QTYPE_Q4_0] = KNAME(pk_q4_0_);
    ptiles[QTYPE_Q4_K] = KNAME(pk_q4_k_);
    ptiles[QTYPE_Q5_K] = KNAME(pk_q5_k_);
    ptiles[QTYPE_Q6_K] = KNAME(pk_q6_k_);
}

/* ---- exported wrappers: one switch per type fixes nt at compile time --- */

/* Up to KERN_NT_NATIVE tokens per pass (what fits the register file: 16
 * ymm with AVX2, 32 with AVX-512VL); larger groups are split, which does
 * not change any token's operations. */
#if KERN_NT_NATIVE > 4
#define K_NT_CASES_HI(body)                                                                  \
    case 5: body(n, w, act, act_stride, out, out_stride, 5); break;                          \
    case 6: body(n, w, act, act_stride, out, out_stride, 6); break;                          \
    case 7: body(n, w, act, act_stride, out, out_stride, 7); break;                          \
    case 8: body(n, w, act, act_stride, out, out_stride, 8); break;
#else
#define K_NT_CASES_HI(body)
#endif

#define K_EXPORT(name, body)                                                                   \
    static void KNAME(name)(int64_t n, const void *w, const void *act, size_t act_stride, int nt, \
                            float *out, size_t out_stride)                                     \
    {                                                                                          \
        while (nt > 0) {                                                                       \
            int c = nt < KERN_NT_NATIVE ? nt : KERN_NT_NATIVE;                                 \
            switch (c) {                                                                       \
            case 1: body(n, w, act, act_stride, out, out_stride, 1); break;                    \
            case 2: body(n, w, act, act_stride, out, out_stride, 2); break;                    \
            case 3: body(n, w, act, act_stride, out, out_stride, 3); break;                    \
            case 4: body(n, w, act, act_stride, out, out_stride, 4); break;                    \
            K_NT_CASES_HI(body)                                                                \
            default: break;                                                                    \
            }                                                                                  \
            act = (const uint8_t *)act + (size_t)c * act_stride;                               \
            out += (size_t)c * out_stride;                                                     \
            nt -= c;                                                                           \
        }                                                                                      \
    }

K_EXPORT(dot_q8_0_, k_q8_0)
K_EXPORT(dot_q4_0_, k_q4_0)
K_EXPORT(dot_q5_0_, k_q5_0)
K_EXPORT(dot_q4_1_, k_q4_1)
K_EXPORT(dot_q5_1_, k_q5_1)
K_EXPORT(dot_f32_, k_f32)
K_EXPORT(dot_f16_, k_f16)
K_EXPORT(dot_bf16_, k_bf16)
K_EXPORT(dot_q4_k_, k_q4_k)
K_EXPORT(dot_q5_k_, k_q5_k)
K_EXPORT(dot_q6_k_, k_q6_k)
K_EXPORT(dot_q2_k_, k_q2_k)
K_EXPORT(dot_q3_k_, k_q3_k)


#include "engine/kernels/kernels_x86_quant.h"
#include "engine/kernels/kernels_x86_iq4.h"

void KNAME(kern_fill_)(kern_dot_fn_t tab[QTYPE_COUNT], kern_tile_fn_t tiles[QTYPE_COUNT],
                       kern_quant_fn_t quant[QTYPE_COUNT])
{
    quant[QTYPE_Q8_K] = KNAME(quant_q8_k_);
    quant[QTYPE_Q8_0] = KNAME(quant_q8_0_);
    tab[QTYPE_Q8_0] = KNAME(dot_q8_0_);
    tab[QTYPE_Q4_0] = KNAME(dot_q4_0_);
    tab[QTYPE_Q5_0] = KNAME(dot_q5_0_);
    tab[QTYPE_Q4_1] = KNAME(dot_q4_1_);
    tab[QTYPE_Q5_1] = KNAME(dot_q5_1_);
    tab[QTYPE_F32] = KNAME(dot_f32_);
    tab[QTYPE_F16] = KNAME(dot_f16_);
    tab[QTYPE_BF16] = KNAME(dot_bf16_);
    tab[QTYPE_Q4_K] = KNAME(dot_q4_k_);
    tab[QTYPE_Q5_K] = KNAME(dot_q5_k_);
    tab[QTYPE_Q6_K] = KNAME(dot_q6_k_);
    tab[QTYPE_Q2_K] = KNAME(dot_q2_k_);
    tab[QTYPE_Q3_K] = KNAME(dot_q3_k_);
#if KERN_VNNI
    tab[QTYPE_Q8_0] = KNAME(dot1_q8_0_);
    tiles[QTYPE_Q8_0] = KNAME(tile_q8_0x_);
    tab[QTYPE_Q5_0] = KNAME(dot1_q5_0_);
    tiles[QTYPE_Q5_0] = KNAME(tile_q5_0x_);
    tab[QTYPE_Q4_0] = KNAME(dot1_q4_0_);
    tiles[QTYPE_Q4_0] = KNAME(tile_q4_0x_);
    tab[QTYPE_Q4_K] = KNAME(dot1_q4_k_);
    tiles[QTYPE_Q4_K] = KNAME(tile_q4_k_);
    tab[QTYPE_Q5_K] = KNAME(dot1_q5_k_);
    tiles[QTYPE_Q5_K] = KNAME(tile_q5_k_);
    tab[QTYPE_Q6_K] = KNAME(dot1_q6_k_);
    tiles[QTYPE_Q6_K] = KNAME(tile_q6_k_);
#else
    (void)tiles;
#endif
    KNAME(kern_fill_iq4_)(tab, tiles);
}
