/* Unit tests of a session's control socket (supervisor/control.h): a child
 * process serves it as the supervisor's event loop would, this process is
 * the client (control_connect/control_request and raw peers). Host
 * context, any uid. */
#include "supervisor/control.h"
#include "supervisor/state.h"
#include "tap.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define NAME "ctl-test"

/* --- the server (child) --- */

struct server {
    struct control *c;
    uint64_t deferred; /* a "verify" answered on the next turn, as the real one is */
};

static void on_request(void *ctx, uint64_t conn, const char *op)
{
    struct server *s = ctx;
    if (strcmp(op, "status") == 0)
        control_reply(s->c, conn,
                      json_pack("{s:b, s:{s:i}}", "ok", 1, "status", "pid", (int)getpid()));
    else if (strcmp(op, "verify") == 0)
        s->deferred = conn;
    else
        control_reply(s->c, conn, json_pack("{s:b, s:s}", "ok", 0, "error", "unknown op"));
}

/* Serves until stop_fd reads EOF; ready_fd gets a byte once listening. */
static int serve(int dir_fd, int ready_fd, int stop_fd)
{
    struct server s = {0};
    struct cordon_error err = {0};
    if (control_open(dir_fd, NAME, &s.c, &err) < 0) {
        fprintf(stderr, "control_open: %s\n", err.message);
        return 1;
    }
    if (write(ready_fd, "r", 1) != 1)
        return 1;
    close(ready_fd);
    for (;;) {
        struct pollfd p[2] = {{control_fd(s.c), POLLIN, 0}, {stop_fd, POLLIN, 0}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        if (s.deferred) {
            control_reply(s.c, s.deferred,
                          json_pack("{s:b, s:{s:s}}", "ok", 1, "report", "result", "PASS"));
            s.deferred = 0;
        }
        if (p[0].revents)
            control_dispatch(s.c, on_request, &s);
    }
    control_close(s.c);
    return 0;
}

/* --- raw peers --- */

static char socket_path[100]; /* fits sun_path */

static int raw_connect(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket_path);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends len bytes of data (and shuts down its side when asked), returns the
 * whole answer (malloc'd) or NULL. */
static char *raw_exchange(int fd, const char *data, size_t len, bool shut)
{
    /* A refused peer's send may fail: the answer is read all the same. */
    ssize_t sent = send(fd, data, len, MSG_NOSIGNAL);
    (void)sent;
    if (shut)
        shutdown(fd, SHUT_WR);
    char buf[8192];
    size_t got = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 5000) <= 0)
            return NULL;
        ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    while (got && buf[got - 1] == '\n')
        got--;
    buf[got] = '\0';
    return got ? strdup(buf) : NULL;
}

static char *raw(const char *data, size_t len, bool shut)
{
    _cleanup_close_ int fd = raw_connect();
    return fd < 0 ? NULL : raw_exchange(fd, data, len, shut);
}

