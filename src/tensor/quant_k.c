/*
 * quant_k.c — the K-quants Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (256-element super-blocks):
 * dequantizers (bit-exact to ggml's formulas and float operation order), reference
 * quantizers, and reference dot products against Q8_K activations.
 *
 * Spec: ggml-org/ggml src/ggml-common.h (layouts, blocks.h) and
 * src/ggml-quants.c (dequantize_row_q*_K, quantize_row_q*_K_ref). Each super-block holds
 * 16 sub-blocks of 16 (Q2_K, Q3_K, Q6_K) or 8 of 32 (Q4_K, Q5_K); every sub-block has a
 * small integer scale (and for Q2/Q4/Q5 a min) that is itself multiplied by a half
 * super-scale d (and dmin):
 *   Q2_K  w = d*(sc & 15) * q - dmin*(sc >> 4),  q 0..3
 *   Q3_K  w = d*(sc - 32) * q,                    q -4..3, sc 6 bits
 *   Q4_K  w = d*sc * q - dmin*m,                  q 0..15, sc/m 6 bits
 *   Q5_K  w = d*sc * q - dmin*m,                  q 0..31
 *   Q6_K  w = d*sc * q,                           q -32..31, sc int8
 *
 * Q4_K/Q5_K 6-bit scales, 12 bytes for 8 (scale, min) pairs:
 *   bytes 0-3 : bits 0-5 scale j (j=0..3),  bits 6-7 = bits 4-5 of scale j+4
 *   bytes 4-7 : bits 0-5 min j   (j=0..3),  bits 6-7 = bits 4-5 of min j+4
 *   bytes 8-11: low nibble = bits 0-3 of scale j+4, high nibble = bits 0-3 of min j+4
 * e.g. scales {1,2,...,8} and mins {9,10,...,16} pack to
 *   01 02 03 04 | 09 0a 0b 4c | d5 e6 f7 08
 * scale 4 = (byte 8 & 15) | (byte 0 >> 6) << 4 = 5; min 7 = (byte 11 >> 4) | (byte 7 >> 6) << 4
 * = 0 | 1 << 4 = 16 (see edgellm_k_scale_min).
 *
 * The reference quantizers run ggml's searches (quant_k_search.c): per sub-block a
 * weighted least-squares fit of scale (and min), then the sub-block scales are quantized
 * against the super-scale, and the codes are recomputed with the final, rounded scales.
 * Inputs are first saturated to ±65504 (counted), so the halves stay finite. Each type's
 * quantizer is a per-super-block function run by the shared row loop k_quant_blocks.
 */
#include "quant_k_search.h"
#include <math.h>

#define QK EDGELLM_QK_K

/* Saturated copy of one super-block; returns the number of clamped values. */
static uint64_t k_input(const float *x, float *xs)
{
    uint64_t sat = 0;
    for (int i = 0; i < QK; i++) xs[i] = edgellm_q_sat(x[i], EDGELLM_HALF_MAX, &sat);
    return sat;
}

/* One super-block's quantizer: x = QK saturated floats -> the block at blk; returns the
 * codes that had to be clamped. */
typedef uint64_t (*k_block_fn)(const float *x, void *blk);

/* The row loop of every K-quantizer: per super-block, the saturated copy, then fn. */
static uint64_t k_quant_blocks(const float *src, void *dst, int64_t n, size_t block_bytes, k_block_fn fn)
{
    uint8_t *y = dst;
    uint64_t sat = 0;
    for (int64_t i = 0; i < n / QK; i++) {
        float x[QK];
        sat += k_input(src + QK * i, x);
        sat += fn(x, y + (size_t)i * block_bytes);
    }
    return sat;
}

void edgellm_k_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 15) | (q[j - 4] >> 6) << 4);
        *m = (uint8_t)((q[j + 4] >> 4) | (q[j] >> 6) << 4);
    }
}

