/* jinja_ops.c - Python semantics of the binary operators: arithmetic with
 * int/float promotion, floor division and modulo rounding toward -inf,
 * str/list concatenation and repetition, markupsafe escaping when a |safe
 * string meets a plain one, `%` string formatting, comparisons (chained by
 * the evaluator) and `in`. Results are bounded by the output limit. */
#include "chat/template/jinja.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static jv_t *oom(jctx_t *c)
{
    jctx_fail(c, "template rendering ran out of memory");
    return NULL;
}

static const char *undef_msg(const jv_t *v)
{
    return v->kind == JV_UNDEF && v->u.str.s ? v->u.str.s : "value is undefined";
}

#define CHK(x) do { if (!(x)) return NULL; } while (0)

static bool is_int(const jv_t *v) { return v->kind == JV_INT || v->kind == JV_BOOL; }
static bool is_num(const jv_t *v) { return is_int(v) || v->kind == JV_FLOAT; }
static int64_t ival(const jv_t *v) { return v->kind == JV_INT ? v->u.i : v->kind == JV_BOOL ? v->u.b : 0; }
static double fval(const jv_t *v) { return v->kind == JV_FLOAT ? v->u.f : (double)ival(v); }

static const char *op_sym(int op)
{
    static const char *const s[] = {"+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", "<=", ">", ">=", "in", "not in"};
    return s[op];
}

static jv_t *concat_str(jctx_t *c, const char *a, size_t an, const char *b, size_t bn)
{
    if (an + bn > jctx_limit(c)) {
        jctx_fail(c, "string too large (limit %zu bytes)", jctx_limit(c));
        return NULL;
    }
    char *p = jarena_alloc(jctx_arena(c), an + bn + 1);
    if (!p)
        return oom(c);
    memcpy(p, a, an);
    memcpy(p + an, b, bn);
    p[an + bn] = 0;
    return jv_str_own(jctx_arena(c), p, an + bn);
}

static jv_t *repeat(jctx_t *c, jv_t *seq, int64_t k)
{
    if (k < 0)
        k = 0;
    if (seq->kind == JV_STR) {
        if (seq->u.str.n && (uint64_t)k > jctx_limit(c) / seq->u.str.n) {
            jctx_fail(c, "string too large (limit %zu bytes)", jctx_limit(c));
            return NULL;
        }
        size_t n = seq->u.str.n * (size_t)k;
        char *p = jarena_alloc(jctx_arena(c), n + 1);
        if (!p)
            return oom(c);
        for (int64_t i = 0; i < k; i++)
            memcpy(p + (size_t)i * seq->u.str.n, seq->u.str.s, seq->u.str.n);
        return jv_str_own(jctx_arena(c), p, n);
    }
    jv_t *r = jv_list(jctx_arena(c));
    CHK(r);
    if (seq->u.list->n && (uint64_t)k > 1000000 / seq->u.list->n) {
        jctx_fail(c, "list too large");
        return NULL;
    }
    for (int64_t i = 0; i < k; i++)
        for (size_t j = 0; j < seq->u.list->n; j++)
            if (!jv_list_push(jctx_arena(c), r, seq->u.list->items[j]))
                return oom(c);
    return r;
}

/* A real list or tuple (not a generator, dict view or range). */
static bool plain_list(const jv_t *v)
{
    return v->kind == JV_LIST && !v->is_gen && v->u.list->view == JVIEW_NONE;
}

