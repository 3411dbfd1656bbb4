/* jinja_eval.c - tree-walking evaluator.
 *
 * Scoping follows Jinja2: a for loop body gets a fresh scope per iteration
 * (assignments inside do not leak out), if blocks do not create scopes, and
 * a macro body sees its parameters, then the scopes around its definition
 * (a closure), then the render context and the globals, resolved at call
 * time.
 * Guards: output size, macro nesting depth and a step budget (loop iterations
 * plus calls) turn runaway templates into errors, never hangs or crashes. */
#include "chat/template/jinja.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jscope {
    jv_t *vars;
    struct jscope *parent;
} jscope_t;

struct jctx {
    jarena_t *a;
    jbuf_t *out;
    jscope_t *root;
    jv_t *context; /* render variables */
    jv_t *globals;
    const jrender_limits_t *lim;
    size_t depth;
    uint64_t steps;
    bool failed, is_raise;
    char *err;
    size_t errn;
};

jarena_t *jctx_arena(jctx_t *c) { return c->a; }
bool jctx_extensions(jctx_t *c) { return c->lim->extensions; }
size_t jctx_limit(jctx_t *c) { return c->lim->max_output; }

bool jctx_fail(jctx_t *c, const char *fmt, ...)
{
    if (!c->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->errn, fmt, ap);
        va_end(ap);
        c->failed = true;
    }
    return false;
}

bool jctx_raise(jctx_t *c, const char *msg, size_t n)
{
    if (!c->failed) {
        size_t m = n < c->errn - 1 ? n : c->errn - 1;
        memcpy(c->err, msg, m);
        c->err[m] = 0;
        c->failed = true;
        c->is_raise = true;
    }
    return false;
}

bool jctx_step(jctx_t *c) { return jctx_charge(c, 1); }

bool jctx_charge(jctx_t *c, uint64_t units)
{
    c->steps += units;
    if (c->steps > c->lim->max_steps)
        return jctx_fail(c, "template exceeded its evaluation budget (%llu steps)",
                         (unsigned long long)c->lim->max_steps);
    return true;
}

time_t jctx_now(jctx_t *c) { return c->lim->now == (time_t)-1 ? time(NULL) : c->lim->now; }

static jv_t *oom(jctx_t *c)
{
    jctx_fail(c, "template rendering ran out of memory");
    return NULL;
}

static jv_t *nn(jctx_t *c, jv_t *v) { return v ? v : oom(c); }

/* An undefined value that remembers why it is undefined, for the message
 * of the error raised when it is used (as Jinja2's Undefined does). */
static jv_t *undef_why(jctx_t *c, const char *fmt, const char *a, size_t an, const char *b)
{
    jv_t *u = jv_undef(c->a);
    if (!u)
        return oom(c);
    char msg[200];
    snprintf(msg, sizeof msg, fmt, (int)an, a, b ? b : "");
    u->u.str.s = jarena_strndup(c->a, msg, strlen(msg));
    return u;
}

static const char *undef_msg(const jv_t *v)
{
    return v->kind == JV_UNDEF && v->u.str.s ? v->u.str.s : "value is undefined";
}

#define CHK(x) do { if (!(x)) return NULL; } while (0)

static jv_t *eval(jctx_t *c, jscope_t *s, const jnode_t *n);
static jres_t exec_body(jctx_t *c, jscope_t *s, const jnodes_t *body);

/* ---- variable lookup -------------------------------------------------- */

static jv_t *lookup(jctx_t *c, jscope_t *s, const char *name, size_t n)
{
    for (; s; s = s->parent) {
        jv_t *v = jv_dict_get(s->vars, name, n);
        if (v)
            return v;
    }
    jv_t *v = jv_dict_get(c->context, name, n);
    if (!v)
        v = jv_dict_get(c->globals, name, n);
    return v ? v : undef_why(c, "'%.*s' is undefined", name, n, NULL);
}

static jscope_t *scope_new(jctx_t *c, jscope_t *parent)
{
    jscope_t *s = jarena_alloc(c->a, sizeof *s);
    if (!s || !(s->vars = jv_dict(c->a, JV_DICT)))
        return NULL;
    s->parent = parent;
    return s;
}

/* ---- attribute and item access ---------------------------------------- */

