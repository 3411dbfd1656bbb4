/* reasoning_harmony.c - the reasoning parsers of the recipient-addressed
 * message formats: gpt-oss (harmony) and muse_glimmer (see reasoning.h and
 * harmony.h). Each routes the body of every message by its header (channel
 * and recipient). Byte-wise like the marker machine: the only text held
 * back is a header being read (at most REASONING_HARMONY_HEADER_MAX bytes)
 * or a possible marker prefix.
 *
 * The two dialects:
 *   gpt-oss      headers start with <|start|> or <|channel|>; bodies end
 *                with <|end|>, <|call|>, <|return|> (or the next header);
 *                analysis -> reasoning, final / commentary -> content,
 *                to=functions.N -> the message verbatim (header included)
 *                for the gpt-oss tool-call parser; other recipients
 *                (built-in tools): reasoning on analysis, else dropped.
 *   muse_glimmer the prompt ends with "<|start|>assistant", so the output
 *                starts inside a header; headers start with <|start|>,
 *                bodies end with <|eom|> or <|eot|>; to=self -> reasoning,
 *                to=user or no recipient -> content, another recipient (a
 *                tool) -> its body only (an <atem:function_calls> block) for
 *                the muse_glimmer tool-call parser.
 */
#include "chat/parse/harmony.h"
#include "chat/parse/reasoning_impl.h"

#include <string.h>

typedef enum {
    HS_BETWEEN, /* between messages: a header start is expected */
    HS_TEXT,    /* plain text outside any message: content */
    HS_HEADER,  /* reading a header (held) up to <|message|> */
    HS_BODY     /* a body, routed by h_route */
} hstate_t;

typedef enum {
    R_REASONING, /* analysis, built-in tools on it; muse: to=self */
    R_CONTENT,   /* final, commentary without a recipient; muse: to=user */
    R_TOOL,      /* a function call: verbatim content for the tool parser */
    R_DROP       /* another channel to a built-in tool (browser, python, ...):
                  * neither reasoning nor content, as vLLM */
} route_t;

static const char *const muse_header_starts[] = {"<|start|>", NULL};
static const char *const muse_body_ends[] = {"<|eom|>", "<|eot|>", "<|start|>", NULL};

static bool is_muse(const reasoning_t *rp)
{
    return rp->mode == REASONING_MODE_MUSE_GLIMMER;
}

static const char *const *header_starts(const reasoning_t *rp)
{
    return is_muse(rp) ? muse_header_starts : harmony_header_starts;
}

static const char *const *body_ends(const reasoning_t *rp)
{
    return is_muse(rp) ? muse_body_ends : harmony_body_ends;
}

void rs_harmony_init(reasoning_t *rp)
{
    rp->st = is_muse(rp) ? HS_HEADER : HS_BETWEEN; /* muse: the prompt opened the header */
    rp->h_route = R_CONTENT;
}

bool rs_harmony_in_reasoning(const reasoning_t *rp)
{
    return rp->st == HS_BODY && rp->h_route == R_REASONING;
}

static bool is_prefix_of_any(const char *s, size_t n, const char *const *list)
{
    for (; *list; list++)
        if (n <= strlen(*list) && memcmp(s, *list, n) == 0)
            return true;
    return false;
}

/* The marker of list that the held text is, or NULL. */
static const char *which(const char *s, size_t n, const char *const *list)
{
    for (; *list; list++)
        if (n == strlen(*list) && memcmp(s, *list, n) == 0)
            return *list;
    return NULL;
}

static bool ends_with(const char *s, size_t n, const char *tail)
{
    size_t t = strlen(tail);
    return n >= t && memcmp(s + n - t, tail, t) == 0;
}

static reasoning_seg_kind_t route_kind(int route)
{
    return route == R_REASONING ? REASONING_SEG_REASONING : REASONING_SEG_CONTENT;
}

static void step_text(reasoning_t *rp, char c);

