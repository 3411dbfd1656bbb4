/* test_dfa.c - the byte automata (automata/dfa.h): the fast construction
 * paths (literal tries, glued sequences, prebuilt pieces) give the same
 * language as the general NFA + subset construction, literal sets give the
 * same minimal table, narrow-ness counts strings exactly, and shared
 * automata are reference counted. */
#include <stdio.h>
#include <string.h>

#include "grammar/automata/dfa.h"
#include "tap.h"

/* same language: a - b and b - a are both empty */
static bool same_language(const gr_dfa_t *a, const gr_dfa_t *b)
{
    lf_err_t e = {0};
    gr_dfa_t *x = gr_dfa_subtract(a, b, NULL, &e), *y = gr_dfa_subtract(b, a, NULL, &e);
    bool same = x && y && x->n_states == 0 && y->n_states == 0;
    gr_dfa_free(x);
    gr_dfa_free(y);
    return same;
}

/* The alternation of the literals lits[0..n) ("" is the empty string) as
 * the fast path sees it, and wrapped so that the general construction
 * builds it (a repetition {1,1} of each literal is the same language). */
static void literal_alts(gr_arena_t *a, const char *const *lits, int n, gr_ex_t **fast, gr_ex_t **slow)
{
    gr_ex_t *f[64], *s[64];
    for (int i = 0; i < n; i++) {
        f[i] = lits[i][0] ? gr_ex_str(a, lits[i]) : gr_ex_empty(a);
        s[i] = gr_ex_rep(a, f[i], 1, 1);
    }
    *fast = n == 1 ? f[0] : gr_ex_alt(a, f, (size_t)n);
    *slow = gr_ex_alt(a, s, (size_t)n);
}

