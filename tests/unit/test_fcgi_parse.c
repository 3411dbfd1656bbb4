/* test_fcgi_parse - the FastCGI input parser (the guard in front of
 * libfcgi): well-formed requests however they are split, and every kind of
 * malformed or hostile record stream, table-driven. */
#include <fastcgi.h>
#include <stdlib.h>
#include <string.h>

#include "server/transport/fcgi_parse.h"
#include "tap.h"
#include "tools/fcgi_peer.h"

static const fcgi_limits_t LIM = {.max_params = 4096, .max_body = 1000, .max_other = 8192, .max_conns = 7};

/* feeds buf in pieces of `step` bytes (0: all at once) */
static fcgi_parse_status_t feed(fcgi_parser_t *p, const fbuf_t *b, size_t step, size_t *used_total)
{
    size_t pos = 0;
    fcgi_parse_status_t st = FCGI_PARSE_MORE;
    while (pos < b->n) {
        size_t k = step ? (b->n - pos < step ? b->n - pos : step) : b->n - pos, used = 0;
        st = fcgi_parser_feed(p, b->p + pos, k, &used);
        pos += used;
        if (st != FCGI_PARSE_MORE)
            break;
        if (used != k)
            return FCGI_PARSE_ERROR; /* MORE must consume everything */
    }
    *used_total = pos;
    return st;
}

static void nginx_request(fbuf_t *b, int id, const char *body)
{
    const char *extra[] = {"HTTP_AUTHORIZATION=Bearer k", "SERVER_PROTOCOL=HTTP/1.1", NULL};
    fbuf_request(b, id, "POST", "/v1/completions?x=1", extra, body, strlen(body));
}

static void begin(fbuf_t *b, int id, int role, int flags)
{
    uint8_t c[8] = {(uint8_t)(role >> 8), (uint8_t)role, (uint8_t)flags};
    fbuf_rec(b, FCGI_BEGIN_REQUEST, id, c, 8);
}

/* a PARAMS stream of one pair (any bytes) */
static void params_pair(fbuf_t *b, int id, const char *name, size_t nl, const char *value, size_t vl)
{
    fbuf_t ps = {0};
    fbuf_pair(&ps, name, nl, value, vl);
    fbuf_stream(b, FCGI_PARAMS, id, ps.p, ps.n);
    fbuf_free(&ps);
}

static void params(fbuf_t *b, int id, const char *kv)
{
    const char *eq = strchr(kv, '=');
    params_pair(b, id, kv, (size_t)(eq - kv), eq + 1, strlen(eq + 1));
}

