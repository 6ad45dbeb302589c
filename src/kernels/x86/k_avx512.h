/*
 * k_avx512.h — the arithmetic of Q4_K, Q5_K and Q6_K weights · Q8_K activations with AVX-512
 * BW/VL + VNNI, for one weight row × a tile of C activation rows. Shared by the vec_dot
 * kernels (dot_q4_K_q6_K_avx512.c, dot_q5_K_avx512.c: C = 1) and the tile kernels
 * (gemm_k_avx512_body.h: C = 1 for decode, 4 for prefill), so every (row, token) takes the
 * same steps whatever the tile: prefill and decode are bit-identical. Include only from
 * *_avx512.c files. Layouts:
 * src/tensor/blocks.h; reference: src/tensor/quant_k.c.
 *
 * Per super-block (256 elements) and (row, token), exact in int32:
 *
 *   Q4_K  scales sc_j and mins m_j (6 bits) unpacked once per block by x86_q4_K_scales
 *         (avx2_util.h) into two u64 of 8 bytes. For chunk c = 0..3 (elements 64c..64c+63,
 *         sub-blocks 2c and 2c+1): the 32 code bytes are broadcast to both 256-bit halves,
 *         the upper half shifted right by 4 (VPSRLVW), & 15: 64 codes in element order;
 *             S = VPDPWSSD(S, VPMADDUBSW(codes, x[64c..]), sc words)
 *         (pairs <= 2·15·128 = 3840; the scale words come from one VPSHUFB of the
 *         broadcast scale bytes: words 0-15 sc_2c, 16-31 sc_2c+1). Mins through Q8_K's
 *         bsums: M = VPMADDWD([m0 m0 m1 m1 .. m7 m7], bsums) (8 lanes, lane j = m_j·Σ of
 *         sub-block j). Q4_K then sums S's 16 and M's 8 lanes exactly per super-block and
 *         runs one float chain per (row, token) ("Q4_K: one float chain" below; the
 *         rows-as-lanes form x86_q4_K_x16 gets the same two integers another way).
 *   Q5_K  as Q4_K's chunk steps, each code byte or-ed with its 5th bit moved to bit 4
 *         (then, d and dmin converted together and times d_x:
 *             acc  = fma(float(S), d·d_x, acc)            (16 lanes)
 *             accm = fnmadd(float(M), dmin·d_x, accm)      (8 lanes)
 *         y = x86_hsum16(acc + [accm | 0])): the 32 qh bytes
 *         (broadcast to both halves) hold it in bit 2c (low half of chunk c) and 2c+1
 *         (high half); pairs <= 2·31·128 = 7936, |S| <= 256·63·31·128 < 2^26. The layout
 *         is GGUF's block_q5_K (ggml-common.h and dequantize_row_q5_K in ggml-quants.c of
 *         github.com/ggml-org/ggml), as blocks.h states it.
 *   Q6_K  the 64 bytes of ql of half h hold codes 128h..128h+63 in their low nibbles and
 *         128h+64..128h+127 in their high nibbles; the 32 bytes of qh (broadcast to both
 *         halves) hold the 2 high bits of element 128h + 32k + l in bits 2k..2k+1 of byte
 *         l. Each 64-code vector u (0..63) = nibbles | ((qh & mask) shifted per 256-bit
 *         half by VPSLLVW/VPSRLVW to bits 4-5), merged by one VPTERNLOGD; then
 *             S = VPDPWSSD(S, VPMADDUBSW(u, x[64q..]), sc words)   q = 0..3
 *         (pairs <= 2·63·128 = 16128; words 8k..8k+7 of vector q = sc_4q+k, by VPERMW),
 *         and the offset of the codes (w = u - 32) through bsums:
 *             S = VPDPWSSD(S, -32·sc (16 words), bsums)
 *         then S's 16 lanes summed exactly per super-block and one float chain per (row,
 *         token) ("Q6_K: one float chain" below; the rows-as-lanes form x86_q6_K_x16 gets
 *         the same integer another way).
 * |S| < 2^31 in both: Q4_K |S| <= 256·63·15·128 < 2^25, Q6_K <= 256·128·63·128 < 2^29.
 * Tolerance against the ref (double sums), as the AVX2 twins: |fast - ref| <= (nb + 4)·
 * 2^-22·Σ(|w·x| + |offset/min terms|) (tests/test_kernels_simd.c, tests/test_gemm.c).
 *
 * Measured on the 2-core Zen 5 dev machine, one thread, rows of 2048 resident in L1/L2
 * (compute only), GB/s of weights, previous kernels (VPMADDUBSW + VPMADDWD by VPERMW'd
 * scales per 64 codes, scalar scale unpacking; Q6_K through VPMULLD) -> these: decode
 * tile Q4_K 28.5 -> 39, Q6_K 37 -> 52; 4-token prefill tile (weights × tokens) Q4_K
 * 49 -> 58, Q6_K 70 -> 85. Decode streams the weights from DRAM, where this is worth
 * less: Q4_K rows at ~82 -> ~87 % of a plain read of the same bytes (tinyllama shape).
 */
#ifndef EDGELLM_K_AVX512_H
#define EDGELLM_K_AVX512_H

#include "avx512_util.h"
#include "../repack.h"
#include "../../tensor/blocks.h"
#include <stddef.h>

#define X86_K_MAX_C 4            /* tokens per tile, at most */
/* Loops over tokens and chunks are unrolled so that the tile lives in registers. */
#define X86_UNROLL _Pragma("GCC unroll 8")

