/*
 * gemm_k_avx512_body.h — tile kernels for Q4_K, Q5_K and Q6_K weights × Q8_K activations,
 * AVX-512 + VNNI (contract in ../gemm.h; block layouts in blocks.h), written once and compiled
 * twice: by gemm_k_avx512.c (edgellm_gemm_q4_K_avx512, _q5_K_, _q6_K_) and, with
 * X86_K_GFNI defined, by gemm_k_avx512_gfni.c (the same names with _gfni).
 *
 * Arithmetic: k_avx512.h's, the very steps of the vec_dot kernels of dot_q4_K_q6_K_avx512.c,
 * for every (row, token): Q5_K 16 float lanes per (row, token), summed by the fixed tree
 * of x86_hsum16; Q4_K and Q6_K one float chain per (row, token) over exact per super-block
 * integers (their loops below: k_small, the x16 blocks built per group, the layout
 * kernels). Only the loop changes (Q5_K):
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
#include "../repack.h"
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

/* Q4_K (k_avx512.h's float chain per row and token): fewer than Q4K_X16_MIN tokens by the
 * row form, rows one after another (decode streams them in order); more in the rows-as-lanes
 * form, per group of 16 rows and piece of at most Q4K_KB super-blocks: the piece is
 * transposed once (x86_q4_K_x16_build, 3200 bytes per super-block, on the stack) and every
 * tile of 4 tokens (the last 1-3 in one tile) runs over it, its chains carried in y between
 * pieces (masked to the rows [r0, r1)). */
#define Q4K_X16_MIN 4
#define Q4K_KB 8
/* Q6_K in place: the same, in pieces of at most Q6K_KB super-blocks (x86_q6_K_x16_build,
 * 4160 bytes each). */
#define Q6K_KB 6
/* The in-place Q4_K / Q6_K kernels (six = 0 / 1) from 4 tokens: TILES(name, x16 type, tile
 * function) makes one 4-token tile's continuation of the chains over a piece of built blocks;
 * K_X16_GEMM(name, block, x16 type, KB, build, tiles, six) the kernel: below 4 tokens
 * k_small (n <= 0: nothing), else per group of 16 rows (a partial group repeats its first
 * row) and piece of at most KB super-blocks the blocks built on the stack and every tile of
 * 4 tokens (the last 1-3 in one tile) over them. */
#define K_X16_TILES(name, x16, tile_fn)                                                                \
    static inline __attribute__((always_inline)) void name(const edgellm_gemm_args *a, const x16 *B,   \
                                                           int64_t i0, int64_t nk, int64_t g0,         \
                                                           __mmask16 live, int64_t t, const int C)     \
    {                                                                                                  \
        const edgellm_block_q8_K *x[X86_K_MAX_C];                                                      \
        __m512 y[X86_K_MAX_C];                                                                         \
        for (int c = 0; c < C; c++) {                                                                  \
            x[c] = (const edgellm_block_q8_K *)(a->xq + (size_t)(t + c) * a->xq_row_bytes) + i0;      \
            y[c] = i0 ? _mm512_maskz_loadu_ps(live, a->y + (t + c) * a->ldy + g0) : _mm512_setzero_ps(); \
        }                                                                                              \
        tile_fn(B, nk, x, C, y);                                                                       \
        for (int c = 0; c < C; c++) _mm512_mask_storeu_ps(a->y + (t + c) * a->ldy + g0, live, y[c]);   \
    }
#define K_X16_GEMM(name, block, x16, KB, build_fn, tiles, six)                                        \
    void name(const edgellm_gemm_args *a)                                                              \
    {                                                                                                  \
        const int64_t nb = a->cols / EDGELLM_QK_K;                                                     \
        if (a->n < Q4K_X16_MIN) {                                                                      \
            if (a->n == 1) k_small(a, nb, 1, six);                                                     \
            else if (a->n == 2) k_small(a, nb, 2, six);                                                \
            else if (a->n == 3) k_small(a, nb, 3, six);                                                \
            return;                                                                                    \
        }                                                                                              \
        x16 B[KB] __attribute__((aligned(64)));                                                        \
        for (int64_t g0 = a->r0; g0 < a->r1; g0 += 16) {                                               \
            const int m = a->r1 - g0 < 16 ? (int)(a->r1 - g0) : 16;                                    \
            const __mmask16 live = (__mmask16)((1u << m) - 1);                                         \
            const block *w[16];                                                                        \
            for (int k = 0; k < 16; k++)                                                               \
                w[k] = (const block *)(a->w + (size_t)(g0 + (k < m ? k : 0)) * a->row_bytes);          \
            for (int64_t i0 = 0; i0 < nb; i0 += KB) {                                                  \
                const int64_t nk = nb - i0 < KB ? nb - i0 : KB;                                        \
                for (int64_t k = 0; k < nk; k++) build_fn(w, i0 + k, &B[k]);                           \
                int64_t t = 0;                                                                         \
                for (; t + 4 <= a->n; t += 4) tiles(a, B, i0, nk, g0, live, t, 4);                     \
                const int64_t rest = a->n - t;                                                         \
                if (rest == 3) tiles(a, B, i0, nk, g0, live, t, 3);                                    \
                else if (rest == 2) tiles(a, B, i0, nk, g0, live, t, 2);                               \
                else if (rest == 1) tiles(a, B, i0, nk, g0, live, t, 1);                               \
            }                                                                                          \
        }                                                                                              \
    }
