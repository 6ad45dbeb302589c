/*
 * cmd_info.c — `edgellm info MODEL.gguf` (or `-m MODEL.gguf`, like the other commands): what
 * is in a GGUF file, without running it.
 *
 * Prints, in this order: the file (GGUF version, alignment, size, where tensor data starts);
 * the architecture and its RoPE frequency scaling as edgellm runs it (none, linear, yarn,
 * rope_freqs.weight factors; a type edgellm refuses is named with the reason);
 * every metadata key with its value (general.*, then <arch>.* — the hyperparameters — then
 * tokenizer.*, then the rest; arrays as "[N x TYPE]"); a tokenizer summary (model, pre,
 * vocabulary size, bos/eos/unk ids and their text); the tensor table (name, type, shape in
 * ggml ne order — ne[0] is the row length — bytes); totals: parameters, bytes and bits per
 * weight (8 * tensor bytes / parameters).
 *
 * The file is opened with edgellm_gguf_meta_open (edgellm_tools.h), which validates all of
 * it first: a bad file prints one line "edgellm info: PATH: problem" and exits 1. Wrong
 * command line: exit 2.
 *
 * --check: afterwards, dequantize every tensor and look for NaN/inf (edgellm_check_file,
 * src/tools/check.c); the first one found is reported as "edgellm info: PATH: tensor T
 * ... element E (row R, column C) is NaN" and the exit status is 1.
 */
#include "commands.h"
#include <stdbool.h>
#include <string.h>

/* A string of the file: bytes inside the mapping, not NUL-terminated. */
typedef struct {
    const char *ptr;
    size_t len;
} str;

/* The file, as the positional argument or -m: one, whichever way it is given. */
static int take_file(const char *opt, const char *value, void *dst, char *msg, size_t size)
{
    (void)opt;
    const char **path = dst;
    if (*path) {
        snprintf(msg, size, "one file at a time ('%s' and '%s')", *path, value);
        return 1;
    }
    *path = value;
    return 0;
}

/* A mapped string, escaped for one line of output, truncated to fit buf. */
static const char *esc(str s, char *buf, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; i < s.len && o + 8 < size; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c == '\n') o += (size_t)snprintf(buf + o, size - o, "\\n");
        else if (c == '\t') o += (size_t)snprintf(buf + o, size - o, "\\t");
        else if (c == '"' || c == '\\') o += (size_t)snprintf(buf + o, size - o, "\\%c", c);
        else if (c < 32 || c == 127) o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
        else buf[o++] = (char)c;
        if (i + 1 < s.len && o + 8 >= size) o += (size_t)snprintf(buf + o, size - o, "...");
    }
    buf[o] = 0;
    return buf;
}

static bool has_prefix(str s, const char *prefix)
{
    size_t n = strlen(prefix);
    return s.len >= n && !memcmp(s.ptr, prefix, n);
}

static bool str_eq(str s, const char *c) { return s.len == strlen(c) && !memcmp(s.ptr, c, s.len); }

static str key_at(const edgellm_gguf_meta *g, int64_t i)
{
    str k;
    k.ptr = edgellm_gguf_meta_key(g, i, &k.len);
    return k;
}

static bool get_str(const edgellm_gguf_meta *g, const char *key, str *out)
{
    return edgellm_gguf_meta_get_str(g, key, &out->ptr, &out->len);
}

/* Tensor i of the table (i in range: the count came from the same file). */
static edgellm_gguf_tensor_info tensor_at(const edgellm_gguf_meta *g, int64_t i)
{
    edgellm_gguf_tensor_info t = {0};
    edgellm_gguf_meta_tensor(g, i, &t);
    return t;
}

static void human_bytes(uint64_t n, char *buf, size_t size)
{
    if (n >= (1ull << 30)) snprintf(buf, size, "%.2f GiB", (double)n / (1ull << 30));
    else if (n >= (1ull << 20)) snprintf(buf, size, "%.2f MiB", (double)n / (1ull << 20));
    else if (n >= (1ull << 10)) snprintf(buf, size, "%.2f KiB", (double)n / (1ull << 10));
    else snprintf(buf, size, "%llu B", (unsigned long long)n);
}

/* Metadata keys of one group (prefix, or NULL for "none of the named groups"). */
static void print_kv_group(const edgellm_gguf_meta *g, const char *title, const char *prefix,
                           const char *arch_prefix, int key_w)
{
    int64_t n = edgellm_gguf_meta_n_keys(g);
    bool any = false;
    for (int64_t i = 0; i < n; i++) {
        str k = key_at(g, i);
        bool in;
        if (prefix) in = has_prefix(k, prefix);
        else in = !has_prefix(k, "general.") && !has_prefix(k, "tokenizer.") && !(arch_prefix && has_prefix(k, arch_prefix));
        if (!in) continue;
        if (!any) printf("%s\n", title);
        any = true;
        char kb[256], vb[256];
        edgellm_gguf_meta_format_value(g, i, vb, sizeof vb);
        printf("  %-*s %s\n", key_w, esc(k, kb, sizeof kb), vb);
    }
}