/* ---- well-formed requests, split every way ---- */
static void test_well_formed(void)
{
    fbuf_t b = {0};
    nginx_request(&b, 1, "{\"prompt\":\"hi\"}");
    size_t steps[] = {0, 1, 3, 7, 8, 9, 64};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        fcgi_parser_t *p = fcgi_parser_create(&LIM);
        size_t used;
        fcgi_parse_status_t st = feed(p, &b, steps[i], &used);
        fcgi_req_t r;
        fcgi_parser_take(p, &r);
        const char *m = fcgi_req_param(&r, "REQUEST_METHOD"), *a = fcgi_req_param(&r, "HTTP_AUTHORIZATION");
        tap_ok(st == FCGI_PARSE_DONE && used == b.n && r.id == 1 && m && !strcmp(m, "POST") && a &&
                   !strcmp(a, "Bearer k") && r.body_len == 15 && !strcmp(r.body, "{\"prompt\":\"hi\"}") &&
                   !r.body_over && r.body_announced == 15,
               "well-formed request fed in pieces of %zu bytes: params and body", steps[i]);
        fcgi_req_free(&r);
        fcgi_parser_free(p);
    }
    /* bytes after the request are left to the caller (the next request) */
    fbuf_t two = {0};
    nginx_request(&two, 1, "a");
    size_t first = two.n;
    nginx_request(&two, 2, "bb");
    fcgi_parser_t *p = fcgi_parser_create(&LIM);
    size_t used;
    fcgi_parse_status_t st = fcgi_parser_feed(p, two.p, two.n, &used);
    fcgi_req_t r;
    fcgi_parser_take(p, &r);
    tap_ok(st == FCGI_PARSE_DONE && used == first && !strcmp(r.body, "a"), "stops at the end of the request");
    fcgi_req_free(&r);
    fcgi_parser_reset(p);
    st = fcgi_parser_feed(p, two.p + used, two.n - used, &used);
    fcgi_parser_take(p, &r);
    tap_ok(st == FCGI_PARSE_DONE && r.id == 2 && !strcmp(r.body, "bb"), "after reset: the next request (keep-conn)");
    fcgi_req_free(&r);
    fcgi_parser_free(p);
    /* an empty request: no params, no body */
    fbuf_t e = {0};
    begin(&e, 9, FCGI_RESPONDER, FCGI_KEEP_CONN);
    fbuf_rec(&e, FCGI_PARAMS, 9, NULL, 0);
    fbuf_rec(&e, FCGI_STDIN, 9, NULL, 0);
    p = fcgi_parser_create(&LIM);
    st = feed(p, &e, 0, &used);
    fcgi_parser_take(p, &r);
    tap_ok(st == FCGI_PARSE_DONE && r.n_params == 0 && r.body && r.body_len == 0 && r.keep_conn && r.id == 9,
           "empty params and body, keep-conn flag");
    fcgi_req_free(&r);
    fcgi_parser_free(p);
    fbuf_free(&e);
    fbuf_free(&two);
    fbuf_free(&b);
}

/* ---- hostile streams: one table ---- */
typedef void (*build_fn)(fbuf_t *b);