static void k_pack_scale_min(uint8_t *q, const uint8_t ls[8], const uint8_t lm[8])
{
    for (int j = 0; j < 4; j++) {
        q[j] = ls[j];
        q[j + 4] = lm[j];
    }
    for (int j = 4; j < 8; j++) {
        q[j + 4] = (uint8_t)((ls[j] & 15) | (lm[j] & 15) << 4);
        q[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
        q[j] |= (uint8_t)((lm[j] >> 4) << 6);
    }
}

void edgellm_q3_K_scales(const uint8_t *p, int8_t out[16])
{
    for (int j = 0; j < 16; j++) {
        int lo = j < 8 ? p[j] & 15 : p[j - 8] >> 4;
        int hi = (p[8 + j % 4] >> (2 * (j / 4))) & 3;
        out[j] = (int8_t)((lo | hi << 4) - 32);
    }
}

/* ---- code unpacking: one int8 code per element, in element order ---- */

/* Q2_K / Q3_K low bits: element 128h + 32s + l is bits 2s..2s+1 of qs[32h + l]. */
static void unpack_2bit(const uint8_t *qs, int8_t q[QK])
{
    for (int e = 0; e < QK; e++) q[e] = (int8_t)((qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3);
}

static void pack_2bit(const uint8_t L[QK], uint8_t *qs)
{
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++)
            qs[32 * h + l] = (uint8_t)(L[128 * h + l] | L[128 * h + l + 32] << 2 | L[128 * h + l + 64] << 4 |
                                       L[128 * h + l + 96] << 6);
}

static void q3_K_codes(const edgellm_block_q3_K *b, int8_t q[QK])
{
    unpack_2bit(b->qs, q);
    for (int e = 0; e < QK; e++) q[e] -= (b->hmask[e % 32] >> (e / 32)) & 1 ? 0 : 4;
}

/* Q4_K / Q5_K: element 64c + 32h + l is nibble h of qs[32c + l]; Q5_K adds bit 2c+h of qh[l]. */
static void q4_K_codes(const uint8_t *qs, const uint8_t *qh, int8_t q[QK])
{
    for (int e = 0; e < QK; e++) {
        int c = e / 64, h = (e / 32) & 1, l = e % 32;
        int v = (qs[32 * c + l] >> (4 * h)) & 15;
        if (qh) v |= ((qh[l] >> (2 * c + h)) & 1) << 4;
        q[e] = (int8_t)v;
    }
}

static void q6_K_codes(const edgellm_block_q6_K *b, int8_t q[QK])
{
    for (int e = 0; e < QK; e++) {
        int h = e / 128, k = (e % 128) / 32, l = e % 32;
        int lo = (b->ql[64 * h + 32 * (k & 1) + l] >> (4 * (k >> 1))) & 15;
        int hi = (b->qh[32 * h + l] >> (2 * k)) & 3;
        q[e] = (int8_t)((lo | hi << 4) - 32);
    }
}

/* ---- Q8_K activation helpers for the dots ---- */
static int32_t isum(const int8_t *a, const int8_t *b, int n)
{
    int32_t s = 0;
    for (int i = 0; i < n; i++) s += (int32_t)a[i] * b[i];
    return s;
}
static int32_t qsum(const int8_t *b, int n)
{
    int32_t s = 0;
    for (int i = 0; i < n; i++) s += b[i];
    return s;
}

/* ================================== Q2_K =========================================== */

static uint64_t q2_K_block(const float *x, void *blk)
{
    edgellm_block_q2_K *y = blk;
    uint64_t sat = 0;
    float w[16], scales[16], mins[16];
    uint8_t L[QK], Laux[16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; j++) {
        for (int l = 0; l < 16; l++) w[l] = fabsf(x[16 * j + l]);
        scales[j] = edgellm_kq_search_min(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    memset(y->scales, 0, 16);
    y->d = 0;
    y->dmin = 0;
    if (max_scale > 0) {
        const float iscale = 15.0f / max_scale;
        for (int j = 0; j < 16; j++) y->scales[j] = (uint8_t)edgellm_q_round(iscale * scales[j], 0, 15, NULL);
        y->d = edgellm_q_half(max_scale / 15.0f);
    }
    if (max_min > 0) {
        const float iscale = 15.0f / max_min;
        for (int j = 0; j < 16; j++) y->scales[j] |= (uint8_t)(edgellm_q_round(iscale * mins[j], 0, 15, NULL) << 4);
        y->dmin = edgellm_q_half(max_min / 15.0f);
    }
    for (int j = 0; j < 16; j++) {
        const float d = edgellm_f16_to_f32(y->d) * (y->scales[j] & 15);
        if (d == 0.0f) continue;
        const float dm = edgellm_f16_to_f32(y->dmin) * (y->scales[j] >> 4);
        for (int l = 0; l < 16; l++) L[16 * j + l] = (uint8_t)edgellm_q_round((x[16 * j + l] + dm) / d, 0, 3, &sat);
    }
    pack_2bit(L, y->qs);
    return sat;
}

uint64_t edgellm_quant_q2_K_ref(const float *src, void *dst, int64_t n)
{
    return k_quant_blocks(src, dst, n, sizeof(edgellm_block_q2_K), q2_K_block);
}

void edgellm_dequant_q2_K(const void *src, float *dst, int64_t n)
{
    const edgellm_block_q2_K *x = src;
    int8_t q[QK];
    for (int64_t i = 0; i < n / QK; i++, dst += QK) {
        const float d = edgellm_f16_to_f32(x[i].d), min = edgellm_f16_to_f32(x[i].dmin);
        unpack_2bit(x[i].qs, q);
        for (int e = 0; e < QK; e++) {
            const uint8_t sc = x[i].scales[e / 16];
            const float dl = d * (sc & 15), ml = min * (sc >> 4);
            dst[e] = dl * q[e] - ml;
        }
    }
}

float edgellm_dot_q2_K_q8_K_ref(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q2_K *a = w;
    const edgellm_block_q8_K *b = x;
    int8_t q[QK];
    double acc = 0;
    for (int64_t i = 0; i < n / QK; i++) {
        const double d = edgellm_f16_to_f32(a[i].d), dmin = edgellm_f16_to_f32(a[i].dmin);
        unpack_2bit(a[i].qs, q);
        double blk = 0;
        for (int j = 0; j < 16; j++) {
            const uint8_t sc = a[i].scales[j];
            blk += d * (sc & 15) * isum(q + 16 * j, b[i].qs + 16 * j, 16) - dmin * (sc >> 4) * qsum(b[i].qs + 16 * j, 16);
        }
        acc += blk * b[i].d;
    }
    return (float)acc;
}

/* ================================== Q3_K =========================================== */

static uint64_t q3_K_block(const float *x, void *blk)
{
    edgellm_block_q3_K *y = blk;
    uint64_t sat = 0;
    float scales[16];
    int8_t L[QK];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; j++) {
        scales[j] = edgellm_kq_search_q3(16, 4, x + 16 * j, L + 16 * j);
        if (fabsf(scales[j]) > amax) { amax = fabsf(scales[j]); max_scale = scales[j]; }
    }
    memset(y->scales, 0, 12);
    if (max_scale != 0.0f) {
        const float iscale = -32.0f / max_scale;
        for (int j = 0; j < 16; j++) {
            int l = edgellm_q_round(iscale * scales[j], -32, 31, NULL) + 32;
            if (j < 8) y->scales[j] = (uint8_t)(l & 15);
            else y->scales[j - 8] |= (uint8_t)((l & 15) << 4);
            y->scales[8 + j % 4] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
        }
        y->d = edgellm_q_half(1 / iscale);
    } else {
        y->d = 0;
    }
    int8_t sc[16];
    edgellm_q3_K_scales(y->scales, sc);
    for (int j = 0; j < 16; j++) {
        const float d = edgellm_f16_to_f32(y->d) * sc[j];
        if (d == 0.0f) continue;
        for (int l = 0; l < 16; l++) L[16 * j + l] = (int8_t)edgellm_q_round(x[16 * j + l] / d, -4, 3, &sat);
    }
    /* L: -4..3 -> code 0..7; bit 2 goes to hmask, low 2 bits to qs */
    uint8_t low[QK];
    memset(y->hmask, 0, 32);
    for (int e = 0; e < QK; e++) {
        int c = L[e] + 4;
        if (c > 3) { y->hmask[e % 32] |= (uint8_t)(1 << (e / 32)); c -= 4; }
        low[e] = (uint8_t)c;
    }
    pack_2bit(low, y->qs);
    return sat;
}

uint64_t edgellm_quant_q3_K_ref(const float *src, void *dst, int64_t n)
{
    return k_quant_blocks(src, dst, n, sizeof(edgellm_block_q3_K), q3_K_block);
}

void edgellm_dequant_q3_K(const void *src, float *dst, int64_t n)
{
    const edgellm_block_q3_K *x = src;
    int8_t q[QK], sc[16];
    for (int64_t i = 0; i < n / QK; i++, dst += QK) {
        const float d_all = edgellm_f16_to_f32(x[i].d);
        edgellm_q3_K_scales(x[i].scales, sc);
        q3_K_codes(&x[i], q);
        for (int e = 0; e < QK; e++) {
            const float dl = d_all * sc[e / 16];
            dst[e] = dl * q[e];
        }
    }
}

float edgellm_dot_q3_K_q8_K_ref(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q3_K *a = w;
    const edgellm_block_q8_K *b = x;
    int8_t q[QK], sc[16];
    double acc = 0;
    for (int64_t i = 0; i < n / QK; i++) {
        edgellm_q3_K_scales(a[i].scales, sc);
        q3_K_codes(&a[i], q);
        double blk = 0;
        for (int j = 0; j < 16; j++) blk += (double)sc[j] * isum(q + 16 * j, b[i].qs + 16 * j, 16);
        acc += blk * edgellm_f16_to_f32(a[i].d) * b[i].d;
    }
    return (float)acc;
}

/* ============================== Q4_K and Q5_K ====================================== */

/* The shared quantizer: nmax 15 (Q4_K) or 31 (Q5_K), x = the saturated super-block. Writes
 * d, dmin, scales and the codes L[256] (0..nmax); the caller packs them. */
static uint64_t q45_K_block(const float *x, int nmax, uint16_t *d_out, uint16_t *dmin_out, uint8_t *packed,
                            uint8_t L[QK])
{
    float w[32], scales[8], mins[8];
    uint8_t Laux[32], ls[8], lm[8];
    uint64_t sat = 0;
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; j++) {
        const float *xj = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++) sum_x2 += xj[l] * xj[l];
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++) w[l] = av_x + fabsf(xj[l]);
        scales[j] = nmax == 15
            ? edgellm_kq_search_min(32, 15, xj, w, L + 32 * j, &mins[j], Laux, -1.0f, 0.1f, 20, false)
            : edgellm_kq_search_min(32, 31, xj, w, L + 32 * j, &mins[j], Laux, -0.5f, 0.1f, 15, false);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    for (int j = 0; j < 8; j++) {
        ls[j] = (uint8_t)edgellm_q_round(inv_scale * scales[j], 0, 63, NULL);
        lm[j] = (uint8_t)edgellm_q_round(inv_min * mins[j], 0, 63, NULL);
    }
    k_pack_scale_min(packed, ls, lm);
    *d_out = edgellm_q_half(max_scale / 63.0f);
    *dmin_out = edgellm_q_half(max_min / 63.0f);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        edgellm_k_scale_min(j, packed, &sc, &m);
        const float d = edgellm_f16_to_f32(*d_out) * sc;
        if (d == 0.0f) continue;
        const float dm = edgellm_f16_to_f32(*dmin_out) * m;
        for (int l = 0; l < 32; l++) L[32 * j + l] = (uint8_t)edgellm_q_round((x[32 * j + l] + dm) / d, 0, nmax, &sat);
    }
    return sat;
}

