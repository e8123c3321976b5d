/* The MCP server: JSON-RPC dispatch, the session's sandbox, routing (sandbox,
 * host with exact approval, off, host fallback, blocked, the skill read
 * exception), tool calls in flight, progress and cancellation. Host context,
 * unprivileged, one epoll loop over stdin, stdout, the sandbox's and the host
 * agent's channels and pidfds, and a signalfd. The client is untrusted
 * input: every message is checked for shape before use, and nothing runs
 * before initialize. docs/routing.md describes the behaviour. */
#include "mcp/server.h"
#include "supervisor/review.h"
#include "config.h"
#include "mcp/jsonrpc.h"
#include "mcp/tools-list.h"
#include "agent/tools/path.h"
#include "agent/tools/registry.h"
#include "supervisor/control.h"
#include "supervisor/launch.h"
#include "supervisor/route.h"
#include "supervisor/workspace.h"
#include "supervisor/session.h"
#include "supervisor/state.h"
#include "supervisor/verify.h"
#include "net/denial.h"
#include "util/cleanup.h"
#include "util/escape.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
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

enum pending_where { AT_SANDBOX, AT_HOST, AT_ASKING, AT_NETWORK_ASKING };

struct pending {
    bool used;
    enum pending_where where;
    long long started_us; /* for the audit log */
    json_int_t call_id;   /* on the agent channel */
    json_t *request_id;   /* the client's id */
    json_t *progress_token;
    double progress;
    /* The newest progress notification not yet queued: held while the
     * client is not reading (MCP_PROGRESS_QUEUED_MAX), replaced by each
     * newer one, sent once the queue drains or before the result. */
    json_t *held_progress;
    /* The message of the last progress sent or held: the agent repeats the
     * partial output while a command is quiet, and a client needs only
     * what is new (a quiet 4 s command sent 41 identical notifications). */
    char *last_progress_text;
    bool cancelled;
    enum route_state state; /* when it was routed */
    /* AT_ASKING: the call waiting for the user's answer */
    char tool[16];
    json_t *args;
    uint64_t approval;
    json_t *elicit_id;         /* our elicitation/create request's id */
    struct route_pin *pin;     /* what the user is asked to approve, pinned until the call ends */
    struct verify_run *verify; /* sandbox_verify: the probe's bash call */
    uint64_t control_conn;     /* a verify asked on the control socket: answered there */
    /* AT_NETWORK_ASKING: the finished call's result, held while the user
     * is asked whether to allow the destination it was refused. */
    json_t *held_result;
    json_t *audit_args; /* the arguments the call ran with, for the audit log */
    char net_rules[2][NET_DENIAL_RULE_MAX];
    size_t net_rule_count;
};

struct server {
    const struct mcp_options *opts;
    int epfd, sigfd;
    struct line_reader in;
    struct out_queue out;
    bool initialized;
    bool stopping;
    struct session *session; /* the sandbox */
    struct session *host;    /* cordon-agent on the host, started on demand */
    struct control *control; /* the sandbox's control socket (`cordon verify NAME`) */
    char blocked[1024];      /* why the tools cannot run, or "" */
    bool session_tried;
    json_t *tools;
    enum route_state state;
    struct cordon_config cfg;
    bool have_cfg;
    bool client_elicitation; /* declared the elicitation (form) capability */
    struct route_approvals approvals;
    struct route_skills skills;
    char cwd[PATH_MAX];
    struct pending pending[MAX_PENDING];
    json_int_t next_call_id;
    /* After a review rewind or discard restarted the sandbox: the client's
     * request with the sandbox's name pinned (sandbox_name), so the new
     * session continues the same review layer. */
    struct launch_request pinned;
    char **pinned_sets;
};

enum {
    TAG_STDIN = 1,
    TAG_STDOUT,
    TAG_CHANNEL,
    TAG_SANDBOX,
    TAG_SIGNAL,
    TAG_HOST_CHANNEL,
    TAG_HOST,
    TAG_CONTROL
};

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

/* Every tools/call result says where it ran and in which state. */
static json_t *route_meta(const struct server *s, const char *route, enum route_state state)
{
    json_t *meta =
        json_pack("{s:s, s:s}", "cordon/route", route, "cordon/state", route_state_name(state));
    if (state == ROUTE_BLOCKED && s->blocked[0])
        json_object_set_new(meta, "cordon/reason", json_string(s->blocked));
    return meta;
}

/* state: the one the call was routed in (it may change while it runs). */
static json_t *tool_result_json(const struct server *s, const struct tool_result *res,
                                const char *route, enum route_state state)
{
    json_t *result = json_pack("{s:O, s:b}", "content", res->content ? res->content : json_array(),
                               "isError", res->is_error);
    if (res->details && json_is_object(res->details))
        json_object_set(result, "structuredContent", res->details);
    json_object_set_new(result, "_meta", route_meta(s, route, state));
    /* Review mode: the checkpoint this call ended with (`cordon rewind
     * NAME --to N`, cordon/reviewRewind). */
    long ck = s->session && strcmp(route, "sandbox") == 0 ? session_checkpoint(s->session) : 0;
    if (ck > 0)
        json_object_set_new(json_object_get(result, "_meta"), "cordon/checkpoint",
                            json_integer(ck));
    return result;
}

