/* grammar.c - the public face of the constraint engine (see grammar.h):
 * sources -> rules -> CFG + lexer, the compiled-grammar cache, matchers. */
#include "grammar/grammar.h"

#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/cfg/cfg.h"
#include "grammar/gbnf/gbnf.h"
#include "grammar/mask/mask.h"
#include "grammar/match/earley.h"
#include "grammar/regex/regex.h"
#include "grammar/schema/schema.h"

#define GCACHE_MAX 512

struct grammar {
    int refs;
    gr_cfg_t *cfg;
    gr_lexer_t *lx;
    double compile_s;
};

typedef struct {
    char *key;
    grammar_t *g;
    uint64_t used;
} gentry_t;

struct grammar_engine {
    const vocab_t *vocab;
    gr_vindex_t *vi;
    gr_mask_cache_t *cache;
    pthread_mutex_t mu;
    gentry_t *gc;
    int32_t n_gc;
    uint64_t tick;
    grammar_stats_t st;
};

struct grammar_matcher {
    grammar_engine_t *e;
    grammar_t *g;
    gr_matcher_t *m;
    gr_mask_scratch_t *s;
    bool finished;
};

void grammar_opts_default(grammar_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->strict = true;
    o->time_limit_ms = 5000;
    o->memory_limit = (size_t)256 << 20;
}

grammar_engine_t *grammar_engine_create(const vocab_t *v, size_t cache_bytes, lf_err_t *err)
{
    grammar_engine_t *e = calloc(1, sizeof *e);
    if (!e) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    e->vocab = v;
    e->vi = gr_vindex_create(v, err);
    e->cache = e->vi ? gr_mask_cache_create(cache_bytes) : NULL;
    e->gc = calloc(GCACHE_MAX, sizeof *e->gc);
    if (!e->vi || !e->cache || !e->gc) {
        if (e->vi && (!e->cache || !e->gc))
            lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        gr_vindex_free(e->vi);
        gr_mask_cache_free(e->cache);
        free(e->gc);
        free(e);
        return NULL;
    }
    pthread_mutex_init(&e->mu, NULL);
    return e;
}