#ifdef X86_K_GFNI
#ifndef __GFNI__
#error "X86_K_GFNI needs -mgfni"
#endif
/* GF2P8AFFINEQB bit matrices (Intel SDM vol. 2A "GF2P8AFFINEQB"): output bit i of each byte
 * is the parity of (byte 7-i of the 64-bit matrix) AND the input byte, so a matrix whose
 * byte 7-i is 1 << k copies input bit k to output bit i, and a zero byte clears bit i.
 * One instruction then does what a shift and a mask did, a different move in each 64-bit
 * lane:
 *   X86_GF_LOW4    bits 0-3 stay, 4-7 cleared          (x & 15)
 *   X86_GF_HIGH4   bits 4-7 to 0-3, 4-7 cleared        (x >> 4)
 *   X86_GF_BITS(k) bits k, k+1 to 4, 5, the rest cleared ((x >> k & 3) << 4) */
#define X86_GF_LOW4 0x0102040800000000ll
#define X86_GF_HIGH4 0x1020408000000000ll
#define X86_GF_BITS(k) ((long long)((1ull << (k)) << 24 | (2ull << (k)) << 16))
/*   X86_GF_BIT4(k) bit k to 4, the rest cleared        ((x >> k & 1) << 4) */
#define X86_GF_BIT4(k) ((long long)((1ull << (k)) << 24))
#endif

/* VPSHUFB controls of Q4_K, one word 0x8000 | j per output word (byte j of the 64-bit
 * lane into the low byte, zero into the high byte): chunk c takes scale byte 2c into
 * words 0-15 and 2c+1 into words 16-31; row 4 (256 bits) doubles the min bytes into
 * words [m0 m0 m1 m1 m2 m2 m3 m3 | m4 m4 m5 m5 m6 m6 m7 m7]. */
static const uint16_t x86_q4_K_ctl[5][32] __attribute__((aligned(64))) = {
#define X86_W16(a) 0x8000 | (a), 0x8000 | (a), 0x8000 | (a), 0x8000 | (a), 0x8000 | (a), 0x8000 | (a), \
                   0x8000 | (a), 0x8000 | (a), 0x8000 | (a), 0x8000 | (a), 0x8000 | (a), 0x8000 | (a), \
                   0x8000 | (a), 0x8000 | (a), 0x8000 | (a), 0x8000 | (a)
    {X86_W16(0), X86_W16(1)}, {X86_W16(2), X86_W16(3)}, {X86_W16(4), X86_W16(5)}, {X86_W16(6), X86_W16(7)},
#undef X86_W16
    {0x8000, 0x8000, 0x8001, 0x8001, 0x8002, 0x8002, 0x8003, 0x8003,
     0x8004, 0x8004, 0x8005, 0x8005, 0x8006, 0x8006, 0x8007, 0x8007},
};

/* VPERMW indices of Q6_K: words 8k..8k+7 of code vector q take scale 4q + k. */
static const uint16_t x86_q6_K_sidx[4][32] __attribute__((aligned(64))) = {
#define X86_I8(a) (a), (a), (a), (a), (a), (a), (a), (a)
    {X86_I8(0), X86_I8(1), X86_I8(2), X86_I8(3)},     {X86_I8(4), X86_I8(5), X86_I8(6), X86_I8(7)},
    {X86_I8(8), X86_I8(9), X86_I8(10), X86_I8(11)},   {X86_I8(12), X86_I8(13), X86_I8(14), X86_I8(15)},
#undef X86_I8
};

/* v[t] = the 16 lanes whose x86_hsum16 is dot(row w, activations x[t]), over nb Q4_K
 * (five = 0) or Q5_K (five = 1) super-blocks of bs bytes at w, t < C; pf: x86_prefetch_l2's
 * distance (0 = none). Both layouts (blocks.h): d, dmin at bytes 0, 2, the 12 scale bytes
 * at 4; Q4_K codes at 16; Q5_K 5th bits qh at 16, codes at 48. */
static inline __attribute__((always_inline)) void x86_q45_K_tile(const uint8_t *w, const size_t bs, const int five,
                                                                 const edgellm_block_q8_K *const *x, int64_t nb,
                                                                 const int C, __m512 *v, const size_t pf)
{
    const size_t qs_off = five ? 48 : 16;
#ifdef X86_K_GFNI
    const __m512i gf_nib = x86_join(_mm256_set1_epi64x(X86_GF_LOW4), _mm256_set1_epi64x(X86_GF_HIGH4));
    __m512i gf_h[4];
    X86_UNROLL
    for (int c = 0; c < 4; c++)
        gf_h[c] = x86_join(_mm256_set1_epi64x(X86_GF_BIT4(2 * c)), _mm256_set1_epi64x(X86_GF_BIT4(2 * c + 1)));
#else
    const __m512i sh4 = x86_join(_mm256_setzero_si256(), _mm256_set1_epi16(4)), m4 = _mm512_set1_epi8(15);
    /* per 256-bit half, chunk c: the word shift that brings qh bit 2c (low half) or 2c+1
     * (high half) to bit 4: left by 4-k for k < 4, right by k-4 above */
    const __m512i hsh[4] = {x86_join(_mm256_set1_epi16(4), _mm256_set1_epi16(3)),
                            x86_join(_mm256_set1_epi16(2), _mm256_set1_epi16(1)),
                            x86_join(_mm256_set1_epi16(0), _mm256_set1_epi16(1)),
                            x86_join(_mm256_set1_epi16(2), _mm256_set1_epi16(3))};
    const __m512i b4 = _mm512_set1_epi8(0x10);
#endif
    __m512 acc[X86_K_MAX_C];
    __m256 accm[X86_K_MAX_C];
    X86_UNROLL
    for (int t = 0; t < C; t++) {
        acc[t] = _mm512_setzero_ps();
        accm[t] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *blk = w + (size_t)i * bs;
        x86_prefetch_l2(blk, pf, bs);
        uint64_t sc, mn;
        x86_q4_K_scales(blk + 4, &sc, &mn);
        const __m512i bsc = _mm512_set1_epi64((long long)sc);
        const __m256i mins = _mm256_shuffle_epi8(_mm256_set1_epi64x((long long)mn),
                                                 _mm256_load_si256((const __m256i *)x86_q4_K_ctl[4]));
        const __m512i qh = five ? _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(blk + 16)))
                                : _mm512_setzero_si512();
        __m512i S[X86_K_MAX_C];
        X86_UNROLL
        for (int t = 0; t < C; t++) S[t] = _mm512_setzero_si512();
        X86_UNROLL
        for (int c = 0; c < 4; c++) {
            const __m512i q = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(blk + qs_off + 32 * c)));
