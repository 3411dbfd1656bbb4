/* toolcall_harness.h - the table-driven harness of the tool-call parser
 * tests (test_toolcall.c, test_toolcall_formats.c): each case is fed token
 * by token (as listed), at every 2-way split and byte by byte; the streamed
 * events must rebuild the expected calls and content, agree with the
 * non-streamed result, and never put markup in content. Header-only test
 * helper (static functions), included once per test program. */
#ifndef LF_TOOLCALL_HARNESS_H
#define LF_TOOLCALL_HARNESS_H

#include "chat/parse/toolcall.h"
#include "tap.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 32
#define MAXC 4

typedef struct {
    const char *name;
    const char *args;
    bool complete;
} ecall_t;

typedef struct {
    const char *title;
    toolcall_format_t fmt;
    const char *pieces[MAXP]; /* NULL-terminated */
    const char *content;      /* expected content, NULL = none */
    int ncalls;
    ecall_t calls[MAXC];
} tcase_t;

/* The request's tools given to every parser (schema typing). */
static json_object *harness_tools;

/* What a client rebuilds from the streamed events. */
typedef struct {
    char content[2048];
    size_t clen;
    int ncalls;
    char ids[MAXC][64];
    char names[MAXC][64];
    char args[MAXC][1024];
    size_t alen[MAXC];
    bool ok;       /* event order and shape */
    char why[128]; /* first shape problem */
} stream_t;

static void bad(stream_t *s, const char *why)
{
    if (s->ok)
        snprintf(s->why, sizeof s->why, "%s", why);
    s->ok = false;
}

static bool id_ok(const char *id, toolcall_format_t fmt)
{
    bool m = fmt == TOOLCALL_FORMAT_MISTRAL;
    size_t pre = m ? 0 : 5, len = m ? TOOLCALL_ID_LEN_MISTRAL : TOOLCALL_ID_LEN;
    if (!id || strlen(id) != len || strncmp(id, "call_", pre))
        return false;
    for (size_t i = pre; i < len; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
            return false;
    }
    return true;
}

static void take(stream_t *s, const toolcall_out_t *o, toolcall_format_t fmt)
{
    for (size_t i = 0; i < o->n; i++) {
        const toolcall_event_t *e = &o->events[i];
        switch (e->kind) {
        case TOOLCALL_EV_CONTENT:
            if (e->len == 0 || e->index != -1 || s->clen + e->len >= sizeof s->content) {
                bad(s, "content event shape");
                break;
            }
            memcpy(s->content + s->clen, e->text, e->len);
            s->clen += e->len;
            s->content[s->clen] = '\0';
            break;
        case TOOLCALL_EV_START:
            if (e->index != s->ncalls || s->ncalls == MAXC || !e->id ||
                (fmt != TOOLCALL_FORMAT_KIMI_K2 && fmt != TOOLCALL_FORMAT_SOLAR_OPEN && !id_ok(e->id, fmt)) ||
                !e->name) {
                bad(s, "start event shape");
                break;
            }
            snprintf(s->ids[s->ncalls], 64, "%s", e->id);
            snprintf(s->names[s->ncalls], 64, "%s", e->name);
            s->ncalls++;
            break;
        case TOOLCALL_EV_ARGS:
            if (e->index < 0 || e->index >= s->ncalls || e->len == 0 ||
                s->alen[e->index] + e->len >= 1024) {
                bad(s, "args event before its start");
                break;
            }
            memcpy(s->args[e->index] + s->alen[e->index], e->text, e->len);
            s->alen[e->index] += e->len;
            s->args[e->index][s->alen[e->index]] = '\0';
            break;
        }
    }
}

