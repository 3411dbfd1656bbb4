/* schema_compile.c - JSON Schema -> expression rules (see schema.h).
 *
 * The unit of compilation is a conjunction: a list of schema objects that
 * all apply to the same value (a schema, the targets of its $ref, its allOf
 * members, the alternative chosen from an anyOf). Each distinct conjunction
 * becomes one rule, memoized, so recursive schemas terminate. Compiling a
 * conjunction: expand $ref and allOf into the list; distribute the first
 * anyOf/oneOf (one alternative per branch, each a conjunction of its own);
 * with no disjunction left, merge the keywords of the list (types
 * intersected, bounds tightened, properties merged per name, patterns
 * collected) and emit the grammar of each remaining type.
 */
#include "grammar/schema/schema_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_NULL = 1, T_BOOL = 2, T_OBJ = 4, T_ARR = 8, T_NUM = 16, T_INT = 32, T_STR = 64, T_ALL = 127 };

#define MAX_PATTERN_KEYS 6

/* ---- context helpers ------------------------------------------------------------ */

bool sc_fail(sc_t *c, lf_code_t code, const char *fmt, ...)
{
    if (!c->failed) {
        c->failed = true;
        char buf[480];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        lf_err_set(c->err, code, "%s", buf);
    }
    return false;
}

bool sc_oom(sc_t *c)
{
    if (c->a->over)
        return sc_fail(c, LF_ERR_UNSUPPORTED, "schema too large: the compile memory limit was hit");
    return sc_fail(c, LF_ERR_NOMEM, "out of memory compiling the schema");
}

bool sc_unsupported(sc_t *c, const char *keyword, const char *why)
{
    if (!c->o->strict)
        return true;
    return sc_fail(c, LF_ERR_UNSUPPORTED, "'%s': %s cannot be enforced by the grammar engine", keyword, why);
}

int32_t sc_new_rule(sc_t *c)
{
    int32_t r = gr_rules_add(c->R);
    if (r < 0)
        sc_oom(c);
    return r;
}

bool sc_keep_dfa(sc_t *c, gr_dfa_t *d)
{
    return gr_rules_keep_dfa(c->R, d) || sc_oom(c);
}

json_object *sc_get(const json_object *o, const char *k)
{
    json_object *v = NULL;
    if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, k, &v))
        return NULL;
    return v;
}

static bool own(sc_t *c, json_object *o)
{
    if (!o)
        return sc_oom(c);
    if (c->n_owned == c->cap_owned) {
        int32_t cap = c->cap_owned ? c->cap_owned * 2 : 32;
        json_object **v = realloc(c->owned, (size_t)cap * sizeof *v);
        if (!v) {
            json_object_put(o);
            return sc_oom(c);
        }
        c->owned = v;
        c->cap_owned = cap;
    }
    c->owned[c->n_owned++] = o;
    return true;
}

static gr_ex_t *lit(sc_t *c, const char *s)
{
    return gr_ex_str(c->a, s);
}

/* ---- literals ---------------------------------------------------------------------- */

