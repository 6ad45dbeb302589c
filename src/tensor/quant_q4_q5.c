/*
 * quant_q4_q5.c — the 32-element "legacy" ggml formats Q4_0, Q4_1, Q5_0, Q5_1: reference
 * quantizers (byte-identical to llama.cpp's), dequantizers and reference dot products
 * against Q8_0 (Q4_0, Q5_0) or Q8_1 (Q4_1, Q5_1) activations.
 *
 * Spec: layouts of ggml-org/ggml src/ggml-common.h (blocks.h); the
 * arithmetic of ggml's quantize_row_q{4,5}_{0,1}_ref (src/ggml-quants.c), all in float:
 *   Q4_0  m = the x of largest |x| (signed, first wins);  d = m / -8;  id = 1/d (0 if d == 0)
 *         q = min(15, trunc(x*id + 8.5))            w = (q - 8) * half(d)
 *   Q5_0  d = m / -16;  q = min(31, trunc(x*id + 16.5))   w = (q - 16) * half(d)
 *   Q4_1  lo = min x, hi = max x;  d = (hi - lo) / 15;  q = min(15, trunc((x - lo)*id + 0.5))
 *         w = q * half(d) + half(lo)
 *   Q5_1  d = (hi - lo) / 31;  q = trunc((x - lo)*id + 0.5)  (<= 31)
 * The scale used for the codes is the float d, not the rounded half. With d = m/-8 the
 * extreme value maps to code 0 exactly and the range -8..7 is used in full; a value of
 * the opposite sign and the same magnitude would need code 16 and saturates to 15.
 *
 * Packing (Q4_0 example, 18 bytes): d as half LE, then qs[j] = q[j] | q[j+16] << 4. For
 * x = {-1, 0, 0, ..., 0, 0.5 (element 16), 0...}: m = -1, d = 0.125 (half 0x3000), id = 8:
 * q[0] = trunc(-8 + 8.5) = 0, q[16] = trunc(4 + 8.5) = 12, others 8:
 *   00 30 | c0 88 88 88 88 88 88 88 88 88 88 88 88 88 88 88
 * Q5_*: the 5th bit of element j is bit j of the little-endian u32 qh (j = 0..31).
 *
 * Each quantizer is a per-block function (codes, then one of two packers) run by the
 * shared row loop quant_blocks.
 *
 * Edge cases (ggml would produce inf/NaN): inputs are saturated to ±8*65504 (Q4_0),
 * ±16*65504 (Q5_0), ±65504 (Q4_1, Q5_1, whose minimum is itself a half), so every half
 * stays finite; when 1/d overflows (d denormal), id = 0 (the half d is 0 anyway).
 */
#include "quant.h"
#include <float.h>
#include <math.h>

/* Code = trunc(v) clamped to [0, hi]; v >= hi + 1 counts as saturated. */
static inline int trunc_code(float v, int hi, uint64_t *sat)
{
    if (!(v >= 0.0f)) return 0;
    if (v >= (float)hi + 1.0f) { (*sat)++; return hi; }
    return (int)v;
}

static inline float safe_inverse(float d)
{
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    return isinf(id) ? 0.0f : id;
}

/* Symmetric block (Q4_0, Q5_0): saturated copy in xs, returns the float scale m/-half. */
static float sym_scale(const float *x, float *xs, int half_range, uint64_t *sat)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; j++) {
        xs[j] = edgellm_q_sat(x[j], (float)half_range * EDGELLM_HALF_MAX, sat);
        if (amax < fabsf(xs[j])) { amax = fabsf(xs[j]); max = xs[j]; }
    }
    return max / (float)-half_range;
}

/* Min/max block (Q4_1, Q5_1): saturated copy in xs, returns the float scale; *lo = min. */
static float minmax_scale(const float *x, float *xs, int nmax, float *lo, uint64_t *sat)
{
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < 32; j++) {
        xs[j] = edgellm_q_sat(x[j], EDGELLM_HALF_MAX, sat);
        if (xs[j] < min) min = xs[j];
        if (xs[j] > max) max = xs[j];
    }
    *lo = min;
    return (max - min) / (float)nmax;
}

static inline uint32_t rd_qh(const uint8_t qh[4]) { uint32_t v; memcpy(&v, qh, 4); return v; }
static inline void wr_qh(uint8_t qh[4], uint32_t v) { memcpy(qh, &v, 4); }

/* Codes of one block: q[j] = trunc_code((xs[j] - lo) * id + bias) in [0, hi]. The
 * symmetric types pass lo = 0, and xs - 0.0f == xs exactly (also for -0.0), so their codes
 * are ggml's xs*id + bias. */
static void block_codes(const float *xs, float lo, float id, float bias, int hi, int q[32], uint64_t *sat)
{
    for (int j = 0; j < 32; j++) q[j] = trunc_code((xs[j] - lo) * id + bias, hi, sat);
}

