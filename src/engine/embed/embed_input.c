/* embed_input.c - embedding and rerank token sequences (embed_input.h). */
#include "engine/embed/embed_input.h"

#include <stdlib.h>
#include <string.h>

#include "engine/gguf/gguf.h"

typedef struct {
    int32_t *p;
    int32_t n, cap;
    bool oom;
} ids_t;

static void put(ids_t *o, const int32_t *src, int32_t n)
{
    if (o->oom || n <= 0)
        return;
    if (o->n + n > o->cap) {
        int32_t cap = o->cap ? o->cap : 64;
        while (cap < o->n + n)
            cap *= 2;
        int32_t *p = realloc(o->p, (size_t)cap * sizeof *p);
        if (!p) {
            o->oom = true;
            return;
        }
        o->p = p;
        o->cap = cap;
    }
    memcpy(o->p + o->n, src, (size_t)n * sizeof *src);
    o->n += n;
}

static void put1(ids_t *o, int32_t id)
{
    if (id >= 0)
        put(o, &id, 1);
}

static lf_code_t tok(const vocab_t *v, const char *s, size_t n, bool add_special, bool parse_special, ids_t *out,
                     lf_err_t *err)
{
    int32_t *ids = NULL;
    size_t k = 0;
    lf_code_t rc = vocab_tokenize(v, s, n, add_special, parse_special, &ids, &k, err);
    if (rc == LF_OK && k > INT32_MAX / 2)
        rc = lf_err_set(err, LF_ERR_INVALID, "input too long");
    if (rc == LF_OK)
        put(out, ids, (int32_t)k);
    free(ids);
    return rc;
}

static lf_code_t finish(ids_t *o, int32_t **ids, int32_t *n, lf_err_t *err)
{
    if (o->oom) {
        free(o->p);
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory while tokenizing");
    }
    *ids = o->p;
    *n = o->n;
    return LF_OK;
}

/* body[0..n) cut to keep tokens, from the start or the end. */
static const int32_t *cut(const int32_t *body, int32_t n, int32_t keep, bool left, int32_t *kept)
{
    if (keep >= n) {
        *kept = n;
        return body;
    }
    *kept = keep > 0 ? keep : 0;
    return left ? body + (n - *kept) : body;
}

lf_code_t embed_tokens_text(const vocab_t *v, const char *text, size_t len, int32_t limit, bool left,
                            int32_t **ids, int32_t *n, lf_err_t *err)
{
    ids_t full = {0};
    lf_code_t rc = tok(v, text, len, true, true, &full, err);
    if (rc != LF_OK || limit <= 0 || full.n <= limit)
        return rc != LF_OK ? (free(full.p), rc) : finish(&full, ids, n, err);
    /* full = [added prefix] body [added suffix]: keep both ends */
    ids_t body = {0};
    if ((rc = tok(v, text, len, false, true, &body, err)) != LF_OK || body.oom) {
        free(full.p);
        free(body.p);
        return rc != LF_OK ? rc : lf_err_set(err, LF_ERR_NOMEM, "out of memory while tokenizing");
    }
    const int32_t pre = vocab_type(v) == VOCAB_TYPE_WPM || (vocab_add_bos(v) && vocab_bos(v) >= 0) ? 1 : 0;
    int32_t suf = full.n - body.n - pre;
    if (suf < 0 || pre + suf > limit) { /* cannot keep the added tokens: plain cut */
        int32_t kept;
        const int32_t *b = cut(full.p, full.n, limit, left, &kept);
        ids_t o = {0};
        put(&o, b, kept);
        free(full.p);
        free(body.p);
        return finish(&o, ids, n, err);
    }
    ids_t o = {0};
    int32_t kept;
    const int32_t *b = cut(body.p, body.n, limit - pre - suf, left, &kept);
    put(&o, full.p, pre);
    put(&o, b, kept);
    put(&o, full.p + full.n - suf, suf);
    free(full.p);
    free(body.p);
    return finish(&o, ids, n, err);
}

