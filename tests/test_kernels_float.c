/* test_kernels_float.c — float kernels against their references:
 *  - the branch-free half->float used by the fast F16 dot equals edgellm_f16_to_f32 for all
 *    65536 halves (bit for bit);
 *  - the fast F32/F16/BF16 dots (src/kernels/dot_float_scalar.c) against the double-accumulating
 *    _ref dots of src/tensor/types.c on lengths that reach every tail (0..1025), within the
 *    float summation bound (n/8 + 4)·2^-23·Σ|w·x| (8 lanes: depth n/8 + 3 additions plus the
 *    product rounding);
 *  - dispatch: EDGELLM_KERNELS=ref semantics via edgellm_kernels_set_ref;
 *  - edgellm_matmul against a double reference, bit-identical across 1,2,3,7,64 threads and
 *    across batch sizes (a row gives the same bits alone or in a batch, over several token
 *    blocks);
 *  - rmsnorm, softmax, rope (both layouts), swiglu and attention against direct double
 *    formulas;
 *  - edgellm_expf_vec (the exp of swiglu) within 3.5 ulp of double exp over its range. */
#include "test_util.h"
#include "kernels/dispatch.h"
#include "kernels/dot_float.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void)   /* uniform in [-1, 1) */
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void test_f16_inline_matches_reference_all_halves(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float a = edgellm_f16_to_f32_inline((uint16_t)h), b = edgellm_f16_to_f32((uint16_t)h);
        uint32_t ua, ub;
        memcpy(&ua, &a, 4);
        memcpy(&ub, &b, 4);
        if (ua != ub) { if (bad < 5) fprintf(stderr, "   half %04x: %08x vs %08x\n", h, ua, ub); bad++; }
    }
    CHECK_EQ(bad, 0);
}

/* Fill a weight row of `type` from floats; returns the exact float values stored. */
static void make_row(int type, int64_t n, void *w, float *wf)
{
    for (int64_t i = 0; i < n; i++) wf[i] = frand() * 2.0f;
    if (type == EDGELLM_TYPE_F32) memcpy(w, wf, (size_t)n * 4);
    for (int64_t i = 0; i < n; i++) {
        if (type == EDGELLM_TYPE_F16) { ((uint16_t *)w)[i] = edgellm_f32_to_f16(wf[i]); wf[i] = edgellm_f16_to_f32(((uint16_t *)w)[i]); }
        if (type == EDGELLM_TYPE_BF16) { ((uint16_t *)w)[i] = edgellm_f32_to_bf16(wf[i]); wf[i] = edgellm_bf16_to_f32(((uint16_t *)w)[i]); }
    }
}

static void test_fast_dots_match_ref_on_all_tails(void)
{
    int types[] = {EDGELLM_TYPE_F32, EDGELLM_TYPE_F16, EDGELLM_TYPE_BF16};
    edgellm_vec_dot_fn fast[] = {edgellm_dot_f32_fast, edgellm_dot_f16_fast, edgellm_dot_bf16_fast};
    int64_t maxn = 1025;
    /* +1 element so that an odd byte offset can be tested (rows inside a mapping need not
     * be aligned) */
    uint8_t *wbuf = malloc((size_t)maxn * 4 + 8);
    float *wf = malloc((size_t)maxn * 4), *x = malloc((size_t)maxn * 4);
    double worst = 0;
    for (int ti = 0; ti < 3; ti++) {
        const edgellm_type_traits *tr = edgellm_type_get_traits(types[ti]);
        for (int64_t n = 0; n <= maxn; n += (n < 70 ? 1 : 37)) {
            /* vary alignment: rows in a mapping are only element-aligned */
            void *w = wbuf + (n & 1 ? (types[ti] == EDGELLM_TYPE_F32 ? 4 : 2) : 0);
            make_row(types[ti], n, w, wf);
            double mag = 0;
            for (int64_t i = 0; i < n; i++) { x[i] = frand(); mag += fabs((double)wf[i] * x[i]); }
            float r = tr->vec_dot_ref(n, w, x), f = fast[ti](n, w, x);
            double bound = ((double)n / 8 + 4) * 0x1p-23 * mag + 1e-30;
            double err = fabs((double)f - r);
            if (err > bound) fprintf(stderr, "   %s n=%lld: fast %.9g ref %.9g bound %g\n", tr->name, (long long)n, f, r, bound);
            CHECK(err <= bound);
            if (mag > 0) worst = fmax(worst, err / (0x1p-23 * mag));
        }
    }
    fprintf(stderr, "   worst |fast - ref| = %.2f ulp(sum |w x|)\n", worst);
    free(wbuf); free(wf); free(x);
}

