/* cmd_eval.c — 'edgellm eval': is a quantized model good enough? Subcommands:
 *
 *   ppl          perplexity of a model over a text (llama-perplexity conventions)
 *   compare      a model against a reference (live model or saved logits): PPL of both,
 *                ΔPPL %, KL divergence (mean, median, 99th percentile, max), top-1
 *                agreement, Δp of the correct token
 *   save-logits  keep a reference's top-k distributions in a file for a later compare
 *   task         accuracy on a JSONL task set (multiple choice / generation), with the gap
 *                to a reference
 *   sweep        quantize to each type, compare each with the reference, measure speed:
 *                one table, and a results file (MODEL.eval.json) that `edgellm plan` reads
 *
 * Results go to stdout; a progress bar with ETA goes to stderr, only when stderr is a
 * terminal. Exit status: 0 done, 1 a failed operation (unreadable file, text too short,
 * mismatched saved logits, malformed task line), 2 a wrong command line. */
#include "commands.h"
#include "eval_json.h"
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------- progress bar ---- */

typedef struct {
    bool   on;
    double t0;      /* cli_time_ms at the start */
    int    width;   /* characters last printed */
} progress_bar;

static int on_progress(void *user, double f, const char *what)
{
    progress_bar *b = user;
    if (!b->on) return 0;
    if (f < 0) f = 0;
    if (f > 1) f = 1;
    double el = (cli_time_ms() - b->t0) / 1e3;
    char eta[32] = "--:--";
    if (f > 0.001) {
        long s = (long)(el * (1.0 - f) / f + 0.5);
        snprintf(eta, sizeof eta, "%ld:%02ld", s / 60, s % 60);
    }
    char bar[31];
    int fill = (int)(f * 30 + 0.5);
    for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
    bar[30] = 0;
    int n = fprintf(stderr, "\r[%s] %3.0f%%  ETA %s  %.60s", bar, 100 * f, eta, what ? what : "");
    if (n < b->width) fprintf(stderr, "%*s", b->width - n, "");
    b->width = n;
    fflush(stderr);
    return 0;
}

static void progress_start(progress_bar *b)
{
    b->on = isatty(2);
    b->t0 = cli_time_ms();
    b->width = 0;
}

static void progress_end(progress_bar *b)
{
    if (b->on && b->width) fprintf(stderr, "\r%*s\r", b->width, "");
    b->width = 0;
}

/* -------------------------------------------------------------------- input ---- */


/* --------------------------------------------------------------------- flags ---- */

typedef struct {
    const char *model, *ref, *ref_logits, *text, *out, *data, *types, *tmp_dir, *cascade;
    double max_gap;
    int n_ctx, stride, chunks, threads, top_k, limit, max_tokens, bench_tokens;
    int kv_type;
    int n_ctx_set, keep, no_results, no_bench;
} eval_flags;

/* Subcommands as bits, for which options each takes: an option another subcommand reads is
 * refused, not silently ignored (eval task -o wrote nothing). */
enum { SUB_PPL = 1, SUB_COMPARE = 2, SUB_SAVE = 4, SUB_TASK = 8, SUB_SWEEP = 16 };
#define SUB_TEXT (SUB_PPL | SUB_COMPARE | SUB_SAVE | SUB_SWEEP)   /* the text-window commands */
#define SUB_ALL (SUB_TEXT | SUB_TASK)

/* "ppl, compare and task take" / "sweep takes": the subcommands of mask and the verb */
static const char *sub_names(int mask, char *buf, size_t n)
{
    static const char *const names[] = {"ppl", "compare", "save-logits", "task", "sweep"};
    int total = 0, done = 0;
    for (int k = 0; k < 5; k++) total += (mask >> k) & 1;
    buf[0] = 0;
    for (int k = 0; k < 5; k++)
        if (mask & (1 << k)) {
            done++;
            snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", done == 1 ? "" : done == total ? " and " : ", ",
                     names[k]);
        }
    snprintf(buf + strlen(buf), n - strlen(buf), " take%s", total == 1 ? "s" : "");
    return buf;
}

/* One option and the subcommands that take it: the same option appears once per wording of
 * its help, each subcommand's table (cli/args.h) takes the entries of its bit. */
typedef struct {
    int subs;
    cli_opt opt;
} eval_opt;

#define EVAL_MAX_OPTS 40

