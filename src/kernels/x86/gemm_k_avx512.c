/*
 * gemm_k_avx512.c — the Q4_K, Q5_K and Q6_K tile kernels for AVX-512 + VNNI without GFNI:
 * edgellm_gemm_q4_K_avx512, _q5_K_, _q6_K_ (bodies and arithmetic in
 * gemm_k_avx512_body.h; the GFNI twins are gemm_k_avx512_gfni.c).
 */
#include "gemm_k_avx512_body.h"
