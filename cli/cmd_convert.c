/* cmd_convert.c — 'edgellm convert': a Hugging Face checkpoint folder (--hf DIR) or a
 * llama2.c checkpoint with its tokenizer.bin (--llama2c, --tokenizer) into a GGUF v3 file.
 * The work is edgellm_convert_hf (src/tools/hf_convert.c) and edgellm_convert_llama2c
 * (src/tools/llama2c_import.c). */
#include "commands.h"
#include <string.h>
#include <unistd.h>

static const cli_choice group_sizes[] = {{"64", 64}, {"128", 128}, {"256", 256}, {NULL, 0}};

static void print_hf_report(const char *out, const edgellm_hf_convert_report *r, int vocab_only)
{
    fprintf(stderr, "edgellm convert: wrote %s\n", out);
    if (!vocab_only)
        fprintf(stderr, "  model      %s (%s), %d tensors from %d safetensors file%s, %.1f M parameters, %s%s%s\n",
                r->arch, r->hf_arch, r->n_tensors, r->n_files, r->n_files == 1 ? "" : "s", (double)r->n_params / 1e6,
                r->outtype, r->tied ? ", tied embeddings" : "", r->permuted ? ", Q/K rows permuted" : "");
    if (r->rope_scaling[0]) fprintf(stderr, "  rope       %s scaling\n", r->rope_scaling);
    fprintf(stderr, "  tokenizer  %s from %s, %d tokens", r->tokenizer, r->tokenizer_source, r->n_vocab);
    if (r->n_merges) fprintf(stderr, ", %d merges", r->n_merges);
    if (!strcmp(r->tokenizer, "gpt2")) fprintf(stderr, ", pre-tokenizer %s", r->pre);
    if (r->n_padded) fprintf(stderr, ", %d unused ids padded", r->n_padded);
    fprintf(stderr, "%s\n", r->has_chat_template ? ", chat template" : "");
    if (r->n_fallbacks)
        fprintf(stderr, "  %d tensor%s fell back to another type for their row length\n", r->n_fallbacks,
                r->n_fallbacks == 1 ? "" : "s");
    fprintf(stderr, "  %.1f MiB of tensor data in %.1f s\n", (double)r->dst_bytes / (1 << 20), r->elapsed_ms / 1e3);
}

int cmd_convert(int argc, char **argv)
{
    const char *model = NULL, *tok = NULL, *out = NULL, *hf = NULL;
    int vocab_only = 0;
    edgellm_hf_convert_params p = edgellm_hf_convert_default_params();
    const cli_opt opts[] = {
        {CLI_GROUP("Hugging Face checkpoint")},
        {CLI_PATH(NULL, "--hf", "DIR", &hf),
         .help = "folder with config.json, model.safetensors (or shards and model.safetensors.index.json) and "
                 "tokenizer.model or tokenizer.json: LlamaForCausalLM (Llama 2/3.x, TinyLlama, SmolLM, Mistral) or "
                 "Qwen2ForCausalLM"},
        {CLI_STRING(NULL, "--outtype", "TYPE", &p.outtype),
         .help = "f32, f16, bf16, or a quantize type (q8_0, q4_0, q4_k_m, i4, ...: quantized in the same pass); "
                 "auto keeps the checkpoint's float type",
         .def = "auto"},
        {CLI_ENUM(NULL, "--group", "N", &p.group, group_sizes), .help = "i4/i8 group size", .def = "128"},
        {CLI_FLAG(NULL, "--asym", &p.asym, 1), .help = "i4/i8 with a minimum per group"},
        {CLI_FLAG(NULL, "--vocab-only", &vocab_only, 1), .help = "write the tokenizer only (no weights needed)"},
        {CLI_OPT_THREADS(&p.n_threads)},
        {CLI_GROUP("llama2.c checkpoint")},
        {CLI_PATH(NULL, "--llama2c", "MODEL.bin", &model),
         .help = "llama2.c checkpoint (legacy run.c header or version-1 \"ak42\"), written as F32"},
        {CLI_PATH(NULL, "--tokenizer", "TOKENIZER.bin", &tok),
         .help = "llama2.c tokenizer.bin with the model's vocab_size tokens (with --llama2c)"},
        {CLI_GROUP("output")},
        {CLI_PATH("-o", "--output", "OUT.gguf", &out), .required = 1,
         .help = "GGUF file to write (replaced atomically)"},
    };
    const cli_command cmd = {
        .name = "convert",
        .synopsis = "edgellm convert --hf DIR -o OUT.gguf [--outtype f32|f16|bf16|TYPE]\n"
                    "edgellm convert --llama2c MODEL.bin --tokenizer TOKENIZER.bin -o OUT.gguf",
        .about = "Convert a Hugging Face checkpoint folder, or a llama2.c checkpoint and its tokenizer, to a GGUF v3 "
                 "file. The GGUF keys and tensor names are llama.cpp's (docs/import.md).",
        .opts = opts, .n_opts = CLI_N_OPTS(opts),
    };
    const int parsed = cli_args_parse(&cmd, argc, argv);
    if (parsed != CLI_ARGS_GO) return parsed;
    if (!hf == !model) return cli_args_error(&cmd, "give either --hf DIR or --llama2c MODEL.bin (with --tokenizer)");
    edgellm_error err = {0};
    edgellm_status st;
    if (model) {
        if (!tok) return cli_args_error(&cmd, "--llama2c needs --tokenizer TOKENIZER.bin");
        st = edgellm_convert_llama2c(model, tok, out, &err);
        if (st == EDGELLM_OK) fprintf(stderr, "edgellm convert: wrote %s\n", out);
    } else {
        if (tok) return cli_args_error(&cmd, "--tokenizer goes with --llama2c; --hf reads the folder's tokenizer");
        p.vocab_only = vocab_only;
        cli_bar bar = {-1};
        if (isatty(fileno(stderr))) {
            p.progress = cli_draw_bar;
            p.progress_user = &bar;
        }
        edgellm_hf_convert_report r;
        st = edgellm_convert_hf(hf, out, &p, &r, &err);
        if (bar.last_pct >= 0 && st != EDGELLM_OK) fprintf(stderr, "\n");
        if (st == EDGELLM_OK) print_hf_report(out, &r, vocab_only);
    }
    if (st != EDGELLM_OK) {
        cli_print_error("convert", &err);
        /* MISUSE here is the command line itself (-o names an input file, a bad --outtype): exit 2 */
        return st == EDGELLM_ERR_MISUSE ? cli_see_help("convert") : 1;
    }
    return 0;
}
