/*
 * gemm_q8_avx2.c — tile kernels for Q4_0 and Q8_0 weights × Q8_0 activations, AVX2+FMA+F16C
 * (the fallback of gemm_q8_avx512.c for CPUs without AVX-512 VNNI; contract in ../gemm.h).
 *
 * Arithmetic: as gemm_q8_avx512.c with 8 blocks per group (one 256-bit lane per block):
 *
 *     acc = +0 (8 lanes)
 *     for each group g of 8 blocks (the last padded with zero blocks), in order:
 *         s   = Σ_k u·x over the block (exact int32, see below) + corr_x (= -o·Σx)
 *         acc = fma(float(s), d_w · d_x, acc)
 *     y[t][r] = x86_hsum8(acc)
 *
 * Lane p holds block perm8(p) = 2(p%4) + p/4 of the group (the order an 8×4-dword transpose
 * by unpack instructions leaves the blocks in). Integer sums without VNNI:
 *   Q4_0  u = nibble 0..15: VPMADDUBSW(u, x) pairs are <= 2·15·128 = 3840, so the int16
 *         sums over the 8 dword steps stay <= 30720 (no saturation); one VPMADDWD by 1
 *         widens them.
 *   Q8_0  u = w+128 = 16·hi + lo (hi, lo nibbles): two such int16 sums, widened by 16 and 1.
 * Both exact for every code, -128 included. Decode (n = 1), a few tokens (2..8) and prefill
 * run the same steps per (row, token), so they are bit-identical; tests/test_gemm.c checks
 * against a model.
 *
 * A few tokens (several sequences decoding together) each group is packed once in
 * registers and stepped for every token; the prefill tiles (2 rows packed into an L1 buffer,
 * tokens in pairs) cost more at such n. A 512 × 2048 L2-resident matrix on 1 thread of a
 * Zen 5 (thread CPU time, best of 1000, old and new in one process): Q4_0 at n = 2 / 4 / 8
 * 38.3 / 59.6 / 112.7 µs with the tiles, 30.7 / 49.6 / 92.1 with this (n = 1: 21.4); Q8_0
 * 87.5 / 124.1 / 203.4 and 79.7 / 125.9 / 206.3 (n = 1: 46.5).
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "../gemm.h"
#include "avx2_util.h"
#include <stdbool.h>
#include <string.h>
#include "../../tensor/blocks.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define XG8 (EDGELLM_GEMM_Q8_0_XG / 2)  /* packed activation bytes per token and 8 blocks */
#define TR 2                     /* rows per prefill tile                                  */
#define TC 2                     /* tokens per prefill tile                                */
#define KG 32                    /* groups per packed chunk                                */
#define TN 64                    /* tokens per accumulator chunk                           */
#define SMALL_N 8                /* up to this many tokens: small_batch8                   */
#define SMALL_XBYTES (24 * 1024) /* small_batch8: activation bytes of a group chunk        */

typedef struct {
    __m256i lo[8];               /* Q4_0: codes; Q8_0: low nibbles of w+128                */
    __m256i hi[8];               /* Q8_0: high nibbles of w+128 (unused for Q4_0)           */
    __m256 d;
} packed8;

/* lane p holds block perm8(p) */
static const int32_t lane_block8[8] = {0, 2, 4, 6, 1, 3, 5, 7};

/* 16 bytes of block i, or zero when i >= m (the blocks past a row's end) */
static inline __m128i load16_or_zero(const uint8_t *base, size_t stride, int i, int m)
{
    return i < m ? _mm_loadu_si128((const __m128i *)(base + (size_t)i * stride)) : _mm_setzero_si128();
}

/* Dword k (0..3) of the 16 bytes at base + i·stride, i = 0..7: u[k] lane p = block perm8(p);
 * blocks i >= m read as zero (m = 8: a full group; m < 8: the last group of a row, nothing
 * past the row is touched). */
static inline void transpose8x4(const uint8_t *base, size_t stride, int m, __m256i u[4])
{
    __m256i z[4];
    for (int k = 0; k < 4; k++)                 /* 128-bit lane l: block 2k+l */
        z[k] = _mm256_set_m128i(load16_or_zero(base, stride, 2 * k + 1, m), load16_or_zero(base, stride, 2 * k, m));
    const __m256i t0 = _mm256_unpacklo_epi32(z[0], z[1]), t1 = _mm256_unpackhi_epi32(z[0], z[1]);
    const __m256i t2 = _mm256_unpacklo_epi32(z[2], z[3]), t3 = _mm256_unpackhi_epi32(z[2], z[3]);
    u[0] = _mm256_unpacklo_epi64(t0, t2);
    u[1] = _mm256_unpackhi_epi64(t0, t2);
    u[2] = _mm256_unpacklo_epi64(t1, t3);
    u[3] = _mm256_unpackhi_epi64(t1, t3);
}

