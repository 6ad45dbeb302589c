/*
 * soak.c — edgellm_soak: a long, varied generation workload measured per interval, and its
 * analysis (drift slopes with confidence intervals, throughput retention, verdict).
 *
 * Workload: requests one after another on one context; each draws a prompt from the set and
 * a length in [n_predict/2, n_predict]; a share continue_frac appends to the conversation
 * (the KV cache grows, as a chat's does) while it fits, the rest start a new one. Sampling
 * at temperature 0.8 with the run's seed. Between tokens the governor (if any) paces, and a
 * simulated device's throttling stretches the token (sleep of compute x (1/speed - 1)).
 * At each request the governor's thread count and model are applied (a new context, the
 * lighter model loaded once and kept).
 *
 * Each new context's KV cache is touched page by page first, so that anonymous memory starts
 * at its working size and growth means growth.
 *
 * Statistics: ordinary least squares with a Student-t interval on the slope (any
 * regression text, e.g. NIST/SEMATECH e-Handbook of Statistical Methods §4.1.4.1 and
 * §7.1.4); quantiles by linear interpolation between order statistics (Hyndman & Fan 1996,
 * definition 7).
 */
#include "../common/common.h"
#include "../model/model.h"
#include "edgellm_tools.h"
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- statistics ---- */

/* t(0.975, dof) for dof 1..30; beyond, 1.96 + 2.5 / dof (within 0.002 of the table values). */
static double t975(int dof)
{
    static const double t[30] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    if (dof < 1) return NAN;
    return dof <= 30 ? t[dof - 1] : 1.96 + 2.5 / dof;
}

edgellm_soak_trend edgellm_soak_fit(const double *x, const double *y, int n)
{
    edgellm_soak_trend r = {.slope = NAN, .lo = NAN, .hi = NAN, .n = 0};
    double sx = 0, sy = 0;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i])) { sx += x[i]; sy += y[i]; m++; }
    r.n = m;
    if (m < 2) return r;
    const double mx = sx / m, my = sy / m;
    double sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i])) {
            sxx += (x[i] - mx) * (x[i] - mx);
            sxy += (x[i] - mx) * (y[i] - my);
        }
    if (sxx <= 0) return r;
    r.slope = sxy / sxx;
    if (m < 3) return r;
    const double a = my - r.slope * mx;
    double sse = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i])) {
            const double e = y[i] - a - r.slope * x[i];
            sse += e * e;
        }
    const double se = sqrt(sse / (m - 2) / sxx);
    r.lo = r.slope - t975(m - 2) * se;
    r.hi = r.slope + t975(m - 2) * se;
    return r;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double edgellm_soak_quantile(double *v, int n, double q)
{
    if (n <= 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    if (q <= 0) return v[0];
    if (q >= 1) return v[n - 1];
    const double h = (n - 1) * q;
    const int lo = (int)floor(h);
    return lo + 1 < n ? v[lo] + (h - lo) * (v[lo + 1] - v[lo]) : v[lo];
}

/* ---- analysis ---- */

edgellm_soak_params edgellm_soak_default_params(void)
{
    return (edgellm_soak_params){.size = sizeof(edgellm_soak_params), .duration_s = 60, .interval_s = 10,
                                 .n_predict = 64, .continue_frac = 0.3, .n_ctx = 1024, .kv_type = EDGELLM_TYPE_F32,
                                 .seed = 1, .max_rss_mib_per_h = 16, .max_latency_pct_per_10min = 10,
                                 .min_retention = 0.8};
}

/* A slope of y over the rows' times, skipping the first (warm-up) row when there are four or
 * more, scaled by `scale` (per second -> the unit), and relative to y's mean when `rel`. */
static edgellm_soak_trend row_trend(const edgellm_soak_report *r, size_t off, double scale, int rel)
{
    edgellm_soak_trend t = {.slope = NAN, .lo = NAN, .hi = NAN};
    const int first = r->n_rows >= 4 ? 1 : 0, n = r->n_rows - first;
    if (n < 2) return t;
    double *x = malloc(sizeof(double) * (size_t)n), *y = malloc(sizeof(double) * (size_t)n);
    if (!x || !y) { free(x); free(y); return t; }
    double sum = 0;
    int m = 0;
    for (int i = 0; i < n; i++) {
        const edgellm_soak_row *row = &r->rows[first + i];
        x[i] = row->t_s;
        y[i] = *(const double *)((const char *)row + off);
        if (isfinite(y[i])) { sum += y[i]; m++; }
    }
    t = edgellm_soak_fit(x, y, n);
    double k = scale;
    if (rel) k = m && sum != 0 ? scale * 100.0 / (sum / m) : NAN;
    t.slope *= k;
    t.lo *= k;
    t.hi *= k;
    free(x);
    free(y);
    return t;
}

/* tokens per second over rows whose interval lies in [t0, t1] (by end time) */
static double window_tok_s(const edgellm_soak_report *r, double t0, double t1)
{
    double tok = 0, span = 0, prev = 0;
    for (int i = 0; i < r->n_rows; i++) {
        const double start = prev, end = r->rows[i].t_s;
        prev = end;
        if (end <= t0 + 1e-9 || start >= t1 - 1e-9) continue;
        tok += r->rows[i].n_tokens;
        span += end - start;
    }
    return span > 0 ? tok / span : NAN;
}

static void add_flag(edgellm_soak_report *r, const char *fmt, ...)
{
    size_t n = strlen(r->verdict);
    if (n) n += (size_t)snprintf(r->verdict + n, sizeof r->verdict - n, "; ");
    if (n >= sizeof r->verdict) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->verdict + n, sizeof r->verdict - n, fmt, ap);
    va_end(ap);
}

