/*
 * gemm_q8_avx512.c — tile kernels for Q4_0 and Q8_0 weights × Q8_0 activations,
 * AVX-512 + VNNI (contract and arithmetic in ../gemm.h; block layouts in blocks.h).
 *
 * One 512-bit lane per weight row, 16 rows per tile. For a chunk of KC blocks the tile's
 * weights are first transposed ("packed") into a small L1 buffer:
 *
 *     packed[b].g[k] lane p = codes 4k..4k+3 of block b of row perm(p), as u8
 *     packed[b].d    lane p = d_w of that block, as float
 *
 * (Q4_0: nibble codes q = w+8, 0..15; Q8_0: w+128 = w XOR 0x80.) perm(p) = 4(p%4) + p/4 is
 * the order a 16×4-dword transpose by unpack instructions leaves the rows in; outputs are
 * put back in row order when stored. Then for each token:
 *
 *     s = corr_x (= -o·Σx, the offset correction, from the activation slab)
 *     s = VPDPBUSD(s, g[k], broadcast(x codes 4k..4k+3))   for k = 0..7
 *         -> lane p: Σ (q-o)·x over the block, exact (|s| <= 32·255·128 < 2^31)
 *     acc = fma(float(s), d · d_x, acc)
 *
 * Tokens go in groups of 8 (the activation slabs, prep below), all 8 accumulators in
 * registers, each packed block loaded once per group. The weight rows are read once per
 * 64-token chunk (the accumulators of 64 tokens × 16 rows live in a 4 KiB buffer between
 * block chunks). The arithmetic per output never depends on n, the group or the tile.
 * Tolerance against the traits' ref (which sums in double): as the vec_dot kernels,
 * |fast - ref| <= (nb + 4)·2^-22·Σ|w·x| (the scale product d·d_x of two halves is exact).
 */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__)
#include "../gemm.h"
#include "avx512_util.h"
#include "../../tensor/blocks.h"

#define TR 16                    /* rows per tile = lanes                                  */
#define KC 32                    /* blocks per packed chunk: 32 × 576 B = 18 KiB           */
#define TN 64                    /* tokens per accumulator chunk (multiple of GROUP)       */
#define GROUP EDGELLM_GEMM_GROUP
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define SLAB EDGELLM_GEMM_Q8_0_SLAB

typedef struct {
    __m512i g[8];                /* u8 codes, lane p = row perm(p), 4 per lane            */
    __m512 d;                    /* d_w per lane                                           */
} packed_block;

/* lane p of a tile holds row perm(p) */
static const int32_t lane_row[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};

/* ------------------------------------------------------------------ activations */

/* Bytes of the decode area at the start of xp (token 0's codes in decode order). */
static inline size_t xd_bytes(int64_t nb) { return ((size_t)nb * 32 + 63) & ~(size_t)63; }

/* Token t: its codes and aux into the slabs (after the decode area); token 0 also into the
 * decode area, pairs of blocks in the order sums16_* meets them: Q4_0 (nibbles) as
 * [a 0-15, b 0-15, a 16-31, b 16-31], Q8_0 as [a 0-31, b 0-31]. */
static void prep_q8_0(const void *xq, int64_t t, int64_t cols, uint8_t *xp, int32_t o)
{
    const edgellm_block_q8_0 *x = xq;
    const int64_t nb = cols / EDGELLM_QK8_0, g = t / GROUP, j = t % GROUP;
    uint8_t *slabs = xp + xd_bytes(nb);
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *slab = slabs + (size_t)(g * nb + b) * SLAB;
        memcpy(slab + 32 * j, x[b].qs, 32);
        const __m256i v = _mm256_loadu_si256((const __m256i *)x[b].qs);
        const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), v);
        edgellm_gemm_q8_0_aux a = {x86_h2f(x[b].d), -o * x86_hsum8_i32(s)};
        memcpy(slab + 32 * GROUP + sizeof a * (size_t)j, &a, sizeof a);
    }
    if (t != 0) return;
    for (int64_t b = 0; b + 1 < nb; b += 2) {
        uint8_t *d = xp + 32 * b;
        if (o == 8) {
            memcpy(d, x[b].qs, 16);
            memcpy(d + 16, x[b + 1].qs, 16);
            memcpy(d + 32, x[b].qs + 16, 16);
            memcpy(d + 48, x[b + 1].qs + 16, 16);
        } else {
            memcpy(d, x[b].qs, 32);
            memcpy(d + 32, x[b + 1].qs, 32);
        }
    }
}

