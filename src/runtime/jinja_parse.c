/*
 * jinja_parse.c — tokens to a tree (jinja_int.h: jnode), following the grammar of
 * Jinja2 3.1's parser (jinja2/parser.py), precedence from loosest to tightest:
 *
 *   expression  := or ("if" or ["else" expression])*          (conditional)
 *   or          := and ("or" and)*
 *   and         := not ("and" not)*
 *   not         := "not" not | compare
 *   compare     := math1 (("=="|"!="|"<"|"<="|">"|">="|"in"|"not in") math1)*
 *   math1       := concat (("+"|"-") concat)*
 *   concat      := math2 ("~" math2)*
 *   math2       := pow (("*"|"/"|"//"|"%") pow)*
 *   pow         := unary ("**" unary)*
 *   unary       := ("-"|"+") unary-without-filters | primary, then postfix (.name [x] (args)),
 *                  then filters (| name(args)), tests (is [not] name args) and calls
 *   primary     := name | true/false/none | string+ | number | (tuple) | [list] | {dict}
 *
 * Statements: if/elif/else, for (targets, else, loop filter), set (name, tuple, namespace
 * attribute, block form with filters), macro, filter blocks, with, print, break and
 * continue (the loopcontrols extension) and transformers' {% generation %} (rendered as its
 * body). Jinja statements with no meaning for a chat template (extends, block, include,
 * import, from, call, autoescape, recursive loops) are refused as unsupported, naming the
 * line. Unknown filters and tests are refused here, as Jinja's compiler does.
 */
#include "jinja_int.h"

typedef struct {
    const jtok *t;
    size_t      n, i;
    jarena     *a;
    jfail      *f;
    int         nesting, max_nesting;
    int         loops;          /* enclosing for loops (break/continue are valid)    */
    jnode      *macro;          /* the macro whose body is being parsed              */
} parser;

typedef struct {               /* a growable array of node pointers (arena)        */
    jnode **v;
    int     n, cap;
} nvec;

static const jtok *cur(parser *P) { return &P->t[P->i]; }
static const jtok *peek(parser *P, int k) { size_t j = P->i + (size_t)k; return &P->t[j < P->n ? j : P->n - 1]; }
static void adv(parser *P) { if (P->i + 1 < P->n) P->i++; }

static const char *describe(const jtok *t, char *buf, size_t size)
{
    static const char *const opnames[] = {
        "", "+", "-", "/", "//", "*", "%", "**", "~", "[", "]", "(", ")", "{", "}", "==", "!=", ">", ">=", "<",
        "<=", "=", ".", ":", "|", ",", ";"};
    switch (t->type) {
    case JT_DATA: return "template data";
    case JT_VAR_BEGIN: return "begin of print statement";
    case JT_VAR_END: return "end of print statement";
    case JT_BLOCK_BEGIN: return "begin of statement block";
    case JT_BLOCK_END: return "end of statement block";
    case JT_NAME: snprintf(buf, size, "%s", t->s); return buf;
    case JT_STRING: return "string";
    case JT_INT: return "integer";
    case JT_FLOAT: return "float";
    case JT_OP: return t->op < sizeof opnames / sizeof opnames[0] ? opnames[t->op] : "operator";
    default: return "end of template";
    }
}

_Noreturn static void pfail_at(parser *P, const jtok *t, edgellm_status code, const char *fmt, const char *arg)
{
    edgellm_jinja_fail(P->f, code, t->line, t->col, fmt, arg);
}

_Noreturn static void unexpected(parser *P)
{
    char buf[64];
    pfail_at(P, cur(P), EDGELLM_ERR_FORMAT, "unexpected '%s'", describe(cur(P), buf, sizeof buf));
}

static void *palloc(parser *P, size_t n)
{
    void *p = edgellm_jinja_arena_alloc(P->a, n);
    if (!p && P->a->at_limit)
        edgellm_jinja_fail(P->f, EDGELLM_ERR_UNSUPPORTED, 0, 0, "memory limit reached while parsing (%zu bytes)", P->a->limit);
    if (!p) edgellm_jinja_fail(P->f, EDGELLM_ERR_NOMEM, 0, 0, "out of memory while parsing the template");
    memset(p, 0, n);
    return p;
}

static jnode *node(parser *P, jnode_kind kind, const jtok *at)
{
    jnode *n = palloc(P, sizeof *n);
    n->kind = (uint8_t)kind;
    n->line = at->line;
    n->col = at->col;
    return n;
}

static void nv_push(parser *P, nvec *v, jnode *n)
{
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 4;
        jnode **p = palloc(P, (size_t)cap * sizeof *p);
        if (v->n) memcpy(p, v->v, (size_t)v->n * sizeof *p);
        v->v = p;
        v->cap = cap;
    }
    v->v[v->n++] = n;
}

static bool is_op(parser *P, jop op) { return cur(P)->type == JT_OP && cur(P)->op == op; }
static bool is_name(parser *P, const char *nm) { return cur(P)->type == JT_NAME && strcmp(cur(P)->s, nm) == 0; }

static bool skip_op(parser *P, jop op)
{
    if (!is_op(P, op)) return false;
    adv(P);
    return true;
}

static bool skip_name(parser *P, const char *nm)
{
    if (!is_name(P, nm)) return false;
    adv(P);
    return true;
}

static void expect_op(parser *P, jop op, const char *what)
{
    if (skip_op(P, op)) return;
    char buf[64], msg[128];
    snprintf(msg, sizeof msg, "expected '%s', got '%s'", what, describe(cur(P), buf, sizeof buf));
    pfail_at(P, cur(P), EDGELLM_ERR_FORMAT, "%s", msg);
}