const char *embed_rerank_template(const model_t *m)
{
    gguf_str_t s;
    static const char key[] = "tokenizer.chat_template.rerank";
    if (!gguf_get_str(model_gguf(m), key, &s))
        return NULL;
    return s.ptr; /* GGUF strings are not NUL-terminated: see fill_template */
}

/* The template with {query} then {document} replaced (llama.cpp's
 * string_replace_all, twice); malloc'd, NUL-terminated. */
static char *fill_template(const model_t *m, const char *q, size_t ql, const char *d, size_t dl)
{
    gguf_str_t t;
    if (!gguf_get_str(model_gguf(m), "tokenizer.chat_template.rerank", &t))
        return NULL;
    const struct {
        const char *key;
        const char *val;
        size_t n;
    } steps[2] = {{"{query}", q, ql}, {"{document}", d, dl}};
    char *cur = malloc(t.len + 1);
    if (!cur)
        return NULL;
    memcpy(cur, t.ptr, t.len);
    cur[t.len] = '\0';
    size_t cur_n = t.len;
    for (int k = 0; k < 2; k++) {
        const size_t kl = strlen(steps[k].key);
        size_t count = 0;
        for (const char *p = cur; (p = memmem(p, cur_n - (size_t)(p - cur), steps[k].key, kl)); p += kl)
            count++;
        char *next = malloc(cur_n + count * steps[k].n + 1);
        if (!next) {
            free(cur);
            return NULL;
        }
        size_t o = 0;
        const char *p = cur, *end = cur + cur_n;
        for (const char *hit; (hit = memmem(p, (size_t)(end - p), steps[k].key, kl)); p = hit + kl) {
            memcpy(next + o, p, (size_t)(hit - p));
            o += (size_t)(hit - p);
            memcpy(next + o, steps[k].val, steps[k].n);
            o += steps[k].n;
        }
        memcpy(next + o, p, (size_t)(end - p));
        o += (size_t)(end - p);
        next[o] = '\0';
        free(cur);
        cur = next;
        cur_n = o;
    }
    return cur;
}

/* The text of ids[0..k) (special tokens as their text); malloc'd. */
static char *pieces_text(const vocab_t *v, const int32_t *ids, int32_t k, size_t *len)
{
    size_t cap = 64, n = 0;
    char *t = malloc(cap);
    for (int32_t i = 0; t && i < k; i++) {
        int r = vocab_token_to_piece(v, ids[i], true, t + n, cap - n);
        if (r < 0)
            continue;
        if ((size_t)r >= cap - n) {
            while ((size_t)r >= cap - n)
                cap *= 2;
            char *p = realloc(t, cap);
            if (!p) {
                free(t);
                return NULL;
            }
            t = p;
            r = vocab_token_to_piece(v, ids[i], true, t + n, cap - n);
        }
        n += (size_t)r;
    }
    if (t)
        t[n] = '\0';
    *len = n;
    return t;
}

static lf_code_t pair_template(const model_t *m, const char *q, size_t ql, const char *d, size_t dl, ids_t *out,
                               lf_err_t *err)
{
    char *prompt = fill_template(m, q, ql, d, dl);
    if (!prompt)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    lf_code_t rc = tok(model_vocab(m), prompt, strlen(prompt), false, true, out, err);
    free(prompt);
    return rc;
}

/* The vocabulary's layout with the query and document cut to qk and dk
 * tokens (< 0: whole). */
static void pair_layout(const vocab_t *v, const ids_t *qt, const ids_t *dt, int32_t qk, int32_t dk, ids_t *out)
{
    int32_t eos = vocab_eos(v) >= 0 ? vocab_eos(v) : vocab_sep(v);
    if (vocab_add_bos(v))
        put1(out, vocab_bos(v));
    put(out, qt->p, qk < 0 ? qt->n : qk);
    if (vocab_add_eos(v))
        put1(out, eos);
    if (vocab_add_sep(v))
        put1(out, vocab_sep(v));
    put(out, dt->p, dk < 0 ? dt->n : dk);
    if (vocab_add_eos(v))
        put1(out, eos);
}

