/* cmd_soak.c — 'edgellm soak': run a realistic generation workload for a long time and
 * report drift (latency, throughput, memory, open files, temperature), with CSV, JSON and
 * an SVG plot in --report DIR. A progress line on stderr when it is a terminal; the
 * summary on stdout. Exit status 0 when the verdict passes, 1 when a flag is raised or the
 * run fails, 2 for a wrong command line. */
#include "commands.h"
#include "governor_opts.h"
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "90", "90s", "30m", "2h", "1.5h" -> seconds */
static int parse_duration(const char *opt, const char *value, void *dst, char *msg, size_t msg_size)
{
    char *end;
    double v = strtod(value, &end);
    double k = 1;
    if (end != value && *end && !end[1]) k = *end == 's' ? 1 : *end == 'm' ? 60 : *end == 'h' ? 3600 : 0;
    else if (end == value || *end) k = 0;
    if (k == 0 || !isfinite(v) || v <= 0 || v * k > 30 * 86400.0) {
        snprintf(msg, msg_size, "%s expects a duration such as 90s, 30m or 2h (a number: seconds), got '%s'", opt, value);
        return 1;
    }
    *(double *)dst = v * k;
    return 0;
}

typedef struct {
    int tty;
    double duration_s;
} progress_state;

static int on_row(void *user, const edgellm_soak_row *w, double fraction)
{
    progress_state *ps = user;
    if (!ps->tty) return 0;
    char temp[32] = "temp ?";
    if (isfinite(w->temp_c)) snprintf(temp, sizeof temp, "%.1f C", w->temp_c);
    fprintf(stderr, "\r\033[K[%3.0f%%] %5.0f/%.0f s  %.1f tok/s  ttft p50 %.0f ms  itl p50 %.1f ms  anon %.1f MiB  fds %d  "
                    "%s%s%s",
            fraction * 100, w->t_s, ps->duration_s, w->tok_s, w->ttft_p50_ms, w->itl_p50_ms, w->rss_anon_mib, w->n_fds,
            temp, w->gov_level >= 0 ? "  " : "", w->gov_level >= 0 ? edgellm_gov_level_name(w->gov_level) : "");
    fflush(stderr);
    return 0;
}

static void print_trend(const char *name, const edgellm_soak_trend *t, const char *unit)
{
    if (isfinite(t->lo)) printf("%-24s %+9.2f %s  [95%% CI %+.2f, %+.2f]\n", name, t->slope, unit, t->lo, t->hi);
    else if (isfinite(t->slope)) printf("%-24s %+9.2f %s  (too few intervals for a CI)\n", name, t->slope, unit);
    else printf("%-24s unknown\n", name);
}

/* Prompts of a file: one per non-empty line. The lines point into *buf (owned). */
static const char **read_prompts(const char *path, char **buf, int *n, edgellm_error *err)
{
    size_t len = 0;
    *buf = cli_read_text(path, &len, err);
    if (!*buf) return NULL;
    int cap = 0;
    for (size_t i = 0; i < len; i++) cap += (*buf)[i] == '\n';
    const char **v = malloc(sizeof *v * (size_t)(cap + 1));
    if (!v) { snprintf(err->msg, sizeof err->msg, "%s: out of memory", path); return NULL; }
    *n = 0;
    for (char *p = *buf, *e; p < *buf + len; p = e + 1) {
        e = memchr(p, '\n', (size_t)(*buf + len - p));
        if (!e) e = *buf + len;
        *e = 0;
        if (e > p && e[-1] == '\r') e[-1] = 0;
        if (*p) v[(*n)++] = p;
    }
    if (*n == 0) { free(v); snprintf(err->msg, sizeof err->msg, "%s: no prompts (one per line)", path); return NULL; }
    return v;
}

