/* test_gemm.c — the tile kernels of src/kernels/gemm.h, through edgellm_matmul and
 * edgellm_matmul_batch:
 *
 *  - bit-identical to a scalar model of their arithmetic (gemm.h, kernel files): exact
 *    integer block sums, per lane fma(float(isum), d_w·d_x, acc) in block order with the
 *    lane of block b = perm(b mod 16), then the fixed 16-lane tree; for Q5_K / Q6_K
 *    (k_avx512.h) the exact per-lane super-block sums, fma by d·d_x (and fnmadd of the
 *    mins by dmin·d_x), the same tree; for Q4_K one float chain over the exact per
 *    super-block sums (model_q4_K_chain); and equal to their vec_dot, whose arithmetic they
 *    promise (the AArch64 kernels: Q4_0 / Q8_0 their vec_dot only; Q4_K / Q6_K at the
 *    neon and dotprod levels also a model of their 4 lanes). The model is computed
 *    here from the converted activations, independently of n, of the row tile and of the
 *    thread;
 *  - a batch of n tokens equals n single-token calls bit for bit (prefill == decode), for
 *    1, 2, 3 and 7 threads, and edgellm_matmul_batch equals separate calls;
 *  - within tolerance of the traits' reference dot (double sums):
 *    |y - ref| <= (cols/32 + 4)·2^-22·Σ(|w| + |w0|)·|x| + 2^-100, w0 = the weights with
 *    their codes zeroed (offset and min terms, which the kernels add separately);
 *  - shapes that reach every tail: rows not a multiple of the 16-row tiles or the 4-row
 *    prefill tiles, tokens not a multiple of the 3-token tiles, 8-token groups or 64-token
 *    chunks, rows whose last 16-block group is partial, rows longer than one packed chunk;
 *    weights from the reference quantizer, raw random blocks (Q8_0 codes -128 included),
 *    zero blocks and extreme blocks (every code and sub-block scale at its maximum, Q6_K
 *    scales -128, half scales +-65504); activations random, zero, large and constant
 *    (all codes -128).
 * The exact-model checks run at each level with tile kernels (AVX-512 VNNI: 16 lanes, AVX2:
 * 8 lanes); a level the CPU lacks is skipped with a message. */
#include "test_util.h"
#include "common/common.h"
#include "common/threadpool.h"
#include "kernels/cpu_features.h"
#include "kernels/dispatch.h"
#include "kernels/gemm.h"
#include "kernels/matmul.h"
#include "tensor/blocks.h"
#include "tensor/quant.h"
#include "tensor/types.h"
#if defined(__x86_64__)
#include <sys/mman.h>
#include <unistd.h>
#endif

static uint64_t rng = 0x0DDB1A5E5BAD5EEDull;
static uint32_t rnd(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}
static float frand(void) { return (float)((double)rnd() / 4294967296.0 * 2.0 - 1.0); }   /* [-1, 1) */

/* Lane of block e of a group: AVX-512 (16 lanes) lane p holds block 4(p%4) + p/4 (an
 * involution); AVX2 (8 lanes) lane p holds block 2(p%4) + p/4, so block e is in lane
 * 4(e%2) + e/2. */
static int perm16(int e) { return 4 * (e % 4) + e / 4; }
static int lane_of(int e, int lanes) { return lanes == 16 ? perm16(e) : 4 * (e % 2) + e / 2; }

/* The fixed tree of x86_hsum8. */
static float tree8(const float a[8])
{
    float c[4], d[2];
    for (int i = 0; i < 4; i++) c[i] = a[i] + a[i + 4];
    for (int i = 0; i < 2; i++) d[i] = c[i] + c[i + 2];
    return d[0] + d[1];
}

/* The fixed tree of x86_hsum16. */
static float tree16(const float a[16])
{
    float b[8], c[4], d[2];
    for (int i = 0; i < 8; i++) b[i] = a[i] + a[i + 8];
    for (int i = 0; i < 4; i++) c[i] = b[i] + b[i + 4];
    for (int i = 0; i < 2; i++) d[i] = c[i] + c[i + 2];
    return d[0] + d[1];
}

/* Model of gemm_q8_avx512.c (lanes 16) / gemm_q8_avx2.c (lanes 8) for one weight row and
 * one Q8_0 activation row. */
static float model_q8_0_acts(int type, const uint8_t *w, const edgellm_block_q8_0 *x, int64_t cols, int lanes)
{
    float acc[16] = {0};
    for (int64_t b = 0; b < cols / 32; b++) {
        int32_t isum = 0;
        float dw;
        if (type == EDGELLM_TYPE_Q4_0) {
            const edgellm_block_q4_0 *blk = (const edgellm_block_q4_0 *)w + b;
            for (int j = 0; j < 16; j++)
                isum += ((blk->qs[j] & 15) - 8) * x[b].qs[j] + ((blk->qs[j] >> 4) - 8) * x[b].qs[j + 16];
            dw = edgellm_f16_to_f32(blk->d);
        } else {
            const edgellm_block_q8_0 *blk = (const edgellm_block_q8_0 *)w + b;
            for (int j = 0; j < 32; j++) isum += blk->qs[j] * x[b].qs[j];
            dw = edgellm_f16_to_f32(blk->d);
        }
        const int p = lane_of((int)(b % lanes), lanes);
        acc[p] = fmaf((float)isum, dw * edgellm_f16_to_f32(x[b].d), acc[p]);
    }
    return lanes == 16 ? tree16(acc) : tree8(acc);
}

/* Model of k_avx512.h for Q4_K (five = 0) and Q5_K (five = 1: the 5th bit of element
 * 64c + p is bit 2c + p/32 of qh[p % 32]): lane l of chunk c (64 codes, elements
 * 64c..64c+63) sums elements 64c + 4l .. 64c + 4l + 3 times the scale of their sub-block;
 * mins in 8 lanes. */
static float model_q45_K(const uint8_t *w, const edgellm_block_q8_K *x, int64_t cols, int five)
{
    float acc[16] = {0}, accm[8] = {0}, v[16];
    for (int64_t i = 0; i < cols / 256; i++) {
        const edgellm_block_q4_K *b4 = (const edgellm_block_q4_K *)w + i;
        const edgellm_block_q5_K *b5 = (const edgellm_block_q5_K *)w + i;
        const uint8_t *scales = five ? b5->scales : b4->scales, *qs = five ? b5->qs : b4->qs;
        const uint16_t d = five ? b5->d : b4->d, dmin = five ? b5->dmin : b4->dmin;
        uint8_t sc[8], m[8];
        for (int j = 0; j < 8; j++) edgellm_k_scale_min(j, scales, &sc[j], &m[j]);
        int32_t S[16] = {0};
        for (int c = 0; c < 4; c++)
            for (int p = 0; p < 64; p++) {
                int code = p < 32 ? qs[32 * c + p] & 15 : qs[32 * c + p - 32] >> 4;
                if (five) code |= (b5->qh[p % 32] >> (2 * c + p / 32) & 1) << 4;
                S[p / 4] += sc[2 * c + p / 32] * code * x[i].qs[64 * c + p];
            }
        const float dd = edgellm_f16_to_f32(d) * x[i].d, dm = edgellm_f16_to_f32(dmin) * x[i].d;
        for (int l = 0; l < 16; l++) acc[l] = fmaf((float)S[l], dd, acc[l]);
        for (int j = 0; j < 8; j++) {
            const int32_t M = m[j] * (x[i].bsums[2 * j] + x[i].bsums[2 * j + 1]);
            accm[j] = fmaf(-(float)M, dm, accm[j]);
        }
    }
    for (int l = 0; l < 16; l++) v[l] = acc[l] + (l < 8 ? accm[l] : 0.0f);
    return tree16(v);
}

/* Model of k_avx512.h for Q4_K (its float chain per row and token): per super-block the
 * exact S = Σ_j sc_j·Σ q·x and M = Σ_j m_j·(bsums_2j + bsums_2j+1), then
 * y = fma(S, d·d_x, y), y = fma(-M, dmin·d_x, y). */
static float model_q4_K_chain(const uint8_t *w, const edgellm_block_q8_K *x, int64_t cols)
{
    float y = 0.0f;
    for (int64_t i = 0; i < cols / 256; i++) {
        const edgellm_block_q4_K *b = (const edgellm_block_q4_K *)w + i;
        uint8_t sc[8], m[8];
        for (int j = 0; j < 8; j++) edgellm_k_scale_min(j, b->scales, &sc[j], &m[j]);
        int32_t S = 0, M = 0;
        for (int c = 0; c < 4; c++)
            for (int p = 0; p < 64; p++) {
                const int code = p < 32 ? b->qs[32 * c + p] & 15 : b->qs[32 * c + p - 32] >> 4;
                S += sc[2 * c + p / 32] * code * x[i].qs[64 * c + p];
            }
        for (int j = 0; j < 8; j++) M += m[j] * (x[i].bsums[2 * j] + x[i].bsums[2 * j + 1]);
        const float dd = edgellm_f16_to_f32(b->d) * x[i].d, dm = edgellm_f16_to_f32(b->dmin) * x[i].d;
        y = fmaf((float)S, dd, y);
        y = fmaf(-(float)M, dm, y);
    }
    return y;
}

/* Model of k_avx512.h for Q6_K: per super-block the exact S = Σ_e sc_{e/16}·(u_e - 32)·x_e
 * (u the 6-bit codes, layout in blocks.h), then y = fma(float(S), d·d_x, y). */
