/* kernels_impl.h - internal interface between the kernel dispatcher
 * (kernels.c) and the per-ISA kernel files (kernels_avx2.c, ...).
 *
 * A dot kernel multiplies one weight row by nt (1..KERN_NT_MAX) activation
 * rows: out[t * out_stride] = dot(w, act + t * act_stride) for t < nt. Each
 * token has its own accumulator chain whose float operations do not depend
 * on nt, which is what makes kern_matmul batch invariant.
 */
#ifndef LF_KERNELS_IMPL_H
#define LF_KERNELS_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/quant/qtype.h"

#define KERN_NT_MAX 32
#define KERN_NR_MAX 16

typedef void (*kern_dot_fn_t)(int64_t n, const void *w, const void *act, size_t act_stride, int nt,
                              float *out, size_t out_stride);

/* A tile kernel does nr (1..KERN_NR_MAX) weight rows (w_stride bytes
 * apart) at once: out[r + t * out_stride] for r < nr, t < nt. Where an ISA
 * level has one for a type, its dot kernel is the same code with nr == 1,
 * so every (row, token) value is computed by the same float operations. */
typedef void (*kern_tile_fn_t)(int64_t n, const void *w, size_t w_stride, int nr, const void *act,
                               size_t act_stride, int nt, float *out, size_t out_stride);

/* A packed tile kernel: one group of 16 rows in the x16 layout (kpack.h)
 * times nt (1..KERN_NT_MAX) tokens; out[r + t * out_stride] for the lanes
 * r whose bit is set in keep. Bitwise the VNNI level's tile values at both
 * levels that have them (AVX2: kernels_x86_packed_avx2.h, AVX-512 VNNI:
 * kernels_x86_packed.h). */
typedef void (*kern_ptile_fn_t)(int64_t n, const void *group, const void *act, size_t act_stride, int nt,
                                float *out, size_t out_stride, unsigned keep);

/* An activation quantizer: n floats (a multiple of the block size) to one
 * row of a vec_dot type, bytes identical to quant_quantize_row's. */
typedef void (*kern_quant_fn_t)(const float *x, void *dst, int64_t n);

/* Fill tab[wtype] (and tiles[wtype], quant[vec_dot type]) for the types the
 * ISA file implements; entries it does not know are left untouched (the
 * caller pre-fills with the level below). Only call when the CPU supports
 * the ISA. */
void kern_fill_avx2(kern_dot_fn_t tab[QTYPE_COUNT], kern_tile_fn_t tiles[QTYPE_COUNT],
                    kern_quant_fn_t quant[QTYPE_COUNT]);
void kern_fill_avx512(kern_dot_fn_t tab[QTYPE_COUNT], kern_tile_fn_t tiles[QTYPE_COUNT],
                      kern_quant_fn_t quant[QTYPE_COUNT]);

/* Fill ptiles[wtype] for the types with packed kernels at that level. */
void kern_fill_packed_avx2(kern_ptile_fn_t ptiles[QTYPE_COUNT]);
void kern_fill_packed_avxvnni(kern_ptile_fn_t ptiles[QTYPE_COUNT]);
void kern_fill_packed_avx512(kern_ptile_fn_t ptiles[QTYPE_COUNT]);

#endif
