/* vocab_bpe.c - BPE with merges: byte-level (tokenizer.ggml.model "gpt2")
 * and SentencePiece-style ("gemma4" and the pre-tokenizers marked raw_utf8).
 *
 * Pipeline (llama.cpp's unicode_regex_split + llm_tokenizer_bpe_session):
 *  1. decode the text to code points the lenient way llama.cpp does (bad
 *     bytes become U+FFFD); SentencePiece-style vocabularies turn ' ' into
 *     U+2581 here;
 *  2. split it with each pre-tokenizer regex in turn (text between matches
 *     is kept as its own piece), using PCRE2 with UTF+UCP. Non-ASCII
 *     whitespace is shown to the regex as U+000B, as llama.cpp does for its
 *     std::regex fallback, so \s and literal classes behave the same;
 *  3. map each piece's bytes to GPT-2 "byte characters" (byte-level) or keep
 *     the UTF-8 (SentencePiece-style) and merge adjacent symbols by merge
 *     rank (lowest first, leftmost on ties); a symbol that is not a token
 *     falls back to one token per byte (its GPT-2 character, or <0xNN>).
 * The compiled regexes are shared (read-only); match data is per call.
 */
#include "engine/vocab/vocab_impl.h"
#include "engine/vocab/unicode_tables.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

/* ---- pre-tokenizers ------------------------------------------------------ */

#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RE_LLAMA3                                                                                       \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}" \
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN2                                                                                     \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}" \
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* Qwen3.5: as Qwen2, but letter runs take combining marks (\p{M}) too */
#define RE_QWEN35                                                                                             \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}" \
    "| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* SentencePiece-style BPE (Gemma 4): only newline runs are split off */
#define RE_NEWLINES "[^\\n]+|[\\n]+"
#define RE_CJK "[一-龥ࠀ-一가-퟿]+"
#define RE_PORO " ?[^(\\s|.,!?…。，、।۔،)]+"

typedef struct {
    const char *names; /* '|'-separated tokenizer.ggml.pre values */
    const char *re[VOCAB_MAX_REGEX];
    bool ignore_merges; /* a piece that is a token is taken whole */
    bool add_bos;       /* add BOS unless the file says otherwise */
    bool no_bos;        /* the vocabulary has no BOS token */
    bool raw_utf8;      /* merges over raw UTF-8, <0xNN> byte fallback */
    bool escape_spaces; /* ' ' becomes U+2581 before splitting */
    bool newline_runs;  /* a run of newlines that is a token is taken whole */
    bool force_bos;     /* add BOS whatever the file says */
} pre_def_t;

