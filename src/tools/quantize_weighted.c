/*
 * quantize_weighted.c — importance-weighted quantization of one row: the block's scale
 * (and minimum) are chosen to minimize sum_j w_j (x_j - q_j)^2 instead of the plain
 * quantizers' rules, where w_j is the mean squared activation of input column j
 * (imatrix.c explains why that is the expected output error).
 *
 * Types: Q4_0, Q5_0, Q8_0 (symmetric: x = k d, k in kmin..kmax), Q4_1, Q5_1 (x = k d + m,
 * k in 0..kmax) and edgellm's I4/I8 group types of every group size, sym and asym; the
 * K-quants Q4_K, Q5_K, Q6_K in their own section below (Q2_K, Q3_K stay plain).
 *
 * Per block (32 weights, or the group of G):
 *   1. the plain reference quantizer's bytes and their weighted error (dequantized);
 *   2. a search over candidate scales:
 *        symmetric:  d = m / (-|kmin| - t) and d = m / (kmax + t), m the signed value of
 *                    largest magnitude, t in -1.5 .. 1.0 (step 0.25); codes k = round(x/d)
 *                    clamped; then the weighted least-squares scale for those codes,
 *                    d* = sum w x k / sum w k^2, and the codes again (twice, while
 *                    the error falls); for 4- and 5-bit codes also the exact sweep
 *                    (sym_exact below): the global weighted optimum over every scale
 *                    in 0.4 .. 1.6 x the plain one, both signs;
 *        asymmetric: the range [lo, hi] of the block shrunk by a, b in {0, 3, 6, 10} % of
 *                    its width at either end; d = width / kmax, codes clamped; then the
 *                    weighted least-squares (d, m) for those codes (2x2 normal
 *                    equations), and the codes again (twice, while the error falls);
 *      each candidate's error is computed with d and m rounded to half, as stored;
 *   3. the best candidate is packed, dequantized with the type's own dequantizer and
 *      kept only when its weighted error is below the plain bytes' error.
 * So the weighted error of every block is at most the plain quantizer's, and a
 * packing mistake could only lose to plain, never write wrong values.
 * The weights get a floor of 0.01 x their block mean, so a column that was rarely active
 * in the calibration text still counts a little (all-zero weights give the unweighted
 * least-squares choice); on stories260K's held-out text 0.01 measured a lower KLD than
 * 1e-4, 0.1 or 0.3.
 *
 * Packing (blocks.h): half d, [half m], [u32 qh: bit j = 5th bit of element j], then
 * 4-bit codes two per byte, element 32c+j in the low nibble of byte 16c+j and 32c+j+16 in
 * its high nibble; 8-bit codes one per byte (int8 for symmetric, uint8 for asymmetric).
 */
#include "quantize.h"
#include "../tensor/quant.h"
#include "../tensor/types.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_BLOCK 256

typedef struct {
    int  blk;        /* weights per block                        */
    bool asym;
    int  kmin, kmax; /* code range (asym: 0..kmax)               */
    int  off;        /* stored code = k + off                    */
    int  bits;       /* 4, 5 or 8                                */
} wq_desc;

static bool describe(int type, wq_desc *d)
{
    memset(d, 0, sizeof *d);
    switch (type) {
    case EDGELLM_TYPE_Q4_0: *d = (wq_desc){32, false, -8, 7, 8, 4}; return true;
    case EDGELLM_TYPE_Q5_0: *d = (wq_desc){32, false, -16, 15, 16, 5}; return true;
    case EDGELLM_TYPE_Q8_0: *d = (wq_desc){32, false, -127, 127, 0, 8}; return true;
    case EDGELLM_TYPE_Q4_1: *d = (wq_desc){32, true, 0, 15, 0, 4}; return true;
    case EDGELLM_TYPE_Q5_1: *d = (wq_desc){32, true, 0, 31, 0, 5}; return true;
    default: break;
    }
    const char *name = edgellm_type_name(type);
    int bits, g;
    char kind[8] = {0};
    if (!name || sscanf(name, "I%d_G%d_%7s", &bits, &g, kind) != 3 || (bits != 4 && bits != 8) || g <= 0 ||
        g > MAX_BLOCK || g % 32)
        return false;
    bool asym = !strcmp(kind, "ASYM");
    if (!asym && strcmp(kind, "SYM")) return false;
    if (bits == 4) *d = asym ? (wq_desc){g, true, 0, 15, 0, 4} : (wq_desc){g, false, -8, 7, 8, 4};
    else *d = asym ? (wq_desc){g, true, 0, 255, 0, 8} : (wq_desc){g, false, -127, 127, 0, 8};
    return true;
}