/* The halves at base + perm8(p)·stride as floats in lane p (zero for blocks >= m). A full
 * group by 8 scalar loads and word inserts: on the Zen 5 dev machine (AVX2 level forced)
 * this made the L2-resident decode 12-25 % faster than the 8-element gather (Q8_0 22 -> 27,
 * Q4_0 24 -> 29 GB/s, bench_kernels); the partial last group keeps the masked gather. */
static inline __m256 gather_d8(const uint8_t *base, int32_t stride, int m)
{
    if (m >= 8) {
        uint16_t h[8];
        for (int p = 0; p < 8; p++) memcpy(&h[p], base + (size_t)lane_block8[p] * (size_t)stride, 2);
        __m128i v = _mm_cvtsi32_si128(h[0]);
        v = _mm_insert_epi16(v, h[1], 1);
        v = _mm_insert_epi16(v, h[2], 2);
        v = _mm_insert_epi16(v, h[3], 3);
        v = _mm_insert_epi16(v, h[4], 4);
        v = _mm_insert_epi16(v, h[5], 5);
        v = _mm_insert_epi16(v, h[6], 6);
        v = _mm_insert_epi16(v, h[7], 7);
        return _mm256_cvtph_ps(v);
    }
    const __m256i blk = _mm256_loadu_si256((const __m256i *)lane_block8);
    const __m256i idx = _mm256_mullo_epi32(blk, _mm256_set1_epi32(stride));
    const __m256i v = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int *)(const void *)base, idx,
                                                  _mm256_cmpgt_epi32(_mm256_set1_epi32(m), blk), 1);
    const __m256i w = _mm256_shuffle_epi8(v, _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1,
                                                              0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1));
    return _mm256_cvtph_ps(_mm256_castsi256_si128(_mm256_permute4x64_epi64(w, _MM_SHUFFLE(3, 1, 2, 0))));
}

static inline void pack8_q4_0(const uint8_t *base, int m, packed8 *pg)
{
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256i u[4];
    transpose8x4(base + 2, sizeof(edgellm_block_q4_0), m, u);
    for (int k = 0; k < 4; k++) {
        pg->lo[k] = _mm256_and_si256(u[k], m4);
        pg->lo[k + 4] = _mm256_and_si256(_mm256_srli_epi16(u[k], 4), m4);
    }
    pg->d = gather_d8(base, sizeof(edgellm_block_q4_0), m);
}

static inline void pack8_q8_0(const uint8_t *base, int m, packed8 *pg)
{
    const __m256i m4 = _mm256_set1_epi8(15), bias = _mm256_set1_epi8((char)0x80);
    __m256i u[4];
    for (int h = 0; h < 2; h++) {
        transpose8x4(base + 2 + 16 * h, sizeof(edgellm_block_q8_0), m, u);
        for (int k = 0; k < 4; k++) {
            const __m256i v = _mm256_xor_si256(u[k], bias);
            pg->lo[4 * h + k] = _mm256_and_si256(v, m4);
            pg->hi[4 * h + k] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        }
    }
    pg->d = gather_d8(base, sizeof(edgellm_block_q8_0), m);
}

typedef void (*pack8_fn)(const uint8_t *base, int m, packed8 *pg);

/* Group g of a row of nb blocks of bb bytes; the last one as if padded with zero blocks
 * (read in place, blocks past the row as zero: no copy into a zeroed buffer, whose stores
 * then missed store forwarding). */
static inline __attribute__((always_inline)) void pack_group8(const uint8_t *row, int64_t g, int64_t nb, size_t bb,
                                                              pack8_fn pack8, packed8 *pg)
{
    if (8 * g + 8 <= nb) pack8(row + (size_t)(8 * g) * bb, 8, pg);
    else pack8(row + (size_t)(8 * g) * bb, (int)(nb - 8 * g), pg);
}

static inline int64_t n_groups8(int64_t cols) { return (cols / EDGELLM_QK8_0 + 7) / 8; }