static jv_t *method_value(jctx_t *c, jv_t *obj, const char *name)
{
    jv_t *m = jv_new(c->a, JV_METHOD);
    if (!m)
        return oom(c);
    m->u.method.self = obj;
    m->u.method.name = name;
    return m;
}

jv_t *jctx_getattr(jctx_t *c, jv_t *obj, const char *name, size_t n)
{
    jv_t *v;
    switch (obj->kind) {
    case JV_UNDEF:
        jctx_fail(c, "%s", undef_msg(obj));
        return NULL;
    case JV_DICT:
        if (jinja_has_method(c, obj, name))
            return method_value(c, obj, name);
        /* fall through */
    case JV_NS:
        if ((v = jv_dict_get(obj, name, n)))
            return v;
        break;
    case JV_STR:
    case JV_LIST:
        if (obj->is_group && obj->u.list->n == 2 && (!strcmp(name, "grouper") || !strcmp(name, "list")))
            return obj->u.list->items[name[0] == 'g' ? 0 : 1];
        if (jinja_has_method(c, obj, name))
            return method_value(c, obj, name);
        break;
    default: break;
    }
    char what[64];
    snprintf(what, sizeof what, "'%s object' has no attribute", jv_type_name(obj));
    return undef_why(c, "%.*s '%s'", what, strlen(what), name);
}

static bool int_key(const jv_t *k, int64_t *i)
{
    if (k->kind == JV_INT) { *i = k->u.i; return true; }
    if (k->kind == JV_BOOL) { *i = k->u.b; return true; }
    return false;
}

jv_t *jctx_getitem(jctx_t *c, jv_t *obj, jv_t *key)
{
    int64_t i;
    switch (obj->kind) {
    case JV_UNDEF:
        jctx_fail(c, "%s", undef_msg(obj));
        return NULL;
    case JV_DICT:
    case JV_NS:
        if (key->kind == JV_STR) {
            jv_t *v = jv_dict_get(obj, key->u.str.s, key->u.str.n);
            if (v)
                return v;
            return jctx_getattr(c, obj, key->u.str.s, key->u.str.n);
        }
        else { /* Jinja2 turns the TypeError of an unhashable key into Undefined */
            jv_t *v = jv_dict_getv(obj, key);
            return v ? v : jv_undef(c->a);
        }
    case JV_LIST:
        if ((obj->is_gen || (obj->u.list->view != JVIEW_NONE && obj->u.list->view != JVIEW_RANGE)) &&
            key->kind != JV_STR) {
            jctx_fail(c, "'%s' object is not subscriptable", obj->is_gen ? "generator" : "dict_items");
            return NULL;
        }
        if (!obj->is_gen && int_key(key, &i)) {
            int64_t n = (int64_t)obj->u.list->n;
            if (i < 0)
                i += n;
            if (i < 0 || i >= n)
                return undef_why(c, "'%.*s object' has no element %s", jv_type_name(obj), strlen(jv_type_name(obj)),
                                 "at that index");
            return obj->u.list->items[i];
        }
        if (key->kind == JV_STR)
            return jctx_getattr(c, obj, key->u.str.s, key->u.str.n);
        return jv_undef(c->a);
    case JV_STR:
        if (int_key(key, &i)) {
            int64_t n = (int64_t)jutf8_len(obj->u.str.s, obj->u.str.n);
            if (i < 0)
                i += n;
            if (i < 0 || i >= n)
                return jv_undef(c->a);
            size_t o = jutf8_offset(obj->u.str.s, obj->u.str.n, (size_t)i);
            size_t e = jutf8_offset(obj->u.str.s, obj->u.str.n, (size_t)i + 1);
            return jv_str(c->a, obj->u.str.s + o, e - o);
        }
        if (key->kind == JV_STR)
            return jctx_getattr(c, obj, key->u.str.s, key->u.str.n);
        return jv_undef(c->a);
    default: return jv_undef(c->a);
    }
}

static bool slice_index(jctx_t *c, jv_t *v, int64_t *out)
{
    if (!v || v->kind == JV_NONE)
        return false;
    if (!int_key(v, out))
        return jctx_fail(c, "slice indices must be integers or None");
    return true;
}

