/* vocab_special.c - special tokens, decided once at load time.
 *
 * Behaves as llama.cpp's 2026 tree (src/llama-vocab.cpp, llama_vocab::load):
 *  - ids from tokenizer.ggml.*_token_id (out-of-range values are ignored);
 *  - add_bos / add_eos from the file (some pre-tokenizers force BOS on);
 *  - EOT/EOM/FIM tokens found by their text when the file names none; the
 *    token found becomes a CONTROL token;
 *  - the end-of-generation (EOG) set: the FIM pad/repo/sep tokens, every
 *    token whose text is in a list of turn/stream ends (those become CONTROL
 *    too), EOS, EOT and EOM; then the o200k-harmony rule (`<|end|>` is not
 *    EOG when `<|return|>` and `<|call|>` exist) and the Gemma 4 rule (`</s>`
 *    is plain text when `<|tool_response>` exists);
 *  - the special-token list used by the partition: CONTROL, USER_DEFINED and
 *    UNKNOWN tokens, longest text first;
 *  - per-model strip attributes (Phi-3 rstrip, jina / modern-bert lstrip).
 *
 * One deliberate difference: a `</s>` the file types USER_DEFINED stays
 * USER_DEFINED (matched in text even without parse_special, as Hugging Face
 * and llama.cpp before 2026 do) while still ending generation; the 2026 tree
 * makes it CONTROL. See docs/tokenizers.md.
 */
#include "engine/vocab/vocab_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FW_BAR "\xef\xbd\x9c"  /* U+FF5C FULLWIDTH VERTICAL LINE */
#define SP_BLOCK "\xe2\x96\x81" /* U+2581, SentencePiece's space */

/* Texts of llama.cpp's special-token auto-detection. */
static const char *const eot_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                        "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                                        "<" FW_BAR "end" SP_BLOCK "of" SP_BLOCK "sentence" FW_BAR ">",
                                        "<end_of_utterance>", NULL};
static const char *const eom_texts[] = {"<|eom_id|>", NULL};
static const char *const fim_pre_texts[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                                            "<" FW_BAR "fim" SP_BLOCK "begin" FW_BAR ">", "<PRE>", SP_BLOCK "<PRE>",
                                            "<|code_prefix|>", "<|prefix|>", NULL};
static const char *const fim_suf_texts[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                            "<" FW_BAR "fim" SP_BLOCK "hole" FW_BAR ">", "<SUF>", SP_BLOCK "<SUF>",
                                            "<|code_suffix|>", "<|suffix|>", NULL};
static const char *const fim_mid_texts[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                            "<" FW_BAR "fim" SP_BLOCK "end" FW_BAR ">", "<MID>", SP_BLOCK "<MID>",
                                            "<|code_middle|>", "<|middle|>", NULL};
static const char *const fim_pad_texts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL};
static const char *const fim_rep_texts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>",
                                            NULL};
static const char *const fim_sep_texts[] = {"<|file_sep|>", NULL};
/* Tokens that end generation by their text alone. */
static const char *const eog_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>",
                                        "<|flush|>", "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>",
                                        "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
                                        "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
                                        "<" FW_BAR "end" SP_BLOCK "of" SP_BLOCK "sentence" FW_BAR ">", "[e~[",
                                        NULL};
/* gpt-oss (o200k harmony) tokens that are always rendered. */
static const char *const harmony_user_texts[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL};

static int32_t find_cstr(const vocab_t *v, const char *s) { return vocab_find(v, s, strlen(s)); }

/* Finds the lowest id whose text is in list and makes it a control token;
 * *id is left alone if already set. (llama.cpp takes whichever its hash map
 * yields first; the lists never match more than one token in practice.) */
static void detect_special(vocab_t *v, int32_t *id, const char *const *list)
{
    if (*id >= 0)
        return;
    int32_t best = -1;
    for (; *list; list++) {
        int32_t t = find_cstr(v, *list);
        if (t >= 0 && (best < 0 || t < best))
            best = t;
    }
    if (best >= 0) {
        *id = best;
        v->toks[best].attr |= VOCAB_ATTR_CONTROL;
    }
}

static void read_special_id(const gguf_file_t *f, const char *key, int32_t n, int32_t *id)
{
    if (*id >= n)
        *id = -1;
    uint32_t u;
    if (gguf_get_u32(f, key, &u) && u < (uint32_t)n)
        *id = (int32_t)u;
}

static int cmp_special(const void *a, const void *b, void *ctx)
{
    const vocab_t *v = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    uint32_t lx = v->toks[x].len, ly = v->toks[y].len;
    if (lx != ly)
        return lx > ly ? -1 : 1;
    return x < y ? -1 : (x > y);
}

