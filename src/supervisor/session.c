/* Session: start a sandbox serving the agent protocol and talk to it. Host
 * context, unprivileged supervisor. The agent is not trusted: every frame is
 * bounded by the reader, and its messages are checked for shape before use. */
#include "supervisor/session.h"
#include "supervisor/review.h"
#include "supervisor/undo.h"
#include "supervisor/lifecycle.h"
#include "proto/protocol.h"
#include "agent/reap.h"
#include "agent/tools/pin.h"
#include "backend/backend.h"
#include "net/denial.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HELLO_TIMEOUT_MS 15000

struct session {
    struct launch launch;
    struct lifecycle lifecycle;
    bool owned;
    /* The backend's sandbox (sb.ops set once start() was called); for the
     * host agent (session_start_host) only pid and pidfd, ops NULL. */
    struct sandbox sb;
    int channel;
    int devnull;
    struct frame_reader in;
    struct frame_writer out;
    bool started;
    bool host;       /* cordon-agent on the host, no sandbox (session_start_host) */
    long checkpoint; /* review mode: the last call's checkpoint, 0 if it failed */
    /* Direct mode: the write and edit tools' previous contents (undo.h). */
    struct undo undo;
    bool undo_on;
    /* The first refusal of the result being reported (session_last_denial). */
    struct net_denial last_denial;
    bool has_last_denial;
    char *network_log; /* the proxy's records for `cordon log` (state directory) */
};

int session_channel_fd(const struct session *s)
{
    return s->channel;
}

int session_pidfd(const struct session *s)
{
    return s->sb.pidfd;
}

int session_agent_pidfd(struct session *s)
{
    if (s->sb.ops && s->sb.ops->agent_pidfd)
        return s->sb.ops->agent_pidfd(&s->sb);
    return session_pidfd(s);
}

const char *session_name(const struct session *s)
{
    return s->launch.name;
}

long session_checkpoint(const struct session *s)
{
    return s->checkpoint;
}

const struct launch *session_launch(const struct session *s)
{
    return &s->launch;
}

static int wait_hello(struct session *s, struct cordon_error *err)
{
    int64_t deadline = clock_now_ms() + HELLO_TIMEOUT_MS;
    for (;;) {
        int status;
        json_t *msg = frame_reader_next(&s->in, &status, err);
        if (status < 0)
            return -1;
        if (msg) {
            const char *t = json_string_value(json_object_get(msg, "t"));
            json_int_t version = json_integer_value(json_object_get(msg, "version"));
            bool ok = t && strcmp(t, "hello") == 0 && version == AGENT_PROTOCOL_VERSION;
            json_decref(msg);
            if (!ok)
                return error_set(
                    err, 0, "the sandbox's agent speaks another protocol (expected version %d)",
                    AGENT_PROTOCOL_VERSION);
            return 0;
        }
        if (s->in.eof)
            return error_set(err, 0, "the sandbox's agent exited before it was ready");
        int64_t left = deadline - clock_now_ms();
        if (left <= 0)
            return error_set(err, ETIMEDOUT, "waiting for the sandbox's agent");
        struct pollfd p = {s->channel, POLLIN, 0};
        if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
            return error_set(err, errno, "waiting for the sandbox's agent");
        if (frame_reader_fill(&s->in, s->channel, err) < 0)
            return -1;
    }
}

