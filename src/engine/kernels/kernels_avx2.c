/* kernels_avx2.c - dot kernels for AVX2 + FMA + F16C. The target pragma
 * applies to this file's functions only (the binary runs on any x86-64;
 * kernels.c calls these only after checking the CPU). */
#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx2,fma,f16c")
#define KERN_NT_NATIVE 4
#define KERN_VNNI 0
#define KERN_SUFFIX avx2
#include "engine/kernels/kernels_x86_body.h"
#endif
