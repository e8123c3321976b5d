/* The server side of a session's control socket (control.h). Supervisor
 * context, unprivileged, driven by the supervisor's event loop through one
 * epoll fd of its own (the listener, each connection and a sweep timer).
 * Peers are untrusted: only the session owner's uid (or root) is served,
 * a request is one line of at most CONTROL_REQUEST_MAX bytes, a peer that
 * says nothing is dropped after CONTROL_IDLE_MS and one that does not read
 * its answer after CONTROL_WRITE_MS. */
#include "supervisor/control.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/clock.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define TAG_LISTEN 0
#define TAG_TIMER  1
#define TAG_CONN   2 /* + the connection's slot */

#define SWEEP_MS 500

struct control_conn {
    int fd; /* -1: free slot */
    uint64_t id;
    char in[CONTROL_REQUEST_MAX + 1];
    size_t in_len;
    bool asked; /* a request was handed on: the answer is the supervisor's */
    char *out;
    size_t out_len, out_done;
    int64_t deadline_ms; /* 0: none (the supervisor is working on it) */
};

struct control {
    int epfd;
    int listen_fd;
    int timer_fd;
    int dir_fd;
    bool timer_armed;
    uint64_t next_id;
    struct control_conn conns[CONTROL_MAX_CONNECTIONS];
};

/* bind()/connect() through the directory fd: the state path may be longer
 * than sun_path, and the fd pins the directory that was checked. */
static void socket_addr(struct sockaddr_un *addr, int dir_fd)
{
    *addr = (struct sockaddr_un){.sun_family = AF_UNIX};
    snprintf(addr->sun_path, sizeof(addr->sun_path), "/proc/self/fd/%d/%s", dir_fd,
             CONTROL_SOCKET_NAME);
}

static void epoll_put(struct control *c, int fd, uint64_t tag, uint32_t events, int op)
{
    struct epoll_event ev = {.events = events, .data.u64 = tag};
    epoll_ctl(c->epfd, op, fd, &ev);
}

void control_unlink_stale(int dir_fd)
{
    if (dir_fd >= 0)
        unlinkat(dir_fd, CONTROL_SOCKET_NAME, 0);
}

int control_open(int dir_fd, const char *name, struct control **out, struct cordon_error *err)
{
    if (dir_fd < 0)
        return error_set(err, 0, "sandbox %s: no state directory for a control socket", name);
    struct control *c = calloc(1, sizeof(*c));
    if (!c)
        return error_set(err, ENOMEM, "control socket");
    c->epfd = c->listen_fd = c->timer_fd = -1;
    for (size_t i = 0; i < ARRAY_SIZE(c->conns); i++)
        c->conns[i].fd = -1;
    c->dir_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
    c->epfd = epoll_create1(EPOLL_CLOEXEC);
    c->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (c->dir_fd < 0 || c->epfd < 0 || c->timer_fd < 0 || c->listen_fd < 0) {
        error_set(err, errno, "sandbox %s: control socket", name);
        control_close(c);
        return -1;
    }
    /* The caller holds the session's lock: a socket left here is stale. */
    control_unlink_stale(c->dir_fd);
    struct sockaddr_un addr;
    socket_addr(&addr, c->dir_fd);
    /* 0600 from the start, not after a chmod: no moment where it is wider. */
    mode_t old_umask = umask(0177);
    int rc = bind(c->listen_fd, (struct sockaddr *)&addr, sizeof(addr));
    umask(old_umask);
    if (rc < 0 || fchmodat(c->dir_fd, CONTROL_SOCKET_NAME, 0600, 0) < 0 ||
        listen(c->listen_fd, CONTROL_MAX_CONNECTIONS) < 0) {
        error_set(err, errno, "sandbox %s: control socket", name);
        control_close(c);
        return -1;
    }
    epoll_put(c, c->listen_fd, TAG_LISTEN, EPOLLIN, EPOLL_CTL_ADD);
    epoll_put(c, c->timer_fd, TAG_TIMER, EPOLLIN, EPOLL_CTL_ADD);
    *out = c;
    return 0;
}

int control_fd(const struct control *c)
{
    return c->epfd;
}

/* A Unix socket closed with unread data resets the peer, which then never
 * reads the answer queued before the reset (an over-long request, a
 * refused peer's request): read it away first, boundedly. */
static void close_drained(int fd)
{
    char scratch[4096];
    for (int i = 0; i < 16 && recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT) > 0; i++)
        ;
    close(fd);
}

static void conn_close(struct control *c, struct control_conn *k)
{
    if (k->fd >= 0) {
        epoll_ctl(c->epfd, EPOLL_CTL_DEL, k->fd, NULL);
        close_drained(k->fd);
    }
    free(k->out);
    *k = (struct control_conn){.fd = -1};
}

static void timer_arm(struct control *c, bool on)
{
    if (c->timer_armed == on)
        return;
    struct itimerspec its = {0};
    if (on) {
        its.it_value.tv_nsec = SWEEP_MS * 1000000L;
        its.it_interval = its.it_value;
    }
    timerfd_settime(c->timer_fd, 0, &its, NULL);
    c->timer_armed = on;
}

