/* Published ports and host services (see proxy-conn.h): a connection
 * accepted on the host goes into the sandbox (a socket from the namespace
 * factory, or the docker forwarder's unix socket, opened without following
 * symlinks), or one accepted in the sandbox goes to the host's loopback.
 * Host context: the proxy process. */
#include "net/audit.h"
#include "net/proxy-conn.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

void publish_start(struct proxy *p, struct conn *c, size_t index)
{
    const struct proxy_publish *pub = &p->cfg->publish[index];
    c->kind = KIND_PUBLISH;
    c->publish_index = index;
    snprintf(c->host, sizeof(c->host), "127.0.0.1");
    c->port = pub->guest_port;
    struct cordon_error err = {0};
    bool to_unix = pub->connect_path[0] != '\0';
    int fd =
        to_unix || !p->cfg->factory || pub->to_host
            ? socket(to_unix ? AF_UNIX : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)
            : netns_factory_socket(p->cfg->factory, &err);
    if (fd < 0) {
        proxy_audit(p, c, NULL, false, err.message[0] ? err.message : strerror(errno));
        conn_close(p, c);
        return;
    }
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(pub->guest_port)};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    /* The socket may sit in a directory the sandbox writes (docker's
     * published ports): connect to that very inode, never through a
     * symlink planted there to another socket of the host. */
    _cleanup_close_ int path_fd = -1;
    if (to_unix) {
        struct stat st;
        path_fd = open(pub->connect_path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (path_fd < 0 || fstat(path_fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
            proxy_audit(p, c, NULL, false, "nothing listens in the sandbox (no socket there)");
            close(fd);
            conn_close(p, c);
            return;
        }
        snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d", path_fd);
    }
    struct sockaddr *sa = to_unix ? (struct sockaddr *)&sun : (struct sockaddr *)&sin;
    socklen_t salen = to_unix ? (socklen_t)sizeof(sun) : (socklen_t)sizeof(sin);
    /* A unix socket's backlog full says EAGAIN: refused like a closed port. */
    if (connect(fd, sa, salen) < 0 && errno != EINPROGRESS) {
        close(fd);
        conn_close(p, c);
        return;
    }
    proxy_audit(p, c, "127.0.0.1", true, pub->text);
    c->server = fd;
    c->server_events = EPOLLOUT;
    struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = conn_token(p, c, 1)};
    epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
    c->state = CONN_CONNECTING;
}

/* A published port refused on the sandbox's 127.0.0.1: a server that
 * listens on ::1 only (Node's and Vite's "localhost" on many systems) is
 * reached there. True when that connect is under way. */
bool publish_retry_v6(struct proxy *p, struct conn *c)
{
    const struct proxy_publish *pub = &p->cfg->publish[c->publish_index];
    if (c->publish_v6 || pub->connect_path[0] || pub->to_host || !p->cfg->factory ||
        p->cfg->factory->pid <= 0)
        return false;
    c->publish_v6 = true;
    struct cordon_error err = {0};
    int fd = netns_factory_socket6(p->cfg->factory, &err);
    if (fd < 0)
        return false;
    struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons(pub->guest_port)};
    sin6.sin6_addr = in6addr_loopback;
    if (connect(fd, (struct sockaddr *)&sin6, sizeof(sin6)) < 0 && errno != EINPROGRESS) {
        close(fd);
        return false;
    }
    snprintf(c->host, sizeof(c->host), "::1");
    c->server = fd;
    c->server_events = EPOLLOUT;
    struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = conn_token(p, c, 1)};
    epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
    return true;
}

/* Nothing took the published port's connection inside (or, for a host
 * service, on the host's loopback): said on cordon's
 * stderr (once per port, the audit log has each), not only an empty reply. */
void publish_failed(struct proxy *p, struct conn *c, int soerr)
{
    static bool warned[NET_MAX_PUBLISH];
    const struct proxy_publish *pub = &p->cfg->publish[c->publish_index];
    char reason[400];
    if (pub->to_host)
        snprintf(reason, sizeof(reason), "%s: nothing accepts on the host's 127.0.0.1:%u (%s)",
                 pub->text, pub->guest_port, strerror(soerr));
    else
        snprintf(reason, sizeof(reason),
                 "%s: nothing accepts on the sandbox's 127.0.0.1:%u%s (%s); the server must "
                 "listen on 127.0.0.1, ::1 or any address inside",
                 pub->text, pub->guest_port, c->publish_v6 ? " or [::1]" : "", strerror(soerr));
    struct net_audit_record r = {
        .session = p->cfg->policy->session_name,
        .protocol = "publish",
        .host = c->host,
        .port = c->port,
        .allowed = false,
        .reason = reason,
    };
    net_audit_write(p->cfg->audit_fd, &r);
    net_audit_write(p->cfg->session_audit_fd, &r);
    if (c->publish_index < NET_MAX_PUBLISH && !warned[c->publish_index]) {
        warned[c->publish_index] = true;
        log_warn("network: %s", reason);
    }
    conn_close(p, c);
}
