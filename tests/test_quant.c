/* test_quant.c — the scalar reference layer of every quantized type (src/tensor/quant*.c):
 *
 *  - layouts: traits sizes equal the block structs, names parse back; the traits table and
 *    the file format's layout table (src/format/type_layout.c) agree on every id;
 *  - known bytes for hand-worked blocks (Q4_0, Q8_0, I4_G64_SYM);
 *  - round trip on random rows of several blocks: every element decodes to the nearest
 *    value its block can represent (up to the scale-rounding slack stated per type), plus
 *    the explicit per-block bounds of the legacy types and RMSE ceilings for the others;
 *  - reference dot products against a double dot of the dequantized operands;
 *  - edge blocks: zeros, constants, denormals, tiny, huge (±FLT_MAX), single outlier:
 *    no inf/NaN scale ever, saturation counted;
 *  - llama.cpp fixtures: our Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 quantization of llama-gqa-f32 equals
 *    the fixture bytes; K-quant RMSE within 5% of llama.cpp's (printed, with byte-equality
 *    rate); every fixture tensor dequantizes to finite values, Q8_0/Q4_0 within bounds.
 */
#include "format/gguf.h"
#include "tensor/blocks.h"
#include "tensor/quant.h"
#include "tensor/types.h"
#include "test_util.h"
#include <float.h>

#define REF "data/reference/"

/* max without fmax(): aarch64-linux-gnu-gcc 12 hits an internal compiler error
 * (vect_transform_reduction) vectorizing fmax reductions of doubles at -O3. */
static inline double maxd(double a, double b) { return a > b ? a : b; }

static const int quant_types[] = {
    EDGELLM_TYPE_Q4_0, EDGELLM_TYPE_Q4_1, EDGELLM_TYPE_Q5_0, EDGELLM_TYPE_Q5_1, EDGELLM_TYPE_Q8_0,
    EDGELLM_TYPE_Q2_K, EDGELLM_TYPE_Q3_K, EDGELLM_TYPE_Q4_K, EDGELLM_TYPE_Q5_K, EDGELLM_TYPE_Q6_K,
    EDGELLM_TYPE_I4_G64_SYM, EDGELLM_TYPE_I4_G128_SYM, EDGELLM_TYPE_I4_G256_SYM,
    EDGELLM_TYPE_I4_G64_ASYM, EDGELLM_TYPE_I4_G128_ASYM, EDGELLM_TYPE_I4_G256_ASYM,
    EDGELLM_TYPE_I8_G64_SYM, EDGELLM_TYPE_I8_G128_SYM, EDGELLM_TYPE_I8_G256_SYM,
    EDGELLM_TYPE_I8_G64_ASYM, EDGELLM_TYPE_I8_G128_ASYM, EDGELLM_TYPE_I8_G256_ASYM,
};
#define N_QUANT_TYPES (int)(sizeof quant_types / sizeof quant_types[0])

/* ---------------------------------------------------------------- random numbers */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rng_u32(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}
static double rng_uniform(void) { return (rng_u32() + 0.5) / 4294967296.0; }   /* (0,1) */
static float rng_gauss(void)
{
    return (float)(sqrt(-2.0 * log(rng_uniform())) * cos(6.283185307179586 * rng_uniform()));
}

/* Fill x with a mix: gaussian, uniform, and rows with an outlier or a positive offset. */
static void fill_random(float *x, int64_t n, int kind)
{
    for (int64_t i = 0; i < n; i++) {
        switch (kind % 4) {
        case 0: x[i] = 0.02f * rng_gauss(); break;
        case 1: x[i] = (float)(2 * rng_uniform() - 1); break;
        case 2: x[i] = rng_gauss() + (i % 97 == 5 ? 12.0f : 0.0f); break;   /* outliers */
        default: x[i] = 3.0f + rng_gauss(); break;                          /* offset   */
        }
    }
}

/* ---------------------------------------------------------------- decoding, from the spec
 * For element e of a block: w = a*q + b for integer q in [qlo, qhi]. Written from
 * ggml's src/ggml-common.h / blocks.h independently of the dequantizers (only the 6-bit K scale
 * unpacking, whose layout is tested via dequant exactness against the fixtures, and the
 * Q3_K scale unpacking are shared). */
typedef struct { double a, b; int qlo, qhi; } grid;

static double h2f(const uint8_t *p) { return edgellm_f16_to_f32(edgellm_rd_u16(p)); }