static struct control_conn *conn_by_id(struct control *c, uint64_t id)
{
    for (size_t i = 0; i < ARRAY_SIZE(c->conns); i++) {
        if (c->conns[i].fd >= 0 && c->conns[i].id == id)
            return &c->conns[i];
    }
    return NULL;
}

/* Writes what is queued; closes the connection once all of it is out. */
static void conn_flush(struct control *c, struct control_conn *k)
{
    while (k->out_done < k->out_len) {
        ssize_t n = send(k->fd, k->out + k->out_done, k->out_len - k->out_done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            epoll_put(c, k->fd, TAG_CONN + (uint64_t)(k - c->conns), EPOLLOUT, EPOLL_CTL_MOD);
            return;
        }
        if (n <= 0)
            break;
        k->out_done += (size_t)n;
    }
    conn_close(c, k);
}

static void conn_answer(struct control *c, struct control_conn *k, json_t *answer)
{
    char *text = answer ? json_dumps(answer, JSON_COMPACT) : NULL;
    json_decref(answer);
    if (!text) {
        conn_close(c, k);
        return;
    }
    size_t len = strlen(text);
    char *line = realloc(text, len + 2);
    if (!line) {
        free(text);
        conn_close(c, k);
        return;
    }
    line[len] = '\n';
    line[len + 1] = '\0';
    free(k->out);
    k->out = line;
    k->out_len = len + 1;
    k->out_done = 0;
    k->asked = true;
    k->deadline_ms = clock_now_ms() + CONTROL_WRITE_MS;
    timer_arm(c, true);
    conn_flush(c, k);
}

static json_t *error_answer(const char *message)
{
    return json_pack("{s:b, s:s}", "ok", 0, "error", message);
}

void control_reply(struct control *c, uint64_t conn, json_t *answer)
{
    struct control_conn *k = c ? conn_by_id(c, conn) : NULL;
    if (!k) {
        json_decref(answer);
        return; /* the peer left meanwhile */
    }
    conn_answer(c, k, answer);
}

void control_reply_error(struct control *c, uint64_t conn, const char *fmt, ...)
{
    char message[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    control_reply(c, conn, json_pack("{s:b, s:s}", "ok", 0, "error", message));
}

void control_call(struct control *c, uint64_t conn, const char *op, const struct control_op *ops,
                  size_t n, void *ctx)
{
    char names[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(op, ops[i].name) == 0) {
            ops[i].handler(c, conn, ctx);
            return;
        }
        int w = snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "", ops[i].name);
        if (w > 0 && (size_t)w < sizeof(names) - len)
            len += (size_t)w;
    }
    control_reply_error(c, conn, "unknown op \"%.60s\" (%s)", op, names);
}

/* control_run_request's operations, on the request's facts. */
struct run_request {
    const char *name;
    bool shell;
    pid_t sandbox_pid;
    bool verifying;
    bool verify; /* out: "verify" was asked */
};

static void run_status(struct control *c, uint64_t conn, void *ctx)
{
    const struct run_request *r = ctx;
    json_t *st = json_pack("{s:s, s:s, s:i, s:b, s:i}", "name", r->name, "kind",
                           r->shell ? "shell" : "run", "sandbox_pid", (int)r->sandbox_pid,
                           "verifying", r->verifying, "pid", (int)getpid());
    control_reply(c, conn, json_pack("{s:b, s:o}", "ok", 1, "status", st));
}

static void run_verify(struct control *c, uint64_t conn, void *ctx)
{
    ((struct run_request *)ctx)->verify = true;
}

static const struct control_op run_ops[] = {
    {"verify", CONTROL_OP_DEFERRED, run_verify},
    {"status", 0, run_status},
};

bool control_run_request(struct control *c, uint64_t conn, const char *op, const char *name,
                         bool shell, pid_t sandbox_pid, bool verifying)
{
    struct run_request r = {name, shell, sandbox_pid, verifying, false};
    control_call(c, conn, op, run_ops, sizeof(run_ops) / sizeof(run_ops[0]), &r);
    return r.verify;
}

