/* fcgi_parse.c - incremental, bounded parser of a FastCGI connection's
 * input (see fcgi_parse.h). The record layout and constants come from
 * libfcgi's <fastcgi.h> (the protocol specification's header). */
#include "server/transport/fcgi_parse.h"

#include <fastcgi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPLY_CAP 65536            /* queued reply bytes before giving up */
#define DEFAULT_LIMIT (1u << 20)

typedef enum {
    ST_BEGIN,   /* waiting for BEGIN_REQUEST */
    ST_PARAMS,  /* reading the PARAMS stream */
    ST_STDIN,   /* reading the STDIN stream */
    ST_END      /* DONE, CLOSE or ERROR returned */
} state_t;

typedef struct {
    uint8_t *p;
    size_t n, cap;
} buf_t;

struct fcgi_parser {
    fcgi_limits_t lim;
    state_t st;
    fcgi_parse_status_t final;
    char err[160];
    /* the record being read */
    uint8_t hdr[8];
    size_t hdr_got;
    int type, id;
    size_t content_left, pad_left;
    bool skip;            /* content is not ours: count it, drop it */
    buf_t rec;            /* content of a BEGIN / GET_VALUES record */
    /* the request */
    uint16_t req_id;
    bool keep_conn;
    buf_t params, body;
    fcgi_param_t *pairs;  /* the PARAMS stream decoded (one block) */
    size_t n_pairs;
    bool ending;          /* the record that ends the request is being read
                             (DONE once its padding is consumed) */
    bool body_over;       /* the body is over max_body: reading stopped */
    size_t other;         /* bytes of skipped records */
    uint64_t announced;
    buf_t reply;
    size_t reply_off;
};

static bool buf_put(buf_t *b, const void *p, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->n + n + 1 > cap)
            cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q)
            return false;
        b->p = q;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0;
    return true;
}

static void buf_free(buf_t *b)
{
    free(b->p);
    *b = (buf_t){0};
}

fcgi_parser_t *fcgi_parser_create(const fcgi_limits_t *lim)
{
    fcgi_parser_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->lim = *lim;
    if (!p->lim.max_params)
        p->lim.max_params = DEFAULT_LIMIT;
    if (!p->lim.max_other)
        p->lim.max_other = DEFAULT_LIMIT;
    if (p->lim.max_conns <= 0)
        p->lim.max_conns = 1;
    return p;
}

void fcgi_parser_reset(fcgi_parser_t *p)
{
    fcgi_limits_t lim = p->lim;
    free(p->pairs);
    buf_free(&p->rec);
    buf_free(&p->params);
    buf_free(&p->body);
    buf_t reply = p->reply; /* unsent replies still go out */
    size_t off = p->reply_off;
    memset(p, 0, sizeof *p);
    p->lim = lim;
    p->reply = reply;
    p->reply_off = off;
}

void fcgi_parser_free(fcgi_parser_t *p)
{
    if (!p)
        return;
    free(p->pairs);
    buf_free(&p->rec);
    buf_free(&p->params);
    buf_free(&p->body);
    buf_free(&p->reply);
    free(p);
}

void fcgi_header_put(uint8_t out[8], int type, int id, size_t content_len, int padding)
{
    out[0] = FCGI_VERSION_1;
    out[1] = (uint8_t)type;
    out[2] = (uint8_t)(id >> 8);
    out[3] = (uint8_t)id;
    out[4] = (uint8_t)(content_len >> 8);
    out[5] = (uint8_t)content_len;
    out[6] = (uint8_t)padding;
    out[7] = 0;
}

static fcgi_parse_status_t fail(fcgi_parser_t *p, fcgi_parse_status_t st, const char *fmt, int a, int b)
{
    snprintf(p->err, sizeof p->err, fmt, a, b);
    p->st = ST_END;
    p->final = st;
    return st;
}