static const char *expect_name(parser *P)
{
    if (cur(P)->type != JT_NAME) {
        char buf[64];
        pfail_at(P, cur(P), EDGELLM_ERR_FORMAT, "expected a name, got '%s'", describe(cur(P), buf, sizeof buf));
    }
    const char *s = cur(P)->s;
    adv(P);
    return s;
}

static void expect_block_end(parser *P)
{
    if (cur(P)->type == JT_BLOCK_END) { adv(P); return; }
    char buf[64];
    pfail_at(P, cur(P), EDGELLM_ERR_FORMAT, "expected the end of the statement block, got '%s'",
             describe(cur(P), buf, sizeof buf));
}

static void enter(parser *P)
{
    if (++P->nesting > P->max_nesting)
        pfail_at(P, cur(P), EDGELLM_ERR_UNSUPPORTED, "%s", "expressions or blocks nested too deep (nesting limit)");
}

static void leave(parser *P) { P->nesting--; }

/* ------------------------------------------------------------ expressions ---- */
static jnode *parse_expression(parser *P, bool with_condexpr);
static jnode *parse_tuple(parser *P, bool simplified, bool with_condexpr, const char *extra_end, bool explicit_parens);
static jnode *parse_primary(parser *P);
static jnode *parse_postfix(parser *P, jnode *n);

static jnode *parse_or(parser *P);

static jnode *parse_condexpr(parser *P)
{
    jnode *e1 = parse_or(P);
    while (is_name(P, "if")) {
        const jtok *at = cur(P);
        adv(P);
        jnode *cond = node(P, JN_COND, at);
        cond->a = parse_or(P);
        cond->b = e1;
        if (skip_name(P, "else")) {
            enter(P);
            cond->c = parse_condexpr(P);
            leave(P);
        }
        e1 = cond;
    }
    return e1;
}

static jnode *parse_expression(parser *P, bool with_condexpr)
{
    return with_condexpr ? parse_condexpr(P) : parse_or(P);
}

static jnode *parse_not(parser *P);
static jnode *parse_and(parser *P)
{
    jnode *l = parse_not(P);
    while (is_name(P, "and")) {
        jnode *n = node(P, JN_AND, cur(P));
        adv(P);
        n->a = l;
        n->b = parse_not(P);
        l = n;
    }
    return l;
}

static jnode *parse_or(parser *P)
{
    jnode *l = parse_and(P);
    while (is_name(P, "or")) {
        jnode *n = node(P, JN_OR, cur(P));
        adv(P);
        n->a = l;
        n->b = parse_and(P);
        l = n;
    }
    return l;
}

static jnode *parse_compare(parser *P);
static jnode *parse_not(parser *P)
{
    if (is_name(P, "not")) {
        jnode *n = node(P, JN_NOT, cur(P));
        adv(P);
        enter(P);
        n->a = parse_not(P);
        leave(P);
        return n;
    }
    return parse_compare(P);
}

static jnode *parse_math1(parser *P);
static jnode *parse_compare(parser *P)
{
    const jtok *at = cur(P);
    jnode *e = parse_math1(P);
    nvec ops = {0};
    uint8_t opv[64];
    int nops = 0;
    for (;;) {
        jop op = 0;
        const jtok *t = cur(P);
        if (t->type == JT_OP && (t->op == JO_EQ || t->op == JO_NE || t->op == JO_LT || t->op == JO_LTEQ ||
                                 t->op == JO_GT || t->op == JO_GTEQ)) {
            op = (jop)t->op;
            adv(P);
        } else if (is_name(P, "in")) {
            op = JO_IN;
            adv(P);
        } else if (is_name(P, "not") && peek(P, 1)->type == JT_NAME && strcmp(peek(P, 1)->s, "in") == 0) {
            op = JO_NOTIN;
            adv(P);
            adv(P);
        } else break;
        if (nops == (int)sizeof opv) pfail_at(P, t, EDGELLM_ERR_UNSUPPORTED, "%s", "too many chained comparisons");
        opv[nops++] = (uint8_t)op;
        nv_push(P, &ops, parse_math1(P));
    }
    if (!nops) return e;
    jnode *n = node(P, JN_COMPARE, at);
    n->a = e;
    n->list = ops.v;
    n->n = ops.n;
    n->ops = palloc(P, (size_t)nops);
    memcpy(n->ops, opv, (size_t)nops);
    return n;
}

static jnode *binop(parser *P, const jtok *at, jop op, jnode *l, jnode *r)
{
    jnode *n = node(P, JN_BINOP, at);
    n->op = (uint8_t)op;
    n->a = l;
    n->b = r;
    return n;
}

static jnode *parse_concat(parser *P);
static jnode *parse_math1(parser *P)
{
    jnode *l = parse_concat(P);
    while (is_op(P, JO_ADD) || is_op(P, JO_SUB)) {
        const jtok *at = cur(P);
        adv(P);
        l = binop(P, at, (jop)at->op, l, parse_concat(P));
    }
    return l;
}

static jnode *parse_math2(parser *P);
static jnode *parse_concat(parser *P)
{
    const jtok *at = cur(P);
    jnode *first = parse_math2(P);
    if (!is_op(P, JO_TILDE)) return first;
    nvec args = {0};
    nv_push(P, &args, first);
    while (skip_op(P, JO_TILDE)) nv_push(P, &args, parse_math2(P));
    jnode *n = node(P, JN_CONCAT, at);
    n->list = args.v;
    n->n = args.n;
    return n;
}

