/* vocab.h - tokenizers driven by GGUF metadata (tokenizer.ggml.*).
 *
 * Tokenizer models (tokenizer.ggml.model): "llama" (SentencePiece-style BPE
 * over scores, byte fallback <0xNN>, space-prefix rule), "gpt2" (byte-level
 * BPE with merges and a pre-tokenizer chosen by tokenizer.ggml.pre), "gemma4"
 * (BPE with merges over SentencePiece-style text: spaces as U+2581, raw
 * UTF-8, <0xNN> fallback), "bert" (WordPiece) and "t5" (SentencePiece
 * unigram with its precompiled_charsmap normaliser). Behaviour matches
 * llama.cpp token for token on every case of ../shared/golden/tokenizer
 * (the 2025 reference for the older vocabularies, the 2026 one for the
 * newer); docs/tokenizers.md lists the deliberate differences.
 *
 * A vocab_t is immutable after loading and safe to share between threads; a
 * vocab_detok_t is per stream and not shared. Loading fails with
 * LF_ERR_FORMAT (bad or missing tokenizer metadata), LF_ERR_UNSUPPORTED (a
 * tokenizer model we do not implement), LF_ERR_NOMEM, or gguf_open's codes.
 */
#ifndef LF_VOCAB_H
#define LF_VOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/gguf/gguf.h"

typedef struct vocab vocab_t;

typedef enum {
    VOCAB_TYPE_SPM,  /* "llama" */
    VOCAB_TYPE_BPE,  /* "gpt2" */
    VOCAB_TYPE_WPM,  /* "bert" */
    VOCAB_TYPE_UGM   /* "t5": SentencePiece unigram (XLM-RoBERTa, T5) */
} vocab_type_t;

/* Builds the vocabulary from f's tokenizer.ggml.* keys (the strings are
 * copied: the vocab does not keep f alive). NULL + err on failure. */
vocab_t *vocab_load(const gguf_file_t *f, lf_err_t *err);
/* Opens the GGUF file at path, loads only its vocabulary and closes the
 * file: no tensor is read and the architecture does not matter, so this
 * works on vocabulary-only files and on models the engine cannot run.
 * NULL + err (message names the file) on failure. Free with vocab_free. */
vocab_t *vocab_open(const char *path, lf_err_t *err);
void vocab_free(vocab_t *v); /* accepts NULL */

vocab_type_t vocab_type(const vocab_t *v);
const char *vocab_model_name(const vocab_t *v); /* tokenizer.ggml.model */
const char *vocab_pre_name(const vocab_t *v); /* tokenizer.ggml.pre in use */
int32_t vocab_n_tokens(const vocab_t *v);
int32_t vocab_bos(const vocab_t *v); /* -1 if none */
int32_t vocab_eos(const vocab_t *v); /* -1 if none */
bool vocab_add_bos(const vocab_t *v);
bool vocab_add_eos(const vocab_t *v);
/* The separator token (-1 if none) and whether a pair of texts gets one
 * between them (tokenizer.ggml.add_sep_token; WordPiece's default true):
 * the layout of cross-encoder (rerank) inputs. */
int32_t vocab_sep(const vocab_t *v);
bool vocab_add_sep(const vocab_t *v);
/* End of generation: EOS, EOT, EOM and other tokens that end a turn. */
bool vocab_is_eog(const vocab_t *v, int32_t id);
/* Control tokens (rendered as "" unless special output is asked for). */
bool vocab_is_control(const vocab_t *v, int32_t id);
/* The unknown token (or any token typed UNKNOWN). */
bool vocab_is_unknown(const vocab_t *v, int32_t id);
/* Tokens matched by text before the tokenizer model runs: control,
 * user-defined and unknown tokens (control ones only with parse_special). */
bool vocab_is_special(const vocab_t *v, int32_t id);
/* SentencePiece: a space is put before the text (and after special tokens). */
bool vocab_add_space_prefix(const vocab_t *v);
/* The raw vocabulary string of id (as stored in GGUF), NUL-terminated. */
const char *vocab_token_text(const vocab_t *v, int32_t id);
/* Looks up exact token text; -1 if absent. */
int32_t vocab_find(const vocab_t *v, const char *text, size_t len);

/* Tokenizes text[0..len). add_special: add BOS/EOS as the metadata says.
 * parse_special: control-token text becomes the control token (user-defined
 * tokens are always matched). Stores a malloc'd array in *ids (caller frees)
 * and its length in *n. Invalid UTF-8 is tokenized byte-wise, never an error;
 * fails only on allocation failure. */
lf_code_t vocab_tokenize(const vocab_t *v, const char *text, size_t len,
                         bool add_special, bool parse_special,
                         int32_t **ids, size_t *n, lf_err_t *err);

/* The bytes token id stands for (SPM "▁" -> " ", <0xNN> -> byte, byte-level
 * BPE chars -> bytes). Control tokens give "" unless `special`. Writes at most
 * cap bytes; returns the full length (may exceed cap), or -1 for a bad id. */
int vocab_token_to_piece(const vocab_t *v, int32_t id, bool special, char *buf, size_t cap);

/* Incremental, UTF-8-safe detokenization for one stream. */
#define VOCAB_DETOK_MAX 2048
typedef struct {
    const vocab_t *vocab;
    bool special;        /* render control tokens */
    char pending[8];     /* bytes of an incomplete UTF-8 character */
    size_t n_pending;
} vocab_detok_t;

void vocab_detok_init(vocab_detok_t *d, const vocab_t *v, bool special);
/* Appends the text of token id; writes to out only complete UTF-8
 * characters (an incomplete tail is held back for the next call). Returns
 * the bytes written (at most cap), or -1 for a bad id. A piece is
 * truncated at 512 bytes and each invalid byte is written as U+FFFD (3
 * bytes), so cap >= VOCAB_DETOK_MAX always suffices. */
int vocab_detok_push(vocab_detok_t *d, int32_t id, char *out, size_t cap);
/* Flushes held-back bytes at the end of a stream (invalid sequences are
 * emitted as U+FFFD). Returns bytes written. */
int vocab_detok_flush(vocab_detok_t *d, char *out, size_t cap);

#endif