static void test_dispatch_ref_switch(void)
{
    edgellm_kernels_set_ref(true);
    CHECK(!strcmp(edgellm_kernels_name(), "ref"));
    CHECK(edgellm_kernels_vec_dot(EDGELLM_TYPE_F32) == edgellm_type_get_traits(EDGELLM_TYPE_F32)->vec_dot_ref);
    CHECK(edgellm_kernels_vec_dot(EDGELLM_TYPE_F16) == edgellm_type_get_traits(EDGELLM_TYPE_F16)->vec_dot_ref);
    CHECK(edgellm_kernels_force("scalar"));                /* the portable dots of dot_float_scalar.c */
    CHECK(edgellm_kernels_vec_dot(EDGELLM_TYPE_F32) == edgellm_dot_f32_fast);
    CHECK(edgellm_kernels_vec_dot(EDGELLM_TYPE_F16) == edgellm_dot_f16_fast);
    CHECK(edgellm_kernels_vec_dot(EDGELLM_TYPE_BF16) == edgellm_dot_bf16_fast);
    edgellm_kernels_set_ref(false);                         /* back to the default level */
    CHECK(edgellm_kernels_vec_dot(-5) == NULL);
    CHECK(edgellm_kernels_can_matmul(EDGELLM_TYPE_F16));
    CHECK(!edgellm_kernels_can_matmul(EDGELLM_TYPE_I32));
}

/* W: rows × cols of `type`; n tokens. Compares against double sums, then checks that thread
 * counts and batch composition do not change a single bit. */
static void matmul_case(int type, int64_t rows, int64_t cols, int64_t n)
{
    size_t rb = edgellm_type_row_size(type, cols);
    uint8_t *wd = malloc(rb * (size_t)rows);
    float *wf = malloc((size_t)(rows * cols) * 4), *x = malloc((size_t)(n * cols) * 4);
    float *y1 = malloc((size_t)(n * rows) * 4), *y2 = malloc((size_t)(n * rows) * 4);
    for (int64_t r = 0; r < rows; r++) make_row(type, cols, wd + r * rb, wf + r * cols);
    for (int64_t i = 0; i < n * cols; i++) x[i] = frand();
    edgellm_tensor W = {wd, type, cols, rows, rb, NULL};
    CHECK(edgellm_matmul_supported(&W));
    CHECK_EQ(edgellm_matmul_scratch_size(&W, n), 0);   /* float weights read x directly */
    edgellm_matmul(NULL, y1, &W, x, n, NULL);
    int bad = 0;
    for (int64_t t = 0; t < n; t++)
        for (int64_t r = 0; r < rows; r++) {
            double s = 0, mag = 0;
            for (int64_t i = 0; i < cols; i++) { s += (double)wf[r * cols + i] * x[t * cols + i]; mag += fabs((double)wf[r * cols + i] * x[t * cols + i]); }
            if (fabs(y1[t * rows + r] - s) > ((double)cols / 8 + 4) * 0x1p-23 * mag + 1e-30) bad++;
        }
    CHECK_EQ(bad, 0);
    int threads[] = {2, 3, 7, 64};
    for (int a = 0; a < 4; a++) {
        edgellm_threadpool *p = NULL;
        CHECK_EQ(edgellm_threadpool_new(threads[a], &p, NULL), EDGELLM_OK);
        memset(y2, 0xff, (size_t)(n * rows) * 4);
        edgellm_matmul(p, y2, &W, x, n, NULL);
        CHECK(!memcmp(y1, y2, (size_t)(n * rows) * 4));
        /* token by token: the same bits as the batch */
        for (int64_t t = 0; t < n; t++) edgellm_matmul(p, y2 + t * rows, &W, x + t * cols, 1, NULL);
        CHECK(!memcmp(y1, y2, (size_t)(n * rows) * 4));
        edgellm_threadpool_free(p);
    }
    free(wd); free(wf); free(x); free(y1); free(y2);
}

static void test_matmul_matches_double_and_is_thread_invariant(void)
{
    matmul_case(EDGELLM_TYPE_F32, 37, 67, 5);      /* odd sizes, fewer rows than 64 threads */
    matmul_case(EDGELLM_TYPE_F16, 3, 256, 4);      /* 3 rows: most threads idle            */
    matmul_case(EDGELLM_TYPE_BF16, 19, 128, 3);
    matmul_case(EDGELLM_TYPE_F32, 5, 4096, 40);    /* 16 tokens per block: three blocks    */
}