/* Queues one record (content padded to 8) for the peer. */
static bool reply_rec(fcgi_parser_t *p, int type, int id, const uint8_t *content, size_t len)
{
    size_t pad = (8 - len % 8) % 8;
    if (p->reply.n - p->reply_off + 8 + len + pad > REPLY_CAP)
        return false;
    uint8_t h[8];
    static const uint8_t zeros[8];
    fcgi_header_put(h, type, id, len, (int)pad);
    return buf_put(&p->reply, h, 8) && buf_put(&p->reply, content, len) && buf_put(&p->reply, zeros, pad);
}

static bool reply_end_request(fcgi_parser_t *p, int id, int protocol_status)
{
    uint8_t body[8] = {0, 0, 0, 0, (uint8_t)protocol_status, 0, 0, 0};
    return reply_rec(p, FCGI_END_REQUEST, id, body, sizeof body);
}

/* Reads one name-value length (1 byte, or 4 with the high bit set) from
 * [*pos, end); false when it does not fit. */
static bool read_len(const uint8_t *s, size_t end, size_t *pos, size_t *len)
{
    if (*pos >= end)
        return false;
    if (!(s[*pos] & 0x80)) {
        *len = s[(*pos)++];
        return true;
    }
    if (end - *pos < 4)
        return false;
    *len = ((size_t)(s[*pos] & 0x7f) << 24) | ((size_t)s[*pos + 1] << 16) | ((size_t)s[*pos + 2] << 8) |
           s[*pos + 3];
    *pos += 4;
    return true;
}

/* Walks the pairs of s[0..n): calls fn for each (may be NULL to count);
 * returns the number of pairs, or -1 when a length runs past the end. */
typedef void (*pair_fn)(void *ctx, const uint8_t *name, size_t nl, const uint8_t *value, size_t vl);
static long walk_pairs(const uint8_t *s, size_t n, pair_fn fn, void *ctx)
{
    size_t pos = 0;
    long count = 0;
    while (pos < n) {
        size_t nl, vl;
        if (!read_len(s, n, &pos, &nl) || !read_len(s, n, &pos, &vl))
            return -1;
        if (nl > n - pos || vl > n - pos - nl)
            return -1;
        if (fn)
            fn(ctx, s + pos, nl, s + pos + nl, vl);
        pos += nl + vl;
        count++;
    }
    return count;
}

/* ---- GET_VALUES ---- */

typedef struct {
    const char *name;
    char value[16];
    bool asked;
} known_var_t;

static void note_var(void *ctx, const uint8_t *name, size_t nl, const uint8_t *value, size_t vl)
{
    (void)value;
    (void)vl;
    known_var_t *v = ctx;
    for (int i = 0; i < 3; i++)
        if (strlen(v[i].name) == nl && !memcmp(v[i].name, name, nl))
            v[i].asked = true;
}

static fcgi_parse_status_t get_values(fcgi_parser_t *p)
{
    known_var_t v[3] = {{FCGI_MAX_CONNS, "", false}, {FCGI_MAX_REQS, "", false}, {FCGI_MPXS_CONNS, "0", false}};
    snprintf(v[0].value, sizeof v[0].value, "%d", p->lim.max_conns);
    snprintf(v[1].value, sizeof v[1].value, "%d", p->lim.max_conns);
    if (walk_pairs(p->rec.p, p->rec.n, note_var, v) < 0)
        return fail(p, FCGI_PARSE_ERROR, "malformed GET_VALUES record", 0, 0);
    uint8_t out[128];
    size_t n = 0;
    for (int i = 0; i < 3; i++) /* each known variable once, whatever was asked */
        if (v[i].asked) {
            size_t nl = strlen(v[i].name), vl = strlen(v[i].value);
            out[n++] = (uint8_t)nl;
            out[n++] = (uint8_t)vl;
            memcpy(out + n, v[i].name, nl);
            memcpy(out + n + nl, v[i].value, vl);
            n += nl + vl;
        }
    if (!reply_rec(p, FCGI_GET_VALUES_RESULT, FCGI_NULL_REQUEST_ID, out, n))
        return fail(p, FCGI_PARSE_ERROR, "the peer does not read the answers to its management records", 0, 0);
    return FCGI_PARSE_MORE;
}

