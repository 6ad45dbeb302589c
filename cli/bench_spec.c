/* bench_spec.c — speculative decoding in 'edgellm bench' (--draft / --lookup) and the draft
 * loader that run, bench and serve share (--draft FILE | self:TYPE).
 *
 * For each model and thread count: a warm-up, then -r rounds of one plain greedy generation
 * of -n tokens (edgellm_generate) and one speculative (edgellm_generate_speculative) on the
 * same prompt, alternating so that load changes hit both alike; both start from an empty
 * cache. A row: median decode tok/s of each, their ratio (the speed-up), acceptance
 * (accepted / drafted), accepted tokens per checked draft (the mean accepted length),
 * target passes per generated token, and whether the texts were identical (greedy: they
 * must be). Acceptance and passes are exact (load-independent); tok/s are not. */
#include "commands.h"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

edgellm_status cli_draft_load(const char *model_path, const char *arg, const edgellm_model_params *mp,
                              edgellm_model **out, edgellm_error *err)
{
    if (strncmp(arg, "self:", 5)) return edgellm_model_load(arg, mp, out, err);
    const char *dir = getenv("TMPDIR");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/edgellm-draft-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(err->msg, sizeof err->msg, "%.400s: cannot create a temporary file for the self-draft", tmp);
        return EDGELLM_ERR_IO;
    }
    close(fd);
    edgellm_quantize_params qp = edgellm_quantize_default_params();
    qp.type = arg + 5;
    qp.n_threads = mp->n_threads > 0 ? mp->n_threads : 0;
    edgellm_status s = edgellm_quantize_file(model_path, tmp, &qp, NULL, err);
    if (s == EDGELLM_OK) {
        /* The file just written sits in the page cache as 4 KiB pages, mapped as such: after
         * the target's pass has streamed its own weights through the caches, the draft's
         * next pass pays a page walk per 4 KiB (on a 2-vCPU VM ~200 ms for a 1B Q4_0 draft
         * whose pass otherwise takes 25 ms). Written back and dropped, it is read again by
         * the load, in the large pages readahead uses. Best effort: a failure only costs time. */
        (void)edgellm_file_drop_cache(tmp, NULL, NULL);
        s = edgellm_model_load(tmp, mp, out, err);
    }
    unlink(tmp);
    return s;
}

typedef struct {
    char *buf;
    size_t len, cap;
} text_buf;

