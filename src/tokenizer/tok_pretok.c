/*
 * tok_pretok.c — the pre-tokenizers of byte-level BPE vocabularies: how the text is cut
 * into words before BPE merges run inside each word. Hand-coded matchers, no regex engine.
 *
 * Which splitting a vocabulary uses is named by tokenizer.ggml.pre. Each is a list of
 * stages; a stage is a regular expression applied to every piece left by the previous
 * stage, and both its matches and the text between matches become pieces ("isolated"
 * splitting, as Hugging Face tokenizers' Split pre-tokenizer and llama.cpp's
 * unicode_regex_split do). Lookarounds and anchors see only the current piece. The regex
 * strings (facts taken from llama.cpp src/llama-vocab.cpp, which mirror the vocabularies'
 * tokenizer.json) are:
 *
 *   GPT2  = 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *           (OpenAI GPT-2 encoder.py; llama.cpp omits the final |\s+, which changes
 *            nothing: a lone unmatched blank becomes a piece either way)
 *   default         [\p{P}\$\+<=>\^~\|]+  GPT2  \p{N}+  [0-9][0-9][0-9]
 *   gpt-2, mpt      GPT2
 *   starcoder/refact \p{N}  GPT2
 *   falcon          [\p{P}\$\+<=>\^~\|`]+  GPT2  [0-9][0-9][0-9]
 *   deepseek-llm    [\r\n]  \s?[A-Za-zµÀ-Ö...]+ (cased letters, table below)
 *                   \s?[!-/:-~！-／：-～‘-‟　-。]+  \s+$  [一-龥ࠀ-一가-퟿]+  \p{N}+
 *   deepseek-coder  [\r\n]  \s?\p{L}+  \s?\p{P}+  [一-龥ࠀ-一가-퟿]+  \p{N}
 *   llama3          (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *                   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *   qwen2           as llama3 with \p{N} instead of \p{N}{1,3}
 *
 * Semantics are those of a backtracking engine (Oniguruma, as used by HF tokenizers):
 * alternatives are tried in order at each position, quantifiers are greedy, and the scan
 * takes the leftmost match. \s is White_Space, \p{L}/\p{N}/\p{P} are General_Category
 * L*, N*, P* (unicode.h). A byte that is not valid UTF-8 is a character of its own that
 * belongs to no class, so it lands in [^\s\p{L}\p{N}] and survives byte-level BPE.
 *
 * Example (GPT2): "Hello, y'all!  ok\n" -> "Hello" "," " y" "'" "all" "!" " " " ok" "\n"
 *
 * Every matcher runs in time linear in the piece, so pre-tokenizing is O(n).
 */
#include "tokenizer_internal.h"
#include "unicode.h"

/* The text decoded once: per character its code point, class flags and byte offset. */
enum { F_L = 1, F_N = 2, F_P = 4, F_S = 8 };   /* letter, number, punctuation, space */

typedef struct {
    uint32_t n;              /* characters                                   */
    uint32_t *cp;            /* [n] code points (EDGELLM_UNICODE_INVALID)     */
    uint8_t *fl;             /* [n] F_* flags                                 */
    uint32_t *off;           /* [n+1] byte offset of each character; off[n] = len */
} pt_text;

/* ---- character classes used by the stages ---- */
typedef bool (*pt_class)(uint32_t cp, uint8_t fl);

typedef struct { uint32_t lo, hi; } cp_range;

static bool in_ranges(uint32_t cp, const cp_range *r, size_t n)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < r[mid].lo) hi = mid;
        else if (cp > r[mid].hi) lo = mid + 1;
        else return true;
    }
    return false;
}

/* deepseek-llm's letter class: the cased letters (Lu/Ll/Lt) of the listed scripts, ranges
 * as written in its tokenizer.json regex, merged where adjacent. */
