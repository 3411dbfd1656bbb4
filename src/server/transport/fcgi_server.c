/* fcgi_server.c - process setup: model, scheduler, listening socket,
 * acceptor threads, signals and graceful shutdown (see server.h).
 *
 * Facts this file relies on (../shared/docs/fastcgi-nginx-facts.md):
 * - we bind the socket ourselves: FCGX_OpenSocket unlinks a live socket and
 *   exit()s on bind failure;
 * - SIGTERM/SIGINT are blocked in every thread and taken with sigwait() in
 *   main; FCGX_ShutdownPending() + shutdown(listen_fd) wakes idle acceptors,
 *   in-flight streams finish;
 * - after the body has been read to EOF, poll(ipcFd, POLLIN|POLLRDHUP)
 *   reports a client that went away.
 */
#include <errno.h>
#include <fcntl.h>
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
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "server/chat/chat_render_tmpl.h"
#include "server/chat/chat_setup.h"
#include "server/server.h"
#include "server/transport/listen_fd.h"

typedef struct {
    srv_t *srv;
    int listen_fd;
    int wake_fd;     /* inherited socket: wait here, never shutdown (-1: own socket) */
    pthread_t thread;
    atomic_int done;
} acceptor_t;

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

/* ---- per request ---- */

static int io_write(void *io, const char *p, size_t n)
{
    return FCGX_PutStr(p, (int)n, ((FCGX_Request *)io)->out) == (int)n ? 0 : -1;
}

static int io_flush(void *io)
{
    return FCGX_FFlush(((FCGX_Request *)io)->out) == 0 ? 0 : -1;
}

static bool io_gone(void *io)
{
    FCGX_Request *q = io;
    struct pollfd p = {.fd = q->ipcFd, .events = POLLIN | POLLRDHUP};
    return poll(&p, 1, 0) > 0;
}

/* Reads the body to EOF (so a later POLLIN means "client gone"). Over the
 * limit: stops reading, reports the announced length for the 413. */
static char *read_body(FCGX_Request *q, size_t max, size_t *len)
{
    const char *cl = FCGX_GetParam("CONTENT_LENGTH", q->envp);
    size_t want = cl && *cl ? strtoull(cl, NULL, 10) : 0;
    *len = 0;
    if (max && want > max) {
        *len = want;
        return strdup("");
    }
    size_t cap = want ? want + 1 : 4096;
    char *b = malloc(cap);
    if (!b)
        return NULL;
    for (;;) {
        if (*len + 1 >= cap) {
            if (max && *len > max)
                break;
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                return NULL;
            }
            b = nb;
            cap *= 2;
        }
        int n = FCGX_GetStr(b + *len, (int)(cap - 1 - *len), q->in);
        if (n <= 0)
            break;
        *len += (size_t)n;
    }
    b[*len] = '\0';
    return b;
}

static void handle_one(srv_t *s, FCGX_Request *q)
{
    http_req_t r = {0};
    r.io = (http_io_t){.write = io_write, .flush = io_flush, .gone = io_gone, .io = q};
    const char *m = FCGX_GetParam("REQUEST_METHOD", q->envp);
    r.method = m ? m : "GET";
    /* route on REQUEST_URI (lighttpd has no DOCUMENT_URI), query stripped */
    const char *uri = FCGX_GetParam("REQUEST_URI", q->envp);
    if (!uri)
        uri = FCGX_GetParam("DOCUMENT_URI", q->envp);
    char path[1024];
    snprintf(path, sizeof path, "%s", uri ? uri : "/");
    path[strcspn(path, "?")] = '\0';
    r.path = path;
    r.auth = FCGX_GetParam("HTTP_AUTHORIZATION", q->envp);
    uuid_t u;
    uuid_generate_random(u);
    for (int i = 0; i < 16; i++)
        snprintf(r.id + 2 * i, 3, "%02x", u[i]);
    char *body = read_body(q, s->cfg.max_body, &r.body_len);
    if (!body) {
        r.body = "";
        http_reply_error(&r, 503, "out of memory", NULL, NULL, NULL);
        metrics_request(&s->metrics, 503);
        return;
    }
    r.body = body;
    srv_handle(s, &r);
    free(body);
}

