/* cmd_convert.c — 'edgellm convert': import a llama2.c checkpoint (legacy or version-1
 * header) and its tokenizer.bin into a GGUF v3 file (F32). The work is
 * edgellm_convert_llama2c in src/tools/llama2c_import.c. */
#include "commands.h"
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: edgellm convert --llama2c MODEL.bin --tokenizer TOKENIZER.bin -o OUT.gguf\n"
            "\n"
            "  --llama2c MODEL.bin       llama2.c checkpoint (legacy run.c header or version-1 \"ak42\")\n"
            "  --tokenizer TOKENIZER.bin llama2.c tokenizer.bin with the model's vocab_size tokens\n"
            "  -o, --output OUT.gguf     GGUF file to write (replaced atomically)\n");
}

int cmd_convert(int argc, char **argv)
{
    const char *model = NULL, *tok = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        char name[CLI_NAME_MAX];
        const char *a, *inl = cli_long_value(argv[i], name, &a);
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { if (inl) return cli_takes_no_value("convert", a); usage(stdout); return 0; }
        const char **dst = !strcmp(a, "--llama2c") ? &model
                         : !strcmp(a, "--tokenizer") ? &tok
                         : (!strcmp(a, "-o") || !strcmp(a, "--output")) ? &out : NULL;
        if (!dst) {
            fprintf(stderr, "edgellm convert: unknown option '%s'\n", a);
            return cli_see_help("convert");
        }
        if (!inl && i + 1 >= argc) {
            fprintf(stderr, "edgellm convert: %s needs a value\n", a);
            return cli_see_help("convert");
        }
        *dst = inl ? inl : argv[++i];
    }
    if (argc < 2) { usage(stderr); return 2; }
    if (!model || !tok || !out) {
        fprintf(stderr, "edgellm convert: --llama2c, --tokenizer and -o are all required\n");
        return cli_see_help("convert");
    }
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
