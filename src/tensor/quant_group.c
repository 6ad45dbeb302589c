/*
 * quant_group.c — edgellm's group-wise integer types (ids 1000..1011): I4/I8, symmetric or
 * asymmetric, groups of G = 64, 128, 256 along the row. Layouts and value formulas are in
 * blocks.h; this file has the reference quantizers, dequantizers and dot products.
 *
 * Block bytes: [half d][half m, asym only][codes]. I4 codes use Q4_0's nibble order in
 * each 32-element chunk (chunk c: byte 16c+j = element 32c+j low, 32c+j+16 high); I8
 * codes are one byte per element. Example, I4_G64_SYM (34 bytes) of x = {-1, 0, ..., 0}:
 * d = -1/-8 = 0.125 -> 00 30; element 0 -> code -8 -> nibble 0, all others nibble 8:
 *   00 30 | 80 88 88 ... (32 bytes)
 * (the scale search below may pick another d for less error; for this x it keeps 0.125).
 *
 * Quantizer (reference; double arithmetic, so no overflow or underflow inside):
 *   SYM   codes q in [qlo, qhi] = [-8, 7] (I4) or [-127, 127] (I8), w = q*d.
 *         I4 uses the full signed range as Q4_0 does: with d = m / -8 (m = the signed
 *         largest value) the extreme lands on -8 exactly and all 16 levels are usable,
 *         a step 12.5% finer than amax/7 (which wastes code -8); the opposite-sign side
 *         then reaches only 7*|d|. Rather than fixing d, 13 trial steps
 *         d_t = m / -(T (1 + k/32)), k = -8..4, T = 8 (I4) or 127 (I8), are each rounded
 *         to codes and refit by least squares (d = Σxq / Σq²); the one with the least
 *         squared error wins (it includes the m/-8 codes, so it is never worse than
 *         refitted Q4_0-style rounding; test_quant prints the RMSE of all three: on
 *         gaussian G=128 rows rmse/rms = 0.098 search, 0.104 m/-8, 0.119 amax/7).
 *   ASYM  codes q in [0, nmax] (15 or 255), w = q*d + m. Trial steps
 *         (max - min) / (nmax (1 + k/128)), k = -12..12, each with codes rounded from
 *         the minimum and a least-squares refit of (d, m); plus the plain min/max fit.
 *         Least squared error wins. m may be positive (unlike the K-quants).
 *   Then d (and m) are rounded to half and the codes recomputed with the rounded values
 *   (nearest code for the scale actually stored). An ASYM block whose d rounds to 0
 *   (range below half resolution) stores the mean as m.
 * Inputs are saturated first to ±127*65504 (SYM I8), ±8*65504 (SYM I4) or ±65504 (ASYM),
 * counted as saturated, as are codes that round outside their range.
 *
 * Dot products: SYM against Q8_0 activations (one Q8_0 block per 32-element chunk),
 * ASYM against Q8_1 (the m term needs each chunk's activation sum). Exact integer chunk
 * sums, accumulated in double.
 */
#include "quant.h"
#include <math.h>

typedef struct {
    int bits;     /* 4 or 8            */
    bool asym;
    int G;        /* elements per block */
} group_fmt;

static inline size_t code_offset(group_fmt f) { return f.asym ? 4 : 2; }
static inline size_t block_bytes(group_fmt f) { return (size_t)EDGELLM_GROUP_BLOCK_BYTES(f.bits, f.asym, f.G); }

/* Code of element e (0..G-1): I4 sym returns q - 8 (signed), I4 asym 0..15, I8 sym int8,
 * I8 asym 0..255. */
static inline int get_code(group_fmt f, const uint8_t *qs, int e)
{
    if (f.bits == 8) return f.asym ? qs[e] : (int8_t)qs[e];
    int c = e / 32, j = e % 32;
    int nib = j < 16 ? qs[16 * c + j] & 15 : qs[16 * c + j - 16] >> 4;
    return f.asym ? nib : nib - 8;
}

static inline void put_code(group_fmt f, uint8_t *qs, int e, int q)
{
    if (f.bits == 8) { qs[e] = (uint8_t)q; return; }
    int nib = f.asym ? q : q + 8;
    int c = e / 32, j = e % 32;
    if (j < 16) qs[16 * c + j] = (uint8_t)((qs[16 * c + j] & 0xf0) | nib);
    else qs[16 * c + j - 16] = (uint8_t)((qs[16 * c + j - 16] & 0x0f) | nib << 4);
}

static inline int clampi(double v, int lo, int hi)
{
    if (!(v >= lo)) return lo;
    return v > hi ? hi : (int)v;
}

/* Gain of rounding x*iscale to codes in [qlo, qhi] and refitting d = Σxq/Σq²: the squared
 * error is Σx² - gain, gain = (Σxq)²/Σq². Returns the gain (-1 if all codes are 0). */
