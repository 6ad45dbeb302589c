/* test_kernels_simd.c — every SIMD kernel (src/kernels/x86/, src/kernels/arm/) against
 * its scalar reference (src/tensor/quant*.c, src/tensor/types.c):
 *
 *  - dot products, per variant the CPU runs (others are skipped with a message), on
 *    1..33 blocks (odd counts and every loop tail), weights from the reference quantizer
 *    and raw random blocks, and edge blocks: all-zero codes, all-ones (max-magnitude)
 *    codes, codes and sub-block scales/mins all at their extremes, activations all +127 / all -128 / alternating, tiny (subnormal half) and huge
 *    (65504) scales, rows at odd addresses.
 *    Tolerance: |fast - ref| <= (2·nb + 8)·2^-23·mag + nb·2^-120, with
 *    mag = Σ_i (|w_i| + |w0_i|)·|x_i|: w = the dequantized weights, w0 = the same blocks
 *    with their code bytes zeroed (the min/offset terms the kernels add separately),
 *    x = the dequantized activations; nb = blocks (SIMD kernels sum exact integer block
 *    sums in float, the refs in double; the absolute term covers float underflow when
 *    both scales are tiny).
 *  - activation quantizers (Q8_0/Q8_1/Q8_K): byte-identical blocks to the reference on
 *    random, tied (x.5 after scaling), signed-max-tie, zero, constant, denormal, huge,
 *    inf/NaN inputs.
 *  - dispatch: each level can be forced (edgellm_kernels_force) and the table then hands
 *    out that level's functions, tile kernels and attention kernels; EDGELLM_KERNELS=<level>
 *    in a child process.
 *  - matmul through each level: close to the ref level, bit-identical across thread
 *    counts and between a batch and token-by-token (prefill/decode identity).
 * Run with an argument "--print-level" the binary prints edgellm_kernels_name() (used by
 * the environment test). */
#include "test_util.h"
#include "kernels/arm/kernels_arm.h"
#include "kernels/cpu_features.h"
#include "kernels/dispatch.h"
#include "kernels/matmul.h"
#include "kernels/x86/kernels_x86.h"
#include "tensor/blocks.h"
#include "tensor/quant.h"
#include "tensor/types.h"
#include <float.h>

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}
static float frand(void) { return (float)((double)rnd() / 4294967296.0 * 2.0 - 1.0); }   /* [-1, 1) */

/* ------------------------------------------------------------------ the variants */
typedef struct {
    const char *level;     /* "avx2", "avx512", "neon", "dotprod" */
    int type;              /* weight type                         */
    edgellm_vec_dot_fn fn;
} dot_variant;

typedef struct {
    const char *level;
    int type;              /* Q8_0 / Q8_1 / Q8_K, F16 (KV cache)  */
    edgellm_from_float_fn fn;
} quant_variant;

typedef struct {
    const char *level;
    int type;              /* weight type                         */
    bool gfni;             /* needs GFNI besides its level        */
    edgellm_gemm_fn fn;
} gemm_variant;

