/*
 * gemm_q4_K_r16_avx512.c — edgellm_gemm_q4_K_r16_avx512: Q4_K in the repacked layout
 * q4_K_r16, AVX-512 + VNNI (body and arithmetic in gemm_q4_K_r16_body.h).
 */
#include "gemm_q4_K_r16_body.h"
