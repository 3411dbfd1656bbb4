/* vocab.c - loading a vocabulary from GGUF metadata (tokens, merges, the
 * tokenizer model and its defaults), the special-token partition of the
 * input and the tokenize entry point.
 *
 * Mirrors llama.cpp's src/llama-vocab.cpp (defaults per tokenizer model,
 * tokenizer_st_partition: special tokens longest first); special-token
 * detection lives in vocab_special.c, the tokenizer models in vocab_spm.c,
 * vocab_bpe.c and vocab_wpm.c.
 */
#include "engine/vocab/vocab_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vocab_out_push(vocab_out_t *o, int32_t id)
{
    if (o->oom)
        return;
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 64;
        int32_t *p = realloc(o->ids, cap * sizeof *p);
        if (!p) {
            o->oom = true;
            return;
        }
        o->ids = p;
        o->cap = cap;
    }
    o->ids[o->n++] = id;
}

/* ---- text -> id ------------------------------------------------------- */

int32_t vocab_find(const vocab_t *v, const char *text, size_t len)
{
    if (!v || !v->tt_slots)
        return -1;
    uint64_t i = vocab_hash(VOCAB_HASH_SEED, text, len) & v->tt_mask;
    for (;;) {
        int32_t id = v->tt_slots[i];
        if (id < 0)
            return -1;
        const vocab_tok_t *t = &v->toks[id];
        if (t->len == len && memcmp(t->text, text, len) == 0)
            return id;
        i = (i + 1) & v->tt_mask;
    }
}

static bool build_text_index(vocab_t *v)
{
    uint64_t cap = 16;
    while (cap < (uint64_t)v->n_tokens * 2)
        cap <<= 1;
    v->tt_slots = malloc(cap * sizeof *v->tt_slots);
    if (!v->tt_slots)
        return false;
    memset(v->tt_slots, 0xff, cap * sizeof *v->tt_slots);
    v->tt_mask = cap - 1;
    for (int32_t id = 0; id < v->n_tokens; id++) {
        const vocab_tok_t *t = &v->toks[id];
        uint64_t i = vocab_hash(VOCAB_HASH_SEED, t->text, t->len) & v->tt_mask;
        for (;;) {
            int32_t cur = v->tt_slots[i];
            if (cur < 0) {
                v->tt_slots[i] = id;
                break;
            }
            /* duplicate text: the later id wins, as in llama.cpp */
            if (v->toks[cur].len == t->len && memcmp(v->toks[cur].text, t->text, t->len) == 0) {
                v->tt_slots[i] = id;
                break;
            }
            i = (i + 1) & v->tt_mask;
        }
    }
    return true;
}

/* ---- loading ---------------------------------------------------------- */