int main(void)
{
    char tmp[] = "/tmp/cordon-control-test.XXXXXX";
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("XDG_RUNTIME_DIR", tmp, 1);
    struct cordon_error err = {0};
    struct state_owner owner;
    if (state_acquire(NAME, "/", "ns", &owner, &err) < 0) {
        fprintf(stderr, "state_acquire: %s\n", err.message);
        return 1;
    }
    snprintf(socket_path, sizeof(socket_path), "%s/%s", owner.dir, CONTROL_SOCKET_NAME);

    pid_t peer = 0;
    int fd = control_connect(NAME, &peer, &err);
    ok(fd < 0 && err.errnum == ENOENT, "no server yet: control_connect fails with ENOENT (%s)",
       err.message);

    int ready[2], stop[2];
    if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(stop, O_CLOEXEC) < 0)
        return 1;
    pid_t child = fork();
    if (child == 0) {
        close(ready[0]);
        close(stop[1]);
        _exit(serve(owner.dir_fd, ready[1], stop[0]));
    }
    close(ready[1]);
    close(stop[0]);
    char byte;
    if (read(ready[0], &byte, 1) != 1) {
        fprintf(stderr, "the server did not start\n");
        return 1;
    }

    struct stat st;
    ok(lstat(socket_path, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 07777) == 0600,
       "the control socket is a socket with mode 0600");

    fd = control_connect(NAME, &peer, &err);
    ok(fd >= 0, "control_connect");
    is_int(peer, child, "SO_PEERCRED: the peer is the process that listens");
    json_t *answer = NULL;
    ok(control_request(fd, "status", 5000, &answer, &err) == 0, "status answered");
    is_int(json_integer_value(json_object_get(json_object_get(answer, "status"), "pid")), child,
           "status: the server's answer");
    json_decref(answer);
    close(fd);

    fd = control_connect(NAME, &peer, &err);
    answer = NULL;
    ok(control_request(fd, "verify", 5000, &answer, &err) == 0, "an answer given later arrives");
    is_str(json_string_value(json_object_get(json_object_get(answer, "report"), "result")), "PASS",
           "verify: the report");
    json_decref(answer);
    close(fd);

    fd = control_connect(NAME, &peer, &err);
    answer = NULL;
    ok(control_request(fd, "rm", 5000, &answer, &err) < 0 && !answer,
       "an {\"ok\": false} answer is an error");
    is_str(err.message, "the supervisor answered: unknown op", "... with the server's message");
    close(fd);

    _cleanup_free_ char *bad = raw("hello\n", 6, false);
    ok(bad && strstr(bad, "\"ok\":false") && strstr(bad, "bad request"),
       "a line that is not JSON: refused (%s)", bad ? bad : "no answer");
    _cleanup_free_ char *noop = raw("{\"op\":7}\n", 9, false);
    ok(noop && strstr(noop, "bad request"), "op not a string: refused");
    char big[CONTROL_REQUEST_MAX + 100];
    memset(big, 'x', sizeof(big));
    _cleanup_free_ char *toolong = raw(big, sizeof(big), false);
    ok(toolong && strstr(toolong, "longer than 4096 bytes"),
       "a request over the bound: refused, and the answer is read, not reset (%s)",
       toolong ? toolong : "no answer");
    _cleanup_free_ char *halfclosed = raw("{\"op\":\"status\"}", 15, true);
    ok(halfclosed && strstr(halfclosed, "\"ok\":true"),
       "a request without newline, then shutdown(SHUT_WR): answered");
    _cleanup_free_ char *twolines = raw("{\"op\":\"status\"}\n{\"op\":\"status\"}\n", 32, false);
    ok(twolines && strstr(twolines, "\"ok\":true") && !strchr(twolines, '\n'),
       "one request per connection: one answer, then it closes");

    int silent[CONTROL_MAX_CONNECTIONS];
    for (int i = 0; i < CONTROL_MAX_CONNECTIONS; i++)
        silent[i] = raw_connect();
    usleep(200000); /* let the server accept them all */
    _cleanup_free_ char *busy = raw("{\"op\":\"status\"}\n", 16, false);
    ok(busy && strstr(busy, "busy"), "connection %d is refused: busy (%s)",
       CONTROL_MAX_CONNECTIONS + 1, busy ? busy : "no answer");
    for (int i = 0; i < CONTROL_MAX_CONNECTIONS; i++)
        close(silent[i]);
    usleep(200000);
    _cleanup_free_ char *again = raw("{\"op\":\"status\"}\n", 16, false);
    ok(again && strstr(again, "\"ok\":true"), "the slots of peers that left are free again");

    close(stop[1]);
    int status = 0;
    waitpid(child, &status, 0);
    is_int(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0, "the server stops cleanly");
    ok(lstat(socket_path, &st) < 0 && errno == ENOENT, "control_close removes the socket");

    /* A stale socket (nobody listens): ECONNREFUSED, then swept. */
    int stale = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket_path);
    ok(bind(stale, (struct sockaddr *)&addr, sizeof(addr)) == 0, "a stale socket planted");
    close(stale);
    fd = control_connect(NAME, &peer, &err);
    ok(fd < 0 && err.errnum == ECONNREFUSED, "a stale socket: ECONNREFUSED");
    control_unlink_stale(owner.dir_fd);
    ok(lstat(socket_path, &st) < 0 && errno == ENOENT, "control_unlink_stale removes it");

    state_release(&owner, true);
    rmdir(tmp);
    char root[600];
    snprintf(root, sizeof(root), "%s/cordon", tmp);
    rmdir(root);
    rmdir(tmp);
    return tap_done();
}
