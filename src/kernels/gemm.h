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
 * (K-quants: the arithmetic of their vec_dot kernels, see gemm_k_avx512.c.) The same
 * instructions run for every
 * (row, token) whatever the number of tokens, the tile position of the row or the thread:
 * prefill (n tokens) and decode (1 token) are bit-identical, which tests/test_gemm.c
 * checks, with a scalar model of exactly this arithmetic and the traits' reference dot.
 *
 * Activations: each token is first converted to the weight type's vec_dot_type by the
 * dispatched from_float (Q8_0 for Q4_0/Q8_0 weights), then the kernel's `prep` rewrites it
 * into the kernel's packed layout at xp (e.g. transposed like the weights, with per-block
 * offset corrections beside the codes; see the kernel file). The layout is private to
 * the kernel; matmul.c only sizes it (bytes per token and 16-block group).
 */
#ifndef EDGELLM_GEMM_H
#define EDGELLM_GEMM_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const uint8_t *w;        /* weight row 0; row r at w + r*row_bytes (borrowed)         */
    size_t row_bytes;
    int64_t cols;            /* elements per row (whole blocks)                           */
    int64_t r0, r1;          /* rows computed: [r0, r1)                                   */
    const uint8_t *xp;       /* activations in the kernel's layout (written by its prep)  */
    const uint8_t *xq;       /* [n][xq_row_bytes] activations in the vec_dot_type, for
                              * kernels without a prep                                    */
    size_t xq_row_bytes;
    int64_t n;               /* tokens                                                    */
    float *y;                /* y[t*ldy + r]                                              */
    int64_t ldy;
} edgellm_gemm_args;

/* Packed bytes per token and group of 16 Q8_0 activation blocks (gemm_q8_avx512.c):
 * 8 × 64 code bytes, 16 int32 offset corrections, 16 float d_x. */
#define EDGELLM_GEMM_Q8_0_XG 640

/* Token t's activation row xq (cols elements in the vec_dot_type) -> its place in the
 * packed activations at xp (tokens may be prepared in any order, by any thread). */
typedef void (*edgellm_gemm_prep_fn)(const void *xq, int64_t t, int64_t cols, uint8_t *xp);
typedef void (*edgellm_gemm_fn)(const edgellm_gemm_args *a);

/* ---- x86-64 (defined in src/kernels/x86/gemm_*.c; call only where the ISA runs) ---- */
void edgellm_gemm_prep_q4_0_avx512(const void *xq, int64_t t, int64_t cols, uint8_t *xp);
void edgellm_gemm_prep_q8_0_avx512(const void *xq, int64_t t, int64_t cols, uint8_t *xp);
void edgellm_gemm_q4_0_avx512(const edgellm_gemm_args *a);
void edgellm_gemm_q8_0_avx512(const edgellm_gemm_args *a);
/* Q4_K / Q6_K × Q8_K: no prep (they read the Q8_K rows), the vec_dot's arithmetic. */
void edgellm_gemm_q4_K_avx512(const edgellm_gemm_args *a);
void edgellm_gemm_q6_K_avx512(const edgellm_gemm_args *a);
void edgellm_gemm_prep_q4_0_avx2(const void *xq, int64_t t, int64_t cols, uint8_t *xp);
void edgellm_gemm_prep_q8_0_avx2(const void *xq, int64_t t, int64_t cols, uint8_t *xp);
void edgellm_gemm_q4_0_avx2(const edgellm_gemm_args *a);
void edgellm_gemm_q8_0_avx2(const edgellm_gemm_args *a);

#endif