static const char *to_json(const json_object *v)
{
    return json_object_to_json_string_ext((json_object *)v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* v's compact JSON text as the grammar writes it: with escape_lt, every
 * '<' (only ever inside a string) as \u003c. In the arena a; NULL when
 * out of memory. */
static const char *json_text(sc_t *c, gr_arena_t *a, const json_object *v)
{
    const char *t = to_json(v);
    if (!c->o->escape_lt || !strchr(t, '<'))
        return t;
    size_t n = strlen(t), k = 0;
    char *o = gr_arena_alloc(a, n * 6 + 1);
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (t[i] == '<') {
            memcpy(o + k, "\\u003c", 6);
            k += 6;
        } else {
            o[k++] = t[i];
        }
    }
    o[k] = 0;
    return o;
}

static gr_ex_t *sep(sc_t *c, const char *p)
{
    return gr_ex_seq3(c->a, c->ws, lit(c, p), c->ws);
}

static gr_ex_t *key_lit(sc_t *c, const char *name)
{
    json_object *ks = json_object_new_string(name);
    const char *t = ks ? json_text(c, c->a, ks) : NULL;
    gr_ex_t *e = t ? lit(c, t) : NULL;
    json_object_put(ks);
    return e;
}

/* A member's key, its ':' and the whitespace around it. */
static gr_ex_t *key_head(sc_t *c, const char *name)
{
    if (c->o->str_delim)
        return sc_dstr_key_head(c, name, strlen(name));
    return gr_ex_seq2(c->a, key_lit(c, name), sep(c, ":"));
}

gr_ex_t *sc_literal(sc_t *c, const json_object *v)
{
    gr_arena_t *a = c->a;
    if (json_object_is_type(v, json_type_array)) {
        size_t n = json_object_array_length(v);
        gr_exlist_t l = {0};
        gr_exlist_push(a, &l, lit(c, "["));
        gr_exlist_push(a, &l, c->ws);
        for (size_t i = 0; i < n; i++) {
            if (i) {
                gr_exlist_push(a, &l, c->ws);
                gr_exlist_push(a, &l, lit(c, ","));
                gr_exlist_push(a, &l, c->ws);
            }
            gr_exlist_push(a, &l, sc_literal(c, json_object_array_get_idx(v, i)));
        }
        gr_exlist_push(a, &l, c->ws);
        gr_exlist_push(a, &l, lit(c, "]"));
        return l.fail ? NULL : gr_ex_seq(a, l.v, l.n);
    }
    if (json_object_is_type(v, json_type_object)) {
        gr_exlist_t l = {0};
        bool first = true;
        gr_exlist_push(a, &l, lit(c, "{"));
        gr_exlist_push(a, &l, c->ws);
        json_object_object_foreach((json_object *)v, k, val) {
            if (!first) {
                gr_exlist_push(a, &l, c->ws);
                gr_exlist_push(a, &l, lit(c, ","));
                gr_exlist_push(a, &l, c->ws);
            }
            first = false;
            gr_exlist_push(a, &l, key_head(c, k));
            gr_exlist_push(a, &l, sc_literal(c, val));
        }
        gr_exlist_push(a, &l, c->ws);
        gr_exlist_push(a, &l, lit(c, "}"));
        return l.fail ? NULL : gr_ex_seq(a, l.v, l.n);
    }
    if (c->o->str_delim && json_object_is_type(v, json_type_string))
        return sc_dstr_value(c, json_object_get_string((json_object *)v), (size_t)json_object_get_string_len(v));
    const char *t = json_text(c, c->a, v);
    return t ? lit(c, t) : NULL;
}

/* ---- any JSON value ----------------------------------------------------------------- */

static int32_t any_rule(sc_t *c)
{
    if (c->any_rule >= 0)
        return c->any_rule;
    gr_arena_t *a = c->a;
    int32_t r = sc_new_rule(c);
    if (r < 0)
        return -1;
    c->any_rule = r;
    gr_ex_t *val = gr_ex_ref(a, r);
    sc_str_t none = {.max_len = -1};
    gr_ex_t *str = c->o->str_delim ? sc_dstr_expr(c, &none) : sc_jstr(c, a, NULL, 0, -1);
    gr_ex_t *head = c->o->str_delim ? sc_dstr_any_key_head(c) : gr_ex_seq2(a, str, sep(c, ":"));
    sc_num_t nn = {0};
    gr_ex_t *num = sc_number_expr(c, &nn);
    gr_ex_t *member = gr_ex_seq2(a, head, val);
    gr_ex_t *members = gr_ex_seq2(a, member, gr_ex_rep(a, gr_ex_seq2(a, sep(c, ","), member), 0, -1));
    gr_ex_t *obj = gr_ex_seq(a, (gr_ex_t *[]){lit(c, "{"), c->ws, gr_ex_opt(a, members), c->ws, lit(c, "}")}, 5);
    gr_ex_t *elems = gr_ex_seq2(a, val, gr_ex_rep(a, gr_ex_seq2(a, sep(c, ","), val), 0, -1));
    gr_ex_t *arr = gr_ex_seq(a, (gr_ex_t *[]){lit(c, "["), c->ws, gr_ex_opt(a, elems), c->ws, lit(c, "]")}, 5);
    gr_ex_t *alts[] = {obj, arr, str, num, lit(c, "true"), lit(c, "false"), lit(c, "null")};
    c->R->v[r] = gr_ex_alt(a, alts, 7);
    if (!c->R->v[r]) {
        sc_oom(c);
        return -1;
    }
    return r;
}

/* ---- conjunction lists ----------------------------------------------------------------- */

typedef struct {
    sc_ent_t v[SC_MAX_CONJ];
    int32_t n;
    bool is_false;
} conj_t;

static bool conj_push(sc_t *c, conj_t *l, const json_object *s, uint8_t skip, int depth)
{
    if (c->failed)
        return false;
    if (depth > 100)
        return sc_fail(c, LF_ERR_UNSUPPORTED, "schema too deeply nested through $ref/allOf (limit 100)");
    if (json_object_is_type(s, json_type_boolean)) {
        if (!json_object_get_boolean(s))
            l->is_false = true;
        return true;
    }
    if (!json_object_is_type(s, json_type_object))
        return sc_fail(c, LF_ERR_INVALID, "a schema must be an object or a boolean, got %.100s", to_json(s));
    for (int32_t i = 0; i < l->n; i++)
        if (l->v[i].s == s) {
            l->v[i].skip |= skip;
            return true;
        }
    if (l->n == SC_MAX_CONJ)
        return sc_fail(c, LF_ERR_UNSUPPORTED, "schema too complex: more than %d schemas apply to one value",
                       SC_MAX_CONJ);
    json_object *ref = sc_get(s, "$ref");
    if (ref && json_object_is_type(ref, json_type_string) && !(skip & SK_REF)) {
        const json_object *t = sc_ref_resolve(c, s, json_object_get_string(ref));
        if (!t)
            return false;
        if (c->draft <= 7) /* siblings of $ref are ignored before 2019-09 */
            return conj_push(c, l, t, 0, depth + 1);
        skip |= SK_REF;
        int32_t at = l->n;
        l->v[l->n++] = (sc_ent_t){s, skip};
        if (!conj_push(c, l, t, 0, depth + 1))
            return false;
        (void)at;
    } else {
        l->v[l->n++] = (sc_ent_t){s, skip | SK_REF};
    }
    json_object *all = sc_get(s, "allOf");
    if (all && json_object_is_type(all, json_type_array))
        for (size_t i = 0; i < json_object_array_length(all); i++)
            if (!conj_push(c, l, json_object_array_get_idx(all, i), 0, depth + 1))
                return false;
    return true;
}

static int cmp_ent(const void *a, const void *b)
{
    const sc_ent_t *x = a, *y = b;
    if (x->s != y->s)
        return (uintptr_t)x->s < (uintptr_t)y->s ? -1 : 1;
    return (x->skip > y->skip) - (x->skip < y->skip);
}

static gr_ex_t *compile_flat(sc_t *c, conj_t *l);
static gr_ex_t *compile_list(sc_t *c, conj_t *l, int depth);

/* Rule for a conjunction, memoized on its entries as a set (sorted by
 * address). The list itself keeps its document order, which the output
 * follows (the order of an object's properties): sorting the list in place
 * made that order, and so which instances pass, depend on where the heap
 * put the schema's nodes. */
static gr_ex_t *conj_rule(sc_t *c, conj_t *l, int depth)
{
    if (c->failed)
        return NULL;
    if (l->is_false)
        return gr_ex_none(c->a);
    if (l->n == 0) {
        int32_t r = any_rule(c);
        return r < 0 ? NULL : gr_ex_ref(c->a, r);
    }
    sc_ent_t key[SC_MAX_CONJ];
    memcpy(key, l->v, (size_t)l->n * sizeof *key);
    qsort(key, (size_t)l->n, sizeof *key, cmp_ent);
    for (int32_t i = 0; i < c->n_memo; i++)
        if (c->memo[i].n == l->n && !memcmp(c->memo[i].ents, key, (size_t)l->n * sizeof *key))
            return gr_ex_ref(c->a, c->memo[i].rule);
    if (++c->n_nodes > SC_MAX_NODES) {
        sc_fail(c, LF_ERR_UNSUPPORTED, "schema too complex: more than %d distinct subschemas to compile",
                SC_MAX_NODES);
        return NULL;
    }
    if ((c->n_nodes & 63) == 0 && c->o->lim && c->o->lim->deadline_ns && gr_now_ns() > c->o->lim->deadline_ns) {
        sc_fail(c, LF_ERR_UNSUPPORTED, "schema too complex: the compile time limit was hit");
        return NULL;
    }
    int32_t r = sc_new_rule(c);
    if (r < 0)
        return NULL;
    if (c->n_memo == c->cap_memo) {
        int32_t cap = c->cap_memo ? c->cap_memo * 2 : 64;
        sc_memo_t *v = realloc(c->memo, (size_t)cap * sizeof *v);
        if (!v) {
            sc_oom(c);
            return NULL;
        }
        c->memo = v;
        c->cap_memo = cap;
    }
    sc_ent_t *copy = gr_arena_alloc(c->a, (size_t)l->n * sizeof *copy);
    if (!copy) {
        sc_oom(c);
        return NULL;
    }
    memcpy(copy, key, (size_t)l->n * sizeof *copy);
    c->memo[c->n_memo++] = (sc_memo_t){copy, l->n, r};
    conj_t work = *l;
    gr_ex_t *body = compile_list(c, &work, depth);
    if (!body)
        return NULL;
    c->R->v[r] = body;
    return gr_ex_ref(c->a, r);
}

/* A conjunction of `base` plus the schemas `add` (each expanded). */
static gr_ex_t *conj_of(sc_t *c, const conj_t *base, const json_object *const *add, int32_t n_add, int depth)
{
    conj_t l = base ? *base : (conj_t){.n = 0};
    for (int32_t i = 0; i < n_add; i++)
        if (!conj_push(c, &l, add[i], 0, 0))
            return NULL;
    return conj_rule(c, &l, depth + 1);
}

/* ---- oneOf disjointness ------------------------------------------------------------------- */

typedef struct {
    unsigned types;
    const json_object *enum_vals; /* array, or NULL */
    const json_object *const_val;
    bool has_const;
    const json_object *props[64];  /* required property -> its schema (const/enum) */
    const char *names[64];
    int n_req;
    const json_object *closed;     /* additionalProperties false: the properties map */
    bool is_closed;
    const char *forbid[16];        /* not: {required: [x]} */
    int n_forbid;
    const json_object *self;       /* the alternative itself */
    const json_object *neg;        /* its `not`, if any */
} summ_t;

static unsigned type_mask(const json_object *t)
{
    static const struct {
        const char *n;
        unsigned m;
    } tm[] = {{"null", T_NULL}, {"boolean", T_BOOL}, {"object", T_OBJ}, {"array", T_ARR},
              {"number", T_NUM | T_INT}, {"integer", T_INT}, {"string", T_STR}};
    unsigned m = 0;
    if (json_object_is_type(t, json_type_string)) {
        for (size_t k = 0; k < sizeof tm / sizeof *tm; k++)
            if (!strcmp(json_object_get_string((json_object *)t), tm[k].n))
                m |= tm[k].m;
    } else if (json_object_is_type(t, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(t); i++)
            m |= type_mask(json_object_array_get_idx(t, i));
    }
    return m;
}

static void summarize(sc_t *c, const conj_t *base, const json_object *s, summ_t *o)
{
    conj_t l = base ? *base : (conj_t){.n = 0};
    memset(o, 0, sizeof *o);
    o->types = T_ALL;
    if (!conj_push(c, &l, s, 0, 0))
        return;
    for (int32_t i = 0; i < l.n; i++) {
        const json_object *x = l.v[i].s;
        json_object *t = sc_get(x, "type"), *e = sc_get(x, "enum"), *k;
        if (t)
            o->types &= type_mask(t) | (type_mask(t) & T_NUM ? T_INT : 0);
        if (e && json_object_is_type(e, json_type_array))
            o->enum_vals = e;
        if (sc_kw_ex(c, x, "const", &k)) {
            o->const_val = k;
            o->has_const = true;
        }
        json_object *nreq = sc_get(sc_get(x, "not"), "required");
        if (nreq && json_object_is_type(nreq, json_type_array) && json_object_array_length(nreq) == 1 &&
            o->n_forbid < 16 && json_object_is_type(json_object_array_get_idx(nreq, 0), json_type_string))
            o->forbid[o->n_forbid++] = json_object_get_string(json_object_array_get_idx(nreq, 0));
        json_object *req = sc_get(x, "required"), *props = sc_get(x, "properties"), *ap = sc_get(x, "additionalProperties");
        if (ap && json_object_is_type(ap, json_type_boolean) && !json_object_get_boolean(ap) && !sc_get(x, "patternProperties")) {
            o->is_closed = true;
            o->closed = props;
        }
        if (req && json_object_is_type(req, json_type_array))
            for (size_t r = 0; r < json_object_array_length(req) && o->n_req < 64; r++) {
                json_object *nm = json_object_array_get_idx(req, r);
                if (!json_object_is_type(nm, json_type_string))
                    continue;
                o->names[o->n_req] = json_object_get_string(nm);
                o->props[o->n_req++] = sc_get(props, json_object_get_string(nm));
            }
    }
    if (o->has_const)
        o->types &= json_object_is_type(o->const_val, json_type_null) ? T_NULL : T_ALL;
    o->self = s;
    o->neg = sc_get(s, "not");
}

static bool names_has(const char *const *v, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i], s))
            return true;
    return false;
}

/* Whether schema x contains y through allOf (or is it). */
static bool includes(const json_object *x, const json_object *y, int depth)
{
    if (x == y)
        return true;
    json_object *all = sc_get(x, "allOf");
    if (depth < 8 && all && json_object_is_type(all, json_type_array))
        for (size_t i = 0; i < json_object_array_length(all); i++)
            if (includes(json_object_array_get_idx(all, i), y, depth + 1))
                return true;
    return false;
}

/* Values a property schema allows, when it says (const / enum), following $ref. */
static bool prop_values(sc_t *c, const json_object *s, const json_object **vals, size_t *n, const json_object **one)
{
    for (int hop = 0; hop < 8 && s && json_object_is_type(s, json_type_object); hop++) {
        json_object *k;
        if (sc_kw_ex(c, s, "const", &k)) {
            *one = k;
            *vals = NULL;
            *n = 1;
            return true;
        }
        json_object *e = sc_get(s, "enum");
        if (e && json_object_is_type(e, json_type_array)) {
            *vals = e;
            *n = json_object_array_length(e);
            return true;
        }
        json_object *r = sc_get(s, "$ref");
        if (!r || !json_object_is_type(r, json_type_string))
            return false;
        s = sc_ref_resolve(c, s, json_object_get_string(r));
    }
    return false;
}

static const json_object *val_at(const json_object *arr, const json_object *one, size_t i)
{
    return arr ? json_object_array_get_idx(arr, i) : one;
}

static bool values_disjoint(const json_object *a, const json_object *a1, size_t na, const json_object *b,
                            const json_object *b1, size_t nb)
{
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++)
            if (sc_json_equal(val_at(a, a1, i), val_at(b, b1, j)))
                return false;
    return true;
}

