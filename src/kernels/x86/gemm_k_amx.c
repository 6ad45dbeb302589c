/*
 * gemm_k_amx.c — Q4_K weights in the load-time layout q4_K_x16 (repack.h) × Q8_K
 * activations with Intel AMX (AMX-TILE + AMX-INT8, Sapphire Rapids and later Xeons), for
 * prefill: edgellm_gemm_q4_K_x16_amx (contract in ../gemm.h). Below AMX_MIN_TOKENS tokens it
 * hands the whole product to the AVX-512 + GFNI layout kernel; the results are the same bits
 * either way.
 *
 * Arithmetic. Per row and token the AVX-512 kernels run one float chain over the
 * super-blocks (k_avx512.h, "Q4_K: one float chain"):
 *     acc = fma(float(S), d·d_x, acc);  acc = fnmadd(float(M), dmin·d_x, acc)
 * with the exact integers S = Σ_j sc_j·Σ_{e in sub-block j} q_e·x_e and M = Σ_j m_j·bsum_j.
 * Here S comes from the tile unit. Its signed × unsigned byte dot product TDPBSUD
 * (Intel SDM vol. 2, "TDPBSSD/TDPBSUD/TDPBUSD/TDPBUUD") computes, for A of M rows × K bytes
 * and B of K/4 rows × N dwords,
 *     C[m][n] += Σ_{k < K} A[m][k] · B[k / 4][4n + k % 4]      (int32, exact here)
 * A row m = token m's 64 activation bytes of sub-blocks 2c and 2c + 1 (Q8_K qs, packed
 * below); B row k = for the 16 rows n of the group, codes 4k..4k+3 of
 * sub-block 2c (k < 8) or 2c + 1 (k >= 8): exactly the low / high nibbles of the code
 * dwords q4_K_x16 stores (dword lane = row). The 6-bit scale would not fit a byte times the
 * 4-bit code, so it is split, sc = 8·hi + lo (hi, lo < 8), and two B tiles are made per
 * sub-block pair, code·hi and code·lo (<= 105, one VPERMI2B over the table (i & 15)·(i >> 4)
 * indexed by code | hi << 4): over the 4 pairs two accumulators C_hi, C_lo, and
 *     S = 8·C_hi + C_lo = Σ_j (8·hi_j + lo_j)·Σ q·x                    exactly,
 * (|C| <= 105·128·256 < 2^22). M is the same integer as the AVX-512 kernel's, summed in
 * another order (VPDPWSSD of [m_2k m_2k+1] against the sub-block sums of the pairs), so
 * both integers, and then every float step, are the same: results equal
 * edgellm_gemm_q4_K_x16_avx512 bit for bit (tests/test_gemm.c).
 *
 * Loop: tokens in blocks of AMX_TB, each block's activation bytes packed per super-block
 * ([nb][tokens][256], 64-byte aligned rows, the last tile's missing tokens zero) with their
 * sub-block sums and d_x beside them; then per 16-row group and super-block the B tiles
 * made once (8 KiB on the stack) and every pass of 32 tokens (two A tiles, four
 * accumulators: independent chains for the tile unit; the last pass may have one tile).
 * A pass's float steps run after the next pass's tile instructions are issued, so the
 * vector units work while the tile unit does; the chains live in a dense [tokens][16]
 * buffer and go to y (masked to the rows [r0, r1)) when the group is done. Tiles: 0-3
 * accumulators, 4-5 activations, 6-7 weights, all 16 rows × 64 bytes; configured per call
 * (LDTILECFG) and released at the end. The packed block (AMX_TB · (nb · 288 + 64) bytes,
 * ~0.8 MB for 5632 columns) is allocated per call; without memory the AVX-512 kernel runs.
 *
 * Measured on the 2-core Sapphire Rapids-class VM (AMX: ~16 ns per TDPBSUD of 16×16×64,
 * ~1 TMAC/s at best, tile loads ~9 ns), one thread, 2048 × 5632 Q4_K, 128 tokens, best of 5
 * interleaved calls: AVX-512 + GFNI layout kernel 12.7 ms, this one 5.1 ms (2.5x).
 *
 * The OS must grant the tile data state to the process first (Linux: arch_prctl
 * ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA; cpu_features.c asks for it and sets .amx only
 * when granted). cmake/KernelFlags.cmake compiles this file with -mamx-tile -mamx-int8
 * -mavx512vbmi -mgfni besides the AVX-512 set; dispatch.c hands it out where
 * edgellm_cpu_get_features()->amx.
 */