static const cp_range DEEPSEEK_LETTERS[] = {
    {0x0041, 0x005A}, {0x0061, 0x007A}, {0x00B5, 0x00B5}, {0x00C0, 0x00D6}, {0x00D8, 0x00F6},
    {0x00F8, 0x01BA}, {0x01BC, 0x01BF}, {0x01C4, 0x0293}, {0x0295, 0x02AF}, {0x0370, 0x0373},
    {0x0376, 0x0377}, {0x037B, 0x037D}, {0x037F, 0x037F}, {0x0386, 0x0386}, {0x0388, 0x038A},
    {0x038C, 0x038C}, {0x038E, 0x03A1}, {0x03A3, 0x03F5}, {0x03F7, 0x0481}, {0x048A, 0x052F},
    {0x0531, 0x0556}, {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102}, {0x2107, 0x2107},
    {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126},
    {0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F},
    {0x2145, 0x2149}, {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B}, {0xA722, 0xA76F},
    {0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};

/* [!-/:-~！-／：-～‘-‟　-。] (sorted) */
static const cp_range DEEPSEEK_PUNCT[] = {
    {0x0021, 0x002F}, {0x003A, 0x007E}, {0x2018, 0x201F}, {0x3000, 0x3002}, {0xFF01, 0xFF0F},
    {0xFF1A, 0xFF5E},
};

/* [一-龥ࠀ-一가-퟿] = U+4E00..9FA5, U+0800..4E00, U+AC00..D7FF (sorted, merged) */
static const cp_range DEEPSEEK_CJK[] = { {0x0800, 0x9FA5}, {0xAC00, 0xD7FF} };

#define N_RANGES(r) (sizeof(r) / sizeof((r)[0]))

static bool cls_crlf(uint32_t cp, uint8_t fl) { (void)fl; return cp == '\r' || cp == '\n'; }
static bool cls_letter(uint32_t cp, uint8_t fl) { (void)cp; return fl & F_L; }
static bool cls_number(uint32_t cp, uint8_t fl) { (void)cp; return fl & F_N; }
static bool cls_punct(uint32_t cp, uint8_t fl) { (void)cp; return fl & F_P; }
/* [\p{P}\$\+<=>\^~\|] */
static bool cls_punct_default(uint32_t cp, uint8_t fl)
{
    return (fl & F_P) || cp == '$' || cp == '+' || cp == '<' || cp == '=' || cp == '>' || cp == '^' ||
           cp == '~' || cp == '|';
}
/* [\p{P}\$\+<=>\^~\|`] */
static bool cls_punct_falcon(uint32_t cp, uint8_t fl) { return cls_punct_default(cp, fl) || cp == '`'; }
static bool cls_ds_letter(uint32_t cp, uint8_t fl)
{
    (void)fl;
    return in_ranges(cp, DEEPSEEK_LETTERS, N_RANGES(DEEPSEEK_LETTERS));
}
static bool cls_ds_punct(uint32_t cp, uint8_t fl)
{
    (void)fl;
    return in_ranges(cp, DEEPSEEK_PUNCT, N_RANGES(DEEPSEEK_PUNCT));
}
static bool cls_ds_cjk(uint32_t cp, uint8_t fl)
{
    (void)fl;
    return in_ranges(cp, DEEPSEEK_CJK, N_RANGES(DEEPSEEK_CJK));
}

/* ---- stages ---- */
typedef enum {
    ST_GPT2,          /* the GPT-2 expression (matches at every position)           */
    ST_LLAMA3,        /* the llama3 expression, digits in groups of up to 3         */
    ST_QWEN2,         /* the llama3 expression, single digits                       */
    ST_RUN,           /* X+                                                          */
    ST_ONE,           /* X                                                           */
    ST_SPACE_RUN,     /* \s?X+                                                       */
    ST_TRAILING_WS,   /* \s+$                                                        */
    ST_DIGITS3        /* [0-9][0-9][0-9]                                             */
} pt_kind;

typedef struct {
    pt_kind kind;
    pt_class cls;
} pt_stage;

#define MAX_STAGES 6

typedef struct {
    edgellm_pretok id;
    int n;
    pt_stage st[MAX_STAGES];
} pt_recipe;

static const pt_recipe RECIPES[] = {
    { EDGELLM_PRETOK_DEFAULT, 4,
      { { ST_RUN, cls_punct_default }, { ST_GPT2, NULL }, { ST_RUN, cls_number }, { ST_DIGITS3, NULL } } },
    { EDGELLM_PRETOK_GPT2, 1, { { ST_GPT2, NULL } } },
    { EDGELLM_PRETOK_DEEPSEEK_LLM, 6,
      { { ST_ONE, cls_crlf }, { ST_SPACE_RUN, cls_ds_letter }, { ST_SPACE_RUN, cls_ds_punct },
        { ST_TRAILING_WS, NULL }, { ST_RUN, cls_ds_cjk }, { ST_RUN, cls_number } } },
    { EDGELLM_PRETOK_DEEPSEEK_CODER, 5,
      { { ST_ONE, cls_crlf }, { ST_SPACE_RUN, cls_letter }, { ST_SPACE_RUN, cls_punct },
        { ST_RUN, cls_ds_cjk }, { ST_ONE, cls_number } } },
    { EDGELLM_PRETOK_FALCON, 3, { { ST_RUN, cls_punct_falcon }, { ST_GPT2, NULL }, { ST_DIGITS3, NULL } } },
    { EDGELLM_PRETOK_STARCODER, 2, { { ST_ONE, cls_number }, { ST_GPT2, NULL } } },
    { EDGELLM_PRETOK_LLAMA3, 1, { { ST_LLAMA3, NULL } } },
    { EDGELLM_PRETOK_QWEN2, 1, { { ST_QWEN2, NULL } } },
};

bool edgellm_pretok_from_name(const char *name, edgellm_pretok *out)
{
    static const struct { const char *name; edgellm_pretok id; } NAMES[] = {
        { "default", EDGELLM_PRETOK_DEFAULT },
        { "gpt-2", EDGELLM_PRETOK_GPT2 }, { "mpt", EDGELLM_PRETOK_GPT2 }, { "olmo", EDGELLM_PRETOK_GPT2 },
        { "jais", EDGELLM_PRETOK_GPT2 },
        { "deepseek-llm", EDGELLM_PRETOK_DEEPSEEK_LLM },
        { "deepseek-coder", EDGELLM_PRETOK_DEEPSEEK_CODER },
        { "falcon", EDGELLM_PRETOK_FALCON },
        { "starcoder", EDGELLM_PRETOK_STARCODER }, { "refact", EDGELLM_PRETOK_STARCODER },
        { "command-r", EDGELLM_PRETOK_STARCODER }, { "smollm", EDGELLM_PRETOK_STARCODER },
        { "codeshell", EDGELLM_PRETOK_STARCODER }, { "exaone", EDGELLM_PRETOK_STARCODER },
        { "minerva-7b", EDGELLM_PRETOK_STARCODER },
        { "llama3", EDGELLM_PRETOK_LLAMA3 }, { "llama-v3", EDGELLM_PRETOK_LLAMA3 },
        { "llama-bpe", EDGELLM_PRETOK_LLAMA3 }, { "dbrx", EDGELLM_PRETOK_LLAMA3 },
        { "smaug-bpe", EDGELLM_PRETOK_LLAMA3 },
        { "qwen2", EDGELLM_PRETOK_QWEN2 }, { "stablelm2", EDGELLM_PRETOK_QWEN2 },
    };
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (!strcmp(name, NAMES[i].name)) { *out = NAMES[i].id; return true; }
    return false;
}

/* ---- matchers: x is the text, [p, end) the rest of the current piece ---- */

static uint32_t run_end(const pt_text *x, uint32_t p, uint32_t end, uint8_t flag)
{
    while (p < end && (x->fl[p] & flag)) p++;
    return p;
}

static bool is_other(uint8_t fl) { return !(fl & (F_S | F_L | F_N)); }   /* [^\s\p{L}\p{N}] */

static uint32_t other_end(const pt_text *x, uint32_t p, uint32_t end)
{
    while (p < end && is_other(x->fl[p])) p++;
    return p;
}

static uint32_t lower_ascii(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* 's|'t|'re|'ve|'m|'ll|'d at p (case-insensitive when ci): match end, or p. */
static uint32_t match_contraction(const pt_text *x, uint32_t p, uint32_t end, bool ci)
{
    if (x->cp[p] != '\'' || p + 1 >= end) return p;
    uint32_t a = x->cp[p + 1], b = p + 2 < end ? x->cp[p + 2] : 0;
    if (ci) { a = lower_ascii(a); b = lower_ascii(b); }
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return p + 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return p + 3;
    return p;
}

/* \s+(?!\S)|\s+ at p (x->fl[p] has F_S): the run minus its last blank when a non-blank
 * follows and the run is longer than one. */
static uint32_t match_blanks(const pt_text *x, uint32_t p, uint32_t end)
{
    uint32_t r = run_end(x, p, end, F_S);
    if (r == end || r - p == 1) return r;
    return r - 1;
}

/* GPT2 at p; always matches at least one character. */
static uint32_t match_gpt2(const pt_text *x, uint32_t p, uint32_t end)
{
    uint32_t q = match_contraction(x, p, end, false);
    if (q > p) return q;
    bool sp = x->cp[p] == ' ' && p + 1 < end;                 /* the optional leading ' ' */
    static const uint8_t CLASSES[2] = { F_L, F_N };
    for (int c = 0; c < 2; c++) {                               /*  ?\p{L}+ then  ?\p{N}+  */
        if (sp && (x->fl[p + 1] & CLASSES[c])) return run_end(x, p + 1, end, CLASSES[c]);
        if (x->fl[p] & CLASSES[c]) return run_end(x, p, end, CLASSES[c]);
    }
    if (sp && is_other(x->fl[p + 1])) return other_end(x, p + 1, end);   /*  ?[^\s\p{L}\p{N}]+ */
    if (is_other(x->fl[p])) return other_end(x, p, end);
    return match_blanks(x, p, end);                              /* \s+(?!\S)|\s+          */
}

/* llama3 / qwen2 at p (max_digits 3 or 1); always matches at least one character. */
static uint32_t match_llama3(const pt_text *x, uint32_t p, uint32_t end, uint32_t max_digits)
{
    uint32_t q = match_contraction(x, p, end, true);
    if (q > p) return q;
    uint32_t c = x->cp[p];
    uint8_t f = x->fl[p];
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (!(f & (F_L | F_N)) && c != '\r' && c != '\n' && p + 1 < end && (x->fl[p + 1] & F_L))
        return run_end(x, p + 1, end, F_L);
    if (f & F_L) return run_end(x, p, end, F_L);
    /* \p{N}{1,max_digits} */
    if (f & F_N) {
        q = p;
        while (q < end && q - p < max_digits && (x->fl[q] & F_N)) q++;
        return q;
    }
    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    q = p;
    if (c == ' ' && p + 1 < end && is_other(x->fl[p + 1])) q = other_end(x, p + 1, end);
    else if (is_other(f)) q = other_end(x, p, end);
    if (q > p) {
        while (q < end && (x->cp[q] == '\r' || x->cp[q] == '\n')) q++;
        return q;
    }
    /* \s*[\r\n]+ : up to just after the last CR/LF of the blank run */
    uint32_t r = run_end(x, p, end, F_S), last = p;
    for (uint32_t i = p; i < r; i++)
        if (x->cp[i] == '\r' || x->cp[i] == '\n') last = i + 1;
    if (last > p) return last;
    /* \s+(?!\S)|\s+ */
    if (f & F_S) return match_blanks(x, p, end);
    return p + 1;      /* unreachable: every character is L, N, blank or other */
}

/* Leftmost match of stage st in [from, end): true and [*ms, *me), or false. */
static bool stage_find(const pt_text *x, const pt_stage *st, uint32_t from, uint32_t end, uint32_t *ms,
                       uint32_t *me)
{
    switch (st->kind) {
    case ST_GPT2:
        *ms = from;
        *me = match_gpt2(x, from, end);
        return true;
    case ST_LLAMA3:
    case ST_QWEN2:
        *ms = from;
        *me = match_llama3(x, from, end, st->kind == ST_LLAMA3 ? 3 : 1);
        return true;
    case ST_RUN:
    case ST_ONE:
        for (uint32_t p = from; p < end; p++) {
            if (!st->cls(x->cp[p], x->fl[p])) continue;
            uint32_t q = p + 1;
            if (st->kind == ST_RUN)
                while (q < end && st->cls(x->cp[q], x->fl[q])) q++;
            *ms = p;
            *me = q;
            return true;
        }
        return false;
    case ST_SPACE_RUN:
        for (uint32_t p = from; p < end; p++) {
            uint32_t s;
            if ((x->fl[p] & F_S) && p + 1 < end && st->cls(x->cp[p + 1], x->fl[p + 1])) s = p + 1;
            else if (st->cls(x->cp[p], x->fl[p])) s = p;
            else continue;
            uint32_t q = s + 1;
            while (q < end && st->cls(x->cp[q], x->fl[q])) q++;
            *ms = p;
            *me = q;
            return true;
        }
        return false;
    case ST_TRAILING_WS: {
        uint32_t t = end;
        while (t > from && (x->fl[t - 1] & F_S)) t--;
        if (t == end) return false;
        *ms = t;
        *me = end;
        return true;
    }
    case ST_DIGITS3:
        for (uint32_t p = from; p + 3 <= end; p++) {
            if (x->cp[p] >= '0' && x->cp[p] <= '9' && x->cp[p + 1] >= '0' && x->cp[p + 1] <= '9' &&
                x->cp[p + 2] >= '0' && x->cp[p + 2] <= '9') {
                *ms = p;
                *me = p + 3;
                return true;
            }
        }
        return false;
    }
    return false;
}

typedef struct {
    uint32_t *v;
    size_t n, cap;
} cut_list;

static bool cut_push(cut_list *c, uint32_t x)
{
    if (c->n && c->v[c->n - 1] == x) return true;      /* no empty pieces */
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256, bytes;
        if (!edgellm_mul_size(cap, sizeof *c->v, &bytes)) return false;
        uint32_t *v = edgellm_realloc(c->v, bytes);
        if (!v) return false;
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n++] = x;
    return true;
}

/* Apply one stage to every piece of in, writing the refined partition to out. */
static bool apply_stage(const pt_text *x, const pt_stage *st, const cut_list *in, cut_list *out)
{
    out->n = 0;
    if (!cut_push(out, in->v[0])) return false;
    for (size_t i = 0; i + 1 < in->n; i++) {
        uint32_t from = in->v[i], end = in->v[i + 1], ms, me;
        while (from < end && stage_find(x, st, from, end, &ms, &me)) {
            if (!cut_push(out, ms) || !cut_push(out, me)) return false;
            from = me;
        }
        if (!cut_push(out, end)) return false;
    }
    return true;
}

edgellm_status edgellm_pretokenize(edgellm_pretok pre, const char *text, size_t len, size_t **cuts,
                                   size_t *n_cuts)
{
    edgellm_status rc = EDGELLM_OK;
    pt_text x = { 0 };
    cut_list a = { 0 }, b = { 0 };
    *cuts = NULL;
    *n_cuts = 0;

    const pt_recipe *rec = &RECIPES[0];
    for (size_t i = 0; i < sizeof RECIPES / sizeof RECIPES[0]; i++)
        if (RECIPES[i].id == pre) rec = &RECIPES[i];

    /* decode once (the caller keeps len < 2^31, so offsets fit in uint32) */
    x.cp = edgellm_malloc((len + 1) * sizeof *x.cp);
    x.fl = edgellm_malloc(len + 1);
    x.off = edgellm_malloc((len + 1) * sizeof *x.off);
    if (!x.cp || !x.fl || !x.off) goto nomem;
    for (size_t i = 0; i < len;) {
        size_t clen;
        uint32_t cp = edgellm_utf8_decode(text + i, len - i, &clen);
        uint8_t f = 0;
        if (cp != EDGELLM_UNICODE_INVALID) {
            if (edgellm_unicode_is_letter(cp)) f |= F_L;
            else if (edgellm_unicode_is_number(cp)) f |= F_N;
            else if (edgellm_unicode_is_punct(cp)) f |= F_P;
            if (edgellm_unicode_is_space(cp)) f |= F_S;
        }
        x.cp[x.n] = cp;
        x.fl[x.n] = f;
        x.off[x.n] = (uint32_t)i;
        x.n++;
        i += clen;
    }
    x.off[x.n] = (uint32_t)len;

    if (!cut_push(&a, 0) || !cut_push(&a, x.n)) goto nomem;
    for (int s = 0; s < rec->n; s++) {
        if (!apply_stage(&x, &rec->st[s], &a, &b)) goto nomem;
        cut_list t = a; a = b; b = t;
    }

    /* character indices -> byte offsets */
    size_t *out = edgellm_malloc(a.n * sizeof *out);
    if (!out) goto nomem;
    for (size_t i = 0; i < a.n; i++) out[i] = x.off[a.v[i]];
    *cuts = out;
    *n_cuts = a.n;
    goto done;
nomem:
    rc = edgellm_fail_nomem(NULL, "pre-tokenizer");
done:
    edgellm_free(a.v);
    edgellm_free(b.v);
    edgellm_free(x.cp);
    edgellm_free(x.fl);
    edgellm_free(x.off);
    return rc;
}
