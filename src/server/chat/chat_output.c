/* chat_output.c - reasoning + tool-call post-processing of one chat choice
 * (see chat_output.h). */
#include "server/chat/chat_output.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *p;
    size_t len, cap;
} buf_t;

static bool buf_add(buf_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 256;
        while (nc < b->len + n + 1)
            nc *= 2;
        char *t = realloc(b->p, nc);
        if (!t)
            return false;
        b->p = t;
        b->cap = nc;
    }
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return true;
}

/* An event while it is being built: texts as offsets into evtext (which
 * may move while growing). */
typedef struct {
    chat_out_kind_t kind;
    int32_t index;
    size_t text, len, id, name; /* offsets; id/name: SIZE_MAX when absent */
} ev_rec_t;

struct chat_out {
    chat_out_cfg_t cfg;
    vocab_detok_t detok;
    reasoning_t *rp;           /* NULL: mode NONE */
    toolcall_t *tc;            /* NULL: no tool parsing */
    buf_t reasoning, content;  /* the results */
    int32_t n_reasoning_tokens;
    /* events of the current push */
    ev_rec_t *recs;
    size_t n_recs, cap_recs;
    buf_t evtext;
    chat_out_ev_t *evs;
    size_t cap_evs;
    bool nomem;
};

chat_out_t *chat_out_create(const chat_out_cfg_t *cfg, lf_err_t *err)
{
    chat_out_t *co = calloc(1, sizeof *co);
    if (!co) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    co->cfg = *cfg;
    if (cfg->vocab)
        vocab_detok_init(&co->detok, cfg->vocab, cfg->special);
    reasoning_config_t rc = {cfg->reasoning, cfg->starts_in_reasoning, cfg->reasoning_open, cfg->reasoning_close};
    if (cfg->reasoning != REASONING_MODE_NONE && !(co->rp = reasoning_create_cfg(&rc, err)))
        goto fail;
    if (cfg->tools != TOOLCALL_FORMAT_NONE) {
        toolcall_config_t tcfg = {.format = cfg->tools, .seed = cfg->seed, .tools = cfg->tool_defs};
        if (!(co->tc = toolcall_create(&tcfg, err)))
            goto fail;
    }
    return co;
fail:
    chat_out_free(co);
    return NULL;
}

void chat_out_free(chat_out_t *co)
{
    if (!co)
        return;
    reasoning_free(co->rp);
    toolcall_free(co->tc);
    free(co->reasoning.p);
    free(co->content.p);
    free(co->recs);
    free(co->evtext.p);
    free(co->evs);
    free(co);
}

/* ---- event building ---- */

static void ev_reset(chat_out_t *co)
{
    co->n_recs = 0;
    co->evtext.len = 0;
}

static size_t ev_str(chat_out_t *co, const char *s, size_t n)
{
    size_t off = co->evtext.len;
    if (!buf_add(&co->evtext, s, n) || !buf_add(&co->evtext, "", 1))
        co->nomem = true;
    return off;
}

/* Appends an event; merges text into the previous event of the same kind
 * (and call index). */
static void ev_add(chat_out_t *co, chat_out_kind_t kind, int32_t index, const char *text, size_t len,
                   const char *id, const char *name)
{
    if (kind == CHAT_OUT_TOOL_START || kind == CHAT_OUT_TOOL_ARGS) {
        if (!co->cfg.parallel_tool_calls && index > 0)
            return; /* only the first call */
    } else if (len == 0) {
        return;
    }
    if (kind == CHAT_OUT_REASONING && !buf_add(&co->reasoning, text, len))
        co->nomem = true;
    if (kind == CHAT_OUT_CONTENT && !buf_add(&co->content, text, len))
        co->nomem = true;
    ev_rec_t *last = co->n_recs ? &co->recs[co->n_recs - 1] : NULL;
    if (last && last->kind == kind && kind != CHAT_OUT_TOOL_START && last->index == index &&
        last->text + last->len + 1 == co->evtext.len) {
        /* the last string in evtext is this event's text: extend it */
        co->evtext.len--; /* drop its NUL separator */
        ev_str(co, text, len);
        last->len += len;
        return;
    }
    if (co->n_recs == co->cap_recs) {
        size_t nc = co->cap_recs ? co->cap_recs * 2 : 8;
        ev_rec_t *t = realloc(co->recs, nc * sizeof *t);
        if (!t) {
            co->nomem = true;
            return;
        }
        co->recs = t;
        co->cap_recs = nc;
    }
    ev_rec_t r = {.kind = kind, .index = index, .id = SIZE_MAX, .name = SIZE_MAX};
    if (id)
        r.id = ev_str(co, id, strlen(id));
    if (name)
        r.name = ev_str(co, name, strlen(name));
    r.text = ev_str(co, text ? text : "", text ? len : 0);
    r.len = text ? len : 0;
    co->recs[co->n_recs++] = r;
}

