/* schema_validate.c - a JSON Schema validator for literal values, used to
 * keep only the enum/const values that satisfy every other keyword of
 * their schema (so "enum" next to "pattern", "not", "if" ... stays exact).
 * It knows every assertion keyword of drafts 4 to 2020-12 except
 * $dynamicRef and unevaluated*; a value it cannot judge is kept out. */
#include "grammar/schema/schema_impl.h"

#include <math.h>
#include <string.h>

static bool is_num(const json_object *v)
{
    return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
}

bool sc_json_equal(const json_object *a, const json_object *b)
{
    if (is_num(a) && is_num(b))
        return sc_num_cmp(a, b) == 0;
    json_type ta = json_object_get_type(a), tb = json_object_get_type(b);
    if (ta != tb)
        return false;
    switch (ta) {
    case json_type_null:
        return true;
    case json_type_boolean:
        return json_object_get_boolean(a) == json_object_get_boolean(b);
    case json_type_string:
        return json_object_get_string_len(a) == json_object_get_string_len(b) &&
               !memcmp(json_object_get_string((json_object *)a), json_object_get_string((json_object *)b),
                       (size_t)json_object_get_string_len(a));
    case json_type_array: {
        size_t n = json_object_array_length(a);
        if (n != json_object_array_length(b))
            return false;
        for (size_t i = 0; i < n; i++)
            if (!sc_json_equal(json_object_array_get_idx(a, i), json_object_array_get_idx(b, i)))
                return false;
        return true;
    }
    case json_type_object: {
        if (json_object_object_length(a) != json_object_object_length(b))
            return false;
        json_object_object_foreach((json_object *)a, k, va) {
            json_object *vb;
            if (!json_object_object_get_ex(b, k, &vb) || !sc_json_equal(va, vb))
                return false;
        }
        return true;
    }
    default:
        return false;
    }
}

