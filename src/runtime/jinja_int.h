/*
 * jinja_int.h — shared internals of the Jinja engine. See jinja.h for what the engine is
 * and which Jinja it follows. The files, in the order a template goes through them:
 *
 *   jinja_text.c        arena, errors, UTF-8, strings with spans
 *   jinja_lex.c         text to tokens (whitespace control, trim/lstrip_blocks)
 *   jinja_parse_expr.c  expressions to a tree        jinja_parse.c  statements, entry
 *   jinja_eval.c        statements, expressions, scopes, loops, macros; render entry
 *   jinja_ops.c         attribute/item access (sandboxed), slices, operators
 *   jinja_value.c       truth, ==, <, str(), repr(), json.dumps, containers
 *   jinja_filters.c     filters            jinja_tests.c     tests
 *   jinja_methods.c     dict/list methods, globals, calls, % formatting, strftime_now
 *   jinja_str.c         str methods, case mapping, HTML escape
 *   jinja_json.c        JSON text to values (extra variables)
 *   jinja_unicode.c     case and character tables (generated)
 *
 * Memory: a parse allocates tokens and the tree from one arena owned by the template; a
 * render allocates every value from its own arena, freed at the end. Errors unwind with
 * longjmp to the entry point (edgellm_jinja_parse / edgellm_jinja_render), which frees the
 * arena: nothing else is heap-allocated while parsing or rendering (the few exceptions are
 * owned by the entry point and freed there), so an error cannot leak.
 *
 * Strings are UTF-8 (templates and messages are validated on entry), immutable, and carry
 * "spans": the byte ranges that came from message strings, kept through concatenation,
 * slicing, stripping and case mapping, so that the rendering can tell the tokenizer which
 * bytes must never be read as special tokens.
 */
#ifndef EDGELLM_JINJA_INT_H
#define EDGELLM_JINJA_INT_H

#include "../common/common.h"
#include "jinja.h"
#include <setjmp.h>

/* ------------------------------------------------------------------ arena ---- */
typedef struct jchunk jchunk;
typedef struct {
    jchunk *head;
    size_t  total;    /* bytes obtained from edgellm_malloc */
    size_t  limit;    /* total may not exceed it            */
    bool    at_limit; /* the last failure was the limit's   */
} jarena;

/* ------------------------------------------------------------------ values ---- */
typedef enum {
    JV_UNDEF = 0, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT, JV_NS,
    JV_FUNC, JV_MACRO, JV_LOOP
} jv_type;

typedef struct { size_t b, e; } jspan;

typedef struct {
    size_t len;
    char  *p;              /* len bytes + NUL                                   */
    int    n_spans;
    jspan *spans;          /* message-derived ranges: sorted, disjoint, merged  */
} jstr;

typedef enum {
    JL_LIST = 0, JL_TUPLE, JL_GEN,          /* generator: Jinja's lazy filter results */
    JL_ITEMS, JL_KEYS, JL_VALUES,           /* dict views                              */
    JL_RANGE
} jl_kind;

typedef struct jv jv;
typedef struct jlist jlist;
typedef struct jdict jdict;
typedef struct jundef jundef;
typedef struct jfunc jfunc;
typedef struct jmacro jmacro;
typedef struct jloop jloop;

struct jv {
    uint8_t t;             /* jv_type                                            */
    uint8_t safe;          /* JV_STR: a Markup string (the `safe` filter)         */
    union {
        bool    b;
        int64_t i;
        double  f;
        jstr   *s;
        jlist  *l;
        jdict  *d;         /* JV_DICT and JV_NS                                  */
        jundef *u;         /* NULL: a plain undefined                            */
        jfunc  *fn;
        jmacro *m;
        jloop  *loop;
    } u;
};

typedef struct jlazy jlazy;
struct jlist {
    size_t  n;
    jv     *items;
    uint8_t kind;          /* jl_kind                                            */
    size_t  pos;           /* JL_GEN: items before pos were consumed             */
    jlazy  *lazy;          /* JL_GEN: the filter call that makes the items when the
                              generator is first consumed (NULL: made)          */
    int64_t r_start, r_stop, r_step;   /* JL_RANGE, for printing                */
};

struct jdict {             /* insertion-ordered; keys compared with Python ==    */
    size_t n, cap;
    jv    *keys;
    jv    *vals;
};

