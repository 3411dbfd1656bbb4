/* kpack.c - the x16 packed layout (see kpack.h): portable byte moves. */
#include "engine/kernels/kpack.h"

#include <string.h>

/* Bytes of one block of type t in the group, and of its original block. */
static size_t kpack_block_bytes(qtype_t t)
{
    switch (t) {
    case QTYPE_Q8_0: return KPACK_Q8_0_VECS * KPACK_VEC; /* qs only; scales apart */
    case QTYPE_Q5_0: return KPACK_Q5_0_VECS * KPACK_VEC; /* qs and qh; scales apart */
    case QTYPE_Q4_0: return KPACK_Q4_0_VECS * KPACK_VEC; /* qs; scales apart */
    case QTYPE_Q4_K: return KPACK_Q4_K_VECS * KPACK_VEC;
    case QTYPE_Q5_K: return KPACK_Q5_K_VECS * KPACK_VEC;
    case QTYPE_Q6_K: return KPACK_Q6_K_VECS * KPACK_VEC;
    default: return 0;
    }
}

static size_t kpack_round64(size_t n)
{
    return (n + 63) / 64 * 64;
}

size_t kpack_group_bytes(qtype_t t, int64_t k)
{
    size_t bb = kpack_block_bytes(t);
    const qtype_info_t *in = qtype_info(t);
    if (!bb || !in || k <= 0 || k % in->block_size)
        return 0;
    size_t nb = (size_t)(k / in->block_size);
    if (t == QTYPE_Q8_0 || t == QTYPE_Q5_0 || t == QTYPE_Q4_0)
        return nb * bb + kpack_round64(nb * 32);
    return nb * bb;
}

size_t kpack_size(qtype_t t, int64_t n_rows, int64_t k)
{
    size_t g = kpack_group_bytes(t, k);
    if (!g || n_rows <= 0)
        return 0;
    return g * (size_t)((n_rows + KPACK_ROWS - 1) / KPACK_ROWS);
}

/* The words [off, off + 4 n_words) of the 16 rows' blocks (src[r], NULL
 * for a padding row) as n_words vectors at dst. */
static void kpack_words(uint8_t *dst, const uint8_t *const src[KPACK_ROWS], size_t off, int n_words)
{
    for (int j = 0; j < n_words; j++)
        for (int r = 0; r < KPACK_ROWS; r++) {
            uint8_t *d = dst + (size_t)j * KPACK_VEC + 4 * r;
            if (src[r])
                memcpy(d, src[r] + off + 4 * (size_t)j, 4);
            else
                memset(d, 0, 4);
        }
}

/* The 16 rows' 2-byte scales at byte off of their blocks, as 16 fp16. */
static void kpack_scales(uint8_t *dst, const uint8_t *const src[KPACK_ROWS], size_t off)
{
    for (int r = 0; r < KPACK_ROWS; r++) {
        if (src[r])
            memcpy(dst + 2 * r, src[r] + off, 2);
        else
            memset(dst + 2 * r, 0, 2);
    }
}

void kpack_pack(qtype_t t, const void *W, int64_t n_rows, int64_t k, void *dst)
{
    const qtype_info_t *in = qtype_info(t);
    const size_t row_bytes = qtype_row_size(t, k), bsz = in->type_size, gb = kpack_group_bytes(t, k);
    const int64_t nb = k / in->block_size;
    for (int64_t g = 0; g * KPACK_ROWS < n_rows; g++) {
        uint8_t *gd = (uint8_t *)dst + (size_t)g * gb;
        memset(gd, 0, gb);
        for (int64_t i = 0; i < nb; i++) {
            const uint8_t *src[KPACK_ROWS];
            for (int r = 0; r < KPACK_ROWS; r++) {
                int64_t row = g * KPACK_ROWS + r;
                src[r] = row < n_rows ? (const uint8_t *)W + (size_t)row * row_bytes + (size_t)i * bsz : NULL;
            }
            switch (t) {
            case QTYPE_Q8_0: /* d at 0, qs at 2 */
                kpack_words(gd + (size_t)i * KPACK_Q8_0_VECS * KPACK_VEC, src, 2, 8);
                kpack_scales(gd + (size_t)nb * KPACK_Q8_0_VECS * KPACK_VEC + (size_t)i * 32, src, 0);
                break;
            case QTYPE_Q5_0: /* d at 0, qh at 2, qs at 6 */
                kpack_words(gd + (size_t)i * KPACK_Q5_0_VECS * KPACK_VEC, src, 6, 4);
                kpack_words(gd + (size_t)i * KPACK_Q5_0_VECS * KPACK_VEC + 4 * KPACK_VEC, src, 2, 1);
                kpack_scales(gd + (size_t)nb * KPACK_Q5_0_VECS * KPACK_VEC + (size_t)i * 32, src, 0);
                break;
            case QTYPE_Q4_0: /* d at 0, qs at 2 */
                kpack_words(gd + (size_t)i * KPACK_Q4_0_VECS * KPACK_VEC, src, 2, 4);
                kpack_scales(gd + (size_t)nb * KPACK_Q4_0_VECS * KPACK_VEC + (size_t)i * 32, src, 0);
                break;
            case QTYPE_Q4_K:
                kpack_words(gd + (size_t)i * KPACK_Q4_K_VECS * KPACK_VEC, src, 0, KPACK_Q4_K_VECS);
                break;
            case QTYPE_Q5_K:
                kpack_words(gd + (size_t)i * KPACK_Q5_K_VECS * KPACK_VEC, src, 0, KPACK_Q5_K_VECS);
                break;
            case QTYPE_Q6_K: /* ql, qh, scales (208 bytes), then d */
                kpack_words(gd + (size_t)i * KPACK_Q6_K_VECS * KPACK_VEC, src, 0, 52);
                kpack_scales(gd + (size_t)i * KPACK_Q6_K_VECS * KPACK_VEC + 52 * KPACK_VEC, src, 208);
                break;
            default:
                break;
            }
        }
    }
}