static bool k_weighted_type(int type);

bool edgellm_quant_weighted_supported(int type)
{
    wq_desc d;
    return describe(type, &d) || k_weighted_type(type);
}

static void pack(const wq_desc *ds, float d, float m, const int *k, uint8_t *out)
{
    uint16_t hd = edgellm_f32_to_f16(d);
    memcpy(out, &hd, 2);
    size_t o = 2;
    if (ds->asym) {
        uint16_t hm = edgellm_f32_to_f16(m);
        memcpy(out + o, &hm, 2);
        o += 2;
    }
    if (ds->bits == 8) {
        for (int j = 0; j < ds->blk; j++) {
            int q = k[j] + ds->off;
            if (ds->asym) out[o + j] = (uint8_t)q;
            else { int8_t s = (int8_t)q; memcpy(out + o + j, &s, 1); }
        }
        return;
    }
    if (ds->bits == 5) {
        uint32_t qh = 0;
        for (int j = 0; j < 32; j++) qh |= (uint32_t)(((k[j] + ds->off) >> 4) & 1) << j;
        memcpy(out + o, &qh, 4);
        o += 4;
    }
    for (int c = 0; c < ds->blk / 32; c++)
        for (int j = 0; j < 16; j++) {
            int lo = (k[32 * c + j] + ds->off) & 15, hi = (k[32 * c + j + 16] + ds->off) & 15;
            out[o + 16 * c + j] = (uint8_t)(lo | hi << 4);
        }
}

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Weighted squared error of a candidate with d, m rounded to half; codes into k. */
static double sym_codes(const float *x, const float *w, int n, float d, int kmin, int kmax, int *k)
{
    float hd = edgellm_f16_to_f32(edgellm_f32_to_f16(d));
    float id = hd != 0.0f ? 1.0f / hd : 0.0f;
    double e = 0;
    for (int j = 0; j < n; j++) {
        k[j] = clampi((int)lrintf(x[j] * id), kmin, kmax);
        double r = (double)x[j] - (double)hd * k[j];
        e += w[j] * r * r;
    }
    return e;
}

static double asym_codes(const float *x, const float *w, int n, float d, float m, int kmax, int *k)
{
    float hd = edgellm_f16_to_f32(edgellm_f32_to_f16(d)), hm = edgellm_f16_to_f32(edgellm_f32_to_f16(m));
    float id = hd != 0.0f ? 1.0f / hd : 0.0f;
    double e = 0;
    for (int j = 0; j < n; j++) {
        k[j] = clampi((int)lrintf((x[j] - hm) * id), 0, kmax);
        double r = (double)x[j] - ((double)hd * k[j] + hm);
        e += w[j] * r * r;
    }
    return e;
}

typedef struct { float s; int j, k; } wq_event;

static int event_cmp(const void *a, const void *b)
{
    float x = ((const wq_event *)a)->s, y = ((const wq_event *)b)->s;
    return x < y ? -1 : x > y;
}

