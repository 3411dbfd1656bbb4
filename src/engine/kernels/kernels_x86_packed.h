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
    const uint16_t *scales = (const uint16_t *)(g + (size_t)nb * 512);
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    __m512 acc[KERN_NT_MAX];
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i += 2) {
        const int two = i + 1 < nb;
        const __m512i *v = (const __m512i *)(g + (size_t)i * 512);
        k_pk_pf((const uint8_t *)v, two ? 1024 : 512);
        /* -128 * sum(w) per (row, block): the activations are made unsigned */
        __m512i c0 = _mm512_setzero_si512(), c1 = _mm512_setzero_si512();
        __m512i c2 = _mm512_setzero_si512(), c3 = _mm512_setzero_si512();
        _Pragma("GCC unroll 4") for (int d = 0; d < 8; d += 2) {
            c0 = _mm512_dpbusd_epi32(c0, bias, _mm512_load_si512(v + d));
            c1 = _mm512_dpbusd_epi32(c1, bias, _mm512_load_si512(v + d + 1));
            if (two) {
                c2 = _mm512_dpbusd_epi32(c2, bias, _mm512_load_si512(v + 8 + d));
                c3 = _mm512_dpbusd_epi32(c3, bias, _mm512_load_si512(v + 9 + d));
            }
        }
        const __m512i cw0 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_add_epi32(c0, c1));
        const __m512i cw1 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_add_epi32(c2, c3));
        const __m512 dw0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(scales + 16 * i)));
        const __m512 dw1 = two ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(scales + 16 * (i + 1))))
                               : _mm512_setzero_ps();
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
    k_pk_store(acc, (__mmask16)keep, nt, out, out_stride);
}

static void KNAME(pk_q4_k_)(int64_t n, const void *group, const void *act, size_t act_stride, int nt, float *out,
                            size_t out_stride, unsigned keep)
{
    const int64_t nb = n / QK_K;
    const __m512i m4 = _mm512_set1_epi8(0xF), km1 = _mm512_set1_epi32(0x3f3f3f3f);
    const __m512i km2 = _mm512_set1_epi32(0x0f0f0f0f), km3 = _mm512_set1_epi32(0x03030303);
    const __m512i b255 = _mm512_set1_epi32(0xFF);
    __m512 acc[KERN_NT_MAX];
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const __m512i *blk = (const __m512i *)((const uint8_t *)group + (size_t)i * 36 * 64);
        k_pk_pf((const uint8_t *)blk, 36 * 64);
        const __m512i dm = _mm512_load_si512(blk), u0 = _mm512_load_si512(blk + 1);
        const __m512i u1 = _mm512_load_si512(blk + 2), u2 = _mm512_load_si512(blk + 3);
        const __m512 dx = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dm));
        const __m512 dmx = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dm, 16)));
        /* as q4_k_tx_: ggml's unpacking of the 6-bit scales and mins */
        const __m512i s03 = _mm512_and_si512(u0, km1), m03 = _mm512_and_si512(u1, km1);
        const __m512i s47 = _mm512_or_si512(_mm512_and_si512(u2, km2),
                                            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u0, 6), km3), 4));
        const __m512i m47 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u2, 4), km2),
                                            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u1, 6), km3), 4));
        __m512i sc[8], mp[8];
        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
            sc[k] = _mm512_and_si512(_mm512_srli_epi32(s03, 8 * k), b255);
            sc[4 + k] = _mm512_and_si512(_mm512_srli_epi32(s47, 8 * k), b255);
            const __m512i ma = _mm512_and_si512(_mm512_srli_epi32(m03, 8 * k), b255);
            const __m512i mb = _mm512_and_si512(_mm512_srli_epi32(m47, 8 * k), b255);
            mp[k] = _mm512_or_si512(ma, _mm512_slli_epi32(ma, 16));
            mp[4 + k] = _mm512_or_si512(mb, _mm512_slli_epi32(mb, 16));
        }
        __m512i wq[2][32];
        _Pragma("GCC unroll 32") for (int d = 0; d < 32; d++) {
            const __m512i v = _mm512_load_si512(blk + 4 + d);
            wq[0][d] = _mm512_and_si512(v, m4);
            wq[1][d] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        }
        for (int t = 0; t < nt; t += 4) {
            const void *a = (const uint8_t *)act + (size_t)t * act_stride;
            const __m512i(*wc)[32] = (const __m512i(*)[32])wq;
            switch (nt - t < 4 ? nt - t : 4) {
            case 1: KNAME(q4tx_g1_)(a, act_stride, i, wc, sc, mp, dx, dmx, acc + t); break;
            case 2: KNAME(q4tx_g2_)(a, act_stride, i, wc, sc, mp, dx, dmx, acc + t); break;
            case 3: KNAME(q4tx_g3_)(a, act_stride, i, wc, sc, mp, dx, dmx, acc + t); break;
            default: KNAME(q4tx_g4_)(a, act_stride, i, wc, sc, mp, dx, dmx, acc + t); break;
            }
        }
    }
    k_pk_store(acc, (__mmask16)keep, nt, out, out_stride);
}

