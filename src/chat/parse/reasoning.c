/* reasoning.c - the reasoning parser object, its output segments and the
 * byte-wise state machine of the marker formats (see reasoning.h; the
 * harmony machine is reasoning_harmony.c, the format table
 * reasoning_formats.c).
 *
 * The parser is fed one byte at a time, so its decisions depend only on the
 * bytes, never on how they were split into pieces. The only thing held back
 * is a tail that is still a prefix of a marker being looked for.
 */
#include "chat/parse/reasoning_impl.h"

#include <stdlib.h>
#include <string.h>

typedef enum {
    ST_PRE,      /* content before the block, looking for an open marker */
    ST_START_IN, /* inside from the start; a leading open marker is redundant */
    ST_IN,       /* reasoning, looking for a close marker */
    ST_LABEL,    /* right after an open marker: its optional label (held) */
    ST_POST      /* content after the block (or no parsing / finished) */
} state_t;

/* ---- output ---------------------------------------------------------- */

void rs_emit(reasoning_t *rp, reasoning_seg_kind_t kind, const char *s, size_t n)
{
    if (rp->nomem || n == 0)
        return;
    if (rp->len + n > rp->cap) {
        size_t ncap = rp->cap ? rp->cap : 256;
        while (ncap < rp->len + n)
            ncap *= 2;
        char *nb = realloc(rp->buf, ncap);
        if (!nb) {
            rp->nomem = true;
            return;
        }
        rp->buf = nb;
        rp->cap = ncap;
    }
    memcpy(rp->buf + rp->len, s, n);
    rp->len += n;
    if (kind == REASONING_SEG_REASONING)
        rp->touched = true;
    if (rp->nseg > 0 && rp->segs[rp->nseg - 1].kind == kind) {
        rp->segs[rp->nseg - 1].len += n;
        return;
    }
    if (rp->nseg == rp->seg_cap) {
        int ncap = rp->seg_cap ? rp->seg_cap * 2 : 4;
        reasoning_seg_t *ns = realloc(rp->segs, (size_t)ncap * sizeof *ns);
        size_t *no = ns ? realloc(rp->offs, (size_t)ncap * sizeof *no) : NULL;
        if (ns)
            rp->segs = ns;
        if (!ns || !no) {
            rp->nomem = true;
            return;
        }
        rp->offs = no;
        rp->seg_cap = ncap;
    }
    rp->segs[rp->nseg] = (reasoning_seg_t){kind, NULL, n};
    rp->offs[rp->nseg] = rp->len - n;
    rp->nseg++;
}

void rs_hold_add(reasoning_t *rp, const char *s, size_t n)
{
    if (rp->nomem)
        return;
    if (rp->hold_len + n > rp->hold_cap) {
        size_t ncap = rp->hold_cap ? rp->hold_cap : 64;
        while (ncap < rp->hold_len + n)
            ncap *= 2;
        char *nh = realloc(rp->hold, ncap);
        if (!nh) {
            rp->nomem = true;
            return;
        }
        rp->hold = nh;
        rp->hold_cap = ncap;
    }
    memcpy(rp->hold + rp->hold_len, s, n);
    rp->hold_len += n;
}

void rs_hold_drop(reasoning_t *rp, size_t n)
{
    if (n >= rp->hold_len) {
        rp->hold_len = 0;
        return;
    }
    memmove(rp->hold, rp->hold + n, rp->hold_len - n);
    rp->hold_len -= n;
}

/* ---- marker machine ---------------------------------------------------- */

static bool is_prefix_of_any(const char *s, size_t n, const char *const *list)
{
    for (; list && *list; list++)
        if (n <= strlen(*list) && memcmp(s, *list, n) == 0)
            return true;
    return false;
}

static bool is_any(const char *s, size_t n, const char *const *list)
{
    for (; list && *list; list++)
        if (n == strlen(*list) && memcmp(s, *list, n) == 0)
            return true;
    return false;
}

typedef enum { M_NONE, M_A, M_B, M_C } match_t;

/* Adds c to the held tail while looking for the markers of lists a, b and
 * c (any may be NULL); returns which list a complete marker belongs to
 * (the marker is then the whole hold; the caller clears it), else M_NONE.
 * Bytes that can no longer start a marker are emitted as kind. */
