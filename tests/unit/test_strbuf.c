/* test_strbuf.c - the growable byte string: appends, formats, NUL bytes,
 * growth across many sizes. */
#include <stdio.h>
#include <string.h>

#include "common/strbuf.h"
#include "tap.h"

int main(void)
{
    strbuf_t b = {0};
    tap_ok(b.n == 0 && !b.oom && b.p == NULL, "a zeroed buffer is empty");
    strbuf_put(&b, "", 0);
    tap_ok(b.n == 0 && b.p && b.p[0] == '\0', "an empty append leaves an empty, terminated string");
    strbuf_free(&b);

    const struct {
        const char *parts[4];
        const char *want;
    } cases[] = {
        {{"a", "bc", "", "d"}, "abcd"},
        {{"{\"x\":", "1", "}", NULL}, "{\"x\":1}"},
        {{"\xc3\xa9", "\xe2\x82\xac", NULL, NULL}, "\xc3\xa9\xe2\x82\xac"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        strbuf_t s = {0};
        for (int k = 0; k < 4 && cases[i].parts[k]; k++)
            strbuf_str(&s, cases[i].parts[k]);
        tap_ok(!s.oom && s.n == strlen(cases[i].want) && !strcmp(s.p, cases[i].want), "appends: '%s'", cases[i].want);
        strbuf_free(&s);
    }
    strbuf_put(&b, "a\0b", 3);
    tap_ok(b.n == 3 && !memcmp(b.p, "a\0b", 4), "NUL bytes inside are kept, one after the end");
    strbuf_free(&b);

    strbuf_fmt(&b, "%d-%s-%.3f", 42, "x", 0.5);
    tap_ok(!strcmp(b.p, "42-x-0.500"), "formats: %s", b.p);
    char big[3000];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    strbuf_fmt(&b, "[%s]", big);
    tap_ok(b.n == 10 + 2 + sizeof big - 1 && b.p[b.n] == '\0' && b.p[b.n - 1] == ']', "a format longer than any "
           "fixed buffer (%zu bytes)", b.n);
    strbuf_free(&b);
    tap_ok(b.p == NULL && b.n == 0 && b.cap == 0, "free zeroes the buffer");

    /* growth: byte by byte up to 100000, content checked */
    bool ok = true;
    for (int i = 0; i < 100000; i++) {
        char c = (char)('a' + i % 26);
        strbuf_put(&b, &c, 1);
    }
    for (int i = 0; i < 100000 && ok; i++)
        ok = b.p[i] == (char)('a' + i % 26);
    tap_ok(ok && b.n == 100000 && b.p[b.n] == '\0' && b.cap >= b.n + 1, "100000 one-byte appends");
    strbuf_free(&b);

    b.oom = true;
    strbuf_str(&b, "x");
    strbuf_fmt(&b, "%d", 1);
    tap_ok(b.n == 0 && b.p == NULL, "after out of memory, appends do nothing");
    return tap_done();
}
