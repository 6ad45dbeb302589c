/*
 * bench_kernels.c — throughput of edgellm_matmul per weight type and kernel level (not a
 * test: a measuring program, built as the `bench_kernels` target, never run by CTest).
 *
 * For each type and each level this CPU runs (ref, scalar, avx2, avx512 / neon, dotprod):
 *   decode-L2   y[1][rows] = x · Wᵀ, W = rows × cols (default 2048 × 2048), one matrix
 *               read again and again: mostly cache-resident, measures the kernels;
 *   decode-DRAM the same over enough copies of W (>= 256 MiB in all) that every product
 *               streams its weights from memory: compare with the read bandwidth;
 *   prefill     n = 64 tokens (tiled by matmul.c's token blocks).
 * Each cell runs for ~0.3 s (at least 3 runs) and reports the best run: GB/s of weight
 * bytes read per product (row_bytes · rows / time, 1e9 bytes) and GFLOP/s (2·rows·cols·n
 * / time). Activations are converted inside the timed region (as in a real matmul).
 *
 * Usage: bench_kernels [-t THREADS] [-s SIZE] [--types q4_0,q8_0,...] [--no-dram]
 *                      [--levels avx2,avx512] [--bandwidth]
 */
#include "edgellm_tools.h"
#include "common/threadpool.h"
#include "kernels/dispatch.h"
#include "kernels/matmul.h"
#include "tensor/types.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Best seconds per call of one matmul configuration; cycles through n_mats copies. */
static double time_matmul(edgellm_threadpool *pool, edgellm_tensor *W, int n_mats, size_t mat_bytes, const float *x,
                          int64_t n, float *y, void *scratch, double budget_s)
{
    double best = 1e30, t_end = now_s() + budget_s;
    int runs = 0;
    const uint8_t *base = W->data;
    while (runs < 3 || now_s() < t_end) {
        edgellm_tensor w = *W;
        double t0 = now_s();
        for (int k = 0; k < n_mats; k++) {
            w.data = base + (size_t)k * mat_bytes;
            edgellm_matmul(pool, y, &w, x, n, scratch);
        }
        double dt = (now_s() - t0) / n_mats;
        if (dt < best) best = dt;
        runs++;
    }
    return best;
}

static bool listed(const char *list, const char *name)
{
    if (!list) return true;
    size_t len = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += len) {
        const bool start = p == list || p[-1] == ',';
        const bool end = p[len] == 0 || p[len] == ',';
        if (start && end) return true;
    }
    return false;
}

