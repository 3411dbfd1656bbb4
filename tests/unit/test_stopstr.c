/* test_stopstr.c - stop-string matching on streamed text: every case runs
 * with its own chunking, then with every 2-way and 3-way split and byte by
 * byte, and must give the same released text and the same match. */
#include "engine/sample/stopstr.h"
#include "tap.h"

#include <stdbool.h>
#include <string.h>

#define MAXSTOP 12

typedef struct {
    const char *name;
    const char *stops[MAXSTOP]; /* NULL-terminated */
    bool include;
    const char *chunks[8];      /* NULL-terminated; concatenated = text */
    const char *want;           /* released text, after flush */
    int want_index;             /* -1 = no match */
} case_t;

static const case_t cases[] = {
    {"split across 2 chunks", {"STOP"}, false, {"abcST", "OPdef"}, "abc", 0},
    {"split across 3 chunks", {"world"}, false, {"Hel", "lo wo", "rld!"}, "Hello ", 0},
    {"split across many chunks", {"</s>"}, false, {"a", "<", "/", "s", ">", "b"}, "a", 0},
    {"stop in the very first chunk", {"STOP"}, false, {"STOP", "more"}, "", 0},
    {"stop at start, text after", {"STOP"}, false, {"STOPxyz"}, "", 0},
    {"false start then match", {"abc"}, false, {"ab", "abc"}, "ab", 0},
    {"repeated prefix", {"aab"}, false, {"aaaab"}, "aa", 0},
    {"no match: all released at flush", {"xyz"}, false, {"hello ", "xy"}, "hello xy", -1},
    {"no stops at all", {NULL}, false, {"plain ", "text"}, "plain text", -1},
    {"overlap: shorter ends first", {"ab", "abc"}, false, {"xabc"}, "x", 0},
    {"overlap: same end, longer wins", {"bc", "abc"}, false, {"xabcx"}, "x", 1},
    {"overlap: inner ends first", {"abcd", "bc"}, false, {"abcd"}, "a", 1},
    {"overlap: list order irrelevant", {"bc", "abcd"}, false, {"abcd"}, "a", 0},
    {"earliest of several", {"zz", "yy", "xx"}, false, {"a yy b xx"}, "a ", 1},
    {"include_stop_str_in_output", {"STOP"}, true, {"abcST", "OPdef"}, "abcSTOP", 0},
    {"include, overlapping", {"bc", "abc"}, true, {"xabcx"}, "xabc", 1},
    {"many stop strings (10)", {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "END"},
     false, {"x E", "N", "D y"}, "x ", 9},
    {"multibyte stop string", {"\xc3\xa9"}, false, {"caf\xc3", "\xa9!"}, "caf", 0},
    {"multibyte text around stop", {"\xe4\xb8\x96\xe7\x95\x8c"}, false,
     {"\xe4\xbd\xa0\xe5", "\xa5\xbd\xe4\xb8", "\x96\xe7\x95\x8c\xef\xbc\x81"},
     "\xe4\xbd\xa0\xe5\xa5\xbd", 0},
    {"multibyte no stop, split chars", {"zzz"}, false,
     {"h\xc3", "\xa9llo \xf0\x9f", "\x98\x80", " z"}, "h\xc3\xa9llo \xf0\x9f\x98\x80 z", -1},
    {"stop right after emoji", {"!!"}, false, {"\xf0\x9f\x98", "\x80!", "!"}, "\xf0\x9f\x98\x80", 0},
};

typedef struct {
    char out[512];
    size_t out_len;
    int index;
    bool utf8_ok;    /* every release ended on a character boundary */
    bool after_done; /* feeding after the match released nothing */
} run_t;

static bool is_boundary(const char *text, size_t total, size_t off)
{
    return off >= total || ((unsigned char)text[off] & 0xC0) != 0x80;
}

static void take(run_t *r, const stopstr_out_t *o, const char *text, size_t total)
{
    memcpy(r->out + r->out_len, o->text, o->len);
    r->out_len += o->len;
    if (!is_boundary(text, total, r->out_len) && o->stop_index < 0)
        r->utf8_ok = false;
    if (o->stop_index >= 0)
        r->index = o->stop_index;
}

/* Runs text split at the given cut points (ascending, ncut of them). */
static bool run_split(const case_t *c, const char *text, const size_t *cuts, int ncut,
                      run_t *r)
{
    const char *stops[MAXSTOP];
    int n = 0;
    while (n < MAXSTOP && c->stops[n]) {
        stops[n] = c->stops[n];
        n++;
    }
    memset(r, 0, sizeof(*r));
    r->index = -1;
    r->utf8_ok = true;
    r->after_done = true;
    lf_err_t err;
    stopstr_t *ss = stopstr_create(stops, NULL, n, c->include, &err);
    if (!ss)
        return false;
    size_t total = strlen(text), prev = 0;
    stopstr_out_t o;
    bool done = false;
    for (int i = 0; i <= ncut; i++) {
        size_t end = i < ncut ? cuts[i] : total;
        if (stopstr_feed(ss, text + prev, end - prev, &o, &err) != LF_OK) {
            stopstr_free(ss);
            return false;
        }
        if (done && o.len != 0)
            r->after_done = false;
        take(r, &o, text, total);
        done = done || o.done;
        prev = end;
    }
    stopstr_flush(ss, &o);
    if (done && o.len != 0)
        r->after_done = false;
    take(r, &o, text, total);
    stopstr_free(ss);
    return true;
}

