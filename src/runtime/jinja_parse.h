/*
 * jinja_parse.h — the parser's state and small helpers, private to jinja_parse_expr.c
 * (expressions) and jinja_parse.c (statements, the entry point).
 */
#ifndef EDGELLM_JINJA_PARSE_H
#define EDGELLM_JINJA_PARSE_H

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

static inline const jtok *cur(parser *P) { return &P->t[P->i]; }
static inline const jtok *peek(parser *P, int k) { size_t j = P->i + (size_t)k; return &P->t[j < P->n ? j : P->n - 1]; }
static inline void adv(parser *P) { if (P->i + 1 < P->n) P->i++; }

static inline const char *describe(const jtok *t, char *buf, size_t size)
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

_Noreturn static inline void pfail_at(parser *P, const jtok *t, edgellm_status code, const char *fmt, const char *arg)
{
    edgellm_jinja_fail(P->f, code, t->line, t->col, fmt, arg);
}

_Noreturn static inline void unexpected(parser *P)
{
    char buf[64];
    pfail_at(P, cur(P), EDGELLM_ERR_FORMAT, "unexpected '%s'", describe(cur(P), buf, sizeof buf));
}

static inline void *palloc(parser *P, size_t n)
{
    void *p = edgellm_jinja_arena_alloc(P->a, n);
    if (!p && P->a->at_limit)
        edgellm_jinja_fail(P->f, EDGELLM_ERR_UNSUPPORTED, 0, 0, "memory limit reached while parsing (%zu bytes)", P->a->limit);
    if (!p) edgellm_jinja_fail(P->f, EDGELLM_ERR_NOMEM, 0, 0, "out of memory while parsing the template");
    memset(p, 0, n);
    return p;
}

static inline jnode *node(parser *P, jnode_kind kind, const jtok *at)
{
    jnode *n = palloc(P, sizeof *n);
    n->kind = (uint8_t)kind;
    n->line = at->line;
    n->col = at->col;
    return n;
}

static inline void nv_push(parser *P, nvec *v, jnode *n)
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

static inline bool is_op(parser *P, jop op) { return cur(P)->type == JT_OP && cur(P)->op == op; }
static inline bool is_name(parser *P, const char *nm) { return cur(P)->type == JT_NAME && strcmp(cur(P)->s, nm) == 0; }

static inline bool skip_op(parser *P, jop op)
{
    if (!is_op(P, op)) return false;
    adv(P);
    return true;
}

static inline bool skip_name(parser *P, const char *nm)
{
    if (!is_name(P, nm)) return false;
    adv(P);
    return true;
}

static inline void expect_op(parser *P, jop op, const char *what)
{
    if (skip_op(P, op)) return;
    char buf[64], msg[128];
    snprintf(msg, sizeof msg, "expected '%s', got '%s'", what, describe(cur(P), buf, sizeof buf));
    pfail_at(P, cur(P), EDGELLM_ERR_FORMAT, "%s", msg);
}

static inline const char *expect_name(parser *P)
{
    if (cur(P)->type != JT_NAME) {
        char buf[64];
        pfail_at(P, cur(P), EDGELLM_ERR_FORMAT, "expected a name, got '%s'", describe(cur(P), buf, sizeof buf));
    }
    const char *s = cur(P)->s;
    adv(P);
    return s;
}

static inline void expect_block_end(parser *P)
{
    if (cur(P)->type == JT_BLOCK_END) { adv(P); return; }
    char buf[64];
    pfail_at(P, cur(P), EDGELLM_ERR_FORMAT, "expected the end of the statement block, got '%s'",
             describe(cur(P), buf, sizeof buf));
}

static inline void enter(parser *P)
{
    if (++P->nesting > P->max_nesting)
        pfail_at(P, cur(P), EDGELLM_ERR_UNSUPPORTED, "%s", "expressions or blocks nested too deep (nesting limit)");
}

static inline void leave(parser *P) { P->nesting--; }

/* jinja_parse_expr.c */
jnode *edgellm_jinja_parse_expression(parser *P, bool with_condexpr);
/* A tuple without parentheses (a, b) or one expression; simplified: names and literals
 * only; extra_end: a name that also ends it ("in" in a for target). */
jnode *edgellm_jinja_parse_tuple(parser *P, bool simplified, bool with_condexpr, const char *extra_end,
                                 bool explicit_parens);
/* Filters `| name(args)` applied to operand (a JN_BLOCKVAL for filter blocks). */
jnode *edgellm_jinja_parse_filter(parser *P, jnode *operand, bool start_inline);
/* Whether the tuple ends here (end of tag, ')' or extra_end). */
bool   edgellm_jinja_tuple_end(parser *P, const char *extra_end);
/* Whether Jinja's compiler folds the expression to a constant (see jinja_parse_expr.c). */
bool   edgellm_jinja_is_const(const jnode *n);

#endif