static void test_rmsnorm_softmax_swiglu(void)
{
    float x[77], w[77], out[77];
    double ss = 0;
    for (int i = 0; i < 77; i++) { x[i] = frand() * 3; w[i] = frand(); ss += (double)x[i] * x[i]; }
    edgellm_rmsnorm(out, x, w, 77, 1e-5f);
    double sc = 1.0 / sqrt(ss / 77 + 1e-5);
    for (int i = 0; i < 77; i++) CHECK_NEAR(out[i], x[i] * sc * w[i], 1e-6 * (fabs(x[i] * sc * w[i]) + 1e-6));
    edgellm_rmsnorm(x, x, w, 77, 1e-5f);               /* in place */
    CHECK(!memcmp(x, out, sizeof out));

    float s[5] = {1000, 1001, 999, -1e30f, 1000};     /* large values: must not overflow */
    edgellm_softmax(s, 5);
    double z = exp(0) + exp(1) + exp(-1) + exp(0);
    CHECK_NEAR(s[1], exp(1) / z, 1e-6);
    CHECK_NEAR(s[3], 0, 1e-30);
    CHECK_NEAR(s[0] + s[1] + s[2] + s[3] + s[4], 1.0, 1e-6);
    float one[1] = {-5};
    edgellm_softmax(one, 1);
    CHECK_EQ(one[0], 1.0f);

    float g[4] = {-2, 0, 0.5f, 8}, u[4] = {1, 2, -3, 0.25f};
    edgellm_swiglu(g, u, 4);
    float gi[4] = {-2, 0, 0.5f, 8};
    for (int i = 0; i < 4; i++) CHECK_NEAR(g[i], gi[i] / (1 + exp(-gi[i])) * u[i], 1e-6);
}

/* edgellm_expf_vec against double exp: within 3.5 ulp over [-87, 88] (every 4099th float
 * of the range by bit pattern, ~546k values, and both ends; a dense sweep of every 37th
 * float measured 2.98 ulp at most), the clamp above, the flush to 0 below and NaN;
 * edgellm_swiglu against the double formula for every length 0..37 (the 4-lane body and
 * each tail), each element equal to its value in a call of another length (lanes are
 * independent). */
static double ulp_at(double v)
{
    int e;
    frexp(v, &e);
    return ldexp(1.0, e - 24);
}

static void test_expf_vec_and_swiglu(void)
{
    double worst = 0;
    int64_t n = 0;
    /* bit patterns: +0 .. 88 and -0 .. -87 (sign bit set), every 4099th */
    float lim[2] = {88.0f, -87.0f};
    for (int sg = 0; sg < 2; sg++) {
        uint32_t b0 = sg ? 0x80000000u : 0, b1;
        memcpy(&b1, &lim[sg], sizeof b1);
        for (uint32_t b = b0; b <= b1; b += b1 - b < 4099 && b != b1 ? b1 - b : 4099) {
            float x;
            memcpy(&x, &b, sizeof x);
            const double ref = exp((double)x), u = fabs((double)edgellm_expf_vec(x) - ref) / ulp_at(ref);
            worst = u > worst ? u : worst;
            n++;
            if (b == b1) break;
        }
    }
    fprintf(stderr, "   expf_vec: %lld values, worst %.2f ulp\n", (long long)n, worst);
    CHECK(worst <= 3.5);
    CHECK(fabs(edgellm_expf_vec(88.0f) - exp(88.0)) <= 3.5 * ulp_at(exp(88.0)));
    CHECK(fabs(edgellm_expf_vec(-87.0f) - exp(-87.0)) <= 3.5 * ulp_at(exp(-87.0)));
    CHECK_EQ(edgellm_expf_vec(0.0f), 1.0f);
    CHECK(isnan(edgellm_expf_vec(NAN)));
    CHECK_EQ(edgellm_expf_vec(INFINITY), edgellm_expf_vec(88.0f));      /* clamped, finite */
    CHECK_EQ(edgellm_expf_vec(-INFINITY), 0.0f);                          /* underflow: 0 */
    CHECK_EQ(edgellm_expf_vec(-87.5f), 0.0f);
    CHECK(edgellm_expf_vec(1000.0f) > 1e38f && edgellm_expf_vec(-1000.0f) == 0.0f);

    float g0[37], u0[37], all[37];
    for (int i = 0; i < 37; i++) {
        g0[i] = i == 5 ? -100.0f : i == 6 ? 100.0f : frand() * 12;
        u0[i] = frand() * 2;
    }
    memcpy(all, g0, sizeof all);
    edgellm_swiglu(all, u0, 37);
    bool near = true, same = true;
    for (int len = 0; len <= 37; len++) {
        float g[37];
        memcpy(g, g0, sizeof g);
        edgellm_swiglu(g, u0, len);
        for (int i = 0; i < len; i++) {
            const double ref = (double)g0[i] / (1.0 + exp(-(double)g0[i])) * u0[i];
            near &= fabs(g[i] - ref) <= 4e-7 * fabs(ref) + 1e-30;
            same &= g[i] == all[i];
        }
        for (int i = len; i < 37; i++) same &= g[i] == g0[i];                /* untouched */
    }
    CHECK(near);
    CHECK(same);
}

