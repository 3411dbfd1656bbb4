/* test_utf8 - encoding, strict UTF-8 validation, cuts at character
 * boundaries and repair with U+FFFD, table-driven. */
#include <string.h>

#include "common/utf8.h"
#include "tap.h"

typedef struct {
    const char *name;
    const char *s;
    size_t n;          /* 0: strlen */
    bool valid;
    size_t bad;        /* first bad offset when invalid */
    const char *repaired;
} vcase_t;

#define FFFD "\xef\xbf\xbd"

static const vcase_t VALID[] = {
    {"empty", "", 0, true, 0, ""},
    {"ASCII", "hello", 0, true, 0, "hello"},
    {"2-byte (é)", "caf\xc3\xa9", 0, true, 0, "caf\xc3\xa9"},
    {"3-byte (€)", "\xe2\x82\xac", 0, true, 0, "\xe2\x82\xac"},
    {"4-byte (emoji)", "\xf0\x9f\x98\x80", 0, true, 0, "\xf0\x9f\x98\x80"},
    {"U+10FFFF", "\xf4\x8f\xbf\xbf", 0, true, 0, "\xf4\x8f\xbf\xbf"},
    {"NUL byte inside", "a\0b", 3, true, 0, NULL},
    {"lone 0xFF", "a\xff" "b", 0, false, 1, "a" FFFD "b"},
    {"0xFE 0xFF (a BOM in UTF-16)", "\xff\xfe", 0, false, 0, FFFD FFFD},
    {"overlong NUL (C0 80)", "\xc0\x80name", 0, false, 0, FFFD FFFD "name"},
    {"overlong 3-byte (E0 80 AF)", "\xe0\x80\xaf", 0, false, 0, FFFD FFFD FFFD},
    {"overlong 4-byte (F0 8F BF BF)", "\xf0\x8f\xbf\xbf", 0, false, 0, FFFD FFFD FFFD FFFD},
    {"surrogate (ED A0 80)", "\xed\xa0\x80", 0, false, 0, FFFD FFFD FFFD},
    {"above U+10FFFF (F4 90 80 80)", "\xf4\x90\x80\x80", 0, false, 0, FFFD FFFD FFFD FFFD},
    {"F5 lead byte", "\xf5\x80\x80\x80", 0, false, 0, FFFD FFFD FFFD FFFD},
    {"stray continuation byte", "ok\x80", 0, false, 2, "ok" FFFD},
    {"character cut short at the end", "ab\xe2\x82", 0, false, 2, "ab" FFFD},
    {"character cut short before ASCII", "\xe2\x82z", 0, false, 0, FFFD FFFD "z"},
};

static void test_valid_repair(void)
{
    for (size_t i = 0; i < sizeof VALID / sizeof VALID[0]; i++) {
        const vcase_t *c = &VALID[i];
        size_t n = c->n ? c->n : strlen(c->s), bad = 99;
        bool v = utf8_valid(c->s, n, &bad);
        tap_ok(v == c->valid && (v || bad == c->bad), "utf8_valid: %s", c->name);
        if (!c->repaired)
            continue;
        char out[64];
        size_t w = utf8_repair(out, sizeof out, c->s, n);
        tap_ok(w == strlen(c->repaired) && !memcmp(out, c->repaired, w) && utf8_valid(out, w, NULL),
               "utf8_repair: %s", c->name);
    }
}

static void test_clip(void)
{
    const char *e3 = "\xc3\xa9\xc3\xa9\xc3\xa9"; /* ééé */
    struct {
        const char *s;
        size_t max, want;
        const char *name;
    } cases[] = {
        {e3, 0, 0, "0 bytes"},
        {e3, 1, 0, "inside the first é"},
        {e3, 2, 2, "after the first é"},
        {e3, 3, 2, "inside the second é"},
        {e3, 6, 6, "the whole string"},
        {e3, 100, 6, "more than the string"},
        {"ab\xf0\x9f\x98\x80" "c", 5, 2, "inside an emoji"},
        {"ab\xf0\x9f\x98\x80" "c", 6, 6, "after an emoji"},
        {"abc", 2, 2, "ASCII"},
        {"a\x80\x80\x80\x80\x80", 4, 4, "stray continuation bytes: a plain cut"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t got = utf8_clip(cases[i].s, strlen(cases[i].s), cases[i].max);
        tap_ok(got == cases[i].want, "utf8_clip: %s (%zu -> %zu)", cases[i].name, cases[i].max, got);
    }
    /* the case: 300 x "é" cut anywhere stays valid */
    char big[601];
    for (int i = 0; i < 300; i++)
        memcpy(big + 2 * i, "\xc3\xa9", 2);
    big[600] = 0;
    int ok = 1;
    for (size_t max = 0; max <= 600; max++)
        ok &= utf8_valid(big, utf8_clip(big, 600, max), NULL);
    tap_ok(ok, "300 x é clipped at every length stays valid");
    /* repair into a small buffer never splits a character */
    char out[8];
    size_t w = utf8_repair(out, sizeof out, big, 600);
    tap_ok(w == 6 && utf8_valid(out, w, NULL), "utf8_repair into 8 bytes keeps 3 whole characters");
}

static void test_trim_partial(void)
{
    struct {
        const char *s, *name;
        size_t want;
    } cases[] = {
        {"abc", "ASCII", 3},
        {"ab\xc3", "first byte of é", 2},
        {"ab\xc3\xa9", "whole é", 4},
        {"ab\xe2\x82", "two bytes of €", 2},
        {"ab\xf0\x9f\x98", "three bytes of an emoji", 2},
        {"ab\xf0\x9f\x98\x80", "whole emoji", 6},
        {"ab\xff", "an invalid byte stays (repair handles it)", 3},
        {"", "empty", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        tap_ok(utf8_trim_partial(cases[i].s, strlen(cases[i].s)) == cases[i].want, "utf8_trim_partial: %s",
               cases[i].name);
}

static void test_encode(void)
{
    static const struct {
        uint32_t c;
        const char *want;
    } cases[] = {
        {0, "\x00"}, {'A', "A"}, {0x7F, "\x7f"}, {0x80, "\xc2\x80"}, {0xE9, "\xc3\xa9"}, {0x7FF, "\xdf\xbf"},
        {0x800, "\xe0\xa0\x80"}, {0x20AC, "\xe2\x82\xac"}, {0xFFFD, FFFD}, {0xFFFF, "\xef\xbf\xbf"},
        {0x10000, "\xf0\x90\x80\x80"}, {0x1F600, "\xf0\x9f\x98\x80"}, {0x10FFFF, "\xf4\x8f\xbf\xbf"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned char o[4];
        size_t n = utf8_encode(cases[i].c, o), want = cases[i].c ? strlen(cases[i].want) : 1;
        tap_ok(n == want && !memcmp(o, cases[i].want, n), "utf8_encode U+%04X: %zu bytes", (unsigned)cases[i].c, n);
    }
}

int main(void)
{
    test_encode();
    test_valid_repair();
    test_clip();
    test_trim_partial();
    return tap_done();
}