static bool disjoint(sc_t *c, const summ_t *x, const summ_t *y)
{
    if (!(x->types & y->types))
        return true;
    if ((x->neg && includes(y->self, x->neg, 0)) || (y->neg && includes(x->self, y->neg, 0)))
        return true;
    for (int i = 0; i < x->n_req; i++)
        if (names_has(y->forbid, y->n_forbid, x->names[i]))
            return true;
    for (int j = 0; j < y->n_req; j++)
        if (names_has(x->forbid, x->n_forbid, y->names[j]))
            return true;
    /* literal sets */
    const json_object *xa = x->has_const ? NULL : x->enum_vals, *ya = y->has_const ? NULL : y->enum_vals;
    size_t xn = x->has_const ? 1 : xa ? json_object_array_length(xa) : 0;
    size_t yn = y->has_const ? 1 : ya ? json_object_array_length(ya) : 0;
    if ((x->has_const || xa) && (y->has_const || ya))
        return values_disjoint(xa, x->const_val, xn, ya, y->const_val, yn);
    /* objects told apart by a required property */
    if ((x->types & y->types) & ~(unsigned)T_OBJ)
        return false;
    for (int i = 0; i < x->n_req; i++) {
        for (int j = 0; j < y->n_req; j++) {
            if (strcmp(x->names[i], y->names[j]))
                continue;
            const json_object *va, *vb, *oa = NULL, *ob = NULL;
            size_t na, nb;
            if (prop_values(c, x->props[i], &va, &na, &oa) && prop_values(c, y->props[j], &vb, &nb, &ob) &&
                values_disjoint(va, oa, na, vb, ob, nb))
                return true;
        }
        if (y->is_closed && !sc_get(y->closed, x->names[i]))
            return true;
    }
    for (int j = 0; j < y->n_req; j++)
        if (x->is_closed && !sc_get(x->closed, y->names[j]))
            return true;
    return false;
}

/* Pairwise disjointness of the alternatives in the context of base:
 * dis[i * n + j]. */
static bool oneof_pairs(sc_t *c, const conj_t *base, json_object *alts, bool *dis)
{
    size_t n = json_object_array_length(alts);
    summ_t *s = calloc(n, sizeof *s);
    if (!s)
        return sc_oom(c);
    for (size_t i = 0; i < n; i++)
        summarize(c, base, json_object_array_get_idx(alts, i), &s[i]);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            dis[i * n + j] = i != j && !c->failed && disjoint(c, &s[i], &s[j]);
    free(s);
    return !c->failed;
}

/* ---- the list: disjunctions first ------------------------------------------------------------ */

static gr_ex_t *compile_list(sc_t *c, conj_t *l, int depth)
{
    if (depth > 300) {
        sc_fail(c, LF_ERR_UNSUPPORTED, "schema too deeply nested (limit 300)");
        return NULL;
    }
    for (int32_t i = 0; i < l->n; i++) {
        const json_object *s = l->v[i].s;
        json_object *any = !(l->v[i].skip & SK_ANYOF) ? sc_get(s, "anyOf") : NULL;
        json_object *one = !(l->v[i].skip & SK_ONEOF) ? sc_get(s, "oneOf") : NULL;
        json_object *alts = any ? any : one;
        if (!alts)
            continue;
        if (!json_object_is_type(alts, json_type_array) || json_object_array_length(alts) == 0) {
            sc_fail(c, LF_ERR_INVALID, "'%s' must be a non-empty array of schemas", any ? "anyOf" : "oneOf");
            return NULL;
        }
        conj_t base = *l;
        base.v[i].skip |= any ? SK_ANYOF : SK_ONEOF;
        size_t na = json_object_array_length(alts);
        bool *dis = NULL;
        if (!any && na > 1) {
            if (na > 64) {
                sc_unsupported(c, "oneOf", "exactly-one-of over more than 64 alternatives");
                if (c->failed)
                    return NULL;
            } else {
                dis = calloc(na * na, sizeof *dis);
                if (!dis || !oneof_pairs(c, &base, alts, dis)) {
                    free(dis);
                    if (!c->failed)
                        sc_oom(c);
                    return NULL;
                }
            }
        }
        gr_exlist_t out = {0};
        for (size_t k = 0; k < na; k++) {
            const json_object *alt = json_object_array_get_idx(alts, k);
            conj_t br = base;
            if (!conj_push(c, &br, alt, 0, 0)) {
                free(dis);
                return NULL;
            }
            /* exactly one: this alternative and not the others it may overlap */
            for (size_t j = 0; dis && j < na && !c->failed; j++) {
                if (j == k || dis[k * na + j])
                    continue;
                json_object *neg = json_object_new_object();
                if (!own(c, neg)) {
                    free(dis);
                    return NULL;
                }
                json_object_object_add(neg, "not", json_object_get(json_object_array_get_idx(alts, j)));
                json_object_object_add(neg, "x-llm-fcgi-oneof", json_object_new_boolean(1));
                conj_push(c, &br, neg, 0, 0);
            }
            gr_exlist_push(c->a, &out, c->failed ? NULL : conj_rule(c, &br, depth + 1));
            if (c->failed) {
                free(dis);
                return NULL;
            }
        }
        free(dis);
        return out.fail ? (sc_oom(c), NULL) : gr_ex_alt(c->a, out.v, out.n);
    }
    return compile_flat(c, l);
}

/* ---- flat merge --------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    conj_t *conj;       /* heap */
    bool required;
} prop_t;

typedef struct {
    unsigned types;
    bool has_enum;
    const json_object *enums[1024];
    int32_t n_enum;
    /* string */
    sc_str_t str;
    const char *patterns[32];
    const char *fmts[8];
    const json_object *excl[64];
    /* number */
    const json_object *lo, *hi;
    bool lo_excl, hi_excl;
    const json_object *mult[8];
    int32_t n_mult;
    /* array */
    int64_t min_items, max_items;
    /* object */
    int64_t min_props, max_props;
    const char *forbid[64];
    int32_t n_forbid;
    bool unique;
    struct {
        json_object *names;     /* not: {required: names} */
        bool approx;
    } notreq[8];
    int32_t n_notreq;
    const char *negpat[8];      /* not: {pattern} */
    int32_t n_negpat;
} flat_t;

static bool is_num(const json_object *v)
{
    return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
}

static int64_t as_count(const json_object *v)
{
    double d = json_object_get_double(v);
    return d < 0 ? 0 : d > 1e12 ? (int64_t)1e12 : (int64_t)d;
}

static bool annotation_only(const json_object *s, const char *const *allowed)
{
    static const char *ann[] = {"title", "description", "default", "examples", "$comment", "$schema", "$id", "id",
                                "readOnly", "writeOnly", "deprecated", NULL};
    json_object_object_foreach((json_object *)s, k, v) {
        (void)v;
        bool ok = false;
        for (const char *const *p = allowed; *p && !ok; p++)
            ok = !strcmp(k, *p);
        for (const char **p = ann; *p && !ok; p++)
            ok = !strcmp(k, *p);
        if (!ok)
            return false;
    }
    return true;
}

/* `not`: the forms that reduce to simple exclusions. In exact mode (a
 * schema's own `not`) the negation must be exactly expressible; in approx
 * mode (oneOf: "and none of the other alternatives") any one negatable
 * keyword of the negated schema is enough, because failing one of its
 * keywords fails the whole schema: the result is a subset of the true
 * complement, so nothing invalid is ever accepted. */
static bool not_required(sc_t *c, flat_t *f, json_object *req, bool approx)
{
    size_t n = json_object_array_length(req);
    if (f->n_notreq == 8)
        return sc_unsupported(c, approx ? "oneOf" : "not", "too many negated required lists in");
    f->notreq[f->n_notreq].names = req;
    f->notreq[f->n_notreq++].approx = approx;
    f->types &= T_OBJ; /* non-objects satisfy any `required` */
    (void)n;
    return true;
}

