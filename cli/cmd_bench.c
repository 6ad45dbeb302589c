/* cmd_bench.c — 'edgellm bench': llama-bench-style speed tests (pp<N>, tg<N>) plus time to
 * first token, load time, peak RSS and the memory-bandwidth roofline; '--bandwidth' prints
 * the measured memory-read bandwidth. The work is edgellm_bench (src/tools/bench.c) and
 * edgellm_membw_measure (src/tools/membw.c); this file parses flags and prints markdown
 * (default), CSV or JSON on stdout. Field names of CSV/JSON are llama-bench's where one
 * exists (llama.cpp tools/llama-bench/README.md), so its tooling reads them. */
#include "commands.h"
#include "governor_opts.h"
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_MODELS 16

static int progress(void *user, double f, const char *what)
{
    (void)user;
    fprintf(stderr, "\redgellm bench: %3.0f%% %-40.40s", f * 100.0, what ? what : "");
    if (f >= 1.0) fprintf(stderr, "\r%*s\r", 60, "");
    fflush(stderr);
    return 0;
}

/* -t and -d: "a,b,c", at most max ints in [lo, hi] (what: their name), into v[0..*n). */
typedef struct {
    int *v, *n, max;
    long lo, hi;
    const char *what;
} int_list;

static int parse_int_list(const char *flag, const char *s, void *dst, char *msg, size_t size)
{
    const int_list *l = dst;
    int n = 0;
    for (const char *p = s; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < l->lo || v > l->hi || (*end && *end != ',') || (*end == ',' && !end[1]) || n == l->max) {
            snprintf(msg, size, "%s expects comma-separated %s in [%ld, %ld] (at most %d), got '%s'", flag, l->what,
                     l->lo, l->hi, l->max, s);
            return 1;
        }
        l->v[n++] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (n == 0) { snprintf(msg, size, "%s is empty", flag); return 1; }
    *l->n = n;
    return 0;
}

/* TTFT of the pp test at the same thread count and depth (tg rows carry it too). */
static double ttft_for(const edgellm_bench_report *r, const edgellm_bench_result *x)
{
    for (int i = 0; i < r->n_results; i++) {
        const edgellm_bench_result *y = &r->results[i];
        if (y->n_prompt > 0 && y->n_threads == x->n_threads && y->n_depth == x->n_depth) return y->ttft_ms;
    }
    return 0;
}

/* llama-bench's type_k / type_v columns appear when the KV cache is not the default */
static void print_md_header(int kv_type)
{
    const bool kv = kv_type != EDGELLM_TYPE_F32;
    printf("| model | size | params | backend | threads |%s test | t/s | ttft ms | roofline | cpu | runq wait |\n",
           kv ? " type_k | type_v |" : "");
    printf("| ----- | ---: | -----: | ------- | ------: |%s ---: | --: | ------: | -------: | --: | --------: |\n",
           kv ? " -----: | -----: |" : "");
}

static void print_md(const edgellm_bench_report *r)
{
    for (int i = 0; i < r->n_results; i++) {
        const edgellm_bench_result *x = &r->results[i];
        char roof[32] = "", ttft[32] = "";
        if (x->n_gen > 0) snprintf(roof, sizeof roof, "%.1f %% of %.1f GB/s", 100.0 * x->roofline_frac, x->bw_gbps);
        double t = ttft_for(r, x);
        if (t > 0) snprintf(ttft, sizeof ttft, "%.1f", t);
        char params[32];
        if (r->model_n_params >= 1000000000ull) snprintf(params, sizeof params, "%.2f B", (double)r->model_n_params / 1e9);
        else snprintf(params, sizeof params, "%.2f M", (double)r->model_n_params / 1e6);
        char wait[32] = "?";
        if (x->wait_frac >= 0) snprintf(wait, sizeof wait, "%.0f %%", 100.0 * x->wait_frac);
        char kv[40] = "";
        if (r->kv_type != EDGELLM_TYPE_F32)
            snprintf(kv, sizeof kv, " %s | %s |", cli_kv_type_name(r->kv_type), cli_kv_type_name(r->kv_type));
        printf("| %s | %.2f MiB | %s | CPU | %d |%s %s | %.2f ± %.2f | %s | %s | %.0f %% | %s |\n", r->model_type,
               (double)r->model_size / 1048576.0, params, x->n_threads, kv, x->test, x->avg_ts,
               x->stddev_ts, ttft, roof, 100.0 * x->cpu_frac, wait);
    }
}