void edgellm_gemm_prep_q4_0_avx512(const void *xq, int64_t t, int64_t cols, uint8_t *xp)
{
    prep_q8_0(xq, t, cols, xp, 8);
}

void edgellm_gemm_prep_q8_0_avx512(const void *xq, int64_t t, int64_t cols, uint8_t *xp)
{
    prep_q8_0(xq, t, cols, xp, 128);
}

/* ---------------------------------------------------------------------- packing */

/* 16 bytes at off of rows 4k..4k+3 (128-bit lane l = row 4k+l). */
static inline __m512i load4(const uint8_t *const *rows, size_t off)
{
    __m512i z = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(rows[0] + off)));
    z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(rows[1] + off)), 1);
    z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(rows[2] + off)), 2);
    return _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(rows[3] + off)), 3);
}

/* Dword k (0..3) of the 16 bytes at off of the 16 rows: u[k] lane p = row perm(p). */
static inline void transpose16x4(const uint8_t *const *rows, size_t off, __m512i u[4])
{
    const __m512i z0 = load4(rows, off), z1 = load4(rows + 4, off);
    const __m512i z2 = load4(rows + 8, off), z3 = load4(rows + 12, off);
    const __m512i t0 = _mm512_unpacklo_epi32(z0, z1), t1 = _mm512_unpackhi_epi32(z0, z1);
    const __m512i t2 = _mm512_unpacklo_epi32(z2, z3), t3 = _mm512_unpackhi_epi32(z2, z3);
    u[0] = _mm512_unpacklo_epi64(t0, t2);
    u[1] = _mm512_unpackhi_epi64(t0, t2);
    u[2] = _mm512_unpacklo_epi64(t1, t3);
    u[3] = _mm512_unpackhi_epi64(t1, t3);
}

/* The half-precision d at the start of block `off` of every row (gather offsets gidx
 * relative to rows[0], lane order perm). */
static inline __m512 gather_d(const uint8_t *row0, size_t off, __m512i gidx)
{
    const __m512i v = _mm512_i32gather_epi32(gidx, (const void *)(row0 + off), 1);
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
}

/* Prefetch the part of the next tile that corresponds to block b: the next tile is 16·rb
 * contiguous bytes, spread evenly over the nb blocks of this one (16 blocks' worth of
 * bytes per block), so the whole of it is requested while this tile is being read. */
static inline void prefetch_next(const uint8_t *next, size_t bb, int64_t b)
{
    if (!next) return;
    const uint8_t *p = next + (size_t)b * 16 * bb;
    for (size_t o = 0; o < 16 * bb; o += 64) _mm_prefetch((const char *)p + o, _MM_HINT_T1);
}

static void pack_q4_0(const uint8_t *const *rows, __m512i gidx, int64_t b0, int nblk, packed_block *pb,
                      const uint8_t *next)
{
    const __m512i m4 = _mm512_set1_epi8(15);
    for (int b = 0; b < nblk; b++) {
        const size_t off = (size_t)(b0 + b) * sizeof(edgellm_block_q4_0);
        prefetch_next(next, sizeof(edgellm_block_q4_0), b0 + b);
        __m512i u[4];
        transpose16x4(rows, off + 2, u);            /* byte j: elements j (lo), j+16 (hi) */
        for (int k = 0; k < 4; k++) {
            pb[b].g[k] = _mm512_and_si512(u[k], m4);
            pb[b].g[k + 4] = _mm512_and_si512(_mm512_srli_epi16(u[k], 4), m4);
        }
        pb[b].d = gather_d(rows[0], off, gidx);
    }
}

