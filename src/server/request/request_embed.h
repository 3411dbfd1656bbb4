/* request_embed.h - typed requests of the embedding and reranking APIs.
 *
 *  - embeddings (OpenAI /v1/embeddings, llama.cpp's /embedding(s), TEI's
 *    /embed): `input` / `content` / `inputs` as a string, an array of
 *    strings, token ids, or arrays of token ids (a top-level array that
 *    holds a number is ONE input: each string's tokens then the ids, as
 *    llama-server reads it); encoding_format, dimensions, embd_normalize,
 *    TEI's normalize / truncate / truncation_direction, vLLM's
 *    truncate_prompt_tokens;
 *  - rerank (Jina / Cohere / vLLM /rerank, /v1/rerank, /v2/rerank, and
 *    TEI's /rerank when the body has `texts`): query, documents as strings
 *    or {"text"}, top_n, return_documents, TEI's raw_scores / return_text;
 *  - score (vLLM /score): text_1 and text_2, each a string or an array.
 * Every bad value is a req_err_t (400, naming the field); an empty input
 * array, an empty token-id array, wrong types are 400 too. Unknown fields
 * are ignored.
 *
 * Ownership: req_*_free releases what the parse allocated (accepts a
 * zeroed struct).
 */
#ifndef LF_REQUEST_EMBED_H
#define LF_REQUEST_EMBED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/request/request.h"

/* One input: text (tokenized with the added tokens) followed by ids. */
typedef struct {
    char *text;          /* NULL: ids only */
    size_t len;
    int32_t *ids;        /* appended after the text's tokens, as given */
    int32_t n_ids;
} embed_in_t;

typedef enum {
    EMBED_SHAPE_OPENAI,  /* {"object": "list", "data": [...], "usage"} */
    EMBED_SHAPE_LLAMA,   /* [{"index", "embedding": [[...]]}] (llama-server's non-OAI) */
    EMBED_SHAPE_TEI      /* [[...], ...] */
} embed_shape_t;

typedef struct {
    embed_shape_t shape;
    embed_in_t *in;
    int32_t n_in;
    char *model;         /* NULL when absent */
    bool base64;         /* encoding_format base64 */
    int normalize;       /* -1 none, 2 euclidean (default), ... (embd_normalize) */
    int32_t dimensions;  /* 0: all */
    int32_t truncate;    /* 0: none (too long is an error), -1: the model's limit, k: k tokens */
    bool trunc_left;     /* drop from the start (vLLM's truncate_prompt_tokens, TEI's Left) */
} embed_req_t;

/* shape: what the endpoint answers by default; an OpenAI body with
 * `content` answers in llama-server's shape, as llama-server does. */
int req_embed_parse(const char *body, size_t len, embed_shape_t shape, embed_req_t *q, req_err_t *e);
void req_embed_free(embed_req_t *q);

typedef struct {
    char *s;
    size_t n;
} req_text_t;

typedef struct {
    bool tei;            /* the body has `texts`: TEI's shape */
    char *model;
    req_text_t query;
    req_text_t *docs;
    int32_t n_docs;
    int32_t top_n;       /* n_docs when absent */
    bool return_documents; /* Jina / Cohere: "document": {"text"} */
    bool return_text;    /* TEI: "text" */
    int raw_scores;      /* TEI: -1 absent (llama-server: raw), 0 sigmoid, 1 raw */
    int32_t truncate;    /* as embed_req_t */
} rerank_req_t;

int req_rerank_parse(const char *body, size_t len, rerank_req_t *q, req_err_t *e);
void req_rerank_free(rerank_req_t *q);

typedef struct {
    char *model;
    req_text_t *t1, *t2;
    int32_t n1, n2;      /* n1 == 1 (one-to-many) or n1 == n2 (one-to-one) */
    int32_t truncate;
} score_req_t;

int req_score_parse(const char *body, size_t len, score_req_t *q, req_err_t *e);
void req_score_free(score_req_t *q);

/* Which request a /invocations body of an embedding or rerank server is:
 * 'e' embeddings (inputs / input), 'r' rerank (query), 's' score
 * (text_1), 0 none. */
int req_embed_sniff(const char *body, size_t len);

#endif