#ifdef X86_K_GFNI
            __m512i u = _mm512_gf2p8affine_epi64_epi8(q, gf_nib, 0);
            if (five) u = _mm512_or_si512(u, _mm512_gf2p8affine_epi64_epi8(qh, gf_h[c], 0));
#else
            __m512i u = _mm512_and_si512(_mm512_srlv_epi16(q, sh4), m4);
            if (five) {
                const __m512i h = c < 2 ? _mm512_sllv_epi16(qh, hsh[c]) : _mm512_srlv_epi16(qh, hsh[c]);
                u = _mm512_ternarylogic_epi32(u, h, b4, 0xF8);            /* u | (h & 0x10) */
            }
#endif
            const __m512i s = _mm512_shuffle_epi8(bsc, _mm512_load_si512((const void *)x86_q4_K_ctl[c]));
            X86_UNROLL
            for (int t = 0; t < C; t++) {
                const __m512i y = _mm512_loadu_si512((const void *)(x[t][i].qs + 64 * c));
                S[t] = _mm512_dpwssd_epi32(S[t], _mm512_maddubs_epi16(u, y), s);
            }
        }
        uint32_t dd;
        memcpy(&dd, blk, 4);                                             /* d, dmin */
        const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128((int)dd));
        X86_UNROLL
        for (int t = 0; t < C; t++) {
            const __m128 fx = _mm_mul_ps(f, _mm_set1_ps(x[t][i].d));        /* d·d_x, dmin·d_x */
            const __m256i M = _mm256_madd_epi16(mins, _mm256_loadu_si256((const __m256i *)x[t][i].bsums));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[t]), _mm512_broadcastss_ps(fx), acc[t]);
            accm[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(M), _mm256_broadcastss_ps(_mm_movehdup_ps(fx)), accm[t]);
        }
    }
    X86_UNROLL
    for (int t = 0; t < C; t++) v[t] = _mm512_add_ps(acc[t], _mm512_zextps256_ps512(accm[t]));
}

/* ---- Q4_K: one float chain per (row, token) ----
 *
 * Every AVX-512 Q4_K kernel (vec_dot, the in-place tile kernels, whatever n) computes, for
 * a row and a token, over the super-blocks i in order from y = 0:
 *     S_i = Σ_j sc_j · Σ_{e in sub-block j} q_e·x_e          exact int32 (|S| < 2^25)
 *     M_i = Σ_j m_j · (bsums_2j + bsums_2j+1)                exact int32
 *     y = fma(float(S_i), d_i·d_x,i, y),  y = fnmadd(float(M_i), dmin_i·d_x,i, y)
 * (d·d_x and dmin·d_x one float multiply each), so any way of getting the two integers gives
 * the same y bit for bit. Two ways:
 *   x86_q4_K_row   one row: the chunk steps of x86_q45_K_tile (16 lanes of S, 8 of M),
 *                  each reduced to its exact sum;
 *   x86_q4_K_x16   16 rows at once, a row per lane (rows as lanes): the 128 code bytes of
 *                  each row's super-block transposed by dwords (x86_q4_K_x16_build), so that
 *                  one VPDPBUSD multiplies 4 codes of each of 16 rows by the same 4
 *                  activation bytes (broadcast) and sums them into that row's lane:
 *                      P = Σ_l VPDPBUSD(codes & 15 | codes >> 4, x[4 bytes])   (per sub-block)
 *                      S = Σ_j VPMULLD(P_j, sc_j),  M = Σ_j VPDPWSSD([m_j m_j], bsums pair j)
 *                  then the same two float steps on 16 lanes. One VPDPBUSD per 64
 *                  multiply-adds, where the row form needs a VPMADDUBSW and a VPDPWSSD.
 */

/* Super-block b (index i of the activation rows) of one row, tokens t < C, by the chunk
 * steps: S[t] 16 lanes whose sum is S_i, M[t] 8 lanes (upper 8 zero) whose sum is M_i. */
static inline __attribute__((always_inline)) void x86_q4_K_sb(const edgellm_block_q4_K *b,
                                                              const edgellm_block_q8_K *const *x, int64_t i,
                                                              const int C, __m512i *S, __m512i *M)
{
#ifdef X86_K_GFNI
    const __m512i gf_nib = x86_join(_mm256_set1_epi64x(X86_GF_LOW4), _mm256_set1_epi64x(X86_GF_HIGH4));
#else
    const __m512i sh4 = x86_join(_mm256_setzero_si256(), _mm256_set1_epi16(4)), m4 = _mm512_set1_epi8(15);
#endif
    uint64_t sc, mn;
    x86_q4_K_scales(b->scales, &sc, &mn);
    const __m512i bsc = _mm512_set1_epi64((long long)sc);
    const __m256i mins = _mm256_shuffle_epi8(_mm256_set1_epi64x((long long)mn),
                                             _mm256_load_si256((const __m256i *)x86_q4_K_ctl[4]));
    X86_UNROLL
    for (int t = 0; t < C; t++) S[t] = _mm512_setzero_si512();
    X86_UNROLL
    for (int c = 0; c < 4; c++) {
        const __m512i q = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b->qs + 32 * c)));
#ifdef X86_K_GFNI
        const __m512i u = _mm512_gf2p8affine_epi64_epi8(q, gf_nib, 0);
