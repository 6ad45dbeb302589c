/*
 * quant.h — scalar reference quantize / dequantize / dot for every quantized type
 * (layouts in blocks.h), and a row-level quantizer entry point that also counts saturated
 * values for the quantize report.
 *
 * Naming, per type T:
 *   void     edgellm_dequant_T(const void *src, float *dst, int64_t n)        traits to_float
 *   uint64_t edgellm_quant_T_ref(const float *src, void *dst, int64_t n)      reference quantizer;
 *            returns the number of saturated values (see below); traits from_float_ref
 *            wraps it
 *   float    edgellm_dot_T_A_ref(int64_t n, const void *w, const void *x)     traits vec_dot_ref:
 *            w = n weights of type T, x = n activations of type A (its vec_dot_type)
 * n is always a multiple of the block size (callers check edgellm_type_row_size).
 *
 * Reference dots compute each block's integer sum exactly (int32) and accumulate the
 * scaled sums in double; they use only the quants and scales, never the Q8_1 `s` field
 * (a half, rounded), so they equal the double-precision dot of the dequantized operands
 * up to the final rounding to float. Fast kernels that use `s` differ by about
 * 2^-11 * |m * sum(x)| per block.
 *
 * Saturation: a value is counted as saturated when its rounded code lay outside the
 * type's code range and was clamped (e.g. Q4_0: x/d rounds to +8 when the block's
 * signed maximum is negative), or when its magnitude exceeds what the type can represent
 * with half-precision scales (then it is clamped to that limit first: 8*65504 for Q4_0,
 * 16*65504 Q5_0, 127*65504 Q8_0 and the symmetric group types, 65504 for the types with
 * a minimum and the K-quants). Inside that range no scale ever becomes inf or NaN: an
 * all-zero, constant, denormal or tiny block gets a zero or finite scale.
 * NaN inputs are not supported (they give unspecified codes, but no undefined behaviour).
 */
#ifndef EDGELLM_QUANT_H
#define EDGELLM_QUANT_H

#include "../common/common.h"
#include "blocks.h"

/* ---- row-level entry point ---- */
typedef struct {
    uint64_t n_values;      /* values quantized (accumulated over calls)          */
    uint64_t n_saturated;   /* of which clamped to the type's range               */
} edgellm_quant_stats;

/* Quantize n floats into dst with the reference quantizer of `type` (any type with a
 * from_float_ref: float types and every quantized type here). n must be a multiple of
 * the block size. Returns the bytes written (edgellm_type_row_size(type, n)), 0 when the
 * type has no quantizer or n does not fit its blocks (dst untouched). st (may be NULL) is
 * added to, not reset. Thread-safe (no shared state). */
size_t edgellm_quantize_row(int type, const float *src, void *dst, int64_t n, edgellm_quant_stats *st);

/* ---- shared helpers (quant_util.c) ---- */
#define EDGELLM_HALF_MAX 65504.0f
/* Clamp v to [-lim, lim]; counts a clamp in *n_sat (may be NULL). NaN becomes 0. */
float edgellm_q_sat(float v, float lim, uint64_t *n_sat);
/* Round-half-to-even of v, clamped to [lo, hi], v clamped in float first (so no
 * overflow); *n_sat (may be NULL) counts results that had to be clamped. NaN -> lo. */
int edgellm_q_round(float v, int lo, int hi, uint64_t *n_sat);
/* fp32 -> half with the magnitude limited to EDGELLM_HALF_MAX (never inf). */
uint16_t edgellm_q_half(float v);

/* ---- Q8_0 / Q8_1 / Q8_K (quant_q8.c) ---- */
void     edgellm_dequant_q8_0(const void *src, float *dst, int64_t n);
uint64_t edgellm_quant_q8_0_ref(const float *src, void *dst, int64_t n);
float    edgellm_dot_q8_0_q8_0_ref(int64_t n, const void *w, const void *x);
void     edgellm_dequant_q8_1(const void *src, float *dst, int64_t n);
uint64_t edgellm_quant_q8_1_ref(const float *src, void *dst, int64_t n);
void     edgellm_dequant_q8_K(const void *src, float *dst, int64_t n);
uint64_t edgellm_quant_q8_K_ref(const float *src, void *dst, int64_t n);

