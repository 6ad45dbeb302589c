/* cmd_convert.c — 'edgellm convert': import a llama2.c checkpoint (legacy or version-1
 * header) and its tokenizer.bin into a GGUF v3 file (F32). The work is
 * edgellm_convert_llama2c in src/tools/llama2c_import.c. */
#include "commands.h"
#include <string.h>

int cmd_convert(int argc, char **argv)
{
    const char *model = NULL, *tok = NULL, *out = NULL;
    const cli_opt opts[] = {
        {CLI_PATH(NULL, "--llama2c", "MODEL.bin", &model), .required = 1,
         .help = "llama2.c checkpoint (legacy run.c header or version-1 \"ak42\")"},
        {CLI_PATH(NULL, "--tokenizer", "TOKENIZER.bin", &tok), .required = 1,
         .help = "llama2.c tokenizer.bin with the model's vocab_size tokens"},
        {CLI_PATH("-o", "--output", "OUT.gguf", &out), .required = 1, .help = "GGUF file to write (replaced atomically)"},
    };
    const cli_command cmd = {
        .name = "convert", .about = "Convert a llama2.c checkpoint and its tokenizer to a GGUF v3 file (F32).",
        .opts = opts, .n_opts = CLI_N_OPTS(opts),
    };
    const int parsed = cli_args_parse(&cmd, argc, argv);
    if (parsed != CLI_ARGS_GO) return parsed;
    edgellm_error err = {0};
    edgellm_status st = edgellm_convert_llama2c(model, tok, out, &err);
    if (st != EDGELLM_OK) {
        cli_print_error("convert", &err);
        /* MISUSE here is the command line itself (-o names an input file): exit 2, as quantize */
        return st == EDGELLM_ERR_MISUSE ? cli_see_help("convert") : 1;
    }
    fprintf(stderr, "edgellm convert: wrote %s\n", out);
    return 0;
}
