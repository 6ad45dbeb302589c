/*
 * kernels_arm.h — the AArch64 SIMD kernels (Advanced SIMD: suffix _neon; with the
 * optional SDOT instruction, FEAT_DotProd: suffix _dotprod). Each has the signature of
 * its scalar twin named in its file's comment and is selected at run time by
 * src/kernels/dispatch.c from src/kernels/cpu_features.c. Declared on every
 * architecture, defined only on AArch64, in a file of this folder named by what it holds
 * and its ISA (dot_float_neon.c, dot_q_neon.c, dot_q_dotprod.c, quant_q8_neon.c).
 */
#ifndef EDGELLM_KERNELS_ARM_H
#define EDGELLM_KERNELS_ARM_H

#include <stdint.h>

/* ---- NEON ---- */
float edgellm_dot_f32_neon(int64_t n, const void *w, const void *x);            /* dot_f32_ref */
float edgellm_dot_f16_neon(int64_t n, const void *w, const void *x);            /* dot_f16_ref */
float edgellm_dot_q4_0_q8_0_neon(int64_t n, const void *w, const void *x);
float edgellm_dot_q8_0_q8_0_neon(int64_t n, const void *w, const void *x);
float edgellm_dot_q4_K_q8_K_neon(int64_t n, const void *w, const void *x);
float edgellm_dot_q6_K_q8_K_neon(int64_t n, const void *w, const void *x);
/* activation quantizers: byte-identical to edgellm_quant_q8_*_ref */
void edgellm_quant_q8_0_neon(const float *src, void *dst, int64_t n);
void edgellm_quant_q8_1_neon(const float *src, void *dst, int64_t n);
void edgellm_quant_q8_K_neon(const float *src, void *dst, int64_t n);

/* ---- NEON + dotprod ---- */
float edgellm_dot_q4_0_q8_0_dotprod(int64_t n, const void *w, const void *x);
float edgellm_dot_q8_0_q8_0_dotprod(int64_t n, const void *w, const void *x);
float edgellm_dot_q4_K_q8_K_dotprod(int64_t n, const void *w, const void *x);
float edgellm_dot_q6_K_q8_K_dotprod(int64_t n, const void *w, const void *x);

#endif
