/* jinja_tests.c - the Jinja2 tests (`x is defined`, `is string`,
 * `is equalto 2`, `is odd`...) with Jinja2 3.1's definitions: `iterable`
 * holds for strings, lists, dicts and undefined; `number` includes booleans;
 * `integer` excludes them; odd/even accept floats like Python's %. */
#include "chat/template/jinja.h"

#include <math.h>
#include <string.h>

static bool as_int(const jv_t *v, int64_t *o)
{
    if (v->kind == JV_INT) { *o = v->u.i; return true; }
    if (v->kind == JV_BOOL) { *o = v->u.b; return true; }
    return false;
}

int jinja_test(jctx_t *c, const char *name, jv_t *v, jv_t **args, size_t nargs)
{
    jv_kind_t k = v->kind;
    int64_t iv;
    if (!strcmp(name, "defined")) return k != JV_UNDEF;
    if (!strcmp(name, "undefined")) return k == JV_UNDEF;
    if (!strcmp(name, "none")) return k == JV_NONE;
    if (!strcmp(name, "string")) return k == JV_STR;
    if (!strcmp(name, "mapping")) return k == JV_DICT;
    if (!strcmp(name, "iterable")) return jv_is_iterable(v);
    if (!strcmp(name, "sequence"))
        return k == JV_STR || (k == JV_LIST && !v->is_gen) || k == JV_DICT || k == JV_UNDEF;
    if (!strcmp(name, "number")) return k == JV_INT || k == JV_FLOAT || k == JV_BOOL;
    if (!strcmp(name, "integer")) return k == JV_INT;
    if (!strcmp(name, "float")) return k == JV_FLOAT;
    if (!strcmp(name, "boolean")) return k == JV_BOOL;
    if (!strcmp(name, "true")) return k == JV_BOOL && v->u.b;
    if (!strcmp(name, "false")) return k == JV_BOOL && !v->u.b;
    if (!strcmp(name, "callable")) return k == JV_MACRO || k == JV_FUNC || k == JV_METHOD;
    if ((!strcmp(name, "odd") || !strcmp(name, "even")) && k == JV_FLOAT) {
        double m = fmod(v->u.f, 2.0);
        if (m < 0)
            m += 2.0;
        return name[0] == 'o' ? m == 1.0 : m == 0.0;
    }
    if (!strcmp(name, "odd") || !strcmp(name, "even")) {
        if (!as_int(v, &iv)) {
            jctx_fail(c, "test '%s' needs an integer", name);
            return -1;
        }
        int64_t m = ((iv % 2) + 2) % 2;
        return name[0] == 'o' ? m == 1 : m == 0;
    }
    if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
        if (k != JV_STR)
            return 0;
        jv_t *x = jinja_str_case(c, v, name[0] == 'l' ? 0 : 1);
        return x ? jv_equal(x, v) : -1;
    }
    if (nargs < 1) {
        jctx_fail(c, "No test named '%s' (or missing argument).", name);
        return -1;
    }
    jv_t *o = args[0];
    if (!strcmp(name, "equalto") || !strcmp(name, "eq") || !strcmp(name, "==") || !strcmp(name, "sameas"))
        return jv_equal(v, o);
    if (!strcmp(name, "ne") || !strcmp(name, "!="))
        return !jv_equal(v, o);
    if (!strcmp(name, "in")) {
        if (o->kind == JV_LIST) {
            for (size_t i = 0; i < o->u.list->n; i++)
                if (jv_equal(o->u.list->items[i], v))
                    return 1;
            return 0;
        }
        if (o->kind == JV_DICT)
            return jv_dict_getv(o, v) != NULL;
        if (o->kind == JV_STR && v->kind == JV_STR) {
            if (v->u.str.n > o->u.str.n)
                return 0;
            for (size_t i = 0; i + v->u.str.n <= o->u.str.n; i++)
                if (!memcmp(o->u.str.s + i, v->u.str.s, v->u.str.n))
                    return 1;
            return 0;
        }
        jctx_fail(c, "test 'in' needs a container");
        return -1;
    }
    if (!strcmp(name, "divisibleby")) {
        int64_t d;
        if (!as_int(v, &iv) || !as_int(o, &d) || d == 0) {
            jctx_fail(c, "test 'divisibleby' needs non-zero integers");
            return -1;
        }
        return iv % d == 0;
    }
    int r;
    const char *ops[] = {"lt", "<", "le", "<=", "gt", ">", "ge", ">=", "lessthan", "greaterthan"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(name, ops[i])) {
            if (jv_compare(v, o, &r) < 0) {
                jctx_fail(c, "test '%s': values are not comparable", name);
                return -1;
            }
            const char *op = ops[i & ~(size_t)1];
            if (i >= 8)
                op = i == 8 ? "lt" : "gt";
            if (!strcmp(op, "lt")) return r < 0;
            if (!strcmp(op, "le")) return r <= 0;
            if (!strcmp(op, "gt")) return r > 0;
            return r >= 0;
        }
    jctx_fail(c, "No test named '%s'.", name);
    return -1;
}
