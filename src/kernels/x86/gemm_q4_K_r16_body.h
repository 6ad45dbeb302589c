/*
 * gemm_q4_K_r16_body.h — the tile kernel of Q4_K weights in the repacked layout q4_K_r16
 * (../repack.h) × Q8_K activations, AVX-512 + VNNI, written once and compiled twice: by
 * gemm_q4_K_r16_avx512.c (edgellm_gemm_q4_K_r16_avx512) and, with X86_K_GFNI defined, by
 * gemm_q4_K_r16_avx512_gfni.c (_gfni).
 *
 * Arithmetic: k_avx512.h's Q4_K steps for every (row, token), unchanged: the same 16
 * int32 lanes S per super-block (lane l < 8: sub-block 2c, l >= 8: 2c + 1, summed over the
 * chunks c), the same M = VPMADDWD(mins, bsums), then
 *     acc  = fma(float(S), d·d_x, acc),  accm = fnmadd(float(M), dmin·d_x, accm),
 *     y    = x86_hsum16(acc + [accm | 0])
 * so results equal edgellm_gemm_q4_K_avx512 on the plain rows bit for bit (the products
 * d·d_x and dmin·d_x are single float multiplies either way). What the layout changes:
 *   - codes: one aligned 64-byte load per two chunks, & 15 and >> 4 (one GF2P8AFFINEQB
 *     each with GFNI), instead of a 32-byte broadcast, a variable shift and a mask per chunk;
 *   - the d·d_x and dmin·d_x of the 16 rows of a group are computed by two 16-lane
 *     multiplies per token and super-block into a small table, from which each (row,
 *     token) broadcasts its pair by a load, instead of a multiply and three shuffles.
 * Loop order: per 16-row group, per tile of 4 tokens (the last 1-3 tokens in one tile),
 * the table, then the rows; rows of 28 super-blocks and more in pieces of at most 12
 * super-blocks, all rows of the group per piece, so that the tile's activations stay in L1
 * (the accumulators carried from piece to piece: the same sums in the same order). Decode
 * (n = 1) unpacks the 16 rows' scales of a group at once by vector operations
 * (r16_scales16: the same integers as per row), prefetches the next group's head, and
 * reduces the 16 rows' lanes at once by gemm_hsum16x16_store (the same tree as
 * x86_hsum16).
 */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__)
#include "../gemm.h"
#include "kernels_x86.h"
#include "gemm_avx512.h"
#include "k_avx512.h"

#define R16_TC 4                                  /* tokens per prefill tile            */
#define R16_HEAD 256                              /* head bytes per group, super-block  */
#define R16_MAX_NB (EDGELLM_GEMM_R16_MAX_COLS / EDGELLM_QK_K)
#define R16_KB_MAX 12                             /* prefill: super-blocks per piece ..  */
#define R16_KB_FROM 28                            /* .. of rows this long and longer     */

/* tab[(i·C + t)·32 + k] = d_k·d_x(t), [.. + 16 + k] = dmin_k·d_x(t), super-block i, group head. */
static inline __attribute__((always_inline)) void r16_table(const uint8_t *head, const edgellm_block_q8_K *const *x,
                                                            int64_t nb, const int C, float *tab)
{
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *h = head + (size_t)i * R16_HEAD;
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)h));
        const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + 32)));
        X86_UNROLL
        for (int t = 0; t < C; t++) {
            const __m512 dx = _mm512_set1_ps(x[t][i].d);
            _mm512_store_ps(tab + (i * C + t) * 32, _mm512_mul_ps(d, dx));
            _mm512_store_ps(tab + (i * C + t) * 32 + 16, _mm512_mul_ps(dm, dx));
        }
    }
}

/* The scale and min words of the 16 rows of a group for one super-block, as
 * x86_q4_K_scales gives them row by row: sc[2k] = row k's 8 scale bytes, sc[2k + 1] its 8
 * min bytes, k = 0..15, from the head's 16 × 12 scale bytes at q. The same integer
 * operations on 16 rows at once: the rows' dwords a, b, c (bytes 0-3, 4-7, 8-11) gathered
 * into three vectors, then sc = [a & 0x3f.., (c & 0x0f..) | (a >> 2 & 0x30..)] and
 * m = [b & 0x3f.., (c >> 4 & 0x0f..) | (b >> 2 & 0x30..)], transposed to pairs by
 * unpacks. Vector position p = 4L + s holds row 4s + L, so that the unpacks leave rows
 * 4s..4s+3 in output vector s (128-bit lane L: row 4s + L). */