static grid element_grid(int type, const uint8_t *blk, int e)
{
    grid g = {0, 0, 0, 0};
    uint8_t sc, m;
    int8_t s3[16];
    switch (type) {
    case EDGELLM_TYPE_Q4_0: g = (grid){h2f(blk), -8 * h2f(blk), 0, 15}; break;
    case EDGELLM_TYPE_Q4_1: g = (grid){h2f(blk), h2f(blk + 2), 0, 15}; break;
    case EDGELLM_TYPE_Q5_0: g = (grid){h2f(blk), -16 * h2f(blk), 0, 31}; break;
    case EDGELLM_TYPE_Q5_1: g = (grid){h2f(blk), h2f(blk + 2), 0, 31}; break;
    case EDGELLM_TYPE_Q8_0: g = (grid){h2f(blk), 0, -128, 127}; break;
    case EDGELLM_TYPE_Q2_K: {
        const edgellm_block_q2_K *b = (const void *)blk;
        g = (grid){edgellm_f16_to_f32(b->d) * (double)(b->scales[e / 16] & 15),
                   -(double)edgellm_f16_to_f32(b->dmin) * (b->scales[e / 16] >> 4), 0, 3};
        break;
    }
    case EDGELLM_TYPE_Q3_K: {
        const edgellm_block_q3_K *b = (const void *)blk;
        edgellm_q3_K_scales(b->scales, s3);
        g = (grid){edgellm_f16_to_f32(b->d) * (double)s3[e / 16], 0, -4, 3};
        break;
    }
    case EDGELLM_TYPE_Q4_K: case EDGELLM_TYPE_Q5_K: {
        const edgellm_block_q4_K *b = (const void *)blk;   /* same header for Q5_K */
        edgellm_k_scale_min(e / 32, b->scales, &sc, &m);
        g = (grid){edgellm_f16_to_f32(b->d) * (double)sc, -(double)edgellm_f16_to_f32(b->dmin) * m, 0,
                   type == EDGELLM_TYPE_Q4_K ? 15 : 31};
        break;
    }
    case EDGELLM_TYPE_Q6_K: {
        const edgellm_block_q6_K *b = (const void *)blk;
        g = (grid){edgellm_f16_to_f32(b->d) * (double)b->scales[e / 16], 0, -32, 31};
        break;
    }
    default: {   /* group types */
        int k = type - 1000;
        bool asym = (k / 3) % 2 == 1;
        bool i8 = k >= 6;
        g.a = h2f(blk);
        g.b = asym ? h2f(blk + 2) : 0;
        g.qlo = asym ? 0 : i8 ? -127 : -8;
        g.qhi = asym ? (i8 ? 255 : 15) : (i8 ? 127 : 7);
    }
    }
    return g;
}

/* Distance from x to the nearest value of the grid. */
static double grid_dist(grid g, double x)
{
    if (g.a == 0) return fabs(x - g.b);
    double q = rint((x - g.b) / g.a);
    if (q < g.qlo) q = g.qlo;
    if (q > g.qhi) q = g.qhi;
    double best = fabs(x - (g.a * q + g.b));
    for (int dq = -1; dq <= 1; dq += 2)   /* rint on the boundary: check neighbours */
        if (q + dq >= g.qlo && q + dq <= g.qhi) best = fmin(best, fabs(x - (g.a * (q + dq) + g.b)));
    return best;
}

/* Byte offsets of every half scale in a block (for the finite-scale checks); Q8_K: float. */
static int half_offsets(int type, int off[2])
{
    switch (type) {
    case EDGELLM_TYPE_Q4_0: case EDGELLM_TYPE_Q5_0: case EDGELLM_TYPE_Q8_0: off[0] = 0; return 1;
    case EDGELLM_TYPE_Q4_1: case EDGELLM_TYPE_Q5_1: case EDGELLM_TYPE_Q8_1:
    case EDGELLM_TYPE_Q4_K: case EDGELLM_TYPE_Q5_K: off[0] = 0; off[1] = 2; return 2;
    case EDGELLM_TYPE_Q2_K: off[0] = 80; off[1] = 82; return 2;
    case EDGELLM_TYPE_Q3_K: off[0] = 108; return 1;
    case EDGELLM_TYPE_Q6_K: off[0] = 208; return 1;
    case EDGELLM_TYPE_Q8_K: return 0;
    default: off[0] = 0; off[1] = 2; return ((type - 1000) / 3) % 2 == 1 ? 2 : 1;
    }
}

/* Slack allowed on top of the nearest-grid distance: the legacy quantizers compute codes
 * with the float scale (and float min) before they are rounded to half, so a code may be
 * off by the scale-rounding error times the code magnitude: <= (|a|*qmax + |b|) * 2^-11.
 * Everything else re-rounds the codes with the stored scales: float rounding only. */
static double slack(int type, grid g)
{
    double qmax = maxd(fabs((double)g.qlo), fabs((double)g.qhi));
    double mag = fabs(g.a) * qmax + fabs(g.b);
    bool legacy = type == EDGELLM_TYPE_Q4_0 || type == EDGELLM_TYPE_Q4_1 || type == EDGELLM_TYPE_Q5_0 ||
                  type == EDGELLM_TYPE_Q5_1 || type == EDGELLM_TYPE_Q8_0;
    return mag * (legacy ? 1.0 / 2048 * 1.001 : 4e-7) + 1e-30;
}