static lf_code_t load_tokens(vocab_t *v, const gguf_file_t *f, lf_err_t *err)
{
    const gguf_kv_t *tk = gguf_get_arr(f, "tokenizer.ggml.tokens");
    if (!tk || tk->arr_type != GGUF_VT_STRING)
        return lf_err_set(err, LF_ERR_FORMAT, "tokenizer.ggml.tokens missing or not a string array");
    if (tk->arr_len == 0 || tk->arr_len > INT32_MAX / 4)
        return lf_err_set(err, LF_ERR_FORMAT, "tokenizer.ggml.tokens has %llu entries",
                          (unsigned long long)tk->arr_len);
    int32_t n = (int32_t)tk->arr_len;
    const gguf_kv_t *sc = gguf_get_arr(f, "tokenizer.ggml.scores");
    if (sc && ((sc->arr_type != GGUF_VT_FLOAT32 && sc->arr_type != GGUF_VT_INT32) || sc->arr_len < tk->arr_len))
        return lf_err_set(err, LF_ERR_FORMAT, "tokenizer.ggml.scores has a bad type or length");
    const gguf_kv_t *tt = gguf_get_arr(f, "tokenizer.ggml.token_type");
    if (tt && ((tt->arr_type != GGUF_VT_INT32 && tt->arr_type != GGUF_VT_UINT32) || tt->arr_len < tk->arr_len))
        return lf_err_set(err, LF_ERR_FORMAT, "tokenizer.ggml.token_type has a bad type or length");

    size_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        if (tk->strs[i].len > UINT32_MAX / 2)
            return lf_err_set(err, LF_ERR_FORMAT, "token %d is too long", i);
        total += tk->strs[i].len + 1;
    }
    v->toks = calloc((size_t)n, sizeof *v->toks);
    v->pool = malloc(total ? total : 1);
    if (!v->toks || !v->pool)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory loading %d tokens", n);
    v->n_tokens = n;
    char *p = v->pool;
    for (int32_t i = 0; i < n; i++) {
        vocab_tok_t *t = &v->toks[i];
        memcpy(p, tk->strs[i].ptr, tk->strs[i].len);
        p[tk->strs[i].len] = '\0';
        t->text = p;
        t->len = (uint32_t)tk->strs[i].len;
        p += t->len + 1;
        if (t->len > v->max_token_len)
            v->max_token_len = t->len;
        if (sc) {
            if (sc->arr_type == GGUF_VT_FLOAT32)
                memcpy(&t->score, (const char *)sc->data + 4 * (size_t)i, 4);
            else {
                int32_t s;
                memcpy(&s, (const char *)sc->data + 4 * (size_t)i, 4);
                t->score = (float)s;
            }
        }
        t->attr = VOCAB_ATTR_NORMAL;
        if (tt) {
            int32_t ty;
            memcpy(&ty, (const char *)tt->data + 4 * (size_t)i, 4);
            switch (ty) {
            case 1: t->attr = VOCAB_ATTR_NORMAL; break;
            case 2: t->attr = VOCAB_ATTR_UNKNOWN; break;
            case 3: t->attr = VOCAB_ATTR_CONTROL; break;
            case 4: t->attr = VOCAB_ATTR_USER_DEFINED; break;
            case 5: t->attr = VOCAB_ATTR_UNUSED; break;
            case 6: t->attr = VOCAB_ATTR_BYTE; break;
            default: t->attr = VOCAB_ATTR_UNDEFINED; break;
            }
        }
    }
    if (!build_text_index(v))
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory building the token index");
    return LF_OK;
}

static lf_code_t load_type(vocab_t *v, const gguf_file_t *f, lf_err_t *err)
{
    gguf_str_t model;
    if (!gguf_get_str(f, "tokenizer.ggml.model", &model))
        return lf_err_set(err, LF_ERR_FORMAT, "no vocabulary (tokenizer.ggml.model missing)");
    gguf_str_t pre;
    v->pre = gguf_get_str(f, "tokenizer.ggml.pre", &pre) ? gguf_str_dup(pre) : strdup("");
    if (!v->pre)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    v->model = gguf_str_dup(model);
    if (!v->model)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    v->eot = v->eom = v->pad = v->sep = -1;
    if (gguf_str_eq(model, "llama")) {
        v->type = VOCAB_TYPE_SPM;
        v->bos = 1, v->eos = 2, v->unk = 0;
        v->add_space_prefix = true;
        v->add_bos = true;
        v->pre_used = "default";
    } else if (gguf_str_eq(model, "gpt2")) {
        v->type = VOCAB_TYPE_BPE;
        v->bos = 11, v->eos = 11, v->unk = -1;
    } else if (gguf_str_eq(model, "bert")) {
        v->type = VOCAB_TYPE_WPM;
        v->bos = 101, v->eos = -1, v->unk = 100, v->sep = 102, v->pad = 0;
        v->add_bos = true;
        v->add_sep = true;
        v->pre_used = "default";
    } else if (gguf_str_eq(model, "t5")) {
        /* SentencePiece unigram; its keys usually override these ids */
        v->type = VOCAB_TYPE_UGM;
        v->bos = -1, v->eos = 1, v->unk = 2, v->pad = 0;
        v->add_eos = true;
        v->pre_used = "default";
    } else if (gguf_str_eq(model, "gemma4")) {
        /* BPE with merges over SentencePiece-style text; the model implies
         * its pre-tokenizer, whatever tokenizer.ggml.pre says */
        v->type = VOCAB_TYPE_BPE;
        v->bos = v->eos = v->unk = -1;
        free(v->pre);
        v->pre = strdup("gemma4");
        if (!v->pre)
            return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    } else {
        char buf[64];
        size_t l = model.len < 63 ? (size_t)model.len : 63;
        memcpy(buf, model.ptr, l);
        buf[l] = '\0';
        return lf_err_set(err, LF_ERR_UNSUPPORTED, "unknown tokenizer model '%s'", buf);
    }
    bool b;
    if (gguf_get_bool(f, "tokenizer.ggml.add_space_prefix", &b))
        v->add_space_prefix = b;
    return LF_OK;
}

