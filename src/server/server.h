/* server.h - the llm-fcgi server: configuration, shared state, routing.
 *
 * srv_t is shared read-only by all acceptor threads once serving starts,
 * except for the thread-safe parts (scheduler, metrics). Handlers get the
 * srv_t and one http_req_t; they never touch the model's forward state
 * (only the scheduler does) and only read the immutable model/vocab.
 */
#ifndef LF_SERVER_H
#define LF_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "chat/parse/reasoning.h"
#include "chat/parse/toolcall.h"
#include "engine/model/model.h"
#include "engine/sched/sched.h"
#include "server/chat/chat_render.h"
#include "server/media/srv_media.h"
#include "server/transport/http.h"
#include "server/metrics.h"

#define SRV_MAX_NAMES 16
#define SRV_MAX_KEYS 64

typedef struct {
    const char *model_path;
    const char *names[SRV_MAX_NAMES]; /* served names; names[0] is reported */
    int n_names;
    char *keys[SRV_MAX_KEYS];         /* API keys (owned, wiped on free) */
    int n_keys;
    const char *socket_path;          /* default unix socket */
    const char *listen_addr;          /* "HOST:PORT" or NULL */
    int32_t ctx_size, parallel, threads, http_threads, max_queue, batch_tokens;
    int32_t kv_cache_mb;              /* KV budget in MiB (0: parallel x ctx) */
    int32_t state_snapshots;          /* hybrid models: state snapshot slots (0: default, -1: none) */
    size_t max_body;
    int drain_seconds;                /* graceful shutdown limit */
    int ping_seconds;                 /* SSE comment interval while waiting */
    int io_timeout_seconds;           /* longest stall of a FastCGI peer */
    bool log_prompts;
    /* decoding defaults for fields a request leaves out (issue 4) */
    struct {
        bool temperature, top_p, top_k, min_p, repetition_penalty;
    } def_set;
    float def_temperature, def_top_p, def_min_p, def_repetition_penalty;
    int32_t def_top_k;
    int32_t max_n;                    /* largest `n` (<= 0: 16) */
    bool mindie;                      /* allow MindIE extras ("mindie": true) */
    bool lmi_finish_reasons;          /* chat finish_reason eos_token / stop_sequence (LMI) */
    const char *chat_template_file;   /* --chat-template (NULL: the model's) */
    const char *reasoning_parser;     /* --reasoning-parser (NULL: detect) */
    const char *tool_call_parser;     /* --tool-call-parser (NULL: detect) */
    const char *reasoning_start;      /* --reasoning-start / -end: the generic */
    const char *reasoning_end;        /* reasoning parser's markers (or NULL) */
    int32_t grammar_cache_mb;         /* token-mask cache budget (0: 256) */
    srv_media_cfg_t media;            /* image inputs: --mmproj and limits (srv_media.h) */
    /* embeddings and reranking (issue 25) */
    bool embedding;                   /* --embedding: serve embeddings, not generation */
    bool rerank;                      /* --rerank: serve reranking (pooling rank) */
    const char *pooling;              /* --pooling none|mean|cls|last|rank (NULL: the file's) */
    int32_t max_batch_inputs;         /* inputs of one request before 413 (0: 2048) */
    const char *spec;                 /* --spec: "ngram", "none" or NULL (predictions only) */
    int32_t spec_draft_max;           /* --spec-draft-max (0: SPEC_K_MAX) */
    float spec_row_cost;              /* --spec-row-cost (0: measured) */
    const char *model_draft;          /* --model-draft FILE (NULL: none) */
    /* stored Responses (src/server/store/store.h) */
    const char *store;                /* --store: a file (SQLite), postgresql://... or
                                         "none"; NULL: responses.db in the state directory */
    int64_t store_ttl;                /* --store-ttl seconds (<= 0: 30 days) */
} srv_config_t;

typedef struct {
    srv_config_t cfg;
    model_t *model;
    model_t *draft_model;             /* --model-draft, or NULL */
    const vocab_t *vocab;
    sched_t *sched;
    struct grammar_engine *grammar;   /* structured output (grammar.h) */
    metrics_t metrics;
    chat_render_fn render;            /* chat prompt renderer (chat_render.h) */
    void *render_ctx;
    reasoning_mode_t reasoning;       /* output parsers (chat_setup.h) */
    toolcall_format_t tool_format;
    time_t created;
    char fingerprint[96];             /* system_fingerprint: build + model */
    struct fcgi_guard *guard;         /* the connection reader (NULL in unit
                                         tests); its counters go to /metrics */
    srv_media_t *media;               /* image inputs (NULL: started without --mmproj) */
    struct store *store;              /* stored Responses (NULL: none) */
    struct bg_registry *bg;           /* background Responses running here (api_responses_bg.c) */
    struct embed_sched *embed;        /* embedding / rerank server (then sched
                                         is NULL), else NULL (api_embed.h) */
} srv_t;

/* ---- routing (route.c) ---- */
typedef void (*srv_handler_fn)(srv_t *s, http_req_t *r);

/* The error shape of a route's route-level errors (401, 405, 413, ...). */
typedef enum {
    ROUTE_ERR_OPENAI = 0,
    ROUTE_ERR_TGI,       /* {"error", "error_type"} (api_tgi.h) */
    ROUTE_ERR_ANTHROPIC  /* {"type":"error","error":{type, message}} (api_messages.h) */
} route_errors_t;

typedef enum {
    ROUTE_EXACT,
    ROUTE_PREFIX   /* path starts with pattern (e.g. "/v1/models/") */
} route_match_t;