/* Every option of every subcommand, reading into fl, into out[EVAL_MAX_OPTS]; returns how many. */
static int eval_options(eval_flags *fl, eval_opt *out)
{
    const eval_opt all[] = {
        {SUB_PPL | SUB_TASK, {CLI_OPT_MODEL(&fl->model), .required = 1, .help = "the model"}},
        {SUB_COMPARE, {CLI_OPT_MODEL(&fl->model), .required = 1,
                       .help = "the model compared with the reference (a quantized one, say)"}},
        {SUB_SAVE, {CLI_PATH("-m", "--model", "REF.gguf", &fl->model), .required = 1, .help = "the reference model"}},
        {SUB_SWEEP, {CLI_PATH("-m", "--model", "REF.gguf", &fl->model), .required = 1,
                     .help = "the reference model, quantized to each type"}},
        {SUB_COMPARE, {CLI_PATH(NULL, "--ref", "REF.gguf", &fl->ref),
                       .help = "the reference, run live (give it or --ref-logits)"}},
        {SUB_COMPARE, {CLI_PATH(NULL, "--ref-logits", "FILE", &fl->ref_logits),
                       .help = "the reference's log-probs, kept by eval save-logits"}},
        {SUB_TASK, {CLI_PATH(NULL, "--ref", "REF.gguf", &fl->ref),
                    .help = "a reference model: its accuracy too, and the gap"}},
        {SUB_TASK, {CLI_PATH(NULL, "--cascade", "LARGE.gguf", &fl->cascade),
                    .help = "-m answers first, LARGE when -m is unsure: accuracy, escalation and time per item "
                            "over thresholds (multiple-choice items), as edgellm cascade --tasks"}},
        {SUB_TASK, {CLI_DOUBLE(NULL, "--max-gap", "PCT", &fl->max_gap, 0, 100, CLI_OPEN_MIN),
                    .help = "--cascade: accuracy loss allowed, percent of LARGE's", .def = "3"}},
        {SUB_TEXT, {CLI_PATH("-f", "--file", "TEXT.txt", &fl->text), .required = 1, .help = "the text"}},
        {SUB_TASK, {CLI_PATH(NULL, "--data", "TASK.jsonl", &fl->data), .required = 1,
                    .help = "the task set: one JSON item per line (multiple choice or generation)"}},
        {SUB_SAVE, {CLI_PATH("-o", "--output", "FILE", &fl->out), .required = 1,
                    .help = "the file to write: the reference's top-k log-probs per position"}},
        {SUB_SWEEP, {CLI_PATH("-o", "--output", "RESULTS.json", &fl->out), .help = "the results file",
                     .def = "next to the model, MODEL.eval.json, which edgellm plan reads"}},
        {SUB_PPL | SUB_SAVE | SUB_SWEEP,
         {CLI_INT("-c", "--ctx-size", "N", &fl->n_ctx, 8, 1 << 20), .count = &fl->n_ctx_set,
          .help = "tokens per chunk", .show_default = 1}},
        {SUB_COMPARE, {CLI_INT("-c", "--ctx-size", "N", &fl->n_ctx, 8, 1 << 20), .count = &fl->n_ctx_set,
                       .help = "tokens per chunk", .def = "512; with --ref-logits the file's"}},
        {SUB_TEXT, {CLI_INT(NULL, "--stride", "N", &fl->stride, 1, 1 << 19),
                    .help = "windows sliding by N tokens, each scoring its last N (1..n_ctx/2)",
                    .def = "off: each chunk's second half is scored"}},
        {SUB_TEXT, {CLI_INT(NULL, "--chunks", "N", &fl->chunks, 1, 1 << 30),
                    .help = "evaluate only the first N chunks", .def = "all"}},
        {SUB_SAVE, {CLI_INT(NULL, "--top-k", "K", &fl->top_k, 1, 1 << 24), .show_default = 1,
                    .help = "entries per position (>= n_vocab: exact)"}},
        {SUB_TASK, {CLI_INT(NULL, "--limit", "N", &fl->limit, 1, 1 << 30), .help = "first N items only", .def = "all"}},
        {SUB_TASK, {CLI_INT(NULL, "--max-tokens", "N", &fl->max_tokens, 1, 4096), .show_default = 1,
                    .help = "tokens generated per generation item"}},
        {SUB_SWEEP, {CLI_STRING(NULL, "--types", "LIST", &fl->types), .show_default = 1,
                     .help = "the types to quantize to, comma-separated"}},
        {SUB_SWEEP, {CLI_PATH(NULL, "--tmp", "DIR", &fl->tmp_dir), .help = "folder for the quantized files",
                     .def = "$TMPDIR or /tmp"}},
        {SUB_SWEEP, {CLI_FLAG(NULL, "--keep", &fl->keep, 1), .help = "keep the quantized files"}},
        {SUB_SWEEP, {CLI_FLAG(NULL, "--no-results", &fl->no_results, 1), .help = "do not write the results file"}},
        {SUB_SWEEP, {CLI_INT(NULL, "--bench-tokens", "N", &fl->bench_tokens, 1, 4096), .show_default = 1,
                     .help = "tg test length for tok/s"}},
        {SUB_SWEEP, {CLI_FLAG(NULL, "--no-bench", &fl->no_bench, 1), .help = "do not measure tok/s"}},
        {SUB_ALL, {CLI_OPT_THREADS(&fl->threads)}},
        /* sweep's table and MODEL.eval.json describe the weights with plan's F32 cache */
        {SUB_PPL | SUB_SAVE | SUB_TASK, {CLI_OPT_KV_TYPE(&fl->kv_type)}},
        {SUB_COMPARE, {CLI_ENUM(NULL, "--kv-type", NULL, &fl->kv_type, cli_kv_types), .show_default = 1,
                       .help = "KV cache element type of the model (-m); a --ref model always uses f32, so "
                               "compare -m X --ref X --kv-type q8_0 measures what the cache type costs"}},
    };
    const int n = (int)(sizeof all / sizeof all[0]);
    _Static_assert(sizeof all / sizeof all[0] <= EVAL_MAX_OPTS, "EVAL_MAX_OPTS is too small");
    memcpy(out, all, sizeof all);
    return n;
}