static bool ci_contains(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && (hay[i] | 0x20) == (needle[i] | 0x20))
            i++;
        if (i == n)
            return true;
    }
    return false;
}

static void copy_str(const gguf_file_t *f, const char *key, char *out, size_t cap)
{
    gguf_str_t s;
    out[0] = '\0';
    if (gguf_get_str(f, key, &s)) {
        size_t l = s.len < cap - 1 ? (size_t)s.len : cap - 1;
        memcpy(out, s.ptr, l);
        out[l] = '\0';
    }
}

/* The EOG set: marks tokens, applies the two removal rules. */
static void mark_eog(vocab_t *v, const int32_t *fim_eog, size_t n_fim)
{
    for (size_t i = 0; i < n_fim; i++)
        if (fim_eog[i] >= 0)
            v->toks[fim_eog[i]].eog = true;
    for (const char *const *e = eog_texts; *e; e++) {
        int32_t id = find_cstr(v, *e);
        if (id < 0)
            continue;
        v->toks[id].eog = true;
        if (strcmp(*e, "</s>") == 0 && (v->toks[id].attr & VOCAB_ATTR_USER_DEFINED))
            continue; /* the deliberate difference described at the top */
        v->toks[id].attr |= VOCAB_ATTR_CONTROL;
    }
    for (const char *const *e = harmony_user_texts; *e; e++) {
        int32_t id = find_cstr(v, *e);
        if (id >= 0)
            v->toks[id].attr = VOCAB_ATTR_USER_DEFINED;
    }
    int32_t always[] = {v->eos, v->eot, v->eom};
    for (size_t i = 0; i < 3; i++)
        if (always[i] >= 0)
            v->toks[always[i]].eog = true;

    /* o200k harmony / solar-open: <|end|> ends a message, not generation */
    int32_t ret = find_cstr(v, "<|return|>"), call = find_cstr(v, "<|call|>"), calls = find_cstr(v, "<|calls|>");
    int32_t flush = find_cstr(v, "<|flush|>"), end = find_cstr(v, "<|end|>");
    bool has_ret = ret >= 0 && v->toks[ret].eog, has_flush = flush >= 0 && v->toks[flush].eog;
    bool has_call = (call >= 0 && v->toks[call].eog) || (calls >= 0 && v->toks[calls].eog);
    if (end >= 0 && v->toks[end].eog && has_call && (has_ret || has_flush)) {
        v->toks[end].eog = false;
        v->toks[end].attr = VOCAB_ATTR_USER_DEFINED;
    }
    /* Gemma 4: </s> is ordinary text there */
    int32_t tool = find_cstr(v, "<|tool_response>"), s_end = find_cstr(v, "</s>");
    if (tool >= 0 && v->toks[tool].eog && s_end >= 0 && v->toks[s_end].eog) {
        v->toks[s_end].eog = false;
        v->toks[s_end].attr = VOCAB_ATTR_NORMAL;
    }
}

/* Strip attributes llama.cpp sets by model, tokenizer or architecture name. */
static void set_strip_attrs(vocab_t *v, const gguf_file_t *f)
{
    char name[256], arch[64];
    copy_str(f, "general.name", name, sizeof name);
    copy_str(f, "general.architecture", arch, sizeof arch);
    int32_t id;
    if (strstr(v->pre, "jina-v2-de") || strstr(v->pre, "jina-v2-es") || strstr(v->pre, "jina-v2-code") ||
        strstr(arch, "nomic-bert-moe") || strstr(arch, "jina-bert-v3")) {
        if ((id = find_cstr(v, "<mask>")) >= 0)
            v->toks[id].attr |= VOCAB_ATTR_LSTRIP;
    } else if (ci_contains(name, "phi-3") || ci_contains(name, "phi3")) {
        for (size_t i = 0; i < v->n_special; i++)
            v->toks[v->special[i]].attr |= VOCAB_ATTR_RSTRIP;
        if ((id = find_cstr(v, "</s>")) >= 0)
            v->toks[id].attr |= VOCAB_ATTR_RSTRIP;
        const char *off[] = {"<unk>", "<s>", "<|endoftext|>"};
        for (size_t i = 0; i < 3; i++)
            if ((id = find_cstr(v, off[i])) >= 0)
                v->toks[id].attr &= ~(uint32_t)VOCAB_ATTR_RSTRIP;
    } else if (ci_contains(name, "modern-bert")) {
        if ((id = find_cstr(v, "[MASK]")) >= 0)
            v->toks[id].attr |= VOCAB_ATTR_LSTRIP;
    }
}