typedef enum { JU_VAR = 0, JU_ATTR, JU_ELEMENT, JU_HINT, JU_UNSAFE } ju_kind;
struct jundef {
    uint8_t     kind;      /* ju_kind                                            */
    const char *name;      /* JU_VAR/ATTR: the name; JU_ELEMENT: repr of the key;
                              JU_HINT/UNSAFE: the whole message                   */
    const char *obj;       /* "dict object", "list object"... (ATTR, ELEMENT)    */
};

struct jfunc {
    int id;                /* JF_* (below; jinja_methods.c)                      */
    jv  self;              /* bound object of a method                           */
};

struct jnode;
struct jframe;
struct jmacro {
    const struct jnode *def;
    struct jframe *closure;
};

struct jloop {
    int64_t index0, length;
    const jv *items;       /* the iterated values                                */
    jv      changed_last;  /* loop.changed's memory                              */
    bool    changed_set;
    int     depth;         /* 1 for a loop, (recursive loops are unsupported)    */
};

static inline jv jv_undef(void) { jv v = {.t = JV_UNDEF}; return v; }
static inline jv jv_none(void) { jv v = {.t = JV_NONE}; return v; }
static inline jv jv_bool(bool b) { jv v = {.t = JV_BOOL}; v.u.b = b; return v; }
static inline jv jv_int(int64_t i) { jv v = {.t = JV_INT}; v.u.i = i; return v; }
static inline jv jv_float(double f) { jv v = {.t = JV_FLOAT}; v.u.f = f; return v; }

/* ------------------------------------------------------------------ tokens ---- */
typedef enum {
    JT_DATA = 0, JT_VAR_BEGIN, JT_VAR_END, JT_BLOCK_BEGIN, JT_BLOCK_END,
    JT_NAME, JT_STRING, JT_INT, JT_FLOAT, JT_OP, JT_EOF
} jtok_type;

typedef enum {
    JO_ADD = 1, JO_SUB, JO_DIV, JO_FLOORDIV, JO_MUL, JO_MOD, JO_POW, JO_TILDE,
    JO_LBRACKET, JO_RBRACKET, JO_LPAREN, JO_RPAREN, JO_LBRACE, JO_RBRACE,
    JO_EQ, JO_NE, JO_GT, JO_GTEQ, JO_LT, JO_LTEQ, JO_ASSIGN, JO_DOT, JO_COLON,
    JO_PIPE, JO_COMMA, JO_SEMICOLON,
    JO_IN, JO_NOTIN                      /* comparison operators of the tree only */
} jop;

typedef struct {
    uint8_t  type;         /* jtok_type                                          */
    uint8_t  op;           /* JT_OP: jop                                         */
    uint32_t line, col;
    const char *s;         /* JT_DATA / JT_STRING: decoded text; JT_NAME: name   */
    size_t   len;
    int64_t  i;            /* JT_INT                                             */
    double   f;            /* JT_FLOAT                                           */
} jtok;

/* ------------------------------------------------------------------ tree ---- */
typedef enum {
    /* expressions */
    JN_CONST = 1, JN_NAME, JN_GETATTR, JN_GETITEM, JN_SLICE, JN_CALL, JN_FILTER, JN_TEST,
    JN_NOT, JN_NEG, JN_POS, JN_BINOP, JN_CONCAT, JN_COMPARE, JN_AND, JN_OR, JN_COND,
    JN_LIST, JN_TUPLE, JN_DICT, JN_BLOCKVAL,
    /* statements */
    JN_DATA, JN_OUTPUT, JN_IF, JN_FOR, JN_SET, JN_SET_NS, JN_SET_BLOCK, JN_FILTER_BLOCK,
    JN_MACRO, JN_WITH, JN_BREAK, JN_CONTINUE, JN_SCOPE, JN_CALL_BLOCK
} jnode_kind;

