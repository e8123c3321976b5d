/* net/vmux.c: connections carried over "ports" (socketpairs standing in for
 * the virtio-serial ports), between a guest-side and a host-side engine in
 * two processes, to an echo server in a third: bytes intact both ways,
 * half-close, a port reused connection after connection, a refused
 * connection, and a peer that breaks the protocol. Test context. */
#include "backend/vm/vmux.h"
#include "tap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static int tcp_listen(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
        abort();
    *port = ntohs(sa.sin_port);
    return fd;
}

static int tcp_connect(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    /* A port that is never freed shows up as a failed check, not a hang. */
    struct timeval tv = {.tv_sec = 10};
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Echo server: reads to EOF, then writes everything back and closes (so
 * the reply crosses only after the client's half-close). */
static void echo_server(int lfd)
{
    for (;;) {
        int c = accept(lfd, NULL, NULL);
        if (c < 0)
            continue;
        size_t cap = 1 << 20, len = 0;
        char *buf = malloc(cap);
        ssize_t n;
        while (buf && (n = read(c, buf + len, cap - len)) > 0) {
            len += (size_t)n;
            if (len == cap)
                buf = realloc(buf, cap *= 2);
        }
        for (size_t off = 0; buf && off < len;) {
            n = write(c, buf + off, len - off);
            if (n <= 0)
                break;
            off += (size_t)n;
        }
        free(buf);
        close(c);
    }
}

static uint16_t echo_port, dead_port;

/* Host side of the test: OPEN goes to the echo server, or (port 1) to a
 * port where nothing listens. */
static int host_connect(struct vmux *m, uint16_t port, void *ctx)
{
    (void)m;
    (void)ctx;
    return tcp_connect(port == 1 ? dead_port : echo_port);
}

static pid_t run_side(int ports[], size_t n, bool initiator, int listener, uint16_t open_port)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    static struct vmux m;
    struct cordon_error err;
    vmux_init(&m, host_connect, NULL);
    for (size_t i = 0; i < n; i++)
        vmux_add_port(&m, ports[i], initiator, &err);
    if (listener >= 0)
        vmux_add_listener(&m, listener, open_port, &err);
    signal(SIGPIPE, SIG_IGN);
    vmux_run(&m);
    _exit(0);
}

/* One connection through the pair: sends len bytes, half-closes, reads
 * the echo. Returns the bytes that came back (-1: connect failed). */
static ssize_t round_trip(uint16_t port, size_t len, bool *same)
{
    int fd = tcp_connect(port);
    if (fd < 0)
        return -1;
    unsigned char *out = malloc(len), *in = malloc(len + 1);
    for (size_t i = 0; i < len; i++)
        out[i] = (unsigned char)(i * 7 + 3);
    size_t sent = 0, got = 0;
    while (sent < len) {
        ssize_t n = write(fd, out + sent, len - sent);
        if (n <= 0)
            break;
        sent += (size_t)n;
    }
    shutdown(fd, SHUT_WR);
    ssize_t n;
    while ((n = read(fd, in + got, len + 1 - got)) > 0)
        got += (size_t)n;
    *same = got == len && memcmp(in, out, len) == 0;
    free(out);
    free(in);
    close(fd);
    return (ssize_t)got;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    int echo_l = tcp_listen(&echo_port);
    int dead_l = tcp_listen(&dead_port);
    close(dead_l); /* nothing listens there now */
    pid_t echo = fork();
    if (echo == 0)
        echo_server(echo_l);

    /* Two ports: guest side initiates (listener), host side responds. */
    int a[2], b[2];
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a);
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b);
    uint16_t entry, refused_entry;
    int entry_l = tcp_listen(&entry);
    int refused_l = tcp_listen(&refused_entry);
    int guest_ports[] = {a[0], b[0]}, host_ports[] = {a[1], b[1]};
    pid_t guest = fork();
    if (guest == 0) {
        static struct vmux m;
        struct cordon_error err;
        vmux_init(&m, host_connect, NULL);
        for (size_t i = 0; i < 2; i++)
            vmux_add_port(&m, guest_ports[i], true, &err);
        vmux_add_listener(&m, entry_l, 2, &err);
        vmux_add_listener(&m, refused_l, 1, &err);
        signal(SIGPIPE, SIG_IGN);
        vmux_run(&m);
        _exit(0);
    }
    pid_t host = run_side(host_ports, 2, false, -1, 0);
    close(a[0]), close(a[1]), close(b[0]), close(b[1]);

    bool same = false;
    is_int(round_trip(entry, 5, &same), 5, "a short message comes back");
    ok(same, "... intact");
    is_int(round_trip(entry, 3 << 20, &same), 3 << 20, "3 MiB come back after the half-close");
    ok(same, "... intact");
    int reused = 0;
    for (int i = 0; i < 20; i++)
        reused += round_trip(entry, 1000, &same) == 1000 && same;
    is_int(reused, 20, "20 connections in a row over two ports, each freed after its end");

    /* A refused connection: the client sees the end, the port is free. */
    int fd = tcp_connect(refused_entry);
    char byte;
    struct pollfd p = {fd, POLLIN, 0};
    ok(fd >= 0 && poll(&p, 1, 5000) == 1 && read(fd, &byte, 1) <= 0,
       "a connection the other side cannot make ends at once");
    if (fd >= 0)
        close(fd);
    is_int(round_trip(entry, 100, &same), 100, "the ports still work after a refusal");

    kill(guest, SIGKILL);
    kill(host, SIGKILL);
    waitpid(guest, NULL, 0);
    waitpid(host, NULL, 0);

    /* A peer that breaks the protocol (an OPEN on a port where this side
     * initiates, then a frame larger than the limit): the port leaves
     * service, the engine returns when no port is left, nothing hangs. */
    int c[2];
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c);
    int pc[] = {c[0]};
    pid_t victim = run_side(pc, 1, true, -1, 0);
    close(c[0]);
    unsigned char bad[] = {VMUX_FRAME_OPEN, 0, 2, 0, 80};
    ssize_t w = write(c[1], bad, sizeof(bad));
    (void)w;
    char sink;
    p = (struct pollfd){c[1], POLLIN, 0};
    ok(poll(&p, 1, 5000) == 1 && read(c[1], &sink, 1) == 0,
       "an OPEN on the initiating side's port takes the port out of service");
    int status = -1;
    for (int i = 0; i < 50 && waitpid(victim, &status, WNOHANG) == 0; i++)
        usleep(100000);
    ok(WIFEXITED(status), "the engine returns once its last port is gone");
    close(c[1]);

    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c);
    pc[0] = c[0];
    victim = run_side(pc, 1, false, -1, 0);
    close(c[0]);
    unsigned char big[] = {VMUX_FRAME_DATA, 0xff, 0xff};
    w = write(c[1], big, sizeof(big));
    p = (struct pollfd){c[1], POLLIN, 0};
    ok(poll(&p, 1, 5000) == 1 && read(c[1], &sink, 1) == 0,
       "a frame over VMUX_DATA_MAX takes the port out of service");
    waitpid(victim, NULL, 0);
    close(c[1]);

    kill(echo, SIGKILL);
    waitpid(echo, NULL, 0);
    return tap_done();
}
