/* `cordon-agent connect HOST PORT`: ssh's ProxyCommand inside the sandbox
 * (docs/ssh.md). Sandbox context, unprivileged, under the sandbox's seccomp
 * filter: it is only a client of cordon's proxy on 127.0.0.1:NET_PROXY_PORT,
 * which decides (the allowlist, deny mode's listener) and reports refusals
 * like any other client's. It asks for a CONNECT tunnel to HOST:PORT, then
 * relays stdin to the tunnel and the tunnel to stdout until both sides end.
 * HOST and PORT come from ssh's command line, written by the sandbox's own
 * programs: both are checked before they reach the request head. */
#include "agent/connect.h"
#include "net/net.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fs.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONNECT_HOST_MAX   253
#define CONNECT_HEAD_MAX   8192
#define CONNECT_TIMEOUT_MS 60000 /* the proxy's own limits are 30 s + 10 s */

/* A name or address literal as the proxy's parser takes it: letters, digits,
 * ".-_" and, inside brackets, an IPv6 address (hex digits, ':' and '.'). */
static bool host_plain(const char *host)
{
    size_t n = strlen(host);
    if (n == 0 || n > CONNECT_HOST_MAX)
        return false;
    bool bracket = host[0] == '[';
    if (bracket && (n < 3 || host[n - 1] != ']'))
        return false;
    for (size_t i = bracket; i < n - bracket; i++) {
        unsigned char c = (unsigned char)host[i];
        if (bracket ? !(isxdigit(c) || c == ':' || c == '.')
                    : !(isalnum(c) || c == '.' || c == '-' || c == '_'))
            return false;
    }
    return true;
}

static int parse_port(const char *text)
{
    if (!*text || strlen(text) > 5)
        return -1;
    int port = 0;
    for (const char *p = text; *p; p++) {
        if (!isdigit((unsigned char)*p))
            return -1;
        port = port * 10 + (*p - '0');
    }
    return port >= 1 && port <= 65535 ? port : -1;
}

/* Reads the reply head (up to the blank line, never past it: what follows
 * is the server's). Returns its length, or -1 with errno (EMSGSIZE when
 * it does not fit). */
static ssize_t read_head(int fd, char *buf, size_t size)
{
    size_t len = 0;
    while (len + 1 < size) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, CONNECT_TIMEOUT_MS);
        if (r == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        /* One byte at a time: the head is short and the tunnel's first
         * bytes (the server's ssh banner) must stay in the socket. */
        ssize_t got = read(fd, buf + len, 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -1;
        if (got == 0) {
            errno = ECONNRESET;
            return -1;
        }
        len++;
        buf[len] = '\0';
        if (len >= 4 && memcmp(buf + len - 4, "\r\n\r\n", 4) == 0)
            return (ssize_t)len;
    }
    errno = EMSGSIZE;
    return -1;
}

/* The refusal's reason as the proxy wrote it (the body, "cordon: network:
 * ..."), printable characters only: it is shown on the sandbox's stderr. */
static void print_refusal(int fd, const char *host, int port, const char *status)
{
    char body[2048];
    size_t len = 0;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (len + 1 >= sizeof(body) || poll(&p, 1, 2000) <= 0)
            break;
        ssize_t got = read(fd, body + len, sizeof(body) - 1 - len);
        if (got <= 0)
            break;
        len += (size_t)got;
    }
    body[len] = '\0';
    for (size_t i = 0; i < len; i++)
        if (!isprint((unsigned char)body[i]))
            body[i] = ' ';
    /* The status line too: whatever listens on the port wrote it. */
    char line[256];
    size_t llen = strcspn(status, "\r\n");
    if (llen >= sizeof(line))
        llen = sizeof(line) - 1;
    for (size_t i = 0; i < llen; i++)
        line[i] = isprint((unsigned char)status[i]) ? status[i] : ' ';
    line[llen] = '\0';
    while (len > 0 && body[len - 1] == ' ')
        body[--len] = '\0';
    fprintf(stderr, "cordon-agent connect: cordon's proxy refused %s:%d: %s%s%s\n", host, port,
            line, len ? ": " : "", body);
}

/* Copies what stdout takes; returns 0 at EOF, 1 when bytes moved, -1 on
 * error. stdout is ssh's pipe, which ssh drains as it reads its peer. */