/* ---- PARAMS ---- */

typedef struct {
    fcgi_param_t *out;
    char *strings;
    size_t n;
    bool nul;
} collect_t;

static void collect_pair(void *ctx, const uint8_t *name, size_t nl, const uint8_t *value, size_t vl)
{
    collect_t *c = ctx;
    if (memchr(name, 0, nl) || memchr(value, 0, vl) || nl == 0)
        c->nul = true;
    char *s = c->strings;
    memcpy(s, name, nl);
    s[nl] = '\0';
    memcpy(s + nl + 1, value, vl);
    s[nl + 1 + vl] = '\0';
    c->out[c->n].name = s;
    c->out[c->n].value = s + nl + 1;
    c->n++;
    c->strings = s + nl + vl + 2;
}

/* The pairs of the PARAMS stream, decoded into one block: the array of
 * fcgi_param_t followed by the strings. */
static fcgi_parse_status_t decode_params(fcgi_parser_t *p, fcgi_param_t **out, size_t *n_out)
{
    long n = walk_pairs(p->params.p, p->params.n, NULL, NULL);
    if (n < 0)
        return fail(p, FCGI_PARSE_ERROR, "malformed PARAMS stream (a name or value length runs past its end)", 0,
                    0);
    /* each pair needs at most its encoded size + 2 NULs of string space */
    size_t size = (size_t)n * sizeof(fcgi_param_t) + p->params.n + 2 * (size_t)n + 1;
    fcgi_param_t *arr = malloc(size);
    if (!arr)
        return fail(p, FCGI_PARSE_ERROR, "out of memory", 0, 0);
    collect_t c = {.out = arr, .strings = (char *)(arr + n)};
    walk_pairs(p->params.p, p->params.n, collect_pair, &c);
    if (c.nul) {
        free(arr);
        return fail(p, FCGI_PARSE_ERROR, "a parameter with an empty name or a NUL byte", 0, 0);
    }
    *out = arr;
    *n_out = (size_t)n;
    return FCGI_PARSE_MORE;
}

/* ---- records ---- */