static void KNAME(pk_q6_k_)(int64_t n, const void *group, const void *act, size_t act_stride, int nt, float *out,
                            size_t out_stride, unsigned keep)
{
    const int64_t nb = n / QK_K;
    const __m512i m4 = _mm512_set1_epi8(0xF), m3 = _mm512_set1_epi8(3), lo16 = _mm512_set1_epi32(0xFFFF);
    __m512 acc[KERN_NT_MAX];
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const __m512i *blk = (const __m512i *)((const uint8_t *)group + (size_t)i * 53 * 64);
        k_pk_pf((const uint8_t *)blk, 53 * 64);
        const __m512 dx = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(blk + 52)));
        /* as q6_k_tx_: the 16 int8 scales (words 48..51), pairs for the -32 offset */
        __m512i sc[16], scp[8];
        _Pragma("GCC unroll 4") for (int u = 0; u < 4; u++) {
            const __m512i su = _mm512_load_si512(blk + 48 + u);
            _Pragma("GCC unroll 4") for (int b = 0; b < 4; b++)
                sc[4 * u + b] = _mm512_srai_epi32(_mm512_slli_epi32(su, 24 - 8 * b), 24);
        }
        _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
            scp[k] = _mm512_or_si512(_mm512_and_si512(sc[2 * k], lo16), _mm512_slli_epi32(sc[2 * k + 1], 16));
        /* ql: words 0..31, qh: 32..47; the 6-bit values as q6_k_tx_ assembles them */
        __m512i v[64];
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
            _Pragma("GCC unroll 8") for (int d = 0; d < 8; d++) {
                const __m512i a = _mm512_load_si512(blk + 16 * h + d), b = _mm512_load_si512(blk + 16 * h + 8 + d);
                const __m512i hb = _mm512_load_si512(blk + 32 + 8 * h + d);
                v[32 * h + d] = _mm512_or_si512(_mm512_and_si512(a, m4),
                                                _mm512_slli_epi16(_mm512_and_si512(hb, m3), 4));
                v[32 * h + 8 + d] = _mm512_or_si512(_mm512_and_si512(b, m4),
                                                    _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, 2), m3), 4));
                v[32 * h + 16 + d] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(a, 4), m4),
                                                     _mm512_and_si512(hb, _mm512_set1_epi8(0x30)));
                v[32 * h + 24 + d] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(b, 4), m4),
                                                     _mm512_and_si512(_mm512_srli_epi16(hb, 2), _mm512_set1_epi8(0x30)));
            }
        }
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
    k_pk_store(acc, (__mmask16)keep, nt, out, out_stride);
}

static void KNAME(pk_q5_0_)(int64_t n, const void *group, const void *act, size_t act_stride, int nt, float *out,
                            size_t out_stride, unsigned keep)
{
    const int64_t nb = n / QK5_0;
    const uint8_t *g = group;
    const uint16_t *scales = (const uint16_t *)(g + (size_t)nb * 320);
    __m512 acc[KERN_NT_MAX];
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i += 2) {
        const int two = i + 1 < nb;
        __m512i v[16];
        _Pragma("GCC unroll 2") for (int b = 0; b < 1 + two; b++) {
            const __m512i *blk = (const __m512i *)(g + (size_t)(i + b) * 320);
            k_pk_pf((const uint8_t *)blk, 320);
            const __m512i qs[4] = {_mm512_load_si512(blk), _mm512_load_si512(blk + 1), _mm512_load_si512(blk + 2),
                                   _mm512_load_si512(blk + 3)};
            k_q5_decode(qs, _mm512_load_si512(blk + 4), v + 8 * b);
        }
        const __m512 dw0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(scales + 16 * i)));
        if (two)
            k_q5_pair(v, dw0, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(scales + 16 * (i + 1)))), act,
                      act_stride, i, nt, acc, 1);
        else
            k_q5_pair(v, dw0, _mm512_setzero_ps(), act, act_stride, i, nt, acc, 0);
    }
    k_pk_store(acc, (__mmask16)keep, nt, out, out_stride);
}

void KNAME(kern_fill_packed_)(kern_ptile_fn_t ptiles[QTYPE_COUNT])
{
    ptiles[QTYPE_Q8_0] = KNAME(pk_q8_0_);
    ptiles[QTYPE_Q5_0] = KNAME(pk_q5_0_);
    ptiles[QTYPE_Q4_K] = KNAME(pk_q4_k_);
    ptiles[QTYPE_Q6_K] = KNAME(pk_q6_k_);
}