jv_t *jinja_binop(jctx_t *c, int op, jv_t *x, jv_t *y)
{
    if (op == JOP_CONCAT) {
        jv_t *a = jv_stringify(jctx_arena(c), x, jctx_limit(c)), *b = jv_stringify(jctx_arena(c), y, jctx_limit(c));
        if (!a || !b)
            return oom(c);
        return concat_str(c, a->u.str.s, a->u.str.n, b->u.str.s, b->u.str.n);
    }
    if (op == JOP_MOD && x->kind == JV_STR)
        return jinja_percent_format(c, x, y);
    if (x->kind == JV_UNDEF || y->kind == JV_UNDEF) {
        jctx_fail(c, "%s", undef_msg(x->kind == JV_UNDEF ? x : y));
        return NULL;
    }
    if (is_num(x) && is_num(y)) {
        bool fl = x->kind == JV_FLOAT || y->kind == JV_FLOAT;
        int64_t a = ival(x), b = ival(y), r;
        double fa = fval(x), fb = fval(y);
        switch (op) {
        case JOP_ADD:
            if (fl) return jv_float(jctx_arena(c), fa + fb);
            if (__builtin_add_overflow(a, b, &r)) break;
            return jv_int(jctx_arena(c), r);
        case JOP_SUB:
            if (fl) return jv_float(jctx_arena(c), fa - fb);
            if (__builtin_sub_overflow(a, b, &r)) break;
            return jv_int(jctx_arena(c), r);
        case JOP_MUL:
            if (fl) return jv_float(jctx_arena(c), fa * fb);
            if (__builtin_mul_overflow(a, b, &r)) break;
            return jv_int(jctx_arena(c), r);
        case JOP_DIV:
            if (fb == 0.0) break;
            return jv_float(jctx_arena(c), fa / fb);
        case JOP_FLOORDIV:
            if (fl) {
                if (fb == 0.0) break;
                return jv_float(jctx_arena(c), floor(fa / fb));
            }
            if (b == 0 || (a == INT64_MIN && b == -1)) break;
            r = a / b;
            if ((a % b != 0) && ((a < 0) != (b < 0)))
                r--;
            return jv_int(jctx_arena(c), r);
        case JOP_MOD:
            if (fl) {
                if (fb == 0.0) break;
                double m = fmod(fa, fb);
                if (m != 0 && ((m < 0) != (fb < 0)))
                    m += fb;
                return jv_float(jctx_arena(c), m);
            }
            if (b == 0 || (a == INT64_MIN && b == -1)) break;
            r = a % b;
            if (r != 0 && ((r < 0) != (b < 0)))
                r += b;
            return jv_int(jctx_arena(c), r);
        case JOP_POW:
            if (fl || b < 0) return jv_float(jctx_arena(c), pow(fa, fb));
            {
                int64_t acc = 1;
                for (int64_t i = 0; i < b; i++)
                    if (__builtin_mul_overflow(acc, a, &acc)) {
                        jctx_fail(c, "integer overflow");
                        return NULL;
                    }
                return jv_int(jctx_arena(c), acc);
            }
        }
        if (op == JOP_DIV || op == JOP_FLOORDIV || op == JOP_MOD)
            jctx_fail(c, "division by zero");
        else
            jctx_fail(c, "integer overflow");
        return NULL;
    }
    if (op == JOP_ADD) {
        if (x->kind == JV_STR && y->kind == JV_STR) {
            if (!x->is_safe && !y->is_safe)
                return concat_str(c, x->u.str.s, x->u.str.n, y->u.str.s, y->u.str.n);
            /* markupsafe: Markup + str escapes the plain operand */
            CHK(x = jinja_escape(c, x));
            CHK(y = jinja_escape(c, y));
            jv_t *r = concat_str(c, x->u.str.s, x->u.str.n, y->u.str.s, y->u.str.n);
            if (r)
                r->is_safe = true;
            return r;
        }
        if (plain_list(x) && plain_list(y) && x->is_tuple == y->is_tuple) {
            jv_t *r = jv_list(jctx_arena(c));
            CHK(r);
            r->is_tuple = x->is_tuple;
            for (size_t i = 0; i < x->u.list->n; i++)
                if (!jv_list_push(jctx_arena(c), r, x->u.list->items[i]))
                    return oom(c);
            for (size_t i = 0; i < y->u.list->n; i++)
                if (!jv_list_push(jctx_arena(c), r, y->u.list->items[i]))
                    return oom(c);
            return r;
        }
        if (x->kind == JV_STR) {
            jctx_fail(c, "can only concatenate str (not \"%s\") to str", jv_type_name(y));
            return NULL;
        }
        if (plain_list(x)) {
            jctx_fail(c, "can only concatenate %s (not \"%s\") to %s", jv_type_name(x), jv_type_name(y), jv_type_name(x));
            return NULL;
        }
    }
    if (op == JOP_MUL) {
        if ((x->kind == JV_STR || plain_list(x)) && is_int(y))
            return repeat(c, x, ival(y));
        if ((y->kind == JV_STR || plain_list(y)) && is_int(x))
            return repeat(c, y, ival(x));
    }
    jctx_fail(c, "unsupported operand type(s) for %s: '%s' and '%s'", op_sym(op), jv_type_name(x), jv_type_name(y));
    return NULL;
}

/* Python `x in container`: 1/0, -1 on error. */
static int contains(jctx_t *c, jv_t *container, jv_t *x)
{
    if (container->kind == JV_LIST && !jctx_charge(c, container->u.list->n))
        return -1;
    if (container->kind == JV_STR && !jctx_charge(c, container->u.str.n / 8))
        return -1;
    switch (container->kind) {
    case JV_STR:
        if (x->kind != JV_STR) {
            jctx_fail(c, "'in <string>' requires string as left operand, not %s", jv_type_name(x));
            return -1;
        }
        if (x->u.str.n == 0)
            return 1;
        if (x->u.str.n > container->u.str.n)
            return 0;
        for (size_t i = 0; i + x->u.str.n <= container->u.str.n; i++)
            if (!memcmp(container->u.str.s + i, x->u.str.s, x->u.str.n))
                return 1;
        return 0;
    case JV_LIST:
        if (container->u.list->gen_error) {
            jctx_fail(c, "%s", container->u.list->gen_error);
            return -1;
        }
        for (size_t i = 0; i < container->u.list->n; i++)
            if (jv_equal(container->u.list->items[i], x))
                return 1;
        return 0;
    case JV_DICT:
        if (!jv_is_hashable(x)) {
            jctx_fail(c, "unhashable type: '%s'", jv_type_name(x));
            return -1;
        }
        return jv_dict_getv(container, x) != NULL;
    case JV_UNDEF: return 0;
    default:
        jctx_fail(c, "argument of type '%s' is not iterable", jv_type_name(container));
        return -1;
    }
}

int jinja_compare_op(jctx_t *c, int op, jv_t *x, jv_t *y)
{
    int r;
    switch (op) {
    case JOP_EQ: return jv_equal(x, y);
    case JOP_NE: return !jv_equal(x, y);
    case JOP_IN: return contains(c, y, x);
    case JOP_NOTIN: {
        int k = contains(c, y, x);
        return k < 0 ? -1 : !k;
    }
    default:
        if (x->kind == JV_UNDEF || y->kind == JV_UNDEF) {
            jctx_fail(c, "%s", undef_msg(x->kind == JV_UNDEF ? x : y));
            return -1;
        }
        if (jv_compare(x, y, &r) < 0) {
            jctx_fail(c, "'%s' not supported between instances of '%s' and '%s'", op_sym(op),
                      jv_type_name(x), jv_type_name(y));
            return -1;
        }
        switch (op) {
        case JOP_LT: return r < 0;
        case JOP_LE: return r <= 0;
        case JOP_GT: return r > 0;
        default: return r >= 0;
        }
    }
}