/* Token t's Q8_0 row -> its packed groups at xp + t·ng·XG8: X[k] (8 × 32 B), corr (8 × i32),
 * d_x (8 × f32). */
static void prep8(const void *xq, int64_t t, int64_t cols, uint8_t *xp, int sh)
{
    const int64_t nb = cols / EDGELLM_QK8_0, ng = n_groups8(cols);
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    for (int64_t g = 0; g < ng; g++) {
        packed8 pg;
        pack_group8(xq, g, nb, sizeof(edgellm_block_q8_0), pack8_q8_0, &pg);
        uint8_t *dst = xp + (size_t)(t * ng + g) * XG8;
        __m256i sum = _mm256_setzero_si256();
        for (int k = 0; k < 8; k++) {
            /* back to the s8 codes: (hi·16 + lo) XOR 0x80 */
            const __m256i u = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(pg.hi[k], m4), 4), pg.lo[k]);
            const __m256i x = _mm256_xor_si256(u, _mm256_set1_epi8((char)0x80));
            _mm256_storeu_si256((__m256i *)(dst + 32 * k), x);
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(one, x), ones16));
        }
        _mm256_storeu_si256((__m256i *)(dst + 256), _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sum, sh)));
        _mm256_storeu_ps((float *)(dst + 288), pg.d);
    }
}

void edgellm_gemm_prep_q4_0_avx2(const void *xq, int64_t t, int64_t cols, uint8_t *xp) { prep8(xq, t, cols, xp, 3); }
void edgellm_gemm_prep_q8_0_avx2(const void *xq, int64_t t, int64_t cols, uint8_t *xp) { prep8(xq, t, cols, xp, 7); }

/* Exact Σ over the group's blocks of u·x per lane, + corr. */
static inline __attribute__((always_inline)) __m256i isum8(const packed8 *pg, const uint8_t *x, bool q8)
{
    const __m256i ones16 = _mm256_set1_epi16(1);
    __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
    for (int k = 0; k < 8; k++) {
        const __m256i xv = _mm256_loadu_si256((const __m256i *)(x + 32 * k));
        lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(pg->lo[k], xv));
        if (q8) hi = _mm256_add_epi16(hi, _mm256_maddubs_epi16(pg->hi[k], xv));
    }
    __m256i s = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(x + 256)), _mm256_madd_epi16(lo, ones16));
    if (q8) s = _mm256_add_epi32(s, _mm256_madd_epi16(hi, _mm256_set1_epi16(16)));
    return s;
}

static inline __attribute__((always_inline)) __m256 step8(const packed8 *pg, const uint8_t *x, bool q8, __m256 acc)
{
    const __m256 dx = _mm256_loadu_ps((const float *)(x + 288));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum8(pg, x, q8)), _mm256_mul_ps(pg->d, dx), acc);
}

/* A few tokens (2 <= n <= SMALL_N, a constant at each call): one row at a time, each group
 * packed once in registers and stepped for every token (the prefill tiles' pack into a
 * buffer and reload cost more at such n). Groups in chunks whose activations stay in L1
 * (SMALL_XBYTES), the accumulators of 16 rows kept between chunks: groups still in order
 * for every (row, token), so the steps are decode's. */
static inline __attribute__((always_inline)) void small_batch8(const edgellm_gemm_args *a, size_t bb, pack8_fn pack8,
                                                               bool q8, const int n)
{
    const int64_t nb = a->cols / EDGELLM_QK8_0, ng = n_groups8(a->cols);
    const size_t xt = (size_t)ng * XG8;                 /* bytes of one token's packed groups */
    const int64_t gc_ = (int64_t)(SMALL_XBYTES / ((size_t)n * XG8)), gc = gc_ > 0 ? gc_ : 1;
    for (int64_t r = a->r0; r < a->r1; r += 16) {
        const int nr = (int)MIN(16, a->r1 - r);
        __m256 acc[SMALL_N][16];
        for (int64_t g0 = 0; g0 < ng; g0 += gc) {
            const int64_t g1 = MIN(g0 + gc, ng);
            for (int i = 0; i < nr; i++) {
                __m256 ai[SMALL_N];
                for (int t = 0; t < n; t++) ai[t] = g0 == 0 ? _mm256_setzero_ps() : acc[t][i];
                const uint8_t *row = a->w + (size_t)(r + i) * a->row_bytes;
                for (int64_t g = g0; g < g1; g++) {
                    packed8 pg;
                    pack_group8(row, g, nb, bb, pack8, &pg);
                    const uint8_t *x = a->xp + (size_t)g * XG8;
                    for (int t = 0; t < n; t++) ai[t] = step8(&pg, x + (size_t)t * xt, q8, ai[t]);
                }
                for (int t = 0; t < n; t++) acc[t][i] = ai[t];
            }
        }
        for (int t = 0; t < n; t++)
            for (int i = 0; i < nr; i++) a->y[t * a->ldy + r + i] = x86_hsum8(acc[t][i]);
    }
}

