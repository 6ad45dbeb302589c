/*
 * gemm_k_neon.c — tile kernels for Q4_K and Q6_K weights × Q8_K activations on AArch64
 * Advanced SIMD without dotprod (suffix _neon); the body, its contract and the arithmetic
 * it promises (that of edgellm_dot_q4_K_q8_K_neon / edgellm_dot_q6_K_q8_K_neon) are in
 * gemm_k_body.h. The 16-byte dot is SMULL + SADALP (neon_util.h), as in dot_q_neon.c.
 */
#if defined(__aarch64__)
#define ARM_DOT16(acc, a, b) arm_dot16_s8(acc, a, b)
#define ARM_SUFFIX neon
#include "gemm_k_body.h"
#endif
