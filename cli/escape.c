/*
 * escape.c — text for machine-readable output: JSON string literals (cli_json_str), CSV
 * fields (cli_csv_str) and UTF-8 cleaning for cJSON (cli_utf8_clean). Contracts in
 * commands.h. File and tensor names are arbitrary bytes; JSON text must be UTF-8 (RFC 8259
 * §8.1) and a CSV field with a comma, quote or newline must be quoted (RFC 4180 §2).
 */
#include "commands.h"
#include <stdio.h>
#include <string.h>

/* Length of the well-formed UTF-8 sequence at s (1-4), or 0 when s[0] does not start one
 * (Unicode 15 table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF). */
static int utf8_len(const unsigned char *s)
{
    const unsigned c = s[0];
    if (c < 0x80) return 1;
    int n;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) n = 2;
    else if (c >= 0xe0 && c <= 0xef) n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4) n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (int i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf) return 0;
    return n;
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

const char *cli_utf8_clean(const char *s, char *out, size_t size)
{
    size_t o = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        const int n = utf8_len(p);
        const unsigned char *src = n ? p : (const unsigned char *)"\xef\xbf\xbd";
        const size_t len = n ? (size_t)n : 3;
        if (o + len >= size) break;
        memcpy(out + o, src, len);
        o += len;
        p += n ? (size_t)n : 1;
    }
    if (size) out[o < size ? o : size - 1] = 0;
    return out;
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