static bool apply_not(sc_t *c, flat_t *f, const json_object *n, int hop, bool approx)
{
    const char *kw = approx ? "oneOf" : "not";
    if (hop > 8)
        return sc_unsupported(c, kw, "negating this schema in");
    if (json_object_is_type(n, json_type_boolean)) {
        if (json_object_get_boolean(n))
            f->types = 0;
        return true;
    }
    if (!json_object_is_type(n, json_type_object))
        return sc_fail(c, LF_ERR_INVALID, "'not' must be a schema");
    json_object *r = sc_get(n, "$ref");
    if (r && json_object_is_type(r, json_type_string) &&
        (approx || annotation_only(n, (const char *[]){"$ref", NULL}))) {
        const json_object *t = sc_ref_resolve(c, n, json_object_get_string(r));
        if (!t)
            return false;
        if (!approx || (c->draft <= 7 || annotation_only(n, (const char *[]){"$ref", NULL})))
            return apply_not(c, f, t, hop + 1, approx);
    }
    if (json_object_object_length(n) == 0 || annotation_only(n, (const char *[]){NULL})) {
        f->types = 0;
        return true;
    }
    json_object *req = sc_get(n, "required");
    if (req && json_object_is_type(req, json_type_array) && json_object_array_length(req) > 0 &&
        (approx || annotation_only(n, (const char *[]){"required", NULL})))
        return not_required(c, f, req, approx);
    json_object *t = sc_get(n, "type");
    if (t && (approx || annotation_only(n, (const char *[]){"type", NULL}))) {
        unsigned m = type_mask(t);
        if (m & T_NUM)
            m |= T_INT;
        if (m & T_INT && !(m & T_NUM) && (f->types & T_NUM))
            return sc_unsupported(c, kw, "excluding integers from numbers in");
        f->types &= ~m;
        return true;
    }
    json_object *e = sc_get(n, "enum"), *k = NULL;
    bool has_const = sc_kw_ex(c, n, "const", &k);
    if ((e || has_const) && (approx || annotation_only(n, (const char *[]){"enum", "const", NULL}))) {
        size_t cnt = e && json_object_is_type(e, json_type_array) ? json_object_array_length(e) : 0;
        for (size_t i = 0; i < cnt + (has_const ? 1 : 0); i++) {
            const json_object *v = i < cnt ? json_object_array_get_idx(e, i) : k;
            if (json_object_is_type(v, json_type_null)) {
                f->types &= ~(unsigned)T_NULL;
            } else if (json_object_is_type(v, json_type_string) || json_object_is_type(v, json_type_boolean)) {
                if (f->str.n_exclude == 64)
                    return sc_unsupported(c, kw, "more than 64 excluded values in");
                f->excl[f->str.n_exclude++] = v;
            } else {
                return sc_unsupported(c, kw, "excluding numbers, arrays or objects with");
            }
        }
        return true;
    }
    static const char *bounds[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength"};
    for (int b = 0; b < 6; b++) {
        json_object *bv = sc_get(n, bounds[b]);
        if (!bv || !is_num(bv) || !(approx || annotation_only(n, (const char *[]){bounds[b], NULL})))
            continue;
        if (b >= 4) { /* not minLength n: length < n; not maxLength n: length > n */
            int64_t v = as_count(bv);
            f->types &= T_STR;
            if (b == 4) {
                if (v == 0)
                    f->types = 0;
                else if (f->str.max_len < 0 || v - 1 < f->str.max_len)
                    f->str.max_len = v - 1;
            } else if (v + 1 > f->str.min_len) {
                f->str.min_len = v + 1;
            }
            return true;
        }
        if (c->draft == 4 && b < 2 && (sc_get(n, "exclusiveMinimum") || sc_get(n, "exclusiveMaximum")))
            break; /* draft-04 boolean exclusives: not handled here */
        f->types &= T_NUM | T_INT;
        /* not (x >= v) = x < v; not (x > v) = x <= v; and the mirror */
        bool lower = b == 0 || b == 2, excl_in = b >= 2;
        if (lower) {
            int cmp = f->hi ? sc_num_cmp(bv, f->hi) : -1;
            if (cmp < 0 || (cmp == 0 && !excl_in)) {
                f->hi = bv;
                f->hi_excl = !excl_in;
            }
        } else {
            int cmp = f->lo ? sc_num_cmp(bv, f->lo) : 1;
            if (cmp > 0 || (cmp == 0 && !excl_in)) {
                f->lo = bv;
                f->lo_excl = !excl_in;
            }
        }
        return true;
    }
    json_object *pat = sc_get(n, "pattern");
    if (pat && json_object_is_type(pat, json_type_string) &&
        (approx || annotation_only(n, (const char *[]){"pattern", NULL}))) {
        if (f->n_negpat == 8)
            return sc_unsupported(c, kw, "more than 8 negated patterns in");
        f->negpat[f->n_negpat++] = json_object_get_string(pat);
        f->types &= T_STR; /* non-strings satisfy any `pattern` */
        return true;
    }
    json_object *any = sc_get(n, "anyOf");
    if (any && json_object_is_type(any, json_type_array) && annotation_only(n, (const char *[]){"anyOf", NULL})) {
        for (size_t i = 0; i < json_object_array_length(any); i++)
            if (!apply_not(c, f, json_object_array_get_idx(any, i), hop + 1, approx))
                return false;
        return true;
    }
    json_object *all = sc_get(n, "allOf");
    if (approx && all && json_object_is_type(all, json_type_array) && json_object_array_length(all) > 0)
        return apply_not(c, f, json_object_array_get_idx(all, 0), hop + 1, approx);
    return sc_unsupported(c, kw, approx ? "negating an overlapping alternative in" : "this form of");
}

static int find_prop(prop_t *props, int32_t n, const char *name)
{
    for (int32_t i = 0; i < n; i++)
        if (!strcmp(props[i].name, name))
            return i;
    return -1;
}

static gr_ex_t *compile_object(sc_t *c, conj_t *l, flat_t *f, int depth);
static gr_ex_t *compile_array(sc_t *c, conj_t *l, flat_t *f, int depth);

static gr_ex_t *compile_flat(sc_t *c, conj_t *l)
{
    flat_t *f = calloc(1, sizeof *f);
    if (!f) {
        sc_oom(c);
        return NULL;
    }
    f->types = T_ALL;
    f->str.max_len = -1;
    f->max_items = -1;
    f->max_props = -1;
    f->str.patterns = f->patterns;
    f->str.formats = f->fmts;
    f->str.exclude = f->excl;
    f->str.neg_patterns = f->negpat;
    gr_ex_t *result = NULL;
    for (int32_t i = 0; i < l->n && !c->failed; i++) {
        const json_object *s = l->v[i].s;
        json_object_object_foreach((json_object *)s, k, v) {
            if (c->failed)
                break;
            if (!sc_draft_has(c, k))
                continue; /* not a keyword in the schema's draft */
            if (!strcmp(k, "type")) {
                unsigned m = type_mask(v);
                if (m & T_NUM)
                    m |= T_INT;
                f->types &= m;
            } else if (!strcmp(k, "enum") || !strcmp(k, "const")) {
                size_t n = !strcmp(k, "const") ? 1 : json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
                if (!strcmp(k, "enum") && !json_object_is_type(v, json_type_array)) {
                    sc_fail(c, LF_ERR_INVALID, "'enum' must be an array");
                    break;
                }
                if (!f->has_enum) {
                    f->has_enum = true;
                    for (size_t e = 0; e < n && f->n_enum < 1024; e++)
                        f->enums[f->n_enum++] = !strcmp(k, "const") ? v : json_object_array_get_idx(v, e);
                    if (n > 1024)
                        sc_fail(c, LF_ERR_UNSUPPORTED, "'enum': more than 1024 values");
                } else {
                    int32_t w = 0;
                    for (int32_t e = 0; e < f->n_enum; e++) {
                        bool keep = false;
                        for (size_t q = 0; q < n && !keep; q++)
                            keep = sc_json_equal(f->enums[e], !strcmp(k, "const") ? v : json_object_array_get_idx(v, q));
                        if (keep)
                            f->enums[w++] = f->enums[e];
                    }
                    f->n_enum = w;
                }
            } else if (!strcmp(k, "minLength") && is_num(v)) {
                if (as_count(v) > f->str.min_len)
                    f->str.min_len = as_count(v);
            } else if (!strcmp(k, "maxLength") && is_num(v)) {
                if (f->str.max_len < 0 || as_count(v) < f->str.max_len)
                    f->str.max_len = as_count(v);
            } else if (!strcmp(k, "pattern") && json_object_is_type(v, json_type_string)) {
                if (f->str.n_patterns < 32)
                    f->patterns[f->str.n_patterns++] = json_object_get_string(v);
            } else if (!strcmp(k, "format") && json_object_is_type(v, json_type_string)) {
                if (sc_format_known(json_object_get_string(v)) && f->str.n_formats < 8)
                    f->fmts[f->str.n_formats++] = json_object_get_string(v);
            } else if ((!strcmp(k, "minimum") || !strcmp(k, "exclusiveMinimum")) && is_num(v)) {
                bool ex = !strcmp(k, "exclusiveMinimum");
                if (!ex && c->draft == 4) {
                    json_object *b = sc_get(s, "exclusiveMinimum");
                    ex = b && json_object_is_type(b, json_type_boolean) && json_object_get_boolean(b);
                }
                int cmp = f->lo ? sc_num_cmp(v, f->lo) : 1;
                if (cmp > 0 || (cmp == 0 && ex)) {
                    f->lo = v;
                    f->lo_excl = ex;
                }
            } else if ((!strcmp(k, "maximum") || !strcmp(k, "exclusiveMaximum")) && is_num(v)) {
                bool ex = !strcmp(k, "exclusiveMaximum");
                if (!ex && c->draft == 4) {
                    json_object *b = sc_get(s, "exclusiveMaximum");
                    ex = b && json_object_is_type(b, json_type_boolean) && json_object_get_boolean(b);
                }
                int cmp = f->hi ? sc_num_cmp(v, f->hi) : -1;
                if (cmp < 0 || (cmp == 0 && ex)) {
                    f->hi = v;
                    f->hi_excl = ex;
                }
            } else if (!strcmp(k, "multipleOf") && is_num(v)) {
                if (f->n_mult < 8)
                    f->mult[f->n_mult++] = v;
            } else if (!strcmp(k, "minItems") && is_num(v)) {
                if (as_count(v) > f->min_items)
                    f->min_items = as_count(v);
            } else if (!strcmp(k, "maxItems") && is_num(v)) {
                if (f->max_items < 0 || as_count(v) < f->max_items)
                    f->max_items = as_count(v);
            } else if (!strcmp(k, "minProperties") && is_num(v)) {
                if (as_count(v) > f->min_props)
                    f->min_props = as_count(v);
            } else if (!strcmp(k, "maxProperties") && is_num(v)) {
                if (f->max_props < 0 || as_count(v) < f->max_props)
                    f->max_props = as_count(v);
            } else if (!strcmp(k, "uniqueItems")) {
                if (json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v))
                    f->unique = true;
            } else if (!strcmp(k, "not")) {
                apply_not(c, f, v, 0, sc_get(s, "x-llm-fcgi-oneof") != NULL);
            } else if (!strcmp(k, "if")) {
                if (sc_get(s, "then") || sc_get(s, "else"))
                    sc_unsupported(c, "if", "a conditional (if/then/else)");
            } else if (!strcmp(k, "contains")) {
                sc_unsupported(c, "contains", "counting the items that match a schema");
            } else if (!strcmp(k, "dependentRequired") || !strcmp(k, "dependentSchemas") ||
                       !strcmp(k, "dependencies")) {
                if (json_object_is_type(v, json_type_object) && json_object_object_length(v) > 0)
                    sc_unsupported(c, k, "a dependency between properties");
            } else if (!strcmp(k, "$dynamicRef") || !strcmp(k, "$recursiveRef")) {
                sc_unsupported(c, k, "a dynamic reference");
            }
        }
    }
    /* negated required lists: against what the list requires anyway */
    for (int32_t q = 0; q < f->n_notreq && !c->failed; q++) {
        json_object *names = f->notreq[q].names;
        const char *left[64];
        int32_t nl = 0;
        for (size_t i = 0; i < json_object_array_length(names) && nl < 64; i++) {
            json_object *nm = json_object_array_get_idx(names, i);
            if (!json_object_is_type(nm, json_type_string))
                continue;
            bool req = false;
            for (int32_t e = 0; e < l->n && !req; e++) {
                json_object *rq = sc_get(l->v[e].s, "required");
                for (size_t r = 0; rq && json_object_is_type(rq, json_type_array) && r < json_object_array_length(rq) && !req; r++) {
                    json_object *x = json_object_array_get_idx(rq, r);
                    req = json_object_is_type(x, json_type_string) && !strcmp(json_object_get_string(x), json_object_get_string(nm));
                }
            }
            if (!req)
                left[nl++] = json_object_get_string(nm);
        }
        if (nl == 0) {
            f->types &= ~(unsigned)T_OBJ; /* every name is required: no object */
        } else if (nl == 1 || f->notreq[q].approx) {
            if (f->n_forbid < 64)
                f->forbid[f->n_forbid++] = left[0];
        } else {
            sc_unsupported(c, "not", "\"not all of these properties\" in");
        }
    }
    if (c->failed)
        goto out;
    if (f->unique && !(f->max_items >= 0 && f->max_items <= 1) && !(f->types & T_ARR) == false) {
        if (!sc_unsupported(c, "uniqueItems", "comparing array items with each other"))
            goto out;
    }
    if (f->has_enum) {
        /* the literal values that satisfy everything */
        gr_exlist_t alts = {0};
        for (int32_t e = 0; e < f->n_enum && !c->failed; e++) {
            const json_object *v = f->enums[e];
            bool dup = false;
            for (int32_t q = 0; q < e && !dup; q++)
                dup = sc_json_equal(f->enums[q], v);
            if (dup || !sc_validate(c, v, l->v, l->n))
                continue;
            gr_exlist_push(c->a, &alts, sc_literal(c, v));
        }
        if (c->failed)
            goto out;
        result = alts.fail ? NULL : gr_ex_alt(c->a, alts.v, alts.n);
        if (!result)
            sc_oom(c);
        goto out;
    }
    gr_exlist_t alts = {0};
    gr_arena_t *a = c->a;
    if (f->types & T_NULL)
        gr_exlist_push(a, &alts, lit(c, "null"));
    if (f->types & T_BOOL) {
        bool ex_t = false, ex_f = false;
        for (int32_t i = 0; i < f->str.n_exclude; i++)
            if (json_object_is_type(f->excl[i], json_type_boolean))
                *(json_object_get_boolean(f->excl[i]) ? &ex_t : &ex_f) = true;
        if (!ex_t)
            gr_exlist_push(a, &alts, lit(c, "true"));
        if (!ex_f)
            gr_exlist_push(a, &alts, lit(c, "false"));
    }
    if (f->types & (T_NUM | T_INT)) {
        sc_num_t nn = {.integer = !(f->types & T_NUM), .lo = f->lo, .hi = f->hi, .lo_excl = f->lo_excl,
                       .hi_excl = f->hi_excl, .mult = f->mult, .n_mult = f->n_mult};
        gr_exlist_push(a, &alts, sc_number_expr(c, &nn));
    }
    if ((f->types & T_STR) && !c->failed) {
        /* booleans in the exclusion list are not strings */
        int32_t w = 0;
        for (int32_t i = 0; i < f->str.n_exclude; i++)
            if (json_object_is_type(f->excl[i], json_type_string))
                f->excl[w++] = f->excl[i];
        f->str.n_exclude = w;
        f->str.n_neg_patterns = f->n_negpat;
        gr_exlist_push(a, &alts, c->o->str_delim ? sc_dstr_expr(c, &f->str) : sc_string_expr(c, &f->str));
    }
    if ((f->types & T_ARR) && !c->failed)
        gr_exlist_push(a, &alts, compile_array(c, l, f, 0));
    if ((f->types & T_OBJ) && !c->failed)
        gr_exlist_push(a, &alts, compile_object(c, l, f, 0));
    if (c->failed)
        goto out;
    result = alts.fail ? NULL : gr_ex_alt(a, alts.v, alts.n);
    if (!result)
        sc_oom(c);
out:
    free(f);
    return c->failed ? NULL : result;
}

