/* api_logprobs.c - logprobs JSON shapes (see api_logprobs.h). */
#include "server/api/api_logprobs.h"

#include <json-c/json.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 9;
        if (k == 9 || (k == 1 && c < 0xC2) || i + k >= n + (k ? 0 : 1))
            return false;
        for (size_t j = 1; j <= k; j++)
            if ((s[i + j] & 0xC0) != 0x80)
                return false;
        i += k + 1;
    }
    return true;
}

static int piece(const vocab_t *v, int32_t token, char *buf, size_t cap)
{
    int n = vocab_token_to_piece(v, token, true, buf, cap);
    if (n < 0)
        n = 0;
    if ((size_t)n > cap)
        n = (int)cap;
    return n;
}

const char *lp_token_str(const vocab_t *v, int32_t token, char *buf, size_t cap)
{
    char raw[512];
    int n = piece(v, token, raw, sizeof raw);
    if (utf8_valid((const unsigned char *)raw, (size_t)n)) {
        snprintf(buf, cap, "%.*s", n, raw);
        return buf;
    }
    size_t w = (size_t)snprintf(buf, cap, "bytes:");
    for (int i = 0; i < n && w + 5 < cap; i++)
        w += (size_t)snprintf(buf + w, cap - w, "\\x%02x", (unsigned char)raw[i]);
    return buf;
}

/* logprob as JSON: finite (logprob.h guarantees it except for banned
 * tokens); -inf is written as -9999.0 as vLLM does. */
static json_object *lp_num(float x)
{
    return json_object_new_double(isfinite(x) ? (double)x : -9999.0);
}

static json_object *tok_obj(const vocab_t *v, int32_t token, float logprob)
{
    char raw[512], s[2600];
    int n = piece(v, token, raw, sizeof raw);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "token", json_object_new_string(lp_token_str(v, token, s, sizeof s)));
    json_object_object_add(o, "logprob", lp_num(logprob));
    json_object *b = json_object_new_array();
    for (int i = 0; i < n; i++)
        json_object_array_add(b, json_object_new_int((unsigned char)raw[i]));
    json_object_object_add(o, "bytes", b);
    return o;
}

json_object *lp_chat_entry(const vocab_t *v, const sched_lp_t *lp)
{
    json_object *o = tok_obj(v, lp->token, lp->logprob);
    json_object *top = json_object_new_array();
    for (int32_t i = 0; i < lp->n_top; i++)
        json_object_array_add(top, tok_obj(v, lp->top[i].token, lp->top[i].logprob));
    json_object_object_add(o, "top_logprobs", top);
    return o;
}

void lp_legacy_init(lp_legacy_t *l)
{
    l->tokens = json_object_new_array();
    l->token_logprobs = json_object_new_array();
    l->top_logprobs = json_object_new_array();
    l->text_offset = json_object_new_array();
}

void lp_legacy_add(lp_legacy_t *l, const vocab_t *v, int32_t token, const sched_lp_t *lp, int32_t off)
{
    char s[2600];
    json_object_array_add(l->tokens, json_object_new_string(lp_token_str(v, token, s, sizeof s)));
    json_object_array_add(l->text_offset, json_object_new_int(off));
    if (!lp || !lp->has) {
        json_object_array_add(l->token_logprobs, NULL);
        json_object_array_add(l->top_logprobs, NULL);
        return;
    }
    json_object_array_add(l->token_logprobs, lp_num(lp->logprob));
    json_object *d = json_object_new_object();
    for (int32_t i = 0; i < lp->n_top; i++)
        json_object_object_add(d, lp_token_str(v, lp->top[i].token, s, sizeof s), lp_num(lp->top[i].logprob));
    json_object_array_add(l->top_logprobs, d);
}

json_object *lp_legacy_take(lp_legacy_t *l)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "tokens", l->tokens);
    json_object_object_add(o, "token_logprobs", l->token_logprobs);
    json_object_object_add(o, "top_logprobs", l->top_logprobs);
    json_object_object_add(o, "text_offset", l->text_offset);
    memset(l, 0, sizeof *l);
    return o;
}

void lp_legacy_free(lp_legacy_t *l)
{
    json_object_put(l->tokens);
    json_object_put(l->token_logprobs);
    json_object_put(l->top_logprobs);
    json_object_put(l->text_offset);
    memset(l, 0, sizeof *l);
}

static void prompt_add(json_object *d, const vocab_t *v, int32_t token, float logprob, int32_t rank)
{
    char key[16], s[2600];
    snprintf(key, sizeof key, "%d", token);
    if (json_object_object_get_ex(d, key, NULL))
        return;
    json_object *e = json_object_new_object();
    json_object_object_add(e, "logprob", lp_num(logprob));
    json_object_object_add(e, "rank", json_object_new_int(rank));
    json_object_object_add(e, "decoded_token", json_object_new_string(lp_token_str(v, token, s, sizeof s)));
    json_object_object_add(d, key, e);
}

json_object *lp_prompt_json(const vocab_t *v, const sched_prompt_lp_t *p)
{
    json_object *a = json_object_new_array();
    for (int32_t i = 0; i < p->n; i++) {
        const sched_lp_t *e = &p->e[i];
        if (!e->has) {
            json_object_array_add(a, NULL);
            continue;
        }
        json_object *d = json_object_new_object();
        prompt_add(d, v, e->token, e->logprob, e->rank);
        for (int32_t k = 0; k < e->n_top; k++)
            prompt_add(d, v, e->top[k].token, e->top[k].logprob, e->top[k].rank);
        json_object_array_add(a, d);
    }
    return a;
}