static lf_code_t load_merges(vocab_t *v, const gguf_file_t *f, lf_err_t *err)
{
    const gguf_kv_t *mk = gguf_get_arr(f, "tokenizer.ggml.merges");
    if (!mk || mk->arr_type != GGUF_VT_STRING)
        return lf_err_set(err, LF_ERR_FORMAT, "tokenizer.ggml.merges missing or not a string array");
    if (mk->arr_len > INT32_MAX / 4)
        return lf_err_set(err, LF_ERR_FORMAT, "too many merges");
    int32_t n = (int32_t)mk->arr_len;
    size_t total = 0;
    for (int32_t i = 0; i < n; i++)
        total += mk->strs[i].len + 1;
    v->merges = calloc(n ? (size_t)n : 1, sizeof *v->merges);
    v->merge_pool = malloc(total ? total : 1);
    uint64_t cap = 16;
    while (cap < (uint64_t)n * 2)
        cap <<= 1;
    v->mg_slots = malloc(cap * sizeof *v->mg_slots);
    if (!v->merges || !v->merge_pool || !v->mg_slots)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory loading merges");
    memset(v->mg_slots, 0xff, cap * sizeof *v->mg_slots);
    v->mg_mask = cap - 1;
    v->n_merges = n;
    char *p = v->merge_pool;
    for (int32_t i = 0; i < n; i++) {
        const char *w = mk->strs[i].ptr;
        size_t wl = mk->strs[i].len;
        memcpy(p, w, wl);
        p[wl] = '\0';
        /* split at the first space after position 0 (llama.cpp: find(' ', 1)) */
        size_t pos = wl;
        for (size_t j = 1; j < wl; j++)
            if (p[j] == ' ') {
                pos = j;
                break;
            }
        vocab_merge_t *m = &v->merges[i];
        if (pos < wl) {
            m->left = p, m->left_len = (uint32_t)pos;
            m->right = p + pos + 1, m->right_len = (uint32_t)(wl - pos - 1);
        } else {
            m->left = p, m->left_len = 0, m->right = p, m->right_len = 0;
        }
        p += wl + 1;
        /* first occurrence wins (std::unordered_map::emplace) */
        if (vocab_merge_rank(v, m->left, m->left_len, m->right, m->right_len) >= 0)
            continue;
        uint64_t h = vocab_hash(vocab_hash(VOCAB_HASH_SEED, m->left, m->left_len), "\xff", 1);
        h = vocab_hash(h, m->right, m->right_len) & v->mg_mask;
        while (v->mg_slots[h] >= 0)
            h = (h + 1) & v->mg_mask;
        v->mg_slots[h] = i;
    }
    return LF_OK;
}

