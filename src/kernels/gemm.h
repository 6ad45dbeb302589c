/*
 * gemm.h — tile kernels for the quantized matrix product (used by matmul.c only).
 *
 * A tile kernel computes y[t][r] = Σ_b (d_w[r][b]·d_x[t][b])·isum(r, t, b) for a range of
 * weight rows and all n tokens, where isum is the exact integer dot product of weight block
 * b of row r with activation block b of token t. Rows are processed in tiles of 16 (fewer
 * at the end): one SIMD lane per row, so each lane holds a fully reduced block sum and the
 * float accumulation is, per output element:
 *
 *     acc = +0;  for b = 0 .. nb-1 in order:  acc = fma(float(isum_b), d_w,b · d_x,b, acc)
 *
 * (K-quants: per super-block, see their files.) The same instructions run for every
 * (row, token) whatever the number of tokens, the tile position of the row or the thread:
 * prefill (n tokens) and decode (1 token) are bit-identical, which tests/test_gemm.c
 * checks, with a scalar model of exactly this arithmetic and the traits' reference dot.
 *
 * Activations: each token is first converted to the weight type's vec_dot_type by the
 * dispatched from_float (Q8_0 for Q4_0/Q8_0 weights), then `prep` copies it into the
 * kernel's layout, the "slabs": tokens in groups of EDGELLM_GEMM_GROUP; for group G and
 * block b one slab of EDGELLM_GEMM_GROUP × 32 codes followed by EDGELLM_GEMM_GROUP
 * {d_x as float, -o·Σx} (edgellm_gemm_q8_0_aux), where o is the offset that makes the
 * weight codes unsigned for the u8×s8 product (Q4_0: q = w+8, o = 8; Q8_0: w+128,
 * o = 128). A kernel then finds every operand of a token group at fixed offsets.
 */
#ifndef EDGELLM_GEMM_H
#define EDGELLM_GEMM_H

#include <stddef.h>
#include <stdint.h>

#define EDGELLM_GEMM_GROUP 8        /* tokens per activation group                        */

typedef struct {
    const uint8_t *w;        /* weight row 0; row r at w + r*row_bytes (borrowed)         */
    size_t row_bytes;
    int64_t cols;            /* elements per row (whole blocks)                           */
    int64_t r0, r1;          /* rows computed: [r0, r1)                                   */
    const uint8_t *xp;       /* activations in slabs (prep), group G block b at
                              * xp + (G*nb + b)*slab_bytes                                */
    int64_t n;               /* tokens                                                    */
    float *y;                /* y[t*ldy + r]                                              */
    int64_t ldy;
} edgellm_gemm_args;

typedef struct {
    float d;                 /* d_x as float                                              */
    int32_t corr;            /* -o·Σ x_i over the block                                   */
} edgellm_gemm_q8_0_aux;

/* Bytes of one slab for Q8_0 activations: GROUP × (32 codes + 8 bytes of aux). */
#define EDGELLM_GEMM_Q8_0_SLAB (EDGELLM_GEMM_GROUP * (32 + 8))

/* Token t's activation row xq (cols elements in the vec_dot_type) -> its places in the
 * slabs at xp (see above). */
typedef void (*edgellm_gemm_prep_fn)(const void *xq, int64_t t, int64_t cols, uint8_t *xp);
typedef void (*edgellm_gemm_fn)(const edgellm_gemm_args *a);

/* ---- x86-64 (defined in src/kernels/x86/gemm_*.c; call only where the ISA runs) ---- */
void edgellm_gemm_prep_q4_0_avx512(const void *xq, int64_t t, int64_t cols, uint8_t *xp);
void edgellm_gemm_prep_q8_0_avx512(const void *xq, int64_t t, int64_t cols, uint8_t *xp);
void edgellm_gemm_q4_0_avx512(const edgellm_gemm_args *a);
void edgellm_gemm_q8_0_avx512(const edgellm_gemm_args *a);

#endif