static void b_version(fbuf_t *b) { fbuf_rec_raw(b, 2, FCGI_BEGIN_REQUEST, 1, 8, 0, "\0\1\0\0\0\0\0\0", 8, 0); }
static void b_version0(fbuf_t *b) { fbuf_rec_raw(b, 0, FCGI_PARAMS, 1, 0, 0, NULL, 0, 0); }
static void b_begin_len(fbuf_t *b) { fbuf_rec(b, FCGI_BEGIN_REQUEST, 1, "\0\1\0\0\0\0\0\0\0\0", 10); }
static void b_begin_id0(fbuf_t *b) { begin(b, 0, FCGI_RESPONDER, 0); }
static void b_begin_twice(fbuf_t *b)
{
    begin(b, 1, FCGI_RESPONDER, 0);
    begin(b, 1, FCGI_RESPONDER, 0);
}
static void b_huge_pair(fbuf_t *b) /* libfcgi's Malloc assert */
{
    begin(b, 1, FCGI_RESPONDER, 0);
    uint8_t pair[11] = {0xff, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xff, 0xfe, 'a', 'b', 'c'};
    fbuf_rec(b, FCGI_PARAMS, 1, pair, sizeof pair);
    fbuf_rec(b, FCGI_PARAMS, 1, NULL, 0);
}
static void b_pair_past_end(fbuf_t *b)
{
    begin(b, 1, FCGI_RESPONDER, 0);
    uint8_t pair[5] = {3, 9, 'a', 'b', 'c'};
    fbuf_rec(b, FCGI_PARAMS, 1, pair, sizeof pair);
    fbuf_rec(b, FCGI_PARAMS, 1, NULL, 0);
}
static void b_pair_cut_len(fbuf_t *b)
{
    begin(b, 1, FCGI_RESPONDER, 0);
    uint8_t pair[3] = {0x80, 0, 1};
    fbuf_rec(b, FCGI_PARAMS, 1, pair, sizeof pair);
    fbuf_rec(b, FCGI_PARAMS, 1, NULL, 0);
}
static void b_params_nul(fbuf_t *b)
{
    begin(b, 1, FCGI_RESPONDER, 0);
    params_pair(b, 1, "A", 1, "x\0y", 3);
}
static void b_params_noname(fbuf_t *b)
{
    begin(b, 1, FCGI_RESPONDER, 0);
    params_pair(b, 1, "", 0, "v", 1);
}
static void b_params_big(fbuf_t *b)
{
    begin(b, 1, FCGI_RESPONDER, 0);
    static char v[5000];
    memset(v, 'v', sizeof v);
    params_pair(b, 1, "BIG", 3, v, sizeof v);
}
static void b_params_endless(fbuf_t *b) /* never ends: the limit stops it */
{
    begin(b, 1, FCGI_RESPONDER, 0);
    static char v[1000];
    memset(v, 'x', sizeof v);
    for (int i = 0; i < 10; i++)
        fbuf_rec(b, FCGI_PARAMS, 1, v, sizeof v);
}
static void b_stdin_early(fbuf_t *b)
{
    begin(b, 1, FCGI_RESPONDER, 0);
    fbuf_rec(b, FCGI_STDIN, 1, "x", 1);
}
static void b_params_late(fbuf_t *b)
{
    begin(b, 1, FCGI_RESPONDER, 0);
    params(b, 1, "A=b");
    fbuf_rec(b, FCGI_PARAMS, 1, "\1\1ab", 4);
}
static void b_unknown_type(fbuf_t *b)
{
    begin(b, 1, FCGI_RESPONDER, 0);
    fbuf_rec(b, 50, 1, "zz", 2);
}
static void b_data_type(fbuf_t *b)
{
    begin(b, 1, FCGI_RESPONDER, 0);
    params(b, 1, "A=b");
    fbuf_rec(b, FCGI_DATA, 1, "zz", 2);
}
static void b_stdout_from_peer(fbuf_t *b)
{
    begin(b, 1, FCGI_RESPONDER, 0);
    fbuf_rec(b, FCGI_STDOUT, 1, "zz", 2);
}
static void b_abort(fbuf_t *b)
{
    begin(b, 1, FCGI_RESPONDER, 0);
    params(b, 1, "A=b");
    fbuf_rec(b, FCGI_ABORT_REQUEST, 1, NULL, 0);
}
static void b_getvalues_huge(fbuf_t *b)
{
    uint8_t pair[11] = {0xff, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xff, 0xfe, 'a', 'b', 'c'};
    fbuf_rec(b, FCGI_GET_VALUES, 0, pair, sizeof pair);
}
static void b_other_flood(fbuf_t *b) /* endless records for other ids */
{
    static char v[1000];
    for (int i = 0; i < 20; i++)
        fbuf_rec(b, FCGI_STDIN, 7, v, sizeof v);
}
static void b_mgmt_flood(fbuf_t *b) /* management records nobody reads the answers to */
{
    for (int i = 0; i < 5000; i++)
        fbuf_rec(b, 99, 0, NULL, 0);
}

