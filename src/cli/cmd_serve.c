/* cmd_serve.c - `llm-fcgi serve`: options and environment, then srv_run. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "cli/cli.h"
#include "pull/hub.h"
#include "pull/pull.h"
#include "server/server.h"

static const char usage[] =
    "usage: llm-fcgi serve -m MODEL.gguf [OPTIONS]\n"
    "\n"
    "Serves an OpenAI-compatible API over FastCGI (put nginx in front; see nginx/).\n"
    "Each option can also be set by the environment variable in brackets; a flag wins.\n"
    "\n"
    "Model and names:\n"
    "  -m, --model PATH           GGUF model file, or OWNER/NAME[:QUANT] or a URL: pulled into the\n"
    "                             model directory when missing (see llm-fcgi pull) [LLM_MODEL]\n"
    "      --served-model-name N  name accepted in \"model\"; repeat for aliases; the first is\n"
    "                             reported (default: the model file's name without its\n"
    "                             directory; a hub reference as given) [LLM_SERVED_MODEL_NAME, a,b]\n"
    "Listening:\n"
    "      --socket PATH          unix socket, mode 0660 (default /run/llm-fcgi/llm-fcgi.sock)\n"
    "                             [LLM_SOCKET]; refuses a path held by a live server\n"
    "      --listen HOST:PORT     TCP instead; never expose a FastCGI port [LLM_LISTEN]\n"
    "                             (under spawn-fcgi the socket is fd 0: give neither)\n"
    "Authentication:\n"
    "      --api-key KEY          require \"Authorization: Bearer KEY\"; repeatable [LLM_API_KEY, a,b]\n"
    "      --api-key-file FILE    keys, one per line, # comments [LLM_API_KEY_FILE]\n"
    "Engine:\n"
    "      --ctx-size N           tokens per sequence (default: the model's, at most 4096) [LLM_CTX_SIZE]\n"
    "      --parallel N           sequences generated together (default 4) [LLM_PARALLEL]\n"
    "      --threads N            engine threads (default: all cores) [LLM_THREADS]\n"
    "      --batch-tokens N       token budget of one engine step (default 512) [LLM_BATCH_TOKENS]\n"
    "      --grammar-cache-mb N   token-mask cache of structured output in MiB (default 256)\n"
    "      --kv-cache-mb N        KV cache budget in MiB (default: parallel x ctx-size positions);\n"
    "                             when full, the newest stream is preempted and resumed later\n"
    "                             [LLM_KV_CACHE_MB]\n"
    "      --cache-type-k T, --cache-type-v T (-ctk, -ctv)\n"
    "                             how K and V are cached: f16 (default), q8_0 (half the memory)\n"
    "                             or q4_0 (a quarter) [LLM_CACHE_TYPE_K, LLM_CACHE_TYPE_V]\n"
    "      --flash-attn M (-fa)   auto (default: llama.cpp's exact order up to 1024 positions,\n"
    "                             flash attention beyond), on (always flash), off (always the\n"
    "                             exact order; f16 cache only) [LLM_FLASH_ATTN]\n"
    "      --state-snapshots N    hybrid models (qwen35, lfm2): snapshots of the recurrent state kept\n"
    "                             for the prefix cache (default: ~256 MiB worth, parallel + 2 to\n"
    "                             4 x parallel + 8; 0: none) [LLM_STATE_SNAPSHOTS]\n"
    "Speculative decoding (the same tokens, several per step when the drafts are right):\n"
    "      --spec S               draft sources besides a request's \"prediction\": ngram (the prompt\n"
    "                             and output so far), mtp (the model's own next-token-prediction\n"
    "                             block, Qwen3.5), or none (no speculation at all); default:\n"
    "                             predictions only [LLM_SPEC]\n"
    "      --spec-draft-max N     most draft tokens per step and stream, 1..16 (default 16)\n"
    "                             [LLM_SPEC_DRAFT_MAX]\n"
    "      --spec-row-cost F      what one more row costs relative to a step's fixed part (weights\n"
    "                             read), which sets the draft lengths (default: measured)\n"
    "      --model-draft FILE     a smaller GGUF with the same vocabulary that drafts tokens for the\n"
    "                             streams that have no prediction to follow [LLM_MODEL_DRAFT]\n"
    "Requests:\n"
    "      --http-threads N       FastCGI acceptor threads (default parallel + max-queue + 4)\n"
    "                             [LLM_HTTP_THREADS]\n"
    "      --max-queue N          requests waiting for a slot before 429 (default 32) [LLM_MAX_QUEUE]\n"
    "      --max-body BYTES       largest body, k/m suffix ok (default 16m); 413 above [LLM_MAX_BODY]\n"
    "      --temperature F        default temperature for requests without one (0..2; default 1)\n"
    "      --top-p F              default top_p, (0..1] (default 1)\n"
    "      --top-k N              default top_k, -1 or 0 = off (default -1)\n"
    "      --min-p F              default min_p, 0..1 (default 0)\n"
    "      --repetition-penalty F default repetition_penalty, > 0 (default 1)\n"
    "      --max-n N              largest `n` (choices per prompt) a request may ask (default 16)\n"
    "      --mindie-extras        allow \"mindie\": true (full_text streaming, prefill_time, decode_time_arr)\n"
    "      --lmi-finish-reasons   chat finish_reason as SageMaker LMI reports it: eos_token / stop_sequence\n"
    "                             instead of stop (default off) [LLM_LMI_FINISH_REASONS=1]\n"
    "      --ping-interval S      SSE \": ping\" comment while no token is ready (default 10)\n"
    "                             [LLM_PING_INTERVAL]\n"
    "      --drain-timeout S      on SIGTERM/SIGINT, seconds in-flight requests may take to finish\n"
    "                             (default 30) [LLM_DRAIN_TIMEOUT]\n"
    "      --io-timeout S         longest a FastCGI peer may stall while sending a request or not\n"
    "                             reading the response before the connection is dropped and its\n"
    "                             generation stopped (default 60) [LLM_IO_TIMEOUT]\n"
    "      --log-prompts          log prompts, for debugging; keys are never logged [LLM_LOG_PROMPTS=1]\n"
    "Chat:\n"
    "      --chat-template FILE   Jinja chat template instead of the model's (default: the model's;\n"
    "                             ChatML with a warning when it has none) [LLM_CHAT_TEMPLATE]\n"
    "      --reasoning-parser P   qwen3, deepseek_r1, deepseek_v3, gpt-oss, mistral, granite, glm45,\n"
    "                             kimi_k2, minimax_m2, seed_oss, generic or none (default: detected\n"
    "                             from the template) [LLM_REASONING_PARSER]\n"
    "      --reasoning-start S, --reasoning-end S\n"
    "                             the markers of the generic reasoning parser (implies it)\n"
    "                             [LLM_REASONING_START, LLM_REASONING_END]\n"
    "      --tool-call-parser P   hermes, llama3_json, mistral, qwen3_coder, gpt-oss, deepseek_v3,\n"
    "                             deepseek_v31, kimi_k2, glm45, granite, pythonic, minimax_m2,\n"
    "                             seed_oss, phi4_mini_json or none (default: detected from the\n"
    "                             template) [LLM_TOOL_CALL_PARSER]\n"
    "Images (vision models):\n"
    "      --mmproj FILE          vision projector (mmproj GGUF) of the model: image parts in messages\n"
    "                             [LLM_MMPROJ]; with -m OWNER/NAME[:QUANT], the repository's own\n"
    "                             projector is pulled and used unless --no-mmproj\n"
    "      --max-images N         images per request (default 8) [LLM_MAX_IMAGES]\n"
    "      --max-image-bytes B    largest image as sent, k/m suffix ok (default 20m) [LLM_MAX_IMAGE_BYTES]\n"
    "      --max-image-pixels N   largest decoded image (default 33554432 = 8192 x 4096)\n"
    "                             [LLM_MAX_IMAGE_PIXELS]\n"
    "      --image-cache-mb N     encoded images kept for follow-up requests (default 256; 0: none)\n"
    "                             [LLM_IMAGE_CACHE_MB]\n"
    "      --media-domains LIST   allow http(s) image URLs from these hosts (comma-separated; a name\n"
    "                             covers its subdomains; * = any); default: remote images off\n"
    "                             [LLM_MEDIA_DOMAINS]\n"
    "      --media-allow-private  remote images may come from loopback / private / link-local\n"
    "                             addresses (default: refused) [LLM_MEDIA_ALLOW_PRIVATE=1]\n"
    "      --media-dir DIR        allow file:// image URLs under DIR [LLM_MEDIA_DIR]\n"
    "      --media-timeout S      time limit of a remote image (default 10) [LLM_MEDIA_TIMEOUT]\n"
    "      --media-max-redirects N  redirects a remote image may take (default 3)\n"
    "Stored responses (POST /v1/responses with store, previous_response_id, GET/DELETE):\n"
    "      --store PATH|URL       a file: SQLite (WAL); postgresql://USER@HOST/DB: PostgreSQL, for\n"
    "                             several backends sharing conversations; none: keep nothing\n"
    "                             (default: responses.db in $STATE_DIRECTORY, else\n"
    "                             ~/.local/state/llm-fcgi) [LLM_STORE]\n"
    "      --store-ttl T          keep stored responses T (seconds, or with s/m/h/d; default 30d)\n"
    "                             [LLM_STORE_TTL]\n"
    "Embeddings and reranking (a server serves them instead of generation):\n"
    "      --embedding            serve embeddings: /v1/embeddings, /embed (TEI), /embedding, /score\n"
    "                             (automatic for a file with a pooling type or an encoder family)\n"
    "                             [LLM_EMBEDDING=1]; also --embeddings\n"
    "      --rerank               serve reranking: /rerank, /v1/rerank, /v2/rerank, /score\n"
    "                             [LLM_RERANK=1]; also --reranking\n"
    "      --pooling P            none, mean, cls, last or rank (default: the file's) [LLM_POOLING]\n"
    "      --max-batch-inputs N   inputs (or documents) of one request before 413 (default 2048)\n"
    "                             [LLM_MAX_BATCH_INPUTS]\n"
    "  -h, --help                 this help\n"
    "\n"
    "Endpoints: POST /v1/chat/completions, /v1/completions, /v1/responses, /v1/messages,\n"
    "/v1/messages/count_tokens, /invocations, /tokenize, /detokenize; GET/DELETE /v1/responses/ID;\n"
    "GET /v1/models[/ID], /metrics; GET /health, /ping (never need a key). An embedding server:\n"
    "POST /v1/embeddings, /embedding(s), /embed, /rerank, /v1/rerank, /v2/rerank, /score,\n"
    "/invocations (TEI's shapes) instead of the generation routes.\n"
    "Exit status: 0 after a clean stop, 1 if the model or socket fails, 2 on a usage error.\n";

static size_t parse_size(const char *s, int *ok)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) {
        *ok = 0;
        return 0;
    }
    if (*end == 'k' || *end == 'K')
        v <<= 10, end++;
    else if (*end == 'm' || *end == 'M')
        v <<= 20, end++;
    else if (*end == 'g' || *end == 'G')
        v <<= 30, end++;
    if (*end)
        *ok = 0;
    return (size_t)v;
}

static int parse_int(const char *s, int lo, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > 1 << 24)
        return -1;
    *out = (int)v;
    return 0;
}

static void add_key(srv_config_t *c, const char *k, size_t len)
{
    while (len && (k[len - 1] == '\r' || k[len - 1] == ' ' || k[len - 1] == '\t'))
        len--;
    while (len && (*k == ' ' || *k == '\t'))
        k++, len--;
    if (!len || *k == '#' || c->n_keys >= SRV_MAX_KEYS)
        return;
    c->keys[c->n_keys++] = strndup(k, len);
}

static void add_list(srv_config_t *c, const char *list, int names)
{
    const char *p = list;
    while (*p) {
        size_t l = strcspn(p, ",");
        if (names) {
            if (l && c->n_names < SRV_MAX_NAMES)
                c->names[c->n_names++] = strndup(p, l);
        } else {
            add_key(c, p, l);
        }
        p += l;
        if (*p == ',')
            p++;
    }
}

static int read_key_file(srv_config_t *c, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "llm-fcgi serve: cannot read --api-key-file %s\n", path);
        return -1;
    }
    char line[1024];
    while (fgets(line, sizeof line, f))
        add_key(c, line, strcspn(line, "\n"));
    fclose(f);
    return 0;
}

/* --reasoning-parser / --tool-call-parser names, the generic parser's
 * markers (a usage error, exit 2). */
