/* The floor for bench/proxy.sh: the least work any relaying proxy must do.
 * It answers one HTTP CONNECT at a time with 200, connects to
 * 127.0.0.1:PORT of the request (no name lookup, no policy, no audit),
 * then moves bytes both ways with splice(2) through 1 MiB pipes, as
 * cordon's proxy does. Serving connections one after another in one
 * process lets the bench read its CPU time from /proc. Benchmark-only:
 * it checks nothing and must never face a real client.
 *
 * usage: splice-relay LISTEN_PORT     (listens on 127.0.0.1) */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PIPE_BYTES (1024 * 1024)

static __attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("splice-relay: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static struct sockaddr_in loopback(int port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return sin;
}

/* Reads the CONNECT head byte by byte (nothing of the tunnel is taken)
 * and returns the port it names, or -1. */
static int read_connect(int fd)
{
    char head[1024];
    size_t used = 0;
    while (used < 4 || memcmp(head + used - 4, "\r\n\r\n", 4) != 0) {
        if (used == sizeof(head) - 1 || read(fd, head + used, 1) != 1)
            return -1;
        used++;
    }
    head[used] = '\0';
    char *sp = strchr(head, ' ');
    char *colon = sp ? strchr(sp, ':') : NULL;
    if (strncmp(head, "CONNECT ", 8) != 0 || !colon)
        return -1;
    return atoi(colon + 1);
}

struct way {
    int from, to;
    int pipe[2];
    size_t queued; /* bytes in the pipe, not yet sent */
    int eof;
};

/* Moves what FROM has into the pipe and what the pipe holds into TO.
 * Returns -1 when the connection is done or failed. */
static int pump(struct way *w)
{
    if (!w->eof) {
        ssize_t n =
            splice(w->from, NULL, w->pipe[1], NULL, PIPE_BYTES, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n == 0)
            w->eof = 1;
        else if (n > 0)
            w->queued += (size_t)n;
        else if (errno != EAGAIN)
            return -1;
    }
    while (w->queued > 0) {
        ssize_t n = splice(w->pipe[0], NULL, w->to, NULL, w->queued, SPLICE_F_MOVE);
        if (n <= 0)
            return -1;
        w->queued -= (size_t)n;
    }
    if (w->eof)
        shutdown(w->to, SHUT_WR);
    return 0;
}

static void relay(int client)
{
    int port = read_connect(client);
    if (port <= 0)
        return;
    int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in to = loopback(port);
    if (server < 0 || connect(server, (struct sockaddr *)&to, sizeof(to)) < 0) {
        if (server >= 0)
            close(server);
        return;
    }
    static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    if (write(client, ok, sizeof(ok) - 1) != (ssize_t)sizeof(ok) - 1) {
        close(server);
        return;
    }
    struct way ways[2] = {{.from = client, .to = server}, {.from = server, .to = client}};
    for (int i = 0; i < 2; i++) {
        if (pipe2(ways[i].pipe, O_CLOEXEC) < 0)
            die("pipe2: %m");
        fcntl(ways[i].pipe[1], F_SETPIPE_SZ, PIPE_BYTES);
    }
    while (!ways[0].eof || !ways[1].eof) {
        struct pollfd fds[2] = {{.fd = ways[0].eof ? -1 : client, .events = POLLIN},
                                {.fd = ways[1].eof ? -1 : server, .events = POLLIN}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR)
            break;
        if ((fds[0].revents && pump(&ways[0]) < 0) || (fds[1].revents && pump(&ways[1]) < 0))
            break;
    }
    for (int i = 0; i < 2; i++) {
        close(ways[i].pipe[0]);
        close(ways[i].pipe[1]);
    }
    close(server);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: splice-relay LISTEN_PORT");
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in at = loopback(atoi(argv[1]));
    if (listener < 0 || setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(listener, (struct sockaddr *)&at, sizeof(at)) < 0 || listen(listener, 16) < 0)
        die("listen on 127.0.0.1:%s: %m", argv[1]);
    for (;;) {
        int client = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        if (client < 0)
            continue;
        relay(client);
        close(client);
    }
}