int session_start(const struct launch_request *req, struct session **out, struct cordon_error *err)
{
    struct session *s = calloc(1, sizeof(*s));
    if (!s)
        return error_set(err, ENOMEM, "session");
    s->channel = -1;
    s->devnull = -1;
    s->sb.pidfd = -1;
    if (launch_prepare(req, &s->launch, err) < 0) {
        free(s);
        return -1;
    }
    /* Ownership before any sandbox mutation. */
    if (lifecycle_begin(&s->launch, &s->lifecycle, err) < 0) {
        launch_free(&s->launch);
        free(s);
        return -1;
    }
    s->owned = true;
    if (lifecycle_persist(&s->lifecycle, &s->launch, err) < 0)
        goto fail;
    /* The proxy, started with the sandbox, records this session's
     * network decisions beside its audit log. */
    if (asprintf(&s->network_log, "%s/%s", s->lifecycle.owner.dir, STATE_NETWORK_FILE) < 0) {
        s->network_log = NULL;
        error_set(err, ENOMEM, "session");
        goto fail;
    }
    s->launch.net.session_audit_log = s->network_log;
    /* The agent serves on the backend's channel (a socket pair on ns, the
     * guest's virtio-serial port on vm, the container's stdin and stdout
     * on docker); the session reads and writes its own duplicate of it. */
    const struct backend_ops *ops = s->launch.backend;
    if (ops->start(&s->launch, &s->sb, err) < 0) {
        ops->stop(&s->sb);
        s->sb = (struct sandbox){.pid = -1, .pidfd = -1, .channel_fd = -1};
        goto fail;
    }
    s->started = true;
    if (lifecycle_started(&s->lifecycle, &s->launch, &s->sb, err) < 0)
        goto fail;
    s->channel = fcntl(s->sb.channel_fd, F_DUPFD_CLOEXEC, 3);
    if (s->channel < 0) {
        error_set(err, errno, "dup");
        goto fail;
    }
    fcntl(s->channel, F_SETFL, fcntl(s->channel, F_GETFL) | O_NONBLOCK);
    if (frame_reader_fill(&s->in, s->channel, err) < 0 || wait_hello(s, err) < 0)
        goto fail;
    /* Before any call: what the daemon made is checked from the host. */
    if (ops->check_started && ops->check_started(&s->sb, &s->launch, err) < 0)
        goto fail;
    /* Direct mode: rewind covers the write and edit tools (undo.h). */
    if (!s->lifecycle.review_dir && s->launch.cfg.workspace_mode == CFG_WORKSPACE_DIRECT &&
        !s->launch.cfg.workspace_readonly) {
        struct cordon_error undo_err;
        if (undo_init(&s->undo, s->lifecycle.owner.dir_fd, s->launch.ws.root,
                      s->launch.ws.view_root, s->launch.ws.view_cwd, NULL, &undo_err) < 0)
            log_warn("%s: `cordon rewind %s` will not undo this session's writes", undo_err.message,
                     s->launch.name);
        else
            s->undo_on = true;
    }
    log_debug("session %s: agent ready in %s", s->launch.name, s->sb.description);
    *out = s;
    return 0;
fail:
    session_stop(s);
    return -1;
}

int session_start_host(struct session **out, struct cordon_error *err)
{
    struct session *s = calloc(1, sizeof(*s));
    if (!s)
        return error_set(err, ENOMEM, "host session");
    s->host = true;
    s->channel = -1;
    s->devnull = -1;
    s->sb.pidfd = -1;
    snprintf(s->launch.name, sizeof(s->launch.name), "host");
    _cleanup_free_ char *agent = launch_find_agent(err);
    if (!agent) {
        session_stop(s);
        return -1;
    }
    s->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    int pair[2];
    if (s->devnull < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
        error_set(err, errno, "socketpair");
        session_stop(s);
        return -1;
    }
    s->channel = pair[0];
    char *const argv[] = {"cordon-agent", "serve", "--host", NULL};
    pid_t pid = fork();
    if (pid < 0) {
        error_set(err, errno, "fork");
        close(pair[1]);
        session_stop(s);
        return -1;
    }
    if (pid == 0) {
        /* Child, host context, between fork and exec: no allocation. The
         * agent gets the user's cwd and environment as they are; stdout is
         * the MCP stream's, so it gets /dev/null. A session of its own: a
         * terminal's hangup or Ctrl+C reaches the supervisor, which ends
         * the session, not the agent, which would die without ending what
         * its calls left running. */
        setsid();
        int control = pair[1] == 3 ? 3 : dup2(pair[1], 3);
        if (control != 3 || dup2(s->devnull, 0) < 0 || dup2(s->devnull, 1) < 0)
            _exit(CORDON_EXIT_FAILURE);
        fcntl(3, F_SETFD, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL); /* the supervisor ignores it; exec keeps that */
        execv(agent, argv);
        _exit(CORDON_EXIT_CANNOT_EXEC);
    }
    close(pair[1]);
    s->sb.pid = pid;
    s->sb.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    s->started = true;
    fcntl(s->channel, F_SETFL, fcntl(s->channel, F_GETFL) | O_NONBLOCK);
    if (frame_reader_fill(&s->in, s->channel, err) < 0 || wait_hello(s, err) < 0) {
        session_stop(s);
        return -1;
    }
    log_debug("host session: agent ready (pid %d)", pid);
    *out = s;
    return 0;
}

