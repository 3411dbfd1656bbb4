/* metrics.c - counters, histograms and the Prometheus text (see metrics.h). */
#include "server/metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double bounds[METRICS_N_BUCKETS] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                 0.25,  0.5,   1.0,  2.5,   5.0,  10.0};

void metrics_init(metrics_t *m)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
}

void metrics_destroy(metrics_t *m)
{
    pthread_mutex_destroy(&m->mu);
}

void metrics_request(metrics_t *m, int status)
{
    pthread_mutex_lock(&m->mu);
    int i;
    for (i = 0; i < m->n_status && m->by_status[i].status != status; i++)
        ;
    if (i == m->n_status && i < 16)
        m->by_status[m->n_status++].status = status;
    if (i < 16)
        m->by_status[i].n++;
    pthread_mutex_unlock(&m->mu);
}

static void hist_add(metrics_t *m, metrics_hist_t *h, double v)
{
    pthread_mutex_lock(&m->mu);
    int b = 0;
    while (b < METRICS_N_BUCKETS && v > bounds[b])
        b++;
    h->counts[b]++;
    h->sum += v;
    h->n++;
    pthread_mutex_unlock(&m->mu);
}

void metrics_ttft(metrics_t *m, double s) { hist_add(m, &m->ttft, s); }
void metrics_itl(metrics_t *m, double s) { hist_add(m, &m->itl, s); }

void metrics_disconnect(metrics_t *m)
{
    pthread_mutex_lock(&m->mu);
    m->disconnects++;
    pthread_mutex_unlock(&m->mu);
}

typedef struct {
    char *s;
    size_t len, cap;
} buf_t;

static void bprintf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(buf_t *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = b->s ? vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap) : -1;
        va_end(ap);
        if (n >= 0 && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t nc = b->cap ? b->cap * 2 : 4096;
        if (n > 0 && nc < b->len + (size_t)n + 1)
            nc = b->len + (size_t)n + 1;
        char *p = realloc(b->s, nc);
        if (!p)
            return;
        b->s = p;
        b->cap = nc;
    }
}

static void hist_render(buf_t *b, const char *name, const char *help, const metrics_hist_t *h,
                        const char *model)
{
    bprintf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t acc = 0;
    for (int i = 0; i < METRICS_N_BUCKETS; i++) {
        acc += h->counts[i];
        bprintf(b, "%s_bucket{model_name=\"%s\",le=\"%g\"} %llu\n", name, model, bounds[i],
                (unsigned long long)acc);
    }
    acc += h->counts[METRICS_N_BUCKETS];
    bprintf(b, "%s_bucket{model_name=\"%s\",le=\"+Inf\"} %llu\n", name, model, (unsigned long long)acc);
    bprintf(b, "%s_sum{model_name=\"%s\"} %g\n%s_count{model_name=\"%s\"} %llu\n", name, model, h->sum,
            name, model, (unsigned long long)h->n);
}

/* Label values escape backslash, quote and newline (Prometheus text format). */
static void label_escape(const char *in, char *out, size_t cap)
{
    size_t w = 0;
    for (; *in && w + 3 < cap; in++) {
        if (*in == '\\' || *in == '"' || *in == '\n') {
            out[w++] = '\\';
            out[w++] = *in == '\n' ? 'n' : *in;
        } else {
            out[w++] = *in;
        }
    }
    out[w] = '\0';
}

/* Hybrid models: the recurrent state beside the KV cache. */
static void render_state(buf_t *b, const char *model, const sched_stats_t *st)
{
    bprintf(b, "# HELP llm_recurrent_state_bytes_per_sequence Recurrent state of one sequence (delta / conv states).\n"
               "# TYPE llm_recurrent_state_bytes_per_sequence gauge\n"
               "llm_recurrent_state_bytes_per_sequence{model_name=\"%s\"} %llu\n",
            model, (unsigned long long)st->state_per_seq_bytes);
    bprintf(b, "# HELP llm_recurrent_state_bytes Recurrent state memory of all slots.\n"
               "# TYPE llm_recurrent_state_bytes gauge\nllm_recurrent_state_bytes{model_name=\"%s\"} %llu\n",
            model, (unsigned long long)st->state_bytes);
    bprintf(b, "# HELP llm_recurrent_state_snapshot_bytes Memory of the state snapshots kept for the prefix cache.\n"
               "# TYPE llm_recurrent_state_snapshot_bytes gauge\n"
               "llm_recurrent_state_snapshot_bytes{model_name=\"%s\"} %llu\n",
            model, (unsigned long long)st->state_snap_bytes);
    bprintf(b, "# HELP llm_recurrent_state_snapshots State snapshots cached for reuse.\n"
               "# TYPE llm_recurrent_state_snapshots gauge\nllm_recurrent_state_snapshots{model_name=\"%s\"} %d\n",
            model, st->state_snapshots);
    bprintf(b, "# HELP llm_recurrent_state_snapshot_slots State snapshots the cache can hold.\n"
               "# TYPE llm_recurrent_state_snapshot_slots gauge\n"
               "llm_recurrent_state_snapshot_slots{model_name=\"%s\"} %d\n",
            model, st->state_snap_slots);
    bprintf(b, "# HELP llm_recurrent_state_restores_total Prompts that resumed from a state snapshot.\n"
               "# TYPE llm_recurrent_state_restores_total counter\n"
               "llm_recurrent_state_restores_total{model_name=\"%s\"} %llu\n",
            model, (unsigned long long)st->state_restores);
}

