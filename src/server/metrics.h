/* metrics.h - request counters and latency histograms for /metrics.
 *
 * Thread-safe (one mutex); updated by acceptor threads once per request
 * and once per token. Rendered in the Prometheus text format together with
 * the scheduler's gauges (running, waiting, KV usage, token totals).
 */
#ifndef LF_METRICS_H
#define LF_METRICS_H

#include <pthread.h>
#include <stdint.h>

#include "engine/sched/sched.h"

#define METRICS_N_BUCKETS 12

typedef struct {
    uint64_t counts[METRICS_N_BUCKETS + 1]; /* last: +Inf */
    double sum;
    uint64_t n;
} metrics_hist_t;

typedef struct {
    int status;
    uint64_t n;
} metrics_status_t;

typedef struct {
    pthread_mutex_t mu;
    metrics_status_t by_status[16];
    int n_status;
    metrics_hist_t ttft;   /* seconds */
    metrics_hist_t itl;    /* seconds */
    uint64_t disconnects;
} metrics_t;

void metrics_init(metrics_t *m);
void metrics_destroy(metrics_t *m);
void metrics_request(metrics_t *m, int status);
void metrics_ttft(metrics_t *m, double seconds);
void metrics_itl(metrics_t *m, double seconds);
void metrics_disconnect(metrics_t *m);
/* Prometheus text (malloc'd, caller frees); st may be NULL. */
char *metrics_render(metrics_t *m, const sched_stats_t *st, const char *model_name);

#endif