static int queue(struct session *s, json_t *msg, struct cordon_error *err)
{
    int rc = frame_writer_queue(&s->out, msg, err);
    json_decref(msg);
    if (rc < 0)
        return -1;
    return frame_writer_flush(&s->out, s->channel, err) < 0 ? -1 : 0;
}

int session_send_call(struct session *s, json_int_t id, const char *tool, json_t *args,
                      struct cordon_error *err)
{
    if (s->undo_on)
        undo_before(&s->undo, (long long)id, tool, args);
    /* "o" takes the reference made here: a fresh {} must not leak. */
    return queue(s,
                 json_pack("{s:s, s:I, s:s, s:o}", "t", "call", "id", id, "tool", tool, "args",
                           args ? json_incref(args) : json_object()),
                 err);
}

int session_send_call_pinned(struct session *s, json_int_t id, const char *tool, json_t *args,
                             json_t *pin, struct cordon_error *err)
{
    if (s->undo_on)
        undo_before(&s->undo, (long long)id, tool, args);
    json_t *msg = json_pack("{s:s, s:I, s:s, s:o}", "t", "call", "id", id, "tool", tool, "args",
                            args ? json_incref(args) : json_object());
    if (msg && pin && json_object_set(msg, TOOL_PIN_FIELD, pin) < 0) {
        json_decref(msg);
        msg = NULL;
    }
    if (!msg)
        return error_set(err, ENOMEM, "call frame");
    return queue(s, msg, err);
}

int session_send_cancel(struct session *s, json_int_t id, struct cordon_error *err)
{
    return queue(s, json_pack("{s:s, s:I}", "t", "cancel", "id", id), err);
}

int session_net_fd(const struct session *s)
{
    return s && s->launch.net_session.policy ? net_session_pending_fd(&s->launch.net_session) : -1;
}

void session_net_ready(struct session *s)
{
    if (s && s->launch.net_session.policy)
        net_session_start_pending(&s->launch.net_session);
}

bool session_wants_write(const struct session *s)
{
    return frame_writer_pending(&s->out);
}

int session_on_writable(struct session *s, struct cordon_error *err)
{
    return frame_writer_flush(&s->out, s->channel, err) < 0 ? -1 : 0;
}

/* The proxy's refusals since the last result end this result with one
 * line from cordon (net/denial.h): appended to the last text block, a
 * block of its own when there is none. The proxy sends its report before
 * it answers the client, so a refusal the call waited for is here. */
static void append_denials(struct session *s, json_t *content)
{
    if (s->host || !s->launch.net_session.policy)
        return;
    char line[2048];
    s->has_last_denial = false;
    if (net_denials_take(&s->launch.net_session, line, sizeof(line), &s->last_denial) == 0)
        return;
    s->has_last_denial = true;
    json_t *last = json_array_get(content, json_array_size(content) - 1);
    const char *type = json_string_value(json_object_get(last, "type"));
    const char *text = json_string_value(json_object_get(last, "text"));
    if (type && strcmp(type, "text") == 0 && text) {
        _cleanup_free_ char *joined = NULL;
        size_t n = strlen(text);
        if (asprintf(&joined, "%s%s%s", text, n && text[n - 1] != '\n' ? "\n" : "", line) >= 0)
            json_object_set_new(last, "text", json_string(joined));
        return;
    }
    json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", line));
}