/* A record header is complete: decides what its content is for. */
static fcgi_parse_status_t on_header(fcgi_parser_t *p)
{
    const uint8_t *h = p->hdr;
    if (h[0] != FCGI_VERSION_1)
        return fail(p, FCGI_PARSE_ERROR, "unsupported FastCGI version %d (record type %d)", h[0], h[1]);
    p->type = h[1];
    p->id = (h[2] << 8) | h[3];
    p->content_left = ((size_t)h[4] << 8) | h[5];
    p->pad_left = h[6];
    p->skip = false;
    p->rec.n = 0;
    if (p->id == FCGI_NULL_REQUEST_ID) {
        if (p->type == FCGI_BEGIN_REQUEST)
            return fail(p, FCGI_PARSE_ERROR, "BEGIN_REQUEST with request id 0", 0, 0);
        if (p->type != FCGI_GET_VALUES) { /* answered at once, content dropped */
            uint8_t body[8] = {(uint8_t)p->type};
            if (!reply_rec(p, FCGI_UNKNOWN_TYPE, FCGI_NULL_REQUEST_ID, body, sizeof body))
                return fail(p, FCGI_PARSE_ERROR, "the peer does not read the answers to its management records",
                            0, 0);
            p->skip = true;
        }
    } else if (p->type == FCGI_BEGIN_REQUEST) {
        if (p->content_left != 8)
            return fail(p, FCGI_PARSE_ERROR, "BEGIN_REQUEST with %d content bytes instead of 8",
                        (int)p->content_left, 0);
        if (p->st != ST_BEGIN) {
            if (p->id == p->req_id)
                return fail(p, FCGI_PARSE_ERROR, "a second BEGIN_REQUEST for request %d", p->id, 0);
            /* multiplexing: refuse the other request, keep ours */
            if (!reply_end_request(p, p->id, FCGI_CANT_MPX_CONN))
                return fail(p, FCGI_PARSE_ERROR, "the peer does not read the answers to its records", 0, 0);
            p->skip = true;
        }
    } else if (p->st == ST_BEGIN || p->id != p->req_id) {
        p->skip = true; /* records of requests that are not (or no longer) active */
    } else if (p->type == FCGI_ABORT_REQUEST) {
        return fail(p, FCGI_PARSE_ERROR, "the peer aborted request %d", p->id, 0);
    } else if (p->type == FCGI_PARAMS) {
        if (p->st != ST_PARAMS)
            return fail(p, FCGI_PARSE_ERROR, "PARAMS record after the end of the PARAMS stream", 0, 0);
        if (p->content_left == 0) { /* end of the stream */
            if (decode_params(p, &p->pairs, &p->n_pairs) != FCGI_PARSE_MORE)
                return p->final;
            buf_free(&p->params);
            p->st = ST_STDIN;
            const char *cl = NULL;
            for (size_t i = 0; i < p->n_pairs; i++)
                if (!strcmp(p->pairs[i].name, "CONTENT_LENGTH")) {
                    cl = p->pairs[i].value;
                    break;
                }
            p->announced = cl ? strtoull(cl, NULL, 10) : 0;
            if (p->lim.max_body && p->announced > p->lim.max_body) {
                p->body_over = true; /* too large: no need to read it */
                p->ending = true;
            }
        } else if (p->params.n + p->content_left > p->lim.max_params) {
            return fail(p, FCGI_PARSE_ERROR, "PARAMS stream over %d bytes", (int)p->lim.max_params, 0);
        }
    } else if (p->type == FCGI_STDIN) {
        if (p->st != ST_STDIN)
            return fail(p, FCGI_PARSE_ERROR, "STDIN record before the end of the PARAMS stream", 0, 0);
        if (p->content_left == 0)
            p->ending = true;
    } else {
        return fail(p, FCGI_PARSE_ERROR, "unexpected record type %d for request %d", p->type, p->id);
    }
    if ((p->skip || p->id == FCGI_NULL_REQUEST_ID) &&
        (p->other += 8 + p->content_left + p->pad_left) > p->lim.max_other)
        return fail(p, FCGI_PARSE_ERROR, "over %d bytes of records that are not for the request",
                    (int)p->lim.max_other, 0);
    return FCGI_PARSE_MORE;
}

/* The content of a BEGIN_REQUEST (ours) or GET_VALUES record is complete. */
static fcgi_parse_status_t on_record_end(fcgi_parser_t *p)
{
    if (p->skip)
        return FCGI_PARSE_MORE;
    if (p->id == FCGI_NULL_REQUEST_ID) /* GET_VALUES */
        return get_values(p);
    if (p->type == FCGI_BEGIN_REQUEST) {
        const uint8_t *b = p->rec.p;
        int role = (b[0] << 8) | b[1];
        p->req_id = (uint16_t)p->id;
        p->keep_conn = b[2] & FCGI_KEEP_CONN;
        if (role != FCGI_RESPONDER) {
            if (!reply_end_request(p, p->id, FCGI_UNKNOWN_ROLE))
                return fail(p, FCGI_PARSE_ERROR, "the peer does not read the answers to its records", 0, 0);
            return fail(p, FCGI_PARSE_CLOSE, "role %d is not supported (responder only)", role, 0);
        }
        p->st = ST_PARAMS;
    }
    return FCGI_PARSE_MORE;
}