/* ---------------------------------------------------------------- layout */
static void test_quant_layout_sizes(void)
{
    struct { int type; size_t size; int blck; } want[] = {
        {EDGELLM_TYPE_Q4_0, sizeof(edgellm_block_q4_0), 32}, {EDGELLM_TYPE_Q4_1, sizeof(edgellm_block_q4_1), 32},
        {EDGELLM_TYPE_Q5_0, sizeof(edgellm_block_q5_0), 32}, {EDGELLM_TYPE_Q5_1, sizeof(edgellm_block_q5_1), 32},
        {EDGELLM_TYPE_Q8_0, sizeof(edgellm_block_q8_0), 32}, {EDGELLM_TYPE_Q8_1, sizeof(edgellm_block_q8_1), 32},
        {EDGELLM_TYPE_Q2_K, sizeof(edgellm_block_q2_K), 256}, {EDGELLM_TYPE_Q3_K, sizeof(edgellm_block_q3_K), 256},
        {EDGELLM_TYPE_Q4_K, sizeof(edgellm_block_q4_K), 256}, {EDGELLM_TYPE_Q5_K, sizeof(edgellm_block_q5_K), 256},
        {EDGELLM_TYPE_Q6_K, sizeof(edgellm_block_q6_K), 256}, {EDGELLM_TYPE_Q8_K, sizeof(edgellm_block_q8_K), 256},
        {EDGELLM_TYPE_I4_G64_SYM, sizeof(edgellm_block_i4_g64_sym), 64},
        {EDGELLM_TYPE_I4_G128_ASYM, sizeof(edgellm_block_i4_g128_asym), 128},
        {EDGELLM_TYPE_I8_G256_SYM, sizeof(edgellm_block_i8_g256_sym), 256},
        {EDGELLM_TYPE_I8_G64_ASYM, sizeof(edgellm_block_i8_g64_asym), 64},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const edgellm_type_traits *t = edgellm_type_get_traits(want[i].type);
        CHECK(t != NULL);
        if (!t) continue;
        CHECK_EQ(t->type_size, want[i].size);
        CHECK_EQ(t->blck_size, want[i].blck);
        CHECK(t->to_float != NULL && t->from_float_ref != NULL);
    }
    for (int i = 0; i < N_QUANT_TYPES; i++) {
        const edgellm_type_traits *t = edgellm_type_get_traits(quant_types[i]);
        CHECK(t && t->computable && t->vec_dot_ref && t->is_quantized);
        if (!t) continue;
        CHECK_EQ(edgellm_type_from_name(t->name), quant_types[i]);
        const edgellm_type_traits *vt = edgellm_type_get_traits(t->vec_dot_type);
        CHECK(vt && vt->from_float_ref && vt->to_float);
    }
    CHECK_EQ(edgellm_type_from_name("i4_g128_sym"), EDGELLM_TYPE_I4_G128_SYM);
    CHECK_EQ(edgellm_type_from_name("I8_G256_ASYM"), EDGELLM_TYPE_I8_G256_ASYM);
    CHECK_EQ(edgellm_type_row_size(EDGELLM_TYPE_I4_G128_SYM, 256), 2 * 66);
    CHECK_EQ(edgellm_type_row_size(EDGELLM_TYPE_I4_G128_SYM, 64), 0);
    CHECK_EQ(edgellm_type_get_traits(EDGELLM_TYPE_Q4_1)->vec_dot_type, EDGELLM_TYPE_Q8_1);
    CHECK_EQ(edgellm_type_get_traits(EDGELLM_TYPE_Q4_K)->vec_dot_type, EDGELLM_TYPE_Q8_K);
    CHECK_EQ(edgellm_type_get_traits(EDGELLM_TYPE_I4_G64_ASYM)->vec_dot_type, EDGELLM_TYPE_Q8_1);
    CHECK_EQ(edgellm_type_get_traits(EDGELLM_TYPE_I8_G64_SYM)->vec_dot_type, EDGELLM_TYPE_Q8_0);
}

/* The traits (tensor layer) and the layouts the GGUF reader sizes tensors with (format
 * layer) are two tables: same ids, same name, block size, bytes and quantized flag. */
static void test_quant_traits_match_layout(void)
{
    int known = 0;
    for (int id = -1; id < 1100; id++) {
        const edgellm_type_traits *t = edgellm_type_get_traits(id);
        const edgellm_type_layout *l = edgellm_type_layout_get(id);
        CHECK((t == NULL) == (l == NULL));
        if (!t || !l) continue;
        known++;
        CHECK(strcmp(t->name, l->name) == 0);
        CHECK_EQ(t->blck_size, l->blck_size);
        CHECK_EQ(t->type_size, l->type_size);
        CHECK_EQ(t->is_quantized, l->is_quantized);
    }
    CHECK_EQ(known, 32 + 12 + 1);   /* the ggml types edgellm knows + the group-wise types + Q4_K_R16 */
}

/* ---------------------------------------------------------------- hand-worked bytes */
static void test_quant_known_bytes(void)
{
    float x[64] = {0};
    uint8_t out[300];
    /* Q4_0: x0 = -1, x16 = 0.5: d = 0.125 (0x3000), codes 0, 12, others 8 (file comment). */
    x[0] = -1.0f;
    x[16] = 0.5f;
    CHECK_EQ(edgellm_quant_q4_0_ref(x, out, 32), 0);
    const uint8_t q40[18] = {0x00, 0x30, 0xc0, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88,
                             0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88};
    CHECK(memcmp(out, q40, 18) == 0);
    /* Q8_0: x0 = 1, x1 = -0.5: d = 1/127 -> half 0x2008, q = 127, roundf(-63.5) = -64. */
    memset(x, 0, sizeof x);
    x[0] = 1.0f;
    x[1] = -0.5f;
    edgellm_quant_q8_0_ref(x, out, 32);
    CHECK_EQ(edgellm_rd_u16(out), 0x2008);
    CHECK_EQ((int8_t)out[2], 127);
    CHECK_EQ((int8_t)out[3], -64);
    CHECK_EQ(out[4], 0);
    /* I4_G64_SYM: x0 = -1: d = 0.125, element 0 -> nibble 0, others nibble 8. */
    memset(x, 0, sizeof x);
    x[0] = -1.0f;
    edgellm_quant_i4_g64_sym_ref(x, out, 64);
    CHECK_EQ(edgellm_rd_u16(out), 0x3000);
    CHECK_EQ(out[2], 0x80);
    for (int j = 3; j < 34; j++) CHECK_EQ(out[j], 0x88);
    /* Q4_K scale packing: a hand-packed block decodes per ggml's get_scale_min_k4 (src/ggml-quants.c). */
    edgellm_block_q4_K kb;
    memset(&kb, 0, sizeof kb);
    const uint8_t sc[12] = {0x41, 0x02, 0x03, 0x04, 0x09, 0x0a, 0x0b, 0xcc, 0x25, 0x06, 0x07, 0x38};
    memcpy(kb.scales, sc, 12);
    uint8_t s, m;
    edgellm_k_scale_min(0, kb.scales, &s, &m);
    CHECK(s == 1 && m == 9);
    edgellm_k_scale_min(4, kb.scales, &s, &m);   /* byte8 lo 5 | (byte0>>6)<<4 = 16+5; m: 2 | (byte4>>6)<<4 */
    CHECK(s == 21 && m == 2);
    edgellm_k_scale_min(7, kb.scales, &s, &m);   /* byte11 lo 8, byte3>>6 = 0; m: 3 | (byte7>>6)<<4 = 48+3 */
    CHECK(s == 8 && m == 51);
    /* the packing example of quant_k.c: scales 1..8, mins 9..16 */
    const uint8_t ex[12] = {0x01, 0x02, 0x03, 0x04, 0x09, 0x0a, 0x0b, 0x4c, 0xd5, 0xe6, 0xf7, 0x08};
    for (int j = 0; j < 8; j++) {
        edgellm_k_scale_min(j, ex, &s, &m);
        CHECK(s == j + 1 && m == j + 9);
    }
}