static uint64_t q4_K_block(const float *x, void *blk)
{
    edgellm_block_q4_K *y = blk;
    uint8_t L[QK];
    const uint64_t sat = q45_K_block(x, 15, &y->d, &y->dmin, y->scales, L);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) y->qs[32 * c + l] = (uint8_t)(L[64 * c + l] | L[64 * c + 32 + l] << 4);
    return sat;
}

uint64_t edgellm_quant_q4_K_ref(const float *src, void *dst, int64_t n)
{
    return k_quant_blocks(src, dst, n, sizeof(edgellm_block_q4_K), q4_K_block);
}

static uint64_t q5_K_block(const float *x, void *blk)
{
    edgellm_block_q5_K *y = blk;
    uint8_t L[QK];
    const uint64_t sat = q45_K_block(x, 31, &y->d, &y->dmin, y->scales, L);
    memset(y->qh, 0, 32);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            int a = L[64 * c + l], b = L[64 * c + 32 + l];
            y->qs[32 * c + l] = (uint8_t)((a & 15) | (b & 15) << 4);
            y->qh[l] |= (uint8_t)((a >> 4) << (2 * c) | (b >> 4) << (2 * c + 1));
        }
    return sat;
}

uint64_t edgellm_quant_q5_K_ref(const float *src, void *dst, int64_t n)
{
    return k_quant_blocks(src, dst, n, sizeof(edgellm_block_q5_K), q5_K_block);
}

