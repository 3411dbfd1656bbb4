/* vocab_wpm.c - WordPiece (tokenizer.ggml.model "bert"), as llama.cpp's
 * llm_tokenizer_wpm_session with its BertNormalizer options
 * (tokenizer.ggml.normalizer.lowercase, default true, and .strip_accents,
 * default = lowercase): with strip_accents each code point is reduced to the
 * first code point of its NFD form and accent marks (\p{M}) are dropped;
 * with lowercase it is lowercased. Whitespace splits words, control
 * characters vanish, punctuation, ASCII symbols and CJK ideographs become
 * one-character words. Each word gets the phantom-space prefix U+2581 and is
 * cut greedily into the longest vocabulary entries; a word that cannot be
 * cut completely becomes the unknown token.
 */
#include "engine/vocab/vocab_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

#include "engine/vocab/unicode_tables.h"

static bool is_chinese_char(uint32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) ||
           (c >= 0x2B920 && c <= 0x2CEAF) || /* sic: 0x2B920 as in the HF rust code */
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static void wpm_word(const vocab_t *v, const char *w, size_t n, vocab_out_t *out)
{
    size_t start = out->n;
    for (size_t i = 0; i < n;) {
        size_t hi = i + v->max_token_len + 1 < n ? i + v->max_token_len + 1 : n;
        bool match = false;
        for (size_t j = hi; j > i; j--) {
            int32_t id = vocab_find(v, w + i, j - i);
            if (id >= 0) {
                vocab_out_push(out, id);
                match = true;
                i = j;
                break;
            }
        }
        if (!match) {
            out->n = start; /* discard the whole word */
            break;
        }
    }
    if (out->n == start && v->unk >= 0)
        vocab_out_push(out, v->unk);
}

void vocab_wpm_tokenize(const vocab_t *v, const char *text, size_t len, vocab_out_t *out)
{
    const unsigned char *in = (const unsigned char *)text;
    /* a word: U+2581 + up to 4 bytes per input byte */
    char *word = malloc(4 * len + 4);
    if (!word) {
        out->oom = true;
        return;
    }
    memcpy(word, "\xe2\x96\x81", 3);
    size_t wn = 3;
    for (size_t i = 0; i < len && !out->oom;) {
        uint32_t c = vocab_utf8_decode(in, len, &i);
        if (v->wpm_strip_accents)
            c = unicode_nfd_first(c);
        if (unicode_is_space(c)) {
            if (wn > 3)
                wpm_word(v, word, wn, out);
            wn = 3;
            continue;
        }
        if (c == 0 || c == 0xFFFD || unicode_is_control(c))
            continue;
        if (v->wpm_strip_accents && unicode_is_mark(c))
            continue;
        unsigned char buf[4];
        size_t bl = utf8_encode(v->wpm_lowercase ? unicode_to_lower(c) : c, buf);
        if (unicode_is_punct(c) || (c < 0x7F && unicode_is_symbol(c)) || is_chinese_char(c)) {
            if (wn > 3)
                wpm_word(v, word, wn, out);
            memcpy(word + 3, buf, bl);
            wpm_word(v, word, 3 + bl, out);
            wn = 3;
        } else {
            memcpy(word + wn, buf, bl);
            wn += bl;
        }
    }
    if (wn > 3 && !out->oom)
        wpm_word(v, word, wn, out);
    free(word);
}
