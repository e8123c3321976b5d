/* The agent's event loop: one epoll over the channel, a signalfd (SIGCHLD:
 * PID 1 reaps every orphan and hands exit statuses to the calls that own
 * them), each bash call's output pipe, and each worker's result pipe.
 * read/write/edit/ls run inline (they are bounded and fast); find and grep
 * run in forked workers so a long walk never holds up other calls; bash is a
 * process group whose output the loop collects. Single-threaded. Sandbox
 * context, no privileges, under seccomp; or, with `host` (serve --host), on
 * the host for host execution: a child subreaper that also takes SIGTERM,
 * SIGINT and SIGHUP on the signalfd, and ends with what its calls left
 * running (agent/reap.c). */
#include "agent/serve.h"
#include "agent/path-prune.h"
#include "proto/protocol.h"
#include "agent/reap.h"
#include "agent/tools/bash.h"
#include "agent/tools/fileio.h"
#include "agent/tools/pin.h"
#include "agent/tools/registry.h"
#include "agent/tools/tool.h"
#include "config.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_CALLS         256
#define WORKER_RESULT_MAX (AGENT_FRAME_MAX)

enum call_kind { CALL_WORKER, CALL_BASH };

struct call {
    bool used;
    enum call_kind kind;
    json_int_t id;
    bool cancelled;
    /* worker */
    pid_t pid;
    int pipe_fd;
    unsigned char *out;
    size_t out_len, out_cap;
    bool pipe_eof;
    bool exited;
    int status;
    /* bash */
    struct tool_bash_call *bash;
    int64_t exited_at_ms;
    int64_t last_update_ms;
};

struct agent {
    int channel;
    int channel_out; /* channel, or the write end of a pipe pair (serve --stdio) */
    int epfd;
    int sigfd;
    struct frame_reader in;
    struct frame_writer out;
    struct tool_env env;
    struct call calls[MAX_CALLS];
    bool shutting_down;
    char cwd[PATH_MAX];
};

/* epoll data: low bits tag the kind of fd, the rest is the call index. */
enum { TAG_CHANNEL = 1, TAG_SIGNAL = 2, TAG_WORKER = 3, TAG_BASH = 4, TAG_CHANNEL_OUT = 5 };
#define EV_DATA(tag, idx) (((uint64_t)(idx) << 8) | (tag))

/* Writability is watched only while frames wait: on the channel itself,
 * or on its separate write end. */
static void watch_output(struct agent *a, bool pending)
{
    struct epoll_event ev = {.events = EPOLLIN | (pending ? EPOLLOUT : 0),
                             .data.u64 = EV_DATA(TAG_CHANNEL, 0)};
    if (a->channel_out != a->channel)
        ev = (struct epoll_event){.events = pending ? EPOLLOUT : 0,
                                  .data.u64 = EV_DATA(TAG_CHANNEL_OUT, 0)};
    epoll_ctl(a->epfd, EPOLL_CTL_MOD, a->channel_out, &ev);
}

static void send_msg(struct agent *a, json_t *msg)
{
    struct cordon_error err;
    if (frame_writer_queue(&a->out, msg, &err) < 0)
        fprintf(stderr, "cordon-agent: %s\n", err.message);
    json_decref(msg);
    watch_output(a, frame_writer_flush(&a->out, a->channel_out, &err) == 0);
}

static void send_result_status(struct agent *a, json_int_t id, struct tool_result *res,
                               int exit_code)
{
    json_t *msg = json_pack("{s:s, s:I, s:O, s:b}", "t", "result", "id", id, "content",
                            res->content ? res->content : json_array(), "isError", res->is_error);
    if (res->details)
        json_object_set(msg, "details", res->details);
    /* For the supervisor's audit log; not part of pi's result. */
    if (exit_code >= 0)
        json_object_set_new(msg, "exitCode", json_integer(exit_code));
    send_msg(a, msg);
    tool_result_clear(res);
}

static void send_result(struct agent *a, json_int_t id, struct tool_result *res)
{
    send_result_status(a, id, res, -1);
}

static void send_error(struct agent *a, json_int_t id, const char *message)
{
    send_msg(a, json_pack("{s:s, s:I, s:s}", "t", "error", "id", id, "message", message));
}

static struct call *call_slot(struct agent *a, json_int_t id, int *index)
{
    for (int i = 0; i < MAX_CALLS; i++) {
        if (!a->calls[i].used) {
            a->calls[i] = (struct call){.used = true, .id = id, .pipe_fd = -1, .pid = -1};
            *index = i;
            return &a->calls[i];
        }
    }
    return NULL;
}

