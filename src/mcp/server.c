/* The MCP server: JSON-RPC dispatch, the session's sandbox, routing (sandbox,
 * host with exact approval, off, host fallback, blocked, the skill read
 * exception), tool calls in flight, progress and cancellation. Host context,
 * unprivileged, one epoll loop over stdin, stdout, the sandbox's and the host
 * agent's channels and pidfds, and a signalfd. The client is untrusted
 * input: every message is checked for shape before use, and nothing runs
 * before initialize. docs/routing.md describes the behaviour. This file
 * holds the JSON-RPC requests, initialize and the loop; server-internal.h
 * names the siblings that hold the rest. */
#include "mcp/server.h"
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

static const char *const supported_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

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

json_t *status_json(const struct server *s)
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
            case TAG_NET:
                /* One shot (server-session.c), and out of the set before the
                 * proxy takes the listener (it keeps it open). */
                if (s->session && session_net_fd(s->session) >= 0) {
                    epoll_ctl(s->epfd, EPOLL_CTL_DEL, session_net_fd(s->session), NULL);
                    session_net_ready(s->session);
                }
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