static void pack_q8_0(const uint8_t *const *rows, __m512i gidx, int64_t b0, int nblk, packed_block *pb,
                      const uint8_t *next)
{
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    for (int b = 0; b < nblk; b++) {
        const size_t off = (size_t)(b0 + b) * sizeof(edgellm_block_q8_0);
        prefetch_next(next, sizeof(edgellm_block_q8_0), b0 + b);
        __m512i u[4];
        transpose16x4(rows, off + 2, u);
        for (int k = 0; k < 4; k++) pb[b].g[k] = _mm512_xor_si512(u[k], bias);
        transpose16x4(rows, off + 18, u);
        for (int k = 0; k < 4; k++) pb[b].g[k + 4] = _mm512_xor_si512(u[k], bias);
        pb[b].d = gather_d(rows[0], off, gidx);
    }
}

/* ---------------------------------------------------------------------- compute */

static inline __m512i bcast32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* acc[j] (j < NR, 16 floats each at accm + 16j) over packed blocks pb[0..nblk) against
 * the slabs of one token group starting at slab0 (block stride nb·... = SLAB), token j0.. */
static inline __attribute__((always_inline)) void run_group(const packed_block *pb, int nblk, const uint8_t *slab0,
                                                            int j0, float *accm, const int NR)
{
    __m512 acc[GROUP];
    for (int j = 0; j < NR; j++) acc[j] = _mm512_load_ps(accm + 16 * j);
    for (int b = 0; b < nblk; b++) {
        const uint8_t *slab = slab0 + (size_t)b * SLAB;
        const __m512i g0 = pb[b].g[0], g1 = pb[b].g[1], g2 = pb[b].g[2], g3 = pb[b].g[3];
        const __m512i g4 = pb[b].g[4], g5 = pb[b].g[5], g6 = pb[b].g[6], g7 = pb[b].g[7];
        const __m512 d = pb[b].d;
        for (int j = 0; j < NR; j++) {
            const uint8_t *x = slab + 32 * (j0 + j);
            const edgellm_gemm_q8_0_aux *a = (const edgellm_gemm_q8_0_aux *)(slab + 32 * GROUP) + j0 + j;
            __m512i s = _mm512_set1_epi32(a->corr);
            s = _mm512_dpbusd_epi32(s, g0, bcast32(x));
            s = _mm512_dpbusd_epi32(s, g1, bcast32(x + 4));
            s = _mm512_dpbusd_epi32(s, g2, bcast32(x + 8));
            s = _mm512_dpbusd_epi32(s, g3, bcast32(x + 12));
            s = _mm512_dpbusd_epi32(s, g4, bcast32(x + 16));
            s = _mm512_dpbusd_epi32(s, g5, bcast32(x + 20));
            s = _mm512_dpbusd_epi32(s, g6, bcast32(x + 24));
            s = _mm512_dpbusd_epi32(s, g7, bcast32(x + 28));
            acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(d, _mm512_set1_ps(a->d)), acc[j]);
        }
    }
    for (int j = 0; j < NR; j++) _mm512_store_ps(accm + 16 * j, acc[j]);
}

typedef void (*pack_fn)(const uint8_t *const *rows, __m512i gidx, int64_t b0, int nblk, packed_block *pb,
                        const uint8_t *next);

