/* request_embed.c - embedding, rerank and score requests (request_embed.h). */
#include "server/request/request_embed.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_ID 0x7fffffff

static json_object *field(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) && !json_object_is_type(v, json_type_null) ? v : NULL;
}

static char *dup_str(json_object *v, size_t *len)
{
    const size_t n = (size_t)json_object_get_string_len(v);
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, json_object_get_string(v), n);
        s[n] = '\0';
    }
    *len = n;
    return s;
}

/* A token id: an integer in [0, 2^31); the vocabulary bound is checked
 * when the model is known. */
static int read_id(json_object *v, const char *param, int32_t *out, req_err_t *e)
{
    if (!json_object_is_type(v, json_type_int) || !req_json_int_in(v, 0, MAX_ID))
        return req_err_set(e, 400, param, NULL, "'%s': token ids must be integers from 0 to %d, got %.40s", param,
                           MAX_ID, json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)
                                       ? req_json_literal(v)
                                       : json_type_to_name(json_object_get_type(v)));
    *out = (int32_t)json_object_get_int64(v);
    return 0;
}

/* An array holding numbers (and maybe strings) as ONE input: the strings'
 * text (joined) then the ids, in order; strings after ids are refused (the
 * text is tokenized first). */
static int read_mixed(json_object *arr, const char *param, embed_in_t *in, req_err_t *e)
{
    const size_t n = json_object_array_length(arr);
    if (n == 0)
        return req_err_set(e, 400, param, NULL, "Input content cannot be empty ('%s' holds an empty array)", param);
    in->ids = malloc(n * sizeof *in->ids);
    if (!in->ids)
        return req_err_set(e, 500, NULL, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_object *v = json_object_array_get_idx(arr, i);
        if (json_object_is_type(v, json_type_string)) {
            if (in->n_ids > 0)
                return req_err_set(e, 400, param, NULL, "'%s': in a mixed input the text must come before the token "
                                   "ids", param);
            size_t l;
            char *s = dup_str(v, &l);
            char *t = s ? realloc(in->text, in->len + l + 1) : NULL;
            if (!t) {
                free(s);
                return req_err_set(e, 500, NULL, NULL, "out of memory");
            }
            memcpy(t + in->len, s, l + 1);
            in->text = t;
            in->len += l;
            free(s);
        } else if (read_id(v, param, &in->ids[in->n_ids++], e) < 0) {
            return -1;
        }
    }
    return 0;
}

static int push_in(embed_req_t *q, embed_in_t **slot, req_err_t *e)
{
    embed_in_t *p = realloc(q->in, (size_t)(q->n_in + 1) * sizeof *p);
    if (!p)
        return req_err_set(e, 500, NULL, NULL, "out of memory");
    q->in = p;
    *slot = &q->in[q->n_in++];
    memset(*slot, 0, sizeof **slot);
    return 0;
}

static bool has_number(json_object *arr)
{
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *v = json_object_array_get_idx(arr, i);
        if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))
            return true;
    }
    return false;
}

static int read_inputs(json_object *v, const char *param, embed_req_t *q, req_err_t *e)
{
    embed_in_t *in;
    if (json_object_is_type(v, json_type_string)) {
        if (push_in(q, &in, e) < 0)
            return -1;
        in->text = dup_str(v, &in->len);
        return in->text ? 0 : req_err_set(e, 500, NULL, NULL, "out of memory");
    }
    if (!json_object_is_type(v, json_type_array))
        return req_err_set(e, 400, param, NULL, "'%s' must be a string, an array of strings, an array of token ids "
                           "or an array of arrays of token ids, got %s", param,
                           json_type_to_name(json_object_get_type(v)));
    const size_t n = json_object_array_length(v);
    if (n == 0)
        return req_err_set(e, 400, param, NULL, "'%s' must not be empty", param);
    if (has_number(v)) { /* one input of ids (after text) */
        if (push_in(q, &in, e) < 0)
            return -1;
        return read_mixed(v, param, in, e);
    }
    for (size_t i = 0; i < n; i++) {
        json_object *x = json_object_array_get_idx(v, i);
        if (push_in(q, &in, e) < 0)
            return -1;
        if (json_object_is_type(x, json_type_string)) {
            in->text = dup_str(x, &in->len);
            if (!in->text)
                return req_err_set(e, 500, NULL, NULL, "out of memory");
        } else if (json_object_is_type(x, json_type_array)) {
            if (read_mixed(x, param, in, e) < 0)
                return -1;
        } else {
            return req_err_set(e, 400, param, NULL, "'%s[%zu]' must be a string or an array of token ids, got %s",
                               param, i, json_type_to_name(json_object_get_type(x)));
        }
    }
    return 0;
}

/* "model": a string or absent. */
static int read_model(json_object *o, char **model, req_err_t *e)
{
    json_object *v = field(o, "model");
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return req_err_set(e, 400, "model", NULL, "'model' must be a string");
    size_t l;
    *model = dup_str(v, &l);
    return *model ? 0 : req_err_set(e, 500, NULL, NULL, "out of memory");
}

