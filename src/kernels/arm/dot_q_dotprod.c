/*
 * dot_q_dotprod.c — the same kernels as dot_q_neon.c (bodies in dot_q_body.h) with the
 * FEAT_DotProd instruction SDOT (four int8 products summed into each int32 lane, exact),
 * suffix _dotprod. Compiled with -march=armv8.2-a+dotprod (cmake/KernelFlags.cmake); dispatch.c
 * selects it only when getauxval(AT_HWCAP) reports HWCAP_ASIMDDP.
 */
#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#define ARM_DOT16(acc, a, b) vdotq_s32(acc, a, b)
#define ARM_SUFFIX dotprod
#include "dot_q_body.h"
#endif