#else
        const __m512i u = _mm512_and_si512(_mm512_srlv_epi16(q, sh4), m4);
#endif
        const __m512i s = _mm512_shuffle_epi8(bsc, _mm512_load_si512((const void *)x86_q4_K_ctl[c]));
        X86_UNROLL
        for (int t = 0; t < C; t++) {
            const __m512i xv = _mm512_loadu_si512((const void *)(x[t][i].qs + 64 * c));
            S[t] = _mm512_dpwssd_epi32(S[t], _mm512_maddubs_epi16(u, xv), s);
        }
    }
    X86_UNROLL
    for (int t = 0; t < C; t++)
        M[t] = _mm512_zextsi256_si512(_mm256_madd_epi16(mins, _mm256_loadu_si256((const __m256i *)x[t][i].bsums)));
}

/* y[t] = dot(row w, x[t]) over nb Q4_K super-blocks, t < C, by the row form, each
 * super-block's lanes summed on their own (the vec_dot; the tile kernels sum 16 super-blocks'
 * lanes at once, x86_reduce16); pf: x86_prefetch_l2's distance (0 = none). */
static inline __attribute__((always_inline)) void x86_q4_K_row(const edgellm_block_q4_K *w,
                                                               const edgellm_block_q8_K *const *x, int64_t nb,
                                                               const int C, float *y, const size_t pf)
{
    float acc[X86_K_MAX_C];
    X86_UNROLL
    for (int t = 0; t < C; t++) acc[t] = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        const edgellm_block_q4_K *b = &w[i];
        x86_prefetch_l2(b, pf, sizeof *b);
        __m512i S[X86_K_MAX_C], M[X86_K_MAX_C];
        x86_q4_K_sb(b, x, i, C, S, M);
        const float d = _cvtsh_ss(b->d), dmin = _cvtsh_ss(b->dmin);
        X86_UNROLL
        for (int t = 0; t < C; t++) {
            const int32_t si = _mm512_reduce_add_epi32(S[t]), mi = _mm512_reduce_add_epi32(M[t]);
            const float dx = x[t][i].d;
            acc[t] = __builtin_fmaf((float)si, d * dx, acc[t]);
            acc[t] = __builtin_fmaf(-(float)mi, dmin * dx, acc[t]);
        }
    }
    X86_UNROLL
    for (int t = 0; t < C; t++) y[t] = acc[t];
}

/* One super-block of 16 Q4_K rows, rows as lanes (lane r = row r): q[8c + l] holds in dword
 * r the code bytes 32c + 4l .. 32c + 4l + 3 of row r (low nibbles: elements 64c + 4l ..,
 * sub-block 2c; high nibbles: elements 64c + 32 + 4l .., sub-block 2c + 1); sc[j] row r's
 * scale of sub-block j, mp[j] its min in both 16-bit halves; d, dmin converted. 3200 bytes. */
typedef struct {
    __m512i q[32];
    __m512i sc[8];
    __m512i mp[8];
    __m512 d, dmin;
} x86_q4_K_x16;

/* 16 × 16 dwords transposed in registers: v[k] lane r <- v[r] lane k (unpacks of dwords
 * and qwords, then two 128-bit shuffles; 64 instructions). */
static inline __attribute__((always_inline)) void x86_transpose16x16(__m512i *v)
{
    __m512i t[16], u[16];
    X86_UNROLL
    for (int k = 0; k < 8; k++) {
        t[2 * k] = _mm512_unpacklo_epi32(v[2 * k], v[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_epi32(v[2 * k], v[2 * k + 1]);
    }
    X86_UNROLL
    for (int k = 0; k < 4; k++) {
        u[4 * k] = _mm512_unpacklo_epi64(t[4 * k], t[4 * k + 2]);
        u[4 * k + 1] = _mm512_unpackhi_epi64(t[4 * k], t[4 * k + 2]);
        u[4 * k + 2] = _mm512_unpacklo_epi64(t[4 * k + 1], t[4 * k + 3]);
        u[4 * k + 3] = _mm512_unpackhi_epi64(t[4 * k + 1], t[4 * k + 3]);
    }
    /* u[4k + m] holds, per 128-bit lane L, dword m of rows 4k..4k+3 at column 4L + m */
    X86_UNROLL
    for (int k = 0; k < 4; k++) {
        t[k] = _mm512_shuffle_i32x4(u[k], u[4 + k], 0x88);
        t[4 + k] = _mm512_shuffle_i32x4(u[k], u[4 + k], 0xdd);
        t[8 + k] = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0x88);
        t[12 + k] = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0xdd);
    }
    X86_UNROLL
    for (int k = 0; k < 4; k++) {
        v[k] = _mm512_shuffle_i32x4(t[k], t[8 + k], 0x88);
        v[8 + k] = _mm512_shuffle_i32x4(t[k], t[8 + k], 0xdd);
        v[4 + k] = _mm512_shuffle_i32x4(t[4 + k], t[12 + k], 0x88);
        v[12 + k] = _mm512_shuffle_i32x4(t[4 + k], t[12 + k], 0xdd);
    }
}

/* Lane r = the (exact, wrapping) sum of the 16 lanes of v[r], r < 16 (v is overwritten). */
static inline __attribute__((always_inline)) __m512i x86_reduce16(__m512i *v)
{
    x86_transpose16x16(v);
    __m512i s = v[0];
    X86_UNROLL
    for (int k = 1; k < 16; k++) s = _mm512_add_epi32(s, v[k]);
    return s;
}

/* The scales and mins of 16 rows as lanes from their packed bytes 0-3 (a), 4-7 (b), 8-11 (c)
 * one dword per lane (x86_q4_K_scales's operations on 16 lanes). */