/* ---------------------------------------------------------------- round trip on random rows */
static double rmse_ceiling(int type)   /* of rmse/rms on gaussian rows (kind 0), generous */
{
    switch (type) {
    case EDGELLM_TYPE_Q8_0: return 0.006;
    case EDGELLM_TYPE_Q4_0: return 0.12;
    case EDGELLM_TYPE_Q4_1: return 0.10;
    case EDGELLM_TYPE_Q5_0: return 0.06;
    case EDGELLM_TYPE_Q5_1: return 0.05;
    case EDGELLM_TYPE_Q2_K: return 0.45;
    case EDGELLM_TYPE_Q3_K: return 0.22;
    case EDGELLM_TYPE_Q4_K: return 0.10;
    case EDGELLM_TYPE_Q5_K: return 0.05;
    case EDGELLM_TYPE_Q6_K: return 0.025;
    default: {
        int k = type - 1000;
        return k >= 6 ? 0.008 : 0.14;   /* I8 / I4 groups */
    }
    }
}

static void test_quant_roundtrip_random(void)
{
    const int nblocks[] = {1, 3, 7};
    float *x = malloc(7 * 256 * sizeof(float)), *y = malloc(7 * 256 * sizeof(float));
    uint8_t *q = malloc(7 * 300);
    for (int ti = 0; ti < N_QUANT_TYPES; ti++) {
        const int type = quant_types[ti];
        const edgellm_type_traits *t = edgellm_type_get_traits(type);
        double worst_excess = 0, sse = 0, ssx = 0;
        for (int kind = 0; kind < 4; kind++)
            for (int nbi = 0; nbi < 3; nbi++) {
                const int64_t n = (int64_t)nblocks[nbi] * t->blck_size;
                fill_random(x, n, kind);
                memset(y, 0, (size_t)n * sizeof(float));
                t->from_float_ref(x, q, n);
                t->to_float(q, y, n);
                for (int64_t b = 0; b < n / t->blck_size; b++) {
                    const uint8_t *blk = q + b * t->type_size;
                    /* the explicit per-block bounds of the legacy types (absolute error):
                     *   Q8_0 <= amax/254 + amax*2^-11         (rounding + half scale)
                     *   Q4_0 <= amax/8 (1 + 2^-8)             (the clipped opposite extreme)
                     *   Q5_0 <= amax/16 (1 + 2^-7)
                     *   Q4_1 <= range/30 + (range + |min|)*2^-10,  Q5_1 <= range/62 + same */
                    double amax = 0, lo = INFINITY, hi = -INFINITY, maxerr = 0;
                    for (int e = 0; e < t->blck_size; e++) {
                        double v = x[b * t->blck_size + e];
                        amax = maxd(amax, fabs(v));
                        lo = fmin(lo, v);
                        hi = maxd(hi, v);
                        maxerr = maxd(maxerr, fabs(v - y[b * t->blck_size + e]));
                    }
                    double bound = INFINITY;
                    if (type == EDGELLM_TYPE_Q8_0) bound = amax / 254 + amax / 2048;
                    if (type == EDGELLM_TYPE_Q4_0) bound = amax / 8 * (1 + 1.0 / 256);
                    if (type == EDGELLM_TYPE_Q5_0) bound = amax / 16 * (1 + 1.0 / 128);
                    if (type == EDGELLM_TYPE_Q4_1) bound = (hi - lo) / 30 + (hi - lo + fabs(lo)) / 1024;
                    if (type == EDGELLM_TYPE_Q5_1) bound = (hi - lo) / 62 + (hi - lo + fabs(lo)) / 1024;
                    if (!(maxerr <= bound)) {
                        fprintf(stderr, "   %s kind %d block %lld: max err %g > bound %g\n", t->name, kind,
                                (long long)b, maxerr, bound);
                        CHECK(maxerr <= bound);
                    }
                    /* nearest representable value (decoded from the spec) up to the slack */
                    for (int e = 0; e < t->blck_size; e++) {
                        grid g = element_grid(type, blk, e);
                        double v = x[b * t->blck_size + e], w = y[b * t->blck_size + e];
                        double excess = fabs(v - w) - grid_dist(g, v);
                        if (excess > slack(type, g)) {
                            if (worst_excess == 0)
                                fprintf(stderr, "   %s kind %d elem %lld: x %.9g -> %.9g, nearest dist %.9g\n", t->name,
                                        kind, (long long)(b * t->blck_size + e), v, w, grid_dist(g, v));
                            worst_excess = maxd(worst_excess, excess);
                        }
                    }
                }
                if (kind == 0)
                    for (int64_t i = 0; i < n; i++) {
                        sse += (double)(x[i] - y[i]) * (x[i] - y[i]);
                        ssx += (double)x[i] * x[i];
                    }
            }
        CHECK(worst_excess == 0);
        double rel = sqrt(sse / ssx);
        fprintf(stderr, "   %-13s gaussian rmse/rms = %.5f (ceiling %.3f)\n", t->name, rel, rmse_ceiling(type));
        CHECK(rel <= rmse_ceiling(type));
    }
    free(x);
    free(y);
    free(q);
}