jv_t *jinja_slice(jctx_t *c, jv_t *obj, jv_t *start, jv_t *stop, jv_t *step)
{
    int64_t st = 1, b = 0, e = 0;
    if (slice_index(c, step, &st) && st == 0)
        return jctx_fail(c, "slice step cannot be zero"), NULL;
    if (c->failed)
        return NULL;
    bool is_str = obj->kind == JV_STR;
    if (!is_str && !(obj->kind == JV_LIST && !obj->is_gen)) {
        jctx_fail(c, "'%s' object is not subscriptable", jv_type_name(obj));
        return NULL;
    }
    int64_t n = is_str ? (int64_t)jutf8_len(obj->u.str.s, obj->u.str.n) : (int64_t)obj->u.list->n;
    bool hb = slice_index(c, start, &b), he = slice_index(c, stop, &e);
    if (c->failed)
        return NULL;
    if (!hb)
        b = st > 0 ? 0 : n - 1;
    else {
        if (b < 0) b += n;
        if (b < 0) b = st > 0 ? 0 : -1;
        if (b > n) b = st > 0 ? n : n - 1;
        if (b == n && st < 0) b = n - 1;
    }
    if (!he)
        e = st > 0 ? n : -1;
    else {
        if (e < 0) e += n;
        if (e < 0) e = st > 0 ? 0 : -1;
        if (e > n) e = n;
    }
    if (is_str) {
        jbuf_t buf = {0};
        const char *s = obj->u.str.s;
        size_t sn = obj->u.str.n;
        for (int64_t i = b; st > 0 ? i < e : i > e; i += st) {
            size_t o = jutf8_offset(s, sn, (size_t)i), o2 = jutf8_offset(s, sn, (size_t)i + 1);
            jbuf_put(&buf, s + o, o2 - o);
        }
        jv_t *r = jv_str(c->a, buf.buf ? buf.buf : "", buf.len);
        free(buf.buf);
        return r ? r : oom(c);
    }
    jv_t *r = jv_list(c->a);
    CHK(r);
    r->is_tuple = obj->is_tuple;
    for (int64_t i = b; st > 0 ? i < e : i > e; i += st)
        if (!jv_list_push(c->a, r, obj->u.list->items[i]))
            return oom(c);
    return r;
}

jv_t *jctx_iterate(jctx_t *c, jv_t *v)
{
    jv_t *r;
    if ((v->kind == JV_LIST && !jctx_charge(c, v->u.list->n)) || (v->kind == JV_DICT && !jctx_charge(c, v->u.dict->n)) ||
        (v->kind == JV_STR && !jctx_charge(c, v->u.str.n / 8)))
        return NULL;
    switch (v->kind) {
    case JV_LIST:
        if (v->u.list->gen_error) {
            jctx_fail(c, "%s", v->u.list->gen_error);
            return NULL;
        }
        return v;
    case JV_UNDEF: return jv_list(c->a);
    case JV_DICT:
        CHK(r = jv_list(c->a));
        for (size_t i = 0; i < v->u.dict->n; i++)
            if (!jv_list_push(c->a, r, jv_dict_key(c->a, v, i)))
                return oom(c);
        return r;
    case JV_STR: {
        CHK(r = jv_list(c->a));
        const char *s = v->u.str.s;
        size_t n = v->u.str.n;
        for (size_t i = 0; i < n;) {
            size_t e = i + jutf8_offset(s + i, n - i, 1);
            if (!jv_list_push(c->a, r, jv_str(c->a, s + i, e - i)))
                return oom(c);
            i = e;
        }
        return r;
    }
    default:
        jctx_fail(c, "'%s' object is not iterable", jv_type_name(v));
        return NULL;
    }
}

/* ---- calls ------------------------------------------------------------ */