static size_t cp_len(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

static bool type_ok(const sc_t *c, const json_object *v, const char *t)
{
    if (!strcmp(t, "null"))
        return json_object_is_type(v, json_type_null);
    if (!strcmp(t, "boolean"))
        return json_object_is_type(v, json_type_boolean);
    if (!strcmp(t, "object"))
        return json_object_is_type(v, json_type_object);
    if (!strcmp(t, "array"))
        return json_object_is_type(v, json_type_array);
    if (!strcmp(t, "string"))
        return json_object_is_type(v, json_type_string);
    if (!strcmp(t, "number"))
        return is_num(v);
    if (!strcmp(t, "integer"))
        return sc_is_integer(c, v);
    return false;
}

static bool validate(sc_t *c, const json_object *v, const json_object *s, int depth);

static bool num_kw(const json_object *s, const char *k, const json_object **out)
{
    json_object *x = sc_get(s, k);
    if (x && is_num(x)) {
        *out = x;
        return true;
    }
    return false;
}

static bool validate(sc_t *c, const json_object *v, const json_object *s, int depth)
{
    if (depth > 200 || c->failed)
        return false;
    if (json_object_is_type(s, json_type_boolean))
        return json_object_get_boolean(s);
    if (!json_object_is_type(s, json_type_object))
        return false;
    json_object *x;
    if ((x = sc_get(s, "$ref")) && json_object_is_type(x, json_type_string)) {
        const json_object *t = sc_ref_resolve(c, s, json_object_get_string(x));
        if (!t || !validate(c, v, t, depth + 1))
            return false;
        if (c->draft <= 7)
            return true; /* siblings of $ref are ignored before 2019-09 */
    }
    if ((x = sc_get(s, "type"))) {
        bool ok = false;
        if (json_object_is_type(x, json_type_string))
            ok = type_ok(c, v, json_object_get_string(x));
        else if (json_object_is_type(x, json_type_array))
            for (size_t i = 0; i < json_object_array_length(x) && !ok; i++) {
                json_object *t = json_object_array_get_idx(x, i);
                ok = json_object_is_type(t, json_type_string) && type_ok(c, v, json_object_get_string(t));
            }
        if (!ok)
            return false;
    }
    if ((x = sc_get(s, "enum")) && json_object_is_type(x, json_type_array)) {
        bool ok = false;
        for (size_t i = 0; i < json_object_array_length(x) && !ok; i++)
            ok = sc_json_equal(v, json_object_array_get_idx(x, i));
        if (!ok)
            return false;
    }
    if (sc_kw_ex(c, s, "const", &x) && !sc_json_equal(v, x))
        return false;
    if (json_object_is_type(v, json_type_string)) {
        const char *str = json_object_get_string((json_object *)v);
        size_t len = (size_t)json_object_get_string_len(v), cps = cp_len(str, len);
        if ((x = sc_get(s, "minLength")) && is_num(x) && (double)cps < json_object_get_double(x))
            return false;
        if ((x = sc_get(s, "maxLength")) && is_num(x) && (double)cps > json_object_get_double(x))
            return false;
        if ((x = sc_get(s, "pattern")) && json_object_is_type(x, json_type_string)) {
            bool ok;
            if (!sc_pattern_match(c, json_object_get_string(x), str, len, &ok) || !ok)
                return false;
        }
        if ((x = sc_get(s, "format")) && json_object_is_type(x, json_type_string) &&
            !sc_format_match(c, json_object_get_string(x), str, len))
            return false;
    }
    if (is_num(v)) {
        const json_object *b;
        json_object *ex;
        bool d4 = c->draft == 4;
        if (num_kw(s, "minimum", &b)) {
            bool excl = d4 && (ex = sc_get(s, "exclusiveMinimum")) && json_object_is_type(ex, json_type_boolean) &&
                        json_object_get_boolean(ex);
            int cmp = sc_num_cmp(v, b);
            if (cmp < 0 || (excl && cmp == 0))
                return false;
        }
        if (num_kw(s, "maximum", &b)) {
            bool excl = d4 && (ex = sc_get(s, "exclusiveMaximum")) && json_object_is_type(ex, json_type_boolean) &&
                        json_object_get_boolean(ex);
            int cmp = sc_num_cmp(v, b);
            if (cmp > 0 || (excl && cmp == 0))
                return false;
        }
        if (num_kw(s, "exclusiveMinimum", &b) && sc_num_cmp(v, b) <= 0)
            return false;
        if (num_kw(s, "exclusiveMaximum", &b) && sc_num_cmp(v, b) >= 0)
            return false;
        if (num_kw(s, "multipleOf", &b)) {
            double q = json_object_get_double(v) / json_object_get_double(b);
            if (!isfinite(q) || fabs(q - nearbyint(q)) > 1e-9)
                return false;
        }
    }
    if (json_object_is_type(v, json_type_object)) {
        size_t np = (size_t)json_object_object_length(v);
        if ((x = sc_get(s, "minProperties")) && is_num(x) && (double)np < json_object_get_double(x))
            return false;
        if ((x = sc_get(s, "maxProperties")) && is_num(x) && (double)np > json_object_get_double(x))
            return false;
        if ((x = sc_get(s, "required")) && json_object_is_type(x, json_type_array))
            for (size_t i = 0; i < json_object_array_length(x); i++) {
                json_object *k = json_object_array_get_idx(x, i);
                if (json_object_is_type(k, json_type_string) && !json_object_object_get_ex(v, json_object_get_string(k), NULL))
                    return false;
            }
        json_object *props = sc_get(s, "properties"), *pp = sc_get(s, "patternProperties"),
                    *ap = sc_get(s, "additionalProperties"), *pn = sc_kw(c, s, "propertyNames");
        json_object_object_foreach((json_object *)v, key, val) {
            bool matched = false;
            json_object *ps;
            if (props && json_object_object_get_ex(props, key, &ps)) {
                matched = true;
                if (!validate(c, val, ps, depth + 1))
                    return false;
            }
            if (pp && json_object_is_type(pp, json_type_object)) {
                json_object_object_foreach(pp, pat, psch) {
                    bool ok;
                    if (sc_pattern_match(c, pat, key, strlen(key), &ok) && ok) {
                        matched = true;
                        if (!validate(c, val, psch, depth + 1))
                            return false;
                    }
                }
            }
            if (!matched && ap && !validate(c, val, ap, depth + 1))
                return false;
            if (pn) {
                json_object *ks = json_object_new_string(key);
                bool ok = ks && validate(c, ks, pn, depth + 1);
                json_object_put(ks);
                if (!ok)
                    return false;
            }
        }
        json_object *dr = sc_kw(c, s, "dependentRequired"), *dep = sc_kw(c, s, "dependencies"),
                    *ds = sc_kw(c, s, "dependentSchemas");
        json_object *maps[3] = {dr, dep, ds};
        for (int m = 0; m < 3; m++) {
            if (!maps[m] || !json_object_is_type(maps[m], json_type_object))
                continue;
            json_object_object_foreach(maps[m], k, need) {
                if (!json_object_object_get_ex(v, k, NULL))
                    continue;
                if (json_object_is_type(need, json_type_array)) {
                    for (size_t i = 0; i < json_object_array_length(need); i++) {
                        json_object *r = json_object_array_get_idx(need, i);
                        if (json_object_is_type(r, json_type_string) &&
                            !json_object_object_get_ex(v, json_object_get_string(r), NULL))
                            return false;
                    }
                } else if (!validate(c, v, need, depth + 1)) {
                    return false;
                }
            }
        }
    }
    if (json_object_is_type(v, json_type_array)) {
        size_t n = json_object_array_length(v);
        if ((x = sc_get(s, "minItems")) && is_num(x) && (double)n < json_object_get_double(x))
            return false;
        if ((x = sc_get(s, "maxItems")) && is_num(x) && (double)n > json_object_get_double(x))
            return false;
        json_object *items = sc_get(s, "items"), *prefix = sc_kw(c, s, "prefixItems"), *addl = sc_get(s, "additionalItems");
        size_t np = 0;
        if (prefix && json_object_is_type(prefix, json_type_array)) {
            np = json_object_array_length(prefix);
            for (size_t i = 0; i < n && i < np; i++)
                if (!validate(c, json_object_array_get_idx(v, i), json_object_array_get_idx(prefix, i), depth + 1))
                    return false;
            if (items)
                for (size_t i = np; i < n; i++)
                    if (!validate(c, json_object_array_get_idx(v, i), items, depth + 1))
                        return false;
        } else if (items && json_object_is_type(items, json_type_array)) {
            np = json_object_array_length(items);
            for (size_t i = 0; i < n && i < np; i++)
                if (!validate(c, json_object_array_get_idx(v, i), json_object_array_get_idx(items, i), depth + 1))
                    return false;
            if (addl)
                for (size_t i = np; i < n; i++)
                    if (!validate(c, json_object_array_get_idx(v, i), addl, depth + 1))
                        return false;
        } else if (items) {
            for (size_t i = 0; i < n; i++)
                if (!validate(c, json_object_array_get_idx(v, i), items, depth + 1))
                    return false;
        }
        if ((x = sc_get(s, "uniqueItems")) && json_object_is_type(x, json_type_boolean) && json_object_get_boolean(x))
            for (size_t i = 0; i < n; i++)
                for (size_t j = i + 1; j < n; j++)
                    if (sc_json_equal(json_object_array_get_idx(v, i), json_object_array_get_idx(v, j)))
                        return false;
        if ((x = sc_kw(c, s, "contains"))) {
            size_t hits = 0;
            for (size_t i = 0; i < n; i++)
                hits += validate(c, json_object_array_get_idx(v, i), x, depth + 1);
            json_object *mn = sc_kw(c, s, "minContains"), *mx = sc_kw(c, s, "maxContains");
            double lo = mn && is_num(mn) ? json_object_get_double(mn) : 1;
            if ((double)hits < lo || (mx && is_num(mx) && (double)hits > json_object_get_double(mx)))
                return false;
        }
    }
    if ((x = sc_get(s, "allOf")) && json_object_is_type(x, json_type_array))
        for (size_t i = 0; i < json_object_array_length(x); i++)
            if (!validate(c, v, json_object_array_get_idx(x, i), depth + 1))
                return false;
    if ((x = sc_get(s, "anyOf")) && json_object_is_type(x, json_type_array)) {
        bool ok = false;
        for (size_t i = 0; i < json_object_array_length(x) && !ok; i++)
            ok = validate(c, v, json_object_array_get_idx(x, i), depth + 1);
        if (!ok)
            return false;
    }
    if ((x = sc_get(s, "oneOf")) && json_object_is_type(x, json_type_array)) {
        int hits = 0;
        for (size_t i = 0; i < json_object_array_length(x); i++)
            hits += validate(c, v, json_object_array_get_idx(x, i), depth + 1);
        if (hits != 1)
            return false;
    }
    if ((x = sc_get(s, "not")) && validate(c, v, x, depth + 1))
        return false;
    if ((x = sc_kw(c, s, "if"))) {
        json_object *br = validate(c, v, x, depth + 1) ? sc_kw(c, s, "then") : sc_kw(c, s, "else");
        if (br && !validate(c, v, br, depth + 1))
            return false;
    }
    return !c->failed;
}

bool sc_validate(sc_t *c, const json_object *v, const sc_ent_t *ents, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        if (!validate(c, v, ents[i].s, 0))
            return false;
    return true;
}
