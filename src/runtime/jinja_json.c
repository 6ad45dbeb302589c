/*
 * jinja_json.c — JSON text (RFC 8259) to template values, for the extra variables a render
 * may carry (edgellm_jinja_vars.extra_json: tools, documents, messages with tool calls,
 * enable_thinking...), read as Python's json.loads reads it: objects become dicts in key
 * order (a repeated key keeps its first place and its last value), integers ints (64-bit
 * here: a larger one is EDGELLM_ERR_UNSUPPORTED), other numbers floats. Every string is
 * marked as message text (spans): it comes from the caller, not from the template.
 */
#include "jinja_int.h"
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>

typedef struct {
    jctx       *c;
    const char *s;
    size_t      len, i;
    int         depth;
} jparser;

_Noreturn static void jerr(jparser *P, const char *what)
{
    edgellm_jinja_fail(&P->c->f, EDGELLM_ERR_MISUSE, 0, 0, "extra variables (JSON): %s at byte %zu", what, P->i);
}

static void ws(jparser *P)
{
    while (P->i < P->len && (P->s[P->i] == ' ' || P->s[P->i] == '\t' || P->s[P->i] == '\n' || P->s[P->i] == '\r')) P->i++;
}

static int hex4(jparser *P)
{
    if (P->len - P->i < 4) jerr(P, "truncated \\u escape");
    int v = 0;
    for (int k = 0; k < 4; k++) {
        char ch = P->s[P->i++];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : (ch | 0x20) >= 'a' && (ch | 0x20) <= 'f' ? (ch | 0x20) - 'a' + 10 : -1;
        if (d < 0) jerr(P, "bad \\u escape");
        v = v * 16 + d;
    }
    return v;
}

static jstr *string(jparser *P)
{
    P->i++;   /* " */
    jbuf b;
    edgellm_jinja_buf_init(&b);
    for (;;) {
        if (P->i >= P->len) jerr(P, "unterminated string");
        unsigned char ch = (unsigned char)P->s[P->i];
        if (ch == '"') { P->i++; break; }
        if (ch < 0x20) jerr(P, "control character in a string");
        if (ch != '\\') {
            size_t j = P->i;
            while (j < P->len && P->s[j] != '"' && P->s[j] != '\\' && (unsigned char)P->s[j] >= 0x20) j++;
            edgellm_jinja_buf_put(P->c, &b, P->s + P->i, j - P->i, true);
            P->i = j;
            continue;
        }
        if (++P->i >= P->len) jerr(P, "unterminated string");
        char e = P->s[P->i++];
        char u[4];
        switch (e) {
        case '"': case '\\': case '/': edgellm_jinja_buf_put(P->c, &b, &e, 1, true); break;
        case 'b': edgellm_jinja_buf_put(P->c, &b, "\b", 1, true); break;
        case 'f': edgellm_jinja_buf_put(P->c, &b, "\f", 1, true); break;
        case 'n': edgellm_jinja_buf_put(P->c, &b, "\n", 1, true); break;
        case 'r': edgellm_jinja_buf_put(P->c, &b, "\r", 1, true); break;
        case 't': edgellm_jinja_buf_put(P->c, &b, "\t", 1, true); break;
        case 'u': {
            uint32_t cp = (uint32_t)hex4(P);
            if (cp >= 0xD800 && cp <= 0xDBFF && P->i + 1 < P->len && P->s[P->i] == '\\' && P->s[P->i + 1] == 'u') {
                size_t save = P->i;
                P->i += 2;
                uint32_t lo = (uint32_t)hex4(P);
                if (lo >= 0xDC00 && lo <= 0xDFFF) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                else P->i = save;
            }
            if (cp >= 0xD800 && cp <= 0xDFFF) jerr(P, "lone surrogate in a \\u escape");
            edgellm_jinja_buf_put(P->c, &b, u, edgellm_jinja_u8_put(u, cp), true);
            break;
        }
        default: jerr(P, "bad escape");
        }
    }
    return edgellm_jinja_buf_finish(P->c, &b);
}