static jnode *parse_pow(parser *P);
static jnode *parse_math2(parser *P)
{
    jnode *l = parse_pow(P);
    while (is_op(P, JO_MUL) || is_op(P, JO_DIV) || is_op(P, JO_FLOORDIV) || is_op(P, JO_MOD)) {
        const jtok *at = cur(P);
        adv(P);
        l = binop(P, at, (jop)at->op, l, parse_pow(P));
    }
    return l;
}

static jnode *parse_unary(parser *P, bool with_filter);
static jnode *parse_pow(parser *P)
{
    jnode *l = parse_unary(P, true);
    while (is_op(P, JO_POW)) {
        const jtok *at = cur(P);
        adv(P);
        l = binop(P, at, JO_POW, l, parse_unary(P, true));
    }
    return l;
}

/* Arguments of a call, filter or test: positional first, then name=value. */
static void parse_call_args(parser *P, jnode *n)
{
    const jtok *at = cur(P);
    expect_op(P, JO_LPAREN, "(");
    nvec args = {0}, kwv = {0};
    const char *kwn[64];
    int nkw = 0;
    bool need_comma = false;
    while (!is_op(P, JO_RPAREN)) {
        if (need_comma) {
            expect_op(P, JO_COMMA, ",");
            if (is_op(P, JO_RPAREN)) break;
        }
        if (is_op(P, JO_MUL)) {   /* *args: after the positional arguments */
            if (n->b || n->c) pfail_at(P, at, EDGELLM_ERR_FORMAT, "%s", "invalid syntax for function call expression");
            adv(P);
            n->b = parse_expression(P, true);
        } else if (is_op(P, JO_POW)) {   /* **kwargs: last */
            if (n->c) pfail_at(P, at, EDGELLM_ERR_FORMAT, "%s", "invalid syntax for function call expression");
            adv(P);
            n->c = parse_expression(P, true);
        } else if (cur(P)->type == JT_NAME && peek(P, 1)->type == JT_OP && peek(P, 1)->op == JO_ASSIGN) {
            if (n->c) pfail_at(P, at, EDGELLM_ERR_FORMAT, "%s", "invalid syntax for function call expression");
            if (nkw == 64) pfail_at(P, cur(P), EDGELLM_ERR_UNSUPPORTED, "%s", "too many keyword arguments");
            kwn[nkw++] = cur(P)->s;
            adv(P);
            adv(P);
            nv_push(P, &kwv, parse_expression(P, true));
        } else {
            if (nkw || n->b || n->c) pfail_at(P, at, EDGELLM_ERR_FORMAT, "%s", "invalid syntax for function call expression");
            nv_push(P, &args, parse_expression(P, true));
        }
        need_comma = true;
    }
    expect_op(P, JO_RPAREN, ")");
    n->list = args.v;
    n->n = args.n;
    n->list2 = kwv.v;
    n->n2 = kwv.n;
    if (nkw) {
        n->names = palloc(P, (size_t)nkw * sizeof *n->names);
        memcpy(n->names, kwn, (size_t)nkw * sizeof *kwn);
    }
    n->n_names = nkw;
}

static jnode *parse_filter(parser *P, jnode *operand, bool start_inline)
{
    while (is_op(P, JO_PIPE) || start_inline) {
        if (!start_inline) adv(P);
        start_inline = false;
        const jtok *at = cur(P);
        const char *name = expect_name(P);
        if (is_op(P, JO_DOT))
            pfail_at(P, at, EDGELLM_ERR_UNSUPPORTED, "no filter named '%s.…' (dotted filter names are not supported)", name);
        int id = edgellm_jinja_filter_id(name);
        if (id < 0) pfail_at(P, at, EDGELLM_ERR_UNSUPPORTED, "no filter named '%s'", name);
        jnode *n = node(P, JN_FILTER, at);
        n->id = (uint16_t)id;
        n->name = name;
        n->a = operand;
        if (is_op(P, JO_LPAREN)) parse_call_args(P, n);
        operand = n;
    }
    return operand;
}

static jnode *parse_test(parser *P, jnode *operand)
{
    const jtok *at = cur(P);
    adv(P);   /* is */
    bool negated = skip_name(P, "not");
    const jtok *nt = cur(P);
    const char *name = expect_name(P);
    if (is_op(P, JO_DOT)) pfail_at(P, nt, EDGELLM_ERR_UNSUPPORTED, "no test named '%s.…'", name);
    int id = edgellm_jinja_test_id(name);
    if (id < 0) pfail_at(P, nt, EDGELLM_ERR_UNSUPPORTED, "no test named '%s'", name);
    jnode *n = node(P, JN_TEST, at);
    n->id = (uint16_t)id;
    n->name = name;
    n->a = operand;
    n->op = negated;
    const jtok *t = cur(P);
    if (is_op(P, JO_LPAREN)) parse_call_args(P, n);
    else if ((t->type == JT_NAME || t->type == JT_STRING || t->type == JT_INT || t->type == JT_FLOAT ||
              (t->type == JT_OP && (t->op == JO_LBRACKET || t->op == JO_LBRACE))) &&
             !is_name(P, "else") && !is_name(P, "or") && !is_name(P, "and")) {
        if (is_name(P, "is")) pfail_at(P, t, EDGELLM_ERR_FORMAT, "%s", "you cannot chain multiple tests with is");
        jnode *arg = parse_postfix(P, parse_primary(P));
        n->list = palloc(P, sizeof *n->list);
        n->list[0] = arg;
        n->n = 1;
    }
    return n;
}

