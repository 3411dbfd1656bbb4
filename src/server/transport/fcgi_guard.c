/* fcgi_guard.c - the connection reader in front of the workers and libfcgi
 * (see fcgi_guard.h). One epoll thread; level-triggered; everything it
 * touches is non-blocking, so no peer can make it wait. */
#include "server/transport/fcgi_guard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct conn {
    int fd;
    fcgi_parser_t *p;
    double started, last;      /* monotonic seconds */
    size_t held;               /* input bytes taken from this peer */
    bool closing;              /* sending a final answer, then closing */
    bool want_out;             /* registered for EPOLLOUT */
    bool dead;                 /* dropped or handed over: freed after the
                                  current batch of events */
    struct conn *prev, *next;  /* in start order, oldest first */
} conn_t;

typedef struct ready {
    fcgi_conn_t c;
    struct ready *next;
} ready_t;

struct fcgi_guard {
    fcgi_guard_opts_t o;
    int ep, wake;
    pthread_t thread;
    atomic_bool stopping;
    /* guard thread only */
    conn_t *head, *tail;
    conn_t *graveyard;         /* retired during this batch (linked by next) */
    int n_conns;
    size_t held;
    bool listening;
    double listen_retry;       /* after EMFILE: when to accept again */
    double last_log;
    int unlogged;
    /* shared with the workers */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ready_t *rhead, *rtail;
    int n_ready;
    bool done;
    fcgi_guard_stats_t stats;
};

static char TAG_LISTEN, TAG_WAKE;

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void count(fcgi_guard_t *g, uint64_t *field)
{
    pthread_mutex_lock(&g->mu);
    (*field)++;
    pthread_mutex_unlock(&g->mu);
}

/* One line per dropped peer, at most one a second (a hostile peer must not
 * be able to flood the log); the rest are counted in the next line. */
static void log_drop(fcgi_guard_t *g, const char *why)
{
    double now = mono();
    if (now - g->last_log < 1.0) {
        g->unlogged++;
        return;
    }
    if (g->unlogged)
        fprintf(stderr, "llm-fcgi: fcgi: dropped a connection: %s (and %d more since the last message)\n", why,
                g->unlogged);
    else
        fprintf(stderr, "llm-fcgi: fcgi: dropped a connection: %s\n", why);
    g->last_log = now;
    g->unlogged = 0;
}

static void unlink_conn(fcgi_guard_t *g, conn_t *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        g->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        g->tail = c->prev;
    g->n_conns--;
    g->held -= c->held;
    epoll_ctl(g->ep, EPOLL_CTL_DEL, c->fd, NULL);
}

/* Takes c out of the live list; its memory goes after the current batch
 * of epoll events (a later event of the batch may still point to it). */
static void retire(fcgi_guard_t *g, conn_t *c)
{
    unlink_conn(g, c);
    fcgi_parser_free(c->p);
    c->p = NULL;
    c->dead = true;
    c->next = g->graveyard;
    g->graveyard = c;
}

static void drop(fcgi_guard_t *g, conn_t *c)
{
    close(c->fd);
    retire(g, c);
}

static void bury(fcgi_guard_t *g)
{
    while (g->graveyard) {
        conn_t *c = g->graveyard;
        g->graveyard = c->next;
        free(c);
    }
}

static void evict_oldest(fcgi_guard_t *g, conn_t *except)
{
    for (conn_t *c = g->head; c; c = c->next)
        if (c != except) {
            count(g, &g->stats.evicted);
            log_drop(g, "evicted: too many connections or too much input held at once");
            drop(g, c);
            return;
        }
}

static void want_out(fcgi_guard_t *g, conn_t *c, bool on)
{
    if (c->want_out == on)
        return;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | (on ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(g->ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = on;
}

/* Sends what the parser queued (management answers); false on a dead peer. */
static bool flush_reply(fcgi_guard_t *g, conn_t *c)
{
    size_t n;
    const uint8_t *p = fcgi_parser_reply(c->p, &n);
    while (n) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (w <= 0)
            return false;
        fcgi_parser_reply_sent(c->p, (size_t)w);
        p = fcgi_parser_reply(c->p, &n);
    }
    want_out(g, c, n > 0);
    return true;
}

static void set_listening(fcgi_guard_t *g, bool on)
{
    if (g->listening == on)
        return;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &TAG_LISTEN};
    epoll_ctl(g->ep, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, g->o.listen_fd, on ? &ev : NULL);
    g->listening = on;
}

static bool ready_full(fcgi_guard_t *g)
{
    pthread_mutex_lock(&g->mu);
    bool full = g->n_ready >= g->o.max_ready;
    pthread_mutex_unlock(&g->mu);
    return full;
}

