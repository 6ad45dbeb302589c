/*
 * jinja_eval.c — renders a parsed template: statements, expressions, scopes, loops and
 * macros, with the semantics Jinja2 3.1 gives them (jinja2/compiler.py, runtime.py).
 *
 * Scopes: the globals (messages, bos_token...) sit in the outermost frame; the template's
 * own assignments in the next. Each loop iteration, macro call and with-block gets a fresh
 * frame, so an assignment there is gone when it ends (Jinja's rule; namespace() objects are
 * how templates carry values out of loops). if-blocks have no frame of their own.
 *
 * Operators and attribute access: jinja_ops.c.
 */
#include "jinja_int.h"
#include <math.h>
#include <stdlib.h>
#include <time.h>

/* ------------------------------------------------------------------ frames ---- */
static jframe *frame_new(jctx *c, jframe *parent)
{
    jframe *f = edgellm_jinja_alloc(c, sizeof *f);
    memset(f, 0, sizeof *f);
    f->parent = parent;
    return f;
}

static void frame_set(jctx *c, jframe *f, const char *name, jv v)
{
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->names[i], name)) { f->vals[i] = v; return; }
    if (f->n == f->cap) {
        int cap = f->cap ? f->cap * 2 : 8;
        const char **nn = edgellm_jinja_alloc(c, (size_t)cap * sizeof *nn);
        jv *nv = edgellm_jinja_alloc(c, (size_t)cap * sizeof *nv);
        if (f->n) {
            memcpy(nn, f->names, (size_t)f->n * sizeof *nn);
            memcpy(nv, f->vals, (size_t)f->n * sizeof *nv);
        }
        f->names = nn;
        f->vals = nv;
        f->cap = cap;
    }
    f->names[f->n] = name;
    f->vals[f->n] = v;
    f->n++;
}

static bool lookup(jctx *c, const char *name, jv *out)
{
    for (jframe *f = c->frame; f; f = f->parent)
        for (int i = f->n - 1; i >= 0; i--)
            if (!strcmp(f->names[i], name)) { *out = f->vals[i]; return true; }
    return edgellm_jinja_global(c, name, out);
}

/* ------------------------------------------------------------------ output ---- */
static void emit(jctx *c, const jstr *s)
{
    edgellm_jinja_buf_put_str(c, c->out, s, 0, s->len);
    if (c->out->len > c->lim.max_output_bytes)
        edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "output limit reached (%zu bytes)", c->lim.max_output_bytes);
}

/* ------------------------------------------------------------ expressions ---- */
static void enter(jctx *c, const jnode *n)
{
    if (++c->steps > c->lim.max_steps)
        edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "step limit reached (%llu operations)", (unsigned long long)c->lim.max_steps);
    if (++c->depth > c->lim.max_depth)
        edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "nesting too deep while rendering (depth limit %d)", c->lim.max_depth);
    c->line = n->line;
    c->col = n->col;
}

/* The evaluated arguments of a call, filter or test: positional ones (with *args spread)
 * and keyword ones (with **kwargs spread), plus room for `extra` more keywords. */
typedef struct {
    jv *args, *kwv;
    const char **kw;
    int n, n_kw;
} jcall_args;

static void eval_args(jctx *c, const jnode *n, jcall_args *ca, int extra)
{
    jv dyn = n->b ? edgellm_jinja_eval(c, n->b) : jv_undef(), dkw = n->c ? edgellm_jinja_eval(c, n->c) : jv_undef();
    size_t nd = 0, nk = 0;
    const jv *dyn_items = n->b ? edgellm_jinja_iter(c, dyn, &nd) : NULL;
    if (n->c) {
        if (dkw.t != JV_DICT)
            edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "argument after ** must be a mapping, not %s", edgellm_jinja_type_name(&dkw));
        nk = dkw.u.d->n;
    }
    ca->n = n->n + (int)nd;
    ca->n_kw = n->n2 + (int)nk;
    ca->args = edgellm_jinja_alloc(c, ((size_t)ca->n + 1) * sizeof(jv));
    ca->kwv = edgellm_jinja_alloc(c, ((size_t)ca->n_kw + (size_t)extra + 1) * sizeof(jv));
    ca->kw = edgellm_jinja_alloc(c, ((size_t)ca->n_kw + (size_t)extra + 1) * sizeof(char *));
    for (int i = 0; i < n->n; i++) ca->args[i] = edgellm_jinja_eval(c, n->list[i]);
    for (size_t i = 0; i < nd; i++) ca->args[n->n + (int)i] = dyn_items[i];
    for (int i = 0; i < n->n2; i++) {
        ca->kw[i] = n->names[i];
        ca->kwv[i] = edgellm_jinja_eval(c, n->list2[i]);
    }
    for (size_t i = 0; i < nk; i++) {
        const jv *k = &dkw.u.d->keys[i];
        if (k->t != JV_STR) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "keywords must be strings");
        ca->kw[n->n2 + (int)i] = k->u.s->p;
        ca->kwv[n->n2 + (int)i] = dkw.u.d->vals[i];
    }
}

