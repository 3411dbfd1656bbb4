/* api_embed.h - the embedding and reranking endpoints (api_embed.c): OpenAI
 * /v1/embeddings, llama-server's /embedding(s), TEI's /embed and /rerank,
 * Jina / Cohere / vLLM /rerank, /v1/rerank, /v2/rerank, vLLM's /score, and
 * the SageMaker /invocations dispatch of an embedding or rerank server.
 * They run on srv_t.embed (NULL on a generation server: 404 saying how to
 * start one).
 */
#ifndef LF_API_EMBED_H
#define LF_API_EMBED_H

#include "server/server.h"

void api_embeddings(srv_t *s, http_req_t *r);      /* POST /v1/embeddings */
void api_embedding_llama(srv_t *s, http_req_t *r); /* POST /embedding, /embeddings */
void api_tei_embed(srv_t *s, http_req_t *r);       /* POST /embed */
void api_rerank(srv_t *s, http_req_t *r);          /* POST /rerank, /v1/rerank, /v2/rerank, /reranking */
void api_score(srv_t *s, http_req_t *r);           /* POST /score, /v1/score */
void api_embed_invocations(srv_t *s, http_req_t *r); /* /invocations on an embedding server */
/* The embedding counters in Prometheus text (malloc'd), NULL without an
 * embedding scheduler. */
char *api_embed_metrics(srv_t *s);

#endif
