/*
 * cmd_tokenize.c — `edgellm tokenize -m MODEL.gguf (-p TEXT | -f FILE) [--no-bos] [--ids]`:
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

static void usage(FILE *f)
{
    fprintf(f,
            "usage: edgellm tokenize -m MODEL.gguf (-p TEXT | -f FILE) [--no-bos] [--ids]\n\n"
            "Turn text into token ids with the model's tokenizer (a vocab-only GGUF works).\n\n"
            "options:\n"
            "  -m, --model FILE   GGUF file with tokenizer.ggml.* metadata\n"
            "  -p, --prompt TEXT  text to tokenize\n"
            "  -f, --file FILE    read the text from FILE, byte for byte\n"
            "  --no-bos           do not add BOS/EOS even if the vocabulary asks for them\n"
            "  --ids              print only the ids, space-separated, on one line\n"
            "  -h, --help         show this help\n");
}

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
    int add_special = 1, ids_only = 0;
    for (int i = 1; i < argc; i++) {
        char name[CLI_NAME_MAX];
        const char *a, *inl = cli_long_value(argv[i], name, &a);
        bool has_val = inl || i + 1 < argc;
#define VAL() (inl ? inl : argv[++i])
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { if (inl) return cli_takes_no_value("tokenize", a); usage(stdout); return 0; }
        else if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && has_val) model = VAL();
        else if ((!strcmp(a, "-p") || !strcmp(a, "--prompt")) && has_val) prompt = VAL();
        else if ((!strcmp(a, "-f") || !strcmp(a, "--file")) && has_val) file = VAL();
#undef VAL
        else if (inl && (!strcmp(a, "--no-bos") || !strcmp(a, "--ids"))) return cli_takes_no_value("tokenize", a);
        else if (!strcmp(a, "--no-bos")) add_special = 0;
        else if (!strcmp(a, "--ids")) ids_only = 1;
        else {
            fprintf(stderr, "edgellm tokenize: unknown or incomplete option '%s'\n", a);
            return cli_see_help("tokenize");
        }
    }
    if (!model || (!prompt) == (!file)) {
        if (argc < 2) { usage(stderr); return 2; }
        fprintf(stderr, "edgellm tokenize: need -m MODEL and exactly one of -p TEXT or -f FILE\n");
        return cli_see_help("tokenize");
    }

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
    int n = 0;
    edgellm_status rc = edgellm_tokenize(tok, src, len, add_special, NULL, 0, &n, &err);
    if (rc == EDGELLM_ERR_MISUSE && n > 0) {            /* first call only measured */
        ids = malloc((size_t)n * sizeof *ids);
        if (!ids) { fprintf(stderr, "edgellm tokenize: out of memory\n"); goto done; }
        rc = edgellm_tokenize(tok, src, len, add_special, ids, n, &n, &err);
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