/* ---------------------------------------------------------------- dot products */
static void test_quant_dot_ref_vs_dequant(void)
{
    const int64_t nmax = 12 * 256;
    float *w = malloc(nmax * sizeof(float)), *x = malloc(nmax * sizeof(float));
    float *wd = malloc(nmax * sizeof(float)), *xd = malloc(nmax * sizeof(float));
    uint8_t *wq = malloc(nmax * 2), *xq = malloc(nmax * 2);
    const int mult[] = {1, 3, 7, 12};   /* blocks per row: one, odd counts, many */
    for (int ti = 0; ti < N_QUANT_TYPES; ti++) {
        const edgellm_type_traits *t = edgellm_type_get_traits(quant_types[ti]);
        const edgellm_type_traits *vt = edgellm_type_get_traits(t->vec_dot_type);
        double worst = 0;
        for (int rep = 0; rep < 8; rep++) {
            const int64_t len = (int64_t)mult[rep % 4] * t->blck_size;
            fill_random(w, len, rep);
            fill_random(x, len, rep + 1);
            t->from_float_ref(w, wq, len);
            vt->from_float_ref(x, xq, len);
            t->to_float(wq, wd, len);
            vt->to_float(xq, xd, len);
            double ref = 0, mag = 0;
            for (int64_t i = 0; i < len; i++) {
                ref += (double)wd[i] * xd[i];
                mag += fabs((double)wd[i] * xd[i]);
            }
            double got = t->vec_dot_ref(len, wq, xq);
            worst = maxd(worst, fabs(got - ref) / (mag + 1e-30));
        }
        /* float result of a double sum: 2^-24 relative, plus float rounding inside the
         * dequantized values of the K-quants (d1*q - m1): 1e-6 of sum |w x| */
        if (!(worst <= 1e-6)) fprintf(stderr, "   %s: dot rel err %g\n", t->name, worst);
        CHECK(worst <= 1e-6);
    }
    free(w); free(x); free(wd); free(xd); free(wq); free(xq);
}

/* Activation quantizers: Q8_0/Q8_1 are symmetric amax/127 blocks; Q8_K keeps a float scale
 * (error <= amax/254 (1+eps)) and bsums that are the exact sums of qs. */
static void test_quant_activation_types(void)
{
    float x[512], y[512];
    edgellm_block_q8_K qk[2];
    edgellm_block_q8_1 q1[2];
    fill_random(x, 512, 2);
    edgellm_quant_q8_K_ref(x, qk, 512);
    edgellm_dequant_q8_K(qk, y, 512);
    for (int b = 0; b < 2; b++) {
        double amax = 0, maxerr = 0;
        for (int e = 0; e < 256; e++) {
            double a = fabs(x[256 * b + e]), r = fabs(x[256 * b + e] - y[256 * b + e]);
            if (a > amax) amax = a;
            if (r > maxerr) maxerr = r;
        }
        CHECK(maxerr <= amax / 254 * (1 + 1e-5));
        for (int g = 0; g < 16; g++) {
            int s = 0;
            for (int e = 0; e < 16; e++) s += qk[b].qs[16 * g + e];
            CHECK_EQ(qk[b].bsums[g], s);
        }
    }
    edgellm_quant_q8_1_ref(x, q1, 64);
    for (int b = 0; b < 2; b++) {
        int s = 0;
        for (int e = 0; e < 32; e++) s += q1[b].qs[e];
        const double ds = s * (double)edgellm_f16_to_f32(q1[b].d);
        CHECK_NEAR(edgellm_f16_to_f32(q1[b].s), ds, fabs(ds) * 2e-3);
    }
}

/* ---------------------------------------------------------------- edge blocks */
static void edge_fill(float *x, int n, int kind)
{
    for (int i = 0; i < n; i++) {
        switch (kind) {
        case 0: x[i] = 0.0f; break;                                   /* all zero           */
        case 1: x[i] = 0.75f; break;                                  /* constant +         */
        case 2: x[i] = -3.5f; break;                                  /* constant -         */
        case 3: x[i] = (i % 3 - 1) * 1e-40f; break;                   /* denormals          */
        case 4: x[i] = (float)((i % 7) - 3) * 1e-42f; break;          /* deep denormals     */
        case 5: x[i] = (float)((i % 5) - 3) * 1e-20f; break;          /* tiny               */
        case 6: x[i] = (float)((i % 9) - 5) * 1e-7f; break;           /* below half's range */
        case 7: x[i] = i % 2 ? FLT_MAX : -FLT_MAX; break;             /* ±FLT_MAX           */
        case 8: x[i] = (float)((i % 11) - 5) * 1e30f; break;          /* huge               */
        case 9: x[i] = i == 3 ? 1e6f : 0.01f * ((i % 5) - 2); break;  /* one outlier        */
        case 10: x[i] = i == 0 ? -FLT_MAX : 1.0f; break;             /* one huge negative  */
        default: x[i] = FLT_MIN * ((i % 3) - 1); break;               /* smallest normals   */
        }
    }
}
#define N_EDGE 12