static lf_code_t ev_out(chat_out_t *co, const chat_out_ev_t **evs, size_t *n, lf_err_t *err)
{
    *evs = NULL;
    *n = 0;
    if (co->nomem)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    if (co->n_recs > co->cap_evs) {
        chat_out_ev_t *t = realloc(co->evs, co->n_recs * sizeof *t);
        if (!t)
            return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        co->evs = t;
        co->cap_evs = co->n_recs;
    }
    for (size_t i = 0; i < co->n_recs; i++) {
        const ev_rec_t *r = &co->recs[i];
        co->evs[i] = (chat_out_ev_t){.kind = r->kind, .index = r->index, .text = co->evtext.p + r->text,
                                     .len = r->len,
                                     .id = r->id == SIZE_MAX ? NULL : co->evtext.p + r->id,
                                     .name = r->name == SIZE_MAX ? NULL : co->evtext.p + r->name};
    }
    *evs = co->evs;
    *n = co->n_recs;
    return LF_OK;
}

/* ---- the pipeline ---- */

static void tool_events(chat_out_t *co, const toolcall_out_t *o)
{
    for (size_t i = 0; i < o->n; i++) {
        const toolcall_event_t *e = &o->events[i];
        switch (e->kind) {
        case TOOLCALL_EV_CONTENT: ev_add(co, CHAT_OUT_CONTENT, -1, e->text, e->len, NULL, NULL); break;
        case TOOLCALL_EV_START: ev_add(co, CHAT_OUT_TOOL_START, e->index, NULL, 0, e->id, e->name); break;
        case TOOLCALL_EV_ARGS: ev_add(co, CHAT_OUT_TOOL_ARGS, e->index, e->text, e->len, NULL, NULL); break;
        }
    }
}

static lf_code_t content_in(chat_out_t *co, const char *s, size_t n, lf_err_t *err)
{
    if (!co->tc) {
        ev_add(co, CHAT_OUT_CONTENT, -1, s, n, NULL, NULL);
        return LF_OK;
    }
    toolcall_out_t o;
    lf_code_t rc = toolcall_push(co->tc, s, n, &o, err);
    if (rc == LF_OK)
        tool_events(co, &o);
    return rc;
}

static lf_code_t segs_in(chat_out_t *co, const reasoning_out_t *ro, lf_err_t *err)
{
    for (int i = 0; i < ro->n; i++) {
        const reasoning_seg_t *sg = &ro->segs[i];
        if (sg->kind == REASONING_SEG_REASONING) {
            ev_add(co, CHAT_OUT_REASONING, -1, sg->text, sg->len, NULL, NULL);
        } else {
            lf_code_t rc = content_in(co, sg->text, sg->len, err);
            if (rc != LF_OK)
                return rc;
        }
    }
    return LF_OK;
}

static lf_code_t text_in(chat_out_t *co, const char *s, size_t n, lf_err_t *err)
{
    if (!co->rp)
        return content_in(co, s, n, err);
    reasoning_out_t ro;
    lf_code_t rc = reasoning_push(co->rp, s, n, &ro, err);
    if (rc != LF_OK)
        return rc;
    if (ro.token_in_reasoning)
        co->n_reasoning_tokens++;
    return segs_in(co, &ro, err);
}

lf_code_t chat_out_push_text(chat_out_t *co, const char *text, size_t len, const chat_out_ev_t **evs, size_t *n,
                             lf_err_t *err)
{
    ev_reset(co);
    lf_code_t rc = text_in(co, text, len, err);
    if (rc != LF_OK)
        return rc;
    return ev_out(co, evs, n, err);
}

/* The control tokens an active parser needs to see. */
static bool parser_marker(const chat_out_t *co, const char *t)
{
    reasoning_config_t rc = {co->cfg.reasoning, false, co->cfg.reasoning_open, co->cfg.reasoning_close};
    if (co->rp && reasoning_is_marker(&rc, t))
        return true;
    return co->tc && toolcall_format_is_marker(co->cfg.tools, t);
}

lf_code_t chat_out_push_token(chat_out_t *co, int32_t token, const chat_out_ev_t **evs, size_t *n, lf_err_t *err)
{
    const vocab_t *v = co->cfg.vocab;
    if (!v)
        return lf_err_set(err, LF_ERR_INVALID, "no vocabulary");
    char piece[VOCAB_DETOK_MAX];
    int w;
    if (token >= 0 && token < vocab_n_tokens(v) && vocab_is_control(v, token) &&
        parser_marker(co, vocab_token_text(v, token))) {
        const char *t = vocab_token_text(v, token);
        w = (int)strlen(t);
        memcpy(piece, t, (size_t)w);
    } else if ((w = vocab_detok_push(&co->detok, token, piece, sizeof piece)) < 0) {
        return lf_err_set(err, LF_ERR_INVALID, "bad token id %d", (int)token);
    }
    /* a token with no text (part of a UTF-8 character) still counts where
     * the parser is; the end-of-generation token does not */
    if (w == 0 && co->rp) {
        ev_reset(co);
        if (reasoning_in_reasoning(co->rp) && !vocab_is_eog(v, token))
            co->n_reasoning_tokens++;
        return ev_out(co, evs, n, err);
    }
    return chat_out_push_text(co, piece, (size_t)w, evs, n, err);
}

