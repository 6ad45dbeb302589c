/*
 * gemm_q8_avx512.c — tile kernels for Q4_0 and Q8_0 weights × Q8_0 activations,
 * AVX-512 + VNNI (contract in ../gemm.h; block layouts in blocks.h).
 *
 * Arithmetic ("16 blocks per lane group"). Blocks are taken 16 at a time (a group; the
 * last group of a row is padded with zero blocks); one 512-bit lane per block. For weight
 * row r and token t:
 *
 *     acc = +0 (16 lanes)
 *     for each group g, in order:
 *         s   = corr_x[g]                                 (lane: -o·Σx of the block)
 *         s   = VPDPBUSD(s, W[g][k], X[g][k])  k = 0..7    (lane: Σ (u-o)·x, exact)
 *         acc = fma(float(s), d_w[g] · d_x[g], acc)       (per lane)
 *     y[t][r] = x86_hsum16(acc)                           (fixed tree; computed for 16
 *                                                          accumulators at once by
 *                                                          gemm_hsum16x16, same value)
 *
 * W[g][k] lane p holds the 4 weight codes 4k..4k+3 of block 16g + perm(p) as unsigned
 * bytes u = w + o (Q4_0: the nibble q, o = 8; Q8_0: w XOR 0x80, o = 128); X[g][k] the same
 * 4 activation codes. perm(p) = 4(p%4) + p/4 is the order a 16×4-dword transpose by unpack
 * instructions leaves the blocks in; activations use the same order, so it is invisible.
 * |s| <= 32·255·128 < 2^31; d_w·d_x (two halves) is exact in float.
 *
 * Packing (pack16_*): the 16 blocks of a group of one row are read as 16 loads of 16 bytes
 * at the block stride (contiguous memory: rows stream in order, as the hardware prefetcher
 * likes; software prefetch was measured slower) and transposed with unpack instructions;
 * d_w by permutations of vector loads (d16_q8_0, d16_q4_0; a gather cost ~25-30 % of the
 * L2-resident decode time), of a partial last group by one masked gather. Activations are packed
 * the same way once per token by prep (gemm.h), with corr and d_x beside them:
 *     xp + (t·ng + g)·XG:  X[g][0..7] (8 × 64 B), corr (16 × i32), d_x (16 × f32).
 *
 * Products:
 *   - prefill: rows in tiles of 4, packed once per tile into an L1 buffer; tokens in tiles
 *     of 3: 12 accumulators + 12 integer sums in registers, each packed weight vector
 *     loaded once per token tile, each activation vector once per row tile.
 *   - decode (n = 1): the same pack and steps, one row at a time, from registers; a
 *     group's 8 VPDPBUSD as two chains of 4 and the row's accumulator in a register (it
 *     was an array slot, stored every group): 0-9 % fewer cycles for an L2-resident Q4_0
 *     matrix, old and new alternating in one process (best of 4000 calls each).
 *   - a few tokens (2 <= n <= 8: several sequences decoding together): as decode, each
 *     group packed once in registers and used for every token, the row's n accumulators
 *     in registers. The prefill tiles' pack into a buffer and reload, and their 1-token
 *     remainder tiles, cost more than the products at such n: a 512 × 2048 L2-resident
 *     Q4_0 matrix on 1 thread (best of 3000) took 34.0 / 38.7 / 59.0 µs at n = 2 / 4 / 8
 *     with the tiles, 18.4 / 28.0 / 48.3 with this (n = 1: 14-16). Groups go in chunks
 *     whose activations stay in L1 (SMALL_XBYTES): for 192 × 5632 (ffn_down of a
 *     tinyllama) at n = 8 the activations of whole rows (56 KiB) took 96 µs, chunked ~61
 *     (the tiles: 61.5; n = 4: 37.4 tiles, ~33 chunked). Q4_0 weights SMALL_PREFETCH_ROWS
 *     rows ahead are prefetched into L2: at such n the loop is compute-bound and the
 *     hardware prefetchers left the memory reads poorly overlapped (a tinyllama-shape Q4_0
 *     model's matrices, bench_gemm -n 4, 2 threads, on a loaded machine: read time / this
 *     time 0.51-0.66 with it, 0.37-0.54 without; n = 2 and 8 within the noise). Not for
 *     Q8_0: its 9 prefetches per group cost 6-18 % at n = 2-5 in one L2-resident run
 *     (noisy; Q4_0's 5: 0-6 %), and it was not measured from DRAM. Per group and token
 *     the loop is near its issue limit (8 VPDPBUSD + convert, multiply, FMA on the two
 *     pipes that take them: ~5.5 cycles of the ~6.6 measured; the pack ~17).
 * Both run exactly the steps above for every (r, t): bit-identical results.
 * Tolerance against the traits' ref (double sums): |fast - ref| <= (nb + 4)·2^-22·Σ|w·x|.
 * Measured on a 2-core Zen 5 (AVX-512 VNNI), 1 thread: decode streams the weights of a
 * tinyllama-shape Q4_0 model at ~90 % of a plain read of the same mapping; prefill of 64
 * tokens ~450 GFLOP/s on a 2048×2048 matrix (the vec_dot loop: ~45).
 */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__)