/* cli_command.elsewhere: the subcommands that take an option this one does not */
static const char *eval_elsewhere(const char *opt)
{
    static eval_flags unused;
    static char hint[128];
    eval_opt all[EVAL_MAX_OPTS];
    const int n = eval_options(&unused, all);
    int mask = 0;
    for (int i = 0; i < n; i++)
        if ((all[i].opt.s && !strcmp(opt, all[i].opt.s)) || (all[i].opt.l && !strcmp(opt, all[i].opt.l)))
            mask |= all[i].subs;
    if (!mask) return NULL;
    char names[96];
    snprintf(hint, sizeof hint, "only eval %s it", sub_names(mask, names, sizeof names));
    return hint;
}

static edgellm_eval_params eval_params(const eval_flags *fl, progress_bar *bar)
{
    edgellm_eval_params p = edgellm_eval_default_params();
    p.n_ctx = (int)fl->n_ctx;
    p.stride = (int)fl->stride;
    p.max_chunks = (int)fl->chunks;
    p.n_threads = (int)fl->threads;
    p.top_k = (int)fl->top_k;
    p.kv_type = fl->kv_type;
    p.text_name = fl->text;
    p.progress = on_progress;
    p.progress_user = bar;
    return p;
}

/* Exit status of a failed eval call: 2 for a bad command line, 1 otherwise. The library's
 * parameter-validation messages (EDGELLM_ERR_MISUSE) start with "eval"; a MISUSE about a file
 * (a text too short, logits saved with other settings) starts with its path and exits 1. */
static int exit_code(edgellm_status rc, const edgellm_error *err)
{
    if (rc == EDGELLM_OK) return 0;
    const bool param = rc == EDGELLM_ERR_MISUSE && !strncmp(err->msg, "eval", 4) &&
                       (err->msg[4] == ':' || err->msg[4] == ' ');
    return param ? 2 : 1;
}

/* A note when the evaluation context is longer than the model was trained for (train: its
 * <arch>.context_length; <= 0: unknown, no note): the numbers then measure the model past
 * its range, as `run -c` warns too. n_ctx: the context used, named by what ("-c", "the saved
 * logits' n_ctx") and how (" (the default)" or ""). */
static void warn_ctx(const char *cmd, const char *path, long long train, long n_ctx, const char *what,
                     const char *how)
{
    if (path && train > 0 && n_ctx > train)
        fprintf(stderr, "edgellm %s: warning: %s %ld%s exceeds %s's trained context length %lld; its numbers past "
                        "that measure the model outside its range\n", cmd, what, n_ctx, how, path, train);
}

/* warn_ctx for -c or its default; with saved logits and no -c the context is the file's,
 * which run_compare reports after the compare has accepted the file */
