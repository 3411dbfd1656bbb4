/* vocab_detok.c - token pieces and incremental, UTF-8-safe detokenization.
 *
 * vocab_token_to_piece follows llama.cpp's token_to_piece: control/unknown
 * tokens are empty unless `special`, user-defined tokens are their text, SPM,
 * WPM and SentencePiece-style BPE (Gemma 4) pieces turn U+2581 into a space,
 * byte tokens <0xNN> give the byte, and byte-level BPE pieces map each GPT-2
 * byte character back to its byte.
 *
 * Token pieces are appended to a working buffer (held-back bytes first);
 * complete, valid UTF-8 characters are written out, a possibly-incomplete
 * tail (a valid prefix of a character, at most 3 bytes) is kept in
 * d->pending, and bytes that can never start or continue a valid character
 * are written as U+FFFD (one per byte; a truncated character left at flush
 * is one U+FFFD), so the output is always valid UTF-8.
 */
#include "common/utf8.h"
#include "engine/vocab/vocab_impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- pieces ----------------------------------------------------------------- */

static int copy_out(char *buf, size_t cap, const char *s, size_t n)
{
    if (buf && cap)
        memcpy(buf, s, n < cap ? n : cap);
    return (int)n;
}

int vocab_token_to_piece(const vocab_t *v, int32_t id, bool special, char *buf, size_t cap)
{
    if (!v || id < 0 || id >= v->n_tokens)
        return -1;
    const vocab_tok_t *t = &v->toks[id];
    uint32_t attr = t->attr;
    if (!special && (attr & (VOCAB_ATTR_UNKNOWN | VOCAB_ATTR_CONTROL)))
        return 0;
    if (attr & (VOCAB_ATTR_UNKNOWN | VOCAB_ATTR_CONTROL | VOCAB_ATTR_USER_DEFINED))
        return copy_out(buf, cap, t->text, t->len);
    if (v->type != VOCAB_TYPE_BPE || v->escape_spaces) { /* U+2581 is a space */
        if (attr & VOCAB_ATTR_NORMAL) {
            size_t n = 0;
            for (size_t i = 0; i < t->len;) {
                if (i + 3 <= t->len && memcmp(t->text + i, "\xe2\x96\x81", 3) == 0) {
                    if (buf && n < cap)
                        buf[n] = ' ';
                    n++;
                    i += 3;
                } else {
                    if (buf && n < cap)
                        buf[n] = t->text[i];
                    n++;
                    i++;
                }
            }
            return (int)n;
        }
    }
    if (attr & VOCAB_ATTR_BYTE) { /* <0xNN> */
        if (t->len < 6)
            return 0;
        char hex[3] = {t->text[3], t->text[4], 0};
        char c = (char)strtol(hex, NULL, 16);
        return copy_out(buf, cap, &c, 1);
    }
    if (v->type == VOCAB_TYPE_BPE && !v->escape_spaces && (attr & VOCAB_ATTR_NORMAL)) {
        /* byte-level: each code point of the text stands for one byte */
        size_t n = 0;
        const unsigned char *s = (const unsigned char *)t->text;
        for (size_t i = 0; i < t->len;) {
            uint32_t cpt = s[i];
            size_t l = vocab_utf8_len(s[i]);
            if (l > t->len - i)
                l = t->len - i;
            if (l == 2)
                cpt = ((s[i] & 0x1fu) << 6) | (s[i + 1] & 0x3fu);
            else if (l == 3)
                cpt = ((s[i] & 0x0fu) << 12) | ((s[i + 1] & 0x3fu) << 6) | (s[i + 2] & 0x3fu);
            else if (l == 4)
                cpt = ((s[i] & 0x07u) << 18) | ((s[i + 1] & 0x3fu) << 12) | ((s[i + 2] & 0x3fu) << 6) |
                      (s[i + 3] & 0x3fu);
            int b = vocab_bpe_cpt_to_byte(cpt);
            if (b >= 0) {
                if (buf && n < cap)
                    buf[n] = (char)b;
                n++;
            } else {
                for (size_t k = 0; k < l; k++, n++)
                    if (buf && n < cap)
                        buf[n] = (char)s[i + k];
            }
            i += l;
        }
        return (int)n;
    }
    return 0;
}

/* ---- incremental detokenization ---------------------------------------------- */

void vocab_detok_init(vocab_detok_t *d, const vocab_t *v, bool special)
{
    memset(d, 0, sizeof *d);
    d->vocab = v;
    d->special = special;
}

static const char replacement[3] = {(char)0xEF, (char)0xBF, (char)0xBD};

/* Emits the complete characters of buf[0..n) to out; keeps an incomplete
 * tail in d->pending unless `final`. Returns bytes written. */
static size_t drain(vocab_detok_t *d, const unsigned char *buf, size_t n, bool final, char *out, size_t cap)
{
    size_t w = 0, i = 0;
    d->n_pending = 0;
    while (i < n) {
        int l = utf8_char_len(buf + i, n - i);
        if (l == 0 && !final) {
            memcpy(d->pending, buf + i, n - i);
            d->n_pending = n - i;
            break;
        }
        const char *src;
        size_t sl;
        if (l == 0) { /* final: a truncated character is one U+FFFD */
            src = replacement;
            sl = 3;
            i = n;
        } else if (l < 0) {
            src = replacement;
            sl = 3;
            i += 1;
        } else {
            src = (const char *)buf + i;
            sl = (size_t)l;
            i += (size_t)l;
        }
        if (w + sl > cap)
            break; /* out of room: drop the rest (cap too small) */
        memcpy(out + w, src, sl);
        w += sl;
    }
    return w;
}

int vocab_detok_push(vocab_detok_t *d, int32_t id, char *out, size_t cap)
{
    unsigned char buf[8 + 512];
    size_t np = d->n_pending;
    memcpy(buf, d->pending, np);
    int n = vocab_token_to_piece(d->vocab, id, d->special, (char *)buf + np, sizeof buf - np);
    if (n < 0)
        return -1;
    if ((size_t)n > sizeof buf - np)
        n = (int)(sizeof buf - np);
    return (int)drain(d, buf, np + (size_t)n, false, out, cap);
}

int vocab_detok_flush(vocab_detok_t *d, char *out, size_t cap)
{
    unsigned char buf[8];
    size_t np = d->n_pending;
    memcpy(buf, d->pending, np);
    return (int)drain(d, buf, np, true, out, cap);
}
