/* kernels_avxvnni.c - the AVX2 level's kernels compiled again with
 * AVX-VNNI (the VEX-encoded vpdpbusd of Intel's client cores since Alder
 * Lake and of AMD Zen 5), for CPUs that have it without the AVX-512 level:
 * the packed kernels (kernels_x86_packed_avx2.h) sum their u8 x s8
 * products with it, one instruction where AVX2 takes two or three, with
 * the same exact integers, so the same values. kernels.c uses only the
 * packed table of this file (the others equal the AVX2 file's). The target
 * pragma applies to this file only; kernels.c calls it after checking the
 * CPU. */
#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx2,fma,f16c,avxvnni")
#define KERN_NT_NATIVE 4
#define KERN_VNNI 0
#define KERN_AVXVNNI 1
#define KERN_SUFFIX avxvnni
#include "engine/kernels/kernels_x86_body.h"
#endif