void edgellm_soak_analyze(edgellm_soak_report *r, const edgellm_soak_params *params)
{
    if (!r) return;
    edgellm_soak_params p = edgellm_soak_default_params();
    if (params && params->size) memcpy(&p, params, params->size < sizeof p ? params->size : sizeof p);
    r->verdict[0] = 0;
    r->tok_s_pct_per_10min = row_trend(r, offsetof(edgellm_soak_row, tok_s), 600, 1);
    r->itl_pct_per_10min = row_trend(r, offsetof(edgellm_soak_row, itl_p50_ms), 600, 1);
    r->ttft_pct_per_10min = row_trend(r, offsetof(edgellm_soak_row, ttft_p50_ms), 600, 1);
    r->rss_anon_mib_per_h = row_trend(r, offsetof(edgellm_soak_row, rss_anon_mib), 3600, 0);
    {   /* fds are ints: fit a copy as doubles */
        edgellm_soak_trend t = {.slope = NAN, .lo = NAN, .hi = NAN};
        const int first = r->n_rows >= 4 ? 1 : 0, n = r->n_rows - first;
        double *x = n > 0 ? malloc(sizeof(double) * (size_t)n) : NULL, *y = n > 0 ? malloc(sizeof(double) * (size_t)n) : NULL;
        if (x && y) {
            for (int i = 0; i < n; i++) {
                x[i] = r->rows[first + i].t_s;
                y[i] = r->rows[first + i].n_fds >= 0 ? r->rows[first + i].n_fds : NAN;
            }
            t = edgellm_soak_fit(x, y, n);
            t.slope *= 3600;
            t.lo *= 3600;
            t.hi *= 3600;
        }
        free(x);
        free(y);
        r->fds_per_h = t;
    }
    const double dur = r->n_rows ? r->rows[r->n_rows - 1].t_s : 0;
    r->window_s = dur / 4 < 30 ? dur / 4 : 30;
    const double first = window_tok_s(r, 0, r->window_s), last = window_tok_s(r, dur - r->window_s, dur);
    r->retention = first > 0 ? last / first : NAN;
    const int base = r->n_rows >= 4 ? 1 : 0;
    r->rss_anon_first_mib = r->n_rows ? r->rows[base < r->n_rows ? base : 0].rss_anon_mib : NAN;
    r->rss_anon_last_mib = r->n_rows ? r->rows[r->n_rows - 1].rss_anon_mib : NAN;
    r->fds_first = r->n_rows ? r->rows[base < r->n_rows ? base : 0].n_fds : -1;
    r->fds_last = r->n_rows ? r->rows[r->n_rows - 1].n_fds : -1;
    r->max_temp_c = NAN;
    r->above_trip_s = 0;
    double prev = 0;
    for (int i = 0; i < r->n_rows; i++) {
        const double t = r->rows[i].temp_c;
        if (isfinite(t) && (isnan(r->max_temp_c) || t > r->max_temp_c)) r->max_temp_c = t;
        if (isfinite(t) && isfinite(r->trip_c) && t > r->trip_c) r->above_trip_s += r->rows[i].t_s - prev;
        prev = r->rows[i].t_s;
    }
    /* flags */
    const edgellm_soak_trend m = r->rss_anon_mib_per_h;
    if (isfinite(m.lo) && m.lo > p.max_rss_mib_per_h)
        add_flag(r, "leak: RssAnon %+.1f MiB/h [%.1f, %.1f] > %.1f", m.slope, m.lo, m.hi, p.max_rss_mib_per_h);
    if (r->fds_first >= 0 && r->fds_last > r->fds_first && isfinite(r->fds_per_h.lo) && r->fds_per_h.lo > 0)
        add_flag(r, "fd leak: %d -> %d open files", r->fds_first, r->fds_last);
    const edgellm_soak_trend l = r->itl_pct_per_10min;
    if (isfinite(l.lo) && l.lo > p.max_latency_pct_per_10min)
        add_flag(r, "latency drift: inter-token p50 %+.1f %%/10 min [%.1f, %.1f] > %.1f", l.slope, l.lo, l.hi,
                 p.max_latency_pct_per_10min);
    if (isfinite(r->retention) && r->retention < p.min_retention)
        add_flag(r, "throughput retention %.2f < %.2f", r->retention, p.min_retention);
    r->pass = r->verdict[0] == 0;
    if (r->pass) snprintf(r->verdict, sizeof r->verdict, "pass");
    snprintf(r->thresholds, sizeof r->thresholds,
             "leak if the RssAnon slope's 95%% interval lies above %.1f MiB/h; fd leak if fds grow with a positive "
             "slope; latency drift above %.1f %%/10 min; retention below %.2f",
             p.max_rss_mib_per_h, p.max_latency_pct_per_10min, p.min_retention);
}