#include "../gemm.h"
#include "gemm_avx512.h"
#include "../../tensor/blocks.h"
#include <stdbool.h>

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define XG EDGELLM_GEMM_Q8_0_XG  /* bytes of one packed activation group                  */
#define TR 4                     /* rows per prefill tile                                  */
#define TC 3                     /* tokens per prefill tile                                */
#define KG 16                    /* groups per packed chunk: TR × 16 × 576 B = 36 KiB      */
#define TN 64                    /* tokens per accumulator chunk                           */
#define SMALL_N 8                /* up to this many tokens: small_batch_rows               */
#define SMALL_XBYTES (24 * 1024) /* small_batch_rows: activation bytes of a group chunk    */
#define SMALL_PREFETCH_ROWS 32   /* small_batch_rows, Q4_0: prefetch (L2) this many rows ahead */

typedef struct {
    __m512i w[8];                /* codes u, lane p = block perm(p) of the group           */
    __m512 d;                    /* d_w per lane                                           */
} packed_group;

/* lane p of a group holds block perm(p); gather offsets of the d fields for a stride */
static const int32_t lane_block[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};

/* --------------------------------------------------------------- transposition */

/* 16 bytes at base + i·stride for i = 4k..4k+3 (128-bit lane l = i = 4k+l). */
static inline __m512i load4(const uint8_t *base, size_t stride)
{
    __m512i z = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)base));
    z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(base + stride)), 1);
    z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(base + 2 * stride)), 2);
    return _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(base + 3 * stride)), 3);
}

/* Dword k (0..3) of the 16 bytes at base + i·stride, i = 0..15: u[k] lane p = i = perm(p). */
static inline void transpose16x4(const uint8_t *base, size_t stride, __m512i u[4])
{
    const __m512i z0 = load4(base, stride), z1 = load4(base + 4 * stride, stride);
    const __m512i z2 = load4(base + 8 * stride, stride), z3 = load4(base + 12 * stride, stride);
    const __m512i t0 = _mm512_unpacklo_epi32(z0, z1), t1 = _mm512_unpackhi_epi32(z0, z1);
    const __m512i t2 = _mm512_unpacklo_epi32(z2, z3), t3 = _mm512_unpackhi_epi32(z2, z3);
    u[0] = _mm512_unpacklo_epi64(t0, t2);
    u[1] = _mm512_unpackhi_epi64(t0, t2);
    u[2] = _mm512_unpacklo_epi64(t1, t3);
    u[3] = _mm512_unpackhi_epi64(t1, t3);
}

static inline __m512i stride_idx(int32_t stride)
{
    return _mm512_mullo_epi32(_mm512_loadu_si512((const void *)lane_block), _mm512_set1_epi32(stride));
}

/* --------------------------------------------------------------------- packing */

/* Lane p: the F16 half that dword lane p of v holds (in its high half when block perm(p) is
 * odd: lanes 4-7 and 12-15, since perm(p) % 2 = (p/4) % 2; else in its low half), as float.
 * Blocks of an even size (Q4_0 18, Q8_0 34 bytes) start dword-aligned when even-numbered and
 * 2 bytes past a dword when odd-numbered (counted from the window's start), so d16_q4_0 and
 * d16_q8_0 both end here. */
static inline __m512 halves_to_f32(__m512i v)
{
    const __m512i shift = _mm512_set_epi32(16, 16, 16, 16, 0, 0, 0, 0, 16, 16, 16, 16, 0, 0, 0, 0);
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srlv_epi32(v, shift)));
}

