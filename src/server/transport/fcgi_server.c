/* fcgi_server.c - process setup: model, scheduler, listening socket,
 * the connection guard, worker threads, signals and graceful shutdown (see server.h).
 *
 * Facts this file relies on (../shared/docs/fastcgi-nginx-facts.md):
 * - we bind the socket ourselves: FCGX_OpenSocket unlinks a live socket and
 *   exit()s on bind failure;
 * - SIGTERM/SIGINT are blocked in every thread and taken with sigwait() in
 *   main; the guard stops accepting, idle workers return, in-flight streams
 *   finish;
 * - after the body has been read to EOF, poll(ipcFd, POLLIN|POLLRDHUP)
 *   reports a client that went away.
 *
 * Connections are accepted and read by the guard (fcgi_guard.c, its own
 * parser fcgi_parse.c: libfcgi's record reader aborts the process on some
 * crafted records); worker threads take complete requests from it and use
 * libfcgi only to write the response.
 */
#include <errno.h>
#include <fastcgi.h>
#include <fcgiapp.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "server/chat/chat_render_tmpl.h"
#include "server/chat/chat_setup.h"
#include "grammar/grammar.h"
#include "server/server.h"
#include "server/store/store.h"
#include "server/transport/fcgi_guard.h"
#include "server/transport/listen_fd.h"
#include "server/embed_setup.h"
#include "engine/embed/embed_sched.h"

typedef struct {
    srv_t *srv;
    pthread_t thread;
    atomic_int busy_fd;   /* connection being answered, -1 when idle */
    atomic_int done;
} worker_t;

static atomic_int stopping;

/* ---- socket setup ---- */

static int open_unix(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        fprintf(stderr, "llm-fcgi: socket path too long: %s\n", path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            fprintf(stderr, "llm-fcgi: %s exists and is not a socket; refusing to replace it\n", path);
            return -1;
        }
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
            close(probe);
            fprintf(stderr, "llm-fcgi: another server is listening on %s; refusing to start\n", path);
            return -1;
        }
        if (probe >= 0)
            close(probe);
        unlink(path); /* stale socket of a dead server */
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        perror("llm-fcgi: socket");
        return -1;
    }
    mode_t old = umask(0117); /* 0660 from the start, no window */
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (rc < 0 || chmod(path, 0660) < 0 || listen(fd, 1024) < 0) {
        fprintf(stderr, "llm-fcgi: cannot listen on %s: %s\n", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static int open_tcp(const char *addr)
{
    char host[256];
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr || (size_t)(colon - addr) >= sizeof host) {
        fprintf(stderr, "llm-fcgi: --listen wants HOST:PORT, got '%s'\n", addr);
        return -1;
    }
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0) {
        fprintf(stderr, "llm-fcgi: cannot resolve %s\n", addr);
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 1024) < 0) {
        fprintf(stderr, "llm-fcgi: cannot listen on %s: %s\n", addr, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    fprintf(stderr, "llm-fcgi: WARNING: listening for FastCGI on TCP %s. Never expose a FastCGI port: anyone "
                    "who can connect can crash the server. Bind to 127.0.0.1 and prefer a unix socket.\n", addr);
    return fd;
}

/* ---- per request ----
 *
 * The guard (fcgi_guard.c) has read and checked the whole request; libfcgi
 * is only used for the response. To get its output streams without letting
 * its record reader near the peer's bytes, it reads a canonical
 * BEGIN_REQUEST + empty PARAMS (written by us) from a socketpair, then the
 * connection is dup2()ed onto that descriptor: libfcgi writes the response
 * (STDOUT records, END_REQUEST) to the real peer. FCGX_Request's ipcFd and
 * keepConnection are set directly for this (fields of the public struct in
 * fcgiapp.h): a connection already open is read instead of accepting one.
 */

static int io_write(void *io, const char *p, size_t n)
{
    return FCGX_PutStr(p, (int)n, ((FCGX_Request *)io)->out) == (int)n ? 0 : -1;
}

static int io_flush(void *io)
{
    return FCGX_FFlush(((FCGX_Request *)io)->out) == 0 ? 0 : -1;
}

/* The guard read the input to its end, so any input now (or a hang-up)
 * means the peer went away. */
static bool io_gone(void *io)
{
    FCGX_Request *q = io;
    struct pollfd p = {.fd = q->ipcFd, .events = POLLIN | POLLRDHUP};
    return poll(&p, 1, 0) > 0;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Gives q libfcgi's output streams for request `id` on connection fd (see
 * above). On success fd belongs to q (as q->ipcFd); on failure it is
 * closed. */
static int bind_libfcgi(FCGX_Request *q, int fd, int id)
{
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
        close(fd);
        return -1;
    }
    uint8_t canon[24] = {0};
    fcgi_header_put(canon, FCGI_BEGIN_REQUEST, id, 8, 0);
    canon[8 + 1] = FCGI_RESPONDER; /* role, flags 0: close after the reply */
    fcgi_header_put(canon + 16, FCGI_PARAMS, id, 0, 0);
    int rc = write_all(sp[1], canon, sizeof canon);
    close(sp[1]); /* anything libfcgi reads past these records is EOF */
    q->ipcFd = sp[0];
    q->keepConnection = 1; /* FCGX_Accept_r must not close it first */
    if (rc < 0 || FCGX_Accept_r(q) != 0) {
        /* on a failed read libfcgi closed sp[0]; it cannot block: its
         * listening socket is -1 */
        if (q->ipcFd >= 0)
            FCGX_Free(q, 1);
        close(fd);
        return -1;
    }
    rc = dup2(fd, q->ipcFd);
    close(fd);
    if (rc < 0) {
        FCGX_Detach(q);
        FCGX_Finish_r(q);
        return -1;
    }
    return 0;
}

