/* cmd_cascade.c — 'edgellm cascade': a small and a large model by confidence.
 *
 *   -p PROMPT      the small model answers (greedy); below the threshold the large one does.
 *                  stdout: the answer; stderr: the signal, which model answered, times.
 *   --tasks FILE   multiple-choice JSONL (eval task's format): the cost/quality curve, one
 *                  row per threshold (accuracy, escalation, mean time per item) and the
 *                  threshold that keeps accuracy within --max-gap percent of the large model
 *                  at the least escalation, as a markdown table on stdout.
 * The work is edgellm_cascade_generate / edgellm_cascade_tasks (src/tools/cascade.c). */
#include "commands.h"
#include "eval_json.h"
#include <limits.h>
#include <math.h>
#include <string.h>

static const cli_choice signals[] = {{"min-prob", EDGELLM_CASCADE_MIN_PROB},
                                     {"p10", EDGELLM_CASCADE_P10},
                                     {"mean-logprob", EDGELLM_CASCADE_MEAN_LOGPROB},
                                     {"entropy", EDGELLM_CASCADE_ENTROPY},
                                     {NULL, 0}};

int cli_cascade_tasks(const char *cmd, const char *small_path, const char *large_path, const char *tasks, int limit,
                      int n_threads, double max_gap)
{
    edgellm_model_params mp = edgellm_model_default_params();
    mp.n_threads = n_threads;
    edgellm_model *small = NULL, *large = NULL;
    edgellm_error err = {0};
    int rc = 1;
    if (edgellm_model_load(small_path, &mp, &small, &err) || edgellm_model_load(large_path, &mp, &large, &err)) {
        cli_print_error(cmd, &err);
        goto done;
    }
    cli_eval_taskset ts = {0};
    if (cli_eval_read_jsonl(tasks, limit, &ts, &err)) { cli_print_error(cmd, &err); goto done; }
    edgellm_cascade_report rep;
    if (edgellm_cascade_tasks(small, large, ts.items, ts.n, n_threads, max_gap, &rep, &err)) {
        cli_print_error(cmd, &err);
        cli_eval_taskset_free(&ts);
        goto done;
    }
    cli_eval_taskset_free(&ts);
    printf("items: %d; small %s: %.1f %% (%.1f ms per item); large %s: %.1f %% (%.1f ms per item)\n\n", rep.n_items,
           small_path, rep.small_pct, rep.small_ms, large_path, rep.large_pct, rep.large_ms);
    printf("| threshold (choice probability) | accuracy %% | escalated %% | ms per item |\n|---:|---:|---:|---:|\n");
    for (int k = 0; k < rep.n_points; k++) {
        const edgellm_cascade_point *p = &rep.points[k];
        printf("| %s%.3f%s | %.1f | %.1f | %.1f |\n", k == rep.chosen ? "**" : "", p->threshold,
               k == rep.chosen ? "**" : "", p->accuracy_pct, p->escalation_pct, p->mean_ms);
    }
    if (rep.chosen >= 0)
        printf("\nchosen: threshold %.3f, accuracy %.1f %% (large %.1f %%, allowed gap %.1f %%), %.1f %% escalated, "
               "%.1f ms per item (large alone %.1f)\n", rep.points[rep.chosen].threshold,
               rep.points[rep.chosen].accuracy_pct, rep.large_pct, rep.max_gap_pct,
               rep.points[rep.chosen].escalation_pct, rep.points[rep.chosen].mean_ms, rep.large_ms);
    else printf("\nno threshold keeps accuracy within %.1f %% of the large model\n", rep.max_gap_pct);
    rc = 0;
done:
    edgellm_model_free(small);
    edgellm_model_free(large);
    return rc;
}