static void print_md_footer(const char *path, const edgellm_bench_report *r)
{
    char threads[96] = "";
    if (r->bw_n_threads > 0)
        snprintf(threads, sizeof threads, " measured with %d thread%s (all physical cores, whatever -t)",
                 r->bw_n_threads, r->bw_n_threads == 1 ? "" : "s");
    /* load time per GB of weights, and the part of it spent repacking them (dispatch.h) */
    char per_gb[160] = "";
    if (r->model_size > 0) {
        const double mb = (double)r->model_size / 1e6;
        int n = snprintf(per_gb, sizeof per_gb, " (%.2f and %.2f s per GB of weights", r->load_ms / mb, r->load_warm_ms / mb);
        if (r->n_repacked > 0 && n > 0 && (size_t)n < sizeof per_gb)
            n += snprintf(per_gb + n, sizeof per_gb - (size_t)n, "; %d matrices repacked: %.1f ms of the first load",
                          r->n_repacked, r->repack_ms);
        if (r->n_stored > 0 && n > 0 && (size_t)n < sizeof per_gb)
            n += snprintf(per_gb + n, sizeof per_gb - (size_t)n, "; %d matrices in the file's q4_K_r16 layout",
                          r->n_stored);
        if (n > 0 && (size_t)n < sizeof per_gb - 1) strcat(per_gb, ")");
    }
    printf("\n%s: load %.1f ms (%s), warm %.1f ms%s; peak RSS %.1f MiB; weights read per token %.1f MiB; "
           "bandwidth %.2f GB/s%s%s\n",
           path, r->load_ms, r->load_cold ? "cold: page cache dropped" : "page cache not dropped", r->load_warm_ms, per_gb,
           (double)r->peak_rss_bytes / 1048576.0, (double)r->weight_bytes_per_token / 1048576.0, r->bw_gbps, threads,
           r->bw_measured ? "; the roofline column: tg against a plain read of the same weights by the same threads just before and after each repetition, median"
                          : " (given, used for every thread count)");
    /* decode faster than the memory roofline: the weights came (partly) from the CPU's
     * caches, not from memory, so for this model the column is no bound (a small model; the
     * caches' size as the C library reports it is no help: a VM may be shown a whole
     * socket's L3) */
    bool above = false;
    for (int i = 0; i < r->n_results; i++)
        above |= r->results[i].n_gen > 0 && (r->results[i].roofline_frac > 1.0 || r->results[i].roofline_frac_all > 1.0);
    if (above)
        printf("%s: note: decode ran faster than the memory roofline: its %.1f MiB of weights per token were "
               "(partly) read from the CPU's caches%s, so the roofline column is no memory-bandwidth bound for it\n",
               path, (double)r->weight_bytes_per_token / 1048576.0,
               r->bw_measured ? "" : ", or the given bandwidth is below what this machine reads");
}

static const char *csv_header =
    "model_filename,model_type,model_size,model_n_params,cpu_info,backends,n_threads,n_prompt,n_gen,n_depth,test,avg_ns,"
    "stddev_ns,avg_ts,stddev_ts,samples_ts,load_ms,load_warm_ms,load_cold,ttft_ms,peak_rss_bytes,bytes_per_token,"
    "bw_gbps,roofline_frac,bw_all_gbps,roofline_frac_all,cpu_frac,wait_frac,test_time,type_k,type_v\n";

static void print_csv(const char *path, const char *cpu, const char *when, const edgellm_bench_report *r)
{
    for (int i = 0; i < r->n_results; i++) {
        const edgellm_bench_result *x = &r->results[i];
        cli_csv_str(stdout, path);
        putchar(',');
        cli_csv_str(stdout, r->model_type);
        printf(",%llu,%llu,", (unsigned long long)r->model_size, (unsigned long long)r->model_n_params);
        cli_csv_str(stdout, cpu);
        printf(",CPU,%d,%d,%d,%d,%s,%.0f,%.0f,%.6f,%.6f,\"", x->n_threads, x->n_prompt, x->n_gen, x->n_depth, x->test,
               x->avg_ns, x->stddev_ns, x->avg_ts, x->stddev_ts);
        for (int k = 0; k < x->n_reps && k < 32; k++) printf("%s%.6f", k ? ";" : "", x->samples_ts[k]);
        /* pp rows have no roofline: empty fields, as JSON's null (0 would read as 0 %) */
        char roof[32] = "", roof_all[32] = "";
        if (x->n_gen > 0) {
            snprintf(roof, sizeof roof, "%.6f", x->roofline_frac);
            snprintf(roof_all, sizeof roof_all, "%.6f", x->roofline_frac_all);
        }
        printf("\",%.3f,%.3f,%d,%.3f,%llu,%llu,%.3f,%s,%.3f,%s,%.4f,%.4f,%s,%s,%s\n", r->load_ms, r->load_warm_ms,
               r->load_cold, ttft_for(r, x), (unsigned long long)r->peak_rss_bytes,
               (unsigned long long)x->bytes_per_token, x->n_gen > 0 ? x->bw_gbps : r->bw_gbps, roof, r->bw_gbps,
               roof_all, x->cpu_frac, x->wait_frac, when, cli_kv_type_name(r->kv_type), cli_kv_type_name(r->kv_type));
    }
}