static const pre_def_t pre_defs[] = {
    /* note: unlike falcon's, the default punctuation class has no backtick */
    {"default", .re = {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}},
    {"llama3|llama-v3|llama-bpe|falcon3|falcon-h1|pixtral|midm-2.0|lfm2|jina-v5-nano",
     .re = {RE_LLAMA3},
     .ignore_merges = true,
     .add_bos = true},
    {"dbrx|smaug-bpe", .re = {RE_LLAMA3}},
    {"deepseek-llm",
     .re = {"[\r\n]",
      "\\s?["
      "A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"
      "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}"
      "\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}"
      "\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}"
      "\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}"
      "\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}"
      "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}"
      "\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}"
      "\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}"
      "\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}"
      "\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}"
      "\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}"
      "\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}"
      "\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}"
      "\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}"
      "\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}"
      "\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}"
      "\\x{1E900}-\\x{1E943}"
      "]+",
      "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", RE_CJK, "\\p{N}+"}},
    {"deepseek-v3|hunyuan-dense|joyai-llm|hy_v4",
     .re = {"\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
      "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"}},
    {"deepseek-coder", .re = {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RE_CJK, "\\p{N}"}},
    {"falcon", .re = {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]"}},
    {"starcoder|refact|command-r|smollm|codeshell|exaone|minerva-7b|mellum2", .re = {"\\p{N}", RE_GPT2}},
    {"gpt-2|phi-2|jina-es|jina-de|gigachat|jina-v1-en|jina-v2-es|jina-v2-de|jina-v2-code|roberta-bpe|mpt|olmo|jais|"
     "a.x-4.0|mellum|modern-bert|exaone4|trillion|granite-docling",
     .re = {RE_GPT2}},
    {"qwen2|deepseek-r1-qwen|megrez|stablelm2|kormo|f2llmv2|hunyuan|solar-open|grok-2", .re = {RE_QWEN2}},
    {"qwen35", .re = {RE_QWEN35}},
    /* SentencePiece-style BPE: spaces become U+2581, merges run over raw
     * UTF-8 on whole lines, unknown bytes fall back to <0xNN> tokens.
     * "gemma4" is also what tokenizer.ggml.model "gemma4" implies. */
    {"gemma4|granite-embed-multi-311m",
     .re = {RE_NEWLINES},
     .raw_utf8 = true,
     .escape_spaces = true,
     .newline_runs = true,
     .force_bos = true},
    {"sarvam-moe", .re = {RE_NEWLINES}, .raw_utf8 = true, .escape_spaces = true},
    {"poro-chat|bloom|gpt3-finnish", .re = {RE_PORO}},
    {"chatglm-bpe|glm4", .re = {RE_LLAMA3}, .no_bos = true},
    {"viking", .re = {RE_PORO, "\\p{N}"}},
    {"tekken",
     .re = {"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])"
      "([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     .ignore_merges = true,
     .add_bos = true},
    /* newer than c392e509, cheap to have: llama.cpp's adaptation of the
     * o200k pattern (case classes via lookaheads, as its std::regex needs) */
    {"gpt-4o|llama4|kanana2|talkie|minimax-m2",
     .re = {"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+"
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
      "|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*"
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
      "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"chameleon",
     .re = {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
      "[\\p{P}!-/:-@\\[-`{-~]", RE_GPT2}, .add_bos = true},
};

static bool name_in(const char *names, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = names; *p;) {
        const char *e = strchr(p, '|');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && memcmp(p, name, n) == 0)
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

/* GPT-2 bytes_to_unicode(): printable bytes map to themselves, the other 68
 * to U+0100 upwards in byte order. */
static bool byte_printable(int b)
{
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

static uint32_t byte_to_cpt(int b)
{
    if (byte_printable(b))
        return (uint32_t)b;
    uint32_t n = 0;
    for (int i = 0; i < b; i++)
        if (!byte_printable(i))
            n++;
    return 256 + n;
}

int vocab_bpe_cpt_to_byte(uint32_t cpt)
{
    if (cpt < 256)
        return byte_printable((int)cpt) ? (int)cpt : -1;
    if (cpt >= 256 + 68)
        return -1;
    uint32_t n = cpt - 256;
    for (int b = 0; b < 256; b++)
        if (!byte_printable(b) && n-- == 0)
            return b;
    return -1;
}

lf_code_t vocab_bpe_init(vocab_t *v, lf_err_t *err)
{
    const pre_def_t *def = NULL;
    for (size_t i = 0; i < sizeof pre_defs / sizeof pre_defs[0] && !def; i++)
        if (name_in(pre_defs[i].names, v->pre))
            def = &pre_defs[i];
    if (!def) {
        fprintf(stderr, "warning: %s pre-tokenizer '%s', using 'default'\n",
                v->pre[0] ? "unknown" : "missing", v->pre);
        def = &pre_defs[0];
        v->pre_used = "default";
    } else {
        v->pre_used = v->pre;
    }
    v->ignore_merges = def->ignore_merges;
    v->raw_utf8 = def->raw_utf8;
    v->escape_spaces = def->escape_spaces;
    v->newline_runs = def->newline_runs;
    v->force_bos = def->force_bos;
    /* RoBERTa-style BPE vocabularies separate a pair with </s> (llama.cpp) */
    if (name_in("jina-v1-en|jina-v2-code|roberta-bpe", v->pre))
        v->add_sep = true;
    if (def->add_bos)
        v->add_bos = true;
    if (def->no_bos)
        v->bos = -1;
    for (size_t i = 0; i < VOCAB_MAX_REGEX && def->re[i]; i++) {
        int ec;
        PCRE2_SIZE eo;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)def->re[i], PCRE2_ZERO_TERMINATED,
                                       PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY | PCRE2_NO_UTF_CHECK, &ec,
                                       &eo, NULL);
        if (!re) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(ec, msg, sizeof msg);
            return lf_err_set(err, LF_ERR_INTERNAL, "pre-tokenizer regex %zu of '%s': %s at %zu", i,
                              v->pre_used, (const char *)msg, (size_t)eo);
        }
        (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* interpreter if no JIT */
        v->re[v->n_re++] = re;
    }
    for (int b = 0; b < 256; b++) {
        uint32_t c = byte_to_cpt(b);
        if (c < 0x80) {
            v->byte_enc[b][0] = 1;
            v->byte_enc[b][1] = (unsigned char)c;
        } else {
            v->byte_enc[b][0] = 2;
            v->byte_enc[b][1] = (unsigned char)(0xC0 | (c >> 6));
            v->byte_enc[b][2] = (unsigned char)(0x80 | (c & 0x3F));
        }
    }
    return LF_OK;
}

/* ---- code points ------------------------------------------------------------ */

/* llama.cpp unicode_cpt_from_utf8 + its U+FFFD fallback: returns the code
 * point and advances *i; lenient (overlongs and surrogates pass). */
uint32_t vocab_utf8_decode(const unsigned char *s, size_t n, size_t *i)
{
    size_t o = *i;
    unsigned char c = s[o];
    if (!(c & 0x80)) {
        *i = o + 1;
        return c;
    }
    if ((c & 0x40) && !(c & 0x20)) {
        if (o + 1 < n && (s[o + 1] & 0xC0) == 0x80) {
            *i = o + 2;
            return ((c & 0x1Fu) << 6) | (s[o + 1] & 0x3Fu);
        }
    } else if ((c & 0x40) && !(c & 0x10)) {
        if (o + 2 < n && (s[o + 1] & 0xC0) == 0x80 && (s[o + 2] & 0xC0) == 0x80) {
            *i = o + 3;
            return ((c & 0x0Fu) << 12) | ((s[o + 1] & 0x3Fu) << 6) | (s[o + 2] & 0x3Fu);
        }
    } else if ((c & 0x40) && !(c & 0x08)) {
        if (o + 3 < n && (s[o + 1] & 0xC0) == 0x80 && (s[o + 2] & 0xC0) == 0x80 && (s[o + 3] & 0xC0) == 0x80) {
            *i = o + 4;
            return ((c & 0x07u) << 18) | ((s[o + 1] & 0x3Fu) << 12) | ((s[o + 2] & 0x3Fu) << 6) |
                   (s[o + 3] & 0x3Fu);
        }
    }
    *i = o + 1;
    return 0xFFFD;
}

/* ---- per-call state ------------------------------------------------------------ */

typedef struct {
    int prev, next;
    size_t off, n;
} sym_t;

typedef struct {
    int left, right;
    int32_t rank;
    size_t size;
} bigram_t;

typedef struct {
    /* code points of the fragment */
    size_t n_cpt;
    unsigned char *t;  /* re-encoded text (what gets tokenized) */
    size_t *t_off;     /* n_cpt + 1 offsets into t */
    unsigned char *s;  /* regex subject */
    size_t *s_off;     /* n_cpt + 1 offsets into s */
    size_t *s2c;       /* subject byte offset -> code point index */
    /* pieces as code point ranges */
    size_t *seg, n_seg, cap_seg;
    size_t *seg2, n_seg2, cap_seg2;
    /* BPE of one word */
    char *word;
    size_t word_cap;
    sym_t *syms;
    size_t sym_cap;
    bigram_t *heap;
    size_t heap_n, heap_cap;
    bool oom;
} bpe_state_t;

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return false;
    *p = q;
    *cap = c;
    return true;
}

static void seg_push(bpe_state_t *st, size_t a, size_t n)
{
    if (n == 0 || st->oom)
        return;
    if (!grow((void **)&st->seg2, &st->cap_seg2, 2 * (st->n_seg2 + 1), sizeof(size_t))) {
        st->oom = true;
        return;
    }
    st->seg2[2 * st->n_seg2] = a;
    st->seg2[2 * st->n_seg2 + 1] = n;
    st->n_seg2++;
}

static void split_one(bpe_state_t *st, pcre2_code *re, pcre2_match_data *md)
{
    st->n_seg2 = 0;
    for (size_t k = 0; k < st->n_seg && !st->oom; k++) {
        size_t c0 = st->seg[2 * k], cn = st->seg[2 * k + 1];
        const unsigned char *subj = st->s + st->s_off[c0];
        size_t slen = st->s_off[c0 + cn] - st->s_off[c0];
        size_t pos = 0, last = 0; /* byte offsets in subj */
        uint32_t opts = PCRE2_NO_UTF_CHECK;
        while (pos <= slen) {
            int rc = pcre2_match(re, subj, slen, pos, opts, md, NULL);
            if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !(opts & PCRE2_NO_JIT)) {
                opts |= PCRE2_NO_JIT;
                continue;
            }
            if (rc < 0)
                break;
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            size_t ms = ov[0], me = ov[1];
            if (me <= ms) { /* empty match: step one character */
                if (ms >= slen)
                    break;
                pos = ms + 1;
                while (pos < slen && (subj[pos] & 0xC0) == 0x80)
                    pos++;
                continue;
            }
            size_t base = st->s_off[c0];
            if (ms > last)
                seg_push(st, st->s2c[base + last], st->s2c[base + ms] - st->s2c[base + last]);
            seg_push(st, st->s2c[base + ms], st->s2c[base + me] - st->s2c[base + ms]);
            last = pos = me;
        }
        if (last < slen) {
            size_t base = st->s_off[c0];
            seg_push(st, st->s2c[base + last], c0 + cn - st->s2c[base + last]);
        }
    }
    size_t *tp = st->seg;
    size_t tc = st->cap_seg;
    st->seg = st->seg2;
    st->cap_seg = st->cap_seg2;
    st->n_seg = st->n_seg2;
    st->seg2 = tp;
    st->cap_seg2 = tc;
}