static void reply_tool_error(struct server *s, json_t *id, const char *route, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void reply_tool_error(struct server *s, json_t *id, const char *route, const char *fmt, ...)
{
    char message[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    struct tool_result res = {0};
    tool_result_text(&res, message, NULL);
    res.is_error = true;
    send_msg(s, rpc_result(json_incref(id), tool_result_json(s, &res, route, s->state)));
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

static void pending_release(struct server *s, struct pending *p)
{
    if (p->where == AT_ASKING && p->approval) {
        struct cordon_error err;
        /* Consuming with no fingerprint always fails: it ends the approval. */
        route_approval_consume(&s->approvals, p->approval, NULL, &err);
    }
    json_decref(p->request_id);
    json_decref(p->progress_token);
    json_decref(p->held_progress);
    free(p->last_progress_text);
    p->last_progress_text = NULL;
    json_decref(p->args);
    json_decref(p->elicit_id);
    json_decref(p->held_result);
    json_decref(p->audit_args);
    if (p->pin)
        route_pin_free(p->pin);
    free(p->pin);
    verify_free(p->verify);
    *p = (struct pending){0};
}

static const char *where_route(enum pending_where where)
{
    return where == AT_SANDBOX ? "sandbox" : "host";
}

static void epoll_set(struct server *s, int fd, int tag, uint32_t events, int op)
{
    struct epoll_event ev = {.events = events, .data.u64 = (uint64_t)tag};
    epoll_ctl(s->epfd, op, fd, &ev);
}

/* Every call in flight at that place ends with the reason; none ran to
 * completion. */
static void fail_pending(struct server *s, enum pending_where where, const char *what,
                         const char *reason)
{
    for (int i = 0; i < MAX_PENDING; i++) {
        struct pending *p = &s->pending[i];
        if (!p->used || p->where != where)
            continue;
        if (p->control_conn)
            control_reply_error(s->control, p->control_conn, "%s is unavailable: %s", what, reason);
        else if (!p->cancelled)
            reply_tool_error(s, p->request_id, where_route(where), "cordon: %s is unavailable: %s",
                             what, reason);
        pending_release(s, p);
    }
}

/* fallback_mode = "host" counts only from the user's own layers; the
 * configuration refuses it from the workspace file already, and this is
 * the second lock on that door. */
static bool host_fallback_allowed(const struct server *s)
{
    return s->have_cfg && s->cfg.fallback_mode == CFG_FALLBACK_HOST &&
           s->cfg.origin[CFG_FALLBACK_MODE].layer != CFG_LAYER_WORKSPACE;
}

/* The sandbox failed (at start or later). */
static void block_tools(struct server *s, const char *reason)
{
    snprintf(s->blocked, sizeof(s->blocked), "%s", reason);
    fail_pending(s, AT_SANDBOX, "the sandbox", reason);
    if (s->state == ROUTE_OFF)
        return; /* the user runs on the host already; on retries the sandbox */
    if (host_fallback_allowed(s)) {
        log_warn("the sandbox failed (%s): fallback_mode = \"host\": tools run ON THE HOST",
                 reason);
        s->state = ROUTE_HOST_FALLBACK;
    } else {
        log_error("tools blocked: %s", reason);
        s->state = ROUTE_BLOCKED;
    }
}

static void stop_session(struct server *s)
{
    if (!s->session)
        return;
    if (s->control) {
        /* The socket goes with the sandbox it speaks for; a verify asked
         * on it is answered before it closes. */
        for (int i = 0; i < MAX_PENDING; i++) {
            struct pending *p = &s->pending[i];
            if (p->used && p->control_conn) {
                control_reply_error(s->control, p->control_conn,
                                    "the sandbox stopped before the audit ended");
                pending_release(s, p);
            }
        }
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, control_fd(s->control), NULL);
        control_close(s->control);
        s->control = NULL;
    }
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
    if (!s->have_cfg)
        return; /* blocked by the configuration error already */
    struct cordon_error err = {0};
    enum route_state before = s->state;
    s->state = ROUTE_STARTING;
    if (session_start(s->pinned_sets ? &s->pinned : &s->opts->request, &s->session, &err) < 0) {
        s->session = NULL;
        s->state = before == ROUTE_OFF ? ROUTE_OFF : ROUTE_STARTING;
        block_tools(s, err.message);
        return;
    }
    s->blocked[0] = '\0';
    s->state = before == ROUTE_OFF ? ROUTE_OFF : ROUTE_SANDBOXED;
    epoll_set(s, session_channel_fd(s->session), TAG_CHANNEL, EPOLLIN, EPOLL_CTL_ADD);
    epoll_set(s, session_pidfd(s->session), TAG_SANDBOX, EPOLLIN, EPOLL_CTL_ADD);
    /* After the lock (taken by session_start): `cordon verify NAME` reaches
     * this sandbox here. Without it the tools still work. */
    if (control_open(session_state_dir_fd(s->session), session_name(s->session), &s->control,
                     &err) < 0) {
        s->control = NULL;
        log_warn("%s: `cordon verify %s` will not reach this session", err.message,
                 session_name(s->session));
    } else {
        epoll_set(s, control_fd(s->control), TAG_CONTROL, EPOLLIN, EPOLL_CTL_ADD);
    }
}

static void stop_host(struct server *s)
{
    if (!s->host)
        return;
    epoll_ctl(s->epfd, EPOLL_CTL_DEL, session_channel_fd(s->host), NULL);
    if (session_pidfd(s->host) >= 0)
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, session_pidfd(s->host), NULL);
    session_stop(s->host);
    s->host = NULL;
}

static int start_host(struct server *s, struct cordon_error *err)
{
    if (s->host)
        return 0;
    if (session_start_host(&s->host, err) < 0) {
        s->host = NULL;
        return error_prefix(err, "host execution");
    }
    epoll_set(s, session_channel_fd(s->host), TAG_HOST_CHANNEL, EPOLLIN, EPOLL_CTL_ADD);
    if (session_pidfd(s->host) >= 0)
        epoll_set(s, session_pidfd(s->host), TAG_HOST, EPOLLIN, EPOLL_CTL_ADD);
    return 0;
}

/* sandbox_verify's probe answered: the report as text and as
 * structuredContent. */
static void reply_verify(struct server *s, struct pending *p, const struct session_event *ev)
{
    json_t *report = verify_finish(p->verify, ev->kind == SESSION_RESULT ? ev->result : NULL,
                                   ev->kind == SESSION_RESULT ? NULL : ev->message);
    if (p->control_conn) {
        control_reply(s->control, p->control_conn,
                      json_pack("{s:b, s:o}", "ok", 1, "report", report));
        return;
    }
    _cleanup_free_ char *text = verify_report_text(report);
    struct tool_result res = {0};
    tool_result_text(&res, text ? text : "cordon verify: out of memory", report);
    send_msg(
        s, rpc_result(json_incref(p->request_id), tool_result_json(s, &res, "sandbox", p->state)));
    tool_result_clear(&res);
}

/* A sandbox call's result that reports a network refusal: with an
 * interactive client, the result waits while the user is asked (MCP
 * elicitation; the pi extension's dialog) whether to allow that
 * destination for the rest of the session. Only the user's answer reaches
 * the proxy (session_allow_host); nothing the agent sends can. */
static bool client_interactive(const struct server *s);

static bool ask_network(struct server *s, struct pending *p, const struct tool_result *res)
{
    struct net_denial d;
    if (p->where != AT_SANDBOX || !s->session || !client_interactive(s) ||
        !session_last_denial(s->session, &d))
        return false;
    p->net_rule_count = net_denial_rules(&d, p->net_rules);
    if (p->net_rule_count == 0)
        return false;
    char rules[2 * NET_DENIAL_RULE_MAX + 8];
    snprintf(rules, sizeof(rules), "%s%s%s", p->net_rules[0], p->net_rule_count > 1 ? ", " : "",
             p->net_rule_count > 1 ? p->net_rules[1] : "");
    char message[4096];
    char line[2048];
    enum net_mode mode =
        s->have_cfg && s->cfg.network.mode == CFG_NETWORK_DENY ? NET_MODE_DENY : NET_MODE_ALLOWLIST;
    net_denial_line(&d, mode, 0, line, sizeof(line));
    const char *prefix = "[cordon] network: ";
    snprintf(message, sizeof(message),
             "cordon refused a connection from the sandbox: %s\n\nAllow %s for the rest of this "
             "session? (Only this session; your configuration is not changed.)",
             strncmp(line, prefix, strlen(prefix)) == 0 ? line + strlen(prefix) : line, rules);
    static uint64_t asked;
    char elicit_id[64];
    snprintf(elicit_id, sizeof(elicit_id), "cordon-network-%" PRIu64, ++asked);
    json_t *rule_list = json_array();
    for (size_t i = 0; i < p->net_rule_count; i++)
        json_array_append_new(rule_list, json_string(p->net_rules[i]));
    json_t *params =
        json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s, s:s, s:s}}, s:[s]}, s:{s:{s:s, s:i, s:o}}}",
                  "mode", "form", "message", message, "requestedSchema", "type", "object",
                  "properties", "allow", "type", "boolean", "title", "Allow this destination",
                  "description", "For the rest of this session only", "required", "allow", "_meta",
                  "cordon/network", "host", d.host, "port", d.port, "rules", rule_list);
    if (!params)
        return false;
    p->held_result = tool_result_json(s, res, where_route(p->where), p->state);
    p->elicit_id = json_string(elicit_id);
    p->where = AT_NETWORK_ASKING;
    p->call_id = 0; /* the agent's call is over */
    send_msg(s, json_pack("{s:s, s:O, s:s, s:o}", "jsonrpc", "2.0", "id", p->elicit_id, "method",
                          "elicitation/create", "params", params));
    return true;
}

