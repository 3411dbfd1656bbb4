/* schema_draft.c - what differs between the JSON Schema drafts a schema
 * declares with "$schema" (04, 06, 07, 2019-09, 2020-12): which keywords
 * exist in its draft, and what an integer is there.
 *
 * A keyword of a later draft in an earlier draft's schema is not a keyword
 * at all (draft-04 has no "const", "contains", "propertyNames"; draft-06 no
 * "if"), so validators of that draft ignore it, and so do the grammar and
 * the validator here. Keywords that later drafts removed ("dependencies")
 * are ignored only where the schema declares such a draft: a schema with
 * no "$schema" is read as 2020-12 but keeps the older keywords, as real
 * schemas without a declaration use both. */
#include <math.h>
#include <string.h>

#include "grammar/schema/schema_impl.h"

static const struct {
    const char *kw;
    int first, last; /* drafts in which the keyword exists */
} sc_drafts[] = {
    {"const", 6, 2020},
    {"contains", 6, 2020},
    {"propertyNames", 6, 2020},
    {"if", 7, 2020},
    {"then", 7, 2020},
    {"else", 7, 2020},
    {"dependentRequired", 2019, 2020},
    {"dependentSchemas", 2019, 2020},
    {"minContains", 2019, 2020},
    {"maxContains", 2019, 2020},
    {"unevaluatedProperties", 2019, 2020},
    {"unevaluatedItems", 2019, 2020},
    {"prefixItems", 2020, 2020},
    {"dependencies", 4, 7},
};

bool sc_draft_has(const sc_t *c, const char *kw)
{
    for (size_t i = 0; i < sizeof sc_drafts / sizeof sc_drafts[0]; i++) {
        if (strcmp(kw, sc_drafts[i].kw))
            continue;
        if (c->draft < sc_drafts[i].first)
            return false;
        /* removed keywords: only where a later draft is declared */
        return c->draft <= sc_drafts[i].last || !c->draft_declared;
    }
    return true;
}

json_object *sc_kw(const sc_t *c, const json_object *s, const char *kw)
{
    return sc_draft_has(c, kw) ? sc_get(s, kw) : NULL;
}

bool sc_kw_ex(const sc_t *c, const json_object *s, const char *kw, json_object **out)
{
    *out = NULL;
    return s && json_object_is_type(s, json_type_object) && sc_draft_has(c, kw) &&
           json_object_object_get_ex(s, kw, out);
}

bool sc_is_integer(const sc_t *c, const json_object *v)
{
    if (json_object_is_type(v, json_type_int))
        return true;
    if (!json_object_is_type(v, json_type_double))
        return false;
    const double d = json_object_get_double(v);
    if (!isfinite(d) || floor(d) != d)
        return false;
    if (c->draft != 4)
        return true;
    /* draft-04: an integer is written without a fraction or an exponent
     * (12345.0 and 1e3 are numbers only); json-c keeps the number's text */
    const char *t = json_object_to_json_string_ext((json_object *)v, JSON_C_TO_STRING_PLAIN);
    return t && !strpbrk(t, ".eE");
}
