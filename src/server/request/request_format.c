/* request_format.c - response_format, structured_outputs, guided_* and the
 * llama.cpp constraint fields (see request_format.h). */
#include "server/request/request_format.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/request/request.h"

static int ffail(struct req_err *e, const char *param, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int ffail(struct req_err *e, const char *param, const char *fmt, ...)
{
    e->status = 400;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    e->code[0] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

static int foom(struct req_err *e)
{
    ffail(e, NULL, "out of memory");
    e->status = 503;
    return -1;
}

/* Present and not null. */
static json_object *get(json_object *o, const char *k)
{
    json_object *v = NULL;
    if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, k, &v) ||
        json_object_is_type(v, json_type_null))
        return NULL;
    return v;
}

/* Takes one constraint; a second one is an error. */
static int set_kind(req_constraint_t *c, req_constraint_kind_t k, const char *param, struct req_err *e)
{
    if (c->kind != REQ_CONSTRAINT_NONE)
        return ffail(e, param, "'%s' cannot be combined with '%s': give one output constraint", param, c->param);
    c->kind = k;
    snprintf(c->param, sizeof c->param, "%s", param);
    return 0;
}

/* A schema given as an object/boolean or as JSON text. */
static int set_schema(req_constraint_t *c, json_object *s, const char *param, struct req_err *e)
{
    if (json_object_is_type(s, json_type_string)) {
        json_object *p = json_tokener_parse(json_object_get_string(s));
        if (!p || !(json_object_is_type(p, json_type_object) || json_object_is_type(p, json_type_boolean))) {
            json_object_put(p);
            return ffail(e, param, "'%s' must be a JSON schema (an object, or a string holding one)", param);
        }
        int rc = set_schema(c, p, param, e);
        json_object_put(p);
        return rc;
    }
    if (!json_object_is_type(s, json_type_object) && !json_object_is_type(s, json_type_boolean))
        return ffail(e, param, "'%s' must be a JSON schema object", param);
    if (set_kind(c, REQ_CONSTRAINT_JSON_SCHEMA, param, e) < 0)
        return -1;
    c->text = strdup(json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    return c->text ? 0 : foom(e);
}

static int set_text(req_constraint_t *c, req_constraint_kind_t k, json_object *v, const char *param,
                    struct req_err *e)
{
    if (!json_object_is_type(v, json_type_string))
        return ffail(e, param, "'%s' must be a string", param);
    if (json_object_get_string_len(v) == 0)
        return ffail(e, param, "'%s' must not be empty", param);
    if (set_kind(c, k, param, e) < 0)
        return -1;
    c->text = strdup(json_object_get_string(v));
    return c->text ? 0 : foom(e);
}

static int set_choice(req_constraint_t *c, json_object *v, const char *param, struct req_err *e)
{
    if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) == 0)
        return ffail(e, param, "'%s' must be a non-empty array of strings", param);
    size_t n = json_object_array_length(v);
    if (set_kind(c, REQ_CONSTRAINT_CHOICE, param, e) < 0)
        return -1;
    c->choices = calloc(n, sizeof *c->choices);
    c->choice_lens = calloc(n, sizeof *c->choice_lens);
    if (!c->choices || !c->choice_lens)
        return foom(e);
    for (size_t i = 0; i < n; i++) {
        json_object *s = json_object_array_get_idx(v, i);
        if (!json_object_is_type(s, json_type_string))
            return ffail(e, param, "'%s' must contain only strings", param);
        c->choice_lens[i] = (size_t)json_object_get_string_len(s);
        c->choices[i] = malloc(c->choice_lens[i] + 1);
        if (!c->choices[i])
            return foom(e);
        memcpy(c->choices[i], json_object_get_string(s), c->choice_lens[i] + 1);
        c->n_choices = i + 1;
    }
    return 0;
}

static int parse_response_format(json_object *o, req_constraint_t *c, struct req_err *e)
{
    json_object *rf = get(o, "response_format");
    if (!rf)
        return 0;
    if (!json_object_is_type(rf, json_type_object))
        return ffail(e, "response_format", "'response_format' must be an object");
    json_object *t = get(rf, "type");
    if (!t || !json_object_is_type(t, json_type_string))
        return ffail(e, "response_format", "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\"");
    const char *type = json_object_get_string(t);
    if (!strcmp(type, "text"))
        return 0;
    if (!strcmp(type, "json_object")) {
        json_object *s = get(rf, "schema");
        if (s)
            return set_schema(c, s, "response_format", e);
        return set_kind(c, REQ_CONSTRAINT_JSON_OBJECT, "response_format", e);
    }
    if (!strcmp(type, "json_schema")) {
        json_object *js = get(rf, "json_schema");
        if (!js || !json_object_is_type(js, json_type_object))
            return ffail(e, "response_format", "'response_format.json_schema' must be an object with a 'schema'");
        json_object *name = get(js, "name"), *strict = get(js, "strict"), *s = get(js, "schema");
        if (name && !json_object_is_type(name, json_type_string))
            return ffail(e, "response_format", "'response_format.json_schema.name' must be a string");
        if (strict && !json_object_is_type(strict, json_type_boolean))
            return ffail(e, "response_format", "'response_format.json_schema.strict' must be a boolean");
        if (strict && !json_object_get_boolean(strict))
            c->strict = false;
        if (!s)
            return set_kind(c, REQ_CONSTRAINT_JSON_OBJECT, "response_format", e);
        return set_schema(c, s, "response_format", e);
    }
    return ffail(e, "response_format", "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", got \"%.60s\"", type);
}