static jnode *parse_call(parser *P, jnode *callee)
{
    jnode *n = node(P, JN_CALL, cur(P));
    n->a = callee;
    parse_call_args(P, n);
    return n;
}

/* Whether Jinja's optimizer folds this expression at compile time (jinja2/nodes.py
 * as_const): literals and containers, operators and attribute/item lookups of them. A
 * folded slice goes through the sandbox's getitem (errors become undefined) where a
 * runtime slice is Python's own. */
static bool is_const_d(const jnode *n, int depth);
static bool is_const(const jnode *n) { return is_const_d(n, 0); }

static bool is_const_d(const jnode *n, int depth)
{
    if (depth > 64) return false;   /* long operator chains: not worth folding */
#define is_const(x) is_const_d((x), depth + 1)
    switch (n->kind) {
    case JN_CONST: return true;
    case JN_LIST: case JN_TUPLE:
        for (int i = 0; i < n->n; i++)
            if (!is_const(n->list[i])) return false;
        return true;
    case JN_DICT:
        for (int i = 0; i < n->n; i++)
            if (!is_const(n->list[i]) || !is_const(n->list2[i])) return false;
        return true;
    case JN_NOT: case JN_NEG: case JN_POS: return is_const(n->a);
    case JN_BINOP: case JN_AND: case JN_OR: return is_const(n->a) && is_const(n->b);
    case JN_CONCAT:
        for (int i = 0; i < n->n; i++)
            if (!is_const(n->list[i])) return false;
        return true;
    case JN_GETITEM: return is_const(n->a) && is_const(n->b);
    case JN_SLICE: return n->op;
    case JN_COMPARE:
        for (int i = 0; i < n->n; i++)
            if (!is_const(n->list[i])) return false;
        return is_const(n->a);
    case JN_COND: return is_const(n->a) && is_const(n->b) && (!n->c || is_const(n->c));
    case JN_FILTER: case JN_TEST: {
        if (!n->a || n->b || n->c || !is_const(n->a)) return false;
        if (n->kind == JN_FILTER && (!strcmp(n->name, "map") || !strcmp(n->name, "select") ||
                                     !strcmp(n->name, "reject") || !strcmp(n->name, "selectattr") ||
                                     !strcmp(n->name, "rejectattr")))
            return false;   /* context filters are never folded */
        for (int i = 0; i < n->n; i++)
            if (!is_const(n->list[i])) return false;
        for (int i = 0; i < n->n2; i++)
            if (!is_const(n->list2[i])) return false;
        return true;
    }
    default: return false;
    }
#undef is_const
}

static jnode *parse_subscript(parser *P, jnode *obj)
{
    const jtok *at = cur(P);
    if (skip_op(P, JO_DOT)) {
        const jtok *t = cur(P);
        if (t->type == JT_NAME) {
            adv(P);
            jnode *n = node(P, JN_GETATTR, at);
            n->a = obj;
            n->name = t->s;
            return n;
        }
        if (t->type != JT_INT) pfail_at(P, t, EDGELLM_ERR_FORMAT, "%s", "expected name or number");
        adv(P);
        jnode *n = node(P, JN_GETITEM, at);
        n->a = obj;
        n->b = node(P, JN_CONST, t);
        n->b->val = jv_int(t->i);
        return n;
    }
    adv(P);   /* [ */
    jnode *parts[3] = {NULL, NULL, NULL};
    bool slice = false;
    int k = 0;
    if (is_op(P, JO_RBRACKET)) unexpected(P);
    for (;;) {
        if (is_op(P, JO_COLON)) {
            slice = true;
            if (++k > 2) unexpected(P);
            adv(P);
            continue;
        }
        if (is_op(P, JO_RBRACKET)) break;
        if (is_op(P, JO_COMMA) && !slice && parts[0]) {   /* x[a, b]: a tuple key */
            jnode *t = node(P, JN_TUPLE, cur(P));
            nvec items = {0};
            nv_push(P, &items, parts[0]);
            while (skip_op(P, JO_COMMA)) {
                if (is_op(P, JO_RBRACKET)) break;
                if (is_op(P, JO_COLON))
                    pfail_at(P, cur(P), EDGELLM_ERR_UNSUPPORTED, "%s", "slices inside tuple subscripts are not supported");
                nv_push(P, &items, parse_expression(P, true));
                if (is_op(P, JO_COLON))
                    pfail_at(P, cur(P), EDGELLM_ERR_UNSUPPORTED, "%s", "slices inside tuple subscripts are not supported");
            }
            if (!is_op(P, JO_RBRACKET)) unexpected(P);
            t->list = items.v;
            t->n = items.n;
            parts[0] = t;
            break;
        }
        if (parts[k]) unexpected(P);
        parts[k] = parse_expression(P, true);
    }
    adv(P);   /* ] */
    if (!slice) {
        jnode *n = node(P, JN_GETITEM, at);
        n->a = obj;
        n->b = parts[0];
        return n;
    }
    jnode *n = node(P, JN_SLICE, at);
    n->a = obj;
    n->list = palloc(P, 3 * sizeof *n->list);
    bool konst = is_const(obj);
    for (int i = 0; i < 3; i++) {
        n->list[i] = parts[i];
        konst &= !parts[i] || is_const(parts[i]);
    }
    n->n = 3;
    n->op = konst;
    return n;
}