static float model_q6_K(const uint8_t *w, const edgellm_block_q8_K *x, int64_t cols)
{
    float y = 0.0f;
    for (int64_t i = 0; i < cols / 256; i++) {
        const edgellm_block_q6_K *b = (const edgellm_block_q6_K *)w + i;
        int u[256];
        for (int h = 0; h < 2; h++)
            for (int l = 0; l < 32; l++) {
                const uint8_t lo = b->ql[64 * h + l], hi = b->ql[64 * h + 32 + l], qh = b->qh[32 * h + l];
                u[128 * h + l] = (lo & 15) | (qh & 3) << 4;
                u[128 * h + l + 32] = (hi & 15) | (qh >> 2 & 3) << 4;
                u[128 * h + l + 64] = (lo >> 4) | (qh >> 4 & 3) << 4;
                u[128 * h + l + 96] = (hi >> 4) | (qh >> 6 & 3) << 4;
            }
        int32_t S = 0;
        for (int e = 0; e < 256; e++) S += b->scales[e / 16] * (u[e] - 32) * x[i].qs[e];
        y = fmaf((float)S, edgellm_f16_to_f32(b->d) * x[i].d, y);
    }
    return y;
}

/* Model of the AArch64 Q4_K / Q6_K tile kernels (arm/gemm_k_body.h), which promise the
 * arithmetic of their level's vec_dot (arm/dot_q_body.h): element e of a super-block pairs
 * with activation byte e in lane L(e % 16) of a 16-byte dot, L(j) = j/4 (SDOT, level
 * dotprod) or (j % 8)/2 (SMULL + SADALP, level neon); per super-block the exact lane sums
 * S_l = Σ scale·code·x_q (Q6_K codes u - 32), acc_l = fma(float(S_l), d·d_x, acc_l); Q4_K
 * also accm += dmin·d_x·float(Σ_j m_j·(bsums_2j + bsums_2j+1)); the result
 * (acc_0 + acc_2) + (acc_1 + acc_3) - accm. */
static float model_arm_K(int type, const uint8_t *w, const edgellm_block_q8_K *x, int64_t cols, bool sdot)
{
    float acc[4] = {0}, accm = 0;
    for (int64_t i = 0; i < cols / 256; i++) {
        int32_t S[4] = {0};
        float dd;
        if (type == EDGELLM_TYPE_Q4_K) {
            const edgellm_block_q4_K *b = (const edgellm_block_q4_K *)w + i;
            uint8_t sc[8], m[8];
            for (int j = 0; j < 8; j++) edgellm_k_scale_min(j, b->scales, &sc[j], &m[j]);
            for (int e = 0; e < 256; e++) {
                const int c = e / 64, p = e % 64;
                const int code = p < 32 ? b->qs[32 * c + p] & 15 : b->qs[32 * c + p - 32] >> 4;
                S[sdot ? e % 16 / 4 : e % 8 / 2] += sc[e / 32] * code * x[i].qs[e];
            }
            int32_t M = 0;
            for (int j = 0; j < 8; j++) M += m[j] * (x[i].bsums[2 * j] + x[i].bsums[2 * j + 1]);
            dd = edgellm_f16_to_f32(b->d) * x[i].d;
            accm += edgellm_f16_to_f32(b->dmin) * x[i].d * (float)M;
        } else {
            const edgellm_block_q6_K *b = (const edgellm_block_q6_K *)w + i;
            for (int e = 0; e < 256; e++) {   /* e = 128h + 32k + l: ql byte 64h + 32(k&1) + l, qh bits 2k */
                const int h = e / 128, k = e % 128 / 32, l = e % 32;
                const uint8_t ql = b->ql[64 * h + 32 * (k & 1) + l];
                const int u = (k < 2 ? ql & 15 : ql >> 4) | (b->qh[32 * h + l] >> (2 * k) & 3) << 4;
                S[sdot ? e % 16 / 4 : e % 8 / 2] += b->scales[e / 16] * (u - 32) * x[i].qs[e];
            }
            dd = edgellm_f16_to_f32(b->d) * x[i].d;
        }
        for (int l = 0; l < 4; l++) acc[l] = fmaf((float)S[l], dd, acc[l]);
    }
    return ((acc[0] + acc[2]) + (acc[1] + acc[3])) - accm;
}

/* The active level is an AArch64 one (neon, dotprod): Q4_K / Q6_K tile kernels. */
static bool arm_k_level(void) { return !strcmp(edgellm_kernels_name(), "neon") || !strcmp(edgellm_kernels_name(), "dotprod"); }

/* Lanes of the tile kernels at the active level; 0 when it has none. */
static int tile_lanes(void)
{
    const char *l = edgellm_kernels_name();
    return !strcmp(l, "avx512") ? 16 : !strcmp(l, "avx2") ? 8 : 0;
}

/* Model of the tile kernel for `type` at the active level; false when none is modelled.
 * The K-quant kernels (gemm_k_avx512.c) also promise the arithmetic of their vec_dot:
 * *alt is that vec_dot (else *alt = *out). */
static bool model(int type, const uint8_t *w, const void *xq, int64_t cols, float *out, float *alt)
{
    const int lanes = tile_lanes();
    if (lanes == 16 && type == EDGELLM_TYPE_F16) {        /* gemm_f16_avx512.c: the vec_dot's steps */
        *out = *alt = edgellm_kernels_vec_dot(type)(cols, w, xq);
        return true;
    }
    if (lanes && (type == EDGELLM_TYPE_Q4_0 || type == EDGELLM_TYPE_Q8_0)) {
        *out = *alt = model_q8_0_acts(type, w, xq, cols, lanes);
        return true;
    }
    if (lanes == 16 && (type == EDGELLM_TYPE_Q4_K || type == EDGELLM_TYPE_Q5_K || type == EDGELLM_TYPE_Q6_K)) {
        *out = type == EDGELLM_TYPE_Q6_K ? model_q6_K(w, xq, cols)
               : type == EDGELLM_TYPE_Q4_K ? model_q4_K_chain(w, xq, cols)
                                           : model_q45_K(w, xq, cols, 1);
        *alt = edgellm_kernels_vec_dot(type)(cols, w, xq);
        return true;
    }
    if (arm_k_level() && (type == EDGELLM_TYPE_Q4_K || type == EDGELLM_TYPE_Q6_K)) {
        *out = model_arm_K(type, w, xq, cols, !strcmp(edgellm_kernels_name(), "dotprod"));
        *alt = edgellm_kernels_vec_dot(type)(cols, w, xq);
        return true;
    }
    if (!strcmp(edgellm_kernels_name(), "dotprod") && (type == EDGELLM_TYPE_Q4_0 || type == EDGELLM_TYPE_Q8_0)) {
        *out = *alt = edgellm_kernels_vec_dot(type)(cols, w, xq);   /* gemm_q_dotprod.c: the vec_dot's steps */
        return true;
    }
    return false;
}

/* The row with its code bytes zeroed: dequantized, the offset/min terms the kernels add
 * separately (part of the tolerance's magnitude). */
static void zero_codes(int type, uint8_t *row, int64_t cols)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(type);
    size_t off = 0, len = 0;
    if (type == EDGELLM_TYPE_Q4_0) off = 2, len = 16;
    else if (type == EDGELLM_TYPE_Q8_0) off = 2, len = 32;
    else if (type == EDGELLM_TYPE_Q4_K) off = 16, len = 128;
    else if (type == EDGELLM_TYPE_Q5_K) off = 16, len = 160;         /* qh, qs */
    else if (type == EDGELLM_TYPE_Q6_K) off = 0, len = 192;
    for (int64_t b = 0; b < cols / t->blck_size; b++) memset(row + (size_t)b * t->type_size + off, 0, len);
}

/* Random half in +-[2^-10, 1). */
static uint16_t rand_half(void)
{
    const float v = (float)ldexp(0.5 + 0.5 * (double)(rnd() % 1000) / 1000.0, -(int)(rnd() % 10));
    return edgellm_f32_to_f16(rnd() & 1 ? -v : v);
}

/* Row r of a weight matrix: mode 0 reference quantizer, 1 raw random blocks (finite
 * random half scales), 2 zeros, 3 extreme: every byte 0xFF but the half scales (codes
 * and K-quant sub-block scales and mins at their maximum; Q6_K scales -128), half scales
 * +-65504. */
static void make_row(int type, uint8_t *row, int64_t cols, int mode, float *tmp)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(type);
    const size_t rb = edgellm_type_row_size(type, cols);
    if (mode == 2) {
        memset(row, 0, rb);
        return;
    }
    if (mode == 0) {
        for (int64_t i = 0; i < cols; i++) tmp[i] = frand() * (i % 7 == 0 ? 4.0f : 1.0f);
        t->from_float_ref(tmp, row, cols);
        return;
    }
    for (size_t i = 0; i < rb; i++) row[i] = mode == 3 ? 0xff : (uint8_t)rnd();
    const int64_t nb = cols / t->blck_size;
    for (int64_t b = 0; b < nb; b++) {                 /* finite scales */
        uint8_t *blk = row + (size_t)b * t->type_size;
        const uint16_t h = mode == 3 ? (b & 1 ? 0xfbff : 0x7bff) : rand_half(), h2 = mode == 3 ? 0x7bff : rand_half();
        if (mode == 3 && type == EDGELLM_TYPE_Q6_K) memset(blk + 192, 0x80, 16);   /* scales -128 */
        if (type == EDGELLM_TYPE_Q6_K) memcpy(blk + 208, &h, 2);          /* ql qh scales d */
        else memcpy(blk, &h, 2);
        if (type == EDGELLM_TYPE_Q4_K || type == EDGELLM_TYPE_Q5_K) memcpy(blk + 2, &h2, 2);   /* d dmin ... */
        if (type == EDGELLM_TYPE_Q8_0 && b % 3 == 0) memset(blk + 2, 0x80, 8);   /* codes -128 */
    }
}