/* The request is complete: the connection goes to the workers. */
static void hand_over(fcgi_guard_t *g, conn_t *c)
{
    ready_t *r = calloc(1, sizeof *r);
    size_t n;
    const uint8_t *rep = fcgi_parser_reply(c->p, &n);
    if (!r || (n && !(r->c.reply = malloc(n)))) {
        free(r);
        log_drop(g, "out of memory");
        drop(g, c);
        return;
    }
    if (n) {
        memcpy(r->c.reply, rep, n);
        r->c.reply_len = n;
    }
    fcgi_parser_take(c->p, &r->c.req);
    int fl = fcntl(c->fd, F_GETFL);
    fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK);
    r->c.fd = c->fd;
    retire(g, c);
    pthread_mutex_lock(&g->mu);
    if (g->rtail)
        g->rtail->next = r;
    else
        g->rhead = r;
    g->rtail = r;
    g->n_ready++;
    g->stats.requests++;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void on_readable(fcgi_guard_t *g, conn_t *c)
{
    uint8_t buf[65536];
    ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        if (!c->closing)
            count(g, &g->stats.closed_early);
        drop(g, c);
        return;
    }
    c->last = mono();
    if (c->closing)
        return; /* the answer is final: whatever else comes is dropped */
    size_t used = 0;
    fcgi_parse_status_t st = fcgi_parser_feed(c->p, buf, (size_t)n, &used);
    c->held += used;
    g->held += used;
    if (!flush_reply(g, c)) {
        count(g, &g->stats.closed_early);
        drop(g, c);
        return;
    }
    switch (st) {
    case FCGI_PARSE_MORE:
        while (g->held > g->o.max_buffered && g->head && (g->head != c || c->next))
            evict_oldest(g, c);
        if (g->held > g->o.max_buffered) {
            count(g, &g->stats.protocol_errors);
            log_drop(g, "more input than the server holds for one request");
            drop(g, c);
        }
        break;
    case FCGI_PARSE_DONE:
        hand_over(g, c);
        break;
    case FCGI_PARSE_CLOSE:
        count(g, &g->stats.protocol_errors);
        log_drop(g, fcgi_parser_error(c->p));
        c->closing = true;
        if (!c->want_out)
            drop(g, c);
        break;
    case FCGI_PARSE_ERROR:
        count(g, &g->stats.protocol_errors);
        log_drop(g, fcgi_parser_error(c->p));
        drop(g, c);
        break;
    }
}

