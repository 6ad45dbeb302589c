/* utf8.c — the UTF-8 helpers of edgellm_tools.h, on the tokenizers' strict decoder
 * (edgellm_utf8_decode, src/tokenizer/unicode.c), so that one definition of well-formed
 * UTF-8 serves the tokenizers, generated text and machine-readable output alike. */
#include "edgellm_tools.h"
#include "../tokenizer/unicode.h"
#include <string.h>

int edgellm_utf8_char_len(const char *s, size_t len)
{
    size_t n;
    if (!s || !len || edgellm_utf8_decode(s, len, &n) == EDGELLM_UNICODE_INVALID) return 0;
    return (int)n;
}

size_t edgellm_utf8_sanitize(const char *text, size_t len, char *out, size_t size)
{
    if (!out) size = 0;
    if (!text) len = 0;
    size_t o = 0, clen;
    bool full = size == 0;   /* a character did not fit: nothing more is written */
    for (size_t i = 0; i < len; i += clen) {
        const bool bad = edgellm_utf8_decode(text + i, len - i, &clen) == EDGELLM_UNICODE_INVALID;
        const size_t n = bad ? 3 : clen;
        if (!full && o + n < size) memcpy(out + o, bad ? "\xef\xbf\xbd" : text + i, n);
        else if (!full) {
            out[o] = 0;
            full = true;
        }
        o += n;
    }
    if (!full) out[o] = 0;
    return o;
}
