/* cmd_synth.c — 'edgellm synth': write a random-weight GGUF model with a built-in real
 * architecture's shape (or explicit numbers), quantized per --type. The work is
 * edgellm_synth (src/tools/synth.c); shapes live in src/tools/shapes.c. */
#include "commands.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void list_shapes(FILE *f)
{
    fprintf(f, "%-16s %-6s %7s %6s %6s %6s %7s %7s %7s %5s %10s %6s  %s\n", "name", "arch", "n_layer", "n_embd", "n_head",
            "n_kv", "n_ff", "n_vocab", "ctx", "tied", "rope_theta", "eps", "source");
    for (int i = 0; i < edgellm_shape_count(); i++) {
        edgellm_shape s;
        edgellm_shape_at(i, &s);
        fprintf(f, "%-16s %-6s %7d %6d %6d %6d %7d %7d %7d %5s %10g %6g  %s\n", s.name, s.arch, s.n_layer, s.n_embd,
                s.n_head, s.n_head_kv, s.n_ff, s.n_vocab, s.n_ctx_train, s.tied ? "yes" : "no", (double)s.rope_theta,
                (double)s.rms_eps, s.source);
    }
}

static const cli_choice archs[] = {{"llama", 0}, {"qwen2", 1}, {NULL, 0}};
static const cli_choice group_sizes[] = {{"64", 64}, {"128", 128}, {"256", 256}, {NULL, 0}};