/* The 16 d fields of 16 consecutive Q4_0 blocks (288 bytes at base; d of block b at byte
 * 18b) in lane order, from 4 vector loads and dword permutations: blocks 0-7 have their d in
 * bytes 0-127, blocks 8-15 in bytes 144-271, each at dword 0, 4, 9, 13, 18, 22, 27, 31 of its
 * window (b % 8 = 0..7; byte 18b lies in dword 4.5b: odd blocks in the high half). Lane p
 * holds block perm(p), from window B when p % 4 >= 2 (reads bytes 0-127 and 144-271 of the
 * 288). An earlier version by word permutations
 * of 4.5 loads (two VPERMT2W, a VPERMW, two blends) ran the L2-resident decode at 42-43 GB/s,
 * this one at 46-47 (bench_kernels, 1 thread). */
static inline __m512 d16_q4_0(const uint8_t *base)
{
    const __m512i idx = _mm512_set_epi32(31, 13, 31, 13, 27, 9, 27, 9, 22, 4, 22, 4, 18, 0, 18, 0);
    const __m512i ra = _mm512_permutex2var_epi32(_mm512_loadu_si512((const void *)base), idx,
                                                 _mm512_loadu_si512((const void *)(base + 64)));
    const __m512i rb = _mm512_permutex2var_epi32(_mm512_loadu_si512((const void *)(base + 144)), idx,
                                                 _mm512_loadu_si512((const void *)(base + 208)));
    return halves_to_f32(_mm512_mask_blend_epi32(0xCCCC, ra, rb));
}

/* The 16 d fields of 16 consecutive Q8_0 blocks (544 bytes at base; d of block b at byte
 * 34b) in lane order, from 8 vector loads and dword permutations instead of a gather (the
 * gather cost ~30 % of the L2-resident decode time; this: 53 -> 63 GB/s, bench_kernels).
 * Blocks 4j..4j+3 have their d in the 128 bytes at 136j, in dwords 0, 8, 17 and 25 (low,
 * high, low, high half: byte 34b lies in dword 8.5b); lane p holds block perm(p), so j =
 * perm(p)/4 = p%4 and the dword is (0, 8, 17, 25)[p/4] for every j: one index vector, four
 * permutations, three blends, then halves_to_f32. Reads bytes 0-535 of the 544. */
static inline __m512 d16_q8_0(const uint8_t *base)
{
    const __m512i idx = _mm512_set_epi32(25, 25, 25, 25, 17, 17, 17, 17, 8, 8, 8, 8, 0, 0, 0, 0);
    __m512i r[4];
    for (int j = 0; j < 4; j++)
        r[j] = _mm512_permutex2var_epi32(_mm512_loadu_si512((const void *)(base + 136 * j)), idx,
                                         _mm512_loadu_si512((const void *)(base + 136 * j + 64)));
    __m512i v = _mm512_mask_blend_epi32(0x2222, r[0], r[1]);
    v = _mm512_mask_blend_epi32(0x4444, v, r[2]);
    v = _mm512_mask_blend_epi32(0x8888, v, r[3]);
    return halves_to_f32(v);
}

/* Blocks [b0, b0+16) of a row, b0 + 16 <= number of blocks (full group). */
static inline void pack16_q4_0(const uint8_t *row, int64_t b0, packed_group *pg)
{
    const uint8_t *base = row + (size_t)b0 * sizeof(edgellm_block_q4_0);
    const __m512i m4 = _mm512_set1_epi8(15);
    __m512i u[4];
    transpose16x4(base + 2, sizeof(edgellm_block_q4_0), u);    /* byte j: elements j, j+16 */
    for (int k = 0; k < 4; k++) {
        pg->w[k] = _mm512_and_si512(u[k], m4);
        pg->w[k + 4] = _mm512_and_si512(_mm512_srli_epi16(u[k], 4), m4);
    }
    pg->d = d16_q4_0(base);
}

static inline void pack16_q8_0(const uint8_t *row, int64_t b0, packed_group *pg)
{
    const uint8_t *base = row + (size_t)b0 * sizeof(edgellm_block_q8_0);
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    __m512i u[4];
    transpose16x4(base + 2, sizeof(edgellm_block_q8_0), u);
    for (int k = 0; k < 4; k++) pg->w[k] = _mm512_xor_si512(u[k], bias);
    transpose16x4(base + 18, sizeof(edgellm_block_q8_0), u);
    for (int k = 0; k < 4; k++) pg->w[k + 4] = _mm512_xor_si512(u[k], bias);
    pg->d = d16_q8_0(base);
}

typedef void (*pack16_fn)(const uint8_t *row, int64_t b0, packed_group *pg);