int32_t vocab_merge_rank(const vocab_t *v, const char *l, size_t ll, const char *r, size_t rl)
{
    uint64_t h = vocab_hash(vocab_hash(VOCAB_HASH_SEED, l, ll), "\xff", 1);
    h = vocab_hash(h, r, rl) & v->mg_mask;
    for (;;) {
        int32_t i = v->mg_slots[h];
        if (i < 0)
            return -1;
        const vocab_merge_t *m = &v->merges[i];
        if (m->left_len == ll && m->right_len == rl && memcmp(m->left, l, ll) == 0 &&
            memcmp(m->right, r, rl) == 0)
            return i;
        h = (h + 1) & v->mg_mask;
    }
}

vocab_t *vocab_load(const gguf_file_t *f, lf_err_t *err)
{
    if (!f) {
        lf_err_set(err, LF_ERR_INVALID, "vocab_load: no GGUF file");
        return NULL;
    }
    vocab_t *v = calloc(1, sizeof *v);
    if (!v) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    lf_code_t rc = load_type(v, f, err);
    if (rc == LF_OK)
        rc = load_tokens(v, f, err);
    if (rc == LF_OK && v->type == VOCAB_TYPE_BPE)
        rc = load_merges(v, f, err);
    if (rc == LF_OK && v->type == VOCAB_TYPE_BPE)
        rc = vocab_bpe_init(v, err); /* sets pre_used, add_bos, ignore_merges */
    if (rc == LF_OK)
        rc = vocab_specials_load(v, f, err);
    if (rc == LF_OK && v->type == VOCAB_TYPE_UGM)
        rc = vocab_ugm_init(v, f, err);
    if (rc != LF_OK) {
        lf_err_prefix(err, "%s", gguf_path(f));
        vocab_free(v);
        return NULL;
    }
    for (int b = 0; b < 256; b++) {
        char hex[7];
        snprintf(hex, sizeof hex, "<0x%02X>", b);
        int32_t id = vocab_find(v, hex, 6);
        if (id < 0) {
            char c = (char)b;
            id = vocab_find(v, &c, 1);
        }
        v->byte_tok[b] = id >= 0 ? id : v->unk;
    }
    return v;
}

vocab_t *vocab_open(const char *path, lf_err_t *err)
{
    if (!path) {
        lf_err_set(err, LF_ERR_INVALID, "vocab_open: no path");
        return NULL;
    }
    gguf_file_t *f = gguf_open_metadata(path, err);
    if (!f)
        return NULL;
    vocab_t *v = vocab_load(f, err);
    gguf_close(f);
    return v;
}

void vocab_free(vocab_t *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n_re; i++)
        pcre2_code_free(v->re[i]);
    free(v->model);
    free(v->pre);
    free(v->toks);
    free(v->pool);
    free(v->tt_slots);
    free(v->merges);
    free(v->merge_pool);
    free(v->mg_slots);
    free(v->special);
    free(v->ugm_charsmap);
    free(v->ugm_user);
    free(v);
}

/* ---- accessors ---------------------------------------------------------- */

vocab_type_t vocab_type(const vocab_t *v) { return v->type; }
const char *vocab_model_name(const vocab_t *v) { return v->model; }
bool vocab_add_space_prefix(const vocab_t *v) { return v->type == VOCAB_TYPE_SPM && v->add_space_prefix; }
const char *vocab_pre_name(const vocab_t *v) { return v->pre_used ? v->pre_used : "default"; }
int32_t vocab_n_tokens(const vocab_t *v) { return v->n_tokens; }
int32_t vocab_bos(const vocab_t *v) { return v->bos; }
int32_t vocab_eos(const vocab_t *v) { return v->eos; }
bool vocab_add_bos(const vocab_t *v) { return v->add_bos; }
bool vocab_add_eos(const vocab_t *v) { return v->add_eos; }
int32_t vocab_sep(const vocab_t *v) { return v->sep; }
bool vocab_add_sep(const vocab_t *v) { return v->add_sep; }

bool vocab_is_eog(const vocab_t *v, int32_t id)
{
    return id >= 0 && id < v->n_tokens && v->toks[id].eog;
}