static void serve_conn(srv_t *s, FCGX_Request *q, fcgi_conn_t *c, atomic_int *busy_fd)
{
    int fd = c->fd;
    /* a peer that stops reading makes writes fail after the I/O timeout
     * instead of blocking this thread (and the request's slot) forever */
    struct timeval tv = {.tv_sec = s->cfg.io_timeout_seconds > 0 ? s->cfg.io_timeout_seconds : 60};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (c->reply_len && write_all(fd, c->reply, c->reply_len) < 0) {
        close(fd);
        return;
    }
    if (bind_libfcgi(q, fd, c->req.id) < 0) {
        fprintf(stderr, "llm-fcgi: fcgi: cannot set up the response stream: %s\n", strerror(errno));
        return;
    }
    *busy_fd = q->ipcFd;
    http_req_t r = {0};
    r.io = (http_io_t){.write = io_write, .flush = io_flush, .gone = io_gone, .io = q};
    const char *m = fcgi_req_param(&c->req, "REQUEST_METHOD");
    r.method = m ? m : "GET";
    /* route on REQUEST_URI (lighttpd has no DOCUMENT_URI), query stripped */
    const char *uri = fcgi_req_param(&c->req, "REQUEST_URI");
    if (!uri)
        uri = fcgi_req_param(&c->req, "DOCUMENT_URI");
    char path[1024];
    snprintf(path, sizeof path, "%s", uri ? uri : "/");
    const char *qs = uri ? strchr(uri, '?') : NULL;
    r.query = qs ? qs + 1 : fcgi_req_param(&c->req, "QUERY_STRING");
    path[strcspn(path, "?")] = '\0';
    r.path = path;
    r.auth = fcgi_req_param(&c->req, "HTTP_AUTHORIZATION");
    r.api_key = fcgi_req_param(&c->req, "HTTP_X_API_KEY");
    uuid_t u;
    uuid_generate_random(u);
    for (int i = 0; i < 16; i++)
        snprintf(r.id + 2 * i, 3, "%02x", u[i]);
    r.body = c->req.body ? c->req.body : "";
    r.body_len = c->req.body_len;
    if (c->req.body_over) { /* not read: its size for the 413 */
        r.body = "";
        r.body_len = c->req.body_announced > s->cfg.max_body ? c->req.body_announced : s->cfg.max_body + 1;
    }
    if (stopping) {
        http_reply_error(&r, 503, "the server is shutting down", NULL, "server_shutting_down", "Retry-After: 1\r\n");
        metrics_request(&s->metrics, 503);
    } else {
        srv_handle(s, &r);
    }
    /* detached: libfcgi closes without its drain loop (shutdown, then read
     * until EOF), which a peer that keeps sending would never let end */
    FCGX_Detach(q);
    FCGX_Finish_r(q);
    *busy_fd = -1;
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    FCGX_Request q;
    /* listening socket -1: libfcgi never accepts, connections come from
     * the guard */
    FCGX_InitRequest(&q, -1, 0);
    fcgi_conn_t c;
    while (fcgi_guard_next(w->srv->guard, &c)) {
        serve_conn(w->srv, &q, &c, &w->busy_fd);
        fcgi_conn_release(&c);
    }
    FCGX_Free(&q, 1);
    w->done = 1;
    return NULL;
}

