/* The docker backend's allowlist on the container's side: the container has
 * only its own loopback (--network none), and the host's proxy listens on a
 * unix socket bind-mounted into it. This forwarder accepts on
 * 127.0.0.1:NET_PROXY_PORT and relays each connection to that socket with
 * the proxy's own loop (net/proxy.c: one "published" listener whose target
 * is the unix socket, no allowlist, no audit; the host's proxy checks and
 * logs). Sandbox context: a child of the agent forked after it confined
 * itself (Landlock and cordon's seccomp filter apply to it too), so it can
 * reach nothing the sandbox could not; it connects to one fixed path. */
#include "agent/docker-net.h"
#include "net/proxy.h"
#include "util/cleanup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static _Noreturn void forwarder_main(int listener, const char *path)
{
    static struct net_policy policy = {.session_name = "forwarder"};
    static struct proxy_config cfg;
    struct cordon_error err = {0};
    prctl(PR_SET_NAME, "cordon-forward");
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_DUMPABLE, 0);
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
        if (fd != listener)
            close(fd);
    }
    cfg = (struct proxy_config){.policy = &policy, .sandbox_listener = -1, .audit_fd = -1};
    cfg.publish[0].fd = listener;
    snprintf(cfg.publish[0].connect_path, sizeof(cfg.publish[0].connect_path), "%s", path);
    snprintf(cfg.publish[0].text, sizeof(cfg.publish[0].text), "forwarded to %s", path);
    cfg.publish_count = 1;
    proxy_run(&cfg, &err);
    fprintf(stderr, "cordon-agent: forwarder: %s\n", err.message);
    _exit(1);
}

int agent_forward_start(const char *path, uint16_t port, struct cordon_error *err)
{
    if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return error_set(err, ENAMETOOLONG, "forwarder: %s", path);
    _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0)
        return error_set(err, errno, "forwarder: listening on 127.0.0.1:%u", port);
    pid_t pid = fork();
    if (pid < 0)
        return error_set(err, errno, "forwarder: fork");
    if (pid == 0)
        forwarder_main(fd, path);
    return 0;
}
