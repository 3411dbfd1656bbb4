/* vocab_impl.h - internals shared by the vocab_*.c files (not a public API).
 *
 * struct vocab owns every string it uses (one pool for token texts, one for
 * BPE merges) plus the hash tables built once at load time:
 *   text -> id        (open addressing over token ids)
 *   (left,right) -> merge rank   (open addressing over merge indices)
 * After vocab_load() nothing is written again, so one vocab_t may be used
 * from many threads; every tokenize call keeps its scratch state on its own.
 */
#ifndef LF_VOCAB_IMPL_H
#define LF_VOCAB_IMPL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "engine/vocab/vocab.h"

/* Token attributes (llama.cpp's llama_token_attr bits). */
enum {
    VOCAB_ATTR_UNDEFINED = 0,
    VOCAB_ATTR_UNKNOWN = 1 << 0,
    VOCAB_ATTR_UNUSED = 1 << 1,
    VOCAB_ATTR_NORMAL = 1 << 2,
    VOCAB_ATTR_CONTROL = 1 << 3,
    VOCAB_ATTR_USER_DEFINED = 1 << 4,
    VOCAB_ATTR_BYTE = 1 << 5,
    VOCAB_ATTR_LSTRIP = 1 << 7,
    VOCAB_ATTR_RSTRIP = 1 << 8,
};

typedef struct {
    const char *text; /* into v->pool, NUL-terminated */
    uint32_t len;
    float score;
    uint32_t attr;
    bool eog;
} vocab_tok_t;

typedef struct {
    const char *left; /* into v->merge_pool */
    uint32_t left_len;
    const char *right;
    uint32_t right_len;
} vocab_merge_t;

#define VOCAB_MAX_REGEX 8

struct vocab {
    vocab_type_t type;
    char *model;       /* tokenizer.ggml.model ("llama", "gpt2", "bert", "gemma4") */
    char *pre;         /* tokenizer.ggml.pre as given ("" if absent) */
    const char *pre_used; /* the pre-tokenizer actually applied */
    int32_t n_tokens;
    uint32_t max_token_len;
    vocab_tok_t *toks;
    char *pool;

    /* text -> id */
    int32_t *tt_slots; /* -1 = empty */
    uint64_t tt_mask;

    /* BPE merges: (left,right) -> rank = index */
    int32_t n_merges;
    vocab_merge_t *merges;
    char *merge_pool;
    int32_t *mg_slots;
    uint64_t mg_mask;

    int32_t bos, eos, unk, eot, eom, pad, sep;
    bool add_bos, add_eos, add_space_prefix, ignore_merges;
    /* BPE flavour (from the pre-tokenizer definition, see vocab_bpe.c) */
    bool raw_utf8, escape_spaces, newline_runs, force_bos;
    /* WordPiece normalizer (tokenizer.ggml.normalizer.*) */
    bool wpm_lowercase, wpm_strip_accents;
    /* pair layout of cross-encoders (tokenizer.ggml.add_sep_token) */
    bool add_sep;
    /* unigram (vocab_ugm.c) */
    bool ugm_escape_ws, ugm_remove_extra_ws;
    unsigned char *ugm_charsmap;  /* tokenizer.ggml.precompiled_charsmap (copy) */
    const uint32_t *ugm_xcda;     /* into ugm_charsmap */
    size_t ugm_xcda_n;
    const char *ugm_repl;         /* replacement strings, into ugm_charsmap */
    size_t ugm_repl_n;
    int32_t *ugm_user;            /* USER_DEFINED token ids */
    size_t ugm_n_user;
    uint32_t ugm_max_piece;       /* longest NORMAL/USER_DEFINED/UNUSED text */
    double ugm_unk_score;

    int32_t *special; /* control/user-defined/unknown ids, longest first */
    size_t n_special;

    pcre2_code *re[VOCAB_MAX_REGEX];
    size_t n_re;

    int32_t byte_tok[256]; /* SPM byte fallback token per byte (-1 none) */
    unsigned char byte_enc[256][3]; /* BPE: UTF-8 of the GPT-2 char of a byte; [0] = length */
};

/* FNV-1a over a byte range, continuing from h. */
static inline uint64_t vocab_hash(uint64_t h, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
#define VOCAB_HASH_SEED 0xcbf29ce484222325ULL

/* Length of the UTF-8 sequence a lead byte announces (llama.cpp's
 * unicode_len_utf8: continuation bytes count as 1). */
static inline size_t vocab_utf8_len(unsigned char c)
{
    static const unsigned char lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lookup[c >> 4];
}

/* Growable id array used by the tokenizers. */
typedef struct {
    int32_t *ids;
    size_t n, cap;
    bool oom;
} vocab_out_t;

void vocab_out_push(vocab_out_t *o, int32_t id);

/* vocab_special.c: special-token ids, EOG set, attributes and the
 * special-token list; called once tokens (and merges) are loaded. */
lf_code_t vocab_specials_load(vocab_t *v, const gguf_file_t *f, lf_err_t *err);

/* vocab_spm.c */
void vocab_spm_tokenize(const vocab_t *v, const char *text, size_t len, vocab_out_t *out);

/* vocab_ugm.c: the unigram model's tables (after tokens and specials),
 * and the tokenizer over one raw-text fragment */
lf_code_t vocab_ugm_init(vocab_t *v, const gguf_file_t *f, lf_err_t *err);
void vocab_ugm_tokenize(const vocab_t *v, const char *text, size_t len, vocab_out_t *out);

/* vocab_wpm.c: WordPiece over one raw-text fragment */
void vocab_wpm_tokenize(const vocab_t *v, const char *text, size_t len, vocab_out_t *out);

/* vocab_bpe.c */
int32_t vocab_merge_rank(const vocab_t *v, const char *l, size_t ll, const char *r, size_t rl);
/* Picks and compiles the pre-tokenizer regexes for v->pre. */
lf_code_t vocab_bpe_init(vocab_t *v, lf_err_t *err);
void vocab_bpe_tokenize(const vocab_t *v, const char *text, size_t len, vocab_out_t *out);
/* llama.cpp's lenient UTF-8 decoding (overlongs and surrogates pass, a bad
 * byte gives U+FFFD and advances by one); *i advances past the character. */
uint32_t vocab_utf8_decode(const unsigned char *s, size_t n, size_t *i);
/* GPT-2 byte-level mapping: the byte a unicode code point stands for, or -1. */
int vocab_bpe_cpt_to_byte(uint32_t cpt);

#endif
