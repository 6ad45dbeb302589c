/*
 * jinja_parse_expr.c — Jinja expressions to a tree (jinja_int.h: jnode), following the
 * grammar of Jinja2 3.1's parser (jinja2/parser.py), precedence from loosest to tightest:
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
 * Unknown filters and tests are refused here, as Jinja's compiler does.
 */
#include "jinja_parse.h"

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

jnode *edgellm_jinja_parse_expression(parser *P, bool with_condexpr) { return parse_expression(P, with_condexpr); }
jnode *edgellm_jinja_parse_tuple(parser *P, bool simplified, bool with_condexpr, const char *extra_end,
                                 bool explicit_parens)
{
    return parse_tuple(P, simplified, with_condexpr, extra_end, explicit_parens);
}
jnode *edgellm_jinja_parse_filter(parser *P, jnode *operand, bool start_inline)
{
    return parse_filter(P, operand, start_inline);
}
bool edgellm_jinja_tuple_end(parser *P, const char *extra_end) { return tuple_end(P, extra_end); }
bool edgellm_jinja_is_const(const jnode *n) { return is_const(n); }