/* ---- BPE merge of one word -------------------------------------------------------- */

static bool bg_before(const bigram_t *x, const bigram_t *y)
{
    return x->rank < y->rank || (x->rank == y->rank && x->left < y->left);
}

static void heap_push(bpe_state_t *st, bigram_t b)
{
    if (!grow((void **)&st->heap, &st->heap_cap, st->heap_n + 1, sizeof b)) {
        st->oom = true;
        return;
    }
    size_t i = st->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!bg_before(&b, &st->heap[p]))
            break;
        st->heap[i] = st->heap[p];
        i = p;
    }
    st->heap[i] = b;
}

static bigram_t heap_pop(bpe_state_t *st)
{
    bigram_t top = st->heap[0], last = st->heap[--st->heap_n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= st->heap_n)
            break;
        if (c + 1 < st->heap_n && bg_before(&st->heap[c + 1], &st->heap[c]))
            c++;
        if (!bg_before(&st->heap[c], &last))
            break;
        st->heap[i] = st->heap[c];
        i = c;
    }
    if (st->heap_n > 0)
        st->heap[i] = last;
    return top;
}

static void add_bigram(const vocab_t *v, bpe_state_t *st, int l, int r)
{
    if (l < 0 || r < 0)
        return;
    const sym_t *a = &st->syms[l], *b = &st->syms[r];
    int32_t rank = vocab_merge_rank(v, st->word + a->off, a->n, st->word + b->off, b->n);
    if (rank < 0)
        return;
    heap_push(st, (bigram_t){l, r, rank, a->n + b->n});
}