static void print_json(const char *path, const char *cpu, const char *when, const edgellm_bench_report *r, int *first)
{
    for (int i = 0; i < r->n_results; i++) {
        const edgellm_bench_result *x = &r->results[i];
        printf("%s  {\n    \"model_filename\": ", *first ? "" : ",\n");
        *first = 0;
        cli_json_str(stdout, path);
        printf(",\n    \"model_type\": ");
        cli_json_str(stdout, r->model_type);
        printf(",\n    \"model_size\": %llu,\n    \"model_n_params\": %llu,\n    \"cpu_info\": ",
               (unsigned long long)r->model_size, (unsigned long long)r->model_n_params);
        cli_json_str(stdout, cpu);
        const char *kv = cli_kv_type_name(r->kv_type);
        char k[256];
        edgellm_kernels_describe(k, sizeof k);
        printf(",\n    \"kernels\": ");
        cli_json_str(stdout, k);
        printf(",\n    \"backends\": \"CPU\",\n    \"type_k\": \"%s\",\n    \"type_v\": \"%s\",\n    \"use_mmap\": true,"
               "\n    \"n_threads\": %d,\n    \"n_prompt\": %d,\n    \"n_gen\": %d,\n    \"n_depth\": %d,\n"
               "    \"test\": \"%s\",\n    \"test_time\": \"%s\",\n    \"avg_ns\": %.0f,\n    \"stddev_ns\": %.0f,\n"
               "    \"avg_ts\": %.6f,\n    \"stddev_ts\": %.6f,\n    \"samples_ts\": [",
               kv, kv, x->n_threads, x->n_prompt, x->n_gen, x->n_depth, x->test, when, x->avg_ns, x->stddev_ns, x->avg_ts, x->stddev_ts);
        for (int k = 0; k < x->n_reps && k < 32; k++) printf("%s%.6f", k ? ", " : "", x->samples_ts[k]);
        double t = ttft_for(r, x);
        printf("],\n    \"load_ms\": %.3f,\n    \"load_warm_ms\": %.3f,\n    \"load_cold\": %s,\n"
               "    \"n_repacked\": %d,\n    \"repack_ms\": %.3f,\n    \"n_stored\": %d,\n    \"ttft_ms\": ",
               r->load_ms, r->load_warm_ms, r->load_cold ? "true" : "false", r->n_repacked, r->repack_ms, r->n_stored);
        if (t > 0) printf("%.3f", t);
        else printf("null");
        printf(",\n    \"peak_rss_bytes\": %llu,\n    \"bytes_per_token\": %llu,\n    \"bw_gbps\": %.3f,\n"
               "    \"bw_all_gbps\": %.3f,\n    \"bw_all_n_threads\": %d,\n    \"cpu_frac\": %.4f,\n    \"wait_frac\": %.4f,\n    \"roofline_frac\": ",
               (unsigned long long)r->peak_rss_bytes, (unsigned long long)x->bytes_per_token,
               x->n_gen > 0 ? x->bw_gbps : r->bw_gbps, r->bw_gbps, r->bw_n_threads, x->cpu_frac, x->wait_frac);
        if (x->n_gen > 0) printf("%.6f,\n    \"roofline_frac_all\": %.6f\n  }", x->roofline_frac, x->roofline_frac_all);
        else printf("null,\n    \"roofline_frac_all\": null\n  }");
    }
}

/* Read bandwidth per thread count (none: the physical cores); the best in *gbps. fmt NULL:
 * print nothing; "md": one line each; "csv" / "json": rows / an array of objects. Returns
 * 0 or 1. */
static int measure_bandwidth(const int *threads, int n, const char *fmt, double *gbps)
{
    int list[EDGELLM_BENCH_MAX_THREADS_LIST + 1], m = 0;
    for (int i = 0; i < n; i++) list[m++] = threads[i];
    if (m == 0) list[m++] = 0;   /* physical cores */
    *gbps = 0;
    const bool csv = fmt && !strcmp(fmt, "csv"), json = fmt && !strcmp(fmt, "json");
    if (csv) printf("n_threads,best_gbps,median_gbps,mean_gbps,n_runs,buffer_bytes\n");
    if (json) printf("[\n");
    for (int i = 0; i < m; i++) {
        edgellm_membw_params p = edgellm_membw_default_params();
        p.n_threads = list[i];
        edgellm_membw_result r;
        edgellm_error err = {0};
        if (edgellm_membw_measure(&p, &r, &err) != EDGELLM_OK) {
            if (json) printf("]\n");   /* what was measured stays an array */
            cli_print_error("bench", &err);
            return 1;
        }
        if (csv) {
            printf("%d,%.4f,%.4f,%.4f,%d,%llu\n", r.n_threads, r.best_gbps, r.median_gbps, r.mean_gbps, r.n_runs,
                   (unsigned long long)r.buffer_bytes);
        } else if (json) {
            printf("%s  {\"n_threads\": %d, \"best_gbps\": %.4f, \"median_gbps\": %.4f, \"mean_gbps\": %.4f, "
                   "\"n_runs\": %d, \"buffer_bytes\": %llu}",
                   i ? ",\n" : "", r.n_threads, r.best_gbps, r.median_gbps, r.mean_gbps, r.n_runs,
                   (unsigned long long)r.buffer_bytes);
        } else if (fmt) {
            printf("memory read bandwidth: %.2f GB/s best, %.2f GB/s median, %.2f GB/s mean (%d thread%s, %d runs, "
                   "%.0f MiB buffer)\n",
                   r.best_gbps, r.median_gbps, r.mean_gbps, r.n_threads, r.n_threads == 1 ? "" : "s", r.n_runs,
                   (double)r.buffer_bytes / 1048576.0);
        }
        fflush(stdout);
        if (r.best_gbps > *gbps) *gbps = r.best_gbps;
    }
    if (json) printf("\n]\n");
    return 0;
}

/* ---- -b: batched decoding, llama.cpp batched-bench's table (tools/batched-bench) ---- */

