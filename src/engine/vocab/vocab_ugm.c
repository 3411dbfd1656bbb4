/* vocab_ugm.c - the SentencePiece unigram tokenizer (tokenizer.ggml.model
 * "t5": T5, XLM-RoBERTa, bge-m3, multilingual-e5, bge-reranker-v2-m3), as
 * llama.cpp's llm_tokenizer_ugm_session.
 *
 * Normalisation first, per raw-text fragment:
 *  - a prefix that starts like a USER_DEFINED token (the longest common
 *    prefix with any of them, as llama.cpp's naive_trie::get_longest_prefix
 *    walks) is copied as is;
 *  - else the longest prefix found in the precompiled charsmap (an
 *    XOR-compressed compact double array, SentencePiece's nmt_nfkc rules)
 *    is replaced by its replacement string;
 *  - else one UTF-8 character is copied (an invalid byte becomes U+FFFD);
 *  - spaces become U+2581 (escape_whitespaces), runs of them collapse and a
 *    U+2581 starts every word with remove_extra_whitespaces, else one is put
 *    in front of the text with add_space_prefix.
 * Then Viterbi over the normalised bytes: at every character, every token
 * (NORMAL, USER_DEFINED with score 0, UNUSED) that starts there extends the
 * best path ending there; a character no token covers alone costs the
 * unknown token's score (the lowest NORMAL score minus 10); scores are
 * summed in double. Consecutive unknown tokens of the best path merge into
 * one.
 */
#include "engine/vocab/vocab_impl.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#define SP_SPACE "\xe2\x96\x81" /* U+2581 */

lf_code_t vocab_ugm_init(vocab_t *v, const gguf_file_t *f, lf_err_t *err)
{
    bool b;
    v->ugm_escape_ws = true;
    if (gguf_get_bool(f, "tokenizer.ggml.remove_extra_whitespaces", &b))
        v->ugm_remove_extra_ws = b;
    const gguf_kv_t *cm = gguf_get_arr(f, "tokenizer.ggml.precompiled_charsmap");
    if (cm) {
        if (cm->arr_type != GGUF_VT_UINT8 && cm->arr_type != GGUF_VT_INT8)
            return lf_err_set(err, LF_ERR_FORMAT, "tokenizer.ggml.precompiled_charsmap is not a byte array");
        if (cm->arr_len < 4)
            return lf_err_set(err, LF_ERR_FORMAT, "tokenizer.ggml.precompiled_charsmap is too small");
        uint32_t blob;
        memcpy(&blob, cm->data, 4);
        if ((uint64_t)blob + 4 >= cm->arr_len || blob % 4)
            return lf_err_set(err, LF_ERR_FORMAT, "tokenizer.ggml.precompiled_charsmap: bad XCDA size %u", blob);
        v->ugm_charsmap = malloc(cm->arr_len);
        if (!v->ugm_charsmap)
            return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        memcpy(v->ugm_charsmap, cm->data, cm->arr_len);
        v->ugm_xcda = (const uint32_t *)(v->ugm_charsmap + 4);
        v->ugm_xcda_n = blob / 4;
        v->ugm_repl = (const char *)v->ugm_charsmap + 4 + blob;
        v->ugm_repl_n = cm->arr_len - 4 - blob;
    }
    float min_score = FLT_MAX;
    size_t n_user = 0;
    for (int32_t id = 0; id < v->n_tokens; id++) {
        const vocab_tok_t *t = &v->toks[id];
        if (t->attr & VOCAB_ATTR_NORMAL && t->score < min_score)
            min_score = t->score;
        if (t->attr & (VOCAB_ATTR_NORMAL | VOCAB_ATTR_USER_DEFINED | VOCAB_ATTR_UNUSED) &&
            t->len > v->ugm_max_piece)
            v->ugm_max_piece = t->len;
        n_user += (t->attr & VOCAB_ATTR_USER_DEFINED) != 0;
    }
    v->ugm_unk_score = (double)(min_score - 10.0f);
    v->ugm_user = malloc((n_user ? n_user : 1) * sizeof *v->ugm_user);
    if (!v->ugm_user)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    for (int32_t id = 0; id < v->n_tokens; id++)
        if (v->toks[id].attr & VOCAB_ATTR_USER_DEFINED && v->toks[id].len > 0)
            v->ugm_user[v->ugm_n_user++] = id;
    return LF_OK;
}

