/* schema_ref.c - $id / $anchor indexing and $ref resolution (RFC 3986
 * reference resolution, JSON pointers). Only resources inside the schema
 * document are reachable; a remote reference is an unsupported "$ref". */
#include "grammar/schema/schema_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_BASE "urn:llm-fcgi:root-schema"

/* ---- URIs ------------------------------------------------------------------ */

typedef struct {
    const char *scheme, *auth, *path, *query, *frag;
    size_t ls, la, lp, lq, lf;
    bool has_scheme, has_auth, has_query, has_frag;
} uri_t;

static void uri_parse(const char *s, uri_t *u)
{
    memset(u, 0, sizeof *u);
    const char *p = s;
    const char *q = p;
    while (*q && *q != ':' && *q != '/' && *q != '?' && *q != '#')
        q++;
    if (*q == ':' && q > p) {
        u->has_scheme = true;
        u->scheme = p;
        u->ls = (size_t)(q - p);
        p = q + 1;
    }
    if (p[0] == '/' && p[1] == '/') {
        p += 2;
        q = p;
        while (*q && *q != '/' && *q != '?' && *q != '#')
            q++;
        u->has_auth = true;
        u->auth = p;
        u->la = (size_t)(q - p);
        p = q;
    }
    q = p;
    while (*q && *q != '?' && *q != '#')
        q++;
    u->path = p;
    u->lp = (size_t)(q - p);
    p = q;
    if (*p == '?') {
        q = ++p;
        while (*q && *q != '#')
            q++;
        u->has_query = true;
        u->query = p;
        u->lq = (size_t)(q - p);
        p = q;
    }
    if (*p == '#') {
        u->has_frag = true;
        u->frag = p + 1;
        u->lf = strlen(p + 1);
    }
}

/* RFC 3986 5.2.4 */
static void remove_dots(char *path)
{
    char *out = path, *in = path;
    while (*in) {
        if (!strncmp(in, "../", 3))
            in += 3;
        else if (!strncmp(in, "./", 2))
            in += 2;
        else if (!strncmp(in, "/./", 3))
            in += 2;
        else if (!strcmp(in, "/."))
            in[1] = '\0';
        else if (!strncmp(in, "/../", 4) || !strcmp(in, "/..")) {
            in += 3;
            if (*in == '\0') {
                in--;
                *in = '/';
            }
            while (out > path && *--out != '/')
                ;
            if (out < path)
                out = path;
            *out = '\0';
        } else if (!strcmp(in, ".") || !strcmp(in, "..")) {
            in += strlen(in);
        } else {
            if (*in == '/')
                *out++ = *in++;
            while (*in && *in != '/')
                *out++ = *in++;
        }
    }
    *out = '\0';
}

/* Resolves ref against base (both may be relative); malloc'd. */
static char *uri_resolve(const char *base, const char *ref)
{
    uri_t b, r;
    uri_parse(base, &b);
    uri_parse(ref, &r);
    size_t cap = strlen(base) + strlen(ref) + 16;
    char *out = malloc(cap), *path = malloc(cap);
    if (!out || !path) {
        free(out);
        free(path);
        return NULL;
    }
    const uri_t *src;  /* scheme/auth source */
    const char *query = NULL;
    size_t lq = 0;
    bool hq = false;
    path[0] = '\0';
    if (r.has_scheme) {
        src = &r;
        snprintf(path, cap, "%.*s", (int)r.lp, r.path);
        hq = r.has_query, query = r.query, lq = r.lq;
    } else if (r.has_auth) {
        src = &r;
        snprintf(path, cap, "%.*s", (int)r.lp, r.path);
        hq = r.has_query, query = r.query, lq = r.lq;
    } else {
        src = &b;
        if (r.lp == 0) {
            snprintf(path, cap, "%.*s", (int)b.lp, b.path);
            if (r.has_query)
                hq = true, query = r.query, lq = r.lq;
            else
                hq = b.has_query, query = b.query, lq = b.lq;
        } else {
            if (r.path[0] == '/') {
                snprintf(path, cap, "%.*s", (int)r.lp, r.path);
            } else if (b.has_auth && b.lp == 0) {
                snprintf(path, cap, "/%.*s", (int)r.lp, r.path);
            } else {
                size_t keep = b.lp;
                while (keep > 0 && b.path[keep - 1] != '/')
                    keep--;
                snprintf(path, cap, "%.*s%.*s", (int)keep, b.path, (int)r.lp, r.path);
            }
            hq = r.has_query, query = r.query, lq = r.lq;
        }
    }
    remove_dots(path);
    size_t w = 0;
    if (src == &r ? r.has_scheme : b.has_scheme)
        w += (size_t)snprintf(out + w, cap - w, "%.*s:", (int)(src == &r ? r.ls : b.ls), src == &r ? r.scheme : b.scheme);
    else if (r.has_scheme == false && b.has_scheme)
        w += (size_t)snprintf(out + w, cap - w, "%.*s:", (int)b.ls, b.scheme);
    const uri_t *as = r.has_scheme || r.has_auth ? &r : &b;
    if (as->has_auth)
        w += (size_t)snprintf(out + w, cap - w, "//%.*s", (int)as->la, as->auth);
    w += (size_t)snprintf(out + w, cap - w, "%s", path);
    if (hq)
        w += (size_t)snprintf(out + w, cap - w, "?%.*s", (int)lq, query);
    if (r.has_frag)
        snprintf(out + w, cap - w, "#%.*s", (int)r.lf, r.frag);
    free(path);
    return out;
}