#if defined(__x86_64__)
#define GROUP_ROWS(G)                                                                    \
    {"avx2", EDGELLM_TYPE_I4_G##G##_SYM, edgellm_dot_i4_g##G##_sym_q8_0_avx2},            \
    {"avx2", EDGELLM_TYPE_I4_G##G##_ASYM, edgellm_dot_i4_g##G##_asym_q8_1_avx2},          \
    {"avx2", EDGELLM_TYPE_I8_G##G##_SYM, edgellm_dot_i8_g##G##_sym_q8_0_avx2},            \
    {"avx2", EDGELLM_TYPE_I8_G##G##_ASYM, edgellm_dot_i8_g##G##_asym_q8_1_avx2},
static const dot_variant dots[] = {
    {"avx2", EDGELLM_TYPE_F32, edgellm_dot_f32_avx2},
    {"avx2", EDGELLM_TYPE_F16, edgellm_dot_f16_avx2},
    {"avx2", EDGELLM_TYPE_BF16, edgellm_dot_bf16_avx2},
    {"avx2", EDGELLM_TYPE_Q4_0, edgellm_dot_q4_0_q8_0_avx2},
    {"avx2", EDGELLM_TYPE_Q4_1, edgellm_dot_q4_1_q8_1_avx2},
    {"avx2", EDGELLM_TYPE_Q5_0, edgellm_dot_q5_0_q8_0_avx2},
    {"avx2", EDGELLM_TYPE_Q5_1, edgellm_dot_q5_1_q8_1_avx2},
    {"avx2", EDGELLM_TYPE_Q8_0, edgellm_dot_q8_0_q8_0_avx2},
    {"avx2", EDGELLM_TYPE_Q2_K, edgellm_dot_q2_K_q8_K_avx2},
    {"avx2", EDGELLM_TYPE_Q3_K, edgellm_dot_q3_K_q8_K_avx2},
    {"avx2", EDGELLM_TYPE_Q4_K, edgellm_dot_q4_K_q8_K_avx2},
    {"avx2", EDGELLM_TYPE_Q5_K, edgellm_dot_q5_K_q8_K_avx2},
    {"avx2", EDGELLM_TYPE_Q6_K, edgellm_dot_q6_K_q8_K_avx2},
    GROUP_ROWS(64) GROUP_ROWS(128) GROUP_ROWS(256)
    {"avx512", EDGELLM_TYPE_F16, edgellm_dot_f16_avx512},
    {"avx512", EDGELLM_TYPE_Q4_0, edgellm_dot_q4_0_q8_0_avx512},
    {"avx512", EDGELLM_TYPE_Q8_0, edgellm_dot_q8_0_q8_0_avx512},
    {"avx512", EDGELLM_TYPE_Q4_K, edgellm_dot_q4_K_q8_K_avx512},
    {"avx512", EDGELLM_TYPE_Q5_K, edgellm_dot_q5_K_q8_K_avx512},
    {"avx512", EDGELLM_TYPE_Q6_K, edgellm_dot_q6_K_q8_K_avx512},
};
static const quant_variant quants[] = {
    {"avx2", EDGELLM_TYPE_Q8_0, edgellm_quant_q8_0_avx2},
    {"avx2", EDGELLM_TYPE_Q8_1, edgellm_quant_q8_1_avx2},
    {"avx2", EDGELLM_TYPE_Q8_K, edgellm_quant_q8_K_avx2},
    {"avx2", EDGELLM_TYPE_F16, edgellm_f16_from_float_avx2},
};
static const char *const all_levels[] = {"ref", "scalar", "avx2", "avx512"};
static const edgellm_kernel_level all_ids[] = {EDGELLM_KERNELS_REF, EDGELLM_KERNELS_SCALAR, EDGELLM_KERNELS_AVX2,
                                               EDGELLM_KERNELS_AVX512};
static const gemm_variant gemms[] = {
    {"avx2", EDGELLM_TYPE_Q4_0, false, edgellm_gemm_q4_0_avx2},
    {"avx2", EDGELLM_TYPE_Q8_0, false, edgellm_gemm_q8_0_avx2},
    {"avx512", EDGELLM_TYPE_Q4_0, false, edgellm_gemm_q4_0_avx512},
    {"avx512", EDGELLM_TYPE_Q8_0, false, edgellm_gemm_q8_0_avx512},
    {"avx512", EDGELLM_TYPE_Q4_K, false, edgellm_gemm_q4_K_avx512},
    {"avx512", EDGELLM_TYPE_Q5_K, false, edgellm_gemm_q5_K_avx512},
    {"avx512", EDGELLM_TYPE_Q6_K, false, edgellm_gemm_q6_K_avx512},
    {"avx512", EDGELLM_TYPE_F16, false, edgellm_gemm_f16_avx512},
    {"avx512", EDGELLM_TYPE_Q4_K, true, edgellm_gemm_q4_K_avx512_gfni},
    {"avx512", EDGELLM_TYPE_Q5_K, true, edgellm_gemm_q5_K_avx512_gfni},
    {"avx512", EDGELLM_TYPE_Q6_K, true, edgellm_gemm_q6_K_avx512_gfni},
};
#elif defined(__aarch64__)
static const dot_variant dots[] = {
    {"neon", EDGELLM_TYPE_F32, edgellm_dot_f32_neon},
    {"neon", EDGELLM_TYPE_F16, edgellm_dot_f16_neon},
    {"neon", EDGELLM_TYPE_Q4_0, edgellm_dot_q4_0_q8_0_neon},
    {"neon", EDGELLM_TYPE_Q8_0, edgellm_dot_q8_0_q8_0_neon},
    {"neon", EDGELLM_TYPE_Q4_K, edgellm_dot_q4_K_q8_K_neon},
    {"neon", EDGELLM_TYPE_Q6_K, edgellm_dot_q6_K_q8_K_neon},
    {"dotprod", EDGELLM_TYPE_Q4_0, edgellm_dot_q4_0_q8_0_dotprod},
    {"dotprod", EDGELLM_TYPE_Q8_0, edgellm_dot_q8_0_q8_0_dotprod},
    {"dotprod", EDGELLM_TYPE_Q4_K, edgellm_dot_q4_K_q8_K_dotprod},
    {"dotprod", EDGELLM_TYPE_Q6_K, edgellm_dot_q6_K_q8_K_dotprod},
};
static const quant_variant quants[] = {
    {"neon", EDGELLM_TYPE_Q8_0, edgellm_quant_q8_0_neon},
    {"neon", EDGELLM_TYPE_Q8_1, edgellm_quant_q8_1_neon},
    {"neon", EDGELLM_TYPE_Q8_K, edgellm_quant_q8_K_neon},
};
static const char *const all_levels[] = {"ref", "scalar", "neon", "dotprod"};
static const edgellm_kernel_level all_ids[] = {EDGELLM_KERNELS_REF, EDGELLM_KERNELS_SCALAR, EDGELLM_KERNELS_NEON,
                                               EDGELLM_KERNELS_DOTPROD};
static const gemm_variant gemms[] = {
    {"dotprod", EDGELLM_TYPE_Q4_0, false, edgellm_gemm_q4_0_dotprod},
    {"dotprod", EDGELLM_TYPE_Q8_0, false, edgellm_gemm_q8_0_dotprod},
    {"dotprod", EDGELLM_TYPE_Q4_K, false, edgellm_gemm_q4_K_dotprod},
    {"dotprod", EDGELLM_TYPE_Q6_K, false, edgellm_gemm_q6_K_dotprod},
    {"neon", EDGELLM_TYPE_Q4_K, false, edgellm_gemm_q4_K_neon},
    {"neon", EDGELLM_TYPE_Q6_K, false, edgellm_gemm_q6_K_neon},
};
#else
static const dot_variant dots[] = {{NULL, 0, NULL}};
static const quant_variant quants[] = {{NULL, 0, NULL}};
static const char *const all_levels[] = {"ref", "scalar"};
static const edgellm_kernel_level all_ids[] = {EDGELLM_KERNELS_REF, EDGELLM_KERNELS_SCALAR};
static const gemm_variant gemms[] = {{NULL, 0, false, NULL}};
#endif
#define N_GEMMS (int)(sizeof gemms / sizeof gemms[0])
#define N_DOTS (int)(sizeof dots / sizeof dots[0])
#define N_QUANTS (int)(sizeof quants / sizeof quants[0])
#define N_LEVELS (int)(sizeof all_levels / sizeof all_levels[0])

static bool cpu_runs(const char *level)
{
    const edgellm_cpu_features *f = edgellm_cpu_get_features();
    if (!level) return false;
    if (!strcmp(level, "avx2")) return f->avx2;
    if (!strcmp(level, "avx512")) return f->avx512;
    if (!strcmp(level, "neon")) return f->neon;
    if (!strcmp(level, "dotprod")) return f->neon && f->dotprod;
    return true;   /* ref, scalar */
}

/* ------------------------------------------------------------ block construction */

/* Where the code bytes of one block lie (zeroing them leaves the min/offset terms). */
static void code_bytes(int type, size_t *off, size_t *len)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(type);
    *off = 0;
    *len = t->type_size;
    switch (type) {
    case EDGELLM_TYPE_Q4_0: case EDGELLM_TYPE_Q5_0: case EDGELLM_TYPE_Q8_0: *off = 2; break;
    case EDGELLM_TYPE_Q4_1: case EDGELLM_TYPE_Q5_1: *off = 4; break;
    case EDGELLM_TYPE_Q2_K: *off = 16; *len = 16 + 64; break;         /* qs only (d, dmin at the end) */
    case EDGELLM_TYPE_Q3_K: *len = 96; break;                         /* hmask + qs                   */
    case EDGELLM_TYPE_Q4_K: case EDGELLM_TYPE_Q5_K: *off = 16; break;
    case EDGELLM_TYPE_Q6_K: *len = 192; break;                        /* ql + qh                      */
    default:
        if (type >= 1000) *off = (type - 1000) % 6 >= 3 ? 4 : 2;     /* asym ids 1003-5, 1009-11 */
        break;
    }
    *len -= *off;
}

static void put_half(uint8_t *p, uint16_t h) { memcpy(p, &h, 2); }

/* Byte offsets of the half scales of a block (d, and m/dmin when present; -1 if none). */
static void scale_offsets(int type, int *d_off, int *m_off)
{
    *m_off = -1;
    switch (type) {
    case EDGELLM_TYPE_Q2_K: *d_off = 80; *m_off = 82; break;
    case EDGELLM_TYPE_Q3_K: *d_off = 108; break;
    case EDGELLM_TYPE_Q4_K: case EDGELLM_TYPE_Q5_K: *d_off = 0; *m_off = 2; break;
    case EDGELLM_TYPE_Q6_K: *d_off = 208; break;
    case EDGELLM_TYPE_Q4_1: case EDGELLM_TYPE_Q5_1: *d_off = 0; *m_off = 2; break;
    default:
        *d_off = 0;
        if (type >= 1000 && (type - 1000) % 6 >= 3) *m_off = 2;
        break;
    }
}

/* Weight rows. mode 0: reference quantizer of random floats; 1: random bytes with sane
 * half scales; 2: codes all zero; 3: codes all 0xFF; 4: random codes, tiny scales
 * (half 0x0001); 5: random codes, huge scales (65504); 6: every byte but the half scales
 * 0xFF (K-quants: codes and 6-bit sub-block scales and mins at their maximum; Q6_K:
 * codes 63 with int8 scales -128). Float types: mode picks the magnitude of random
 * values. */
static void make_weights(int type, int64_t n, uint8_t *w, int mode)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(type);
    const int64_t nb = n / t->blck_size;
    if (!t->is_quantized) {
        float *tmp = malloc((size_t)n * 4);
        const float mag = mode == 4 ? 1e-6f : mode == 5 ? 1e4f : 1.0f;
        for (int64_t i = 0; i < n; i++) tmp[i] = frand() * mag;
        t->from_float_ref(tmp, w, n);
        free(tmp);
        return;
    }
    if (mode == 0) {
        float *tmp = malloc((size_t)n * 4);
        for (int64_t i = 0; i < n; i++) tmp[i] = frand() * (1.0f + (float)(i % 7));
        t->from_float_ref(tmp, w, n);
        free(tmp);
        return;
    }
    size_t off, len;
    int d_off, m_off;
    code_bytes(type, &off, &len);
    scale_offsets(type, &d_off, &m_off);
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *blk = w + (size_t)b * t->type_size;
        for (size_t i = 0; i < t->type_size; i++) blk[i] = (uint8_t)rnd();
        if (mode == 2) memset(blk + off, 0, len);
        if (mode == 3) memset(blk + off, 0xff, len);
        if (mode == 6) memset(blk, 0xff, t->type_size);
        if (mode == 6 && type == EDGELLM_TYPE_Q6_K) memset(blk + 192, 0x80, 16);   /* scales -128 */
        uint16_t d = edgellm_f32_to_f16(0.01f + 0.02f * (frand() + 1)), m = edgellm_f32_to_f16(0.05f * frand());
        if (mode == 4) d = m = 0x0001;
        if (mode == 5) { d = 0x7bff; m = 0xfbff; }
        put_half(blk + d_off, d);
        if (m_off >= 0) put_half(blk + m_off, m);
    }
}

/* Activation rows for weight type `type`: float x (F32 vec_dot_type) or blocks of the
 * activation type. mode 0: reference quantizer of random floats; 1: random codes;
 * 2: all +127; 3: all -128; 4: alternating ±127/-128; 5: random codes, tiny scale;
 * 6: random codes, huge scale. */
static void make_acts(int vt, int64_t n, uint8_t *x, int mode)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(vt);
    if (vt == EDGELLM_TYPE_F32) {
        float *f = (float *)x;
        for (int64_t i = 0; i < n; i++) f[i] = frand() * (mode == 5 ? 1e-30f : mode == 6 ? 1e20f : 1.0f);
        return;
    }
    if (mode == 0) {
        float *tmp = malloc((size_t)n * 4);
        for (int64_t i = 0; i < n; i++) tmp[i] = frand() * 3;
        t->from_float_ref(tmp, x, n);
        free(tmp);
        return;
    }
    const int64_t nb = n / t->blck_size;
    for (int64_t b = 0; b < nb; b++) {
        int8_t *qs;
        int nq;
        if (vt == EDGELLM_TYPE_Q8_K) {
            edgellm_block_q8_K *k = (edgellm_block_q8_K *)x + b;
            qs = k->qs;
            nq = 256;
            k->d = mode == 5 ? 1e-35f : mode == 6 ? 1e20f : 0.01f;
        } else {
            uint8_t *blk = x + (size_t)b * t->type_size;
            qs = (int8_t *)(blk + (vt == EDGELLM_TYPE_Q8_1 ? 4 : 2));
            nq = 32;
            put_half(blk, mode == 5 ? 0x0001 : mode == 6 ? 0x7bff : edgellm_f32_to_f16(0.02f));
            if (vt == EDGELLM_TYPE_Q8_1) put_half(blk + 2, 0);   /* s: unused by every dot */
        }
        for (int i = 0; i < nq; i++) {
            int v = (int)(rnd() & 255) - 128;
            if (mode == 2) v = 127;
            if (mode == 3) v = -128;
            if (mode == 4) v = i & 1 ? -128 : 127;
            qs[i] = (int8_t)v;
        }
        if (vt == EDGELLM_TYPE_Q8_K) {
            edgellm_block_q8_K *k = (edgellm_block_q8_K *)x + b;
            for (int g = 0; g < 16; g++) {
                int s = 0;
                for (int i = 0; i < 16; i++) s += k->qs[16 * g + i];
                k->bsums[g] = (int16_t)s;
            }
        }
    }
}