int cmd_cascade(int argc, char **argv)
{
    const char *small_path = NULL, *large_path = NULL, *prompt = NULL, *tasks = NULL;
    edgellm_cascade_params cp = edgellm_cascade_default_params();
    int n_threads = 0, limit = 0;
    double max_gap = 3.0;
    const cli_opt opts[] = {
        {CLI_PATH(NULL, "--small", "S.gguf", &small_path), .help = "the model that answers first", .required = 1},
        {CLI_PATH(NULL, "--large", "L.gguf", &large_path), .help = "the model escalated to", .required = 1},
        {CLI_STRING("-p", "--prompt", "TEXT", &prompt), .help = "answer one prompt"},
        {CLI_PATH(NULL, "--tasks", "FILE.jsonl", &tasks),
         .help = "multiple-choice items ({\"context\", \"choices\", \"label\"}): the cost/quality curve"},
        {CLI_ENUM(NULL, "--signal", NULL, &cp.signal, signals), .show_default = 1,
         .help = "confidence of a generated answer: min-prob, p10 (10th percentile of the token probabilities), "
                 "mean-logprob, entropy (minus the mean entropy)"},
        {CLI_DOUBLE(NULL, "--threshold", "X", &cp.threshold, -INFINITY, INFINITY, CLI_OPEN), .show_default = 1,
         .help = "-p: escalate when the signal is below X"},
        {CLI_INT("-n", "--n-predict", "N", &cp.n_predict, 1, 1 << 20), .show_default = 1,
         .help = "-p: tokens to generate at most"},
        {CLI_DOUBLE(NULL, "--max-gap", "PCT", &max_gap, 0, 100, CLI_OPEN_MIN), .show_default = 1,
         .help = "--tasks: accuracy loss allowed, percent of the large model's"},
        {CLI_INT(NULL, "--limit", "N", &limit, 0, INT_MAX), .help = "--tasks: the first N items", .def = "all"},
        {CLI_OPT_THREADS(&n_threads)},
    };
    const cli_command cmd = {
        .name = "cascade",
        .synopsis = "edgellm cascade --small S.gguf --large L.gguf -p PROMPT [--signal p10] [--threshold X]\n"
                    "edgellm cascade --small S.gguf --large L.gguf --tasks ITEMS.jsonl [--max-gap 3]",
        .about = "Answer with the small model and escalate to the large one when the small model's confidence is\n"
                 "low. The models may have different vocabularies.",
        .opts = opts, .n_opts = CLI_N_OPTS(opts),
    };
    const int parsed = cli_args_parse(&cmd, argc, argv);
    if (parsed != CLI_ARGS_GO) return parsed;
    if (!prompt == !tasks) return cli_args_error(&cmd, "give -p or --tasks (one of them)");
    if (tasks) return cli_cascade_tasks("cascade", small_path, large_path, tasks, limit, n_threads, max_gap);
    edgellm_model_params mp = edgellm_model_default_params();
    mp.n_threads = n_threads;
    edgellm_model *small = NULL, *large = NULL;
    edgellm_ctx *cs = NULL, *cl = NULL;
    edgellm_error err = {0};
    int rc = 1;
    if (edgellm_model_load(small_path, &mp, &small, &err) || edgellm_model_load(large_path, &mp, &large, &err)) {
        cli_print_error("cascade", &err);
        goto done;
    }
    {
        edgellm_ctx_params xp = edgellm_ctx_default_params();
        xp.n_threads = n_threads;
        xp.n_ctx = 2048;
        if (edgellm_ctx_new(small, &xp, &cs, &err) || edgellm_ctx_new(large, &xp, &cl, &err)) {
            cli_print_error("cascade", &err);
            goto done;
        }
        edgellm_cascade_result r;
        if (edgellm_cascade_generate(cs, cl, prompt, &cp, &r, &err)) { cli_print_error("cascade", &err); goto done; }
        printf("%s%s\n", prompt, r.text);
        fprintf(stderr, "signal %s = %.4f, threshold %.4f: %s\n", edgellm_cascade_signal_name(cp.signal), r.signal,
                cp.threshold, r.escalated ? "escalated, the large model answered" : "the small model answered");
        fprintf(stderr, "small: %d tokens, %.1f ms", r.n_small, r.small_ms);
        if (r.escalated) fprintf(stderr, "; large: %d tokens, %.1f ms", r.n_large, r.large_ms);
        fputc('\n', stderr);
        edgellm_cascade_result_free(&r);
        rc = 0;
    }
    rc = 0;
done:
    edgellm_ctx_free(cs);
    edgellm_ctx_free(cl);
    edgellm_model_free(small);
    edgellm_model_free(large);
    return rc;
}