static struct call *call_find(struct agent *a, json_int_t id)
{
    for (int i = 0; i < MAX_CALLS; i++) {
        if (a->calls[i].used && a->calls[i].id == id)
            return &a->calls[i];
    }
    return NULL;
}

static void call_release(struct agent *a, struct call *c)
{
    if (c->pipe_fd >= 0) {
        epoll_ctl(a->epfd, EPOLL_CTL_DEL, c->pipe_fd, NULL);
        close(c->pipe_fd);
    }
    free(c->out);
    *c = (struct call){0};
}

/* find and grep: the walk runs in a child that writes the serialised result
 * to a pipe, so the loop stays responsive and a cancel is a kill. */
static void start_worker(struct agent *a, const struct tool_env *env, json_int_t id,
                         const struct tool_entry *tool, json_t *args)
{
    int idx;
    struct call *c = call_slot(a, id, &idx);
    if (!c) {
        send_error(a, id, "too many calls in flight");
        return;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        call_release(a, c);
        send_error(a, id, "pipe failed");
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        call_release(a, c);
        send_error(a, id, "fork failed");
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        struct tool_result res = {0};
        if (tool->run(env, args, &res) < 0)
            tool_result_error(&res, "out of memory");
        json_t *msg = json_pack("{s:O, s:b}", "content", res.content ? res.content : json_array(),
                                "isError", res.is_error);
        if (res.details)
            json_object_set(msg, "details", res.details);
        char *body = json_dumps(msg, JSON_COMPACT);
        size_t len = body ? strlen(body) : 0;
        for (size_t off = 0; off < len;) {
            ssize_t n = write(fds[1], body + off, len - off);
            if (n <= 0)
                break;
            off += (size_t)n;
        }
        _exit(0);
    }
    close(fds[1]);
    c->kind = CALL_WORKER;
    c->pid = pid;
    c->pipe_fd = fds[0];
    fcntl(c->pipe_fd, F_SETFL, O_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EV_DATA(TAG_WORKER, idx)};
    epoll_ctl(a->epfd, EPOLL_CTL_ADD, c->pipe_fd, &ev);
}

static void finish_worker(struct agent *a, struct call *c)
{
    struct tool_result res = {0};
    if (c->cancelled) {
        tool_result_error(&res, "Operation aborted");
    } else {
        json_error_t jerr;
        json_t *msg =
            c->out_len ? json_loadb((const char *)c->out, c->out_len, JSON_ALLOW_NUL, &jerr) : NULL;
        if (!msg) {
            tool_result_error(&res, "%s failed: the worker ended without a result (status %d)",
                              "tool", c->status);
        } else {
            res.content = json_incref(json_object_get(msg, "content"));
            res.details = json_incref(json_object_get(msg, "details"));
            res.is_error = json_is_true(json_object_get(msg, "isError"));
            json_decref(msg);
        }
    }
    send_result(a, c->id, &res);
    call_release(a, c);
}

static void on_worker_readable(struct agent *a, int idx)
{
    struct call *c = &a->calls[idx];
    for (;;) {
        if (c->out_len == c->out_cap) {
            if (c->out_cap >= WORKER_RESULT_MAX) {
                kill(c->pid, SIGKILL);
                c->pipe_eof = true;
                break;
            }
            size_t ncap = c->out_cap ? c->out_cap * 2 : 65536;
            unsigned char *grown = realloc(c->out, ncap);
            if (!grown) {
                kill(c->pid, SIGKILL);
                c->pipe_eof = true;
                break;
            }
            c->out = grown;
            c->out_cap = ncap;
        }
        ssize_t n = read(c->pipe_fd, c->out + c->out_len, c->out_cap - c->out_len);
        if (n > 0) {
            c->out_len += (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        c->pipe_eof = true;
        break;
    }
    epoll_ctl(a->epfd, EPOLL_CTL_DEL, c->pipe_fd, NULL);
    close(c->pipe_fd);
    c->pipe_fd = -1;
    if (c->exited)
        finish_worker(a, c);
}

static void bash_send_update(struct agent *a, struct call *c)
{
    struct tool_result part = {0};
    if (tool_bash_partial(c->bash, &part) < 0)
        return;
    json_t *msg = json_pack("{s:s, s:I, s:O}", "t", "update", "id", c->id, "content",
                            part.content ? part.content : json_array());
    if (part.details)
        json_object_set(msg, "details", part.details);
    send_msg(a, msg);
    tool_result_clear(&part);
    c->last_update_ms = tool_bash_now_ms();
}

static void start_bash(struct agent *a, const struct tool_env *env, json_int_t id, json_t *args)
{
    int idx;
    struct call *c = call_slot(a, id, &idx);
    if (!c) {
        send_error(a, id, "too many calls in flight");
        return;
    }
    struct tool_result early = {0};
    struct tool_bash_call *bash = NULL;
    int rc = tool_bash_start(env, args, &bash, &early);
    if (rc < 0 || !bash) {
        if (!early.content)
            tool_result_error(&early, "bash could not start");
        send_result(a, id, &early);
        call_release(a, c);
        return;
    }
    c->kind = CALL_BASH;
    c->bash = bash;
    c->pid = tool_bash_pid(bash);
    c->exited_at_ms = -1;
    int fd = tool_bash_fd(bash);
    if (fd >= 0) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EV_DATA(TAG_BASH, idx)};
        epoll_ctl(a->epfd, EPOLL_CTL_ADD, fd, &ev);
    }
    /* pi sends an empty update when the command starts. */
    json_t *msg = json_pack("{s:s, s:I, s:[]}", "t", "update", "id", id, "content");
    send_msg(a, msg);
    c->last_update_ms = tool_bash_now_ms();
}