/* ---- arrays --------------------------------------------------------------------------------------- */

/* n items of kind `item` each preceded by a separator (the first one not
 * when `first`), lo <= n <= hi (hi < 0: unbounded). */
static gr_ex_t *item_run(sc_t *c, gr_ex_t *item, bool first, int64_t lo, int64_t hi)
{
    gr_arena_t *a = c->a;
    gr_ex_t *next = gr_ex_seq2(a, sep(c, ","), item);
    if (!first)
        return gr_ex_rep(a, next, lo, hi);
    if (hi == 0)
        return gr_ex_empty(a);
    gr_ex_t *body = gr_ex_seq2(a, item, gr_ex_rep(a, next, lo > 0 ? lo - 1 : 0, hi < 0 ? -1 : hi - 1));
    return lo == 0 ? gr_ex_opt(a, body) : body;
}

static gr_ex_t *compile_array(sc_t *c, conj_t *l, flat_t *f, int depth)
{
    (void)depth;
    gr_arena_t *a = c->a;
    /* per position: the schemas that apply */
    int32_t max_prefix = 0;
    for (int32_t i = 0; i < l->n; i++) {
        const json_object *s = l->v[i].s;
        json_object *p = sc_kw(c, s, "prefixItems"), *it = sc_get(s, "items");
        if (p && json_object_is_type(p, json_type_array) && (int32_t)json_object_array_length(p) > max_prefix)
            max_prefix = (int32_t)json_object_array_length(p);
        if (!p && it && json_object_is_type(it, json_type_array) && (int32_t)json_object_array_length(it) > max_prefix)
            max_prefix = (int32_t)json_object_array_length(it);
        if (sc_kw(c, s, "unevaluatedItems"))
            return sc_unsupported(c, "unevaluatedItems", "") ? gr_ex_none(a) : NULL;
    }
    if (max_prefix > 1000) {
        sc_fail(c, LF_ERR_UNSUPPORTED, "'prefixItems': more than 1000 positions");
        return NULL;
    }
    int64_t lo = f->min_items, hi = f->max_items;
    bool rest_false = false;
    const json_object *rest[SC_MAX_CONJ];
    int32_t n_rest = 0;
    for (int32_t i = 0; i < l->n; i++) {
        const json_object *s = l->v[i].s;
        json_object *p = sc_kw(c, s, "prefixItems"), *it = sc_get(s, "items"), *ad = sc_get(s, "additionalItems");
        const json_object *r = NULL;
        if (p)
            r = it;
        else if (it && json_object_is_type(it, json_type_array))
            r = ad;
        else
            r = it;
        if (r) {
            if (json_object_is_type(r, json_type_boolean) && !json_object_get_boolean(r))
                rest_false = true;
            rest[n_rest++] = r;
        }
    }
    /* positions beyond a "false" rest cannot exist */
    if (rest_false) {
        int32_t cap = 0;
        for (int32_t i = 0; i < l->n; i++) {
            const json_object *s = l->v[i].s;
            json_object *p = sc_kw(c, s, "prefixItems"), *it = sc_get(s, "items");
            json_object *arr = p ? p : (it && json_object_is_type(it, json_type_array) ? it : NULL);
            int32_t len = arr ? (int32_t)json_object_array_length(arr) : 0;
            if (i == 0 || len < cap)
                cap = len;
        }
        (void)cap;
    }
    gr_ex_t *rest_item = conj_of(c, NULL, rest, n_rest, depth);
    if (!rest_item)
        return NULL;
    /* A(j): after j items (j < max_prefix) */
    gr_ex_t *tail = NULL;
    for (int32_t j = max_prefix; j >= 0 && !c->failed; j--) {
        if (j == max_prefix) {
            int64_t tlo = lo > j ? lo - j : 0, thi = hi < 0 ? -1 : hi - j;
            tail = thi < 0 && hi >= 0 ? gr_ex_none(a) : item_run(c, rest_item, j == 0, tlo, thi);
            if (hi >= 0 && hi < j)
                tail = gr_ex_none(a);
            continue;
        }
        const json_object *here[SC_MAX_CONJ];
        int32_t nh = 0;
        for (int32_t i = 0; i < l->n; i++) {
            const json_object *s = l->v[i].s;
            json_object *p = sc_kw(c, s, "prefixItems"), *it = sc_get(s, "items"), *ad = sc_get(s, "additionalItems");
            json_object *arr = p ? p : (it && json_object_is_type(it, json_type_array) ? it : NULL);
            if (arr && (size_t)j < json_object_array_length(arr))
                here[nh++] = json_object_array_get_idx(arr, (size_t)j);
            else if (p && it)
                here[nh++] = it;
            else if (!p && arr && ad)
                here[nh++] = ad;
            else if (!p && !arr && it)
                here[nh++] = it;
        }
        gr_ex_t *item = conj_of(c, NULL, here, nh, depth);
        gr_ex_t *step = gr_ex_seq2(a, j == 0 ? item : gr_ex_seq2(a, sep(c, ","), item), tail);
        bool may_stop = j >= lo && (hi < 0 || j <= hi);
        bool may_go = hi < 0 || j < hi;
        tail = may_go ? (may_stop ? gr_ex_alt2(a, gr_ex_empty(a), step) : step)
                      : (may_stop ? gr_ex_empty(a) : gr_ex_none(a));
    }
    if (c->failed)
        return NULL;
    return gr_ex_seq(a, (gr_ex_t *[]){lit(c, "["), c->ws, tail, c->ws, lit(c, "]")}, 5);
}