/* One shape: W[rows][cols] of `type`, n tokens. */
static void gemm_case(int type, int64_t rows, int64_t cols, int64_t n)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(type);
    const size_t rb = edgellm_type_row_size(type, cols);
    uint8_t *wd = malloc(rb * (size_t)rows);
    float *tmp = malloc(sizeof(float) * (size_t)cols);
    for (int64_t r = 0; r < rows; r++)
        make_row(type, wd + (size_t)r * rb, cols, r % 11 == 10 ? 2 : r % 13 == 12 ? 3 : (int)(r % 2), tmp);
    edgellm_tensor W = {wd, type, cols, rows, rb, NULL};
    CHECK(edgellm_matmul_supported(&W));

    float *x = malloc(sizeof(float) * (size_t)(n * cols));
    for (int64_t tkn = 0; tkn < n; tkn++)
        for (int64_t i = 0; i < cols; i++)
            x[tkn * cols + i] = tkn % 5 == 4 ? 0.0f : tkn % 7 == 6 ? 2.5f : frand() * (tkn % 3 == 2 ? 300.0f : 1.0f);
    const size_t ss = edgellm_matmul_scratch_size(&W, n);
    void *scratch = malloc(ss + 64);
    float *y = malloc(sizeof(float) * (size_t)(n * rows)), *y1 = malloc(sizeof(float) * (size_t)(n * rows));

    edgellm_matmul(NULL, y, &W, x, n, scratch);

    /* prefill == decode, any thread count */
    const int threads[] = {1, 2, 3, 7};
    bool same = true;
    for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
        edgellm_threadpool *pool = NULL;
        CHECK_OK(edgellm_threadpool_new(threads[ti], &pool, NULL));
        edgellm_matmul(pool, y1, &W, x, n, scratch);
        same &= !memcmp(y, y1, sizeof(float) * (size_t)(n * rows));
        const edgellm_matmul_job job = {y1, &W};
        edgellm_matmul_batch_sched(pool, &job, 1, x, n, scratch, EDGELLM_MATMUL_IN_ORDER);
        same &= !memcmp(y, y1, sizeof(float) * (size_t)(n * rows));
        for (int64_t tkn = 0; tkn < n; tkn++) edgellm_matmul(pool, y1 + tkn * rows, &W, x + tkn * cols, 1, scratch);
        same &= !memcmp(y, y1, sizeof(float) * (size_t)(n * rows));
        edgellm_threadpool_free(pool);
    }
    if (!same) fprintf(stderr, "   %s %lldx%lld n=%lld: results depend on n or threads\n", t->name,
                       (long long)rows, (long long)cols, (long long)n);
    CHECK(same);

    /* exact model and reference tolerance, from the activations as matmul converts them */
    const int vt = t->vec_dot_type;
    const size_t xrb = edgellm_type_row_size(vt, cols);
    uint8_t *xq = malloc(xrb);
    float *xd = malloc(sizeof(float) * (size_t)cols), *wf = malloc(sizeof(float) * (size_t)cols);
    float *wf0 = malloc(sizeof(float) * (size_t)cols);
    uint8_t *w0 = malloc(rb);
    const bool exact = tile_lanes() > 0 || arm_k_level();
    int64_t bad_model = 0, bad_ref = 0;
    for (int64_t tkn = 0; tkn < n; tkn++) {
        edgellm_kernels_from_float(vt)(x + tkn * cols, xq, cols);
        edgellm_type_get_traits(vt)->to_float(xq, xd, cols);
        for (int64_t r = 0; r < rows; r++) {
            const uint8_t *wr = wd + (size_t)r * rb;
            const float got = y[tkn * rows + r];
            float want, want2;
            if (exact && model(type, wr, xq, cols, &want, &want2) &&
                (memcmp(&want, &got, sizeof got) || memcmp(&want2, &got, sizeof got))) {
                if (bad_model++ < 3)
                    fprintf(stderr, "   %s %lldx%lld n=%lld: y[%lld][%lld] = %.9g, model %.9g, vec_dot %.9g\n", t->name,
                            (long long)rows, (long long)cols, (long long)n, (long long)tkn, (long long)r, got, want, want2);
            }
            t->to_float(wr, wf, cols);
            memcpy(w0, wr, rb);
            zero_codes(type, w0, cols);
            t->to_float(w0, wf0, cols);
            double mag = 0;
            for (int64_t i = 0; i < cols; i++) mag += (fabs((double)wf[i]) + fabs((double)wf0[i])) * fabs((double)xd[i]);
            const double ref = t->vec_dot_ref(cols, wr, xq);
            const double tol = (double)(cols / 32 + 4) * ldexp(1.0, -22) * mag + ldexp(1.0, -100);
            if (!(fabs((double)got - ref) <= tol) && bad_ref++ < 3)
                fprintf(stderr, "   %s %lldx%lld: y[%lld][%lld] = %.9g, ref %.9g, tol %g\n", t->name, (long long)rows,
                        (long long)cols, (long long)tkn, (long long)r, got, ref, tol);
        }
    }
    CHECK_EQ(bad_model, 0);
    CHECK_EQ(bad_ref, 0);
    free(xq);
    free(xd);
    free(wf);
    free(wf0);
    free(w0);
    free(y);
    free(y1);
    free(scratch);
    free(x);
    free(tmp);
    free(wd);
}

static const int64_t shapes[][3] = {
    /* rows, cols (multiple of 256 for K-quants), n */
    {1, 256, 1},   {5, 512, 2},   {17, 768, 3},   {16, 512, 8},  {37, 1024, 7},
    {33, 2048, 65}, {4, 256, 9},  {70, 512, 64},  {9, 8448, 4},   /* 8448/32 = 264 blocks: 17 groups */
};

static void test_q8_0_activation_kernels(void)
{
    if (!tile_lanes()) fprintf(stderr, "   SKIP (exact model): level %s has no tile kernels\n", edgellm_kernels_name());
    const int types[] = {EDGELLM_TYPE_Q4_0, EDGELLM_TYPE_Q8_0};
    for (size_t ti = 0; ti < 2; ti++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            gemm_case(types[ti], shapes[s][0], shapes[s][1], shapes[s][2]);
        gemm_case(types[ti], 3, 32 * 17, 5);             /* one full group + 1 block       */
        gemm_case(types[ti], 20, 32 * 3, 4);             /* only a partial group            */
        gemm_case(types[ti], 35, 576, 1);                /* n_embd 576 (SmolLM2-135M): 16 + 2 */
        gemm_case(types[ti], 18, 576, 5);
        gemm_case(types[ti], 17, 32 * 31, 1);            /* 16 + 15 blocks                  */
        gemm_case(types[ti], 16, 32 * 15, 3);            /* 15 blocks only                  */
        gemm_case(types[ti], 20, 2048, 1);               /* decode: 4 full groups (Q8_0 direct) */
        gemm_case(types[ti], 9, 8448, 1);                /* 16 full groups + 8 blocks       */
    }
}

/* Q4_K / Q5_K / Q6_K (Q8_K activations): the vec_dot's arithmetic for any n. */
static void test_q8_K_activation_kernels(void)
{
    if (tile_lanes() != 16 && !arm_k_level())
        fprintf(stderr, "   SKIP (exact model): level %s has no K-quant tile kernels\n", edgellm_kernels_name());
    const int types[] = {EDGELLM_TYPE_Q4_K, EDGELLM_TYPE_Q5_K, EDGELLM_TYPE_Q6_K};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            gemm_case(types[ti], shapes[s][0], shapes[s][1], shapes[s][2]);
}

/* F16 weights (F32 activations): at avx512 the tile kernel promises edgellm_dot_f16_avx512's
 * arithmetic for every n (speculative verification must agree with decode); at the other
 * levels the vec_dot loop. Row lengths cover the 64-element steps, one to three whole 16s
 * left and a masked tail; token counts cover the 6-token tiles, the 1-5-token tails and
 * several L2 blocks (and rows wide enough that a block is one tile). */
static void test_f16_kernel(void)
{
    static const int64_t f16_shapes[][3] = {
        {1, 64, 2},   {2, 80, 3},   {3, 100, 4},  {5, 37, 5},   {17, 2048, 6}, {16, 5, 7},
        {33, 576, 1}, {7, 1000, 65}, {4, 130, 9}, {9, 2048, 200}, {2, 16, 2}, {6, 127, 11},
        {5, 11008, 13},
    };
    for (size_t s = 0; s < sizeof f16_shapes / sizeof f16_shapes[0]; s++)
        gemm_case(EDGELLM_TYPE_F16, f16_shapes[s][0], f16_shapes[s][1], f16_shapes[s][2]);
}

/* The AArch64 Q4_K / Q6_K tile kernels (arm/gemm_k_body.h) at both levels, neon (SMULL)
 * and dotprod (SDOT), on random shapes: 1..40 rows (partial 16-row tiles), 1..6
 * super-blocks, 1..9 tokens (4-token tiles and the 1-token tail); every output equals
 * model_arm_K and the level's vec_dot bit for bit, prefill equals decode (gemm_case). */
static void test_arm_k_levels(void)
{
    const char *levels[] = {"neon", "dotprod"};
    for (size_t l = 0; l < 2; l++) {
        if (!edgellm_kernels_force(levels[l]) || strcmp(edgellm_kernels_name(), levels[l])) {
            fprintf(stderr, "   SKIP: level %s not available\n", levels[l]);
            continue;
        }
        for (int k = 0; k < 18; k++) {
            const int64_t rows = 1 + rnd() % 40, cols = 256 * (1 + rnd() % 6);
            gemm_case(k % 2 ? EDGELLM_TYPE_Q6_K : EDGELLM_TYPE_Q4_K, rows, cols, 1 + k / 2);
        }
    }
    edgellm_kernels_force(NULL);
}

