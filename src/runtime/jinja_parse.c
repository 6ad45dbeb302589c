/*
 * jinja_parse.c — Jinja statements to a tree, and the parser's entry point
 * (edgellm_jinja_parse). Expressions: jinja_parse_expr.c.
 *
 * Statements: if/elif/else, for (targets, else, loop filter), set (name, tuple, namespace
 * attribute, block form with filters), macro, call blocks, filter blocks, with, print,
 * break and continue (the loopcontrols extension) and transformers' {% generation %}
 * (rendered as its body). Jinja statements with no meaning for a chat template (extends,
 * block, include, import, from, autoescape, recursive loops) are refused as unsupported,
 * naming the line.
 */
#include "jinja_parse.h"

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
        if (k && (edgellm_jinja_tuple_end(P, extra_end) || is_op(P, JO_ASSIGN) || (paren && is_op(P, JO_RPAREN)))) break;
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
        n->a = edgellm_jinja_parse_tuple(P, false, false, NULL, false);
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
    n->a = edgellm_jinja_parse_tuple(P, false, false, "recursive", false);
    if (skip_name(P, "if")) n->b = edgellm_jinja_parse_expression(P, true);
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
        n->a = edgellm_jinja_parse_tuple(P, false, true, NULL, false);
        return n;
    }
    jnode *n = node(P, JN_SET, opener);
    parse_targets(P, n, NULL);
    if (skip_op(P, JO_ASSIGN)) {
        n->a = edgellm_jinja_parse_tuple(P, false, true, NULL, false);
        return n;
    }
    n->kind = JN_SET_BLOCK;
    if (is_op(P, JO_PIPE)) {
        jnode *bv = node(P, JN_BLOCKVAL, cur(P));
        n->b = edgellm_jinja_parse_filter(P, bv, false);
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
        if (skip_op(P, JO_ASSIGN)) nv_push(P, &defs, edgellm_jinja_parse_expression(P, true));
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
        nv_push(P, &vals, edgellm_jinja_parse_expression(P, true));
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
        n->b = edgellm_jinja_parse_filter(P, node(P, JN_BLOCKVAL, cur(P)), true);
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
            o->a = edgellm_jinja_parse_expression(P, true);
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
        n->a = edgellm_jinja_parse_expression(P, true);
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
            n->a = edgellm_jinja_parse_tuple(P, false, true, NULL, false);
            n->op = edgellm_jinja_is_const(n->a);   /* Jinja's compiler prints it from as_const() */
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
    jfail *f = edgellm_malloc(sizeof *f);   /* on the heap: read after longjmp */
    if (!t || !nm || !f) {
        edgellm_free(t);
        edgellm_free(nm);
        edgellm_free(f);
        return edgellm_fail_nomem(err, name);
    }
    t->name = nm;
    t->src_len = len;
    edgellm_jinja *volatile tv = t;   /* volatile: read after longjmp */
    jfail *volatile fv = f;
    f->err = err;
    f->status = EDGELLM_OK;
    f->name = nm;
    edgellm_jinja_arena_init(&t->arena, L.max_memory_bytes);
    if (setjmp(f->jb)) {
        edgellm_status rc = fv->status;
        edgellm_jinja_free(tv);
        edgellm_free(fv);
        return rc;
    }
    if (!edgellm_jinja_u8_valid(src, len))
        edgellm_jinja_fail(f, EDGELLM_ERR_FORMAT, 0, 0, "the template is not valid UTF-8");
    jtok *toks;
    size_t n_toks;
    edgellm_jinja_lex(src, len, &t->arena, f, &toks, &n_toks, L.max_nesting);
    parser P = {0};
    P.t = toks;
    P.n = n_toks;
    P.a = &t->arena;
    P.f = f;
    P.max_nesting = L.max_nesting;
    nvec body = {0};
    subparse(&P, NULL, &body);
    if (cur(&P)->type != JT_EOF) unexpected(&P);
    t->body = body.v;
    t->n_body = body.n;
    edgellm_free(f);
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