/* ---- process ---- */

/* The whole of a small text file, NUL-terminated; NULL on error. */
int srv_run(srv_config_t *cfg)
{
    srv_t s = {.render = chat_render_chatml, .created = time(NULL)};
    lf_err_t err = {0};
    s.model = model_load(cfg->model_path, &err);
    if (!s.model) {
        fprintf(stderr, "llm-fcgi: cannot load model: %s\n", err.msg);
        return 1;
    }
    s.vocab = model_vocab(s.model);
    if (cfg->model_draft && *cfg->model_draft) {
        /* speculative decoding's draft model (spec_draft.h) */
        if (!(s.draft_model = model_load(cfg->model_draft, &err))) {
            fprintf(stderr, "llm-fcgi: cannot load the draft model: %s\n", err.msg);
            model_free(s.model);
            return 1;
        }
        fprintf(stderr, "llm-fcgi: draft model %s (%.1f M parameters)\n", cfg->model_draft,
                (double)model_hparams(s.draft_model)->n_params / 1e6);
    }
    char model_why[160];
    const int32_t ctx_max = model_ctx_max(s.model, model_why, sizeof model_why);
    if (cfg->ctx_size > ctx_max) {
        /* beyond the training length only where rope scaling allows it;
         * longer requests get a 400 that says so */
        fprintf(stderr, "llm-fcgi: --ctx-size %d is beyond what this model supports; using %d (%s)\n",
                cfg->ctx_size, ctx_max, model_why);
        cfg->ctx_size = ctx_max;
    }
    if (cfg->ctx_size == ctx_max)
        snprintf(s.ctx_why, sizeof s.ctx_why, "the longest this model supports: %s", model_why);
    else if (cfg->ctx_size > 0)
        snprintf(s.ctx_why, sizeof s.ctx_why, "the server's --ctx-size; the model supports up to %d", ctx_max);
    if (cfg->ctx_size <= 0) {
        /* the model's training context, capped so a default start does not
         * allocate gigabytes of KV cache */
        int32_t train = model_hparams(s.model)->n_ctx_train;
        cfg->ctx_size = train > 0 && train < 4096 ? train : 4096;
        if (cfg->ctx_size > ctx_max)
            cfg->ctx_size = ctx_max;
        snprintf(s.ctx_why, sizeof s.ctx_why, "the server's default context; --ctx-size up to %d", ctx_max);
        if (cfg->ctx_size == ctx_max)
            snprintf(s.ctx_why, sizeof s.ctx_why, "the longest this model supports: %s", model_why);
    }
    if (cfg->media.mmproj_path && *cfg->media.mmproj_path) {
        /* image input: the projector, checked against the text model */
        srv_media_cfg_defaults(&cfg->media);
        if (!(s.media = srv_media_open(&cfg->media, s.model, cfg->model_path, &err))) {
            fprintf(stderr, "llm-fcgi: cannot load the vision projector: %s\n", err.msg);
            model_free(s.model);
            model_free(s.draft_model);
            return 1;
        }
        char desc[400];
        vis_model_describe(srv_media_vision(s.media), desc, sizeof desc);
        fprintf(stderr, "llm-fcgi: image input from %s: %s\n", cfg->media.mmproj_path, desc);
    }
    /* an embedding or rerank server runs the embedding scheduler instead
     * (embed_setup.h) */
    const int embed_mode = srv_embed_setup(&s, cfg, &err);
    if (embed_mode < 0) {
        fprintf(stderr, "llm-fcgi: %s\n", err.msg);
        srv_media_close(s.media);
        model_free(s.model);
        model_free(s.draft_model);
        return 1;
    }
    sched_opts_t so = {.n_parallel = cfg->parallel, .n_ctx = cfg->ctx_size, .max_queue = cfg->max_queue,
                       .batch_tokens = cfg->batch_tokens, .n_threads = cfg->threads,
                       .kv_mb = cfg->kv_cache_mb, .state_snapshots = cfg->state_snapshots,
                       .attn = cfg->flash_attn, .type_k = cfg->cache_type_k, .type_v = cfg->cache_type_v,
                       .spec_ngram = cfg->spec && !strcmp(cfg->spec, "ngram"),
                       .spec_off = cfg->spec && !strcmp(cfg->spec, "none"),
                       .spec_mtp = cfg->spec && !strcmp(cfg->spec, "mtp"),
                       .spec_k_max = cfg->spec_draft_max, .spec_row_cost = cfg->spec_row_cost,
                       .draft_model = s.draft_model,
                       .image_cache_mb = s.media ? cfg->media.image_cache_mb : 0};
    if (!embed_mode)
        s.sched = sched_create(s.model, &so, &err);
    if (s.sched && so.spec_mtp) {
        sched_stats_t st;
        sched_stats(s.sched, &st);
        if (st.spec_mtp_used)
            fprintf(stderr, "llm-fcgi: speculation: the model's MTP block drafts (a draft costs ~%.2f of a step)\n",
                    st.spec_mtp_cost);
        else
            fprintf(stderr, "llm-fcgi: warning: --spec mtp: a draft from the MTP block would cost ~%.2f of a step "
                            "(its layer and the output matrix): not used\n", st.spec_mtp_cost);
    }
    if (!s.sched && !s.embed) {
        fprintf(stderr, "llm-fcgi: cannot start the engine: %s\n", err.msg);
        srv_media_close(s.media);
        model_free(s.model);
        model_free(s.draft_model);
        return 1;
    }
    /* the grammar engine (structured output): vocabulary tries, caches */
    if (!embed_mode)
        s.grammar = grammar_engine_create(s.vocab,
                                          (size_t)(cfg->grammar_cache_mb > 0 ? cfg->grammar_cache_mb : 256) << 20, &err);
    if (!s.grammar && !embed_mode) {
        fprintf(stderr, "llm-fcgi: cannot start the grammar engine: %s\n", err.msg);
        sched_free(s.sched);
        srv_media_close(s.media);
        model_free(s.model);
        model_free(s.draft_model);
        return 1;
    }
    metrics_init(&s.metrics);
    s.cfg = *cfg;
    { /* system_fingerprint: build and model, stable across restarts */
        const char *base = strrchr(cfg->model_path, '/');
        snprintf(s.fingerprint, sizeof s.fingerprint, "llm-fcgi-%s-%.60s", PACKAGE_VERSION,
                 base ? base + 1 : cfg->model_path);
    }
    /* the chat template (compiled once) and the output parsers */
    chat_tmpl_renderer_t *tmpl = NULL;
    if (!embed_mode && srv_chat_setup(&s, cfg, &tmpl) < 0) {
        sched_free(s.sched);
        srv_media_close(s.media);
        grammar_engine_free(s.grammar);
        metrics_destroy(&s.metrics);
        model_free(s.model);
        model_free(s.draft_model);
        return 1;
    }

    /* the store of the Responses API (store.h) */
    char store_path[4200], store_desc[4200];
    const char *where = cfg->store;
    if (!where && store_default_path(store_path, sizeof store_path))
        where = store_path;
    int64_t ttl = cfg->store_ttl > 0 ? cfg->store_ttl : 30 * 86400;
    if (where && strcmp(where, "none")) {
        store_describe(where, store_desc, sizeof store_desc);
        s.store = store_open(where, ttl, &err);
        if (!s.store && !cfg->store) { /* the default place: not worth failing the start */
            fprintf(stderr, "llm-fcgi: WARNING: no response store: cannot open %s: %s (give --store)\n",
                    store_desc, err.msg);
        } else if (!s.store) {
            fprintf(stderr, "llm-fcgi: cannot open the response store %s: %s\n", store_desc, err.msg);
            sched_free(s.sched);
            grammar_engine_free(s.grammar);
            metrics_destroy(&s.metrics);
            chat_tmpl_renderer_free(tmpl);
            model_free(s.model);
            return 1;
        }
        if (s.store)
            fprintf(stderr, "llm-fcgi: responses stored in %s (%s, kept %lld s)\n", store_desc, store_kind(s.store),
                    (long long)ttl);
    } else {
        fprintf(stderr, "llm-fcgi: no response store%s: /v1/responses keeps nothing\n",
                where ? " (--store none)" : " (no state directory)");
    }
    api_responses_init(&s);

    int fd = -1;
    bool unlink_path = false, inherited = false;
    if (!cfg->listen_addr && !cfg->socket_path && (fd = listen_fd_inherited()) != -1) {
        inherited = fd >= 0; /* systemd (fd 3 or 0) or spawn-fcgi (fd 0) */
    } else if (cfg->listen_addr) {
        fd = open_tcp(cfg->listen_addr);
    } else {
        if (!cfg->socket_path)
            cfg->socket_path = "/run/llm-fcgi/llm-fcgi.sock";
        s.cfg.socket_path = cfg->socket_path;
        fd = open_unix(cfg->socket_path);
        unlink_path = fd >= 0;
    }
    int status = 1;
    worker_t *wk = NULL;
    int started = 0;
    if (fd < 0)
        goto out;

    /* block the stop signals in every thread; main takes them with sigwait */
    /* a launcher may have left SIGINT ignored (background jobs of a
     * non-interactive shell): restore the defaults, then block for sigwait */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    FCGX_Init();

    int n_wk = cfg->http_threads > 0 ? cfg->http_threads : 16;
    /* the guard holds at most this many bodies' worth of input at once */
    size_t per = cfg->max_body ? cfg->max_body : 16u << 20;
    fcgi_guard_opts_t go = {.listen_fd = fd,
                            .lim = {.max_body = cfg->max_body, .max_conns = n_wk},
                            .io_timeout_ms = (cfg->io_timeout_seconds > 0 ? cfg->io_timeout_seconds : 60) * 1000,
                            .max_buffered = per * 8 > (64u << 20) ? per * 8 : 64u << 20,
                            .max_ready = n_wk,
                            .allowed_addrs = getenv("FCGI_WEB_SERVER_ADDRS")};
    s.guard = fcgi_guard_start(&go, &err);
    if (!s.guard) {
        fprintf(stderr, "llm-fcgi: %s\n", err.msg);
        goto out;
    }
    wk = calloc((size_t)n_wk, sizeof *wk);
    if (!wk)
        goto out;
    for (; started < n_wk; started++) {
        wk[started] = (worker_t){.srv = &s, .busy_fd = -1};
        if (pthread_create(&wk[started].thread, NULL, worker_main, &wk[started]) != 0)
            break;
    }
    fprintf(stderr, "llm-fcgi: serving %s as '%s' on %s (parallel %d, ctx %d, %d http threads)\n",
            cfg->model_path, cfg->names[0],
            fd == 0 ? "fd 0" : inherited ? "fd 3 (systemd)" : cfg->listen_addr ? cfg->listen_addr : cfg->socket_path,
            cfg->parallel,
            srv_n_ctx(&s), started);

    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "llm-fcgi: %s: stopping, draining in-flight requests (up to %d s)\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM", cfg->drain_seconds);
    stopping = 1;
    fcgi_guard_stop(s.guard); /* no new connections; complete requests get 503 */
    if (!inherited) /* an inherited socket is shared with its launcher (systemd
                     * queues connections on it while we restart): never shut down */
        shutdown(fd, SHUT_RDWR);
    if (unlink_path)
        unlink(cfg->socket_path);
    /* let in-flight requests finish, up to the drain limit */
    time_t deadline = time(NULL) + cfg->drain_seconds;
    for (;;) {
        int live = 0;
        for (int i = 0; i < started; i++)
            live += !wk[i].done;
        if (!live)
            break;
        if (time(NULL) >= deadline) {
            fprintf(stderr, "llm-fcgi: drain limit reached: stopping %d in-flight request(s)\n", live);
            break;
        }
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    /* background responses get what is left of the drain time */
    api_responses_drain(&s, (int64_t)deadline);
    /* stop the engine: still-running jobs end as cancelled, which unblocks
     * their workers; a worker still writing to a peer that does not read
     * gives up after --io-timeout */
    if (s.sched)
        sched_stop(s.sched);
    embed_sched_stop(s.embed);
    for (int i = 0; i < started; i++)
        pthread_join(wk[i].thread, NULL);
    status = 0;
    fprintf(stderr, "llm-fcgi: stopped\n");
out:
    if (s.guard && !stopping) { /* a start that failed half-way */
        fcgi_guard_stop(s.guard);
        for (int i = 0; i < started; i++)
            pthread_join(wk[i].thread, NULL);
    }
    fcgi_guard_free(s.guard);
    api_responses_free(&s);
    store_close(s.store);
    free(wk);
    if (fd > 0)
        close(fd);
    sched_free(s.sched);
    embed_sched_free(s.embed);
    grammar_engine_free(s.grammar);
    metrics_destroy(&s.metrics);
    chat_tmpl_renderer_free(tmpl);
    srv_media_close(s.media);
    model_free(s.model);
    model_free(s.draft_model);
    return status;
}