/* The GFNI twins of the Q4_K / Q6_K tile kernels (gemm_k_gfni_avx512.c) unpack the same
 * codes by another instruction: called directly, side by side with the plain AVX-512
 * kernels (which edgellm_matmul no longer picks on a GFNI CPU), every output equals bit
 * for bit — rows of every make_row mode (every code and scale bit pattern, zero blocks,
 * extreme blocks), decode (n = 1, 16-row tiles and a partial one) and prefill (4-token
 * tiles and the 1-token tail). The exact-model checks above run whichever matmul picks. */
static void test_k_gfni_equals_plain(void)
{
#if defined(__x86_64__)
    if (!edgellm_cpu_get_features()->gfni) {
        fprintf(stderr, "   SKIP: this CPU has no AVX-512 with GFNI\n");
        return;
    }
    static const struct { int type; edgellm_gemm_fn plain, gfni; } k[] = {
        {EDGELLM_TYPE_Q4_K, edgellm_gemm_q4_K_avx512, edgellm_gemm_q4_K_avx512_gfni},
        {EDGELLM_TYPE_Q5_K, edgellm_gemm_q5_K_avx512, edgellm_gemm_q5_K_avx512_gfni},
        {EDGELLM_TYPE_Q6_K, edgellm_gemm_q6_K_avx512, edgellm_gemm_q6_K_avx512_gfni},
    };
    const int64_t rows = 37, cols = 768, ns[] = {1, 2, 4, 7};
    const edgellm_type_traits *q8k = edgellm_type_get_traits(EDGELLM_TYPE_Q8_K);
    const size_t xrb = edgellm_type_row_size(EDGELLM_TYPE_Q8_K, cols);
    float *x = malloc(sizeof(float) * (size_t)(7 * cols)), *tmp = malloc(sizeof(float) * (size_t)cols);
    uint8_t *xq = malloc(xrb * 7);
    float *y0 = malloc(sizeof(float) * (size_t)(7 * rows)), *y1 = malloc(sizeof(float) * (size_t)(7 * rows));
    for (int64_t i = 0; i < 7 * cols; i++) x[i] = i >= 3 * cols && i < 4 * cols ? 0.0f : frand() * (i % 5 == 0 ? 50.0f : 1.0f);
    for (int t = 0; t < 7; t++) q8k->from_float_ref(x + t * cols, xq + (size_t)t * xrb, cols);
    for (size_t ki = 0; ki < sizeof k / sizeof k[0]; ki++) {
        const size_t rb = edgellm_type_row_size(k[ki].type, cols);
        uint8_t *w = malloc(rb * (size_t)rows);
        for (int64_t r = 0; r < rows; r++) make_row(k[ki].type, w + (size_t)r * rb, cols, (int)(r % 4), tmp);
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
            edgellm_gemm_args a = {.w = w, .row_bytes = rb, .cols = cols, .r0 = 0, .r1 = rows, .xq = xq,
                                   .xq_row_bytes = xrb, .n = ns[ni], .y = y0, .ldy = rows};
            memset(y0, 0x7f, sizeof(float) * (size_t)(7 * rows));
            memset(y1, 0x7f, sizeof(float) * (size_t)(7 * rows));
            k[ki].plain(&a);
            a.y = y1;
            k[ki].gfni(&a);
            const int f0 = test_failures;
            CHECK(!memcmp(y0, y1, sizeof(float) * (size_t)(ns[ni] * rows)));
            if (test_failures != f0) fprintf(stderr, "   type %d n %d\n", k[ki].type, (int)ns[ni]);
        }
        free(w);
    }
    free(x);
    free(tmp);
    free(xq);
    free(y0);
    free(y1);
#else
    fprintf(stderr, "   SKIP: not x86-64\n");
#endif
}

/* Decode's software prefetch (edgellm_gemm_args.prefetch, dispatch.h) is a hint: the
 * avx512 decode kernels that take it (Q4_0, Q4_K, Q5_K, Q6_K) give the same bits with it off, at
 * the default distance and at the largest (1 MiB: far past the end of the matrix, where a
 * prefetch must not fault). Also EDGELLM_PREFETCH's parser. */
static void test_decode_prefetch_is_a_hint(void)
{
    size_t b = 7;
    CHECK(edgellm_kernels_parse_prefetch("0", &b) && b == 0);
    CHECK(edgellm_kernels_parse_prefetch("9216", &b) && b == 9216);
    CHECK(edgellm_kernels_parse_prefetch("1048576", &b) && b == 1048576);
    CHECK(edgellm_kernels_parse_prefetch("00001024", &b) && b == 1024);
    CHECK(edgellm_kernels_parse_prefetch("00", &b) && b == 0);
    CHECK(edgellm_kernels_parse_prefetch("1048576", &b) && b == 1048576);
    static const char *bad[] = {"", "1048577", "-1", "+5", " 5", "5 ", "4k", "0x10", "99999999", "0001048577"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK(!edgellm_kernels_parse_prefetch(bad[i], &b));
    CHECK_EQ(b, 1048576);   /* unchanged by a refusal */
#if defined(__x86_64__)
    if (!edgellm_cpu_get_features()->avx512) {
        fprintf(stderr, "   SKIP: this CPU has no AVX-512 VNNI\n");
        return;
    }
    static const struct { int type; edgellm_gemm_fn fn; edgellm_gemm_prep_fn prep; } k[] = {
        {EDGELLM_TYPE_Q4_0, edgellm_gemm_q4_0_avx512, edgellm_gemm_prep_q4_0_avx512},
        {EDGELLM_TYPE_Q4_K, edgellm_gemm_q4_K_avx512, NULL},
        {EDGELLM_TYPE_Q5_K, edgellm_gemm_q5_K_avx512, NULL},
        {EDGELLM_TYPE_Q6_K, edgellm_gemm_q6_K_avx512, NULL},
    };
    const int64_t rows = 37, cols = 768;   /* Q4_0: 24 blocks = a full group + a partial one */
    const size_t dists[] = {9216, 1048576};
    float *x = malloc(sizeof(float) * (size_t)cols), *tmp = malloc(sizeof(float) * (size_t)cols);
    float *y0 = malloc(sizeof(float) * (size_t)rows), *y1 = malloc(sizeof(float) * (size_t)rows);
    uint8_t *xp = aligned_alloc(64, 8 * EDGELLM_GEMM_Q8_0_XG);
    for (int64_t i = 0; i < cols; i++) x[i] = frand();
    for (size_t ki = 0; ki < sizeof k / sizeof k[0]; ki++) {
        const int vt = edgellm_type_get_traits(k[ki].type)->vec_dot_type;
        const size_t rb = edgellm_type_row_size(k[ki].type, cols), xrb = edgellm_type_row_size(vt, cols);
        uint8_t *w = malloc(rb * (size_t)rows), *xq = malloc(xrb);
        for (int64_t r = 0; r < rows; r++) make_row(k[ki].type, w + (size_t)r * rb, cols, (int)(r % 4), tmp);
        edgellm_type_get_traits(vt)->from_float_ref(x, xq, cols);
        if (k[ki].prep) k[ki].prep(xq, 0, cols, xp);
        edgellm_gemm_args a = {.w = w, .row_bytes = rb, .cols = cols, .r0 = 0, .r1 = rows, .xp = xp, .xq = xq,
                               .xq_row_bytes = xrb, .n = 1, .y = y0, .ldy = rows, .prefetch = 0};
        k[ki].fn(&a);
        for (size_t di = 0; di < sizeof dists / sizeof dists[0]; di++) {
            memset(y1, 0x7f, sizeof(float) * (size_t)rows);
            a.y = y1;
            a.prefetch = dists[di];
            k[ki].fn(&a);
            const int f0 = test_failures;
            CHECK(!memcmp(y0, y1, sizeof(float) * (size_t)rows));
            if (test_failures != f0) fprintf(stderr, "   type %d prefetch %zu\n", k[ki].type, dists[di]);
        }
        /* the load-time layout the dispatcher offers for this type, with its own kernel */
        const edgellm_repack *rp = edgellm_kernels_repack(k[ki].type, cols);
        if (rp && rp->gemm.gemm) {
            uint8_t *pk = aligned_alloc(64, (rp->size(rows, cols) + 63) / 64 * 64);
            rp->pack(pk, rows, cols, 0, rows, w);
            edgellm_gemm_args b = a;
            b.w = pk;
            b.w2 = pk + rp->plane2(rows, cols);
            for (size_t di = 0; di < sizeof dists / sizeof dists[0]; di++) {
                memset(y1, 0x7f, sizeof(float) * (size_t)rows);
                b.y = y1;
                b.prefetch = di ? dists[di] : 0;
                rp->gemm.gemm(&b);
                const int f0 = test_failures;
                CHECK(!memcmp(y0, y1, sizeof(float) * (size_t)rows));
                if (test_failures != f0) fprintf(stderr, "   layout %s prefetch %zu\n", rp->name, b.prefetch);
            }
            free(pk);
        }
        free(w);
        free(xq);
    }
    free(x);
    free(tmp);
    free(y0);
    free(y1);
    free(xp);
#endif
}

/* The CPU's vendor, family and model (cpu_features.c, from CPUID) against what Linux
 * reports in /proc/cpuinfo (the kernel decodes the same leaves itself): the decode
 * prefetch default depends on them. */
static void test_cpu_family_matches_proc(void)
{
#if defined(__x86_64__) && defined(__linux__)
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) {
        fprintf(stderr, "   SKIP: no /proc/cpuinfo\n");
        return;
    }
    char line[512], vendor[64] = "";
    int family = -1, model = -1;
    while (fgets(line, sizeof line, f) && (family < 0 || model < 0 || !vendor[0])) {
        if (!strncmp(line, "vendor_id", 9) && strchr(line, ':')) sscanf(strchr(line, ':') + 1, "%63s", vendor);
        else if (!strncmp(line, "cpu family", 10) && strchr(line, ':')) family = atoi(strchr(line, ':') + 1);
        else if (!strncmp(line, "model\t", 6) && strchr(line, ':')) model = atoi(strchr(line, ':') + 1);
    }
    fclose(f);
    const edgellm_cpu_features *cf = edgellm_cpu_get_features();
    CHECK_EQ(cf->family, family);
    CHECK_EQ(cf->model, model);
    CHECK_EQ(cf->amd, !strcmp(vendor, "AuthenticAMD"));
    CHECK_EQ(cf->intel, !strcmp(vendor, "GenuineIntel"));
    if (!getenv("EDGELLM_PREFETCH") && !getenv("EDGELLM_PREFETCH_THREADS"))
    {
        const bool zen45 = cf->amd && (cf->family == 0x19 || cf->family == 0x1a) && cf->avx512;
        const bool intel = cf->intel && cf->avx512;
        CHECK_EQ(edgellm_kernels_decode_prefetch(1), zen45 || intel ? 9216 : 0);
        CHECK_EQ(edgellm_kernels_decode_prefetch(2), (zen45 && cf->family == 0x1a) || intel ? 9216 : 0);
    }
#else
    fprintf(stderr, "   SKIP: not x86-64 Linux\n");
#endif
}

