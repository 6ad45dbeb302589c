/*
 * gemm_k_dotprod.c — the tile kernels of gemm_k_neon.c (body in gemm_k_body.h) with the
 * FEAT_DotProd instruction SDOT, suffix _dotprod: the arithmetic of
 * edgellm_dot_q4_K_q8_K_dotprod / edgellm_dot_q6_K_q8_K_dotprod. Compiled with
 * -march=armv8.2-a+dotprod (cmake/KernelFlags.cmake).
 */
#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#define ARM_DOT16(acc, a, b) vdotq_s32(acc, a, b)
#define ARM_SUFFIX dotprod
#include "gemm_k_body.h"
#endif