int session_on_readable(struct session *s, session_event_fn fn, void *ctx, struct cordon_error *err)
{
    if (frame_reader_fill(&s->in, s->channel, err) < 0)
        return -1;
    for (;;) {
        int status;
        json_t *msg = frame_reader_next(&s->in, &status, err);
        if (status < 0)
            return -1;
        if (!msg)
            break;
        const char *t = json_string_value(json_object_get(msg, "t"));
        json_int_t id = json_integer_value(json_object_get(msg, "id"));
        json_t *content = json_object_get(msg, "content");
        if (t && (strcmp(t, "result") == 0 || strcmp(t, "update") == 0) && json_is_array(content)) {
            json_t *details = json_object_get(msg, "details");
            struct tool_result res = {
                .content = content,
                .details = json_is_object(details) ? details : NULL,
                .is_error = json_is_true(json_object_get(msg, "isError")),
            };
            json_t *code = json_object_get(msg, "exitCode");
            struct session_event ev = {
                .kind = t[0] == 'r' ? SESSION_RESULT : SESSION_UPDATE,
                .id = id,
                .result = &res,
                .exit_code = json_is_integer(code) ? (int)json_integer_value(code) : -1,
            };
            /* What git wrote during the call reaches the host's git
             * metadata before the client hears of the result. */
            if (ev.kind == SESSION_RESULT && s->owned)
                gitguard_sync(s->lifecycle.git);
            /* Review mode: the call's end is a checkpoint (docs/review.md),
             * named in the call's audit entry. */
            if (ev.kind == SESSION_RESULT && s->owned && s->lifecycle.review_dir) {
                struct cordon_error ck_err;
                long n = 0;
                long long ck_start = log_now_us();
                if (review_checkpoint(s->lifecycle.owner.dir_fd, &n, &ck_err) < 0) {
                    log_warn("review mode: %s", ck_err.message);
                    n = 0;
                } else {
                    s->lifecycle.owner.checkpoint = n;
                }
                s->checkpoint = n;
                log_debug("timing: checkpoint %ld %lld us", n, log_now_us() - ck_start);
            }
            /* Direct mode: a write's or edit's previous content is call N's
             * undo record (named in the audit entry as its checkpoint). */
            if (ev.kind == SESSION_RESULT && s->undo_on) {
                long n = 0;
                undo_after(&s->undo, (long long)id, &n);
                s->checkpoint = n;
                if (n)
                    s->lifecycle.owner.checkpoint = n;
            }
            if (ev.kind == SESSION_RESULT)
                append_denials(s, content);
            fn(ctx, &ev);
        } else if (t && strcmp(t, "error") == 0) {
            const char *m = json_string_value(json_object_get(msg, "message"));
            struct session_event ev = {
                .kind = SESSION_CALL_ERROR, .id = id, .message = m ? m : "agent error"};
            long n = 0;
            if (s->undo_on)
                undo_after(&s->undo, (long long)id, &n);
            fn(ctx, &ev);
        } else if (!t || strcmp(t, "pong") != 0) {
            log_warn("session %s: ignoring an unexpected frame from the agent", s->launch.name);
        }
        json_decref(msg);
    }
    if (s->in.eof)
        return error_set(err, 0, "the sandbox's agent closed the channel");
    return 0;
}

struct sync_ctx {
    json_int_t id;
    bool done;
    int exit_code;
    struct tool_result *res;
    char message[256];
};

static void sync_event(void *ctx, const struct session_event *ev)
{
    struct sync_ctx *c = ctx;
    if (ev->id != c->id)
        return;
    if (ev->kind == SESSION_RESULT) {
        c->res->content = json_incref(ev->result->content);
        c->res->details = json_incref(ev->result->details);
        c->res->is_error = ev->result->is_error;
        c->exit_code = ev->exit_code;
        c->done = true;
    } else if (ev->kind == SESSION_CALL_ERROR) {
        snprintf(c->message, sizeof(c->message), "%s", ev->message);
        c->done = true;
    }
}

int session_call_sync(struct session *s, const char *tool, json_t *args, struct tool_result *res,
                      struct cordon_error *err)
{
    static json_int_t next_id = 1;
    struct sync_ctx c = {.id = next_id++, .res = res, .exit_code = -1};
    *res = (struct tool_result){0};
    long long started = log_now_us();
    if (session_send_call(s, c.id, tool, args, err) < 0)
        return -1;
    while (!c.done) {
        struct pollfd p[2] = {{s->channel, POLLIN | (session_wants_write(s) ? POLLOUT : 0), 0},
                              {session_net_fd(s), POLLIN, 0}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return error_set(err, errno, "poll");
        }
        if (p[1].revents)
            session_net_ready(s);
        if ((p[0].revents & POLLOUT) && session_on_writable(s, err) < 0)
            return -1;
        if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) &&
            session_on_readable(s, sync_event, &c, err) < 0 && !c.done)
            return -1;
    }
    session_audit_call(s, tool, args, "sandbox",
                       c.message[0]    ? "failed"
                       : res->is_error ? "error"
                                       : "ok",
                       (double)(log_now_us() - started) / 1000.0, c.exit_code);
    if (c.message[0])
        return error_set(err, 0, "the sandbox's agent refused the call: %s", c.message);
    return 0;
}