/* "id "text"" of a special token, or "-" when absent. */
static void print_token(const edgellm_gguf_meta *g, const char *label, const char *key)
{
    int64_t id;
    if (!edgellm_gguf_meta_get_int(g, key, &id)) return;
    str s;
    char tb[128];
    if (id >= 0 && edgellm_gguf_meta_array_str(g, "tokenizer.ggml.tokens", (uint64_t)id, &s.ptr, &s.len))
        printf("  %-14s %lld \"%s\"\n", label, (long long)id, esc(s, tb, sizeof tb));
    else
        printf("  %-14s %lld (not in the vocabulary)\n", label, (long long)id);
}

static void print_tokenizer(const edgellm_gguf_meta *g)
{
    str s;
    char b[256];
    printf("\ntokenizer summary:\n");
    if (get_str(g, "tokenizer.ggml.model", &s)) {
        const char *kind = str_eq(s, "llama") ? " (SentencePiece)" : str_eq(s, "gpt2") ? " (byte-level BPE)" : "";
        printf("  %-14s %s%s\n", "model", esc(s, b, sizeof b), kind);
    } else {
        printf("  %-14s (none: tokenizer.ggml.model is absent)\n", "model");
    }
    if (get_str(g, "tokenizer.ggml.pre", &s)) printf("  %-14s %s\n", "pre", esc(s, b, sizeof b));
    uint64_t n;
    if (edgellm_gguf_meta_get_array(g, "tokenizer.ggml.tokens", NULL, &n))
        printf("  %-14s %llu tokens\n", "vocabulary", (unsigned long long)n);
    if (edgellm_gguf_meta_get_array(g, "tokenizer.ggml.merges", NULL, &n))
        printf("  %-14s %llu\n", "merges", (unsigned long long)n);
    print_token(g, "bos", "tokenizer.ggml.bos_token_id");
    print_token(g, "eos", "tokenizer.ggml.eos_token_id");
    print_token(g, "unk", "tokenizer.ggml.unknown_token_id");
    print_token(g, "pad", "tokenizer.ggml.padding_token_id");
    if (get_str(g, "tokenizer.chat_template", &s))
        printf("  %-14s %llu bytes\n", "chat template", (unsigned long long)s.len);
}

/* "{ne0, ne1, ...}" over the tensor's n_dims; returns its length. */
static int format_shape(const edgellm_gguf_tensor_info *t, char *buf, size_t size)
{
    int o = snprintf(buf, size, "{");
    for (int d = 0; d < t->n_dims; d++)
        o += snprintf(buf + o, size - (size_t)o, "%s%lld", d ? ", " : "", (long long)t->ne[d]);   /* <= 4 x 21 chars */
    o += snprintf(buf + o, size - (size_t)o, "}");
    return o;
}

static void print_tensors(const edgellm_gguf_meta *g)
{
    int64_t nt = edgellm_gguf_meta_n_tensors(g);
    int name_w = 4, shape_w = 2, type_w = 8;            /* type: at least 8; I4_G128_ASYM is 12 */
    for (int64_t i = 0; i < nt; i++) {
        const edgellm_gguf_tensor_info t = tensor_at(g, i);
        char shape[128];
        int l = (int)t.name_len;
        name_w = l > name_w ? l : name_w;
        l = format_shape(&t, shape, sizeof shape);
        shape_w = l > shape_w ? l : shape_w;
        l = (int)strlen(edgellm_type_name(t.type));
        type_w = l > type_w ? l : type_w;
    }
    name_w = name_w > 48 ? 48 : name_w;
    printf("\ntensors: %lld (shape in ggml ne order: ne[0] is the row length)\n", (long long)nt);
    if (nt) printf("  %-*s %-*s %-*s %12s\n", name_w, "name", type_w, "type", shape_w, "ne", "bytes");
    uint64_t params = 0, bytes = 0;
    for (int64_t i = 0; i < nt; i++) {
        const edgellm_gguf_tensor_info t = tensor_at(g, i);
        char nb[256], shape[128];
        format_shape(&t, shape, sizeof shape);
        printf("  %-*s %-*s %-*s %12llu\n", name_w, esc((str){t.name, t.name_len}, nb, sizeof nb), type_w,
               edgellm_type_name(t.type), shape_w, shape, (unsigned long long)t.size_bytes);
        params += t.n_elements;   /* the reader proved each fits; the sum is below the file size * 8 */
        bytes += t.size_bytes;
    }
    char hb[32];
    human_bytes(bytes, hb, sizeof hb);
    printf("\ntotal: %llu parameters, %llu bytes of tensor data (%s)", (unsigned long long)params,
           (unsigned long long)bytes, hb);
    if (params) printf(", %.4f bits per weight", 8.0 * (double)bytes / (double)params);
    printf("\n");
}

