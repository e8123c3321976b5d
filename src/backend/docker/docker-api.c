/* The Engine API over the daemon's unix socket: one HTTP/1.0 GET (so the
 * daemon answers with a plain body and closes; no chunked encoding to
 * undo), bounded in time and size. Host context. */
#include "backend/docker/docker-api.h"
#include "util/cleanup.h"
#include "util/clock.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int docker_api_get(const char *socket_path, const char *path, int timeout_ms, int *status,
                   char **body, struct cordon_error *err)
{
    *body = NULL;
    *status = 0;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(socket_path) >= sizeof(sa.sun_path))
        return error_set(err, ENAMETOOLONG, "docker API: %s", socket_path);
    memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return error_set(err, errno, "docker API: socket");
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return error_set(err, errno, "docker API: connecting to %s", socket_path);
    char req[1024];
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: docker\r\n\r\n", path);
    if (n < 0 || (size_t)n >= sizeof(req))
        return error_set(err, ENAMETOOLONG, "docker API: GET %s", path);
    for (int off = 0; off < n;) {
        ssize_t w = send(fd, req + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return error_set(err, errno, "docker API: GET %s", path);
        off += (int)w;
    }
    size_t cap = DOCKER_API_BODY_MAX + 8192, len = 0;
    _cleanup_free_ char *buf = malloc(cap + 1);
    if (!buf)
        return error_set(err, ENOMEM, "docker API");
    long long deadline = clock_now_ms() + timeout_ms;
    for (;;) {
        long long left = deadline - clock_now_ms();
        if (left <= 0)
            return error_set(err, ETIMEDOUT, "docker API: GET %s did not answer within %d s", path,
                             timeout_ms / 1000);
        struct pollfd p = {fd, POLLIN, 0};
        int pr = poll(&p, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0)
            return error_set(err, errno, "docker API: GET %s", path);
        if (pr == 0)
            continue;
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return error_set(err, errno, "docker API: GET %s", path);
        if (r == 0)
            break;
        len += (size_t)r;
        if (len >= cap)
            return error_set(err, E2BIG, "docker API: GET %s: the answer is larger than %d bytes",
                             path, DOCKER_API_BODY_MAX);
    }
    buf[len] = '\0';
    int code = 0;
    if (sscanf(buf, "HTTP/1.%*[01] %3d", &code) != 1 || code < 100 || code > 599)
        return error_set(err, EPROTO, "docker API: GET %s: not an HTTP answer", path);
    char *start = strstr(buf, "\r\n\r\n");
    if (!start)
        return error_set(err, EPROTO, "docker API: GET %s: no end of the headers", path);
    start += 4;
    size_t blen = len - (size_t)(start - buf);
    if (blen > DOCKER_API_BODY_MAX)
        return error_set(err, E2BIG, "docker API: GET %s: the answer is larger than %d bytes", path,
                         DOCKER_API_BODY_MAX);
    char *out = malloc(blen + 1);
    if (!out)
        return error_set(err, ENOMEM, "docker API");
    memcpy(out, start, blen);
    out[blen] = '\0';
    *body = out;
    *status = code;
    return 0;
}