void edgellm_soak_report_free(edgellm_soak_report *r)
{
    if (!r) return;
    free(r->rows);
    r->rows = NULL;
    r->n_rows = 0;
}

/* ---- process readings ---- */

static void read_status(double *anon, double *file, double *swap)
{
    *anon = *file = *swap = NAN;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return;
    char line[256];
    long long kb;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "RssAnon: %lld", &kb) == 1) *anon = kb / 1024.0;
        else if (sscanf(line, "RssFile: %lld", &kb) == 1) *file = kb / 1024.0;
        else if (sscanf(line, "VmSwap: %lld", &kb) == 1) *swap = kb / 1024.0;
    }
    fclose(f);
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1;   /* the directory's own descriptor */
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
    if (s <= 0) return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

/* ---- the run ---- */

/* Write one byte per page of the context's KV cache (zeros over zeros: no value changes),
 * so that its pages are resident from the start: a cache filling up as conversations grow
 * would otherwise read as anonymous-memory growth. */
static void touch_kv(edgellm_ctx *c)
{
    const size_t half = c->kv.size_bytes / 2, ps = 4096;
    void *const bufs[2] = {c->kv.k, c->kv.v};
    for (int b = 0; b < 2; b++) {
        volatile unsigned char *p = bufs[b];
        if (!p) continue;
        for (size_t i = 0; i < half; i += ps) p[i] = p[i];
    }
}

