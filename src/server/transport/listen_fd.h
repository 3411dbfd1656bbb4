/* listen_fd.h - a listening socket handed to us by the process that started
 * llm-fcgi, instead of one we bind ourselves.
 *
 * Two conventions are recognised:
 * - systemd socket activation (sd_listen_fds(3) semantics, without
 *   libsystemd): LISTEN_PID is our pid and LISTEN_FDS >= 1; the socket is
 *   fd 3. LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES are removed from the
 *   environment either way, so nothing we start inherits them;
 * - FastCGI's own: the listening socket is fd 0 (spawn-fcgi, or systemd
 *   with StandardInput=socket, as the shipped llm-fcgi.service does).
 *
 * An inherited socket is shared with its launcher (systemd keeps its copy
 * to queue connections while we restart), so it must never be shut down:
 * shutdown() acts on the shared socket and would refuse every later
 * connection. It is switched to non-blocking, and idle acceptors wait in
 * listen_fd_wait() on it and on a wake-up pipe instead of blocking in
 * accept(), which only a shutdown() could interrupt.
 */
#ifndef LF_LISTEN_FD_H
#define LF_LISTEN_FD_H

#include <stdbool.h>

/* The inherited listening socket: its fd (3 or 0, made non-blocking and
 * close-on-exec), -1 when there is none, -2 (with a message on stderr)
 * when systemd says it passed sockets but fd 3 is not a listening stream
 * socket. */
int listen_fd_inherited(void);

/* Is fd a listening stream socket? */
bool listen_fd_is_listening(int fd);

/* Blocks until listen_fd is readable (a connection may be waiting: the
 * caller then tries to accept, and simply comes back if another thread won
 * it) or wake_fd is readable (stop). Returns 1 for a connection, 0 for a
 * wake-up, -1 on a poll error other than EINTR. */
int listen_fd_wait(int listen_fd, int wake_fd);

#endif