/* The held header is complete (it ends with <|message|>). */
static void header_done(reasoning_t *rp)
{
    harmony_header_t h;
    harmony_header_parse(rp->hold, rp->hold_len - strlen(HARMONY_MESSAGE), &h);
    if (is_muse(rp))
        rp->h_route = !strcmp(h.recipient, "self")                    ? R_REASONING
                      : !h.recipient[0] || !strcmp(h.recipient, "user") ? R_CONTENT
                                                                        : R_TOOL;
    else if (!strncmp(h.recipient, HARMONY_FUNCTIONS, strlen(HARMONY_FUNCTIONS)))
        rp->h_route = R_TOOL;
    else if (!strcmp(h.channel, "analysis"))
        rp->h_route = R_REASONING;
    else if (h.recipient[0])
        rp->h_route = R_DROP;
    else
        rp->h_route = R_CONTENT;
    if (rp->h_route == R_TOOL && !is_muse(rp)) /* harmony's tool parser reads the header too */
        rs_emit(rp, REASONING_SEG_CONTENT, rp->hold, rp->hold_len);
    if (rp->h_route == R_REASONING)
        rp->touched = true;
    rp->hold_len = 0;
    rp->st = HS_BODY;
}

/* Text that turned out not to be harmony markup: content, re-scanned for
 * the next header start. */
static void release_as_text(reasoning_t *rp, size_t from)
{
    size_t n = rp->hold_len - from;
    char tmp[REASONING_HARMONY_HEADER_MAX + 16];
    if (n > sizeof tmp)
        n = sizeof tmp; /* not reached: the hold is bounded */
    memcpy(tmp, rp->hold + from, n);
    rs_emit(rp, REASONING_SEG_CONTENT, rp->hold, from);
    rp->hold_len = 0;
    rp->st = HS_TEXT;
    for (size_t i = 0; i < n; i++)
        step_text(rp, tmp[i]);
}

/* Plain text: content, but a header start begins a message. */
static void step_text(reasoning_t *rp, char c)
{
    rs_hold_add(rp, &c, 1);
    while (rp->hold_len && !is_prefix_of_any(rp->hold, rp->hold_len, header_starts(rp))) {
        rs_emit(rp, REASONING_SEG_CONTENT, rp->hold, 1);
        rs_hold_drop(rp, 1);
    }
    if (which(rp->hold, rp->hold_len, header_starts(rp)))
        rp->st = HS_HEADER;
}

void rs_harmony_step(reasoning_t *rp, char c)
{
    switch ((hstate_t)rp->st) {
    case HS_BETWEEN:
        rs_hold_add(rp, &c, 1);
        if (which(rp->hold, rp->hold_len, header_starts(rp)))
            rp->st = HS_HEADER;
        else if (!is_prefix_of_any(rp->hold, rp->hold_len, header_starts(rp)))
            release_as_text(rp, 0);
        return;
    case HS_TEXT:
        step_text(rp, c);
        return;
    case HS_HEADER:
        rs_hold_add(rp, &c, 1);
        if (ends_with(rp->hold, rp->hold_len, HARMONY_MESSAGE))
            header_done(rp);
        else if (rp->hold_len > REASONING_HARMONY_HEADER_MAX)
            release_as_text(rp, 1); /* not a header: the first byte is text */
        return;
    case HS_BODY: {
        rs_hold_add(rp, &c, 1);
        reasoning_seg_kind_t kind = route_kind(rp->h_route);
        const char *const *ends = body_ends(rp);
        while (rp->hold_len && !is_prefix_of_any(rp->hold, rp->hold_len, ends)) {
            if (rp->h_route != R_DROP)
                rs_emit(rp, kind, rp->hold, 1);
            rs_hold_drop(rp, 1);
        }
        const char *m = which(rp->hold, rp->hold_len, ends);
        if (!m)
            return;
        bool new_header = which(m, strlen(m), header_starts(rp)) != NULL;
        if (rp->h_route == R_TOOL && !is_muse(rp)) /* harmony's tool parser needs the end of the call */
            rs_emit(rp, REASONING_SEG_CONTENT, new_header ? HARMONY_CALL : m,
                    strlen(new_header ? HARMONY_CALL : m));
        rp->h_route = R_CONTENT;
        if (new_header) {
            rp->st = HS_HEADER; /* the marker stays held as the header's start */
        } else {
            rp->hold_len = 0;
            rp->st = HS_BETWEEN;
        }
        return;
    }
    }
}

void rs_harmony_finish(reasoning_t *rp)
{
    reasoning_seg_kind_t kind = rp->st == HS_BODY ? route_kind(rp->h_route) : REASONING_SEG_CONTENT;
    if (rp->st != HS_BODY || rp->h_route != R_DROP)
        rs_emit(rp, kind, rp->hold, rp->hold_len);
    rp->hold_len = 0;
    rp->h_route = R_CONTENT;
    rp->st = HS_TEXT;
}