/* The user's answer: the held result goes out with one more line saying
 * what was decided. */
static void answer_network(struct server *s, struct pending *p, json_t *result)
{
    const char *action = json_string_value(json_object_get(result, "action"));
    bool granted = action && strcmp(action, "accept") == 0 &&
                   json_is_true(json_object_get(json_object_get(result, "content"), "allow"));
    char rules[2 * NET_DENIAL_RULE_MAX + 8];
    snprintf(rules, sizeof(rules), "%s%s%s", p->net_rules[0], p->net_rule_count > 1 ? ", " : "",
             p->net_rule_count > 1 ? p->net_rules[1] : "");
    char note[3 * NET_DENIAL_RULE_MAX + CORDON_ERROR_MAX];
    struct cordon_error err = {0};
    for (size_t i = 0; granted && i < p->net_rule_count; i++) {
        if (session_allow_host(s->session, p->net_rules[i], &err) < 0)
            granted = false;
    }
    if (granted)
        snprintf(note, sizeof(note),
                 "[cordon] network: the user allowed %s for the rest of this session; run the "
                 "command again",
                 rules);
    else if (err.message[0])
        snprintf(note, sizeof(note), "[cordon] network: %s could not be allowed: %s", rules,
                 err.message);
    else
        snprintf(note, sizeof(note), "[cordon] network: the user did not allow %s", rules);
    json_t *content = json_object_get(p->held_result, "content");
    json_t *last = json_array_get(content, json_array_size(content) - 1);
    const char *text = json_string_value(json_object_get(last, "text"));
    if (text) {
        _cleanup_free_ char *joined = NULL;
        if (asprintf(&joined, "%s\n%s", text, note) >= 0)
            json_object_set_new(last, "text", json_string(joined));
    } else {
        json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", note));
    }
    send_msg(s, rpc_result(json_incref(p->request_id), json_incref(p->held_result)));
    pending_release(s, p);
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
        if (p->last_progress_text && strcmp(p->last_progress_text, text) == 0)
            return;
        char *copy = strdup(text);
        if (!copy)
            return; /* progress is advisory: the result still comes */
        free(p->last_progress_text);
        p->last_progress_text = copy;
        p->progress += 1;
        json_t *params = json_pack("{s:O, s:f, s:s}", "progressToken", p->progress_token,
                                   "progress", p->progress, "message", text);
        json_t *note = rpc_notification("notifications/progress", params);
        if (out_queue_pending(&s->out) >= MCP_PROGRESS_QUEUED_MAX) {
            /* A client that does not read gets the newest progress when it
             * reads again, not every one since: memory stays flat. */
            json_decref(p->held_progress);
            p->held_progress = note;
            return;
        }
        /* Anything held is older than this one. */
        json_decref(p->held_progress);
        p->held_progress = NULL;
        send_msg(s, note);
        return;
    }
    /* The newest progress goes before the result (none may follow it);
     * results and errors are never dropped nor held. */
    if (p->held_progress && !p->cancelled)
        send_msg(s, p->held_progress);
    p->held_progress = NULL;
    bool held = false;
    if (!p->cancelled && p->verify) {
        reply_verify(s, p, ev);
    } else if (!p->cancelled) {
        if (ev->kind == SESSION_RESULT && ask_network(s, p, ev->result))
            held = true;
        else if (ev->kind == SESSION_RESULT)
            send_msg(s,
                     rpc_result(json_incref(p->request_id),
                                tool_result_json(s, ev->result, where_route(p->where), p->state)));
        else
            reply_tool_error(s, p->request_id, where_route(p->where), "cordon: %s", ev->message);
    }
    const char *outcome = p->cancelled                 ? "cancelled"
                          : ev->kind != SESSION_RESULT ? "failed"
                          : ev->result->is_error       ? "error"
                                                       : "ok";
    /* Host calls are recorded in the sandbox session's log too, when there
     * is one. */
    if (s->session)
        session_audit_call(s->session, p->tool, p->audit_args,
                           where_route(held ? AT_SANDBOX : p->where), outcome,
                           (double)(log_now_us() - p->started_us) / 1000.0, ev->exit_code);
    /* A cancelled request gets no response at all (MCP cancellation). */
    if (!held)
        pending_release(s, p);
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

static struct pending *pending_new(struct server *s, json_t *id)
{
    for (int i = 0; i < MAX_PENDING; i++) {
        if (!s->pending[i].used) {
            s->pending[i] = (struct pending){.used = true, .request_id = json_incref(id)};
            return &s->pending[i];
        }
    }
    return NULL;
}

