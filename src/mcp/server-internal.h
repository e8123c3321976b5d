/* What the files of the MCP server share (server.c: the JSON-RPC
 * requests and the loop; server-reply.c: replies and the calls in flight;
 * server-session.c: the sandbox's and the host agent's sessions and their
 * events; server-tools.c: tools/call routing, approval and verify;
 * server-review.c: the cordon/review* requests). Internal to src/mcp/.
 * Host context, unprivileged. */
#pragma once

#include "mcp/server.h"
#include "mcp/jsonrpc.h"
#include "config/config.h"
#include "agent/tools/registry.h"
#include "supervisor/control.h"
#include "supervisor/launch.h"
#include "supervisor/route.h"
#include "supervisor/session.h"
#include "supervisor/verify.h"
#include "net/denial.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#define MAX_PENDING 256

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
    TAG_CONTROL,
    TAG_NET /* the deferred refusing proxy's listener (session_net_fd) */
};

void send_msg(struct server *s, json_t *msg);
void reply_error(struct server *s, json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
json_t *tool_result_json(const struct server *s, const struct tool_result *res, const char *route,
                         enum route_state state);
void reply_tool_error(struct server *s, json_t *id, const char *route, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
struct pending *pending_by_call(struct server *s, json_int_t call_id);
struct pending *pending_by_request(struct server *s, json_t *request_id);
void pending_release(struct server *s, struct pending *p);
const char *where_route(enum pending_where where);
void epoll_set(struct server *s, int fd, int tag, uint32_t events, int op);
void fail_pending(struct server *s, enum pending_where where, const char *what, const char *reason);
void block_tools(struct server *s, const char *reason);
void stop_session(struct server *s);
void start_session(struct server *s);
void stop_host(struct server *s);
int start_host(struct server *s, struct cordon_error *err);
void answer_network(struct server *s, struct pending *p, json_t *result);
void on_session_event(void *ctx, const struct session_event *ev);
void dispatch(struct server *s, struct pending *p, enum pending_where where, json_t *args);
bool client_interactive(const struct server *s);
void on_response(struct server *s, json_t *id, json_t *result);
void on_control_request(void *ctx, uint64_t conn, const char *op);
void on_tools_call(struct server *s, json_t *id, json_t *params);
json_t *status_json(const struct server *s);
void on_review(struct server *s, json_t *id, json_t *params, bool apply, bool diff);
void on_review_restart(struct server *s, json_t *id, json_t *params, bool rewind);