static jv_t *call_macro(jctx_t *c, jv_t *fn, jv_t **args, size_t nargs, const char **kwn,
                        jv_t **kwv, size_t nkw, jv_t *caller)
{
    const jnode_t *m = fn->u.macro.node;
    if (c->depth >= c->lim->max_depth) {
        jctx_fail(c, "macro calls nested too deeply (limit %zu)", c->lim->max_depth);
        return NULL;
    }
    if (nargs > m->nnames && !(m->op & 1)) {
        jctx_fail(c, "macro '%s' takes not more than %zu argument(s)", m->s ? m->s : "caller", m->nnames);
        return NULL;
    }
    jscope_t *s = scope_new(c, fn->u.macro.scope);
    jv_t *varargs = jv_list(c->a), *kwargs = jv_dict(c->a, JV_DICT);
    if (!s || !varargs || !kwargs)
        return oom(c);
    varargs->is_tuple = true;
    for (size_t i = m->nnames; i < nargs; i++)
        if (!jv_list_push(c->a, varargs, args[i]))
            return oom(c);
    for (size_t k = 0; k < nkw; k++) {
        bool found = false;
        for (size_t i = 0; i < m->nnames; i++)
            if (!strcmp(kwn[k], m->names[i]))
                found = true;
        if (!found && !(m->op & 2)) {
            jctx_fail(c, "macro '%s' takes no keyword argument '%s'", m->s ? m->s : "caller", kwn[k]);
            return NULL;
        }
        if (!found && !jv_dict_set(c->a, kwargs, kwn[k], strlen(kwn[k]), kwv[k]))
            return oom(c);
    }
    if (((m->op & 1) && !jv_dict_set(c->a, s->vars, "varargs", 7, varargs)) ||
        ((m->op & 2) && !jv_dict_set(c->a, s->vars, "kwargs", 6, kwargs)))
        return oom(c);
    for (size_t i = 0; i < m->nnames; i++) {
        jv_t *v = i < nargs ? args[i] : NULL;
        for (size_t k = 0; k < nkw && !v; k++)
            if (!strcmp(kwn[k], m->names[i]))
                v = kwv[k];
        if (!v) {
            const jnode_t *def = m->list2.v[i];
            v = def->kind == JN_BODY ? jv_undef(c->a) : eval(c, s, def);
            CHK(v);
        }
        if (!jv_dict_set(c->a, s->vars, m->names[i], strlen(m->names[i]), v))
            return oom(c);
    }
    if (caller && !jv_dict_set(c->a, s->vars, "caller", 6, caller))
        return oom(c);
    jbuf_t buf = {0};
    buf.limit = c->lim->max_output;
    jbuf_t *saved = c->out;
    c->out = &buf;
    c->depth++;
    jres_t r = exec_body(c, s, &m->list);
    c->depth--;
    c->out = saved;
    jv_t *res = NULL;
    if (r == JR_OK)
        res = jv_str(c->a, buf.buf ? buf.buf : "", buf.len);
    else if (r != JR_ERR)
        jctx_fail(c, "break/continue outside of a loop");
    free(buf.buf);
    if (r == JR_OK && !res)
        return oom(c);
    return res;
}

jv_t *jctx_call(jctx_t *c, jv_t *fn, jv_t **args, size_t nargs, const char **kwn, jv_t **kwv, size_t nkw)
{
    if (!jctx_step(c))
        return NULL;
    switch (fn->kind) {
    case JV_MACRO: return call_macro(c, fn, args, nargs, kwn, kwv, nkw, NULL);
    case JV_FUNC: return jinja_call_func(c, fn->u.func, args, nargs, kwn, kwv, nkw);
    case JV_METHOD:
        return jinja_call_method(c, fn->u.method.self, fn->u.method.name, args, nargs, kwn, kwv, nkw);
    case JV_UNDEF: jctx_fail(c, "%s", undef_msg(fn)); return NULL;
    default: jctx_fail(c, "'%s' object is not callable", jv_type_name(fn)); return NULL;
    }
}

typedef struct {
    jv_t **args;
    const char **kwn;
    jv_t **kwv;
    size_t nargs, nkw;
} argv_t;

static bool eval_args(jctx_t *c, jscope_t *s, const jnode_t *n, argv_t *av)
{
    av->nargs = n->list.n;
    av->nkw = n->nnames;
    av->args = jarena_alloc(c->a, (av->nargs + 1) * sizeof(jv_t *));
    av->kwv = jarena_alloc(c->a, (av->nkw + 1) * sizeof(jv_t *));
    av->kwn = (const char **)n->names;
    if (!av->args || !av->kwv)
        return oom(c), false;
    for (size_t i = 0; i < av->nargs; i++)
        if (!(av->args[i] = eval(c, s, n->list.v[i])))
            return false;
    for (size_t i = 0; i < av->nkw; i++)
        if (!(av->kwv[i] = eval(c, s, n->list2.v[i])))
            return false;
    return true;
}