static const char *const builtin_prompts[] = {
    "Hello.",
    "Once upon a time",
    "Write a short story about a robot who learns to paint.",
    "Explain in simple words why the sky is blue and why sunsets are red.",
    "The little girl walked into the forest. The trees were tall and the path was narrow. She heard a sound "
    "behind her and turned around.",
    "Summarize the following text. A river begins in the mountains as a small stream fed by melting snow. It "
    "grows as other streams join it, cuts a valley through the hills, slows down on the plain, and finally "
    "reaches the sea, where it leaves the sand and mud it carried along the way.",
    "List three things to pack for a day at the beach.",
    "Translate to French: the cat sleeps on the warm windowsill while the rain falls outside.",
    "Tom had a red ball. He threw it high into the air and it landed in the garden of the old man next door. "
    "Tom was afraid to knock on the door, but he wanted his ball back. He took a deep breath and",
    "Q: What is the capital of Italy?\nA:",
    "Describe the water cycle step by step: evaporation, condensation, precipitation and collection. Give an "
    "example of each step from everyday life, and explain how the sun drives the whole cycle. Then explain "
    "what would happen to the weather on a planet without oceans, and why deserts get so little rain even "
    "when they are close to the sea. Finish with a one-sentence summary a child could remember.",
    "Continue the list: apples, pears, plums,",
};