typedef struct jnode jnode;
struct jnode {
    uint8_t  kind;         /* jnode_kind                                          */
    uint8_t  op;           /* JN_BINOP: jop; JN_TEST: negated; JN_FOR: unpack    */
    uint16_t id;           /* JN_FILTER / JN_TEST: builtin id                     */
    uint32_t line, col;
    jnode   *a, *b, *c;    /* children, see below                                  */
    jnode  **list;  int n; /* arguments, items, statement body                     */
    jnode  **list2; int n2;/* keyword values, dict values, else body, defaults     */
    const char **names; int n_names;   /* keyword names, targets, parameters      */
    uint8_t *ops;          /* JN_COMPARE: one jop per operand in list             */
    const char *name;      /* JN_NAME, JN_GETATTR, JN_SET_NS (attribute), macro   */
    jv       val;          /* JN_CONST; JN_DATA: the text                          */
    uint8_t  flags;        /* JN_MACRO: JM_* ; JN_FOR: has a filter               */
};
/*
 * Slots by kind:
 *  CONST val | NAME name | GETATTR a.name | GETITEM a[b] | SLICE a[list[0]:list[1]:list[2]]
 *  CALL a(list, names=list2, *b, **c) | FILTER a|id(list, names=list2, *b, **c)
 *  TEST a is id(list, *b, **c) (op: negated) | NOT/NEG/POS a | BINOP a op b | CONCAT list
 *  (SLICE op: the slice is constant)
 *  COMPARE a (ops[i] list[i])... | AND/OR a b | COND b if a else c (c may be NULL)
 *  LIST/TUPLE list | DICT list: list2 | BLOCKVAL: the body a filter block applies to
 *  DATA val | OUTPUT a (op: a is constant, see jinja_parse.c is_const) | IF a: list else list2 | FOR names in a if b: list else list2
 *  SET names = a (op: unpack) | SET_NS names[0].name = a | SET_BLOCK names = b(body list)
 *  FILTER_BLOCK b(body list) | MACRO name(names = defaults list2 aligned right): list
 *  WITH names = list2: list | SCOPE list (a body run in its own frame; op 1: no frame)
 *  CALL_BLOCK a (a JN_CALL) with caller = macro(names = defaults list2): list
 */
enum { JM_VARARGS = 1, JM_KWARGS = 2, JM_CALLER = 4 };

/* ------------------------------------------------------------- the template ---- */
struct edgellm_jinja {
    jarena  arena;         /* tokens, tree, constants                              */
    char   *name;          /* for messages                                         */
    size_t  src_len;       /* template bytes (sizes the default limits)            */
    jnode **body;
    int     n_body;
};

/* ------------------------------------------------------- errors (longjmp) ---- */
typedef struct {
    jmp_buf       jb;
    edgellm_error *err;
    edgellm_status status;
    const char   *name;    /* the template's name, for messages                    */
} jfail;

/* Fill the error ("NAME:LINE:COL: message"; line 0: no position) and unwind. */
_Noreturn void edgellm_jinja_fail(jfail *f, edgellm_status code, uint32_t line, uint32_t col, const char *fmt, ...)
    EDGELLM_PRINTF(5, 6);

/* ------------------------------------------------------------------ arena ---- */
void  edgellm_jinja_arena_init(jarena *a, size_t limit);
void  edgellm_jinja_arena_free(jarena *a);
/* n bytes aligned for any value, or NULL when out of memory or over the limit. */
void *edgellm_jinja_arena_alloc(jarena *a, size_t n);

/* ------------------------------------------------------------------ lexer ---- */
/* Tokenize src[len] into *toks (n_toks, the last JT_EOF), from arena a; fails through f.
 * Brackets may nest max_nesting deep (at most 256). */
void edgellm_jinja_lex(const char *src, size_t len, jarena *a, jfail *f, jtok **toks, size_t *n_toks,
                       int max_nesting);

/* ------------------------------------------------------------- render state ---- */
typedef struct jframe jframe;
struct jframe {
    jframe      *parent;
    bool         captured;  /* a macro keeps it as its closure: not to be reused    */
    int          n, cap;
    const char **names;
    jv          *vals;
};

/* A growable string with spans (arena memory). */
typedef struct {
    char  *p;
    size_t len, cap;
    jspan *spans;
    int    n_spans, cap_spans;
} jbuf;

typedef struct jctx jctx;
struct jctx {
    jfail   f;
    jarena  arena;
    const edgellm_jinja *tpl;
    const edgellm_jinja_vars *vars;
    edgellm_jinja_limits lim;
    jframe  *frame;        /* the innermost scope                                  */
    jframe  *globals;
    jbuf    *out;          /* where output statements write                         */
    uint64_t steps, iterations;
    int      depth;
    int      loop_ctl;     /* 1: break, 2: continue, pending                         */
    jv       blockval;     /* JN_BLOCKVAL's value while a filter block runs          */
    int      year, mon, mday, hour, min, sec, wday, yday;   /* strftime_now's clock  */
    uint32_t line, col;    /* position of the node being evaluated, for messages    */
    bool     folding;      /* evaluating a constant output as Jinja's compiler does  */
};