static void finish_bash(struct agent *a, struct call *c)
{
    int fd = tool_bash_fd(c->bash);
    if (fd >= 0)
        epoll_ctl(a->epfd, EPOLL_CTL_DEL, fd, NULL);
    struct tool_result res = {0};
    int status = c->status;
    tool_bash_finish(c->bash, status, &res);
    c->bash = NULL;
    send_result_status(a, c->id, &res,
                       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    call_release(a, c);
}

static void on_bash_readable(struct agent *a, int idx)
{
    struct call *c = &a->calls[idx];
    int fd = tool_bash_fd(c->bash);
    int rc = tool_bash_on_readable(c->bash);
    if (rc != 0 && fd >= 0)
        epoll_ctl(a->epfd, EPOLL_CTL_DEL, fd, NULL);
    if (tool_bash_now_ms() - c->last_update_ms >= TOOL_BASH_UPDATE_THROTTLE_MS)
        bash_send_update(a, c);
    if (c->exited && tool_bash_fd(c->bash) < 0)
        finish_bash(a, c);
}

static void on_call(struct agent *a, json_t *msg)
{
    json_int_t id = json_integer_value(json_object_get(msg, "id"));
    const char *name = json_string_value(json_object_get(msg, "tool"));
    json_t *args = json_object_get(msg, "args");
    if (id <= 0 || !name) {
        send_error(a, id, "malformed call: needs a positive id and a tool name");
        return;
    }
    if (call_find(a, id)) {
        send_error(a, id, "a call with this id is already in flight");
        return;
    }
    /* An approved host call (the supervisor's pin, agent/tools/pin.h): its
     * directories are checked and held by fd for the call. A bash or worker
     * child has its own copies of the fds once forked. */
    json_t *pin_json = json_object_get(msg, TOOL_PIN_FIELD);
    struct tool_pin pin = {.cwd_fd = -1, .dir_fd = -1};
    struct tool_env env = a->env;
    if (pin_json) {
        char why[2048];
        if (tool_pin_from_json(pin_json, &pin, why, sizeof(why)) < 0) {
            struct tool_result refused = {0};
            tool_result_error(&refused, "%s", why);
            send_result(a, id, &refused);
            return;
        }
        env.pin = &pin;
    }
    if (!args)
        args = json_object();
    else
        json_incref(args);
    const struct tool_entry *tool = tool_lookup(name);
    if (!tool) {
        char msgbuf[128];
        snprintf(msgbuf, sizeof(msgbuf), "unknown tool: %.64s", name);
        send_error(a, id, msgbuf);
    } else if (tool->flags & TOOL_RUNS_PROCESS) {
        start_bash(a, &env, id, args);
    } else if (tool->flags & TOOL_ON_WORKER) {
        start_worker(a, &env, id, tool, args);
    } else {
        struct tool_result res = {0};
        if (tool->run(&env, args, &res) < 0)
            tool_result_error(&res, "out of memory");
        send_result(a, id, &res);
    }
    json_decref(args);
    tool_pin_close(&pin);
}

static void on_cancel(struct agent *a, json_t *msg)
{
    struct call *c = call_find(a, json_integer_value(json_object_get(msg, "id")));
    if (!c || c->cancelled)
        return;
    c->cancelled = true;
    if (c->kind == CALL_BASH)
        tool_bash_cancel(c->bash);
    else if (c->pid > 0)
        kill(c->pid, SIGKILL);
}

static void on_channel(struct agent *a)
{
    struct cordon_error err;
    if (frame_reader_fill(&a->in, a->channel, &err) < 0) {
        a->shutting_down = true;
        return;
    }
    for (;;) {
        int status;
        json_t *msg = frame_reader_next(&a->in, &status, &err);
        if (!msg) {
            if (status < 0) {
                fprintf(stderr, "cordon-agent: %s\n", err.message);
                a->shutting_down = true;
            }
            break;
        }
        const char *t = json_string_value(json_object_get(msg, "t"));
        if (!t)
            send_error(a, 0, "frame without a type");
        else if (strcmp(t, "call") == 0)
            on_call(a, msg);
        else if (strcmp(t, "cancel") == 0)
            on_cancel(a, msg);
        else if (strcmp(t, "ping") == 0)
            send_msg(a, json_pack("{s:s, s:O}", "t", "pong", "id",
                                  json_object_get(msg, "id") ? json_object_get(msg, "id")
                                                             : json_null()));
        else if (strcmp(t, "shutdown") == 0)
            a->shutting_down = true;
        else
            send_error(a, 0, "unknown frame type");
        json_decref(msg);
    }
    if (a->in.eof)
        a->shutting_down = true;
}

static void on_signal(struct agent *a)
{
    struct signalfd_siginfo si;
    while (read(a->sigfd, &si, sizeof(si)) == sizeof(si)) {
        /* Host agent only (the others do not take these): end, and end
         * what the calls left running, rather than die and leave it. */
        if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT || si.ssi_signo == SIGHUP)
            a->shutting_down = true;
    }
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (int i = 0; i < MAX_CALLS; i++) {
            struct call *c = &a->calls[i];
            if (!c->used || c->pid != pid)
                continue;
            c->exited = true;
            c->status = status;
            if (c->kind == CALL_WORKER) {
                if (c->pipe_fd < 0)
                    finish_worker(a, c);
            } else {
                c->exited_at_ms = tool_bash_now_ms();
                if (tool_bash_fd(c->bash) < 0)
                    finish_bash(a, c);
            }
            break;
        }
    }
}