/* The encoded-image cache and the encoder's work (issue 29). */
static void metrics_render_images(buf_t *b, const sched_stats_t *st, const char *model)
{
    const struct { const char *name, *type, *help; uint64_t v; } rows[] = {
        {"llm_image_cache_entries", "gauge", "Encoded image arrays held for reuse.", st->image_cache_entries},
        {"llm_image_cache_bytes", "gauge", "Memory of the encoded-image cache.", st->image_cache_bytes},
        {"llm_image_cache_capacity_bytes", "gauge", "Budget of the encoded-image cache (--image-cache-mb).",
         st->image_cache_max_bytes},
        {"llm_image_cache_hits_total", "counter", "Image arrays found encoded in the cache.", st->image_cache_hits},
        {"llm_image_cache_misses_total", "counter", "Image arrays not in the cache (encoded).",
         st->image_cache_misses},
        {"llm_image_cache_evictions_total", "counter", "Encoded images dropped for room.", st->image_cache_evictions},
        {"llm_image_encode_stages_total", "counter", "Vision encoder stages run (patches, layers, projector).",
         st->image_encode_stages},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        bprintf(b, "# HELP %s %s\n# TYPE %s %s\n%s{model_name=\"%s\"} %llu\n", rows[i].name, rows[i].help,
                rows[i].name, rows[i].type, rows[i].name, model, (unsigned long long)rows[i].v);
}

char *metrics_render(metrics_t *m, const sched_stats_t *st, const char *model_name)
{
    char model[256];
    label_escape(model_name, model, sizeof model);
    buf_t b = {0};
    bprintf(&b, "# HELP llm_requests_total HTTP requests answered, by status.\n"
                "# TYPE llm_requests_total counter\n");
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < m->n_status; i++)
        bprintf(&b, "llm_requests_total{model_name=\"%s\",status=\"%d\"} %llu\n", model, m->by_status[i].status,
                (unsigned long long)m->by_status[i].n);
    bprintf(&b, "# HELP llm_client_disconnects_total Streams cancelled because the client went away.\n"
                "# TYPE llm_client_disconnects_total counter\nllm_client_disconnects_total{model_name=\"%s\"} %llu\n",
            model, (unsigned long long)m->disconnects);
    metrics_hist_t ttft = m->ttft, itl = m->itl;
    pthread_mutex_unlock(&m->mu);
    hist_render(&b, "llm_time_to_first_token_seconds", "Time from request to first generated token.", &ttft, model);
    hist_render(&b, "llm_inter_token_latency_seconds", "Time between two generated tokens of a stream.", &itl,
                model);
    if (st) {
        bprintf(&b, "# HELP llm_prompt_tokens_total Prompt tokens evaluated.\n# TYPE llm_prompt_tokens_total counter\n"
                    "llm_prompt_tokens_total{model_name=\"%s\"} %llu\n", model, (unsigned long long)st->prompt_tokens);
        bprintf(&b, "# HELP llm_prefix_cache_hit_tokens_total Prompt tokens reused from the prefix cache.\n"
                    "# TYPE llm_prefix_cache_hit_tokens_total counter\nllm_prefix_cache_hit_tokens_total{model_name=\"%s\"} %llu\n",
                model, (unsigned long long)st->cached_tokens);
        bprintf(&b, "# HELP llm_generation_tokens_total Tokens generated.\n# TYPE llm_generation_tokens_total counter\n"
                    "llm_generation_tokens_total{model_name=\"%s\"} %llu\n", model, (unsigned long long)st->gen_tokens);
        bprintf(&b, "# HELP llm_num_requests_running Sequences holding a slot.\n# TYPE llm_num_requests_running gauge\n"
                    "llm_num_requests_running{model_name=\"%s\"} %d\n", model, st->running);
        bprintf(&b, "# HELP llm_num_requests_waiting Sequences waiting for a slot.\n# TYPE llm_num_requests_waiting gauge\n"
                    "llm_num_requests_waiting{model_name=\"%s\"} %d\n", model, st->waiting);
        /* memory, not positions: sliding-window layers hold their window */
        double usage = st->kv_bytes ? (double)st->kv_used_bytes / (double)st->kv_bytes : 0.0;
        bprintf(&b, "# HELP llm_kv_cache_usage_perc Fraction of KV cache memory in use.\n"
                    "# TYPE llm_kv_cache_usage_perc gauge\nllm_kv_cache_usage_perc{model_name=\"%s\"} %g\n", model, usage);
        bprintf(&b, "# HELP llm_kv_cache_used_tokens KV cache positions held (whole blocks).\n"
                    "# TYPE llm_kv_cache_used_tokens gauge\nllm_kv_cache_used_tokens{model_name=\"%s\"} %lld\n",
                model, (long long)st->kv_used_tokens);
        bprintf(&b, "# HELP llm_kv_cache_capacity_tokens KV cache budget in positions.\n"
                    "# TYPE llm_kv_cache_capacity_tokens gauge\nllm_kv_cache_capacity_tokens{model_name=\"%s\"} %lld\n",
                model, (long long)st->kv_cap_tokens);
        bprintf(&b, "# HELP llm_num_preemptions_total Running sequences preempted for KV memory (recomputed later).\n"
                    "# TYPE llm_num_preemptions_total counter\nllm_num_preemptions_total{model_name=\"%s\"} %llu\n",
                model, (unsigned long long)st->preemptions);
        bprintf(&b, "# HELP llm_kv_cache_bytes KV cache memory allocated.\n# TYPE llm_kv_cache_bytes gauge\n"
                    "llm_kv_cache_bytes{model_name=\"%s\"} %llu\n", model, (unsigned long long)st->kv_bytes);
        bprintf(&b, "# HELP llm_kv_cache_info How the KV cache stores K and V and how attention reads it.\n"
                    "# TYPE llm_kv_cache_info gauge\nllm_kv_cache_info{model_name=\"%s\",cache_type_k=\"%s\","
                    "cache_type_v=\"%s\",flash_attn=\"%s\"} 1\n",
                model, kv_type_name(st->kv_type_k), kv_type_name(st->kv_type_v),
                st->attn == FWD_ATTN_FLASH ? "on" : st->attn == FWD_ATTN_EXACT ? "off" : "auto");
        bprintf(&b, "# HELP llm_kv_cache_used_bytes KV cache memory held by running sequences.\n"
                    "# TYPE llm_kv_cache_used_bytes gauge\nllm_kv_cache_used_bytes{model_name=\"%s\"} %llu\n", model,
                (unsigned long long)st->kv_used_bytes);
        if (st->state_per_seq_bytes)
            render_state(&b, model, st);
        bprintf(&b, "# HELP llm_spec_draft_tokens_total Draft tokens verified by speculative decoding, per source.\n"
                    "# TYPE llm_spec_draft_tokens_total counter\n");
        for (int src = SPEC_SRC_NONE + 1; src < SPEC_SRC_COUNT; src++)
            bprintf(&b, "llm_spec_draft_tokens_total{model_name=\"%s\",source=\"%s\"} %llu\n", model,
                    spec_src_name((spec_src_t)src), (unsigned long long)st->spec_drafted[src]);
        bprintf(&b, "# HELP llm_spec_accepted_tokens_total Draft tokens kept (the output is the same either way).\n"
                    "# TYPE llm_spec_accepted_tokens_total counter\n");
        for (int src = SPEC_SRC_NONE + 1; src < SPEC_SRC_COUNT; src++)
            bprintf(&b, "llm_spec_accepted_tokens_total{model_name=\"%s\",source=\"%s\"} %llu\n", model,
                    spec_src_name((spec_src_t)src), (unsigned long long)st->spec_accepted[src]);
        if (st->state_per_seq_bytes)
            bprintf(&b, "# HELP llm_spec_refed_tokens_total Positions evaluated again after a recurrent state went "
                        "back to its checkpoint (rejected drafts on a hybrid model).\n"
                        "# TYPE llm_spec_refed_tokens_total counter\nllm_spec_refed_tokens_total{model_name=\"%s\"} %llu\n",
                    model, (unsigned long long)st->spec_refed);
        metrics_render_images(&b, st, model);
    }
    return b.s;
}