static void test_quant_edge_blocks(void)
{
    float x[512], y[512];
    uint8_t q[2 * 300];
    const int extra[] = {EDGELLM_TYPE_Q8_1, EDGELLM_TYPE_Q8_K};
    for (int ti = 0; ti < N_QUANT_TYPES + 2; ti++) {
        const int type = ti < N_QUANT_TYPES ? quant_types[ti] : extra[ti - N_QUANT_TYPES];
        const edgellm_type_traits *t = edgellm_type_get_traits(type);
        const int n = 2 * t->blck_size;
        for (int kind = 0; kind < N_EDGE; kind++) {
            edge_fill(x, n, kind);
            edgellm_quant_stats st = {0, 0};
            CHECK_EQ(edgellm_quantize_row(type, x, q, n, &st), edgellm_type_row_size(type, n));
            t->to_float(q, y, n);
            int off[2], nh = half_offsets(type, off);
            bool ok = true;
            for (int b = 0; b < 2; b++) {
                for (int h = 0; h < nh; h++) {
                    uint16_t v = edgellm_rd_u16(q + b * t->type_size + off[h]);
                    if ((v & 0x7c00) == 0x7c00) ok = false;                 /* inf or NaN half */
                }
                if (type == EDGELLM_TYPE_Q8_K) {
                    float d;
                    memcpy(&d, q + b * t->type_size, 4);
                    if (!isfinite(d)) ok = false;
                }
            }
            double maxerr = 0, amax = 0;
            for (int i = 0; i < n; i++) {
                if (!isfinite(y[i])) ok = false;
                maxerr = maxd(maxerr, fabs((double)x[i] - y[i]));
                amax = maxd(amax, fabs((double)x[i]));
            }
            if (!ok) fprintf(stderr, "   %s edge kind %d: non-finite scale or value\n", t->name, kind);
            CHECK(ok);
            if (kind == 0) for (int i = 0; i < n; i++) CHECK(y[i] == 0.0f);
            /* constants are reproduced to half precision (min-types: exactly half(c)) */
            if (kind == 1 || kind == 2) CHECK(maxerr <= amax * 2e-3);
            /* denormal/tiny blocks decode to (almost) nothing: no garbage amplification.
             * Types with a half min (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K; llama.cpp-identical) can
             * miss by the block's range plus the min's quantum: at most 63 x 6e-8 (the
             * smallest half subnormal) when the scale rounds to almost nothing. */
            bool has_min = type == EDGELLM_TYPE_Q4_1 || type == EDGELLM_TYPE_Q5_1 || type == EDGELLM_TYPE_Q2_K ||
                           type == EDGELLM_TYPE_Q4_K || type == EDGELLM_TYPE_Q5_K;
            if (kind >= 3 && kind <= 6 && has_min) amax = 2 * amax + 63 * 6e-8;
            if (kind >= 3 && kind <= 6 && !(maxerr <= amax * 1.01 + 1e-30))
                fprintf(stderr, "   %s edge kind %d: max err %g, amax %g\n", t->name, kind, maxerr, amax);
            if (kind >= 3 && kind <= 6) CHECK(maxerr <= amax * 1.01 + 1e-30);
            if (kind == 11) CHECK(maxerr <= 2 * (double)FLT_MIN);
            if (kind == 7 || kind == 8) CHECK(st.n_saturated > 0 || type == EDGELLM_TYPE_Q8_K);
            if ((kind <= 6 || kind == 11) && st.n_saturated != 0)
                fprintf(stderr, "   %s edge kind %d: %llu saturated\n", t->name, kind, (unsigned long long)st.n_saturated);
            if (kind <= 6 || kind == 11) CHECK_EQ(st.n_saturated, 0);
            CHECK_EQ(st.n_values, n);
        }
    }
}

static void test_quant_row_entry_point(void)
{
    float x[256];
    uint8_t q[600];
    edgellm_quant_stats st = {0, 0};
    fill_random(x, 256, 0);
    CHECK_EQ(edgellm_quantize_row(EDGELLM_TYPE_Q4_K, x, q, 128, &st), 0);       /* not a whole block */
    CHECK_EQ(edgellm_quantize_row(EDGELLM_TYPE_IQ2_XXS, x, q, 256, &st), 0);    /* no quantizer      */
    CHECK_EQ(st.n_values, 0);
    CHECK_EQ(edgellm_quantize_row(EDGELLM_TYPE_Q8_0, x, q, 256, &st), 8 * 34);
    CHECK_EQ(edgellm_quantize_row(EDGELLM_TYPE_F16, x, q, 256, &st), 512);
    CHECK_EQ(st.n_values, 512);
    CHECK_EQ(st.n_saturated, 0);
    x[7] = 1e9f;   /* beyond F16 and Q8_0's 127*65504 */
    CHECK_EQ(edgellm_quantize_row(EDGELLM_TYPE_F16, x, q, 256, &st), 512);
    CHECK_EQ(edgellm_rd_u16(q + 14), 0x7bff);   /* saturated to 65504, not inf */
    CHECK_EQ(st.n_saturated, 1);
    CHECK_EQ(edgellm_quantize_row(EDGELLM_TYPE_Q8_0, x, q, 256, &st), 8 * 34);
    CHECK_EQ(st.n_saturated, 2);
    /* Q4_0's designed saturation: the opposite extreme needs code 16 -> 15 */
    float y[32] = {0};
    y[0] = -1.0f;
    y[1] = 1.0f;
    st = (edgellm_quant_stats){0, 0};
    edgellm_quantize_row(EDGELLM_TYPE_Q4_0, y, q, 32, &st);
    CHECK_EQ(st.n_saturated, 1);
}