static void q45_K_dequant(uint16_t dh, uint16_t dminh, const uint8_t *scales, const int8_t q[QK], float *dst)
{
    const float d = edgellm_f16_to_f32(dh), min = edgellm_f16_to_f32(dminh);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        edgellm_k_scale_min(j, scales, &sc, &m);
        const float d1 = d * sc, m1 = min * m;
        for (int l = 0; l < 32; l++) dst[32 * j + l] = d1 * q[32 * j + l] - m1;
    }
}

static double q45_K_dot(uint16_t dh, uint16_t dminh, const uint8_t *scales, const int8_t q[QK],
                        const edgellm_block_q8_K *b)
{
    const double d = edgellm_f16_to_f32(dh), dmin = edgellm_f16_to_f32(dminh);
    double blk = 0;
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        edgellm_k_scale_min(j, scales, &sc, &m);
        blk += d * sc * isum(q + 32 * j, b->qs + 32 * j, 32) - dmin * m * qsum(b->qs + 32 * j, 32);
    }
    return blk * b->d;
}

void edgellm_dequant_q4_K(const void *src, float *dst, int64_t n)
{
    const edgellm_block_q4_K *x = src;
    int8_t q[QK];
    for (int64_t i = 0; i < n / QK; i++, dst += QK) {
        q4_K_codes(x[i].qs, NULL, q);
        q45_K_dequant(x[i].d, x[i].dmin, x[i].scales, q, dst);
    }
}

