/*
 * kernels_x86.h — the x86-64 SIMD kernels (AVX2+FMA+F16C: suffix _avx2; AVX-512
 * F/BW/VL/DQ + VNNI: suffix _avx512). Each has the signature of its scalar twin named
 * in the comment (src/tensor/quant.h, src/tensor/types.c) and is selected at run time
 * by src/kernels/dispatch.c from src/kernels/cpu_features.c: calling one on a CPU
 * without its ISA faults. Declared on every architecture, defined only on x86-64, in a
 * file of this folder named by what it holds and its ISA (dot_q4_0_avx2.c,
 * dot_q4_K_q6_K_avx512.c, attend_avx2.c, ...; the tile kernels are in gemm.h).
 */
#ifndef EDGELLM_KERNELS_X86_H
#define EDGELLM_KERNELS_X86_H

#include <stdint.h>
#include "../../tensor/types.h"

/* ---- AVX2 ---- */
float edgellm_dot_f32_avx2(int64_t n, const void *w, const void *x);            /* dot_f32_ref  */
/* edgellm_attend (ops.h) with dot = edgellm_dot_f32_avx2, inlined: bit-identical to it */
void edgellm_attend_avx2(float *out, const float *q, const float *k, const float *v, int64_t stride, int head_dim,
                         int64_t n_pos, float scale, float *scores, edgellm_vec_dot_fn dot);
/* edgellm_attend_f16 (ops.h), the values summed 8 columns at a time: bit-identical to it */
void edgellm_attend_f16_avx2(float *out, const float *q, const uint16_t *k, const uint16_t *v, int64_t stride,
                             int head_dim, int64_t n_pos, float scale, float *scores, edgellm_vec_dot_fn dot);
float edgellm_dot_f16_avx2(int64_t n, const void *w, const void *x);            /* dot_f16_ref  */
/* float[n] -> F16[n] (dst may be unaligned): F16C round-to-nearest-even, bit for bit
 * types.c's f16_from_float (NaN kept quiet with its top payload bits; overflow to inf). */
void edgellm_f16_from_float_avx2(const float *src, void *dst, int64_t n);
float edgellm_dot_bf16_avx2(int64_t n, const void *w, const void *x);           /* dot_bf16_ref */
float edgellm_dot_q4_0_q8_0_avx2(int64_t n, const void *w, const void *x);
float edgellm_dot_q4_1_q8_1_avx2(int64_t n, const void *w, const void *x);
float edgellm_dot_q5_0_q8_0_avx2(int64_t n, const void *w, const void *x);
float edgellm_dot_q5_1_q8_1_avx2(int64_t n, const void *w, const void *x);
float edgellm_dot_q8_0_q8_0_avx2(int64_t n, const void *w, const void *x);
float edgellm_dot_q2_K_q8_K_avx2(int64_t n, const void *w, const void *x);
float edgellm_dot_q3_K_q8_K_avx2(int64_t n, const void *w, const void *x);
float edgellm_dot_q4_K_q8_K_avx2(int64_t n, const void *w, const void *x);
float edgellm_dot_q5_K_q8_K_avx2(int64_t n, const void *w, const void *x);
float edgellm_dot_q6_K_q8_K_avx2(int64_t n, const void *w, const void *x);
/* group-wise types: one function per (bits, asym, G) */
#define EDGELLM_DECLARE_GROUP_AVX2(G)                                                        \
    float edgellm_dot_i4_g##G##_sym_q8_0_avx2(int64_t n, const void *w, const void *x);      \
    float edgellm_dot_i4_g##G##_asym_q8_1_avx2(int64_t n, const void *w, const void *x);     \
    float edgellm_dot_i8_g##G##_sym_q8_0_avx2(int64_t n, const void *w, const void *x);      \
    float edgellm_dot_i8_g##G##_asym_q8_1_avx2(int64_t n, const void *w, const void *x);
EDGELLM_DECLARE_GROUP_AVX2(64) EDGELLM_DECLARE_GROUP_AVX2(128) EDGELLM_DECLARE_GROUP_AVX2(256)
/* activation quantizers: byte-identical to edgellm_quant_q8_*_ref (traits from_float) */
void edgellm_quant_q8_0_avx2(const float *src, void *dst, int64_t n);
void edgellm_quant_q8_1_avx2(const float *src, void *dst, int64_t n);
void edgellm_quant_q8_K_avx2(const float *src, void *dst, int64_t n);

/* ---- AVX-512 (F/BW/VL/DQ + VNNI) ---- */
/* edgellm_attend (ops.h) with dot = edgellm_dot_f32_avx2 (the avx512 level's F32 dot), 16
 * lanes at a time: bit-identical to it and to edgellm_attend_avx2 (attend_avx512.c) */
void edgellm_attend_avx512(float *out, const float *q, const float *k, const float *v, int64_t stride, int head_dim,
                           int64_t n_pos, float scale, float *scores, edgellm_vec_dot_fn dot);
/* edgellm_attend_f16 (ops.h) with dot = edgellm_dot_f16_avx512 (the avx512 level's F16
 * dot), 16 lanes at a time: bit-identical to it (attend_avx512.c) */
void edgellm_attend_f16_avx512(float *out, const float *q, const uint16_t *k, const uint16_t *v, int64_t stride,
                               int head_dim, int64_t n_pos, float scale, float *scores, edgellm_vec_dot_fn dot);
/* edgellm_attend_quant (ops.h) over Q8_0 rows with the avx512 level's dequantization and F32
 * dot, bit for bit; false (nothing written) when head_dim is not a multiple of 32 up to 256
 * (edgellm_kernels_attend then runs the reference) */
bool edgellm_attend_q8_0_avx512(float *out, const float *q, const uint8_t *k, const uint8_t *v, size_t stride,
                                int head_dim, int64_t n_pos, float scale, float *scores);
float edgellm_dot_f16_avx512(int64_t n, const void *w, const void *x);
float edgellm_dot_q4_0_q8_0_avx512(int64_t n, const void *w, const void *x);
float edgellm_dot_q8_0_q8_0_avx512(int64_t n, const void *w, const void *x);
float edgellm_dot_q4_K_q8_K_avx512(int64_t n, const void *w, const void *x);
float edgellm_dot_q5_K_q8_K_avx512(int64_t n, const void *w, const void *x);
float edgellm_dot_q6_K_q8_K_avx512(int64_t n, const void *w, const void *x);

#endif
