/*
 * dot_q_neon.c — quantized dot products for AArch64 Advanced SIMD without dotprod (suffix
 * _neon): Q4_0·Q8_0, Q8_0·Q8_0, Q4_K·Q8_K, Q6_K·Q8_K. The bodies, their mirrored _ref
 * functions and tolerances are in dot_q_body.h; here the 16-byte dot is SMULL (int8 ->
 * int16 products, exact: |a·b| <= 16384) and SADALP (pairwise add into int32).
 */
#if defined(__aarch64__)
#define ARM_DOT16(acc, a, b) arm_dot16_s8(acc, a, b)
#define ARM_SUFFIX neon
#include "dot_q_body.h"
#endif
