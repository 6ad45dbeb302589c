/* cmd_export.c — 'edgellm export --hf MODEL.gguf -o DIR': a llama or qwen2 GGUF file back
 * into a Hugging Face folder (config.json, safetensors, tokenizer files). The work is
 * edgellm_export_hf (src/tools/hf_export.c). */
#include "commands.h"
#include <unistd.h>

int cmd_export(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    int shard_mib = 0;
    edgellm_hf_export_params p = edgellm_hf_export_default_params();
    const cli_opt opts[] = {
        {CLI_PATH(NULL, "--hf", "MODEL.gguf", &in), .required = 1, .help = "llama or qwen2 GGUF file to export"},
        {CLI_PATH("-o", "--output", "DIR", &out), .required = 1,
         .help = "folder to create (or an empty one): config.json, generation_config.json, model.safetensors, "
                 "tokenizer.model or tokenizer.json, tokenizer_config.json"},
        {CLI_STRING(NULL, "--outtype", "TYPE", &p.outtype),
         .help = "f32, f16 or bf16 for every tensor; auto keeps F32/F16/BF16 tensors and writes quantized ones as F32",
         .def = "auto"},
        {CLI_FLAG(NULL, "--vocab-only", &p.vocab_only, 1),
         .help = "the tokenizer files only (any GGUF with a llama or gpt2 tokenizer, e.g. a vocabulary-only file)"},
        {CLI_INT(NULL, "--max-shard-size", "MIB", &shard_mib, 0, 1 << 20),
         .help = "split the weights into shards of at most MIB MiB with model.safetensors.index.json; 0: one file",
         .def = "0"},
    };
    const cli_command cmd = {
        .name = "export",
        .about = "Write a GGUF model as a Hugging Face checkpoint folder: tensors in Hugging Face names and layout "
                 "(quantized types dequantized), config.json and the tokenizer files, so that 'edgellm convert --hf' "
                 "gives the same tensors and tokenizer back.",
        .opts = opts, .n_opts = CLI_N_OPTS(opts),
    };
    const int parsed = cli_args_parse(&cmd, argc, argv);
    if (parsed != CLI_ARGS_GO) return parsed;
    p.max_shard_bytes = (uint64_t)shard_mib << 20;
    cli_bar bar = {-1};
    if (isatty(fileno(stderr))) {
        p.progress = cli_draw_bar;
        p.progress_user = &bar;
    }
    edgellm_error err = {0};
    edgellm_hf_export_report r;
    const edgellm_status st = edgellm_export_hf(in, out, &p, &r, &err);
    if (bar.last_pct >= 0 && st != EDGELLM_OK) fprintf(stderr, "\n");
    if (st != EDGELLM_OK) {
        cli_print_error("export", &err);
        return st == EDGELLM_ERR_MISUSE ? cli_see_help("export") : 1;
    }
    if (p.vocab_only) {
        fprintf(stderr, "edgellm export: wrote %s: %s and tokenizer_config.json\n", out, r.tokenizer_file);
        return 0;
    }
    fprintf(stderr, "edgellm export: wrote %s: %s, %d tensors in %d safetensors file%s (%.1f MiB%s), %s\n", out, r.arch,
            r.n_tensors, r.n_files, r.n_files == 1 ? "" : "s", (double)r.bytes / (1 << 20),
            r.n_dequantized ? ", quantized tensors dequantized" : "", r.tokenizer_file);
    return 0;
}