/* ---- index --------------------------------------------------------------------- */

static bool add_base(sc_t *c, const json_object *node, const char *base)
{
    if (c->n_bases == c->cap_bases) {
        int32_t cap = c->cap_bases ? c->cap_bases * 2 : 64;
        sc_base_t *v = realloc(c->bases, (size_t)cap * sizeof *v);
        if (!v)
            return sc_oom(c);
        c->bases = v;
        c->cap_bases = cap;
    }
    char *b = strdup(base);
    if (!b)
        return sc_oom(c);
    c->bases[c->n_bases++] = (sc_base_t){node, b};
    return true;
}

static bool add_res(sc_t *c, const char *uri, const json_object *node)
{
    for (int32_t i = 0; i < c->n_res; i++)
        if (!strcmp(c->res[i].uri, uri))
            return true; /* first definition wins */
    if (c->n_res == c->cap_res) {
        int32_t cap = c->cap_res ? c->cap_res * 2 : 16;
        sc_res_t *v = realloc(c->res, (size_t)cap * sizeof *v);
        if (!v)
            return sc_oom(c);
        c->res = v;
        c->cap_res = cap;
    }
    char *u = strdup(uri);
    if (!u)
        return sc_oom(c);
    c->res[c->n_res++] = (sc_res_t){u, node};
    return true;
}

static char *strip_frag(const char *u)
{
    const char *h = strchr(u, '#');
    size_t n = h ? (size_t)(h - u) : strlen(u);
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, u, n);
        s[n] = '\0';
    }
    return s;
}

static bool walk(sc_t *c, const json_object *node, const char *base, int depth);

static bool walk_kids(sc_t *c, const json_object *node, const char *base, int depth)
{
    static const char *single[] = {"additionalProperties", "additionalItems", "items", "contains", "propertyNames",
                                   "not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties",
                                   "contentSchema"};
    static const char *arrays[] = {"allOf", "anyOf", "oneOf", "prefixItems", "items"};
    static const char *maps[] = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas",
                                 "dependencies"};
    for (size_t i = 0; i < sizeof single / sizeof *single; i++) {
        json_object *v = sc_get(node, single[i]);
        if (v && (json_object_is_type(v, json_type_object) || json_object_is_type(v, json_type_boolean)) &&
            !walk(c, v, base, depth + 1))
            return false;
    }
    for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) {
        json_object *v = sc_get(node, arrays[i]);
        if (v && json_object_is_type(v, json_type_array))
            for (size_t k = 0; k < json_object_array_length(v); k++)
                if (!walk(c, json_object_array_get_idx(v, k), base, depth + 1))
                    return false;
    }
    for (size_t i = 0; i < sizeof maps / sizeof *maps; i++) {
        json_object *v = sc_get(node, maps[i]);
        if (v && json_object_is_type(v, json_type_object)) {
            json_object_object_foreach((json_object *)v, k, val) {
                (void)k;
                if (json_object_is_type(val, json_type_object) && !walk(c, val, base, depth + 1))
                    return false;
            }
        }
    }
    return true;
}

