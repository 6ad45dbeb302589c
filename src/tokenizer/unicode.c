/*
 * unicode.c — UTF-8 decoding/encoding and the White_Space class for the tokenizers.
 *
 * UTF-8 (RFC 3629, Unicode §3.9 Table 3-7 "Well-Formed UTF-8 Byte Sequences"):
 *
 *   code points          byte 1   byte 2   byte 3   byte 4
 *   U+0000..U+007F       00..7F
 *   U+0080..U+07FF       C2..DF   80..BF
 *   U+0800..U+0FFF       E0       A0..BF   80..BF
 *   U+1000..U+CFFF       E1..EC   80..BF   80..BF
 *   U+D000..U+D7FF       ED       80..9F   80..BF            (no surrogates)
 *   U+E000..U+FFFF       EE..EF   80..BF   80..BF
 *   U+10000..U+3FFFF     F0       90..BF   80..BF   80..BF
 *   U+40000..U+FFFFF     F1..F3   80..BF   80..BF   80..BF
 *   U+100000..U+10FFFF   F4       80..8F   80..BF   80..BF
 *
 * Anything else is invalid; the decoder then consumes exactly one byte, so callers can
 * keep going and treat the byte on its own (byte tokens, byte-level BPE) — tokenizing never
 * fails on bad input. Example: "a\xE2\x82z" decodes as 'a', INVALID(E2), INVALID(82), 'z'.
 *
 * The General_Category table lives in unicode_tables.c (generated).
 */
#include "unicode.h"
#include "../common/common.h"

uint32_t edgellm_utf8_decode(const char *str, size_t len, size_t *n_bytes)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned char b0 = s[0];
    *n_bytes = 1;
    if (b0 < 0x80) return b0;
    size_t need;
    uint32_t cp;
    unsigned char lo = 0x80, hi = 0xBF;     /* allowed range of the second byte */
    if (b0 >= 0xC2 && b0 <= 0xDF) { need = 1; cp = b0 & 0x1F; }
    else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 2; cp = b0 & 0x0F;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 3; cp = b0 & 0x07;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
    } else return EDGELLM_UNICODE_INVALID;
    if (len < need + 1) return EDGELLM_UNICODE_INVALID;
    if (s[1] < lo || s[1] > hi) return EDGELLM_UNICODE_INVALID;
    for (size_t i = 1; i <= need; i++) {
        if ((s[i] & 0xC0) != 0x80) return EDGELLM_UNICODE_INVALID;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    *n_bytes = need + 1;
    return cp;
}

bool edgellm_utf8_replace_invalid(const char *text, size_t len, char **out, size_t *out_len)
{
    size_t n_bad = 0, clen;
    for (size_t i = 0; i < len; i += clen) n_bad += edgellm_utf8_decode(text + i, len - i, &clen) == EDGELLM_UNICODE_INVALID;
    *out = NULL;
    *out_len = len;
    if (!n_bad) return true;
    char *c = edgellm_malloc(len + 2 * n_bad + 1);
    if (!c) return false;
    size_t o = 0;
    for (size_t i = 0; i < len; i += clen) {
        const bool bad = edgellm_utf8_decode(text + i, len - i, &clen) == EDGELLM_UNICODE_INVALID;
        memcpy(c + o, bad ? "\xef\xbf\xbd" : text + i, bad ? 3 : clen);
        o += bad ? 3 : clen;
    }
    c[o] = 0;
    *out = c;
    *out_len = o;
    return true;
}

int edgellm_utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp < 0x110000) {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        return 4;
    }
    return 0;
}

/* White_Space property, Unicode PropList.txt (stable since Unicode 6.3). */
bool edgellm_unicode_is_space(uint32_t cp)
{
    if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
    if (cp < 0x85) return false;
    switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}
