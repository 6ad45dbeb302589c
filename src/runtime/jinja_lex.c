/*
 * jinja_lex.c — the Jinja lexer: template text to tokens, with Jinja2 3.1's whitespace
 * rules as Hugging Face configures them (trim_blocks, lstrip_blocks; jinja2/lexer.py,
 * Lexer.tokeniter). Rules, in the order the lexer applies them:
 *
 *  - Line breaks \r\n, \r and \n all become \n, and one trailing \n of the template is
 *    dropped (keep_trailing_newline=False).
 *  - Tags: {{ expr }}, {% stmt %}, {# comment #}, {% raw %}...{% endraw %}. A tag opened
 *    with "-" ({{-, {%-, {#-) removes all whitespace (Python str.isspace) before it; one
 *    closed with "-" (-}}, -%}, -#}) removes all whitespace after it.
 *  - lstrip_blocks: before a {% or {# tag without "+" or "-", the spaces and tabs (any
 *    whitespace but \n) between the start of its line and the tag are removed, when
 *    nothing else is on that line before the tag.
 *  - trim_blocks: a %} or #} closing without "+" or "-" eats one \n right after it.
 *  - Inside tags: whitespace, float, integer, name, string and operator tokens; a tag
 *    ends only where its brackets are balanced.
 *
 * String literals decode like Python's `unicode-escape` codec after `backslashreplace`
 * (what Jinja does): \n \t \\ \' \" \a \b \f \r \v, \ooo, \xhh, \uXXXX, \UXXXXXXXX, a
 * backslash-newline vanishes, any other backslash stays. \N{...} is unsupported.
 */
#include "jinja_int.h"
#include <math.h>
#include <locale.h>
#include <stdlib.h>

typedef struct {
    const char *s;          /* normalized source */
    size_t      len, pos;
    uint32_t    line;
    size_t      line_start; /* offset of the current line */
    jarena     *a;
    jfail      *f;
    jtok       *toks;
    size_t      n, cap;
    size_t      scan;       /* line, line_start and col are those of offset scan */
    uint32_t    col;
} lexer;

static uint32_t col_of(const lexer *L, size_t pos)
{
    size_t ls = pos;
    while (ls > 0 && L->s[ls - 1] != '\n') ls--;
    return (uint32_t)(edgellm_jinja_u8_count(L->s + ls, pos - ls) + 1);
}

_Noreturn static void lfail(lexer *L, edgellm_status code, size_t pos, const char *fmt, const char *arg)
{
    uint32_t line = 1;
    for (size_t i = 0; i < pos && i < L->len; i++) line += L->s[i] == '\n';
    edgellm_jinja_fail(L->f, code, line, col_of(L, pos), fmt, arg);
}

static void *lalloc(lexer *L, size_t n)
{
    void *p = edgellm_jinja_arena_alloc(L->a, n);
    if (!p && L->a->at_limit)
        edgellm_jinja_fail(L->f, EDGELLM_ERR_UNSUPPORTED, 0, 0, "memory limit reached while reading the template (%zu bytes)", L->a->limit);
    if (!p) edgellm_jinja_fail(L->f, EDGELLM_ERR_NOMEM, 0, 0, "out of memory while reading the template");
    return p;
}

static jtok *push(lexer *L, jtok_type type, size_t pos)
{
    if (L->n == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 256;
        jtok *t = lalloc(L, cap * sizeof *t);
        if (L->n) memcpy(t, L->toks, L->n * sizeof *t);
        L->toks = t;
        L->cap = cap;
    }
    jtok *t = &L->toks[L->n++];
    memset(t, 0, sizeof *t);
    t->type = (uint8_t)type;
    for (; L->scan < pos; L->scan++) {   /* tokens come in source order */
        unsigned char b = (unsigned char)L->s[L->scan];
        if (b == '\n') {
            L->line++;
            L->line_start = L->scan + 1;
            L->col = 0;
        } else if ((b & 0xC0) != 0x80) L->col++;
    }
    t->line = L->line;
    t->col = L->col + 1;
    return t;
}

/* Whitespace (str.isspace) at i: its byte length, 0 when none. */
static size_t space_at(const char *s, size_t len, size_t i)
{
    if (i >= len) return 0;
    uint32_t cp;
    size_t j = edgellm_jinja_u8_next(s, len, i, &cp);
    return edgellm_jinja_isspace(cp) ? j - i : 0;
}

static size_t skip_space(const char *s, size_t len, size_t i)
{
    size_t k;
    while ((k = space_at(s, len, i)) != 0) i += k;
    return i;
}