static jv_t *eval_call(jctx_t *c, jscope_t *s, const jnode_t *n, jv_t *caller)
{
    jv_t *fn;
    const jnode_t *f = n->a;
    fn = eval(c, s, f);
    CHK(fn);
    argv_t av;
    if (!eval_args(c, s, n, &av))
        return NULL;
    if (caller) {
        if (fn->kind != JV_MACRO) {
            jctx_fail(c, "call block needs a macro");
            return NULL;
        }
        if (!jctx_step(c))
            return NULL;
        return call_macro(c, fn, av.args, av.nargs, av.kwn, av.kwv, av.nkw, caller);
    }
    return jctx_call(c, fn, av.args, av.nargs, av.kwn, av.kwv, av.nkw);
}

static bool is_int(const jv_t *v) { return v->kind == JV_INT || v->kind == JV_BOOL; }
static int64_t ival(const jv_t *v) { return v->kind == JV_INT ? v->u.i : v->kind == JV_BOOL ? v->u.b : 0; }

/* ---- expressions ------------------------------------------------------ */

static jv_t *eval_filter(jctx_t *c, jscope_t *s, const jnode_t *n, jv_t *operand)
{
    jv_t *v = operand;
    if (n->a) {
        v = operand ? eval_filter(c, s, n->a, operand) : eval(c, s, n->a);
        CHK(v);
    }
    argv_t av;
    if (!eval_args(c, s, n, &av))
        return NULL;
    return jinja_filter(c, n->s, v, av.args, av.nargs, av.kwn, av.kwv, av.nkw);
}

static jv_t *eval(jctx_t *c, jscope_t *s, const jnode_t *n)
{
    jv_t *x, *y;
    switch (n->kind) {
    case JN_CONST_STR: return nn(c, jv_str_own(c->a, n->s, n->slen));
    case JN_CONST_INT: return nn(c, jv_int(c->a, n->i));
    case JN_CONST_FLOAT: return nn(c, jv_float(c->a, n->f));
    case JN_CONST_BOOL: return nn(c, jv_bool(c->a, n->i));
    case JN_CONST_NONE: return nn(c, jv_none(c->a));
    case JN_NAME: return nn(c, lookup(c, s, n->s, n->slen));
    case JN_GETATTR:
        CHK(x = eval(c, s, n->a));
        return jctx_getattr(c, x, n->s, n->slen);
    case JN_GETITEM:
        CHK(x = eval(c, s, n->a));
        CHK(y = eval(c, s, n->b));
        return jctx_getitem(c, x, y);
    case JN_SLICE: {
        jv_t *b = NULL, *e = NULL, *st = NULL;
        CHK(x = eval(c, s, n->a));
        if (x->kind == JV_UNDEF) {
            jctx_fail(c, "%s", undef_msg(x));
            return NULL;
        }
        if (n->b) CHK(b = eval(c, s, n->b));
        if (n->c) CHK(e = eval(c, s, n->c));
        if (n->list.n) CHK(st = eval(c, s, n->list.v[0]));
        return jinja_slice(c, x, b, e, st);
    }
    case JN_CALL: return eval_call(c, s, n, NULL);
    case JN_FILTER: return eval_filter(c, s, n, NULL);
    case JN_TEST: {
        CHK(x = eval(c, s, n->a));
        argv_t av;
        if (!eval_args(c, s, n, &av))
            return NULL;
        int r = jinja_test(c, n->s, x, av.args, av.nargs);
        if (r < 0)
            return NULL;
        return nn(c, jv_bool(c->a, n->op ? !r : r));
    }
    case JN_BINOP:
        CHK(x = eval(c, s, n->a));
        CHK(y = eval(c, s, n->b));
        return jinja_binop(c, n->op, x, y);
    case JN_NEG:
    case JN_POS:
        CHK(x = eval(c, s, n->a));
        if (x->kind == JV_FLOAT)
            return nn(c, jv_float(c->a, n->kind == JN_NEG ? -x->u.f : x->u.f));
        if (is_int(x) && ival(x) != INT64_MIN)
            return nn(c, jv_int(c->a, n->kind == JN_NEG ? -ival(x) : ival(x)));
        jctx_fail(c, "bad operand type for unary %s: '%s'", n->kind == JN_NEG ? "-" : "+", jv_type_name(x));
        return NULL;
    case JN_NOT:
        CHK(x = eval(c, s, n->a));
        return nn(c, jv_bool(c->a, !jv_truthy(x)));
    case JN_AND:
        CHK(x = eval(c, s, n->a));
        return jv_truthy(x) ? eval(c, s, n->b) : x;
    case JN_OR:
        CHK(x = eval(c, s, n->a));
        return jv_truthy(x) ? x : eval(c, s, n->b);
    case JN_COMPARE: {
        CHK(x = eval(c, s, n->list.v[0]));
        for (size_t i = 1; i < n->list.n; i++) {
            CHK(y = eval(c, s, n->list.v[i]));
            int r = jinja_compare_op(c, n->ops[i - 1], x, y);
            if (r < 0)
                return NULL;
            if (!r)
                return nn(c, jv_bool(c->a, false));
            x = y;
        }
        return nn(c, jv_bool(c->a, true));
    }
    case JN_COND:
        CHK(x = eval(c, s, n->a));
        if (jv_truthy(x))
            return eval(c, s, n->b);
        return n->c ? eval(c, s, n->c) : nn(c, jv_undef(c->a));
    case JN_LIST:
    case JN_TUPLE: {
        jv_t *l = jv_list(c->a);
        if (!l)
            return oom(c);
        l->is_tuple = n->kind == JN_TUPLE;
        for (size_t i = 0; i < n->list.n; i++) {
            CHK(x = eval(c, s, n->list.v[i]));
            if (!jv_list_push(c->a, l, x))
                return oom(c);
        }
        return l;
    }
    case JN_DICT: {
        jv_t *d = jv_dict(c->a, JV_DICT);
        if (!d)
            return oom(c);
        for (size_t i = 0; i < n->list.n; i++) {
            CHK(x = eval(c, s, n->list.v[i]));
            CHK(y = eval(c, s, n->list2.v[i]));
            if (!jv_is_hashable(x)) {
                jctx_fail(c, "unhashable type: '%s'", jv_type_name(x));
                return NULL;
            }
            if (!jv_dict_setv(c->a, d, x, y))
                return oom(c);
        }
        return d;
    }
    default:
        jctx_fail(c, "internal error: statement used as expression");
        return NULL;
    }
}

