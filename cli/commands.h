/* commands.h — one function per subcommand: argv[0] is the subcommand name.
 * Exit status: 0 success, 1 failed operation, 2 wrong command line. */
#ifndef EDGELLM_CLI_COMMANDS_H
#define EDGELLM_CLI_COMMANDS_H
#include "args.h"
#include "edgellm_tools.h"
#include <stdio.h>

int cmd_plan(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_soak(int argc, char **argv);
int cmd_store(int argc, char **argv);
int cmd_delta(int argc, char **argv);

/* "store:NAME" or "store:NAME@V" as a model path (cmd_store.c): ref is what follows
 * "store:"; the file of that version of the default store into path[size] (the active one
 * rolled back to the previous when it fails to open). 0, or prints the problem and returns 1. */
int cli_store_resolve(const char *ref, char *path, size_t size);
int cmd_cascade(int argc, char **argv);
/* The cascade's cost/quality curve on a multiple-choice task file (cmd_cascade.c; also
 * eval task --cascade): both models loaded, edgellm_cascade_tasks, the markdown table and the
 * chosen threshold on stdout. limit 0: all items. 0, or prints the problem and returns 1. */
int cli_cascade_tasks(const char *cmd, const char *small_path, const char *large_path, const char *tasks, int limit,
                      int n_threads, double max_gap);

/* --draft FILE | self:TYPE (bench_spec.c): a draft model from FILE, or model_path quantized
 * to TYPE (a temporary file in $TMPDIR or /tmp, removed once mapped). Statuses as
 * edgellm_model_load and edgellm_quantize_file. */
edgellm_status cli_draft_load(const char *model_path, const char *arg, const edgellm_model_params *mp,
                              edgellm_model **out, edgellm_error *err);
/* bench --draft / --lookup (bench_spec.c): plain and speculative greedy runs of -n tokens
 * alternating, -r rounds, per model and thread count; fmt 0 md, 1 csv, 2 json on stdout.
 * 0, or 1 when a model failed (printed). */
typedef struct {
    const char *draft;          /* FILE or self:TYPE; NULL: lookup only                      */
    const char *prompt;         /* the prompt text                                           */
    edgellm_spec_params sp;
} cli_bench_spec_opts;
int cli_bench_spec(const char *const *models, int n_models, const edgellm_bench_params *bp, const cli_bench_spec_opts *o,
                   int fmt);

/* --chat-template NAME|FILE (cmd_template.c): a built-in's text, or FILE read into *owned
 * (free it); NULL arg: *text NULL (the model's own). Prints the problem and returns 1 when
 * NAME is no built-in and FILE cannot be read. */
int cli_chat_template(const char *cmd, const char *arg, char **owned, const char **text);
/* "chatml, llama2, ...": the built-in templates' names, for messages. */
const char *cli_chat_template_names(void);

/* Print "edgellm CMD: message" to stderr. */
void cli_print_error(const char *cmd, const edgellm_error *err);
/* After a one-line command-line error: print "see 'edgellm CMD --help'" to stderr, return 2. */
int cli_see_help(const char *cmd);

/* Options several commands take, spelled once (args.h: a table entry's first fields; add
 * .help, .def where a command says more). */
extern const cli_choice cli_kv_types[];   /* f32, f16, q8_0 -> EDGELLM_TYPE_F32/_F16/_Q8_0 */
#define CLI_OPT_MODEL(DST) CLI_PATH("-m", "--model", "MODEL.gguf", DST)
#define CLI_OPT_THREADS(DST) CLI_INT("-t", "--threads", "N", DST, 1, 64), .help = "compute threads", .def = "physical cores"
#define CLI_OPT_CTX_SIZE(DST) \
    CLI_INT("-c", "--ctx-size", "N", DST, 1, 1 << 24), .help = "KV cache positions", .def = "the model's, at most 4096"
#define CLI_OPT_KV_TYPE(DST)                                                                                          \
    CLI_ENUM(NULL, "--kv-type", NULL, DST, cli_kv_types),                                                             \
        .help = "KV cache element type: f16 halves the cache, q8_0 takes 0.53 of f16 and needs head_dim a multiple " \
                "of 32",                                                                                              \
        .show_default = 1
/* The sampling options shared by run and chat, as opts[] entries writing into an
 * edgellm_sampler_params S (temperature, top-k, top-p, min-p, repeat penalty). */
#define CLI_SAMPLING_OPTS(S)                                                                                         \
    {CLI_FLOAT(NULL, "--temp", "T", &(S)->temperature, 0, 1e6, CLI_OPEN_MAX), .show_default = 1,                    \
     .help = "temperature, 0 = greedy"},                                                                             \
    {CLI_INT(NULL, "--top-k", "K", &(S)->top_k, 0, INT_MAX), .show_default = 1,                                     \
     .help = "keep the K most likely tokens, 0 = off"},                                                              \
    {CLI_FLOAT(NULL, "--top-p", "P", &(S)->top_p, 0, 1, CLI_CLOSED), .show_default = 1,                             \
     .help = "nucleus mass in [0, 1], 1 = off, 0 = the most likely token only"},                                     \
    {CLI_FLOAT(NULL, "--min-p", "P", &(S)->min_p, 0, 1, CLI_CLOSED), .show_default = 1,                             \
     .help = "drop tokens below P * p_max, in [0, 1]"},                                                              \
    {CLI_FLOAT(NULL, "--repeat-penalty", "R", &(S)->repeat_penalty, 0, 1e6, CLI_OPEN), .show_default = 1,           \
     .help = "repetition penalty, > 0, 1 = off"}
/* The --kv-type spelling of a KV cache type (f32, f16, q8_0). */
const char *cli_kv_type_name(int type);
/* The trained context length of a GGUF file (<general.architecture>.context_length), or 0
 * when the file cannot be opened or does not say. Reads the metadata only. */
long long cli_gguf_n_ctx_train(const char *path);
/* The same of a GGUF file already open. */
long long cli_gguf_ctx_train(const edgellm_gguf_meta *g);
/* Monotonic time in milliseconds (CLOCK_MONOTONIC), for the durations commands print. */
double cli_time_ms(void);

/* Text inputs (prompt files, eval texts, task sets, tokenize -f): at most this many bytes,
 * so that /dev/zero or an endless pipe ends in an error instead of filling memory. */
#define CLI_MAX_TEXT_BYTES ((size_t)256 << 20)
#define CLI_MIN(a, b) ((a) < (b) ? (a) : (b))
#define CLI_MAX(a, b) ((a) > (b) ? (a) : (b))
/* Read all of path (a file, pipe or device; not a directory) into a NUL-terminated
 * malloc'd buffer of *len bytes. NULL and err->msg = "PATH: problem" when it cannot be
 * opened or read, is a directory, holds more than CLI_MAX_TEXT_BYTES, or memory runs out.
 * The text may contain NUL bytes (*len counts them); callers that need C strings check. */
char *cli_read_text(const char *path, size_t *len, edgellm_error *err);

/* Progress bar on stderr, for a library progress callback (edgellm_quantize_params,
 * edgellm_synth_params): "\r[######....] 42% what", redrawn only when the whole percentage
 * changes, erased at fraction 1.0. user: a cli_bar whose last_pct starts at -1. Never
 * cancels (returns 0). Callers install it only when stderr is a terminal. */
typedef struct { int last_pct; } cli_bar;
int cli_draw_bar(void *user, double fraction, const char *what);
/* s as a JSON string literal, quotes included: '"' and '\\' escaped, control bytes as \u00XX,
 * well-formed UTF-8 as it is, each byte that is not part of well-formed UTF-8 as \ufffd
 * (RFC 8259 §8.1: JSON text is UTF-8). */
void cli_json_str(FILE *f, const char *s);
/* s as one CSV field (RFC 4180): in double quotes, each '"' doubled; commas, newlines and
 * any bytes kept as they are. */
void cli_csv_str(FILE *f, const char *s);
#endif