/* 4-bit codes: qs[j] = q[j] | q[j+16] << 4. */
static void pack_q4(const int q[32], uint8_t qs[16])
{
    for (int j = 0; j < 16; j++) qs[j] = (uint8_t)(q[j] | q[j + 16] << 4);
}

/* 5-bit codes: the low nibbles as pack_q4, bit 4 of element j in bit j of qh (u32 LE). */
static void pack_q5(const int q[32], uint8_t qs[16], uint8_t qh[4])
{
    uint32_t h = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
        h |= (uint32_t)(q[j] >> 4) << j | (uint32_t)(q[j + 16] >> 4) << (j + 16);
    }
    wr_qh(qh, h);
}

/* One block: 32 floats -> the block at blk; returns the values saturated. */
typedef uint64_t (*block_quant_fn)(const float *x, void *blk);

/* The row loop of every quantizer here: n / 32 blocks of block_bytes each. */
static uint64_t quant_blocks(const float *src, void *dst, int64_t n, size_t block_bytes, block_quant_fn fn)
{
    uint8_t *y = dst;
    uint64_t sat = 0;
    for (int64_t i = 0; i < n / 32; i++) sat += fn(src + 32 * i, y + (size_t)i * block_bytes);
    return sat;
}

/* ---------------------------------- Q4_0 ------------------------------------------ */

static uint64_t q4_0_block(const float *x, void *blk)
{
    edgellm_block_q4_0 *y = blk;
    float xs[32];
    int q[32];
    uint64_t sat = 0;
    const float d = sym_scale(x, xs, 8, &sat);
    y->d = edgellm_f32_to_f16(d);
    block_codes(xs, 0.0f, safe_inverse(d), 8.5f, 15, q, &sat);
    pack_q4(q, y->qs);
    return sat;
}

uint64_t edgellm_quant_q4_0_ref(const float *src, void *dst, int64_t n)
{
    return quant_blocks(src, dst, n, sizeof(edgellm_block_q4_0), q4_0_block);
}