static bool all_newlines(const char *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (w[i] != '\n')
            return false;
    return n > 0;
}

/* The token of one byte no token covers: its GPT-2 character in byte-level
 * vocabularies, its <0xNN> token in raw UTF-8 ones; -1 if absent. */
static int32_t byte_fallback(const vocab_t *v, unsigned char b)
{
    if (!v->raw_utf8)
        return vocab_find(v, (const char *)&b, 1);
    char hex[7];
    snprintf(hex, sizeof hex, "<0x%02X>", b);
    return vocab_find(v, hex, 6);
}

static void bpe_word(const vocab_t *v, bpe_state_t *st, size_t wlen, vocab_out_t *out)
{
    const char *w = st->word;
    if (v->ignore_merges || (v->newline_runs && all_newlines(w, wlen))) {
        int32_t id = vocab_find(v, w, wlen);
        if (id >= 0) {
            vocab_out_push(out, id);
            return;
        }
    }
    if (!grow((void **)&st->syms, &st->sym_cap, wlen, sizeof(sym_t))) {
        st->oom = true;
        return;
    }
    int count = 0;
    for (size_t off = 0; off < wlen;) {
        size_t l = vocab_utf8_len((unsigned char)w[off]);
        if (l > wlen - off)
            l = wlen - off;
        st->syms[count] = (sym_t){count - 1, off + l == wlen ? -1 : count + 1, off, l};
        off += l;
        count++;
    }
    st->heap_n = 0;
    for (int i = 1; i < count; i++)
        add_bigram(v, st, i - 1, i);
    while (st->heap_n > 0 && !st->oom) {
        bigram_t b = heap_pop(st);
        sym_t *l = &st->syms[b.left], *r = &st->syms[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size || l->next != b.right)
            continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            st->syms[r->next].prev = b.left;
        add_bigram(v, st, l->prev, b.left);
        add_bigram(v, st, b.left, l->next);
    }
    for (int i = 0; i < count; i++) {
        const sym_t *s = &st->syms[i];
        if (s->n == 0)
            continue;
        int32_t id = vocab_find(v, w + s->off, s->n);
        if (id >= 0) {
            vocab_out_push(out, id);
            continue;
        }
        for (size_t j = 0; j < s->n; j++) {
            int32_t bid = byte_fallback(v, (unsigned char)w[s->off + j]);
            if (bid >= 0)
                vocab_out_push(out, bid);
        }
    }
}

