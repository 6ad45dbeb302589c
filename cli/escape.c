/*
 * escape.c — text for machine-readable output: JSON string literals (cli_json_str) and CSV
 * fields (cli_csv_str); strings for cJSON go through edgellm_utf8_sanitize (eval_json.c).
 * Contracts in commands.h. File and tensor names are arbitrary bytes; JSON text must be
 * UTF-8 (RFC 8259 §8.1) and a CSV field with a comma, quote or newline must be quoted
 * (RFC 4180 §2).
 */
#include "commands.h"
#include <stdio.h>
#include <string.h>

/* Length of the well-formed UTF-8 sequence at s (1-4), or 0 when s[0] does not start one
 * (edgellm_utf8_char_len: Unicode table 3-7, no overlong forms, no surrogates). */
static int utf8_len(const unsigned char *s)
{
    return edgellm_utf8_char_len((const char *)s, strnlen((const char *)s, 4));
}

void cli_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        const unsigned char c = *p;
        const int n = utf8_len(p);
        if (n == 0) { fputs("\\ufffd", f); p++; continue; }   /* not UTF-8: U+FFFD, as JSON must be */
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fwrite(p, 1, (size_t)n, f);
        p += n;
    }
    fputc('"', f);
}

void cli_csv_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}