static bool run_matches(const case_t *c, const run_t *r)
{
    return r->out_len == strlen(c->want) && memcmp(r->out, c->want, r->out_len) == 0 &&
           r->index == c->want_index && r->utf8_ok && r->after_done;
}

static void test_cases(void)
{
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const case_t *c = &cases[k];
        char text[256] = "";
        size_t cuts[8];
        int ncut = 0;
        for (int i = 0; c->chunks[i]; i++) {
            if (i > 0)
                cuts[ncut++] = strlen(text);
            strcat(text, c->chunks[i]);
        }
        size_t total = strlen(text);
        run_t r;
        bool ok = run_split(c, text, cuts, ncut, &r) && run_matches(c, &r);
        if (!tap_ok(ok, "%s: as chunked", c->name))
            tap_diag("got '%.*s' index %d utf8 %d", (int)r.out_len, r.out, r.index, r.utf8_ok);

        ok = true;
        for (size_t a = 0; a <= total && ok; a++) {
            size_t cut1[1] = {a};
            ok = run_split(c, text, cut1, 1, &r) && run_matches(c, &r);
        }
        tap_ok(ok, "%s: every 2-way split", c->name);

        ok = true;
        for (size_t a = 0; a <= total && ok; a++)
            for (size_t b = a; b <= total && ok; b++) {
                size_t cut2[2] = {a, b};
                ok = run_split(c, text, cut2, 2, &r) && run_matches(c, &r);
            }
        tap_ok(ok, "%s: every 3-way split", c->name);

        size_t bytes[256];
        for (size_t i = 1; i < total; i++)
            bytes[i - 1] = i;
        ok = run_split(c, text, bytes, total > 0 ? (int)total - 1 : 0, &r) && run_matches(c, &r);
        tap_ok(ok, "%s: byte by byte", c->name);
    }
}

static void test_holdback(void)
{
    lf_err_t err;
    const char *stops[] = {"world", "wxyz"};
    stopstr_t *ss = stopstr_create(stops, NULL, 2, false, &err);
    stopstr_out_t o;
    stopstr_feed(ss, "hello wor", 9, &o, &err);
    tap_ok(o.len == 6 && !memcmp(o.text, "hello ", 6) && stopstr_held(ss) == 3,
           "holds back a possible stop prefix 'wor'");
    stopstr_feed(ss, "m", 1, &o, &err);
    tap_ok(o.len == 4 && !memcmp(o.text, "worm", 4) && stopstr_held(ss) == 0,
           "releases it once it cannot match");
    stopstr_feed(ss, "\xc3", 1, &o, &err);
    tap_ok(o.len == 0 && stopstr_held(ss) == 1, "holds an incomplete UTF-8 lead byte");
    stopstr_feed(ss, "\xa9", 1, &o, &err);
    tap_ok(o.len == 2 && !memcmp(o.text, "\xc3\xa9", 2), "releases the completed character");
    stopstr_feed(ss, "\x80x", 2, &o, &err);
    tap_ok(o.len == 2, "a stray continuation byte is released, not held forever");
    stopstr_feed(ss, "w", 1, &o, &err);
    tap_ok(o.len == 0 && !o.done && stopstr_matched(ss) == -1, "single 'w' held");
    stopstr_flush(ss, &o);
    tap_ok(o.len == 1 && o.text[0] == 'w' && o.done && o.stop_index == -1,
           "flush releases the held tail without a match");
    stopstr_free(ss);

    ss = stopstr_create(stops, NULL, 2, false, &err);
    stopstr_feed(ss, "a wxyz b", 8, &o, &err);
    tap_ok(o.stop_index == 1 && o.stop_len == 4 && !memcmp(o.stop_str, "wxyz", 4) &&
               stopstr_matched(ss) == 1,
           "match reports the stop string itself");
    stopstr_free(ss);
}

static void test_active(void)
{
    lf_err_t err;
    const char *stops[] = {"STOP"};
    stopstr_t *ss = stopstr_create(stops, NULL, 1, false, &err);
    stopstr_out_t o;
    char got[64] = "";
    stopstr_set_active(ss, false);
    stopstr_feed(ss, "aSTOPb", 6, &o, &err);
    strncat(got, o.text, o.len);
    tap_ok(o.stop_index == -1 && !o.done, "inactive (min_tokens): a complete stop is ignored");
    stopstr_feed(ss, "ST", 2, &o, &err);
    strncat(got, o.text, o.len);
    stopstr_set_active(ss, true);
    stopstr_feed(ss, "OPc", 3, &o, &err);
    strncat(got, o.text, o.len);
    tap_ok(o.stop_index == 0 && !strcmp(got, "aSTOPb"),
           "a stop started while inactive and completed while active counts");
    stopstr_free(ss);

    ss = stopstr_create(stops, NULL, 1, false, &err);
    stopstr_set_active(ss, false);
    stopstr_feed(ss, "xSTOP", 5, &o, &err);
    stopstr_set_active(ss, true);
    stopstr_feed(ss, "y", 1, &o, &err);
    tap_ok(o.stop_index == -1, "an old stop is not matched again once active");
    stopstr_free(ss);
}