static int parse_structured_outputs(json_object *o, req_constraint_t *c, struct req_err *e)
{
    json_object *so = get(o, "structured_outputs");
    if (!so)
        return 0;
    if (!json_object_is_type(so, json_type_object))
        return ffail(e, "structured_outputs", "'structured_outputs' must be an object");
    json_object_object_foreach(so, k, v) {
        if (json_object_is_type(v, json_type_null))
            continue;
        char param[48];
        snprintf(param, sizeof param, "structured_outputs.%.24s", k);
        int rc = 0;
        if (!strcmp(k, "json"))
            rc = set_schema(c, v, param, e);
        else if (!strcmp(k, "regex"))
            rc = set_text(c, REQ_CONSTRAINT_REGEX, v, param, e);
        else if (!strcmp(k, "choice"))
            rc = set_choice(c, v, param, e);
        else if (!strcmp(k, "grammar"))
            rc = set_text(c, REQ_CONSTRAINT_GRAMMAR, v, param, e);
        else if (!strcmp(k, "json_object")) {
            if (!json_object_is_type(v, json_type_boolean))
                rc = ffail(e, param, "'%s' must be a boolean", param);
            else if (json_object_get_boolean(v))
                rc = set_kind(c, REQ_CONSTRAINT_JSON_OBJECT, param, e);
        } else if (!strcmp(k, "disable_any_whitespace")) {
            if (!json_object_is_type(v, json_type_boolean))
                rc = ffail(e, param, "'%s' must be a boolean", param);
            else
                c->compact = json_object_get_boolean(v);
        } else if (!strcmp(k, "disable_fallback") || !strcmp(k, "whitespace_pattern") ||
                   !strcmp(k, "disable_additional_properties") || !strcmp(k, "structural_tag") ||
                   !strcmp(k, "backend")) {
            if (!(json_object_is_type(v, json_type_boolean) && !json_object_get_boolean(v)) &&
                !(json_object_is_type(v, json_type_string) && !strcmp(k, "backend")))
                rc = ffail(e, param, "'%s' is not supported by this server", param);
        } else {
            rc = ffail(e, param, "unknown field '%s' in 'structured_outputs' (json, regex, choice, grammar, json_object)",
                       k);
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

int req_format_parse(json_object *o, req_constraint_t *c, struct req_err *e)
{
    memset(c, 0, sizeof *c);
    c->strict = true;
    if (parse_response_format(o, c, e) < 0 || parse_structured_outputs(o, c, e) < 0)
        return -1;
    json_object *v;
    if ((v = get(o, "guided_json")) && set_schema(c, v, "guided_json", e) < 0)
        return -1;
    if ((v = get(o, "guided_regex")) && set_text(c, REQ_CONSTRAINT_REGEX, v, "guided_regex", e) < 0)
        return -1;
    if ((v = get(o, "guided_choice")) && set_choice(c, v, "guided_choice", e) < 0)
        return -1;
    if ((v = get(o, "guided_grammar")) && set_text(c, REQ_CONSTRAINT_GRAMMAR, v, "guided_grammar", e) < 0)
        return -1;
    if ((v = get(o, "json_schema")) && set_schema(c, v, "json_schema", e) < 0)
        return -1;
    if ((v = get(o, "grammar")) && set_text(c, REQ_CONSTRAINT_GRAMMAR, v, "grammar", e) < 0)
        return -1;
    if ((v = get(o, "guided_whitespace_pattern")))
        return ffail(e, "guided_whitespace_pattern",
                     "'guided_whitespace_pattern' is not supported: JSON output allows bounded whitespace "
                     "(use structured_outputs.disable_any_whitespace for none)");
    if ((v = get(o, "guided_decoding_backend")) && !json_object_is_type(v, json_type_string))
        return ffail(e, "guided_decoding_backend", "'guided_decoding_backend' must be a string");
    return 0;
}

void req_format_free(req_constraint_t *c)
{
    free(c->text);
    for (size_t i = 0; i < c->n_choices; i++)
        free(c->choices[i]);
    free(c->choices);
    free(c->choice_lens);
    memset(c, 0, sizeof *c);
}