/* I4 symmetric scale choice: RMSE of our search vs. the two fixed rules on gaussian rows. */
static void test_quant_group_scale_choice(void)
{
    enum { N = 128 * 256 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    uint8_t *q = malloc(N);
    fill_random(x, N, 0);
    double sse_search = 0, sse_q40 = 0, sse_a7 = 0, ssx = 0;
    edgellm_quant_i4_g128_sym_ref(x, q, N);
    edgellm_dequant_i4_g128_sym(q, y, N);
    for (int g = 0; g < N / 128; g++) {
        const float *xg = x + 128 * g;
        float amax = 0, max = 0;
        for (int i = 0; i < 128; i++)
            if (fabsf(xg[i]) > amax) { amax = fabsf(xg[i]); max = xg[i]; }
        double d8 = edgellm_f16_to_f32(edgellm_f32_to_f16(max / -8)), d7 = edgellm_f16_to_f32(edgellm_f32_to_f16(amax / 7));
        for (int i = 0; i < 128; i++) {
            double v = xg[i];
            double q8 = fmin(7, fmax(-8, rint(v / d8))), q7 = fmin(7, fmax(-7, rint(v / d7)));
            sse_q40 += (v - q8 * d8) * (v - q8 * d8);
            sse_a7 += (v - q7 * d7) * (v - q7 * d7);
            sse_search += (v - y[128 * g + i]) * (v - y[128 * g + i]);
            ssx += v * v;
        }
    }
    fprintf(stderr, "   I4_G128_SYM rmse/rms: search %.5f, signed-max/-8 %.5f, amax/7 %.5f\n", sqrt(sse_search / ssx),
            sqrt(sse_q40 / ssx), sqrt(sse_a7 / ssx));
    CHECK(sse_search <= sse_q40);
    CHECK(sse_q40 <= sse_a7);
    free(x); free(y); free(q);
}

/* ---------------------------------------------------------------- llama.cpp fixtures */
static edgellm_gguf *open_ref(const char *path)
{
    edgellm_gguf *g = NULL;
    edgellm_error err = {0};
    if (edgellm_gguf_open(path, &g, &err) != EDGELLM_OK) fprintf(stderr, "   %s\n", err.msg);
    CHECK(g != NULL);
    return g;
}

static char *tname(const edgellm_gguf_tensor *t)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "%.*s", (int)t->name.len, t->name.ptr);
    return buf;
}

/* Quantize every matrix of llama-gqa-f32 like `fixture` did and compare. Returns through
 * the pointers: blocks compared / identical, and sums of squared error (ours, theirs,
 * against the f32 original) and of squared originals. */
typedef struct { uint64_t blocks, same_blocks, tensors, values; double sse_ours, sse_theirs, ssx; } cmp_result;

static cmp_result compare_fixture(edgellm_gguf *f32, edgellm_gguf *fx, int only_type)
{
    cmp_result r = {0};
    for (int64_t i = 0; i < edgellm_gguf_n_tensors(fx); i++) {
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(fx, i);
        if (only_type >= 0 && t->type != only_type) continue;
        const edgellm_type_traits *tt = edgellm_type_get_traits(t->type);
        if (!tt || !tt->is_quantized) continue;
        const edgellm_gguf_tensor *src = edgellm_gguf_find_tensor(f32, tname(t));
        CHECK(src != NULL);
        if (!src) continue;
        CHECK_EQ(src->type, EDGELLM_TYPE_F32);
        CHECK_EQ(src->n_elements, t->n_elements);
        const int64_t ne0 = t->ne[0], rows = (int64_t)(t->n_elements / (uint64_t)ne0);
        const size_t row_bytes = edgellm_type_row_size(t->type, ne0);
        uint8_t *mine = malloc(row_bytes);
        float *y = malloc(ne0 * sizeof(float)), *z = malloc(ne0 * sizeof(float));
        for (int64_t r0 = 0; r0 < rows; r0++) {
            const float *x = (const float *)src->data + r0 * ne0;
            const uint8_t *theirs = (const uint8_t *)t->data + r0 * row_bytes;
            CHECK_EQ(edgellm_quantize_row(t->type, x, mine, ne0, NULL), row_bytes);
            for (int64_t b = 0; b < ne0 / tt->blck_size; b++) {
                r.blocks++;
                if (!memcmp(mine + b * tt->type_size, theirs + b * tt->type_size, tt->type_size)) r.same_blocks++;
            }
            tt->to_float(mine, y, ne0);
            tt->to_float(theirs, z, ne0);
            for (int64_t k = 0; k < ne0; k++) {
                r.sse_ours += (double)(x[k] - y[k]) * (x[k] - y[k]);
                r.sse_theirs += (double)(x[k] - z[k]) * (x[k] - z[k]);
                r.ssx += (double)x[k] * x[k];
            }
            r.values += (uint64_t)ne0;
        }
        r.tensors++;
        free(mine); free(y); free(z);
    }
    return r;
}

static void test_quant_llamacpp_bytes_identical(void)
{
    NEED_SHARED(f32path, REF "llama-gqa-f32.gguf");
    struct { const char *file; int type; } fx[] = {
        {REF "llama-gqa-q4_0.gguf", EDGELLM_TYPE_Q4_0}, {REF "llama-gqa-q4_1.gguf", EDGELLM_TYPE_Q4_1},
        {REF "llama-gqa-q5_0.gguf", EDGELLM_TYPE_Q5_0}, {REF "llama-gqa-q5_1.gguf", EDGELLM_TYPE_Q5_1},
        {REF "llama-gqa-q8_0.gguf", EDGELLM_TYPE_Q8_0},
    };
    edgellm_gguf *f32 = open_ref(f32path);
    if (!f32) return;
    for (size_t i = 0; i < sizeof fx / sizeof fx[0]; i++) {
        NEED_SHARED(p, fx[i].file);
        edgellm_gguf *g = open_ref(p);
        if (!g) continue;
        cmp_result r = compare_fixture(f32, g, -1);
        fprintf(stderr, "   %-5s %llu tensors, %llu/%llu blocks byte-identical to llama.cpp\n",
                edgellm_type_name(fx[i].type), (unsigned long long)r.tensors, (unsigned long long)r.same_blocks,
                (unsigned long long)r.blocks);
        CHECK_EQ(r.tensors, 16);   /* 2 layers x 7 matrices + token_embd + output */
        CHECK(r.blocks > 0);
        CHECK_EQ(r.same_blocks, r.blocks);
        edgellm_gguf_close(g);
    }
    edgellm_gguf_close(f32);
}