/* Compares the stream and the parser's own result with the table. */
static bool check(const tcase_t *tc, const stream_t *s, const toolcall_t *p)
{
    if (!s->ok) {
        tap_diag("%s", s->why);
        return false;
    }
    bool ok = true;
    if (tc->content ? strcmp(s->content, tc->content) != 0 : s->clen != 0) {
        tap_diag("content [%s] want [%s]", s->content, tc->content ? tc->content : "(null)");
        ok = false;
    }
    size_t plen = 0;
    const char *pc = toolcall_content(p, &plen);
    if (tc->content ? !pc || strcmp(pc, tc->content) != 0 : pc != NULL) {
        tap_diag("result content differs from stream");
        ok = false;
    }
    if (s->ncalls != tc->ncalls || (int)toolcall_count(p) != tc->ncalls) {
        tap_diag("calls %d / %zu want %d", s->ncalls, toolcall_count(p), tc->ncalls);
        return false;
    }
    for (int i = 0; i < tc->ncalls; i++) {
        toolcall_call_t c;
        toolcall_get(p, (size_t)i, &c);
        const ecall_t *w = &tc->calls[i];
        if (strcmp(s->names[i], w->name) || strcmp(s->args[i], w->args) || strcmp(c.name, w->name) ||
            strcmp(c.arguments, w->args) || c.arguments_len != strlen(w->args) ||
            c.complete != w->complete || strcmp(c.id, s->ids[i])) {
            tap_diag("call %d: %s %s (%d) streamed %s %s, want %s %s (%d)", i, c.name, c.arguments,
                     c.complete, s->names[i], s->args[i], w->name, w->args, w->complete);
            ok = false;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(s->ids[i], s->ids[j]))
                ok = false;
    }
    return ok;
}

static toolcall_config_t cfg_of(const tcase_t *tc)
{
    toolcall_config_t cfg = {tc->fmt, NULL, NULL, 42, harness_tools};
    return cfg;
}

/* Feeds text cut at the given offsets. */
static bool run_cuts(const tcase_t *tc, const char *text, const size_t *cuts, int ncuts)
{
    toolcall_config_t cfg = cfg_of(tc);
    toolcall_t *p = toolcall_create(&cfg, NULL);
    stream_t *s = calloc(1, sizeof *s);
    s->ok = true;
    size_t prev = 0, n = strlen(text);
    toolcall_out_t o;
    for (int i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : n;
        if (toolcall_push(p, text + prev, end - prev, &o, NULL) != LF_OK)
            bad(s, "push failed");
        take(s, &o, tc->fmt);
        prev = end;
    }
    if (toolcall_finish(p, &o, NULL) != LF_OK)
        bad(s, "finish failed");
    take(s, &o, tc->fmt);
    bool ok = check(tc, s, p);
    free(s);
    toolcall_free(p);
    return ok;
}

static void run_case(const tcase_t *tc)
{
    char text[2048] = "";
    size_t cuts[MAXP];
    int ncuts = 0;
    for (int i = 0; tc->pieces[i]; i++) {
        if (i > 0)
            cuts[ncuts++] = strlen(text);
        strcat(text, tc->pieces[i]);
    }
    size_t n = strlen(text);

    tap_ok(run_cuts(tc, text, cuts, ncuts), "%s: token by token", tc->title);

    bool ok = true;
    for (size_t k = 0; k <= n && ok; k++) {
        size_t c1[1] = {k};
        ok = run_cuts(tc, text, c1, 1);
        if (!ok)
            tap_diag("split at %zu", k);
    }
    tap_ok(ok, "%s: every 2-way split", tc->title);

    size_t *cb = malloc((n + 1) * sizeof *cb);
    for (size_t k = 1; k < n; k++)
        cb[k - 1] = k;
    tap_ok(run_cuts(tc, text, cb, n > 1 ? (int)n - 1 : 0), "%s: byte by byte", tc->title);
    free(cb);

    /* non-streamed: same calls and ids as the streamed runs (same seed) */
    toolcall_config_t cfg = cfg_of(tc);
    toolcall_t *p = toolcall_parse(&cfg, text, n, NULL);
    toolcall_t *q = toolcall_create(&cfg, NULL);
    stream_t *s = calloc(1, sizeof *s);
    s->ok = true;
    toolcall_out_t o;
    toolcall_push(q, text, n, &o, NULL);
    take(s, &o, tc->fmt);
    toolcall_finish(q, &o, NULL);
    take(s, &o, tc->fmt);
    ok = p && check(tc, s, p);
    tap_ok(ok, "%s: toolcall_parse", tc->title);
    free(s);
    toolcall_free(p);
    toolcall_free(q);
}


#endif