/* ---- statements ------------------------------------------------------- */

static bool emit(jctx_t *c, const char *s, size_t n)
{
    if (!jbuf_put(c->out, s, n))
        return jctx_fail(c, "rendered output exceeds the limit of %zu bytes", c->lim->max_output);
    return true;
}

static jres_t render_to_string(jctx_t *c, jscope_t *s, const jnodes_t *body, jv_t **out)
{
    jbuf_t buf = {0};
    buf.limit = c->lim->max_output;
    jbuf_t *saved = c->out;
    c->out = &buf;
    jres_t r = exec_body(c, s, body);
    c->out = saved;
    if (r == JR_OK && !(*out = jv_str(c->a, buf.buf ? buf.buf : "", buf.len))) {
        oom(c);
        r = JR_ERR;
    }
    free(buf.buf);
    return r;
}

static bool bind_targets(jctx_t *c, jscope_t *s, const jnode_t *n, jv_t *item)
{
    if (n->nnames == 1)
        return jv_dict_set(c->a, s->vars, n->names[0], strlen(n->names[0]), item) || oom(c);
    jv_t *seq = item->kind == JV_LIST ? item : NULL;
    if (item->kind == JV_STR || item->kind == JV_DICT)
        seq = jctx_iterate(c, item);
    if (!seq)
        return jctx_fail(c, "cannot unpack non-iterable %s object", jv_type_name(item));
    if (seq->u.list->n != n->nnames)
        return jctx_fail(c, "cannot unpack %zu values into %zu loop variables", seq->u.list->n, n->nnames);
    for (size_t i = 0; i < n->nnames; i++)
        if (!jv_dict_set(c->a, s->vars, n->names[i], strlen(n->names[i]), seq->u.list->items[i]))
            return oom(c);
    return true;
}

