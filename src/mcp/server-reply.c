/* The MCP server's replies (server.c): JSON-RPC results and errors to the
 * client, tool results with their route, and the table of calls in flight.
 * Host context, unprivileged. */
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

void send_msg(struct server *s, json_t *msg)
{
    out_queue_msg(&s->out, msg);
    if (out_queue_flush(&s->out, 1) < 0)
        s->stopping = true;
}

void reply_error(struct server *s, json_t *id, int code, const char *fmt, ...)
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
json_t *tool_result_json(const struct server *s, const struct tool_result *res, const char *route,
                         enum route_state state)
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

void reply_tool_error(struct server *s, json_t *id, const char *route, const char *fmt, ...)
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

struct pending *pending_by_call(struct server *s, json_int_t call_id)
{
    for (int i = 0; i < MAX_PENDING; i++) {
        if (s->pending[i].used && s->pending[i].call_id == call_id)
            return &s->pending[i];
    }
    return NULL;
}

struct pending *pending_by_request(struct server *s, json_t *request_id)
{
    for (int i = 0; i < MAX_PENDING; i++) {
        if (s->pending[i].used && json_equal(s->pending[i].request_id, request_id))
            return &s->pending[i];
    }
    return NULL;
}

void pending_release(struct server *s, struct pending *p)
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

const char *where_route(enum pending_where where)
{
    return where == AT_SANDBOX ? "sandbox" : "host";
}

void epoll_set(struct server *s, int fd, int tag, uint32_t events, int op)
{
    struct epoll_event ev = {.events = events, .data.u64 = (uint64_t)tag};
    epoll_ctl(s->epfd, op, fd, &ev);
}

/* Every call in flight at that place ends with the reason; none ran to
 * completion. */
void fail_pending(struct server *s, enum pending_where where, const char *what, const char *reason)
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
