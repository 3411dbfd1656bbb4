/* kernels_x86_quant.h - SIMD activation quantizers (float rows -> Q8_K and
 * Q8_0), included by kernels_x86_body.h (AVX2 and AVX-512 levels). Not a
 * public header.
 *
 * Contract: the bytes are exactly those of the scalar reference
 * quant_quantize_row (quant_act.c: ggml's quantize_row_q8_K_ref and the
 * AVX2 branch of quantize_row_q8_0), on every input. The same float
 * operations run lane-wise (multiplies, the magic-add rounding of
 * nearest_int, cvtps rounding half to even, saturating packs); the maxima
 * are exact whatever the order for non-NaN input; a Q8_K block containing
 * a NaN is handed to the reference, and Q8_0 repeats ggml's MAXPS order.
 * tests/unit/test_kernels.c compares the bytes.
 */

/* Q8_K: max = the value of largest magnitude (first on ties), iscale =
 * -127 / max, q = min(127, nearest_int(iscale * x)), bsums, d = 1 / iscale. */
static void KNAME(quant_q8_k_)(const float *x, void *dst, int64_t n)
{
    block_q8_K *y = dst;
    const int64_t nb = n / QK_K;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t i = 0; i < nb; i++, x += QK_K) {
        __m256 vmax = _mm256_setzero_ps(), vnan = _mm256_setzero_ps();
        for (int j = 0; j < QK_K; j += 8) {
            const __m256 v = _mm256_loadu_ps(x + j);
            vmax = _mm256_max_ps(vmax, _mm256_andnot_ps(sign, v));
            vnan = _mm256_or_ps(vnan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        }
        if (_mm256_movemask_ps(vnan)) {
            quant_quantize_row(QTYPE_Q8_K, x, &y[i], QK_K);
            continue;
        }
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        if (!amax) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        /* the first element of that magnitude */
        const __m256 va = _mm256_set1_ps(amax);
        int first = 0;
        for (int j = 0; j < QK_K; j += 8) {
            const int m = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)), va, _CMP_EQ_OQ));
            if (m) {
                first = j + __builtin_ctz((unsigned)m);
                break;
            }
        }
        const float iscale = -127.f / x[first];
        const __m256 vs = _mm256_set1_ps(iscale), magic = _mm256_set1_ps(12582912.f);
        const __m256i mant = _mm256_set1_epi32(0x007fffff), off = _mm256_set1_epi32(0x00400000);
        const __m256i q127 = _mm256_set1_epi32(127), bias = _mm256_set1_epi8((char)0x80);
        for (int j = 0; j < QK_K; j += 32) {
            __m256i q[4];
            for (int k = 0; k < 4; k++) {
                const __m256 v = _mm256_add_ps(_mm256_mul_ps(vs, _mm256_loadu_ps(x + j + 8 * k)), magic);
                q[k] = _mm256_min_epi32(_mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(v), mant), off), q127);
            }
            /* packs work per 128-bit lane: restore element order */
            const __m256i p16 = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
            const __m256i p8 = _mm256_permutevar8x32_epi32(p16, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            _mm256_storeu_si256((__m256i *)(y[i].qs + j), p8);
            /* two bsums: sum(q) = sum(q + 128) - 16 * 128 per 16 bytes */
            const __m256i sad = _mm256_sad_epu8(_mm256_xor_si256(p8, bias), _mm256_setzero_si256());
            const __m256i s2 = _mm256_add_epi64(sad, _mm256_shuffle_epi32(sad, 0x4E));
            y[i].bsums[j / 16] = (int16_t)(_mm256_extract_epi32(s2, 0) - 2048);
            y[i].bsums[j / 16 + 1] = (int16_t)(_mm256_extract_epi32(s2, 4) - 2048);
        }
        y[i].d = 1 / iscale;
    }
}

/* Q8_0 as ggml's AVX2 quantize_row_q8_0: amax by MAXPS in its order, d =
 * fp16(amax / 127), id = 127 / amax (0 if amax is 0), q = cvtps(round(x *
 * id)) saturated to int8. */
static void KNAME(quant_q8_0_)(const float *x, void *dst, int64_t n)
{
    block_q8_0 *y = dst;
    const int64_t nb = n / QK8_0;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t i = 0; i < nb; i++, x += QK8_0) {
        __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
        __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
        __m256 m = _mm256_andnot_ps(sign, v0);
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v1));
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v2));
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v3));
        __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        y[i].d = fp16_from_fp32(amax / 127.f);
        const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.f / amax : 0.0f);
        const __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v0, id), _MM_ROUND_NEAREST));
        const __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v1, id), _MM_ROUND_NEAREST));
        const __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v2, id), _MM_ROUND_NEAREST));
        const __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v3, id), _MM_ROUND_NEAREST));
        const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
        _mm256_storeu_si256((__m256i *)y[i].qs,
                            _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    }
}