static void test_rope_layouts(void)
{
    enum { HD = 8, NH = 2, RD = 8 };
    float cs[RD / 2], sn[RD / 2];
    int64_t pos = 7;
    float base = 10000;
    edgellm_rope_table(cs, sn, pos, RD, base);
    float x[NH * HD], a[NH * HD], b[NH * HD];
    for (int i = 0; i < NH * HD; i++) x[i] = frand();
    memcpy(a, x, sizeof x);
    memcpy(b, x, sizeof x);
    edgellm_rope_adjacent(a, NH, HD, RD, cs, sn);
    edgellm_rope_neox(b, NH, HD, RD, cs, sn);
    for (int h = 0; h < NH; h++)
        for (int i = 0; i < RD / 2; i++) {
            double th = pos * pow(base, -2.0 * i / RD), c = cos(th), s = sin(th);
            const float *xh = x + h * HD;
            CHECK_NEAR(a[h * HD + 2 * i], xh[2 * i] * c - xh[2 * i + 1] * s, 1e-6);
            CHECK_NEAR(a[h * HD + 2 * i + 1], xh[2 * i] * s + xh[2 * i + 1] * c, 1e-6);
            CHECK_NEAR(b[h * HD + i], xh[i] * c - xh[i + RD / 2] * s, 1e-6);
            CHECK_NEAR(b[h * HD + i + RD / 2], xh[i] * s + xh[i + RD / 2] * c, 1e-6);
        }
    /* position 0 is the identity */
    edgellm_rope_table(cs, sn, 0, RD, base);
    memcpy(a, x, sizeof x);
    edgellm_rope_adjacent(a, NH, HD, RD, cs, sn);
    CHECK(!memcmp(a, x, sizeof x));
    /* partial rotary: dims past rope_dim untouched */
    edgellm_rope_table(cs, sn, 3, 4, base);
    memcpy(a, x, sizeof x);
    edgellm_rope_neox(a, NH, HD, 4, cs, sn);
    CHECK(!memcmp(a + 4, x + 4, 4 * sizeof(float)));
    CHECK(memcmp(a, x, 4 * sizeof(float)) != 0);
}

static void test_attend_matches_double(void)
{
    enum { HD = 16, NPOS = 9, STRIDE = 48 };
    float q[HD], k[NPOS * STRIDE], v[NPOS * STRIDE], out[HD], scores[NPOS];
    for (int i = 0; i < HD; i++) q[i] = frand() * 2;
    for (int i = 0; i < NPOS * STRIDE; i++) { k[i] = frand(); v[i] = frand(); }
    float scale = 0.25f;
    edgellm_attend(out, q, k, v, STRIDE, HD, NPOS, scale, scores, edgellm_kernels_vec_dot(EDGELLM_TYPE_F32));
    double sc[NPOS], mx = -1e300, z = 0;
    for (int j = 0; j < NPOS; j++) {
        double d = 0;
        for (int i = 0; i < HD; i++) d += (double)q[i] * k[j * STRIDE + i];
        sc[j] = d * scale;
        mx = fmax(mx, sc[j]);
    }
    for (int j = 0; j < NPOS; j++) z += (sc[j] = exp(sc[j] - mx));
    for (int i = 0; i < HD; i++) {
        double o = 0;
        for (int j = 0; j < NPOS; j++) o += sc[j] / z * v[j * STRIDE + i];
        CHECK_NEAR(out[i], o, 1e-6);
    }
}

