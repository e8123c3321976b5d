/* `cordon doctor [--json] [OPTIONS]`: what this host allows each backend
 * (backend/probe.h), one PASS/WARN/FAIL row per check with its evidence and
 * the fix, then one line per backend and what backend = "auto" would pick.
 * Exit 0 when the configured backend works here. Host context,
 * unprivileged; starts no sandbox (docs/doctor.md). */
#include "backend/backend.h"
#include "backend/probe.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "supervisor/launch.h"
#include "supervisor/workspace.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DOCTOR_EXIT_NOT_WORKING 1

static void usage(FILE *out, void *ctx)
{
    (void)ctx;
    fprintf(out,
            "usage: cordon doctor [--json] [OPTIONS]\n\n"
            "Checks what this host allows each backend, without starting a sandbox:\n"
            "unprivileged user namespaces (user.max_user_namespaces,\n"
            "kernel.unprivileged_userns_clone, AppArmor's\n"
            "kernel.apparmor_restrict_unprivileged_userns), the mount API and overlayfs\n"
            "in a user namespace, seccomp, Landlock, cgroups, /dev/net/tun and pasta,\n"
            "KVM (as the vm backend decides it), QEMU and the guest kernel, the Docker\n"
            "daemon (the docker backend's checks), and whether cordon runs inside a\n"
            "container. Prints PASS/WARN/FAIL, the evidence and the fix for each, then\n"
            "one line per backend and what backend = \"auto\" picks here; --json prints\n"
            "the same as JSON.\n"
            "Exit status: 0 the configured backend works here, 1 it does not, 125 the\n"
            "configuration could not be read.\n\n%s",
            cli_config_flags_help);
}

struct backend_result {
    const char *name;
    struct probe_verdict verdict;
};

static json_t *report_json(const struct probe_report *r, const struct backend_result *b, size_t nb,
                           const char *configured, bool auto_ok, const char *auto_name,
                           const char *auto_why, bool ok)
{
    json_t *checks = json_array();
    for (size_t i = 0; i < r->count; i++) {
        const struct probe_row *row = &r->rows[i];
        json_array_append_new(checks, json_pack("{s:s, s:s, s:s, s:s}", "id", row->id, "status",
                                                probe_status_name(row->status), "evidence",
                                                row->evidence, "fix", row->fix));
    }
    json_t *backends = json_array();
    for (size_t i = 0; i < nb; i++) {
        const struct probe_verdict *v = &b[i].verdict;
        json_t *o = json_pack("{s:s, s:b, s:s, s:s}", "name", b[i].name, "works", v->works,
                              "strength", v->strength, "why", v->why);
        if (v->detail[0])
            json_object_set_new(o, "accelerator", json_string(v->detail));
        json_array_append_new(backends, o);
    }
    return json_pack("{s:s, s:b, s:o, s:o, s:{s:b, s:s?, s:s}}", "configured_backend", configured,
                     "ok", ok, "checks", checks, "backends", backends, "auto", "works", auto_ok,
                     "backend", auto_name, "why", auto_why);
}

static void print_text(const struct probe_report *r, const struct backend_result *b, size_t nb,
                       const char *configured, bool auto_ok, const char *auto_why)
{
    printf("cordon doctor: what this host allows (configured backend: %s)\n\n", configured);
    for (size_t i = 0; i < r->count; i++) {
        const struct probe_row *row = &r->rows[i];
        printf("%-4s  %-13s %s\n", probe_status_name(row->status), row->id, row->evidence);
        if (row->fix[0])
            printf("      %-13s fix: %s\n", "", row->fix);
    }
    printf("\nbackends:\n");
    for (size_t i = 0; i < nb; i++) {
        const struct probe_verdict *v = &b[i].verdict;
        char name[32];
        snprintf(name, sizeof(name), "%s%s%s%s", b[i].name, v->detail[0] ? " (" : "", v->detail,
                 v->detail[0] ? ")" : "");
        printf("  %-12s %s: %s\n", name, v->works ? "works here" : "does not work here", v->why);
    }
    printf("  %-12s %s: %s\n", "auto", auto_ok ? "works here" : "does not work here", auto_why);
}

