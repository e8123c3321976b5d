/* The sandbox's side of the socket tests on images without python
 * (tests/security/docker-sockets.sh), built static:
 *   sock-try try PATH stream|dgram-connect|sendto|sendmsg   one attempt: OK or ERRNO
 *   sock-try own DIR     the sandbox's own stream and datagram pair: a line each */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static socklen_t address(const char *path, struct sockaddr_un *sa)
{
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    snprintf(sa->sun_path, sizeof(sa->sun_path), "%s", path);
    return (socklen_t)sizeof(*sa);
}

static int attempt(const char *path, const char *kind)
{
    struct sockaddr_un sa;
    socklen_t len = address(path, &sa);
    int stream = strcmp(kind, "stream") == 0;
    int fd = socket(AF_UNIX, stream ? SOCK_STREAM : SOCK_DGRAM, 0);
    int r = -1;
    if (stream || strcmp(kind, "dgram-connect") == 0) {
        r = connect(fd, (struct sockaddr *)&sa, len);
        if (r == 0)
            r = send(fd, "hello", 5, MSG_NOSIGNAL) == 5 ? 0 : -1;
    } else if (strcmp(kind, "sendto") == 0) {
        r = sendto(fd, "hello", 5, 0, (struct sockaddr *)&sa, len) == 5 ? 0 : -1;
    } else if (strcmp(kind, "sendmsg") == 0) {
        struct iovec iov[2] = {{"hel", 3}, {"lo", 2}};
        struct msghdr m = {.msg_name = &sa, .msg_namelen = len, .msg_iov = iov, .msg_iovlen = 2};
        r = sendmsg(fd, &m, 0) == 5 ? 0 : -1;
    }
    printf("%s\n", r == 0 ? "OK" : strerrorname_np(errno));
    return 0;
}

static int own(const char *dir)
{
    char path[200];
    snprintf(path, sizeof(path), "%s/own-c.sock", dir);
    unlink(path);
    struct sockaddr_un sa;
    socklen_t len = address(path, &sa);
    int srv = socket(AF_UNIX, SOCK_STREAM, 0);
    int ok = bind(srv, (struct sockaddr *)&sa, len) == 0 && listen(srv, 4) == 0;
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    ok = ok && connect(c, (struct sockaddr *)&sa, len) == 0;
    int a = ok ? accept(srv, NULL, NULL) : -1;
    char buf[8] = "";
    ok = ok && a >= 0 && send(c, "ping", 4, 0) == 4 && recv(a, buf, 4, 0) == 4 &&
         memcmp(buf, "ping", 4) == 0;
    printf("own stream: %s\n", ok ? "ok" : strerrorname_np(errno));
    unlink(path);

    snprintf(path, sizeof(path), "%s/own-d.sock", dir);
    unlink(path);
    len = address(path, &sa);
    int d = socket(AF_UNIX, SOCK_DGRAM, 0);
    int e = socket(AF_UNIX, SOCK_DGRAM, 0);
    ok = bind(d, (struct sockaddr *)&sa, len) == 0 &&
         sendto(e, "dg", 2, 0, (struct sockaddr *)&sa, len) == 2 && recv(d, buf, 2, 0) == 2;
    printf("own datagram: %s\n", ok ? "ok" : strerrorname_np(errno));
    unlink(path);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "try") == 0)
        return attempt(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "own") == 0)
        return own(argv[2]);
    fprintf(stderr, "usage: sock-try try PATH KIND | own DIR\n");
    return 2;
}