/* mag = Σ (|w| + |w0|)·|x|, see the file comment. */
static double magnitude(int type, int64_t n, const uint8_t *w, const uint8_t *x)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(type);
    const edgellm_type_traits *vt = edgellm_type_get_traits(t->vec_dot_type);
    const size_t wb = edgellm_type_row_size(type, n);
    float *wf = malloc((size_t)n * 4), *w0f = malloc((size_t)n * 4), *xf = malloc((size_t)n * 4);
    uint8_t *w0 = malloc(wb);
    memcpy(w0, w, wb);
    if (t->is_quantized) {
        size_t off, len;
        code_bytes(type, &off, &len);
        for (int64_t b = 0; b < n / t->blck_size; b++) memset(w0 + (size_t)b * t->type_size + off, 0, len);
    } else {
        memset(w0, 0, wb);
    }
    t->to_float(w, wf, n);
    t->to_float(w0, w0f, n);
    vt->to_float(x, xf, n);
    double mag = 0;
    for (int64_t i = 0; i < n; i++) mag += (fabs((double)wf[i]) + fabs((double)w0f[i])) * fabs((double)xf[i]);
    free(wf); free(w0f); free(xf); free(w0);
    return mag;
}

/* ------------------------------------------------------------------ dot products */

static int dot_case(const dot_variant *v, int64_t nb, int wmode, int xmode, int misalign, double *worst)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(v->type);
    const int64_t n = nb * (t->blck_size == 1 ? 32 : t->blck_size) + (t->blck_size == 1 ? nb % 7 : 0);
    const size_t wb = edgellm_type_row_size(v->type, n), xb = edgellm_type_row_size(t->vec_dot_type, n);
    uint8_t *wbuf = malloc(wb + 64), *xbuf = malloc(xb + 64);
    /* misaligned for SIMD (not 16/32-byte aligned) but aligned for the element and block
     * fields (floats, the f16/f32 scales of Q8_0/Q8_K), as rows are in GGUF (alignment >= 8)
     * and in scratch buffers: less is UB, which the sanitizer build reports in the _ref code */
    uint8_t *w = wbuf + (misalign ? 4 : 0), *x = xbuf + (misalign ? 4 : 0);
    make_weights(v->type, n, w, wmode);
    make_acts(t->vec_dot_type, n, x, xmode);
    const double ref = t->vec_dot_ref(n, w, x);
    const double fast = v->fn(n, w, x);
    const double mag = magnitude(v->type, n, w, x);
    const double tol = (2.0 * (double)nb + 8) * 0x1p-23 * mag + (double)nb * 0x1p-120;
    const double err = fabs(fast - ref);
    int bad = !(err <= tol);
    if (bad)
        fprintf(stderr, "   %s %s nb=%lld wmode=%d xmode=%d: fast %.9g ref %.9g |diff| %g tol %g\n", v->level,
                t->name, (long long)nb, wmode, xmode, fast, ref, err, tol);
    if (mag > 1e-30 && err / (0x1p-23 * mag) > *worst) *worst = err / (0x1p-23 * mag);   /* normal range */
    free(wbuf); free(xbuf);
    return bad;
}