float edgellm_dot_q4_K_q8_K_ref(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q4_K *a = w;
    const edgellm_block_q8_K *b = x;
    int8_t q[QK];
    double acc = 0;
    for (int64_t i = 0; i < n / QK; i++) {
        q4_K_codes(a[i].qs, NULL, q);
        acc += q45_K_dot(a[i].d, a[i].dmin, a[i].scales, q, &b[i]);
    }
    return (float)acc;
}

void edgellm_dequant_q5_K(const void *src, float *dst, int64_t n)
{
    const edgellm_block_q5_K *x = src;
    int8_t q[QK];
    for (int64_t i = 0; i < n / QK; i++, dst += QK) {
        q4_K_codes(x[i].qs, x[i].qh, q);
        q45_K_dequant(x[i].d, x[i].dmin, x[i].scales, q, dst);
    }
}

float edgellm_dot_q5_K_q8_K_ref(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q5_K *a = w;
    const edgellm_block_q8_K *b = x;
    int8_t q[QK];
    double acc = 0;
    for (int64_t i = 0; i < n / QK; i++) {
        q4_K_codes(a[i].qs, a[i].qh, q);
        acc += q45_K_dot(a[i].d, a[i].dmin, a[i].scales, q, &b[i]);
    }
    return (float)acc;
}

