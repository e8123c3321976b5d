/* Client for bench/proxy.sh: downloads over HTTP/1.0, directly or through
 * an HTTP CONNECT proxy, reading into one 1 MiB buffer that is thrown away,
 * so that the client is never what limits the measured throughput. Runs
 * on the host (direct) and inside the sandbox (through cordon's proxy).
 * Benchmark-only.
 *
 * usage: proxy-client download HOST PORT PATH [PROXY_PORT]  prints "BYTES SECONDS"
 *        proxy-client latency HOST PORT N [PROXY_PORT]      prints the median ms of N
 *                                                           connect + GET /small
 * HOST is an IPv4 address when direct; through the proxy it is the name
 * sent in CONNECT (the proxy is 127.0.0.1:PROXY_PORT). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define READ_SIZE (1024 * 1024)

static char read_buffer[READ_SIZE];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static __attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("proxy-client: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static int tcp_connect(const char *ip, int port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1)
        die("%s: not an IPv4 address", ip);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
        die("connect %s:%d: %m", ip, port);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void send_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n <= 0)
            die("send: %m");
        data += n;
        len -= (size_t)n;
    }
}

/* A connection to HOST:PORT, through the CONNECT proxy when PROXY > 0. */
static int open_conn(const char *host, int port, int proxy)
{
    if (proxy <= 0)
        return tcp_connect(host, port);
    int fd = tcp_connect("127.0.0.1", proxy);
    char req[512];
    int len = snprintf(req, sizeof(req), "CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n", host,
                       port, host, port);
    send_all(fd, req, (size_t)len);
    /* Byte by byte up to the end of the head: nothing of the tunnel is
     * consumed here. */
    char head[1024];
    size_t used = 0;
    while (used < 4 || memcmp(head + used - 4, "\r\n\r\n", 4) != 0) {
        if (used == sizeof(head) - 1 || read(fd, head + used, 1) != 1)
            die("proxy closed during the CONNECT answer");
        used++;
    }
    head[used] = '\0';
    if (strncmp(head, "HTTP/1.1 200", 12) != 0)
        die("proxy refused: %s", head);
    return fd;
}

/* GET PATH on FD; returns the bytes received (head included) until EOF. */
static long long get(int fd, const char *host, const char *path)
{
    char req[512];
    int len = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, host);
    send_all(fd, req, (size_t)len);
    long long total = 0;
    for (;;) {
        ssize_t n = read(fd, read_buffer, sizeof(read_buffer));
        if (n < 0)
            die("read: %m");
        if (n == 0)
            break;
        total += n;
    }
    close(fd);
    return total;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 5)
        die("usage: download HOST PORT PATH [PROXY_PORT] | latency HOST PORT N [PROXY_PORT]");
    const char *host = argv[2];
    int port = atoi(argv[3]);
    int proxy = argc > 5 ? atoi(argv[5]) : 0;
    if (strcmp(argv[1], "download") == 0) {
        double t = now_s();
        long long n = get(open_conn(host, port, proxy), host, argv[4]);
        printf("%lld %.6f\n", n, now_s() - t);
        return 0;
    }
    int count = atoi(argv[4]);
    if (count < 1)
        die("latency: N must be at least 1");
    double *times = calloc((size_t)count, sizeof(*times));
    if (!times)
        die("out of memory");
    for (int i = 0; i < count; i++) {
        double t = now_s();
        get(open_conn(host, port, proxy), host, "/small");
        times[i] = (now_s() - t) * 1000;
    }
    qsort(times, (size_t)count, sizeof(*times), cmp_double);
    printf("%.3f\n", times[count / 2]);
    free(times);
    return 0;
}