static inline __attribute__((always_inline)) void x86_q4_K_scales16(__m512i a, __m512i b, __m512i c, __m512i *sc,
                                                                    __m512i *mp)
{
    const __m512i m3f = _mm512_set1_epi32(0x3f3f3f3f), m0f = _mm512_set1_epi32(0x0f0f0f0f),
                  m30 = _mm512_set1_epi32(0x30303030), ff = _mm512_set1_epi32(0xff);
    const __m512i sc4[2] = {_mm512_and_si512(a, m3f),
                            _mm512_or_si512(_mm512_and_si512(c, m0f), _mm512_and_si512(_mm512_srli_epi32(a, 2), m30))};
    const __m512i m4[2] = {_mm512_and_si512(b, m3f),
                           _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(c, 4), m0f),
                                           _mm512_and_si512(_mm512_srli_epi32(b, 2), m30))};
    X86_UNROLL
    for (int j = 0; j < 8; j++) {
        sc[j] = _mm512_and_si512(_mm512_srli_epi32(sc4[j / 4], 8 * (j % 4)), ff);
        const __m512i mj = _mm512_and_si512(_mm512_srli_epi32(m4[j / 4], 8 * (j % 4)), ff);
        mp[j] = _mm512_or_si512(mj, _mm512_slli_epi32(mj, 16));
    }
}

/* o = super-block i of the 16 rows w[0..15] (each a row of Q4_K blocks; repeat a row to
 * fill a partial group): the codes by two 16 × 16 transposes, the scales, mins, d and dmin
 * gathered a dword per row and unpacked on 16 lanes (x86_q4_K_scales's operations). */
static inline void x86_q4_K_x16_build(const edgellm_block_q4_K *const *w, int64_t i, x86_q4_K_x16 *o)
{
    X86_UNROLL
    for (int h = 0; h < 2; h++) {
        __m512i v[16];
        X86_UNROLL
        for (int r = 0; r < 16; r++) v[r] = _mm512_loadu_si512((const void *)(w[r][i].qs + 64 * h));
        x86_transpose16x16(v);
        X86_UNROLL
        for (int k = 0; k < 16; k++) _mm512_store_si512((void *)&o->q[16 * h + k], v[k]);
    }
    const uint8_t *b0 = (const uint8_t *)&w[0][i];
    int32_t off[16] __attribute__((aligned(64)));
    for (int r = 0; r < 16; r++) off[r] = (int32_t)((const uint8_t *)&w[r][i] - b0);
    const __m512i ix = _mm512_load_si512((const void *)off);
    const __m512i dd = _mm512_i32gather_epi32(ix, (const void *)b0, 1);        /* d | dmin << 16 */
    const __m512i a = _mm512_i32gather_epi32(ix, (const void *)(b0 + 4), 1);   /* scale bytes 0-3 */
    const __m512i b = _mm512_i32gather_epi32(ix, (const void *)(b0 + 8), 1);   /* 4-7 */
    const __m512i c = _mm512_i32gather_epi32(ix, (const void *)(b0 + 12), 1);  /* 8-11 */
    o->d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dd));
    o->dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16)));
    x86_q4_K_scales16(a, b, c, o->sc, o->mp);
}

/* The head of a q4_K_x16 block (repack.h: d, dmin, 16 × 12 scale bytes at blk, 64-byte
 * aligned) on 16 lanes, lane k = row 16g + k: d, dmin as floats, sc[j] and mp[j] as
 * x86_q4_K_scales16 gives them (the 12 bytes of row k picked by two dword permutes). */
static inline __attribute__((always_inline)) void x86_q4_K_x16_head(const uint8_t *blk, __m512 *d, __m512 *dmin,
                                                                    __m512i *sc, __m512i *mp)
{
    /* 16-lane index of dword 3r, 3r + 1, 3r + 2 of the 192 scale bytes */
    static const int32_t ix[3][16] __attribute__((aligned(64))) = {
        {0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45},
        {1, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31, 34, 37, 40, 43, 46},
        {2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35, 38, 41, 44, 47}};
    *d = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(blk + EDGELLM_X16_D)));
    *dmin = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(blk + EDGELLM_X16_DMIN)));
    const __m512i z0 = _mm512_load_si512((const void *)(blk + EDGELLM_X16_SCALES)),
                  z1 = _mm512_load_si512((const void *)(blk + EDGELLM_X16_SCALES + 64)),
                  z2 = _mm512_load_si512((const void *)(blk + EDGELLM_X16_SCALES + 128));
    __m512i v[3];
    X86_UNROLL
    for (int j = 0; j < 3; j++) {
        const __m512i id = _mm512_load_si512((const void *)ix[j]);
        const __mmask16 hi = _mm512_test_epi32_mask(id, _mm512_set1_epi32(32));
        v[j] = _mm512_mask_permutexvar_epi32(_mm512_permutex2var_epi32(z0, id, z1), hi, id, z2);
    }
    x86_q4_K_scales16(v[0], v[1], v[2], sc, mp);
}

/* One super-block of 16 rows as lanes: q[8c + l] the transposed code dwords, sc/mp/d/dmin
 * as in x86_q4_K_x16; x[t][k] the activations; continues acc[t], t < C. */