/* Sends the call to the sandbox's or the host's agent; args borrowed. */
static void dispatch(struct server *s, struct pending *p, enum pending_where where, json_t *args)
{
    struct cordon_error err = {0};
    p->where = where;
    p->state = s->state;
    p->call_id = ++s->next_call_id;
    json_decref(p->audit_args);
    p->audit_args = json_incref(args);
    if (where == AT_HOST && start_host(s, &err) < 0) {
        reply_tool_error(s, p->request_id, "host", "cordon: %s", err.message);
        pending_release(s, p);
        return;
    }
    struct session *target = where == AT_HOST ? s->host : s->session;
    /* An approved call carries its pin: the host agent opens exactly what
     * the user approved, or refuses. */
    json_auto_t *pin = where == AT_HOST && p->pin ? route_pin_json(p->pin) : NULL;
    if (where == AT_HOST && p->pin && !pin) {
        reply_tool_error(s, p->request_id, "host", "cordon: host execution failed: out of memory");
        pending_release(s, p);
        return;
    }
    if (session_send_call_pinned(target, p->call_id, p->tool, args, pin, &err) < 0) {
        if (where == AT_HOST) {
            reply_tool_error(s, p->request_id, "host", "cordon: host execution failed: %s",
                             err.message);
            pending_release(s, p);
            stop_host(s);
            return;
        }
        reply_tool_error(s, p->request_id, "none", "cordon: the %s tool is blocked: %s", p->tool,
                         err.message);
        pending_release(s, p);
        stop_session(s);
        block_tools(s, err.message);
        return;
    }
    if (session_wants_write(target))
        epoll_set(s, session_channel_fd(target), where == AT_HOST ? TAG_HOST_CHANNEL : TAG_CHANNEL,
                  EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD);
}

/* The skill read exception: 1 when the call was answered here. */
static int try_skill_read(struct server *s, json_t *id, json_t *args)
{
    const char *path = json_string_value(json_object_get(args, "path"));
    if (!path || !s->skills.count || strlen(path) >= TOOL_PATH_MAX)
        return 0;
    struct tool_env env = {.cwd = s->cwd, .home = getenv("HOME") ? getenv("HOME") : "/"};
    _cleanup_free_ char *abs_path = tool_resolve_path(path, &env);
    if (!abs_path)
        return 0;
    struct cordon_error err = {0};
    _cleanup_close_ int fd = route_skill_open(&s->skills, abs_path, &err);
    if (fd == -1)
        return 0;
    if (fd < 0) {
        reply_tool_error(s, id, "skill", "cordon: %s is not served by the skill exception: %s",
                         abs_path, err.message);
        return 1;
    }
    json_auto_t *stripped = route_strip_target(args);
    struct tool_result res = {0};
    if (tool_read_fd(fd, abs_path, stripped, &res) < 0)
        tool_result_error(&res, "out of memory");
    send_msg(s, rpc_result(json_incref(id), tool_result_json(s, &res, "skill", s->state)));
    tool_result_clear(&res);
    return 1;
}

static bool client_interactive(const struct server *s)
{
    return s->client_elicitation && !s->opts->headless;
}

/* Asks the user to approve this exact call through MCP elicitation. */
static void ask_approval(struct server *s, struct pending *p, json_t *args)
{
    _cleanup_free_ char *fingerprint = route_fingerprint(p->tool, s->cwd, args);
    p->where = AT_ASKING;
    p->args = route_strip_target(args);
    p->approval = fingerprint ? route_approval_ask(&s->approvals, fingerprint) : 0;
    if (!p->approval || !p->args) {
        reply_tool_error(s, p->request_id, "none",
                         "cordon: too many host execution requests waiting for approval");
        pending_release(s, p);
        return;
    }
    /* What the call will touch, resolved and pinned now: the prompt shows
     * it, and the host agent opens exactly that (agent/tools/pin.h). */
    struct cordon_error err = {0};
    p->pin = calloc(1, sizeof(*p->pin));
    if (!p->pin) {
        reply_tool_error(s, p->request_id, "none", "cordon: out of memory");
        pending_release(s, p);
        return;
    }
    const char *workspace = s->have_cfg ? s->cfg.workspace : NULL;
    if (route_pin_prepare(p->tool, p->args, s->cwd, getenv("HOME"), workspace, p->pin, &err) < 0) {
        reply_tool_error(s, p->request_id, "none", "cordon: host execution refused: %s",
                         err.message);
        pending_release(s, p);
        return;
    }
    /* Shown whole, never cut, every hidden character escaped: the user
     * approves exactly what they read. */
    size_t hidden = 0;
    _cleanup_free_ char *message =
        route_prompt_text(p->tool, s->cwd, p->args, p->pin, workspace, &hidden);
    _cleanup_free_ char *shown_path =
        p->pin->canonical ? text_escape_visible(p->pin->canonical, strlen(p->pin->canonical),
                                                TEXT_ESCAPE_BACKSLASH, NULL)
                          : NULL;
    if (!message || (p->pin->canonical && !shown_path)) {
        reply_tool_error(s, p->request_id, "none", "cordon: out of memory");
        pending_release(s, p);
        return;
    }
    char elicit_id[64];
    snprintf(elicit_id, sizeof(elicit_id), "cordon-approval-%" PRIu64, p->approval);
    p->elicit_id = json_string(elicit_id);
    json_t *params = json_pack(
        "{s:s, s:s, s:{s:s, s:{s:{s:s, s:s, s:s}}, s:[s]}, s:{s:{s:s, s:s, s:o, s:s}}}", "mode",
        "form", "message", message, "requestedSchema", "type", "object", "properties", "approve",
        "type", "boolean", "title", "Run this call on the host", "description",
        "Only this exact call, once", "required", "approve", "_meta", "cordon/approval", "tool",
        p->tool, "cwd", s->cwd, "arguments", json_incref(p->args), "fingerprint", fingerprint);
    json_t *approval = json_object_get(json_object_get(params, "_meta"), "cordon/approval");
    json_object_set_new(approval, "resolvedPath",
                        shown_path ? json_string(shown_path) : json_null());
    json_object_set_new(approval, "hiddenCharacters", json_integer((json_int_t)hidden));
    send_msg(s, json_pack("{s:s, s:O, s:s, s:o}", "jsonrpc", "2.0", "id", p->elicit_id, "method",
                          "elicitation/create", "params", params));
}

/* The client answered one of our requests (only elicitation/create). */
static void on_response(struct server *s, json_t *id, json_t *result)
{
    for (int i = 0; i < MAX_PENDING; i++) {
        if (s->pending[i].used && s->pending[i].where == AT_NETWORK_ASKING &&
            json_equal(s->pending[i].elicit_id, id)) {
            answer_network(s, &s->pending[i], result);
            return;
        }
    }
    struct pending *p = NULL;
    for (int i = 0; i < MAX_PENDING && !p; i++) {
        if (s->pending[i].used && s->pending[i].where == AT_ASKING &&
            json_equal(s->pending[i].elicit_id, id))
            p = &s->pending[i];
    }
    if (!p)
        return; /* unknown, answered already, or cancelled: a replay runs nothing */
    const char *action = json_string_value(json_object_get(result, "action"));
    json_t *content = json_object_get(result, "content");
    bool granted = action && strcmp(action, "accept") == 0 &&
                   json_is_true(json_object_get(content, "approve"));
    route_approval_answer(&s->approvals, p->approval, granted);
    /* The call that runs is identified again now: tool, the cwd it will run
     * in, and its arguments; it must be the approved one, byte for byte. */
    char cwd[PATH_MAX];
    _cleanup_free_ char *fingerprint =
        getcwd(cwd, sizeof(cwd)) ? route_fingerprint(p->tool, cwd, p->args) : NULL;
    struct cordon_error err = {0};
    uint64_t approval = p->approval;
    p->approval = 0;
    if (route_approval_consume(&s->approvals, approval, fingerprint, &err) < 0) {
        if (!granted)
            reply_tool_error(s, p->request_id, "none",
                             "cordon: host execution of this %s call was declined by the user",
                             p->tool);
        else
            reply_tool_error(s, p->request_id, "none", "cordon: host execution refused: %s",
                             err.message);
        pending_release(s, p);
        return;
    }
    json_t *args = json_incref(p->args);
    dispatch(s, p, AT_HOST, args);
    json_decref(args);
}