/* ---- objects ------------------------------------------------------------------------------------------ */

/* The keys satisfying s as one automaton: whole JSON strings, or bare
 * keys in the delimited syntax. */
static gr_dfa_t *key_dfa(sc_t *c, const sc_str_t *s)
{
    return c->o->str_delim ? sc_dstr_key_dfa(c, s) : sc_string_dfa(c, s);
}

/* x and y intersected (both freed; NULL and failed on an error). */
static gr_dfa_t *dfa_and(sc_t *c, gr_dfa_t *x, gr_dfa_t *y)
{
    gr_dfa_t *d = x && y ? gr_dfa_intersect(x, y, c->o->lim, c->err) : NULL;
    gr_dfa_free(x);
    gr_dfa_free(y);
    if (!d)
        c->failed = true;
    return d;
}

typedef struct {
    gr_ex_t *entry;     /* key ws ":" ws value */
} region_t;

/* Objects of at most ANY_ORDER_MAX properties accept them in any order:
 * rules S(seen, extra) track the set of properties seen so far and the
 * number of additional ones (only when min/maxProperties need it), so each
 * property appears at most once and the required ones before the end.
 * Additional properties may come anywhere. */
#define ANY_ORDER_MAX 7

static gr_ex_t *object_any_order(sc_t *c, const prop_t *props, int32_t np, gr_ex_t *const *vals, gr_ex_t *addl,
                                 int64_t minp, int64_t maxp)
{
    gr_arena_t *a = c->a;
    uint32_t req = 0, full = (1u << np) - 1;
    for (int32_t i = 0; i < np; i++)
        if (props[i].required)
            req |= 1u << i;
    int64_t acap = !addl ? 0 : maxp >= 0 ? maxp : minp; /* additional count saturates here */
    if (acap > 64)
        acap = maxp >= 0 ? -1 : 64;
    if (acap < 0) {
        sc_unsupported(c, "maxProperties", "a property count this large in");
        return NULL;
    }
    int32_t na = (int32_t)acap + 1, n_states = (int32_t)(full + 1) * na;
    int32_t *first = malloc((size_t)n_states * sizeof *first), *rest = malloc((size_t)n_states * sizeof *rest);
    if (!first || !rest) {
        free(first);
        free(rest);
        sc_oom(c);
        return NULL;
    }
    for (int32_t s = 0; s < n_states; s++) {
        first[s] = sc_new_rule(c);
        rest[s] = sc_new_rule(c);
    }
    for (uint32_t m = 0; m <= full && !c->failed; m++)
        for (int32_t k = 0; k < na; k++) {
            int64_t total = __builtin_popcount(m) + k;
            bool room = maxp < 0 || total + 1 <= maxp;
            gr_exlist_t fa = {0}, ra = {0};
            if ((m & req) == req && total >= minp) {
                gr_exlist_push(a, &fa, gr_ex_empty(a));
                gr_exlist_push(a, &ra, gr_ex_empty(a));
            }
            for (int32_t i = 0; i < np && room; i++) {
                if (m & (1u << i))
                    continue;
                int32_t nx = (int32_t)(m | 1u << i) * na + k;
                gr_exlist_push(a, &fa, gr_ex_seq2(a, vals[i], gr_ex_ref(a, rest[nx])));
                gr_exlist_push(a, &ra, gr_ex_seq3(a, sep(c, ","), vals[i], gr_ex_ref(a, rest[nx])));
            }
            if (addl && room) {
                int32_t nx = (int32_t)m * na + (k + 1 < na ? k + 1 : k);
                gr_exlist_push(a, &fa, gr_ex_seq2(a, addl, gr_ex_ref(a, rest[nx])));
                gr_exlist_push(a, &ra, gr_ex_seq3(a, sep(c, ","), addl, gr_ex_ref(a, rest[nx])));
            }
            int32_t s = (int32_t)m * na + k;
            c->R->v[first[s]] = fa.fail ? NULL : gr_ex_alt(a, fa.v, fa.n);
            c->R->v[rest[s]] = ra.fail ? NULL : gr_ex_alt(a, ra.v, ra.n);
            if (!c->R->v[first[s]] || !c->R->v[rest[s]])
                sc_oom(c);
        }
    gr_ex_t *r = c->failed ? NULL : gr_ex_ref(a, first[0]);
    free(first);
    free(rest);
    return r;
}

/* Larger objects: properties in the order of `properties` (each optional
 * one may be skipped), additional properties anywhere; counts for
 * min/maxProperties saturate at max (or min). The grammar is unambiguous:
 * additional properties written after property i - 1 belong to position i
 * (they come before any skip), so a text has one parse. (With "skip or
 * additional" at every position, each additional property had one parse
 * per later position, and Earley sets grew with properties x additional
 * ones.) Rules, k = properties written so far:
 *   start  = addl R(0,1) | G(0,0)
 *   G(i,k) = vals[i] R(i+1,k+1) | G(i+1,k) (i optional) | e (i = np, k >= min)
 *   R(i,k) = "," addl R(i,k+1) | N(i,k)      something written: a comma first
 *   N(i,k) = "," vals[i] R(i+1,k+1) | N(i+1,k) (i optional) | e (i = np, k >= min)
 * Without counts, R(i) = ("," addl)* N(i): the repetition is left-recursive
 * (cfg.c), so a long run of additional properties keeps the sets small. */
static gr_ex_t *object_in_order(sc_t *c, const prop_t *props, int32_t np, gr_ex_t *const *vals, gr_ex_t *addl,
                                int64_t minp, int64_t maxp)
{
    gr_arena_t *a = c->a;
    int64_t cap_c = maxp >= 0 ? maxp : minp;
    if (cap_c > 10000 || (int64_t)(np + 1) * (cap_c + 1) > 200000) {
        sc_unsupported(c, "maxProperties", "a property count this large in");
        return NULL;
    }
    int32_t nc = (int32_t)cap_c + 1;
    size_t n_st = (size_t)(np + 1) * (size_t)nc;
    int32_t *rules = malloc(3 * n_st * sizeof *rules);
    if (!rules) {
        sc_oom(c);
        return NULL;
    }
    int32_t *G = rules, *R = rules + n_st, *N = rules + 2 * n_st;
    for (size_t q = 0; q < 3 * n_st; q++)
        rules[q] = sc_new_rule(c);
    gr_ex_t *more = addl && nc == 1 ? gr_ex_rep(a, gr_ex_seq2(a, sep(c, ","), addl), 0, -1) : NULL;
    for (int32_t i = np; i >= 0 && !c->failed; i--)
        for (int32_t k = 0; k < nc; k++) {
            int32_t kn = k + 1 < nc ? k + 1 : (maxp >= 0 ? -1 : k); /* count after one more; -1: no room */
            int32_t s = i * nc + k;
            gr_exlist_t ga = {0}, ra = {0}, na = {0};
            if (i == np && k >= minp) {
                gr_exlist_push(a, &ga, gr_ex_empty(a));
                gr_exlist_push(a, &na, gr_ex_empty(a));
            }
            if (i < np) {
                if (kn >= 0) {
                    gr_exlist_push(a, &ga, gr_ex_seq2(a, vals[i], gr_ex_ref(a, R[(i + 1) * nc + kn])));
                    gr_exlist_push(a, &na, gr_ex_seq3(a, sep(c, ","), vals[i], gr_ex_ref(a, R[(i + 1) * nc + kn])));
                }
                if (!props[i].required) {
                    gr_exlist_push(a, &ga, gr_ex_ref(a, G[s + nc]));
                    gr_exlist_push(a, &na, gr_ex_ref(a, N[s + nc]));
                }
            }
            if (more) {
                gr_exlist_push(a, &ra, gr_ex_seq2(a, more, gr_ex_ref(a, N[s])));
            } else {
                if (addl && kn >= 0)
                    gr_exlist_push(a, &ra, gr_ex_seq3(a, sep(c, ","), addl, gr_ex_ref(a, R[i * nc + kn])));
                gr_exlist_push(a, &ra, gr_ex_ref(a, N[s]));
            }
            int32_t ids[3] = {G[s], R[s], N[s]};
            gr_exlist_t *ls[3] = {&ga, &ra, &na};
            for (int q = 0; q < 3; q++)
                if (!(c->R->v[ids[q]] = ls[q]->fail ? NULL : gr_ex_alt(a, ls[q]->v, ls[q]->n)))
                    sc_oom(c);
        }
    gr_ex_t *r = NULL;
    if (!c->failed) {
        int32_t k1 = nc > 1 ? 1 : 0;
        r = gr_ex_ref(a, G[0]);
        if (addl && (nc > 1 || maxp < 0))
            r = gr_ex_alt2(a, gr_ex_seq2(a, addl, gr_ex_ref(a, R[k1])), r);
        if (!r)
            sc_oom(c);
    }
    free(rules);
    return r;
}