static inline __attribute__((always_inline)) void gemm8(const edgellm_gemm_args *a, size_t bb, pack8_fn pack8, bool q8)
{
    const int64_t nb = a->cols / EDGELLM_QK8_0, ng = n_groups8(a->cols);
    switch (a->n) {                                            /* a few tokens: batched decode */
    case 2: small_batch8(a, bb, pack8, q8, 2); return;
    case 3: small_batch8(a, bb, pack8, q8, 3); return;
    case 4: small_batch8(a, bb, pack8, q8, 4); return;
    case 5: small_batch8(a, bb, pack8, q8, 5); return;
    case 6: small_batch8(a, bb, pack8, q8, 6); return;
    case 7: small_batch8(a, bb, pack8, q8, 7); return;
    case 8: small_batch8(a, bb, pack8, q8, 8); return;
    default: break;
    }
    if (a->n == 1) {
        for (int64_t r = a->r0; r < a->r1; r++) {
            const uint8_t *row = a->w + (size_t)r * a->row_bytes;
            __m256 acc = _mm256_setzero_ps();
            for (int64_t g = 0; g < ng; g++) {
                packed8 pg;
                pack_group8(row, g, nb, bb, pack8, &pg);
                acc = step8(&pg, a->xp + (size_t)g * XG8, q8, acc);
            }
            a->y[r] = x86_hsum8(acc);
        }
        return;
    }
    packed8 pw[TR][KG];
    __m256 accm[TN][TR];                                       /* [token of chunk][row] */
    for (int64_t r = a->r0; r < a->r1; r += TR) {
        const int nr = (int)MIN(TR, a->r1 - r);
        for (int64_t t0 = 0; t0 < a->n; t0 += TN) {
            const int nt = (int)MIN(TN, a->n - t0);
            for (int j = 0; j < nt; j++)
                for (int i = 0; i < TR; i++) accm[j][i] = _mm256_setzero_ps();
            for (int64_t g0 = 0; g0 < ng; g0 += KG) {
                const int64_t ngc = MIN(KG, ng - g0);
                for (int i = 0; i < nr; i++)
                    for (int64_t g = 0; g < ngc; g++)
                        pack_group8(a->w + (size_t)(r + i) * a->row_bytes, g0 + g, nb, bb, pack8, &pw[i][g]);
                for (int j = 0; j < nt; j += TC) {
                    const int nc = MIN(TC, nt - j);
                    for (int i = 0; i < nr; i++) {
                        __m256 acc0 = accm[j][i], acc1 = nc > 1 ? accm[j + 1][i] : _mm256_setzero_ps();
                        const uint8_t *x0 = a->xp + (size_t)((t0 + j) * ng + g0) * XG8;
                        const uint8_t *x1 = x0 + (size_t)ng * XG8;
                        for (int64_t g = 0; g < ngc; g++) {
                            acc0 = step8(&pw[i][g], x0 + (size_t)g * XG8, q8, acc0);
                            if (nc > 1) acc1 = step8(&pw[i][g], x1 + (size_t)g * XG8, q8, acc1);
                        }
                        accm[j][i] = acc0;
                        if (nc > 1) accm[j + 1][i] = acc1;
                    }
                }
            }
            for (int j = 0; j < nt; j++)
                for (int i = 0; i < nr; i++) a->y[(t0 + j) * a->ldy + r + i] = x86_hsum8(accm[j][i]);
        }
    }
}

void edgellm_gemm_q4_0_avx2(const edgellm_gemm_args *a) { gemm8(a, sizeof(edgellm_block_q4_0), pack8_q4_0, false); }
void edgellm_gemm_q8_0_avx2(const edgellm_gemm_args *a) { gemm8(a, sizeof(edgellm_block_q8_0), pack8_q8_0, true); }
#endif