static match_t match3(reasoning_t *rp, char ch, const char *const *a, const char *const *b,
                      const char *const *c, reasoning_seg_kind_t kind)
{
    rs_hold_add(rp, &ch, 1);
    for (;;) {
        const char *h = rp->hold;
        size_t n = rp->hold_len;
        if (n == 0)
            return M_NONE;
        if (is_any(h, n, a))
            return M_A;
        if (is_any(h, n, b))
            return M_B;
        if (is_any(h, n, c))
            return M_C;
        if (is_prefix_of_any(h, n, a) || is_prefix_of_any(h, n, b) || is_prefix_of_any(h, n, c))
            return M_NONE;
        rs_emit(rp, kind, h, 1);
        rs_hold_drop(rp, 1);
    }
}

static void marker_step(reasoning_t *rp, char c);

static bool multi(const reasoning_t *rp)
{
    return rp->fmt && rp->fmt->multi_block;
}

/* The state at the start of a block (after its open marker). */
static state_t block_start(const reasoning_t *rp)
{
    return rp->fmt && rp->fmt->open_label ? ST_LABEL : ST_IN;
}

/* The held bytes go through the machine again (in its new state). */
static void refeed_held(reasoning_t *rp)
{
    size_t n = rp->hold_len;
    char tmp[REASONING_MARKER_MAX + 1];
    if (n > sizeof tmp)
        n = sizeof tmp; /* not reached: held text is shorter than a marker */
    memcpy(tmp, rp->hold, n);
    rp->hold_len = 0;
    for (size_t i = 0; i < n; i++)
        marker_step(rp, tmp[i]);
}

static void marker_step(reasoning_t *rp, char c)
{
    switch ((state_t)rp->st) {
    case ST_POST:
        if (!rp->drop) {
            rs_emit(rp, REASONING_SEG_CONTENT, &c, 1);
            break;
        }
        if (match3(rp, c, rp->drop, NULL, NULL, REASONING_SEG_CONTENT) != M_NONE)
            rp->hold_len = 0; /* dropped markup */
        break;
    case ST_PRE:
        switch (match3(rp, c, rp->open, rp->close, rp->drop, REASONING_SEG_CONTENT)) {
        case M_NONE:
            return;
        case M_A:
            rp->st = block_start(rp);
            rp->touched = true;
            break;
        case M_B: /* orphan close: the block we did not see is over (multi-block
                   * formats: a stray close, dropped) */
            if (!multi(rp))
                rp->st = ST_POST;
            break;
        case M_C: /* dropped markup */
            break;
        }
        rp->hold_len = 0;
        break;
    case ST_IN:
        switch (match3(rp, c, rp->close, rp->implicit_close, NULL, REASONING_SEG_REASONING)) {
        case M_NONE:
            return;
        case M_B: /* implicit close: the marker is content */
            rs_emit(rp, REASONING_SEG_CONTENT, rp->hold, rp->hold_len);
            /* fall through */
        default:
            rp->st = multi(rp) ? ST_PRE : ST_POST;
            break;
        }
        rp->hold_len = 0;
        break;
    case ST_LABEL: {
        const char *label = rp->fmt->open_label;
        rs_hold_add(rp, &c, 1);
        if (rp->hold_len == strlen(label) && !memcmp(rp->hold, label, rp->hold_len)) {
            rp->hold_len = 0; /* the label is markup */
            rp->st = ST_IN;
        } else if (rp->hold_len > strlen(label) || memcmp(rp->hold, label, rp->hold_len)) {
            rp->st = ST_IN; /* no label: the held bytes are reasoning */
            refeed_held(rp);
        }
        break;
    }
    case ST_START_IN: {
        rs_hold_add(rp, &c, 1);
        if (is_any(rp->hold, rp->hold_len, rp->open)) {
            rp->hold_len = 0; /* redundant re-open: dropped */
            rp->st = block_start(rp);
        } else if (!is_prefix_of_any(rp->hold, rp->hold_len, rp->open)) {
            /* Not a re-open: the held bytes are ordinary reasoning text, which
             * may itself start a close marker, so they go through ST_IN. */
            rp->st = ST_IN;
            refeed_held(rp);
        }
        break;
    }
    }
}