int main(void)
{
    static const struct {
        const char *lits[8];
        int n;
    } sets[] = {
        {{"abc"}, 1},
        {{"\"name\""}, 1},
        {{"red", "green", "blue"}, 3},
        {{"ab", "abc", "abcd"}, 3},              /* prefixes of each other */
        {{"xing", "ying", "zing", "ing"}, 4},     /* shared suffixes: Hopcroft merges them */
        {{"", "a", "aa"}, 3},                     /* with the empty string */
        {{"a", "b", "c", "d", "e", "f", "g"}, 7}, /* one class for them all */
        {{"\xff\x7f", "\x01\xfe"}, 2},       /* bytes outside ASCII */
    };
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++) {
        gr_arena_t a;
        gr_arena_init(&a, 0);
        gr_ex_t *fast, *slow;
        literal_alts(&a, sets[i].lits, sets[i].n, &fast, &slow);
        lf_err_t e = {0};
        gr_dfa_t *x = gr_dfa_from_expr(fast, false, NULL, &e), *y = gr_dfa_from_expr(slow, false, NULL, &e);
        tap_ok(x && y && gr_dfa_equal(x, y), "literal set %zu: the trie path gives the minimal table", i);
        bool all = true;
        for (int k = 0; x && k < sets[i].n; k++)
            all = all && gr_dfa_matches(x, sets[i].lits[k], strlen(sets[i].lits[k]));
        tap_ok(x && all && !gr_dfa_matches(x, "zz", 2), "literal set %zu: accepts exactly its literals", i);
        gr_dfa_free(x);
        gr_dfa_free(y);
        gr_arena_free(&a);
    }

    /* every byte value in one literal (no class left over for "other") */
    {
        gr_arena_t a;
        gr_arena_init(&a, 0);
        uint8_t all[256];
        for (int b = 0; b < 256; b++)
            all[b] = (uint8_t)b;
        gr_ex_t *f[2] = {gr_ex_bytes(&a, all, 256), gr_ex_bytes(&a, all + 1, 3)};
        gr_ex_t *s[2] = {gr_ex_rep(&a, f[0], 1, 1), gr_ex_rep(&a, f[1], 1, 1)};
        lf_err_t e = {0};
        gr_dfa_t *x = gr_dfa_from_expr(gr_ex_alt(&a, f, 2), false, NULL, &e);
        gr_dfa_t *y = gr_dfa_from_expr(gr_ex_alt(&a, s, 2), false, NULL, &e);
        tap_ok(x && y && gr_dfa_equal(x, y) && gr_dfa_matches(x, all, 256) && gr_dfa_matches(x, all + 1, 3) &&
                   !gr_dfa_matches(x, all, 255),
               "a literal of all 256 byte values");
        gr_dfa_free(x);
        gr_dfa_free(y);
        gr_arena_free(&a);
    }

    /* JSON strings of literal code points (an object's known property
     * names): the trie path when each code point has one spelling, the
     * general path otherwise ('/' may be "\/", a control character
     * "\u00XX" in either case); the same table either way */
    {
        static const char *names[][4] = {
            {"name", "id", "type", NULL},
            {"", "caf\xc3\xa9", "\xf0\x9f\x98\x80", NULL}, /* empty, 2- and 4-byte UTF-8 */
            {"a/b", "x", NULL},                            /* '/': two spellings */
            {"tab\there", NULL},                           /* control character */
            {"q\"uote", "back\\slash", NULL},
        };
        for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
            gr_arena_t a;
            gr_arena_init(&a, 0);
            gr_ex_t *f[4], *s[4];
            int n = 0;
            for (; names[i][n]; n++) {
                gr_exlist_t cps = {0};
                for (const unsigned char *p = (const unsigned char *)names[i][n]; *p;) {
                    uint32_t cp = *p;
                    int len = cp < 0x80 ? 1 : cp < 0xE0 ? 2 : cp < 0xF0 ? 3 : 4;
                    if (len > 1) {
                        cp &= len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07;
                        for (int k = 1; k < len; k++)
                            cp = cp << 6 | (p[k] & 0x3F);
                    }
                    gr_exlist_push(&a, &cps, gr_ex_range(&a, cp, cp));
                    p += len;
                }
                gr_ex_t *content = cps.n ? gr_ex_seq(&a, cps.v, cps.n) : gr_ex_empty(&a);
                f[n] = gr_ex_jstr(&a, content, 0, -1);
                s[n] = gr_ex_rep(&a, f[n], 1, 1);
            }
            lf_err_t e = {0};
            gr_dfa_t *x = gr_dfa_from_expr(n == 1 ? f[0] : gr_ex_alt(&a, f, (size_t)n), false, NULL, &e);
            gr_dfa_t *y = gr_dfa_from_expr(gr_ex_alt(&a, s, (size_t)n), false, NULL, &e);
            tap_ok(x && y && gr_dfa_equal(x, y), "JSON string names set %zu: same minimal table on both paths", i);
            gr_dfa_free(x);
            gr_dfa_free(y);
            gr_arena_free(&a);
        }
        gr_arena_t a;
        gr_arena_init(&a, 0);
        lf_err_t e = {0};
        gr_dfa_t *d = gr_dfa_from_expr(gr_ex_jstr(&a, gr_ex_seq2(&a, gr_ex_range(&a, 'a', 'a'), gr_ex_range(&a, '/', '/')), 0, -1),
                                       false, NULL, &e);
        tap_ok(d && gr_dfa_matches(d, "\"a/\"", 4) && gr_dfa_matches(d, "\"a\\/\"", 5) && !gr_dfa_matches(d, "\"a\"", 3),
               "a name with '/' accepts both spellings");
        gr_dfa_free(d);
        gr_arena_free(&a);
    }

    /* glued sequences and prebuilt pieces: the language of the whole,
     * compared with the same sequence determinized as one (a REP {1,1}
     * around it is not a sequence, so it takes the general path) */
    {
        gr_arena_t a;
        gr_arena_init(&a, 0);
        gr_ex_t *ws = gr_ex_rep(&a, gr_ex_alt2(&a, gr_ex_str(&a, " "), gr_ex_str(&a, "\t")), 0, 3);
        gr_ex_t *comma = gr_ex_str(&a, ","), *key = gr_ex_str(&a, "\"id\""), *colon = gr_ex_str(&a, ":");
        gr_ex_t *pieces[][7] = {
            {ws, comma, ws, key, ws, colon, ws},
            {gr_ex_opt(&a, comma), gr_ex_opt(&a, key), colon, NULL},
            {gr_ex_rep(&a, gr_ex_str(&a, "ab"), 0, -1), gr_ex_str(&a, "c"), gr_ex_opt(&a, gr_ex_str(&a, "d")), NULL},
        };
        int np[] = {7, 3, 3};
        lf_err_t e = {0};
        for (int i = 0; i < 3; i++) {
            gr_ex_t *seq = gr_ex_seq(&a, pieces[i], (size_t)np[i]);
            gr_dfa_t *x = gr_dfa_from_expr(seq, false, NULL, &e);
            gr_dfa_t *y = gr_dfa_from_expr(gr_ex_rep(&a, seq, 1, 1), false, NULL, &e);
            tap_ok(x && y && same_language(x, y), "glued sequence %d: same language as determinized", i);
            /* the same sequence with its first piece prebuilt */
            gr_dfa_t *p0 = gr_dfa_from_expr(pieces[i][0], false, NULL, &e);
            gr_ex_t *with_dfa[7];
            memcpy(with_dfa, pieces[i], sizeof with_dfa);
            with_dfa[0] = gr_ex_dfa(&a, p0, gr_dfa_nullable(p0));
            gr_dfa_t *z = gr_dfa_from_expr(gr_ex_seq(&a, with_dfa, (size_t)np[i]), false, NULL, &e);
            tap_ok(z && y && same_language(z, y), "sequence %d with a prebuilt piece: same language", i);
            gr_dfa_free(x);
            gr_dfa_free(y);
            gr_dfa_free(z);
            gr_dfa_free(p0);
        }
        gr_arena_free(&a);
    }

    /* narrow: at most GR_DFA_NARROW_MAX strings, none on a cycle */
    {
        static const struct {
            const char *what;
            int n_lits;     /* that many distinct literals, or */
            int rep_max;    /* [ab]{0,rep_max} (-1: unbounded) */
            bool want;
        } nc[] = {
            {"256 literals", 256, 0, true},
            {"257 literals", 257, 0, false},
            {"[ab]{0,7}: 255 strings", 0, 7, true},
            {"[ab]{0,8}: 511 strings", 0, 8, false},
            {"[ab]*: a cycle", 0, -1, false},
        };
        for (size_t i = 0; i < sizeof nc / sizeof *nc; i++) {
            gr_arena_t a;
            gr_arena_init(&a, 0);
            gr_ex_t *x;
            if (nc[i].n_lits) {
                gr_ex_t *l[300];
                for (int k = 0; k < nc[i].n_lits; k++) {
                    char s[8];
                    snprintf(s, sizeof s, "k%d", k);
                    l[k] = gr_ex_str(&a, s);
                }
                x = gr_ex_alt(&a, l, (size_t)nc[i].n_lits);
            } else {
                x = gr_ex_rep(&a, gr_ex_range(&a, 'a', 'b'), 0, nc[i].rep_max);
            }
            lf_err_t e = {0};
            gr_dfa_t *d = gr_dfa_from_expr(x, false, NULL, &e);
            bool first = d && gr_dfa_narrow(d), again = d && gr_dfa_narrow(d);
            tap_ok(d && first == nc[i].want && again == first, "narrow: %s -> %d", nc[i].what, first);
            gr_dfa_free(d);
            gr_arena_free(&a);
        }
    }

    /* shared automata: a copy is the same object, freed with its last owner */
    {
        gr_arena_t a;
        gr_arena_init(&a, 0);
        lf_err_t e = {0};
        gr_dfa_t *d = gr_dfa_from_expr(gr_ex_str(&a, "shared"), false, NULL, &e);
        gr_dfa_t *c = gr_dfa_copy(d);
        tap_ok(c == d, "gr_dfa_copy shares the automaton");
        gr_dfa_free(d);
        tap_ok(gr_dfa_matches(c, "shared", 6), "the other owner still reads it after one free");
        gr_dfa_free(c);
        gr_arena_free(&a);
    }
    return tap_done();
}
