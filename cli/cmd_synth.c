/* cmd_synth.c — 'edgellm synth': write a random-weight GGUF model with a built-in real
 * architecture's shape (or explicit numbers), quantized per --type. The work is
 * edgellm_synth (src/tools/synth.c); shapes live in src/tools/shapes.c. */
#include "commands.h"
#include "common/common.h"   /* edgellm_time_ms */
#include "tools/quantize.h"  /* edgellm_quant_scheme_parse: the group-wise types' full names */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: edgellm synth (--shape NAME | --n-embd N --n-layer N --n-head N --n-ff N --n-vocab N)\n"
            "                     --type TYPE -o OUT.gguf [options]\n"
            "\n"
            "  --shape NAME          a built-in real architecture (--list shows them); the flags\n"
            "                        below override single numbers of it\n"
            "  --n-embd N --n-layer N --n-head N --n-head-kv N --n-ff N --n-vocab N\n"
            "  --arch llama|qwen2    (default llama; qwen2 adds Q/K/V biases and NeoX RoPE)\n"
            "  --ctx N               context_length (default 2048)\n"
            "  --rope-theta X        rope.freq_base (default 10000)\n"
            "  --rms-eps X           (default 1e-5)\n"
            "  --tied / --untied     output matrix tied to token_embd or separate (default untied)\n"
            "  --type TYPE           as for 'edgellm quantize': q8_0 q4_0 ... q4_k_m i4 i8 f16 f32\n"
            "  --group N, --asym     i4/i8 group size and asymmetry\n"
            "  --seed S              random seed (default 42); the same seed gives the same file\n"
            "  --std X               weight standard deviation (default 0.02)\n"
            "  -t, --threads N       threads (default: physical cores)\n"
            "  -o, --output FILE     GGUF file to write (replaced atomically)\n"
            "  --list                print the built-in shapes\n");
}

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