void edgellm_dequant_q4_0(const void *src, float *dst, int64_t n)
{
    const edgellm_block_q4_0 *x = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        const float d = edgellm_f16_to_f32(x[i].d);
        for (int j = 0; j < 16; j++) {
            dst[j] = ((x[i].qs[j] & 15) - 8) * d;
            dst[j + 16] = ((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

float edgellm_dot_q4_0_q8_0_ref(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q4_0 *a = w;
    const edgellm_block_q8_0 *b = x;
    double acc = 0;
    for (int64_t i = 0; i < n / 32; i++) {
        int32_t s = 0;
        for (int j = 0; j < 16; j++) {
            s += ((a[i].qs[j] & 15) - 8) * b[i].qs[j];
            s += ((a[i].qs[j] >> 4) - 8) * b[i].qs[j + 16];
        }
        acc += (double)edgellm_f16_to_f32(a[i].d) * edgellm_f16_to_f32(b[i].d) * s;
    }
    return (float)acc;
}

/* ---------------------------------- Q4_1 ------------------------------------------ */

static uint64_t q4_1_block(const float *x, void *blk)
{
    edgellm_block_q4_1 *y = blk;
    float xs[32], lo;
    int q[32];
    uint64_t sat = 0;
    const float d = minmax_scale(x, xs, 15, &lo, &sat);
    y->d = edgellm_f32_to_f16(d);
    y->m = edgellm_f32_to_f16(lo);
    block_codes(xs, lo, safe_inverse(d), 0.5f, 15, q, &sat);
    pack_q4(q, y->qs);
    return sat;
}

uint64_t edgellm_quant_q4_1_ref(const float *src, void *dst, int64_t n)
{
    return quant_blocks(src, dst, n, sizeof(edgellm_block_q4_1), q4_1_block);
}

void edgellm_dequant_q4_1(const void *src, float *dst, int64_t n)
{
    const edgellm_block_q4_1 *x = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        const float d = edgellm_f16_to_f32(x[i].d), m = edgellm_f16_to_f32(x[i].m);
        for (int j = 0; j < 16; j++) {
            dst[j] = (x[i].qs[j] & 15) * d + m;
            dst[j + 16] = (x[i].qs[j] >> 4) * d + m;
        }
    }
}

float edgellm_dot_q4_1_q8_1_ref(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q4_1 *a = w;
    const edgellm_block_q8_1 *b = x;
    double acc = 0;
    for (int64_t i = 0; i < n / 32; i++) {
        int32_t s = 0, sx = 0;
        for (int j = 0; j < 16; j++) {
            s += (a[i].qs[j] & 15) * b[i].qs[j] + (a[i].qs[j] >> 4) * b[i].qs[j + 16];
            sx += b[i].qs[j] + b[i].qs[j + 16];
        }
        const double db = edgellm_f16_to_f32(b[i].d);
        acc += (double)edgellm_f16_to_f32(a[i].d) * db * s + (double)edgellm_f16_to_f32(a[i].m) * db * sx;
    }
    return (float)acc;
}

/* ---------------------------------- Q5_0 ------------------------------------------ */

static uint64_t q5_0_block(const float *x, void *blk)
{
    edgellm_block_q5_0 *y = blk;
    float xs[32];
    int q[32];
    uint64_t sat = 0;
    const float d = sym_scale(x, xs, 16, &sat);
    y->d = edgellm_f32_to_f16(d);
    block_codes(xs, 0.0f, safe_inverse(d), 16.5f, 31, q, &sat);
    pack_q5(q, y->qs, y->qh);
    return sat;
}

uint64_t edgellm_quant_q5_0_ref(const float *src, void *dst, int64_t n)
{
    return quant_blocks(src, dst, n, sizeof(edgellm_block_q5_0), q5_0_block);
}

void edgellm_dequant_q5_0(const void *src, float *dst, int64_t n)
{
    const edgellm_block_q5_0 *x = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        const float d = edgellm_f16_to_f32(x[i].d);
        const uint32_t qh = rd_qh(x[i].qh);
        for (int j = 0; j < 16; j++) {
            int q0 = (x[i].qs[j] & 15) | ((qh >> j) & 1) << 4;
            int q1 = (x[i].qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4;
            dst[j] = (q0 - 16) * d;
            dst[j + 16] = (q1 - 16) * d;
        }
    }
}

float edgellm_dot_q5_0_q8_0_ref(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q5_0 *a = w;
    const edgellm_block_q8_0 *b = x;
    double acc = 0;
    for (int64_t i = 0; i < n / 32; i++) {
        const uint32_t qh = rd_qh(a[i].qh);
        int32_t s = 0;
        for (int j = 0; j < 16; j++) {
            int q0 = (a[i].qs[j] & 15) | ((qh >> j) & 1) << 4;
            int q1 = (a[i].qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4;
            s += (q0 - 16) * b[i].qs[j] + (q1 - 16) * b[i].qs[j + 16];
        }
        acc += (double)edgellm_f16_to_f32(a[i].d) * edgellm_f16_to_f32(b[i].d) * s;
    }
    return (float)acc;
}

/* ---------------------------------- Q5_1 ------------------------------------------ */

static uint64_t q5_1_block(const float *x, void *blk)
{
    edgellm_block_q5_1 *y = blk;
    float xs[32], lo;
    int q[32];
    uint64_t sat = 0;
    const float d = minmax_scale(x, xs, 31, &lo, &sat);
    y->d = edgellm_f32_to_f16(d);
    y->m = edgellm_f32_to_f16(lo);
    block_codes(xs, lo, safe_inverse(d), 0.5f, 31, q, &sat);
    pack_q5(q, y->qs, y->qh);
    return sat;
}

uint64_t edgellm_quant_q5_1_ref(const float *src, void *dst, int64_t n)
{
    return quant_blocks(src, dst, n, sizeof(edgellm_block_q5_1), q5_1_block);
}

void edgellm_dequant_q5_1(const void *src, float *dst, int64_t n)
{
    const edgellm_block_q5_1 *x = src;
    for (int64_t i = 0; i < n / 32; i++, dst += 32) {
        const float d = edgellm_f16_to_f32(x[i].d), m = edgellm_f16_to_f32(x[i].m);
        const uint32_t qh = rd_qh(x[i].qh);
        for (int j = 0; j < 16; j++) {
            int q0 = (x[i].qs[j] & 15) | ((qh >> j) & 1) << 4;
            int q1 = (x[i].qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4;
            dst[j] = q0 * d + m;
            dst[j + 16] = q1 * d + m;
        }
    }
}

float edgellm_dot_q5_1_q8_1_ref(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q5_1 *a = w;
    const edgellm_block_q8_1 *b = x;
    double acc = 0;
    for (int64_t i = 0; i < n / 32; i++) {
        const uint32_t qh = rd_qh(a[i].qh);
        int32_t s = 0, sx = 0;
        for (int j = 0; j < 16; j++) {
            int q0 = (a[i].qs[j] & 15) | ((qh >> j) & 1) << 4;
            int q1 = (a[i].qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4;
            s += q0 * b[i].qs[j] + q1 * b[i].qs[j + 16];
            sx += b[i].qs[j] + b[i].qs[j + 16];
        }
        const double db = edgellm_f16_to_f32(b[i].d);
        acc += (double)edgellm_f16_to_f32(a[i].d) * db * s + (double)edgellm_f16_to_f32(a[i].m) * db * sx;
    }
    return (float)acc;
}