static void test_simd_dots_match_ref(void)
{
    static const int64_t nbs[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 33};
    for (int k = 0; k < N_DOTS; k++) {
        const dot_variant *v = &dots[k];
        if (!v->fn) continue;
        const edgellm_type_traits *t = edgellm_type_get_traits(v->type);
        if (!cpu_runs(v->level)) {
            fprintf(stderr, "   SKIP: %s %s (this CPU lacks %s)\n", v->level, t->name, v->level);
            continue;
        }
        int bad = 0, cases = 0;
        double worst = 0;
        for (size_t a = 0; a < sizeof nbs / sizeof nbs[0]; a++) {
            const int64_t nb = t->blck_size == 256 || t->blck_size > 32 ? (nbs[a] > 9 ? nbs[a] / 3 : nbs[a]) : nbs[a];
            for (int wm = 0; wm <= 6; wm++)
                for (int xm = 0; xm <= 6; xm++) {
                    if (t->vec_dot_type == EDGELLM_TYPE_F32 && xm >= 1 && xm <= 4) continue;
                    bad += dot_case(v, nb, wm, xm, (int)(a & 1), &worst);
                    cases++;
                }
        }
        fprintf(stderr, "   %-7s %-13s %4d cases, worst |fast-ref| = %.2f·2^-23·mag\n", v->level, t->name, cases, worst);
        CHECK_EQ(bad, 0);
    }
}