static inline __attribute__((always_inline)) void r16_scales16(const uint8_t *q, uint64_t *sc)
{
    static const int32_t ix[3][16] __attribute__((aligned(64))) = {
#define R16_P(o) {3 * 0 + (o), 3 * 4 + (o), 3 * 8 + (o), 3 * 12 + (o), 3 * 1 + (o), 3 * 5 + (o), 3 * 9 + (o), \
                  3 * 13 + (o), 3 * 2 + (o), 3 * 6 + (o), 3 * 10 + (o), 3 * 14 + (o), 3 * 3 + (o), 3 * 7 + (o), \
                  3 * 11 + (o), 3 * 15 + (o)}
        R16_P(0), R16_P(1), R16_P(2)
#undef R16_P
    };
    const __m512i z0 = _mm512_loadu_si512((const void *)q), z1 = _mm512_loadu_si512((const void *)(q + 64)),
                  z2 = _mm512_loadu_si512((const void *)(q + 128));
    __m512i v[3];
    X86_UNROLL
    for (int j = 0; j < 3; j++) {
        const __m512i id = _mm512_load_si512((const void *)ix[j]);
        /* dword indices 0-31 from z0:z1, 32-47 from z2 (index bit 5 set) */
        const __mmask16 hi = _mm512_test_epi32_mask(id, _mm512_set1_epi32(32));
        v[j] = _mm512_mask_permutexvar_epi32(_mm512_permutex2var_epi32(z0, id, z1), hi, id, z2);
    }
    const __m512i m3f = _mm512_set1_epi32(0x3f3f3f3f), m0f = _mm512_set1_epi32(0x0f0f0f0f),
                  m30 = _mm512_set1_epi32(0x30303030);
    const __m512i sc_lo = _mm512_and_si512(v[0], m3f), m_lo = _mm512_and_si512(v[1], m3f);
    /* ternary 0xEA: (A & B) | C */
    const __m512i sc_hi = _mm512_ternarylogic_epi32(_mm512_srli_epi32(v[0], 2), m30, _mm512_and_si512(v[2], m0f), 0xEA);
    const __m512i m_hi = _mm512_ternarylogic_epi32(_mm512_srli_epi32(v[1], 2), m30,
                                                   _mm512_and_si512(_mm512_srli_epi32(v[2], 4), m0f), 0xEA);
    const __m512i t0 = _mm512_unpacklo_epi32(sc_lo, sc_hi), t1 = _mm512_unpackhi_epi32(sc_lo, sc_hi);
    const __m512i t2 = _mm512_unpacklo_epi32(m_lo, m_hi), t3 = _mm512_unpackhi_epi32(m_lo, m_hi);
    _mm512_storeu_si512((void *)(sc + 0), _mm512_unpacklo_epi64(t0, t2));
    _mm512_storeu_si512((void *)(sc + 8), _mm512_unpackhi_epi64(t0, t2));
    _mm512_storeu_si512((void *)(sc + 16), _mm512_unpacklo_epi64(t1, t3));
    _mm512_storeu_si512((void *)(sc + 24), _mm512_unpackhi_epi64(t1, t3));
}

/* Super-blocks [i0, i1) of row k of the group for tokens t < C, accumulated into acc[t]
 * (16 lanes, the scales' part) and accm[t] (8 lanes, the mins' part) in super-block order:
 * started from zero over [0, nb), acc[t] + [accm[t] | 0] are the 16 lanes whose x86_hsum16
 * is dot(row k, x[t]), whether the range is walked at once or in consecutive pieces. tab:
 * r16_table's for the same C. scp: the row's scale and min words of super-block i at
 * scp[32·i], scp[32·i + 1] (r16_scales16's table from row k's pair on), or NULL: unpacked
 * here by x86_q4_K_scales. */