/* ---- normalisation ---- */

typedef struct {
    const char *p;
    size_t n;        /* bytes of the normalised text */
    size_t consumed; /* input bytes it stands for */
} norm_t;

/* XCDA node fields (llama.cpp's xcda_array_view). */
static bool xcda_node(const vocab_t *v, size_t i, uint32_t *node)
{
    if (i >= v->ugm_xcda_n)
        return false;
    memcpy(node, v->ugm_xcda + i, 4);
    return true;
}
static uint32_t xcda_base(uint32_t n) { return (n >> 10) << ((n & (1u << 9)) >> 6); }
static uint32_t xcda_lcheck(uint32_t n) { return n & ((1u << 31) | 0xff); }
static bool xcda_leaf(uint32_t n) { return (n >> 8) & 1; }
static uint32_t xcda_value(uint32_t n) { return n & ((1u << 31) - 1); }

/* Length of the longest input prefix matched in the charsmap and the
 * offset of its replacement (0 length: none). A malformed map matches
 * nothing from the point where it is malformed. */
static size_t charsmap_match(const vocab_t *v, const unsigned char *s, size_t n, size_t *repl)
{
    size_t best = 0;
    uint32_t node;
    if (!xcda_node(v, 0, &node))
        return 0;
    uint32_t idx = xcda_base(node);
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = s[i];
        if (c == 0)
            break;
        idx ^= c;
        if (!xcda_node(v, idx, &node) || xcda_lcheck(node) != c)
            break;
        const bool leaf = xcda_leaf(node);
        idx ^= xcda_base(node);
        if (leaf) {
            uint32_t vn;
            if (!xcda_node(v, idx, &vn))
                break;
            best = i + 1;
            *repl = xcda_value(vn);
        }
    }
    return best;
}

/* llama.cpp's unicode_cpt_from_utf8 acceptance: the length of a valid
 * character at s (n bytes left), 0 if it throws. */
static size_t utf8_char_ok(const unsigned char *s, size_t n)
{
    const unsigned char c = s[0];
    size_t l = !(c & 0x80) ? 1 : !(c & 0x40) ? 0 : !(c & 0x20) ? 2 : !(c & 0x10) ? 3 : !(c & 0x08) ? 4 : 0;
    if (l == 0 || l > n)
        return 0;
    for (size_t k = 1; k < l; k++)
        if ((s[k] & 0xC0) != 0x80)
            return 0;
    return l;
}

static norm_t normalize_prefix(const vocab_t *v, const char *text, size_t len, size_t off)
{
    const unsigned char *s = (const unsigned char *)text + off;
    const size_t n = len - off;
    /* the longest prefix that is the start of some user-defined token */
    size_t user = 0;
    for (size_t i = 0; i < v->ugm_n_user; i++) {
        const vocab_tok_t *t = &v->toks[v->ugm_user[i]];
        size_t k = 0;
        while (k < t->len && k < n && (unsigned char)t->text[k] == s[k])
            k++;
        if (k > user)
            user = k;
    }
    if (user > 0)
        return (norm_t){text + off, user, user};
    if (v->ugm_xcda_n > 0) {
        size_t repl = 0, m = charsmap_match(v, s, n, &repl);
        if (m > 0 && repl < v->ugm_repl_n) {
            const char *r = v->ugm_repl + repl;
            const size_t max = v->ugm_repl_n - repl;
            size_t rl = 0;
            while (rl < max && r[rl] != '\0')
                rl++;
            if (rl < max)
                return (norm_t){r, rl, m};
        }
    }
    size_t l = utf8_char_ok(s, n);
    if (l > 0)
        return (norm_t){text + off, l, l};
    return (norm_t){"\xef\xbf\xbd", 3, 1};
}