static void warn_past_training(const char *cmd, const char *path, long long train, const eval_flags *fl)
{
    if (fl->ref_logits && !fl->n_ctx_set) return;
    warn_ctx(cmd, path, train, fl->n_ctx, "-c", fl->n_ctx_set ? "" : " (the default)");
}

static long long model_ctx_train(const edgellm_model *m)
{
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(m, &info);
    return info.n_ctx_train;
}

static edgellm_model *load(const char *cmd, const char *path, const eval_flags *fl)
{
    edgellm_model_params mp = edgellm_model_default_params();
    mp.n_threads = (int)fl->threads;
    edgellm_model *m = NULL;
    edgellm_error err = {0};
    if (edgellm_model_load(path, &mp, &m, &err) != EDGELLM_OK) {
        cli_print_error(cmd, &err);
        return NULL;
    }
    return m;
}

static const char *base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* "model:      NAME", with the KV cache type when it is not the default F32 */
static void print_model(const eval_flags *fl)
{
    printf("model:      %s", base(fl->model));
    if (fl->kv_type != EDGELLM_TYPE_F32) printf(" (KV cache %s)", cli_kv_type_name(fl->kv_type));
    printf("\n");
}

static void print_layout(const edgellm_eval_ppl_result *r, const char *text)
{
    printf("text:       %s: %lld tokens; %d chunks of %d, ", base(text), (long long)r->n_text_tokens, r->n_chunks,
           r->n_ctx);
    if (r->stride) printf("sliding by %d, last %d scored", r->stride, r->stride);
    else printf("second half scored");
    printf(": %lld predictions\n", (long long)r->n_scored);
}

/* ----------------------------------------------------------------- commands ---- */

static int run_ppl(const eval_flags *fl)
{
    const char *cmd = "eval ppl";
    edgellm_error err = {0};
    size_t len = 0;
    char *text = cli_read_text(fl->text, &len, &err);
    if (!text) { cli_print_error(cmd, &err); return 1; }
    edgellm_model *m = load(cmd, fl->model, fl);
    if (!m) { free(text); return 1; }
    warn_past_training(cmd, fl->model, model_ctx_train(m), fl);
    progress_bar bar;
    progress_start(&bar);
    edgellm_eval_params p = eval_params(fl, &bar);
    edgellm_eval_ppl_result r;
    edgellm_status rc = edgellm_eval_ppl(m, text, len, &p, &r, &err);
    progress_end(&bar);
    if (rc == EDGELLM_OK) {
        print_model(fl);
        print_layout(&r, fl->text);
        printf("PPL = %.4f +/- %.4f   (mean nll %.5f +/- %.5f nats/token)\n", r.ppl, r.ppl_err, r.nll_mean, r.nll_err);
        printf("speed:      %.0f tok/s evaluated (%.1f s)\n", r.tok_per_s, r.elapsed_ms / 1000.0);
    } else {
        cli_print_error(cmd, &err);
    }
    edgellm_model_free(m);
    free(text);
    return exit_code(rc, &err);
}

static void print_compare(const edgellm_eval_compare_result *r, const eval_flags *fl)
{
    printf("reference:  %s (%s", r->ref_name, fl->ref_logits ? "saved logits " : "live model");
    if (fl->ref_logits) printf("%s, top-%d", base(fl->ref_logits), r->ref_top_k);
    printf(")\n");
    print_model(fl);
    print_layout(&r->model, fl->text);
    if (!r->kld_exact)
        printf("note:       KLD from the top-%d saved entries + one bucket for the rest: a lower bound of the exact KLD\n",
               r->ref_top_k);
    printf("PPL(ref)        %10.4f +/- %.4f\n", r->ref.ppl, r->ref.ppl_err);
    printf("PPL(model)      %10.4f +/- %.4f\n", r->model.ppl, r->model.ppl_err);
    printf("dPPL            %+10.3f %%   (mean ln(PPL/PPL_ref) = %.5f +/- %.5f)\n", r->delta_ppl_pct, r->ln_ratio_mean,
           r->ln_ratio_err);
    printf("KLD mean        %10.6f +/- %.6f\n", r->kld_mean, r->kld_err);
    printf("KLD median      %10.6f\n", r->kld_median);
    printf("KLD 99%%         %10.6f\n", r->kld_p99);
    printf("KLD max         %10.6f\n", r->kld_max);
    if (r->n_kld_inf)
        printf("note:       KLD is +inf at %lld of %lld positions: the model gives probability 0 to a token the "
               "reference does not\n", (long long)r->n_kld_inf, (long long)r->model.n_scored);
    printf("same top token  %10.3f +/- %.3f %%\n", r->top1_pct, r->top1_err_pct);
    printf("mean dp         %+10.3f %%\n", r->dp_mean_pct);
    printf("RMS dp          %10.3f %%\n", r->dp_rms_pct);
}