static jv eval_compare(jctx *c, const jnode *n)
{
    jv left = edgellm_jinja_eval(c, n->a);
    bool r = true;
    for (int i = 0; i < n->n && r; i++) {
        jv right = edgellm_jinja_eval(c, n->list[i]);
        c->line = n->line;
        c->col = n->col;
        switch (n->ops[i]) {
        case JO_EQ: r = edgellm_jinja_eq(c, left, right); break;
        case JO_NE: r = !edgellm_jinja_eq(c, left, right); break;
        case JO_LT: r = edgellm_jinja_cmp(c, left, right, "<") == -1; break;
        case JO_LTEQ: { int k = edgellm_jinja_cmp(c, left, right, "<="); r = k == -1 || k == 0; break; }
        case JO_GT: r = edgellm_jinja_cmp(c, left, right, ">") == 1; break;
        case JO_GTEQ: { int k = edgellm_jinja_cmp(c, left, right, ">="); r = k == 1 || k == 0; break; }
        case JO_IN: r = edgellm_jinja_contains(c, right, left); break;
        case JO_NOTIN: r = !edgellm_jinja_contains(c, right, left); break;
        }
        left = right;
    }
    return jv_bool(r);
}

static jv eval_inner(jctx *c, const jnode *n)
{
    switch (n->kind) {
    case JN_CONST: return n->val;
    case JN_NAME: {
        jv v;
        if (lookup(c, n->name, &v)) return v;
        return edgellm_jinja_undef(c, JU_VAR, NULL, n->name, NULL);
    }
    case JN_BLOCKVAL: return c->blockval;
    case JN_GETATTR: {
        jv o = edgellm_jinja_eval(c, n->a);
        c->line = n->line;
        c->col = n->col;
        return edgellm_jinja_getattr(c, o, n->name);
    }
    case JN_GETITEM: {
        jv o = edgellm_jinja_eval(c, n->a), k = edgellm_jinja_eval(c, n->b);
        c->line = n->line;
        c->col = n->col;
        return edgellm_jinja_getitem(c, o, k);
    }
    case JN_SLICE: {
        jv o = edgellm_jinja_eval(c, n->a), p[3];
        for (int i = 0; i < 3; i++) p[i] = n->list[i] ? edgellm_jinja_eval(c, n->list[i]) : jv_none();
        c->line = n->line;
        c->col = n->col;
        if (n->op && c->folding) {   /* Jinja prints a constant {{ }} from as_const(), whose
                                         slices go through the sandbox's getitem */
            bool sliceable = o.t == JV_STR || (o.t == JV_LIST && (o.u.l->kind == JL_LIST || o.u.l->kind == JL_TUPLE));
            bool ints = true;
            for (int i = 0; i < 3; i++) ints &= p[i].t == JV_NONE || p[i].t == JV_INT || p[i].t == JV_BOOL;
            if (!sliceable || !ints) return edgellm_jinja_undef(c, JU_ELEMENT, &o, NULL, &p[0]);
        }
        return edgellm_jinja_slice(c, o, p[0], p[1], p[2]);
    }
    case JN_CALL: {
        jv fn = edgellm_jinja_eval(c, n->a);
        jcall_args ca;
        eval_args(c, n, &ca, 0);
        c->line = n->line;
        c->col = n->col;
        return edgellm_jinja_call(c, fn, ca.args, ca.n, ca.kw, ca.kwv, ca.n_kw);
    }
    case JN_FILTER: {
        jv v = n->a ? edgellm_jinja_eval(c, n->a) : c->blockval;
        jcall_args ca;
        eval_args(c, n, &ca, 0);
        c->line = n->line;
        c->col = n->col;
        return edgellm_jinja_filter(c, n->id, v, ca.args, ca.n, ca.kw, ca.kwv, ca.n_kw);
    }
    case JN_TEST: {
        jv v = edgellm_jinja_eval(c, n->a);
        jcall_args ca;
        eval_args(c, n, &ca, 0);
        c->line = n->line;
        c->col = n->col;
        if (ca.n_kw) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "keyword arguments to tests are not supported");
        bool r = edgellm_jinja_test(c, n->id, v, ca.args, ca.n);
        return jv_bool(n->op ? !r : r);
    }
    case JN_NOT: return jv_bool(!edgellm_jinja_truthy(c, edgellm_jinja_eval(c, n->a)));
    case JN_NEG:
    case JN_POS: {
        jv v = edgellm_jinja_eval(c, n->a);
        c->line = n->line;
        c->col = n->col;
        return edgellm_jinja_unary(c, n->kind == JN_NEG, v);
    }
    case JN_BINOP: {
        jv a = edgellm_jinja_eval(c, n->a), b = edgellm_jinja_eval(c, n->b);
        c->line = n->line;
        c->col = n->col;
        return edgellm_jinja_binop(c, n->op, a, b);
    }
    case JN_CONCAT: {
        jv *vals = edgellm_jinja_alloc(c, (size_t)n->n * sizeof(jv));
        for (int i = 0; i < n->n; i++) vals[i] = edgellm_jinja_eval(c, n->list[i]);
        return edgellm_jinja_concat(c, vals, n->n);
    }
    case JN_COMPARE: return eval_compare(c, n);
    case JN_AND: {
        jv a = edgellm_jinja_eval(c, n->a);
        return edgellm_jinja_truthy(c, a) ? edgellm_jinja_eval(c, n->b) : a;
    }
    case JN_OR: {
        jv a = edgellm_jinja_eval(c, n->a);
        return edgellm_jinja_truthy(c, a) ? a : edgellm_jinja_eval(c, n->b);
    }
    case JN_COND:
        if (edgellm_jinja_truthy(c, edgellm_jinja_eval(c, n->a))) return edgellm_jinja_eval(c, n->b);
        if (n->c) return edgellm_jinja_eval(c, n->c);
        return edgellm_jinja_undef(c, JU_HINT, NULL, "the inline if-expression evaluated to false and has no else", NULL);
    case JN_LIST:
    case JN_TUPLE: {
        jlist *l = edgellm_jinja_list_new(c, (size_t)n->n, n->kind == JN_LIST ? JL_LIST : JL_TUPLE);
        for (int i = 0; i < n->n; i++) l->items[i] = edgellm_jinja_eval(c, n->list[i]);
        jv v = {.t = JV_LIST};
        v.u.l = l;
        return v;
    }
    case JN_DICT: {
        jdict *d = edgellm_jinja_dict_new(c, (size_t)n->n);
        for (int i = 0; i < n->n; i++) {
            jv k = edgellm_jinja_eval(c, n->list[i]), v = edgellm_jinja_eval(c, n->list2[i]);
            c->line = n->line;
            c->col = n->col;
            edgellm_jinja_dict_set(c, d, k, v);
        }
        jv v = {.t = JV_DICT};
        v.u.d = d;
        return v;
    }
    default: edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "unsupported expression");
    }
}