/* requests that end normally despite odd records */
static void b_role(fbuf_t *b) { begin(b, 3, FCGI_AUTHORIZER, 0); }
static void b_mpx(fbuf_t *b)
{
    begin(b, 1, FCGI_RESPONDER, 0);
    begin(b, 2, FCGI_RESPONDER, 0);
    params(b, 2, "X=other");
    params(b, 1, "CONTENT_LENGTH=2");
    fbuf_stream(b, FCGI_STDIN, 1, "ok", 2);
}
static void b_getvalues(fbuf_t *b)
{
    fbuf_t ps = {0};
    for (int i = 0; i < 40; i++) /* libfcgi's 64-byte answer buffer overflowed here */
        fbuf_pair(&ps, FCGI_MAX_CONNS, strlen(FCGI_MAX_CONNS), "", 0);
    fbuf_pair(&ps, FCGI_MPXS_CONNS, strlen(FCGI_MPXS_CONNS), "", 0);
    fbuf_pair(&ps, "NOT_A_VAR", 9, "", 0);
    fbuf_rec(b, FCGI_GET_VALUES, 0, ps.p, ps.n);
    fbuf_free(&ps);
    fbuf_rec(b, 200, 0, "abc", 3); /* unknown management type */
    begin(b, 1, FCGI_RESPONDER, 0);
    params(b, 1, "A=b");
    fbuf_stream(b, FCGI_STDIN, 1, "x", 1);
}
static void b_padding(fbuf_t *b) /* maximal padding, non-zero padding bytes */
{
    uint8_t c[8] = {0, FCGI_RESPONDER};
    uint8_t junk[255];
    memset(junk, 0xee, sizeof junk);
    fbuf_rec_raw(b, 1, FCGI_BEGIN_REQUEST, 1, 8, 255, c, 8, 0);
    fbuf_put(b, junk, 255);
    fbuf_t ps = {0};
    fbuf_pair(&ps, "K", 1, "v", 1);
    fbuf_rec_raw(b, 1, FCGI_PARAMS, 1, ps.n, 255, ps.p, ps.n, 0);
    fbuf_put(b, junk, 255);
    fbuf_free(&ps);
    fbuf_rec_raw(b, 1, FCGI_PARAMS, 1, 0, 255, NULL, 0, 0);
    fbuf_put(b, junk, 255);
    fbuf_rec_raw(b, 1, FCGI_STDIN, 1, 2, 255, "hi", 2, 0);
    fbuf_put(b, junk, 255);
    fbuf_rec_raw(b, 1, FCGI_STDIN, 1, 0, 255, NULL, 0, 0);
    fbuf_put(b, junk, 255);
}
static void b_skip_before(fbuf_t *b) /* other ids before ours */
{
    fbuf_rec(b, FCGI_PARAMS, 5, "\1\1ab", 4);
    fbuf_rec(b, FCGI_STDIN, 5, "zz", 2);
    begin(b, 1, FCGI_RESPONDER, 0);
    params(b, 1, "A=b");
    fbuf_rec(b, FCGI_ABORT_REQUEST, 5, NULL, 0);
    fbuf_stream(b, FCGI_STDIN, 1, "x", 1);
}
static void b_body_announced(fbuf_t *b)
{
    begin(b, 1, FCGI_RESPONDER, 0);
    params(b, 1, "CONTENT_LENGTH=5000");
    fbuf_rec(b, FCGI_STDIN, 1, "abc", 3);
}
static void b_body_unannounced(fbuf_t *b)
{
    begin(b, 1, FCGI_RESPONDER, 0);
    params(b, 1, "A=b");
    static char v[600];
    fbuf_rec(b, FCGI_STDIN, 1, v, sizeof v);
    fbuf_rec(b, FCGI_STDIN, 1, v, sizeof v);
    fbuf_rec(b, FCGI_STDIN, 1, NULL, 0);
}
static void b_truncated(fbuf_t *b) /* stops in the middle of a header */
{
    begin(b, 1, FCGI_RESPONDER, 0);
    fbuf_put(b, "\1\4\0", 3);
}

typedef struct {
    const char *name;
    build_fn build;
    fcgi_parse_status_t want;
    const char *err;      /* substring of the error, or NULL */
    int reply_type;       /* first reply record's type, 0: no reply */
    int reply_status;     /* END_REQUEST protocol status, -1: any */
} hostile_t;