static gr_ex_t *compile_object(sc_t *c, conj_t *l, flat_t *f, int depth)
{
    gr_arena_t *a = c->a;
    prop_t *props = NULL;
    int32_t np = 0, cap = 0;
    const char *pats[MAX_PATTERN_KEYS];
    int32_t n_pats = 0;
    gr_ex_t *result = NULL;
    bool has_uneval = false;
    const json_object *uneval = NULL;
    conj_t *uscope = NULL;
    gr_dfa_t *names_dfa = NULL;
    /* gather names in order */
    for (int32_t i = 0; i < l->n; i++) {
        const json_object *s = l->v[i].s;
        json_object *p = sc_get(s, "properties"), *pp = sc_get(s, "patternProperties");
        if ((uneval = sc_kw(c, s, "unevaluatedProperties")) != NULL)
            has_uneval = true;
        if (p && json_object_is_type(p, json_type_object)) {
            json_object_object_foreach(p, k, v) {
                (void)v;
                if (find_prop(props, np, k) >= 0)
                    continue;
                if (np == cap) {
                    cap = cap ? cap * 2 : 16;
                    prop_t *nv = realloc(props, (size_t)cap * sizeof *nv);
                    if (!nv) {
                        sc_oom(c);
                        goto out;
                    }
                    props = nv;
                }
                props[np++] = (prop_t){k, NULL, false};
            }
        }
        if (pp && json_object_is_type(pp, json_type_object)) {
            json_object_object_foreach(pp, k, v) {
                (void)v;
                bool seen = false;
                for (int32_t q = 0; q < n_pats && !seen; q++)
                    seen = !strcmp(pats[q], k);
                if (seen)
                    continue;
                if (n_pats == MAX_PATTERN_KEYS) {
                    sc_unsupported(c, "patternProperties", "more than 6 distinct key patterns in");
                    goto out;
                }
                pats[n_pats++] = k;
            }
        }
    }
    /* unevaluatedProperties: its schema's own scope is what that schema
     * and its allOf/$ref subschemas evaluate (not its siblings); anyOf
     * branches are not counted, so some valid keys may be refused, never
     * an invalid one accepted. */
    const json_object *uneval_owner = NULL;
    bool uscope_all = false;
    if (has_uneval) {
        for (int32_t i = 0; i < l->n; i++)
            if (sc_kw(c, l->v[i].s, "unevaluatedProperties")) {
                if (uneval_owner) {
                    sc_unsupported(c, "unevaluatedProperties", "several unevaluatedProperties on one value in");
                    goto out;
                }
                uneval_owner = l->v[i].s;
                uneval = sc_kw(c, l->v[i].s, "unevaluatedProperties");
            }
        if (json_object_is_type(uneval, json_type_boolean) && json_object_get_boolean(uneval)) {
            has_uneval = false; /* true: nothing to check */
        } else {
            uscope = calloc(1, sizeof *uscope);
            if (!uscope || !conj_push(c, uscope, uneval_owner, 0, 0)) {
                if (!uscope)
                    sc_oom(c);
                goto out;
            }
            for (int32_t i = 0; i < uscope->n; i++)
                if (sc_get(uscope->v[i].s, "additionalProperties"))
                    uscope_all = true;
            if (uscope_all)
                has_uneval = false;
        }
    }
    /* required names: they are properties even if only "required" mentions them */
    for (int32_t i = 0; i < l->n; i++) {
        json_object *req = sc_get(l->v[i].s, "required");
        if (!req || !json_object_is_type(req, json_type_array))
            continue;
        for (size_t r = 0; r < json_object_array_length(req); r++) {
            json_object *nm = json_object_array_get_idx(req, r);
            if (!json_object_is_type(nm, json_type_string))
                continue;
            int k = find_prop(props, np, json_object_get_string(nm));
            if (k < 0) {
                if (np == cap) {
                    cap = cap ? cap * 2 : 16;
                    prop_t *nv = realloc(props, (size_t)cap * sizeof *nv);
                    if (!nv) {
                        sc_oom(c);
                        goto out;
                    }
                    props = nv;
                }
                props[np] = (prop_t){json_object_get_string(nm), NULL, false};
                k = np++;
            }
            props[k].required = true;
        }
    }
    /* per name: the conjunction of what applies to it */
    for (int32_t k = 0; k < np && !c->failed; k++) {
        const json_object *app[SC_MAX_CONJ * 4];
        int32_t na = 0;
        bool forbidden = false;
        for (int32_t q = 0; q < f->n_forbid; q++)
            forbidden = forbidden || !strcmp(f->forbid[q], props[k].name);
        for (int32_t i = 0; i < l->n && na < SC_MAX_CONJ * 4 - 8; i++) {
            const json_object *s = l->v[i].s;
            json_object *p = sc_get(s, "properties"), *pp = sc_get(s, "patternProperties"), *ap = sc_get(s, "additionalProperties");
            json_object *ps = sc_get(p, props[k].name);
            bool matched = false;
            if (ps) {
                app[na++] = ps;
                matched = true;
            }
            if (pp && json_object_is_type(pp, json_type_object)) {
                json_object_object_foreach(pp, pat, psch) {
                    bool ok;
                    bool m = sc_pattern_match(c, pat, props[k].name, strlen(props[k].name), &ok);
                    if (!ok) {
                        c->failed = true;
                        goto out;
                    }
                    if (m) {
                        app[na++] = psch;
                        matched = true;
                    }
                }
            }
            if (!matched && ap)
                app[na++] = ap;
        }
        if (has_uneval) {
            bool evaluated = false;
            for (int32_t i = 0; i < uscope->n && !evaluated; i++) {
                const json_object *us = uscope->v[i].s;
                if (sc_get(sc_get(us, "properties"), props[k].name))
                    evaluated = true;
                json_object *pp = sc_get(us, "patternProperties");
                if (pp && json_object_is_type(pp, json_type_object)) {
                    json_object_object_foreach(pp, pat, psch) {
                        (void)psch;
                        bool okm;
                        if (sc_pattern_match(c, pat, props[k].name, strlen(props[k].name), &okm) && okm)
                            evaluated = true;
                    }
                }
            }
            if (!evaluated)
                app[na++] = uneval;
        }
        /* propertyNames must accept the name */
        for (int32_t i = 0; i < l->n && !forbidden; i++) {
            json_object *pn = sc_kw(c, l->v[i].s, "propertyNames");
            if (!pn)
                continue;
            json_object *ks = json_object_new_string(props[k].name);
            sc_ent_t e = {pn, 0};
            forbidden = !ks || !sc_validate(c, ks, &e, 1);
            json_object_put(ks);
        }
        if (forbidden) {
            if (props[k].required) {
                result = gr_ex_none(a); /* a required property that cannot exist */
                goto out;
            }
            props[k].conj = NULL;
            props[k].name = NULL;
            continue;
        }
        conj_t *cj = malloc(sizeof *cj);
        if (!cj) {
            sc_oom(c);
            goto out;
        }
        *cj = (conj_t){.n = 0};
        for (int32_t q = 0; q < na; q++)
            if (!conj_push(c, cj, app[q], 0, 0))
                break;
        props[k].conj = cj;
    }
    if (c->failed)
        goto out;
    /* drop forbidden (nameless) entries */
    {
        int32_t w = 0;
        for (int32_t k = 0; k < np; k++)
            if (props[k].name)
                props[w++] = props[k];
            else
                free(props[k].conj);
        np = w;
    }
    /* additional keys: regions by the subset of patterns they match */
    gr_exlist_t regions = {0};
    {
        /* names excluded from additional keys: the known ones and the forbidden ones */
        gr_arena_t tmp;
        gr_arena_init(&tmp, 32u << 20);
        gr_exlist_t nl = {0};
        for (int32_t k = 0; c->o->str_delim && k < np + f->n_forbid; k++)
            gr_exlist_push(&tmp, &nl, gr_ex_str(&tmp, k < np ? props[k].name : f->forbid[k - np]));
        for (int32_t k = 0; !c->o->str_delim && k < np; k++)
            gr_exlist_push(&tmp, &nl, sc_jstr(c, &tmp, sc_literal_chars(&tmp, props[k].name, strlen(props[k].name)), 0, -1));
        for (int32_t q = 0; !c->o->str_delim && q < f->n_forbid; q++) {
            json_object *ks = json_object_new_string(f->forbid[q]);
            const char *t = ks ? json_text(c, &tmp, ks) : NULL;
            gr_exlist_push(&tmp, &nl, t ? gr_ex_str(&tmp, t) : NULL);
            json_object_put(ks);
        }
        if (nl.n > 0 && !nl.fail) {
            names_dfa = gr_dfa_from_expr(gr_ex_alt(&tmp, nl.v, nl.n), false, c->o->lim, c->err);
            if (!names_dfa)
                c->failed = true;
        }
        gr_arena_free(&tmp);
        if (c->failed)
            goto out;
    }
    /* propertyNames string constraints (for additional keys) */
    sc_str_t pn_str = {.max_len = -1};
    const char *pn_pats[16];
    const char *pn_fmts[8];
    const json_object *pn_enum = NULL;
    pn_str.patterns = pn_pats;
    pn_str.formats = pn_fmts;
    for (int32_t i = 0; i < l->n; i++) {
        json_object *pn = sc_kw(c, l->v[i].s, "propertyNames");
        if (!pn || !json_object_is_type(pn, json_type_object))
            continue;
        if (sc_get(pn, "$ref") || sc_get(pn, "anyOf") || sc_get(pn, "oneOf") || sc_get(pn, "allOf") ||
            sc_get(pn, "not")) {
            if (!sc_unsupported(c, "propertyNames", "a composite schema in"))
                goto out;
        }
        json_object *x;
        if ((x = sc_get(pn, "pattern")) && json_object_is_type(x, json_type_string) && pn_str.n_patterns < 16)
            pn_pats[pn_str.n_patterns++] = json_object_get_string(x);
        if ((x = sc_get(pn, "format")) && json_object_is_type(x, json_type_string) && pn_str.n_formats < 8 &&
            sc_format_known(json_object_get_string(x)))
            pn_fmts[pn_str.n_formats++] = json_object_get_string(x);
        if ((x = sc_get(pn, "minLength")) && is_num(x) && as_count(x) > pn_str.min_len)
            pn_str.min_len = as_count(x);
        if ((x = sc_get(pn, "maxLength")) && is_num(x) && (pn_str.max_len < 0 || as_count(x) < pn_str.max_len))
            pn_str.max_len = as_count(x);
        if ((x = sc_get(pn, "enum")) && json_object_is_type(x, json_type_array))
            pn_enum = x;
        if (sc_kw_ex(c, pn, "const", &x)) {
            if (!sc_unsupported(c, "propertyNames", "const in"))
                goto out;
        }
        if (sc_get(pn, "type") && !(type_mask(sc_get(pn, "type")) & T_STR)) {
            pn_enum = NULL;
            pn_str.max_len = 0;
            pn_str.min_len = 1; /* no key at all */
        }
    }
    bool has_pn = pn_str.n_patterns || pn_str.n_formats || pn_str.min_len > 0 || pn_str.max_len >= 0 || pn_enum;
    for (uint32_t m = 0; m < (1u << n_pats) && !c->failed; m++) {
        const json_object *app[SC_MAX_CONJ * 4];
        int32_t na = 0;
        bool dead = false;
        for (int32_t i = 0; i < l->n && na < SC_MAX_CONJ * 4 - 8; i++) {
            const json_object *s = l->v[i].s;
            json_object *pp = sc_get(s, "patternProperties"), *ap = sc_get(s, "additionalProperties");
            bool matched = false;
            if (pp && json_object_is_type(pp, json_type_object))
                for (int32_t q = 0; q < n_pats; q++)
                    if ((m >> q) & 1) {
                        json_object *ps = sc_get(pp, pats[q]);
                        if (ps) {
                            app[na++] = ps;
                            matched = true;
                        }
                    }
            if (!matched && ap)
                app[na++] = ap;
        }
        if (has_uneval) {
            /* evaluated when a pattern of the owner's scope matches */
            bool evaluated = false;
            for (int32_t i = 0; i < uscope->n && !evaluated; i++) {
                json_object *pp = sc_get(uscope->v[i].s, "patternProperties");
                for (int32_t q = 0; q < n_pats && !evaluated; q++)
                    evaluated = ((m >> q) & 1) && pp && sc_get(pp, pats[q]);
            }
            if (!evaluated)
                app[na++] = uneval;
        }
        for (int32_t q = 0; q < na; q++)
            if (json_object_is_type(app[q], json_type_boolean) && !json_object_get_boolean(app[q]))
                dead = true;
        if (dead)
            continue;
        /* key language: strings matching exactly the patterns in m, minus names */
        sc_str_t ks = {.max_len = -1};
        const char *kp[MAX_PATTERN_KEYS];
        ks.patterns = kp;
        for (int32_t q = 0; q < n_pats; q++)
            if ((m >> q) & 1)
                kp[ks.n_patterns++] = pats[q];
        gr_dfa_t *d = key_dfa(c, &ks);
        for (int32_t q = 0; d && q < n_pats; q++) {
            if ((m >> q) & 1)
                continue;
            sc_str_t one = {.max_len = -1, .patterns = &pats[q], .n_patterns = 1};
            gr_dfa_t *x = key_dfa(c, &one);
            gr_dfa_t *y = x ? gr_dfa_subtract(d, x, c->o->lim, c->err) : NULL;
            gr_dfa_free(x);
            gr_dfa_free(d);
            d = y;
        }
        if (d && names_dfa) {
            gr_dfa_t *y = gr_dfa_subtract(d, names_dfa, c->o->lim, c->err);
            gr_dfa_free(d);
            d = y;
        }
        if (d && has_pn) {
            gr_dfa_t *x = NULL;
            if (pn_enum) {
                gr_arena_t tmp;
                gr_arena_init(&tmp, 8u << 20);
                gr_exlist_t el = {0};
                for (size_t e = 0; e < json_object_array_length(pn_enum); e++) {
                    json_object *v = json_object_array_get_idx(pn_enum, e);
                    if (json_object_is_type(v, json_type_string)) {
                        const char *t = c->o->str_delim ? json_object_get_string(v) : json_text(c, &tmp, v);
                        gr_exlist_push(&tmp, &el, t ? gr_ex_str(&tmp, t) : NULL);
                    }
                }
                x = el.n ? gr_dfa_from_expr(gr_ex_alt(&tmp, el.v, el.n), false, c->o->lim, c->err) : NULL;
                gr_arena_free(&tmp);
            } else {
                x = key_dfa(c, &pn_str);
                if (x && c->o->str_delim && (pn_str.min_len > 0 || pn_str.max_len >= 0)) {
                    gr_dfa_t *y = dfa_and(c, x, sc_dstr_len_dfa(c, pn_str.min_len, pn_str.max_len));
                    x = y;
                } else if (x && (pn_str.min_len > 0 || pn_str.max_len >= 0)) {
                    /* key lengths: a bounded string of any content, intersected */
                    gr_arena_t tmp;
                    gr_arena_init(&tmp, 8u << 20);
                    gr_dfa_t *len = gr_dfa_from_expr(sc_jstr(c, &tmp, NULL, pn_str.min_len,
                                                                pn_str.max_len >= 0 && pn_str.max_len < 256 ? pn_str.max_len : -1),
                                                     false, c->o->lim, c->err);
                    gr_arena_free(&tmp);
                    gr_dfa_t *y = len ? gr_dfa_intersect(x, len, c->o->lim, c->err) : NULL;
                    gr_dfa_free(len);
                    gr_dfa_free(x);
                    x = y;
                }
            }
            gr_dfa_t *y = x ? gr_dfa_intersect(d, x, c->o->lim, c->err) : NULL;
            gr_dfa_free(x);
            gr_dfa_free(d);
            d = y;
        }
        if (!d) {
            c->failed = true;
            break;
        }
        if (d->n_states == 0) {
            gr_dfa_free(d);
            continue;
        }
        if (!sc_keep_dfa(c, d))
            break;
        gr_ex_t *val = conj_of(c, NULL, app, na, depth);
        gr_ex_t *entry = c->o->str_delim ? gr_ex_seq2(a, sc_dstr_key_head_dfa(c, d), val)
                                         : gr_ex_seq3(a, gr_ex_dfa(a, d, false), sep(c, ":"), val);
        gr_exlist_push(a, &regions, entry);
    }
    if (c->failed)
        goto out;
    gr_ex_t *addl = regions.n ? gr_ex_alt(a, regions.v, regions.n) : NULL;
    /* property values */
    gr_ex_t **vals = calloc((size_t)np + 1, sizeof *vals);
    for (int32_t i = 0; vals && i < np && !c->failed; i++)
        vals[i] = gr_ex_seq2(a, key_head(c, props[i].name), conj_rule(c, props[i].conj, depth + 1));
    if (!vals || c->failed) {
        free(vals);
        if (!c->failed)
            sc_oom(c);
        goto out;
    }
    int64_t minp = f->min_props, maxp = f->max_props;
    gr_ex_t *body = np <= ANY_ORDER_MAX ? object_any_order(c, props, np, vals, addl, minp, maxp)
                                        : object_in_order(c, props, np, vals, addl, minp, maxp);
    free(vals);
    if (!body)
        goto out;
    result = gr_ex_seq(a, (gr_ex_t *[]){lit(c, "{"), c->ws, body, c->ws, lit(c, "}")}, 5);
out:
    for (int32_t k = 0; k < np; k++)
        free(props[k].conj);
    free(props);
    free(uscope);
    gr_dfa_free(names_dfa);
    return c->failed ? NULL : result;
}