int cmd_synth(int argc, char **argv)
{
    edgellm_synth_params p = edgellm_synth_default_params();
    edgellm_shape *s = &p.shape;
    const char *shape_name = NULL, *out = NULL, *arch = NULL;
    long dims[6] = {0, 0, 0, 0, 0, 0};   /* n_embd n_layer n_head n_head_kv n_ff n_vocab */
    static const char *dim_flags[6] = {"--n-embd", "--n-layer", "--n-head", "--n-head-kv", "--n-ff", "--n-vocab"};
    long ctx = 0, threads = 0, group = 0;
    double theta = 0, eps = 0, std_ = 0;
    int tied = -1;
    p.type = NULL;
    for (int i = 1; i < argc; i++) {
        char name[CLI_NAME_MAX];
        const char *a, *inl = cli_long_value(argv[i], name, &a);
        const char *val = inl ? inl : i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { if (inl) return cli_takes_no_value("synth", a); usage(stdout); return 0; }
        if (inl && (!strcmp(a, "--list") || !strcmp(a, "--tied") || !strcmp(a, "--untied") || !strcmp(a, "--asym")))
            return cli_takes_no_value("synth", a);
        if (!strcmp(a, "--list")) { list_shapes(stdout); return 0; }
        if (!strcmp(a, "--tied")) { tied = 1; continue; }
        if (!strcmp(a, "--untied")) { tied = 0; continue; }
        if (!strcmp(a, "--asym")) { p.asym = 1; continue; }
        int d = -1;
        for (int k = 0; k < 6; k++)
            if (!strcmp(a, dim_flags[k])) d = k;
        const int known = d >= 0 || !strcmp(a, "--shape") || !strcmp(a, "--arch") || !strcmp(a, "--type") ||
                          !strcmp(a, "--group") || !strcmp(a, "--seed") || !strcmp(a, "--std") || !strcmp(a, "-t") ||
                          !strcmp(a, "--threads") || !strcmp(a, "-o") || !strcmp(a, "--output") ||
                          !strcmp(a, "--ctx") || !strcmp(a, "--rope-theta") || !strcmp(a, "--rms-eps");
        if (!known) { fprintf(stderr, "edgellm synth: unknown option '%s'\n", a); return cli_see_help("synth"); }
        if (!val) { fprintf(stderr, "edgellm synth: %s needs a value\n", a); return cli_see_help("synth"); }
        if (!inl) i++;
        if (d >= 0) { if (cli_parse_int("synth", a, val, 1, 1 << 22, &dims[d])) return cli_see_help("synth"); }
        else if (!strcmp(a, "--shape")) shape_name = val;
        else if (!strcmp(a, "--arch")) arch = val;
        else if (!strcmp(a, "--type")) p.type = val;
        else if (!strcmp(a, "--group")) {
            if (cli_parse_int("synth", a, val, 64, 256, &group)) return cli_see_help("synth");
            if (group != 64 && group != 128 && group != 256) {
                fprintf(stderr, "edgellm synth: --group must be 64, 128 or 256\n");
                return cli_see_help("synth");
            }
            p.group = (int)group;
        } else if (!strcmp(a, "--seed")) {
            char *end;
            p.seed = strtoull(val, &end, 10);
            if (!*val || *end || val[0] == '-') { fprintf(stderr, "edgellm synth: --seed expects a non-negative integer\n"); return cli_see_help("synth"); }
        } else if (!strcmp(a, "--std")) {
            if (cli_parse_float("synth", a, val, &std_)) return cli_see_help("synth");
            if (!(std_ > 0) || !isfinite(std_) || std_ > 3.4e38) {
                fprintf(stderr, "edgellm synth: --std must be a finite number > 0, got '%s'\n", val);
                return cli_see_help("synth");
            }
        }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { if (cli_parse_int("synth", a, val, 1, 64, &threads)) return cli_see_help("synth"); }
        else if (!strcmp(a, "--ctx")) { if (cli_parse_int("synth", a, val, 1, 1 << 24, &ctx)) return cli_see_help("synth"); }
        else if (!strcmp(a, "--rope-theta") || !strcmp(a, "--rms-eps")) {
            double *dst = !strcmp(a, "--rope-theta") ? &theta : &eps;
            if (cli_parse_float("synth", a, val, dst)) return cli_see_help("synth");
            if (!(*dst > 0) || !isfinite(*dst) || *dst > 3.4e38) {
                fprintf(stderr, "edgellm synth: %s must be a finite number > 0, got '%s'\n", a, val);
                return cli_see_help("synth");
            }
        }
        else out = val;
    }
    edgellm_error err = {0};
    if (shape_name) {
        if (edgellm_shape_find(shape_name, s, &err) != EDGELLM_OK) { cli_print_error("synth", &err); return 2; }
    } else {
        if (!dims[0] || !dims[1] || !dims[2] || !dims[4] || !dims[5]) {
            if (argc < 2) { usage(stderr); return 2; }
            fprintf(stderr, "edgellm synth: give --shape NAME, or --n-embd, --n-layer, --n-head, --n-ff and --n-vocab\n");
            return cli_see_help("synth");
        }
        snprintf(s->name, sizeof s->name, "custom");
        snprintf(s->arch, sizeof s->arch, "llama");
        s->n_ctx_train = 2048;
        s->rope_theta = 10000.0f;
        s->rms_eps = 1e-5f;
        snprintf(s->source, sizeof s->source, "command line");
    }
    if (dims[0]) s->n_embd = (int)dims[0];
    if (dims[1]) s->n_layer = (int)dims[1];
    if (dims[2]) s->n_head = (int)dims[2];
    if (dims[3]) s->n_head_kv = (int)dims[3];
    else if (!shape_name) s->n_head_kv = s->n_head;
    if (dims[4]) s->n_ff = (int)dims[4];
    if (dims[5]) s->n_vocab = (int)dims[5];
    if (arch) {
        if (strcmp(arch, "llama") && strcmp(arch, "qwen2")) {
            fprintf(stderr, "edgellm synth: --arch must be llama or qwen2, got '%s'\n", arch);
            return cli_see_help("synth");
        }
        snprintf(s->arch, sizeof s->arch, "%s", arch);
    }
    if (ctx) s->n_ctx_train = (int)ctx;
    if (theta > 0) s->rope_theta = (float)theta;
    if (eps > 0) s->rms_eps = (float)eps;
    if (tied >= 0) s->tied = tied;
    if (std_ != 0) p.std = (float)std_;
    p.n_threads = (int)threads;
    if (!p.type || !out) {
        fprintf(stderr, "edgellm synth: --type and -o are required\n");
        return cli_see_help("synth");
    }
    cli_bar bar = {-1};
    if (isatty(fileno(stderr))) {
        p.progress = cli_draw_bar;
        p.progress_user = &bar;
    }
    uint64_t n_params = 0, bytes = 0;
    const double t0 = edgellm_time_ms();
    edgellm_status st = edgellm_synth(&p, out, &n_params, &bytes, &err);
    if (st != EDGELLM_OK) {
        if (p.progress) fprintf(stderr, "\n");
        cli_print_error("synth", &err);
        return st == EDGELLM_ERR_MISUSE ? 2 : 1;
    }
    const double ms = edgellm_time_ms() - t0;
    edgellm_quant_scheme sc;   /* "i4 g128 asym" rather than "i4": the group is part of the type */
    const char *tname = edgellm_quant_scheme_parse(p.type, p.group, p.asym, &sc, NULL) == EDGELLM_OK && sc.edgellm_only
                            ? sc.label
                            : p.type;
    fprintf(stderr, "edgellm synth: wrote %s: %s shape %s (%d layers, n_embd %d, %d/%d heads, n_ff %d, vocab %d%s), "
                    "%s, %.1fM params, file %.2f MiB, %.1f s\n",
            out, s->arch, s->name, s->n_layer, s->n_embd, s->n_head, s->n_head_kv, s->n_ff, s->n_vocab,
            s->tied ? ", tied" : "", tname, (double)n_params / 1e6, (double)bytes / 1048576.0, ms / 1000.0);
    return 0;
}
