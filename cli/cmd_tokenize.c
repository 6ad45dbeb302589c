/*
 * cmd_tokenize.c — `edgellm tokenize -m MODEL.gguf (-p TEXT | -f FILE) [--no-bos] [--special] [--ids]`:
 * show how a model's tokenizer splits a text.
 *
 * Output: one line per token, "ID<TAB>'PIECE'" (the piece's bytes as decoded; newline, tab,
 * carriage return and backslash appear as \n \t \r \\, other control bytes and bytes that
 * are not valid UTF-8 on their own (a character split across tokens) as \xNN); a control
 * token that decodes to nothing (BOS, EOS) has its vocabulary text after a tab ("1 '' <s>"). Or with
 * --ids only the ids on one line, separated by spaces. BOS (and EOS) are added as
 * the vocabulary asks unless --no-bos. Only the tokenizer metadata is read, so vocab-only
 * GGUF files work. -f takes the file's bytes verbatim (a trailing newline is a token too).
 * Exit: 0 ok, 1 failed (message names the file), 2 bad command line.
 */
#include "commands.h"
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Print a piece on one line: valid UTF-8 as is, the rest escaped (see the top comment). */
static void print_piece(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        bool ok = len > 0 && i + len <= n;
        for (size_t k = 1; ok && k < len; k++) ok = ((unsigned char)s[i + k] & 0xC0) == 0x80;
        if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c == '\r') fputs("\\r", stdout);
        else if (c == '\\') fputs("\\\\", stdout);
        else if (!ok || c < 0x20 || c == 0x7F) printf("\\x%02X", c);
        else { fwrite(s + i, 1, len, stdout); i += len; continue; }
        i++;
    }
}

int cmd_tokenize(int argc, char **argv)
{
    const char *model = NULL, *prompt = NULL, *file = NULL;
    int add_special = 1, ids_only = 0, special = 0;
    const cli_opt opts[] = {
        {CLI_OPT_MODEL(&model), .help = "GGUF file with tokenizer.ggml.* metadata", .required = 1},
        {CLI_STRING("-p", "--prompt", "TEXT", &prompt), .help = "text to tokenize"},
        {CLI_PATH("-f", "--file", "FILE", &file), .help = "read the text from FILE, byte for byte"},
        {CLI_FLAG(NULL, "--no-bos", &add_special, 0), .help = "do not add BOS/EOS even if the vocabulary asks for them"},
        {CLI_FLAG(NULL, "--special", &special, 1),
         .help = "parse control tokens written in the text (\"<|im_end|>\", \"</s>\"); without it they are plain text"},
        {CLI_FLAG(NULL, "--ids", &ids_only, 1), .help = "print only the ids, space-separated, on one line"},
    };
    const cli_command cmd = {
        .name = "tokenize", .synopsis = "edgellm tokenize -m MODEL.gguf (-p TEXT | -f FILE) [--no-bos] [--special] [--ids]",
        .about = "Turn text into token ids with the model's tokenizer (a vocab-only GGUF works).",
        .opts = opts, .n_opts = CLI_N_OPTS(opts),
    };
    const int parsed = cli_args_parse(&cmd, argc, argv);
    if (parsed != CLI_ARGS_GO) return parsed;
    if (!prompt == !file) return cli_args_missing(&cmd, argc, "give exactly one of -p TEXT and -f FILE");

    char *text = NULL;
    size_t len = 0;
    if (file) {
        edgellm_error rerr = {0};
        if (!(text = cli_read_text(file, &len, &rerr))) {
            cli_print_error("tokenize", &rerr);
            return 1;
        }
    } else {
        len = strlen(prompt);
    }

    int ret = 1;
    int32_t *ids = NULL;
    edgellm_tokenizer *tok = NULL;
    edgellm_error err = {0};
    if (edgellm_tokenizer_load(model, &tok, &err) != EDGELLM_OK) { cli_print_error("tokenize", &err); goto done; }
    const char *src = file ? text : prompt;
    const int flags = (add_special ? EDGELLM_TOKENIZE_ADD_BOS : 0) | (special ? EDGELLM_TOKENIZE_SPECIAL : 0);
    int n = 0;
    edgellm_status rc = edgellm_tokenize(tok, src, len, flags, NULL, 0, &n, &err);
    if (rc == EDGELLM_ERR_MISUSE && n > 0) {            /* first call only measured */
        ids = malloc((size_t)n * sizeof *ids);
        if (!ids) { fprintf(stderr, "edgellm tokenize: out of memory\n"); goto done; }
        rc = edgellm_tokenize(tok, src, len, flags, ids, n, &n, &err);
    }
    if (rc != EDGELLM_OK) { cli_print_error("tokenize", &err); goto done; }

    char small[256];
    for (int i = 0; i < n; i++) {
        if (ids_only) { printf(i ? " %d" : "%d", (int)ids[i]); continue; }
        int plen = edgellm_token_to_piece(tok, ids[i], small, (int)sizeof small);
        char *piece = small;
        if (plen > (int)sizeof small) {
            piece = malloc((size_t)plen);
            if (!piece) { fprintf(stderr, "edgellm tokenize: out of memory\n"); goto done; }
            edgellm_token_to_piece(tok, ids[i], piece, plen);
        }
        printf("%d\t'", (int)ids[i]);
        print_piece(piece, plen > 0 ? (size_t)plen : 0);
        const char *text = edgellm_token_text(tok, ids[i]);
        if (plen <= 0 && text && *text) printf("'\t%s\n", text);   /* a control token (BOS/EOS): decodes to nothing */
        else printf("'\n");
        if (piece != small) free(piece);
    }
    if (ids_only) printf("\n");
    ret = fflush(stdout) == 0 ? 0 : 1;
done:
    free(ids);
    free(text);
    edgellm_tokenizer_free(tok);
    return ret;
}