void session_stop(struct session *s)
{
    if (!s)
        return;
    if (s->started && s->channel >= 0) {
        struct cordon_error err;
        json_t *bye = json_pack("{s:s}", "t", "shutdown");
        if (frame_writer_queue(&s->out, bye, &err) == 0)
            frame_writer_flush(&s->out, s->channel, &err);
        json_decref(bye);
    }
    if (s->channel >= 0)
        close(s->channel);
    if (s->sb.ops) {
        /* The agent leaving ends the sandbox (its init, the guest, the
         * container); QEMU or the docker CLI then exits. A second late,
         * the backend ends it. */
        struct pollfd p = {s->sb.pidfd, POLLIN, 0};
        if (s->started && s->sb.pidfd >= 0)
            poll(&p, 1, 1000);
        s->sb.ops->stop(&s->sb);
    } else if (s->started && s->sb.pid > 0) {
        /* The host agent ends what its calls left running first. */
        int grace_ms = s->host ? REAP_HOST_TIMEOUT_MS + 1000 : 1000;
        struct pollfd p = {s->sb.pidfd, POLLIN, 0};
        if (s->sb.pidfd < 0 || poll(&p, 1, grace_ms) <= 0)
            kill(s->sb.pid, SIGKILL);
        while (waitpid(s->sb.pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (!s->sb.ops && s->sb.pidfd >= 0)
        close(s->sb.pidfd);
    if (s->devnull >= 0)
        close(s->devnull);
    frame_reader_free(&s->in);
    frame_writer_free(&s->out);
    /* The proxy dies while the lifecycle ends (the git guard's look, the
     * trust guard); lifecycle_end reaps it before the state is released. */
    if (s->launch.net_session.policy)
        net_session_kill(&s->launch.net_session);
    if (s->owned)
        lifecycle_end(&s->lifecycle);
    if (s->launch.net_session.policy) {
        net_session_stop(&s->launch.net_session);
        s->launch.net_session.policy = NULL;
    }
    if (s->undo_on)
        undo_free(&s->undo);
    free(s->network_log);
    if (!s->host)
        launch_free(&s->launch);
    free(s);
}

const char *session_state_dir(const struct session *s)
{
    return s->owned ? s->lifecycle.owner.dir : NULL;
}

int session_state_dir_fd(const struct session *s)
{
    return s->owned ? s->lifecycle.owner.dir_fd : -1;
}

void session_audit(struct session *s, const char *tool, const char *target, const char *outcome,
                   double duration_ms, int exit_code)
{
    if (!s->owned)
        return;
    state_audit(&s->lifecycle.owner, tool, target, outcome, duration_ms, exit_code);
}

const char *session_sandbox_description(const struct session *s)
{
    return s->sb.description[0] ? s->sb.description : NULL;
}

void session_audit_call(struct session *s, const char *tool, json_t *args, const char *target,
                        const char *outcome, double duration_ms, int exit_code)
{
    if (!s->owned)
        return;
    state_audit_call(&s->lifecycle.owner, tool, args, target, outcome, duration_ms, exit_code);
}

bool session_last_denial(struct session *s, struct net_denial *out)
{
    if (!s->has_last_denial)
        return false;
    *out = s->last_denial;
    s->has_last_denial = false;
    return true;
}

int session_allow_host(struct session *s, const char *pattern, struct cordon_error *err)
{
    if (s->host || !s->launch.net_session.policy)
        return error_set(err, ENOTCONN, "network: this session has no sandbox network");
    return net_session_allow(&s->launch.net_session, pattern, err);
}