typedef struct {
    int fmt;                     /* 0 md, 1 csv, 2 json                                        */
    const char *path;
    bool header_done;            /* md: this model's table started                             */
    bool *first_json;            /* json: no comma before the first object of the array        */
    double s_tg_b1;              /* S_TG at B = 1, for the ratios (0: not run)                 */
    char ratios[256];
    edgellm_batched_bench_info info;
    int n_rows;
    double max_wait;             /* largest wait_frac of the rows (unknown ones: not counted)   */
    double peak_b1;              /* s_tg_peak at B = 1                                         */
    char peaks[320];
} batched_out;

static const char *batched_csv_header =
    "model_filename,model_type,n_threads,type_k,type_v,n_ctx_seq,kv_bytes_per_seq,pp,tg,pl,n_kv,t_pp,speed_pp,t_tg,"
    "speed_tg,t,speed,wait_frac,speed_tg_peak\n";

static int batched_row(const edgellm_batched_bench_info *info, const edgellm_batched_bench_row *r, void *user)
{
    batched_out *o = user;
    o->info = *info;
    o->n_rows++;
    if (r->wait_frac > o->max_wait) o->max_wait = r->wait_frac;
    if (r->b == 1) o->s_tg_b1 = r->s_tg;
    if (o->fmt == 0) {
        if (!o->header_done) {
            printf("\n%s: %s, %d thread%s, KV %s, n_ctx %d per sequence (%d sequences)\n\n", o->path, info->model_type,
                   info->n_threads, info->n_threads == 1 ? "" : "s", cli_kv_type_name(info->kv_type), info->n_ctx,
                   info->n_seq);
            printf("|%6s | %6s | %4s | %6s | %8s | %8s | %8s | %8s | %8s | %8s |\n", "PP", "TG", "B", "N_KV", "T_PP s",
                   "S_PP t/s", "T_TG s", "S_TG t/s", "T s", "S t/s");
            printf("|%6s-|-%6s-|-%4s-|-%6s-|-%8s-|-%8s-|-%8s-|-%8s-|-%8s-|-%8s-|\n", "------", "------", "----",
                   "------", "--------", "--------", "--------", "--------", "--------", "--------");
            o->header_done = true;
        }
        printf("|%6d | %6d | %4d | %6d | %8.3f | %8.2f | %8.3f | %8.2f | %8.3f | %8.2f |\n", r->pp, r->tg, r->b,
               r->n_kv, r->t_pp, r->s_pp, r->t_tg, r->s_tg, r->t, r->s);
    } else if (o->fmt == 1) {
        cli_csv_str(stdout, o->path);
        putchar(',');
        cli_csv_str(stdout, info->model_type);
        const char *kv = cli_kv_type_name(info->kv_type);
        printf(",%d,%s,%s,%d,%llu,%d,%d,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.4f,%.6f\n", info->n_threads, kv, kv,
               info->n_ctx, (unsigned long long)info->kv_bytes_per_seq, r->pp, r->tg, r->b, r->n_kv, r->t_pp, r->s_pp,
               r->t_tg, r->s_tg, r->t, r->s, r->wait_frac, r->s_tg_peak);
    } else {
        printf("%s  {\"model_filename\": ", *o->first_json ? "" : ",\n");
        *o->first_json = false;
        cli_json_str(stdout, o->path);
        printf(", \"model_type\": ");
        cli_json_str(stdout, info->model_type);
        const char *kv = cli_kv_type_name(info->kv_type);
        printf(", \"n_threads\": %d, \"type_k\": \"%s\", \"type_v\": \"%s\", \"n_ctx_seq\": %d, \"kv_bytes_per_seq\": "
               "%llu, \"pp\": %d, \"tg\": %d, \"pl\": %d, \"n_kv\": %d, \"t_pp\": %.6f, \"speed_pp\": %.6f, "
               "\"t_tg\": %.6f, \"speed_tg\": %.6f, \"t\": %.6f, \"speed\": %.6f, \"wait_frac\": %.4f, "
               "\"speed_tg_peak\": %.6f}",
               info->n_threads, kv, kv, info->n_ctx, (unsigned long long)info->kv_bytes_per_seq, r->pp, r->tg, r->b,
               r->n_kv, r->t_pp, r->s_pp, r->t_tg, r->s_tg, r->t, r->s, r->wait_frac, r->s_tg_peak);
    }
    if (r->b == 1) o->peak_b1 = r->s_tg_peak;
    if (o->s_tg_b1 > 0 && r->b > 1) {
        const size_t len = strlen(o->ratios);
        snprintf(o->ratios + len, sizeof o->ratios - len, "%sB=%d %.2fx", len ? ", " : "", r->b, r->s_tg / o->s_tg_b1);
    }
    {
        const size_t len = strlen(o->peaks);
        snprintf(o->peaks + len, sizeof o->peaks - len, "%sB=%d %.1f t/s", len ? ", " : "", r->b, r->s_tg_peak);
        if (o->peak_b1 > 0 && r->b > 1)
            snprintf(o->peaks + strlen(o->peaks), sizeof o->peaks - strlen(o->peaks), " (%.2fx)",
                     r->s_tg_peak / o->peak_b1);
    }
    fflush(stdout);
    return 0;
}