int main(int argc, char **argv)
{
    int threads = 1, size = 2048;
    bool dram = true, bandwidth = false;
    const char *types_arg = NULL, *levels_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) size = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--types") && i + 1 < argc) types_arg = argv[++i];
        else if (!strcmp(argv[i], "--levels") && i + 1 < argc) levels_arg = argv[++i];
        else if (!strcmp(argv[i], "--no-dram")) dram = false;
        else if (!strcmp(argv[i], "--bandwidth")) bandwidth = true;
        else {
            fprintf(stderr, "usage: %s [-t THREADS] [-s SIZE] [--types q4_0,...] [--levels avx2,...] [--no-dram] [--bandwidth]\n",
                    argv[0]);
            return 2;
        }
    }
    if (size <= 0 || size % 256 || threads < 1 || threads > EDGELLM_MAX_THREADS) {
        fprintf(stderr, "size must be a positive multiple of 256, threads 1..%d\n", EDGELLM_MAX_THREADS);
        return 2;
    }
    if (bandwidth) {
        edgellm_membw_params p = edgellm_membw_default_params();
        p.n_threads = threads;
        edgellm_membw_result r;
        if (edgellm_membw_measure(&p, &r, NULL) == EDGELLM_OK)
            printf("memory read bandwidth: %.2f GB/s (best of %d runs, %d threads)\n", r.best_gbps, r.n_runs, threads);
    }
    static const char *const type_names[] = {"f32", "f16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k",
                                             "q4_k", "q5_k", "q6_k", "i4_g128_sym", "i4_g128_asym", "i8_g128_sym"};
    static const char *const level_names[] = {"ref", "scalar", "avx2", "avx512", "neon", "dotprod"};
    const int64_t rows = size, cols = size, n_prefill = 64;
    edgellm_threadpool *pool = NULL;
    if (threads > 1 && edgellm_threadpool_new(threads, &pool, NULL) != EDGELLM_OK) return 1;
    float *xf = malloc((size_t)(n_prefill * cols) * 4), *y = malloc((size_t)(n_prefill * rows) * 4);
    for (int64_t i = 0; i < n_prefill * cols; i++) xf[i] = frand();
    printf("matmul %lld x %lld, %d thread(s); GB/s = weight bytes read / time, best of runs\n", (long long)rows,
           (long long)cols, threads);
    printf("%-13s %-7s | %9s %8s | %9s %8s | %9s %8s\n", "type", "level", "L2 GB/s", "GFLOP/s", "DRAM GB/s",
           "GFLOP/s", "pp64 GB/s", "GFLOP/s");
    for (size_t ti = 0; ti < sizeof type_names / sizeof type_names[0]; ti++) {
        if (!listed(types_arg, type_names[ti])) continue;
        const int type = edgellm_type_from_name(type_names[ti]);
        const edgellm_type_traits *t = edgellm_type_get_traits(type);
        if (!t) continue;
        const size_t rb = edgellm_type_row_size(type, cols), mat = rb * (size_t)rows;
        /* 64 distinct quantized rows (reference quantizer), repeated to fill the matrix */
        const int n_mats = dram ? (int)((((size_t)256 << 20) + mat - 1) / mat) : 1;
        uint8_t *wd = malloc(mat * (size_t)n_mats);
        if (!wd) { fprintf(stderr, "out of memory\n"); return 1; }
        for (int64_t r = 0; r < 64 && r < rows; r++) {
            for (int64_t i = 0; i < cols; i++) y[i] = frand();
            t->from_float_ref(y, wd + (size_t)r * rb, cols);
        }
        for (int64_t r = 64; r < rows; r++) memcpy(wd + (size_t)r * rb, wd + (size_t)(r % 64) * rb, rb);
        for (int k = 1; k < n_mats; k++) memcpy(wd + (size_t)k * mat, wd, mat);
        edgellm_tensor W = {wd, type, cols, rows, rb, NULL};
        const size_t ss = edgellm_matmul_scratch_size(&W, n_prefill);
        void *scratch = ss ? malloc(ss) : NULL;
        for (size_t li = 0; li < sizeof level_names / sizeof level_names[0]; li++) {
            if (!listed(levels_arg, level_names[li]) || !edgellm_kernels_force(level_names[li])) continue;
            const bool slow = !strcmp(level_names[li], "ref");
            const double budget = slow ? 0.1 : 0.3;
            const double t_l2 = time_matmul(pool, &W, 1, mat, xf, 1, y, scratch, budget);
            const double t_dram = dram && !slow ? time_matmul(pool, &W, n_mats, mat, xf, 1, y, scratch, budget) : 0;
            const double t_pp = time_matmul(pool, &W, 1, mat, xf, slow ? 8 : n_prefill, y, scratch, budget);
            const double flop = 2.0 * (double)rows * (double)cols;
            printf("%-13s %-7s | %9.2f %8.2f |", t->name, level_names[li], (double)mat / t_l2 / 1e9, flop / t_l2 / 1e9);
            if (t_dram > 0) printf(" %9.2f %8.2f |", (double)mat / t_dram / 1e9, flop / t_dram / 1e9);
            else printf(" %9s %8s |", "-", "-");
            const double npp = slow ? 8 : (double)n_prefill;
            printf(" %9.2f %8.2f\n", (double)mat / t_pp / 1e9, flop * npp / t_pp / 1e9);
            fflush(stdout);
        }
        edgellm_kernels_force(NULL);
        free(scratch);
        free(wd);
    }
    edgellm_threadpool_free(pool);
    free(xf);
    free(y);
    return 0;
}
