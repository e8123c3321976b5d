/* The MCP server's sessions (server.c): starting and stopping the sandbox
 * and the host agent, blocking the tools when the sandbox cannot run, and
 * the events of both (results, progress, verify, a refused destination the
 * user is asked about). Host context, unprivileged. */
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

/* fallback_mode = "host" counts only from the user's own layers; the
 * configuration refuses it from the workspace file already, and this is
 * the second lock on that door. */
static bool host_fallback_allowed(const struct server *s)
{
    return s->have_cfg && s->cfg.fallback_mode == CFG_FALLBACK_HOST &&
           s->cfg.origin[CFG_FALLBACK_MODE].layer != CFG_LAYER_WORKSPACE;
}

/* The sandbox failed (at start or later). */
void block_tools(struct server *s, const char *reason)
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

void stop_session(struct server *s)
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
    if (session_net_fd(s->session) >= 0)
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, session_net_fd(s->session), NULL);
    session_stop(s->session);
    s->session = NULL;
}

void start_session(struct server *s)
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
    if (session_net_fd(s->session) >= 0)
        epoll_set(s, session_net_fd(s->session), TAG_NET, EPOLLIN | EPOLLONESHOT, EPOLL_CTL_ADD);
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

void stop_host(struct server *s)
{
    if (!s->host)
        return;
    epoll_ctl(s->epfd, EPOLL_CTL_DEL, session_channel_fd(s->host), NULL);
    if (session_pidfd(s->host) >= 0)
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, session_pidfd(s->host), NULL);
    session_stop(s->host);
    s->host = NULL;
}

int start_host(struct server *s, struct cordon_error *err)
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
void answer_network(struct server *s, struct pending *p, json_t *result)
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

void on_session_event(void *ctx, const struct session_event *ev)
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