static jnode *parse_postfix(parser *P, jnode *n)
{
    for (;;) {
        if (is_op(P, JO_DOT) || is_op(P, JO_LBRACKET)) n = parse_subscript(P, n);
        else if (is_op(P, JO_LPAREN)) n = parse_call(P, n);
        else return n;
    }
}

static jnode *parse_filter_expr(parser *P, jnode *n)
{
    for (;;) {
        if (is_op(P, JO_PIPE)) n = parse_filter(P, n, false);
        else if (is_name(P, "is")) n = parse_test(P, n);
        else if (is_op(P, JO_LPAREN)) n = parse_call(P, n);
        else return n;
    }
}

static jnode *parse_unary(parser *P, bool with_filter)
{
    jnode *n;
    if (is_op(P, JO_SUB) || is_op(P, JO_ADD)) {
        n = node(P, is_op(P, JO_SUB) ? JN_NEG : JN_POS, cur(P));
        adv(P);
        enter(P);
        n->a = parse_unary(P, false);
        leave(P);
    } else n = parse_primary(P);
    n = parse_postfix(P, n);
    if (with_filter) n = parse_filter_expr(P, n);
    return n;
}

static jnode *parse_list(parser *P, jnode_kind kind)
{
    jnode *n = node(P, kind, cur(P));
    adv(P);
    nvec items = {0}, vals = {0};
    jop close = kind == JN_LIST ? JO_RBRACKET : JO_RBRACE;
    while (!is_op(P, close)) {
        if (items.n) expect_op(P, JO_COMMA, ",");
        if (is_op(P, close)) break;
        nv_push(P, &items, parse_expression(P, true));
        if (kind == JN_DICT) {
            expect_op(P, JO_COLON, ":");
            nv_push(P, &vals, parse_expression(P, true));
        }
    }
    adv(P);
    n->list = items.v;
    n->n = items.n;
    n->list2 = vals.v;
    n->n2 = vals.n;
    return n;
}

static jnode *parse_primary(parser *P)
{
    const jtok *t = cur(P);
    jnode *n;
    enter(P);
    if (t->type == JT_NAME) {
        n = node(P, JN_CONST, t);
        if (!strcmp(t->s, "true") || !strcmp(t->s, "True")) n->val = jv_bool(true);
        else if (!strcmp(t->s, "false") || !strcmp(t->s, "False")) n->val = jv_bool(false);
        else if (!strcmp(t->s, "none") || !strcmp(t->s, "None")) n->val = jv_none();
        else {
            n->kind = JN_NAME;
            n->name = t->s;
            if (P->macro && !strcmp(t->s, "varargs")) P->macro->flags |= JM_VARARGS;
            if (P->macro && !strcmp(t->s, "kwargs")) P->macro->flags |= JM_KWARGS;
            if (P->macro && !strcmp(t->s, "caller")) P->macro->flags |= JM_CALLER;
        }
        adv(P);
    } else if (t->type == JT_STRING) {
        /* adjacent literals concatenate: 'a' 'b' */
        size_t total = 0;
        size_t j = P->i;
        while (P->t[j].type == JT_STRING) total += P->t[j++].len;
        jstr *s = palloc(P, sizeof *s + total + 1);
        s->p = (char *)(s + 1);
        size_t o = 0;
        while (cur(P)->type == JT_STRING) {
            memcpy(s->p + o, cur(P)->s, cur(P)->len);
            o += cur(P)->len;
            adv(P);
        }
        s->p[o] = 0;
        s->len = o;
        n = node(P, JN_CONST, t);
        n->val.t = JV_STR;
        n->val.u.s = s;
    } else if (t->type == JT_INT || t->type == JT_FLOAT) {
        n = node(P, JN_CONST, t);
        n->val = t->type == JT_INT ? jv_int(t->i) : jv_float(t->f);
        adv(P);
    } else if (is_op(P, JO_LPAREN)) {
        adv(P);
        n = parse_tuple(P, false, true, NULL, true);
        expect_op(P, JO_RPAREN, ")");
    } else if (is_op(P, JO_LBRACKET)) {
        n = parse_list(P, JN_LIST);
    } else if (is_op(P, JO_LBRACE)) {
        n = parse_list(P, JN_DICT);
    } else unexpected(P);
    leave(P);
    return n;
}

static bool tuple_end(parser *P, const char *extra_end)
{
    const jtok *t = cur(P);
    if (t->type == JT_VAR_END || t->type == JT_BLOCK_END || (t->type == JT_OP && t->op == JO_RPAREN)) return true;
    return extra_end && is_name(P, extra_end);
}

static jnode *parse_tuple(parser *P, bool simplified, bool with_condexpr, const char *extra_end, bool explicit_parens)
{
    const jtok *at = cur(P);
    nvec items = {0};
    bool is_tuple = false;
    for (;;) {
        if (items.n) expect_op(P, JO_COMMA, ",");
        if (tuple_end(P, extra_end)) break;
        nv_push(P, &items, simplified ? parse_primary(P) : parse_expression(P, with_condexpr));
        if (is_op(P, JO_COMMA)) is_tuple = true;
        else break;
    }
    if (!is_tuple) {
        if (items.n) return items.v[0];
        if (!explicit_parens) {
            char buf[64];
            pfail_at(P, cur(P), EDGELLM_ERR_FORMAT, "expected an expression, got '%s'", describe(cur(P), buf, sizeof buf));
        }
    }
    jnode *n = node(P, JN_TUPLE, at);
    n->list = items.v;
    n->n = items.n;
    return n;
}

