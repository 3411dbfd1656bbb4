/* reasoning.c - byte-wise <think> ... </think> splitter (see reasoning.h).
 *
 * The parser is a state machine fed one byte at a time, so its decisions
 * depend only on the bytes, never on how they were split into pieces. The
 * only thing held back is a tail that is still a prefix of the tag being
 * looked for (at most 7 bytes).
 */
#include "chat/parse/reasoning.h"

#include <stdlib.h>
#include <string.h>

#define TAG_OPEN "<think>"
#define TAG_CLOSE "</think>"

typedef enum {
    ST_PRE,      /* content before the block, looking for <think> */
    ST_START_IN, /* inside from the start; a leading <think> is redundant */
    ST_IN,       /* reasoning, looking for </think> */
    ST_POST      /* content after the block (or mode none / finished) */
} state_t;

struct reasoning {
    reasoning_mode_t mode;
    state_t st;
    char hold[8]; /* tail that may be the start of the tag looked for */
    size_t hold_len;
    char *buf; /* output bytes of the current push */
    size_t len, cap;
    reasoning_seg_kind_t kinds[REASONING_MAX_SEGS];
    size_t offs[REASONING_MAX_SEGS], lens[REASONING_MAX_SEGS];
    int nseg;
    bool touched; /* in the block at some point during this push */
    bool nomem;
};

reasoning_t *reasoning_create(reasoning_mode_t mode, bool starts_in_reasoning, lf_err_t *err)
{
    if (mode != REASONING_MODE_NONE && mode != REASONING_MODE_DEEPSEEK_R1 &&
        mode != REASONING_MODE_QWEN3) {
        lf_err_set(err, LF_ERR_INVALID, "unknown reasoning parser mode %d", (int)mode);
        return NULL;
    }
    reasoning_t *rp = calloc(1, sizeof *rp);
    if (!rp) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory (reasoning parser)");
        return NULL;
    }
    rp->mode = mode;
    if (mode == REASONING_MODE_NONE)
        rp->st = ST_POST;
    else
        rp->st = starts_in_reasoning ? ST_START_IN : ST_PRE;
    return rp;
}

void reasoning_free(reasoning_t *rp)
{
    if (!rp)
        return;
    free(rp->buf);
    free(rp);
}

bool reasoning_in_reasoning(const reasoning_t *rp)
{
    return rp && (rp->st == ST_IN || rp->st == ST_START_IN);
}

/* Appends one output byte of the given kind, extending the last segment or
 * opening a new one. The states only move PRE -> IN -> POST (or START_IN ->
 * IN -> POST), so one push has at most content, reasoning, content. */
static void emit(reasoning_t *rp, reasoning_seg_kind_t kind, char c)
{
    if (rp->nomem)
        return;
    if (rp->len == rp->cap) {
        size_t ncap = rp->cap ? rp->cap * 2 : 256;
        char *nb = realloc(rp->buf, ncap);
        if (!nb) {
            rp->nomem = true;
            return;
        }
        rp->buf = nb;
        rp->cap = ncap;
    }
    rp->buf[rp->len++] = c;
    if (rp->nseg > 0 && rp->kinds[rp->nseg - 1] == kind) {
        rp->lens[rp->nseg - 1]++;
        return;
    }
    if (rp->nseg == REASONING_MAX_SEGS) { /* unreachable by the state order */
        rp->lens[rp->nseg - 1]++;
        return;
    }
    rp->kinds[rp->nseg] = kind;
    rp->offs[rp->nseg] = rp->len - 1;
    rp->lens[rp->nseg] = 1;
    rp->nseg++;
}

static bool is_prefix(const char *s, size_t n, const char *tag)
{
    return n <= strlen(tag) && memcmp(s, tag, n) == 0;
}

static void step(reasoning_t *rp, char c);

static bool is_tag(const char *s, size_t n, const char *tag)
{
    return tag && n == strlen(tag) && memcmp(s, tag, n) == 0;
}

/* Adds c to the held tail while looking for tag (or tag2, may be NULL);
 * returns 1 or 2 when that tag is complete (the hold is then cleared), else
 * 0. Bytes that can no longer start a tag are emitted as kind. */