static void test_quant_kquant_rmse_vs_llamacpp(void)
{
    NEED_SHARED(f32path, REF "llama-gqa-f32.gguf");
    struct { const char *file; int type; } fx[] = {
        {REF "llama-gqa-q4_k.gguf", EDGELLM_TYPE_Q4_K}, {REF "llama-gqa-q5_k.gguf", EDGELLM_TYPE_Q5_K},
        {REF "llama-gqa-q6_k.gguf", EDGELLM_TYPE_Q6_K}, {REF "llama-gqa-q4_k_m.gguf", EDGELLM_TYPE_Q4_K},
        {REF "llama-gqa-q4_k_m.gguf", EDGELLM_TYPE_Q6_K},
    };
    edgellm_gguf *f32 = open_ref(f32path);
    if (!f32) return;
    for (size_t i = 0; i < sizeof fx / sizeof fx[0]; i++) {
        NEED_SHARED(p, fx[i].file);
        edgellm_gguf *g = open_ref(p);
        if (!g) continue;
        cmp_result r = compare_fixture(f32, g, fx[i].type);
        double ours = sqrt(r.sse_ours / (double)r.values), theirs = sqrt(r.sse_theirs / (double)r.values);
        fprintf(stderr, "   %-22s %-4s: rmse ours %.6e, llama.cpp %.6e (ratio %.4f); %llu/%llu blocks identical\n",
                p + strlen(p) - 21, edgellm_type_name(fx[i].type), ours, theirs, ours / theirs,
                (unsigned long long)r.same_blocks, (unsigned long long)r.blocks);
        CHECK(r.tensors > 0);
        CHECK(ours <= 1.05 * theirs);
        edgellm_gguf_close(g);
    }
    edgellm_gguf_close(f32);
}

/* Every quantized fixture tensor dequantizes to finite values; Q8_0 and Q4_0 ones lie
 * within their per-block bounds of the f32 original. */
static void test_quant_fixture_dequant(void)
{
    NEED_SHARED(f32path, REF "llama-gqa-f32.gguf");
    const char *files[] = {"llama-gqa-q4_k.gguf", "llama-gqa-q5_k.gguf", "llama-gqa-q6_k.gguf",
                           "llama-gqa-q4_k_m.gguf", "llama-gqa-q8_0.gguf", "llama-gqa-q4_0.gguf",
                           "llama-gqa-q4_1.gguf", "llama-gqa-q5_0.gguf", "llama-gqa-q5_1.gguf"};
    edgellm_gguf *f32 = open_ref(f32path);
    if (!f32) return;
    for (size_t fi = 0; fi < sizeof files / sizeof files[0]; fi++) {
        char rel[256];
        snprintf(rel, sizeof rel, REF "%s", files[fi]);
        NEED_SHARED(p, rel);
        edgellm_gguf *g = open_ref(p);
        if (!g) continue;
        uint64_t nonfinite = 0, over = 0, checked = 0;
        for (int64_t i = 0; i < edgellm_gguf_n_tensors(g); i++) {
            const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(g, i);
            const edgellm_type_traits *tt = edgellm_type_get_traits(t->type);
            CHECK(tt && tt->to_float);
            if (!tt || !tt->to_float) continue;
            float *y = malloc(t->n_elements * sizeof(float));
            tt->to_float(t->data, y, (int64_t)t->n_elements);
            for (uint64_t k = 0; k < t->n_elements; k++) nonfinite += !isfinite(y[k]);
            const edgellm_gguf_tensor *src = edgellm_gguf_find_tensor(f32, tname(t));
            if (src && (t->type == EDGELLM_TYPE_Q8_0 || t->type == EDGELLM_TYPE_Q4_0)) {
                const float *x = src->data;
                for (uint64_t b = 0; b < t->n_elements / 32; b++) {
                    double amax = 0, maxerr = 0;
                    for (int e = 0; e < 32; e++) {
                        amax = maxd(amax, fabs(x[32 * b + e]));
                        maxerr = maxd(maxerr, fabs(x[32 * b + e] - y[32 * b + e]));
                    }
                    double bound = t->type == EDGELLM_TYPE_Q8_0 ? amax / 254 + amax / 2048 : amax / 8 * (1 + 1.0 / 256);
                    over += maxerr > bound;
                    checked++;
                }
            }
            free(y);
        }
        CHECK_EQ(nonfinite, 0);
        CHECK_EQ(over, 0);
        if (checked) fprintf(stderr, "   %s: %llu blocks within bound\n", files[fi], (unsigned long long)checked);
        edgellm_gguf_close(g);
    }
    edgellm_gguf_close(f32);
}

int main(void)
{
    RUN(test_quant_layout_sizes);
    RUN(test_quant_traits_match_layout);
    RUN(test_quant_known_bytes);
    RUN(test_quant_roundtrip_random);
    RUN(test_quant_dot_ref_vs_dequant);
    RUN(test_quant_activation_types);
    RUN(test_quant_edge_blocks);
    RUN(test_quant_row_entry_point);
    RUN(test_quant_group_scale_choice);
    RUN(test_quant_llamacpp_bytes_identical);
    RUN(test_quant_kquant_rmse_vs_llamacpp);
    RUN(test_quant_fixture_dequant);
    return test_summary();
}