bool vocab_is_control(const vocab_t *v, int32_t id)
{
    return id >= 0 && id < v->n_tokens && (v->toks[id].attr & VOCAB_ATTR_CONTROL);
}

bool vocab_is_unknown(const vocab_t *v, int32_t id)
{
    return id >= 0 && id < v->n_tokens && (id == v->unk || (v->toks[id].attr & VOCAB_ATTR_UNKNOWN));
}

bool vocab_is_special(const vocab_t *v, int32_t id)
{
    const uint32_t mask = VOCAB_ATTR_CONTROL | VOCAB_ATTR_USER_DEFINED | VOCAB_ATTR_UNKNOWN;
    return id >= 0 && id < v->n_tokens && (v->toks[id].attr & mask);
}

const char *vocab_token_text(const vocab_t *v, int32_t id)
{
    return id >= 0 && id < v->n_tokens ? v->toks[id].text : NULL;
}

/* ---- special-token partition ------------------------------------------- */

typedef struct {
    int32_t token; /* -1: raw text [off, off+len) */
    size_t off, len;
} frag_t;

typedef struct {
    frag_t *f;
    size_t n, cap;
    bool oom;
} frags_t;

static void frags_push(frags_t *l, int32_t token, size_t off, size_t len)
{
    if (l->oom)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        frag_t *p = realloc(l->f, cap * sizeof *p);
        if (!p) {
            l->oom = true;
            return;
        }
        l->f = p;
        l->cap = cap;
    }
    l->f[l->n++] = (frag_t){token, off, len};
}

static bool is_c_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* llama.cpp tokenizer_st_partition: for each special token (longest first)
 * split every raw-text fragment at its occurrences. */
static bool partition(const vocab_t *v, const char *text, size_t len, bool parse_special, frags_t *out)
{
    frags_t cur = {0}, next = {0};
    frags_push(&cur, -1, 0, len);
    /* Which byte pairs occur in the text: most special tokens can be
     * skipped without a search (vocabularies carry thousands of them). */
    uint64_t *pairs = calloc(65536 / 64, sizeof *pairs);
    if (!pairs) {
        free(cur.f);
        return false;
    }
    for (size_t i = 0; i + 1 < len; i++) {
        unsigned p = (unsigned)(unsigned char)text[i] << 8 | (unsigned char)text[i + 1];
        pairs[p >> 6] |= 1ULL << (p & 63);
    }
    for (size_t si = 0; si < v->n_special && !cur.oom; si++) {
        int32_t id = v->special[si];
        const vocab_tok_t *t = &v->toks[id];
        if (!parse_special && (t->attr & (VOCAB_ATTR_CONTROL | VOCAB_ATTR_UNKNOWN)))
            continue;
        if (t->len > len)
            continue;
        if (t->len >= 2) {
            unsigned p = (unsigned)(unsigned char)t->text[0] << 8 | (unsigned char)t->text[1];
            if (!(pairs[p >> 6] & (1ULL << (p & 63))))
                continue;
        }
        bool any = false;
        for (size_t k = 0; k < cur.n && !any; k++)
            if (cur.f[k].token < 0 && cur.f[k].len >= t->len &&
                memmem(text + cur.f[k].off, cur.f[k].len, t->text, t->len))
                any = true;
        if (!any)
            continue;
        next.n = 0;
        for (size_t k = 0; k < cur.n; k++) {
            frag_t fr = cur.f[k];
            if (fr.token >= 0) {
                frags_push(&next, fr.token, 0, 0);
                continue;
            }
            size_t pos = fr.off, end = fr.off + fr.len;
            for (;;) {
                const char *m = end - pos >= t->len ? memmem(text + pos, end - pos, t->text, t->len) : NULL;
                if (!m) {
                    if (end > pos)
                        frags_push(&next, -1, pos, end - pos);
                    break;
                }
                size_t mo = (size_t)(m - text);
                size_t ll = mo - pos;
                if (t->attr & VOCAB_ATTR_LSTRIP)
                    while (ll > 0 && is_c_space(text[pos + ll - 1]))
                        ll--;
                if (ll > 0)
                    frags_push(&next, -1, pos, ll);
                frags_push(&next, id, 0, 0);
                pos = mo + t->len;
                if (pos >= end)
                    break;
                if (t->attr & VOCAB_ATTR_RSTRIP)
                    while (pos < end && is_c_space(text[pos]))
                        pos++;
                if (pos >= end)
                    break;
            }
        }
        frags_t tmp = cur;
        cur = next;
        next = tmp;
    }
    free(next.f);
    free(pairs);
    *out = cur;
    return !cur.oom;
}