/* gcc spells the AMX macros __AMX_TILE__ / __AMX_INT8__, clang 14 __AMXTILE__ / __AMXINT8__. */
#if defined(__x86_64__) && (defined(__AMX_TILE__) || defined(__AMXTILE__)) &&                     \
    (defined(__AMX_INT8__) || defined(__AMXINT8__)) && defined(__AVX512VBMI__) && defined(__GFNI__) && \
    defined(__AVX512VNNI__)
#define X86_K_GFNI 1
#include "../gemm.h"
#include "../repack.h"
#include "kernels_x86.h"
#include "k_avx512.h"
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* From this many tokens the tile unit (fewer: the AVX-512 + GFNI layout kernel, whose
 * 4-token tiles need no packing and waste no tile rows). */
#define AMX_MIN_TOKENS 16

/* LDTILECFG's 64-byte operand (SDM vol. 1 §18.2, palette 1). */
typedef struct {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((packed, aligned(64))) amx_tilecfg;

static void amx_configure(void)
{
    amx_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    _tile_loadconfig(&cfg);
}

/* (i & 15)·(i >> 4), i < 128: code times a 3-bit scale part */
static const uint8_t amx_prod_table[128] __attribute__((aligned(64))) = {
#define P8(h) 0 * h, 1 * h, 2 * h, 3 * h, 4 * h, 5 * h, 6 * h, 7 * h, 8 * h, 9 * h, 10 * h, 11 * h, 12 * h, 13 * h, 14 * h, 15 * h
    P8(0), P8(1), P8(2), P8(3), P8(4), P8(5), P8(6), P8(7)
#undef P8
};

/* The weight tiles of one super-block of the group: bt[c][p] (p = 0: code·hi, 1: code·lo)
 * for the sub-block pair c, 16 rows of 64 bytes each (row k < 8: sub-block 2c, else 2c+1). */
typedef struct {
    uint8_t b[4][2][16][64];
} amx_q4_K_b;

static inline __attribute__((always_inline)) void amx_q4_K_make_b(const uint8_t *codes, const __m512i *sc,
                                                                   amx_q4_K_b *o)
{
    const __m512i t0 = _mm512_load_si512((const void *)amx_prod_table);
    const __m512i t1 = _mm512_load_si512((const void *)(amx_prod_table + 64));
    const __m512i m0f = _mm512_set1_epi8(15), ones = _mm512_set1_epi32(0x01010101);
    for (int c = 0; c < 4; c++) {
        __m512i hi[2], lo[2];                 /* (hi or lo of sc_j) << 4 in each byte of the lane */
        for (int e = 0; e < 2; e++) {
            const __m512i s = sc[2 * c + e];
            hi[e] = _mm512_mullo_epi32(_mm512_slli_epi32(_mm512_srli_epi32(s, 3), 4), ones);
            lo[e] = _mm512_mullo_epi32(_mm512_slli_epi32(_mm512_and_si512(s, _mm512_set1_epi32(7)), 4), ones);
        }
        for (int l = 0; l < 8; l++) {
            const __m512i v = _mm512_load_si512((const void *)(codes + 64 * (8 * c + l)));
            const __m512i vh = _mm512_srli_epi16(v, 4);
            /* (A & B) | C: imm 0xEA */
            const __m512i i0h = _mm512_ternarylogic_epi32(v, m0f, hi[0], 0xEA);
            const __m512i i0l = _mm512_ternarylogic_epi32(v, m0f, lo[0], 0xEA);
            const __m512i i1h = _mm512_ternarylogic_epi32(vh, m0f, hi[1], 0xEA);
            const __m512i i1l = _mm512_ternarylogic_epi32(vh, m0f, lo[1], 0xEA);
            _mm512_store_si512((void *)o->b[c][0][l], _mm512_permutex2var_epi8(t0, i0h, t1));
            _mm512_store_si512((void *)o->b[c][1][l], _mm512_permutex2var_epi8(t0, i0l, t1));
            _mm512_store_si512((void *)o->b[c][0][8 + l], _mm512_permutex2var_epi8(t0, i1h, t1));
            _mm512_store_si512((void *)o->b[c][1][8 + l], _mm512_permutex2var_epi8(t0, i1l, t1));
        }
    }
}

/* C_hi, C_lo of the 16·P tokens (P = 1, 2 tiles) whose activation rows start at a (64
 * bytes per sub-block pair, 256 per token: the packed rows) into cb[p][0..1] as
 * [16 tokens][16 rows] int32. */
static inline __attribute__((always_inline)) void amx_q4_K_tiles(const amx_q4_K_b *b, const uint8_t *a, const int P,
                                                                  int32_t (*cb)[2][256])
{
    _tile_zero(0);
    _tile_zero(1);
    if (P == 2) {
        _tile_zero(2);
        _tile_zero(3);
    }
    X86_UNROLL
    for (int c = 0; c < 4; c++) {
        _tile_loadd(4, a + 64 * c, 256);
        if (P == 2) _tile_loadd(5, a + 16 * 256 + 64 * c, 256);
        _tile_loadd(6, b->b[c][0], 64);
        _tile_loadd(7, b->b[c][1], 64);
        _tile_dpbsud(0, 4, 6);
        _tile_dpbsud(1, 4, 7);
        if (P == 2) {
            _tile_dpbsud(2, 5, 6);
            _tile_dpbsud(3, 5, 7);
        }
    }
    _tile_stored(0, cb[0][0], 64);
    _tile_stored(1, cb[0][1], 64);
    if (P == 2) {
        _tile_stored(2, cb[1][0], 64);
        _tile_stored(3, cb[1][1], 64);
    }
}

/* Per token and super-block, beside its packed activation bytes: the sums of its 8
 * sub-blocks (bs_j = bsums_2j + bsums_2j+1, |bs_j| <= 32·128, exact in int16) and d_x. */
typedef struct {
    int16_t bs[8];
    float d;
    uint8_t pad[12];
} amx_side;
_Static_assert(sizeof(amx_side) == 32, "amx_side: 32 bytes (the packed block stays 64-byte aligned)");

/* One super-block's head on 16 lanes for the float steps: d, dmin, and the mins in pairs,
 * mq[k] = m_2k | m_2k+1 << 16, so that M = Σ_k VPDPWSSD(mq[k], (bs_2k, bs_2k+1)): the same
 * products as x86_q4_K_x16_step's Σ_j m_j·(bsums_2j + bsums_2j+1), summed exactly. */
typedef struct {
    __m512 d, dmin;
    __m512i mq[4];
} amx_head;

/* A tile pass whose float steps are still to do (they run after the next pass's tile
 * instructions, so that the vector units work while the tile unit does). */
typedef struct {
    int64_t i;                   /* its super-block                                    */
    int t, cnt;                  /* first token in the block, tokens (<= 32)          */
    int cb, hb;                  /* its accumulator buffer, its head                   */
    const amx_side *side;        /* side data of token t                              */
} amx_pass;

/* The float steps of a pass: S = 8·C_hi + C_lo, M by VPDPWSSD, the two chain steps into
 * acc[t] (16 floats per token, the group's rows). */
static inline __attribute__((always_inline)) void amx_q4_K_finish(const amx_pass *p, const int32_t (*cb)[2][256],
                                                                   const amx_head *h, float *acc, int first)
{
    __m512i mq[4];
    X86_UNROLL
    for (int j = 0; j < 4; j++) mq[j] = h->mq[j];
    const __m512 d = h->d, dmin = h->dmin;
    for (int k = 0; k < p->cnt; k++) {
        const int32_t *ch = cb[k >> 4][0] + 16 * (k & 15), *cl = cb[k >> 4][1] + 16 * (k & 15);
        const amx_side *sd = p->side + k;
        const __m512i S = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512((const void *)ch), 3),
                                           _mm512_load_si512((const void *)cl));
        __m512i M = _mm512_setzero_si512();
        X86_UNROLL
        for (int j = 0; j < 4; j++) {
            int32_t bp;
            memcpy(&bp, sd->bs + 2 * j, 4);
            M = _mm512_dpwssd_epi32(M, mq[j], _mm512_set1_epi32(bp));
        }
        float *y = acc + 16 * (p->t + k);
        const __m512 dx = _mm512_set1_ps(sd->d);
        __m512 v = first ? _mm512_setzero_ps() : _mm512_load_ps(y);
        v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S), _mm512_mul_ps(d, dx), v);
        v = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(M), _mm512_mul_ps(dmin, dx), v);
        _mm512_store_ps(y, v);
    }
}

