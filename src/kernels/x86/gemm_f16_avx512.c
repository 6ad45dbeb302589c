/*
 * gemm_f16_avx512.c — tile kernel for F16 weights × F32 activations (AVX-512 F/BW/VL).
 *
 * Promises the arithmetic of edgellm_dot_f16_avx512 (dot_f16_avx512.c) for every output,
 * whatever n: per (row, token) four 16-lane FMA accumulators over elements 64k..64k+63
 * (acc j: 64k+16j..+15), a remaining whole 16 into acc 0, the last cols % 16 into acc 1
 * by a masked load, then (acc0+acc1)+(acc2+acc3) and x86_hsum16. The float product of a
 * converted half and an activation is exact to round-to-nearest alike in both, and each
 * accumulator receives its terms in the same order, so prefill, speculative verification
 * (k+1 tokens) and decode (1 token, which calls the vec_dot itself) agree bit for bit.
 *
 * Why a tile: the vec_dot loop reads a row once from memory but converts it and loads it
 * again for every token (one F16C convert and one weight load per FMA, the activations of
 * every token streamed through L1 for every row). Here a register tile of 4 rows × 6
 * tokens computes its outputs' four accumulators one pass after the other (24 live
 * accumulators, 4 converts and 6 activation loads per 24 FMAs); the rows stay in L1
 * between the passes. While a tile computes, it prefetches the next 4 rows, one row per
 * pass, so memory reads overlap the FMAs (measured +25 % at 5 tokens). Tokens are taken in
 * blocks whose activations stay in L2 (~256 KiB); the tails are 1-row and 1..5-token
 * tiles of the same arithmetic. Alternatives measured on Zen 5 (GFMA/s, 5 tokens, 23 MB
 * matrix): this 1.9-2.5; one row × 5 tokens with all four accumulators live 1.3-2.1 (the
 * activations reread from L2 per row); 2 rows × 3 tokens 1.5-1.9. A 5-token pass of a
 * tinyllama-shape F16 model costs ~2.2 one-token passes at 1 thread (vec_dot loop: 3.1-4.0).
 */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include "../gemm.h"
#include "avx512_util.h"
#include "kernels_x86.h"

#define ACT_BLOCK_BYTES (256 * 1024)
#define TR 4                              /* rows of a register tile   */
#define TT 6                              /* tokens of a register tile */
#define PF_GROUPS 1

static inline __m512 ld_h(const uint16_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
static inline __m512 ld_h_mask(const uint16_t *p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }

/* R rows (w[0..R)) × T tokens (x[0..T)), cols elements: y[t][r] via ldy. R, T are
 * compile-time constants at every call (the loops unroll into registers). The four
 * accumulators of an output are computed one after the other (pass j sums the chunks
 * 64k+16j, as acc j of the vec_dot does), so a pass holds one accumulator per output:
 * 4 × 6 of them, fed by 4 converted weight chunks and 6 activation loads per 24 FMAs.
 * pf > 0: pass j prefetches row j's columns pf bytes further on (the next TR rows, spread
 * over the four passes so that the loads stay in flight while the passes compute). */
static inline __attribute__((always_inline)) void tile(int R, int T, const uint16_t *const *w,
                                                       const float *const *x, int64_t cols, float *y, int64_t ldy,
                                                       ptrdiff_t pf)
{
    __m512 part[4][TR][TT];
    const int64_t full = cols / 64 * 64;
    for (int j = 0; j < 4; j++) {
        __m512 acc[TR][TT];
        for (int r = 0; r < R; r++)
            for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
        for (int64_t i = 16 * j; i < full; i += 64) {
            if (pf) {                     /* pass j: the next rows' row j, spread evenly */
                const char *p = (const char *)(w[j % R] + i - 16 * j) + pf;
                _mm_prefetch(p, _MM_HINT_T0);
                _mm_prefetch(p + 64, _MM_HINT_T0);
            }
            __m512 wv[TR];
            for (int r = 0; r < R; r++) wv[r] = ld_h(w[r] + i);
            for (int t = 0; t < T; t++) {
                const __m512 xv = _mm512_loadu_ps(x[t] + i);
                for (int r = 0; r < R; r++) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
            }
        }
        int64_t i = full;
        for (; i + 16 <= cols; i += 16)   /* whole 16s left: acc 0 */
            if (j == 0) {
                __m512 wv[TR];
                for (int r = 0; r < R; r++) wv[r] = ld_h(w[r] + i);
                for (int t = 0; t < T; t++) {
                    const __m512 xv = _mm512_loadu_ps(x[t] + i);
                    for (int r = 0; r < R; r++) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
                }
            }
        if (j == 1 && i < cols) {         /* the last cols % 16: acc 1 */
            const __mmask16 m = (__mmask16)((1u << (cols - i)) - 1);
            __m512 wv[TR];
            for (int r = 0; r < R; r++) wv[r] = ld_h_mask(w[r] + i, m);
            for (int t = 0; t < T; t++) {
                const __m512 xv = _mm512_maskz_loadu_ps(m, x[t] + i);
                for (int r = 0; r < R; r++) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
            }
        }
        for (int r = 0; r < R; r++)
            for (int t = 0; t < T; t++) part[j][r][t] = acc[r][t];
    }
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++)
            y[t * ldy + r] = x86_hsum16(_mm512_add_ps(_mm512_add_ps(part[0][r][t], part[1][r][t]),
                                                      _mm512_add_ps(part[2][r][t], part[3][r][t])));
}

