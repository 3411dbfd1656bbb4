/* fcgi_client - sends one FastCGI request straight to llm-fcgi's socket (no
 * nginx) and writes the STDOUT content of the reply (CGI headers, then the
 * body) to stdout as it arrives. For end-to-end tests that need a peer whose
 * behaviour they control exactly:
 *
 *   fcgi_client [-X METHOD] [-u URI] [-d BODY] [-p NAME=VALUE]...
 *               [--stall-after N [--gate FILE] [--stalled FILE]]
 *               [--close-after N] [-t SECONDS] SOCKET
 *
 * --stall-after N  stop reading once N bytes of STDOUT arrived (the server's
 *                  writes then block once the socket buffer is full);
 *                  --stalled FILE is created at that moment, and reading
 *                  resumes when FILE given to --gate exists (never without).
 * --close-after N  close the connection once N bytes arrived (a peer that
 *                  goes away mid-reply).
 * Exit status: 0 END_REQUEST received, 2 the server closed the connection
 * without it, 3 closed by --close-after, 1 error or timeout (-t, default 600).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/fcgi_peer.h"

static void usage(void)
{
    fprintf(stderr, "usage: fcgi_client [-X METHOD] [-u URI] [-d BODY] [-p NAME=VALUE]... [--stall-after N "
                    "[--gate FILE] [--stalled FILE]] [--close-after N] [-t SECONDS] SOCKET\n");
    exit(1);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const char *method = NULL, *uri = "/v1/completions", *body = "", *gate = NULL, *stalled = NULL;
    const char *extra[64];
    int n_extra = 0;
    long stall_after = -1, close_after = -1;
    double timeout = 600;
    const char *addr = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "-X") && more)
            method = argv[++i];
        else if (!strcmp(a, "-u") && more)
            uri = argv[++i];
        else if (!strcmp(a, "-d") && more)
            body = argv[++i];
        else if (!strcmp(a, "-p") && more && n_extra < 63)
            extra[n_extra++] = argv[++i];
        else if (!strcmp(a, "--stall-after") && more)
            stall_after = atol(argv[++i]);
        else if (!strcmp(a, "--gate") && more)
            gate = argv[++i];
        else if (!strcmp(a, "--stalled") && more)
            stalled = argv[++i];
        else if (!strcmp(a, "--close-after") && more)
            close_after = atol(argv[++i]);
        else if (!strcmp(a, "-t") && more)
            timeout = atof(argv[++i]);
        else if (a[0] == '-' || addr)
            usage();
        else
            addr = a;
    }
    if (!addr)
        usage();
    extra[n_extra] = NULL;
    if (!method)
        method = *body ? "POST" : "GET";
    int fd = fcgi_peer_connect(addr);
    if (fd < 0) {
        fprintf(stderr, "fcgi_client: cannot connect to %s\n", addr);
        return 1;
    }
    fbuf_t req = {0};
    fbuf_request(&req, 1, method, uri, extra, body, strlen(body));
    double end = now_s() + timeout;
    if (fcgi_peer_send(fd, req.p, req.n, (int)(timeout * 1000)) < 0) {
        fprintf(stderr, "fcgi_client: cannot send the request\n");
        return 1;
    }
    fbuf_free(&req);
    fcgi_reader_t st = {0};
    fcgi_reply_t r = {0};
    size_t shown = 0;
    int status = 1;
    for (;;) {
        if (stall_after >= 0 && r.out.n >= (size_t)stall_after) {
            if (stalled) {
                int f = open(stalled, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
                if (f >= 0)
                    close(f);
                stalled = NULL;
            }
            if (!gate || access(gate, F_OK) != 0) {
                if (now_s() > end)
                    break;
                usleep(20000);
                continue;
            }
            stall_after = -1; /* the gate is open: read the rest */
        }
        int left = (int)((end - now_s()) * 1000);
        if (left <= 0)
            break;
        int rc = fcgi_peer_read_some(fd, &st, &r, left < 100 ? left : 100);
        if (r.out.n > shown) {
            fwrite(r.out.p + shown, 1, r.out.n - shown, stdout);
            fflush(stdout);
            shown = r.out.n;
        }
        if (close_after >= 0 && r.out.n >= (size_t)close_after) {
            status = 3;
            break;
        }
        if (rc == 0) {
            status = r.ended ? 0 : 2;
            break;
        }
        if (rc < 0 && r.closed)
            break;
    }
    if (r.err.n)
        fprintf(stderr, "fcgi_client: stderr from the server: %s\n", (char *)r.err.p);
    close(fd);
    fcgi_reply_free(&r);
    return status;
}