static double sym_try(const float *x, int G, int qlo, int qhi, double iscale, double *d)
{
    double sxq = 0, sqq = 0;
    for (int i = 0; i < G; i++) {
        int q = clampi(rint(x[i] * iscale), qlo, qhi);
        sxq += x[i] * (double)q;
        sqq += (double)q * q;
    }
    if (!(sqq > 0)) return -1;
    *d = sxq / sqq;
    return sxq * sxq / sqq;
}

/* Symmetric fit: returns the scale d with x ≈ d*q, q in [qlo, qhi]. The plain
 * signed-max rounding (k = 0) is tried first, so it wins ties. */
static double fit_sym(const float *x, int G, int qlo, int qhi)
{
    double amax = 0, max = 0;
    for (int i = 0; i < G; i++)
        if (fabs(x[i]) > amax) { amax = fabs(x[i]); max = x[i]; }
    if (amax == 0) return 0;
    const double T = -qlo;
    double best_d = max / qlo, d = 0;
    double best_gain = sym_try(x, G, qlo, qhi, -T / max, &best_d);
    for (int k = -8; k <= 4; k++) {
        if (k == 0) continue;
        double gain = sym_try(x, G, qlo, qhi, -T * (1 + k / 32.0) / max, &d);
        if (gain > best_gain) { best_gain = gain; best_d = d; }
    }
    return best_d;
}

/* Asymmetric fit: x ≈ d*q + m, q in [0, nmax]; returns d, *m_out = m. */
static double fit_asym(const float *x, int G, int nmax, double *m_out)
{
    double lo = x[0], hi = x[0];
    for (int i = 1; i < G; i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
    }
    *m_out = lo;
    if (hi == lo) return 0;
    double best_d = (hi - lo) / nmax, best_m = lo, best_err = 0;
    for (int i = 0; i < G; i++) {
        double r = best_d * clampi(rint((x[i] - lo) / best_d), 0, nmax) + lo - x[i];
        best_err += r * r;
    }
    for (int k = -12; k <= 12; k++) {
        const double iscale = nmax * (1 + k / 128.0) / (hi - lo);
        double sq = 0, sqq = 0, sx = 0, sxq = 0;
        int q[256];
        for (int i = 0; i < G; i++) {
            q[i] = clampi(rint((x[i] - lo) * iscale), 0, nmax);
            sq += q[i];
            sqq += (double)q[i] * q[i];
            sx += x[i];
            sxq += x[i] * (double)q[i];
        }
        const double D = G * sqq - sq * sq;
        if (!(D > 0)) continue;
        const double d = (G * sxq - sx * sq) / D, m = (sqq * sx - sq * sxq) / D;
        if (!(d > 0)) continue;
        double err = 0;
        for (int i = 0; i < G; i++) {
            double r = d * q[i] + m - x[i];
            err += r * r;
        }
        if (err < best_err) { best_err = err; best_d = d; best_m = m; }
    }
    *m_out = best_m;
    return best_d;
}

static uint64_t quant_group(group_fmt f, const float *src, void *dst, int64_t n)
{
    uint8_t *out = dst;
    uint64_t sat = 0;
    const int nmax = f.bits == 4 ? 15 : 255;
    const int qlo = f.bits == 4 ? -8 : -127, qhi = f.bits == 4 ? 7 : 127;
    const float lim = f.asym ? EDGELLM_HALF_MAX : (float)-qlo * EDGELLM_HALF_MAX;
    for (int64_t b = 0; b < n / f.G; b++, out += block_bytes(f)) {
        float x[256];
        for (int i = 0; i < f.G; i++) x[i] = edgellm_q_sat(src[b * f.G + i], lim, &sat);
        uint8_t *qs = out + code_offset(f);
        memset(qs, 0, block_bytes(f) - code_offset(f));
        if (f.asym) {
            double m;
            const double d = fit_asym(x, f.G, nmax, &m);
            uint16_t dh = edgellm_q_half((float)d), mh = edgellm_q_half((float)m);
            if (edgellm_f16_to_f32(dh) == 0) {   /* range below half resolution: best constant */
                double mean = 0;
                for (int i = 0; i < f.G; i++) mean += x[i];
                mh = edgellm_q_half((float)(mean / f.G));
            }
            memcpy(out, &dh, 2);
            memcpy(out + 2, &mh, 2);
            const double dq = edgellm_f16_to_f32(dh), mq = edgellm_f16_to_f32(mh);
            for (int i = 0; i < f.G; i++) {
                int q = 0;
                if (dq != 0) {
                    double v = rint((x[i] - mq) / dq);
                    if (v < 0 || v > nmax) sat++;
                    q = clampi(v, 0, nmax);
                }
                put_code(f, qs, i, q);
            }
        } else {
            const double d = fit_sym(x, f.G, qlo, qhi);
            const uint16_t dh = edgellm_q_half((float)d);
            memcpy(out, &dh, 2);
            const double dq = edgellm_f16_to_f32(dh);
            for (int i = 0; i < f.G; i++) {
                int q = 0;
                if (dq != 0) {
                    double v = rint(x[i] / dq);
                    if (v < qlo || v > qhi) sat++;
                    q = clampi(v, qlo, qhi);
                }
                put_code(f, qs, i, q);
            }
        }
    }
    return sat;
}

