/* listen_fd.c - inherited listening sockets (see listen_fd.h). */
#include "server/transport/listen_fd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define LISTEN_FDS_START 3 /* SD_LISTEN_FDS_START */

bool listen_fd_is_listening(int fd)
{
    int type = 0, acc = 0;
    socklen_t l = sizeof type, l2 = sizeof acc;
    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) == 0 && type == SOCK_STREAM &&
           getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &l2) == 0 && acc;
}

/* Non-blocking: a thread that loses the race for a connection gets EAGAIN
 * from accept() and goes back to listen_fd_wait instead of blocking. */
static int prepare(int fd, bool cloexec)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -1;
    if (cloexec && fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
        return -1;
    return fd;
}

/* LISTEN_FDS / LISTEN_PID: how many sockets systemd passed us, 0 if the
 * variables are absent or meant for another process. */
static long systemd_fds(void)
{
    const char *pid = getenv("LISTEN_PID"), *n = getenv("LISTEN_FDS");
    long fds = 0;
    if (pid && n) {
        char *end;
        long p = strtol(pid, &end, 10);
        if (*pid && !*end && p == (long)getpid()) {
            fds = strtol(n, &end, 10);
            if (!*n || *end || fds < 0)
                fds = 0;
        }
    }
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    return fds;
}

int listen_fd_inherited(void)
{
    long n = systemd_fds();
    if (n > 0) {
        int fd = LISTEN_FDS_START;
        if (!listen_fd_is_listening(fd)) {
            fprintf(stderr, "llm-fcgi: systemd passed %ld socket(s) but fd %d is not a listening stream socket "
                            "(the socket unit needs ListenStream=)\n", n, fd);
            return -2;
        }
        if (n > 1)
            fprintf(stderr, "llm-fcgi: systemd passed %ld sockets; serving the first (fd %d) only\n", n, fd);
        return prepare(fd, true) < 0 ? -2 : fd;
    }
    if (listen_fd_is_listening(0))
        return prepare(0, false) < 0 ? -2 : 0;
    return -1;
}

int listen_fd_wait(int listen_fd, int wake_fd)
{
    struct pollfd p[2] = {{.fd = wake_fd, .events = POLLIN}, {.fd = listen_fd, .events = POLLIN}};
    for (;;) {
        int r = poll(p, 2, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (p[0].revents)
            return 0;
        if (p[1].revents & (POLLERR | POLLNVAL | POLLHUP))
            return -1;
        return 1;
    }
}