typedef struct {
    char *p;
    size_t n, cap;
    bool oom;
} buf_t;

static void buf_put(buf_t *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        while (cap < b->n + n)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void normalize(const vocab_t *v, const char *text, size_t len, buf_t *out)
{
    const char *space = v->ugm_escape_ws ? SP_SPACE : " ";
    const size_t space_n = strlen(space);
    const bool prepend = v->add_space_prefix, merge = v->ugm_remove_extra_ws;
    bool prepended = false, in_word = false;
    for (size_t off = 0; off < len;) {
        const norm_t r = normalize_prefix(v, text, len, off);
        for (size_t i = 0; i < r.n; i++) {
            const char c = r.p[i];
            if (c != ' ') {
                if (!in_word) {
                    in_word = true;
                    if ((prepend && !prepended) || merge) {
                        buf_put(out, space, space_n);
                        prepended = true;
                    }
                }
                buf_put(out, &c, 1);
            } else {
                in_word = false;
                if (!merge)
                    buf_put(out, space, space_n);
            }
        }
        off += r.consumed;
    }
}

/* ---- Viterbi ---- */

typedef struct {
    int32_t id;
    size_t from;  /* start offset of this token */
    double score; /* best score of the text up to here */
} best_t;

/* The token of piece text [p, p+n) the unigram matcher knows, or -1. */
static int32_t piece_id(const vocab_t *v, const char *p, size_t n)
{
    const int32_t id = vocab_find(v, p, n);
    if (id < 0)
        return -1;
    const uint32_t a = v->toks[id].attr;
    return a & (VOCAB_ATTR_NORMAL | VOCAB_ATTR_USER_DEFINED | VOCAB_ATTR_UNUSED) ? id : -1;
}

void vocab_ugm_tokenize(const vocab_t *v, const char *text, size_t len, vocab_out_t *out)
{
    buf_t nb = {0};
    normalize(v, text, len, &nb);
    if (nb.oom) {
        free(nb.p);
        out->oom = true;
        return;
    }
    const size_t n = nb.n;
    if (n == 0) {
        free(nb.p);
        return;
    }
    best_t *best = malloc((n + 1) * sizeof *best);
    int32_t *rev = malloc((n + 1) * sizeof *rev);
    if (!best || !rev) {
        free(best);
        free(rev);
        free(nb.p);
        out->oom = true;
        return;
    }
    for (size_t i = 0; i <= n; i++)
        best[i] = (best_t){v->unk, 0, -DBL_MAX};
    best[0].score = 0.0;
    const char *s = nb.p;
    for (size_t off = 0; off < n;) {
        size_t cl = vocab_utf8_len((unsigned char)s[off]);
        if (cl > n - off)
            cl = n - off;
        const best_t cur = best[off];
        bool whole_char = false;
        const size_t max = v->ugm_max_piece < n - off ? v->ugm_max_piece : n - off;
        for (size_t l = 1; l <= max; l++) {
            const int32_t id = piece_id(v, s + off, l);
            if (id < 0)
                continue;
            if (l == cl)
                whole_char = true;
            const double ts = v->toks[id].attr & VOCAB_ATTR_USER_DEFINED ? 0.0 : (double)v->toks[id].score;
            const double cand = cur.score + ts;
            if (cand > best[off + l].score)
                best[off + l] = (best_t){id, off, cand};
        }
        if (!whole_char) {
            const double cand = cur.score + v->ugm_unk_score;
            if (cand > best[off + cl].score)
                best[off + cl] = (best_t){v->unk, off, cand};
        }
        off += cl;
    }
    /* back from the end; runs of unknown tokens become one */
    size_t nr = 0;
    bool prev_unk = false;
    for (size_t at = n;;) {
        const best_t *b = &best[at];
        const bool unk = b->id == v->unk;
        if (!(prev_unk && unk))
            rev[nr++] = b->id;
        if (b->from == 0)
            break;
        prev_unk = unk;
        at = b->from;
    }
    while (nr > 0)
        vocab_out_push(out, rev[--nr]);
    free(rev);
    free(best);
    free(nb.p);
}