static void gemm_q8(const edgellm_gemm_args *a, pack_fn pack)
{
    _Alignas(64) packed_block pb[KC];
    _Alignas(64) float accm[TN * 16];                       /* [TN tokens][16 lanes] */
    const int64_t nb = a->cols / EDGELLM_QK8_0;
    const __m512i unperm = _mm512_loadu_si512((const void *)lane_row);   /* perm is an involution */
    const uint8_t *slabs = a->xp + xd_bytes(nb);
    for (int64_t r = a->r0; r < a->r1; r += TR) {
        const int nr = (int)MIN(TR, a->r1 - r);
        const uint8_t *rows[TR];
        int32_t gi[TR];
        for (int i = 0; i < TR; i++) rows[i] = a->w + (size_t)(r + (i < nr ? i : nr - 1)) * a->row_bytes;
        for (int p = 0; p < TR; p++) gi[p] = (int32_t)(rows[lane_row[p]] - rows[0]);
        const __m512i gidx = _mm512_loadu_si512((const void *)gi);
        /* the next tile of this thread, if a whole one (its rows are contiguous) */
        const uint8_t *next = r + 2 * TR <= a->r1 ? a->w + (size_t)(r + TR) * a->row_bytes : NULL;
        for (int64_t t0 = 0; t0 < a->n; t0 += TN) {
            const int nt = (int)MIN(TN, a->n - t0);
            memset(accm, 0, sizeof(float) * 16 * (size_t)nt);
            for (int64_t b0 = 0; b0 < nb; b0 += KC) {
                const int nblk = (int)MIN(KC, nb - b0);
                pack(rows, gidx, b0, nblk, pb, t0 == 0 ? next : NULL);
                for (int j = 0; j < nt;) {
                    const int64_t t = t0 + j;
                    const uint8_t *slab0 = slabs + (size_t)((t / GROUP) * nb + b0) * SLAB;
                    if (j + GROUP <= nt && t % GROUP == 0) {
                        run_group(pb, nblk, slab0, 0, accm + 16 * j, GROUP);
                        j += GROUP;
                    } else {
                        run_group(pb, nblk, slab0, (int)(t % GROUP), accm + 16 * j, 1);
                        j += 1;
                    }
                }
            }
            for (int j = 0; j < nt; j++) {
                const __m512 v = _mm512_permutexvar_ps(unperm, _mm512_load_ps(accm + 16 * j));
                _mm512_mask_storeu_ps(a->y + (t0 + j) * a->ldy + r, (__mmask16)((1u << nr) - 1), v);
            }
        }
    }
}

/* ------------------------------------------------------------ decode (one token) */

/* Integer block sums of 16 consecutive blocks of one row against token 0 (no offset
 * correction): lane p = block perm(p) of the group. Per pair of blocks one 512-bit
 * VPDPBUSD leaves 4 partial sums per block in two 128-bit lanes; the partials of 16 blocks
 * are then added in a transpose tree. The activations of token 0 are stored in the
 * decode area in the order the weight codes come out of the loads (xd, see prep). */
static inline __m512i reduce16(const __m512i T[4])
{
    const __m512i u0 = _mm512_add_epi32(_mm512_unpacklo_epi32(T[0], T[1]), _mm512_unpackhi_epi32(T[0], T[1]));
    const __m512i u1 = _mm512_add_epi32(_mm512_unpacklo_epi32(T[2], T[3]), _mm512_unpackhi_epi32(T[2], T[3]));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(u0, u1), _mm512_unpackhi_epi64(u0, u1));
}

static inline __m512i sums16_q4_0(const uint8_t *row, int64_t b, const uint8_t *xd)
{
    const edgellm_block_q4_0 *w = (const edgellm_block_q4_0 *)row + b;
    const __m512i m4 = _mm512_set1_epi8(15);
    __m512i T[4];
    for (int q = 0; q < 4; q++) {
        __m512i R[2];
        for (int h = 0; h < 2; h++) {
            const int m = 2 * q + h;                              /* blocks 2m, 2m+1 */
            const __m256i t = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)w[2 * m + 1].qs),
                                               _mm_loadu_si128((const __m128i *)w[2 * m].qs));
            const __m512i z = _mm512_and_si512(x86_join(t, _mm256_srli_epi16(t, 4)), m4);   /* [a_lo b_lo a_hi b_hi] */
            R[h] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), z,
                                       _mm512_loadu_si512((const void *)(xd + 32 * (b + 2 * m))));
        }
        T[q] = _mm512_add_epi32(_mm512_shuffle_i64x2(R[0], R[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                _mm512_shuffle_i64x2(R[0], R[1], _MM_SHUFFLE(3, 2, 3, 2)));
    }
    return reduce16(T);
}

