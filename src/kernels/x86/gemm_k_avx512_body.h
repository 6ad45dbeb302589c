/*
 * gemm_k_avx512_body.h — tile kernels for Q4_K, Q5_K and Q6_K weights × Q8_K activations,
 * AVX-512 + VNNI (contract in ../gemm.h; block layouts in blocks.h), written once and compiled
 * twice: by gemm_k_avx512.c (edgellm_gemm_q4_K_avx512, _q5_K_, _q6_K_) and, with
 * X86_K_GFNI defined, by gemm_k_avx512_gfni.c (the same names with _gfni).
 *
 * Arithmetic: k_avx512.h's, the very steps of the vec_dot kernels of dot_q4_K_q6_K_avx512.c,
 * for every (row, token): 16 float lanes per (row, token), summed by the fixed tree of
 * x86_hsum16. Only the loop changes:
 *   - decode (n = 1): rows one after another (one sequential stream, as the hardware
 *     prefetchers like it: two rows interleaved super-block by super-block ran 2.5x
 *     slower from DRAM on the Zen 5 dev machine), the lanes of 16 rows reduced at once by
 *     gemm_hsum16x16 (the same tree as x86_hsum16, bit for bit);
 *   - prefill and a few tokens: 1 row × 4 tokens, so each weight super-block is unpacked
 *     once for 4 tokens whose accumulators stay in registers; the last 1-3 tokens in one
 *     tile of that many (B = 2 or 3 sequences decoding together: one unpack, not 2-3).
 *     Rows in groups of 16, each 4-token tile over the group's rows before the next tile:
 *     the tile's activations (4 × 292 bytes per super-block) stay in L1 across 16 rows and
 *     the group's weights in L2, where walking every tile of one row before the next row
 *     streamed all n tokens' activations from L2 per row (0.73-0.79x the kernel time for
 *     Q4_K and Q6_K at 2048-11008 columns, 64 tokens, on the Zen 5 dev VM).
 * Activations are the plain Q8_K rows (no packing). Results equal
 * edgellm_dot_q4_K_q8_K_avx512 / _q5_K_ / _q6_K_ bit for bit whatever n
 * (tests/test_gemm.c compares with those).
 * With GFNI (X86_K_GFNI) the codes are unpacked by GF2P8AFFINEQB (k_avx512.h): the same
 * integers, so the same results bit for bit, in fewer vector instructions.
 */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__)
#include "../gemm.h"
#include "kernels_x86.h"
#include "gemm_avx512.h"
#include "k_avx512.h"

#define TC 4                     /* tokens per prefill tile */

/* One Q4_K / Q5_K / Q6_K kernel: row tile function, block type. */
#define K_GEMM(name, block, tile_fn)                                                                   \
    void name(const edgellm_gemm_args *a)                                                              \
    {                                                                                                  \
        const int64_t nb = a->cols / EDGELLM_QK_K;                                                     \
        if (a->n == 1) {                                                                               \
            const edgellm_block_q8_K *x[1] = {(const edgellm_block_q8_K *)a->xq};                      \
            for (int64_t r0 = a->r0; r0 < a->r1; r0 += 16) {                                           \
                const int64_t m = a->r1 - r0 < 16 ? a->r1 - r0 : 16;                                 \
                __m512 v[16];                                                                          \
                for (int64_t k = 0; k < 16; k++) {                                                     \
                    if (k < m) tile_fn((const block *)(a->w + (size_t)(r0 + k) * a->row_bytes), x, nb, 1, &v[k], a->prefetch); \
                    else v[k] = _mm512_setzero_ps();                                                   \
                }                                                                                      \
                gemm_hsum16x16_store(v, a->y + r0, (int)m);                                            \
            }                                                                                          \
            return;                                                                                    \
        }                                                                                              \
        for (int64_t g0 = a->r0; g0 < a->r1; g0 += 16) {                                               \
            const int64_t g1 = a->r1 - g0 < 16 ? a->r1 : g0 + 16;                                      \
            const edgellm_block_q8_K *x[TC];                                                           \
            __m512 v[TC];                                                                              \
            int64_t t = 0;                                                                             \
            for (; t + TC <= a->n; t += TC) {                                                          \
                for (int c = 0; c < TC; c++)                                                           \
                    x[c] = (const edgellm_block_q8_K *)(a->xq + (size_t)(t + c) * a->xq_row_bytes);    \
                for (int64_t r = g0; r < g1; r++) {                                                    \
                    tile_fn((const block *)(a->w + (size_t)r * a->row_bytes), x, nb, TC, v, 0);        \
                    for (int c = 0; c < TC; c++) a->y[(t + c) * a->ldy + r] = x86_hsum16(v[c]);        \
                }                                                                                      \
            }                                                                                          \
            const int rest = (int)(a->n - t);                   /* 0-3 tokens: one more tile */  \
            for (int c = 0; c < rest; c++)                                                             \
                x[c] = (const edgellm_block_q8_K *)(a->xq + (size_t)(t + c) * a->xq_row_bytes);        \
            for (int64_t r = g0; r < g1 && rest; r++) {                                                \
                const block *w = (const block *)(a->w + (size_t)r * a->row_bytes);                    \
                if (rest == 3) tile_fn(w, x, nb, 3, v, 0);                                             \
                else if (rest == 2) tile_fn(w, x, nb, 2, v, 0);                                        \
                else tile_fn(w, x, nb, 1, v, 0);                                                       \
                for (int c = 0; c < rest; c++) a->y[(t + c) * a->ldy + r] = x86_hsum16(v[c]);          \
            }                                                                                          \
        }                                                                                              \
    }

/* gemm_k_avx512_gfni.c defines X86_K_GFNI: names get _gfni. */
#ifdef X86_K_GFNI
#define K_NAME(f) f##_gfni
#else
#define K_NAME(f) f
#endif
K_GEMM(K_NAME(edgellm_gemm_q4_K_avx512), edgellm_block_q4_K, x86_q4_K_tile)
K_GEMM(K_NAME(edgellm_gemm_q5_K_avx512), edgellm_block_q5_K, x86_q5_K_tile)
K_GEMM(K_NAME(edgellm_gemm_q6_K_avx512), edgellm_block_q6_K, x86_q6_K_tile)
#endif