static int copy_to_stdout(int sock)
{
    char buf[65536];
    ssize_t got = recv(sock, buf, sizeof(buf), MSG_DONTWAIT);
    if (got < 0)
        return errno == EINTR || errno == EAGAIN ? 1 : -1;
    if (got == 0)
        return 0;
    return fs_write_all(STDOUT_FILENO, buf, (size_t)got) < 0 ? -1 : 1;
}

/* stdin -> tunnel keeps what the socket did not take and reads stdin again
 * only once it is sent: a server that stops reading stalls that direction
 * alone, never the tunnel -> stdout one. */
struct pending {
    char buf[65536];
    size_t off, len;
};

static int flush_to_sock(int sock, struct pending *p)
{
    while (p->off < p->len) {
        ssize_t n = send(sock, p->buf + p->off, p->len - p->off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0)
            return errno == EINTR ? 0 : errno == EAGAIN ? 1 : -1;
        p->off += (size_t)n;
    }
    p->off = p->len = 0;
    return 1;
}

static int relay(int sock)
{
    static struct pending up;
    bool in_open = true, sock_open = true;
    while (sock_open) {
        bool waiting = up.off < up.len;
        struct pollfd p[2] = {
            {.fd = in_open && !waiting ? STDIN_FILENO : -1, .events = POLLIN},
            {.fd = sock, .events = POLLIN | (waiting ? POLLOUT : 0)},
        };
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (waiting && (p[1].revents & (POLLOUT | POLLERR)) && flush_to_sock(sock, &up) < 0)
            return -1;
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t got = read(STDIN_FILENO, up.buf, sizeof(up.buf));
            if (got < 0 && errno != EINTR && errno != EAGAIN)
                return -1;
            if (got == 0) {
                in_open = false;
                shutdown(sock, SHUT_WR);
            } else if (got > 0) {
                up.off = 0;
                up.len = (size_t)got;
                if (flush_to_sock(sock, &up) < 0)
                    return -1;
            }
        }
        if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            int r = copy_to_stdout(sock);
            if (r < 0)
                return -1;
            if (r == 0)
                sock_open = false;
        }
    }
    return 0;
}

int agent_connect(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: cordon-agent connect HOST PORT   (ssh's ProxyCommand: "
                        "a tunnel through cordon's proxy)\n");
        return CORDON_EXIT_FAILURE;
    }
    const char *host = argv[2];
    int port = parse_port(argv[3]);
    if (!host_plain(host) || port < 0) {
        fprintf(stderr,
                "cordon-agent connect: '%.64s' port '%.8s': not a host name or address "
                "and a port 1-65535; nothing was sent\n",
                host, argv[3]);
        return CORDON_EXIT_FAILURE;
    }
    _cleanup_close_ int sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in proxy = {.sin_family = AF_INET, .sin_port = htons(NET_PROXY_PORT)};
    proxy.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (sock < 0 || connect(sock, (struct sockaddr *)&proxy, sizeof(proxy)) < 0) {
        fprintf(stderr,
                "cordon-agent connect: cannot reach cordon's proxy on 127.0.0.1:%d: %s (this "
                "sandbox's network.mode is \"open\", or the proxy has stopped)\n",
                NET_PROXY_PORT, strerror(errno));
        return 1;
    }
    char req[2 * CONNECT_HOST_MAX + 64];
    int n = snprintf(req, sizeof(req), "CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n", host, port,
                     host, port);
    if (n < 0 || (size_t)n >= sizeof(req) || fs_write_all(sock, req, (size_t)n) < 0) {
        fprintf(stderr, "cordon-agent connect: sending the request to cordon's proxy: %s\n",
                strerror(errno));
        return CORDON_EXIT_FAILURE;
    }
    char head[CONNECT_HEAD_MAX];
    if (read_head(sock, head, sizeof(head)) < 0) {
        fprintf(stderr, "cordon-agent connect: reading cordon's proxy's answer for %s:%d: %s\n",
                host, port, strerror(errno));
        return 1;
    }
    /* "HTTP/1.x 200 ..." opens the tunnel; anything else is a refusal. */
    if (strncmp(head, "HTTP/1.", 7) != 0 || strncmp(head + 8, " 200", 4) != 0) {
        print_refusal(sock, host, port, head);
        return 1;
    }
    return relay(sock) < 0 ? 1 : 0;
}