/* md: what the table does not say (KV bytes against plan's formula, S_TG ratios, load). */
static void batched_footer(const batched_out *o, const char *cpu)
{
    const edgellm_batched_bench_info *in = &o->info;
    edgellm_plan_model pm;
    edgellm_error err = {0};
    uint64_t plan_kv = 0;
    if (edgellm_plan_model_from_gguf(o->path, &pm, &err) == EDGELLM_OK)
        plan_kv = edgellm_plan_kv_bytes(pm.n_layer, in->n_ctx, pm.n_head_kv, pm.head_dim, in->kv_type);
    printf("\nKV cache per sequence: %.2f MiB (%d cells, %s; plan computes %.2f MiB)\n",
           (double)in->kv_bytes_per_seq / 1048576.0, in->n_ctx, cli_kv_type_name(in->kv_type), (double)plan_kv / 1048576.0);
    if (o->ratios[0]) printf("aggregate generation (S_TG) vs B=1: %s\n", o->ratios);
    if (o->peaks[0]) printf("fastest TG step, as aggregate tok/s: %s\n", o->peaks);
    if (o->max_wait >= 0.05)   /* a shared machine: the rows understate the code */
        printf("note: other processes held the cores up to %.0f %% of the threads' time (run-queue wait)\n",
               100.0 * o->max_wait);
    char k[256];
    edgellm_kernels_describe(k, sizeof k);
    printf("CPU: %s; kernels: %s\n", cpu, k);
}

static int run_batched(const char *const *models, int n_models, const edgellm_bench_params *bp, const int *sizes,
                       int n_sizes, int format)
{
    char cpu[128];
    edgellm_bench_cpu_info(cpu, sizeof cpu);
    bool first_json = true;
    int rc = 0;
    if (format == 1) fputs(batched_csv_header, stdout);
    if (format == 2) printf("[\n");
    for (int mi = 0; mi < n_models; mi++)
        for (int ti = 0; ti < CLI_MAX(bp->n_threads_list, 1); ti++) {
            edgellm_batched_bench_params p = edgellm_batched_bench_default_params();
            p.n_prompt = bp->n_prompt;
            p.n_gen = bp->n_gen;
            for (int i = 0; i < n_sizes; i++) p.sizes[i] = sizes[i];
            p.n_sizes = n_sizes;
            p.n_threads = bp->n_threads_list > 0 ? bp->threads[ti] : 0;
            p.kv_type = bp->kv_type;
            p.n_reps = bp->n_reps;
            p.warmup = bp->warmup;
            p.progress = bp->progress;
            batched_out o = {.fmt = format, .path = models[mi], .first_json = &first_json};
            edgellm_error err = {0};
            if (edgellm_batched_bench(models[mi], &p, batched_row, &o, &err) != EDGELLM_OK) {
                if (p.progress) fprintf(stderr, "\n");
                cli_print_error("bench", &err);
                rc = 1;
                continue;
            }
            if (format == 0) batched_footer(&o, cpu);
        }
    if (format == 2) printf("\n]\n");
    return rc;
}

static const cli_choice formats[] = {{"md", 0}, {"csv", 1}, {"json", 2}, {NULL, 0}};

/* --cold-warm and --mem-budget (edgellm_bench_start): md tables, or one JSON object per
 * model with "test": "start" after its llama-bench objects. */
