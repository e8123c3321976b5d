/* The socket guard on the docker backend (docs/sockets.md). Host context,
 * supervisor, during docker_start().
 *
 * The container's PID 1 is the agent, a child of the daemon's shim and not
 * of ours: it confines itself, connects to <state>/guard.sock (bound
 * read-only into the container), loads the socket-guard filter and writes
 * the fd numbers of its listener and of a sock_diag socket of the
 * container's network namespace, then waits. The supervisor learns the
 * agent's host pid from the connection (SO_PEERCRED), takes both fds with
 * pidfd_getfd, starts the guard and answers; only then does the agent run
 * anything. One connection is accepted, and the socket is gone after it. */
#include "backend/docker/docker-run.h"
#include "backend/docker/docker-sockguard.h"
#include "confine/seccomp-notify.h"
#include "supervisor/sock-guard.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

/* How long the container may take to start its agent. */
#define GUARD_ACCEPT_TIMEOUT_MS 60000

int docker_guard_listen(const char *state_dir, int *ret_fd, struct cordon_error *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/" DOCKER_GUARD_SOCKET, state_dir) >=
        (int)sizeof(sa.sun_path))
        return error_set(err, ENAMETOOLONG, "docker: socket guard: %s/" DOCKER_GUARD_SOCKET,
                         state_dir);
    unlink(sa.sun_path);
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return error_set(err, errno, "docker: socket guard: socket");
    mode_t old = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (rc < 0 || listen(fd, 1) < 0)
        return error_set(err, errno, "docker: socket guard: %s", sa.sun_path);
    *ret_fd = TAKE_FD(fd);
    return 0;
}

/* Waits for fd to be readable, or the CLI to end, or the deadline. */
static int wait_readable(int fd, int cli_pidfd, long long deadline, const char *what,
                         struct cordon_error *err)
{
    for (;;) {
        long long left = deadline - clock_now_ms();
        if (left <= 0)
            return error_set(err, ETIMEDOUT, "docker: socket guard: %s", what);
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = cli_pidfd, .events = POLLIN}};
        int n = poll(p, cli_pidfd >= 0 ? 2 : 1, (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return error_set(err, errno, "docker: socket guard: poll");
        if (p[0].revents)
            return 0;
        if (cli_pidfd >= 0 && p[1].revents)
            return error_set(err, 0,
                             "docker: the container ended before its agent confined itself "
                             "(docker's own message is above)");
    }
}

int docker_guard_accept(int listen_fd, int cli_pidfd, const struct launch *l, const char *state_dir,
                        pid_t *ret_guard, struct cordon_error *err)
{
    long long deadline = clock_now_ms() + GUARD_ACCEPT_TIMEOUT_MS;
    if (wait_readable(listen_fd, cli_pidfd, deadline, "the agent did not connect", err) < 0)
        return -1;
    _cleanup_close_ int conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (conn < 0)
        return error_set(err, errno, "docker: socket guard: accept");
    /* One connection only: nothing else in the container may offer fds. */
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/" DOCKER_GUARD_SOCKET, state_dir);
    unlink(path);
    struct ucred peer;
    socklen_t plen = sizeof(peer);
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &plen) < 0 || peer.pid <= 0)
        return error_set(err, errno ? errno : ESRCH, "docker: socket guard: the agent's pid");
    if (wait_readable(conn, cli_pidfd, deadline, "the agent sent nothing", err) < 0)
        return -1;
    struct ns_guard_fds fds;
    ssize_t n = recv(conn, &fds, sizeof(fds), MSG_DONTWAIT);
    if (n != (ssize_t)sizeof(fds) || fds.magic != NS_GUARD_FDS_MAGIC)
        return error_set(err, EPROTO, "docker: socket guard: a garbled message from the agent");
    _cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, peer.pid, 0);
    if (pidfd < 0)
        return error_set(err, errno, "docker: socket guard: pidfd_open %d", peer.pid);
    _cleanup_close_ int listener = (int)syscall(SYS_pidfd_getfd, pidfd, fds.listener_fd, 0);
    if (listener < 0)
        return error_set(err, errno,
                         "docker: socket guard: taking the agent's seccomp listener "
                         "(pidfd_getfd on pid %d)",
                         peer.pid);
    _cleanup_close_ int diag = (int)syscall(SYS_pidfd_getfd, pidfd, fds.diag_fd, 0);
    if (diag < 0)
        return error_set(err, errno, "docker: socket guard: taking the agent's sock_diag socket");
    /* The allowlist proxy's socket is a host socket the forwarder reaches
     * by design. */
    dev_t own_dev[1 + NET_MAX_PUBLISH];
    ino_t own_ino[1 + NET_MAX_PUBLISH];
    size_t nown = 0;
    char proxy[PATH_MAX];
    struct stat st;
    snprintf(proxy, sizeof(proxy), "%s/" DOCKER_PROXY_SOCKET, state_dir);
    if (lstat(proxy, &st) == 0 && S_ISSOCK(st.st_mode)) {
        own_dev[nown] = st.st_dev;
        own_ino[nown++] = st.st_ino;
    }
    /* So are the proxy's sockets for network.host_services. */
    for (size_t i = 0; i < l->net.host_service_count && i < NET_MAX_PUBLISH; i++) {
        char dir[PATH_MAX], sock[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/" DOCKER_HOST_SERVICE_DIR, state_dir);
        if (net_host_service_path(dir, l->net.host_services[i], sock, sizeof(sock)) == 0 &&
            lstat(sock, &st) == 0 && S_ISSOCK(st.st_mode)) {
            own_dev[nown] = st.st_dev;
            own_ino[nown++] = st.st_ino;
        }
    }
    char userns_path[64];
    snprintf(userns_path, sizeof(userns_path), "/proc/%d/ns/user", peer.pid);
    _cleanup_close_ int userns = open(userns_path, O_RDONLY | O_CLOEXEC);
    /* Still the process the pidfd is for: the namespace is the agent's. */
    if (userns < 0 || syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0)
        return error_set(err, errno, "docker: socket guard: %s", userns_path);
    struct sock_guard_spec g = {.listener_fd = listener,
                                .diag_fd = diag,
                                .userns_fd = userns,
                                .hold_fd = -1,
                                .pid1 = peer.pid,
                                .workspace = l->ws.root,
                                .allow = (const char *const *)l->cfg.sockets.allow.items,
                                .nallow = l->cfg.sockets.allow.count,
                                .own_dev = own_dev,
                                .own_ino = own_ino,
                                .nown = nown};
    if (sock_guard_start(&g, ret_guard, err) < 0)
        return -1;
    if (send(conn, "s", 1, MSG_NOSIGNAL) != 1) {
        sock_guard_stop(*ret_guard);
        *ret_guard = -1;
        return error_set(err, errno, "docker: socket guard: answering the agent");
    }
    log_debug("docker: socket guard: pid %d for the agent (host pid %d)", *ret_guard, peer.pid);
    return 0;
}