jv edgellm_jinja_eval(jctx *c, const jnode *n)
{
    uint32_t line = c->line, col = c->col;
    enter(c, n);
    jv v = eval_inner(c, n);
    c->depth--;
    c->line = line;
    c->col = col;
    return v;
}

/* ------------------------------------------------------------- statements ---- */
static void exec_list(jctx *c, jnode *const *body, int n);

/* Bind targets to v: one name, or unpack v into names. */
static void assign(jctx *c, jframe *f, const jnode *n, jv v)
{
    if (!n->op && n->n_names == 1) { frame_set(c, f, n->names[0], v); return; }
    size_t cnt;
    const jv *items = edgellm_jinja_iter(c, v, &cnt);
    if (cnt != (size_t)n->n_names) {
        if (cnt > (size_t)n->n_names)
            edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "too many values to unpack (expected %d)", n->n_names);
        edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "not enough values to unpack (expected %d, got %zu)", n->n_names, cnt);
    }
    for (int i = 0; i < n->n_names; i++) frame_set(c, f, n->names[i], items[i]);
}

/* Run body writing into a fresh buffer; returns what it wrote. */
static jstr *capture(jctx *c, jnode *const *body, int n)
{
    jbuf b, *saved = c->out;
    edgellm_jinja_buf_init(&b);
    c->out = &b;
    exec_list(c, body, n);
    c->out = saved;
    return edgellm_jinja_buf_finish(c, &b);
}