static jres_t exec_for(jctx_t *c, jscope_t *s, const jnode_t *n)
{
    jv_t *it = eval(c, s, n->a);
    if (!it || !(it = jctx_iterate(c, it)))
        return JR_ERR;
    jlist_t *src = it->u.list;
    jv_t **items = src->items;
    size_t count = src->n;
    if (n->b) { /* loop filter: `for x in y if cond` */
        jv_t **kept = jarena_alloc(c->a, (count + 1) * sizeof *kept);
        if (!kept)
            return oom(c), JR_ERR;
        size_t k = 0;
        for (size_t i = 0; i < count; i++) {
            jscope_t *fs = scope_new(c, s);
            if (!fs || !jctx_step(c))
                return c->failed ? JR_ERR : (oom(c), JR_ERR);
            if (!bind_targets(c, fs, n, items[i]))
                return JR_ERR;
            jv_t *cond = eval(c, fs, n->b);
            if (!cond)
                return JR_ERR;
            if (jv_truthy(cond))
                kept[k++] = items[i];
        }
        items = kept;
        count = k;
    }
    if (count == 0)
        return exec_body(c, s, &n->list2);
    for (size_t i = 0; i < count; i++) {
        if (!jctx_step(c))
            return JR_ERR;
        jscope_t *ls = scope_new(c, s);
        jv_t *loop = jv_dict(c->a, JV_DICT);
        if (!ls || !loop)
            return oom(c), JR_ERR;
        jarena_t *a = c->a;
        bool ok = jv_dict_set(a, loop, "index", 5, jv_int(a, (int64_t)i + 1)) &&
                  jv_dict_set(a, loop, "index0", 6, jv_int(a, (int64_t)i)) &&
                  jv_dict_set(a, loop, "revindex", 8, jv_int(a, (int64_t)(count - i))) &&
                  jv_dict_set(a, loop, "revindex0", 9, jv_int(a, (int64_t)(count - i - 1))) &&
                  jv_dict_set(a, loop, "first", 5, jv_bool(a, i == 0)) &&
                  jv_dict_set(a, loop, "last", 4, jv_bool(a, i + 1 == count)) &&
                  jv_dict_set(a, loop, "length", 6, jv_int(a, (int64_t)count)) &&
                  jv_dict_set(a, loop, "depth", 5, jv_int(a, 1)) &&
                  jv_dict_set(a, loop, "depth0", 6, jv_int(a, 0)) &&
                  (i == 0 || jv_dict_set(a, loop, "previtem", 8, items[i - 1])) &&
                  (i + 1 == count || jv_dict_set(a, loop, "nextitem", 8, items[i + 1])) &&
                  jv_dict_set(a, loop, "cycle", 5, method_value(c, loop, "cycle")) &&
                  jv_dict_set(a, ls->vars, "loop", 4, loop);
        if (!ok)
            return oom(c), JR_ERR;
        if (!bind_targets(c, ls, n, items[i]))
            return JR_ERR;
        jres_t r = exec_body(c, ls, &n->list);
        if (r == JR_ERR)
            return r;
        if (r == JR_BREAK)
            break;
    }
    return JR_OK;
}

