/*
 * bench_gemm.c — the matrix products of one forward pass of a real model file, per kernel
 * level, interleaved (not a test: a measuring program, target `bench_gemm`).
 *
 * For each round and each level: one "pass" = edgellm_matmul over every weight matrix of
 * the model in forward order (per layer q, k, v, o, gate, up, down; then output) with n
 * tokens of random activations, exactly the products a forward pass of n tokens runs,
 * reading the weights from the model's mapping. Levels alternate pass by pass, so load from
 * other processes hits them alike; the report gives, per level, the best and the median
 * pass: ms, weight GB/s (bytes of all matrices / time) and tokens/s (n / time).
 *
 * Usage: bench_gemm -m MODEL.gguf [-n TOKENS] [-t THREADS] [-r ROUNDS] [--levels avx2,avx512]
 */
#include "edgellm.h"
#include "common/threadpool.h"
#include "kernels/dispatch.h"
#include "kernels/matmul.h"
#include "model/model.h"
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define MAX_LEVELS 8
#define MAX_ROUNDS 1000

int main(int argc, char **argv)
{
    const char *path = NULL, *levels_arg = "avx2,avx512";
    int n = 1, threads = 1, rounds = 10;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--levels") && i + 1 < argc) levels_arg = argv[++i];
        else path = NULL, i = argc;
    }
    if (!path || n < 1 || threads < 1 || threads > EDGELLM_MAX_THREADS || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: bench_gemm -m MODEL.gguf [-n TOKENS] [-t THREADS] [-r ROUNDS] [--levels avx2,avx512]\n");
        return 2;
    }
    char levels[MAX_LEVELS][16];
    int n_levels = 0;
    for (const char *p = levels_arg; *p && n_levels < MAX_LEVELS;) {
        size_t len = strcspn(p, ",");
        snprintf(levels[n_levels], sizeof levels[0], "%.*s", (int)len, p);
        if (edgellm_kernels_force(levels[n_levels])) n_levels++;
        else fprintf(stderr, "level %s not available, skipped\n", levels[n_levels]);
        p += len + (p[len] == ',');
    }
    edgellm_kernels_force(NULL);
    edgellm_error err = {0};
    edgellm_model *m = NULL;
    if (edgellm_model_load(path, NULL, &m, &err) != EDGELLM_OK) {
        fprintf(stderr, "bench_gemm: %s\n", err.msg);
        return 1;
    }
    const edgellm_hparams *hp = &m->hp;
    const int n_mats = 7 * hp->n_layer + 1;
    const edgellm_tensor **mats = malloc(sizeof *mats * (size_t)n_mats);
    size_t bytes = 0, scratch_size = 0;
    int64_t max_in = 0, max_out = 0;
    for (int il = 0, k = 0; il < hp->n_layer; il++) {
        const edgellm_layer *L = &m->layers[il];
        const edgellm_tensor *ws[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (int i = 0; i < 7; i++) mats[k++] = ws[i];
    }
    mats[n_mats - 1] = &m->output;
    for (int i = 0; i < n_mats; i++) {
        bytes += mats[i]->row_bytes * (size_t)mats[i]->ne1;
        scratch_size = EDGELLM_MAX(scratch_size, edgellm_matmul_scratch_size(mats[i], n));
        max_in = EDGELLM_MAX(max_in, mats[i]->ne0);
        max_out = EDGELLM_MAX(max_out, mats[i]->ne1);
    }
    float *x = malloc(sizeof(float) * (size_t)(n * max_in)), *y = malloc(sizeof(float) * (size_t)(n * max_out));
    void *scratch = malloc(scratch_size + 64);
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (int64_t i = 0; i < n * max_in; i++) {
        rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
        x[i] = (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    edgellm_threadpool *pool = NULL;
    if (threads > 1 && edgellm_threadpool_new(threads, &pool, &err) != EDGELLM_OK) return 1;
    static double t[MAX_LEVELS][MAX_ROUNDS];
    for (int r = -1; r < rounds; r++) {                       /* round -1: warm-up */
        for (int l = 0; l < n_levels; l++) {
            edgellm_kernels_force(levels[l]);
            double t0 = now_s();
            for (int i = 0; i < n_mats; i++) edgellm_matmul(pool, y, mats[i], x, n, scratch);
            if (r >= 0) t[l][r] = now_s() - t0;
        }
    }
    printf("%s: %d matrices, %.1f MiB of weights, n = %d, %d thread(s), %d rounds\n", path, n_mats,
           (double)bytes / 1048576.0, n, threads, rounds);
    printf("%-8s | %9s %8s %9s | %9s %8s %9s\n", "level", "best ms", "GB/s", "tok/s", "median ms", "GB/s", "tok/s");
    for (int l = 0; l < n_levels; l++) {
        qsort(t[l], (size_t)rounds, sizeof(double), cmp_double);
        double best = t[l][0], med = t[l][rounds / 2];
        printf("%-8s | %9.2f %8.2f %9.2f | %9.2f %8.2f %9.2f\n", levels[l], best * 1e3, (double)bytes / best / 1e9,
               n / best, med * 1e3, (double)bytes / med / 1e9, n / med);
    }
    edgellm_threadpool_free(pool);
    edgellm_model_free(m);
    free(mats);
    free(x);
    free(y);
    free(scratch);
    return 0;
}