/* ---- tokenize ------------------------------------------------------------ */

static void spm_fragment(const vocab_t *v, const char *text, size_t len, bool prefix, vocab_out_t *out)
{
    /* " " -> U+2581 (3 bytes): worst case 3x, plus the prefix */
    size_t cap = 3 * len + 3;
    char *buf = malloc(cap);
    if (!buf) {
        out->oom = true;
        return;
    }
    size_t n = 0;
    if (prefix) {
        memcpy(buf, "\xe2\x96\x81", 3);
        n = 3;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(buf + n, "\xe2\x96\x81", 3);
            n += 3;
        } else
            buf[n++] = text[i];
    }
    vocab_spm_tokenize(v, buf, n, out);
    free(buf);
}

lf_code_t vocab_tokenize(const vocab_t *v, const char *text, size_t len, bool add_special,
                         bool parse_special, int32_t **ids, size_t *n, lf_err_t *err)
{
    *ids = NULL;
    *n = 0;
    if (!v || (!text && len > 0))
        return lf_err_set(err, LF_ERR_INVALID, "vocab_tokenize: no vocabulary or no text");
    vocab_out_t out = {0};
    frags_t fr = {0};
    if (len > 0 && !partition(v, text, len, parse_special, &fr)) {
        free(fr.f);
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory while tokenizing");
    }
    if (v->type == VOCAB_TYPE_SPM) {
        bool prev_special = true;
        if (add_special && v->add_bos && v->bos >= 0)
            vocab_out_push(&out, v->bos);
        for (size_t i = 0; i < fr.n; i++) {
            if (fr.f[i].token >= 0) {
                vocab_out_push(&out, fr.f[i].token);
                prev_special = true;
            } else {
                spm_fragment(v, text + fr.f[i].off, fr.f[i].len, v->add_space_prefix && prev_special, &out);
                prev_special = false;
            }
        }
        if (add_special && v->add_eos && v->eos >= 0)
            vocab_out_push(&out, v->eos);
    } else {
        if (add_special && v->add_bos && v->bos >= 0)
            vocab_out_push(&out, v->bos);
        for (size_t i = 0; i < fr.n; i++) {
            if (fr.f[i].token >= 0)
                vocab_out_push(&out, fr.f[i].token);
            else if (v->type == VOCAB_TYPE_WPM)
                vocab_wpm_tokenize(v, text + fr.f[i].off, fr.f[i].len, &out);
            else if (v->type == VOCAB_TYPE_UGM)
                vocab_ugm_tokenize(v, text + fr.f[i].off, fr.f[i].len, &out);
            else
                vocab_bpe_tokenize(v, text + fr.f[i].off, fr.f[i].len, &out);
        }
        /* WordPiece always ends with [SEP], whatever add_eos says */
        if (add_special && v->type != VOCAB_TYPE_WPM && v->add_eos && v->eos >= 0)
            vocab_out_push(&out, v->eos);
        if (add_special && v->type == VOCAB_TYPE_WPM && v->sep >= 0)
            vocab_out_push(&out, v->sep); /* BERT: [CLS] ... [SEP] */
    }
    free(fr.f);
    if (out.oom) {
        free(out.ids);
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory while tokenizing");
    }
    *ids = out.ids;
    *n = out.n;
    return LF_OK;
}