static bool walk(sc_t *c, const json_object *node, const char *base, int depth)
{
    if (!json_object_is_type(node, json_type_object))
        return true;
    if (depth > 500)
        return sc_fail(c, LF_ERR_UNSUPPORTED, "schema nested too deeply (the nesting limit of 500 was hit)");
    char *nb = NULL;
    const char *use = base;
    json_object *id = sc_get(node, "$id");
    if (!id && c->draft == 4)
        id = sc_get(node, "id");
    json_object *ref = sc_get(node, "$ref");
    if (c->draft <= 7 && ref && json_object_is_type(ref, json_type_string))
        id = NULL; /* before 2019-09 every sibling of $ref is ignored, its id included */
    if (id && json_object_is_type(id, json_type_string)) {
        const char *s = json_object_get_string(id);
        if (s[0] == '#') { /* draft <= 7 plain-name fragment: an anchor */
            char *u = uri_resolve(base, s);
            if (!u || !add_res(c, u, node)) {
                free(u);
                return u ? false : sc_oom(c);
            }
            free(u);
        } else {
            char *u = uri_resolve(base, s);
            nb = u ? strip_frag(u) : NULL;
            if (u && strchr(u, '#') && strchr(u, '#')[1]) { /* id with a fragment */
                if (!add_res(c, u, node)) {
                    free(u);
                    free(nb);
                    return false;
                }
            }
            free(u);
            if (!nb)
                return sc_oom(c);
            if (!add_res(c, nb, node)) {
                free(nb);
                return false;
            }
            use = nb;
        }
    }
    json_object *anc = sc_get(node, "$anchor");
    if (anc && json_object_is_type(anc, json_type_string)) {
        size_t n = strlen(use) + strlen(json_object_get_string(anc)) + 2;
        char *u = malloc(n);
        if (!u) {
            free(nb);
            return sc_oom(c);
        }
        snprintf(u, n, "%s#%s", use, json_object_get_string(anc));
        bool ok = add_res(c, u, node);
        free(u);
        if (!ok) {
            free(nb);
            return false;
        }
    }
    bool ok = add_base(c, node, use) && walk_kids(c, node, use, depth);
    free(nb);
    return ok;
}

bool sc_ref_index(sc_t *c)
{
    return add_res(c, DEFAULT_BASE, c->root) && walk(c, c->root, DEFAULT_BASE, 0);
}

static const char *base_of(sc_t *c, const json_object *s)
{
    for (int32_t i = c->n_bases - 1; i >= 0; i--)
        if (c->bases[i].node == s)
            return c->bases[i].base;
    return DEFAULT_BASE;
}

static int hexv(int ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

static void pct_decode(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '%' && hexv(r[1]) >= 0 && hexv(r[2]) >= 0) {
            *w++ = (char)(hexv(r[1]) * 16 + hexv(r[2]));
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

const json_object *sc_ref_resolve(sc_t *c, const json_object *s, const char *ref)
{
    char *abs = uri_resolve(base_of(c, s), ref);
    if (!abs) {
        sc_oom(c);
        return NULL;
    }
    char *hash = strchr(abs, '#');
    char *frag = NULL;
    if (hash) {
        *hash = '\0';
        frag = hash + 1;
        pct_decode(frag);
    }
    const json_object *doc = NULL;
    for (int32_t i = 0; i < c->n_res; i++)
        if (!strcmp(c->res[i].uri, abs)) {
            doc = c->res[i].node;
            break;
        }
    if (!doc) {
        sc_fail(c, LF_ERR_UNSUPPORTED, "'$ref': the reference \"%.200s\" is outside this schema (remote references are not fetched)", ref);
        free(abs);
        return NULL;
    }
    const json_object *node = doc;
    if (frag && frag[0] == '/') {
        char *tok = frag + 1;
        for (;;) {
            char *slash = strchr(tok, '/');
            if (slash)
                *slash = '\0';
            /* ~1 -> '/', ~0 -> '~' */
            char *w = tok;
            for (char *r = tok; *r; r++) {
                if (r[0] == '~' && r[1] == '1') {
                    *w++ = '/';
                    r++;
                } else if (r[0] == '~' && r[1] == '0') {
                    *w++ = '~';
                    r++;
                } else {
                    *w++ = *r;
                }
            }
            *w = '\0';
            json_object *next = NULL;
            if (json_object_is_type(node, json_type_object)) {
                if (!json_object_object_get_ex(node, tok, &next))
                    next = NULL;
            } else if (json_object_is_type(node, json_type_array)) {
                char *end;
                long idx = strtol(tok, &end, 10);
                if (*tok && !*end && idx >= 0 && (size_t)idx < json_object_array_length(node))
                    next = json_object_array_get_idx(node, (size_t)idx);
            }
            if (!next) {
                sc_fail(c, LF_ERR_INVALID, "'$ref': \"%.200s\" points to nothing in the schema", ref);
                free(abs);
                return NULL;
            }
            node = next;
            if (!slash)
                break;
            tok = slash + 1;
        }
    } else if (frag && frag[0]) {
        size_t n = strlen(abs) + strlen(frag) + 2;
        char *u = malloc(n);
        if (!u) {
            free(abs);
            sc_oom(c);
            return NULL;
        }
        snprintf(u, n, "%s#%s", abs, frag);
        node = NULL;
        for (int32_t i = 0; i < c->n_res; i++)
            if (!strcmp(c->res[i].uri, u)) {
                node = c->res[i].node;
                break;
            }
        free(u);
        if (!node) {
            sc_fail(c, LF_ERR_INVALID, "'$ref': the anchor in \"%.200s\" is not defined", ref);
            free(abs);
            return NULL;
        }
    }
    free(abs);
    return node;
}
