/* embed_input.h - the token sequences of embedding and reranking inputs,
 * built as llama-server builds them (../shared/golden/embed/README.md).
 *
 *  - An embedding text: tokenize(add_special = true, parse_special = true):
 *    the vocabulary's BOS/EOS (WordPiece: [CLS] ... [SEP]) around the text,
 *    and special-token text typed in it recognised, as Hugging Face's
 *    tokenizers do. Token-id inputs are used as given (not here).
 *  - A rerank pair (query, document): with the file's rerank template
 *    (tokenizer.chat_template.rerank) every "{query}" is replaced by the
 *    query, then every "{document}" by the document (also one inside the
 *    query), and the text is tokenized with parse_special, no added
 *    tokens; without one, [BOS] q [EOS] [SEP] d [EOS] by the vocabulary's
 *    add_bos / add_eos / add_sep (EOS falling back to SEP), q and d
 *    tokenized as plain text.
 *
 * Truncation (limit > 0): a sequence longer than limit keeps its added
 * tokens and template and loses text tokens: the end of the text (or its
 * start, `left`), the document's before the query's for a pair. Without a
 * limit nothing is cut (the caller reports the length).
 *
 * Results are malloc'd arrays the caller frees.
 */
#ifndef LF_EMBED_INPUT_H
#define LF_EMBED_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/model/model.h"

lf_code_t embed_tokens_text(const vocab_t *v, const char *text, size_t len, int32_t limit, bool left,
                            int32_t **ids, int32_t *n, lf_err_t *err);

/* The file's rerank template, or NULL. */
const char *embed_rerank_template(const model_t *m);

lf_code_t embed_tokens_pair(const model_t *m, const char *q, size_t ql, const char *d, size_t dl, int32_t limit,
                            int32_t **ids, int32_t *n, lf_err_t *err);

#endif