/* Timers: bash timeouts, the grace period after a shell exits while a
 * background process keeps its pipe open, and throttled progress. */
static int next_timeout_ms(struct agent *a)
{
    int64_t now = tool_bash_now_ms();
    int64_t soonest = -1;
    for (int i = 0; i < MAX_CALLS; i++) {
        struct call *c = &a->calls[i];
        if (!c->used || c->kind != CALL_BASH)
            continue;
        int64_t when = tool_bash_deadline(c->bash);
        if (c->exited)
            when = c->exited_at_ms + TOOL_BASH_EXIT_GRACE_MS;
        else if (tool_bash_fd(c->bash) >= 0) {
            int64_t upd = c->last_update_ms + TOOL_BASH_UPDATE_THROTTLE_MS;
            if (when < 0 || upd < when)
                when = upd;
        }
        if (when >= 0 && (soonest < 0 || when < soonest))
            soonest = when;
    }
    if (soonest < 0)
        return -1;
    return soonest <= now ? 0 : (int)(soonest - now);
}

static void on_timers(struct agent *a)
{
    int64_t now = tool_bash_now_ms();
    for (int i = 0; i < MAX_CALLS; i++) {
        struct call *c = &a->calls[i];
        if (!c->used || c->kind != CALL_BASH)
            continue;
        if (c->exited) {
            if (now >= c->exited_at_ms + TOOL_BASH_EXIT_GRACE_MS)
                finish_bash(a, c);
            continue;
        }
        int64_t deadline = tool_bash_deadline(c->bash);
        if (deadline >= 0 && now >= deadline)
            tool_bash_on_deadline(c->bash);
        if (tool_bash_fd(c->bash) >= 0 && now - c->last_update_ms >= TOOL_BASH_UPDATE_THROTTLE_MS)
            bash_send_update(a, c);
    }
}

int agent_serve(int channel_fd, bool host)
{
    return agent_serve_pipes(channel_fd, channel_fd, host);
}