static inline __attribute__((always_inline)) void r16_tile(const uint8_t *codes, const uint8_t *head, const int k,
                                                           const float *tab, const edgellm_block_q8_K *const *x,
                                                           int64_t i0, int64_t i1, const int C, const size_t pf,
                                                           const uint64_t *scp, __m512 *acc_io, __m256 *accm_io)
{
    /* local copies: the vector types may alias the float table, so accumulating through
     * the pointers would keep them in memory */
    __m512 acc[R16_TC];
    __m256 accm[R16_TC];
    X86_UNROLL
    for (int t = 0; t < C; t++) acc[t] = acc_io[t], accm[t] = accm_io[t];
#ifdef X86_K_GFNI
    const __m512i gf_lo = _mm512_set1_epi64(X86_GF_LOW4), gf_hi = _mm512_set1_epi64(X86_GF_HIGH4);
#else
    const __m512i m4 = _mm512_set1_epi8(15);
#endif
    for (int64_t i = i0; i < i1; i++) {
        const uint8_t *c = codes + (size_t)i * 128;
        x86_prefetch_l2(c, pf, 128);
        uint64_t sc, mn;
        if (scp) sc = scp[32 * i], mn = scp[32 * i + 1];
        else x86_q4_K_scales(head + (size_t)i * R16_HEAD + 64 + 12 * k, &sc, &mn);
        const __m512i bsc = _mm512_set1_epi64((long long)sc);
        const __m256i mins = _mm256_shuffle_epi8(_mm256_set1_epi64x((long long)mn),
                                                 _mm256_load_si256((const __m256i *)x86_q4_K_ctl[4]));
        __m512i S[R16_TC];
        X86_UNROLL
        for (int t = 0; t < C; t++) S[t] = _mm512_setzero_si512();
        X86_UNROLL
        for (int p = 0; p < 2; p++) {
            const __m512i q = _mm512_load_si512((const void *)(c + 64 * p));
#ifdef X86_K_GFNI
            const __m512i u[2] = {_mm512_gf2p8affine_epi64_epi8(q, gf_lo, 0), _mm512_gf2p8affine_epi64_epi8(q, gf_hi, 0)};
#else
            const __m512i u[2] = {_mm512_and_si512(q, m4), _mm512_and_si512(_mm512_srli_epi16(q, 4), m4)};
#endif
            X86_UNROLL
            for (int h = 0; h < 2; h++) {
                const int ch = 2 * p + h;
                const __m512i s = _mm512_shuffle_epi8(bsc, _mm512_load_si512((const void *)x86_q4_K_ctl[ch]));
                X86_UNROLL
                for (int t = 0; t < C; t++) {
                    const __m512i y = _mm512_loadu_si512((const void *)(x[t][i].qs + 64 * ch));
                    S[t] = _mm512_dpwssd_epi32(S[t], _mm512_maddubs_epi16(u[h], y), s);
                }
            }
        }
        X86_UNROLL
        for (int t = 0; t < C; t++) {
            const float *f = tab + (i * C + t) * 32;
            const __m256i M = _mm256_madd_epi16(mins, _mm256_loadu_si256((const __m256i *)x[t][i].bsums));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[t]), _mm512_set1_ps(f[k]), acc[t]);
            accm[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(M), _mm256_set1_ps(f[16 + k]), accm[t]);
        }
    }
    X86_UNROLL
    for (int t = 0; t < C; t++) acc_io[t] = acc[t], accm_io[t] = accm[t];
}

/* v[t] = the 16 lanes of dot(row k, x[t]) over all nb super-blocks (r16_tile from zero). */
static inline __attribute__((always_inline)) void r16_row(const uint8_t *codes, const uint8_t *head, const int k,
                                                          const float *tab, const edgellm_block_q8_K *const *x,
                                                          int64_t nb, const int C, __m512 *v, const size_t pf,
                                                          const uint64_t *scp)
{
    __m512 acc[R16_TC];
    __m256 accm[R16_TC];
    X86_UNROLL
    for (int t = 0; t < C; t++) {
        acc[t] = _mm512_setzero_ps();
        accm[t] = _mm256_setzero_ps();
    }
    r16_tile(codes, head, k, tab, x, 0, nb, C, pf, scp, acc, accm);
    X86_UNROLL
    for (int t = 0; t < C; t++) v[t] = _mm512_add_ps(acc[t], _mm512_zextps256_ps512(accm[t]));
}