int cmd_synth(int argc, char **argv)
{
    edgellm_synth_params p = edgellm_synth_default_params();
    edgellm_shape *s = &p.shape;
    const char *shape_name = NULL, *out = NULL;
    int dims[6] = {0, 0, 0, 0, 0, 0};   /* n_embd n_layer n_head n_head_kv n_ff n_vocab; 0: the shape's */
    int ctx = 0, arch = -1, tied = -1, list = 0;
    float theta = 0, eps = 0;           /* 0: the shape's */
    p.type = NULL;
    const cli_opt opts[] = {
        {CLI_GROUP("shape")},
        {CLI_STRING(NULL, "--shape", "NAME", &shape_name),
         .help = "a built-in real architecture (--list shows them); the options below override single numbers of it"},
        {CLI_INT(NULL, "--n-embd", "N", &dims[0], 1, 1 << 22), .help = "embedding width"},
        {CLI_INT(NULL, "--n-layer", "N", &dims[1], 1, 1 << 22), .help = "layers"},
        {CLI_INT(NULL, "--n-head", "N", &dims[2], 1, 1 << 22), .help = "attention heads"},
        {CLI_INT(NULL, "--n-head-kv", "N", &dims[3], 1, 1 << 22), .help = "key/value heads", .def = "--n-head"},
        {CLI_INT(NULL, "--n-ff", "N", &dims[4], 1, 1 << 22), .help = "feed-forward width"},
        {CLI_INT(NULL, "--n-vocab", "N", &dims[5], 1, 1 << 22), .help = "vocabulary size"},
        {CLI_ENUM(NULL, "--arch", NULL, &arch, archs), .help = "qwen2 adds Q/K/V biases and NeoX RoPE",
         .def = "the shape's, else llama"},
        {CLI_INT(NULL, "--ctx", "N", &ctx, 1, 1 << 24), .help = "context_length", .def = "the shape's, else 2048"},
        {CLI_FLOAT(NULL, "--rope-theta", "X", &theta, 0, INFINITY, CLI_OPEN_MIN), .help = "rope.freq_base",
         .def = "the shape's, else 10000"},
        {CLI_FLOAT(NULL, "--rms-eps", "X", &eps, 0, INFINITY, CLI_OPEN_MIN), .help = "RMS norm epsilon",
         .def = "the shape's, else 1e-5"},
        {CLI_FLAG(NULL, "--tied", &tied, 1), .help = "output matrix tied to token_embd", .def = "the shape's, else untied"},
        {CLI_FLAG(NULL, "--untied", &tied, 0), .help = "output matrix separate from token_embd"},
        {CLI_GROUP("weights")},
        {CLI_STRING(NULL, "--type", "TYPE", &p.type),
         .help = "as for 'edgellm quantize': q8_0 q4_0 ... q4_k_m i4 i8 f16 f32 (required)"},
        {CLI_ENUM(NULL, "--group", "N", &p.group, group_sizes), .help = "i4/i8 group size", .def = "128"},
        {CLI_FLAG(NULL, "--asym", &p.asym, 1), .help = "i4/i8 with a minimum per group"},
        {CLI_U64(NULL, "--seed", "S", &p.seed), .show_default = 1,
         .help = "random seed; the same seed gives the same file"},
        {CLI_FLOAT(NULL, "--std", "X", &p.std, 0, INFINITY, CLI_OPEN_MIN), .show_default = 1,
         .help = "weight standard deviation"},
        {CLI_FLOAT(NULL, "--branch-scale", "X", &p.branch_scale, 0, INFINITY, CLI_OPEN_MIN), .show_default = 1,
         .help = "std factor of attn_output and ffn_down: near 0 (e.g. 0.000001) the greedy text falls into a cycle "
                 "and quantized copies agree (speculative decoding measurements), same bytes per token"},
        {CLI_GROUP("output")},
        {CLI_PATH("-o", "--output", "OUT.gguf", &out), .help = "GGUF file to write, replaced atomically (required)"},
        {CLI_OPT_THREADS(&p.n_threads)},
        {CLI_FLAG(NULL, "--list", &list, 1), .help = "print the built-in shapes"},
    };
    const cli_command cmd = {
        .name = "synth",
        .synopsis = "edgellm synth (--shape NAME | --n-embd N --n-layer N --n-head N --n-ff N --n-vocab N)\n"
                    "              --type TYPE -o OUT.gguf [options]\n"
                    "edgellm synth --list",
        .about = "Write a random-weight GGUF model with a real architecture's shape, quantized per --type (for\n"
                 "benchmarks: its speed is the real model's, its text is noise).",
        .opts = opts, .n_opts = CLI_N_OPTS(opts),
    };
    const int parsed = cli_args_parse(&cmd, argc, argv);
    if (parsed != CLI_ARGS_GO) return parsed;
    if (list) { list_shapes(stdout); return 0; }
    edgellm_error err = {0};
    if (shape_name) {
        if (edgellm_shape_find(shape_name, s, &err) != EDGELLM_OK) { cli_print_error("synth", &err); return 2; }
    } else {
        if (!dims[0] || !dims[1] || !dims[2] || !dims[4] || !dims[5])
            return cli_args_missing(&cmd, argc, "give --shape NAME, or --n-embd, --n-layer, --n-head, --n-ff and "
                                                "--n-vocab");
        snprintf(s->name, sizeof s->name, "custom");
        snprintf(s->arch, sizeof s->arch, "llama");
        s->n_ctx_train = 2048;
        s->rope_theta = 10000.0f;
        s->rms_eps = 1e-5f;
        snprintf(s->source, sizeof s->source, "command line");
    }
    if (dims[0]) s->n_embd = dims[0];
    if (dims[1]) s->n_layer = dims[1];
    if (dims[2]) s->n_head = dims[2];
    if (dims[3]) s->n_head_kv = dims[3];
    else if (!shape_name) s->n_head_kv = s->n_head;
    if (dims[4]) s->n_ff = dims[4];
    if (dims[5]) s->n_vocab = dims[5];
    if (arch >= 0) snprintf(s->arch, sizeof s->arch, "%s", archs[arch].name);
    if (ctx) s->n_ctx_train = ctx;
    if (theta > 0) s->rope_theta = theta;
    if (eps > 0) s->rms_eps = eps;
    if (tied >= 0) s->tied = tied;
    if (!p.type || !out) return cli_args_error(&cmd, "--type and -o are required");
    cli_bar bar = {-1};
    if (isatty(fileno(stderr))) {
        p.progress = cli_draw_bar;
        p.progress_user = &bar;
    }
    uint64_t n_params = 0, bytes = 0;
    const double t0 = cli_time_ms();
    edgellm_status st = edgellm_synth(&p, out, &n_params, &bytes, &err);
    if (st != EDGELLM_OK) {
        if (p.progress) fprintf(stderr, "\n");
        cli_print_error("synth", &err);
        return st == EDGELLM_ERR_MISUSE ? 2 : 1;
    }
    const double ms = cli_time_ms() - t0;
    edgellm_quant_scheme_info sc;   /* "i4 g128 asym" rather than "i4": the group is part of the type */
    const char *tname = edgellm_quantize_scheme(p.type, p.group, p.asym, &sc, NULL) == EDGELLM_OK && sc.edgellm_only
                            ? sc.label
                            : p.type;
    fprintf(stderr, "edgellm synth: wrote %s: %s shape %s (%d layers, n_embd %d, %d/%d heads, n_ff %d, vocab %d%s), "
                    "%s, %.1fM params, file %.2f MiB, %.1f s\n",
            out, s->arch, s->name, s->n_layer, s->n_embd, s->n_head, s->n_head_kv, s->n_ff, s->n_vocab,
            s->tied ? ", tied" : "", tname, (double)n_params / 1e6, (double)bytes / 1048576.0, ms / 1000.0);
    return 0;
}