static inline __attribute__((always_inline)) void x86_q4_K_x16_step(const __m512i *q, const __m512i *sc,
                                                                    const __m512i *mp, __m512 d, __m512 dmin,
                                                                    const edgellm_block_q8_K *const *x, int64_t k,
                                                                    const int C, __m512 *acc)
{
#ifdef X86_K_GFNI
    const __m512i gf_lo = _mm512_set1_epi64(X86_GF_LOW4), gf_hi = _mm512_set1_epi64(X86_GF_HIGH4);
#else
    const __m512i m4 = _mm512_set1_epi8(15);
#endif
    __m512i S[X86_K_MAX_C], M[X86_K_MAX_C];
    X86_UNROLL
    for (int t = 0; t < C; t++) S[t] = _mm512_setzero_si512(), M[t] = _mm512_setzero_si512();
    X86_UNROLL
    for (int c = 0; c < 4; c++) {
        __m512i P0[X86_K_MAX_C], P1[X86_K_MAX_C];
        X86_UNROLL
        for (int t = 0; t < C; t++) P0[t] = _mm512_setzero_si512(), P1[t] = _mm512_setzero_si512();
        X86_UNROLL
        for (int l = 0; l < 8; l++) {
            const __m512i v = _mm512_load_si512((const void *)&q[8 * c + l]);
#ifdef X86_K_GFNI
            const __m512i u0 = _mm512_gf2p8affine_epi64_epi8(v, gf_lo, 0), u1 = _mm512_gf2p8affine_epi64_epi8(v, gf_hi, 0);
#else
            const __m512i u0 = _mm512_and_si512(v, m4), u1 = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
#endif
            X86_UNROLL
            for (int t = 0; t < C; t++) {
                int32_t a0, a1;
                memcpy(&a0, x[t][k].qs + 64 * c + 4 * l, 4);
                memcpy(&a1, x[t][k].qs + 64 * c + 32 + 4 * l, 4);
                P0[t] = _mm512_dpbusd_epi32(P0[t], u0, _mm512_set1_epi32(a0));
                P1[t] = _mm512_dpbusd_epi32(P1[t], u1, _mm512_set1_epi32(a1));
            }
        }
        X86_UNROLL
        for (int t = 0; t < C; t++)
            S[t] = _mm512_add_epi32(S[t], _mm512_add_epi32(_mm512_mullo_epi32(P0[t], sc[2 * c]),
                                                           _mm512_mullo_epi32(P1[t], sc[2 * c + 1])));
    }
    X86_UNROLL
    for (int t = 0; t < C; t++) {
        X86_UNROLL
        for (int j = 0; j < 8; j++) {
            int32_t bp;
            memcpy(&bp, x[t][k].bsums + 2 * j, 4);
            M[t] = _mm512_dpwssd_epi32(M[t], mp[j], _mm512_set1_epi32(bp));
        }
        const __m512 dx = _mm512_set1_ps(x[t][k].d);
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[t]), _mm512_mul_ps(d, dx), acc[t]);
        acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(M[t]), _mm512_mul_ps(dmin, dx), acc[t]);
    }
}

/* y[t] (lane r: row r) continues the float chain of the 16 rows over the nk super-blocks
 * B[0 .. nk-1], whose activations are x[t][0 .. nk-1], t < C. */
static inline __attribute__((always_inline)) void x86_q4_K_x16_tile(const x86_q4_K_x16 *B, int64_t nk,
                                                                    const edgellm_block_q8_K *const *x,
                                                                    const int C, __m512 *y)
{
    __m512 acc[X86_K_MAX_C];
    X86_UNROLL
    for (int t = 0; t < C; t++) acc[t] = y[t];
    for (int64_t k = 0; k < nk; k++) x86_q4_K_x16_step(B[k].q, B[k].sc, B[k].mp, B[k].d, B[k].dmin, x, k, C, acc);
    X86_UNROLL
    for (int t = 0; t < C; t++) y[t] = acc[t];
}


/* x86_q45_K_tile over Q5_K super-blocks. */
static inline __attribute__((always_inline)) void x86_q5_K_tile(const edgellm_block_q5_K *w,
                                                                const edgellm_block_q8_K *const *x, int64_t nb,
                                                                const int C, __m512 *v, const size_t pf)
{
    x86_q45_K_tile((const uint8_t *)w, sizeof *w, 1, x, nb, C, v, pf);
}

/* ---- Q6_K: one float chain per (row, token) ----
 *
 * Every AVX-512 Q6_K kernel computes, for a row and a token, over the super-blocks i in order
 * from y = 0:
 *     S_i = Σ_j sc_j · Σ_{e in sub-block j} (u_e - 32)·x_e     exact int32 (|S| < 2^29)
 *     y = fma(float(S_i), d_i·d_x,i, y)
 * (u_e the 6-bit code, sc_j the 16 signed sub-block scales; d·d_x one float multiply), so
 * any way of getting S_i gives the same y bit for bit. Two ways, as for Q4_K:
 *   x86_q6_K_sb    one row: codes by VPMADDUBSW against the activations, scaled by VPDPWSSD,
 *                  the -32 offset by a VPDPWSSD of -32·sc against the bsums; 16 lanes summed
 *                  to S_i;
 *   x86_q6_K_x16   16 rows as lanes: the ql and qh bytes transposed by dwords, one VPDPBUSD
 *                  per 4 codes of 16 rows against 4 broadcast activation bytes into a
 *                  sub-block sum P_j started at -32·bsums_j, then S = Σ_j VPMULLD(P_j, sc_j).
 */