int cmd_soak(int argc, char **argv)
{
    const char *model_path = NULL, *prompts_path = NULL, *report_dir = NULL;
    edgellm_soak_params p = edgellm_soak_default_params();
    double leak_kib = 0;
    cli_gov_opts go;
    cli_gov_opts_init(&go);
    const cli_opt opts[] = {
        {CLI_OPT_MODEL(&model_path), .help = "GGUF model", .required = 1},
        {CLI_CUSTOM(NULL, "--duration", "TIME", &p.duration_s, parse_duration),
         .help = "how long: 90s, 30m, 2h (at least 30 minutes before shipping)", .def = "60s"},
        {CLI_CUSTOM(NULL, "--interval", "TIME", &p.interval_s, parse_duration),
         .help = "one measurement row per interval", .def = "10s"},
        {CLI_PATH(NULL, "--prompts", "FILE", &prompts_path), .help = "prompts, one per line",
         .def = "a built-in set of short and long prompts"},
        {CLI_PATH(NULL, "--report", "DIR", &report_dir),
         .help = "write DIR/soak.csv, DIR/soak.json and DIR/soak.svg (one panel per metric)"},
        {CLI_INT("-n", "--n-predict", "N", &p.n_predict, 1, 1 << 20), .show_default = 1,
         .help = "tokens per request, at most (each draws from N/2 .. N)"},
        {CLI_DOUBLE(NULL, "--continue", "FRAC", &p.continue_frac, 0, 1, CLI_CLOSED), .show_default = 1,
         .help = "share of requests that continue the conversation instead of starting a new one"},
        {CLI_OPT_THREADS(&p.n_threads)},
        {CLI_INT("-c", "--ctx-size", "N", &p.n_ctx, 64, 1 << 20), .show_default = 1, .help = "KV cache positions"},
        {CLI_OPT_KV_TYPE(&p.kv_type)},
        {CLI_U64(NULL, "--seed", "S", &p.seed), .show_default = 1, .help = "prompts, lengths and sampling"},
        {CLI_GROUP("verdict")},
        {CLI_DOUBLE(NULL, "--max-rss-growth", "MIB_PER_H", &p.max_rss_mib_per_h, 0, 1e9, CLI_CLOSED),
         .show_default = 1, .help = "flag a leak when the RssAnon slope's 95 % interval lies above this"},
        {CLI_DOUBLE(NULL, "--max-latency-drift", "PCT", &p.max_latency_pct_per_10min, 0, 1e6, CLI_CLOSED),
         .show_default = 1, .help = "flag inter-token p50 drift above this % per 10 minutes (whole interval)"},
        {CLI_DOUBLE(NULL, "--min-retention", "R", &p.min_retention, 0, 10, CLI_CLOSED), .show_default = 1,
         .help = "flag tok/s of the last 30 s / first 30 s below this"},
        {CLI_DOUBLE(NULL, "--inject-leak", "KIB", &leak_kib, 0, 1 << 20, CLI_CLOSED),
         .help = "keep KIB of touched memory per request (checks that the leak flag works)"},
        CLI_GOV_OPTS(&go),
    };
    const cli_command cmd = {
        .name = "soak",
        .synopsis = "edgellm soak -m MODEL.gguf [--duration 30m] [--prompts FILE] [--report DIR] [options]",
        .about = "Generate continuously for --duration with varied prompts, new conversations and continuations, and\n"
                 "measure per interval: time to first token and inter-token latency (p50, p95), tok/s, anonymous\n"
                 "memory (RssAnon + VmSwap: where leaks show), file-backed RSS, open files, temperature and the\n"
                 "governor's level. Then: drift slopes with 95 % intervals, throughput retention and a verdict.",
        .opts = opts, .n_opts = CLI_N_OPTS(opts),
    };
    const int parsed = cli_args_parse(&cmd, argc, argv);
    if (parsed != CLI_ARGS_GO) return parsed;
    if (p.interval_s * 2 > p.duration_s) return cli_args_error(&cmd, "--interval must be at most half of --duration");
    p.leak_bytes_per_request = (size_t)(leak_kib * 1024);

    int rc = 1;
    edgellm_error err = {0};
    char *prompt_buf = NULL;
    const char **prompts = NULL;
    edgellm_governor *gov = NULL;
    edgellm_simdev *sim = NULL;
    edgellm_soak_report r = {.size = sizeof r};
    if (prompts_path) {
        if (!(prompts = read_prompts(prompts_path, &prompt_buf, &p.n_prompts, &err))) {
            cli_print_error("soak", &err);
            goto done;
        }
        p.prompts = prompts;
    }
    if (cli_gov_start("soak", &go, p.n_threads, &gov, &sim)) goto done;
    p.governor = gov;
    p.simdev = sim;
    p.sysfs_root = go.sim_dir ? go.sim_dir : go.sysfs_root;
    progress_state ps = {.tty = isatty(STDERR_FILENO), .duration_s = p.duration_s};
    p.on_row = on_row;
    p.user = &ps;
    edgellm_status s = edgellm_soak(model_path, &p, &r, &err);
    if (ps.tty) fputs("\r\033[K", stderr);
    if (s != EDGELLM_OK) { cli_print_error("soak", &err); goto done; }
    printf("model                    %s\n", r.model);
    printf("duration                 %.0f s, %lld requests, %lld tokens, %d intervals\n", r.duration_s, r.n_requests,
           r.n_tokens, r.n_rows);
    printf("throughput retention     %.3f (tok/s of the last %.0f s / the first %.0f s)\n", r.retention, r.window_s,
           r.window_s);
    print_trend("tok/s drift", &r.tok_s_pct_per_10min, "% per 10 min");
    print_trend("inter-token p50 drift", &r.itl_pct_per_10min, "% per 10 min");
    print_trend("TTFT p50 drift", &r.ttft_pct_per_10min, "% per 10 min");
    print_trend("RssAnon growth", &r.rss_anon_mib_per_h, "MiB per hour");
    printf("RssAnon                  %.1f -> %.1f MiB (%+.2f %%)\n", r.rss_anon_first_mib, r.rss_anon_last_mib,
           r.rss_anon_first_mib > 0 ? (r.rss_anon_last_mib - r.rss_anon_first_mib) / r.rss_anon_first_mib * 100 : 0.0);
    printf("open files               %d -> %d\n", r.fds_first, r.fds_last);
    if (isfinite(r.max_temp_c))
        printf("temperature              max %.1f C%s", r.max_temp_c, isfinite(r.trip_c) ? "" : "\n");
    else printf("temperature              unknown (no readable thermal zone)\n");
    if (isfinite(r.max_temp_c) && isfinite(r.trip_c))
        printf(", trip point %.0f C, %.0f s above it\n", r.trip_c, r.above_trip_s);
    if (gov) printf("governor                 %d level changes, %.1f s slept or paused\n", r.n_gov_changes, r.gov_slept_s);
    printf("verdict                  %s\n", r.verdict);
    if (report_dir) {
        if (edgellm_soak_write(&r, report_dir, &err) != EDGELLM_OK) { cli_print_error("soak", &err); goto done; }
        printf("report                   %s/soak.svg, soak.csv, soak.json\n", report_dir);
    }
    rc = r.pass ? 0 : 1;
done:
    edgellm_soak_report_free(&r);
    cli_gov_stop(gov, sim);
    free(prompts);
    free(prompt_buf);
    return rc;
}
