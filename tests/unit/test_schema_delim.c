/* test_schema_delim.c - JSON Schema compiled to the delimited raw syntax
 * of Gemma 4's tool-call arguments (gr_schema_opts_t.str_delim): a table
 * of schemas and texts (accepted or not, keyword by keyword), and every
 * accepted object text read back by the tool-call parser's own Gemma
 * reader (toolcall_gemma.c) into the JSON value the case expects, so the
 * grammar and the reader agree. */
#include <json-c/json.h>
#include <string.h>

#include "chat/parse/toolcall_impl.h"
#include "grammar/cfg/cfg.h"
#include "grammar/match/earley.h"
#include "grammar/schema/schema.h"
#include "tap.h"

#define D "<|\"|>"

/* 1: accepted, 0: rejected, -1: the schema does not compile. */
static int check(const char *schema, const char *delim, const char *text)
{
    gr_arena_t a;
    gr_arena_init(&a, 0);
    gr_rules_t R = {0};
    lf_err_t e = {0};
    json_object *s = json_tokener_parse(schema);
    gr_schema_opts_t so = {.strict = true, .str_delim = delim};
    gr_ex_t *v = NULL;
    int r = -1;
    if (s && gr_schema_compile(s, &so, &a, &R, &v, &e) == LF_OK) {
        int32_t st = gr_rules_add(&R);
        R.v[st] = v;
        gr_cfg_t *g = gr_cfg_build(R.v, R.n, st, NULL, &e);
        if (g) {
            gr_lexer_t *lx = gr_lexer_create(g);
            gr_matcher_t *m = gr_matcher_create(g, lx);
            r = gr_matcher_feed_bytes(m, (const uint8_t *)text, strlen(text)) && gr_matcher_accepting(m);
            gr_matcher_free(m);
            gr_lexer_free(lx);
            gr_cfg_free(g);
        }
    }
    json_object_put(s);
    gr_rules_free(&R);
    gr_arena_free(&a);
    return r;
}

/* The JSON text the Gemma reader makes of an object text, or NULL. */
static json_object *read_back(const char *text)
{
    tcgemma_t g;
    tcgemma_init(&g, D);
    char json[4096], out[64];
    size_t n = 0, w = 0;
    int r = 0;
    for (const char *p = text; *p && r == 0; p++) {
        r = tcgemma_byte(&g, (unsigned char)*p, out, &n);
        if (r < 0 || w + n >= sizeof json)
            return NULL;
        memcpy(json + w, out, n);
        w += n;
    }
    json[w] = 0;
    return r == 1 ? json_tokener_parse(json) : NULL;
}

static const char *PLACE = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"n\":{\"type\":\"integer\"}},"
                           "\"required\":[\"city\"],\"additionalProperties\":false}";