static int run_compare(const eval_flags *fl)
{
    const char *cmd = "eval compare";
    if (!fl->ref == !fl->ref_logits) {
        fprintf(stderr, "edgellm %s: give exactly one of --ref REF.gguf and --ref-logits FILE\n", cmd);
        return cli_see_help(cmd);
    }
    edgellm_error err = {0};
    size_t len = 0;
    char *text = cli_read_text(fl->text, &len, &err);
    if (!text) { cli_print_error(cmd, &err); return 1; }
    edgellm_model *m = load(cmd, fl->model, fl), *ref = NULL;
    if (!m || (fl->ref && !(ref = load(cmd, fl->ref, fl)))) { edgellm_model_free(m); free(text); return 1; }
    warn_past_training(cmd, fl->model, model_ctx_train(m), fl);
    if (ref) {
        char role[4200];
        snprintf(role, sizeof role, "the reference %s", fl->ref);
        warn_past_training(cmd, role, model_ctx_train(ref), fl);
    }
    progress_bar bar;
    progress_start(&bar);
    edgellm_eval_params p = eval_params(fl, &bar);
    if (fl->ref_logits && !fl->n_ctx_set) p.n_ctx = 0;   /* the file's */
    edgellm_eval_compare_result r;
    edgellm_status rc = edgellm_eval_compare(m, ref, fl->ref_logits, text, len, &p, &r, &err);
    progress_end(&bar);
    /* the context was the file's: known, and worth a note, once the compare has accepted it
     * (a note before the run would also precede a mismatch error) */
    if (rc == EDGELLM_OK && fl->ref_logits && !fl->n_ctx_set)
        warn_ctx(cmd, fl->model, model_ctx_train(m), r.model.n_ctx, "the saved logits' n_ctx", "");
    if (rc == EDGELLM_OK) print_compare(&r, fl);
    else cli_print_error(cmd, &err);
    edgellm_model_free(ref);
    edgellm_model_free(m);
    free(text);
    return exit_code(rc, &err);
}

/* An output file that is one of the inputs (-m, --ref, -f) would be replaced by what is
 * computed from it: refuse before any work. */
static bool output_is_input(const char *cmd, const char *out, const eval_flags *fl)
{
    const char *in[] = {fl->model, fl->ref, fl->text};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        if (in[i] && edgellm_path_same_file(out, in[i])) {
            fprintf(stderr, "edgellm %s: %s: the output is the input file %s\n", cmd, out, in[i]);
            return true;
        }
    return false;
}

static int run_save(const eval_flags *fl)
{
    const char *cmd = "eval save-logits";
    if (output_is_input(cmd, fl->out, fl)) return 2;
    edgellm_error err = {0};
    size_t len = 0;
    char *text = cli_read_text(fl->text, &len, &err);
    if (!text) { cli_print_error(cmd, &err); return 1; }
    edgellm_model *m = load(cmd, fl->model, fl);
    if (!m) { free(text); return 1; }
    warn_past_training(cmd, fl->model, model_ctx_train(m), fl);
    progress_bar bar;
    progress_start(&bar);
    edgellm_eval_params p = eval_params(fl, &bar);
    edgellm_eval_ppl_result r;
    edgellm_status rc = edgellm_eval_save_logits(m, text, len, &p, fl->out, &r, &err);
    progress_end(&bar);
    if (rc == EDGELLM_OK) {
        edgellm_model_info info = {.size = sizeof info};
        edgellm_model_get_info(m, &info);
        int k = (int)fl->top_k < info.n_vocab ? (int)fl->top_k : info.n_vocab;
        print_model(fl);
        print_layout(&r, fl->text);
        printf("PPL = %.4f +/- %.4f\n", r.ppl, r.ppl_err);
        printf("wrote %s: top-%d of %d log-probs per position, %lld positions (%.1f MiB)%s\n", fl->out, k, info.n_vocab,
               (long long)r.n_scored, (512.0 + (double)r.n_scored * (12.0 + 8.0 * k)) / (1 << 20),
               k < info.n_vocab ? "; KLD from it is a lower bound" : "; exact");
    } else {
        cli_print_error(cmd, &err);
    }
    edgellm_model_free(m);
    free(text);
    return exit_code(rc, &err);
}