/* ------------------------------------------------------------- statements ---- */
static void subparse(parser *P, const char *const *end_names, nvec *body);

/* Body up to one of end_names; returns the end name found (the tag's name token is
 * consumed, the rest of that tag is not). */
static const char *parse_body(parser *P, const char *const *end_names, nvec *body, const jtok *opener)
{
    skip_op(P, JO_COLON);
    expect_block_end(P);
    enter(P);
    subparse(P, end_names, body);
    leave(P);
    if (cur(P)->type == JT_EOF) {
        char msg[160];
        size_t o = (size_t)snprintf(msg, sizeof msg, "unexpected end of template: the '%s' tag needs ", opener->s);
        for (int i = 0; end_names[i] && o < sizeof msg; i++)
            o += (size_t)snprintf(msg + o, sizeof msg - o, "%s'%s'", i ? " or " : "", end_names[i]);
        pfail_at(P, opener, EDGELLM_ERR_FORMAT, "%s", msg);
    }
    const char *nm = cur(P)->s;
    adv(P);
    return nm;
}

/* Assignment targets: a name, or names separated by commas (optionally in parentheses). */
static void parse_targets(parser *P, jnode *n, const char *extra_end)
{
    const char *names[32];
    int k = 0;
    bool paren = skip_op(P, JO_LPAREN);
    bool tuple = paren;
    for (;;) {
        if (k && !skip_op(P, JO_COMMA)) break;
        if (k && (tuple_end(P, extra_end) || is_op(P, JO_ASSIGN) || (paren && is_op(P, JO_RPAREN)))) break;
        const jtok *t = cur(P);
        if (t->type != JT_NAME) {
            if (t->type == JT_OP && t->op == JO_LPAREN)
                pfail_at(P, t, EDGELLM_ERR_UNSUPPORTED, "%s", "nested tuple targets are not supported");
            char buf[64];
            pfail_at(P, t, EDGELLM_ERR_FORMAT, "can't assign to '%s'", describe(t, buf, sizeof buf));
        }
        if (!strcmp(t->s, "true") || !strcmp(t->s, "false") || !strcmp(t->s, "none") || !strcmp(t->s, "True") ||
            !strcmp(t->s, "False") || !strcmp(t->s, "None"))
            pfail_at(P, t, EDGELLM_ERR_FORMAT, "%s", "can't assign to a constant");
        if (k == 32) pfail_at(P, t, EDGELLM_ERR_UNSUPPORTED, "%s", "too many assignment targets");
        names[k++] = t->s;
        adv(P);
        if (is_op(P, JO_COMMA)) tuple = true;
    }
    if (paren) expect_op(P, JO_RPAREN, ")");
    n->names = palloc(P, (size_t)k * sizeof *n->names);
    memcpy(n->names, names, (size_t)k * sizeof *names);
    n->n_names = k;
    n->op = tuple;
}

static jnode *parse_statement(parser *P);

static jnode *parse_if(parser *P, const jtok *opener)
{
    jnode *n = node(P, JN_IF, opener);
    jnode *top = n;
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    static const char *const end_if[] = {"endif", NULL};
    for (;;) {
        n->a = parse_tuple(P, false, false, NULL, false);
        nvec body = {0};
        const char *e = parse_body(P, ends, &body, opener);
        n->list = body.v;
        n->n = body.n;
        if (!strcmp(e, "elif")) {
            jnode *m = node(P, JN_IF, cur(P));
            n->list2 = palloc(P, sizeof *n->list2);
            n->list2[0] = m;
            n->n2 = 1;
            n = m;
            continue;
        }
        if (!strcmp(e, "else")) {
            nvec els = {0};
            parse_body(P, end_if, &els, opener);
            n->list2 = els.v;
            n->n2 = els.n;
        }
        break;
    }
    return top;
}

static jnode *parse_for(parser *P, const jtok *opener)
{
    jnode *n = node(P, JN_FOR, opener);
    parse_targets(P, n, "in");
    if (!skip_name(P, "in")) {
        char buf[64];
        pfail_at(P, cur(P), EDGELLM_ERR_FORMAT, "expected 'in', got '%s'", describe(cur(P), buf, sizeof buf));
    }
    n->a = parse_tuple(P, false, false, "recursive", false);
    if (skip_name(P, "if")) n->b = parse_expression(P, true);
    if (is_name(P, "recursive")) pfail_at(P, cur(P), EDGELLM_ERR_UNSUPPORTED, "%s", "recursive loops are not supported");
    static const char *const ends[] = {"endfor", "else", NULL};
    static const char *const end_for[] = {"endfor", NULL};
    nvec body = {0}, els = {0};
    P->loops++;
    const char *e = parse_body(P, ends, &body, opener);
    P->loops--;
    if (!strcmp(e, "else")) parse_body(P, end_for, &els, opener);
    n->list = body.v;
    n->n = body.n;
    n->list2 = els.v;
    n->n2 = els.n;
    return n;
}