K_X16_TILES(q4_K_x16_tiles, x86_q4_K_x16, x86_q4_K_x16_tile)
K_X16_TILES(q6_K_x16_tiles, x86_q6_K_x16, x86_q6_K_x16_tile)

/* Q4_K (six = 0) and Q6_K (six = 1) decode and 2-3 tokens: rows one after another (one
 * stream), each row's super-blocks by the chunk steps (x86_q4_K_sb / x86_q6_K_sb); their lanes
 * summed 16 super-blocks at a time (x86_reduce16) into tables [row][super-block] of the
 * group's 16 rows (S per token, Q4_K also M; d, Q4_K also dmin), in pieces of at most K_SP
 * super-blocks; then the float chains with rows as lanes, the tables transposed 16
 * super-blocks at a time, carried in y from piece to piece. */
#define K_SP 64
static inline __attribute__((always_inline)) void k_small(const edgellm_gemm_args *a, int64_t nb, const int C,
                                                          const int six)
{
    int32_t ST[X86_K_MAX_C - 1][16][K_SP] __attribute__((aligned(64)));
    int32_t MT[X86_K_MAX_C - 1][16][K_SP] __attribute__((aligned(64)));
    float DT[16][K_SP] __attribute__((aligned(64))), MDT[16][K_SP] __attribute__((aligned(64)));
    const edgellm_block_q8_K *x[X86_K_MAX_C];
    for (int c = 0; c < C; c++) x[c] = (const edgellm_block_q8_K *)(a->xq + (size_t)c * a->xq_row_bytes);
    for (int64_t g0 = a->r0; g0 < a->r1; g0 += 16) {
        const int m = a->r1 - g0 < 16 ? (int)(a->r1 - g0) : 16;
        const __mmask16 live = (__mmask16)((1u << m) - 1);
        for (int64_t i0 = 0; i0 < nb; i0 += K_SP) {
            const int np = nb - i0 < K_SP ? (int)(nb - i0) : K_SP;
            const int npp = (np + 15) / 16 * 16;
            for (int k = 0; k < 16; k++) {
                if (k >= m) {                              /* rows past the range: zeros */
                    for (int c = 0; c < C; c++) {
                        memset(ST[c][k], 0, sizeof ST[c][k]);
                        if (!six) memset(MT[c][k], 0, sizeof MT[c][k]);
                    }
                    memset(DT[k], 0, sizeof DT[k]);
                    if (!six) memset(MDT[k], 0, sizeof MDT[k]);
                    continue;
                }
                const uint8_t *row = a->w + (size_t)(g0 + k) * a->row_bytes;
                for (int j0 = 0; j0 < npp; j0 += 16) {
                    __m512i sv[X86_K_MAX_C - 1][16], mv[X86_K_MAX_C - 1][16];
                    for (int j = 0; j < 16; j++) {
                        const int64_t i = i0 + j0 + j;
                        __m512i S[X86_K_MAX_C], M[X86_K_MAX_C];
                        if (j0 + j >= np) {
                            for (int c = 0; c < C; c++) S[c] = M[c] = _mm512_setzero_si512();
                            DT[k][j0 + j] = MDT[k][j0 + j] = 0.0f;
                        } else if (six) {
                            const edgellm_block_q6_K *w = (const edgellm_block_q6_K *)row + i;
                            x86_prefetch_l2(w, C == 1 ? a->prefetch : 0, sizeof *w);
                            x86_q6_K_sb(w, x, i, C, S);
                            DT[k][j0 + j] = x86_h2f(w->d);
                        } else {
                            const edgellm_block_q4_K *w = (const edgellm_block_q4_K *)row + i;
                            x86_prefetch_l2(w, C == 1 ? a->prefetch : 0, sizeof *w);
                            x86_q4_K_sb(w, x, i, C, S, M);
                            DT[k][j0 + j] = _cvtsh_ss(w->d);
                            MDT[k][j0 + j] = _cvtsh_ss(w->dmin);
                        }
                        for (int c = 0; c < C; c++) {
                            sv[c][j] = S[c];
                            if (!six) mv[c][j] = M[c];
                        }
                    }
                    for (int c = 0; c < C; c++) {
                        _mm512_store_si512((void *)&ST[c][k][j0], x86_reduce16(sv[c]));
                        if (!six) _mm512_store_si512((void *)&MT[c][k][j0], x86_reduce16(mv[c]));
                    }
                }
            }
            /* float chains, rows as lanes */
            __m512 y[X86_K_MAX_C];
            for (int c = 0; c < C; c++)
                y[c] = i0 ? _mm512_maskz_loadu_ps(live, a->y + c * a->ldy + g0) : _mm512_setzero_ps();
            for (int j0 = 0; j0 < np; j0 += 16) {
                __m512i dv[16], mdv[16];
                for (int k = 0; k < 16; k++) {
                    dv[k] = _mm512_load_si512((const void *)&DT[k][j0]);
                    if (!six) mdv[k] = _mm512_load_si512((const void *)&MDT[k][j0]);
                }
                x86_transpose16x16(dv);
                if (!six) x86_transpose16x16(mdv);
                for (int c = 0; c < C; c++) {
                    __m512i sv[16], mv[16];
                    for (int k = 0; k < 16; k++) {
                        sv[k] = _mm512_load_si512((const void *)&ST[c][k][j0]);
                        if (!six) mv[k] = _mm512_load_si512((const void *)&MT[c][k][j0]);
                    }
                    x86_transpose16x16(sv);
                    if (!six) x86_transpose16x16(mv);
                    const int nj = np - j0 < 16 ? np - j0 : 16;
                    for (int j = 0; j < nj; j++) {
                        const __m512 dx = _mm512_set1_ps(x[c][i0 + j0 + j].d);
                        y[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sv[j]), _mm512_mul_ps(_mm512_castsi512_ps(dv[j]), dx), y[c]);
                        if (!six)
                            y[c] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(mv[j]), _mm512_mul_ps(_mm512_castsi512_ps(mdv[j]), dx), y[c]);
                    }
                }
            }
            for (int c = 0; c < C; c++) _mm512_mask_storeu_ps(a->y + c * a->ldy + g0, live, y[c]);
        }
    }
}