static void *acceptor_main(void *arg)
{
    acceptor_t *a = arg;
    FCGX_Request q;
    FCGX_InitRequest(&q, a->listen_fd, 0);
    while (!stopping) {
        if (a->wake_fd >= 0 && listen_fd_wait(a->listen_fd, a->wake_fd) == 0)
            break;
        if (FCGX_Accept_r(&q) < 0) {
            if (stopping)
                break;
            /* transient (EMFILE, ECONNABORTED...): keep the thread alive */
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
            continue;
        }
        handle_one(a->srv, &q);
        FCGX_Finish_r(&q);
    }
    FCGX_Free(&q, 1);
    a->done = 1;
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
    if (cfg->ctx_size <= 0) {
        /* the model's training context, capped so a default start does not
         * allocate gigabytes of KV cache */
        int32_t train = model_hparams(s.model)->n_ctx_train;
        cfg->ctx_size = train > 0 && train < 4096 ? train : 4096;
    }
    sched_opts_t so = {.n_parallel = cfg->parallel, .n_ctx = cfg->ctx_size, .max_queue = cfg->max_queue,
                       .batch_tokens = cfg->batch_tokens, .n_threads = cfg->threads,
                       .kv_mb = cfg->kv_cache_mb};
    s.sched = sched_create(s.model, &so, &err);
    if (!s.sched) {
        fprintf(stderr, "llm-fcgi: cannot start the engine: %s\n", err.msg);
        model_free(s.model);
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
    if (srv_chat_setup(&s, cfg, &tmpl) < 0) {
        sched_free(s.sched);
        metrics_destroy(&s.metrics);
        model_free(s.model);
        return 1;
    }

    int fd = -1, wake[2] = {-1, -1};
    bool unlink_path = false, inherited = false;
    if (!cfg->listen_addr && !cfg->socket_path && (fd = listen_fd_inherited()) != -1) {
        inherited = fd >= 0; /* systemd (fd 3 or 0) or spawn-fcgi (fd 0) */
        if (inherited && pipe2(wake, O_CLOEXEC) < 0)
            fd = -1;
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
    acceptor_t *acc = NULL;
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

    int n_acc = cfg->http_threads > 0 ? cfg->http_threads : 16;
    acc = calloc((size_t)n_acc, sizeof *acc);
    if (!acc)
        goto out;
    int started = 0;
    for (; started < n_acc; started++) {
        acc[started] = (acceptor_t){.srv = &s, .listen_fd = fd, .wake_fd = wake[0]};
        if (pthread_create(&acc[started].thread, NULL, acceptor_main, &acc[started]) != 0)
            break;
    }
    fprintf(stderr, "llm-fcgi: serving %s as '%s' on %s (parallel %d, ctx %d, %d http threads)\n",
            cfg->model_path, cfg->names[0],
            fd == 0 ? "fd 0" : inherited ? "fd 3 (systemd)" : cfg->listen_addr ? cfg->listen_addr : cfg->socket_path, cfg->parallel,
            sched_n_ctx(s.sched), started);

    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "llm-fcgi: %s: stopping, draining in-flight requests (up to %d s)\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM", cfg->drain_seconds);
    stopping = 1;
    FCGX_ShutdownPending();
    if (inherited) /* shared with the launcher: wake the idle acceptors instead */
        (void)!write(wake[1], "x", 1);
    else
        shutdown(fd, SHUT_RDWR);
    if (unlink_path)
        unlink(cfg->socket_path);
    /* let in-flight requests finish, up to the drain limit */
    time_t deadline = time(NULL) + cfg->drain_seconds;
    for (;;) {
        int live = 0;
        for (int i = 0; i < started; i++)
            live += !acc[i].done;
        if (!live || time(NULL) >= deadline)
            break;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    /* stop the engine: still-running jobs end as cancelled, which unblocks
     * their acceptors */
    sched_stop(s.sched);
    for (int i = 0; i < started; i++)
        pthread_join(acc[i].thread, NULL);
    status = 0;
    fprintf(stderr, "llm-fcgi: stopped\n");
out:
    free(acc);
    if (fd > 0)
        close(fd);
    if (wake[0] >= 0)
        close(wake[0]), close(wake[1]);
    sched_free(s.sched);
    metrics_destroy(&s.metrics);
    chat_tmpl_renderer_free(tmpl);
    model_free(s.model);
    return status;
}