typedef struct {
    const char *method;
    const char *path;
    route_match_t match;
    bool open;            /* no auth (health checks) */
    srv_handler_fn fn;
    route_errors_t errors;/* the shape of its errors */
} route_t;

/* Finds the handler for method+path in table[0..n). Returns the route, or
 * NULL with *status 404 (unknown path) or 405 (path known, method not) and
 * allow (cap bytes) listing the allowed methods ("GET, POST"). */
const route_t *route_find(const route_t *table, size_t n, const char *method, const char *path,
                          int *status, char *allow, size_t cap);

/* Constant-time check of "Bearer KEY" against the configured keys (true
 * when no key is configured). */
bool auth_check(const srv_config_t *c, const char *authorization);
/* The configured key that "Authorization: Bearer KEY" or else the x-api-key
 * header (Anthropic's clients) presents: its index, -1 when none matches,
 * -2 when no key is configured. Constant-time over the keys. */
int auth_key_index(const srv_config_t *c, const char *authorization, const char *x_api_key);
/* Who owns what this request stores: the hex SHA-256 of its API key
 * (keys themselves are never stored), "" on a server without keys. */
void srv_request_owner(const srv_t *s, const http_req_t *r, char out[65]);

/* The whole request pipeline: route, auth, dispatch, errors, log line. */
void srv_handle(srv_t *s, http_req_t *r);

/* Does `model` (may be NULL = any) name this server's model? */
bool srv_model_ok(const srv_t *s, const char *model);
/* srv_model_ok, else replies 404 "The model `X` does not exist." (OpenAI's
 * model_not_found) and returns false. */
bool srv_require_model(const srv_t *s, http_req_t *r, const char *model);
/* The largest `n` a request may ask (--max-n, default 16). */
int32_t srv_max_n(const srv_t *s);
/* The longest input: the generation scheduler's context, or the
 * embedding scheduler's limit on an embedding server. */
int32_t srv_n_ctx(const srv_t *s);
/* Replies with a request-validation error (status, message, param, code). */
void srv_reply_req_err(http_req_t *r, const req_err_t *e);

/* ---- handlers (api_*.c) ---- */
void api_chat(srv_t *s, http_req_t *r);
void api_completions(srv_t *s, http_req_t *r);
void api_invocations(srv_t *s, http_req_t *r);
void api_models(srv_t *s, http_req_t *r);
void api_model_one(srv_t *s, http_req_t *r);
void api_health(srv_t *s, http_req_t *r);
void api_ping(srv_t *s, http_req_t *r);
void api_tokenize(srv_t *s, http_req_t *r);
void api_detokenize(srv_t *s, http_req_t *r);
void api_metrics(srv_t *s, http_req_t *r);
/* TGI / LMI text generation (api_tgi.c) */
void api_tgi_generate(srv_t *s, http_req_t *r);        /* POST /generate */
void api_tgi_generate_stream(srv_t *s, http_req_t *r); /* POST /generate_stream */
void api_tgi_compat(srv_t *s, http_req_t *r);          /* POST / */
void api_tgi_info(srv_t *s, http_req_t *r);            /* GET /info */
void api_lmi_invocations(srv_t *s, http_req_t *r);     /* /invocations with `inputs` */
/* OpenAI Responses (api_responses*.c) */
void api_responses_create(srv_t *s, http_req_t *r);    /* POST /v1/responses */
void api_responses_get(srv_t *s, http_req_t *r);       /* GET /v1/responses/{id}[/input_items] */
void api_responses_delete(srv_t *s, http_req_t *r);    /* DELETE /v1/responses/{id} */
void api_responses_cancel(srv_t *s, http_req_t *r);    /* POST /v1/responses/{id}/cancel */
/* Background responses (api_responses_bg.c): init sets up s->bg before
 * serving; drain, at shutdown, waits for them up to deadline (unix s), then
 * stops what still runs (stored failed); free, once no acceptor runs,
 * stops and joins what is left and frees s->bg. */
void api_responses_init(srv_t *s);
void api_responses_drain(srv_t *s, int64_t deadline);
void api_responses_free(srv_t *s);
/* Anthropic Messages (api_messages.c) */
void api_messages(srv_t *s, http_req_t *r);            /* POST /v1/messages */
void api_messages_count(srv_t *s, http_req_t *r);      /* POST /v1/messages/count_tokens */

/* ---- images (api_media.c) ---- */
/* The prompt of a chat request with images (q->n_images > 0) from its
 * rendered text: 400 naming the content part when the server has no
 * --mmproj or an image is bad; sets q->gen.media and *ids / *n_ids (the
 * layout's tokens, malloc'd). 0, or -1 after replying. */
int api_chat_media(srv_t *s, http_req_t *r, chat_req_t *q, const char *prompt, int32_t **ids, size_t *n_ids);
/* The same for a text prompt with CHAT_MEDIA_MARKER where urls[i] go
 * (TGI markdown images); 0, or -1 with e filled (the caller replies in its
 * format). */
int api_text_media(srv_t *s, req_gen_t *gen, const char *prompt, const char *const *urls, const char *const *params,
                   size_t n_images, int32_t **ids, size_t *n_ids, req_err_t *e);

/* ---- process (fcgi_server.c) ---- */
/* Loads the model, opens the socket, serves until SIGTERM/SIGINT, drains.
 * Returns the exit status (0 clean, 1 failure). */
int srv_run(srv_config_t *cfg);

#endif