K_X16_GEMM(K_NAME(edgellm_gemm_q4_K_avx512), edgellm_block_q4_K, x86_q4_K_x16, Q4K_KB, x86_q4_K_x16_build,
           q4_K_x16_tiles, 0)
K_X16_GEMM(K_NAME(edgellm_gemm_q6_K_avx512), edgellm_block_q6_K, x86_q6_K_x16, Q6K_KB, x86_q6_K_x16_build,
           q6_K_x16_tiles, 1)
K_GEMM(K_NAME(edgellm_gemm_q5_K_avx512), edgellm_block_q5_K, x86_q5_K_tile)

/* Q4_K in the layout q4_K_x16 (repack.h): per 16-row group, per tile of 4 tokens (the last
 * 1-3 in one tile; decode: one token), each block's head unpacked to 16 lanes and
 * x86_q4_K_x16_step over its codes as they lie; the rows outside [r0, r1) masked. */
static inline __attribute__((always_inline)) void q4_K_x16_layout_tile(const edgellm_gemm_args *a, int64_t nb,
                                                                       int64_t g, __mmask16 live, int64_t t,
                                                                       const int C)
{
    const edgellm_block_q8_K *x[X86_K_MAX_C];
    __m512 acc[X86_K_MAX_C];
    for (int c = 0; c < C; c++) {
        x[c] = (const edgellm_block_q8_K *)(a->xq + (size_t)(t + c) * a->xq_row_bytes);
        acc[c] = _mm512_setzero_ps();
    }
    const uint8_t *blk = a->w + (size_t)g * (size_t)nb * EDGELLM_X16_BLOCK;
    for (int64_t i = 0; i < nb; i++, blk += EDGELLM_X16_BLOCK) {
        x86_prefetch_l2(blk, C == 1 ? a->prefetch : 0, EDGELLM_X16_BLOCK);
        __m512 d, dmin;
        __m512i sc[8], mp[8];
        x86_q4_K_x16_head(blk, &d, &dmin, sc, mp);
        const edgellm_block_q8_K *xi[X86_K_MAX_C];
        for (int c = 0; c < C; c++) xi[c] = x[c] + i;
        x86_q4_K_x16_step((const __m512i *)(blk + EDGELLM_X16_CODES), sc, mp, d, dmin, xi, 0, C, acc);
    }
    for (int c = 0; c < C; c++) _mm512_mask_storeu_ps(a->y + (t + c) * a->ldy + 16 * g, live, acc[c]);
}


