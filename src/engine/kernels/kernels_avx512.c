/* kernels_avx512.c - the x86 kernels with AVX-512 VNNI: 256-bit (VL)
 * vpdpbusd / vpdpwssd in the shared bodies, 32 registers (8 tokens per
 * pass), and a 512-bit Q8_0 tile (measured ~15-25% faster than the 256-bit
 * one on this Cascade Lake, frequency effects included). The target pragma
 * applies to this file only; kernels.c calls these after checking the CPU. */
#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#define KERN_NT_NATIVE 8
#define KERN_VNNI 1
#define KERN_SUFFIX avx512
#include "engine/kernels/kernels_x86_body.h"
#endif