/* Fail at the node being evaluated (ctx->line/col). */
_Noreturn void edgellm_jinja_rfail(jctx *c, edgellm_status code, const char *fmt, ...) EDGELLM_PRINTF(3, 4);
void *edgellm_jinja_alloc(jctx *c, size_t n);    /* never NULL: fails through c */

/* ---------------------------------------------------------- strings and text ---- */
jstr *edgellm_jinja_str_new(jctx *c, const char *p, size_t len, bool from_message);
jv    edgellm_jinja_str(jctx *c, const char *p, size_t len);          /* untainted */
jv    edgellm_jinja_cstr(jctx *c, const char *s);
void  edgellm_jinja_buf_init(jbuf *b);
void  edgellm_jinja_buf_put(jctx *c, jbuf *b, const char *p, size_t len, bool tainted);
/* Append bytes [from, to) of s, keeping its spans. */
void  edgellm_jinja_buf_put_str(jctx *c, jbuf *b, const jstr *s, size_t from, size_t to);
void  edgellm_jinja_buf_putc(jctx *c, jbuf *b, char ch);
jstr *edgellm_jinja_buf_finish(jctx *c, jbuf *b);
/* Mark all of s as message text when any byte of it is; returns s or a copy. */
jstr *edgellm_jinja_str_taint_all(jctx *c, jstr *s, bool tainted);
static inline bool edgellm_jinja_str_tainted(const jstr *s) { return s->n_spans > 0; }

/* UTF-8 helpers (valid input). */
size_t   edgellm_jinja_u8_next(const char *p, size_t len, size_t i, uint32_t *cp);  /* index after cp at i */
size_t   edgellm_jinja_u8_count(const char *p, size_t len);
size_t   edgellm_jinja_u8_put(char *dst, uint32_t cp);                               /* 1..4 bytes */
bool     edgellm_jinja_u8_valid(const char *p, size_t len);
bool     edgellm_jinja_isspace(uint32_t cp);          /* Python str.isspace         */
/* Python's full case mappings (Unicode 14, as CPython 3.11): writes up to 3 code points
 * to out, returns how many. */
int      edgellm_jinja_upper(uint32_t cp, uint32_t out[3]);
int      edgellm_jinja_lower(uint32_t cp, uint32_t out[3]);
int      edgellm_jinja_title(uint32_t cp, uint32_t out[3]);
bool     edgellm_jinja_cased(uint32_t cp);
bool     edgellm_jinja_case_ignorable(uint32_t cp);
bool     edgellm_jinja_printable(uint32_t cp);       /* Python str.isprintable      */
/* Character properties as CPython's unicodectype.c has them (a one-character string's
 * islower(), isupper(), Lt, isalpha(), isdecimal(), isdigit(), isnumeric()). */
enum { JP_LOWER = 1, JP_UPPER = 2, JP_TITLE = 4, JP_ALPHA = 8, JP_DECIMAL = 16, JP_DIGIT = 32, JP_NUMERIC = 64 };
unsigned edgellm_jinja_props(uint32_t cp);

/* ------------------------------------------------------------------ values ---- */
const char *edgellm_jinja_type_name(const jv *v);    /* Python's: "str", "dict"...   */
/* Jinja's object_type_repr: "None", "dict object", "str object"... */
const char *edgellm_jinja_obj_desc(jctx *c, const jv *v);
bool  edgellm_jinja_truthy(jctx *c, jv v);
bool  edgellm_jinja_eq(jctx *c, jv a, jv b);
/* <0, 0, >0; fails with Python's TypeError ("'<' not supported between ...") naming op. */
int   edgellm_jinja_cmp(jctx *c, jv a, jv b, const char *op);
/* str(v) as Python prints it; JV_STR is returned as is. */
jstr *edgellm_jinja_to_str(jctx *c, jv v);
/* repr(v) appended to b. */
void  edgellm_jinja_repr(jctx *c, jbuf *b, jv v);
/* Python's float(s) and int(s, base) of a string (the float and int filters); false when
 * Python would raise ValueError. parse_int sets *overflow past 64 bits. */