static void dequant_group(group_fmt f, const void *src, float *dst, int64_t n)
{
    const uint8_t *in = src;
    for (int64_t b = 0; b < n / f.G; b++, in += block_bytes(f), dst += f.G) {
        const float d = edgellm_f16_to_f32(edgellm_rd_u16(in));
        const float m = f.asym ? edgellm_f16_to_f32(edgellm_rd_u16(in + 2)) : 0.0f;
        const uint8_t *qs = in + code_offset(f);
        for (int i = 0; i < f.G; i++) {
            const int q = get_code(f, qs, i);
            dst[i] = f.asym ? q * d + m : q * d;
        }
    }
}

/* x: Q8_0 blocks (sym) or Q8_1 blocks (asym), one per 32 elements. */
static float dot_group(group_fmt f, int64_t n, const void *w, const void *x)
{
    const uint8_t *in = w;
    const edgellm_block_q8_0 *x0 = x;
    const edgellm_block_q8_1 *x1 = x;
    double acc = 0;
    for (int64_t b = 0; b < n / f.G; b++, in += block_bytes(f)) {
        const double d = edgellm_f16_to_f32(edgellm_rd_u16(in));
        const double m = f.asym ? edgellm_f16_to_f32(edgellm_rd_u16(in + 2)) : 0.0;
        const uint8_t *qs = in + code_offset(f);
        for (int c = 0; c < f.G / 32; c++) {
            const int64_t xb = b * (f.G / 32) + c;
            const int8_t *aq = f.asym ? x1[xb].qs : x0[xb].qs;
            const double da = edgellm_f16_to_f32(f.asym ? x1[xb].d : x0[xb].d);
            /* Codes first, then the sums: GCC 12 at -O3 with AVX-VNNI/AVX512-VNNI
             * miscompiles a fused loop whose code is u8 or s8 depending on f.asym (its
             * mixed-sign dot-product pattern); this form is not matched. */
            int32_t code[32], s = 0, sa = 0;
            for (int j = 0; j < 32; j++) code[j] = get_code(f, qs, 32 * c + j);
            for (int j = 0; j < 32; j++) {
                s += code[j] * aq[j];
                sa += aq[j];
            }
            acc += d * da * s + (f.asym ? m * da * sa : 0.0);
        }
    }
    return (float)acc;
}

#define GROUP_FNS(G)                                                                                    \
    void edgellm_dequant_i4_g##G##_sym(const void *s, float *d, int64_t n)                              \
    { dequant_group((group_fmt){4, false, G}, s, d, n); }                                               \
    uint64_t edgellm_quant_i4_g##G##_sym_ref(const float *s, void *d, int64_t n)                        \
    { return quant_group((group_fmt){4, false, G}, s, d, n); }                                          \
    float edgellm_dot_i4_g##G##_sym_q8_0_ref(int64_t n, const void *w, const void *x)                   \
    { return dot_group((group_fmt){4, false, G}, n, w, x); }                                            \
    void edgellm_dequant_i4_g##G##_asym(const void *s, float *d, int64_t n)                             \
    { dequant_group((group_fmt){4, true, G}, s, d, n); }                                                \
    uint64_t edgellm_quant_i4_g##G##_asym_ref(const float *s, void *d, int64_t n)                       \
    { return quant_group((group_fmt){4, true, G}, s, d, n); }                                           \
    float edgellm_dot_i4_g##G##_asym_q8_1_ref(int64_t n, const void *w, const void *x)                  \
    { return dot_group((group_fmt){4, true, G}, n, w, x); }                                             \
    void edgellm_dequant_i8_g##G##_sym(const void *s, float *d, int64_t n)                              \
    { dequant_group((group_fmt){8, false, G}, s, d, n); }                                               \
    uint64_t edgellm_quant_i8_g##G##_sym_ref(const float *s, void *d, int64_t n)                        \
    { return quant_group((group_fmt){8, false, G}, s, d, n); }                                          \
    float edgellm_dot_i8_g##G##_sym_q8_0_ref(int64_t n, const void *w, const void *x)                   \
    { return dot_group((group_fmt){8, false, G}, n, w, x); }                                            \
    void edgellm_dequant_i8_g##G##_asym(const void *s, float *d, int64_t n)                             \
    { dequant_group((group_fmt){8, true, G}, s, d, n); }                                                \
    uint64_t edgellm_quant_i8_g##G##_asym_ref(const float *s, void *d, int64_t n)                       \
    { return quant_group((group_fmt){8, true, G}, s, d, n); }                                           \
    float edgellm_dot_i8_g##G##_asym_q8_1_ref(int64_t n, const void *w, const void *x)                  \
    { return dot_group((group_fmt){8, true, G}, n, w, x); }

EDGELLM_GROUP_TYPES(GROUP_FNS)
