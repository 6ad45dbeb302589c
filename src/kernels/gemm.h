/*
 * gemm.h — tile kernels for the quantized matrix product: dispatch.c lists them per kernel
 * level (edgellm_kernels_gemm), matmul.c runs them.
 *
 * A tile kernel computes y[t][r] = dot(row r of W, activation row t) for a range of weight
 * rows and all n tokens at once, reading each weight block once for many tokens (prefill)
 * and streaming rows in order (decode). Each kernel fixes one arithmetic per output element
 * — exact integer block sums, then float steps in a fixed order — that does not depend on
 * n, on the tile or chunk the row falls in, or on the thread: prefill (n tokens) and decode
 * (1 token) are bit-identical. tests/test_gemm.c checks every kernel against a scalar model
 * of its arithmetic (or, for kernels that promise their vec_dot's arithmetic, that vec_dot)
 * and against the traits' reference dot within tolerance.
 *
 *   gemm_q8_avx512.c  Q4_0, Q8_0 (AVX-512 VNNI): 16 blocks per 512-bit lane group, lanes =
 *                     blocks, weights and activations transposed alike; own arithmetic.
 *   gemm_q8_avx2.c    Q4_0, Q8_0 (AVX2): the same with 8 blocks per 256-bit group.
 *   gemm_k_avx512.c   Q4_K, Q5_K, Q6_K (AVX-512): the vec_dot's arithmetic, weights unpacked once
 *                     per 4 tokens; gemm_k_avx512_gfni.c the same with GFNI (one body:
 *                     gemm_k_avx512_body.h).
 *   gemm_f16_avx512.c F16 × F32 activations (AVX-512): the vec_dot's arithmetic, a 4-row ×
 *                     6-token register tile (each half converted once per 6 tokens).
 *   arm/gemm_q_dotprod.c  Q4_0, Q8_0 (AArch64 dotprod): the vec_dot's arithmetic, 4 tokens.
 *   arm/gemm_k_neon.c, arm/gemm_k_dotprod.c  Q4_K, Q6_K (AArch64 NEON / dotprod): the
 *                     vec_dot's arithmetic, weights unpacked once per 4 tokens (one body:
 *                     arm/gemm_k_body.h).
 *
 * Activations: float weights (vec_dot_type F32) read the float rows as they are (xq = x);
 * for the others each token is first converted to the weight type's vec_dot_type by the
 * dispatched from_float (Q8_0 for Q4_0/Q8_0, Q8_K for the K-quants). Kernels with a `prep`
 * then rewrite it into their own packed layout at xp (transposed like the weights, with
 * per-block offset corrections beside the codes; see the kernel file); matmul.c only sizes
 * that layout (edgellm_gemm_kernel.group_bytes per token and 16-block group). Kernels
 * without one read the rows (xq).
 */
#ifndef EDGELLM_GEMM_H
#define EDGELLM_GEMM_H

#include <stdbool.h>
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
    size_t prefetch;         /* decode: bytes ahead of the weights being read to prefetch
                              * into L2 (0 = none; edgellm_kernels_decode_prefetch). Only
                              * a hint: results never depend on it                        */
    const uint8_t *w2;       /* repacked layouts (repack.h): the second plane; else unused */
} edgellm_gemm_args;

/* Packed bytes per token and group of 16 Q8_0 activation blocks (gemm_q8_avx512.c):
 * 8 × 64 code bytes, 16 int32 offset corrections, 16 float d_x. */
#define EDGELLM_GEMM_Q8_0_XG 640

/* Token t's activation row xq (cols elements in the vec_dot_type) -> its place in the
 * packed activations at xp (tokens may be prepared in any order, by any thread). */
typedef void (*edgellm_gemm_prep_fn)(const void *xq, int64_t t, int64_t cols, uint8_t *xp);
typedef void (*edgellm_gemm_fn)(const edgellm_gemm_args *a);

/* A tile kernel as dispatch.c hands it out. */
typedef struct {
    edgellm_gemm_prep_fn prep;   /* NULL: the kernel reads the vec_dot_type rows (xq)      */
    edgellm_gemm_fn gemm;
    size_t group_bytes;          /* packed activation bytes per token and 16 blocks (prep) */
    int64_t block;               /* elements per activation block: rows are whole blocks  */
} edgellm_gemm_kernel;