/* The audit of the running sandbox, sent as a bash call of the probe and
 * judged when it answers (reply_verify). Never routed to the host. */
static int start_verify(struct server *s, struct pending *p, struct cordon_error *err)
{
    snprintf(p->tool, sizeof(p->tool), "%s", "verify");
    p->started_us = log_now_us();
    p->where = AT_SANDBOX;
    p->state = s->state;
    p->call_id = ++s->next_call_id;
    json_t *probe_args = NULL;
    if (verify_prepare(s->session, &p->verify, &probe_args, err) < 0)
        return -1;
    int rc = session_send_call(s->session, p->call_id, "bash", probe_args, err);
    json_decref(probe_args);
    if (rc == 0 && session_wants_write(s->session))
        epoll_set(s, session_channel_fd(s->session), TAG_CHANNEL, EPOLLIN | EPOLLOUT,
                  EPOLL_CTL_MOD);
    return rc;
}

/* sandbox_verify: the MCP tool. */
static void on_sandbox_verify(struct server *s, json_t *id, json_t *params)
{
    if (s->opts->lazy_start && s->state == ROUTE_STARTING)
        start_session(s);
    if (!s->session) {
        reply_tool_error(s, id, "none", "cordon: sandbox_verify: no sandbox is running%s%s",
                         s->blocked[0] ? ": " : "", s->blocked);
        return;
    }
    struct pending *p = pending_new(s, id);
    if (!p) {
        reply_tool_error(s, id, "none", "cordon: too many calls in flight (%d)", MAX_PENDING);
        return;
    }
    struct cordon_error err;
    if (start_verify(s, p, &err) < 0) {
        pending_release(s, p);
        reply_tool_error(s, id, "none", "cordon: sandbox_verify: %s", err.message);
    }
    (void)params;
}

static json_t *status_json(const struct server *s);

/* A request on the control socket. The verify is the same as
 * sandbox_verify's, in flight like any call: the loop serves the client
 * meanwhile. */
static void control_status(struct control *c, uint64_t conn, void *ctx)
{
    struct server *s = ctx;
    json_t *st = status_json(s);
    json_object_set_new(st, "pid", json_integer(getpid()));
    control_reply(c, conn, json_pack("{s:b, s:o}", "ok", 1, "status", st));
}

static void control_verify(struct control *c, uint64_t conn, void *ctx);

static const struct control_op control_ops[] = {
    {"verify", CONTROL_OP_DEFERRED, control_verify},
    {"status", 0, control_status},
};

static void on_control_request(void *ctx, uint64_t conn, const char *op)
{
    struct server *s = ctx;
    control_call(s->control, conn, op, control_ops, ARRAY_SIZE(control_ops), s);
}

static void control_verify(struct control *c, uint64_t conn, void *ctx)
{
    struct server *s = ctx;
    struct pending *p = s->session ? pending_new(s, NULL) : NULL;
    if (!p) {
        control_reply_error(s->control, conn,
                            s->session ? "too many calls in flight" : "no sandbox is running");
        return;
    }
    p->control_conn = conn;
    struct cordon_error err;
    if (start_verify(s, p, &err) < 0) {
        pending_release(s, p);
        control_reply_error(s->control, conn, "%s", err.message);
    }
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
    if (strcmp(name, "sandbox_verify") == 0) {
        on_sandbox_verify(s, id, params);
        return;
    }
    json_auto_t *call_args = args ? json_incref(args) : json_object();
    if (s->opts->lazy_start && s->state == ROUTE_STARTING)
        start_session(s);
    if (s->state != ROUTE_BLOCKED && strcmp(name, "read") == 0 && try_skill_read(s, id, call_args))
        return;
    char reason[1200];
    struct route_inputs in = {
        .state = s->state,
        .blocked_reason = s->blocked,
        .tool = name,
        .args = call_args,
        .allow_host_execution = s->have_cfg && s->cfg.allow_host_execution,
        .interactive = client_interactive(s),
    };
    enum route_target target = route_decide(&in, reason, sizeof(reason));
    if (target == ROUTE_REFUSE) {
        reply_tool_error(s, id, "none", "%s", reason);
        return;
    }
    if (target == ROUTE_TO_SANDBOX && !s->session) {
        reply_tool_error(s, id, "none", "cordon: the %s tool is blocked: %s", name,
                         s->blocked[0] ? s->blocked : "the sandbox is not running");
        return;
    }
    struct pending *p = pending_new(s, id);
    if (!p) {
        reply_tool_error(s, id, "none", "cordon: too many calls in flight (%d)", MAX_PENDING);
        return;
    }
    snprintf(p->tool, sizeof(p->tool), "%s", name);
    json_t *meta = json_object_get(params, "_meta");
    json_t *token = meta ? json_object_get(meta, "progressToken") : NULL;
    p->started_us = log_now_us();
    if (json_is_string(token) || json_is_integer(token))
        p->progress_token = json_incref(token);
    if (target == ROUTE_ASK) {
        ask_approval(s, p, call_args);
        return;
    }
    json_auto_t *stripped = route_strip_target(call_args);
    dispatch(s, p, target == ROUTE_TO_HOST ? AT_HOST : AT_SANDBOX, stripped);
}

/* tools/list: the routed tools only (a tool left out of route_tools is not
 * cordon's to run: the client keeps its own), each with the optional
 * execution_target parameter. */
static json_t *build_tools(const struct server *s)
{
    json_error_t jerr;
    json_t *all = json_loads(mcp_tools_json, 0, &jerr);
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach (all, i, t) {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (s->have_cfg && !cfg_routes_tool(&s->cfg, name))
            continue;
        json_t *props = json_object_get(json_object_get(t, "inputSchema"), "properties");
        json_object_set_new(
            props, "execution_target",
            json_pack("{s:s, s:[s,s], s:s}", "type", "string", "enum", "sandbox", "host",
                      "description",
                      "Where to run. Omit it: the sandbox. \"host\" runs this one call outside "
                      "the sandbox, only after the user approves this exact call."));
        json_array_append(out, t);
    }
    json_decref(all);
    /* cordon's own audit of the sandbox (never routed to the host). */
    json_array_append_new(out, verify_tool_definition());
    return out;
}