static void print_start(const char *path, const edgellm_bench_start_params *sp, const edgellm_bench_start_report *s,
                        bool json, int *first)
{
    const double mib = 1024.0 * 1024.0;
    if (json) {
        printf("%s  {\n    \"model_filename\": ", *first ? "" : ",\n");
        *first = 0;
        cli_json_str(stdout, path);
        printf(",\n    \"test\": \"start\",\n    \"n_prompt\": %d,\n    \"n_gen\": %d", sp->n_prompt, sp->n_gen);
        if (sp->cold_warm)
            printf(",\n    \"cold_dropped\": %s,\n    \"cold_resident_frac\": %.4f,\n    \"cold_load_ms\": %.3f,\n"
                   "    \"cold_ttft_ms\": %.3f,\n    \"warm_load_ms\": %.3f,\n    \"warmup_ms\": %.3f,\n"
                   "    \"warm_ttft_ms\": %.3f", s->cold_dropped ? "true" : "false", s->cold_resident_frac,
                   s->cold_load_ms, s->cold_ttft_ms, s->warm_load_ms, s->warmup_ms, s->warm_ttft_ms);
        if (s->budget_bytes)
            printf(",\n    \"mem_budget_bytes\": %llu,\n    \"tg_ts_no_budget\": %.4f,\n    \"tg_ts_budget\": %.4f,\n"
                   "    \"peak_rss_bytes_no_budget\": %llu,\n    \"peak_rss_bytes_budget\": %llu,\n"
                   "    \"budget_window_layers\": %d,\n    \"n_layer\": %d", (unsigned long long)s->budget_bytes,
                   s->full_tg_ts, s->budget_tg_ts, (unsigned long long)s->full_peak_rss_bytes,
                   (unsigned long long)s->budget_peak_rss_bytes, s->budget_window_layers, s->n_layer);
        printf("\n  }");
        return;
    }
    if (sp->cold_warm) {
        printf("\n%s: first token (pp%d + 1 decode) of a fresh load:\n\n", path, sp->n_prompt);
        printf("| start | load ms | warm-up ms | first token ms | page cache before the load |\n");
        printf("| ----- | ------: | ---------: | -------------: | -------------------------- |\n");
        char cache[160];
        if (s->cold_resident_frac < 0)
            snprintf(cache, sizeof cache, "dropped (posix_fadvise), residency unknown (mincore failed): maybe not cold");
        else if (s->cold_dropped)
            snprintf(cache, sizeof cache, "dropped: %.1f %% resident (mincore)", 100.0 * s->cold_resident_frac);
        else
            snprintf(cache, sizeof cache, "NOT dropped: %.0f %% still resident (the kernel keeps pages another process maps): not cold",
                     100.0 * s->cold_resident_frac);
        printf("| cold | %.1f | - | %.1f | %s |\n", s->cold_load_ms, s->cold_ttft_ms, cache);
        printf("| warm (--warmup) | %.1f | %.1f | %.1f | the same drop (%.1f %% resident) |\n", s->warm_load_ms,
               s->warmup_ms, s->warm_ttft_ms, s->warm_resident_frac < 0 ? -1.0 : 100.0 * s->warm_resident_frac);
    }
    if (s->budget_bytes) {
        printf("\n%s: low-memory mode (tg%d after pp%d, file in the page cache):\n\n", path, sp->n_gen, sp->n_prompt);
        printf("| --mem-budget | tg t/s | peak RSS MiB | layers resident |\n");
        printf("| -----------: | -----: | -----------: | --------------: |\n");
        printf("| none | %.2f | %.1f | all %d |\n", s->full_tg_ts, s->full_peak_rss_bytes / mib, s->n_layer);
        printf("| %.1f MiB | %.2f | %.1f | %d of %d |\n", s->budget_bytes / mib, s->budget_tg_ts,
               s->budget_peak_rss_bytes / mib, s->budget_window_layers, s->n_layer);
        if (s->full_tg_ts > 0)
            printf("speed with the budget: %.3gx; peak RSS: %.2fx\n", s->budget_tg_ts / s->full_tg_ts,
                   s->full_peak_rss_bytes ? (double)s->budget_peak_rss_bytes / (double)s->full_peak_rss_bytes : 0.0);
    }
}