/* The AVX2 tile kernels (exact model with 8 lanes) and the scalar level's vec_dot loop
 * (identities and tolerance only). */
static void test_lower_levels(void)
{
    const char *levels[] = {"avx2", "scalar"};
    for (size_t l = 0; l < 2; l++) {
        if (!edgellm_kernels_force(levels[l])) {
            fprintf(stderr, "   SKIP: level %s not available\n", levels[l]);
            continue;
        }
        const int types[] = {EDGELLM_TYPE_Q4_0, EDGELLM_TYPE_Q8_0};
        for (size_t ti = 0; ti < 2; ti++) {
            gemm_case(types[ti], 21, 512, 5);
            gemm_case(types[ti], 3, 32 * 9, 4);          /* one group of 8 + 1 block  */
            gemm_case(types[ti], 6, 32 * 5, 3);          /* only a partial group       */
            gemm_case(types[ti], 9, 32 * 8 * 33 + 64, 2); /* more than one packed chunk */
            gemm_case(types[ti], 33, 1024, 65);
        }
    }
    edgellm_kernels_force(NULL);
}

/* Both ways of sharing rows (edgellm_matmul_sched) compute every row once, whatever the
 * thread count (more threads than tiles included) and the row count (one tile, partial
 * tiles, a batch whose matrices end mid-range): each run, repeated to give the stealing
 * races a chance, equals the single-thread result bit for bit and leaves no row unwritten
 * (y is poisoned with NaN before each run). */
static void test_schedulers(void)
{
    const int64_t cols = 256, n_rows[] = {1, 16, 17, 300, 1000};
    const int threads[] = {2, 5, 16, 64};
    float *tmp = malloc(sizeof(float) * cols), *x = malloc(sizeof(float) * 3 * cols);
    for (int64_t i = 0; i < 3 * cols; i++) x[i] = frand();
    for (size_t ri = 0; ri < sizeof n_rows / sizeof n_rows[0]; ri++) {
        const int64_t rows = n_rows[ri];
        const size_t rb = edgellm_type_row_size(EDGELLM_TYPE_Q8_0, cols);
        uint8_t *wd = malloc(rb * (size_t)rows);
        for (int64_t r = 0; r < rows; r++) make_row(EDGELLM_TYPE_Q8_0, wd + (size_t)r * rb, cols, (int)(r % 2), tmp);
        /* the same matrix twice in a batch: the second job's tiles follow the first's */
        const edgellm_tensor W = {wd, EDGELLM_TYPE_Q8_0, cols, rows, rb, NULL};
        void *scratch = malloc(edgellm_matmul_scratch_size(&W, 3) + 64);
        for (int64_t n = 1; n <= 3; n += 2) {
            float *ref = malloc(sizeof(float) * (size_t)(n * rows)), *y = malloc(sizeof(float) * (size_t)(2 * n * rows));
            edgellm_matmul(NULL, ref, &W, x, n, scratch);
            bool ok = true;
            for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
                edgellm_threadpool *pool = NULL;
                CHECK_OK(edgellm_threadpool_new(threads[ti], &pool, NULL));
                for (int sched = 0; sched < 2; sched++)
                    for (int rep = 0; rep < 5; rep++) {
                        for (int64_t i = 0; i < 2 * n * rows; i++) y[i] = NAN;
                        const edgellm_matmul_job jobs[2] = {{y, &W}, {y + n * rows, &W}};
                        /* big enough to be split: the macs floor counts the whole batch */
                        edgellm_matmul_batch_sched(pool, jobs, 2, x, n, scratch, (edgellm_matmul_sched)sched);
                        ok &= !memcmp(y, ref, sizeof(float) * (size_t)(n * rows)) &&
                              !memcmp(y + n * rows, ref, sizeof(float) * (size_t)(n * rows));
                    }
                edgellm_threadpool_free(pool);
            }
            if (!ok) fprintf(stderr, "   rows %lld n %lld: a scheduler skipped or changed rows\n", (long long)rows, (long long)n);
            CHECK(ok);
            free(ref);
            free(y);
        }
        free(scratch);
        free(wd);
    }
    free(tmp);
    free(x);
}

/* A batch (q/k/v-like, gate/up-like) equals separate calls, and mixed types fall back. */
static void test_batch_equals_separate(void)
{
    const int64_t cols = 1024, n = 6, rows[3] = {96, 33, 40};
    const int types[3] = {EDGELLM_TYPE_Q4_0, EDGELLM_TYPE_Q4_0, EDGELLM_TYPE_Q8_0};
    edgellm_tensor W[3];
    uint8_t *wd[3];
    float *tmp = malloc(sizeof(float) * cols), *x = malloc(sizeof(float) * (size_t)(n * cols));
    for (int64_t i = 0; i < n * cols; i++) x[i] = frand();
    size_t ss = 0;
    for (int j = 0; j < 3; j++) {
        const size_t rb = edgellm_type_row_size(types[j], cols);
        wd[j] = malloc(rb * (size_t)rows[j]);
        for (int64_t r = 0; r < rows[j]; r++) make_row(types[j], wd[j] + (size_t)r * rb, cols, (int)(r % 2), tmp);
        W[j] = (edgellm_tensor){wd[j], types[j], cols, rows[j], rb, NULL};
        ss = EDGELLM_MAX(ss, edgellm_matmul_scratch_size(&W[j], n));
    }
    void *scratch = malloc(ss + 64);
    edgellm_threadpool *pool = NULL;
    CHECK_OK(edgellm_threadpool_new(2, &pool, NULL));
    for (int k = 2; k <= 3; k++) {                       /* same type; then mixed types */
        float *ya[3], *yb[3];
        edgellm_matmul_job jobs[3];
        for (int j = 0; j < k; j++) {
            ya[j] = malloc(sizeof(float) * (size_t)(n * rows[j]));
            yb[j] = malloc(sizeof(float) * (size_t)(n * rows[j]));
            edgellm_matmul(NULL, ya[j], &W[j], x, n, scratch);
            jobs[j] = (edgellm_matmul_job){yb[j], &W[j]};
        }
        edgellm_matmul_batch(pool, jobs, k, x, n, scratch);
        for (int j = 0; j < k; j++) CHECK(!memcmp(ya[j], yb[j], sizeof(float) * (size_t)(n * rows[j])));
        for (int j = 0; j < k; j++) memset(yb[j], 0, sizeof(float) * (size_t)rows[j]);
        edgellm_matmul_batch(NULL, jobs, k, x, 1, scratch);       /* decode-sized batch */
        for (int j = 0; j < k; j++) {
            CHECK(!memcmp(ya[j], yb[j], sizeof(float) * (size_t)rows[j]));
            free(ya[j]);
            free(yb[j]);
        }
    }
    edgellm_threadpool_free(pool);
    for (int j = 0; j < 3; j++) free(wd[j]);
    free(scratch);
    free(x);
    free(tmp);
}

/* The K-quant layouts (kernels/repack.h), Q4_K and Q6_K: the stored q4_K_r16 and the
 * load-time layout the dispatcher offers (q4_K_x16, q6_K_x16 at avx512): packing in two
 * ranges then unpacking gives every plain row back, for whole and partial 16-row groups,
 * short and long rows; and edgellm_matmul over the repacked tensor equals it over the plain
 * one bit for bit at every kernel level of this CPU (below avx512 matmul unpacks the
 * layout's rows), n = 1..9, 16 and 33, with 1 and 3 threads. */