static void fmt_pct(char *buf, size_t n, double v, double e)
{
    if (isnan(v)) snprintf(buf, n, "-");
    else snprintf(buf, n, "%.2f +/- %.2f %%", v, e);
}

static int run_task(const eval_flags *fl)
{
    const char *cmd = "eval task";
    if (fl->cascade) {
        if (fl->ref) { fprintf(stderr, "edgellm %s: --cascade and --ref do not go together\n", cmd); return 2; }
        return cli_cascade_tasks(cmd, fl->model, fl->cascade, fl->data, (int)fl->limit, (int)fl->threads,
                                 fl->max_gap > 0 ? fl->max_gap : 3.0);
    }
    edgellm_error err = {0};
    cli_eval_taskset ts;
    if (cli_eval_read_jsonl(fl->data, (int)fl->limit, &ts, &err) != EDGELLM_OK) { cli_print_error(cmd, &err); return 1; }
    edgellm_model *m = load(cmd, fl->model, fl), *ref = NULL;
    if (!m || (fl->ref && !(ref = load(cmd, fl->ref, fl)))) { edgellm_model_free(m); cli_eval_taskset_free(&ts); return 1; }
    progress_bar bar;
    progress_start(&bar);
    edgellm_eval_task_params p = edgellm_eval_task_default_params();
    p.n_threads = (int)fl->threads;
    p.max_gen_tokens = (int)fl->max_tokens;
    p.kv_type = fl->kv_type;
    p.progress = on_progress;
    p.progress_user = &bar;
    edgellm_eval_task_result r;
    edgellm_status rc = edgellm_eval_task(m, ref, ts.items, ts.n, &p, &r, &err);
    progress_end(&bar);
    if (rc == EDGELLM_OK) {
        printf("task:       %s: %d item%s (%d multiple choice, %d generation)\n", base(fl->data), r.n_items,
               r.n_items == 1 ? "" : "s", r.n_mc, r.n_gen);
        print_model(fl);
        if (ref) printf("reference:  %s\n", base(fl->ref));
        printf("\n%-9s %5s  %-20s", "metric", "n", "model");
        if (ref) printf("  %-20s  %s", "reference", "gap (ref - model)");
        printf("\n");
        for (int k = 0; k < 4; k++) {
            const edgellm_eval_metric *me = &r.metrics[k];
            if (me->n == 0) continue;
            char a[48], b[48];
            fmt_pct(a, sizeof a, me->pct, me->err_pct);
            printf("%-9s %5d  %-20s", me->name, me->n, a);
            if (ref) {
                fmt_pct(b, sizeof b, me->ref_pct, me->ref_err_pct);
                if (isfinite(me->gap_pct)) printf("  %-20s  %+.2f pts (%+.1f %% of the reference)", b, me->gap_pts, me->gap_pct);
                else printf("  %-20s  %+.2f pts (the reference scores 0)", b, me->gap_pts);
            }
            printf("\n");
        }
        printf("\n(%.1f s)\n", r.elapsed_ms / 1000.0);
        /* items longer than the model was trained on: their scores measure the model outside
         * its range (as ppl/kld warn for -c) */
        for (int k = 0; k < 2; k++) {
            const edgellm_model *mk = k ? ref : m;
            if (!mk || r.n_past_ctx_train[k] <= 0) continue;
            edgellm_model_info info = {.size = sizeof info};
            edgellm_model_get_info(mk, &info);
            const int it = r.max_positions_item[k];
            fprintf(stderr,
                    "edgellm %s: warning: %d of %d item%s use%s more positions than %s's trained context %d; "
                    "%s measure%s the model outside its range (the longest: %s:%ld, %d positions)\n",
                    cmd, r.n_past_ctx_train[k], r.n_items, r.n_items == 1 ? "" : "s",
                    r.n_past_ctx_train[k] == 1 ? "s" : "", k ? fl->ref : fl->model, info.n_ctx_train,
                    r.n_past_ctx_train[k] == 1 ? "its score" : "their scores", r.n_past_ctx_train[k] == 1 ? "s" : "",
                    fl->data, it >= 0 && it < ts.n ? ts.lines[it] : 0L, r.max_positions[k]);
        }
    } else {
        cli_print_error(cmd, &err);
    }
    edgellm_model_free(ref);
    edgellm_model_free(m);
    cli_eval_taskset_free(&ts);
    return exit_code(rc, &err);
}

