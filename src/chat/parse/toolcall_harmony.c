/* toolcall_harmony.c - gpt-oss tool calls: harmony messages addressed to a
 * function (to=functions.NAME, see harmony.h) whose body is the JSON
 * arguments. With the gpt-oss reasoning parser in front, only those
 * messages (verbatim) and the final text reach this parser; without it,
 * the bodies of the other messages are content and their headers and
 * terminators are dropped, except messages to a built-in tool (another
 * recipient: browser.search, python, ...), which are dropped whole, as
 * vLLM does. A call is announced when its header is
 * complete; its arguments stream compacted like the JSON formats'; broken
 * JSON ends it (incomplete) and the rest of the body is content. A header
 * that never completes (the output ended, or it is too long to be one) is
 * content.
 */
#include "chat/parse/harmony.h"
#include "chat/parse/toolcall_impl.h"

#define HEADER_MAX 512

typedef enum {
    H_TEXT,       /* content outside messages */
    H_HEADER,     /* a header (held in raw) up to <|message|> */
    H_BODY,       /* a body that is content */
    H_DROP,       /* a body addressed to a built-in tool: dropped */
    H_ARGS,       /* a call's arguments object */
    H_AFTER_ARGS  /* after the object: the terminator */
} hstate_t;

static void harm_init(toolcall_t *tc)
{
    tc->u.hm.st = H_TEXT;
}

static void harm_release(toolcall_t *tc)
{
    (void)tc;
}

static void harm_step(toolcall_t *tc, unsigned char c);

static bool ends_with(const buf_t *b, const char *m)
{
    size_t n = strlen(m);
    return b->len >= n && !memcmp(b->p + b->len - n, m, n);
}

static void header_done(toolcall_t *tc)
{
    tcharm_t *h = &tc->u.hm;
    harmony_header_t hd;
    harmony_header_parse(tc->raw.p, tc->raw.len - strlen(HARMONY_MESSAGE), &hd);
    const size_t fl = strlen(HARMONY_FUNCTIONS);
    if (!strncmp(hd.recipient, HARMONY_FUNCTIONS, fl) && hd.recipient[fl] &&
        tc_call_start(tc, hd.recipient + fl, strlen(hd.recipient + fl), NULL)) {
        h->committed = true;
        tcscan_init(&h->scan);
        h->st = H_ARGS;
        return;
    }
    tc->raw.len = 0; /* the header of a message whose body is content (or dropped) */
    h->mk_len = 0;
    h->st = hd.recipient[0] ? H_DROP : H_BODY;
}

/* A dropped body: only a terminator or the next header matters (the held
 * bytes are a possible start of one). */
static void step_drop(toolcall_t *tc, unsigned char c)
{
    tcharm_t *h = &tc->u.hm;
    if (h->mk_len < sizeof h->mk)
        h->mk[h->mk_len++] = (char)c;
    for (;;) {
        bool prefix = false;
        for (int i = 0; harmony_body_ends[i]; i++) {
            size_t l = strlen(harmony_body_ends[i]);
            if (l < h->mk_len || memcmp(harmony_body_ends[i], h->mk, h->mk_len))
                continue;
            if (l > h->mk_len) {
                prefix = true;
                continue;
            }
            h->mk_len = 0; /* a complete marker */
            if (i >= 3) { /* the next message's header starts */
                tc->raw.len = 0;
                tc_raw_add(tc, harmony_body_ends[i], l);
                h->st = H_HEADER;
            } else {
                h->st = H_TEXT;
            }
            return;
        }
        if (prefix || !h->mk_len)
            return;
        memmove(h->mk, h->mk + 1, --h->mk_len); /* body bytes: dropped */
    }
}

/* Content states: a header start begins a message; in a body the
 * terminators end it. */
static void step_content(toolcall_t *tc, unsigned char c, bool body)
{
    tcharm_t *h = &tc->u.hm;
    int m = tc_scan_markers(tc, c, body ? harmony_body_ends : harmony_header_starts);
    if (m < 0)
        return;
    const char *mk = body ? harmony_body_ends[m] : harmony_header_starts[m];
    tc->tag_len = 0;
    if (!strcmp(mk, HARMONY_START) || !strcmp(mk, HARMONY_CHANNEL)) {
        tc->raw.len = 0;
        tc_raw_add(tc, mk, strlen(mk));
        h->st = H_HEADER;
    } else {
        h->st = H_TEXT; /* a terminator: dropped */
    }
}

static void end_call(toolcall_t *tc, bool done)
{
    tcharm_t *h = &tc->u.hm;
    tc_call_end(tc, done);
    h->committed = false;
}

static void harm_step(toolcall_t *tc, unsigned char c)
{
    tcharm_t *h = &tc->u.hm;
    switch ((hstate_t)h->st) {
    case H_TEXT:
        step_content(tc, c, false);
        return;
    case H_BODY:
        step_content(tc, c, true);
        return;
    case H_DROP:
        step_drop(tc, c);
        return;
    case H_HEADER:
        tc_raw_add(tc, (const char *)&c, 1);
        if (ends_with(&tc->raw, HARMONY_MESSAGE)) {
            header_done(tc);
        } else if (tc->raw.len > HEADER_MAX) {
            tc_raw_release(tc);
            h->st = H_TEXT;
        }
        return;
    case H_ARGS: {
        if (h->scan.st == TCSCAN_VALUE && h->scan.depth == 0 && !is_ws(c) && c != '{') {
            end_call(tc, false);
            h->st = H_BODY;
            harm_step(tc, c);
            return;
        }
        tcscan_res_t r = tcscan_byte(&h->scan, c);
        if (r == TCSCAN_R_ERR || r == TCSCAN_R_END_BEFORE) {
            end_call(tc, false);
            h->st = H_BODY;
            harm_step(tc, c);
            return;
        }
        if (r != TCSCAN_R_WS)
            tc_call_args(tc, (const char *)&c, 1);
        if (r == TCSCAN_R_END) {
            end_call(tc, true);
            h->mk_len = 0;
            h->st = H_AFTER_ARGS;
        }
        return;
    }
    case H_AFTER_ARGS: {
        if (h->mk_len == 0 && is_ws(c))
            return;
        int r = tc_mk_feed(h->mk, &h->mk_len, sizeof h->mk, c, harmony_body_ends, 5);
        if (r == -1)
            return;
        if (r >= 3) { /* the next message's header starts */
            tc->raw.len = 0;
            tc_raw_add(tc, harmony_body_ends[r], strlen(harmony_body_ends[r]));
            h->st = H_HEADER;
            return;
        }
        if (r >= 0) { /* the terminator */
            h->st = H_TEXT;
            return;
        }
        /* text after the arguments: the rest of the body is content */
        char held[sizeof h->mk];
        size_t n = h->mk_len;
        memcpy(held, h->mk, n);
        h->mk_len = 0;
        h->st = H_BODY;
        for (size_t i = 0; i < n; i++)
            harm_step(tc, (unsigned char)held[i]);
        return;
    }
    }
}

static void harm_finish(toolcall_t *tc)
{
    tcharm_t *h = &tc->u.hm;
    if (h->committed)
        end_call(tc, false);
    if (h->st == H_AFTER_ARGS)
        h->mk_len = 0; /* a partial terminator: markup */
    h->st = H_TEXT;
}

const toolcall_family_t toolcall_family_harmony = {harm_init, harm_step, harm_finish, harm_release};