static jv filtered_block(jctx *c, const jnode *chain, jstr *body)
{
    jv saved = c->blockval;
    c->blockval.t = JV_STR;
    c->blockval.safe = 0;
    c->blockval.u.s = body;
    jv v = chain ? edgellm_jinja_eval(c, chain) : c->blockval;
    c->blockval = saved;
    return v;
}

/* The frame for the next loop iteration: f itself emptied, unless a macro captured it. */
static jframe *iteration_frame(jctx *c, jframe *f, jframe *outer)
{
    if (f && !f->captured) {
        f->n = 0;
        return f;
    }
    return frame_new(c, outer);
}

static void count_iteration(jctx *c)
{
    if (++c->iterations > c->lim.max_iterations)
        edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "loop iteration limit reached (%llu)", (unsigned long long)c->lim.max_iterations);
}

static void exec_for(jctx *c, const jnode *n)
{
    jv seq = edgellm_jinja_eval(c, n->a);
    size_t cnt;
    const jv *items = edgellm_jinja_iter(c, seq, &cnt);
    jframe *outer = c->frame;
    if (n->b) {   /* the loop filter: `for x in xs if cond` */
        jv *kept = cnt ? edgellm_jinja_alloc(c, cnt * sizeof(jv)) : NULL;
        size_t k = 0;
        jframe *f = NULL;
        for (size_t i = 0; i < cnt; i++) {
            count_iteration(c);
            c->frame = f = iteration_frame(c, f, outer);
            assign(c, c->frame, n, items[i]);
            if (edgellm_jinja_truthy(c, edgellm_jinja_eval(c, n->b))) kept[k++] = items[i];
            c->frame = outer;
        }
        items = kept;
        cnt = k;
    }
    if (!cnt) {
        if (n->n2) {
            c->frame = frame_new(c, outer);
            exec_list(c, n->list2, n->n2);
            c->frame = outer;
        }
        return;
    }
    jloop *lp = edgellm_jinja_alloc(c, sizeof *lp);
    memset(lp, 0, sizeof *lp);
    lp->items = items;
    lp->length = (int64_t)cnt;
    lp->depth = 1;
    jv lv = {.t = JV_LOOP};
    lv.u.loop = lp;
    bool completed = false;
    jframe *f = NULL;
    for (size_t i = 0; i < cnt; i++) {
        count_iteration(c);
        lp->index0 = (int64_t)i;
        c->frame = f = iteration_frame(c, f, outer);
        assign(c, c->frame, n, items[i]);
        frame_set(c, c->frame, "loop", lv);
        exec_list(c, n->list, n->n);
        c->frame = outer;
        int ctl = c->loop_ctl;
        c->loop_ctl = 0;
        completed |= ctl == 0;
        if (ctl == 1) break;
    }
    /* Jinja clears its "no iteration" flag at the end of the loop body, so break and
     * continue skip it: the else block runs unless some iteration ran to its end. */
    if (!completed && n->n2) {
        c->frame = frame_new(c, outer);
        exec_list(c, n->list2, n->n2);
        c->frame = outer;
    }
}

