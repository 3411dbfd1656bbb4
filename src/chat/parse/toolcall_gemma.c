/* toolcall_gemma.c - Gemma 4's argument syntax turned into JSON, one byte
 * at a time (see tcgemma_byte in toolcall_impl.h). Gemma writes
 *   {key:<|"|>text<|"|>,n:42,ok:true,list:[<|"|>a<|"|>,1],obj:{k:null}}
 * keys bare (or between the string delimiter), strings between <|"|> and
 * never escaped, numbers, true / false / null, objects and arrays as in
 * JSON. The output is the JSON text of the same value; the caller checks
 * its syntax (bare values are copied as they are, so "tru" fails there).
 */
#include "chat/parse/toolcall_impl.h"

typedef enum {
    G_VALUE,       /* a value */
    G_VALUE_OR_END,/* after '[': a value or ']' */
    G_KEY_OR_END,  /* after '{' or ',' in an object: a key or '}' */
    G_KEY,         /* inside a bare key, up to ':' */
    G_COLON,       /* after a delimited key: ':' */
    G_STR,         /* inside a delimited string */
    G_BARE,        /* inside a number or literal */
    G_AFTER,       /* after a value: ',' or the container's end */
    G_DONE         /* the outer object is complete */
} gstate_t;

void tcgemma_init(tcgemma_t *g, const char *delim)
{
    memset(g, 0, sizeof *g);
    g->delim = delim;
    g->st = G_VALUE;
}

static void put(char *out, size_t *n, char c)
{
    out[(*n)++] = c;
}

/* A string byte, JSON-escaped. */
static void put_str(char *out, size_t *n, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    switch (c) {
    case '"': put(out, n, '\\'), put(out, n, '"'); return;
    case '\\': put(out, n, '\\'), put(out, n, '\\'); return;
    case '\n': put(out, n, '\\'), put(out, n, 'n'); return;
    case '\r': put(out, n, '\\'), put(out, n, 'r'); return;
    case '\t': put(out, n, '\\'), put(out, n, 't'); return;
    default:
        if (c < 0x20) {
            put(out, n, '\\'), put(out, n, 'u'), put(out, n, '0'), put(out, n, '0');
            put(out, n, hex[c >> 4]), put(out, n, hex[c & 15]);
        } else {
            put(out, n, (char)c);
        }
    }
}

/* After a value: the container's state. */
static void value_done(tcgemma_t *g)
{
    g->st = g->depth ? G_AFTER : G_DONE;
}

/* Feeds one byte to the delimiter matcher (mk). 1: the delimiter is
 * complete; 0: still a prefix; -1: not the delimiter (the bytes stay in
 * mk for the caller). */
static int delim_feed(tcgemma_t *g, unsigned char c)
{
    size_t dl = strlen(g->delim);
    if (g->mk_len < sizeof g->mk)
        g->mk[g->mk_len++] = (char)c;
    if (g->mk_len > dl || memcmp(g->mk, g->delim, g->mk_len))
        return -1;
    if (g->mk_len == dl) {
        g->mk_len = 0;
        return 1;
    }
    return 0;
}

/* A value starts with c. */
static int start_value(tcgemma_t *g, unsigned char c, char *out, size_t *n)
{
    if (c == '{' || c == '[') {
        if (g->depth == TCSCAN_MAX_DEPTH)
            return -1;
        g->stack[g->depth++] = c;
        put(out, n, (char)c);
        g->st = c == '{' ? G_KEY_OR_END : G_VALUE_OR_END;
        return 0;
    }
    if (c == (unsigned char)g->delim[0]) {
        g->mk_len = 0;
        g->key = false;
        g->st = G_STR;
        g->opening = true;
        return delim_feed(g, c) == 0 ? 0 : -1;
    }
    if (strchr("-+.0123456789eEtrufalsn", c)) {
        put(out, n, (char)c);
        g->st = G_BARE;
        return 0;
    }
    return -1;
}

int tcgemma_byte(tcgemma_t *g, unsigned char c, char *out, size_t *n)
{
    *n = 0;
    switch ((gstate_t)g->st) {
    case G_VALUE_OR_END:
        if (c == ']') {
            g->depth--;
            put(out, n, ']');
            value_done(g);
            return g->st == G_DONE ? 1 : 0;
        }
        /* fall through */
    case G_VALUE:
        if (is_ws(c))
            return 0;
        return start_value(g, c, out, n);
    case G_KEY_OR_END:
        if (is_ws(c))
            return 0;
        if (c == '}') {
            g->depth--;
            put(out, n, '}');
            value_done(g);
            return g->st == G_DONE ? 1 : 0;
        }
        if (c == (unsigned char)g->delim[0]) { /* a delimited key */
            g->mk_len = 0;
            g->key = true;
            g->opening = true;
            g->st = G_STR;
            return delim_feed(g, c) == 0 ? 0 : -1;
        }
        if (c == ':' || c == ',' || c == '{' || c == '[')
            return -1;
        put(out, n, '"');
        put_str(out, n, c);
        g->st = G_KEY;
        return 0;
    case G_KEY:
        if (c == ':') {
            put(out, n, '"');
            put(out, n, ':');
            g->st = G_VALUE;
            return 0;
        }
        if (c == '}' || c == ',' || c == '{' || c == '[')
            return -1;
        put_str(out, n, c);
        return 0;
    case G_COLON:
        if (is_ws(c))
            return 0;
        if (c != ':')
            return -1;
        put(out, n, ':');
        g->st = G_VALUE;
        return 0;
    case G_STR: {
        if (g->opening) { /* the opening delimiter */
            int r = delim_feed(g, c);
            if (r < 0)
                return -1;
            if (r == 1) {
                g->opening = false;
                put(out, n, '"');
            }
            return 0;
        }
        int r = delim_feed(g, c);
        if (r == 0)
            return 0;
        if (r == 1) { /* the closing delimiter */
            put(out, n, '"');
            if (g->key)
                g->st = G_COLON;
            else
                value_done(g);
            return 0;
        }
        /* not the delimiter: the held bytes are text, the last one may
         * start it again */
        size_t held = g->mk_len;
        char tmp[sizeof g->mk];
        memcpy(tmp, g->mk, held);
        g->mk_len = 0;
        for (size_t i = 0; i < held; i++) {
            if (i + 1 == held && (unsigned char)tmp[i] == (unsigned char)g->delim[0]) {
                delim_feed(g, (unsigned char)tmp[i]);
                break;
            }
            put_str(out, n, (unsigned char)tmp[i]);
        }
        return 0;
    }
    case G_BARE:
        if (!is_ws(c) && c != ',' && c != '}' && c != ']') {
            put(out, n, (char)c);
            return 0;
        }
        g->st = G_AFTER;
        /* fall through */
    case G_AFTER: {
        if (is_ws(c))
            return 0;
        uint8_t top = g->depth ? g->stack[g->depth - 1] : 0;
        if (c == ',') {
            put(out, n, ',');
            g->st = top == '{' ? G_KEY_OR_END : G_VALUE;
            return 0;
        }
        if ((c == '}' && top == '{') || (c == ']' && top == '[')) {
            g->depth--;
            put(out, n, (char)c);
            value_done(g);
            return g->st == G_DONE ? 1 : 0;
        }
        return -1;
    }
    case G_DONE:
        return -1;
    }
    return -1;
}