static void state_free(bpe_state_t *st)
{
    free(st->t);
    free(st->t_off);
    free(st->s);
    free(st->s_off);
    free(st->s2c);
    free(st->seg);
    free(st->seg2);
    free(st->word);
    free(st->syms);
    free(st->heap);
}

void vocab_bpe_tokenize(const vocab_t *v, const char *text, size_t len, vocab_out_t *out)
{
    bpe_state_t st = {0};
    const unsigned char *in = (const unsigned char *)text;
    /* every input byte yields at most one code point of at most 3 bytes */
    st.t = malloc(3 * len + 1);
    st.s = malloc(3 * len + 1);
    st.t_off = malloc((len + 1) * sizeof(size_t));
    st.s_off = malloc((len + 1) * sizeof(size_t));
    st.s2c = malloc((3 * len + 1) * sizeof(size_t));
    if (!st.t || !st.s || !st.t_off || !st.s_off || !st.s2c) {
        out->oom = true;
        state_free(&st);
        return;
    }
    size_t tn = 0, sn = 0, nc = 0;
    for (size_t i = 0; i < len;) {
        uint32_t c = vocab_utf8_decode(in, len, &i);
        if (c > 0x10FFFF)
            c = 0xFFFD;
        else if (c == ' ' && v->escape_spaces)
            c = 0x2581; /* U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's space */
        st.t_off[nc] = tn;
        st.s_off[nc] = sn;
        unsigned char buf[4];
        size_t bl = utf8_encode(c, buf);
        memcpy(st.t + tn, buf, bl);
        tn += bl;
        uint32_t sc = c;
        if (c >= 0xD800 && c <= 0xDFFF)
            sc = 0xFFFD; /* keep the regex subject valid UTF-8 */
        else if (c > 0x7F && unicode_is_space(c))
            sc = 0x0B;
        bl = utf8_encode(sc, buf);
        for (size_t k = 0; k < bl; k++)
            st.s2c[sn + k] = nc;
        memcpy(st.s + sn, buf, bl);
        sn += bl;
        nc++;
    }
    st.t_off[nc] = tn;
    st.s_off[nc] = sn;
    st.s2c[sn] = nc;
    st.n_cpt = nc;

    if (!grow((void **)&st.seg, &st.cap_seg, 2, sizeof(size_t))) {
        out->oom = true;
        state_free(&st);
        return;
    }
    st.seg[0] = 0;
    st.seg[1] = nc;
    st.n_seg = nc ? 1 : 0;
    for (size_t r = 0; r < v->n_re && !st.oom; r++) {
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(v->re[r], NULL);
        if (!md) {
            st.oom = true;
            break;
        }
        split_one(&st, v->re[r], md);
        pcre2_match_data_free(md);
    }
    for (size_t k = 0; k < st.n_seg && !st.oom && !out->oom; k++) {
        size_t a = st.t_off[st.seg[2 * k]], b = st.t_off[st.seg[2 * k] + st.seg[2 * k + 1]];
        if (!grow((void **)&st.word, &st.word_cap, 2 * (b - a) + 1, 1)) {
            st.oom = true;
            break;
        }
        size_t wl = 0;
        if (v->raw_utf8) {
            memcpy(st.word, st.t + a, b - a);
            wl = b - a;
        } else {
            for (size_t i = a; i < b; i++) {
                const unsigned char *e = v->byte_enc[st.t[i]];
                memcpy(st.word + wl, e + 1, e[0]);
                wl += e[0];
            }
        }
        bpe_word(v, &st, wl, out);
    }
    if (st.oom)
        out->oom = true;
    state_free(&st);
}
