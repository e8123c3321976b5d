/* A running session's control socket: <state dir>/<name>/control, a Unix
 * stream socket (0600 in the 0700 state directory) on which the supervisor
 * that owns the session answers requests about its live sandbox
 * (`cordon verify NAME`). One request per connection: a JSON line of at
 * most CONTROL_REQUEST_MAX bytes, {"op": "verify"} or {"op": "status"};
 * one answer: a JSON line, {"ok": true, ...} or {"ok": false, "error": ...},
 * then the supervisor closes the connection.
 *
 * Server side (control.c): supervisor context, unprivileged, inside the
 * supervisor's event loop; the peer is untrusted input: its uid is checked
 * with SO_PEERCRED, everything it sends is bounded and a silent peer is
 * dropped. Client side (control-client.c): the CLI. */
#pragma once

#include <stdbool.h>

#include "util/error.h"

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#define CONTROL_SOCKET_NAME "control"
#define CONTROL_REQUEST_MAX 4096
/* A connection may stay silent this long before it is dropped. */
#define CONTROL_IDLE_MS 5000
/* An answer the peer does not read within this long is dropped with it. */
#define CONTROL_WRITE_MS        10000
#define CONTROL_MAX_CONNECTIONS 8
/* The biggest answer a client accepts (a verify report is ~10 KiB). */
#define CONTROL_ANSWER_MAX (1024 * 1024)

/* --- server --- */

struct control;

/* One valid request from an allowed peer; conn identifies it for
 * control_reply(). op is borrowed for the call. */
typedef void (*control_request_fn)(void *ctx, uint64_t conn, const char *op);

/* Binds <dir_fd>/control (an existing stale socket is replaced: the caller
 * holds the session's lock, so nobody else serves it) and listens. */
int control_open(int dir_fd, const char *name, struct control **out, struct cordon_error *err);
/* One fd for the caller's event loop (an epoll fd of the listener, the
 * connections and a timer): when readable, call control_dispatch(). */
int control_fd(const struct control *c);
/* Accepts, reads, times out; calls fn for each complete request. Never
 * blocks. */
void control_dispatch(struct control *c, control_request_fn fn, void *ctx);
/* Sends the answer (consumed) on conn and closes it once written; a
 * connection that is gone already is ignored. */
void control_reply(struct control *c, uint64_t conn, json_t *answer);
/* control_reply() with {"ok": false, "error": FMT...}. */
void control_reply_error(struct control *c, uint64_t conn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* One operation of the control socket: its name, its flags, and the
 * handler that answers it (with control_reply, now or later). */
struct control_op {
    const char *name;
    unsigned flags; /* CONTROL_OP_* */
    void (*handler)(struct control *c, uint64_t conn, void *ctx);
};
/* The answer comes when the work the handler starts ends (verify). */
#define CONTROL_OP_DEFERRED (1u << 0)
/* Runs the handler of op from ops (n entries); any other op is answered
 * with an error naming the ones there are. */
void control_call(struct control *c, uint64_t conn, const char *op, const struct control_op *ops,
                  size_t n, void *ctx);
/* A `cordon run`/`cordon shell` supervisor's request OP (any backend):
 * "status" is answered here (the session's name, kind "run" or "shell",
 * the sandbox's pid, whether an audit runs, the supervisor's pid); true
 * only for "verify", which the caller starts; another op gets an error. */
bool control_run_request(struct control *c, uint64_t conn, const char *op, const char *name,
                         bool shell, pid_t sandbox_pid, bool verifying);
/* Unlinks the socket and closes everything; NULL is fine. */
void control_close(struct control *c);

/* Removes a stale control socket from a session directory whose lock the
 * caller holds (the watchdog, gc). */
void control_unlink_stale(int dir_fd);

/* --- client --- */

/* Connects to the control socket of session NAME in the state root,
 * returning the fd and the peer's pid (SO_PEERCRED: the process that
 * listens). errno ENOENT: no control socket; ECONNREFUSED: nobody listens. */
int control_connect(const char *name, pid_t *ret_peer_pid, struct cordon_error *err);
/* Sends {"op": op} and waits up to timeout_ms for the answer (caller
 * owns). A {"ok": false} answer is an error with its message. */
int control_request(int fd, const char *op, int timeout_ms, json_t **ret_answer,
                    struct cordon_error *err);