/* --------------------------------------------------------- activation quantizers */

/* Input rows of 256·nb floats. kind 0: random normal-ish; 1: ties (k + 0.5 with amax
 * 127); 2: zero; 3: constant; 4: denormal; 5: huge (beyond half range); 6: ±max ties;
 * 7: some inf/NaN; 8: wide dynamic range per element. */
static void make_float_row(float *x, int64_t n, int kind)
{
    for (int64_t i = 0; i < n; i++) {
        float v = frand() * 4;
        switch (kind) {
        case 1: v = (i % 32 == 0) ? 127.0f : (float)((int)(rnd() % 253) - 126) + 0.5f; break;
        case 2: v = 0; break;
        case 3: v = -0.75f; break;
        case 4: v = frand() * 1e-40f; break;
        case 5: v = frand() * 3e38f; break;
        case 6: v = (i % 5 == 0) ? ((i / 5) & 1 ? 2.5f : -2.5f) : frand(); break;
        case 7: v = i % 41 == 3 ? (i & 1 ? INFINITY : NAN) : frand(); break;
        case 8: v = frand() * ldexpf(1.0f, (int)(rnd() % 60) - 30); break;
        default: break;
        }
        x[i] = v;
    }
}

static void test_simd_quantizers_byte_identical(void)
{
    for (int k = 0; k < N_QUANTS; k++) {
        const quant_variant *v = &quants[k];
        if (!v->fn) continue;
        const edgellm_type_traits *t = edgellm_type_get_traits(v->type);
        if (!cpu_runs(v->level)) {
            fprintf(stderr, "   SKIP: %s quantize %s (this CPU lacks %s)\n", v->level, t->name, v->level);
            continue;
        }
        int bad = 0;
        for (int kind = 0; kind <= 8; kind++)
            for (int64_t nb = 1; nb <= 9; nb += 2) {
                const int64_t n = nb * 256;
                const size_t bytes = edgellm_type_row_size(v->type, n);
                float *x = malloc((size_t)n * 4);
                uint8_t *a = malloc(bytes), *b = malloc(bytes);
                make_float_row(x, n, kind);
                memset(a, 0x5a, bytes);
                memset(b, 0xa5, bytes);
                t->from_float_ref(x, a, n);
                v->fn(x, b, n);
                if (memcmp(a, b, bytes)) {
                    size_t i = 0;
                    while (a[i] == b[i]) i++;
                    fprintf(stderr, "   %s %s kind=%d nb=%lld: byte %zu (block %zu) differs: %02x vs %02x\n", v->level,
                            t->name, kind, (long long)nb, i, i / t->type_size, a[i], b[i]);
                    bad++;
                }
                free(x); free(a); free(b);
            }
        fprintf(stderr, "   %-7s quantize %-5s: %s\n", v->level, t->name, bad ? "DIFFERS" : "byte-identical");
        CHECK_EQ(bad, 0);
    }
}