static const hostile_t CASES[] = {
    {"wrong version (2)", b_version, FCGI_PARSE_ERROR, "version 2", 0, -1},
    {"wrong version (0)", b_version0, FCGI_PARSE_ERROR, "version 0", 0, -1},
    {"BEGIN_REQUEST with 10 content bytes", b_begin_len, FCGI_PARSE_ERROR, "instead of 8", 0, -1},
    {"BEGIN_REQUEST with request id 0", b_begin_id0, FCGI_PARSE_ERROR, "request id 0", 0, -1},
    {"two BEGIN_REQUEST for one id", b_begin_twice, FCGI_PARSE_ERROR, "second BEGIN_REQUEST", 0, -1},
    {"name/value lengths near 2^31 (libfcgi aborts)", b_huge_pair, FCGI_PARSE_ERROR, "malformed PARAMS", 0, -1},
    {"value length past the stream's end", b_pair_past_end, FCGI_PARSE_ERROR, "malformed PARAMS", 0, -1},
    {"4-byte length cut short", b_pair_cut_len, FCGI_PARSE_ERROR, "malformed PARAMS", 0, -1},
    {"NUL byte in a value", b_params_nul, FCGI_PARSE_ERROR, "NUL", 0, -1},
    {"empty parameter name", b_params_noname, FCGI_PARSE_ERROR, "empty name", 0, -1},
    {"PARAMS over the limit", b_params_big, FCGI_PARSE_ERROR, "PARAMS stream over", 0, -1},
    {"PARAMS stream that never ends", b_params_endless, FCGI_PARSE_ERROR, "PARAMS stream over", 0, -1},
    {"STDIN before the end of PARAMS", b_stdin_early, FCGI_PARSE_ERROR, "before the end of the PARAMS", 0, -1},
    {"PARAMS after the end of PARAMS", b_params_late, FCGI_PARSE_ERROR, "after the end", 0, -1},
    {"unknown record type for the request", b_unknown_type, FCGI_PARSE_ERROR, "unexpected record type 50", 0, -1},
    {"DATA record (filter role) for a responder", b_data_type, FCGI_PARSE_ERROR, "unexpected record type 8", 0,
     -1},
    {"STDOUT record from the peer", b_stdout_from_peer, FCGI_PARSE_ERROR, "unexpected record type 6", 0, -1},
    {"ABORT_REQUEST", b_abort, FCGI_PARSE_ERROR, "aborted", 0, -1},
    {"GET_VALUES with lengths near 2^31", b_getvalues_huge, FCGI_PARSE_ERROR, "malformed GET_VALUES", 0, -1},
    {"endless records of another request id", b_other_flood, FCGI_PARSE_ERROR, "not for the request", 0, -1},
    {"management records whose answers are never read", b_mgmt_flood, FCGI_PARSE_ERROR, "", FCGI_UNKNOWN_TYPE, -1},
    {"authorizer role", b_role, FCGI_PARSE_CLOSE, "role 2", FCGI_END_REQUEST, FCGI_UNKNOWN_ROLE},
    {"a second request id on the connection", b_mpx, FCGI_PARSE_DONE, NULL, FCGI_END_REQUEST, FCGI_CANT_MPX_CONN},
    {"GET_VALUES (40 repeats) and an unknown management type", b_getvalues, FCGI_PARSE_DONE, NULL,
     FCGI_GET_VALUES_RESULT, -1},
    {"255 bytes of non-zero padding on every record", b_padding, FCGI_PARSE_DONE, NULL, 0, -1},
    {"records of other ids before and during the request", b_skip_before, FCGI_PARSE_DONE, NULL, 0, -1},
    {"CONTENT_LENGTH over max_body: stops after PARAMS", b_body_announced, FCGI_PARSE_DONE, NULL, 0, -1},
    {"STDIN over max_body without CONTENT_LENGTH", b_body_unannounced, FCGI_PARSE_DONE, NULL, 0, -1},
    {"input that stops inside a header", b_truncated, FCGI_PARSE_MORE, NULL, 0, -1},
};