struct doctor_options {
    bool json;
};

const struct cli_option cli_doctor_options[] = {
    CLI_FLAG("--json", "the report as JSON", struct doctor_options, json),
    {0},
};

int cmd_doctor(int argc, char **argv)
{
    struct cli_sets sets = {0};
    struct doctor_options opts = {0};
    const struct cli_parser parser = {.command = "doctor",
                                      .usage = usage,
                                      .ctx = &opts,
                                      .options = cli_doctor_options,
                                      .sets = &sets};
    int parsed = cli_parse(&parser, argc, argv, NULL);
    if (parsed != CLI_PARSE_OK)
        return cli_parse_status(parsed);
    bool json = opts.json;
    struct cordon_error err = {0};
    struct workspace ws = {0};
    struct cordon_config cfg = {0};
    static struct probe_report report; /* large: not on the stack */
    report.count = 0;
    if (workspace_detect(NULL, &ws, &err) < 0) {
        probe_add(&report, "workspace", PROBE_WARN, "run cordon doctor in the project directory",
                  "%s: the checks below use the user's and the host's configuration only",
                  err.message);
        /* a workspace that does not exist: no workspace file, no project
         * policy, nothing of / taken for one */
        ws.root = strdup("/nonexistent/cordon-doctor-no-workspace");
    }
    int rc = launch_resolve_config(ws.root, (const char *const *)sets.items, &cfg, &err);
    cli_sets_free(&sets);
    workspace_free(&ws);
    if (rc < 0) {
        log_error("doctor: %s", err.message);
        return CORDON_EXIT_FAILURE;
    }
    const char *configured = cfg_enum_name(CFG_BACKEND, cfg.backend);

    probe_container(&report);
    struct backend_result results[8] = {0};
    size_t nresults = backend_probe_count();
    if (nresults > ARRAY_SIZE(results))
        nresults = ARRAY_SIZE(results);
    for (size_t i = 0; i < nresults; i++) {
        results[i].name = backend_probe_name(i);
        size_t first = report.count;
        backend_probe_lookup(results[i].name)(&cfg, &report, &results[i].verdict);
        /* A backend that will not run here is not this configuration's
         * failure: its missing parts are warnings. */
        bool used = (size_t)cfg.backend == i ||
                    (cfg.backend == CFG_BACKEND_AUTO && probe_auto_considers((int)i, &cfg));
        for (size_t r = first; !used && r < report.count; r++)
            if (report.rows[r].status == PROBE_FAIL)
                report.rows[r].status = PROBE_WARN;
    }
    int chosen = -1;
    char auto_why[1024];
    bool auto_ok = probe_choose_backend(&cfg, &chosen, auto_why, sizeof(auto_why)) == 0;
    bool ok;
    if (cfg.backend == CFG_BACKEND_AUTO) {
        ok = auto_ok;
    } else {
        ok = results[cfg.backend].verdict.works &&
             probe_meets_floor(probe_backend_strength(cfg.backend), cfg.backend_floor);
        if (results[cfg.backend].verdict.works && !ok)
            probe_add(&report, "backend-floor", PROBE_FAIL,
                      "use a backend that meets it, or backend = \"auto\"",
                      "backend = \"%s\" is below backend_floor = \"%s\"", configured,
                      cfg_enum_name(CFG_BACKEND_FLOOR, cfg.backend_floor));
    }
    if (json) {
        json_t *j = report_json(&report, results, nresults, configured, auto_ok,
                                auto_ok ? cfg_enum_name(CFG_BACKEND, chosen) : NULL, auto_why, ok);
        _cleanup_free_ char *text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
        printf("%s\n", text ? text : "{}");
        json_decref(j);
    } else {
        print_text(&report, results, nresults, configured, auto_ok, auto_why);
        printf("\nconfigured backend %s %s here\n", configured, ok ? "works" : "does NOT work");
    }
    cfg_free(&cfg);
    return ok ? 0 : DOCTOR_EXIT_NOT_WORKING;
}