typedef struct {
    uint64_t s;
} rng;
static uint64_t rng_next(rng *r)   /* xorshift64* (Vigna 2016) */
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1DULL;
}
static double rng_unit(rng *r) { return (rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

typedef struct {
    double *v;
    int n, cap;
} samples;
static int samples_add(samples *s, double x)
{
    if (s->n == s->cap) {
        const int cap = s->cap ? s->cap * 2 : 256;
        double *v = realloc(s->v, sizeof *v * (size_t)cap);
        if (!v) return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = x;
    return 0;
}

typedef struct {
    const edgellm_soak_params *p;
    edgellm_soak_report *r;
    int cap_rows;
    double t_start, t_end, t_row_start, t_next_row;
    double req_start, last_token;
    int first_token_seen;
    samples ttft, itl;
    int row_tokens, row_requests;
    int n_threads, light;
    int stop;                     /* on_row asked to stop, or memory ran out            */
    edgellm_status fail;
} soak_run;

static void close_row(soak_run *s, double t)
{
    edgellm_soak_report *r = s->r;
    if (r->n_rows == s->cap_rows) {
        const int cap = s->cap_rows ? s->cap_rows * 2 : 64;
        edgellm_soak_row *rows = realloc(r->rows, sizeof *rows * (size_t)cap);
        if (!rows) { s->stop = 1; s->fail = EDGELLM_ERR_NOMEM; return; }
        r->rows = rows;
        s->cap_rows = cap;
    }
    edgellm_soak_row row = {.t_s = t - s->t_start, .n_requests = s->row_requests, .n_tokens = s->row_tokens,
                            .gov_level = -1, .n_threads = s->n_threads, .light_model = s->light};
    const double span = t - s->t_row_start;
    row.tok_s = span > 0 ? s->row_tokens / span : NAN;
    row.ttft_p50_ms = edgellm_soak_quantile(s->ttft.v, s->ttft.n, 0.5);
    row.ttft_p95_ms = edgellm_soak_quantile(s->ttft.v, s->ttft.n, 0.95);
    row.itl_p50_ms = edgellm_soak_quantile(s->itl.v, s->itl.n, 0.5);
    row.itl_p95_ms = edgellm_soak_quantile(s->itl.v, s->itl.n, 0.95);
    read_status(&row.rss_anon_mib, &row.rss_file_mib, &row.swap_mib);
    row.n_fds = count_fds();
    if (s->p->governor) {
        edgellm_gov_state st = {.size = sizeof st};
        edgellm_governor_poll(s->p->governor, 1, &st);
        row.temp_c = st.sensors.temp_c;
        row.gov_level = st.level;
        if (isfinite(st.sensors.trip_hot_c)) r->trip_c = st.sensors.trip_hot_c;
        r->n_gov_changes = st.n_changes;
        r->gov_slept_s = st.slept_s;
    } else {
        edgellm_sensors se = {.size = sizeof se};
        edgellm_sensors_read(s->p->sysfs_root, &se, NULL);
        row.temp_c = se.temp_c;
        if (isfinite(se.trip_hot_c)) r->trip_c = se.trip_hot_c;
    }
    r->rows[r->n_rows++] = row;
    s->ttft.n = s->itl.n = 0;
    s->row_tokens = s->row_requests = 0;
    s->t_row_start = t;
    s->t_next_row = t + s->p->interval_s;
    if (s->p->on_row) {
        const double frac = (t - s->t_start) / s->p->duration_s;
        if (s->p->on_row(s->p->user, &row, frac > 1 ? 1 : frac)) s->stop = 1;
    }
}

static void maybe_close_rows(soak_run *s)
{
    const double t = now_s();
    if (!s->stop && t >= s->t_next_row && s->t_next_row <= s->t_end + 1e-9) close_row(s, t);
}

static int on_token(int32_t token, const char *piece, size_t len, void *user)
{
    (void)token; (void)piece; (void)len;
    soak_run *s = user;
    double t = now_s();
    edgellm_simdev_set_load(s->p->simdev, 0);   /* sleeping from here until the next token */
    if (s->p->simdev) {   /* the simulated CPU runs at `speed`: stretch this token */
        const double speed = edgellm_simdev_speed(s->p->simdev);
        if (speed < 1) sleep_s((t - s->last_token) * (1 / speed - 1));
        t = now_s();
    }
    if (!s->first_token_seen) {
        s->first_token_seen = 1;
        if (samples_add(&s->ttft, (t - s->req_start) * 1e3)) { s->stop = 1; s->fail = EDGELLM_ERR_NOMEM; }
    } else if (samples_add(&s->itl, (t - s->last_token) * 1e3)) {
        s->stop = 1;
        s->fail = EDGELLM_ERR_NOMEM;
    }
    s->row_tokens++;
    s->r->n_tokens++;
    if (s->p->governor) edgellm_governor_between_tokens(s->p->governor);
    s->last_token = now_s();
    maybe_close_rows(s);
    edgellm_simdev_set_load(s->p->simdev, s->n_threads);   /* computing the next token */
    return s->stop || s->last_token >= s->t_end;
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

edgellm_status edgellm_soak(const char *model_path, const edgellm_soak_params *params, edgellm_soak_report *report,
                            edgellm_error *err)
{
    if (!model_path || !params || params->size == 0 || !report || report->size == 0)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "soak: NULL model, params or report");
    edgellm_soak_params p = edgellm_soak_default_params();
    memcpy(&p, params, params->size < sizeof p ? params->size : sizeof p);
    if (!(p.duration_s > 0) || !(p.interval_s > 0) || p.n_predict < 1 || !(p.continue_frac >= 0 && p.continue_frac <= 1) ||
        (p.prompts && p.n_prompts < 1))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "soak: duration, interval and n_predict must be > 0, "
                                                     "continue_frac in [0, 1], prompts non-empty");
    edgellm_soak_report r = {.size = sizeof r, .trip_c = NAN};
    snprintf(r.model, sizeof r.model, "%s", base_name(model_path));
    const char *const *prompts = p.prompts ? p.prompts : builtin_prompts;
    const int n_prompts = p.prompts ? p.n_prompts : (int)(sizeof builtin_prompts / sizeof builtin_prompts[0]);
    soak_run s = {.p = &p, .r = &r};
    rng g = {p.seed * 0x9E3779B97F4A7C15ULL + 1};
    edgellm_model *models[2] = {NULL, NULL};   /* the asked-for model, the governor's lighter one */
    const char *paths[2] = {model_path, NULL};
    edgellm_ctx *ctx = NULL;
    int ctx_model = -1, ctx_threads = -1;
    char **leaks = NULL;
    size_t n_leaks = 0, cap_leaks = 0;
    edgellm_status st = EDGELLM_OK;
    edgellm_generate_params gp = edgellm_generate_default_params();
    gp.sampling.temperature = 0.8f;
    gp.sampling.seed = p.seed;

    s.t_start = now_s();
    s.t_end = s.t_start + p.duration_s;
    s.t_row_start = s.t_start;
    s.t_next_row = s.t_start + p.interval_s;
    s.last_token = s.t_start;
    while (!s.stop && now_s() < s.t_end) {
        maybe_close_rows(&s);
        if (s.stop) break;
        if (p.governor && !edgellm_governor_admit(p.governor)) {   /* paused: wait, still measuring */
            sleep_s(0.25);
            continue;
        }
        const char *want = p.governor ? edgellm_governor_model(p.governor, model_path) : model_path;
        const int mi = want == model_path ? 0 : 1;
        if (!models[mi]) {
            edgellm_model_params mp = edgellm_model_default_params();
            mp.n_threads = p.n_threads;
            paths[mi] = want;
            if ((st = edgellm_model_load(want, &mp, &models[mi], err)) != EDGELLM_OK) goto done;
        }
        const int threads = p.governor ? edgellm_governor_threads(p.governor, p.n_threads) : p.n_threads;
        if (!ctx || ctx_model != mi || ctx_threads != threads) {
            edgellm_ctx_free(ctx);
            ctx = NULL;
            edgellm_ctx_params cp = edgellm_ctx_default_params();
            cp.n_ctx = p.n_ctx;
            cp.n_threads = threads;
            cp.kv_type = p.kv_type;
            if ((st = edgellm_ctx_new(models[mi], &cp, &ctx, err)) != EDGELLM_OK) goto done;
            touch_kv(ctx);
            ctx_model = mi;
            ctx_threads = threads;
            s.n_threads = edgellm_ctx_n_threads(ctx);
            s.light = mi;
        }
        const char *prompt = prompts[rng_next(&g) % (uint64_t)n_prompts];
        gp.n_predict = p.n_predict / 2 + (int)(rng_next(&g) % (uint64_t)(p.n_predict - p.n_predict / 2 + 1));
        if (gp.n_predict < 1) gp.n_predict = 1;
        const size_t need = strlen(prompt) + 2 + (size_t)gp.n_predict + 1;   /* bytes bound the tokens */
        gp.append = rng_unit(&g) < p.continue_frac &&
                    (size_t)edgellm_seq_n_past(ctx, 0) + need + 1 <= (size_t)edgellm_ctx_n_ctx(ctx);
        if (need > (size_t)edgellm_ctx_n_ctx(ctx)) {
            st = edgellm_fail(err, EDGELLM_ERR_MISUSE, "soak: a prompt of %zu bytes does not fit n_ctx %d", strlen(prompt),
                              edgellm_ctx_n_ctx(ctx));
            goto done;
        }
        s.req_start = now_s();
        s.last_token = s.req_start;
        s.first_token_seen = 0;
        edgellm_generate_stats gs = {.size = sizeof gs};
        edgellm_simdev_set_load(p.simdev, s.n_threads);
        st = edgellm_generate(ctx, prompt, &gp, on_token, &s, &gs, err);
        edgellm_simdev_set_load(p.simdev, 0);
        if (st != EDGELLM_OK) goto done;
        gp.sampling.seed++;
        r.n_requests++;
        s.row_requests++;
        if (p.leak_bytes_per_request) {
            if (n_leaks == cap_leaks) {
                cap_leaks = cap_leaks ? cap_leaks * 2 : 64;
                char **nl = realloc(leaks, sizeof *nl * cap_leaks);
                if (!nl) { st = edgellm_fail(err, EDGELLM_ERR_NOMEM, "soak: out of memory"); goto done; }
                leaks = nl;
            }
            char *b = malloc(p.leak_bytes_per_request);
            if (b) {
                memset(b, 0x5a, p.leak_bytes_per_request);
                leaks[n_leaks++] = b;
            }
        }
    }
    if (!s.stop) {
        const double t = now_s();
        if (t - s.t_row_start > p.interval_s * 0.25 || r.n_rows == 0) close_row(&s, t);
    }
    if (s.fail) st = edgellm_fail(err, s.fail, "soak: out of memory");
    else if (s.stop) st = edgellm_fail(err, EDGELLM_ERR_CANCELLED, "soak: stopped");
done:
    r.duration_s = now_s() - s.t_start;
    edgellm_soak_analyze(&r, &p);
    for (size_t i = 0; i < n_leaks; i++) free(leaks[i]);
    free(leaks);
    free(s.ttft.v);
    free(s.itl.v);
    edgellm_ctx_free(ctx);
    edgellm_model_free(models[0]);
    edgellm_model_free(models[1]);
    (void)paths;
    const size_t n = report->size < sizeof r ? report->size : sizeof r;
    if (n < offsetof(edgellm_soak_report, n_rows) + sizeof(int)) free(r.rows);
    else {
        memcpy(report, &r, n);
        report->size = n;
    }
    return st;
}
