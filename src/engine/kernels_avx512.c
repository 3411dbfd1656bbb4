/* kernels_avx512.c - the AVX2 kernels with AVX-512 VNNI (256-bit, VL)
 * int8 dot products, as llama.cpp does on this CPU class: 256-bit vectors
 * avoid the AVX-512 frequency penalty. The target pragma applies to this
 * file only; kernels.c calls these after checking the CPU. */
#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#define KERN_VNNI 1
#define KERN_SUFFIX avx512
#include "engine/kernels_x86_body.h"
#endif