/* The attention kernels of every level (edgellm_kernels_attend for an F32 / F16 cache) equal
 * edgellm_attend / edgellm_attend_f16 called with that level's F32 / F16 dot, bit for bit: head_dims that reach every column path
 * (64-wide blocks, 8-wide, scalar tail), 1 to 300 positions, a stride wider than the head.
 * The double-precision check above holds for edgellm_attend; this carries it over. */
static void test_attend_variants_match_generic(void)
{
    enum { MAXHD = 288, NPOS = 300, STRIDE = 2 * MAXHD + 3 };
    /* F32: 32..256 in 32s are the AVX-512 kernel's own path, F16: 16..256 in 16s; 288 and the
     * rest: their AVX2 fallbacks */
    static const int hds[] = {1, 7, 8, 15, 16, 32, 48, 64, 72, 80, 96, 128, 129, 200, 256, 288};
    static const int nps[] = {1, 2, 8, 17, 300};
    static const char *const lv[] = {"scalar", "avx2", "avx512", "neon", "dotprod"};
    float *k = malloc(sizeof(float) * NPOS * STRIDE), *v = malloc(sizeof(float) * NPOS * STRIDE);
    float q[MAXHD], a[MAXHD], b[MAXHD], sa[NPOS], sb[NPOS];
    for (int i = 0; i < NPOS * STRIDE; i++) { k[i] = frand() * 3; v[i] = frand(); }
    for (int i = 0; i < MAXHD; i++) q[i] = frand();
    uint16_t *k16 = malloc(2 * NPOS * STRIDE), *v16 = malloc(2 * NPOS * STRIDE);
    for (int i = 0; i < NPOS * STRIDE; i++) { k16[i] = edgellm_f32_to_f16(k[i]); v16[i] = edgellm_f32_to_f16(v[i]); }
    int levels_run = 0;
    for (size_t l = 0; l < sizeof lv / sizeof lv[0]; l++) {
        if (!edgellm_kernels_force(lv[l])) continue;   /* not this CPU / architecture */
        levels_run++;
        const edgellm_attend_kernel att = edgellm_kernels_attend(EDGELLM_TYPE_F32);
        const edgellm_attend_kernel att16 = edgellm_kernels_attend(EDGELLM_TYPE_F16);
        edgellm_vec_dot_fn dot = edgellm_kernels_vec_dot(EDGELLM_TYPE_F32);
        edgellm_vec_dot_fn dot16 = edgellm_kernels_vec_dot(EDGELLM_TYPE_F16);
        CHECK(att.run && att16.run && att.dot == dot && att16.dot == dot16);
        for (size_t h = 0; h < sizeof hds / sizeof hds[0]; h++)
            for (size_t p = 0; p < sizeof nps / sizeof nps[0]; p++)
            for (int sc = 0; sc < 2; sc++) {
                const int hd = hds[h];
                /* scale 50: scores spread far beyond 87 below the maximum, where e^x is 0 */
                const float scale = sc ? 50.0f : 0.125f;
                att.run(&att, a, q, k + 5, v + 3, STRIDE * sizeof(float), hd, nps[p], scale, sa);
                edgellm_attend(b, q, k + 5, v + 3, STRIDE, hd, nps[p], scale, sb, dot);
                CHECK(memcmp(a, b, sizeof(float) * (size_t)hd) == 0);
                CHECK(memcmp(sa, sb, sizeof(float) * (size_t)nps[p]) == 0);   /* the probabilities too */
                att16.run(&att16, a, q, k16 + 5, v16 + 3, STRIDE * sizeof(uint16_t), hd, nps[p], scale, sa);
                edgellm_attend_f16(b, q, k16 + 5, v16 + 3, STRIDE, hd, nps[p], scale, sb, dot16);
                CHECK(memcmp(a, b, sizeof(float) * (size_t)hd) == 0);
                CHECK(memcmp(sa, sb, sizeof(float) * (size_t)nps[p]) == 0);
            }
    }
    edgellm_kernels_force(NULL);
    CHECK(levels_run >= 1);
    free(k);
    free(v);
    free(k16);
    free(v16);
}

int main(void)
{
    RUN(test_f16_inline_matches_reference_all_halves);
    RUN(test_fast_dots_match_ref_on_all_tails);
    RUN(test_dispatch_ref_switch);
    RUN(test_matmul_matches_double_and_is_thread_invariant);
    RUN(test_rmsnorm_softmax_swiglu);
    RUN(test_expf_vec_and_swiglu);
    RUN(test_rope_layouts);
    RUN(test_attend_matches_double);
    RUN(test_attend_variants_match_generic);
    return test_summary();
}
