/* embed_setup.c - the embedding server's mode and scheduler (embed_setup.h). */
#include "server/embed_setup.h"

#include <stdio.h>

#include "engine/embed/embed_sched.h"
#include "engine/embed/pool.h"

int srv_embed_setup(srv_t *s, const srv_config_t *cfg, lf_err_t *err)
{
    const model_t *m = s->model;
    const bool no_cache = model_arch(m)->no_cache;
    const bool file_says = no_cache || model_hparams(m)->pooling >= 0;
    int pooling = -1;
    if (cfg->pooling && (pooling = pool_type_parse(cfg->pooling)) < 0)
        return lf_err_set(err, LF_ERR_INVALID, "--pooling '%s': use none, mean, cls, last or rank", cfg->pooling), -1;
    if (!cfg->embedding && !cfg->rerank && !file_says) {
        if (pooling >= 0)
            fprintf(stderr, "llm-fcgi: --pooling has no effect without --embedding or --rerank\n");
        return 0;
    }
    if (pooling < 0)
        pooling = cfg->rerank ? MODEL_POOLING_RANK : pool_default_type(m);
    if (cfg->rerank && pooling != MODEL_POOLING_RANK)
        return lf_err_set(err, LF_ERR_INVALID, "--rerank needs pooling rank (not --pooling %s)", cfg->pooling), -1;
    if (cfg->embedding && pooling == MODEL_POOLING_RANK && !cfg->rerank)
        fprintf(stderr, "llm-fcgi: the model's pooling is 'rank': serving reranking\n");
    const int32_t n_ctx = cfg->ctx_size > 0 ? cfg->ctx_size : model_hparams(m)->n_ctx_train;
    embed_opts_t o = {
        /* an encoder takes each input in one pass: room for the longest */
        .max_batch = no_cache && cfg->batch_tokens < n_ctx ? n_ctx : cfg->batch_tokens,
        .n_seq = no_cache ? 0 : cfg->parallel,
        .n_ctx = n_ctx,
        .n_threads = cfg->threads,
        .pooling = pooling,
    };
    if (!(s->embed = embed_sched_create(m, &o, err)))
        return -1;
    fprintf(stderr, "llm-fcgi: %s server: pooling %s, inputs up to %d tokens, %d tokens per forward pass\n",
            pooling == MODEL_POOLING_RANK ? "rerank" : "embedding", pool_type_name(pooling),
            embed_sched_max_tokens(s->embed), o.max_batch);
    return 1;
}