static void test_hostile(void)
{
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const hostile_t *c = &CASES[i];
        for (int split = 0; split < 2; split++) { /* whole, then byte by byte */
            fbuf_t b = {0};
            c->build(&b);
            fcgi_parser_t *p = fcgi_parser_create(&LIM);
            size_t used;
            fcgi_parse_status_t st = feed(p, &b, split ? 1 : 0, &used);
            const char *err = fcgi_parser_error(p);
            size_t rn;
            const uint8_t *rp = fcgi_parser_reply(p, &rn);
            bool reply_ok = c->reply_type == 0 ? rn == 0 : rn >= 8 && rp[1] == c->reply_type;
            if (reply_ok && c->reply_status >= 0)
                reply_ok = rn >= 16 && rp[12] == c->reply_status;
            bool ok = st == c->want && (!c->err || strstr(err, c->err)) && reply_ok;
            fcgi_req_t r;
            fcgi_parser_take(p, &r);
            if (ok && c->build == b_mpx)
                ok = r.id == 1 && !strcmp(r.body, "ok") && !fcgi_req_param(&r, "X");
            if (ok && (c->build == b_body_announced || c->build == b_body_unannounced))
                ok = r.body_over && r.body_len <= LIM.max_body;
            if (ok && c->build == b_padding)
                ok = !strcmp(r.body, "hi") && used == b.n && r.n_params == 1;
            if (ok && c->build == b_getvalues) {
                /* each known variable once: MAX_CONNS=7 and MPXS_CONNS=0 */
                const char want[] = "\x0e\x01" "FCGI_MAX_CONNS" "7" "\x0f\x01" "FCGI_MPXS_CONNS" "0";
                size_t len = ((size_t)rp[4] << 8) | rp[5];
                ok = len == sizeof want - 1 && !memcmp(rp + 8, want, len) &&
                     rn >= 8 + len + rp[6] + 16 && rp[8 + len + rp[6] + 1] == FCGI_UNKNOWN_TYPE &&
                     rp[8 + len + rp[6] + 8] == 200;
            }
            tap_ok(ok, "%s%s: status %d (%s)", c->name, split ? ", byte by byte" : "", st, err);
            fcgi_req_free(&r);
            fcgi_parser_free(p);
            fbuf_free(&b);
        }
    }
}

/* a DONE request keeps its final record's padding from the next request */
static void test_final_padding(void)
{
    fbuf_t b = {0};
    begin(&b, 1, FCGI_RESPONDER, 0);
    fbuf_rec(&b, FCGI_PARAMS, 1, NULL, 0);
    fbuf_rec_raw(&b, 1, FCGI_STDIN, 1, 0, 5, NULL, 0, 5);
    fcgi_parser_t *p = fcgi_parser_create(&LIM);
    size_t used, total = 0;
    fcgi_parse_status_t st = fcgi_parser_feed(p, b.p, b.n - 3, &used);
    total += used;
    bool mid = st == FCGI_PARSE_MORE;
    st = fcgi_parser_feed(p, b.p + total, 3, &used);
    total += used;
    tap_ok(mid && st == FCGI_PARSE_DONE && total == b.n, "the ending record's padding is consumed before DONE");
    fcgi_parser_free(p);
    fbuf_free(&b);
}

/* random byte streams: never crash, always a status, bounded memory */
static void test_random(void)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int ok = 1;
    for (int it = 0; it < 3000; it++) {
        fbuf_t b = {0};
        nginx_request(&b, 1 + it % 3, "{\"a\":1}");
        int flips = 1 + it % 8;
        for (int f = 0; f < flips; f++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            b.p[x % b.n] = (uint8_t)(x >> 32);
        }
        fcgi_parser_t *p = fcgi_parser_create(&LIM);
        size_t used;
        fcgi_parse_status_t st = feed(p, &b, 1 + it % 13, &used);
        fcgi_req_t r;
        fcgi_parser_take(p, &r);
        if (st == FCGI_PARSE_DONE && !r.body)
            ok = 0;
        fcgi_req_free(&r);
        fcgi_parser_free(p);
        fbuf_free(&b);
    }
    tap_ok(ok, "3000 requests with random bytes changed: every one parsed or refused");
}

int main(void)
{
    test_well_formed();
    test_hostile();
    test_final_padding();
    test_random();
    return tap_done();
}