/* Tokens per block: the block's packed activations (TB · nb · 320 bytes) stay in L2 while
 * every group of rows runs over them. */
#define AMX_TB 128

void edgellm_gemm_q4_K_x16_amx(const edgellm_gemm_args *a)
{
    const int64_t nb = a->cols / EDGELLM_QK_K;
    const int64_t tb = a->n < AMX_TB ? (a->n + 15) / 16 * 16 : AMX_TB;
    /* packed rows [nb][tb][256], side data [nb][tb], accumulators [tb][16] */
    uint8_t *buf = a->n >= AMX_MIN_TOKENS ? aligned_alloc(64, (size_t)nb * (size_t)tb * (256 + sizeof(amx_side)) +
                                                                  (size_t)tb * 64)
                                          : NULL;
    if (!buf) {                     /* few tokens, or no memory: the AVX-512 layout kernel */
        edgellm_gemm_q4_K_x16_avx512_gfni(a);
        return;
    }
    uint8_t *xp = buf;
    amx_side *side = (amx_side *)(buf + (size_t)nb * (size_t)tb * 256);
    float *acc = (float *)(buf + (size_t)nb * (size_t)tb * (256 + sizeof(amx_side)));
    amx_q4_K_b b __attribute__((aligned(64)));
    amx_head head[2];
    int32_t cbuf[2][2][2][256] __attribute__((aligned(64)));
    amx_configure();
    for (int64_t t0 = 0; t0 < a->n; t0 += tb) {
        const int nt = (int)(a->n - t0 < tb ? a->n - t0 : tb), tpad = (nt + 15) / 16 * 16;
        for (int64_t i = 0; i < nb; i++) {          /* pack the block's activations */
            for (int t = 0; t < tpad; t++) {
                uint8_t *dst = xp + ((size_t)i * (size_t)tb + (size_t)t) * 256;
                amx_side *sd = side + (size_t)i * (size_t)tb + (size_t)t;
                if (t < nt) {
                    const edgellm_block_q8_K *x = (const edgellm_block_q8_K *)(a->xq + (size_t)(t0 + t) * a->xq_row_bytes) + i;
                    memcpy(dst, x->qs, 256);
                    for (int j = 0; j < 8; j++) sd->bs[j] = (int16_t)(x->bsums[2 * j] + x->bsums[2 * j + 1]);
                    sd->d = x->d;
                } else {
                    memset(dst, 0, 256);   /* a partial tile's rows past the tokens */
                }
            }
        }
        for (int64_t g = a->r0 / 16; g * 16 < a->r1; g++) {
            const int64_t lo = g * 16 > a->r0 ? g * 16 : a->r0, hi = g * 16 + 16 < a->r1 ? g * 16 + 16 : a->r1;
            const __mmask16 live = (__mmask16)(((1u << (hi - 16 * g)) - 1) & ~((1u << (lo - 16 * g)) - 1));
            const uint8_t *blk = a->w + (size_t)g * (size_t)nb * EDGELLM_X16_BLOCK;
            amx_pass pend = {0};
            int have = 0, cur = 0;
            for (int64_t i = 0; i < nb; i++, blk += EDGELLM_X16_BLOCK) {
                const int hb = (int)(i & 1);
                __m512i sc[8], mp[8];
                x86_q4_K_x16_head(blk, &head[hb].d, &head[hb].dmin, sc, mp);
                for (int k = 0; k < 4; k++)        /* words: m_2k (even), m_2k+1 (odd) */
                    head[hb].mq[k] = _mm512_mask_blend_epi16(0xAAAAAAAAu, mp[2 * k], mp[2 * k + 1]);
                amx_q4_K_make_b(blk + EDGELLM_X16_CODES, sc, &b);
                const uint8_t *xi = xp + (size_t)i * (size_t)tb * 256;
                for (int t = 0; t < tpad; t += 32) {
                    if (t + 32 <= tpad) amx_q4_K_tiles(&b, xi + (size_t)t * 256, 2, cbuf[cur]);
                    else amx_q4_K_tiles(&b, xi + (size_t)t * 256, 1, cbuf[cur]);
                    if (have) amx_q4_K_finish(&pend, cbuf[pend.cb], &head[pend.hb], acc, pend.i == 0);
                    pend = (amx_pass){i, t, nt - t < 32 ? nt - t : 32, cur, hb, side + (size_t)i * (size_t)tb + (size_t)t};
                    have = 1;
                    cur ^= 1;
                }
            }
            amx_q4_K_finish(&pend, cbuf[pend.cb], &head[pend.hb], acc, pend.i == 0);
            for (int t = 0; t < nt; t++)
                _mm512_mask_storeu_ps(a->y + (t0 + t) * a->ldy + 16 * g, live, _mm512_load_ps(acc + 16 * t));
        }
    }
    _tile_release();
    free(buf);
}
#elif defined(__x86_64__)
/* dispatch.c names edgellm_gemm_q4_K_x16_amx on every x86-64 build: fail here, not at link. */
#error "gemm_k_amx.c: compiled without the X86_AMX flags of cmake/KernelFlags.cmake (or a compiler that lacks AMX-TILE/AMX-INT8)"
#endif
