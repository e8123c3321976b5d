/* The MCP server's tool calls (server.c): tools/call checked and routed
 * (sandbox, host with exact approval, the skill read exception), the
 * approval elicitation and its answer, and sandbox_verify from the client
 * or the control socket. Host context, unprivileged; the client is
 * untrusted input. */
#include "mcp/server-internal.h"
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
void dispatch(struct server *s, struct pending *p, enum pending_where where, json_t *args)
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

bool client_interactive(const struct server *s)
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
void on_response(struct server *s, json_t *id, json_t *result)
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

void on_control_request(void *ctx, uint64_t conn, const char *op)
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

void on_tools_call(struct server *s, json_t *id, json_t *params)
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
