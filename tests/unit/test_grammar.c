/* test_grammar.c - the grammar engine's semantics, table-driven, on bytes
 * (no vocabulary): regexes, GBNF, and JSON Schema keyword by keyword. Each
 * case compiles a constraint and feeds a text to a matcher: accepted means
 * every byte was accepted and the matcher is complete at the end. */
#include <json-c/json.h>
#include <string.h>

#include "grammar/cfg/cfg.h"
#include "grammar/gbnf/gbnf.h"
#include "grammar/match/earley.h"
#include "grammar/regex/regex.h"
#include "grammar/schema/schema.h"
#include "tap.h"

/* 1: accepted, 0: rejected, -1: the constraint does not compile. With
 * prefix_only, 1 when every byte was accepted (the text can still be
 * completed), whether or not it is complete. */
static int run_x(gr_arena_t *a, gr_rules_t *R, int32_t start, const char *text, bool prefix_only)
{
    lf_err_t e = {0};
    gr_cfg_t *g = gr_cfg_build(R->v, R->n, start, NULL, &e);
    if (!g)
        return -1;
    gr_lexer_t *lx = gr_lexer_create(g);
    gr_matcher_t *m = gr_matcher_create(g, lx);
    int ok = gr_matcher_feed_bytes(m, (const uint8_t *)text, strlen(text)) && (prefix_only || gr_matcher_accepting(m));
    gr_matcher_free(m);
    gr_lexer_free(lx);
    gr_cfg_free(g);
    (void)a;
    return ok;
}

static int run(gr_arena_t *a, gr_rules_t *R, int32_t start, const char *text)
{
    return run_x(a, R, start, text, false);
}

static int check_regex(const char *re, int mode, const char *text)
{
    gr_arena_t a;
    gr_arena_init(&a, 0);
    gr_rules_t R = {0};
    lf_err_t e = {0};
    gr_ex_t *x = gr_regex_parse(&a, re, strlen(re), mode, &e);
    int r = -1;
    if (x) {
        int32_t s = gr_rules_add(&R);
        R.v[s] = x;
        r = run(&a, &R, s, text);
    }
    gr_rules_free(&R);
    gr_arena_free(&a);
    return r;
}

static int check_gbnf(const char *src, const char *text)
{
    gr_arena_t a;
    gr_arena_init(&a, 0);
    gr_rules_t R = {0};
    lf_err_t e = {0};
    gr_gbnf_t gb;
    int r = -1;
    if (gr_gbnf_parse(&a, src, strlen(src), NULL, &gb, &e) == LF_OK) {
        for (int32_t i = 0; i < gb.n_rules; i++)
            R.v = (gr_rules_add(&R), R.v), R.v[i] = gb.rules[i];
        r = run(&a, &R, gb.root, text);
    }
    gr_rules_free(&R);
    gr_arena_free(&a);
    return r;
}

static bool escape_lt; /* gr_schema_opts_t.escape_lt for the next checks */

static int check_schema_x(const char *schema, const char *text, bool strict, bool prefix_only)
{
    gr_arena_t a;
    gr_arena_init(&a, 0);
    gr_rules_t R = {0};
    lf_err_t e = {0};
    json_object *s = json_tokener_parse(schema);
    gr_schema_opts_t so = {.strict = strict, .no_whitespace = false, .escape_lt = escape_lt};
    gr_ex_t *v = NULL;
    int r = -1;
    if (s && gr_schema_compile(s, &so, &a, &R, &v, &e) == LF_OK) {
        int32_t st = gr_rules_add(&R);
        R.v[st] = v;
        r = run_x(&a, &R, st, text, prefix_only);
    }
    json_object_put(s);
    gr_rules_free(&R);
    gr_arena_free(&a);
    return r;
}

static int check_schema(const char *schema, const char *text, bool strict)
{
    return check_schema_x(schema, text, strict, false);
}

typedef struct {
    const char *a, *text;
    int want;
} case_t;