lf_code_t embed_tokens_pair(const model_t *m, const char *q, size_t ql, const char *d, size_t dl, int32_t limit,
                            int32_t **ids, int32_t *n, lf_err_t *err)
{
    const vocab_t *v = model_vocab(m);
    ids_t out = {0};
    lf_code_t rc;
    if (embed_rerank_template(m)) {
        if ((rc = pair_template(m, q, ql, d, dl, &out, err)) != LF_OK) {
            free(out.p);
            return rc;
        }
        if (limit <= 0 || out.n <= limit)
            return finish(&out, ids, n, err);
        /* cut the document's text (then the query's) to the most tokens
         * that let the prompt fit; the template stays whole */
        char *cutd = NULL, *cutq = NULL;
        size_t cdl = dl, cql = ql;
        const char *cd = d, *cq = q;
        for (int part = 0; part < 2 && rc == LF_OK && out.n > limit; part++) {
            ids_t pt = {0};
            if ((rc = tok(v, part ? q : d, part ? ql : dl, false, true, &pt, err)) != LF_OK)
                break;
            int32_t lo = 0, hi = pt.n; /* the best keep is in [lo, hi) ... */
            while (rc == LF_OK && lo < hi) {
                const int32_t mid = (lo + hi + 1) / 2;
                size_t tl;
                char *t = pieces_text(v, pt.p, mid, &tl);
                ids_t trial = {0};
                rc = t ? pair_template(m, part ? t : cq, part ? tl : cql, part ? cd : t, part ? cdl : tl, &trial, err)
                       : lf_err_set(err, LF_ERR_NOMEM, "out of memory");
                if (rc == LF_OK && trial.n <= limit)
                    lo = mid;
                else
                    hi = mid - 1;
                free(trial.p);
                free(t);
            }
            char *t = rc == LF_OK ? pieces_text(v, pt.p, lo, part ? &cql : &cdl) : NULL;
            free(pt.p);
            if (rc == LF_OK && !t)
                rc = lf_err_set(err, LF_ERR_NOMEM, "out of memory");
            if (rc != LF_OK)
                break;
            if (part) {
                cutq = t;
                cq = t;
            } else {
                cutd = t;
                cd = t;
            }
            out.n = 0;
            rc = pair_template(m, cq, cql, cd, cdl, &out, err);
        }
        free(cutd);
        free(cutq);
        if (rc == LF_OK && out.n > limit)
            rc = lf_err_set(err, LF_ERR_CONTEXT, "the rerank template alone has more than %d tokens", limit);
        if (rc != LF_OK) {
            free(out.p);
            return rc;
        }
        return finish(&out, ids, n, err);
    }
    ids_t qt = {0}, dt = {0};
    if ((rc = tok(v, q, ql, false, false, &qt, err)) != LF_OK || (rc = tok(v, d, dl, false, false, &dt, err)) != LF_OK) {
        free(qt.p);
        free(dt.p);
        return rc;
    }
    pair_layout(v, &qt, &dt, -1, -1, &out);
    if (limit > 0 && out.n > limit) {
        const int32_t extra = out.n - qt.n - dt.n;
        int32_t dk = dt.n, qk = qt.n;
        int32_t over = out.n - limit;
        const int32_t from_d = over < dk ? over : dk;
        dk -= from_d;
        over -= from_d;
        qk -= over < qk ? over : qk;
        out.n = 0;
        if (extra <= limit)
            pair_layout(v, &qt, &dt, qk, dk, &out);
    }
    free(qt.p);
    free(dt.p);
    if (limit > 0 && out.n > limit) {
        free(out.p);
        return lf_err_set(err, LF_ERR_CONTEXT, "a rerank pair needs more than %d tokens", limit);
    }
    return finish(&out, ids, n, err);
}