int agent_serve_pipes(int channel_fd, int channel_out_fd, bool host)
{
    /* The calls' PATH holds what exists in the sandbox; the host helper's
     * is the host's own. */
    if (!host)
        agent_path_prune(environ);
    tool_set_sandboxed(!host);
    struct cordon_error rerr;
    /* Before any call: every process a call leaves behind stays ours. */
    if (host && reap_become_subreaper(&rerr) < 0)
        fprintf(stderr, "cordon-agent: %s\n", rerr.message);
    struct agent *a = calloc(1, sizeof(*a));
    if (!a)
        return CORDON_EXIT_FAILURE;
    a->channel = channel_fd;
    a->channel_out = channel_out_fd;
    if (!getcwd(a->cwd, sizeof(a->cwd)))
        snprintf(a->cwd, sizeof(a->cwd), "/");
    a->env = (struct tool_env){
        .cwd = a->cwd,
        .home = getenv("HOME") ? getenv("HOME") : "/",
        .tmpdir = "/tmp",
        .bash_environ = environ,
    };
    fcntl(channel_fd, F_SETFL, fcntl(channel_fd, F_GETFL) | O_NONBLOCK);
    fcntl(channel_out_fd, F_SETFL, fcntl(channel_out_fd, F_GETFL) | O_NONBLOCK);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGPIPE);
    if (host) {
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
    }
    sigprocmask(SIG_BLOCK, &mask, NULL);
    a->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    a->epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EV_DATA(TAG_CHANNEL, 0)};
    epoll_ctl(a->epfd, EPOLL_CTL_ADD, channel_fd, &ev);
    if (channel_out_fd != channel_fd) {
        ev = (struct epoll_event){.events = 0, .data.u64 = EV_DATA(TAG_CHANNEL_OUT, 0)};
        epoll_ctl(a->epfd, EPOLL_CTL_ADD, channel_out_fd, &ev);
    }
    ev = (struct epoll_event){.events = EPOLLIN, .data.u64 = EV_DATA(TAG_SIGNAL, 0)};
    epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->sigfd, &ev);

    send_msg(a, json_pack("{s:s, s:i, s:s}", "t", "hello", "version", AGENT_PROTOCOL_VERSION,
                          "agent", "cordon-agent " CORDON_VERSION));

    while (!a->shutting_down) {
        struct epoll_event events[32];
        int n = epoll_wait(a->epfd, events, 32, next_timeout_ms(a));
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++) {
            uint64_t data = events[i].data.u64;
            int idx = (int)(data >> 8);
            switch (data & 0xff) {
            case TAG_CHANNEL:
            case TAG_CHANNEL_OUT:
                if (events[i].events & EPOLLOUT) {
                    struct cordon_error err;
                    if (frame_writer_flush(&a->out, a->channel_out, &err) != 0)
                        watch_output(a, false);
                }
                /* The write end's reader went away: nobody hears us. */
                if ((data & 0xff) == TAG_CHANNEL_OUT && (events[i].events & (EPOLLHUP | EPOLLERR)))
                    a->shutting_down = true;
                else if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                    on_channel(a);
                break;
            case TAG_SIGNAL:
                on_signal(a);
                break;
            case TAG_WORKER:
                if (a->calls[idx].used)
                    on_worker_readable(a, idx);
                break;
            case TAG_BASH:
                if (a->calls[idx].used && a->calls[idx].bash)
                    on_bash_readable(a, idx);
                break;
            }
        }
        on_timers(a);
    }
    /* Flush what is queued (best effort), then leave: as PID 1, exiting
     * takes every process of the sandbox with it. */
    struct cordon_error err;
    for (int tries = 0; tries < 100 && frame_writer_pending(&a->out); tries++) {
        if (frame_writer_flush(&a->out, a->channel_out, &err) != 0)
            break;
        usleep(1000);
    }
    /* Outside the sandbox (a host helper, or the leak test) the process
     * goes on or exits normally: give back what the loop owns. */
    for (int i = 0; i < MAX_CALLS; i++) {
        struct call *c = &a->calls[i];
        if (!c->used)
            continue;
        if (c->bash) {
            tool_bash_cancel(c->bash);
            tool_bash_free(c->bash);
            c->bash = NULL;
        }
        call_release(a, c);
    }
    /* On the host, what the calls left running (`cmd &`, nohup, setsid,
     * double forks) ends with the session, as it does in the sandbox. */
    if (host && reap_descendants(REAP_HOST_TIMEOUT_MS, &rerr) < 0)
        fprintf(stderr, "cordon-agent: %s\n", rerr.message);
    frame_reader_free(&a->in);
    frame_writer_free(&a->out);
    close(a->epfd);
    close(a->sigfd);
    free(a);
    return 0;
}