static int match_tag(reasoning_t *rp, char c, const char *tag, const char *tag2,
                     reasoning_seg_kind_t kind)
{
    rp->hold[rp->hold_len++] = c;
    int which = is_tag(rp->hold, rp->hold_len, tag) ? 1 : is_tag(rp->hold, rp->hold_len, tag2) ? 2 : 0;
    if (which) {
        rp->hold_len = 0;
        return which;
    }
    while (rp->hold_len > 0 && !is_prefix(rp->hold, rp->hold_len, tag) &&
           !(tag2 && is_prefix(rp->hold, rp->hold_len, tag2))) {
        emit(rp, kind, rp->hold[0]);
        memmove(rp->hold, rp->hold + 1, --rp->hold_len);
    }
    return 0;
}

static void step(reasoning_t *rp, char c)
{
    switch (rp->st) {
    case ST_POST:
        emit(rp, REASONING_SEG_CONTENT, c);
        break;
    case ST_PRE:
        switch (match_tag(rp, c, TAG_OPEN, TAG_CLOSE, REASONING_SEG_CONTENT)) {
        case 1:
            rp->st = ST_IN;
            rp->touched = true;
            break;
        case 2: /* orphan </think>: the block we did not see is over */
            rp->st = ST_POST;
            break;
        }
        break;
    case ST_IN:
        if (match_tag(rp, c, TAG_CLOSE, NULL, REASONING_SEG_REASONING))
            rp->st = ST_POST;
        break;
    case ST_START_IN: {
        rp->hold[rp->hold_len++] = c;
        if (rp->hold_len == strlen(TAG_OPEN) && memcmp(rp->hold, TAG_OPEN, rp->hold_len) == 0) {
            rp->hold_len = 0; /* redundant re-open: dropped */
            rp->st = ST_IN;
        } else if (!is_prefix(rp->hold, rp->hold_len, TAG_OPEN)) {
            /* Not a re-open: the held bytes are ordinary reasoning text, which
             * may itself start "</think>", so they go through ST_IN again. */
            char tmp[sizeof rp->hold];
            size_t n = rp->hold_len;
            memcpy(tmp, rp->hold, n);
            rp->hold_len = 0;
            rp->st = ST_IN;
            for (size_t i = 0; i < n; i++)
                step(rp, tmp[i]);
        }
        break;
    }
    }
}

static void fill_out(reasoning_t *rp, reasoning_out_t *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < rp->nseg; i++) {
        out->segs[i].kind = rp->kinds[i];
        out->segs[i].text = rp->buf + rp->offs[i];
        out->segs[i].len = rp->lens[i];
    }
    out->n = rp->nseg;
}

lf_code_t reasoning_push(reasoning_t *rp, const char *piece, size_t len,
                         reasoning_out_t *out, lf_err_t *err)
{
    rp->len = 0;
    rp->nseg = 0;
    rp->touched = (rp->st == ST_IN || rp->st == ST_START_IN);
    for (size_t i = 0; i < len; i++)
        step(rp, piece[i]);
    if (rp->nomem) {
        memset(out, 0, sizeof *out);
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory (reasoning parser)");
    }
    fill_out(rp, out);
    out->token_in_reasoning = rp->touched;
    return LF_OK;
}

void reasoning_finish(reasoning_t *rp, reasoning_out_t *out)
{
    rp->len = 0;
    rp->nseg = 0;
    reasoning_seg_kind_t kind =
        (rp->st == ST_IN || rp->st == ST_START_IN) ? REASONING_SEG_REASONING : REASONING_SEG_CONTENT;
    for (size_t i = 0; i < rp->hold_len; i++)
        emit(rp, kind, rp->hold[i]);
    rp->hold_len = 0;
    rp->st = ST_POST;
    if (rp->nomem) { /* at most 7 bytes into a buffer of 256: not reached */
        memset(out, 0, sizeof *out);
        return;
    }
    fill_out(rp, out);
}

/* Growable string for reasoning_split. */
typedef struct {
    char *p;
    size_t len, cap;
} sbuf_t;