/* Content bytes of the current record. */
static fcgi_parse_status_t on_content(fcgi_parser_t *p, const uint8_t *d, size_t k)
{
    if (p->skip)
        return FCGI_PARSE_MORE;
    if (p->id == FCGI_NULL_REQUEST_ID || p->type == FCGI_BEGIN_REQUEST)
        return buf_put(&p->rec, d, k) ? FCGI_PARSE_MORE : fail(p, FCGI_PARSE_ERROR, "out of memory", 0, 0);
    if (p->type == FCGI_PARAMS)
        return buf_put(&p->params, d, k) ? FCGI_PARSE_MORE : fail(p, FCGI_PARSE_ERROR, "out of memory", 0, 0);
    /* STDIN */
    if (p->lim.max_body && p->body.n + k > p->lim.max_body) {
        p->body_over = true; /* over the limit: stop reading */
        return FCGI_PARSE_DONE;
    }
    return buf_put(&p->body, d, k) ? FCGI_PARSE_MORE : fail(p, FCGI_PARSE_ERROR, "out of memory", 0, 0);
}

fcgi_parse_status_t fcgi_parser_feed(fcgi_parser_t *p, const uint8_t *data, size_t n, size_t *used)
{
    size_t pos = 0;
    fcgi_parse_status_t st = FCGI_PARSE_MORE;
    if (p->st == ST_END) {
        *used = 0;
        return p->final;
    }
    while (pos < n && st == FCGI_PARSE_MORE) {
        if (p->hdr_got < 8) {
            size_t k = 8 - p->hdr_got < n - pos ? 8 - p->hdr_got : n - pos;
            memcpy(p->hdr + p->hdr_got, data + pos, k);
            p->hdr_got += k;
            pos += k;
            if (p->hdr_got < 8)
                break;
            st = on_header(p);
            if (st == FCGI_PARSE_MORE && p->content_left == 0)
                st = on_record_end(p);
        } else if (p->content_left) {
            size_t k = p->content_left < n - pos ? p->content_left : n - pos;
            st = on_content(p, data + pos, k);
            if (st != FCGI_PARSE_MORE)
                break; /* these bytes are not consumed */
            p->content_left -= k;
            pos += k;
            if (p->content_left == 0)
                st = on_record_end(p);
        } else {
            size_t k = p->pad_left < n - pos ? p->pad_left : n - pos;
            p->pad_left -= k;
            pos += k;
        }
        if (st == FCGI_PARSE_MORE && p->hdr_got == 8 && p->content_left == 0 && p->pad_left == 0) {
            p->hdr_got = 0; /* record complete, padding included */
            if (p->ending)
                st = FCGI_PARSE_DONE;
        }
    }
    if (st != FCGI_PARSE_MORE) {
        p->st = ST_END;
        p->final = st;
    }
    *used = pos;
    return st;
}

const char *fcgi_parser_error(const fcgi_parser_t *p)
{
    return p->err;
}

const uint8_t *fcgi_parser_reply(const fcgi_parser_t *p, size_t *n)
{
    *n = p->reply.n - p->reply_off;
    return p->reply.p ? p->reply.p + p->reply_off : NULL;
}

void fcgi_parser_reply_sent(fcgi_parser_t *p, size_t n)
{
    p->reply_off += n;
    if (p->reply_off >= p->reply.n)
        p->reply.n = p->reply_off = 0;
}

void fcgi_parser_take(fcgi_parser_t *p, fcgi_req_t *out)
{
    *out = (fcgi_req_t){.id = p->req_id, .keep_conn = p->keep_conn, .body_over = p->body_over,
                        .body_announced = p->announced, .params = p->pairs, .n_params = p->n_pairs};
    p->pairs = NULL;
    p->n_pairs = 0;
    out->body = p->body.p ? (char *)p->body.p : calloc(1, 1);
    out->body_len = p->body.n;
    p->body = (buf_t){0};
}

const char *fcgi_req_param(const fcgi_req_t *r, const char *name)
{
    for (size_t i = 0; i < r->n_params; i++)
        if (!strcmp(r->params[i].name, name))
            return r->params[i].value;
    return NULL;
}

void fcgi_req_free(fcgi_req_t *r)
{
    if (!r)
        return;
    free(r->params);
    free(r->body);
    *r = (fcgi_req_t){0};
}