/* Super-block i of one Q6_K row b, tokens t < C: S[t] 16 lanes whose (wrapping) sum is S_i. */
static inline __attribute__((always_inline)) void x86_q6_K_sb(const edgellm_block_q6_K *b,
                                                              const edgellm_block_q8_K *const *x, int64_t i,
                                                              const int C, __m512i *S)
{
    const __m512i m4 = _mm512_set1_epi8(15);
#ifdef X86_K_GFNI
    /* per 256-bit half: qh bits 0-1 | 2-3 (gf_lo), 4-5 | 6-7 (gf_hi) moved to bits 4-5 */
    const __m512i gf_lo = x86_join(_mm256_set1_epi64x(X86_GF_BITS(0)), _mm256_set1_epi64x(X86_GF_BITS(2)));
    const __m512i gf_hi = x86_join(_mm256_set1_epi64x(X86_GF_BITS(4)), _mm256_set1_epi64x(X86_GF_BITS(6)));
#else
    /* per 256-bit half: which 2 bits of qh, and the word shift that moves them to bits 4-5 */
    const __m512i mlo = x86_join(_mm256_set1_epi8(0x03), _mm256_set1_epi8(0x0c));
    const __m512i mhi = x86_join(_mm256_set1_epi8(0x30), _mm256_set1_epi8((char)0xc0));
    const __m512i shl = x86_join(_mm256_set1_epi16(4), _mm256_set1_epi16(2));
    const __m512i shr = x86_join(_mm256_set1_epi16(0), _mm256_set1_epi16(2));
#endif
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b->scales));
    const __m512i sz = _mm512_castsi256_si512(sc16);
    X86_UNROLL
    for (int t = 0; t < C; t++) S[t] = _mm512_setzero_si512();
    X86_UNROLL
    for (int h = 0; h < 2; h++) {
        const __m512i l = _mm512_loadu_si512((const void *)(b->ql + 64 * h));
        const __m512i q = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b->qh + 32 * h)));
#ifdef X86_K_GFNI
        const __m512i hlo = _mm512_gf2p8affine_epi64_epi8(q, gf_lo, 0);
        const __m512i hhi = _mm512_gf2p8affine_epi64_epi8(q, gf_hi, 0);
#else
        const __m512i hlo = _mm512_sllv_epi16(_mm512_and_si512(q, mlo), shl);
        const __m512i hhi = _mm512_srlv_epi16(_mm512_and_si512(q, mhi), shr);
#endif
        /* (A & C) | B with A = nibbles, B = high bits at 4-5, C = 0x0f: imm 0xEC */
        const __m512i ulo = _mm512_ternarylogic_epi32(l, hlo, m4, 0xEC);
        const __m512i uhi = _mm512_ternarylogic_epi32(_mm512_srli_epi16(l, 4), hhi, m4, 0xEC);
        const __m512i slo = _mm512_permutexvar_epi16(_mm512_load_si512((const void *)x86_q6_K_sidx[2 * h]), sz);
        const __m512i shi = _mm512_permutexvar_epi16(_mm512_load_si512((const void *)x86_q6_K_sidx[2 * h + 1]), sz);
        X86_UNROLL
        for (int t = 0; t < C; t++) {
            const __m512i ylo = _mm512_loadu_si512((const void *)(x[t][i].qs + 128 * h));
            const __m512i yhi = _mm512_loadu_si512((const void *)(x[t][i].qs + 128 * h + 64));
            S[t] = _mm512_dpwssd_epi32(S[t], _mm512_maddubs_epi16(ulo, ylo), slo);
            S[t] = _mm512_dpwssd_epi32(S[t], _mm512_maddubs_epi16(uhi, yhi), shi);
        }
    }
    /* -32·sc in words 0-15, zeros above: the offset meets bsums in lanes 0-7 only */
    const __m512i off = _mm512_zextsi256_si512(_mm256_mullo_epi16(sc16, _mm256_set1_epi16(-32)));
    X86_UNROLL
    for (int t = 0; t < C; t++)
        S[t] = _mm512_dpwssd_epi32(S[t], off, _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)x[t][i].bsums)));
}

/* y[t] = dot(row w, x[t]) over nb Q6_K super-blocks, t < C, each super-block's lanes summed
 * on their own (the vec_dot); pf: x86_prefetch_l2's distance (0 = none). */
static inline __attribute__((always_inline)) void x86_q6_K_row(const edgellm_block_q6_K *w,
                                                               const edgellm_block_q8_K *const *x, int64_t nb,
                                                               const int C, float *y, const size_t pf)
{
    float acc[X86_K_MAX_C];
    X86_UNROLL
    for (int t = 0; t < C; t++) acc[t] = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        x86_prefetch_l2(&w[i], pf, sizeof w[i]);
        __m512i S[X86_K_MAX_C];
        x86_q6_K_sb(&w[i], x, i, C, S);
        const float d = x86_h2f(w[i].d);
        X86_UNROLL
        for (int t = 0; t < C; t++)
            acc[t] = __builtin_fmaf((float)_mm512_reduce_add_epi32(S[t]), d * x[t][i].d, acc[t]);
    }
    X86_UNROLL
    for (int t = 0; t < C; t++) y[t] = acc[t];
}

/* One super-block of 16 Q6_K rows, rows as lanes (lane r = row r): ql[p] holds in dword r
 * the ql bytes 4p .. 4p+3 of row r, qh[q] its qh bytes 4q .. 4q+3; sc[j] row r's scale of
 * sub-block j (sign-extended); d converted. 4160 bytes. */
typedef struct {
    __m512i ql[32];
    __m512i qh[16];
    __m512i sc[16];
    __m512 d;
} x86_q6_K_x16;

/* o = super-block i of the 16 Q6_K rows w[0..15] (repeat a row to fill a partial group):
 * the code bytes by three 16 × 16 dword transposes, the scales and d gathered a dword per
 * row (within the block: the d by the dword at byte 206). */
static inline void x86_q6_K_x16_build(const edgellm_block_q6_K *const *w, int64_t i, x86_q6_K_x16 *o)
{
    X86_UNROLL
    for (int h = 0; h < 3; h++) {
        __m512i v[16];
        X86_UNROLL
        for (int r = 0; r < 16; r++)
            v[r] = _mm512_loadu_si512((const void *)(h < 2 ? w[r][i].ql + 64 * h : w[r][i].qh));
        x86_transpose16x16(v);
        X86_UNROLL
        for (int k = 0; k < 16; k++) _mm512_store_si512((void *)(h < 2 ? &o->ql[16 * h + k] : &o->qh[k]), v[k]);
    }
    const uint8_t *b0 = (const uint8_t *)&w[0][i];
    int32_t off[16] __attribute__((aligned(64)));
    for (int r = 0; r < 16; r++) off[r] = (int32_t)((const uint8_t *)&w[r][i] - b0);
    const __m512i ix = _mm512_load_si512((const void *)off);
    X86_UNROLL
    for (int k = 0; k < 4; k++) {
        const __m512i g = _mm512_i32gather_epi32(ix, (const void *)(b0 + offsetof(edgellm_block_q6_K, scales) + 4 * k), 1);
        X86_UNROLL
        for (int m = 0; m < 4; m++) o->sc[4 * k + m] = _mm512_srai_epi32(_mm512_slli_epi32(g, 24 - 8 * m), 24);
    }
    const __m512i dd = _mm512_i32gather_epi32(ix, (const void *)(b0 + offsetof(edgellm_block_q6_K, d) - 2), 1);
    o->d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16)));
}