void grammar_engine_free(grammar_engine_t *e)
{
    if (!e)
        return;
    for (int32_t i = 0; i < e->n_gc; i++) {
        free(e->gc[i].key);
        grammar_release(e->gc[i].g);
    }
    free(e->gc);
    gr_mask_cache_free(e->cache);
    gr_vindex_free(e->vi);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

int32_t grammar_engine_n_words(const grammar_engine_t *e)
{
    return e->vi->n_words;
}

const vocab_t *grammar_engine_vocab(const grammar_engine_t *e)
{
    return e->vocab;
}

void grammar_engine_stats(grammar_engine_t *e, grammar_stats_t *out)
{
    gr_mask_cache_stats_t cs;
    gr_mask_cache_stats(e->cache, &cs);
    pthread_mutex_lock(&e->mu);
    *out = e->st;
    pthread_mutex_unlock(&e->mu);
    out->mask_cache_hits = cs.hits;
    out->mask_cache_misses = cs.misses;
    out->mask_cache_bytes = cs.bytes;
}

void grammar_engine_note_mask(grammar_engine_t *e, double s)
{
    static const double edges[11] = {10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3};
    int b = 0;
    while (b < 11 && s > edges[b])
        b++;
    pthread_mutex_lock(&e->mu);
    e->st.masks++;
    e->st.mask_seconds += s;
    e->st.mask_hist[b]++;
    pthread_mutex_unlock(&e->mu);
}

/* ---- grammars --------------------------------------------------------------------- */

void grammar_retain(grammar_t *g)
{
    __atomic_add_fetch(&g->refs, 1, __ATOMIC_RELAXED);
}

void grammar_release(grammar_t *g)
{
    if (!g || __atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    gr_lexer_free(g->lx);
    gr_cfg_free(g->cfg);
    free(g);
}

double grammar_compile_seconds(const grammar_t *g)
{
    return g->compile_s;
}

char *grammar_dump(const grammar_t *g)
{
    return gr_cfg_dump(g->cfg);
}

static grammar_t *cache_get(grammar_engine_t *e, const char *key)
{
    if (!key)
        return NULL;
    pthread_mutex_lock(&e->mu);
    for (int32_t i = 0; i < e->n_gc; i++)
        if (!strcmp(e->gc[i].key, key)) {
            e->gc[i].used = ++e->tick;
            grammar_t *g = e->gc[i].g;
            grammar_retain(g);
            e->st.cache_hits++;
            pthread_mutex_unlock(&e->mu);
            return g;
        }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

grammar_t *grammar_lookup(grammar_engine_t *e, const char *key)
{
    return cache_get(e, key);
}

static void cache_put(grammar_engine_t *e, const char *key, grammar_t *g)
{
    if (!key)
        return;
    char *k = strdup(key);
    if (!k)
        return;
    pthread_mutex_lock(&e->mu);
    int32_t slot = e->n_gc;
    if (e->n_gc == GCACHE_MAX) {
        slot = 0;
        for (int32_t i = 1; i < e->n_gc; i++)
            if (e->gc[i].used < e->gc[slot].used)
                slot = i;
        free(e->gc[slot].key);
        grammar_release(e->gc[slot].g);
    } else {
        e->n_gc++;
    }
    grammar_retain(g);
    e->gc[slot] = (gentry_t){k, g, ++e->tick};
    pthread_mutex_unlock(&e->mu);
}

static void note_compile(grammar_engine_t *e, bool ok, double s)
{
    pthread_mutex_lock(&e->mu);
    e->st.compiles++;
    if (!ok)
        e->st.compile_errors++;
    e->st.compile_seconds += s;
    pthread_mutex_unlock(&e->mu);
}

static void limits_of(const grammar_opts_t *o, gr_limits_t *lim)
{
    memset(lim, 0, sizeof *lim);
    int64_t ms = o && o->time_limit_ms > 0 ? o->time_limit_ms : 5000;
    lim->deadline_ns = gr_now_ns() + ms * 1000000LL;
}

static size_t mem_limit(const grammar_opts_t *o)
{
    return o && o->memory_limit ? o->memory_limit : (size_t)256 << 20;
}

/* Builds the CFG of rules R (start) and wraps it; frees R and a. */
static grammar_t *build(grammar_engine_t *e, gr_arena_t *a, gr_rules_t *R, int32_t start, const gr_limits_t *lim,
                        int64_t t0, const char *key, lf_err_t *err)
{
    gr_cfg_t *cfg = gr_cfg_build(R->v, R->n, start, lim, err);
    if (!cfg && a->over)
        lf_err_set(err, LF_ERR_UNSUPPORTED, "grammar too large: the compile memory limit was hit");
    gr_rules_free(R);
    gr_arena_free(a);
    grammar_t *g = cfg ? calloc(1, sizeof *g) : NULL;
    if (g) {
        g->refs = 1;
        g->cfg = cfg;
        g->lx = gr_lexer_create(cfg);
        if (!g->lx) {
            gr_cfg_free(cfg);
            free(g);
            g = NULL;
        }
    } else {
        gr_cfg_free(cfg);
    }
    if (!g && cfg)
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    double s = (double)(gr_now_ns() - t0) * 1e-9;
    note_compile(e, g != NULL, s);
    if (g) {
        g->compile_s = s;
        cache_put(e, key, g);
    }
    return g;
}

grammar_t *grammar_from_rules(grammar_engine_t *e, gr_arena_t *a, gr_rules_t *R, int32_t start, const char *key,
                              lf_err_t *err)
{
    grammar_t *g = cache_get(e, key);
    if (g) {
        gr_rules_free(R);
        gr_arena_free(a);
        return g;
    }
    gr_limits_t lim;
    limits_of(NULL, &lim);
    return build(e, a, R, start, &lim, gr_now_ns(), key, err);
}

/* One compilation: its cache key, start time, limits, arena and rules. */
typedef struct {
    char *key;
    int64_t t0;
    gr_limits_t lim;
    gr_arena_t a;
    gr_rules_t R;
} sess_t;

/* A cached grammar for key (the session is then unused), or NULL with the
 * session started. Takes ownership of key. */
static grammar_t *sess_begin(grammar_engine_t *e, sess_t *s, char *key, const grammar_opts_t *o)
{
    memset(s, 0, sizeof *s);
    s->key = key;
    grammar_t *g = cache_get(e, key);
    if (g) {
        free(key);
        s->key = NULL;
        return g;
    }
    s->t0 = gr_now_ns();
    limits_of(o, &s->lim);
    gr_arena_init(&s->a, mem_limit(o));
    return NULL;
}

static grammar_t *sess_fail(grammar_engine_t *e, sess_t *s)
{
    gr_rules_free(&s->R);
    gr_arena_free(&s->a);
    note_compile(e, false, (double)(gr_now_ns() - s->t0) * 1e-9);
    free(s->key);
    return NULL;
}

/* The rule start gets x; builds the grammar (the session ends). */
static grammar_t *sess_build(grammar_engine_t *e, sess_t *s, gr_ex_t *x, lf_err_t *err)
{
    int32_t start = x ? gr_rules_add(&s->R) : -1;
    if (start < 0) {
        if (x)
            lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        else if (s->a.over)
            lf_err_set(err, LF_ERR_UNSUPPORTED, "grammar too large: the compile memory limit was hit");
        return sess_fail(e, s);
    }
    s->R.v[start] = x;
    grammar_t *g = build(e, &s->a, &s->R, start, &s->lim, s->t0, s->key, err);
    free(s->key);
    return g;
}

static char *make_key(const char *kind, const grammar_opts_t *o, const char *text, size_t len)
{
    size_t n = strlen(kind) + len + 32;
    char *k = malloc(n);
    if (!k)
        return NULL;
    int w = snprintf(k, n, "%s|%d%d|", kind, o && !o->strict ? 0 : 1, o && o->compact ? 1 : 0);
    memcpy(k + w, text, len);
    k[(size_t)w + len] = '\0';
    return k;
}

grammar_t *grammar_from_schema_object(grammar_engine_t *e, const struct json_object *schema,
                                      const grammar_opts_t *o, lf_err_t *err)
{
    grammar_opts_t def;
    if (!o) {
        grammar_opts_default(&def);
        o = &def;
    }
    const char *canon = json_object_to_json_string_ext((struct json_object *)schema, JSON_C_TO_STRING_PLAIN);
    sess_t s;
    grammar_t *g = sess_begin(e, &s, make_key("schema", o, canon, strlen(canon)), o);
    if (g)
        return g;
    gr_schema_opts_t so = {.strict = o->strict, .no_whitespace = o->compact, .lim = &s.lim};
    gr_ex_t *value = NULL;
    if (gr_schema_compile(schema, &so, &s.a, &s.R, &value, err) != LF_OK)
        return sess_fail(e, &s);
    gr_ex_t *ws = gr_schema_ws(&s.a, &so);
    return sess_build(e, &s, gr_ex_seq3(&s.a, ws, value, ws), err);
}

grammar_t *grammar_from_json_schema(grammar_engine_t *e, const char *json, size_t len, const grammar_opts_t *o,
                                    lf_err_t *err)
{
    json_tokener *tok = json_tokener_new();
    if (!tok) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    json_object *s = json_tokener_parse_ex(tok, json, (int)len);
    bool bad = json_tokener_get_error(tok) != json_tokener_success;
    json_tokener_free(tok);
    if (!s || bad) {
        json_object_put(s);
        lf_err_set(err, LF_ERR_INVALID, "the JSON schema is not valid JSON");
        return NULL;
    }
    grammar_t *g = grammar_from_schema_object(e, s, o, err);
    json_object_put(s);
    return g;
}

grammar_t *grammar_from_any_json(grammar_engine_t *e, bool object_only, const grammar_opts_t *o, lf_err_t *err)
{
    json_object *s = object_only ? json_tokener_parse("{\"type\":\"object\"}") : json_object_new_object();
    if (!s) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    grammar_t *g = grammar_from_schema_object(e, s, o, err);
    json_object_put(s);
    return g;
}

grammar_t *grammar_from_regex(grammar_engine_t *e, const char *re, size_t len, const grammar_opts_t *o,
                              lf_err_t *err)
{
    sess_t s;
    grammar_t *g = sess_begin(e, &s, make_key("regex", o, re, len), o);
    if (g)
        return g;
    gr_ex_t *x = gr_regex_parse(&s.a, re, len, GR_REGEX_FULL, err);
    return x ? sess_build(e, &s, x, err) : sess_fail(e, &s);
}

static int32_t res_find(void *ctx, const char *text, size_t len)
{
    return vocab_find(ctx, text, len);
}

static int res_piece(void *ctx, int32_t id, char *buf, size_t cap, int *is_special)
{
    const vocab_t *v = ctx;
    if (id < 0 || id >= vocab_n_tokens(v))
        return -1;
    *is_special = vocab_is_control(v, id);
    return vocab_token_to_piece(v, id, true, buf, cap);
}

grammar_t *grammar_from_gbnf(grammar_engine_t *e, const char *text, size_t len, const grammar_opts_t *o,
                             lf_err_t *err)
{
    sess_t s;
    grammar_t *g = sess_begin(e, &s, make_key("gbnf", o, text, len), o);
    if (g)
        return g;
    gr_token_resolver_t res = {res_find, res_piece, (void *)e->vocab};
    gr_gbnf_t gb;
    if (gr_gbnf_parse(&s.a, text, len, &res, &gb, err) != LF_OK)
        return sess_fail(e, &s);
    for (int32_t i = 0; i < gb.n_rules; i++) {
        if (gr_rules_add(&s.R) < 0) {
            lf_err_set(err, LF_ERR_NOMEM, "out of memory");
            return sess_fail(e, &s);
        }
        s.R.v[i] = gb.rules[i];
    }
    /* the start: a rule that is just the root */
    return sess_build(e, &s, gr_ex_ref(&s.a, gb.root), err);
}

grammar_t *grammar_from_choices(grammar_engine_t *e, const char *const *choices, const size_t *lens, size_t n,
                                lf_err_t *err)
{
    size_t total = 16;
    for (size_t i = 0; i < n; i++)
        total += lens[i] * 2 + 8;
    char *key = malloc(total);
    if (!key) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    size_t w = (size_t)snprintf(key, total, "choice|%zu|", n);
    for (size_t i = 0; i < n; i++) {
        w += (size_t)snprintf(key + w, total - w, "%zu:", lens[i]);
        memcpy(key + w, choices[i], lens[i]);
        w += lens[i];
    }
    key[w] = '\0';
    sess_t s;
    grammar_t *g = sess_begin(e, &s, key, NULL);
    if (g)
        return g;
    gr_exlist_t l = {0};
    for (size_t i = 0; i < n; i++)
        gr_exlist_push(&s.a, &l, gr_ex_bytes(&s.a, choices[i], lens[i]));
    return sess_build(e, &s, l.fail ? NULL : gr_ex_alt(&s.a, l.v, l.n), err);
}

/* ---- matchers ---------------------------------------------------------------------- */

grammar_matcher_t *grammar_matcher_create(grammar_engine_t *e, grammar_t *g, lf_err_t *err)
{
    grammar_matcher_t *m = calloc(1, sizeof *m);
    if (m) {
        m->e = e;
        m->g = g;
        m->m = gr_matcher_create(g->cfg, g->lx);
        m->s = gr_mask_scratch_create(e->vi);
    }
    if (!m || !m->m || !m->s) {
        if (m) {
            gr_matcher_free(m->m);
            gr_mask_scratch_free(m->s);
            free(m);
        }
        lf_err_set(err, LF_ERR_NOMEM, "out of memory creating a grammar matcher");
        return NULL;
    }
    grammar_retain(g);
    return m;
}

void grammar_matcher_free(grammar_matcher_t *m)
{
    if (!m)
        return;
    gr_matcher_free(m->m);
    gr_mask_scratch_free(m->s);
    grammar_release(m->g);
    free(m);
}

lf_code_t grammar_matcher_mask(grammar_matcher_t *m, uint32_t *mask, lf_err_t *err)
{
    if (m->finished) {
        memset(mask, 0, (size_t)m->e->vi->n_words * sizeof *mask);
        return LF_OK;
    }
    return gr_mask_compute(m->e->vi, m->e->cache, m->s, m->m, mask, err);
}

static bool is_eog(const gr_vindex_t *vi, int32_t t)
{
    for (int32_t i = 0; i < vi->n_eog; i++)
        if (vi->eog[i] == t)
            return true;
    return false;
}

bool grammar_matcher_accept(grammar_matcher_t *m, int32_t token)
{
    const gr_vindex_t *vi = m->e->vi;
    if (m->finished || token < 0 || token >= vi->n_vocab)
        return false;
    if (!vi->tok_bytes[token]) {
        if (m->g->cfg->has_tokens && gr_matcher_feed_special(m->m, token))
            return true;
        if (is_eog(vi, token) && gr_matcher_accepting(m->m)) {
            m->finished = true;
            return true;
        }
        return false;
    }
    if (is_eog(vi, token) && gr_matcher_accepting(m->m)) {
        m->finished = true;
        return true;
    }
    return gr_matcher_feed_bytes(m->m, vi->tok_bytes[token], vi->tok_len[token]);
}

bool grammar_matcher_accept_bytes(grammar_matcher_t *m, const void *p, size_t n)
{
    return !m->finished && gr_matcher_feed_bytes(m->m, p, n);
}

bool grammar_matcher_accepting(const grammar_matcher_t *m)
{
    return m->finished || gr_matcher_accepting(m->m);
}

bool grammar_matcher_done(const grammar_matcher_t *m)
{
    return m->finished || (gr_matcher_accepting(m->m) && !gr_matcher_can_continue(m->m));
}