/* Said once to a refused peer, without waiting for it to read. */
static void refuse(int fd, const char *message)
{
    json_t *a = error_answer(message);
    char *text = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    if (text) {
        size_t len = strlen(text);
        ssize_t w = send(fd, text, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        w = send(fd, "\n", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)w;
        free(text);
    }
    close_drained(fd);
}

static void on_accept(struct control *c)
{
    for (;;) {
        int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return; /* EAGAIN, or a peer that left before we got to it */
        struct ucred cred;
        socklen_t len = sizeof(cred);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
            close(fd);
            continue;
        }
        /* The socket's mode already keeps other users out; this holds even
         * if the mode or the directory's were widened. */
        if (cred.uid != geteuid() && cred.uid != 0) {
            char message[200];
            snprintf(message, sizeof(message),
                     "permission denied: uid %u is not the session owner (uid %u) or root",
                     (unsigned)cred.uid, (unsigned)geteuid());
            log_warn("control socket: refused pid %d: %s", (int)cred.pid, message);
            refuse(fd, message);
            continue;
        }
        struct control_conn *k = NULL;
        for (size_t i = 0; i < ARRAY_SIZE(c->conns) && !k; i++) {
            if (c->conns[i].fd < 0)
                k = &c->conns[i];
        }
        if (!k) {
            refuse(fd, "busy: too many control connections");
            continue;
        }
        *k = (struct control_conn){
            .fd = fd, .id = ++c->next_id, .deadline_ms = clock_now_ms() + CONTROL_IDLE_MS};
        epoll_put(c, fd, TAG_CONN + (uint64_t)(k - c->conns), EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
        timer_arm(c, true);
    }
}

/* A complete line: hand it on, or answer its error. */
static void on_request_line(struct control *c, struct control_conn *k, control_request_fn fn,
                            void *ctx)
{
    json_error_t jerr;
    json_t *req = json_loadb(k->in, k->in_len, 0, &jerr);
    const char *op = json_string_value(json_object_get(req, "op"));
    /* Reads are done: from here the peer waits for its answer (it may have
     * shut down its writing side; only a hang-up ends it). */
    epoll_put(c, k->fd, TAG_CONN + (uint64_t)(k - c->conns), 0, EPOLL_CTL_MOD);
    k->asked = true;
    k->deadline_ms = 0;
    if (!op) {
        json_decref(req);
        conn_answer(c, k,
                    error_answer("bad request: expected one JSON line {\"op\": \"verify\"} or "
                                 "{\"op\": \"status\"}"));
        return;
    }
    char op_copy[64];
    snprintf(op_copy, sizeof(op_copy), "%s", op);
    json_decref(req);
    /* fn may answer (and so close k) before it returns. */
    fn(ctx, k->id, op_copy);
}

static void on_readable(struct control *c, struct control_conn *k, control_request_fn fn, void *ctx)
{
    if (k->asked)
        return;
    for (;;) {
        size_t room = CONTROL_REQUEST_MAX - k->in_len;
        ssize_t n = room ? recv(k->fd, k->in + k->in_len, room, 0) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n < 0 || (n == 0 && room && k->in_len == 0)) {
            conn_close(c, k); /* left without a request */
            return;
        }
        char *nl = memchr(k->in + k->in_len, '\n', (size_t)n);
        k->in_len += (size_t)n;
        if (!nl && n == 0 && room)
            nl = k->in + k->in_len; /* shut down its side after the line */
        if (nl) {
            k->in_len = (size_t)(nl - k->in);
            k->in[k->in_len] = '\0';
            on_request_line(c, k, fn, ctx);
            return;
        }
        if (k->in_len == CONTROL_REQUEST_MAX) {
            char message[100];
            snprintf(message, sizeof(message), "bad request: longer than %d bytes",
                     CONTROL_REQUEST_MAX);
            conn_answer(c, k, error_answer(message));
            return;
        }
    }
}

static void on_timer(struct control *c)
{
    uint64_t ticks;
    ssize_t r = read(c->timer_fd, &ticks, sizeof(ticks));
    (void)r;
    int64_t now = clock_now_ms();
    bool any = false;
    for (size_t i = 0; i < ARRAY_SIZE(c->conns); i++) {
        struct control_conn *k = &c->conns[i];
        if (k->fd < 0)
            continue;
        if (k->deadline_ms && now >= k->deadline_ms) {
            if (!k->asked) {
                epoll_ctl(c->epfd, EPOLL_CTL_DEL, k->fd, NULL);
                refuse(TAKE_FD(k->fd), "timeout: no request within the time allowed");
            }
            conn_close(c, k);
            continue;
        }
        any = true;
    }
    if (!any)
        timer_arm(c, false);
}

void control_dispatch(struct control *c, control_request_fn fn, void *ctx)
{
    struct epoll_event events[16];
    int n = epoll_wait(c->epfd, events, ARRAY_SIZE(events), 0);
    for (int i = 0; i < n; i++) {
        uint64_t tag = events[i].data.u64;
        if (tag == TAG_LISTEN) {
            on_accept(c);
            continue;
        }
        if (tag == TAG_TIMER) {
            on_timer(c);
            continue;
        }
        struct control_conn *k = &c->conns[tag - TAG_CONN];
        if (k->fd < 0)
            continue;
        if (events[i].events & EPOLLOUT) {
            conn_flush(c, k);
        } else if (events[i].events & EPOLLIN) {
            on_readable(c, k, fn, ctx);
        } else if (events[i].events & (EPOLLHUP | EPOLLERR)) {
            /* Left while its answer was being prepared: nobody to tell. */
            conn_close(c, k);
        }
    }
}

void control_close(struct control *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < ARRAY_SIZE(c->conns); i++)
        conn_close(c, &c->conns[i]);
    if (c->listen_fd >= 0) {
        control_unlink_stale(c->dir_fd);
        close(c->listen_fd);
    }
    if (c->timer_fd >= 0)
        close(c->timer_fd);
    if (c->epfd >= 0)
        close(c->epfd);
    if (c->dir_fd >= 0)
        close(c->dir_fd);
    free(c);
}