static const struct {
    const char *schema, *text;
    int want;
    const char *json; /* the value read back (accepted objects) */
} cases[] = {
    /* keys bare or delimited; a bare key's ':' right after it */
    {NULL, "{city:" D "Paris" D "}", 1, "{\"city\":\"Paris\"}"},
    {NULL, "{city:" D "Paris" D ",n:3}", 1, "{\"city\":\"Paris\",\"n\":3}"},
    {NULL, "{" D "city" D ":" D "Paris" D "}", 1, "{\"city\":\"Paris\"}"},
    {NULL, "{ " D "city" D " : " D "Paris" D " , n: 3 }", 1, "{\"city\":\"Paris\",\"n\":3}"},
    {NULL, "{city :" D "Paris" D "}", 0, NULL},
    {NULL, "{\"city\":\"Paris\"}", 0, NULL},
    {NULL, "{n:3}", 0, NULL},
    {NULL, "{city:" D "a" D "b" D "}", 0, NULL},
    {NULL, "{city:" D "P" D ",zip:1}", 0, NULL},
    /* raw text: quotes, backslashes, newlines and a delimiter's prefix as they are */
    {NULL, "{city:" D "Pa\"ri\\s\n<|x<|" D "}", 1, "{\"city\":\"Pa\\\"ri\\\\s\\n<|x<|\"}"},
    /* string keywords on the raw text */
    {"{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{3}$\"}}}",
     "{code:" D "ABC" D "}", 1, "{\"code\":\"ABC\"}"},
    {"{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{3}$\"}}}",
     "{code:" D "AB" D "}", 0, NULL},
    {"{\"enum\":[\"a\\\"b\",\"c\"]}", D "a\"b" D, 1, NULL},
    {"{\"enum\":[\"a\\\"b\",\"c\"]}", D "a\\\"b" D, 0, NULL},
    {"{\"enum\":[\"a\\\"b\",\"c\"]}", D "d" D, 0, NULL},
    {"{\"type\":\"string\",\"maxLength\":3}", D "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" D, 1, NULL},
    {"{\"type\":\"string\",\"maxLength\":3}", D "abcd" D, 0, NULL},
    {"{\"type\":\"string\",\"minLength\":2}", D "a" D, 0, NULL},
    {"{\"type\":\"string\",\"format\":\"date\"}", D "2024-01-31" D, 1, NULL},
    {"{\"type\":\"string\",\"format\":\"date\"}", D "2024-1-31" D, 0, NULL},
    {"{\"type\":\"string\",\"not\":{\"const\":\"x\"}}", D "x" D, 0, NULL},
    {"{\"type\":\"string\",\"not\":{\"const\":\"x\"}}", D "y" D, 1, NULL},
    {"{\"const\":\"x<|\\\"|>y\"}", D "x" D "y" D, -1, NULL}, /* no text can hold it: nothing to write */
    /* literals, nesting, any value */
    {"{\"const\":{\"k\":[\"x\",1,true]}}", "{k:[" D "x" D ",1, true]}", 1, "{\"k\":[\"x\",1,true]}"},
    {"{\"const\":{\"k\":[\"x\",1,true]}}", "{" D "k" D ":[" D "x" D ",1,true]}", 1, "{\"k\":[\"x\",1,true]}"},
    {"{\"const\":{\"k\":[\"x\",1,true]}}", "{k:[\"x\",1,true]}", 0, NULL},
    {"{\"type\":\"object\"}", "{a:[1," D "s" D ",{b:null}],any key:-2.5e3}", 1,
     "{\"a\":[1,\"s\",{\"b\":null}],\"any key\":-2.5e3}"},
    {"{\"type\":\"object\"}", "{" D "a:b" D ":1}", 1, "{\"a:b\":1}"},
    {"{\"type\":\"object\"}", "{a:b:1}", 0, NULL},
    {"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}", "{foo:1,bar baz:2}", 1,
     "{\"foo\":1,\"bar baz\":2}"},
    {"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}", "{foo:" D "x" D "}", 0, NULL},
    {"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}", "{" D "a,b" D " :1}", 1,
     "{\"a,b\":1}"},
    {"{\"type\":\"object\",\"properties\":{\"k\":{}},\"additionalProperties\":{\"type\":\"integer\"}}",
     "{" D "k" D ":" D "s" D ",k2:1}", 1, "{\"k\":\"s\",\"k2\":1}"},
    {"{\"type\":\"object\",\"properties\":{\"a:b\":{\"type\":\"integer\"}},\"required\":[\"a:b\"],"
     "\"additionalProperties\":false}",
     "{" D "a:b" D ":1}", 1, "{\"a:b\":1}"},
    {"{\"type\":\"object\",\"patternProperties\":{\"^x_\":{\"type\":\"string\"}},\"additionalProperties\":false}",
     "{x_1:" D "v" D "}", 1, "{\"x_1\":\"v\"}"},
    {"{\"type\":\"object\",\"patternProperties\":{\"^x_\":{\"type\":\"string\"}},\"additionalProperties\":false}",
     "{y_1:" D "v" D "}", 0, NULL},
    {"{\"type\":\"array\",\"items\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]},\"minItems\":2}",
     "[" D "a" D ", " D "b" D "]", 1, NULL},
    {"{\"type\":\"array\",\"items\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]},\"minItems\":2}", "[" D "a" D "]", 0,
     NULL},
};

/* A TAP name stays on one line. */
static const char *one_line(const char *s)
{
    static char buf[512];
    size_t w = 0;
    for (; *s && w < sizeof buf - 3; s++) {
        if (*s == '\n') {
            buf[w++] = '\\';
            buf[w++] = 'n';
        } else {
            buf[w++] = *s;
        }
    }
    buf[w] = 0;
    return buf;
}

int main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *schema = cases[i].schema ? cases[i].schema : PLACE;
        int got = check(schema, D, cases[i].text);
        tap_ok(got == cases[i].want, "case %zu: %s %s (got %d)", i, cases[i].want ? "accepts" : "rejects",
               one_line(cases[i].text), got);
        if (cases[i].json) {
            json_object *got_v = read_back(cases[i].text), *want_v = json_tokener_parse(cases[i].json);
            tap_ok(got_v && want_v && json_object_equal(got_v, want_v), "case %zu: the Gemma reader makes %s", i,
                   cases[i].json);
            json_object_put(got_v);
            json_object_put(want_v);
        }
    }
    /* a delimiter whose prefix is its suffix cannot end strings unambiguously */
    tap_ok(check("{\"type\":\"string\"}", "abab", "ababxabab") == -1, "a bordered delimiter is refused");
    tap_ok(check("{\"type\":\"string\"}", "", "x") == -1, "an empty delimiter is refused");
    return tap_done();
}