/* ---- public API -------------------------------------------------------- */

static bool valid_marker(const char *m)
{
    return m && *m && strlen(m) <= REASONING_MARKER_MAX;
}

reasoning_t *reasoning_create_cfg(const reasoning_config_t *cfg, lf_err_t *err)
{
    reasoning_mode_t mode = cfg ? cfg->mode : REASONING_MODE_COUNT;
    const reasoning_format_t *fmt = reasoning_format(mode);
    if (mode != REASONING_MODE_NONE && mode != REASONING_MODE_GENERIC && !fmt) {
        lf_err_set(err, LF_ERR_INVALID, "unknown reasoning parser mode %d", (int)mode);
        return NULL;
    }
    if (mode == REASONING_MODE_GENERIC && (!valid_marker(cfg->open) || !valid_marker(cfg->close))) {
        lf_err_set(err, LF_ERR_INVALID, "the generic reasoning parser needs start and end markers of 1 to %d bytes",
                   REASONING_MARKER_MAX);
        return NULL;
    }
    reasoning_t *rp = calloc(1, sizeof *rp);
    if (!rp) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory (reasoning parser)");
        return NULL;
    }
    rp->mode = mode;
    rp->fmt = fmt;
    if (mode == REASONING_MODE_GENERIC) {
        strcpy(rp->gen_open, cfg->open);
        strcpy(rp->gen_close, cfg->close);
        rp->gen_open_list[0] = rp->gen_open;
        rp->gen_close_list[0] = rp->gen_close;
        rp->open = rp->gen_open_list;
        rp->close = rp->gen_close_list;
    } else if (fmt) {
        rp->open = fmt->open;
        rp->close = fmt->close;
        rp->implicit_close = fmt->implicit_close;
        rp->drop = fmt->drop;
    }
    if (fmt && fmt->start == REASONING_START_HARMONY)
        rs_harmony_init(rp);
    else if (mode == REASONING_MODE_NONE)
        rp->st = ST_POST;
    else if (fmt && fmt->start == REASONING_START_TOGGLE && !cfg->starts_in_reasoning)
        rp->st = ST_POST, rp->drop = NULL; /* thinking off: no reasoning at all */
    else
        rp->st = cfg->starts_in_reasoning ? ST_START_IN : ST_PRE;
    return rp;
}

reasoning_t *reasoning_create(reasoning_mode_t mode, bool starts_in_reasoning, lf_err_t *err)
{
    reasoning_config_t cfg = {.mode = mode, .starts_in_reasoning = starts_in_reasoning};
    return reasoning_create_cfg(&cfg, err);
}

void reasoning_free(reasoning_t *rp)
{
    if (!rp)
        return;
    free(rp->hold);
    free(rp->buf);
    free(rp->segs);
    free(rp->offs);
    free(rp);
}

static bool is_harmony(const reasoning_t *rp)
{
    return rp->fmt && rp->fmt->start == REASONING_START_HARMONY;
}

bool reasoning_in_reasoning(const reasoning_t *rp)
{
    if (!rp || rp->finished)
        return false;
    if (is_harmony(rp))
        return rs_harmony_in_reasoning(rp);
    return rp->st == ST_IN || rp->st == ST_START_IN || rp->st == ST_LABEL;
}

static void begin(reasoning_t *rp)
{
    rp->len = 0;
    rp->nseg = 0;
    rp->touched = reasoning_in_reasoning(rp);
}

static lf_code_t end(reasoning_t *rp, reasoning_out_t *out, lf_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (rp->nomem)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory (reasoning parser)");
    for (int i = 0; i < rp->nseg; i++)
        rp->segs[i].text = rp->buf + rp->offs[i];
    out->segs = rp->segs;
    out->n = rp->nseg;
    out->token_in_reasoning = rp->touched;
    return LF_OK;
}

lf_code_t reasoning_push(reasoning_t *rp, const char *piece, size_t len,
                         reasoning_out_t *out, lf_err_t *err)
{
    begin(rp);
    if (rp->finished)
        rs_emit(rp, REASONING_SEG_CONTENT, piece, len);
    else if (is_harmony(rp))
        for (size_t i = 0; i < len && !rp->nomem; i++)
            rs_harmony_step(rp, piece[i]);
    else
        for (size_t i = 0; i < len && !rp->nomem; i++)
            marker_step(rp, piece[i]);
    return end(rp, out, err);
}