static json_t *status_json(const struct server *s)
{
    json_t *st = json_pack(
        "{s:s, s:o, s:o, s:o, s:s, s:b, s:i}", "state", route_state_name(s->state), "sandbox",
        s->session ? json_string(session_name(s->session)) : json_null(), "workspace",
        s->have_cfg && s->cfg.workspace ? json_string(s->cfg.workspace) : json_null(), "reason",
        s->blocked[0] ? json_string(s->blocked) : json_null(), "cwd", s->cwd, "interactive",
        client_interactive(s), "skills", (int)s->skills.count);
    if (s->have_cfg) {
        json_t *tools = json_array();
        for (size_t i = 0; i < s->cfg.route_tools.count; i++)
            json_array_append_new(tools, json_string(s->cfg.route_tools.items[i]));
        /* the session's backend: backend = "auto" chose it at launch */
        const struct launch *sl = s->session ? session_launch(s->session) : NULL;
        json_object_set_new(
            st, "backend",
            json_string(cfg_enum_name(CFG_BACKEND, sl ? sl->cfg.backend : s->cfg.backend)));
        if (sl && sl->backend_reason[0])
            json_object_set_new(st, "backendReason", json_string(sl->backend_reason));
        const char *desc = s->session ? session_sandbox_description(s->session) : NULL;
        if (desc) /* the vm backend's accelerator, and a cached KVM failure */
            json_object_set_new(st, "sandboxDescription", json_string(desc));
        json_object_set_new(st, "fallbackMode",
                            json_string(cfg_enum_name(CFG_FALLBACK_MODE, s->cfg.fallback_mode)));
        json_object_set_new(st, "allowHostExecution", json_boolean(s->cfg.allow_host_execution));
        json_object_set_new(st, "routeTools", tools);
        json_object_set_new(st, "workspaceMode",
                            json_string(cfg_enum_name(CFG_WORKSPACE_MODE, s->cfg.workspace_mode)));
        /* Review mode (docs/review.md): how many changes wait for the user. */
        long pending = s->session && s->cfg.workspace_mode == CFG_WORKSPACE_REVIEW
                           ? review_pending(session_name(s->session))
                           : -1;
        if (pending >= 0)
            json_object_set_new(st, "pendingChanges", json_integer(pending));
    }
    /* Where `cordon ls` says the session's tool calls are logged. */
    _cleanup_free_ char *root = NULL;
    struct cordon_error err;
    char log_path[PATH_MAX + STATE_NAME_MAX + 16];
    if (s->session && state_root(&root, &err) == 0) {
        snprintf(log_path, sizeof(log_path), "%s/%s/audit.jsonl", root, session_name(s->session));
        json_object_set_new(st, "log", json_string(log_path));
    }
    return st;
}

static void review_report_json(void *ctx, const char *what, const char *path, const char *why)
{
    json_array_append_new(ctx, json_pack("{s:s, s:s, s:o}", "outcome", what, "path", path, "reason",
                                         why ? json_string(why) : json_null()));
}

/* cordon/reviewChanges and cordon/reviewApply: the user's review, reachable
 * only by the client's own code (custom methods, never a tool: the model
 * cannot apply its own changes). */
static void on_review_diff(struct server *s, json_t *id, char *const *paths, size_t npaths);

static void on_review(struct server *s, json_t *id, json_t *params, bool apply, bool diff)
{
    if (!s->session || !s->have_cfg || s->cfg.workspace_mode != CFG_WORKSPACE_REVIEW) {
        reply_error(s, id, RPC_INVALID_PARAMS,
                    "this session is not in review mode (workspace_mode = \"review\")");
        return;
    }
    json_t *given = params ? json_object_get(params, "paths") : NULL;
    char *paths[64];
    size_t npaths = 0;
    size_t i;
    json_t *v;
    if (given && !json_is_array(given)) {
        reply_error(s, id, RPC_INVALID_PARAMS, "paths must be an array of strings");
        return;
    }
    json_array_foreach (given, i, v) {
        if (!json_is_string(v) || npaths == 64) {
            reply_error(s, id, RPC_INVALID_PARAMS, "paths: at most 64 strings");
            return;
        }
        paths[npaths++] = (char *)json_string_value(v);
    }
    if (diff) {
        on_review_diff(s, id, paths, npaths);
        return;
    }
    struct review r;
    struct cordon_error err = {0};
    if (review_open(session_name(s->session), &r, &err) < 0) {
        reply_error(s, id, RPC_INVALID_PARAMS, "%s", err.message);
        return;
    }
    json_t *out = json_array();
    int rc;
    if (apply) {
        /* The session runs: apply takes exactly the checkpoint the client
         * showed (reviewChanges' "checkpoint"), never what the sandbox
         * wrote since. */
        json_t *at = params ? json_object_get(params, "checkpoint") : NULL;
        r.expect_as_of = json_is_integer(at) ? (long)json_integer_value(at) : -1;
        rc = review_apply(&r, paths, npaths, review_report_json, out, &err);
    } else {
        rc = review_scan(&r, &err);
        for (size_t k = 0; rc == 0 && k < r.count && json_array_size(out) < 10000; k++) {
            const struct review_change *c = &r.changes[k];
            if (!review_selected(c, paths, npaths))
                continue;
            json_array_append_new(out,
                                  json_pack("{s:s, s:s, s:o, s:b, s:o}", "kind",
                                            review_kind_name(c->kind), "path", c->path, "from",
                                            c->from ? json_string(c->from) : json_null(),
                                            "conflict", c->conflict, "refused",
                                            c->refused ? json_string(c->refused) : json_null()));
        }
    }
    long as_of = r.as_of;
    review_close(&r);
    if (rc < 0) {
        json_decref(out);
        reply_error(s, id, RPC_INVALID_PARAMS, "%s", err.message);
        return;
    }
    send_msg(s, rpc_result(json_incref(id), json_pack("{s:o, s:I}", apply ? "results" : "changes",
                                                      out, "checkpoint", (json_int_t)as_of)));
}

static void set_skills(struct server *s, json_t *paths)
{
    const char *given[ROUTE_MAX_SKILLS];
    size_t n = 0;
    size_t i;
    json_t *v;
    json_array_foreach (paths, i, v) {
        if (json_is_string(v) && n < ROUTE_MAX_SKILLS)
            given[n++] = json_string_value(v);
    }
    const char *const *config = NULL;
    size_t nconfig = 0;
    if (s->have_cfg) {
        config = (const char *const *)s->cfg.skills_paths.items;
        nconfig = s->cfg.skills_paths.count;
    }
    route_skills_set(&s->skills, given, n, config, nconfig, s->have_cfg ? s->cfg.workspace : NULL);
}