static jres_t exec_stmt(jctx_t *c, jscope_t *s, const jnode_t *n)
{
    jv_t *v;
    switch (n->kind) {
    case JN_OUTPUT: return emit(c, n->s, n->slen) ? JR_OK : JR_ERR;
    case JN_PRINT: {
        if (!(v = eval(c, s, n->a)))
            return JR_ERR;
        if (v->kind == JV_STR)
            return emit(c, v->u.str.s, v->u.str.n) ? JR_OK : JR_ERR;
        jbuf_t b = {0};
        b.limit = c->lim->max_output;
        jv_to_str(&b, v);
        bool ok = !b.overflow && emit(c, b.buf ? b.buf : "", b.len);
        free(b.buf);
        if (!ok)
            jctx_fail(c, "rendered output exceeds the limit of %zu bytes", c->lim->max_output);
        return ok ? JR_OK : JR_ERR;
    }
    case JN_IF:
        if (!(v = eval(c, s, n->a)))
            return JR_ERR;
        return exec_body(c, s, jv_truthy(v) ? &n->list : &n->list2);
    case JN_FOR: return exec_for(c, s, n);
    case JN_SET:
        if (!(v = eval(c, s, n->a)))
            return JR_ERR;
        if (n->nnames > 1)
            return bind_targets(c, s, n, v) ? JR_OK : JR_ERR;
        return jv_dict_set(c->a, s->vars, n->s, n->slen, v) ? JR_OK : (oom(c), JR_ERR);
    case JN_SET_ATTR: {
        jv_t *ns = lookup(c, s, n->s, n->slen);
        if (!ns)
            return oom(c), JR_ERR;
        if (ns->kind != JV_NS) {
            jctx_fail(c, "cannot assign attribute on non-namespace object");
            return JR_ERR;
        }
        if (!(v = eval(c, s, n->a)))
            return JR_ERR;
        return jv_dict_set(c->a, ns, n->names[0], strlen(n->names[0]), v) ? JR_OK : (oom(c), JR_ERR);
    }
    case JN_SET_BLOCK:
    case JN_FILTER_BLOCK: {
        jscope_t *bs = scope_new(c, s); /* the block body is a scope of its own */
        if (!bs)
            return oom(c), JR_ERR;
        jres_t r = render_to_string(c, bs, &n->list, &v);
        if (r != JR_OK)
            return r;
        if (n->a && !(v = eval_filter(c, s, n->a, v)))
            return JR_ERR;
        if (n->kind == JN_FILTER_BLOCK) {
            if (!(v = jv_stringify(c->a, v, c->lim->max_output)))
                return oom(c), JR_ERR;
            return emit(c, v->u.str.s, v->u.str.n) ? JR_OK : JR_ERR;
        }
        return jv_dict_set(c->a, s->vars, n->s, n->slen, v) ? JR_OK : (oom(c), JR_ERR);
    }
    case JN_MACRO:
        if (!(v = jv_new(c->a, JV_MACRO)))
            return oom(c), JR_ERR;
        v->u.macro.node = n;
        v->u.macro.scope = s;
        return jv_dict_set(c->a, s->vars, n->s, n->slen, v) ? JR_OK : (oom(c), JR_ERR);
    case JN_CALL_BLOCK: {
        jv_t *caller = jv_new(c->a, JV_MACRO);
        if (!caller)
            return oom(c), JR_ERR;
        caller->u.macro.node = n;
        caller->u.macro.scope = s;
        if (!(v = eval_call(c, s, n->a, caller)))
            return JR_ERR;
        if (!(v = jv_stringify(c->a, v, c->lim->max_output)))
            return oom(c), JR_ERR;
        return emit(c, v->u.str.s, v->u.str.n) ? JR_OK : JR_ERR;
    }
    case JN_BREAK: return JR_BREAK;
    case JN_CONTINUE: return JR_CONTINUE;
    case JN_BODY: return exec_body(c, s, &n->list);
    default:
        jctx_fail(c, "internal error: expression used as statement");
        return JR_ERR;
    }
}

static jres_t exec_body(jctx_t *c, jscope_t *s, const jnodes_t *body)
{
    for (size_t i = 0; i < body->n; i++) {
        jres_t r = exec_stmt(c, s, body->v[i]);
        if (r != JR_OK)
            return r;
        if (c->failed)
            return JR_ERR;
    }
    return JR_OK;
}

bool jinja_render(jarena_t *a, const jnode_t *body, jv_t *vars, const jrender_limits_t *lim, char **out,
                  size_t *out_len, char *err, size_t errn, bool *is_raise)
{
    jctx_t c = {0};
    c.a = a;
    c.lim = lim;
    c.err = err;
    c.errn = errn;
    c.context = vars;
    *is_raise = false;
    err[0] = 0;
    c.globals = jv_dict(a, JV_DICT);
    c.root = scope_new(&c, NULL);
    if (!c.globals || !c.root) {
        snprintf(err, errn, "template rendering ran out of memory");
        return false;
    }
    for (int f = 0; f < JF_COUNT; f++) {
        jv_t *fv = jv_new(a, JV_FUNC);
        if (!fv || !jv_dict_set(a, c.globals, jinja_func_names[f], strlen(jinja_func_names[f]), fv)) {
            snprintf(err, errn, "template rendering ran out of memory");
            return false;
        }
        fv->u.func = f;
    }
    jbuf_t buf = {0};
    buf.limit = lim->max_output;
    c.out = &buf;
    jres_t r = exec_body(&c, c.root, &body->list);
    if (r == JR_BREAK || r == JR_CONTINUE) {
        r = JR_ERR;
        jctx_fail(&c, "break/continue outside of a loop");
    }
    if (r != JR_OK || c.failed) {
        if (!c.failed)
            snprintf(err, errn, "template rendering failed");
        *is_raise = c.is_raise;
        free(buf.buf);
        return false;
    }
    *out = jarena_strndup(a, buf.buf ? buf.buf : "", buf.len);
    *out_len = buf.len;
    free(buf.buf);
    if (!*out) {
        snprintf(err, errn, "template rendering ran out of memory");
        return false;
    }
    return true;
}
