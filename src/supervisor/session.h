/* A sandbox session as the supervisor sees it: one sandbox running
 * cordon-agent serve, many tool calls over the agent protocol, then stop.
 * Non-blocking, for an event loop (cordon mcp), plus a blocking call for the
 * CLI. Host context. */
#pragma once

#include "agent/tools/tool.h"
#include "supervisor/launch.h"

#include <jansson.h>
#include <stdbool.h>

struct session;

enum session_event_kind { SESSION_UPDATE, SESSION_RESULT, SESSION_CALL_ERROR };

struct session_event {
    enum session_event_kind kind;
    json_int_t id;
    /* UPDATE/RESULT: content, details (may be NULL), is_error; borrowed. */
    const struct tool_result *result;
    const char *message; /* CALL_ERROR */
    int exit_code;       /* RESULT of bash: the command's status; else -1 */
};

typedef void (*session_event_fn)(void *ctx, const struct session_event *ev);

/* Starts the sandbox and waits for the agent's hello. */
int session_start(const struct launch_request *req, struct session **out, struct cordon_error *err);

/* The same agent protocol served by cordon-agent on the host, without any
 * sandbox: the user's cwd and environment (host execution, off, host
 * fallback). session_pidfd may be -1 on kernels without pidfd_open. */
int session_start_host(struct session **out, struct cordon_error *err);

int session_channel_fd(const struct session *s);
int session_pidfd(const struct session *s);
/* A pidfd of the agent as the host sees it (borrowed), for `cordon verify`:
 * the session's pidfd, except on docker, where that is the docker CLI and
 * this is the container's PID 1 (asked of the daemon). -1 when unknown. */
int session_agent_pidfd(struct session *s);
const char *session_name(const struct session *s);
/* Review mode: the checkpoint the last tool call ended with (0: none). */
long session_checkpoint(const struct session *s);
const struct launch *session_launch(const struct session *s);
/* The vm or docker backend's description of its sandbox ("vm (tcg, 1 vCPU,
 * ...)"), or NULL on ns. */
const char *session_sandbox_description(const struct session *s);

int session_send_call(struct session *s, json_int_t id, const char *tool, json_t *args,
                      struct cordon_error *err);
/* An approved host call: the frame carries the supervisor's pin of what
 * the user approved (agent/tools/pin.h; pin borrowed). */
int session_send_call_pinned(struct session *s, json_int_t id, const char *tool, json_t *args,
                             json_t *pin, struct cordon_error *err);
int session_send_cancel(struct session *s, json_int_t id, struct cordon_error *err);
bool session_wants_write(const struct session *s);
/* The deferred refusing proxy's listener (net_session_pending_fd), or -1:
 * a loop that waits on the channel polls it too, for POLLIN, and then
 * calls session_net_ready. */
int session_net_fd(const struct session *s);
void session_net_ready(struct session *s);
int session_on_writable(struct session *s, struct cordon_error *err);
/* Reads frames and reports them; < 0 when the channel failed or closed. */
int session_on_readable(struct session *s, session_event_fn fn, void *ctx,
                        struct cordon_error *err);

/* One call, waiting for its result (updates are dropped). */
int session_call_sync(struct session *s, const char *tool, json_t *args, struct tool_result *res,
                      struct cordon_error *err);

/* The session's state directory (its lock and audit log), or NULL. */
const char *session_state_dir(const struct session *s);
/* The same directory as an O_PATH fd (borrowed), or -1. */
int session_state_dir_fd(const struct session *s);

/* One line in the session's audit log (exit_code < 0: none). */
void session_audit(struct session *s, const char *tool, const char *target, const char *outcome,
                   double duration_ms, int exit_code);
/* The same with the call's arguments (bounded: state_audit_call). */
void session_audit_call(struct session *s, const char *tool, json_t *args, const char *target,
                        const char *outcome, double duration_ms, int exit_code);

struct net_denial;
/* The first network refusal reported with the result just delivered (the
 * session's event callback may ask, once): true and *out filled. */
bool session_last_denial(struct session *s, struct net_denial *out);
/* The user allowed PATTERN (allow_hosts syntax) for the rest of the
 * session: only the supervisor can ask this of the proxy. */
int session_allow_host(struct session *s, const char *pattern, struct cordon_error *err);

/* Asks the agent to leave, waits briefly, then kills; releases everything. */
void session_stop(struct session *s);