bool  edgellm_jinja_parse_float(const jstr *s, double *out);
bool  edgellm_jinja_parse_int(const jstr *s, int64_t base, int64_t *out, bool *overflow);
/* Python float repr ("1.0", "1e+16", "inf") into buf[32]. */
void  edgellm_jinja_float_repr(double f, char buf[32]);
/* json.dumps(v, ensure_ascii, indent, separators, sort_keys) appended to b;
 * indent NULL: none. */
void  edgellm_jinja_json(jctx *c, jbuf *b, jv v, bool ensure_ascii, const jstr *indent, const jstr *item_sep,
                         const jstr *key_sep, bool sort_keys, int level);
jlist *edgellm_jinja_list_new(jctx *c, size_t n, jl_kind kind);
jdict *edgellm_jinja_dict_new(jctx *c, size_t cap);
jv   *edgellm_jinja_dict_get(jctx *c, const jdict *d, jv key);      /* NULL: absent   */
jv   *edgellm_jinja_dict_get_cstr(const jdict *d, const char *key);
void  edgellm_jinja_dict_set(jctx *c, jdict *d, jv key, jv val);
/* The values a `for` iterates over (a generator is consumed). */
const jv *edgellm_jinja_iter(jctx *c, jv v, size_t *n);
/* len(v); fails with a TypeError where Python has no len. */
int64_t edgellm_jinja_len(jctx *c, jv v);
/* An undefined value remembering why (its message when it is used). obj: the value whose
 * attribute or element is missing (NULL for a variable); key: the element's key (JU_ELEMENT). */
jv    edgellm_jinja_undef(jctx *c, ju_kind kind, const jv *obj, const char *name, const jv *key);
/* Raise the UndefinedError an undefined value carries. */
_Noreturn void edgellm_jinja_undef_fail(jctx *c, const jv *v);

/* ---------------------------------------------------- operations (jinja_ops.c) ---- */
jv   edgellm_jinja_getattr(jctx *c, jv obj, const char *name);
jv   edgellm_jinja_getitem(jctx *c, jv obj, jv key);
jv   edgellm_jinja_slice(jctx *c, jv obj, jv start, jv stop, jv step);
jv   edgellm_jinja_binop(jctx *c, int op, jv a, jv b);
jv   edgellm_jinja_unary(jctx *c, bool neg, jv v);                  /* -v or +v */
jv   edgellm_jinja_concat(jctx *c, const jv *vals, int n);
bool edgellm_jinja_contains(jctx *c, jv container, jv item);

/* ------------------------------------------------------------ builtins ---- */
/* Filter and test ids by name (-1: unknown). */
int  edgellm_jinja_filter_id(const char *name);
int  edgellm_jinja_test_id(const char *name);
/* Apply a filter / test: args[n] positional, then kw names/values. */
jv   edgellm_jinja_filter(jctx *c, int id, jv val, const jv *args, int n_args, const char *const *kw,
                          const jv *kwv, int n_kw);
bool edgellm_jinja_test(jctx *c, int id, jv val, const jv *args, int n_args);
/* Run a generator's pending filter call (its items exist afterwards); no-op otherwise. */
void edgellm_jinja_gen_force(jctx *c, jlist *l);
/* Ids of builtin functions and methods (jfunc.id). */
enum {
    JF_RANGE = 1, JF_NAMESPACE, JF_DICT, JF_RAISE, JF_STRFTIME, JF_UNSUPPORTED,
    JF_LOOP_CYCLE, JF_LOOP_CHANGED,
    JF_DICT_GET, JF_DICT_ITEMS, JF_DICT_KEYS, JF_DICT_VALUES,
    JF_LIST_COUNT, JF_LIST_INDEX,
    JF_S_STRIP, JF_S_LSTRIP, JF_S_RSTRIP, JF_S_STARTSWITH, JF_S_ENDSWITH, JF_S_SPLIT, JF_S_RSPLIT,
    JF_S_UPPER, JF_S_LOWER, JF_S_TITLE, JF_S_CAPITALIZE, JF_S_REPLACE, JF_S_FIND, JF_S_RFIND, JF_S_INDEX,
    JF_S_RINDEX, JF_S_COUNT, JF_S_JOIN, JF_S_SPLITLINES, JF_S_CENTER, JF_S_LJUST, JF_S_RJUST, JF_S_ZFILL,
    JF_S_ISSPACE, JF_S_ISDIGIT, JF_S_ISALPHA, JF_S_ISALNUM, JF_S_ISLOWER, JF_S_ISUPPER, JF_S_ISASCII,
    JF_S_ISDECIMAL, JF_S_ISNUMERIC, JF_S_ISTITLE,
    JF_S_REMOVEPREFIX, JF_S_REMOVESUFFIX, JF_S_PARTITION, JF_S_RPARTITION
};
/* A method of a str (id JF_S_*), applied to s (jinja_str.c). */
jv   edgellm_jinja_str_method(jctx *c, int id, const jstr *s, const jv *a, int n, const char *const *kw, const jv *kwv,
                              int nkw);