/* ---- x86-64 (defined in src/kernels/x86/gemm_*.c; call only where the ISA runs) ---- */
void edgellm_gemm_prep_q4_0_avx512(const void *xq, int64_t t, int64_t cols, uint8_t *xp);
void edgellm_gemm_prep_q8_0_avx512(const void *xq, int64_t t, int64_t cols, uint8_t *xp);
void edgellm_gemm_q4_0_avx512(const edgellm_gemm_args *a);
void edgellm_gemm_q8_0_avx512(const edgellm_gemm_args *a);
/* Q4_K / Q5_K / Q6_K × Q8_K: no prep (they read the Q8_K rows), the vec_dot's arithmetic. */
void edgellm_gemm_q4_K_avx512(const edgellm_gemm_args *a);
void edgellm_gemm_q5_K_avx512(const edgellm_gemm_args *a);
void edgellm_gemm_q6_K_avx512(const edgellm_gemm_args *a);
/* The same with GFNI (gemm_k_avx512_gfni.c; call only where edgellm_cpu_get_features()->gfni):
 * equal results bit for bit. */
void edgellm_gemm_q4_K_avx512_gfni(const edgellm_gemm_args *a);
void edgellm_gemm_q5_K_avx512_gfni(const edgellm_gemm_args *a);
void edgellm_gemm_q6_K_avx512_gfni(const edgellm_gemm_args *a);
/* Q4_K / Q6_K in the load-time layouts q4_K_x16 / q6_K_x16 (repack.h; gemm_k_avx512_body.h):
 * w = the blocks, rows [r0, r1); equal bit for bit to edgellm_gemm_q4_K_avx512 /
 * edgellm_gemm_q6_K_avx512 on the plain rows. */
void edgellm_gemm_q4_K_x16_avx512(const edgellm_gemm_args *a);
void edgellm_gemm_q4_K_x16_avx512_gfni(const edgellm_gemm_args *a);
void edgellm_gemm_q6_K_x16_avx512(const edgellm_gemm_args *a);
void edgellm_gemm_q6_K_x16_avx512_gfni(const edgellm_gemm_args *a);
/* Q4_K in the layout q4_K_x16 with AMX tiles from 16 tokens (gemm_k_amx.c; call only where
 * edgellm_cpu_get_features()->amx, and only from threads of that process): equal bit for
 * bit to edgellm_gemm_q4_K_x16_avx512; fewer tokens are that kernel's (GFNI form). */
void edgellm_gemm_q4_K_x16_amx(const edgellm_gemm_args *a);
/* Widest rows `quantize --layout q4_K_r16` writes in that layout (repack.h). */
#define EDGELLM_GEMM_R16_MAX_COLS 32768
/* F16 × F32 (no prep: xq are the float activation rows), edgellm_dot_f16_avx512's arithmetic. */
void edgellm_gemm_f16_avx512(const edgellm_gemm_args *a);
void edgellm_gemm_prep_q4_0_avx2(const void *xq, int64_t t, int64_t cols, uint8_t *xp);
void edgellm_gemm_prep_q8_0_avx2(const void *xq, int64_t t, int64_t cols, uint8_t *xp);
void edgellm_gemm_q4_0_avx2(const edgellm_gemm_args *a);
void edgellm_gemm_q8_0_avx2(const edgellm_gemm_args *a);

/* ---- AArch64 (src/kernels/arm/gemm_q_dotprod.c; FEAT_DotProd): no prep (plain Q8_0
 * rows), the arithmetic of the dotprod vec_dot kernels. ---- */
void edgellm_gemm_q4_0_dotprod(const edgellm_gemm_args *a);
void edgellm_gemm_q8_0_dotprod(const edgellm_gemm_args *a);
/* Q4_K / Q6_K × Q8_K (src/kernels/arm/gemm_k_*.c): no prep (Q8_K rows), the arithmetic of
 * the vec_dot kernels of the same suffix; _neon on any AArch64, _dotprod with FEAT_DotProd. */
void edgellm_gemm_q4_K_neon(const edgellm_gemm_args *a);
void edgellm_gemm_q6_K_neon(const edgellm_gemm_args *a);
void edgellm_gemm_q4_K_dotprod(const edgellm_gemm_args *a);
void edgellm_gemm_q6_K_dotprod(const edgellm_gemm_args *a);

#endif
