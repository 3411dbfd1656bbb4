/* embed_setup.h - whether a server is an embedding / rerank server, and
 * its embedding scheduler.
 *
 * A server serves embeddings instead of text generation when started with
 * --embedding or --rerank, or by itself for a file that says it is an
 * embedding model (a <arch>.pooling_type key, or an encoder family). The
 * pooling is --pooling, else RANK for --rerank, else the file's (NONE for
 * a text model: per-token states on /embedding only). Rerank routes need
 * pooling rank, embedding routes any other (api_embed.c).
 */
#ifndef LF_EMBED_SETUP_H
#define LF_EMBED_SETUP_H

#include "common/status.h"
#include "server/server.h"

/* 1 with s->embed created (an embedding server), 0 for a generation
 * server, -1 + err on failure (a bad --pooling, --rerank on a model
 * without classifier, ...). cfg->ctx_size must be resolved. */
int srv_embed_setup(srv_t *s, const srv_config_t *cfg, lf_err_t *err);

#endif