int cmd_bench(int argc, char **argv)
{
    edgellm_bench_params p = edgellm_bench_default_params();
    const char *models[MAX_MODELS];
    cli_list model_list = {models, 0, MAX_MODELS};
    int bandwidth = 0, format = 0, n_reps_given = 0;
    edgellm_bench_start_params sp = edgellm_bench_start_default_params();
    sp.cold_warm = 0;
    int sizes[EDGELLM_BATCHED_MAX_SIZES], n_sizes = 0;
    int_list batch_sizes = {sizes, &n_sizes, EDGELLM_BATCHED_MAX_SIZES, 1, 64, "batch sizes"};
    int_list threads = {p.threads, &p.n_threads_list, EDGELLM_BENCH_MAX_THREADS_LIST, 1, 64, "thread counts"};
    int_list depths = {p.depths, &p.n_depths, EDGELLM_BENCH_MAX_DEPTHS, 0, 1 << 20, "depths"};
    cli_bench_spec_opts spec = {.sp = edgellm_spec_default_params(), .prompt = "Once upon a time"};
    const char *spec_file = NULL;
    int draft_fixed = 0;
    const cli_opt opts[] = {
        {CLI_LIST("-m", "--model", "MODEL.gguf", &model_list), .help = "GGUF model (repeatable)"},
        {CLI_INT("-p", "--n-prompt", "N", &p.n_prompt, 0, 1 << 20), .show_default = 1,
         .help = "prompt-processing test pp<N>: one pass of N tokens, 0 = skip"},
        {CLI_INT("-n", "--n-gen", "N", &p.n_gen, 0, 1 << 20), .show_default = 1,
         .help = "text-generation test tg<N>: N single-token decodes, 0 = skip"},
        {CLI_CUSTOM("-t", "--threads", "LIST", &threads, parse_int_list),
         .help = "thread counts, comma-separated", .def = "physical cores"},
        {CLI_CUSTOM("-d", "--n-depth", "LIST", &depths, parse_int_list),
         .help = "context depths, comma-separated: each test also runs with that many tokens already in the KV "
                 "cache, as \"tg64 @ d1024\"", .def = "0"},
        {CLI_INT("-r", "--repetitions", "N", &p.n_reps, 1, 1000), .show_default = 1, .count = &n_reps_given,
         .help = "runs per test, reported as mean ± stddev (with -b: runs per batch size, mean; default 1)"},
        {CLI_CUSTOM("-b", "--batch", "LIST", &batch_sizes, parse_int_list),
         .help = "batched decoding, as llama.cpp's llama-batched-bench: for each B (comma-separated), B sequences "
                 "prefill -p tokens each in one pass, then generate -n tokens together; prints PP, TG, B, N_KV, "
                 "T_PP s, S_PP t/s, T_TG s, S_TG t/s (aggregate generation), T s, S t/s"},
        {CLI_ENUM("-o", "--output", "FMT", &format, formats), .help = "md, csv or json", .def = "md"},
        {CLI_OPT_KV_TYPE(&p.kv_type)},
        {CLI_FLAG(NULL, "--bandwidth", &bandwidth, 1),
         .help = "measure memory-read bandwidth (alone: print it and exit)"},
        {CLI_DOUBLE(NULL, "--bw-gbps", "X", &p.bw_gbps, 0, INFINITY, CLI_OPEN_MIN),
         .help = "use X GB/s for the roofline instead of measuring"},
        {CLI_FLAG(NULL, "--no-warmup", &p.warmup, 0), .help = "skip the warm-up run"},
        {CLI_FLAG(NULL, "--no-cold", &p.cold_load, 0),
         .help = "do not drop the file from the page cache before the first load"},
        {CLI_FLAG(NULL, "--cold-warm", &sp.cold_warm, 1),
         .help = "also time the first token (pp + 1 decode) of a fresh load, cold (file dropped from the page "
                 "cache where permitted, else said) and after --warmup"},
        {CLI_CUSTOM(NULL, "--mem-budget", "SIZE", &sp.mem_budget_bytes, cli_parse_size),
         .help = "also decode with run's low-memory mode at this budget (300M, 1.5G): tok/s and peak RSS against no "
                 "budget"},
        {CLI_GROUP("speculative decoding (plain and speculative greedy runs of -n tokens, alternating)")},
        {CLI_STRING(NULL, "--draft", "DRAFT.gguf|self:TYPE", &spec.draft), .help = "as run --draft"},
        {CLI_INT(NULL, "--lookup", "N", &spec.sp.lookup, 0, 1024), .show_default = 1, .help = "as run --lookup"},
        {CLI_INT(NULL, "--draft-max", "K", &spec.sp.draft_max, 1, 64), .show_default = 1,
         .help = "draft tokens per target pass at most"},
        {CLI_FLAG(NULL, "--draft-fixed", &draft_fixed, 1), .help = "always draft --draft-max tokens"},
        {CLI_PATH(NULL, "--prompt-file", "FILE", &spec_file), .help = "the prompt of the runs",
         .def = "\"Once upon a time\""},
    };
    const cli_command cmd = {
        .name = "bench",
        .synopsis = "edgellm bench -m MODEL.gguf [-m MODEL2.gguf ...] [options]\n"
                    "edgellm bench -m MODEL.gguf -b 1,2,4,8 [-p PP] [-n TG] [-t LIST] [-o md|csv|json]\n"
                    "edgellm bench --bandwidth [-t LIST] [-o md|csv|json]",
        .about = "Measure prompt processing (pp) and text generation (tg) speed, time to first token, load time,\n"
                 "peak memory and the bandwidth roofline, as llama-bench does.",
        .opts = opts, .n_opts = CLI_N_OPTS(opts),
    };
    const int parsed = cli_args_parse(&cmd, argc, argv);
    if (parsed != CLI_ARGS_GO) return parsed;
    const char *fmt = formats[format].name;
    const int n_models = model_list.n;
    if (n_models == 0 && !bandwidth) return cli_args_missing(&cmd, argc, "give -m MODEL.gguf (or --bandwidth)");
    if (p.n_prompt == 0 && p.n_gen == 0 && n_models)
        return cli_args_error(&cmd, "-p 0 and -n 0 leave nothing to measure");
    if (spec.draft || spec.sp.lookup > 0) {
        if (n_sizes > 0 || bandwidth || p.n_depths > 0 || p.n_gen == 0)
            return cli_args_error(&cmd, "--draft/--lookup need -n >= 1 and do not take -b, -d or --bandwidth");
        spec.sp.adaptive = !draft_fixed;
        edgellm_error err = {0};
        size_t len = 0;
        char *text = spec_file ? cli_read_text(spec_file, &len, &err) : NULL;
        if (spec_file && !text) { cli_print_error("bench", &err); return 1; }
        if (text) spec.prompt = text;
        if (isatty(fileno(stderr))) p.progress = progress;
        const int rc = cli_bench_spec(models, n_models, &p, &spec, format);
        free(text);
        return rc;
    }
    if (n_sizes > 0) {
        if (p.n_gen == 0) return cli_args_error(&cmd, "-b needs -n >= 1 (the tokens each sequence generates)");
        if (bandwidth || p.n_depths > 0 || p.bw_gbps > 0 || !p.cold_load)
            return cli_args_error(&cmd, "-b does not take --bandwidth, -d, --bw-gbps or --no-cold");
    }
    const bool start = sp.cold_warm || sp.mem_budget_bytes;
    if (start && (n_sizes > 0 || format == 1))
        return cli_args_error(&cmd, "--cold-warm and --mem-budget go with -o md or json, not -b or -o csv");
    /* the budget needs the file's layout (a repacked matrix is owned memory it cannot release):
     * every load of this run, the no-budget one too, so both read the same bytes */
    if (sp.mem_budget_bytes) setenv("EDGELLM_REPACK", "0", 1);
    /* every model must open (a readable, valid GGUF) before anything reaches stdout; a note
     * when the tests reach past a model's trained context (speed is measured all the same;
     * a model's output there is another matter) */
    long reach = (long)p.n_prompt + (p.n_gen > 0 ? p.n_gen : 1), max_depth = 0;
    for (int d = 0; d < p.n_depths; d++) max_depth = p.depths[d] > max_depth ? p.depths[d] : max_depth;
    reach += max_depth;
    for (int mi = 0; mi < n_models; mi++) {
        edgellm_gguf_meta *g = NULL;
        edgellm_error err = {0};
        if (edgellm_gguf_meta_open(models[mi], &g, &err) != EDGELLM_OK) { cli_print_error("bench", &err); return 1; }
        const long long train = cli_gguf_ctx_train(g);
        edgellm_gguf_meta_close(g);
        if (train > 0 && reach > train)
            fprintf(stderr, "edgellm bench: note: %s: the tests reach %ld positions (-d + -p + -n), past its trained "
                            "context length %lld; the speed is measured all the same\n", models[mi], reach, train);
    }
    if (n_sizes > 0) {   /* every model opened above */
        if (!n_reps_given) p.n_reps = 1;
        if (isatty(fileno(stderr))) p.progress = progress;
        return run_batched(models, n_models, &p, sizes, n_sizes, format);
    }
    if (bandwidth) {
        double gbps;
        /* alone: the table goes to stdout; with models: a note on stderr, value used below */
        if (n_models == 0) return measure_bandwidth(p.threads, p.n_threads_list, fmt, &gbps);
        if (!(p.bw_gbps > 0)) {
            if (measure_bandwidth(NULL, 0, NULL, &gbps)) return 1;
            p.bw_gbps = gbps;
            fprintf(stderr, "edgellm bench: memory read bandwidth %.2f GB/s\n", gbps);
        }
    }
    if (isatty(fileno(stderr))) p.progress = progress;

    char cpu[128], when[32];
    edgellm_bench_cpu_info(cpu, sizeof cpu);   /* llama-bench's cpu_info: results compare per CPU */
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    int first = 1, rc = 0;
    edgellm_bench_report *reps = calloc((size_t)n_models, sizeof *reps);
    if (!reps) { fprintf(stderr, "edgellm bench: out of memory\n"); return 1; }
    if (!strcmp(fmt, "json")) printf("[\n");
    else if (!strcmp(fmt, "csv")) fputs(csv_header, stdout);
    /* a model that fails (e.g. one that opens but does not load) is reported on stderr and
     * skipped; the others are still measured; the exit status is then 1. The markdown
     * table's header comes with its first row: no empty table when every model fails
     * (JSON stays an array, CSV keeps its header line: both still parse). */
    bool md_started = false;
    bool *ok = calloc((size_t)n_models, sizeof *ok);
    if (!ok) { free(reps); fprintf(stderr, "edgellm bench: out of memory\n"); return 1; }
    for (int mi = 0; mi < n_models; mi++) {
        edgellm_error err = {0};
        if (edgellm_bench(models[mi], &p, &reps[mi], &err) != EDGELLM_OK) {
            if (p.progress) fprintf(stderr, "\n");
            cli_print_error("bench", &err);
            rc = 1;
            continue;
        }
        ok[mi] = true;
        if (!strcmp(fmt, "json")) print_json(models[mi], cpu, when, &reps[mi], &first);
        else if (!strcmp(fmt, "csv")) print_csv(models[mi], cpu, when, &reps[mi]);
        else {
            if (!md_started) print_md_header(p.kv_type);
            md_started = true;
            print_md(&reps[mi]);
        }
        if (start && !strcmp(fmt, "json")) {
            sp.n_prompt = p.n_prompt > 0 ? p.n_prompt : sp.n_prompt;
            sp.n_gen = p.n_gen > 0 ? p.n_gen : sp.n_gen;
            sp.n_threads = p.n_threads_list > 0 ? p.threads[0] : 0;
            edgellm_bench_start_report sr;
            if (edgellm_bench_start(models[mi], &sp, &sr, &err) != EDGELLM_OK) { cli_print_error("bench", &err); rc = 1; }
            else print_start(models[mi], &sp, &sr, true, &first);
        }
        fflush(stdout);
    }
    if (!strcmp(fmt, "json")) printf("\n]\n");
    else if (!strcmp(fmt, "md")) {
        for (int mi = 0; mi < n_models; mi++)
            if (ok[mi]) print_md_footer(models[mi], &reps[mi]);
        for (int mi = 0; mi < n_models && start; mi++) {
            if (!ok[mi]) continue;
            sp.n_prompt = p.n_prompt > 0 ? p.n_prompt : sp.n_prompt;
            sp.n_gen = p.n_gen > 0 ? p.n_gen : sp.n_gen;
            sp.n_threads = p.n_threads_list > 0 ? p.threads[0] : 0;
            edgellm_bench_start_report sr;
            edgellm_error err = {0};
            if (edgellm_bench_start(models[mi], &sp, &sr, &err) != EDGELLM_OK) { cli_print_error("bench", &err); rc = 1; }
            else print_start(models[mi], &sp, &sr, false, NULL);
        }
        char k[256];
        edgellm_kernels_describe(k, sizeof k);
        if (md_started) printf("CPU: %s; kernels: %s\n", cpu, k);   /* tuned per CPU: say which */
    }
    free(ok);
    free(reps);
    return rc;
}
