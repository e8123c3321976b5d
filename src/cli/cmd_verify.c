/* `cordon verify [--json] [OPTIONS] [NAME]`: audits a sandbox and prints one
 * row per check (supervisor/verify.c). Host context. Exit 0 only when no
 * check FAILs. */
#include "cli/commands.h"
#include "cli/options.h"
#include "supervisor/verify.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out,
            "usage: cordon verify [--json] [OPTIONS] [NAME]\n\n"
            "Starts a fresh sandbox of the current workspace (with the given\n"
            "configuration flags) and audits it from inside and outside: environment\n"
            "scrubbing, host files, Docker sockets, published ports, seccomp,\n"
            "no_new_privs, capabilities, namespaces, processes, network egress,\n"
            "protected paths, the workspace, the policy directory, Landlock.\n"
            "Prints PASS/FAIL/WARN/SKIP and the evidence for each check; --json prints\n"
            "the report as JSON. Exits 0 only when no check fails; on a failure, treat\n"
            "the sandbox as compromised and remove it.\n"
            "NAME (a running session) needs session lifecycle, not in this build.\n\n%s",
            cli_config_flags_help);
}

int cmd_verify(int argc, char **argv)
{
    struct cli_sets sets = {0};
    bool json = false;
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        int flag = cli_config_flag(argc, argv, &i, &sets);
        if (flag < 0) {
            cli_sets_free(&sets);
            return CORDON_EXIT_FAILURE;
        }
        if (flag > 0)
            continue;
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            cli_sets_free(&sets);
            return 0;
        } else if (argv[i][0] != '-' && !name) {
            name = argv[i];
        } else {
            fprintf(stderr, "cordon: verify: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            cli_sets_free(&sets);
            return CORDON_EXIT_FAILURE;
        }
    }
    if (name) {
        log_error("verify: attaching to the running session \"%s\" needs session lifecycle, "
                  "which this build does not have; run `cordon verify` without a name to audit "
                  "a fresh sandbox",
                  name);
        cli_sets_free(&sets);
        return CORDON_EXIT_FAILURE;
    }
    if (cli_sets_finish(&sets) < 0) {
        cli_sets_free(&sets);
        return CORDON_EXIT_FAILURE;
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
    if (json) {
        _cleanup_free_ char *text = json_dumps(report, JSON_INDENT(2));
        printf("%s\n", text ? text : "{}");
    } else {
        _cleanup_free_ char *text = verify_report_text(report);
        fputs(text ? text : "", stdout);
    }
    json_decref(report);
    return failed ? 1 : 0;
}
