/* sock_activate - holds a listening unix socket and starts a command with
 * it, the way systemd's llm-fcgi.socket + llm-fcgi.service do, so the
 * end-to-end tests can check socket activation and restarts without a
 * running systemd:
 *
 *   sock_activate [--fd0] [--group NAME] [--pid-file FILE] [--restart-gate FILE] SOCKET CMD [ARGS...]
 *
 * The socket (mode 0660, like SocketMode=0660) stays open in this process
 * for its whole life, so connections made while CMD is not running wait in
 * the backlog, as they do with systemd.
 * --fd0            the socket is CMD's fd 0 (StandardInput=socket, spawn-fcgi);
 *                  default: fd 3 with LISTEN_FDS=1 and LISTEN_PID=CMD's pid
 *                  (sd_listen_fds semantics)
 * --group NAME     the socket's group (SocketGroup=, e.g. www-data)
 * --pid-file FILE  CMD's pid, rewritten at every start
 * --restart-gate FILE  when CMD exits, wait until FILE exists, remove it and
 *                  start CMD again (a restart); without it, exit when CMD does
 * SIGTERM/SIGINT are passed to CMD; then no restart. Every exit of CMD is
 * reported on stderr as "sock_activate: exited N" (N: status, or 128+signal).
 * Exit status: CMD's last status; 1 on a setup error.
 */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_sig;
static volatile pid_t child;

static void on_stop(int sig)
{
    stop_sig = sig;
    if (child > 0)
        kill(child, sig);
}

static int open_socket(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return -1;
    strcpy(sa.sun_path, path);
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    mode_t old = umask(0117);
    int rc = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (rc < 0 || listen(fd, 128) < 0)
        return -1;
    return fd;
}

static pid_t start(int sock, int fd0, char **cmd)
{
    pid_t p = fork();
    if (p != 0)
        return p;
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    int target = fd0 ? 0 : 3;
    if (dup2(sock, target) < 0) /* dup2 clears close-on-exec on the copy */
        _exit(127);
    if (!fd0) {
        char pid[32];
        snprintf(pid, sizeof pid, "%ld", (long)getpid());
        setenv("LISTEN_FDS", "1", 1);
        setenv("LISTEN_PID", pid, 1);
    }
    execvp(cmd[0], cmd);
    fprintf(stderr, "sock_activate: cannot run %s: %s\n", cmd[0], strerror(errno));
    _exit(127);
}

int main(int argc, char **argv)
{
    int fd0 = 0, i = 1;
    const char *pid_file = NULL, *gate = NULL, *group = NULL;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--fd0"))
            fd0 = 1;
        else if (!strcmp(argv[i], "--group") && i + 1 < argc)
            group = argv[++i];
        else if (!strcmp(argv[i], "--pid-file") && i + 1 < argc)
            pid_file = argv[++i];
        else if (!strcmp(argv[i], "--restart-gate") && i + 1 < argc)
            gate = argv[++i];
        else
            break;
    }
    if (argc - i < 2) {
        fprintf(stderr, "usage: sock_activate [--fd0] [--group NAME] [--pid-file FILE] [--restart-gate FILE] SOCKET CMD [ARGS...]\n");
        return 1;
    }
    int sock = open_socket(argv[i]);
    if (sock < 0) {
        fprintf(stderr, "sock_activate: cannot listen on %s: %s\n", argv[i], strerror(errno));
        return 1;
    }
    if (group) {
        struct group *g = getgrnam(group);
        if (!g || chown(argv[i], (uid_t)-1, g->gr_gid) < 0) {
            fprintf(stderr, "sock_activate: cannot give %s to group %s\n", argv[i], group);
            return 1;
        }
    }
    struct sigaction sa = {.sa_handler = on_stop};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    int status = 0;
    for (;;) {
        child = start(sock, fd0, argv + i + 1);
        if (child < 0) {
            perror("sock_activate: fork");
            return 1;
        }
        if (pid_file) {
            FILE *f = fopen(pid_file, "w");
            if (f)
                fprintf(f, "%ld\n", (long)child), fclose(f);
        }
        int st;
        while (waitpid(child, &st, 0) < 0 && errno == EINTR)
            ;
        child = 0;
        status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        fprintf(stderr, "sock_activate: exited %d\n", status);
        if (!gate || stop_sig)
            break;
        while (access(gate, F_OK) != 0 && !stop_sig) {
            struct timespec ts = {0, 20 * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (stop_sig)
            break;
        unlink(gate);
    }
    unlink(argv[i]);
    return status;
}
