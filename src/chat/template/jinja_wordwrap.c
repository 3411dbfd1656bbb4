/* jinja_wordwrap.c - the |wordwrap filter's line wrapping: Python's
 * textwrap.wrap(line, width, expand_tabs=False, replace_whitespace=False,
 * break_long_words, break_on_hyphens) as Jinja2's do_wordwrap calls it for
 * each line. The text is split into chunks the way textwrap's wordsep_re
 * splits it (whitespace runs; words, cut after the hyphen of hyphenated
 * words and before em-dashes when break_on_hyphens), then packed greedily
 * into lines of at most width code points, whitespace dropped at line
 * starts (but the first) and ends, chunks longer than a line cut
 * (break_long_words, preferring the last hyphen) or put alone on a line.
 */
#include "chat/template/jinja.h"

#include <string.h>

typedef struct {
    const char *p;  /* the chunk's bytes */
    size_t n;
    size_t cps;     /* its length in code points */
} wchunk_t;

static bool ww_space(const char *s, size_t n, size_t i) /* textwrap's whitespace: \t\n\v\f\r and space */
{
    return i < n && strchr("\t\n\v\f\r ", s[i]) && s[i];
}

static bool ww_word(const char *s, size_t n, size_t i) /* \w (non-ASCII counts as a letter) */
{
    unsigned char ch = i < n ? (unsigned char)s[i] : 0;
    return ch >= 0x80 || ch == '_' || (ch >= '0' && ch <= '9') || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z');
}

static bool ww_letter(const char *s, size_t n, size_t i) /* [^\d\W] */
{
    return ww_word(s, n, i) && !(s[i] >= '0' && s[i] <= '9');
}

static bool ww_punct(const char *s, size_t n, size_t i) /* [\w!"'&.,?] */
{
    return ww_word(s, n, i) || (i < n && strchr("!\"'&.,?", s[i]) && s[i]);
}

/* s[i..] starts with two or more '-' and then a \w */
static bool ww_emdash_at(const char *s, size_t n, size_t i)
{
    size_t j = i;
    while (j < n && s[j] == '-')
        j++;
    return j - i >= 2 && ww_word(s, n, j);
}

/* The length of the chunk at i, as textwrap's wordsep_re splits (simple:
 * runs of whitespace and of the rest). */
static size_t ww_chunk(const char *s, size_t n, size_t i, bool hyphens)
{
    size_t j = i;
    if (ww_space(s, n, i)) {
        while (ww_space(s, n, j))
            j++;
        return j - i;
    }
    if (!hyphens) {
        while (j < n && !ww_space(s, n, j))
            j++;
        return j - i;
    }
    if (i > 0 && ww_punct(s, n, i - 1) && ww_emdash_at(s, n, i)) { /* an em-dash between words */
        while (j < n && s[j] == '-')
            j++;
        return j - i;
    }
    for (size_t k = i + 1; k <= n; k++) { /* the shortest word that ends one of three ways */
        if (ww_space(s, n, k - 1))
            break;
        if (k < n && s[k] == '-' &&
            ((k >= 2 && ww_letter(s, n, k - 2) && ww_letter(s, n, k - 1)) ||
             (k >= 3 && ww_letter(s, n, k - 3) && s[k - 2] == '-' && ww_letter(s, n, k - 1))) &&
            ww_letter(s, n, k + 1) &&
            (ww_letter(s, n, k + 2) || (k + 2 < n && s[k + 2] == '-' && ww_letter(s, n, k + 3))))
            return k + 1 - i; /* a hyphenated word: up to its hyphen */
        if (k == n || ww_space(s, n, k))
            return k - i;
        if (ww_punct(s, n, k - 1) && ww_emdash_at(s, n, k))
            return k - i;
    }
    while (j < n && !ww_space(s, n, j))
        j++;
    return j - i;
}

static bool ww_blank(const wchunk_t *c)
{
    size_t l;
    for (size_t i = 0; i < c->n; i += l)
        if (!jv_is_pyspace(c->p + i, c->n - i, &l))
            return false;
    return true;
}

/* One line wrapped into b (lines joined with sep). */
bool jinja_wrap_line(jctx_t *c, jbuf_t *b, const char *s, size_t n, int64_t width, bool long_words, bool hyphens,
                     const jv_t *sep)
{
    jarena_t *a = jctx_arena(c);
    size_t cap = n + 1, nc = 0;
    wchunk_t *ch = jarena_alloc(a, cap * sizeof *ch);
    if (!ch)
        return jctx_fail(c, "template rendering ran out of memory");
    for (size_t i = 0; i < n; nc++) {
        size_t l = ww_chunk(s, n, i, hyphens);
        ch[nc] = (wchunk_t){s + i, l, jutf8_len(s + i, l)};
        i += l;
    }
    size_t next = 0, lines = 0; /* chunks[next..nc) remain, in order */
    wchunk_t *cur = jarena_alloc(a, (nc + 1) * sizeof *cur);
    if (!cur)
        return jctx_fail(c, "template rendering ran out of memory");
    while (next < nc) {
        if (!jctx_step(c))
            return false;
        size_t nl = 0, len = 0;
        if (ww_blank(&ch[next]) && lines)
            next++; /* whitespace at a line start is dropped (not before the first line) */
        while (next < nc && len + ch[next].cps <= (size_t)width)
            len += ch[next].cps, cur[nl++] = ch[next++];
        if (next < nc && ch[next].cps > (size_t)width) { /* a chunk too long for any line */
            size_t left = (size_t)width - len; /* textwrap: width - cur_len (0 leaves the chunk whole) */
            if (long_words) {
                wchunk_t *w = &ch[next];
                size_t end = left;
                if (hyphens && w->cps > left) { /* after its last hyphen within the space, if a non-hyphen precedes */
                    size_t off = jutf8_offset(w->p, w->n, left), h = off;
                    while (h > 0 && w->p[h - 1] != '-')
                        h--;
                    if (h > 1) {
                        bool other = false;
                        for (size_t q = 0; q + 1 < h && !other; q++)
                            other = w->p[q] != '-';
                        if (other)
                            end = jutf8_len(w->p, h);
                    }
                }
                size_t eb = jutf8_offset(w->p, w->n, end);
                cur[nl++] = (wchunk_t){w->p, eb, end};
                *w = (wchunk_t){w->p + eb, w->n - eb, w->cps - end};
            } else if (!nl) {
                cur[nl++] = ch[next++];
            }
        }
        if (nl && ww_blank(&cur[nl - 1]))
            nl--; /* whitespace at a line end is dropped */
        if (nl) {
            if (lines++)
                jbuf_put(b, sep->u.str.s, sep->u.str.n);
            for (size_t i = 0; i < nl; i++)
                jbuf_put(b, cur[i].p, cur[i].n);
        }
    }
    return true;
}

