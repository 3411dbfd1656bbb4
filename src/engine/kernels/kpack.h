/* kpack.h - weight matrices repacked at load time for the rows-in-lanes
 * kernels ("x16" layout): the layout, its size, and the packing itself.
 *
 * The rows of a matrix are taken 16 at a time (a group; the last group is
 * padded with zero rows, whose results are never stored). Within a group,
 * per block of the weight type, every 4-byte word of the 16 rows' blocks is
 * stored as one 64-byte vector whose lane r is row r's word, so a kernel
 * reads a group as one sequential stream of aligned vectors and needs no
 * transposition, gather or horizontal sum (see kernels_x86_packed.h):
 *
 *   Q8_0 (34-byte blocks, nb = k / 32): vector 8i + d (d < 8) holds qs
 *        bytes 4d..4d+3 of block i; then, 64-byte aligned, the 16 fp16
 *        scales of each block (32 bytes per block).
 *   Q4_0 (18 bytes, nb = k / 32): block i is 4 vectors at 256 i: qs
 *        words 0..3 (block bytes 2..17); then, 64-byte aligned, the 16
 *        fp16 scales of each block (32 bytes per block).
 *   Q5_0 (22 bytes, nb = k / 32): block i is 5 vectors at 320 i: qs
 *        words 0..3 (block bytes 6..21), then qh (bytes 2..5); then, 64-byte
 *        aligned, the 16 fp16 scales of each block (32 bytes per block).
 *   Q4_K (144 bytes, nb = k / 256): block i is 36 vectors at 2304 i;
 *        vector j holds bytes 4j..4j+3 of the block (d and dmin, the 12
 *        scale bytes, then qs).
 *   Q5_K (176 bytes, nb = k / 256): block i is 44 vectors at 2816 i;
 *        vector j holds bytes 4j..4j+3 (d and dmin, scales, qh, then qs).
 *   Q6_K (210 bytes): block i is 53 vectors at 3392 i; vectors 0..51 hold
 *        bytes 4j..4j+3 (ql, qh, scales); vector 52 the 16 fp16 d.
 *
 * The integers and the float operations of the packed kernels are those of
 * the unpacked tiles, so results are bitwise the same (batch invariance and
 * the goldens do not move). Memory: the same bytes as the original rows
 * (Q6_K +1%, and rows rounded up to 16). Not every type or level has packed
 * kernels: kern_pack_size() says which (0: multiply the original rows).
 */
#ifndef LF_KPACK_H
#define LF_KPACK_H

#include <stddef.h>
#include <stdint.h>

#include "engine/quant/qtype.h"

/* Rows per group, bytes per vector, and vectors per block of each type
 * (Q8_0, Q5_0 and Q4_0: without their scales, which follow the blocks). */
#define KPACK_ROWS 16
#define KPACK_VEC 64
#define KPACK_Q8_0_VECS 8
#define KPACK_Q5_0_VECS 5
#define KPACK_Q4_0_VECS 4
#define KPACK_Q4_K_VECS 36
#define KPACK_Q5_K_VECS 44
#define KPACK_Q6_K_VECS 53

/* Bytes of one group of a matrix of type t with rows of k weights, or 0 if
 * t has no packed layout (or k is not a multiple of its block size). */
size_t kpack_group_bytes(qtype_t t, int64_t k);

/* Bytes of the packed copy of an n_rows x k matrix of type t (a multiple
 * of 64), or 0 if t has no packed layout. */
size_t kpack_size(qtype_t t, int64_t n_rows, int64_t k);

/* Writes the packed copy of W (n_rows rows of qtype_row_size(t, k) bytes)
 * to dst (kpack_size bytes, 64-byte aligned). t must have a layout. */
void kpack_pack(qtype_t t, const void *W, int64_t n_rows, int64_t k, void *dst);

#endif