static inline __m512i sums16_q8_0(const uint8_t *row, int64_t b, const uint8_t *xd)
{
    const edgellm_block_q8_0 *w = (const edgellm_block_q8_0 *)row + b;
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    __m512i T[4];
    for (int q = 0; q < 4; q++) {
        __m512i R[2];
        for (int h = 0; h < 2; h++) {
            const int m = 2 * q + h;
            const __m512i z = x86_join(_mm256_loadu_si256((const __m256i *)w[2 * m].qs),
                                       _mm256_loadu_si256((const __m256i *)w[2 * m + 1].qs));
            R[h] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_xor_si512(z, bias),
                                       _mm512_loadu_si512((const void *)(xd + 32 * (b + 2 * m))));
        }
        T[q] = _mm512_add_epi32(_mm512_shuffle_i64x2(R[0], R[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                _mm512_shuffle_i64x2(R[0], R[1], _MM_SHUFFLE(3, 1, 3, 1)));
    }
    return reduce16(T);
}

/* One block (the tail of a row whose block count is not a multiple of 16), against the
 * natural-order codes of token 0 in its slab. */
static inline int32_t sum1_q4_0(const uint8_t *row, int64_t b, const uint8_t *x)
{
    const edgellm_block_q4_0 *w = (const edgellm_block_q4_0 *)row + b;
    const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), x86_nibbles32(w->qs),
                                          _mm256_loadu_si256((const __m256i *)x));
    return x86_hsum8_i32(s);
}

static inline int32_t sum1_q8_0(const uint8_t *row, int64_t b, const uint8_t *x)
{
    const edgellm_block_q8_0 *w = (const edgellm_block_q8_0 *)row + b;
    const __m256i q = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)w->qs), _mm256_set1_epi8((char)0x80));
    return x86_hsum8_i32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), q, _mm256_loadu_si256((const __m256i *)x)));
}

/* v[i] lane e -> out[e] lane i (16×16 int32 transpose). */
static inline void transpose16x16(const __m512i v[16], __m512i out[16])
{
    __m512i t[16], u[16];
    for (int k = 0; k < 8; k++) {
        t[2 * k] = _mm512_unpacklo_epi32(v[2 * k], v[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_epi32(v[2 * k], v[2 * k + 1]);
    }
    for (int k = 0; k < 4; k++) {                  /* u[4k+c] lane L: element 4L+c of rows 4k..4k+3 */
        u[4 * k] = _mm512_unpacklo_epi64(t[4 * k], t[4 * k + 2]);
        u[4 * k + 1] = _mm512_unpackhi_epi64(t[4 * k], t[4 * k + 2]);
        u[4 * k + 2] = _mm512_unpacklo_epi64(t[4 * k + 1], t[4 * k + 3]);
        u[4 * k + 3] = _mm512_unpackhi_epi64(t[4 * k + 1], t[4 * k + 3]);
    }
    for (int c = 0; c < 4; c++) {
        const __m512i x0 = _mm512_shuffle_i32x4(u[c], u[4 + c], _MM_SHUFFLE(2, 0, 2, 0));
        const __m512i x1 = _mm512_shuffle_i32x4(u[c], u[4 + c], _MM_SHUFFLE(3, 1, 3, 1));
        const __m512i x2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], _MM_SHUFFLE(2, 0, 2, 0));
        const __m512i x3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], _MM_SHUFFLE(3, 1, 3, 1));
        out[c] = _mm512_shuffle_i32x4(x0, x2, _MM_SHUFFLE(2, 0, 2, 0));
        out[8 + c] = _mm512_shuffle_i32x4(x0, x2, _MM_SHUFFLE(3, 1, 3, 1));
        out[4 + c] = _mm512_shuffle_i32x4(x1, x3, _MM_SHUFFLE(2, 0, 2, 0));
        out[12 + c] = _mm512_shuffle_i32x4(x1, x3, _MM_SHUFFLE(3, 1, 3, 1));
    }
}