/* Q6_K in the layout q6_K_x16 (repack.h): as Q4_K's, each block's 16 scale lines
 * sign-extended to 16 lanes and x86_q6_K_x16_step over its code lines as they lie. */
static inline __attribute__((always_inline)) void q6_K_x16_layout_tile(const edgellm_gemm_args *a, int64_t nb,
                                                                       int64_t g, __mmask16 live, int64_t t,
                                                                       const int C)
{
    const edgellm_block_q8_K *x[X86_K_MAX_C];
    __m512 acc[X86_K_MAX_C];
    for (int c = 0; c < C; c++) {
        x[c] = (const edgellm_block_q8_K *)(a->xq + (size_t)(t + c) * a->xq_row_bytes);
        acc[c] = _mm512_setzero_ps();
    }
    const uint8_t *blk = a->w + (size_t)g * (size_t)nb * EDGELLM_Q6X16_BLOCK;
    for (int64_t i = 0; i < nb; i++, blk += EDGELLM_Q6X16_BLOCK) {
        x86_prefetch_l2(blk, C == 1 ? a->prefetch : 0, EDGELLM_Q6X16_BLOCK);
        const __m512 d = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(blk + EDGELLM_Q6X16_D)));
        __m512i sc[16];
        for (int j = 0; j < 16; j++)
            sc[j] = _mm512_cvtepi8_epi32(_mm_load_si128((const __m128i *)(blk + EDGELLM_Q6X16_SCALES + 16 * j)));
        const edgellm_block_q8_K *xi[X86_K_MAX_C];
        for (int c = 0; c < C; c++) xi[c] = x[c] + i;
        x86_q6_K_x16_step((const __m512i *)(blk + EDGELLM_Q6X16_QL), (const __m512i *)(blk + EDGELLM_Q6X16_QH), sc, d,
                          xi, 0, C, acc);
    }
    for (int c = 0; c < C; c++) _mm512_mask_storeu_ps(a->y + (t + c) * a->ldy + 16 * g, live, acc[c]);
}

/* A layout kernel (q4_K_x16, q6_K_x16): per 16-row group, the rows outside [r0, r1) masked,
 * tiles of 4 tokens and the last 1-3 in one tile (decode: one token). */
#define K_X16_LAYOUT(name, tile_fn)                                                                    \
    void name(const edgellm_gemm_args *a)                                                              \
    {                                                                                                  \
        const int64_t nb = a->cols / EDGELLM_QK_K;                                                     \
        for (int64_t g = a->r0 / 16; g * 16 < a->r1; g++) {                                            \
            const int64_t lo = g * 16 > a->r0 ? g * 16 : a->r0, hi = g * 16 + 16 < a->r1 ? g * 16 + 16 : a->r1; \
            const __mmask16 live = (__mmask16)(((1u << (hi - 16 * g)) - 1) & ~((1u << (lo - 16 * g)) - 1)); \
            int64_t t = 0;                                                                             \
            for (; t + 4 <= a->n; t += 4) tile_fn(a, nb, g, live, t, 4);                               \
            const int64_t rest = a->n - t;                                                             \
            if (rest == 3) tile_fn(a, nb, g, live, t, 3);                                              \
            else if (rest == 2) tile_fn(a, nb, g, live, t, 2);                                         \
            else if (rest == 1) tile_fn(a, nb, g, live, t, 1);                                         \
        }                                                                                              \
    }
K_X16_LAYOUT(K_NAME(edgellm_gemm_q4_K_x16_avx512), q4_K_x16_layout_tile)
K_X16_LAYOUT(K_NAME(edgellm_gemm_q6_K_x16_avx512), q6_K_x16_layout_tile)
#endif