static jnode *parse_set(parser *P, const jtok *opener)
{
    if (cur(P)->type == JT_NAME && peek(P, 1)->type == JT_OP && peek(P, 1)->op == JO_DOT) {
        jnode *n = node(P, JN_SET_NS, opener);
        n->names = palloc(P, sizeof *n->names);
        n->names[0] = expect_name(P);
        n->n_names = 1;
        adv(P);
        n->name = expect_name(P);
        expect_op(P, JO_ASSIGN, "=");
        n->a = parse_tuple(P, false, true, NULL, false);
        return n;
    }
    jnode *n = node(P, JN_SET, opener);
    parse_targets(P, n, NULL);
    if (skip_op(P, JO_ASSIGN)) {
        n->a = parse_tuple(P, false, true, NULL, false);
        return n;
    }
    n->kind = JN_SET_BLOCK;
    if (is_op(P, JO_PIPE)) {
        jnode *bv = node(P, JN_BLOCKVAL, cur(P));
        n->b = parse_filter(P, bv, false);
    }
    static const char *const ends[] = {"endset", NULL};
    nvec body = {0};
    parse_body(P, ends, &body, opener);
    n->list = body.v;
    n->n = body.n;
    return n;
}

/* (name, name=default, ...) of a macro or call block: names, defaults aligned right. */
static void parse_signature(parser *P, jnode *n)
{
    expect_op(P, JO_LPAREN, "(");
    const char *names[64];
    nvec defs = {0};
    int k = 0;
    while (!is_op(P, JO_RPAREN)) {
        if (k) expect_op(P, JO_COMMA, ",");
        if (k == 64) pfail_at(P, cur(P), EDGELLM_ERR_UNSUPPORTED, "%s", "too many macro parameters");
        const jtok *t = cur(P);
        names[k++] = expect_name(P);
        if (skip_op(P, JO_ASSIGN)) nv_push(P, &defs, parse_expression(P, true));
        else if (defs.n) pfail_at(P, t, EDGELLM_ERR_FORMAT, "%s", "non-default argument follows default argument");
    }
    adv(P);
    n->names = palloc(P, (size_t)(k ? k : 1) * sizeof *n->names);
    memcpy(n->names, names, (size_t)k * sizeof *names);
    n->n_names = k;
    n->list2 = defs.v;
    n->n2 = defs.n;
}

static jnode *parse_macro(parser *P, const jtok *opener)
{
    jnode *n = node(P, JN_MACRO, opener);
    n->name = expect_name(P);
    parse_signature(P, n);
    jnode *outer = P->macro;
    int loops = P->loops;
    P->macro = n;
    P->loops = 0;
    static const char *const ends[] = {"endmacro", NULL};
    nvec body = {0};
    parse_body(P, ends, &body, opener);
    P->macro = outer;
    P->loops = loops;
    n->list = body.v;
    n->n = body.n;
    return n;
}

static jnode *parse_with(parser *P, const jtok *opener)
{
    jnode *n = node(P, JN_WITH, opener);
    const char *names[32];
    nvec vals = {0};
    int k = 0;
    while (cur(P)->type != JT_BLOCK_END) {
        if (k) expect_op(P, JO_COMMA, ",");
        if (k == 32) pfail_at(P, cur(P), EDGELLM_ERR_UNSUPPORTED, "%s", "too many with targets");
        names[k++] = expect_name(P);
        expect_op(P, JO_ASSIGN, "=");
        nv_push(P, &vals, parse_expression(P, true));
    }
    n->names = palloc(P, (size_t)(k ? k : 1) * sizeof *n->names);
    memcpy(n->names, names, (size_t)k * sizeof *names);
    n->n_names = k;
    n->list2 = vals.v;
    n->n2 = vals.n;
    static const char *const ends[] = {"endwith", NULL};
    nvec body = {0};
    parse_body(P, ends, &body, opener);
    n->list = body.v;
    n->n = body.n;
    return n;
}

static jnode *parse_statement(parser *P)
{
    const jtok *t = cur(P);
    if (t->type != JT_NAME) pfail_at(P, t, EDGELLM_ERR_FORMAT, "%s", "tag name expected");
    const char *nm = t->s;
    adv(P);
    if (!strcmp(nm, "if")) return parse_if(P, t);
    if (!strcmp(nm, "for")) return parse_for(P, t);
    if (!strcmp(nm, "set")) return parse_set(P, t);
    if (!strcmp(nm, "macro")) return parse_macro(P, t);
    if (!strcmp(nm, "with")) return parse_with(P, t);
    if (!strcmp(nm, "filter")) {
        jnode *n = node(P, JN_FILTER_BLOCK, t);
        n->b = parse_filter(P, node(P, JN_BLOCKVAL, cur(P)), true);
        static const char *const ends[] = {"endfilter", NULL};
        nvec body = {0};
        parse_body(P, ends, &body, t);
        n->list = body.v;
        n->n = body.n;
        return n;
    }
    if (!strcmp(nm, "generation")) {   /* transformers' AssistantTracker: a call block
                                          rendering its body in a scope of its own */
        jnode *n = node(P, JN_SCOPE, t);
        static const char *const ends[] = {"endgeneration", NULL};
        nvec body = {0};
        parse_body(P, ends, &body, t);
        n->list = body.v;
        n->n = body.n;
        return n;
    }
    if (!strcmp(nm, "print")) {        /* {% print a, b %}: each expression printed */
        jnode *n = node(P, JN_SCOPE, t);
        n->op = 1;
        nvec outs = {0};
        while (cur(P)->type != JT_BLOCK_END) {
            if (outs.n) expect_op(P, JO_COMMA, ",");
            jnode *o = node(P, JN_OUTPUT, cur(P));
            o->a = parse_expression(P, true);
            nv_push(P, &outs, o);
        }
        n->list = outs.v;
        n->n = outs.n;
        return n;
    }
    if (!strcmp(nm, "break") || !strcmp(nm, "continue")) {
        if (!P->loops) pfail_at(P, t, EDGELLM_ERR_FORMAT, "'%s' outside of a loop", nm);
        return node(P, nm[0] == 'b' ? JN_BREAK : JN_CONTINUE, t);
    }
    if (!strcmp(nm, "call")) {   /* {% call(params) macro(args) %}body{% endcall %} */
        jnode *n = node(P, JN_CALL_BLOCK, t);
        if (is_op(P, JO_LPAREN)) parse_signature(P, n);
        n->a = parse_expression(P, true);
        if (n->a->kind != JN_CALL) pfail_at(P, t, EDGELLM_ERR_FORMAT, "%s", "expected call");
        static const char *const ends[] = {"endcall", NULL};
        nvec body = {0};
        jnode *outer = P->macro;   /* the body is the caller macro's own */
        int loops = P->loops;
        P->macro = n;
        P->loops = 0;
        parse_body(P, ends, &body, t);
        P->macro = outer;
        P->loops = loops;
        n->list = body.v;
        n->n = body.n;
        return n;
    }
    static const char *const unsupported[] = {"extends", "block", "include", "import", "from",
                                              "autoescape", "raw", NULL};
    for (int i = 0; unsupported[i]; i++)
        if (!strcmp(nm, unsupported[i])) pfail_at(P, t, EDGELLM_ERR_UNSUPPORTED, "the '%s' statement is not supported", nm);
    pfail_at(P, t, EDGELLM_ERR_FORMAT, "encountered unknown tag '%s'", nm);
}