/* ----------------------------------------------------------------------- dispatch */

static void test_dispatch_levels(void)
{
    const char *start = edgellm_kernels_name();
    for (int l = 0; l < N_LEVELS; l++) {
        const bool ok = edgellm_kernels_force(all_levels[l]);
        CHECK(ok == cpu_runs(all_levels[l]));
        if (!ok) { fprintf(stderr, "   SKIP: level %s (not on this CPU)\n", all_levels[l]); continue; }
        CHECK(!strcmp(edgellm_kernels_name(), all_levels[l]));
        /* the table hands out this level's own kernels, or a lower level's */
        for (int k = 0; k < N_DOTS; k++) {
            if (!dots[k].fn) continue;
            edgellm_vec_dot_fn got = edgellm_kernels_vec_dot(dots[k].type);
            if (!strcmp(dots[k].level, all_levels[l])) CHECK(got == dots[k].fn);
            if (l == 0) CHECK(got == edgellm_type_get_traits(dots[k].type)->vec_dot_ref);
        }
        for (int k = 0; k < N_QUANTS; k++) {
            if (!quants[k].fn) continue;
            edgellm_from_float_fn got = edgellm_kernels_from_float(quants[k].type);
            if (l < 2) CHECK(got == edgellm_type_get_traits(quants[k].type)->from_float_ref);
            if (!strcmp(quants[k].level, all_levels[l])) CHECK(got == quants[k].fn);
        }
    }
    CHECK(!edgellm_kernels_force("no-such-level"));
    CHECK(edgellm_kernels_force(NULL));
    CHECK(!strcmp(edgellm_kernels_name(), start));
    fprintf(stderr, "   default level: %s\n", start);
}