static void print_row(const edgellm_eval_sweep_row *r, bool is_ref)
{
    char type[40], tps[32] = "-";   /* "-": not measured (--no-bench) */
    snprintf(type, sizeof type, "%s%s", r->type, is_ref ? " (ref)" : "");
    if (r->tok_per_s > 0) snprintf(tps, sizeof tps, "%.0f", r->tok_per_s);
    printf("%-16s %9.1f %6.2f %9.4f %+8.2f %9.5f %9.4f %7.2f %9s  %s\n", type, (double)r->file_bytes / 1024.0, r->bpw,
           r->cmp.model.ppl, r->cmp.delta_ppl_pct, r->cmp.kld_mean, r->cmp.kld_p99, r->cmp.top1_pct, tps, r->used);
}

static int run_sweep(const eval_flags *fl)
{
    const char *cmd = "eval sweep";
    warn_past_training(cmd, fl->model, cli_gguf_n_ctx_train(fl->model), fl);
    /* results file: -o, or MODEL.eval.json next to MODEL.gguf (what edgellm plan looks for) */
    char out[4096];
    if (fl->out) {
        snprintf(out, sizeof out, "%s", fl->out);
    } else {
        size_t n = strlen(fl->model);
        size_t stem = n > 5 && !strcmp(fl->model + n - 5, ".gguf") ? n - 5 : n;
        if (stem + 11 >= sizeof out) { fprintf(stderr, "edgellm %s: model path too long\n", cmd); return 2; }
        snprintf(out, sizeof out, "%.*s.eval.json", (int)stem, fl->model);
    }
    if (!fl->no_results && output_is_input(cmd, out, fl)) return 2;
    if (!fl->no_results && !cli_eval_json_available()) {
        fprintf(stderr, "edgellm %s: this build cannot write JSON (install libcjson-dev); use --no-results\n", cmd);
        return 2;
    }
    /* find out now, not after the whole sweep, that the file cannot be written */
    const int out_errno = fl->no_results ? 0 : edgellm_output_check(out);
    if (out_errno == EISDIR) {
        fprintf(stderr, "edgellm %s: %s: is a directory; give the results file's name\n", cmd, out);
        return 1;
    }
    if (out_errno) {
        fprintf(stderr, "edgellm %s: %s: cannot write it (%s)\n", cmd, out, strerror(out_errno));
        return 1;
    }
    edgellm_error err = {0};
    size_t len = 0;
    char *text = cli_read_text(fl->text, &len, &err);
    if (!text) { cli_print_error(cmd, &err); return 1; }
    progress_bar bar;
    progress_start(&bar);
    edgellm_eval_sweep_params p = edgellm_eval_sweep_default_params();
    p.eval = eval_params(fl, &bar);
    if (fl->types) p.types = fl->types;
    p.tmp_dir = fl->tmp_dir;
    p.keep_files = fl->keep;
    p.bench_tokens = fl->no_bench ? 0 : (int)fl->bench_tokens;
    edgellm_eval_sweep_report *r = malloc(sizeof *r);
    if (!r) { free(text); fprintf(stderr, "edgellm %s: out of memory\n", cmd); return 1; }
    edgellm_status rc = edgellm_eval_sweep(fl->model, text, len, &p, r, &err);
    progress_end(&bar);
    if (rc == EDGELLM_OK) {
        const edgellm_eval_ppl_result *l = &r->ref.cmp.model;
        printf("reference:  %s\n", base(fl->model));
        print_layout(l, fl->text);
        char tps_note[64] = "not measured (--no-bench)";
        if (p.bench_tokens > 0)
            snprintf(tps_note, sizeof tps_note, "tg%d decode, %s", p.bench_tokens,
                     fl->threads ? "threads as -t" : "all physical cores");
        printf("KLD: mean KL divergence from the reference over the whole vocabulary (nats); top-1: same most likely\n"
               "token as the reference; tok/s: %s; used: matrix types written (a row length that\n"
               "does not fill a type's blocks falls back to another type)\n\n",
               tps_note);
        printf("%-16s %9s %6s %9s %8s %9s %9s %7s %9s  %s\n", "type", "size KiB", "bpw", "PPL", "dPPL %", "KLD mean",
               "KLD p99", "top-1 %", "tok/s", "used");
        print_row(&r->ref, true);
        for (int i = 0; i < r->n_rows; i++) print_row(&r->rows[i], false);
        printf("\nPPL(ref) = %.4f +/- %.4f; %lld predictions; %.1f s%s%s\n", l->ppl, l->ppl_err, (long long)l->n_scored,
               r->elapsed_ms / 1000.0, fl->keep ? "; files kept in " : "", fl->keep ? r->tmp_dir : "");
        if (!fl->no_results) {
            if (cli_eval_write_results(out, fl->model, fl->text, r, l->n_ctx, &err) != EDGELLM_OK) {
                cli_print_error(cmd, &err);
                rc = err.code ? err.code : EDGELLM_ERR_IO;
            } else {
                if (fl->out)   /* plan finds only MODEL.eval.json by itself */
                    printf("wrote %s (for this model's quality column: edgellm plan --model %s --eval %s)\n", out,
                           fl->model, out);
                else
                    printf("wrote %s (edgellm plan reads it for this model's quality column)\n", out);
            }
        }
    } else {
        cli_print_error(cmd, &err);
    }
    free(r);
    free(text);
    return exit_code(rc, &err);
}