lf_code_t reasoning_finish(reasoning_t *rp, reasoning_out_t *out, lf_err_t *err)
{
    begin(rp);
    if (!rp->finished) {
        if (is_harmony(rp)) {
            rs_harmony_finish(rp);
        } else {
            reasoning_seg_kind_t kind = reasoning_in_reasoning(rp) ? REASONING_SEG_REASONING : REASONING_SEG_CONTENT;
            rs_emit(rp, kind, rp->hold, rp->hold_len);
        }
        rp->hold_len = 0;
        rp->st = ST_POST;
        rp->finished = true;
    }
    lf_code_t rc = end(rp, out, err);
    out->token_in_reasoning = false;
    return rc;
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

lf_code_t reasoning_split_cfg(const reasoning_config_t *cfg, const char *text, size_t len,
                              char **reasoning, char **content, lf_err_t *err)
{
    *reasoning = NULL;
    *content = NULL;
    reasoning_t *rp = reasoning_create_cfg(cfg, err);
    if (!rp)
        return err ? err->code : LF_ERR_NOMEM;
    sbuf_t r = {0}, c = {0};
    reasoning_out_t o;
    lf_code_t rc = reasoning_push(rp, text, len, &o, err);
    if (rc == LF_OK && !collect(&o, &r, &c))
        rc = lf_err_set(err, LF_ERR_NOMEM, "out of memory (reasoning parser)");
    if (rc == LF_OK && (rc = reasoning_finish(rp, &o, err)) == LF_OK && !collect(&o, &r, &c))
        rc = lf_err_set(err, LF_ERR_NOMEM, "out of memory (reasoning parser)");
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

lf_code_t reasoning_split(reasoning_mode_t mode, bool starts_in_reasoning,
                          const char *text, size_t len,
                          char **reasoning, char **content, lf_err_t *err)
{
    reasoning_config_t cfg = {.mode = mode, .starts_in_reasoning = starts_in_reasoning};
    return reasoning_split_cfg(&cfg, text, len, reasoning, content, err);
}

/* ---- prompt and markers ------------------------------------------------ */

static bool ends_with_any(const char *s, size_t len, const char *const *list)
{
    if (!s)
        return false;
    while (len > 0 && strchr(" \n\t\r", s[len - 1]))
        len--;
    for (; list && *list; list++) {
        size_t n = strlen(*list);
        if (n && len >= n && memcmp(s + len - n, *list, n) == 0)
            return true;
    }
    return false;
}

bool reasoning_starts_inside_cfg(const reasoning_config_t *cfg, const char *prompt, size_t len)
{
    if (!cfg)
        return false;
    const reasoning_format_t *fmt = reasoning_format(cfg->mode);
    const char *go[2] = {cfg->open, NULL}, *gc[2] = {cfg->close, NULL};
    const char *const *open = fmt ? fmt->open : cfg->mode == REASONING_MODE_GENERIC ? go : NULL;
    const char *const *close = fmt ? fmt->close : cfg->mode == REASONING_MODE_GENERIC ? gc : NULL;
    if (!open || (fmt && fmt->start == REASONING_START_HARMONY))
        return false;
    if (ends_with_any(prompt, len, open))
        return true;
    return fmt && fmt->start == REASONING_START_INSIDE && !ends_with_any(prompt, len, close);
}

bool reasoning_starts_inside(reasoning_mode_t mode, const char *prompt, size_t len)
{
    reasoning_config_t cfg = {.mode = mode};
    return reasoning_starts_inside_cfg(&cfg, prompt, len);
}

bool reasoning_is_marker(const reasoning_config_t *cfg, const char *text)
{
    if (!cfg || !text)
        return false;
    if (cfg->mode == REASONING_MODE_GENERIC)
        return (cfg->open && !strcmp(text, cfg->open)) || (cfg->close && !strcmp(text, cfg->close));
    const reasoning_format_t *fmt = reasoning_format(cfg->mode);
    for (const char *const *t = fmt ? fmt->tokens : NULL; t && *t; t++)
        if (!strcmp(text, *t))
            return true;
    return false;
}