/* Symmetric block, exact sweep over the inverse scale s = 1/|d| for both signs of d:
 * with y = sign * x and codes c_j(s) = clamp(round(y_j s), kmin, kmax), the codes change
 * only at s = (m + 1/2) / |y_j|; between two such points they are fixed and the best
 * scale for them is the weighted least-squares d = sum w y c / sum w c^2, with error
 * sum w y^2 - (sum w y c)^2 / sum w c^2. Visiting every change point in
 * s in [0.4 K, 1.6 K] / max|y| (K = -kmin) in order, updating the two sums, finds the
 * code set with the largest (sum w y c)^2 / sum w c^2: the global minimum of the
 * weighted error over all scales in that range (the codes of the optimal scale are
 * its rounding, and the refit for them is no worse). Returns the weighted error of
 * the winner re-rounded with d stored as half; d and codes into *bd, bk. */
static double sym_exact(const wq_desc *ds, const float *x, const float *w, float *bd, int *bk)
{
    const int n = ds->blk, K = -ds->kmin;
    static _Thread_local wq_event ev[MAX_BLOCK * 40];
    int k[MAX_BLOCK];
    double best = INFINITY;
    float amax = 0;
    for (int j = 0; j < n; j++) amax = fmaxf(amax, fabsf(x[j]));
    if (!(amax > 0) || !isfinite(amax)) return INFINITY;
    const float s0 = 0.4f * (float)K / amax, s1 = 1.6f * (float)K / amax;
    for (int sign = -1; sign <= 1; sign += 2) {
        double sxk = 0, skk = 0;
        int ne = 0;
        for (int j = 0; j < n; j++) {
            float y = (float)sign * x[j];
            int c = clampi((int)lrintf(y * s0), ds->kmin, ds->kmax);
            k[j] = c;
            sxk += (double)w[j] * y * c;
            skk += (double)w[j] * c * c;
            float ay = fabsf(y);
            if (ay == 0) continue;
            if (y > 0)
                for (int m = c; m + 1 <= ds->kmax; m++) {
                    float s = ((float)m + 0.5f) / ay;
                    if (s > s1) break;
                    if (s > s0) ev[ne++] = (wq_event){s, j, m + 1};
                }
            else
                for (int m = -c; -(m + 1) >= ds->kmin; m++) {
                    float s = ((float)m + 0.5f) / ay;
                    if (s > s1) break;
                    if (s > s0) ev[ne++] = (wq_event){s, j, -(m + 1)};
                }
        }
        qsort(ev, (size_t)ne, sizeof *ev, event_cmp);
        double top = skk > 0 && sxk > 0 ? sxk * sxk / skk : -1, td = top > 0 ? sxk / skk : 0;
        for (int e = 0; e < ne; e++) {
            int j = ev[e].j, c = ev[e].k;
            float y = (float)sign * x[j];
            sxk += (double)w[j] * y * (c - k[j]);
            skk += (double)w[j] * ((double)c * c - (double)k[j] * k[j]);
            k[j] = c;
            if (skk > 0 && sxk > 0 && sxk * sxk / skk > top) { top = sxk * sxk / skk; td = sxk / skk; }
        }
        if (!(top > 0)) continue;
        int kc[MAX_BLOCK];
        float d = (float)(sign * td);
        double err = sym_codes(x, w, n, d, ds->kmin, ds->kmax, kc);
        if (err < best) {
            best = err;
            *bd = d;
            memcpy(bk, kc, (size_t)n * sizeof *kc);
        }
    }
    return best;
}