/* TAP names must stay on one line. */
static const char *esc(const char *s)
{
    static char buf[4][512];
    static int k;
    char *o = buf[k++ & 3];
    size_t w = 0;
    for (; *s && w < sizeof buf[0] - 4; s++) {
        if (*s == '\n' || *s == '\r' || *s == '\t') {
            o[w++] = '\\';
            o[w++] = *s == '\n' ? 'n' : *s == '\r' ? 'r' : 't';
        } else {
            o[w++] = *s;
        }
    }
    o[w] = '\0';
    return o;
}

int main(void)
{
    static const struct {
        const char *re;
        int mode;
        const char *text;
        int want;
    } regex[] = {
        {"abc", GR_REGEX_FULL, "abc", 1},
        {"abc", GR_REGEX_FULL, "abcd", 0},
        {"a|b+", GR_REGEX_FULL, "bbb", 1},
        {"[a-z]{2,3}", GR_REGEX_FULL, "abcd", 0},
        {"[^a-z]+", GR_REGEX_FULL, "É9", 1},
        {"\\d{3}-\\w+", GR_REGEX_FULL, "123-a_b", 1},
        {"\\s", GR_REGEX_FULL, "\xc2\xa0", 1},            /* U+00A0 is \s in ECMAScript */
        {".", GR_REGEX_FULL, "\n", 0},                    /* . excludes line terminators */
        {"\\u00e9|\\u{1F600}", GR_REGEX_FULL, "\xf0\x9f\x98\x80", 1},
        {"\\p{Lu}\\p{Ll}+", GR_REGEX_FULL, "Ünd", 1},
        {"ab", GR_REGEX_SEARCH, "xxaby", 1},               /* JSON Schema: unanchored */
        {"^ab", GR_REGEX_SEARCH, "xab", 0},
        {"ab$", GR_REGEX_SEARCH, "xab", 1},
        {"^(a|b)$", GR_REGEX_SEARCH, "ab", 0},
        {"(a|^b)c", GR_REGEX_SEARCH, "zac", 1},
        {"(a|^b)c", GR_REGEX_SEARCH, "zbc", 0},
        {"x{2}", GR_REGEX_FULL, "xx", 1},
        {"a{,3}", GR_REGEX_FULL, "a{,3}", 1},             /* not a quantifier: literal */
        {"(?:ab)+?", GR_REGEX_FULL, "abab", 1},
        {"(?<y>\\d{4})", GR_REGEX_FULL, "2024", 1},
        {"x(?=y)", GR_REGEX_FULL, "x", -1},               /* lookahead: refused */
        {"(a)\\1", GR_REGEX_FULL, "aa", -1},              /* backreference: refused */
        {"\\bx", GR_REGEX_FULL, "x", -1},                 /* word boundary: refused */
        {"[z-a]", GR_REGEX_FULL, "a", -1},                /* bad range */
        /* sequences: glued from their pieces' automata when where each piece
         * ends is never in doubt, determinized as a whole otherwise */
        {"a*a", GR_REGEX_FULL, "aaa", 1},                 /* a* may go on with a: not glued */
        {"a*a", GR_REGEX_FULL, "", 0},
        {"[a-c]+b", GR_REGEX_FULL, "abcb", 1},
        {"[a-c]+b", GR_REGEX_FULL, "abc", 0},
        {"(ab)?(ab)?c", GR_REGEX_FULL, "ababc", 1},       /* nullable pieces in a row */
        {"(ab)?(ab)?c", GR_REGEX_FULL, "c", 1},
        {"(ab)?(ab)?c", GR_REGEX_FULL, "abababc", 0},
        {"x?y?z?", GR_REGEX_FULL, "xz", 1},
        {"x?y?z?", GR_REGEX_FULL, "zx", 0},
        {"\"k\"[ ]{0,3}:[ ]?", GR_REGEX_FULL, "\"k\"  : ", 1},
        {"\"k\"[ ]{0,3}:[ ]?", GR_REGEX_FULL, "\"k\"    :", 0},
    };
    for (size_t i = 0; i < sizeof regex / sizeof *regex; i++) {
        int got = check_regex(regex[i].re, regex[i].mode, regex[i].text);
        tap_ok(got == regex[i].want, "regex /%s/ %s on \"%s\": %d", regex[i].re,
               regex[i].mode == GR_REGEX_FULL ? "full" : "search", esc(regex[i].text), got);
    }

    static const case_t gbnf[] = {
        {"root ::= \"a\" b*\nb ::= [0-9]", "a123", 1},
        {"root ::= \"a\" b*\nb ::= [0-9]", "a12x", 0},
        {"root ::= expr\nexpr ::= expr \"+\" t | t\nt ::= [0-9]+ | \"(\" expr \")\"\n", "(1+22)+3", 1},
        {"root ::= expr\nexpr ::= expr \"+\" t | t\nt ::= [0-9]+ | \"(\" expr \")\"\n", "(1+22", 0},
        {"root ::= x{2,3}\nx ::= \"ab\"", "ababab", 1},
        {"root ::= x{2,3}\nx ::= \"ab\"", "ab", 0},
        {"root ::= [^\\n]+ \"\\n\"", "h\xc3\xa9llo\n", 1},
        {"root ::= \"a\" |\n  \"b\"  # comment\n", "b", 1},
        {"root ::= ( \"x\"\n | \"y\" )+", "xyx", 1},
        {"root ::= .", "\xe2\x82\xac", 1},
        {"root ::= missing", "", -1},
        {"a ::= \"x\"", "x", -1}, /* no root */
        {"root ::= \"\\x41\\u00e9\"", "A\xc3\xa9", 1},
    };
    for (size_t i = 0; i < sizeof gbnf / sizeof *gbnf; i++) {
        int got = check_gbnf(gbnf[i].a, gbnf[i].text);
        tap_ok(got == gbnf[i].want, "gbnf case %zu on \"%s\": %d", i, esc(gbnf[i].text), got);
    }

    static const case_t schema[] = {
        /* type */
        {"{\"type\":\"integer\"}", "12", 1}, {"{\"type\":\"integer\"}", "1.0", 1},
        {"{\"type\":\"integer\"}", "1.5", 0}, {"{\"type\":\"integer\"}", "-0", 1},
        {"{\"type\":\"number\"}", "-1.5e3", 1}, {"{\"type\":\"number\"}", "01", 0},
        {"{\"type\":[\"string\",\"null\"]}", "null", 1}, {"{\"type\":[\"string\",\"null\"]}", "1", 0},
        {"{\"type\":\"boolean\"}", "true", 1}, {"{\"type\":\"string\"}", "\"a\\\"\\u0001\\n\"", 1},
        {"{\"type\":\"string\"}", "\"a\x01\"", 0}, {"{\"type\":\"string\"}", "\"\\x\"", 0},
        {"true", "[1,{}]", 1}, {"false", "1", -1},
        /* enum / const */
        {"{\"enum\":[\"a\",1,null,{\"k\":[true]}]}", "{\"k\": [true]}", 1},
        {"{\"enum\":[\"a\",1]}", "\"b\"", 0},
        {"{\"const\":\"x/y\"}", "\"x/y\"", 1},
        {"{\"enum\":[\"ab\",\"abc\",\"abcd\"],\"maxLength\":3}", "\"abcd\"", 0},
        {"{\"enum\":[\"ab\",\"abc\",\"abcd\"],\"maxLength\":3}", "\"abc\"", 1},
        /* strings */
        {"{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}", "\"\xc3\xa9\xc3\xa9\"", 1},
        {"{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}", "\"abcd\"", 0},
        {"{\"type\":\"string\",\"maxLength\":2}", "\"\\n\\t\"", 1},
        {"{\"type\":\"string\",\"pattern\":\"^[a-z]+$\"}", "\"abc\"", 1},
        {"{\"type\":\"string\",\"pattern\":\"^[a-z]+$\"}", "\"ab1\"", 0},
        {"{\"type\":\"string\",\"pattern\":\"b\"}", "\"abc\"", 1},
        {"{\"type\":\"string\",\"pattern\":\"^\\\\d+$\",\"maxLength\":3}", "\"1234\"", 0},
        {"{\"type\":\"string\",\"pattern\":\"(?=x)\"}", "\"x\"", -1},
        /* formats */
        {"{\"type\":\"string\",\"format\":\"date\"}", "\"2024-02-29\"", 1},
        {"{\"type\":\"string\",\"format\":\"date\"}", "\"2023-02-29\"", 0},
        {"{\"type\":\"string\",\"format\":\"date-time\"}", "\"2024-01-31T23:59:59.5+02:00\"", 1},
        {"{\"type\":\"string\",\"format\":\"date-time\"}", "\"2024-01-31 23:59:59Z\"", 0},
        {"{\"type\":\"string\",\"format\":\"time\"}", "\"12:00:00Z\"", 1},
        {"{\"type\":\"string\",\"format\":\"email\"}", "\"ann@example.com\"", 1},
        {"{\"type\":\"string\",\"format\":\"email\"}", "\"ann.example.com\"", 0},
        {"{\"type\":\"string\",\"format\":\"uuid\"}", "\"123e4567-e89b-12d3-a456-426614174000\"", 1},
        {"{\"type\":\"string\",\"format\":\"ipv4\"}", "\"192.168.0.256\"", 0},
        {"{\"type\":\"string\",\"format\":\"ipv6\"}", "\"fe80::1:2\"", 1},
        {"{\"type\":\"string\",\"format\":\"uri\"}", "\"https://a.b/c?d#e\"", 1},
        {"{\"type\":\"string\",\"format\":\"uri\"}", "\"no scheme\"", 0},
        {"{\"type\":\"string\",\"format\":\"color\"}", "\"anything\"", 1}, /* unknown format: annotation */
        /* numbers */
        {"{\"type\":\"integer\",\"minimum\":-5,\"maximum\":120}", "120", 1},
        {"{\"type\":\"integer\",\"minimum\":-5,\"maximum\":120}", "121", 0},
        {"{\"type\":\"integer\",\"minimum\":-5,\"maximum\":120}", "-6", 0},
        {"{\"type\":\"integer\",\"exclusiveMinimum\":0}", "0", 0},
        {"{\"type\":\"number\",\"minimum\":0.25,\"exclusiveMaximum\":1}", "0.2500", 1},
        {"{\"type\":\"number\",\"minimum\":0.25,\"exclusiveMaximum\":1}", "0.249", 0},
        {"{\"type\":\"number\",\"minimum\":0.25,\"exclusiveMaximum\":1}", "1.0", 0},
        {"{\"type\":\"number\",\"maximum\":-1.5}", "-1.51", 1},
        {"{\"type\":\"integer\",\"minimum\":2.5}", "2", 0},
        {"{\"type\":\"integer\",\"minimum\":2.5}", "3", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":\"number\",\"minimum\":5,\"exclusiveMinimum\":true}", "5", 0},
        {"{\"type\":\"integer\",\"multipleOf\":7}", "-21", 1},
        {"{\"type\":\"integer\",\"multipleOf\":7}", "22", 0},
        {"{\"type\":\"number\",\"multipleOf\":0.01}", "1.25", 1},
        {"{\"type\":\"number\",\"multipleOf\":0.01}", "1.255", 0},
        /* objects */
        {"{\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"}},\"required\":[\"a\"],\"additionalProperties\":false}", "{\"b\":\"x\",\"a\":1}", 1},
        {"{\"properties\":{\"a\":{\"type\":\"integer\"}},\"required\":[\"a\"],\"additionalProperties\":false}", "{}", 0},
        {"{\"properties\":{\"a\":{\"type\":\"integer\"}},\"additionalProperties\":false}", "{\"c\":1}", 0},
        {"{\"properties\":{\"a\":{\"type\":\"integer\"}},\"additionalProperties\":false}", "{\"a\":1,\"a\":2}", 0},
        {"{\"properties\":{\"a\":{\"type\":\"integer\"}}}", "{\"z\":[1],\"a\":1}", 1},
        {"{\"properties\":{\"a\":{\"type\":\"integer\"}}}", "{\"a\":\"x\"}", 0},
        {"{\"additionalProperties\":{\"type\":\"integer\"}}", "{\"x\":1,\"y\":\"s\"}", 0},
        {"{\"patternProperties\":{\"^x_\":{\"type\":\"integer\"}},\"additionalProperties\":false}", "{\"x_1\":5}", 1},
        {"{\"patternProperties\":{\"^x_\":{\"type\":\"integer\"}},\"additionalProperties\":false}", "{\"y\":5}", 0},
        {"{\"propertyNames\":{\"maxLength\":2}}", "{\"abc\":1}", 0},
        {"{\"minProperties\":2,\"maxProperties\":2}", "{\"a\":1}", 0},
        {"{\"minProperties\":2,\"maxProperties\":2}", "{\"a\":1,\"b\":2}", 1},
        {"{\"type\":\"object\",\"not\":{\"required\":[\"x\"]}}", "{\"x\":1}", 0},
        {"{\"type\":\"object\",\"not\":{\"required\":[\"x\"]}}", "{\"y\":1}", 1},
        /* arrays */
        {"{\"items\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":2}", "[1, 2]", 1},
        {"{\"items\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":2}", "[]", 0},
        {"{\"items\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":2}", "[1,2,3]", 0},
        {"{\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"integer\"}],\"items\":false}", "[\"a\",1]", 1},
        {"{\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"integer\"}],\"items\":false}", "[\"a\",1,2]", 0},
        {"{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"integer\"}}", "[\"a\",1,2]", 1},
        {"{\"type\":\"array\",\"uniqueItems\":true}", "[1]", -1},
        {"{\"type\":\"array\",\"contains\":{\"type\":\"integer\"}}", "[1]", -1},
        /* combinators */
        {"{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\",\"maxLength\":1}]}", "\"ab\"", 0},
        {"{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\",\"maxLength\":1}]}", "7", 1},
        {"{\"allOf\":[{\"properties\":{\"a\":{\"type\":\"integer\"}}},{\"properties\":{\"a\":{\"minimum\":3}}}]}", "{\"a\":2}", 0},
        {"{\"allOf\":[{\"properties\":{\"a\":{\"type\":\"integer\"}}},{\"properties\":{\"a\":{\"minimum\":3}}}]}", "{\"a\":3}", 1},
        /* an object of more than 7 properties takes them in the order of allOf
         * (here b's, then a's), wherever the parser put the definitions */
        {"{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"allOf\":[{\"$ref\":\"#/definitions/b\"},{\"$ref\":\"#/definitions/a\"}],\"definitions\":{\"a\":{\"properties\":{\"a1\":{},\"a2\":{},\"a3\":{},\"a4\":{}}},\"b\":{\"properties\":{\"b1\":{},\"b2\":{},\"b3\":{},\"b4\":{}}}}}", "{\"b1\":1,\"b4\":1,\"a1\":1,\"a3\":1}", 1},
        {"{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}", "\"s\"", 1},
        {"{\"oneOf\":[{\"required\":[\"a\"]},{\"required\":[\"b\"]}],\"type\":\"object\"}", "{\"a\":1,\"b\":2}", 0},
        {"{\"oneOf\":[{\"required\":[\"a\"]},{\"required\":[\"b\"]}],\"type\":\"object\"}", "{\"b\":2}", 1},
        {"{\"not\":{\"type\":\"string\"}}", "\"s\"", 0},
        {"{\"type\":\"string\",\"not\":{\"enum\":[\"no\"]}}", "\"no\"", 0},
        {"{\"type\":\"string\",\"not\":{\"enum\":[\"no\"]}}", "\"nope\"", 1},
        {"{\"if\":{\"type\":\"string\"},\"then\":{\"maxLength\":1}}", "\"a\"", -1},
        /* $ref, $defs, recursion, $id */
        {"{\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{\"c\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/n\"}}},\"additionalProperties\":false}},\"$ref\":\"#/$defs/n\"}", "{\"c\":[{\"c\":[{}]}]}", 1},
        {"{\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{\"c\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/n\"}}},\"additionalProperties\":false}},\"$ref\":\"#/$defs/n\"}", "{\"c\":[{\"d\":1}]}", 0},
        {"{\"definitions\":{\"a~b\":{\"type\":\"integer\"}},\"$ref\":\"#/definitions/a~0b\"}", "1", 1},
        {"{\"$id\":\"http://x.y/root.json\",\"$defs\":{\"i\":{\"$id\":\"item.json\",\"type\":\"integer\"}},\"$ref\":\"item.json\"}", "\"s\"", 0},
        {"{\"$defs\":{\"a\":{\"$anchor\":\"num\",\"type\":\"number\"}},\"$ref\":\"#num\"}", "2.5", 1},
        {"{\"$ref\":\"http://remote.example/s.json\"}", "1", -1},
        {"{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"definitions\":{\"s\":{\"type\":\"string\"}},\"properties\":{\"a\":{\"$ref\":\"#/definitions/s\",\"type\":\"integer\"}}}", "{\"a\":\"x\"}", 1},
        /* whitespace: bounded */
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}", "{ \"a\" :\n  1 }", 1},
        {"{\"type\":\"integer\"}", "                         1", 0},
        /* JSON Schema drafts */
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":\"integer\"}", "12345", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":\"integer\"}", "12345.0", 0},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":\"integer\"}", "-0", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-06/schema#\",\"type\":\"integer\"}", "12345.0", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":\"integer\",\"minimum\":1,\"maximum\":3}", "2", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":\"integer\",\"minimum\":1,\"maximum\":3}", "2.0", 0},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":\"integer\",\"multipleOf\":5}", "10.0", 0},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":\"integer\",\"multipleOf\":5}", "10", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":[\"integer\",\"string\"]}", "3.0", 0},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":\"number\"}", "3.0", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":\"integer\",\"enum\":[1,2.0,\"x\"]}", "2.0", 0},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":\"integer\",\"enum\":[1,2.0,\"x\"]}", "1", 1},
        {"{\"type\":\"integer\",\"enum\":[1,2.0,\"x\"]}", "2.0", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":\"integer\",\"maximum\":3,\"exclusiveMaximum\":true}", "3", 0},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":\"integer\",\"maximum\":3,\"exclusiveMaximum\":true}", "2", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-06/schema#\",\"type\":\"integer\",\"maximum\":3,\"exclusiveMaximum\":true}", "3", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"const\":5}", "6", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-06/schema#\",\"const\":5}", "6", 0},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":\"object\",\"propertyNames\":{\"maxLength\":1}}", "{\"long\":1}", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-06/schema#\",\"type\":\"object\",\"propertyNames\":{\"maxLength\":1}}", "{\"long\":1}", 0},
        {"{\"$schema\":\"http://json-schema.org/draft-06/schema#\",\"if\":{\"type\":\"integer\"},\"then\":{\"minimum\":10}}", "3", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":\"array\",\"contains\":{\"type\":\"integer\"}}", "[\"a\"]", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"}]}", "[\"a\"]", 1},
        {"{\"$schema\":\"https://json-schema.org/draft/2019-09/schema\",\"type\":\"object\",\"dependencies\":{\"a\":[\"b\"]}}", "{\"a\":1}", 1},
        {"{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"type\":\"object\",\"dependencies\":{\"a\":[\"b\"]}}", "{\"a\":1}", -1},
        {"{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"type\":\"object\",\"dependentRequired\":{\"a\":[\"b\"]}}", "{\"a\":1}", 1},
    };
    for (size_t i = 0; i < sizeof schema / sizeof *schema; i++) {
        int got = check_schema(schema[i].a, schema[i].text, true);
        tap_ok(got == schema[i].want, "schema %s on %s: %d (want %d)", schema[i].a, esc(schema[i].text), got, schema[i].want);
    }
    /* long length bounds: the counted terminal's liveness table takes a
     * shortcut over runs of equal levels, which must not cross minLength
     * nor merge levels that alternate (only even lengths of (ab)+) */
    static const struct {
        const char *schema, *unit;
        int len, want;
        bool closed; /* false: the text without its closing quote */
        bool prefix; /* true: only whether the text can still be completed */
    } counted[] = {
        {"{\"type\":\"string\",\"pattern\":\"^a*$\",\"minLength\":50,\"maxLength\":100}", "a", 49, 0, false, false},
        {"{\"type\":\"string\",\"pattern\":\"^a*$\",\"minLength\":50,\"maxLength\":100}", "a", 50, 1, false, false},
        {"{\"type\":\"string\",\"pattern\":\"^a*$\",\"minLength\":50,\"maxLength\":100}", "a", 100, 1, false, false},
        {"{\"type\":\"string\",\"pattern\":\"^a*$\",\"minLength\":50,\"maxLength\":100}", "a", 101, 0, false, false},
        {"{\"type\":\"string\",\"pattern\":\"^(ab)+$\",\"minLength\":41,\"maxLength\":60}", "ab", 20, 0, false, false},
        {"{\"type\":\"string\",\"pattern\":\"^(ab)+$\",\"minLength\":41,\"maxLength\":60}", "ab", 21, 1, false, false},
        {"{\"type\":\"string\",\"pattern\":\"^(ab)+$\",\"minLength\":41,\"maxLength\":60}", "ab", 30, 1, false, false},
        {"{\"type\":\"string\",\"pattern\":\"^(ab)+$\",\"minLength\":41,\"maxLength\":60}", "ab", 31, 0, false, false},
        {"{\"type\":\"string\",\"minLength\":300}", "\xc3\xa9", 299, 0, false, false},
        {"{\"type\":\"string\",\"minLength\":300}", "\xc3\xa9", 300, 1, false, false},
        {"{\"type\":\"string\",\"minLength\":300}", "\xc3\xa9", 900, 1, false, false},
        /* the closing quote is refused as soon as it would close too short
         * a string, not only at the end */
        {"{\"type\":\"string\",\"pattern\":\"^a*$\",\"minLength\":50,\"maxLength\":100}", "a", 49, 0, true, true},
        {"{\"type\":\"string\",\"pattern\":\"^a*$\",\"minLength\":50,\"maxLength\":100}", "a", 49, 1, false, true},
        {"{\"type\":\"string\",\"minLength\":300}", "\xc3\xa9", 299, 0, true, true},
        {"{\"type\":\"string\",\"pattern\":\"^(ab)+$\",\"minLength\":41,\"maxLength\":60}", "ab", 20, 0, true, true},
    };
    for (size_t i = 0; i < sizeof counted / sizeof *counted; i++) {
        char text[4096];
        size_t w = 0, ul = strlen(counted[i].unit);
        text[w++] = '"';
        for (int k = 0; k < counted[i].len; k++, w += ul)
            memcpy(text + w, counted[i].unit, ul);
        bool as_prefix = counted[i].prefix;
        if (!as_prefix || counted[i].closed)
            text[w++] = '"';
        text[w] = '\0';
        int got = check_schema_x(counted[i].schema, text, true, as_prefix);
        tap_ok(got == counted[i].want, "schema %s on %d x \"%s\"%s: %d (want %d)", counted[i].schema, counted[i].len,
               counted[i].unit, as_prefix ? (counted[i].closed ? " as a prefix" : " unclosed, as a prefix") : "", got,
               counted[i].want);
    }
    /* strict false: unenforceable keywords are ignored (best effort) */
    tap_ok(check_schema("{\"type\":\"array\",\"uniqueItems\":true}", "[1,1]", false) == 1, "strict false: uniqueItems relaxed");
    tap_ok(check_schema("{\"if\":{\"type\":\"string\"},\"then\":{\"maxLength\":1}}", "\"ab\"", false) == 1,
           "strict false: if/then relaxed");
    /* escape_lt (values inside XML-style tool-call markup): '<' only as
     * \u003c in every kind of string, the same values otherwise */
    static const case_t lt_cases[] = {
        {"{\"type\":\"string\"}", "\"a<b\"", 0},
        {"{\"type\":\"string\"}", "\"a\\u003cb\"", 1},
        {"{\"type\":\"string\"}", "\"a\\u003Cb>\"", 1},
        {"{\"type\":\"string\",\"maxLength\":3}", "\"\\u003c/p\"", 1},
        {"{\"type\":\"string\",\"maxLength\":3}", "\"</p\"", 0},
        {"{\"type\":\"string\",\"pattern\":\"^<\"}", "\"\\u003cx\"", 1},
        {"{\"type\":\"string\",\"pattern\":\"^<\"}", "\"<x\"", 0},
        {"{\"enum\":[\"</parameter>\",\"x\"]}", "\"\\u003c/parameter>\"", 1},
        {"{\"enum\":[\"</parameter>\",\"x\"]}", "\"</parameter>\"", 0},
        {"{\"const\":{\"<k\":[\"<v\"]}}", "{\"\\u003ck\":[\"\\u003cv\"]}", 1},
        {"{\"const\":{\"<k\":[\"<v\"]}}", "{\"<k\":[\"<v\"]}", 0},
        {"{\"type\":\"object\",\"properties\":{\"a<\":{\"type\":\"integer\"}}}", "{\"a\\u003c\":1}", 1},
        {"{\"type\":\"object\",\"properties\":{\"a<\":{\"type\":\"integer\"}}}", "{\"a<\":1}", 0},
        {"{\"type\":\"object\"}", "{\"k\":[\"x\\u003c\",{\"y\":\"<\"}]}", 0},
        {"{\"type\":\"object\"}", "{\"k\":[\"x\\u003c\",{\"y\":\"\\u003c\"}]}", 1},
        {"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\",\"format\":\"email\"}}",
         "{\"<a\":\"a@b.c\"}", 0},
    };
    escape_lt = true;
    for (size_t i = 0; i < sizeof lt_cases / sizeof lt_cases[0]; i++) {
        int got = check_schema(lt_cases[i].a, lt_cases[i].text, true);
        tap_ok(got == lt_cases[i].want, "escape_lt: %s %s %s (got %d)", lt_cases[i].want ? "accepts" : "rejects",
               esc(lt_cases[i].text), esc(lt_cases[i].a), got);
    }
    escape_lt = false;
    tap_ok(check_schema("{\"type\":\"string\"}", "\"a<b\"", true) == 1, "without escape_lt a raw '<' is fine");
    /* numbers are bounded: 64 integer and 64 fraction digits, 4 exponent
     * digits, 16 zeros after an integer's point */
    char big[200];
    memset(big, '7', 64), big[64] = 0;
    tap_ok(check_schema("{\"type\":\"integer\"}", big, true) == 1, "a 64-digit integer");
    memset(big, '7', 65), big[65] = 0;
    tap_ok(check_schema("{\"type\":\"integer\"}", big, true) == 0, "a 65-digit integer is refused");
    tap_ok(check_schema("{\"type\":\"number\",\"minimum\":0}", big, true) == 0, "a 65-digit number above a minimum is refused");
    tap_ok(check_schema("{\"type\":\"integer\"}", "2.0000000000000000", true) == 1, "2. and 16 zeros is an integer");
    tap_ok(check_schema("{\"type\":\"integer\"}", "2.00000000000000000", true) == 0, "17 zeros are refused");
    snprintf(big, sizeof big, "0.%0*d1", 63, 0);
    tap_ok(check_schema("{\"type\":\"number\"}", big, true) == 1, "64 fraction digits");
    snprintf(big, sizeof big, "0.%0*d1", 64, 0);
    tap_ok(check_schema("{\"type\":\"number\"}", big, true) == 0, "65 fraction digits are refused");
    tap_ok(check_schema("{\"type\":\"number\"}", "1e1234", true) == 1 && check_schema("{\"type\":\"number\"}", "1e12345", true) == 0,
           "exponents of up to 4 digits");
    return tap_done();
}