static bool addr_allowed(const fcgi_guard_t *g, const struct sockaddr_storage *sa)
{
    if (!g->o.allowed_addrs || (sa->ss_family != AF_INET && sa->ss_family != AF_INET6))
        return true;
    char ip[INET6_ADDRSTRLEN] = "";
    if (sa->ss_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, ip, sizeof ip);
    else
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, ip, sizeof ip);
    size_t l = strlen(ip);
    for (const char *p = g->o.allowed_addrs; *p;) {
        const char *e = strchr(p, ',');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        while (k && p[k - 1] == ' ')
            k--;
        while (k && *p == ' ')
            p++, k--;
        if (k == l && !memcmp(p, ip, l))
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

static void on_listen(fcgi_guard_t *g)
{
    for (int i = 0; i < 64; i++) {
        if (ready_full(g)) {
            set_listening(g, false); /* workers are behind: leave the rest in the backlog */
            return;
        }
        struct sockaddr_storage sa;
        socklen_t sl = sizeof sa;
        int fd = accept4(g->o.listen_fd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* out of descriptors: free the oldest and pause a moment */
                if (g->head)
                    evict_oldest(g, NULL);
                set_listening(g, false);
                g->listen_retry = mono() + 0.1;
            }
            return; /* EAGAIN, or a connection that went away */
        }
        count(g, &g->stats.accepted);
        if (!addr_allowed(g, &sa)) {
            count(g, &g->stats.refused);
            log_drop(g, "peer address not in FCGI_WEB_SERVER_ADDRS");
            close(fd);
            continue;
        }
        if (g->n_conns >= g->o.max_conns)
            evict_oldest(g, NULL);
        conn_t *c = calloc(1, sizeof *c);
        if (c)
            c->p = fcgi_parser_create(&g->o.lim);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
        if (!c || !c->p || epoll_ctl(g->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
            if (c)
                fcgi_parser_free(c->p);
            free(c);
            close(fd);
            continue;
        }
        c->fd = fd;
        c->started = c->last = mono();
        c->prev = g->tail;
        if (g->tail)
            g->tail->next = c;
        else
            g->head = c;
        g->tail = c;
        g->n_conns++;
    }
}

static void sweep(fcgi_guard_t *g, double now)
{
    double limit = g->o.io_timeout_ms / 1000.0;
    for (conn_t *c = g->head, *next; c; c = next) {
        next = c->next;
        if (now - c->last > limit) {
            count(g, &g->stats.timeouts);
            log_drop(g, c->closing ? "the peer does not read its answer" : "the request did not arrive in time");
            drop(g, c);
        }
    }
    if (!g->listening && now >= g->listen_retry && !ready_full(g))
        set_listening(g, true);
}

static void *guard_main(void *arg)
{
    fcgi_guard_t *g = arg;
    struct epoll_event evs[64];
    while (!g->stopping) {
        int n = epoll_wait(g->ep, evs, 64, 250);
        for (int i = 0; i < n && !g->stopping; i++) {
            void *tag = evs[i].data.ptr;
            if (tag == &TAG_WAKE) {
                uint64_t v;
                if (read(g->wake, &v, sizeof v) < 0) { /* nothing to read: fine */
                }
            } else if (tag == &TAG_LISTEN) {
                on_listen(g);
            } else {
                conn_t *c = tag;
                if (c->dead) /* evicted by an earlier event of this batch */
                    continue;
                if (evs[i].events & EPOLLOUT) {
                    if (!flush_reply(g, c)) {
                        drop(g, c);
                        continue;
                    }
                    if (c->closing && !c->want_out) {
                        drop(g, c);
                        continue;
                    }
                }
                if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                    on_readable(g, c);
            }
        }
        sweep(g, mono());
        bury(g);
    }
    while (g->head)
        drop(g, g->head);
    bury(g);
    pthread_mutex_lock(&g->mu);
    g->done = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* ---- public ---- */

fcgi_guard_t *fcgi_guard_start(const fcgi_guard_opts_t *o, lf_err_t *err)
{
    fcgi_guard_t *g = calloc(1, sizeof *g);
    if (!g) {
        lf_err_set(err, LF_ERR_NOMEM, "out of memory");
        return NULL;
    }
    g->o = *o;
    if (g->o.max_conns <= 0)
        g->o.max_conns = 1024;
    if (!g->o.max_buffered)
        g->o.max_buffered = 64u << 20;
    if (g->o.max_ready <= 0)
        g->o.max_ready = 64;
    if (g->o.io_timeout_ms <= 0)
        g->o.io_timeout_ms = 60000;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->ep = epoll_create1(EPOLL_CLOEXEC);
    g->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    int fl = fcntl(o->listen_fd, F_GETFL);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &TAG_WAKE};
    if (g->ep < 0 || g->wake < 0 || fl < 0 || fcntl(o->listen_fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
        epoll_ctl(g->ep, EPOLL_CTL_ADD, g->wake, &ev) < 0) {
        lf_err_set(err, LF_ERR_IO, "cannot set up the connection reader: %s", strerror(errno));
        goto fail;
    }
    set_listening(g, true);
    if (pthread_create(&g->thread, NULL, guard_main, g) != 0) {
        lf_err_set(err, LF_ERR_IO, "cannot start the connection reader thread");
        goto fail;
    }
    return g;
fail:
    if (g->ep >= 0)
        close(g->ep);
    if (g->wake >= 0)
        close(g->wake);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
    return NULL;
}

static void poke(fcgi_guard_t *g)
{
    uint64_t one = 1;
    if (write(g->wake, &one, sizeof one) < 0) { /* already pending: fine */
    }
}

int fcgi_guard_next(fcgi_guard_t *g, fcgi_conn_t *out)
{
    pthread_mutex_lock(&g->mu);
    while (!g->rhead && !g->done)
        pthread_cond_wait(&g->cv, &g->mu);
    ready_t *r = g->rhead;
    if (r) {
        g->rhead = r->next;
        if (!g->rhead)
            g->rtail = NULL;
        if (g->n_ready-- == g->o.max_ready)
            poke(g); /* room again: the guard may accept */
    }
    pthread_mutex_unlock(&g->mu);
    if (!r)
        return 0;
    *out = r->c;
    free(r);
    return 1;
}

void fcgi_conn_release(fcgi_conn_t *c)
{
    fcgi_req_free(&c->req);
    free(c->reply);
    c->reply = NULL;
    c->reply_len = 0;
}

void fcgi_guard_stop(fcgi_guard_t *g)
{
    if (!g || g->stopping)
        return;
    g->stopping = true;
    poke(g);
}

void fcgi_guard_free(fcgi_guard_t *g)
{
    if (!g)
        return;
    fcgi_guard_stop(g);
    pthread_join(g->thread, NULL);
    for (ready_t *r = g->rhead, *next; r; r = next) {
        next = r->next;
        close(r->c.fd);
        fcgi_conn_release(&r->c);
        free(r);
    }
    close(g->ep);
    close(g->wake);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}

void fcgi_guard_stats(fcgi_guard_t *g, fcgi_guard_stats_t *out)
{
    pthread_mutex_lock(&g->mu);
    *out = g->stats;
    pthread_mutex_unlock(&g->mu);
}