int cmd_info(int argc, char **argv)
{
    const char *path = NULL;
    int check = 0;
    const cli_opt file = {CLI_CUSTOM(NULL, NULL, "MODEL.gguf", &path, take_file), .help = "the GGUF file"};
    const cli_opt opts[] = {
        {CLI_CUSTOM("-m", "--model", "FILE", &path, take_file),
         .help = "the file, given as a flag instead (like the other commands)"},
        {CLI_FLAG(NULL, "--check", &check, 1),
         .help = "also dequantize every tensor and stop at the first NaN/inf (exit 1, naming the tensor and element)"},
    };
    const cli_command cmd = {
        .name = "info", .synopsis = "edgellm info [--check] [-m] MODEL.gguf",
        .about = "Show a GGUF file's version, metadata (architecture, hyperparameters, tokenizer),\n"
                 "tensor table (name, type, shape in ggml ne order, bytes), parameter count and\n"
                 "bits per weight. The file is validated completely; nothing is run.",
        .opts = opts, .n_opts = CLI_N_OPTS(opts), .positional = &file,
    };
    const int parsed = cli_args_parse(&cmd, argc, argv);
    if (parsed != CLI_ARGS_GO) return parsed;
    if (!path) return cli_args_missing(&cmd, argc, "MODEL.gguf is required");

    edgellm_gguf_meta *g = NULL;
    edgellm_error err = {0};
    if (edgellm_gguf_meta_open(path, &g, &err) != EDGELLM_OK) { cli_print_error("info", &err); return 1; }

    char hb[32];
    human_bytes(edgellm_gguf_meta_file_size(g), hb, sizeof hb);
    printf("file:         %s\n", path);
    printf("format:       GGUF v%u, alignment %u, %llu bytes (%s), tensor data at byte %llu\n",
           edgellm_gguf_meta_version(g), edgellm_gguf_meta_alignment(g), (unsigned long long)edgellm_gguf_meta_file_size(g),
           hb, (unsigned long long)edgellm_gguf_meta_data_offset(g));

    str arch = {"", 0};
    char ab[64], arch_prefix[80] = "";
    if (get_str(g, "general.architecture", &arch) && arch.len && arch.len < 60) {
        esc(arch, ab, sizeof ab);
        snprintf(arch_prefix, sizeof arch_prefix, "%.*s.", (int)arch.len, arch.ptr);
        printf("architecture: %s\n", ab);
    } else {
        printf("architecture: (none: general.architecture is absent)\n");
    }
    char rope[320];
    edgellm_error rerr = {0};
    if (edgellm_gguf_meta_rope_scaling(g, rope, sizeof rope, &rerr) == EDGELLM_OK)
        printf("rope scaling: %s\n", rope);
    else   /* the file is still shown; edgellm run refuses it with this message */
        printf("rope scaling: not run by edgellm: %s\n", rerr.msg);

    int key_w = 0;
    for (int64_t i = 0; i < edgellm_gguf_meta_n_keys(g); i++) {
        int l = (int)key_at(g, i).len;
        key_w = l > key_w ? l : key_w;
    }
    key_w = key_w > 48 ? 48 : key_w;
    printf("\nmetadata: %lld keys\n", (long long)edgellm_gguf_meta_n_keys(g));
    print_kv_group(g, "general.*:", "general.", NULL, key_w);
    if (arch_prefix[0]) {
        char title[128];
        snprintf(title, sizeof title, "hyperparameters (%s*):", arch_prefix);
        print_kv_group(g, title, arch_prefix, NULL, key_w);
    }
    print_kv_group(g, "tokenizer.*:", "tokenizer.", NULL, key_w);
    print_kv_group(g, "other keys:", NULL, arch_prefix[0] ? arch_prefix : NULL, key_w);

    print_tokenizer(g);
    print_tensors(g);
    edgellm_gguf_meta_close(g);
    if (check) {   /* --check: every value finite? (src/tools/check.c) */
        edgellm_check_report cr;
        fflush(stdout);
        if (edgellm_check_file(path, &cr, &err) != EDGELLM_OK) { cli_print_error("info", &err); return 1; }
        printf("\ncheck: %lld tensors, %llu values scanned, all finite", (long long)cr.n_tensors_checked,
               (unsigned long long)cr.n_values);
        if (cr.n_tensors_skipped) printf(" (%lld tensors skipped: no dequantizer for their type)", (long long)cr.n_tensors_skipped);
        printf("\n");
    }
    return 0;
}