/* ---- Q4_0 / Q4_1 / Q5_0 / Q5_1 (quant_q4_q5.c) ---- */
void     edgellm_dequant_q4_0(const void *src, float *dst, int64_t n);
uint64_t edgellm_quant_q4_0_ref(const float *src, void *dst, int64_t n);
float    edgellm_dot_q4_0_q8_0_ref(int64_t n, const void *w, const void *x);
void     edgellm_dequant_q4_1(const void *src, float *dst, int64_t n);
uint64_t edgellm_quant_q4_1_ref(const float *src, void *dst, int64_t n);
float    edgellm_dot_q4_1_q8_1_ref(int64_t n, const void *w, const void *x);
void     edgellm_dequant_q5_0(const void *src, float *dst, int64_t n);
uint64_t edgellm_quant_q5_0_ref(const float *src, void *dst, int64_t n);
float    edgellm_dot_q5_0_q8_0_ref(int64_t n, const void *w, const void *x);
void     edgellm_dequant_q5_1(const void *src, float *dst, int64_t n);
uint64_t edgellm_quant_q5_1_ref(const float *src, void *dst, int64_t n);
float    edgellm_dot_q5_1_q8_1_ref(int64_t n, const void *w, const void *x);

/* ---- K-quants (quant_k.c; the scale searches in quant_k_search.c) ---- */
void     edgellm_dequant_q2_K(const void *src, float *dst, int64_t n);
uint64_t edgellm_quant_q2_K_ref(const float *src, void *dst, int64_t n);
float    edgellm_dot_q2_K_q8_K_ref(int64_t n, const void *w, const void *x);
void     edgellm_dequant_q3_K(const void *src, float *dst, int64_t n);
uint64_t edgellm_quant_q3_K_ref(const float *src, void *dst, int64_t n);
float    edgellm_dot_q3_K_q8_K_ref(int64_t n, const void *w, const void *x);
void     edgellm_dequant_q4_K(const void *src, float *dst, int64_t n);
uint64_t edgellm_quant_q4_K_ref(const float *src, void *dst, int64_t n);
float    edgellm_dot_q4_K_q8_K_ref(int64_t n, const void *w, const void *x);
void     edgellm_dequant_q5_K(const void *src, float *dst, int64_t n);
uint64_t edgellm_quant_q5_K_ref(const float *src, void *dst, int64_t n);
float    edgellm_dot_q5_K_q8_K_ref(int64_t n, const void *w, const void *x);
void     edgellm_dequant_q6_K(const void *src, float *dst, int64_t n);
uint64_t edgellm_quant_q6_K_ref(const float *src, void *dst, int64_t n);
float    edgellm_dot_q6_K_q8_K_ref(int64_t n, const void *w, const void *x);

/* Q4_K/Q5_K 6-bit scale and min j (0..7) of a 12-byte scales array. */
void edgellm_k_scale_min(int j, const uint8_t *scales, uint8_t *sc, uint8_t *m);
/* Q3_K: the 16 signed sub-block scales (already minus 32). */
void edgellm_q3_K_scales(const uint8_t *packed, int8_t out[16]);

/* ---- edgellm group-wise types (quant_group.c) ----
 * One set of functions per (bits, asym, G); G is read from the type. */
#define EDGELLM_DECLARE_GROUP_FNS(G)                                                           \
    void     edgellm_dequant_i4_g##G##_sym(const void *src, float *dst, int64_t n);             \
    uint64_t edgellm_quant_i4_g##G##_sym_ref(const float *src, void *dst, int64_t n);          \
    float    edgellm_dot_i4_g##G##_sym_q8_0_ref(int64_t n, const void *w, const void *x);      \
    void     edgellm_dequant_i4_g##G##_asym(const void *src, float *dst, int64_t n);            \
    uint64_t edgellm_quant_i4_g##G##_asym_ref(const float *src, void *dst, int64_t n);         \
    float    edgellm_dot_i4_g##G##_asym_q8_1_ref(int64_t n, const void *w, const void *x);     \
    void     edgellm_dequant_i8_g##G##_sym(const void *src, float *dst, int64_t n);             \
    uint64_t edgellm_quant_i8_g##G##_sym_ref(const float *src, void *dst, int64_t n);          \
    float    edgellm_dot_i8_g##G##_sym_q8_0_ref(int64_t n, const void *w, const void *x);      \
    void     edgellm_dequant_i8_g##G##_asym(const void *src, float *dst, int64_t n);            \
    uint64_t edgellm_quant_i8_g##G##_asym_ref(const float *src, void *dst, int64_t n);         \
    float    edgellm_dot_i8_g##G##_asym_q8_1_ref(int64_t n, const void *w, const void *x);
EDGELLM_GROUP_TYPES(EDGELLM_DECLARE_GROUP_FNS)

#endif