/* Length of text[0..n) without trailing whitespace (Python rstrip). */
static size_t rstrip_len(const char *t, size_t n)
{
    size_t end = n;
    while (end > 0) {
        size_t b = end - 1;
        while (b > 0 && ((unsigned char)t[b] & 0xC0) == 0x80) b--;
        uint32_t cp;
        edgellm_jinja_u8_next(t, n, b, &cp);
        if (!edgellm_jinja_isspace(cp)) break;
        end = b;
    }
    return end;
}

/* Data before a tag with sign `sign`, lstrip applying to block/comment/raw tags. */
static void emit_data(lexer *L, size_t beg, size_t end, char sign, bool lstrip_ok, bool line_starting)
{
    const char *t = L->s + beg;
    size_t n = end - beg;
    if (sign == '-') n = rstrip_len(t, n);
    else if (sign != '+' && lstrip_ok) {
        size_t l_pos = n;
        while (l_pos > 0 && t[l_pos - 1] != '\n') l_pos--;
        if ((l_pos > 0 || line_starting) && l_pos < n && skip_space(t, n, l_pos) == n) n = l_pos;
    }
    if (!n) return;
    jtok *k = push(L, JT_DATA, beg);
    k->s = t;
    k->len = n;
}

static bool starts(const lexer *L, size_t i, const char *lit)
{
    size_t n = strlen(lit);
    return i + n <= L->len && memcmp(L->s + i, lit, n) == 0;
}

static bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }
static bool is_name0(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_'; }
static bool is_name(char ch) { return is_name0(ch) || is_digit(ch); }

/* (\d+_)*\d+ at i: end, or i when there is none. */
static size_t digits_us(const lexer *L, size_t i)
{
    size_t q = i;
    if (q >= L->len || !is_digit(L->s[q])) return i;
    for (;;) {
        while (q < L->len && is_digit(L->s[q])) q++;
        if (q + 1 < L->len && L->s[q] == '_' && is_digit(L->s[q + 1])) { q++; continue; }
        return q;
    }
}

/* jinja2 float_re at i (not after '.'): end, or 0 when none. */
static size_t float_at(const lexer *L, size_t i)
{
    if (i > 0 && L->s[i - 1] == '.') return 0;
    size_t q = digits_us(L, i);
    if (q == i) return 0;
    size_t frac = 0;
    if (q < L->len && L->s[q] == '.') {
        size_t r = digits_us(L, q + 1);
        if (r != q + 1) frac = r;
    }
    size_t e = frac ? frac : q;
    if (e < L->len && (L->s[e] == 'e' || L->s[e] == 'E')) {
        size_t x = e + 1;
        if (x < L->len && (L->s[x] == '+' || L->s[x] == '-')) x++;
        size_t r = digits_us(L, x);
        if (r != x) return r;
    }
    return frac;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* jinja2 integer_re at i: 0b(_?[01])+ | 0o(_?[0-7])+ | 0x(_?[0-9a-f])+ | [1-9](_?\d)* |
 * 0(_?0)*, case-insensitive. Returns the end (0: none) and the value in *v. */
static size_t int_at(lexer *L, size_t i, int64_t *v)
{
    const char *s = L->s;
    int base = 10;
    size_t q, digits;
    if (s[i] == '0' && i + 1 < L->len && strchr("bBoOxX", s[i + 1]) && s[i + 1]) {
        char k = (char)(s[i + 1] | 0x20);
        base = k == 'b' ? 2 : k == 'o' ? 8 : 16;
        digits = q = i + 2;
        for (;;) {
            size_t r = q < L->len && s[q] == '_' ? q + 1 : q;
            int d = r < L->len ? hexval(s[r]) : -1;
            if (d < 0 || d >= base) break;
            q = r + 1;
        }
        if (q == digits) base = 10;   /* "0x" alone: the decimal zero, then a name */
    }
    if (base == 10) {
        if (!is_digit(s[i])) return 0;
        char first = s[i];
        digits = i;
        q = i + 1;
        for (;;) {
            size_t r = q < L->len && s[q] == '_' ? q + 1 : q;
            if (r < L->len && (first == '0' ? s[r] == '0' : is_digit(s[r]))) q = r + 1;
            else break;
        }
    }
    uint64_t acc = 0;
    for (size_t k = digits; k < q; k++) {
        if (s[k] == '_') continue;
        uint64_t d = (uint64_t)hexval(s[k]);
        if (acc > (UINT64_MAX - d) / (uint64_t)base || acc * (uint64_t)base + d > (uint64_t)INT64_MAX)
            lfail(L, EDGELLM_ERR_UNSUPPORTED, i, "%s", "integer literal out of the 64-bit range");
        acc = acc * (uint64_t)base + d;
    }
    *v = (int64_t)acc;
    return q;
}

/* strtod of a C-locale number, whatever LC_NUMERIC the application set. */
static double c_strtod(const char *txt)
{
    const char *dp = localeconv()->decimal_point;
    if (!dp || (dp[0] == '.' && !dp[1])) return strtod(txt, NULL);
    char buf[400];
    size_t o = 0, dl = strlen(dp);
    for (const char *p = txt; *p && o + dl + 1 < sizeof buf; p++) {
        if (*p == '.') { memcpy(buf + o, dp, dl); o += dl; }
        else buf[o++] = *p;
    }
    buf[o] = 0;
    return strtod(buf, NULL);
}

static void put_cp(char *out, size_t *o, uint32_t cp)
{
    *o += edgellm_jinja_u8_put(out + *o, cp);
}

/* Decode the string literal body s[b..e) (Python unicode-escape after backslashreplace). */
static void decode_string(lexer *L, jtok *t, size_t b, size_t e)
{
    const char *s = L->s;
    char *out = lalloc(L, (e - b) * 3 + 1);    /* "\é" grows: 2 bytes -> 4 */
    size_t o = 0;
    for (size_t i = b; i < e;) {
        if (s[i] != '\\') {
            out[o++] = s[i++];
            continue;
        }
        char k = s[i + 1];   /* the regex guarantees an escaped character */
        size_t esc = i;
        i += 2;
        switch (k) {
        case '\n': break;
        case '\\': out[o++] = '\\'; break;
        case '\'': out[o++] = '\''; break;
        case '"': out[o++] = '"'; break;
        case 'a': out[o++] = 7; break;
        case 'b': out[o++] = 8; break;
        case 'f': out[o++] = 12; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'v': out[o++] = 11; break;
        case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
            uint32_t v = (uint32_t)(k - '0');
            for (int n = 1; n < 3 && i < e && s[i] >= '0' && s[i] <= '7'; n++) v = v * 8 + (uint32_t)(s[i++] - '0');
            put_cp(out, &o, v);
            break;
        }
        case 'x': case 'u': case 'U': {
            int n = k == 'x' ? 2 : k == 'u' ? 4 : 8;
            uint32_t v = 0;
            for (int d = 0; d < n; d++) {
                int h = i < e ? hexval(s[i]) : -1;
                if (h < 0) lfail(L, EDGELLM_ERR_FORMAT, esc, "truncated \\%s escape in a string", k == 'x' ? "xXX" : k == 'u' ? "uXXXX" : "UXXXXXXXX");
                v = v * 16 + (uint32_t)h;
                i++;
            }
            if (v > 0x10FFFF) lfail(L, EDGELLM_ERR_FORMAT, esc, "%s", "illegal Unicode character in a string escape");
            if (v >= 0xD800 && v <= 0xDFFF) lfail(L, EDGELLM_ERR_UNSUPPORTED, esc, "%s", "a string escape makes a lone surrogate");
            put_cp(out, &o, v);
            break;
        }
        case 'N': lfail(L, EDGELLM_ERR_UNSUPPORTED, esc, "%s", "\\N{...} escapes (Unicode names) are not supported");
        default:
            if ((unsigned char)k >= 0x80) {
                /* backslashreplace turned the character into \xhh/\uXXXX/\UXXXXXXXX, so the
                 * backslash before it escaped that backslash: a literal "\" then "xhh"... */
                uint32_t cp;
                i = edgellm_jinja_u8_next(s, e, i - 1, &cp);
                o += (size_t)sprintf(out + o, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp);
            } else {
                out[o++] = '\\';
                out[o++] = k;
            }
        }
    }
    out[o] = 0;
    t->s = out;
    t->len = o;
}

static const struct { const char *s; jop op; } OPS[] = {
    {"//", JO_FLOORDIV}, {"**", JO_POW}, {"==", JO_EQ}, {"!=", JO_NE}, {">=", JO_GTEQ}, {"<=", JO_LTEQ},
    {"+", JO_ADD}, {"-", JO_SUB}, {"/", JO_DIV}, {"*", JO_MUL}, {"%", JO_MOD}, {"~", JO_TILDE},
    {"[", JO_LBRACKET}, {"]", JO_RBRACKET}, {"(", JO_LPAREN}, {")", JO_RPAREN}, {"{", JO_LBRACE},
    {"}", JO_RBRACE}, {">", JO_GT}, {"<", JO_LT}, {"=", JO_ASSIGN}, {".", JO_DOT}, {":", JO_COLON},
    {"|", JO_PIPE}, {",", JO_COMMA}, {";", JO_SEMICOLON},
};

/* Tokens inside {{ }} or {% %} from pos; returns the position after the closing tag and
 * sets *nl when the closing match ended with a newline. */
static size_t lex_tag(lexer *L, size_t pos, bool block, size_t tag_pos, bool *nl, int max_nesting)
{
    char stack[256];
    int depth = 0;
    if (max_nesting > (int)sizeof stack) max_nesting = (int)sizeof stack;
    const char *s = L->s;
    for (;;) {
        if (depth == 0) {
            size_t end = 0;
            if (block) {
                if (starts(L, pos, "+%}")) end = pos + 3;
                else if (starts(L, pos, "-%}")) end = skip_space(s, L->len, pos + 3);
                else if (starts(L, pos, "%}")) end = pos + 2 + (pos + 2 < L->len && s[pos + 2] == '\n');
            } else {
                if (starts(L, pos, "-}}")) end = skip_space(s, L->len, pos + 3);
                else if (starts(L, pos, "}}")) end = pos + 2;
            }
            if (end) {
                push(L, block ? JT_BLOCK_END : JT_VAR_END, pos);
                *nl = s[end - 1] == '\n';
                return end;
            }
        }
        if (pos >= L->len)
            lfail(L, EDGELLM_ERR_FORMAT, tag_pos, "%s", block ? "unexpected end of template: this {% tag is never closed"
                                                             : "unexpected end of template: this {{ tag is never closed");
        size_t sp = space_at(s, L->len, pos);
        if (sp) { pos = skip_space(s, L->len, pos); continue; }
        char ch = s[pos];
        size_t end;
        int64_t iv;
        if ((end = float_at(L, pos)) != 0) {
            char num[400];
            size_t o = 0;
            for (size_t k = pos; k < end && o + 1 < sizeof num; k++)
                if (s[k] != '_') num[o++] = s[k];
            num[o] = 0;
            jtok *t = push(L, JT_FLOAT, pos);
            t->f = c_strtod(num);
            pos = end;
        } else if ((end = int_at(L, pos, &iv)) != 0) {
            jtok *t = push(L, JT_INT, pos);
            t->i = iv;
            pos = end;
        } else if (is_name0(ch)) {
            end = pos + 1;
            while (end < L->len && is_name(s[end])) end++;
            jtok *t = push(L, JT_NAME, pos);
            char *nm = lalloc(L, end - pos + 1);
            memcpy(nm, s + pos, end - pos);
            nm[end - pos] = 0;
            t->s = nm;
            t->len = end - pos;
            pos = end;
        } else if (ch == '\'' || ch == '"') {
            size_t q = pos + 1;
            while (q < L->len && s[q] != ch) q += s[q] == '\\' && q + 1 < L->len ? 2 : 1;
            if (q >= L->len) lfail(L, EDGELLM_ERR_FORMAT, pos, "%s", "unterminated string literal");
            jtok *t = push(L, JT_STRING, pos);
            decode_string(L, t, pos + 1, q);
            pos = q + 1;
        } else {
            size_t k = 0;
            for (; k < sizeof OPS / sizeof OPS[0]; k++)
                if (starts(L, pos, OPS[k].s)) break;
            if (k == sizeof OPS / sizeof OPS[0]) {
                char what[8];
                uint32_t cp;
                size_t nx = edgellm_jinja_u8_next(s, L->len, pos, &cp);
                snprintf(what, sizeof what, "%.*s", (int)(nx - pos), s + pos);
                lfail(L, EDGELLM_ERR_FORMAT, pos, "unexpected character '%s'", what);
            }
            jop op = OPS[k].op;
            if (op == JO_LPAREN || op == JO_LBRACKET || op == JO_LBRACE) {
                if (depth >= max_nesting) lfail(L, EDGELLM_ERR_UNSUPPORTED, pos, "%s", "brackets nested too deep (nesting limit)");
                stack[depth++] = op == JO_LPAREN ? ')' : op == JO_LBRACKET ? ']' : '}';
            } else if (op == JO_RPAREN || op == JO_RBRACKET || op == JO_RBRACE) {
                char c1[2] = {OPS[k].s[0], 0};
                if (!depth) lfail(L, EDGELLM_ERR_FORMAT, pos, "unexpected '%s'", c1);
                if (stack[--depth] != c1[0]) {
                    char m[48];
                    snprintf(m, sizeof m, "unexpected '%s', expected '%c'", c1, stack[depth]);
                    lfail(L, EDGELLM_ERR_FORMAT, pos, "%s", m);
                }
            }
            jtok *t = push(L, JT_OP, pos);
            t->op = (uint8_t)op;
            pos += strlen(OPS[k].s);
        }
    }
}

/* {% raw %} at i (sign after "{%" at i+2): the end of the opening tag, or 0. */
static size_t raw_begin(const lexer *L, size_t i)
{
    size_t q = i + 2;
    if (q < L->len && (L->s[q] == '-' || L->s[q] == '+')) q++;
    q = skip_space(L->s, L->len, q);
    if (!starts(L, q, "raw")) return 0;
    q = skip_space(L->s, L->len, q + 3);
    if (starts(L, q, "-%}")) return skip_space(L->s, L->len, q + 3);
    if (starts(L, q, "%}")) return q + 2;
    return 0;
}

void edgellm_jinja_lex(const char *src, size_t len, jarena *a, jfail *f, jtok **toks, size_t *n_toks, int max_nesting)
{
    lexer L = {0};
    L.a = a;
    L.f = f;
    /* newlines: \r\n, \r -> \n; one trailing \n dropped */
    char *s = edgellm_jinja_arena_alloc(a, len + 1);
    if (!s) edgellm_jinja_fail(f, a->at_limit ? EDGELLM_ERR_UNSUPPORTED : EDGELLM_ERR_NOMEM, 0, 0, "%s",
                               a->at_limit ? "memory limit reached while reading the template" : "out of memory while reading the template");
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            s[n++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') i++;
        } else s[n++] = src[i];
    }
    if (n && s[n - 1] == '\n') n--;
    s[n] = 0;
    L.s = s;
    L.len = n;
    L.line = 1;

    size_t pos = 0;
    bool line_starting = true;
    while (pos < n) {
        size_t i = pos;
        int kind = 0;   /* 1 var, 2 block, 3 comment, 4 raw */
        size_t raw_end = 0;
        for (; i + 1 < n; i++) {
            if (s[i] != '{') continue;
            char k = s[i + 1];
            if (k == '%' && (raw_end = raw_begin(&L, i)) != 0) { kind = 4; break; }
            if (k == '{') { kind = 1; break; }
            if (k == '%') { kind = 2; break; }
            if (k == '#') { kind = 3; break; }
        }
        if (!kind) {
            emit_data(&L, pos, n, 0, false, line_starting);
            break;
        }
        char sign = i + 2 < n && (s[i + 2] == '-' || s[i + 2] == '+') ? s[i + 2] : 0;
        emit_data(&L, pos, i, sign, kind != 1, line_starting);
        size_t body = i + 2 + (sign ? 1 : 0);
        if (kind == 1 || kind == 2) {
            push(&L, kind == 1 ? JT_VAR_BEGIN : JT_BLOCK_BEGIN, i);
            pos = lex_tag(&L, body, kind == 2, i, &line_starting, max_nesting);
        } else if (kind == 3) {
            size_t q = body, end = 0;
            for (; q < n; q++) {
                if (starts(&L, q, "+#}")) { end = q + 3; break; }
                if (starts(&L, q, "-#}")) { end = skip_space(s, n, q + 3); break; }
                if (starts(&L, q, "#}")) { end = q + 2 + (q + 2 < n && s[q + 2] == '\n'); break; }
            }
            if (!end) lfail(&L, EDGELLM_ERR_FORMAT, i, "%s", "missing end of comment tag");
            line_starting = s[end - 1] == '\n';
            pos = end;
        } else {
            bool ls = s[raw_end - 1] == '\n';
            size_t q = raw_end, end = 0;
            char esign = 0;
            for (; q + 1 < n; q++) {
                if (s[q] != '{' || s[q + 1] != '%') continue;
                size_t r = q + 2;
                char sg = r < n && (s[r] == '-' || s[r] == '+') ? s[r] : 0;
                if (sg) r++;
                r = skip_space(s, n, r);
                if (!starts(&L, r, "endraw")) continue;
                r = skip_space(s, n, r + 6);
                if (starts(&L, r, "+%}")) end = r + 3;
                else if (starts(&L, r, "-%}")) end = skip_space(s, n, r + 3);
                else if (starts(&L, r, "%}")) end = r + 2 + (r + 2 < n && s[r + 2] == '\n');
                if (end) { esign = sg; break; }
            }
            if (!end) lfail(&L, EDGELLM_ERR_FORMAT, i, "%s", "missing end of raw directive");
            emit_data(&L, raw_end, q, esign, true, ls);
            line_starting = s[end - 1] == '\n';
            pos = end;
        }
    }
    push(&L, JT_EOF, n);
    *toks = L.toks;
    *n_toks = L.n;
}
