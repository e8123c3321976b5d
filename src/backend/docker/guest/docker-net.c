/* The docker backend's network on the container's side. The container has
 * only its own loopback (--network none); the host's proxy listens on a
 * unix socket bind-mounted into it, and reaches published ports through
 * unix sockets this forwarder makes in a bind-mounted directory. The relay
 * is the proxy's own loop (net/proxy.c) with "published" listeners only: no
 * allowlist and no audit here (the host's proxy checks and logs):
 *   127.0.0.1:NET_PROXY_PORT  -> the host's proxy socket
 *   <publish dir>/i.sock      -> 127.0.0.1:port i (the sandbox's listener)
 *   127.0.0.1:PORT            -> <host service dir>/PORT.sock, the host's proxy
 *                                for host service PORT (network.host_services)
 * Sandbox context: a child of the agent forked after it confined itself
 * (Landlock and cordon's seccomp filter apply to it too), so it reaches
 * nothing the sandbox could not, and connects to fixed places only. */
#include "backend/docker/guest/docker-net.h"
#include "net/net.h"
#include "net/proxy.h"
#include "util/cleanup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static struct proxy_config forward_cfg;

static _Noreturn void forwarder_main(void)
{
    static struct net_policy policy = {.session_name = "forwarder"};
    struct cordon_error err = {0};
    prctl(PR_SET_NAME, "cordon-forward");
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* Dumpable on purpose: it holds nothing the sandbox lacks (it is
     * confined alike), and `cordon verify` must see it is in the
     * container's PID namespace (/proc/PID/ns/pid). */
    signal(SIGPIPE, SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Nothing of the agent's but stderr: its stdin and stdout may be the
     * agent protocol (serve --stdio). */
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0)
        _exit(1);
    for (int fd = 3; fd < 1024; fd++) {
        bool keep = false;
        for (size_t i = 0; i < forward_cfg.publish_count; i++)
            keep |= forward_cfg.publish[i].fd == fd;
        if (!keep)
            close(fd);
    }
    forward_cfg.policy = &policy;
    proxy_run(&forward_cfg, &err);
    fprintf(stderr, "cordon-agent: forwarder: %s\n", err.message);
    _exit(1);
}

static int listen_tcp(uint16_t port, struct cordon_error *err)
{
    _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0)
        return error_set(err, errno, "forwarder: listening on 127.0.0.1:%u", port);
    return TAKE_FD(fd);
}

/* Only the user (the host's proxy runs as the container's uid) connects. */
static int listen_unix(const char *path, struct cordon_error *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path) >= (int)sizeof(sa.sun_path))
        return error_set(err, ENAMETOOLONG, "forwarder: %s", path);
    unlink(path); /* a kept sandbox's previous run */
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return error_set(err, errno, "forwarder: socket");
    mode_t old = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (rc < 0 || listen(fd, 128) < 0)
        return error_set(err, errno, "forwarder: listening on %s", path);
    return TAKE_FD(fd);
}

_Static_assert(NET_MAX_PUBLISH == 32, "struct agent_forward.ports");

int agent_forward_parse(int argc, char **argv, struct agent_forward *fwd)
{
    int i = 1;
    for (; i + 1 < argc; i += 2) {
        char *end;
        long port = strtol(argv[i + 1], &end, 10);
        if (strcmp(argv[i], "--proxy-socket") == 0)
            fwd->proxy_socket = argv[i + 1];
        else if (strcmp(argv[i], "--publish-dir") == 0)
            fwd->publish_dir = argv[i + 1];
        else if (strcmp(argv[i], "--host-service-dir") == 0)
            fwd->host_service_dir = argv[i + 1];
        else if (strcmp(argv[i], "--host-service") == 0) {
            if (*end || port <= 0 || port > 65535 || fwd->nservices >= ARRAY_SIZE(fwd->services))
                return -1;
            fwd->services[fwd->nservices++] = (uint16_t)port;
        } else if (strcmp(argv[i], "--publish-port") != 0)
            break;
        else if (*end || port <= 0 || port > 65535 || fwd->nports >= ARRAY_SIZE(fwd->ports))
            return -1;
        else
            fwd->ports[fwd->nports++] = (uint16_t)port;
    }
    return i;
}

int agent_forward_start(const struct agent_forward *fwd, struct cordon_error *err)
{
    const char *proxy_socket = fwd->proxy_socket;
    const char *publish_dir = fwd->publish_dir;
    size_t nports = publish_dir ? fwd->nports : 0;
    size_t nservices = fwd->host_service_dir ? fwd->nservices : 0;
    if (!proxy_socket && nports == 0 && nservices == 0)
        return 0;
    struct proxy_config *cfg = &forward_cfg;
    *cfg = (struct proxy_config){.sandbox_listener = -1, .audit_fd = -1};
    if (nports + nservices + (proxy_socket ? 1 : 0) > NET_MAX_PUBLISH)
        return error_set(err, E2BIG, "forwarder: more than %d listeners", NET_MAX_PUBLISH);
    int rc = -1;
    if (proxy_socket) {
        struct proxy_publish *pub = &cfg->publish[cfg->publish_count];
        if (snprintf(pub->connect_path, sizeof(pub->connect_path), "%s", proxy_socket) >=
            (int)sizeof(pub->connect_path)) {
            error_set(err, ENAMETOOLONG, "forwarder: %s", proxy_socket);
            goto out;
        }
        pub->fd = listen_tcp(NET_PROXY_PORT, err);
        if (pub->fd < 0)
            goto out;
        snprintf(pub->text, sizeof(pub->text), "the allowlist proxy");
        cfg->publish_count++;
    }
    for (size_t i = 0; i < nports; i++) {
        struct proxy_publish *pub = &cfg->publish[cfg->publish_count];
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%zu.sock", publish_dir, i);
        pub->fd = listen_unix(path, err);
        if (pub->fd < 0)
            goto out;
        pub->guest_port = fwd->ports[i];
        snprintf(pub->text, sizeof(pub->text), "published port %u", fwd->ports[i]);
        cfg->publish_count++;
    }
    for (size_t i = 0; i < nservices; i++) {
        struct proxy_publish *pub = &cfg->publish[cfg->publish_count];
        if (net_host_service_path(fwd->host_service_dir, fwd->services[i], pub->connect_path,
                                  sizeof(pub->connect_path)) < 0) {
            error_set(err, ENAMETOOLONG, "forwarder: host service %u", fwd->services[i]);
            goto out;
        }
        pub->fd = listen_tcp(fwd->services[i], err);
        if (pub->fd < 0)
            goto out;
        pub->guest_port = fwd->services[i];
        snprintf(pub->text, sizeof(pub->text), "host service 127.0.0.1:%u", fwd->services[i]);
        cfg->publish_count++;
    }
    pid_t pid = fork();
    if (pid < 0) {
        error_set(err, errno, "forwarder: fork");
        goto out;
    }
    if (pid == 0)
        forwarder_main();
    rc = 0;
out:
    for (size_t i = 0; i < cfg->publish_count; i++)
        close(cfg->publish[i].fd);
    return rc;
}