static void exec_stmt(jctx *c, const jnode *n)
{
    uint32_t line = c->line, col = c->col;
    enter(c, n);
    switch (n->kind) {
    case JN_DATA: emit(c, n->val.u.s); break;
    case JN_OUTPUT: {
        c->folding = n->op;
        jv v = edgellm_jinja_eval(c, n->a);
        c->folding = false;
        c->line = n->line;
        c->col = n->col;
        emit(c, edgellm_jinja_to_str(c, v));
        break;
    }
    case JN_IF:
        if (edgellm_jinja_truthy(c, edgellm_jinja_eval(c, n->a))) exec_list(c, n->list, n->n);
        else exec_list(c, n->list2, n->n2);
        break;
    case JN_FOR: exec_for(c, n); break;
    case JN_SET: {
        jv v = edgellm_jinja_eval(c, n->a);
        c->line = n->line;
        c->col = n->col;
        assign(c, c->frame, n, v);
        break;
    }
    case JN_SET_NS: {
        jv ns, v = edgellm_jinja_eval(c, n->a);
        c->line = n->line;
        c->col = n->col;
        if (!lookup(c, n->names[0], &ns) || ns.t != JV_NS)
            edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "cannot assign attribute on non-namespace object");
        edgellm_jinja_dict_set(c, ns.u.d, edgellm_jinja_cstr(c, n->name), v);
        break;
    }
    case JN_SET_BLOCK: {   /* a break or continue in the body skips the assignment */
        jstr *body = capture(c, n->list, n->n);
        if (c->loop_ctl) break;
        jv v = filtered_block(c, n->b, body);
        assign(c, c->frame, n, v);
        break;
    }
    case JN_FILTER_BLOCK: {   /* ... and the output */
        jstr *body = capture(c, n->list, n->n);
        if (c->loop_ctl) break;
        jv v = filtered_block(c, n->b, body);
        emit(c, edgellm_jinja_to_str(c, v));
        break;
    }
    case JN_MACRO: {
        jmacro *m = edgellm_jinja_alloc(c, sizeof *m);
        m->def = n;
        m->closure = c->frame;
        c->frame->captured = true;
        jv v = {.t = JV_MACRO};
        v.u.m = m;
        frame_set(c, c->frame, n->name, v);
        break;
    }
    case JN_WITH: {
        jv *vals = n->n2 ? edgellm_jinja_alloc(c, (size_t)n->n2 * sizeof(jv)) : NULL;
        for (int i = 0; i < n->n2; i++) vals[i] = edgellm_jinja_eval(c, n->list2[i]);
        jframe *outer = c->frame;
        c->frame = frame_new(c, outer);
        for (int i = 0; i < n->n_names; i++) frame_set(c, c->frame, n->names[i], vals[i]);
        exec_list(c, n->list, n->n);
        c->frame = outer;
        break;
    }
    case JN_BREAK: c->loop_ctl = 1; break;
    case JN_CONTINUE: c->loop_ctl = 2; break;
    case JN_SCOPE: {
        jframe *outer = c->frame;
        if (!n->op) c->frame = frame_new(c, outer);
        exec_list(c, n->list, n->n);
        c->frame = outer;
        break;
    }
    case JN_CALL_BLOCK: {   /* the call with caller= a macro rendering the body */
        jmacro *m = edgellm_jinja_alloc(c, sizeof *m);
        m->def = n;
        m->closure = c->frame;
        c->frame->captured = true;
        jv caller = {.t = JV_MACRO};
        caller.u.m = m;
        const jnode *call = n->a;
        jv fn = edgellm_jinja_eval(c, call->a);
        jcall_args ca;
        eval_args(c, call, &ca, 1);
        ca.kw[ca.n_kw] = "caller";
        ca.kwv[ca.n_kw++] = caller;
        c->line = n->line;
        c->col = n->col;
        emit(c, edgellm_jinja_to_str(c, edgellm_jinja_call(c, fn, ca.args, ca.n, ca.kw, ca.kwv, ca.n_kw)));
        break;
    }
    default: edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "unsupported statement");
    }
    c->depth--;
    c->line = line;
    c->col = col;
}

static void exec_list(jctx *c, jnode *const *body, int n)
{
    for (int i = 0; i < n && !c->loop_ctl; i++) exec_stmt(c, body[i]);
}