/* ================================== Q6_K =========================================== */

static uint64_t q6_K_block(const float *x, void *blk)
{
    edgellm_block_q6_K *y = blk;
    uint64_t sat = 0;
    float scales[16];
    int8_t L[QK];
    float max_scale = 0, max_abs_scale = 0;
    for (int j = 0; j < 16; j++) {
        scales[j] = edgellm_kq_search_sym(16, 32, x + 16 * j, L + 16 * j);
        if (fabsf(scales[j]) > max_abs_scale) { max_abs_scale = fabsf(scales[j]); max_scale = scales[j]; }
    }
    if (max_abs_scale < EDGELLM_KQ_EPS) {
        memset(y, 0, sizeof *y);
        return sat;
    }
    const float iscale = -128.0f / max_scale;
    y->d = edgellm_q_half(1 / iscale);
    for (int j = 0; j < 16; j++) y->scales[j] = (int8_t)edgellm_q_round(iscale * scales[j], -128, 127, NULL);
    for (int j = 0; j < 16; j++) {
        const float d = edgellm_f16_to_f32(y->d) * y->scales[j];
        if (d == 0.0f) continue;
        for (int l = 0; l < 16; l++) L[16 * j + l] = (int8_t)(edgellm_q_round(x[16 * j + l] / d, -32, 31, &sat) + 32);
    }
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++) {
            const int8_t *Lh = L + 128 * h;
            y->ql[64 * h + l] = (uint8_t)((Lh[l] & 15) | (Lh[l + 64] & 15) << 4);
            y->ql[64 * h + 32 + l] = (uint8_t)((Lh[l + 32] & 15) | (Lh[l + 96] & 15) << 4);
            y->qh[32 * h + l] = (uint8_t)((Lh[l] >> 4) | (Lh[l + 32] >> 4) << 2 | (Lh[l + 64] >> 4) << 4 |
                                         (Lh[l + 96] >> 4) << 6);
        }
    return sat;
}

uint64_t edgellm_quant_q6_K_ref(const float *src, void *dst, int64_t n)
{
    return k_quant_blocks(src, dst, n, sizeof(edgellm_block_q6_K), q6_K_block);
}

void edgellm_dequant_q6_K(const void *src, float *dst, int64_t n)
{
    const edgellm_block_q6_K *x = src;
    int8_t q[QK];
    for (int64_t i = 0; i < n / QK; i++, dst += QK) {
        const float d = edgellm_f16_to_f32(x[i].d);
        q6_K_codes(&x[i], q);
        for (int e = 0; e < QK; e++) dst[e] = d * x[i].scales[e / 16] * q[e];
    }
}

float edgellm_dot_q6_K_q8_K_ref(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q6_K *a = w;
    const edgellm_block_q8_K *b = x;
    int8_t q[QK];
    double acc = 0;
    for (int64_t i = 0; i < n / QK; i++) {
        q6_K_codes(&a[i], q);
        double blk = 0;
        for (int j = 0; j < 16; j++) blk += (double)a[i].scales[j] * isum(q + 16 * j, b[i].qs + 16 * j, 16);
        acc += blk * edgellm_f16_to_f32(a[i].d) * b[i].d;
    }
    return (float)acc;
}