/* Rows [ra, rb) of group g (ra, rb inside it), tokens t0 .. t0+C-1. */
static inline __attribute__((always_inline)) void r16_rows(const edgellm_gemm_args *a, int64_t nb, int64_t g,
                                                           int64_t ra, int64_t rb, int64_t t0, const int C, float *tab)
{
    const uint8_t *head = a->w2 + (size_t)g * (size_t)nb * R16_HEAD;
    const edgellm_block_q8_K *x[R16_TC];
    for (int c = 0; c < C; c++) x[c] = (const edgellm_block_q8_K *)(a->xq + (size_t)(t0 + c) * a->xq_row_bytes);
    r16_table(head, x, nb, C, tab);
    if (a->n == 1) {
        /* the next group's head into L1 while this group's rows stream their codes, and
         * this group's 16 rows' scales unpacked at once into sct (row k: [k·nb·2 ..]), so
         * that the rows read their codes alone */
        if ((g + 1) * 16 < a->r1) {
            const uint8_t *nh = head + (size_t)nb * R16_HEAD;
            for (int64_t i = 0; i < nb * (R16_HEAD / 64); i++) _mm_prefetch((const char *)(nh + 64 * i), _MM_HINT_T0);
        }
        uint64_t sct[16 * 2 * nb] __attribute__((aligned(64)));   /* <= 32 KiB; 5.5 KiB at nb 22 */
        for (int64_t i = 0; i < nb; i++) r16_scales16(head + (size_t)i * R16_HEAD + 64, &sct[32 * i]);
        __m512 v[16];
        for (int64_t r = ra; r < ra + 16; r++) {
            if (r < rb) r16_row(a->w + (size_t)r * (size_t)nb * 128, head, (int)(r - 16 * g), tab, x, nb, 1, &v[r - ra],
                                 a->prefetch, &sct[(r - 16 * g) * 2]);
            else v[r - ra] = _mm512_setzero_ps();
        }
        gemm_hsum16x16_store(v, a->y + ra, (int)(rb - ra));
        return;
    }
    if (nb < R16_KB_FROM) {
        for (int64_t r = ra; r < rb; r++) {
            __m512 v[R16_TC];
            r16_row(a->w + (size_t)r * (size_t)nb * 128, head, (int)(r - 16 * g), tab, x, nb, C, v, 0, NULL);
            for (int c = 0; c < C; c++) a->y[(t0 + c) * a->ldy + r] = x86_hsum16(v[c]);
        }
        return;
    }
    /* Long rows: the C tokens' activations of all nb super-blocks no longer stay in L1
     * across the 16 rows (4 tokens × 43 × 292 bytes at 11008 columns), so the rows walk
     * them in pieces of at most R16_KB_MAX super-blocks, each row's accumulators kept in st
     * between pieces: the same fma sequence, the same results. Measured on the Zen 5 dev
     * VM (4 tokens, rows in L2): 0.70-0.89x the time at 28-56 super-blocks, but 1.05x at 22
     * and 1.1-1.2x at 13, hence only from R16_KB_FROM on. */
    const int64_t pieces = (nb + R16_KB_MAX - 1) / R16_KB_MAX, kb = (nb + pieces - 1) / pieces;
    __m512 st[16][R16_TC];
    __m256 stm[16][R16_TC];
    for (int64_t r = 0; r < rb - ra; r++)
        for (int c = 0; c < C; c++) st[r][c] = _mm512_setzero_ps(), stm[r][c] = _mm256_setzero_ps();
    for (int64_t i0 = 0; i0 < nb; i0 += kb) {
        const int64_t i1 = i0 + kb < nb ? i0 + kb : nb;
        for (int64_t r = ra; r < rb; r++)
            r16_tile(a->w + (size_t)r * (size_t)nb * 128, head, (int)(r - 16 * g), tab, x, i0, i1, C, 0, NULL,
                     st[r - ra], stm[r - ra]);
    }
    for (int64_t r = ra; r < rb; r++)
        for (int c = 0; c < C; c++)
            a->y[(t0 + c) * a->ldy + r] = x86_hsum16(_mm512_add_ps(st[r - ra][c], _mm512_zextps256_ps512(stm[r - ra][c])));
}

#ifdef X86_K_GFNI
#define R16_NAME edgellm_gemm_q4_K_r16_avx512_gfni
#else
#define R16_NAME edgellm_gemm_q4_K_r16_avx512
#endif
void R16_NAME(const edgellm_gemm_args *a)
{
    const int64_t nb = a->cols / EDGELLM_QK_K;
    if (nb < 1 || nb > R16_MAX_NB) return;                /* dispatch.c never hands these out */
    float tab[nb * R16_TC * 32] __attribute__((aligned(64)));   /* <= 64 KiB; 11 KiB at nb 22 */
    for (int64_t g = a->r0 / 16; g * 16 < a->r1; g++) {
        const int64_t ra = g * 16 > a->r0 ? g * 16 : a->r0, rb = g * 16 + 16 < a->r1 ? g * 16 + 16 : a->r1;
        int64_t t = 0;
        for (; t + R16_TC <= a->n; t += R16_TC) r16_rows(a, nb, g, ra, rb, t, R16_TC, tab);
        const int64_t rest = a->n - t;
        if (rest == 3) r16_rows(a, nb, g, ra, rb, t, 3, tab);
        else if (rest == 2) r16_rows(a, nb, g, ra, rb, t, 2, tab);
        else if (rest == 1) r16_rows(a, nb, g, ra, rb, t, 1, tab);
    }
}
#endif