/* The largest diff cordon/reviewDiff returns (the rest is cut, said so). */
#define REVIEW_DIFF_MAX (1024 * 1024)

/* cordon/reviewDiff {paths?}: the unified diff `cordon diff NAME` prints
 * (no colour), at most REVIEW_DIFF_MAX bytes. */
static void on_review_diff(struct server *s, json_t *id, char *const *paths, size_t npaths)
{
    struct review r;
    struct cordon_error err = {0};
    if (review_open(session_name(s->session), &r, &err) < 0 || review_scan(&r, &err) < 0) {
        review_close(&r);
        reply_error(s, id, RPC_INVALID_PARAMS, "%s", err.message);
        return;
    }
    FILE *tmp = tmpfile();
    int rc = tmp ? review_diff(&r, paths, npaths, false, false, tmp, &err)
                 : error_set(&err, errno, "cannot create a temporary file for the diff");
    long as_of = r.as_of;
    review_close(&r);
    if (!tmp) {
        reply_error(s, id, RPC_INTERNAL_ERROR, "%s", err.message);
        return;
    }
    long size = ftell(tmp);
    size_t want = size > REVIEW_DIFF_MAX ? REVIEW_DIFF_MAX : size > 0 ? (size_t)size : 0;
    char *text = malloc(want + 1);
    size_t got = text && fseek(tmp, 0, SEEK_SET) == 0 ? fread(text, 1, want, tmp) : 0;
    fclose(tmp);
    if (!text) {
        reply_error(s, id, RPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    text[got] = '\0';
    /* diff(1) writes the files' bytes: JSON needs UTF-8, so invalid
     * sequences are escaped (a cut in the middle of one too). */
    _cleanup_free_ char *valid = text_escape_visible(text, got, TEXT_ESCAPE_KEEP_LAYOUT, NULL);
    free(text);
    json_t *res = json_pack("{s:s, s:b, s:I}", "diff", valid ? valid : "", "truncated",
                            size > REVIEW_DIFF_MAX, "bytes", (json_int_t)(size > 0 ? size : 0));
    if (rc < 0)
        json_object_set_new(res, "error", json_string(err.message));
    /* the checkpoint shown, which cordon/reviewApply takes */
    json_object_set_new(res, "checkpoint", json_integer(as_of));
    send_msg(s, rpc_result(json_incref(id), res));
}

/* cordon/reviewRewind {to: N} and cordon/reviewDiscard: they change the
 * upper layer, which the kernel's overlay must not have changed under it, so
 * the sandbox is stopped (its processes end: they are not rewound), the
 * layer rewound or emptied, and the sandbox started again under the same
 * name. Refused while a tool call runs. */
static void on_review_restart(struct server *s, json_t *id, json_t *params, bool rewind)
{
    long to = 0;
    if (rewind) {
        json_t *v = params ? json_object_get(params, "to") : NULL;
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > 1000000000) {
            reply_error(s, id, RPC_INVALID_PARAMS,
                        "cordon/reviewRewind: to must be a checkpoint number (0 or more)");
            return;
        }
        to = (long)json_integer_value(v);
    }
    for (int i = 0; i < MAX_PENDING; i++) {
        if (s->pending[i].used) {
            reply_error(s, id, RPC_INVALID_PARAMS, "a tool call is still running: %s after it ends",
                        rewind ? "rewind" : "discard");
            return;
        }
    }
    char name[128];
    snprintf(name, sizeof(name), "%s", session_name(s->session));
    if (!s->pinned_sets) {
        size_t n = 0;
        while (s->opts->request.session_sets && s->opts->request.session_sets[n])
            n++;
        char **sets = calloc(n + 2, sizeof(char *));
        bool failed = !sets;
        for (size_t i = 0; !failed && i < n; i++)
            failed = !(sets[i] = strdup(s->opts->request.session_sets[i]));
        if (!failed && asprintf(&sets[n], "sandbox_name=\"%s\"", name) < 0) {
            sets[n] = NULL;
            failed = true;
        }
        if (failed) {
            for (size_t i = 0; sets && sets[i]; i++)
                free(sets[i]);
            free(sets);
            reply_error(s, id, RPC_INTERNAL_ERROR, "out of memory");
            return;
        }
        s->pinned = s->opts->request;
        s->pinned.session_sets = (const char *const *)sets;
        s->pinned_sets = sets;
    }
    stop_session(s);
    struct review r;
    struct cordon_error err = {0};
    int rc = review_open(name, &r, &err);
    if (rc == 0)
        rc = rewind ? review_rewind(&r, to, &err) : review_discard(&r, &err);
    review_close(&r);
    enum route_state before = s->state;
    s->state = before == ROUTE_OFF ? ROUTE_OFF : ROUTE_STARTING;
    s->session_tried = false;
    start_session(s);
    if (rc < 0) {
        reply_error(s, id, RPC_INVALID_PARAMS, "%s", err.message);
        return;
    }
    json_t *st = status_json(s);
    json_object_set_new(st, rewind ? "rewoundTo" : "discarded",
                        rewind ? json_integer(to) : json_true());
    json_object_set_new(st, "processesEnded", json_true());
    send_msg(s, rpc_result(json_incref(id), st));
}

/* cordon/setMode: the user's switch, reachable only by the client's own
 * code (a custom method, not a tool: the model cannot call it). */
static void on_set_mode(struct server *s, json_t *id, json_t *params)
{
    const char *mode = json_string_value(json_object_get(params, "mode"));
    if (!mode || (strcmp(mode, "on") != 0 && strcmp(mode, "off") != 0)) {
        reply_error(s, id, RPC_INVALID_PARAMS, "cordon/setMode: mode must be \"on\" or \"off\"");
        return;
    }
    if (strcmp(mode, "off") == 0) {
        if (s->state != ROUTE_OFF)
            log_warn("cordon is off: tools run ON THE HOST until it is switched on");
        s->state = ROUTE_OFF;
    } else if (s->session) {
        s->state = ROUTE_SANDBOXED;
    } else if (!s->have_cfg) {
        s->state = ROUTE_BLOCKED;
    } else {
        /* Back on: (re)start the sandbox; a failure blocks or falls back as
         * at start-up. */
        s->state = ROUTE_STARTING;
        s->session_tried = false;
        start_session(s);
    }
    send_msg(s, rpc_result(json_incref(id), status_json(s)));
}

static void on_initialize(struct server *s, json_t *id, json_t *params)
{
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    const char *version = supported_versions[0];
    for (size_t i = 0; asked && i < ARRAY_SIZE(supported_versions); i++) {
        if (strcmp(asked, supported_versions[i]) == 0)
            version = supported_versions[i];
    }
    json_t *elicitation = json_object_get(json_object_get(params, "capabilities"), "elicitation");
    /* Form mode is the default of an empty capability object. */
    s->client_elicitation =
        json_is_object(elicitation) &&
        (json_object_size(elicitation) == 0 || json_object_get(elicitation, "form") != NULL);
    json_t *result = json_pack(
        "{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", version, "capabilities",
        "tools", "listChanged", 0, "serverInfo", "name", "cordon", "title", "cordon sandbox",
        "version", CORDON_VERSION, "instructions",
        "Tools run inside a sandbox whose only view of the host is this workspace: no network, no "
        "home directory, no host secrets.");
    send_msg(s, rpc_result(json_incref(id), result));
    s->initialized = true;

    struct workspace ws = {0};
    struct cordon_error err = {0};
    if (workspace_detect(NULL, &ws, &err) < 0 ||
        launch_resolve_config(ws.root, s->opts->request.session_sets, &s->cfg, &err) < 0) {
        snprintf(s->blocked, sizeof(s->blocked), "%s", err.message);
        s->state = ROUTE_BLOCKED;
        log_error("tools blocked: %s", err.message);
    } else {
        s->have_cfg = true;
    }
    workspace_free(&ws);
    json_decref(s->tools);
    s->tools = build_tools(s);
    set_skills(s, NULL);
    if (s->opts->start_off) {
        log_warn("cordon mcp --off: tools run ON THE HOST until it is switched on");
        s->state = ROUTE_OFF;
        return;
    }
    if (s->have_cfg && !s->opts->lazy_start)
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
    } else if (strcmp(method, "cordon/status") == 0) {
        send_msg(s, rpc_result(json_incref(id), status_json(s)));
    } else if (strcmp(method, "cordon/reviewChanges") == 0) {
        on_review(s, id, params, false, false);
    } else if (strcmp(method, "cordon/reviewApply") == 0) {
        on_review(s, id, params, true, false);
    } else if (strcmp(method, "cordon/reviewDiff") == 0) {
        on_review(s, id, params, false, true);
    } else if (strcmp(method, "cordon/reviewRewind") == 0 ||
               strcmp(method, "cordon/reviewDiscard") == 0) {
        if (!s->session || !s->have_cfg || s->cfg.workspace_mode != CFG_WORKSPACE_REVIEW)
            reply_error(s, id, RPC_INVALID_PARAMS,
                        "this session is not in review mode (workspace_mode = \"review\")");
        else
            on_review_restart(s, id, params, strcmp(method, "cordon/reviewRewind") == 0);
    } else if (strcmp(method, "cordon/setMode") == 0) {
        on_set_mode(s, id, params);
    } else if (strcmp(method, "cordon/setSkills") == 0) {
        json_t *paths = params ? json_object_get(params, "paths") : NULL;
        if (!json_is_array(paths)) {
            reply_error(s, id, RPC_INVALID_PARAMS, "cordon/setSkills: paths must be an array");
            return;
        }
        set_skills(s, paths);
        send_msg(s,
                 rpc_result(json_incref(id), json_pack("{s:i}", "skills", (int)s->skills.count)));
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
        if (p->where == AT_ASKING || p->where == AT_NETWORK_ASKING) {
            pending_release(s, p); /* the approval dies with it */
            return;
        }
        p->cancelled = true;
        struct cordon_error err;
        struct session *target = p->where == AT_HOST ? s->host : s->session;
        if (target)
            session_send_cancel(target, p->call_id, &err);
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
    } else if (id_ok && s->initialized) {
        /* An error answer counts as a refusal. */
        json_t *result = json_object_get(msg, "result");
        on_response(s, id, json_is_object(result) ? result : NULL);
    }
    /* Responses from the client to requests we never sent are dropped. */
    json_decref(msg);
}