/* Best (d, m, codes) of one block; returns its weighted error (inf when none is usable). */
static double search(const wq_desc *ds, const float *x, const float *w, float *bd, float *bm, int *bk)
{
    const int n = ds->blk;
    int k[MAX_BLOCK];
    double best = INFINITY;
    if (!ds->asym) {
        float amax = 0, mx = 0;
        for (int j = 0; j < n; j++)
            if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); mx = x[j]; }
        if (!(amax > 0) || !isfinite(amax)) return INFINITY;
        for (int side = 0; side < 2; side++)
            for (int it = 0; it <= 10; it++) {
                float t = -1.5f + 0.25f * it;
                float den = side ? (float)ds->kmax + t : (float)-(-ds->kmin) - t;
                if (fabsf(den) < 0.5f) continue;
                float d = mx / den;
                double e = sym_codes(x, w, n, d, ds->kmin, ds->kmax, k);
                for (int iter = 0; iter < 2; iter++) {
                    double sxk = 0, skk = 0;
                    for (int j = 0; j < n; j++) { sxk += (double)w[j] * x[j] * k[j]; skk += (double)w[j] * k[j] * k[j]; }
                    if (!(skk > 0)) break;
                    float d2 = (float)(sxk / skk);
                    int k2[MAX_BLOCK];
                    double e2 = sym_codes(x, w, n, d2, ds->kmin, ds->kmax, k2);
                    if (!(e2 < e)) break;
                    e = e2;
                    d = d2;
                    memcpy(k, k2, (size_t)n * sizeof *k);
                }
                if (e < best) {
                    best = e;
                    *bd = d;
                    *bm = 0;
                    memcpy(bk, k, (size_t)n * sizeof *k);
                }
            }
        if (ds->bits < 8) {
            float d = 0;
            double e = sym_exact(ds, x, w, &d, k);
            if (e < best) {
                best = e;
                *bd = d;
                *bm = 0;
                memcpy(bk, k, (size_t)n * sizeof *k);
            }
        }
        return best;
    }
    float lo = x[0], hi = x[0];
    for (int j = 1; j < n; j++) { lo = fminf(lo, x[j]); hi = fmaxf(hi, x[j]); }
    if (!(hi > lo) || !isfinite(hi - lo)) return INFINITY;
    static const float shrink[4] = {0.0f, 0.5f, 1.0f, 1.5f};   /* in steps of the plain scale */
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++) {
            float step = (hi - lo) / (float)ds->kmax;
            float l = lo + shrink[a] * step, h = hi - shrink[b] * step;
            float d = (h - l) / (float)ds->kmax, m = l;
            double e = asym_codes(x, w, n, d, m, ds->kmax, k);
            for (int iter = 0; iter < 2; iter++) {
                double s = 0, sk = 0, skk = 0, sx = 0, skx = 0;
                for (int j = 0; j < n; j++) {
                    double wj = w[j];
                    s += wj; sk += wj * k[j]; skk += wj * k[j] * k[j]; sx += wj * x[j]; skx += wj * k[j] * x[j];
                }
                double det = s * skk - sk * sk;
                if (!(det > 1e-30 * s * skk && s > 0)) break;
                double dd = (s * skx - sk * sx) / det;
                if (!(dd > 0)) break;
                float d2 = (float)dd, m2 = (float)((sx - dd * sk) / s);
                int k2[MAX_BLOCK];
                double e2 = asym_codes(x, w, n, d2, m2, ds->kmax, k2);
                if (!(e2 < e)) break;
                e = e2;
                d = d2;
                m = m2;
                memcpy(k, k2, (size_t)n * sizeof *k);
            }
            if (e < best) {
                best = e;
                *bd = d;
                *bm = m;
                memcpy(bk, k, (size_t)n * sizeof *k);
            }
        }
    return best;
}

static double werr(const float *x, const float *y, const float *w, int n)
{
    double e = 0;
    for (int j = 0; j < n; j++) {
        double r = (double)x[j] - y[j];
        e += w[j] * r * r;
    }
    return e;
}

/* ------------------------------------------------------------------ K-quants ---- */

/* Q4_K / Q5_K (blocks.h; ggml-org/ggml src/ggml-common.h block_q4_K, block_q5_K): per
 * super-block of 256, 8 sub-blocks of 32 with x = d*sc_j * q - dmin*m_j, q 0..nmax,
 * sc_j, m_j 6-bit integers, d and dmin halves. Q6_K: 16 sub-blocks of 16 with
 * x = d*sc_j * q, q -32..31, sc_j int8.
 * Weighted search of one super-block:
 *   1. per sub-block the weighted asymmetric fit (Q4_K/Q5_K, offset clamped to <= 0 as
 *      the format stores -dmin*m with m >= 0) or the exact symmetric sweep (Q6_K);
 *   2. d = max scale / 63 (127 for Q6_K), dmin = max offset / 63, each sub-block's
 *      integers rounded, then for each sub-block the 3 x 3 neighbours (sc +-1, m +-1)
 *      tried with the codes re-rounded, keeping the lowest weighted error;
 *   3. the packed candidate is decoded with the type's dequantizer and kept only when
 *      its weighted error is below the plain (llama-quantize) bytes'. */

