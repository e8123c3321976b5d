/* `cordon verify [--json] [OPTIONS] [NAME]`: audits a sandbox and prints one
 * row per check (supervisor/verify.c): a fresh one, or with NAME the live
 * sandbox of a running session, audited by the supervisor that owns it and
 * asked over its control socket (supervisor/control.h). Host context.
 * Exit 0 only when no check FAILs. */
#include "cli/commands.h"
#include "cli/options.h"
#include "supervisor/control.h"
#include "supervisor/state.h"
#include "supervisor/verify.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The probe itself may take 60 s (its bash timeout); the host side less. */
#define VERIFY_RUNNING_TIMEOUT_MS 120000
/* `cordon verify NAME` of a session that exists but is not running. */
#define VERIFY_EXIT_NOT_RUNNING 2

static void usage(FILE *out, void *ctx)
{
    (void)ctx;
    fprintf(out,
            "usage: cordon verify [--json] [OPTIONS] [NAME]\n\n"
            "Starts a fresh sandbox of the current workspace (with the given\n"
            "configuration flags) and audits it from inside and outside: environment\n"
            "scrubbing, host files, Docker sockets, published ports, seccomp,\n"
            "no_new_privs, capabilities, namespaces, processes, network egress,\n"
            "protected paths, the workspace, the policy directory, Landlock.\n"
            "Prints PASS/FAIL/WARN/SKIP and the evidence for each check; --json prints\n"
            "the report as JSON. Exits 0 only when no check fails; on a failure, treat\n"
            "the sandbox as compromised and remove it.\n\n"
            "With NAME, audits that running session's own sandbox instead, through the\n"
            "supervisor that owns it (`cordon mcp`, `cordon shell`, `cordon run`);\n"
            "configuration flags do not apply.\n"
            "Exit status: 0 nothing failed, 1 a check failed, 2 the session is not\n"
            "running (nothing audited), 125 no such session or it cannot be reached.\n\n%s",
            cli_config_flags_help);
}

static void print_report(const json_t *report, bool json)
{
    if (json) {
        _cleanup_free_ char *text = json_dumps(report, JSON_INDENT(2));
        printf("%s\n", text ? text : "{}");
    } else {
        _cleanup_free_ char *text = verify_report_text(report);
        fputs(text ? text : "", stdout);
    }
}

/* `cordon verify NAME`: the session's supervisor runs the audit against its
 * live sandbox (exactly sandbox_verify) and sends the report; this process
 * adds what it sees of the ownership. */
static int verify_running(const char *name, bool json)
{
    struct cordon_error err = {0};
    struct state_entry e;
    if (state_get(name, &e, &err) < 0) {
        log_error("verify: %s", err.message);
        return CORDON_EXIT_FAILURE;
    }
    if (!e.locked) {
        log_error("verify: sandbox %s is not running (%s): there is no live sandbox to audit. "
                  "`cordon shell %s` starts it (or `cordon mcp --attach %s`); `cordon verify` "
                  "without a name audits a fresh sandbox",
                  name, e.status, name, name);
        return VERIFY_EXIT_NOT_RUNNING;
    }
    pid_t peer = -1;
    _cleanup_close_ int fd = control_connect(name, &peer, &err);
    if (fd < 0) {
        if (err.errnum == ENOENT || err.errnum == ECONNREFUSED)
            log_error("verify: sandbox %s is running (owned by pid %d), but its supervisor does "
                      "not answer on a control socket (%s): it may still be starting; `cordon "
                      "verify` without a name audits a fresh sandbox",
                      name, (int)e.owner_pid, err.message);
        else
            log_error("verify: %s", err.message);
        return CORDON_EXIT_FAILURE;
    }
    json_t *answer = NULL;
    if (control_request(fd, "verify", VERIFY_RUNNING_TIMEOUT_MS, &answer, &err) < 0) {
        log_error("verify: sandbox %s: %s", name, err.message);
        return CORDON_EXIT_FAILURE;
    }
    json_t *report = json_object_get(answer, "report");
    if (!json_is_object(report) || !json_is_array(json_object_get(report, "checks"))) {
        log_error("verify: sandbox %s: the supervisor's answer holds no report", name);
        json_decref(answer);
        return CORDON_EXIT_FAILURE;
    }
    /* Read again now: the lock must still be held by the process that
     * answered. */
    struct state_entry now;
    bool held = state_get(name, &now, &err) == 0 && now.locked;
    verify_report_add_ownership(report, name, held, held ? now.owner_pid : e.owner_pid, peer);
    print_report(report, json);
    int failed = verify_report_failed(report);
    json_decref(answer);
    return failed ? 1 : 0;
}

struct verify_options {
    bool json;
};

const struct cli_option cli_verify_options[] = {
    CLI_FLAG("--json", "the report as JSON", struct verify_options, json),
    {0},
};

int cmd_verify(int argc, char **argv)
{
    struct cli_sets sets = {0};
    struct verify_options opts = {0};
    const char *name = NULL;
    const struct cli_parser parser = {.command = "verify",
                                      .usage = usage,
                                      .ctx = &opts,
                                      .options = cli_verify_options,
                                      .sets = &sets,
                                      .operand = &name};
    int parsed = cli_parse(&parser, argc, argv, NULL);
    if (parsed != CLI_PARSE_OK)
        return cli_parse_status(parsed);
    bool json = opts.json;
    if (name) {
        /* The running sandbox was built by its own configuration. */
        bool flags = sets.count || sets.allow_hosts || sets.publish || sets.net_audit_log ||
                     sets.net_hosts_file;
        cli_sets_free(&sets);
        if (flags) {
            log_error("verify: configuration flags do not apply to a running session (%s)", name);
            return CORDON_EXIT_FAILURE;
        }
        return verify_running(name, json);
    }
    /* The sandbox is built from an environment holding the sentinels, so
     * the check covers the whole path from the host's environment inward. */
    verify_inject_sentinels();
    struct launch_request req = {(const char *const *)sets.items, sets.net_audit_log,
                                 sets.net_hosts_file, NULL};
    struct cordon_error err = {0};
    struct session *s;
    int rc = session_start(&req, &s, &err);
    cli_sets_free(&sets);
    if (rc < 0) {
        log_error("verify: %s", err.message);
        return CORDON_EXIT_FAILURE;
    }
    json_t *report = NULL;
    rc = verify_session(s, &report, &err);
    session_stop(s);
    if (rc < 0) {
        log_error("verify: %s", err.message);
        return CORDON_EXIT_FAILURE;
    }
    int failed = verify_report_failed(report);
    print_report(report, json);
    json_decref(report);
    return failed ? 1 : 0;
}