static void test_q4_K_repack(void)
{
    static const int64_t shapes_r[][2] = {{37, 768}, {16, 256}, {48, 2048}, {5, 5632}, {21, 7168}, {17, 11008}};
    const int64_t ns[] = {1, 2, 3, 4, 5, 7, 9, 16, 33};   /* 16, 33: AMX tiles where the CPU has them */
    const edgellm_type_traits *q8k = edgellm_type_get_traits(EDGELLM_TYPE_Q8_K);
    for (size_t si = 0; si < 2 * sizeof shapes_r / sizeof shapes_r[0]; si++) {
        const int type = si % 2 ? EDGELLM_TYPE_Q6_K : EDGELLM_TYPE_Q4_K;
        const int64_t rows = shapes_r[si / 2][0], cols = shapes_r[si / 2][1];
        const size_t rb = edgellm_type_row_size(type, cols), xrb = edgellm_type_row_size(EDGELLM_TYPE_Q8_K, cols);
        const size_t size = (size_t)((rows + 15) / 16 * 16) * rb;
        if (type == EDGELLM_TYPE_Q4_K) CHECK_EQ(edgellm_repack_q4_K_r16_size(rows, cols), size);
        uint8_t *w = malloc(rb * (size_t)rows), *pk = aligned_alloc(64, (size + 63) / 64 * 64), *row = malloc(rb);
        float *tmp = malloc(sizeof(float) * (size_t)cols), *x = malloc(sizeof(float) * (size_t)(33 * cols));
        uint8_t *xq = malloc(xrb * 33);
        float *y0 = malloc(sizeof(float) * (size_t)(33 * rows)), *y1 = malloc(sizeof(float) * (size_t)(33 * rows));
        for (int64_t r = 0; r < rows; r++) make_row(type, w + (size_t)r * rb, cols, (int)(r % 4), tmp);
        memset(pk, 0xa5, size);
        const int64_t half = rows / 2;                  /* two ranges, the second one first */
        if (type == EDGELLM_TYPE_Q4_K) {
            edgellm_repack_q4_K_r16_pack(pk, rows, cols, half, rows, w + (size_t)half * rb);
            edgellm_repack_q4_K_r16_pack(pk, rows, cols, 0, half, w);
            bool same = true;
            for (int64_t r = 0; r < rows; r++) {
                edgellm_repack_q4_K_r16_unpack_row(pk, rows, cols, r, row);
                same &= !memcmp(row, w + (size_t)r * rb, rb);
            }
            CHECK(same);
        }
        for (int64_t i = 0; i < 33 * cols; i++) x[i] = i >= 2 * cols && i < 3 * cols ? 0.0f : frand() * (i % 5 == 0 ? 50.0f : 1.0f);
        for (int t = 0; t < 33; t++) q8k->from_float_ref(x + t * cols, xq + (size_t)t * xrb, cols);
        /* matmul over the repacked tensor at every level of this CPU */
        edgellm_kernels_set_repack(true);
        static const char *lv[] = {"ref", "scalar", "avx2", "avx512", "neon", "dotprod"};
        for (size_t l = 0; l < sizeof lv / sizeof lv[0]; l++) {
            if (!edgellm_kernels_force(lv[l])) continue;
            const edgellm_repack *rp = edgellm_kernels_repack(type, cols);
            const edgellm_repack *use = rp;
            edgellm_kernels_force("auto");
            if (!use) use = edgellm_kernels_repack(type, cols);   /* unpacked below this level */
            edgellm_kernels_force(lv[l]);
            if (!use) continue;
            /* the layout the dispatcher offers, packed in two ranges (second first) */
            const size_t usz = use->size(rows, cols);
            uint8_t *pu = aligned_alloc(64, (usz + 63) / 64 * 64);
            memset(pu, 0x5a, usz);
            use->pack(pu, rows, cols, half, rows, w + (size_t)half * rb);
            use->pack(pu, rows, cols, 0, half, w);
            bool back = true;
            for (int64_t r = 0; r < rows; r++) {
                use->unpack_row(pu, rows, cols, r, row);
                back &= !memcmp(row, w + (size_t)r * rb, rb);
            }
            CHECK(back);
            CHECK(use->type == type);
            edgellm_tensor P = {w, type, cols, rows, rb, NULL}, R = P;
            R.data = pu;
            R.repack = use;
            CHECK(edgellm_kernels_repack_usable(use) == (rp != NULL));
            const size_t ss = edgellm_matmul_scratch_size(&P, 33);
            void *scratch = malloc(ss + 64);
            for (int th = 1; th <= 3; th += 2) {
                edgellm_threadpool *pool = NULL;
                if (th > 1) CHECK_OK(edgellm_threadpool_new(th, &pool, NULL));
                for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                    memset(y0, 0x7f, sizeof(float) * (size_t)(33 * rows));
                    memset(y1, 0x7e, sizeof(float) * (size_t)(33 * rows));
                    edgellm_matmul(pool, y0, &P, x, ns[ni], scratch);
                    edgellm_matmul(pool, y1, &R, x, ns[ni], scratch);
                    const int f0 = test_failures;
                    CHECK(!memcmp(y0, y1, sizeof(float) * (size_t)(ns[ni] * rows)));
                    if (test_failures != f0)
                        fprintf(stderr, "   matmul %s level %s %lldx%lld n %d threads %d\n", use->name, lv[l],
                                (long long)rows, (long long)cols, (int)ns[ni], th);
                }
                edgellm_threadpool_free(pool);
            }
            free(scratch);
            free(pu);
        }
        edgellm_kernels_force("auto");
        free(w);
        free(pk);
        free(row);
        free(tmp);
        free(x);
        free(xq);
        free(y0);
        free(y1);
    }
    /* the switch */
    edgellm_kernels_set_repack(false);
    CHECK(edgellm_kernels_repack(EDGELLM_TYPE_Q4_K, 2048) == NULL);
    edgellm_kernels_set_repack(true);
    CHECK(edgellm_kernels_repack(EDGELLM_TYPE_Q5_K, 2048) == NULL);
    char buf[160];
    CHECK(strlen(edgellm_kernels_repack_describe(buf, sizeof buf)) > 0);
    /* every type with a layout at this level named, once */
    const edgellm_repack *r4 = edgellm_kernels_repack(EDGELLM_TYPE_Q4_K, 2048), *r6 = edgellm_kernels_repack(EDGELLM_TYPE_Q6_K, 2048);
    if (r4) CHECK(strstr(buf, "q4_K_x16 for Q4_K") != NULL);
    if (r6) {
        CHECK(strstr(buf, "q6_K_x16 for Q6_K") != NULL);
        CHECK(strstr(buf, "q6_K_x16") && !strstr(strstr(buf, "q6_K_x16") + 1, "q6_K_x16"));
    }
    if (!r4 && !r6) CHECK(!strncmp(buf, "none", 4));
}

#if defined(__x86_64__)
/* Scale bytes of super-block i of row r, round s: u = 16i + (r + s) % 16 walks all 256
 * values for every row slot r % 16 over i < 16 and s < 16; each of the 12 bytes is a bit
 * permutation of u xor a constant, so that the bits a 6-bit scale or min is made of come
 * from independent bits of u (a_j = u, b_j = u rotated by 4, c_j = u with bits 2-5 in 0-3
 * and bits 0-1 in 4-5): every row slot sees every value of every byte and every
 * (a_j >> 6, c_j & 15) and (b_j >> 6, c_j >> 4) pair. */
static void q4_K_scale_bytes(uint8_t q[12], int64_t i, int64_t r, int s)
{
    const unsigned u = (unsigned)(16 * i + (r + s) % 16) & 255;
    for (int j = 0; j < 4; j++) {
        q[j] = (uint8_t)(u ^ (0x5a * j));
        q[4 + j] = (uint8_t)(((u << 4) | (u >> 4)) ^ (0x33 * j));
        q[8 + j] = (uint8_t)((((u >> 2) & 0x0f) | ((u & 3) << 4) | (u & 0xc0)) ^ (0x69 * j));
    }
}

/* Q8_K activation row t of a chain test, written directly (bsums consistent): t % 9 == 3
 * every code -128, 5 zeros, 7 every code 127, else random codes; d random, either sign. */
/* Tokens of activations in the K-quant kernel tests: up to 9 for the AVX-512 kernels, 40 for
 * the AMX one (one and two 16-token tiles, 1-15 left over). */
#define K_NT 40
static const int64_t amx_ns[] = {1, 9, 15, 16, 17, 20, 31, 32, 33, 40};

static void q4_K_chain_acts(edgellm_block_q8_K *x, int64_t nb, int t)
{
    for (int64_t i = 0; i < nb; i++) {
        x[i].d = (rnd() & 1 ? -1.0f : 1.0f) * (float)ldexp(1.0 + (double)(rnd() % 1000) / 1000.0, -(int)(rnd() % 12));
        for (int e = 0; e < 256; e++)
            x[i].qs[e] = (int8_t)(t % 9 == 3 ? -128 : t % 9 == 5 ? 0 : t % 9 == 7 ? 127 : (int)(rnd() & 255) - 128);
        for (int j = 0; j < 16; j++) {
            int s = 0;
            for (int e = 0; e < 16; e++) s += x[i].qs[16 * j + e];
            x[i].bsums[j] = (int16_t)s;
        }
    }
}

/* Rows [r0, r1), tokens < n of y equal want bit for bit; every other float of y (K_NT × rows)
 * still the sentinel 0x7f7f7f7f. */
static bool q4_K_chain_ok(const float *y, const float *want, int64_t rows, int64_t n, int64_t r0, int64_t r1)
{
    bool ok = true;
    for (int64_t t = 0; t < K_NT; t++)
        for (int64_t r = 0; r < rows; r++) {
            uint32_t b;
            memcpy(&b, &y[t * rows + r], 4);
            ok &= t < n && r >= r0 && r < r1 ? !memcmp(&y[t * rows + r], &want[t * rows + r], 4) : b == 0x7f7f7f7fu;
        }
    return ok;
}
#endif

/* The AVX-512 Q4_K kernels (k_avx512.h: one float chain per row and token) against
 * model_q4_K_chain bit for bit, called directly: in place (plain and GFNI; 1-3 tokens by
 * rows in tables of Q4K_SP = 64 super-blocks, 4 and more by 16-row blocks built in pieces
 * of Q4K_KB = 8) and over the layout q4_K_x16 (packed in two ranges, the first ending
 * inside a 16-row group, 8 padding rows), and the vec_dot. Super-blocks per row 1-3, 7-9,
 * 15-17, 33, 63-65, 80, 129 (pieces and tables whole, partial, one past); row ranges
 * inside one group, across groups, ending in the padding group; n = 1..9 (n = 0 writes
 * nothing); prefetch off and 1 MiB (past the end of every buffer). Weights: every make_row
 * mode, and 16 rounds of crafted scale bytes (q4_K_scale_bytes) over 16 super-blocks; activations random, all
 * -128 (|S| at its bound with mode 3), zero, all 127. Nothing outside the range written;
 * the pack/unpack round trip and the zeroed padding rows. */