/* Per level: its id, its own tile kernels (the GFNI twins where the CPU has GFNI; rows that
 * are not whole blocks get none; the levels below none), packed activation sizes over all
 * levels, and attention for each KV cache type with the level's dot and dequantization. */
static void test_dispatch_gemm_and_attend(void)
{
    static const int gemm_types[] = {EDGELLM_TYPE_F32, EDGELLM_TYPE_F16, EDGELLM_TYPE_Q4_0, EDGELLM_TYPE_Q8_0,
                                     EDGELLM_TYPE_Q4_K, EDGELLM_TYPE_Q5_K, EDGELLM_TYPE_Q6_K};
    const bool gfni = edgellm_cpu_get_features()->gfni;
    for (int l = 0; l < N_LEVELS; l++) {
        if (!edgellm_kernels_force(all_levels[l])) continue;
        CHECK_EQ((int)edgellm_kernels_level(), (int)all_ids[l]);
        for (size_t i = 0; i < sizeof gemm_types / sizeof gemm_types[0]; i++) {
            edgellm_gemm_fn want = NULL;
            for (int g = 0; g < N_GEMMS; g++) {
                if (!gemms[g].fn || strcmp(gemms[g].level, all_levels[l]) || gemms[g].type != gemm_types[i]) continue;
                if (gemms[g].gfni && !gfni) continue;
                if (!want || gemms[g].gfni) want = gemms[g].fn;
            }
            const edgellm_gemm_kernel *got = edgellm_kernels_gemm(gemm_types[i], 4096);
            CHECK((got ? got->gemm : NULL) == want);
            /* rows of whole blocks only; F16's block is one element */
            CHECK(edgellm_kernels_gemm(gemm_types[i], 4096 + 16) == (gemm_types[i] == EDGELLM_TYPE_F16 ? got : NULL));
        }
        static const int kv_types[] = {EDGELLM_TYPE_F32, EDGELLM_TYPE_F16, EDGELLM_TYPE_Q8_0};
        for (size_t i = 0; i < sizeof kv_types / sizeof kv_types[0]; i++) {
            const edgellm_attend_kernel a = edgellm_kernels_attend(kv_types[i]);
            CHECK(a.run != NULL);
            CHECK(a.dot == edgellm_kernels_vec_dot(kv_types[i] == EDGELLM_TYPE_F16 ? EDGELLM_TYPE_F16 : EDGELLM_TYPE_F32));
            CHECK(a.to_float == edgellm_kernels_to_float(kv_types[i]));
        }
        CHECK(edgellm_kernels_attend(EDGELLM_TYPE_Q4_0).run == NULL);
        CHECK(edgellm_kernels_attend(-1).run == NULL);
    }
    edgellm_kernels_force(NULL);
#if defined(__x86_64__)
    CHECK_EQ(edgellm_kernels_gemm_packed_bytes(EDGELLM_TYPE_Q4_0, 4096), (size_t)(4096 / 32 / 16) * EDGELLM_GEMM_Q8_0_XG);
#else
    CHECK_EQ(edgellm_kernels_gemm_packed_bytes(EDGELLM_TYPE_Q4_0, 4096), (size_t)0);
#endif
    CHECK_EQ(edgellm_kernels_gemm_packed_bytes(EDGELLM_TYPE_Q4_K, 4096), (size_t)0);
    CHECK_EQ(edgellm_kernels_gemm_packed_bytes(EDGELLM_TYPE_F32, 4096), (size_t)0);
}

/* EDGELLM_KERNELS is read once per process: check it in children. */
static void test_dispatch_env(void)
{
    char cmd[4200], out[256], self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) { fprintf(stderr, "   SKIP: no /proc/self/exe\n"); test_skipped++; return; }
    self[len] = 0;
    /* a cross build runs its children through the emulator scripts/test-arm.sh names */
    const char *emu = getenv("EDGELLM_TEST_EMULATOR") ? getenv("EDGELLM_TEST_EMULATOR") : "";
    snprintf(cmd, sizeof cmd, "%s '%s' --print-level", emu, self);
    if (run_capture(cmd, out, sizeof out) != 0) {   /* e.g. a cross binary that only runs under qemu */
        fprintf(stderr, "   SKIP: cannot run a child of this binary\n");
        test_skipped++;
        return;
    }
    for (int l = 0; l < N_LEVELS; l++) {
        snprintf(cmd, sizeof cmd, "EDGELLM_KERNELS=%s %s '%s' --print-level", all_levels[l], emu, self);
        CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
        out[strcspn(out, "\n")] = 0;
        /* a level the CPU lacks is capped to the best one it runs */
        if (cpu_runs(all_levels[l])) CHECK(!strcmp(out, all_levels[l]));
        else CHECK(strcmp(out, all_levels[l]) != 0);
        fprintf(stderr, "   EDGELLM_KERNELS=%s -> %s\n", all_levels[l], out);
    }
}

