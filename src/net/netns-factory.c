/* The socket factory inside the sandbox's namespaces (see netns-factory.h).
 * The child half runs in the sandbox's user and network namespaces with the
 * capabilities our uid holds there; it serves only the three requests below,
 * from its parent (the proxy), and exits when the parent closes the socket
 * or dies. */
#include "net/netns-factory.h"
#include "net/fdpass.h"
#include "util/cleanup.h"
#include "util/proc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum factory_op {
    FACTORY_LISTENER = 1,
    FACTORY_SOCKET = 2,
    FACTORY_WAIT_ROUTE = 3,
    FACTORY_SOCKET6 = 4,
};

struct factory_request {
    uint8_t op;
    uint16_t port;
    int32_t timeout_ms;
};

struct factory_reply {
    int32_t errnum; /* 0 or errno of the failed step */
};

static int make_listener(uint16_t port)
{
    _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 128) < 0)
        return -errno;
    return TAKE_FD(fd);
}

static bool has_route_v4(void)
{
    _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    /* A UDP connect sends nothing; it only asks the routing table. */
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(9)};
    inet_pton(AF_INET, "198.51.100.1", &sin.sin_addr);
    return connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;
}

static int wait_route(int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 10) {
        if (has_route_v4())
            return 0;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return -ENETUNREACH;
}

/* Child, in the sandbox's namespaces. */
static void factory_serve(int sock)
{
    for (;;) {
        struct factory_request req;
        int unused;
        if (fdpass_recv(sock, &req, sizeof(req), &unused) < 0)
            return;
        if (unused >= 0)
            close(unused);
        int fd = -1;
        switch (req.op) {
        case FACTORY_LISTENER:
            fd = make_listener(req.port);
            break;
        case FACTORY_SOCKET:
        case FACTORY_SOCKET6:
            fd = socket(req.op == FACTORY_SOCKET6 ? AF_INET6 : AF_INET,
                        SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
            if (fd < 0)
                fd = -errno;
            break;
        case FACTORY_WAIT_ROUTE:
            fd = wait_route(req.timeout_ms);
            break;
        default:
            fd = -EINVAL;
        }
        struct factory_reply reply = {.errnum = fd < 0 ? -fd : 0};
        int r = fdpass_send(sock, &reply, sizeof(reply), fd > 0 ? fd : -1);
        if (fd > 0)
            close(fd);
        if (r < 0)
            return;
    }
}

int netns_factory_start(pid_t sandbox_pid, struct netns_factory *f, struct cordon_error *err)
{
    *f = (struct netns_factory){.pid = -1, .sock = -1};
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/ns/user", sandbox_pid);
    _cleanup_close_ int userns = open(path, O_RDONLY | O_CLOEXEC);
    if (userns < 0)
        return error_set(err, errno, "network: open %s", path);
    snprintf(path, sizeof(path), "/proc/%d/ns/net", sandbox_pid);
    _cleanup_close_ int netns = open(path, O_RDONLY | O_CLOEXEC);
    if (netns < 0)
        return error_set(err, errno, "network: open %s", path);
    int sv[2];
    pid_t pid = proc_fork_tied(sv, SOCK_SEQPACKET, "network: the namespace socket factory", err);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(sv[0]);
        /* The user namespace first: it gives us CAP_SYS_ADMIN over the
         * network namespace it owns. */
        int32_t e = 0;
        if (setns(userns, CLONE_NEWUSER) < 0 || setns(netns, CLONE_NEWNET) < 0)
            e = errno;
        close(userns);
        close(netns);
        struct factory_reply hello = {.errnum = e};
        if (fdpass_send(sv[1], &hello, sizeof(hello), -1) < 0 || e)
            _exit(1);
        factory_serve(sv[1]);
        _exit(0);
    }
    close(sv[1]);
    f->pid = pid;
    f->sock = sv[0];
    struct factory_reply hello;
    int fd;
    int r = fdpass_recv(f->sock, &hello, sizeof(hello), &fd);
    if (r < 0 || hello.errnum) {
        netns_factory_stop(f);
        return error_set(err, r < 0 ? -r : hello.errnum,
                         "network: joining the sandbox's user and network namespaces");
    }
    return 0;
}

/* Returns the fd that came back (WANT_FD) or 0. */
static int factory_call(struct netns_factory *f, const struct factory_request *req, bool want_fd,
                        struct cordon_error *err, const char *what)
{
    if (f->sock < 0)
        return error_set(err, ENOTCONN, "network: %s: no namespace socket factory", what);
    int r = fdpass_send(f->sock, req, sizeof(*req), -1);
    struct factory_reply reply = {0};
    int fd = -1;
    if (r == 0)
        r = fdpass_recv(f->sock, &reply, sizeof(reply), &fd);
    if (r < 0)
        return error_set(err, errno, "network: %s: lost the namespace socket factory", what);
    if (reply.errnum) {
        if (fd >= 0)
            close(fd);
        return error_set(err, reply.errnum, "network: %s", what);
    }
    if (!want_fd) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    if (fd < 0)
        return error_set(err, EPROTO, "network: %s: no socket came back", what);
    return fd;
}

int netns_factory_listener(struct netns_factory *f, uint16_t port, struct cordon_error *err)
{
    struct factory_request req = {.op = FACTORY_LISTENER, .port = port};
    char what[64];
    snprintf(what, sizeof(what), "listening on 127.0.0.1:%u inside the sandbox", port);
    return factory_call(f, &req, true, err, what);
}

int netns_factory_socket(struct netns_factory *f, struct cordon_error *err)
{
    struct factory_request req = {.op = FACTORY_SOCKET};
    return factory_call(f, &req, true, err, "creating a socket inside the sandbox");
}

int netns_factory_socket6(struct netns_factory *f, struct cordon_error *err)
{
    struct factory_request req = {.op = FACTORY_SOCKET6};
    return factory_call(f, &req, true, err, "creating an IPv6 socket inside the sandbox");
}

int netns_factory_wait_route(struct netns_factory *f, int timeout_ms, struct cordon_error *err)
{
    struct factory_request req = {.op = FACTORY_WAIT_ROUTE, .timeout_ms = timeout_ms};
    return factory_call(f, &req, false, err,
                        "waiting for pasta to configure the sandbox's network");
}

void netns_factory_stop(struct netns_factory *f)
{
    if (f->sock >= 0)
        close(f->sock);
    f->sock = -1;
    if (f->pid > 0) {
        kill(f->pid, SIGKILL);
        while (waitpid(f->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    f->pid = -1;
}