static int read_bool(json_object *o, const char *k, bool *out, req_err_t *e)
{
    json_object *v = field(o, k);
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_boolean))
        return req_err_set(e, 400, k, NULL, "'%s' must be true or false", k);
    *out = json_object_get_boolean(v);
    return 1;
}

/* truncate (TEI: bool), truncate_prompt_tokens (vLLM: -1 or k >= 1),
 * truncation_direction (TEI: right / left). */
static int read_truncation(json_object *o, int32_t *truncate, bool *left, req_err_t *e)
{
    bool t = false;
    if (read_bool(o, "truncate", &t, e) < 0)
        return -1;
    if (t)
        *truncate = -1;
    int64_t k;
    int rc = req_json_int(o, "truncate_prompt_tokens", NULL, -1, 1 << 24, &k, e);
    if (rc < 0)
        return -1;
    if (rc > 0 && k == 0)
        return req_err_set(e, 400, "truncate_prompt_tokens", NULL, "'truncate_prompt_tokens' must be -1 (the "
                           "model's limit) or at least 1");
    if (rc > 0) {
        *truncate = (int32_t)k;
        *left = true; /* vLLM keeps the last k tokens */
    }
    json_object *d = field(o, "truncation_direction");
    if (d) {
        const char *s = json_object_is_type(d, json_type_string) ? json_object_get_string(d) : "";
        if (!strcasecmp(s, "left"))
            *left = true;
        else if (!strcasecmp(s, "right"))
            *left = false;
        else
            return req_err_set(e, 400, "truncation_direction", NULL, "'truncation_direction' must be Right or Left");
    }
    return 0;
}

int req_embed_parse(const char *body, size_t len, embed_shape_t shape, embed_req_t *q, req_err_t *e)
{
    memset(q, 0, sizeof *q);
    q->shape = shape;
    q->normalize = 2;
    json_object *o = req_json_parse_object(body, len, e);
    if (!o)
        return -1;
    int rc = -1;
    const char *param = shape == EMBED_SHAPE_TEI ? "inputs" : "input";
    json_object *in = field(o, param);
    if (shape != EMBED_SHAPE_TEI && field(o, "content")) { /* llama-server's field and shape */
        in = field(o, "content");
        param = "content";
        q->shape = EMBED_SHAPE_LLAMA;
    }
    if (!in && shape == EMBED_SHAPE_TEI && field(o, "input"))
        in = field(o, param = "input");
    if (!in) {
        req_err_set(e, 400, param, NULL, "'%s' must be provided", param);
        goto out;
    }
    if (read_inputs(in, param, q, e) < 0 || read_model(o, &q->model, e) < 0 ||
        read_truncation(o, &q->truncate, &q->trunc_left, e) < 0)
        goto out;
    json_object *fmt = field(o, "encoding_format");
    if (fmt) {
        const char *s = json_object_is_type(fmt, json_type_string) ? json_object_get_string(fmt) : "";
        if (!strcmp(s, "base64"))
            q->base64 = true;
        else if (strcmp(s, "float")) {
            req_err_set(e, 400, "encoding_format", NULL, "'encoding_format' must be \"float\" or \"base64\"");
            goto out;
        }
    }
    int64_t v;
    if ((rc = req_json_int(o, "dimensions", NULL, 1, 1 << 20, &v, e)) < 0)
        goto out;
    if (rc > 0)
        q->dimensions = (int32_t)v;
    if ((rc = req_json_int(o, "embd_normalize", NULL, -1, 64, &v, e)) < 0)
        goto out;
    if (rc > 0)
        q->normalize = (int)v;
    bool norm = true;
    if ((rc = read_bool(o, "normalize", &norm, e)) < 0)
        goto out;
    if (rc > 0 && !norm)
        q->normalize = -1;
    rc = 0;
out:
    json_object_put(o);
    if (rc < 0)
        req_embed_free(q);
    return rc;
}

void req_embed_free(embed_req_t *q)
{
    for (int32_t i = 0; q->in && i < q->n_in; i++) {
        free(q->in[i].text);
        free(q->in[i].ids);
    }
    free(q->in);
    free(q->model);
    memset(q, 0, sizeof *q);
}

/* A document: a string or {"text": string}. */
static int read_doc(json_object *v, const char *param, size_t i, req_text_t *out, req_err_t *e)
{
    json_object *t = v;
    if (json_object_is_type(v, json_type_object))
        t = field(v, "text");
    if (!t || !json_object_is_type(t, json_type_string))
        return req_err_set(e, 400, param, NULL, "'%s[%zu]' must be a string or an object with a string \"text\"",
                           param, i);
    out->s = dup_str(t, &out->n);
    return out->s ? 0 : req_err_set(e, 500, NULL, NULL, "out of memory");
}