#define KD 128                   /* blocks per decode chunk: sums buffer 16 × 128 × 4 B     */

typedef __m512i (*sums16_fn)(const uint8_t *row, int64_t b, const uint8_t *xd);
typedef int32_t (*sum1_fn)(const uint8_t *row, int64_t b, const uint8_t *x);

/* y[r] for one token: phase A streams each row of the tile through its block sums
 * (sums[i][block position]), phase B transposes them to one lane per row and runs the
 * same float steps as gemm_q8 in block order. */
static inline __attribute__((always_inline)) void gemv_q8(const edgellm_gemm_args *a, size_t bb, sums16_fn sums16,
                                                          sum1_fn sum1)
{
    _Alignas(64) int32_t sums[TR][KD];
    const int64_t nb = a->cols / EDGELLM_QK8_0;
    const uint8_t *xd = a->xp;                                     /* decode area   */
    const uint8_t *slabs = a->xp + xd_bytes(nb);
    for (int64_t r = a->r0; r < a->r1; r += TR) {
        const int nr = (int)MIN(TR, a->r1 - r);
        const uint8_t *row0 = a->w + (size_t)r * a->row_bytes;
        int32_t gi[TR];
        for (int i = 0; i < TR; i++) gi[i] = (int32_t)((size_t)(i < nr ? i : nr - 1) * a->row_bytes);
        const __m512i gidx = _mm512_loadu_si512((const void *)gi);
        __m512 acc = _mm512_setzero_ps();
        for (int64_t b0 = 0; b0 < nb; b0 += KD) {
            const int nblk = (int)MIN(KD, nb - b0);
            for (int i = 0; i < nr; i++) {                                  /* phase A */
                const uint8_t *row = row0 + (size_t)i * a->row_bytes;
                int k = 0;
                for (; k + 16 <= nblk; k += 16) _mm512_store_si512((void *)&sums[i][k], sums16(row, b0 + k, xd));
                for (int e = 0; k + e < nblk; e++)                         /* tail: same lane order */
                    sums[i][k + lane_row[e]] = sum1(row, b0 + k + e, slabs + (size_t)(b0 + k + e) * SLAB);
            }
            for (int k = 0; k < nblk; k += 16) {                           /* phase B */
                __m512i v[16], s[16];
                for (int i = 0; i < TR; i++) v[i] = i < nr ? _mm512_load_si512((const void *)&sums[i][k]) : _mm512_setzero_si512();
                transpose16x16(v, s);
                const int ne = (int)MIN(16, nblk - k);
                for (int e = 0; e < ne; e++) {
                    const int64_t b = b0 + k + e;
                    const edgellm_gemm_q8_0_aux *x = (const edgellm_gemm_q8_0_aux *)(slabs + (size_t)b * SLAB + 32 * GROUP);
                    const __m512i si = _mm512_add_epi32(s[lane_row[e]], _mm512_set1_epi32(x->corr));
                    const __m512 d = gather_d(row0, (size_t)b * bb, gidx);
                    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(si), _mm512_mul_ps(d, _mm512_set1_ps(x->d)), acc);
                }
            }
        }
        _mm512_mask_storeu_ps(a->y + r, (__mmask16)((1u << nr) - 1), acc);
    }
}

void edgellm_gemm_q4_0_avx512(const edgellm_gemm_args *a)
{
    if (a->n == 1) gemv_q8(a, sizeof(edgellm_block_q4_0), sums16_q4_0, sum1_q4_0);
    else gemm_q8(a, pack_q4_0);
}

void edgellm_gemm_q8_0_avx512(const edgellm_gemm_args *a)
{
    if (a->n == 1) gemv_q8(a, sizeof(edgellm_block_q8_0), sums16_q8_0, sum1_q8_0);
    else gemm_q8(a, pack_q8_0);
}
#endif