/* The last, partial group of a row: blocks [b0, b0 + m), m < 16, read as in pack16 but
 * with zero vectors for the missing blocks and the d fields by one masked gather (lane p
 * holds block perm(p) when perm(p) < m, else zero), so nothing past the row is touched.
 * The lanes equal what pack16 gives for the row padded with zero blocks (codes then meet
 * zero activations and d_w = 0: those lanes add exactly nothing). The loads instead of
 * copying the blocks into a zeroed buffer: the copy cost a memcpy and a memset call per
 * row, and its stores missed store forwarding for the 16-byte loads that followed. */
static inline __mmask16 tail_mask(int m)
{
    __mmask16 k = 0;
    for (int p = 0; p < 16; p++)
        if (lane_block[p] < m) k |= (__mmask16)(1u << p);
    return k;
}

static inline __m128i load16_or_zero(const uint8_t *base, size_t stride, int i, int m)
{
    return i < m ? _mm_loadu_si128((const __m128i *)(base + (size_t)i * stride)) : _mm_setzero_si128();
}

/* transpose16x4 of the first m blocks, zero for the others */
static inline void transpose16x4_tail(const uint8_t *base, size_t stride, int m, __m512i u[4])
{
    __m512i z[4];
    for (int j = 0; j < 4; j++) {
        z[j] = _mm512_castsi128_si512(load16_or_zero(base, stride, 4 * j, m));
        z[j] = _mm512_inserti32x4(z[j], load16_or_zero(base, stride, 4 * j + 1, m), 1);
        z[j] = _mm512_inserti32x4(z[j], load16_or_zero(base, stride, 4 * j + 2, m), 2);
        z[j] = _mm512_inserti32x4(z[j], load16_or_zero(base, stride, 4 * j + 3, m), 3);
    }
    const __m512i t0 = _mm512_unpacklo_epi32(z[0], z[1]), t1 = _mm512_unpackhi_epi32(z[0], z[1]);
    const __m512i t2 = _mm512_unpacklo_epi32(z[2], z[3]), t3 = _mm512_unpackhi_epi32(z[2], z[3]);
    u[0] = _mm512_unpacklo_epi64(t0, t2);
    u[1] = _mm512_unpackhi_epi64(t0, t2);
    u[2] = _mm512_unpacklo_epi64(t1, t3);
    u[3] = _mm512_unpackhi_epi64(t1, t3);
}

static inline __m512 gather_d_masked(const uint8_t *base, size_t stride, int m)
{
    const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), tail_mask(m), stride_idx((int32_t)stride),
                                                  (const void *)base, 1);
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
}

typedef void (*packtail_fn)(const uint8_t *row, int64_t b0, int m, packed_group *pg);

static inline void packtail_q4_0(const uint8_t *row, int64_t b0, int m, packed_group *pg)
{
    const uint8_t *base = row + (size_t)b0 * sizeof(edgellm_block_q4_0);
    const __m512i m4 = _mm512_set1_epi8(15);
    __m512i u[4];
    transpose16x4_tail(base + 2, sizeof(edgellm_block_q4_0), m, u);
    for (int k = 0; k < 4; k++) {
        pg->w[k] = _mm512_and_si512(u[k], m4);
        pg->w[k + 4] = _mm512_and_si512(_mm512_srli_epi16(u[k], 4), m4);
    }
    pg->d = gather_d_masked(base, sizeof(edgellm_block_q4_0), m);
}

static inline void packtail_q8_0(const uint8_t *row, int64_t b0, int m, packed_group *pg)
{
    const uint8_t *base = row + (size_t)b0 * sizeof(edgellm_block_q8_0);
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    __m512i u[4];
    transpose16x4_tail(base + 2, sizeof(edgellm_block_q8_0), m, u);
    for (int k = 0; k < 4; k++) pg->w[k] = _mm512_xor_si512(u[k], bias);
    transpose16x4_tail(base + 18, sizeof(edgellm_block_q8_0), m, u);
    for (int k = 0; k < 4; k++) pg->w[k + 4] = _mm512_xor_si512(u[k], bias);
    pg->d = gather_d_masked(base, sizeof(edgellm_block_q8_0), m);
}

/* Group g of a row of nb blocks; the last one padded with zero blocks. */
static inline __attribute__((always_inline)) void pack_group(const uint8_t *row, int64_t g, int64_t nb,
                                                             pack16_fn pack16, packtail_fn packtail,
                                                             packed_group *pg)
{
    if (16 * g + 16 <= nb) pack16(row, 16 * g, pg);
    else packtail(row, 16 * g, (int)(nb - 16 * g), pg);
}