static void subparse(parser *P, const char *const *end_names, nvec *body)
{
    for (;;) {
        const jtok *t = cur(P);
        if (t->type == JT_EOF) return;
        if (t->type == JT_DATA) {
            jnode *n = node(P, JN_DATA, t);
            jstr *s = palloc(P, sizeof *s + t->len + 1);
            s->p = (char *)(s + 1);
            memcpy(s->p, t->s, t->len);
            s->len = t->len;
            n->val.t = JV_STR;
            n->val.u.s = s;
            nv_push(P, body, n);
            adv(P);
        } else if (t->type == JT_VAR_BEGIN) {
            adv(P);
            jnode *n = node(P, JN_OUTPUT, t);
            n->a = parse_tuple(P, false, true, NULL, false);
            n->op = is_const(n->a);   /* Jinja's compiler prints it from as_const() */
            if (cur(P)->type != JT_VAR_END) {
                char buf[64];
                pfail_at(P, cur(P), EDGELLM_ERR_FORMAT, "expected the end of the print statement, got '%s'",
                         describe(cur(P), buf, sizeof buf));
            }
            adv(P);
            nv_push(P, body, n);
        } else if (t->type == JT_BLOCK_BEGIN) {
            adv(P);
            if (end_names && cur(P)->type == JT_NAME)
                for (int i = 0; end_names[i]; i++)
                    if (!strcmp(cur(P)->s, end_names[i])) return;
            nv_push(P, body, parse_statement(P));
            expect_block_end(P);
        } else unexpected(P);
    }
}

edgellm_jinja_limits edgellm_jinja_default_limits(size_t input_bytes)
{
    edgellm_jinja_limits l;
    size_t in = input_bytes > SIZE_MAX / 64 ? SIZE_MAX / 64 : input_bytes;
    l.max_output_bytes = ((size_t)4 << 20) + 4 * in;
    l.max_memory_bytes = ((size_t)32 << 20) + 32 * in;
    l.max_nesting = 64;
    l.max_depth = 400;
    l.max_steps = 20000000;
    l.max_iterations = 1000000;
    return l;
}

edgellm_status edgellm_jinja_parse(const char *src, size_t len, const char *name, const edgellm_jinja_limits *lim,
                                   edgellm_jinja **out, edgellm_error *err)
{
    *out = NULL;
    if (!name) name = "template";
    if (!src) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: no template text", name);
    const edgellm_jinja_limits L = lim ? *lim : edgellm_jinja_default_limits(len);
    edgellm_jinja *t = edgellm_calloc(1, sizeof *t);
    char *nm = edgellm_strdup(name);
    if (!t || !nm) {
        edgellm_free(t);
        edgellm_free(nm);
        return edgellm_fail_nomem(err, name);
    }
    t->name = nm;
    t->src_len = len;
    /* volatile: read after longjmp */
    edgellm_jinja *volatile tv = t;
    jfail f;
    f.err = err;
    f.status = EDGELLM_OK;
    f.name = nm;
    edgellm_jinja_arena_init(&t->arena, L.max_memory_bytes);
    if (setjmp(f.jb)) {
        edgellm_jinja_free(tv);
        return f.status;
    }
    if (!edgellm_jinja_u8_valid(src, len))
        edgellm_jinja_fail(&f, EDGELLM_ERR_FORMAT, 0, 0, "the template is not valid UTF-8");
    jtok *toks;
    size_t n_toks;
    edgellm_jinja_lex(src, len, &t->arena, &f, &toks, &n_toks, L.max_nesting);
    parser P = {0};
    P.t = toks;
    P.n = n_toks;
    P.a = &t->arena;
    P.f = &f;
    P.max_nesting = L.max_nesting;
    nvec body = {0};
    subparse(&P, NULL, &body);
    if (cur(&P)->type != JT_EOF) unexpected(&P);
    t->body = body.v;
    t->n_body = body.n;
    *out = t;
    return EDGELLM_OK;
}

void edgellm_jinja_free(edgellm_jinja *t)
{
    if (!t) return;
    edgellm_jinja_arena_free(&t->arena);
    edgellm_free(t->name);
    edgellm_free(t);
}