/* One super-block of 16 Q6_K rows as lanes: ql/qh the transposed code dwords, sc the 16
 * scales, d as in x86_q6_K_x16; x[t][k] the activations; continues acc[t], t < C. Element
 * 128h + 32s + 4c + (0..3) (sub-block 8h + 2s + c/4) is, per row, the low (s < 2) or high
 * nibble of ql dword 16h + 8(s & 1) + c with bits 2s, 2s+1 of qh dword 8h + c at bits 4-5. */
static inline __attribute__((always_inline)) void x86_q6_K_x16_step(const __m512i *ql, const __m512i *qh,
                                                                    const __m512i *sc, __m512 d,
                                                                    const edgellm_block_q8_K *const *x, int64_t k,
                                                                    const int C, __m512 *acc)
{
    const __m512i m4 = _mm512_set1_epi8(15);
#ifdef X86_K_GFNI
    const __m512i gf[4] = {_mm512_set1_epi64(X86_GF_BITS(0)), _mm512_set1_epi64(X86_GF_BITS(2)),
                           _mm512_set1_epi64(X86_GF_BITS(4)), _mm512_set1_epi64(X86_GF_BITS(6))};
#else
    const __m512i m30 = _mm512_set1_epi8(0x30);
#endif
    __m512i S[X86_K_MAX_C];
    X86_UNROLL
    for (int t = 0; t < C; t++) S[t] = _mm512_setzero_si512();
    X86_UNROLL
    for (int h = 0; h < 2; h++) {
        X86_UNROLL
        for (int cc = 0; cc < 2; cc++) {
            X86_UNROLL
            for (int hi = 0; hi < 2; hi++) {              /* s = 2hi (ql dword c), 2hi + 1 (c + 8) */
                __m512i P[X86_K_MAX_C][2];
                X86_UNROLL
                for (int t = 0; t < C; t++)
                    X86_UNROLL
                    for (int e = 0; e < 2; e++) P[t][e] = _mm512_set1_epi32(-32 * (int32_t)x[t][k].bsums[8 * h + cc + 2 * (2 * hi + e)]);
                X86_UNROLL
                for (int c4 = 0; c4 < 4; c4++) {
                    const int c = 4 * cc + c4;
                    const __m512i qv = _mm512_load_si512((const void *)&qh[8 * h + c]);
                    __m512i u[2];
                    X86_UNROLL
                    for (int e = 0; e < 2; e++) {
                        const int s = 2 * hi + e;
                        const __m512i l = _mm512_load_si512((const void *)&ql[16 * h + 8 * e + c]);
                        const __m512i nib = hi ? _mm512_srli_epi16(l, 4) : l;
#ifdef X86_K_GFNI
                        const __m512i hb = _mm512_gf2p8affine_epi64_epi8(qv, gf[s], 0);
#else
                        const __m512i hb = _mm512_and_si512(s == 0 ? _mm512_slli_epi16(qv, 4)
                                                            : s == 1 ? _mm512_slli_epi16(qv, 2)
                                                            : s == 2 ? qv : _mm512_srli_epi16(qv, 2), m30);
#endif
                        u[e] = _mm512_ternarylogic_epi32(nib, hb, m4, 0xEC);
                    }
                    X86_UNROLL
                    for (int t = 0; t < C; t++)
                        X86_UNROLL
                        for (int e = 0; e < 2; e++) {
                            int32_t a4;
                            memcpy(&a4, x[t][k].qs + 128 * h + 32 * (2 * hi + e) + 4 * c, 4);
                            P[t][e] = _mm512_dpbusd_epi32(P[t][e], u[e], _mm512_set1_epi32(a4));
                        }
                }
                X86_UNROLL
                for (int t = 0; t < C; t++)
                    X86_UNROLL
                    for (int e = 0; e < 2; e++)
                        S[t] = _mm512_add_epi32(S[t], _mm512_mullo_epi32(P[t][e], sc[8 * h + cc + 2 * (2 * hi + e)]));
            }
        }
    }
    X86_UNROLL
    for (int t = 0; t < C; t++)
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[t]), _mm512_mul_ps(d, _mm512_set1_ps(x[t][k].d)), acc[t]);
}

/* y[t] (lane r: row r) continues the float chain of the 16 rows over the nk super-blocks
 * B[0 .. nk-1], whose activations are x[t][0 .. nk-1], t < C. */
static inline __attribute__((always_inline)) void x86_q6_K_x16_tile(const x86_q6_K_x16 *B, int64_t nk,
                                                                    const edgellm_block_q8_K *const *x,
                                                                    const int C, __m512 *y)
{
    __m512 acc[X86_K_MAX_C];
    X86_UNROLL
    for (int t = 0; t < C; t++) acc[t] = y[t];
    for (int64_t k = 0; k < nk; k++) x86_q6_K_x16_step(B[k].ql, B[k].qh, B[k].sc, B[k].d, x, k, C, acc);
    X86_UNROLL
    for (int t = 0; t < C; t++) y[t] = acc[t];
}

#endif
