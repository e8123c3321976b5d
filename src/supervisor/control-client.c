/* The client side of a session's control socket (control.h): what
 * `cordon verify NAME` uses to reach the supervisor that owns a running
 * session. Host context, the CLI. The answer is bounded and must arrive
 * within the caller's timeout. */
#include "supervisor/control.h"
#include "supervisor/state.h"
#include "util/cleanup.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int control_connect(const char *name, pid_t *ret_peer_pid, struct cordon_error *err)
{
    _cleanup_free_ char *root = NULL;
    _cleanup_close_ int root_fd = state_root_for(name, &root, err);
    if (root_fd < 0)
        return -1;
    _cleanup_close_ int dir_fd =
        openat(root_fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dir_fd < 0)
        return error_set(err, errno, "sandbox %s: its state directory", name);
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return error_set(err, errno, "socket");
    /* Through the directory fd, as the server binds it: the path may be
     * longer than sun_path. */
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/self/fd/%d/%s", dir_fd,
             CONTROL_SOCKET_NAME);
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
        return error_set(err, errno, "sandbox %s: connecting to %s/%s/%s", name, root, name,
                         CONTROL_SOCKET_NAME);
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        return error_set(err, errno, "sandbox %s: SO_PEERCRED", name);
    *ret_peer_pid = cred.pid;
    return TAKE_FD(fd);
}

int control_request(int fd, const char *op, int timeout_ms, json_t **ret_answer,
                    struct cordon_error *err)
{
    char line[128];
    int n = snprintf(line, sizeof(line), "{\"op\":\"%s\"}\n", op);
    if (n < 0 || (size_t)n >= sizeof(line))
        return error_set(err, EINVAL, "control: op too long");
    /* A supervisor that refuses us (busy, another uid) may have answered
     * and closed before our request went out: its answer is still ours to
     * read, so a failed send is reported only when no answer follows. */
    int send_errno = send(fd, line, (size_t)n, MSG_NOSIGNAL) == n ? 0 : errno;
    _cleanup_free_ char *buf = NULL;
    size_t len = 0, cap = 0;
    int64_t deadline = clock_now_ms() + timeout_ms;
    for (;;) {
        if (len + 4096 > cap) {
            if (cap >= CONTROL_ANSWER_MAX)
                return error_set(err, 0, "control: answer longer than %d bytes",
                                 CONTROL_ANSWER_MAX);
            cap = cap ? cap * 2 : 16384;
            char *grown = realloc(buf, cap + 1);
            if (!grown)
                return error_set(err, ENOMEM, "control");
            buf = grown;
        }
        int64_t left = deadline - clock_now_ms();
        if (left <= 0)
            return error_set(err, 0, "control: no answer within %d s", timeout_ms / 1000);
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return error_set(err, errno, "control: waiting for the answer");
        if (r == 0)
            continue;
        ssize_t got = recv(fd, buf + len, cap - len, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0 && send_errno)
            return error_set(err, send_errno, "control: sending the request");
        if (got < 0)
            return error_set(err, errno, "control: reading the answer");
        if (got == 0)
            return error_set(err, 0,
                             "control: the supervisor closed the connection without "
                             "an answer");
        char *nl = memchr(buf + len, '\n', (size_t)got);
        len += (size_t)got;
        if (nl) {
            len = (size_t)(nl - buf);
            break;
        }
    }
    json_error_t jerr;
    json_t *answer = json_loadb(buf, len, 0, &jerr);
    if (!json_is_object(answer)) {
        json_decref(answer);
        return error_set(err, 0, "control: the answer is not a JSON object");
    }
    if (!json_is_true(json_object_get(answer, "ok"))) {
        const char *why = json_string_value(json_object_get(answer, "error"));
        error_set(err, 0, "the supervisor answered: %s", why ? why : "an error");
        json_decref(answer);
        return -1;
    }
    *ret_answer = answer;
    return 0;
}