/* The subcommands: name, what it does, its synopsis after "edgellm eval NAME " */
static const struct {
    const char *name;
    int (*fn)(const eval_flags *);
    int bit;
    const char *args, *about;
} subs[] = {
    {"ppl", run_ppl, SUB_PPL, "-m MODEL.gguf -f TEXT.txt [options]",
     "Perplexity, scoring the second half of each n_ctx chunk (llama-perplexity)."},
    {"compare", run_compare, SUB_COMPARE, "-m MODEL.gguf (--ref REF.gguf | --ref-logits FILE) -f TEXT.txt [options]",
     "A model against a reference: PPL of both, dPPL %, KL divergence, top-1 agreement."},
    {"save-logits", run_save, SUB_SAVE, "-m REF.gguf -f TEXT.txt -o FILE [options]",
     "Keep the reference's top-k log-probs for a later compare --ref-logits."},
    {"task", run_task, SUB_TASK, "-m MODEL.gguf [--ref REF.gguf] --data TASK.jsonl [options]",
     "Accuracy on multiple-choice / generation items, and the gap to the reference."},
    {"sweep", run_sweep, SUB_SWEEP, "-m REF.gguf -f TEXT.txt [--types LIST] [-o RESULTS.json] [options]",
     "Quantize to each type, compare, measure tok/s; writes MODEL.eval.json for plan."},
};
#define N_SUBS ((int)(sizeof subs / sizeof subs[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: edgellm eval SUBCOMMAND [options]\n\nIs a quantized model good enough?\n\nsubcommands:\n");
    for (int i = 0; i < N_SUBS; i++) fprintf(f, "  %-12s %s\n  %-12s %s\n", subs[i].name, subs[i].args, "", subs[i].about);
    fprintf(f, "\n'edgellm eval SUBCOMMAND --help' shows a subcommand's options.\n");
}

int cmd_eval(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (int i = 0; i < N_SUBS; i++) {
        if (strcmp(argv[1], subs[i].name)) continue;
        char name[32], synopsis[160];
        snprintf(name, sizeof name, "eval %s", subs[i].name);
        snprintf(synopsis, sizeof synopsis, "edgellm eval %s %s", subs[i].name, subs[i].args);
        eval_flags fl = {.n_ctx = 512, .top_k = 64, .max_tokens = 24, .bench_tokens = 64, .kv_type = EDGELLM_TYPE_F32};
        fl.types = edgellm_eval_sweep_default_params().types;
        eval_opt all[EVAL_MAX_OPTS];
        cli_opt opts[EVAL_MAX_OPTS];
        int n = 0;
        const int n_all = eval_options(&fl, all);
        for (int k = 0; k < n_all; k++)
            if (all[k].subs & subs[i].bit) opts[n++] = all[k].opt;
        const cli_command cmd = {
            .name = name, .synopsis = synopsis, .about = subs[i].about, .opts = opts, .n_opts = n,
            .elsewhere = eval_elsewhere,
        };
        const int parsed = cli_args_parse(&cmd, argc - 1, argv + 1);
        if (parsed != CLI_ARGS_GO) return parsed;
        return subs[i].fn(&fl);
    }
    fprintf(stderr, "edgellm eval: unknown subcommand '%s'\n", argv[1]);
    return cli_see_help("eval");
}