/* ---- entry points ------------------------------------------------------------------------------------- */

static int detect_draft(const json_object *root, bool *declared)
{
    json_object *s = sc_get(root, "$schema");
    const char *u = s && json_object_is_type(s, json_type_string) ? json_object_get_string(s) : "";
    *declared = strstr(u, "draft-0") || strstr(u, "2019-09") || strstr(u, "2020-12");
    if (strstr(u, "draft-04"))
        return 4;
    if (strstr(u, "draft-06"))
        return 6;
    if (strstr(u, "draft-07"))
        return 7;
    if (strstr(u, "2019-09"))
        return 2019;
    if (strstr(u, "draft-03"))
        return 4;
    return 2020;
}

gr_ex_t *gr_schema_ws(gr_arena_t *a, const gr_schema_opts_t *opts)
{
    if (opts->no_whitespace)
        return gr_ex_empty(a);
    /* "" | " " | "\n"{1,2} [ \t]{0,20} */
    gr_ex_t *nl = gr_ex_seq2(a, gr_ex_rep(a, gr_ex_str(a, "\n"), 1, 2),
                             gr_ex_rep(a, gr_ex_alt2(a, gr_ex_str(a, " "), gr_ex_str(a, "\t")), 0, 20));
    return gr_ex_opt(a, gr_ex_alt2(a, gr_ex_str(a, " "), nl));
}

lf_code_t gr_schema_compile(const json_object *schema, const gr_schema_opts_t *opts, gr_arena_t *a, gr_rules_t *R,
                            gr_ex_t **value, lf_err_t *err)
{
    sc_t c;
    memset(&c, 0, sizeof c);
    c.a = a;
    c.o = opts;
    c.err = err;
    c.R = R;
    c.any_rule = -1;
    c.ws = gr_schema_ws(a, opts);
    c.root = opts->doc ? opts->doc : schema;
    c.draft = detect_draft(c.root, &c.draft_declared);
    *value = NULL;
    gr_ex_t *v = NULL;
    (void)own;
    if (!c.ws) {
        sc_oom(&c);
    } else if ((!opts->str_delim || sc_delim_check(&c)) && sc_ref_index(&c)) {
        conj_t l = {0};
        if (conj_push(&c, &l, schema, 0, 0))
            v = conj_rule(&c, &l, 0);
    }
    if (!c.failed && !v)
        sc_oom(&c);
    free(c.memo);
    for (int32_t i = 0; i < c.n_bases; i++)
        free(c.bases[i].base);
    free(c.bases);
    for (int32_t i = 0; i < c.n_res; i++)
        free(c.res[i].uri);
    free(c.res);
    for (int32_t i = 0; i < c.n_owned; i++)
        json_object_put(c.owned[i]);
    free(c.owned);
    if (c.failed) {
        lf_code_t code = err ? err->code : LF_ERR_INVALID;
        return code == LF_OK ? LF_ERR_INVALID : code;
    }
    *value = v;
    return LF_OK;
}