static void test_create_errors(void)
{
    lf_err_t err;
    const char *empty[] = {"ok", ""};
    tap_ok(!stopstr_create(empty, NULL, 2, false, &err) && err.code == LF_ERR_INVALID,
           "empty stop string rejected");
    const char *bin[] = {"a\0b"};
    size_t lens[] = {3};
    stopstr_t *ss = stopstr_create(bin, lens, 1, false, &err);
    stopstr_out_t o;
    stopstr_feed(ss, "xa\0by", 5, &o, &err);
    tap_ok(ss && o.stop_index == 0 && o.len == 1, "explicit lengths allow NUL bytes");
    stopstr_free(ss);
    stopstr_free(NULL);
    tap_ok(1, "free(NULL) is allowed");
}

/* Reference: the occurrence that ends first (ties: longest, then lowest
 * index), searched on the whole text at once. Returns the index or -1. */
static int ref_match(const char *text, size_t len, char stops[][8], int n, size_t *pos,
                     size_t *end)
{
    int best = -1;
    for (size_t e = 1; e <= len && best < 0; e++)
        for (int k = 0; k < n; k++) {
            size_t sl = strlen(stops[k]);
            if (sl > e || memcmp(text + e - sl, stops[k], sl) != 0)
                continue;
            if (best < 0 || sl > strlen(stops[best])) {
                best = k;
                *pos = e - sl;
                *end = e;
            }
        }
    return best;
}

/* Random texts over a tiny alphabet (with a 2-byte and a 4-byte character),
 * random stop sets, random chunking, against ref_match. */
static void test_random(void)
{
    static const char *alpha[] = {"a", "b", "c", "\xc3\xa9", "\xf0\x9f\x98\x80"};
    uint64_t x = 88172645463325252ULL;
#define NEXT() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
    int bad = 0, cases = 600, matched = 0;
    size_t max_held = 0, max_stop = 0;
    for (int c = 0; c < cases && !bad; c++) {
        char stops[4][8];
        const char *sp[4];
        int n = 1 + (int)(NEXT() % 4);
        for (int k = 0; k < n; k++) {
            int l = 1 + (int)(NEXT() % 3);
            stops[k][0] = 0;
            for (int i = 0; i < l; i++)
                strcat(stops[k], alpha[NEXT() % 4]); /* no 4-byte char: fits */
            sp[k] = stops[k];
            if (strlen(stops[k]) > max_stop)
                max_stop = strlen(stops[k]);
        }
        char text[200] = "";
        int tl = (int)(NEXT() % 30);
        for (int i = 0; i < tl; i++)
            strcat(text, alpha[NEXT() % 5]);
        size_t len = strlen(text), pos = 0, end = 0;
        bool include = NEXT() % 2;
        int want = ref_match(text, len, stops, n, &pos, &end);
        matched += want >= 0;
        size_t want_len = want < 0 ? len : include ? end : pos;

        stopstr_t *ss = stopstr_create(sp, NULL, n, include, NULL);
        char out[200];
        size_t ol = 0, off = 0;
        int got = -1;
        stopstr_out_t o;
        while (off < len) {
            size_t k = 1 + NEXT() % 6;
            if (k > len - off)
                k = len - off;
            stopstr_feed(ss, text + off, k, &o, NULL);
            off += k;
            memcpy(out + ol, o.text, o.len);
            ol += o.len;
            if (o.stop_index >= 0)
                got = o.stop_index;
            if (stopstr_held(ss) > max_held)
                max_held = stopstr_held(ss);
            if (o.stop_index < 0 && ol < len && ((unsigned char)text[ol] & 0xC0) == 0x80)
                bad = 1; /* split a character */
        }
        stopstr_flush(ss, &o);
        memcpy(out + ol, o.text, o.len);
        ol += o.len;
        stopstr_free(ss);
        if (got != want || ol != want_len || memcmp(out, text, ol) != 0)
            bad = 1;
        if (bad)
            tap_diag("case %d: text '%s' want %d/%zu got %d/%zu", c, text, want, want_len,
                     got, ol);
    }
#undef NEXT
    tap_ok(!bad && matched > cases / 4 && matched < cases,
           "%d random texts (%d with a match), stop sets and chunkings agree with a reference",
           cases, matched);
    tap_ok(max_held <= max_stop - 1 + 3, "held tail never exceeds the longest stop - 1 + 3 (%zu)",
           max_held);
}

int main(void)
{
    test_cases();
    test_holdback();
    test_active();
    test_create_errors();
    test_random();
    return tap_done();
}