static void k_pack_sm(uint8_t *q, const uint8_t *sc, const uint8_t *m)
{
    for (int j = 0; j < 4; j++) {
        q[j] = (uint8_t)((sc[j] & 63) | (sc[j + 4] >> 4) << 6);
        q[j + 4] = (uint8_t)((m[j] & 63) | (m[j + 4] >> 4) << 6);
        q[j + 8] = (uint8_t)((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
    }
}

/* Weighted error of one sub-block at scale d1 and offset -m1 with the best codes. */
static double k_sub_err(const float *x, const float *w, int n, float d1, float m1, int kmin, int kmax, int *k)
{
    double e = 0;
    float id = d1 != 0.0f ? 1.0f / d1 : 0.0f;
    for (int l = 0; l < n; l++) {
        int c = d1 != 0.0f ? clampi((int)lrintf((x[l] + m1) * id), kmin, kmax) : 0;
        if (k) k[l] = c;
        double r = (double)x[l] - ((double)d1 * c - m1);
        e += w[l] * r * r;
    }
    return e;
}

/* Weighted (scale >= 0, offset <= 0) fit of one sub-block of 32 with codes 0..nmax. */
static void k_fit_asym(const float *x, const float *w, int nmax, float *sc, float *mn)
{
    wq_desc ds = {32, true, 0, nmax, 0, 5};
    float xs[32], d = 0, m = 0;
    int k[32];
    bool neg = false;
    for (int l = 0; l < 32; l++) neg = neg || x[l] < 0;
    double e = INFINITY;
    if (neg) e = search(&ds, x, w, &d, &m, k);
    if (!(e < INFINITY) || m > 0) {
        /* offset 0: the sweep on x >= 0 with codes 0..nmax (the symmetric form's positive half) */
        wq_desc s = {32, false, -nmax, nmax, 0, 5};
        for (int l = 0; l < 32; l++) xs[l] = fmaxf(x[l], 0.0f);
        float ds0 = 0;
        int kk[32];
        (void)sym_exact(&s, xs, w, &ds0, kk);
        d = fabsf(ds0);
        m = 0;
    }
    *sc = d > 0 && isfinite(d) ? d : 0;
    *mn = m < 0 && isfinite(m) ? -m : 0;
}

static void k_codes_pack(int type, const int *L, uint8_t *qs, uint8_t *qh)
{
    if (type == EDGELLM_TYPE_Q6_K) {
        for (int h = 0; h < 2; h++)
            for (int l = 0; l < 32; l++) {
                const int *q = L + 128 * h;
                int a = q[l] + 32, b = q[l + 32] + 32, c = q[l + 64] + 32, d = q[l + 96] + 32;
                qs[64 * h + l] = (uint8_t)((a & 15) | (c & 15) << 4);
                qs[64 * h + l + 32] = (uint8_t)((b & 15) | (d & 15) << 4);
                qh[32 * h + l] = (uint8_t)((a >> 4) | (b >> 4) << 2 | (c >> 4) << 4 | (d >> 4) << 6);
            }
        return;
    }
    if (qh) memset(qh, 0, 32);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            int a = L[64 * c + l], b = L[64 * c + 32 + l];
            qs[32 * c + l] = (uint8_t)((a & 15) | (b & 15) << 4);
            if (qh) qh[l] |= (uint8_t)((a >> 4) << (2 * c) | (b >> 4) << (2 * c + 1));
        }
}

/* One super-block's weighted candidate into out (the type's block layout). */
static void k_block_weighted(int type, const float *x, const float *w, uint8_t *out)
{
    int L[256];
    if (type == EDGELLM_TYPE_Q6_K) {
        float sc[16], amax = 0, smax = 0;
        wq_desc ds = {16, false, -32, 31, 0, 6};
        for (int j = 0; j < 16; j++) {
            float d = 0;
            if (!(sym_exact(&ds, x + 16 * j, w + 16 * j, &d, L + 16 * j) < INFINITY)) d = 0;
            sc[j] = d;
            if (fabsf(d) > amax) { amax = fabsf(d); smax = d; }
        }
        float dsup = smax / -128.0f;   /* ggml's convention: the largest scale maps to -128 */
        uint16_t hd = edgellm_f32_to_f16(dsup);
        float D = edgellm_f16_to_f32(hd);
        int8_t isc[16];
        for (int j = 0; j < 16; j++) {
            int base = D != 0.0f ? (int)lrintf(sc[j] / D) : 0;
            double be = INFINITY;
            int bs = 0;
            for (int t = -1; t <= 1; t++) {
                int s = clampi(base + t, -128, 127);
                double e = k_sub_err(x + 16 * j, w + 16 * j, 16, D * s, 0, -32, 31, NULL);
                if (e < be) { be = e; bs = s; }
            }
            isc[j] = (int8_t)bs;
            k_sub_err(x + 16 * j, w + 16 * j, 16, D * bs, 0, -32, 31, L + 16 * j);
        }
        /* block_q6_K: ql[128], qh[64], scales[16] (int8), d (half) */
        k_codes_pack(type, L, out, out + 128);
        memcpy(out + 192, isc, 16);
        memcpy(out + 208, &hd, 2);
        return;
    }
    const int nmax = type == EDGELLM_TYPE_Q4_K ? 15 : 31;
    float sc[8], mn[8], smax = 0, mmax = 0;
    for (int j = 0; j < 8; j++) {
        k_fit_asym(x + 32 * j, w + 32 * j, nmax, &sc[j], &mn[j]);
        smax = fmaxf(smax, sc[j]);
        mmax = fmaxf(mmax, mn[j]);
    }
    uint16_t hd = edgellm_f32_to_f16(smax / 63.0f), hm = edgellm_f32_to_f16(mmax / 63.0f);
    float D = edgellm_f16_to_f32(hd), M = edgellm_f16_to_f32(hm);
    uint8_t ls[8], lm[8];
    for (int j = 0; j < 8; j++) {
        int bs = D > 0 ? (int)lrintf(sc[j] / D) : 0, bm = M > 0 ? (int)lrintf(mn[j] / M) : 0;
        double be = INFINITY;
        int s0 = bs, m0 = bm;
        for (int a = -1; a <= 1; a++)
            for (int b = -1; b <= 1; b++) {
                int s = clampi(s0 + a, 0, 63), m = clampi(m0 + b, 0, 63);
                double e = k_sub_err(x + 32 * j, w + 32 * j, 32, D * s, M * m, 0, nmax, NULL);
                if (e < be) { be = e; bs = s; bm = m; }
            }
        ls[j] = (uint8_t)bs;
        lm[j] = (uint8_t)bm;
        k_sub_err(x + 32 * j, w + 32 * j, 32, D * bs, M * bm, 0, nmax, L + 32 * j);
    }
    memcpy(out, &hd, 2);
    memcpy(out + 2, &hm, 2);
    k_pack_sm(out + 4, ls, lm);
    if (type == EDGELLM_TYPE_Q4_K) k_codes_pack(type, L, out + 16, NULL);
    else k_codes_pack(type, L, out + 48, out + 16);
}

static bool k_weighted_type(int type)
{
    return type == EDGELLM_TYPE_Q4_K || type == EDGELLM_TYPE_Q5_K || type == EDGELLM_TYPE_Q6_K;
}

static void block_weights(const float *imw, int n, float *w)
{
    double mean = 0;
    for (int j = 0; j < n; j++) mean += imw[j] > 0 && isfinite(imw[j]) ? imw[j] : 0;
    mean /= n;
    float floor = (float)(mean > 0 ? 0.01 * mean : 1.0);
    for (int j = 0; j < n; j++) {
        float v = imw[j];
        w[j] = (v > 0 && isfinite(v) ? v : 0) + floor;
    }
}

static bool k_row_weighted(int type, const float *x, const float *imw, void *dst, int64_t n, edgellm_quant_stats *st)
{
    const edgellm_type_traits *tr = edgellm_type_get_traits(type);
    if (!tr || !tr->to_float || n % 256) return false;
    const size_t bbytes = edgellm_type_row_size(type, 256);
    uint8_t cand[256];
    float w[256], y[256], xs[256];
    for (int64_t b = 0; b < n / 256; b++) {
        const float *xb = x + b * 256;
        uint8_t *ob = (uint8_t *)dst + (size_t)b * bbytes;
        edgellm_quantize_row(type, xb, ob, 256, st);
        tr->to_float(ob, y, 256);
        block_weights(imw + b * 256, 256, w);
        double e_plain = werr(xb, y, w, 256);
        if (!(e_plain > 0)) continue;
        bool finite = true;
        for (int j = 0; j < 256; j++) {
            xs[j] = fmaxf(-65504.0f, fminf(65504.0f, xb[j]));
            finite = finite && isfinite(xb[j]);
        }
        if (!finite) continue;
        memset(cand, 0, sizeof cand);
        k_block_weighted(type, xs, w, cand);
        tr->to_float(cand, y, 256);
        double e_cand = werr(xb, y, w, 256);
        for (int j = 0; j < 256; j++) finite = finite && isfinite(y[j]);
        if (finite && e_cand < e_plain) memcpy(ob, cand, bbytes);
    }
    return true;
}

bool edgellm_quant_row_weighted(int type, const float *x, const float *imw, void *dst, int64_t n,
                                edgellm_quant_stats *st)
{
    if (k_weighted_type(type)) return k_row_weighted(type, x, imw, dst, n, st);
    wq_desc ds;
    const edgellm_type_traits *tr = edgellm_type_get_traits(type);
    if (!describe(type, &ds) || !tr || !tr->to_float || n % ds.blk) return false;
    const size_t bbytes = edgellm_type_row_size(type, ds.blk);
    uint8_t *out = dst;
    float w[MAX_BLOCK], y[MAX_BLOCK], bd = 0, bm = 0;
    int bk[MAX_BLOCK];
    uint8_t cand[2 * MAX_BLOCK];
    for (int64_t b = 0; b < n / ds.blk; b++) {
        const float *xb = x + b * ds.blk;
        uint8_t *ob = out + (size_t)b * bbytes;
        double mean = 0;
        for (int j = 0; j < ds.blk; j++) mean += imw[b * ds.blk + j] > 0 ? imw[b * ds.blk + j] : 0;
        mean /= ds.blk;
        float floor = (float)(mean > 0 ? 0.01 * mean : 1.0);
        for (int j = 0; j < ds.blk; j++) {
            float v = imw[b * ds.blk + j];
            w[j] = (v > 0 && isfinite(v) ? v : 0) + floor;
        }
        edgellm_quantize_row(type, xb, ob, ds.blk, st);
        tr->to_float(ob, y, ds.blk);
        double e_plain = werr(xb, y, w, ds.blk);
        if (!(e_plain > 0)) continue;
        double e = search(&ds, xb, w, &bd, &bm, bk);
        if (!(e < e_plain)) continue;
        pack(&ds, bd, bm, bk, cand);
        tr->to_float(cand, y, ds.blk);
        double e_cand = werr(xb, y, w, ds.blk);
        bool finite = true;
        for (int j = 0; j < ds.blk; j++) finite = finite && isfinite(y[j]);
        if (finite && e_cand < e_plain) memcpy(ob, cand, bbytes);
    }
    return true;
}
