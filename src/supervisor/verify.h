/* `cordon verify` and the MCP tool sandbox_verify: an audit of a live
 * sandbox. Host context, unprivileged supervisor. Needs only a session
 * handle: the host-side facts come from the session's agent process
 * (/proc/<pid> seen from the host) and its launch; the in-sandbox facts from
 * `cordon-agent probe`, run through the session's bash tool. The probe's
 * answers come from inside the sandbox and are therefore only as honest as
 * the sandbox; the checks that matter most (seccomp, no_new_privs,
 * capabilities, namespaces, egress) also use evidence the sandbox cannot
 * forge: the agent's /proc status read from the host and a host listener
 * that must accept nothing. */
#pragma once

#include "supervisor/session.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

/* Names injected into the supervisor's environment before a fresh sandbox
 * is built (and into the scrubber's input in every case): all must be
 * absent inside. */
#define VERIFY_SENTINEL_VALUE "cordon-verify-sentinel"
/* Not allowlisted, not protected: present inside only in passthrough mode. */
#define VERIFY_PROBE_VAR "ZZ_CORDON_VERIFY_PROBE"

struct verify_run;

/* Sets the sentinels and the probe variable in this process's environment:
 * call before session_start() so that the sandbox is built from an
 * environment that contains them. */
void verify_inject_sentinels(void);

/* What an audit needs of a live sandbox, whoever supervises it. */
struct verify_target {
    const char *name;
    const struct launch *l; /* borrowed for the audit's lifetime */
    /* The process whose /proc the host reads (status, namespaces,
     * environment), or -1: given later with verify_set_agent(). */
    int agent_pidfd;
    const char *state_dir; /* NULL: no lock to check (host session) */
    const char *pid1_comm; /* the comm of the sandbox's PID 1 */
    /* How the probe is started, for the evidence (NULL: through the bash
     * tool). */
    const char *probe_via;
};

/* Phase 1 of any target: the host-side facts and listeners;
 * *probe_request is the JSON the probe reads on stdin (caller frees). */
int verify_prepare_target(const struct verify_target *t, struct verify_run **out,
                          char **probe_request, struct cordon_error *err);
/* The host's facts of the process behind pidfd (see agent_pidfd; -1: none
 * could be had, the rows that need them FAIL). */
void verify_set_agent(struct verify_run *r, int pidfd);
/* Phase 2 of any target: the probe's output (its stdout and stderr; NULL
 * or probe_error when it did not run to the end) judged against the host's
 * facts. Returns the report (as verify_finish). */
json_t *verify_finish_output(struct verify_run *r, const char *output, const char *probe_error);
/* Phase 2 of a probe run by a sandbox's init (`cordon shell`/`cordon run`,
 * ns and vm backends): its output ("" when none) and how it ended: "exit
 * N", "signal N", "timeout" or "error: ..." (agent/init.h). */
json_t *verify_finish_init_probe(struct verify_run *r, const char *output, const char *end);

/* Phase 1 of an MCP session: verify_prepare_target() with the session's
 * agent; *bash_args is the bash tool call that runs the probe (caller owns
 * it). */
int verify_prepare(struct session *s, struct verify_run **out, json_t **bash_args,
                   struct cordon_error *err);
/* Phase 2: the bash tool's result (or call_error when the call failed)
 * judged against the host's facts. Returns the report (caller owns):
 * {"sandbox", "result": "PASS"|"FAIL", "failed", "warnings", "checks":
 * [{"check", "status": "PASS"|"FAIL"|"WARN"|"SKIP", "evidence"}], "advice"}. */
json_t *verify_finish(struct verify_run *r, const struct tool_result *probe,
                      const char *call_error);
void verify_free(struct verify_run *r);

/* Both phases with a blocking call (the CLI). */
int verify_session(struct session *s, json_t **report, struct cordon_error *err);

/* `cordon verify NAME`: the report came from the session's supervisor over
 * its control socket; the client's own view of the ownership joins the
 * ownership row (held, the record's pid, the socket peer's pid), which
 * FAILs unless they agree. */
void verify_report_add_ownership(json_t *report, const char *name, bool held, pid_t record_pid,
                                 pid_t peer_pid);

/* One row per check, then the verdict and what to do. Caller frees. */
char *verify_report_text(const json_t *report);
int verify_report_failed(const json_t *report);

/* The MCP tool definition of sandbox_verify (caller owns). */
json_t *verify_tool_definition(void);