/* ------------------------------------------------------------------ macros ---- */
jv edgellm_jinja_call_macro(jctx *c, const jmacro *m, const jv *args, int n_args, const char *const *kw,
                            const jv *kwv, int n_kw)
{
    const jnode *d = m->def;
    const char *mname = d->kind == JN_CALL_BLOCK ? "caller" : d->name;
    int np = d->n_names, first_default = np - d->n2;
    jframe *f = frame_new(c, m->closure);
    jv *bound = np ? edgellm_jinja_alloc(c, (size_t)np * sizeof(jv)) : NULL;
    bool *set = np ? edgellm_jinja_alloc(c, (size_t)np) : NULL;
    for (int i = 0; i < np; i++) set[i] = false;
    for (int i = 0; i < n_args && i < np; i++) { bound[i] = args[i]; set[i] = true; }
    if (n_args > np && !(d->flags & JM_VARARGS))
        edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "macro '%s' takes not more than %d argument(s)", mname, np);
    jdict *extra_kw = edgellm_jinja_dict_new(c, 4);
    jv caller = edgellm_jinja_undef(c, JU_HINT, NULL, "No caller defined", NULL);
    for (int k = 0; k < n_kw; k++) {
        if ((d->flags & JM_CALLER) && !strcmp(kw[k], "caller")) {
            caller = kwv[k];
            continue;
        }
        int i = 0;
        while (i < np && strcmp(d->names[i], kw[k])) i++;
        if (i < np) {
            if (set[i]) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "macro '%s' got multiple values for argument '%s'", mname, kw[k]);
            bound[i] = kwv[k];
            set[i] = true;
        } else if (d->flags & JM_KWARGS) edgellm_jinja_dict_set(c, extra_kw, edgellm_jinja_cstr(c, kw[k]), kwv[k]);
        else edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "macro '%s' takes no keyword argument '%s'", mname, kw[k]);
    }
    jframe *outer = c->frame;
    c->frame = f;
    for (int i = 0; i < np; i++) {
        if (!set[i]) {
            if (i >= first_default) bound[i] = edgellm_jinja_eval(c, d->list2[i - first_default]);
            else {
                size_t len = strlen(d->names[i]) + 40;
                char *h = edgellm_jinja_alloc(c, len);
                snprintf(h, len, "parameter '%s' was not provided", d->names[i]);
                bound[i] = edgellm_jinja_undef(c, JU_HINT, NULL, h, NULL);
            }
        }
        frame_set(c, f, d->names[i], bound[i]);
    }
    if (d->flags & JM_VARARGS) {
        int extra = n_args > np ? n_args - np : 0;
        jlist *l = edgellm_jinja_list_new(c, (size_t)extra, JL_TUPLE);
        for (int i = 0; i < extra; i++) l->items[i] = args[np + i];
        jv v = {.t = JV_LIST};
        v.u.l = l;
        frame_set(c, f, "varargs", v);
    }
    if (d->flags & JM_KWARGS) {
        jv v = {.t = JV_DICT};
        v.u.d = extra_kw;
        frame_set(c, f, "kwargs", v);
    }
    if (d->flags & JM_CALLER) frame_set(c, f, "caller", caller);
    int ctl = c->loop_ctl;
    jstr *s = capture(c, d->list, d->n);
    c->loop_ctl = ctl;
    c->frame = outer;
    jv v = {.t = JV_STR};
    v.u.s = s;
    return v;
}

/* ------------------------------------------------------------------ render ---- */
static jv message_dict(jctx *c, const edgellm_chat_message *m)
{
    jdict *d = edgellm_jinja_dict_new(c, 2);
    jv role = {.t = JV_STR}, content = {.t = JV_STR};
    role.u.s = edgellm_jinja_str_new(c, m->role, strlen(m->role), true);
    content.u.s = edgellm_jinja_str_new(c, m->content, strlen(m->content), true);
    edgellm_jinja_dict_set(c, d, edgellm_jinja_cstr(c, "role"), role);
    edgellm_jinja_dict_set(c, d, edgellm_jinja_cstr(c, "content"), content);
    jv v = {.t = JV_DICT};
    v.u.d = d;
    return v;
}

static edgellm_status check_text(const char *s, const char *what, int index, const char *name, edgellm_error *err)
{
    if (!s) {
        if (index >= 0) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: message %d: %s is NULL", name, index, what);
        return EDGELLM_OK;
    }
    if (!edgellm_jinja_u8_valid(s, strlen(s))) {
        if (index >= 0) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: message %d: %s is not valid UTF-8", name, index, what);
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: %s is not valid UTF-8", name, what);
    }
    return EDGELLM_OK;
}