/* Argument count and keyword checks for builtins: "what() takes ..." errors. */
void edgellm_jinja_no_kw(jctx *c, const char *what, int n_kw);
void edgellm_jinja_nargs(jctx *c, const char *what, int n, int lo, int hi);
/* Call a function value (builtin, method, macro). */
jv   edgellm_jinja_call(jctx *c, jv fn, const jv *args, int n_args, const char *const *kw, const jv *kwv, int n_kw);
/* A global function by name (range, namespace, dict, raise_exception, strftime_now...). */
bool edgellm_jinja_global(jctx *c, const char *name, jv *out);
/* A method of a str, dict or list value, or false. */
bool edgellm_jinja_method(jctx *c, jv self, const char *name, jv *out);

/* Python's json.loads of s[len] (jinja_json.c); strings are marked as message text. */
jv    edgellm_jinja_json_parse(jctx *c, const char *s, size_t len);
/* Set the clock strftime_now reads from vars->date or the local time (jinja_methods.c). */
edgellm_status edgellm_jinja_date_init(jctx *c);
/* HTML-escape (& < > " ') as markupsafe.escape; spans follow the characters. */
jstr *edgellm_jinja_escape(jctx *c, const jstr *s);
/* Python's printf-style `fmt % args` (args: a tuple, a dict or one value). */
jv    edgellm_jinja_str_format(jctx *c, jv fmt, jv args);
/* Python str methods used by filters too (jinja_methods.c). */
typedef enum { JCASE_UPPER, JCASE_LOWER, JCASE_TITLE_WORDS, JCASE_CAPITALIZE, JCASE_SWAP } jcase;
jstr *edgellm_jinja_case(jctx *c, const jstr *s, jcase mode);
/* strip: which 1 left, 2 right, 3 both; chars NULL: whitespace. */
jstr *edgellm_jinja_strip(jctx *c, const jstr *s, int which, const jstr *chars);
jstr *edgellm_jinja_replace(jctx *c, const jstr *s, const jstr *old, const jstr *rep, int64_t count);
/* A substring by byte offsets (spans kept). */
jstr *edgellm_jinja_substr(jctx *c, const jstr *s, size_t from, size_t to);
static inline jv edgellm_jinja_strv(jstr *s) { jv v = {.t = JV_STR}; v.u.s = s; return v; }
static inline jv edgellm_jinja_listv(jlist *l) { jv v = {.t = JV_LIST}; v.u.l = l; return v; }

/* Bind call arguments to parameters names[np] (Python rules: positional, then keyword);
 * given[i] says which were passed. Fails with "what() ..." on extra or unknown ones. */
void  edgellm_jinja_bind(jctx *c, const char *what, const char *const *names, int np, const jv *args, int n_args,
                         const char *const *kw, const jv *kwv, int n_kw, jv *out, bool *given);
/* An argument that must be an int (bool counts) or a str; fails naming what. */
int64_t edgellm_jinja_arg_int(jctx *c, const char *what, jv v);
const jstr *edgellm_jinja_arg_str(jctx *c, const char *what, jv v);

/* ------------------------------------------------------------- evaluator ---- */
jv   edgellm_jinja_eval(jctx *c, const jnode *n);
/* Call a macro value: renders its body into a new string. */
jv   edgellm_jinja_call_macro(jctx *c, const jmacro *m, const jv *args, int n_args, const char *const *kw,
                              const jv *kwv, int n_kw);

#endif