/* -------------------------------------------------------------------------- matmul */

static void matmul_level_case(int type, int64_t rows, int64_t cols, int64_t n)
{
    const size_t rb = edgellm_type_row_size(type, cols);
    uint8_t *wd = malloc(rb * (size_t)rows);
    float *x = malloc((size_t)(n * cols) * 4), *yref = malloc((size_t)(n * rows) * 4);
    float *y1 = malloc((size_t)(n * rows) * 4), *y2 = malloc((size_t)(n * rows) * 4);
    make_weights(type, cols * rows, wd, 0);
    for (int64_t i = 0; i < n * cols; i++) x[i] = frand();
    edgellm_tensor W = {wd, type, cols, rows, rb, NULL};
    const size_t scratch_size = edgellm_matmul_scratch_size(&W, n);
    void *scratch = scratch_size ? malloc(scratch_size) : NULL;
    edgellm_kernels_force("ref");
    edgellm_matmul(NULL, yref, &W, x, n, scratch);
    double ymax = 0;
    for (int64_t i = 0; i < n * rows; i++) ymax = fabs(yref[i]) > ymax ? fabs(yref[i]) : ymax;
    edgellm_threadpool *pool = NULL;
    CHECK_EQ(edgellm_threadpool_new(3, &pool, NULL), EDGELLM_OK);
    for (int l = 1; l < N_LEVELS; l++) {
        if (!edgellm_kernels_force(all_levels[l])) continue;
        CHECK(edgellm_matmul_supported(&W));
        edgellm_matmul(NULL, y1, &W, x, n, scratch);
        int far = 0;
        /* activations are quantized by a byte-identical quantizer, so only the dot's float
         * summation differs from the ref: relative 1e-4 of the largest output is generous */
        for (int64_t i = 0; i < n * rows; i++) far += !(fabs(y1[i] - yref[i]) <= 1e-4 * ymax + 1e-30);
        CHECK_EQ(far, 0);
        edgellm_matmul(pool, y2, &W, x, n, scratch);
        CHECK(!memcmp(y1, y2, (size_t)(n * rows) * 4));
        for (int64_t t = 0; t < n; t++) edgellm_matmul(pool, y2 + t * rows, &W, x + t * cols, 1, scratch);
        CHECK(!memcmp(y1, y2, (size_t)(n * rows) * 4));
        if (far) fprintf(stderr, "   %s level %s: %d outputs off\n", edgellm_type_get_traits(type)->name, all_levels[l], far);
    }
    edgellm_kernels_force(NULL);
    edgellm_threadpool_free(pool);
    free(wd); free(x); free(yref); free(y1); free(y2); free(scratch);
}

static void test_matmul_every_level(void)
{
    static const int types[] = {EDGELLM_TYPE_F32, EDGELLM_TYPE_F16, EDGELLM_TYPE_Q4_0, EDGELLM_TYPE_Q8_0,
                                EDGELLM_TYPE_Q4_1, EDGELLM_TYPE_Q5_0, EDGELLM_TYPE_Q5_1, EDGELLM_TYPE_Q2_K,
                                EDGELLM_TYPE_Q3_K, EDGELLM_TYPE_Q4_K, EDGELLM_TYPE_Q5_K, EDGELLM_TYPE_Q6_K,
                                EDGELLM_TYPE_I4_G128_SYM, EDGELLM_TYPE_I4_G128_ASYM, EDGELLM_TYPE_I8_G64_SYM,
                                EDGELLM_TYPE_I8_G256_ASYM};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) matmul_level_case(types[i], 67, 512, 5);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--print-level")) {
        printf("%s\n", edgellm_kernels_name());
        return 0;
    }
    const edgellm_cpu_features *f = edgellm_cpu_get_features();
    fprintf(stderr, "cpu: avx2=%d avx512=%d neon=%d dotprod=%d; EDGELLM_KERNELS=%s\n", f->avx2, f->avx512, f->neon,
            f->dotprod, getenv("EDGELLM_KERNELS") ? getenv("EDGELLM_KERNELS") : "(unset)");
    RUN(test_simd_dots_match_ref);
    RUN(test_simd_quantizers_byte_identical);
    RUN(test_dispatch_levels);
    RUN(test_dispatch_gemm_and_attend);
    RUN(test_dispatch_env);
    RUN(test_matmul_every_level);
    return test_summary();
}
