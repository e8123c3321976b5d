/* The MCP server: JSON-RPC dispatch, the session's sandbox, tool calls in
 * flight, progress and cancellation. Host context, unprivileged, one epoll
 * loop over stdin, stdout, the agent channel, the sandbox's pidfd and a
 * signalfd. The client is untrusted input: every message is checked for
 * shape before use, and nothing runs before initialize. */
#include "mcp/server.h"
#include "config.h"
#include "mcp/jsonrpc.h"
#include "mcp/tools-list.h"
#include "supervisor/session.h"
#include "supervisor/verify.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define MAX_PENDING 256

static const char *const supported_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

struct pending {
    bool used;
    json_int_t call_id; /* on the agent channel */
    json_t *request_id; /* the client's id */
    json_t *progress_token;
    double progress;
    bool cancelled;
    struct verify_run *verify; /* sandbox_verify: the probe's bash call */
};

struct server {
    const struct mcp_options *opts;
    int epfd, sigfd;
    struct line_reader in;
    struct out_queue out;
    bool initialized;
    bool stopping;
    struct session *session;
    char blocked[1024]; /* why the tools cannot run, or "" */
    bool session_tried;
    json_t *tools;
    struct pending pending[MAX_PENDING];
    json_int_t next_call_id;
};

enum { TAG_STDIN = 1, TAG_STDOUT, TAG_CHANNEL, TAG_SANDBOX, TAG_SIGNAL };

static void send_msg(struct server *s, json_t *msg)
{
    out_queue_msg(&s->out, msg);
    if (out_queue_flush(&s->out, 1) < 0)
        s->stopping = true;
}