static int serve_check_parsers(const srv_config_t *c)
{
    lf_err_t err = {0};
    reasoning_mode_t rm = REASONING_MODE_NONE;
    toolcall_format_t tf;
    bool markers = (c->reasoning_start && *c->reasoning_start) || (c->reasoning_end && *c->reasoning_end);
    if (c->reasoning_parser && *c->reasoning_parser &&
        reasoning_mode_from_name(c->reasoning_parser, &rm, &err) == LF_OK &&
        (rm == REASONING_MODE_GENERIC || markers)) {
        reasoning_config_t rc = {REASONING_MODE_GENERIC, false, c->reasoning_start, c->reasoning_end};
        reasoning_t *probe = rm == REASONING_MODE_GENERIC ? reasoning_create_cfg(&rc, &err) : NULL;
        reasoning_free(probe);
        if (rm != REASONING_MODE_GENERIC)
            lf_err_set(&err, LF_ERR_INVALID, "--reasoning-start / --reasoning-end need --reasoning-parser generic");
        if (rm != REASONING_MODE_GENERIC || !probe) {
            fprintf(stderr, "llm-fcgi serve: %s\n", err.msg);
            return -1;
        }
    }
    if ((c->reasoning_parser && *c->reasoning_parser &&
         reasoning_mode_from_name(c->reasoning_parser, &rm, &err) != LF_OK) ||
        (c->tool_call_parser && *c->tool_call_parser &&
         toolcall_format_from_name(c->tool_call_parser, &tf, &err) != LF_OK)) {
        fprintf(stderr, "llm-fcgi serve: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* The served model name when --served-model-name is not given: a file's
 * name without its directory, as llama-server reports it (clients never
 * see the server's paths in /v1/models, "model" or the chat page); a URL's
 * last path segment; a hub reference (OWNER/NAME[:QUANT]) as given.
 * Returns a malloc'd string. */
static char *serve_default_name(const char *model)
{
    struct stat st;
    const char *scheme = strstr(model, "://");
    if (scheme) {
        const char *path = strchr(scheme + 3, '/');
        size_t len = path ? strcspn(path, "?#") : 0;
        while (len > 1 && path[len - 1] == '/')
            len--;
        const char *seg = path;
        for (size_t i = 0; path && i < len; i++)
            if (path[i] == '/')
                seg = path + i + 1;
        if (seg && seg < path + len)
            return strndup(seg, (size_t)(path + len - seg));
        return strdup(model);
    }
    if (stat(model, &st) != 0 && hub_ref_looks_like(model))
        return strdup(model);
    const char *base = strrchr(model, '/');
    return strdup(base && base[1] ? base + 1 : model);
}

/* -m OWNER/NAME[:QUANT] or a URL: the pulled file, downloaded when it is
 * not in the model directory yet ($LLM_MODELS_DIR), with the repository's
 * vision projector when it has one and no --mmproj / --no-mmproj says
 * otherwise (as llama-server's -hf). An existing path is always a path.
 * buf and mm (cap bytes each) hold the resolved paths. */
static int serve_resolve_model(srv_config_t *c, bool no_mmproj, char *buf, char *mm, size_t cap)
{
    struct stat st;
    if (stat(c->model_path, &st) == 0 || !hub_ref_looks_like(c->model_path))
        return 0;
    pull_opts_t o = {.progress = pull_progress_for(stderr), .log = stderr};
    lf_err_t err = {0};
    const bool want_mm = !no_mmproj && !(c->media.mmproj_path && *c->media.mmproj_path);
    if (pull_model(c->model_path, &o, buf, cap, want_mm ? mm : NULL, cap, NULL, &err) != LF_OK) {
        fprintf(stderr, "llm-fcgi serve: cannot get the model %s: %s%s\n", c->model_path, err.msg,
                want_mm ? " (--no-mmproj: the model without its vision projector)" : "");
        return -1;
    }
    fprintf(stderr, "llm-fcgi serve: model %s is %s\n", c->model_path, buf);
    c->model_path = buf;
    if (want_mm && *mm) {
        fprintf(stderr, "llm-fcgi serve: vision projector %s (images in messages; --no-mmproj leaves it out)\n", mm);
        c->media.mmproj_path = mm;
    }
    return 0;
}

enum { O_SOCKET = 256, O_LISTEN, O_NAME, O_KEY, O_KEYFILE, O_CTX, O_PAR, O_THR, O_HTTP, O_QUEUE, O_BODY,
       O_BATCH, O_DRAIN, O_PING, O_LOGP, O_TEMP, O_TOPP, O_TOPK, O_MINP, O_REP, O_MAXN, O_MINDIE, O_LMIFIN, O_KVMB,
       O_TMPL, O_RPARSE, O_TPARSE, O_RSTART, O_REND, O_GCACHE, O_IOTIME, O_MMPROJ, O_MAXIMG, O_IMGBYTES,
       O_IMGPX, O_IMGCACHE, O_MDOMAINS, O_MPRIVATE, O_MDIR, O_MTIMEOUT, O_MREDIR,
       O_SPEC, O_SPECMAX, O_SPECCOST, O_DRAFT, O_STORE, O_STORE_TTL, O_SNAPS,
       O_EMBED, O_RERANK, O_POOLING, O_MAXINPUTS, O_FA, O_CTK, O_CTV, O_NOMMPROJ };

/* A duration: seconds, or a number with s, m, h or d; -1 when bad. */
static int64_t parse_duration(const char *s)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 1)
        return -1;
    long long mul = !*end ? 1 : !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60 : !strcmp(end, "h") ? 3600
                  : !strcmp(end, "d") ? 86400 : -1;
    if (mul < 0 || v > (1LL << 40) / mul)
        return -1;
    return (int64_t)(v * mul);
}

/* A float in [lo, hi]; -1 when bad. */
static int parse_float(const char *s, double lo, double hi, float *out)
{
    char *end = NULL;
    double d = strtod(s, &end);
    if (!*s || *end || !(d >= lo && d <= hi))
        return -1;
    *out = (float)d;
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    srv_config_t c = {.parallel = 4, .max_queue = 32, .max_body = 16u << 20, .drain_seconds = 30,
                      .ping_seconds = 10, .batch_tokens = 512, .io_timeout_seconds = 60,
                      .media = {.image_cache_mb = 256, .media_max_redirects = 3}};
    const char *e;
    int ok = 1, names_from_flags = 0, keys_from_flags = 0, rc = 2, snaps = -1;
    bool no_mmproj = false;
    const char *key_file = getenv("LLM_API_KEY_FILE");
    c.model_path = getenv("LLM_MODEL");
    c.socket_path = getenv("LLM_SOCKET");
    c.listen_addr = getenv("LLM_LISTEN");
    if (c.socket_path && !*c.socket_path)
        c.socket_path = NULL;
    if (c.listen_addr && !*c.listen_addr)
        c.listen_addr = NULL;
    struct { const char *var; int *dst; int lo; } ints[] = {
        {"LLM_CTX_SIZE", &c.ctx_size, 0}, {"LLM_PARALLEL", &c.parallel, 1}, {"LLM_THREADS", &c.threads, 0},
        {"LLM_HTTP_THREADS", &c.http_threads, 0}, {"LLM_MAX_QUEUE", &c.max_queue, 0},
        {"LLM_BATCH_TOKENS", &c.batch_tokens, 1}, {"LLM_DRAIN_TIMEOUT", &c.drain_seconds, 0},
        {"LLM_PING_INTERVAL", &c.ping_seconds, 1}, {"LLM_KV_CACHE_MB", &c.kv_cache_mb, 0},
        {"LLM_IO_TIMEOUT", &c.io_timeout_seconds, 1}, {"LLM_MAX_IMAGES", &c.media.max_images, 1},
        {"LLM_IMAGE_CACHE_MB", &c.media.image_cache_mb, 0}, {"LLM_MEDIA_TIMEOUT", &c.media.media_timeout_s, 1},
        {"LLM_SPEC_DRAFT_MAX", &c.spec_draft_max, 1},
        {"LLM_STATE_SNAPSHOTS", &snaps, 0},
        {"LLM_MAX_BATCH_INPUTS", &c.max_batch_inputs, 1}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if ((e = getenv(ints[i].var)) && *e && parse_int(e, ints[i].lo, ints[i].dst) < 0) {
            fprintf(stderr, "llm-fcgi serve: bad %s=%s\n", ints[i].var, e);
            return 2;
        }
    if ((e = getenv("LLM_MAX_BODY")) && *e)
        c.max_body = parse_size(e, &ok);
    if ((e = getenv("LLM_CHAT_TEMPLATE")) && *e)
        c.chat_template_file = e;
    if ((e = getenv("LLM_LOG_PROMPTS")) && *e == '1')
        c.log_prompts = true;
    if ((e = getenv("LLM_LMI_FINISH_REASONS")) && *e == '1')
        c.lmi_finish_reasons = true;
    if ((e = getenv("LLM_FLASH_ATTN")) && *e && !cli_parse_flash_attn(e, &c.flash_attn)) {
        fprintf(stderr, "llm-fcgi serve: bad LLM_FLASH_ATTN=%s (auto, on or off)\n", e);
        return 2;
    }
    if (((e = getenv("LLM_CACHE_TYPE_K")) && *e && !kv_type_parse(e, &c.cache_type_k)) ||
        ((e = getenv("LLM_CACHE_TYPE_V")) && *e && !kv_type_parse(e, &c.cache_type_v))) {
        fprintf(stderr, "llm-fcgi serve: bad cache type %s (f16, q8_0 or q4_0)\n", e);
        return 2;
    }
    if ((e = getenv("LLM_EMBEDDING")) && *e == '1')
        c.embedding = true;
    if ((e = getenv("LLM_RERANK")) && *e == '1')
        c.rerank = true;
    if ((e = getenv("LLM_POOLING")) && *e)
        c.pooling = e;
    c.spec = getenv("LLM_SPEC");
    c.model_draft = getenv("LLM_MODEL_DRAFT");
    c.reasoning_parser = getenv("LLM_REASONING_PARSER");
    c.tool_call_parser = getenv("LLM_TOOL_CALL_PARSER");
    c.reasoning_start = getenv("LLM_REASONING_START");
    c.reasoning_end = getenv("LLM_REASONING_END");
    c.media.mmproj_path = getenv("LLM_MMPROJ");
    c.media.media_domains = getenv("LLM_MEDIA_DOMAINS");
    c.media.media_dir = getenv("LLM_MEDIA_DIR");
    if ((e = getenv("LLM_MEDIA_ALLOW_PRIVATE")) && *e == '1')
        c.media.media_allow_private = true;
    if ((e = getenv("LLM_MAX_IMAGE_BYTES")) && *e)
        c.media.max_image_bytes = (int64_t)parse_size(e, &ok);
    if ((e = getenv("LLM_MAX_IMAGE_PIXELS")) && *e)
        c.media.max_image_pixels = (int64_t)parse_size(e, &ok);
    if ((e = getenv("LLM_STORE")) && *e)
        c.store = e;
    if ((e = getenv("LLM_STORE_TTL")) && *e && (c.store_ttl = parse_duration(e)) < 0) {
        fprintf(stderr, "llm-fcgi serve: bad LLM_STORE_TTL=%s\n", e);
        return 2;
    }

    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},       {"socket", required_argument, 0, O_SOCKET},
        {"listen", required_argument, 0, O_LISTEN}, {"served-model-name", required_argument, 0, O_NAME},
        {"api-key", required_argument, 0, O_KEY},   {"api-key-file", required_argument, 0, O_KEYFILE},
        {"ctx-size", required_argument, 0, O_CTX},  {"parallel", required_argument, 0, O_PAR},
        {"threads", required_argument, 0, O_THR},   {"http-threads", required_argument, 0, O_HTTP},
        {"max-queue", required_argument, 0, O_QUEUE}, {"max-body", required_argument, 0, O_BODY},
        {"batch-tokens", required_argument, 0, O_BATCH}, {"drain-timeout", required_argument, 0, O_DRAIN},
        {"ping-interval", required_argument, 0, O_PING}, {"log-prompts", no_argument, 0, O_LOGP},
        {"kv-cache-mb", required_argument, 0, O_KVMB}, {"state-snapshots", required_argument, 0, O_SNAPS},
        {"temperature", required_argument, 0, O_TEMP}, {"top-p", required_argument, 0, O_TOPP},
        {"top-k", required_argument, 0, O_TOPK},    {"min-p", required_argument, 0, O_MINP},
        {"repetition-penalty", required_argument, 0, O_REP}, {"max-n", required_argument, 0, O_MAXN},
        {"mindie-extras", no_argument, 0, O_MINDIE}, {"lmi-finish-reasons", no_argument, 0, O_LMIFIN},
        {"chat-template", required_argument, 0, O_TMPL}, {"reasoning-parser", required_argument, 0, O_RPARSE},
        {"tool-call-parser", required_argument, 0, O_TPARSE},
        {"reasoning-start", required_argument, 0, O_RSTART}, {"reasoning-end", required_argument, 0, O_REND},
        {"grammar-cache-mb", required_argument, 0, O_GCACHE},
        {"io-timeout", required_argument, 0, O_IOTIME},
        {"mmproj", required_argument, 0, O_MMPROJ}, {"no-mmproj", no_argument, 0, O_NOMMPROJ},
        {"max-images", required_argument, 0, O_MAXIMG},
        {"max-image-bytes", required_argument, 0, O_IMGBYTES}, {"max-image-pixels", required_argument, 0, O_IMGPX},
        {"image-cache-mb", required_argument, 0, O_IMGCACHE}, {"media-domains", required_argument, 0, O_MDOMAINS},
        {"media-allow-private", no_argument, 0, O_MPRIVATE}, {"media-dir", required_argument, 0, O_MDIR},
        {"media-timeout", required_argument, 0, O_MTIMEOUT},
        {"media-max-redirects", required_argument, 0, O_MREDIR},
        {"embedding", no_argument, 0, O_EMBED},     {"embeddings", no_argument, 0, O_EMBED},
        {"rerank", no_argument, 0, O_RERANK},       {"reranking", no_argument, 0, O_RERANK},
        {"pooling", required_argument, 0, O_POOLING}, {"max-batch-inputs", required_argument, 0, O_MAXINPUTS},
        {"spec", required_argument, 0, O_SPEC}, {"spec-draft-max", required_argument, 0, O_SPECMAX},
        {"spec-row-cost", required_argument, 0, O_SPECCOST}, {"model-draft", required_argument, 0, O_DRAFT},
        {"flash-attn", required_argument, 0, O_FA}, {"cache-type-k", required_argument, 0, O_CTK},
        {"cache-type-v", required_argument, 0, O_CTV},
        {"store", required_argument, 0, O_STORE}, {"store-ttl", required_argument, 0, O_STORE_TTL},
        {"help", no_argument, 0, 'h'},              {0, 0, 0, 0}};
    int o;
    optind = 1;
    cli_llama_aliases(argc, argv);
    while ((o = getopt_long(argc, argv, "m:h", opts, NULL)) != -1) {
        int bad = 0;
        switch (o) {
        case 'm': c.model_path = optarg; break;
        case O_SOCKET: c.socket_path = optarg; break;
        case O_LISTEN: c.listen_addr = optarg; break;
        case O_NAME:
            if (!names_from_flags++)
                c.n_names = 0;
            if (c.n_names < SRV_MAX_NAMES)
                c.names[c.n_names++] = strdup(optarg);
            break;
        case O_KEY: keys_from_flags = 1; add_key(&c, optarg, strlen(optarg)); break;
        case O_KEYFILE: key_file = optarg; break;
        case O_CTX: bad = parse_int(optarg, 0, &c.ctx_size); break;
        case O_PAR: bad = parse_int(optarg, 1, &c.parallel); break;
        case O_THR: bad = parse_int(optarg, 0, &c.threads); break;
        case O_HTTP: bad = parse_int(optarg, 1, &c.http_threads); break;
        case O_QUEUE: bad = parse_int(optarg, 0, &c.max_queue); break;
        case O_BODY: c.max_body = parse_size(optarg, &ok); break;
        case O_BATCH: bad = parse_int(optarg, 1, &c.batch_tokens); break;
        case O_DRAIN: bad = parse_int(optarg, 0, &c.drain_seconds); break;
        case O_PING: bad = parse_int(optarg, 1, &c.ping_seconds); break;
        case O_IOTIME: bad = parse_int(optarg, 1, &c.io_timeout_seconds); break;
        case O_TEMP: bad = parse_float(optarg, 0, 2, &c.def_temperature); c.def_set.temperature = true; break;
        case O_TOPP: bad = parse_float(optarg, 1e-9, 1, &c.def_top_p); c.def_set.top_p = true; break;
        case O_TOPK: bad = parse_int(optarg, -1, &c.def_top_k); c.def_set.top_k = true; break;
        case O_MINP: bad = parse_float(optarg, 0, 1, &c.def_min_p); c.def_set.min_p = true; break;
        case O_REP:
            bad = parse_float(optarg, 1e-9, 1e6, &c.def_repetition_penalty);
            c.def_set.repetition_penalty = true;
            break;
        case O_MAXN: bad = parse_int(optarg, 1, &c.max_n); break;
        case O_MINDIE: c.mindie = true; break;
        case O_LMIFIN: c.lmi_finish_reasons = true; break;
        case O_LOGP: c.log_prompts = true; break;
        case O_KVMB: bad = parse_int(optarg, 0, &c.kv_cache_mb); break;
        case O_SNAPS: bad = parse_int(optarg, 0, &snaps); break;
        case O_TMPL: c.chat_template_file = optarg; break;
        case O_RPARSE: c.reasoning_parser = optarg; break;
        case O_TPARSE: c.tool_call_parser = optarg; break;
        case O_RSTART: c.reasoning_start = optarg; break;
        case O_REND: c.reasoning_end = optarg; break;
        case O_GCACHE: bad = parse_int(optarg, 1, &c.grammar_cache_mb); break;
        case O_MMPROJ: c.media.mmproj_path = optarg; break;
        case O_NOMMPROJ: no_mmproj = true; break;
        case O_MAXIMG: bad = parse_int(optarg, 1, &c.media.max_images); break;
        case O_IMGBYTES: c.media.max_image_bytes = (int64_t)parse_size(optarg, &ok); break;
        case O_IMGPX: c.media.max_image_pixels = (int64_t)parse_size(optarg, &ok); break;
        case O_IMGCACHE: bad = parse_int(optarg, 0, &c.media.image_cache_mb); break;
        case O_MDOMAINS: c.media.media_domains = optarg; break;
        case O_MPRIVATE: c.media.media_allow_private = true; break;
        case O_MDIR: c.media.media_dir = optarg; break;
        case O_MTIMEOUT: bad = parse_int(optarg, 1, &c.media.media_timeout_s); break;
        case O_MREDIR: bad = parse_int(optarg, 0, &c.media.media_max_redirects); break;
        case O_EMBED: c.embedding = true; break;
        case O_RERANK: c.rerank = true; break;
        case O_POOLING: c.pooling = optarg; break;
        case O_MAXINPUTS: bad = parse_int(optarg, 1, &c.max_batch_inputs); break;
        case O_SPEC: c.spec = optarg; break;
        case O_SPECMAX: bad = parse_int(optarg, 1, &c.spec_draft_max); break;
        case O_SPECCOST: bad = parse_float(optarg, 1e-6, 100, &c.spec_row_cost); break;
        case O_DRAFT: c.model_draft = optarg; break;
        case O_FA: bad = cli_parse_flash_attn(optarg, &c.flash_attn) ? 0 : -1; break;
        case O_CTK: bad = kv_type_parse(optarg, &c.cache_type_k) ? 0 : -1; break;
        case O_CTV: bad = kv_type_parse(optarg, &c.cache_type_v) ? 0 : -1; break;
        case O_STORE: c.store = optarg; break;
        case O_STORE_TTL: bad = (c.store_ttl = parse_duration(optarg)) < 0; break;
        case 'h': fputs(usage, stdout); rc = 0; goto out;
        default: fputs(usage, stderr); goto out;
        }
        if (bad || !ok) {
            fprintf(stderr, "llm-fcgi serve: bad value '%s' (try --help)\n", optarg);
            goto out;
        }
    }
    c.state_snapshots = snaps < 0 ? 0 : snaps == 0 ? -1 : snaps; /* sched_opts_t: 0 default, < 0 none */
    if ((!c.reasoning_parser || !*c.reasoning_parser) &&
        ((c.reasoning_start && *c.reasoning_start) || (c.reasoning_end && *c.reasoning_end)))
        c.reasoning_parser = "generic"; /* the markers imply the generic parser */
    if (serve_check_parsers(&c) < 0)
        goto out;
    if (c.spec && *c.spec && strcmp(c.spec, "ngram") && strcmp(c.spec, "none") && strcmp(c.spec, "mtp")) {
        fprintf(stderr, "llm-fcgi serve: --spec %s: expected ngram, mtp or none\n", c.spec);
        goto out;
    }
    if (c.spec_draft_max > SPEC_K_MAX) {
        fprintf(stderr, "llm-fcgi serve: --spec-draft-max %d: at most %d\n", c.spec_draft_max, SPEC_K_MAX);
        goto out;
    }
    if (optind < argc) {
        fprintf(stderr, "llm-fcgi serve: unexpected argument '%s'\n", argv[optind]);
        goto out;
    }
    if (!c.model_path || !*c.model_path) {
        fprintf(stderr, "llm-fcgi serve: no model: pass -m MODEL.gguf or set LLM_MODEL (try --help)\n");
        goto out;
    }
    if (!names_from_flags && (e = getenv("LLM_SERVED_MODEL_NAME")) && *e)
        add_list(&c, e, 1);
    if (c.n_names == 0)
        c.names[c.n_names++] = serve_default_name(c.model_path);
    static char resolved[4096], resolved_mm[4096];
    if (serve_resolve_model(&c, no_mmproj, resolved, resolved_mm, sizeof resolved) < 0) {
        rc = 1;
        goto out;
    }
    if (!keys_from_flags && (e = getenv("LLM_API_KEY")) && *e)
        add_list(&c, e, 0);
    if (key_file && *key_file && read_key_file(&c, key_file) < 0) {
        rc = 1;
        goto out;
    }
    if (!c.socket_path && !c.listen_addr)
        c.socket_path = NULL; /* srv_run checks fd 0 first, then the default */
    if (c.http_threads <= 0)
        c.http_threads = c.parallel + c.max_queue + 4;
    rc = srv_run(&c);
out:
    for (int i = 0; i < c.n_keys; i++) {
        memset(c.keys[i], 0, strlen(c.keys[i]));
        free(c.keys[i]);
    }
    for (int i = 0; i < c.n_names; i++)
        free((char *)c.names[i]);
    return rc;
}