static int collect(int32_t token, const char *piece, size_t len, void *user)
{
    (void)token;
    text_buf *t = user;
    if (t->len + len + 1 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        while (cap < t->len + len + 1) cap *= 2;
        char *b = realloc(t->buf, cap);
        if (!b) return 1;
        t->buf = b, t->cap = cap;
    }
    memcpy(t->buf + t->len, piece, len);
    t->len += len;
    t->buf[t->len] = 0;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct {
    int n_threads, n_gen;
    double plain_ts, spec_ts;
    edgellm_spec_stats ss;      /* summed over the rounds                                   */
    int n_generated;            /* speculative tokens, summed                               */
    bool identical;
} spec_row;

/* One generation from an empty cache; *ts its decode tok/s. */
static edgellm_status one_run(edgellm_ctx *c, edgellm_ctx *d, const char *prompt, const edgellm_generate_params *gp,
                              const edgellm_spec_params *sp, text_buf *out, double *ts, edgellm_spec_stats *ss,
                              int *n_gen, edgellm_error *err)
{
    edgellm_status s = edgellm_seq_clear(c, 0, err);
    if (s == EDGELLM_OK && d) s = edgellm_seq_clear(d, 0, err);
    if (s != EDGELLM_OK) return s;
    out->len = 0;
    edgellm_generate_stats st = {.size = sizeof st};
    s = sp ? edgellm_generate_speculative(c, d, prompt, gp, sp, collect, out, &st, ss, err)
           : edgellm_generate(c, prompt, gp, collect, out, &st, err);
    *ts = st.decode_ms > 0 ? st.n_generated * 1000.0 / st.decode_ms : 0;
    if (n_gen) *n_gen = st.n_generated;
    return s;
}

static edgellm_status bench_one(const char *path, const cli_bench_spec_opts *o, const edgellm_bench_params *bp,
                                int n_threads, spec_row *row, edgellm_error *err)
{
    edgellm_model_params mp = edgellm_model_default_params();
    mp.n_threads = n_threads;
    edgellm_model *m = NULL, *dm = NULL;
    edgellm_ctx *c = NULL, *d = NULL;
    text_buf ta = {0}, tb = {0};
    double *tsp = calloc((size_t)bp->n_reps * 2, sizeof *tsp), *tss = tsp ? tsp + bp->n_reps : NULL;
    edgellm_status s = tsp ? edgellm_model_load(path, &mp, &m, err) : EDGELLM_ERR_NOMEM;
    if (s == EDGELLM_OK && o->draft) s = cli_draft_load(path, o->draft, &mp, &dm, err);
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_threads = n_threads;
    cp.kv_type = bp->kv_type;
    if (s == EDGELLM_OK) s = edgellm_ctx_new(m, &cp, &c, err);
    if (s == EDGELLM_OK && dm) {
        cp.n_ctx = edgellm_ctx_n_ctx(c);
        s = edgellm_ctx_new(dm, &cp, &d, err);
    }
    edgellm_generate_params gp = edgellm_generate_default_params();
    gp.n_predict = bp->n_gen;
    gp.sampling.temperature = 0;
    row->n_threads = c ? edgellm_ctx_n_threads(c) : n_threads;
    row->n_gen = bp->n_gen;
    row->identical = true;
    row->ss = (edgellm_spec_stats){.size = sizeof row->ss};
    row->n_generated = 0;
    double ts;
    if (s == EDGELLM_OK && bp->warmup) s = one_run(c, NULL, o->prompt, &gp, NULL, &ta, &ts, NULL, NULL, err);
    for (int r = 0; s == EDGELLM_OK && r < bp->n_reps; r++) {
        if (bp->progress) bp->progress(NULL, (double)r / bp->n_reps, path);
        edgellm_spec_stats ss = {.size = sizeof ss};
        int n = 0;
        s = one_run(c, NULL, o->prompt, &gp, NULL, &ta, &tsp[r], NULL, NULL, err);
        if (s == EDGELLM_OK) s = one_run(c, d, o->prompt, &gp, &o->sp, &tb, &tss[r], &ss, &n, err);
        if (s != EDGELLM_OK) break;
        row->identical &= ta.len == tb.len && (ta.len == 0 || !memcmp(ta.buf, tb.buf, ta.len));
        row->ss.n_drafted += ss.n_drafted, row->ss.n_accepted += ss.n_accepted, row->ss.n_lookup += ss.n_lookup;
        row->ss.n_passes += ss.n_passes, row->ss.n_draft_passes += ss.n_draft_passes;
        row->n_generated += n;
    }
    if (bp->progress) bp->progress(NULL, 1.0, path);
    if (s == EDGELLM_OK) {
        row->plain_ts = median(tsp, bp->n_reps);
        row->spec_ts = median(tss, bp->n_reps);
    }
    free(ta.buf);
    free(tb.buf);
    free(tsp);
    edgellm_ctx_free(d);
    edgellm_model_free(dm);
    edgellm_ctx_free(c);
    edgellm_model_free(m);
    return s;
}

static void print_row(int fmt, const char *path, const char *draft, const spec_row *r, bool *first)
{
    const edgellm_spec_stats *ss = &r->ss;
    const double acc = ss->n_drafted ? (double)ss->n_accepted / ss->n_drafted : 0;
    const double len = ss->n_draft_passes ? (double)ss->n_accepted / ss->n_draft_passes : 0;
    const double ppt = r->n_generated ? (double)ss->n_passes / r->n_generated : 0;
    const double up = r->plain_ts > 0 ? r->spec_ts / r->plain_ts : 0;
    if (fmt == 0) {
        printf("| %s | %s | %d | tg%d | %.2f | %.2f | %.2fx | %.1f %% (%d/%d) | %.2f | %.3f | %s |\n", path, draft,
               r->n_threads, r->n_gen, r->plain_ts, r->spec_ts, up, 100 * acc, ss->n_accepted, ss->n_drafted, len,
               ppt, r->identical ? "identical" : "DIFFERENT");
    } else if (fmt == 1) {
        cli_csv_str(stdout, path);
        putchar(',');
        cli_csv_str(stdout, draft);
        printf(",%d,%d,%.6f,%.6f,%.4f,%d,%d,%d,%.4f,%.4f,%.4f,%d\n", r->n_threads, r->n_gen, r->plain_ts, r->spec_ts, up,
               ss->n_drafted, ss->n_accepted, ss->n_lookup, acc, len, ppt, r->identical);
    } else {
        printf("%s  {\"model_filename\": ", *first ? "" : ",\n");
        cli_json_str(stdout, path);
        printf(", \"draft\": ");
        cli_json_str(stdout, draft);
        printf(", \"n_threads\": %d, \"n_gen\": %d, \"plain_ts\": %.6f, \"spec_ts\": %.6f, \"speedup\": %.4f, "
               "\"n_drafted\": %d, \"n_accepted\": %d, \"n_lookup\": %d, \"acceptance\": %.4f, "
               "\"accepted_per_draft\": %.4f, \"passes_per_token\": %.4f, \"identical\": %s}",
               r->n_threads, r->n_gen, r->plain_ts, r->spec_ts, up, ss->n_drafted, ss->n_accepted, ss->n_lookup, acc,
               len, ppt, r->identical ? "true" : "false");
    }
    *first = false;
    fflush(stdout);
}

int cli_bench_spec(const char *const *models, int n_models, const edgellm_bench_params *bp, const cli_bench_spec_opts *o,
                   int fmt)
{
    char draft[512];
    if (o->draft && o->sp.lookup > 0) snprintf(draft, sizeof draft, "%s + lookup %d", o->draft, o->sp.lookup);
    else if (o->draft) snprintf(draft, sizeof draft, "%s", o->draft);
    else snprintf(draft, sizeof draft, "lookup %d", o->sp.lookup);
    if (o->sp.adaptive == 0) snprintf(draft + strlen(draft), sizeof draft - strlen(draft), ", fixed %d", o->sp.draft_max);
    bool first = true;
    int rc = 0;
    if (fmt == 0)
        printf("| model | draft | threads | test | plain t/s | spec t/s | speed-up | accepted | accepted per draft | "
               "passes per token | output |\n| ----- | ----- | ------: | ---- | --------: | -------: | -------: | "
               "-------: | ---: | ---: | ----- |\n");
    else if (fmt == 1)
        printf("model_filename,draft,n_threads,n_gen,plain_ts,spec_ts,speedup,n_drafted,n_accepted,n_lookup,acceptance,"
               "accepted_per_draft,passes_per_token,identical\n");
    else printf("[\n");
    for (int mi = 0; mi < n_models; mi++)
        for (int ti = 0; ti < CLI_MAX(bp->n_threads_list, 1); ti++) {
            spec_row row = {0};
            edgellm_error err = {0};
            if (bench_one(models[mi], o, bp, bp->n_threads_list > 0 ? bp->threads[ti] : 0, &row, &err)) {
                if (bp->progress) fprintf(stderr, "\n");
                cli_print_error("bench", &err);
                rc = 1;
                continue;
            }
            print_row(fmt, models[mi], draft, &row, &first);
        }
    if (fmt == 2) printf("\n]\n");
    else if (fmt == 0)
        printf("\nplain and speculative greedy runs alternate (-r rounds, median tok/s of the decode); accepted, "
               "accepted per draft and passes per token are summed over the rounds and do not depend on load\n");
    return rc;
}