static void reply_error(struct server *s, json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void reply_error(struct server *s, json_t *id, int code, const char *fmt, ...)
{
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    send_msg(s, rpc_error(json_incref(id), code, message));
}

static json_t *tool_result_json(const struct tool_result *res)
{
    json_t *result = json_pack("{s:O, s:b}", "content", res->content ? res->content : json_array(),
                               "isError", res->is_error);
    if (res->details && json_is_object(res->details))
        json_object_set(result, "structuredContent", res->details);
    return result;
}

static void reply_tool_error(struct server *s, json_t *id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void reply_tool_error(struct server *s, json_t *id, const char *fmt, ...)
{
    char message[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    struct tool_result res = {0};
    tool_result_text(&res, message, NULL);
    res.is_error = true;
    send_msg(s, rpc_result(json_incref(id), tool_result_json(&res)));
    tool_result_clear(&res);
}

static struct pending *pending_by_call(struct server *s, json_int_t call_id)
{
    for (int i = 0; i < MAX_PENDING; i++) {
        if (s->pending[i].used && s->pending[i].call_id == call_id)
            return &s->pending[i];
    }
    return NULL;
}

static struct pending *pending_by_request(struct server *s, json_t *request_id)
{
    for (int i = 0; i < MAX_PENDING; i++) {
        if (s->pending[i].used && json_equal(s->pending[i].request_id, request_id))
            return &s->pending[i];
    }
    return NULL;
}

static void pending_release(struct pending *p)
{
    json_decref(p->request_id);
    json_decref(p->progress_token);
    verify_free(p->verify);
    *p = (struct pending){0};
}

static void epoll_set(struct server *s, int fd, int tag, uint32_t events, int op)
{
    struct epoll_event ev = {.events = events, .data.u64 = (uint64_t)tag};
    epoll_ctl(s->epfd, op, fd, &ev);
}

static void block_tools(struct server *s, const char *reason)
{
    snprintf(s->blocked, sizeof(s->blocked), "%s", reason);
    log_error("tools blocked: %s", reason);
    /* Every call in flight ends with the reason; none ran to completion. */
    for (int i = 0; i < MAX_PENDING; i++) {
        struct pending *p = &s->pending[i];
        if (!p->used)
            continue;
        if (!p->cancelled)
            reply_tool_error(s, p->request_id, "cordon: the sandbox is unavailable: %s", reason);
        pending_release(p);
    }
}

static void stop_session(struct server *s)
{
    if (!s->session)
        return;
    epoll_ctl(s->epfd, EPOLL_CTL_DEL, session_channel_fd(s->session), NULL);
    epoll_ctl(s->epfd, EPOLL_CTL_DEL, session_pidfd(s->session), NULL);
    session_stop(s->session);
    s->session = NULL;
}

static void start_session(struct server *s)
{
    if (s->session_tried)
        return;
    s->session_tried = true;
    struct cordon_error err = {0};
    if (session_start(&s->opts->request, &s->session, &err) < 0) {
        s->session = NULL;
        block_tools(s, err.message);
        return;
    }
    epoll_set(s, session_channel_fd(s->session), TAG_CHANNEL, EPOLLIN, EPOLL_CTL_ADD);
    epoll_set(s, session_pidfd(s->session), TAG_SANDBOX, EPOLLIN, EPOLL_CTL_ADD);
}

/* sandbox_verify's probe answered: the report as text and as
 * structuredContent. */
static void reply_verify(struct server *s, struct pending *p, const struct session_event *ev)
{
    json_t *report = verify_finish(p->verify, ev->kind == SESSION_RESULT ? ev->result : NULL,
                                   ev->kind == SESSION_RESULT ? NULL : ev->message);
    _cleanup_free_ char *text = verify_report_text(report);
    struct tool_result res = {0};
    tool_result_text(&res, text ? text : "cordon verify: out of memory", report);
    send_msg(s, rpc_result(json_incref(p->request_id), tool_result_json(&res)));
    tool_result_clear(&res);
}

static void on_session_event(void *ctx, const struct session_event *ev)
{
    struct server *s = ctx;
    struct pending *p = pending_by_call(s, ev->id);
    if (!p)
        return;
    if (ev->kind == SESSION_UPDATE) {
        if (p->cancelled || !p->progress_token)
            return;
        const char *text = "";
        json_t *first = json_array_get(ev->result->content, 0);
        if (first && json_is_string(json_object_get(first, "text")))
            text = json_string_value(json_object_get(first, "text"));
        p->progress += 1;
        json_t *params = json_pack("{s:O, s:f, s:s}", "progressToken", p->progress_token,
                                   "progress", p->progress, "message", text);
        send_msg(s, rpc_notification("notifications/progress", params));
        return;
    }
    if (!p->cancelled && p->verify) {
        reply_verify(s, p, ev);
    } else if (!p->cancelled) {
        if (ev->kind == SESSION_RESULT)
            send_msg(s, rpc_result(json_incref(p->request_id), tool_result_json(ev->result)));
        else
            reply_tool_error(s, p->request_id, "cordon: %s", ev->message);
    }
    /* A cancelled request gets no response at all (MCP cancellation). */
    pending_release(p);
}

static bool tool_known(struct server *s, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach (s->tools, i, t) {
        if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0)
            return true;
    }
    return false;
}

static void on_tools_call(struct server *s, json_t *id, json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    if (!name) {
        reply_error(s, id, RPC_INVALID_PARAMS, "tools/call: params.name must be a string");
        return;
    }
    if (!tool_known(s, name)) {
        reply_error(s, id, RPC_INVALID_PARAMS, "Unknown tool: %.200s", name);
        return;
    }
    if (args && !json_is_object(args)) {
        reply_error(s, id, RPC_INVALID_PARAMS, "tools/call: params.arguments must be an object");
        return;
    }
    if (pending_by_request(s, id)) {
        reply_error(s, id, RPC_INVALID_REQUEST, "a request with this id is already in flight");
        return;
    }
    if (s->opts->lazy_start)
        start_session(s);
    if (s->blocked[0] || !s->session) {
        reply_tool_error(s, id, "cordon: the %s tool is blocked: %s", name,
                         s->blocked[0] ? s->blocked : "the sandbox is not running");
        return;
    }
    struct pending *p = NULL;
    for (int i = 0; i < MAX_PENDING && !p; i++) {
        if (!s->pending[i].used)
            p = &s->pending[i];
    }
    if (!p) {
        reply_tool_error(s, id, "cordon: too many calls in flight (%d)", MAX_PENDING);
        return;
    }
    json_t *meta = json_object_get(params, "_meta");
    json_t *token = meta ? json_object_get(meta, "progressToken") : NULL;
    *p = (struct pending){
        .used = true,
        .call_id = ++s->next_call_id,
        .request_id = json_incref(id),
        .progress_token =
            (json_is_string(token) || json_is_integer(token)) ? json_incref(token) : NULL,
    };
    struct cordon_error err;
    if (strcmp(name, "sandbox_verify") == 0) {
        /* Runs as a bash call of the probe; judged when it answers. */
        json_t *probe_args = NULL;
        if (verify_prepare(s->session, &p->verify, &probe_args, &err) < 0) {
            pending_release(p);
            reply_tool_error(s, id, "cordon: sandbox_verify: %s", err.message);
            return;
        }
        int rc = session_send_call(s->session, p->call_id, "bash", probe_args, &err);
        json_decref(probe_args);
        if (rc < 0) {
            pending_release(p);
            block_tools(s, err.message);
            reply_tool_error(s, id, "cordon: sandbox_verify is blocked: %s", s->blocked);
            return;
        }
    } else if (session_send_call(s->session, p->call_id, name, args, &err) < 0) {
        pending_release(p);
        block_tools(s, err.message);
        reply_tool_error(s, id, "cordon: the %s tool is blocked: %s", name, s->blocked);
        return;
    }
    if (session_wants_write(s->session))
        epoll_set(s, session_channel_fd(s->session), TAG_CHANNEL, EPOLLIN | EPOLLOUT,
                  EPOLL_CTL_MOD);
}

static void on_initialize(struct server *s, json_t *id, json_t *params)
{
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    const char *version = supported_versions[0];
    for (size_t i = 0; asked && i < ARRAY_SIZE(supported_versions); i++) {
        if (strcmp(asked, supported_versions[i]) == 0)
            version = supported_versions[i];
    }
    json_t *result = json_pack(
        "{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", version, "capabilities",
        "tools", "listChanged", 0, "serverInfo", "name", "cordon", "title", "cordon sandbox",
        "version", CORDON_VERSION, "instructions",
        "Tools run inside a sandbox whose only view of the host is this workspace: no network, no "
        "home directory, no host secrets.");
    send_msg(s, rpc_result(json_incref(id), result));
    s->initialized = true;
    if (!s->opts->lazy_start)
        start_session(s);
}

static void on_request(struct server *s, json_t *id, const char *method, json_t *params)
{
    if (strcmp(method, "initialize") == 0) {
        if (s->initialized) {
            reply_error(s, id, RPC_INVALID_REQUEST, "already initialized");
            return;
        }
        on_initialize(s, id, params);
        return;
    }
    if (strcmp(method, "ping") == 0) {
        send_msg(s, rpc_result(json_incref(id), json_object()));
        return;
    }
    if (!s->initialized) {
        reply_error(s, id, RPC_NOT_INITIALIZED,
                    "server not initialized: send initialize before %.100s", method);
        return;
    }
    if (params && !json_is_object(params)) {
        reply_error(s, id, RPC_INVALID_PARAMS, "params must be an object");
        return;
    }
    if (strcmp(method, "tools/list") == 0) {
        send_msg(s, rpc_result(json_incref(id), json_pack("{s:O}", "tools", s->tools)));
    } else if (strcmp(method, "tools/call") == 0) {
        on_tools_call(s, id, params); /* NULL params read as {} */
    } else {
        reply_error(s, id, RPC_METHOD_NOT_FOUND, "Method not found: %.200s", method);
    }
}

static void on_notification(struct server *s, const char *method, json_t *params)
{
    if (strcmp(method, "notifications/cancelled") == 0) {
        json_t *rid = params ? json_object_get(params, "requestId") : NULL;
        struct pending *p = rid ? pending_by_request(s, rid) : NULL;
        if (!p || p->cancelled)
            return; /* unknown or finished: nothing to do, nothing to say */
        p->cancelled = true;
        struct cordon_error err;
        if (s->session)
            session_send_cancel(s->session, p->call_id, &err);
    }
    /* notifications/initialized and anything else: no answer, ever. */
}

static void on_line(void *ctx, const char *line, size_t len)
{
    struct server *s = ctx;
    if (!line) {
        reply_error(s, NULL, RPC_PARSE_ERROR, "Parse error: message longer than %u bytes",
                    MCP_LINE_MAX);
        return;
    }
    if (len == 0)
        return;
    json_error_t jerr;
    json_t *msg = json_loadb(line, len, 0, &jerr);
    if (!msg) {
        reply_error(s, NULL, RPC_PARSE_ERROR, "Parse error: %s", jerr.text);
        return;
    }
    if (!json_is_object(msg)) {
        reply_error(s, NULL, RPC_INVALID_REQUEST,
                    json_is_array(msg) ? "Invalid Request: batches are not supported"
                                       : "Invalid Request: expected an object");
        json_decref(msg);
        return;
    }
    json_t *id = json_object_get(msg, "id");
    const char *version = json_string_value(json_object_get(msg, "jsonrpc"));
    json_t *method_json = json_object_get(msg, "method");
    const char *method = json_string_value(method_json);
    bool id_ok = id && (json_is_string(id) || json_is_integer(id));
    if (!version || strcmp(version, "2.0") != 0) {
        reply_error(s, id_ok ? id : NULL, RPC_INVALID_REQUEST,
                    "Invalid Request: jsonrpc must be \"2.0\"");
    } else if (method_json && !method) {
        reply_error(s, id_ok ? id : NULL, RPC_INVALID_REQUEST,
                    "Invalid Request: method must be a string");
    } else if (method && !id) {
        on_notification(s, method, json_object_get(msg, "params"));
    } else if (method && !id_ok) {
        reply_error(s, NULL, RPC_INVALID_REQUEST,
                    "Invalid Request: id must be a string or an integer");
    } else if (method) {
        on_request(s, id, method, json_object_get(msg, "params"));
    } else if (!json_object_get(msg, "result") && !json_object_get(msg, "error")) {
        reply_error(s, id_ok ? id : NULL, RPC_INVALID_REQUEST, "Invalid Request: no method");
    }
    /* Responses from the client to requests we never sent are dropped. */
    json_decref(msg);
}

static void loop(struct server *s)
{
    while (!s->stopping) {
        bool reading = !s->in.eof && out_queue_pending(&s->out) < MCP_OUTPUT_MAX;
        epoll_set(s, 0, TAG_STDIN, reading ? EPOLLIN : 0, EPOLL_CTL_MOD);
        epoll_set(s, 1, TAG_STDOUT, out_queue_pending(&s->out) ? EPOLLOUT : 0, EPOLL_CTL_MOD);
        if (s->in.eof && !out_queue_pending(&s->out))
            break;
        struct epoll_event events[16];
        int n = epoll_wait(s->epfd, events, 16, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < n && !s->stopping; i++) {
            struct cordon_error err = {0};
            switch (events[i].data.u64) {
            case TAG_STDIN:
                if (line_reader_fill(&s->in, 0, on_line, s) < 0)
                    s->in.eof = true;
                break;
            case TAG_STDOUT:
                if (out_queue_flush(&s->out, 1) < 0)
                    s->stopping = true;
                break;
            case TAG_CHANNEL:
                if (!s->session)
                    break;
                if ((events[i].events & EPOLLOUT) && session_on_writable(s->session, &err) < 0) {
                    stop_session(s);
                    block_tools(s, err.message);
                    break;
                }
                if (session_on_readable(s->session, on_session_event, s, &err) < 0) {
                    stop_session(s);
                    block_tools(s, err.message);
                    break;
                }
                epoll_set(s, session_channel_fd(s->session), TAG_CHANNEL,
                          EPOLLIN | (session_wants_write(s->session) ? EPOLLOUT : 0),
                          EPOLL_CTL_MOD);
                break;
            case TAG_SANDBOX:
                stop_session(s);
                block_tools(s, "the sandbox exited unexpectedly");
                break;
            case TAG_SIGNAL: {
                struct signalfd_siginfo si;
                if (read(s->sigfd, &si, sizeof(si)) == sizeof(si))
                    log_debug("signal %u: ending the session", si.ssi_signo);
                s->stopping = true;
                break;
            }
            }
        }
    }
}

/* The fuzzing seam (tests/fuzz/fuzz-mcp.c): the line reader and dispatch of
 * a server that has no sandbox (every tool call is blocked), over input
 * read from fd until end of file; responses go to fd 1 as in mcp_serve. */
int mcp_dispatch_fd_for_fuzzing(int fd)
{
    static const struct mcp_options no_sandbox = {0};
    struct server *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    s->opts = &no_sandbox;
    s->epfd = -1;
    s->sigfd = -1;
    s->session_tried = true;
    snprintf(s->blocked, sizeof(s->blocked), "%s", "fuzzing: no sandbox");
    s->tools = json_loads(mcp_tools_json, 0, NULL);
    json_array_append_new(s->tools, verify_tool_definition());
    while (!s->in.eof && !s->stopping && line_reader_fill(&s->in, fd, on_line, s) == 0)
        ;
    out_queue_flush(&s->out, 1);
    for (int i = 0; i < MAX_PENDING; i++) {
        if (s->pending[i].used)
            pending_release(&s->pending[i]);
    }
    line_reader_free(&s->in);
    out_queue_free(&s->out);
    json_decref(s->tools);
    free(s);
    return 0;
}

int mcp_serve(const struct mcp_options *o)
{
    struct server *s = calloc(1, sizeof(*s));
    if (!s)
        return CORDON_EXIT_FAILURE;
    s->opts = o;
    json_error_t jerr;
    s->tools = json_loads(mcp_tools_json, 0, &jerr);
    if (!s->tools) {
        log_error("internal: tool list: %s", jerr.text);
        free(s);
        return CORDON_EXIT_FAILURE;
    }
    json_array_append_new(s->tools, verify_tool_definition());
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    s->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    s->epfd = epoll_create1(EPOLL_CLOEXEC);
    fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
    fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
    epoll_set(s, 0, TAG_STDIN, EPOLLIN, EPOLL_CTL_ADD);
    epoll_set(s, 1, TAG_STDOUT, 0, EPOLL_CTL_ADD);
    epoll_set(s, s->sigfd, TAG_SIGNAL, EPOLLIN, EPOLL_CTL_ADD);

    loop(s);

    stop_session(s);
    fcntl(1, F_SETFL, fcntl(1, F_GETFL) & ~O_NONBLOCK);
    out_queue_flush(&s->out, 1);
    for (int i = 0; i < MAX_PENDING; i++) {
        if (s->pending[i].used)
            pending_release(&s->pending[i]);
    }
    line_reader_free(&s->in);
    out_queue_free(&s->out);
    json_decref(s->tools);
    close(s->epfd);
    close(s->sigfd);
    free(s);
    return 0;
}