static jv number(jparser *P)
{
    size_t b = P->i;
    bool fl = false;
    if (P->s[P->i] == '-') P->i++;
    if (P->i >= P->len) jerr(P, "bad number");
    if (P->s[P->i] == '0') P->i++;
    else if (P->s[P->i] >= '1' && P->s[P->i] <= '9') while (P->i < P->len && P->s[P->i] >= '0' && P->s[P->i] <= '9') P->i++;
    else jerr(P, "bad number");
    if (P->i < P->len && P->s[P->i] == '.') {
        fl = true;
        P->i++;
        if (P->i >= P->len || P->s[P->i] < '0' || P->s[P->i] > '9') jerr(P, "bad number");
        while (P->i < P->len && P->s[P->i] >= '0' && P->s[P->i] <= '9') P->i++;
    }
    if (P->i < P->len && (P->s[P->i] == 'e' || P->s[P->i] == 'E')) {
        fl = true;
        P->i++;
        if (P->i < P->len && (P->s[P->i] == '+' || P->s[P->i] == '-')) P->i++;
        if (P->i >= P->len || P->s[P->i] < '0' || P->s[P->i] > '9') jerr(P, "bad number");
        while (P->i < P->len && P->s[P->i] >= '0' && P->s[P->i] <= '9') P->i++;
    }
    char buf[400];
    size_t n = P->i - b;
    if (n >= sizeof buf) jerr(P, "number too long");
    memcpy(buf, P->s + b, n);
    buf[n] = 0;
    if (!fl) {
        char *end;
        errno = 0;
        long long v = strtoll(buf, &end, 10);
        if (errno == ERANGE)
            edgellm_jinja_fail(&P->c->f, EDGELLM_ERR_UNSUPPORTED, 0, 0, "extra variables (JSON): integer %s out of the 64-bit range", buf);
        return jv_int(v);
    }
    const char *dp = localeconv()->decimal_point;
    char *dot = strchr(buf, '.');
    if (dot && dp && !(dp[0] == '.' && !dp[1])) {
        char tmp[800];
        snprintf(tmp, sizeof tmp, "%.*s%s%s", (int)(dot - buf), buf, dp, dot + 1);
        return jv_float(strtod(tmp, NULL));
    }
    return jv_float(strtod(buf, NULL));
}

static bool lit(jparser *P, const char *w)
{
    size_t n = strlen(w);
    if (P->len - P->i >= n && !memcmp(P->s + P->i, w, n)) { P->i += n; return true; }
    return false;
}

static jv value(jparser *P)
{
    ws(P);
    if (P->i >= P->len) jerr(P, "unexpected end");
    if (++P->depth > P->c->lim.max_nesting) jerr(P, "nested too deep");
    char ch = P->s[P->i];
    jv v;
    if (ch == '{') {
        P->i++;
        jdict *d = edgellm_jinja_dict_new(P->c, 4);
        ws(P);
        if (P->i < P->len && P->s[P->i] == '}') P->i++;
        else
            for (;;) {
                ws(P);
                if (P->i >= P->len || P->s[P->i] != '"') jerr(P, "expected a key");
                jv k = edgellm_jinja_strv(string(P));
                ws(P);
                if (P->i >= P->len || P->s[P->i] != ':') jerr(P, "expected ':'");
                P->i++;
                edgellm_jinja_dict_set(P->c, d, k, value(P));
                ws(P);
                if (P->i < P->len && P->s[P->i] == ',') { P->i++; continue; }
                if (P->i < P->len && P->s[P->i] == '}') { P->i++; break; }
                jerr(P, "expected ',' or '}'");
            }
        v.t = JV_DICT;
        v.safe = 0;
        v.u.d = d;
    } else if (ch == '[') {
        P->i++;
        size_t n = 0, cap = 8;
        jv *items = edgellm_jinja_alloc(P->c, cap * sizeof(jv));
        ws(P);
        if (P->i < P->len && P->s[P->i] == ']') P->i++;
        else
            for (;;) {
                if (n == cap) {
                    jv *m = edgellm_jinja_alloc(P->c, 2 * cap * sizeof(jv));
                    memcpy(m, items, n * sizeof(jv));
                    items = m;
                    cap *= 2;
                }
                items[n++] = value(P);
                ws(P);
                if (P->i < P->len && P->s[P->i] == ',') { P->i++; continue; }
                if (P->i < P->len && P->s[P->i] == ']') { P->i++; break; }
                jerr(P, "expected ',' or ']'");
            }
        jlist *l = edgellm_jinja_list_new(P->c, 0, JL_LIST);
        l->n = n;
        l->items = items;
        v = edgellm_jinja_listv(l);
    } else if (ch == '"') v = edgellm_jinja_strv(string(P));
    else if (lit(P, "-Infinity")) v = jv_float(-INFINITY);
    else if (ch == '-' || (ch >= '0' && ch <= '9')) v = number(P);
    else if (lit(P, "true")) v = jv_bool(true);
    else if (lit(P, "false")) v = jv_bool(false);
    else if (lit(P, "null")) v = jv_none();
    else if (lit(P, "NaN")) v = jv_float(NAN);
    else if (lit(P, "Infinity")) v = jv_float(INFINITY);
    else jerr(P, "unexpected character");
    P->depth--;
    return v;
}

jv edgellm_jinja_json_parse(jctx *c, const char *s, size_t len)
{
    jparser P = {c, s, len, 0, 0};
    jv v = value(&P);
    ws(&P);
    if (P.i != len) jerr(&P, "extra data after the value");
    return v;
}