lf_code_t chat_out_finish(chat_out_t *co, const chat_out_ev_t **evs, size_t *n, lf_err_t *err)
{
    ev_reset(co);
    lf_code_t rc = LF_OK;
    if (co->cfg.vocab) {
        char piece[64];
        int w = vocab_detok_flush(&co->detok, piece, sizeof piece);
        if (w > 0)
            rc = text_in(co, piece, (size_t)w, err);
    }
    if (rc == LF_OK && co->rp) {
        reasoning_out_t ro;
        rc = reasoning_finish(co->rp, &ro, err);
        if (rc == LF_OK)
            rc = segs_in(co, &ro, err);
    }
    if (rc == LF_OK && co->tc) {
        toolcall_out_t o;
        rc = toolcall_finish(co->tc, &o, err);
        if (rc == LF_OK)
            tool_events(co, &o);
    }
    if (rc != LF_OK)
        return rc;
    return ev_out(co, evs, n, err);
}

/* ---- results ---- */

const char *chat_out_reasoning(const chat_out_t *co, size_t *len)
{
    if (len)
        *len = co->reasoning.len;
    return co->reasoning.len ? co->reasoning.p : NULL;
}

const char *chat_out_content(const chat_out_t *co, size_t *len)
{
    if (len)
        *len = co->content.len;
    return co->content.len ? co->content.p : NULL;
}

size_t chat_out_n_calls(const chat_out_t *co)
{
    size_t n = co->tc ? toolcall_count(co->tc) : 0;
    return !co->cfg.parallel_tool_calls && n > 1 ? 1 : n;
}

bool chat_out_call(const chat_out_t *co, size_t i, toolcall_call_t *call)
{
    return i < chat_out_n_calls(co) && toolcall_get(co->tc, i, call);
}

int32_t chat_out_reasoning_tokens(const chat_out_t *co)
{
    return co->n_reasoning_tokens;
}

bool chat_out_reasoning_on(const chat_out_t *co)
{
    return co->rp != NULL;
}

bool chat_out_tools_on(const chat_out_t *co)
{
    return co->tc != NULL;
}

json_object *chat_out_message_json(const chat_out_t *co)
{
    size_t l;
    const char *t = chat_out_content(co, &l);
    return chat_out_message_json_content(co, t, l);
}

json_object *chat_out_message_json_content(const chat_out_t *co, const char *content, size_t len)
{
    json_object *m = json_object_new_object();
    if (!m)
        return NULL;
    json_object_object_add(m, "role", json_object_new_string("assistant"));
    size_t l;
    const char *t;
    if (co->rp) {
        t = chat_out_reasoning(co, &l);
        json_object_object_add(m, "reasoning_content", t ? json_object_new_string_len(t, (int)l) : NULL);
    }
    if (content && len)
        json_object_object_add(m, "content", json_object_new_string_len(content, (int)len));
    else
        json_object_object_add(m, "content", co->tc || co->rp ? NULL : json_object_new_string(""));
    json_object *calls = json_object_new_array();
    for (size_t i = 0; i < chat_out_n_calls(co); i++) {
        toolcall_call_t c;
        if (!chat_out_call(co, i, &c))
            continue;
        json_object *o = json_object_new_object(), *f = json_object_new_object();
        json_object_object_add(o, "id", json_object_new_string(c.id));
        json_object_object_add(o, "type", json_object_new_string("function"));
        json_object_object_add(f, "name", json_object_new_string(c.name));
        json_object_object_add(f, "arguments", json_object_new_string_len(c.arguments, (int)c.arguments_len));
        json_object_object_add(o, "function", f);
        json_object_array_add(calls, o);
    }
    json_object_object_add(m, "tool_calls", calls);
    return m;
}

json_object *chat_out_delta_json(const chat_out_ev_t *ev)
{
    json_object *d = json_object_new_object();
    if (!d)
        return NULL;
    switch (ev->kind) {
    case CHAT_OUT_REASONING:
        json_object_object_add(d, "reasoning_content", json_object_new_string_len(ev->text, (int)ev->len));
        break;
    case CHAT_OUT_CONTENT:
        json_object_object_add(d, "content", json_object_new_string_len(ev->text, (int)ev->len));
        break;
    case CHAT_OUT_TOOL_START:
    case CHAT_OUT_TOOL_ARGS: {
        json_object *a = json_object_new_array(), *c = json_object_new_object(), *f = json_object_new_object();
        json_object_object_add(c, "index", json_object_new_int(ev->index));
        if (ev->kind == CHAT_OUT_TOOL_START) {
            json_object_object_add(c, "id", json_object_new_string(ev->id ? ev->id : ""));
            json_object_object_add(c, "type", json_object_new_string("function"));
            json_object_object_add(f, "name", json_object_new_string(ev->name ? ev->name : ""));
            json_object_object_add(f, "arguments", json_object_new_string(""));
        } else {
            json_object_object_add(f, "arguments", json_object_new_string_len(ev->text, (int)ev->len));
        }
        json_object_object_add(c, "function", f);
        json_object_array_add(a, c);
        json_object_object_add(d, "tool_calls", a);
        break;
    }
    }
    return d;
}