/* ----------------------------------------------------------------- activations */

static inline size_t n_groups(int64_t cols) { return (size_t)((cols / EDGELLM_QK8_0 + 15) / 16); }

/* Token t's Q8_0 row -> its packed groups at xp + t·ng·XG. */
static void prep_q8_0(const void *xq, int64_t t, int64_t cols, uint8_t *xp, int sh)
{
    const int64_t nb = cols / EDGELLM_QK8_0, ng = (int64_t)n_groups(cols);
    const __m512i one = _mm512_set1_epi8(1);
    for (int64_t g = 0; g < ng; g++) {
        packed_group pg;
        pack_group(xq, g, nb, pack16_q8_0, packtail_q8_0, &pg);
        uint8_t *dst = xp + (size_t)(t * ng + g) * XG;
        __m512i sum = _mm512_setzero_si512();
        for (int k = 0; k < 8; k++) {
            const __m512i x = _mm512_xor_si512(pg.w[k], _mm512_set1_epi8((char)0x80));   /* back to s8 */
            _mm512_store_si512((void *)(dst + 64 * k), x);
            sum = _mm512_dpbusd_epi32(sum, one, x);
        }
        _mm512_store_si512((void *)(dst + 512), _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, sh)));
        _mm512_store_ps(dst + 576, pg.d);
    }
}

void edgellm_gemm_prep_q4_0_avx512(const void *xq, int64_t t, int64_t cols, uint8_t *xp)
{
    prep_q8_0(xq, t, cols, xp, 3);                 /* o = 8   */
}

void edgellm_gemm_prep_q8_0_avx512(const void *xq, int64_t t, int64_t cols, uint8_t *xp)
{
    prep_q8_0(xq, t, cols, xp, 7);                 /* o = 128 */
}

/* --------------------------------------------------------------------- compute */

/* Decode of Q8_0 rows without the transposition ("direct"). For a full group (blocks b0 ..
 * b0+15 of a row) register i holds the codes of blocks b0+2i and b0+2i+1 in its two
 * 256-bit halves, straight from memory; VPDPBUSD against the activation codes in the same
 * natural order leaves 8 partial dword sums per block, and a fixed tree of 128-bit-lane
 * shuffles, dword unpacks and adds (21 instructions) reduces them to one sum per block in
 * lane p = block perm(p): the tile layout's order, so no permutation is needed.
 *   T_m = [blocks 4m+L, L = 0..3, per 128-bit lane]   (pairs s[2m], s[2m+1], lanes 0+1 / 2+3)
 *   U_0 = T_0 ⊕ T_2, U_1 = T_1 ⊕ T_3                  (dword unpacks: blocks L, 8+L / 4+L, 12+L)
 *   R   = U_0 ⊕ U_1: position 4L + j holds block L + 4j = perm(4L + j)
 * Integer sums are exact in any order, so s (with corr added) is the very integer the tile
 * path computes, and the float steps after it are the same: decode stays bit-identical to
 * prefill, with ~30 % fewer instructions per group (Q8_0 decode on one thread is partly
 * compute-bound: ~73 % of the read roofline with the transposition). */
static inline __m512i load2_blocks(const uint8_t *p, size_t stride)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)p)),
                              _mm256_loadu_si256((const __m256i *)(p + stride)), 1);
}

/* lane p: Σ (w + 128)·x over block perm(p) of the group at `blocks` (Q8_0, 16 full blocks);
 * xn: the activation codes of those blocks, two per register, natural order */