/* Queues the progress held for a slow client once its queue has room. */
static void release_held_progress(struct server *s)
{
    for (size_t i = 0; i < MAX_PENDING; i++) {
        if (out_queue_pending(&s->out) >= MCP_PROGRESS_QUEUED_MAX)
            return;
        struct pending *p = &s->pending[i];
        if (p->used && p->held_progress) {
            json_t *note = p->held_progress;
            p->held_progress = NULL;
            send_msg(s, note);
        }
    }
}

static void loop(struct server *s)
{
    while (!s->stopping) {
        release_held_progress(s);
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
            case TAG_HOST_CHANNEL:
                if (!s->host)
                    break;
                if (((events[i].events & EPOLLOUT) && session_on_writable(s->host, &err) < 0) ||
                    session_on_readable(s->host, on_session_event, s, &err) < 0) {
                    stop_host(s);
                    fail_pending(s, AT_HOST, "host execution", err.message);
                    break;
                }
                epoll_set(s, session_channel_fd(s->host), TAG_HOST_CHANNEL,
                          EPOLLIN | (session_wants_write(s->host) ? EPOLLOUT : 0), EPOLL_CTL_MOD);
                break;
            case TAG_CONTROL:
                if (s->control)
                    control_dispatch(s->control, on_control_request, s);
                break;
            case TAG_HOST:
                stop_host(s);
                fail_pending(s, AT_HOST, "host execution", "the host agent exited unexpectedly");
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

/* Flushes what is queued for the client and frees everything the server
 * owns except its fds. */
static void server_free_state(struct server *s)
{
    out_queue_flush(&s->out, 1);
    for (int i = 0; i < MAX_PENDING; i++) {
        if (s->pending[i].used)
            pending_release(s, &s->pending[i]);
    }
    line_reader_free(&s->in);
    out_queue_free(&s->out);
    json_decref(s->tools);
    route_approvals_free(&s->approvals);
    route_skills_free(&s->skills);
    cfg_free(&s->cfg);
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
    server_free_state(s);
    free(s);
    return 0;
}

int mcp_serve(const struct mcp_options *o)
{
    struct server *s = calloc(1, sizeof(*s));
    if (!s)
        return CORDON_EXIT_FAILURE;
    s->opts = o;
    s->state = ROUTE_STARTING;
    if (!getcwd(s->cwd, sizeof(s->cwd)))
        snprintf(s->cwd, sizeof(s->cwd), "/");
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
    stop_host(s);
    for (size_t i = 0; s->pinned_sets && s->pinned_sets[i]; i++)
        free(s->pinned_sets[i]);
    free(s->pinned_sets);
    fcntl(1, F_SETFL, fcntl(1, F_GETFL) & ~O_NONBLOCK);
    server_free_state(s);
    close(s->epfd);
    close(s->sigfd);
    free(s);
    return 0;
}