static bool sbuf_add(sbuf_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap : 64;
        while (ncap < b->len + n + 1)
            ncap *= 2;
        char *np = realloc(b->p, ncap);
        if (!np)
            return false;
        b->p = np;
        b->cap = ncap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return true;
}

static bool collect(const reasoning_out_t *o, sbuf_t *r, sbuf_t *c)
{
    for (int i = 0; i < o->n; i++) {
        sbuf_t *b = o->segs[i].kind == REASONING_SEG_REASONING ? r : c;
        if (!sbuf_add(b, o->segs[i].text, o->segs[i].len))
            return false;
    }
    return true;
}

lf_code_t reasoning_split(reasoning_mode_t mode, bool starts_in_reasoning,
                          const char *text, size_t len,
                          char **reasoning, char **content, lf_err_t *err)
{
    *reasoning = NULL;
    *content = NULL;
    reasoning_t *rp = reasoning_create(mode, starts_in_reasoning, err);
    if (!rp)
        return err ? err->code : LF_ERR_NOMEM;
    sbuf_t r = {0}, c = {0};
    reasoning_out_t o;
    lf_code_t rc = reasoning_push(rp, text, len, &o, err);
    if (rc == LF_OK && !collect(&o, &r, &c))
        rc = lf_err_set(err, LF_ERR_NOMEM, "out of memory (reasoning parser)");
    if (rc == LF_OK) {
        reasoning_finish(rp, &o);
        if (!collect(&o, &r, &c))
            rc = lf_err_set(err, LF_ERR_NOMEM, "out of memory (reasoning parser)");
    }
    reasoning_free(rp);
    if (rc != LF_OK) {
        free(r.p);
        free(c.p);
        return rc;
    }
    *reasoning = r.p;
    *content = c.p;
    return LF_OK;
}

static bool contains(const char *hay, size_t len, const char *needle)
{
    return hay && memmem(hay, len, needle, strlen(needle)) != NULL;
}

reasoning_mode_t reasoning_mode_detect(const char *tmpl, size_t len)
{
    if (!contains(tmpl, len, TAG_OPEN) && !contains(tmpl, len, TAG_CLOSE))
        return REASONING_MODE_NONE;
    if (contains(tmpl, len, "enable_thinking"))
        return REASONING_MODE_QWEN3;
    if (contains(tmpl, len, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>"))
        return REASONING_MODE_DEEPSEEK_R1;
    if (contains(tmpl, len, "<|im_start|>"))
        return REASONING_MODE_QWEN3;
    return REASONING_MODE_DEEPSEEK_R1;
}

static bool ends_with_trimmed(const char *s, size_t len, const char *tag)
{
    if (!s)
        return false;
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\n' || s[len - 1] == '\t' ||
                       s[len - 1] == '\r'))
        len--;
    size_t n = strlen(tag);
    return len >= n && memcmp(s + len - n, tag, n) == 0;
}

bool reasoning_starts_inside(reasoning_mode_t mode, const char *prompt, size_t len)
{
    if (mode == REASONING_MODE_NONE)
        return false;
    if (ends_with_trimmed(prompt, len, TAG_OPEN))
        return true;
    if (mode == REASONING_MODE_DEEPSEEK_R1)
        return !ends_with_trimmed(prompt, len, TAG_CLOSE);
    return false;
}

static const char *const mode_names[] = {"none", "deepseek_r1", "qwen3"};

lf_code_t reasoning_mode_from_name(const char *name, reasoning_mode_t *mode, lf_err_t *err)
{
    for (int i = 0; i < 3; i++)
        if (name && strcmp(name, mode_names[i]) == 0) {
            *mode = (reasoning_mode_t)i;
            return LF_OK;
        }
    return lf_err_set(err, LF_ERR_INVALID,
                      "unknown reasoning parser '%s' (expected none, deepseek_r1 or qwen3)",
                      name ? name : "(null)");
}

const char *reasoning_mode_name(reasoning_mode_t mode)
{
    return (unsigned)mode < 3 ? mode_names[mode] : "unknown";
}