int req_rerank_parse(const char *body, size_t len, rerank_req_t *q, req_err_t *e)
{
    memset(q, 0, sizeof *q);
    q->raw_scores = -1;
    json_object *o = req_json_parse_object(body, len, e);
    if (!o)
        return -1;
    int rc = -1;
    q->tei = field(o, "texts") != NULL;
    json_object *qv = field(o, "query");
    if (!qv) {
        req_err_set(e, 400, "query", NULL, "'query' must be provided");
        goto out;
    }
    if (!json_object_is_type(qv, json_type_string)) {
        req_err_set(e, 400, "query", NULL, "'query' must be a string");
        goto out;
    }
    if (!(q->query.s = dup_str(qv, &q->query.n))) {
        req_err_set(e, 500, NULL, NULL, "out of memory");
        goto out;
    }
    const char *param = field(o, "documents") || !q->tei ? "documents" : "texts";
    json_object *dv = field(o, param);
    if (!dv || !json_object_is_type(dv, json_type_array) || json_object_array_length(dv) == 0) {
        req_err_set(e, 400, param, NULL, "'%s' must be a non-empty array of strings", param);
        goto out;
    }
    q->n_docs = (int32_t)json_object_array_length(dv);
    q->docs = calloc((size_t)q->n_docs, sizeof *q->docs);
    if (!q->docs) {
        req_err_set(e, 500, NULL, NULL, "out of memory");
        goto out;
    }
    for (int32_t i = 0; i < q->n_docs; i++)
        if (read_doc(json_object_array_get_idx(dv, (size_t)i), param, (size_t)i, &q->docs[i], e) < 0)
            goto out;
    int64_t v;
    q->top_n = q->n_docs;
    if ((rc = req_json_int(o, "top_n", NULL, 0, 1 << 24, &v, e)) < 0)
        goto out;
    if (rc > 0 && v < q->top_n)
        q->top_n = (int32_t)v;
    bool b;
    if ((rc = read_bool(o, "raw_scores", &b, e)) < 0)
        goto out;
    if (rc > 0)
        q->raw_scores = b;
    if (read_bool(o, "return_documents", &q->return_documents, e) < 0 ||
        read_bool(o, "return_text", &q->return_text, e) < 0 || read_model(o, &q->model, e) < 0) {
        rc = -1;
        goto out;
    }
    bool left = false;
    rc = read_truncation(o, &q->truncate, &left, e) < 0 ? -1 : 0;
out:
    json_object_put(o);
    if (rc < 0)
        req_rerank_free(q);
    return rc;
}

void req_rerank_free(rerank_req_t *q)
{
    free(q->query.s);
    for (int32_t i = 0; q->docs && i < q->n_docs; i++)
        free(q->docs[i].s);
    free(q->docs);
    free(q->model);
    memset(q, 0, sizeof *q);
}

static int read_texts(json_object *o, const char *k, req_text_t **out, int32_t *n, req_err_t *e)
{
    json_object *v = field(o, k);
    if (!v)
        return req_err_set(e, 400, k, NULL, "'%s' must be provided", k);
    const bool one = json_object_is_type(v, json_type_string);
    if (!one && (!json_object_is_type(v, json_type_array) || json_object_array_length(v) == 0))
        return req_err_set(e, 400, k, NULL, "'%s' must be a string or a non-empty array of strings", k);
    *n = one ? 1 : (int32_t)json_object_array_length(v);
    *out = calloc((size_t)*n, sizeof **out);
    if (!*out)
        return req_err_set(e, 500, NULL, NULL, "out of memory");
    for (int32_t i = 0; i < *n; i++)
        if (read_doc(one ? v : json_object_array_get_idx(v, (size_t)i), k, (size_t)i, &(*out)[i], e) < 0)
            return -1;
    return 0;
}

int req_score_parse(const char *body, size_t len, score_req_t *q, req_err_t *e)
{
    memset(q, 0, sizeof *q);
    json_object *o = req_json_parse_object(body, len, e);
    if (!o)
        return -1;
    int rc = -1;
    bool left = false;
    if (read_texts(o, "text_1", &q->t1, &q->n1, e) < 0 || read_texts(o, "text_2", &q->t2, &q->n2, e) < 0 ||
        read_model(o, &q->model, e) < 0 || read_truncation(o, &q->truncate, &left, e) < 0)
        goto out;
    if (q->n1 != 1 && q->n1 != q->n2) {
        req_err_set(e, 400, "text_1", NULL, "'text_1' must hold one text or as many as 'text_2' (%d), got %d",
                    q->n2, q->n1);
        goto out;
    }
    rc = 0;
out:
    json_object_put(o);
    if (rc < 0)
        req_score_free(q);
    return rc;
}

void req_score_free(score_req_t *q)
{
    for (int32_t i = 0; q->t1 && i < q->n1; i++)
        free(q->t1[i].s);
    for (int32_t i = 0; q->t2 && i < q->n2; i++)
        free(q->t2[i].s);
    free(q->t1);
    free(q->t2);
    free(q->model);
    memset(q, 0, sizeof *q);
}

int req_embed_sniff(const char *body, size_t len)
{
    req_err_t e;
    json_object *o = req_json_parse_object(body, len, &e);
    if (!o)
        return 0;
    int k = field(o, "query") ? 'r' : field(o, "text_1") ? 's' : field(o, "inputs") || field(o, "input") ? 'e' : 0;
    json_object_put(o);
    return k;
}