lf_code_t vocab_specials_load(vocab_t *v, const gguf_file_t *f, lf_err_t *err)
{
    int32_t n = v->n_tokens;
    int32_t fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;
    if (v->type == VOCAB_TYPE_WPM)
        read_special_id(f, "tokenizer.ggml.cls_token_id", n, &v->bos);
    read_special_id(f, "tokenizer.ggml.bos_token_id", n, &v->bos);
    read_special_id(f, "tokenizer.ggml.eos_token_id", n, &v->eos);
    read_special_id(f, "tokenizer.ggml.eot_token_id", n, &v->eot);
    read_special_id(f, "tokenizer.ggml.eom_token_id", n, &v->eom);
    read_special_id(f, "tokenizer.ggml.unknown_token_id", n, &v->unk);
    read_special_id(f, "tokenizer.ggml.seperator_token_id", n, &v->sep);
    read_special_id(f, "tokenizer.ggml.padding_token_id", n, &v->pad);
    read_special_id(f, "tokenizer.ggml.fim_pre_token_id", n, &fim_pre);
    read_special_id(f, "tokenizer.ggml.fim_suf_token_id", n, &fim_suf);
    read_special_id(f, "tokenizer.ggml.fim_mid_token_id", n, &fim_mid);
    read_special_id(f, "tokenizer.ggml.fim_pad_token_id", n, &fim_pad);
    read_special_id(f, "tokenizer.ggml.fim_rep_token_id", n, &fim_rep);
    read_special_id(f, "tokenizer.ggml.fim_sep_token_id", n, &fim_sep);
    read_special_id(f, "tokenizer.ggml.prefix_token_id", n, &fim_pre); /* deprecated names */
    read_special_id(f, "tokenizer.ggml.suffix_token_id", n, &fim_suf);
    read_special_id(f, "tokenizer.ggml.middle_token_id", n, &fim_mid);

    bool b;
    if (gguf_get_bool(f, "tokenizer.ggml.add_bos_token", &b))
        v->add_bos = b;
    if (gguf_get_bool(f, "tokenizer.ggml.add_eos_token", &b))
        v->add_eos = b;
    if (gguf_get_bool(f, "tokenizer.ggml.add_sep_token", &b))
        v->add_sep = b;
    if (v->force_bos)
        v->add_bos = true;
    /* llama.cpp asserts when it adds such a token; we warn and add nothing */
    if (v->add_bos && v->bos < 0) {
        fprintf(stderr, "warning: the vocabulary asks for BOS but has no BOS token\n");
        v->add_bos = false;
    }
    if (v->add_eos && v->eos < 0) {
        fprintf(stderr, "warning: tokenizer.ggml.add_eos_token is true but there is no EOS token\n");
        v->add_eos = false;
    }
    v->wpm_lowercase = true;
    if (gguf_get_bool(f, "tokenizer.ggml.normalizer.lowercase", &b))
        v->wpm_lowercase = b;
    v->wpm_strip_accents = v->wpm_lowercase;
    if (gguf_get_bool(f, "tokenizer.ggml.normalizer.strip_accents", &b))
        v->wpm_strip_accents = b;

    detect_special(v, &v->eot, eot_texts);
    detect_special(v, &v->eom, eom_texts);
    detect_special(v, &fim_pre, fim_pre_texts);
    detect_special(v, &fim_suf, fim_suf_texts);
    detect_special(v, &fim_mid, fim_mid_texts);
    detect_special(v, &fim_pad, fim_pad_texts);
    detect_special(v, &fim_rep, fim_rep_texts);
    detect_special(v, &fim_sep, fim_sep_texts);
    int32_t fim_eog[] = {fim_pad, fim_rep, fim_sep};
    mark_eog(v, fim_eog, 3);

    size_t ns = 0;
    const uint32_t special_mask = VOCAB_ATTR_CONTROL | VOCAB_ATTR_USER_DEFINED | VOCAB_ATTR_UNKNOWN;
    for (int32_t i = 0; i < n; i++)
        if ((v->toks[i].attr & special_mask) && v->toks[i].len > 0)
            ns++;
    v->special = malloc((ns ? ns : 1) * sizeof *v->special);
    if (!v->special)
        return lf_err_set(err, LF_ERR_NOMEM, "out of memory");
    ns = 0;
    for (int32_t i = 0; i < n; i++)
        if ((v->toks[i].attr & special_mask) && v->toks[i].len > 0)
            v->special[ns++] = i;
    v->n_special = ns;
    qsort_r(v->special, ns, sizeof *v->special, cmp_special, v);
    set_strip_attrs(v, f);
    return LF_OK;
}