/* R rows at w × tokens [t0, t1): tiles of TT tokens, then one of the T left. */
#define ROW_TILES(R)                                                                                            \
    do {                                                                                                        \
        int64_t t = t0;                                                                                         \
        for (; t + TT <= t1; t += TT) {                                                                         \
            const float *x[TT];                                                                                 \
            for (int k = 0; k < TT; k++) x[k] = xb + (t + k) * xs;                                              \
            tile(R, TT, w, x, a->cols, y + t * a->ldy, a->ldy, t == t0 ? pf : 0);                               \
        }                                                                                                       \
        if (t == t1) break;                                                                                     \
        const float *x[TT];                                                                                     \
        for (int k = 0; k < TT; k++) x[k] = xb + (t + (t + k < t1 ? k : 0)) * xs;                                \
        float *yt = y + t * a->ldy;                                                                             \
        const ptrdiff_t p = t == t0 ? pf : 0;                                                                   \
        switch (t1 - t) {                                                                                       \
        case 5: tile(R, 5, w, x, a->cols, yt, a->ldy, p); break;                                                \
        case 4: tile(R, 4, w, x, a->cols, yt, a->ldy, p); break;                                                \
        case 3: tile(R, 3, w, x, a->cols, yt, a->ldy, p); break;                                                \
        case 2: tile(R, 2, w, x, a->cols, yt, a->ldy, p); break;                                                \
        case 1: tile(R, 1, w, x, a->cols, yt, a->ldy, p); break;                                                \
        default: break;                                                                                         \
        }                                                                                                       \
    } while (0)

/* Rows [r0, r1) × tokens [t0, t1): TR-row tiles, then single rows. */
static void rows_tokens(const edgellm_gemm_args *a, int64_t t0, int64_t t1)
{
    const float *xb = (const float *)(const void *)a->xq;
    const int64_t xs = (int64_t)(a->xq_row_bytes / sizeof(float));
    int64_t r = a->r0;
    for (; r + TR <= a->r1; r += TR) {
        const uint16_t *w[TR];
        for (int k = 0; k < TR; k++) w[k] = (const uint16_t *)(const void *)(a->w + (size_t)(r + k) * a->row_bytes);
        float *y = a->y + r;
        /* the first token tile of these rows brings the next rows' lines in */
        const ptrdiff_t pf = r + (PF_GROUPS + 1) * TR <= a->r1 ? (ptrdiff_t)(PF_GROUPS * TR * a->row_bytes) : 0;
        ROW_TILES(TR);
    }
    for (; r < a->r1; r++) {
        const uint16_t *w[TR] = {(const uint16_t *)(const void *)(a->w + (size_t)r * a->row_bytes)};
        float *y = a->y + r;
        const ptrdiff_t pf = 0;
        ROW_TILES(1);
    }
}

void edgellm_gemm_f16_avx512(const edgellm_gemm_args *a)
{
    if (a->n == 1) {                      /* decode: the vec_dot itself, row after row */
        for (int64_t r = a->r0; r < a->r1; r++)
            a->y[r] = edgellm_dot_f16_avx512(a->cols, a->w + (size_t)r * a->row_bytes, a->xq);
        return;
    }
    const size_t per_token = a->xq_row_bytes ? a->xq_row_bytes : 1;
    int64_t tb = (int64_t)(ACT_BLOCK_BYTES / per_token);
    tb = tb < TT ? TT : tb / TT * TT;     /* whole tiles per block */
    for (int64_t t0 = 0; t0 < a->n; t0 += tb) rows_tokens(a, t0, t0 + tb < a->n ? t0 + tb : a->n);
}
#endif