edgellm_status edgellm_jinja_render(const edgellm_jinja *t, const edgellm_jinja_vars *vars,
                                    const edgellm_jinja_limits *lim, edgellm_jinja_output *out, edgellm_error *err)
{
    memset(out, 0, sizeof *out);
    if (!t || !vars || (vars->n_msgs > 0 && !vars->msgs) || vars->n_msgs < 0)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: bad render arguments", t ? t->name : "template");
    edgellm_status rc;
    size_t input = t->src_len;
    for (int i = 0; i < vars->n_msgs; i++) {
        if ((rc = check_text(vars->msgs[i].role, "role", i, t->name, err)) != EDGELLM_OK) return rc;
        if ((rc = check_text(vars->msgs[i].content, "content", i, t->name, err)) != EDGELLM_OK) return rc;
        input += strlen(vars->msgs[i].role) + strlen(vars->msgs[i].content);
    }
    if ((rc = check_text(vars->bos_token, "bos_token", -1, t->name, err)) != EDGELLM_OK) return rc;
    if ((rc = check_text(vars->eos_token, "eos_token", -1, t->name, err)) != EDGELLM_OK) return rc;
    if ((rc = check_text(vars->extra_json, "extra variables", -1, t->name, err)) != EDGELLM_OK) return rc;
    if (vars->extra_json) input += strlen(vars->extra_json);
    if (!vars->msgs && vars->n_msgs) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: no messages", t->name);

    jctx *c = edgellm_calloc(1, sizeof *c);
    if (!c) return edgellm_fail_nomem(err, t->name);
    c->lim = lim ? *lim : edgellm_jinja_default_limits(input);
    c->tpl = t;
    c->vars = vars;
    c->f.err = err;
    c->f.name = t->name;
    edgellm_jinja_arena_init(&c->arena, c->lim.max_memory_bytes);
    jctx *volatile cv = c;
    if (setjmp(c->f.jb)) {
        jctx *cc = cv;
        rc = cc->f.status;
        edgellm_jinja_arena_free(&cc->arena);
        edgellm_free(cc);
        return rc;
    }
    if (edgellm_jinja_date_init(c) != EDGELLM_OK) edgellm_jinja_rfail(c, EDGELLM_ERR_MISUSE, "%s", "bad date");
    c->globals = frame_new(c, NULL);
    jlist *msgs = edgellm_jinja_list_new(c, (size_t)vars->n_msgs, JL_LIST);
    for (int i = 0; i < vars->n_msgs; i++) msgs->items[i] = message_dict(c, &vars->msgs[i]);
    jv mv = {.t = JV_LIST};
    mv.u.l = msgs;
    frame_set(c, c->globals, "messages", mv);
    frame_set(c, c->globals, "add_generation_prompt", jv_bool(vars->add_generation_prompt));
    frame_set(c, c->globals, "bos_token", edgellm_jinja_cstr(c, vars->bos_token ? vars->bos_token : ""));
    frame_set(c, c->globals, "eos_token", edgellm_jinja_cstr(c, vars->eos_token ? vars->eos_token : ""));
    frame_set(c, c->globals, "tools", jv_none());
    frame_set(c, c->globals, "documents", jv_none());
    if (vars->extra_json) {
        jv extra = edgellm_jinja_json_parse(c, vars->extra_json, strlen(vars->extra_json));
        if (extra.t != JV_DICT) edgellm_jinja_fail(&c->f, EDGELLM_ERR_MISUSE, 0, 0, "extra variables: not a JSON object");
        for (size_t i = 0; i < extra.u.d->n; i++)
            if (extra.u.d->keys[i].t == JV_STR) frame_set(c, c->globals, extra.u.d->keys[i].u.s->p, extra.u.d->vals[i]);
    }
    c->frame = frame_new(c, c->globals);
    jbuf main;
    edgellm_jinja_buf_init(&main);
    c->out = &main;
    exec_list(c, t->body, t->n_body);
    c->loop_ctl = 0;

    out->text = edgellm_malloc(main.len + 1);
    out->spans = main.n_spans ? edgellm_malloc((size_t)main.n_spans * 2 * sizeof(size_t)) : NULL;
    if (!out->text || (main.n_spans && !out->spans)) {
        edgellm_free(out->text);
        edgellm_free(out->spans);
        memset(out, 0, sizeof *out);
        edgellm_jinja_arena_free(&c->arena);
        edgellm_free(c);
        return edgellm_fail_nomem(err, t->name);
    }
    if (main.len) memcpy(out->text, main.p, main.len);
    out->text[main.len] = 0;
    out->len = main.len;
    for (int i = 0; i < main.n_spans; i++) {
        out->spans[2 * i] = main.spans[i].b;
        out->spans[2 * i + 1] = main.spans[i].e;
    }
    out->n_spans = main.n_spans;
    edgellm_jinja_arena_free(&c->arena);
    edgellm_free(c);
    return EDGELLM_OK;
}

void edgellm_jinja_output_free(edgellm_jinja_output *o)
{
    if (!o) return;
    edgellm_free(o->text);
    edgellm_free(o->spans);
    memset(o, 0, sizeof *o);
}