static inline __m512i direct_sums_q8_0(const uint8_t *blocks, const __m512i *xn)
{
    const __m512i bias = _mm512_set1_epi8((char)0x80), z = _mm512_setzero_si512();
    const size_t bb = sizeof(edgellm_block_q8_0);
    __m512i s[8], t[4];
    for (int i = 0; i < 8; i++)
        s[i] = _mm512_dpbusd_epi32(z, _mm512_xor_si512(load2_blocks(blocks + 2 * i * bb + 2, bb), bias), xn[i]);
    for (int m = 0; m < 4; m++)
        t[m] = _mm512_add_epi32(_mm512_shuffle_i32x4(s[2 * m], s[2 * m + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                                _mm512_shuffle_i32x4(s[2 * m], s[2 * m + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512i u0 = _mm512_add_epi32(_mm512_unpacklo_epi32(t[0], t[2]), _mm512_unpackhi_epi32(t[0], t[2]));
    const __m512i u1 = _mm512_add_epi32(_mm512_unpacklo_epi32(t[1], t[3]), _mm512_unpackhi_epi32(t[1], t[3]));
    return _mm512_add_epi32(_mm512_unpacklo_epi32(u0, u1), _mm512_unpackhi_epi32(u0, u1));
}

#define DIRECT_MAX_GROUPS 64     /* natural-order activations on the stack: 64 × 512 B       */

/* R rows (packed groups pw[r][0..ng)) × C tokens (packed groups at xt[c]), groups
 * [0, ng) of this chunk, accumulators in accm[r·TC + c] (stored; loaded unless first). */
static inline __attribute__((always_inline)) void tile(const packed_group *const *pw, const uint8_t *const *xt, int64_t ng,
                                                       __m512 *accm, bool first, const int R, const int C)
{
    __m512 acc[TR][TC];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) acc[r][c] = first ? _mm512_setzero_ps() : accm[r * TC + c];
    for (int64_t g = 0; g < ng; g++) {
        __m512i s[TR][TC];
        for (int c = 0; c < C; c++) {
            const __m512i corr = _mm512_load_si512((const void *)(xt[c] + (size_t)g * XG + 512));
            for (int r = 0; r < R; r++) s[r][c] = corr;
        }
        for (int k = 0; k < 8; k++) {
            __m512i x[TC];
            for (int c = 0; c < C; c++) x[c] = _mm512_load_si512((const void *)(xt[c] + (size_t)g * XG + 64 * k));
            for (int r = 0; r < R; r++) {
                const __m512i w = _mm512_load_si512((const void *)&pw[r][g].w[k]);
                for (int c = 0; c < C; c++) s[r][c] = _mm512_dpbusd_epi32(s[r][c], w, x[c]);
            }
        }
        for (int c = 0; c < C; c++) {
            const __m512 dx = _mm512_load_ps(xt[c] + (size_t)g * XG + 576);
            for (int r = 0; r < R; r++)
                acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[r][c]), _mm512_mul_ps(pw[r][g].d, dx), acc[r][c]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) accm[r * TC + c] = acc[r][c];
}

/* Decode (n = 1): one row at a time, 16 rows' sums reduced together. direct (Q8_0, a
 * constant at each call so that both variants compile without the other's branch): the
 * full groups by direct sums, the activations in natural order on the stack; otherwise
 * every group packed as in prefill. The partial last group is always packed. */
static inline __attribute__((always_inline)) void decode_rows(const edgellm_gemm_args *a, pack16_fn pack16,
                                                              packtail_fn packtail, const bool direct, const size_t wb)
{
    const int64_t nb = a->cols / EDGELLM_QK8_0, ng = (int64_t)n_groups(a->cols), nfull = nb / 16;
    const size_t bb = sizeof(edgellm_block_q8_0);
    _Alignas(64) __m512i xn[DIRECT_MAX_GROUPS * 8];
    if (direct)
        for (int64_t b = 0; b < 16 * nfull; b += 2) xn[b / 2] = load2_blocks((const uint8_t *)a->xq + b * bb + 2, bb);
    for (int64_t r = a->r0; r < a->r1; r += 16) {
        const int nr = (int)MIN(16, a->r1 - r);
        __m512 acc[16];
        for (int i = 0; i < 16; i++) {
            acc[i] = _mm512_setzero_ps();
            if (i >= nr) continue;
            __m512 ai = _mm512_setzero_ps();   /* in a register, not acc[i] in memory */
            const uint8_t *row = a->w + (size_t)(r + i) * a->row_bytes;
            for (int64_t g = 0; g < ng; g++) {
                const uint8_t *x = a->xp + (size_t)g * XG;
                __m512i s = _mm512_load_si512((const void *)(x + 512));   /* corr */
                __m512 d;
                if (direct && g < nfull) {
                    const uint8_t *blocks = row + (size_t)(16 * g) * bb;
                    s = _mm512_add_epi32(s, direct_sums_q8_0(blocks, xn + 8 * g));
                    d = d16_q8_0(blocks);
                } else {
                    if (!direct) x86_prefetch_l2(row + (size_t)(16 * g) * wb, a->prefetch, 16 * wb);
                    packed_group pg;
                    if (direct) packtail(row, 16 * g, (int)(nb - 16 * g), &pg);   /* g = nfull: partial */
                    else pack_group(row, g, nb, pack16, packtail, &pg);
                    /* two chains of 4 (integer sums: exact in any order) */
                    __m512i s1 = _mm512_setzero_si512();
                    for (int k = 0; k < 8; k += 2) {
                        s = _mm512_dpbusd_epi32(s, pg.w[k], _mm512_load_si512((const void *)(x + 64 * k)));
                        s1 = _mm512_dpbusd_epi32(s1, pg.w[k + 1], _mm512_load_si512((const void *)(x + 64 * k + 64)));
                    }
                    s = _mm512_add_epi32(s, s1);
                    d = pg.d;
                }
                ai = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(d, _mm512_load_ps(x + 576)), ai);
            }
            acc[i] = ai;
        }
        gemm_hsum16x16_store(acc, a->y + r, nr);
    }
}

/* One group of one row against n tokens: s = corr + Σ_k VPDPBUSD(W[k], X[k]) (integer, exact
 * in any order), then acc[t] = fma(float(s), d_w · d_x, acc[t]) — decode's steps. */
static inline __attribute__((always_inline)) void group_tokens1(const packed_group *pg, const uint8_t *x0, size_t xt,
                                                                __m512 *acc, const int n)
{
    for (int t = 0; t < n; t++) {
        const uint8_t *x = x0 + (size_t)t * xt;
        __m512i s = _mm512_load_si512((const void *)(x + 512));
        __m512i s1 = _mm512_setzero_si512();
        for (int k = 0; k < 8; k += 2) {   /* two chains (integer sums: exact in any order) */
            s = _mm512_dpbusd_epi32(s, pg->w[k], _mm512_load_si512((const void *)(x + 64 * k)));
            s1 = _mm512_dpbusd_epi32(s1, pg->w[k + 1], _mm512_load_si512((const void *)(x + 64 * k + 64)));
        }
        s = _mm512_add_epi32(s, s1);
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(pg->d, _mm512_load_ps(x + 576)), acc[t]);
    }
}

/* A few tokens (2 <= n <= SMALL_N, a constant at each call): as decode, one row at a time
 * with each group packed once in registers, then every token's sums against it; the row's
 * n accumulators stay in registers and 16 rows' sums are reduced per token. The groups are
 * taken in chunks whose activations (n tokens) stay in L1 (SMALL_XBYTES), each row's
 * accumulators kept between chunks: groups still in order for every (row, token). The
 * Q4_0 weights SMALL_PREFETCH_ROWS rows ahead (wb: bytes per block) are prefetched into L2. */
static inline __attribute__((always_inline)) void small_batch_rows(const edgellm_gemm_args *a, pack16_fn pack16,
                                                                   packtail_fn packtail, const int n, const size_t wb)
{
    const size_t ahead = wb == sizeof(edgellm_block_q4_0) ? (size_t)SMALL_PREFETCH_ROWS * a->row_bytes : 0;
    const int64_t nb = a->cols / EDGELLM_QK8_0, ng = (int64_t)n_groups(a->cols);
    const size_t xt = (size_t)ng * XG;                  /* bytes of one token's packed groups */
    const int64_t gc_ = (int64_t)(SMALL_XBYTES / ((size_t)n * XG)), gc = gc_ > 0 ? gc_ : 1;   /* groups per chunk */
    for (int64_t r = a->r0; r < a->r1; r += 16) {
        const int nr = (int)MIN(16, a->r1 - r);
        __m512 acc[SMALL_N][16];
        for (int t = 0; t < n; t++)
            for (int i = nr; i < 16; i++) acc[t][i] = _mm512_setzero_ps();
        for (int64_t g0 = 0; g0 < ng; g0 += gc) {
            const int64_t g1 = MIN(g0 + gc, ng);
            for (int i = 0; i < nr; i++) {
                __m512 ai[SMALL_N];
                for (int t = 0; t < n; t++) ai[t] = g0 == 0 ? _mm512_setzero_ps() : acc[t][i];
                const uint8_t *row = a->w + (size_t)(r + i) * a->row_bytes;
                for (int64_t g = g0; g < g1; g++) {
                    packed_group pg;
                    x86_prefetch_l2(row + (size_t)(16 * g) * wb, ahead, 16 * wb);
                    pack_group(row, g, nb, pack16, packtail, &pg);
                    group_tokens1(&pg, a->xp + (size_t)g * XG, xt, ai, n);
                }
                for (int t = 0; t < n; t++) acc[t][i] = ai[t];
            }
        }
        for (int t = 0; t < n; t++) gemm_hsum16x16_store(acc[t], a->y + t * a->ldy + r, nr);
    }
}

static inline __attribute__((always_inline)) void gemm_q8(const edgellm_gemm_args *a, pack16_fn pack16,
                                                          packtail_fn packtail, bool q8)
{
    const int64_t nb = a->cols / EDGELLM_QK8_0, ng = (int64_t)n_groups(a->cols), nfull = nb / 16;
    const size_t wb = q8 ? sizeof(edgellm_block_q8_0) : sizeof(edgellm_block_q4_0);
    if (a->n == 1) {                                         /* decode: one row at a time */
        if (q8 && nfull <= DIRECT_MAX_GROUPS) decode_rows(a, pack16, packtail, true, wb);
        else decode_rows(a, pack16, packtail, false, wb);
        return;
    }
    switch (a->n) {                                          /* a few tokens: batched decode */
    case 2: small_batch_rows(a, pack16, packtail, 2, wb); return;
    case 3: small_batch_rows(a, pack16, packtail, 3, wb); return;
    case 4: small_batch_rows(a, pack16, packtail, 4, wb); return;
    case 5: small_batch_rows(a, pack16, packtail, 5, wb); return;
    case 6: small_batch_rows(a, pack16, packtail, 6, wb); return;
    case 7: small_batch_rows(a, pack16, packtail, 7, wb); return;
    case 8: small_batch_rows(a, pack16, packtail, 8, wb); return;
    default: break;
    }
    _Alignas(64) packed_group pw[TR][KG];
    _Alignas(64) __m512 accm[TN / TC + 1][TR * TC];          /* per token tile of the chunk */
    for (int64_t r = a->r0; r < a->r1; r += TR) {
        const int nr = (int)MIN(TR, a->r1 - r);
        const packed_group *pwp[TR];
        for (int i = 0; i < TR; i++) pwp[i] = pw[i < nr || nr < 1 ? i : nr - 1];   /* extra rows: duplicates */
        for (int64_t t0 = 0; t0 < a->n; t0 += TN) {
            const int nt = (int)MIN(TN, a->n - t0), ntiles = (nt + TC - 1) / TC;
            if (ntiles * TC > nt) memset(accm[ntiles - 1], 0, sizeof(accm[0]));   /* unused slots: finite */
            for (int64_t g0 = 0; g0 < ng; g0 += KG) {
                const int64_t ngc = MIN(KG, ng - g0);
                for (int i = 0; i < nr; i++)
                    for (int64_t g = 0; g < ngc; g++)
                        pack_group(a->w + (size_t)(r + i) * a->row_bytes, g0 + g, nb, pack16, packtail, &pw[i][g]);
                for (int ti = 0; ti < ntiles; ti++) {
                    const int c0 = ti * TC, nc = MIN(TC, nt - c0);
                    const uint8_t *xt[TC];
                    for (int c = 0; c < TC; c++)
                        xt[c] = a->xp + (size_t)((t0 + c0 + (c < nc ? c : nc - 1)) * ng + g0) * XG;
                    if (nc == TC) tile(pwp, xt, ngc, accm[ti], g0 == 0, TR, TC);
                    else
                        for (int c = 0; c < nc; c++) tile(pwp, xt + c, ngc, accm[ti] + c, g0 == 0, TR, 1);
                }
            }
            const __m512 *flat = accm[0];                       /* [ntiles][TR][TC] */
            for (int q0 = 0; q0 < ntiles * TR * TC; q0 += 16) {
                __m512 v[16];
                float out[16];
                for (int e = 0; e < 16; e++) v[e] = q0 + e < ntiles * TR * TC ? flat[q0 + e] : _mm512_setzero_ps();
                gemm_hsum16x16(v, out);
                for (int e = 0; e < 16 && q0 + e < ntiles * TR * TC; e++) {
                    const int q = q0 + e, ti = q / (TR * TC), i = q % (TR * TC) / TC, c = q % TC;
                    if (i < nr && ti * TC + c < nt) a->y[(t0 + ti * TC + c) * a->ldy + r + i] = out[e];
                }
            }
        }
    }
}

void edgellm_gemm_q4_0_avx512(const edgellm_gemm_args *a)
{
    gemm_q8(a, pack16_q4_0, packtail_q4_0, false);
}

void edgellm_gemm_q8_0_avx512(const edgellm_gemm_args *a)
{
    gemm_q8(a, pack16_q8_0, packtail_q8_0, true);
}
#endif