static void k_chain_case(const int type)
{
#if defined(__x86_64__)
    if (!edgellm_cpu_get_features()->avx512) {
        fprintf(stderr, "   SKIP: this CPU has no AVX-512 VNNI\n");
        return;
    }
    const bool gf = edgellm_cpu_get_features()->gfni;
    const bool six = type == EDGELLM_TYPE_Q6_K;
    const edgellm_gemm_fn fns[5] = {
        six ? edgellm_gemm_q6_K_avx512 : edgellm_gemm_q4_K_avx512,
        gf ? (six ? edgellm_gemm_q6_K_avx512_gfni : edgellm_gemm_q4_K_avx512_gfni) : NULL,
        six ? edgellm_gemm_q6_K_x16_avx512 : edgellm_gemm_q4_K_x16_avx512,
        gf ? (six ? edgellm_gemm_q6_K_x16_avx512_gfni : edgellm_gemm_q4_K_x16_avx512_gfni) : NULL,
        edgellm_cpu_get_features()->amx && !six ? edgellm_gemm_q4_K_x16_amx : NULL};
    if (!six && !edgellm_cpu_get_features()->amx) fprintf(stderr, "   (no AMX here: its kernel not run)\n");
    const edgellm_repack lay = six ? (edgellm_repack)EDGELLM_REPACK_Q6_K_X16(NULL) : (edgellm_repack)EDGELLM_REPACK_Q4_K_X16(NULL);
    static const int64_t nbs[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 33, 63, 64, 65, 80, 129};
    const int64_t rows = 40, rp = 48;
    const int64_t ranges[][2] = {{0, rows}, {5, 11}, {13, 35}, {16, 32}, {31, 33}, {39, 40}, {3, 19}, {32, 40}};
    const int n_scale_rounds = 16;
    int64_t bad = 0, bad_dot = 0, bad_pack = 0;
    for (size_t si = 0; si < sizeof nbs / sizeof nbs[0] + (size_t)n_scale_rounds; si++) {
        const bool scale_round = si >= sizeof nbs / sizeof nbs[0];
        const int s = scale_round ? (int)(si - sizeof nbs / sizeof nbs[0]) : -1;
        const int64_t nb = scale_round ? 16 : nbs[si], cols = 256 * nb;
        const size_t rb = edgellm_type_row_size(type, cols);
        const size_t xrb = edgellm_type_row_size(EDGELLM_TYPE_Q8_K, cols);
        const size_t size = lay.size(rows, cols);
        CHECK_EQ(size, (size_t)(rp / 16) * (size_t)nb * (six ? EDGELLM_Q6X16_BLOCK : EDGELLM_X16_BLOCK));
        uint8_t *w = malloc(rb * (size_t)rows), *pk = aligned_alloc(64, (size + 63) / 64 * 64), *xq = malloc(xrb * K_NT);
        uint8_t *row = malloc(rb);
        float *tmp = malloc(sizeof(float) * (size_t)cols), *want = malloc(sizeof(float) * (size_t)(K_NT * rows));
        float *y = malloc(sizeof(float) * (size_t)(K_NT * rows));
        for (int64_t r = 0; r < rows; r++) {
            make_row(type, w + (size_t)r * rb, cols, scale_round ? 1 : (int)((r + si) % 4), tmp);
            if (scale_round)
                for (int64_t i = 0; i < nb; i++) {
                    if (!six) q4_K_scale_bytes(((edgellm_block_q4_K *)(w + (size_t)r * rb) + i)->scales, i, r, s);
                    else                       /* every scale byte value over the rounds */
                        for (int j = 0; j < 16; j++)
                            ((edgellm_block_q6_K *)(w + (size_t)r * rb) + i)->scales[j] =
                                (int8_t)(uint8_t)(16 * s + (j + 3 * r + 5 * i) % 16);
                }
        }
        for (int t = 0; t < K_NT; t++) q4_K_chain_acts((edgellm_block_q8_K *)(xq + (size_t)t * xrb), nb, t);
        for (int t = 0; t < K_NT; t++)
            for (int64_t r = 0; r < rows; r++) {
                const uint8_t *wr = w + (size_t)r * rb, *xt = xq + (size_t)t * xrb;
                want[t * rows + r] = six ? model_q6_K(wr, (const edgellm_block_q8_K *)xt, cols)
                                         : model_q4_K_chain(wr, (const edgellm_block_q8_K *)xt, cols);
                if (tile_lanes() == 16) {
                    const float v = edgellm_kernels_vec_dot(type)(cols, wr, xt);
                    if (memcmp(&v, &want[t * rows + r], 4) && bad_dot++ < 3)
                        fprintf(stderr, "   vec_dot %lld sb row %d token %d: %.9g, model %.9g\n", (long long)nb, (int)r,
                                t, v, want[t * rows + r]);
                }
            }
        memset(pk, 0xa5, size);
        lay.pack(pk, rows, cols, 13, rows, w + 13 * rb);
        lay.pack(pk, rows, cols, 0, 13, w);
        for (int64_t r = 0; r < rp; r++) {
            lay.unpack_row(pk, rows, cols, r, row);
            bool same = true;
            for (size_t b = 0; b < rb; b++) same &= row[b] == (r < rows ? w[(size_t)r * rb + b] : 0);
            if (!same && bad_pack++ < 3) fprintf(stderr, "   %s pack %lld sb: row %d\n", lay.name, (long long)nb, (int)r);
        }
        for (int f = 0; f < 5; f++)
            for (size_t q = 0; q < sizeof ranges / sizeof ranges[0] && fns[f]; q++)
                for (int ni = 0; ni <= (f < 4 ? 9 : (int)(sizeof amx_ns / sizeof amx_ns[0]) - 1); ni++) {
                    const int64_t n = f < 4 ? ni : amx_ns[ni];
                    const int64_t r0 = ranges[q][0], r1 = ranges[q][1];
                    edgellm_gemm_args a = {.w = f < 2 ? w : pk, .row_bytes = rb, .cols = cols, .r0 = r0, .r1 = r1,
                                           .xq = xq, .xq_row_bytes = xrb, .n = n, .y = y, .ldy = rows,
                                           .prefetch = n % 2 ? 1048576 : 0};
                    memset(y, 0x7f, sizeof(float) * (size_t)(K_NT * rows));
                    fns[f](&a);
                    if (!q4_K_chain_ok(y, want, rows, n, r0, r1) && bad++ < 3)
                        fprintf(stderr, "   %s %lld sb round %d kernel %d rows %d-%d n %d\n", edgellm_type_name(type),
                                (long long)nb, s, f, (int)r0, (int)r1, (int)n);
                }
        free(w);
        free(pk);
        free(xq);
        free(row);
        free(tmp);
        free(want);
        free(y);
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(bad_dot, 0);
    CHECK_EQ(bad_pack, 0);
#else
    (void)type;
    fprintf(stderr, "   SKIP: not x86-64\n");
#endif
}

static void test_q4_K_chain(void) { k_chain_case(EDGELLM_TYPE_Q4_K); }
static void test_q6_K_chain(void) { k_chain_case(EDGELLM_TYPE_Q6_K); }

#if defined(__x86_64__)
/* len bytes at the end of a fresh mapping whose next page is PROT_NONE (a read past them
 * faults); *base and *maplen for guard_free. */
static uint8_t *guard_alloc(size_t len, void **base, size_t *maplen)
{
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE), body = (len + pg - 1) / pg * pg;
    *maplen = body + pg;
    uint8_t *m = mmap(NULL, *maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    if (mprotect(m + body, pg, PROT_NONE)) {
        munmap(m, *maplen);
        return NULL;
    }
    *base = m;
    return m + body - len;
}
#endif

/* The AVX-512 Q4_K and Q6_K kernels (in place and over the x16 layouts, plain and GFNI)
 * read nothing past the matrix or the activations: each ends on the last byte of a page
 * whose successor is unmapped. 20 rows (the last group partial: the in-place prefill
 * repeats a row, the layout has 12 padding rows) of 1, 2 and 7 super-blocks, n = 1..9,
 * row ranges ending at the last row; results bit for bit against the models. */
static void test_k_guard_page(void)
{
#if defined(__x86_64__)
    if (!edgellm_cpu_get_features()->avx512) {
        fprintf(stderr, "   SKIP: this CPU has no AVX-512 VNNI\n");
        return;
    }
    const bool gf = edgellm_cpu_get_features()->gfni;
    static const int64_t nbs[] = {1, 2, 7};
    const int64_t rows = 20, ranges[][2] = {{0, 20}, {19, 20}, {4, 20}, {16, 20}};
    int64_t bad = 0;
    for (int six = 0; six < 2; six++) {
        const int type = six ? EDGELLM_TYPE_Q6_K : EDGELLM_TYPE_Q4_K;
        const edgellm_gemm_fn fns[5] = {
            six ? edgellm_gemm_q6_K_avx512 : edgellm_gemm_q4_K_avx512,
            gf ? (six ? edgellm_gemm_q6_K_avx512_gfni : edgellm_gemm_q4_K_avx512_gfni) : NULL,
            six ? edgellm_gemm_q6_K_x16_avx512 : edgellm_gemm_q4_K_x16_avx512,
            gf ? (six ? edgellm_gemm_q6_K_x16_avx512_gfni : edgellm_gemm_q4_K_x16_avx512_gfni) : NULL,
            edgellm_cpu_get_features()->amx && !six ? edgellm_gemm_q4_K_x16_amx : NULL};
        const edgellm_repack lay = six ? (edgellm_repack)EDGELLM_REPACK_Q6_K_X16(NULL) : (edgellm_repack)EDGELLM_REPACK_Q4_K_X16(NULL);
        for (size_t si = 0; si < sizeof nbs / sizeof nbs[0]; si++) {
            const int64_t nb = nbs[si], cols = 256 * nb;
            const size_t rb = edgellm_type_row_size(type, cols), xrb = edgellm_type_row_size(EDGELLM_TYPE_Q8_K, cols);
            const size_t size = lay.size(rows, cols);
            void *bw = NULL, *bp = NULL, *bx = NULL;
            size_t lw = 0, lp = 0, lx = 0;
            uint8_t *w = guard_alloc(rb * (size_t)rows, &bw, &lw), *pk = guard_alloc(size, &bp, &lp),
                    *xq = guard_alloc(xrb * K_NT, &bx, &lx);
            CHECK(w && pk && xq);
            if (!w || !pk || !xq) return;
            CHECK_EQ((uintptr_t)pk % 64, 0);
            float *tmp = malloc(sizeof(float) * (size_t)cols), *want = malloc(sizeof(float) * (size_t)(K_NT * rows));
            float *y = malloc(sizeof(float) * (size_t)(K_NT * rows));
            for (int64_t r = 0; r < rows; r++) make_row(type, w + (size_t)r * rb, cols, (int)(r % 4), tmp);
            for (int t = 0; t < K_NT; t++) q4_K_chain_acts((edgellm_block_q8_K *)(xq + (size_t)t * xrb), nb, t);
            for (int t = 0; t < K_NT; t++)
                for (int64_t r = 0; r < rows; r++) {
                    const uint8_t *wr = w + (size_t)r * rb;
                    const edgellm_block_q8_K *xt = (const edgellm_block_q8_K *)(xq + (size_t)t * xrb);
                    want[t * rows + r] = six ? model_q6_K(wr, xt, cols) : model_q4_K_chain(wr, xt, cols);
                }
            lay.pack(pk, rows, cols, 0, rows, w);
            for (int f = 0; f < 5; f++)
                for (size_t q = 0; q < sizeof ranges / sizeof ranges[0] && fns[f]; q++)
                    for (int ni = 1; ni <= (f < 4 ? 9 : (int)(sizeof amx_ns / sizeof amx_ns[0]) - 1); ni++) {
                        const int64_t n = f < 4 ? ni : amx_ns[ni];
                        const int64_t r0 = ranges[q][0], r1 = ranges[q][1];
                        edgellm_gemm_args a = {.w = f < 2 ? w : pk, .row_bytes = rb, .cols = cols, .r0 = r0, .r1 = r1,
                                               .xq = xq, .xq_row_bytes = xrb, .n = n, .y = y, .ldy = rows};
                        memset(y, 0x7f, sizeof(float) * (size_t)(K_NT * rows));
                        fns[f](&a);
                        if (!q4_K_chain_ok(y, want, rows, n, r0, r1) && bad++ < 3)
                            fprintf(stderr, "   %s %lld sb kernel %d rows %d-%d n %d\n", edgellm_type_name(type),
                                    (long long)nb, f, (int)r0, (int)r1, (int)n);
                    }
            munmap(bw, lw);
            munmap(bp, lp);
            munmap(bx, lx);
            free(tmp);
            free(want);
            free(y);
        }
    }
    CHECK_EQ(bad, 0);
#else
    fprintf(stderr, "   SKIP: not x86-64\n");
#endif
}

/* The in-place K-quant tile kernels of this CPU (AVX-512: Q4_K, Q5_K, Q6_K, plain and
 * GFNI; AArch64: Q4_K, Q6_K at neon and dotprod) called directly on row ranges that start
 * and end inside their 16-row groups (and lie inside one), n = 1..9: every (row, token) of
 * the range equals that token's decode over all rows (n = 1) bit for bit, and nothing
 * outside the range is written. */
static void test_k_row_groups(void)
{
    typedef struct { int type; edgellm_gemm_fn fn; } kfn;
    kfn k[6];
    int nk = 0;
#if defined(__x86_64__)
    if (edgellm_cpu_get_features()->avx512) {
        k[nk++] = (kfn){EDGELLM_TYPE_Q4_K, edgellm_gemm_q4_K_avx512};
        k[nk++] = (kfn){EDGELLM_TYPE_Q5_K, edgellm_gemm_q5_K_avx512};
        k[nk++] = (kfn){EDGELLM_TYPE_Q6_K, edgellm_gemm_q6_K_avx512};
    }
    if (edgellm_cpu_get_features()->gfni) {
        k[nk++] = (kfn){EDGELLM_TYPE_Q4_K, edgellm_gemm_q4_K_avx512_gfni};
        k[nk++] = (kfn){EDGELLM_TYPE_Q5_K, edgellm_gemm_q5_K_avx512_gfni};
        k[nk++] = (kfn){EDGELLM_TYPE_Q6_K, edgellm_gemm_q6_K_avx512_gfni};
    }
#elif defined(__aarch64__)
    k[nk++] = (kfn){EDGELLM_TYPE_Q4_K, edgellm_gemm_q4_K_neon};
    k[nk++] = (kfn){EDGELLM_TYPE_Q6_K, edgellm_gemm_q6_K_neon};
    if (edgellm_cpu_get_features()->dotprod) {
        k[nk++] = (kfn){EDGELLM_TYPE_Q4_K, edgellm_gemm_q4_K_dotprod};
        k[nk++] = (kfn){EDGELLM_TYPE_Q6_K, edgellm_gemm_q6_K_dotprod};
    }
#endif
    if (!nk) {
        fprintf(stderr, "   SKIP: no K-quant tile kernels on this CPU\n");
        return;
    }
    const int64_t rows = 45, cols = 768;
    const int64_t ranges[][2] = {{0, rows}, {3, 19}, {7, 8}, {17, 45}, {16, 32}, {20, 39}, {1, 44}};
    const size_t xrb = edgellm_type_row_size(EDGELLM_TYPE_Q8_K, cols);
    float *x = malloc(sizeof(float) * (size_t)cols), *tmp = malloc(sizeof(float) * (size_t)cols);
    uint8_t *xq = malloc(xrb * 9);
    float *yd = malloc(sizeof(float) * (size_t)(9 * rows)), *y = malloc(sizeof(float) * (size_t)(9 * rows));
    for (int t = 0; t < 9; t++) {
        for (int64_t i = 0; i < cols; i++) x[i] = t == 5 ? 0.0f : frand() * (i % 5 == 0 ? 50.0f : 1.0f);
        edgellm_type_get_traits(EDGELLM_TYPE_Q8_K)->from_float_ref(x, xq + (size_t)t * xrb, cols);
    }
    for (int ki = 0; ki < nk; ki++) {
        const size_t rb = edgellm_type_row_size(k[ki].type, cols);
        uint8_t *w = malloc(rb * (size_t)rows);
        for (int64_t r = 0; r < rows; r++) make_row(k[ki].type, w + (size_t)r * rb, cols, (int)(r % 4), tmp);
        for (int t = 0; t < 9; t++) {   /* decode, token by token */
            edgellm_gemm_args a = {.w = w, .row_bytes = rb, .cols = cols, .r0 = 0, .r1 = rows, .xq = xq + (size_t)t * xrb,
                                   .xq_row_bytes = xrb, .n = 1, .y = yd + t * rows, .ldy = rows};
            k[ki].fn(&a);
        }
        int64_t bad = 0;
        for (size_t q = 0; q < sizeof ranges / sizeof ranges[0]; q++)
            for (int64_t n = 1; n <= 9; n++) {
                const int64_t r0 = ranges[q][0], r1 = ranges[q][1];
                edgellm_gemm_args a = {.w = w, .row_bytes = rb, .cols = cols, .r0 = r0, .r1 = r1, .xq = xq,
                                       .xq_row_bytes = xrb, .n = n, .y = y, .ldy = rows};
                memset(y, 0x7f, sizeof(float) * (size_t)(9 * rows));
                k[ki].fn(&a);
                bool ok = true;
                for (int64_t t = 0; t < 9; t++)
                    for (int64_t r = 0; r < rows; r++) {
                        const float *p = &y[t * rows + r];
                        uint32_t b;
                        memcpy(&b, p, 4);
                        ok &= t < n && r >= r0 && r < r1 ? !memcmp(p, &yd[t * rows + r], 4) : b == 0x7f7f7f7fu;
                    }
                if (!ok && bad++ < 3)
                    fprintf(stderr, "   kernel %d (type %d) rows %d-%d n %d\n", ki, k[ki].type, (int)r0, (int)r1, (int)n);
            }
        CHECK_EQ(bad, 0);
        free(w);
    }
    free(x);
    free(tmp);
    free(xq);
    free(yd);
    free(y);
}

int main(void)
{
    RUN(test_q8_0_activation_kernels);
    RUN(test_q8_K_activation_kernels);
    RUN(test_f16_kernel);
    RUN(test_k_gfni_equals_plain);
    RUN(test_arm_k_levels);
    RUN(test_q4_K_repack);
    RUN(test_q4_K_chain);
    RUN(test_q6_K_chain);
    RUN(test_k_guard_page);
    RUN(test_k_row_groups);
    RUN(test_decode_prefetch_is_a_hint);
    RUN(test_cpu_family_matches_proc);
    RUN(test_lower_levels);
    RUN(test_batch_equals_separate);
    RUN(test_schedulers);
    return test_summary();
}
