/*
 * gemm_q4_K_r16_avx512_gfni.c — edgellm_gemm_q4_K_r16_avx512_gfni: the kernel of
 * gemm_q4_K_r16_body.h with the codes split by GF2P8AFFINEQB (k_avx512.h: X86_K_GFNI);
 * the same integers, so the same results bit for bit. Compiled with -mgfni
 * (cmake/KernelFlags.cmake, EDGELLM_X86_AVX512_GFNI_SOURCES).
 */
#if defined(__GFNI__)
#define X86_K_GFNI 1
#include "gemm_q4_K_r16_body.h"
#endif
