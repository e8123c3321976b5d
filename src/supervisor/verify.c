/* The audit behind `cordon verify` and sandbox_verify (verify.h). Host
 * context, unprivileged supervisor. Each check turns observations into one
 * row: PASS, FAIL, WARN (allowed, but weaker than the default) or SKIP (not
 * applicable here, with the reason), and the evidence: what was probed and
 * what was seen. This file holds the rows, the probe's answer, the judging
 * and the report; verify-internal.h names the siblings that hold the rest. */
#include "supervisor/verify.h"
#include "supervisor/verify-internal.h"
#include "proto/init-channel.h"
#include "confine/landlock.h"
#include "net/denial.h"
#include "supervisor/environ.h"
#include "supervisor/gitguard.h"
#include "util/cleanup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sys/file.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

extern char **environ;

const char *const verify_sentinel_names[] = {
    "DOCKER_HOST",  "DOCKER_CONTEXT",         "COMPOSE_PROJECT_NAME",
    "COMPOSE_FILE", "CORDON_VERIFY_SENTINEL",
};

const char *const verify_ns_names[] = {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"};

void verify_inject_sentinels(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(verify_sentinel_names); i++)
        setenv(verify_sentinel_names[i], VERIFY_SENTINEL_VALUE, 1);
    setenv(VERIFY_PROBE_VAR, VERIFY_SENTINEL_VALUE, 1);
}

bool sentinels_injected(void)
{
    const char *v = getenv("CORDON_VERIFY_SENTINEL");
    return v && strcmp(v, VERIFY_SENTINEL_VALUE) == 0;
}

/* The CORDON-PROBE line of one output text; NULL (why filled) when there
 * is none (why left empty) or it is not JSON. */
static json_t *probe_answer_in(const char *text, char *why, size_t size)
{
    const char *at = text ? strstr(text, PROBE_MARKER) : NULL;
    if (!at)
        return NULL;
    at += strlen(PROBE_MARKER);
    json_error_t jerr;
    json_t *answer = json_loadb(at, strcspn(at, "\n"), 0, &jerr);
    if (json_is_object(answer))
        return answer;
    json_decref(answer);
    snprintf(why, size, "the probe's answer is not JSON: %s", jerr.text);
    return NULL;
}

/* Parses the CORDON-PROBE line out of the bash tool's output. */
static json_t *probe_answer(const struct tool_result *res, char *why, size_t size)
{
    if (!res) {
        snprintf(why, size, "the probe call failed");
        return NULL;
    }
    size_t i;
    json_t *part;
    json_array_foreach (res->content, i, part) {
        json_t *answer =
            probe_answer_in(json_string_value(json_object_get(part, "text")), why, size);
        if (answer || why[0])
            return answer;
    }
    json_t *first = json_array_get(res->content, 0);
    snprintf(why, size, "the probe printed no answer: %.300s",
             json_string_value(json_object_get(first, "text"))
                 ? json_string_value(json_object_get(first, "text"))
                 : "(no output)");
    return NULL;
}

static json_t *judge(struct verify_run *r, json_t *p, const char *why);

json_t *verify_finish(struct verify_run *r, const struct tool_result *probe, const char *call_error)
{
    char why[512] = "";
    json_t *p = call_error ? NULL : probe_answer(probe, why, sizeof(why));
    if (call_error)
        snprintf(why, sizeof(why), "%s", call_error);
    return judge(r, p, why);
}

json_t *verify_finish_output(struct verify_run *r, const char *output, const char *probe_error)
{
    char why[512] = "";
    json_t *p = NULL;
    if (probe_error) {
        snprintf(why, sizeof(why), "%s", probe_error);
    } else {
        p = probe_answer_in(output, why, sizeof(why));
        if (!p && !why[0])
            snprintf(why, sizeof(why), "the probe printed no answer: %.300s",
                     output && output[0] ? output : "(no output)");
    }
    return judge(r, p, why);
}

json_t *verify_finish_init_probe(struct verify_run *r, const char *output, const char *end)
{
    char why[1024] = "";
    if (strcmp(end, "timeout") == 0)
        snprintf(why, sizeof(why), "the probe in the sandbox was killed after %d s (timeout)",
                 INIT_PROBE_TIMEOUT_MS / 1000);
    else if (strcmp(end, "exit 0") != 0)
        snprintf(why, sizeof(why), "the probe in the sandbox ended: %.200s; its output: %.300s",
                 end, output[0] ? output : "(none)");
    return verify_finish_output(r, output, why[0] ? why : NULL);
}

/* The probe's answer p (consumed; NULL: none, why says why) judged against
 * the host's facts. */
static json_t *judge(struct verify_run *r, json_t *p, const char *why)
{
    check_env(r, p);
    check_host_files(r, p);
    check_docker(r, p);
    check_ports(r);
    check_secrets(r);
    check_seccomp(r, p);
    check_privileges(r, p);
    check_namespaces(r, p);
    check_processes(r, p);
    check_network(r, p);
    check_writes(r, p);
    check_git_metadata(r, p);
    check_landlock(r, p);
    check_ownership(r);
    json_decref(p);

    int failed = 0, warnings = 0;
    size_t i;
    json_t *c;
    json_array_foreach (r->checks, i, c) {
        failed += strcmp(str(c, "status"), "FAIL") == 0;
        warnings += strcmp(str(c, "status"), "WARN") == 0;
    }
    json_t *report = json_pack("{s:s, s:s, s:i, s:i, s:O, s:O}", "sandbox", r->name, "result",
                               failed ? "FAIL" : "PASS", "failed", failed, "warnings", warnings,
                               "checks", r->checks, "host", r->host);
    if (why[0])
        json_object_set_new(report, "probe_error", json_string(why));
    /* which backend runs, and why (backend = "auto" says what it chose) */
    if (r->l)
        json_object_set_new(report, "backend",
                            json_pack("{s:s, s:s}", "name",
                                      cfg_enum_name(CFG_BACKEND, r->l->cfg.backend), "reason",
                                      r->l->backend_reason));
    if (failed) {
        char advice[512];
        snprintf(advice, sizeof(advice),
                 "Treat sandbox %s as compromised: stop using it, end the session and remove it "
                 "(`cordon rm %s`), then report the failed checks.",
                 r->name, r->name);
        json_object_set_new(report, "advice", json_string(advice));
    }
    return report;
}

void verify_free(struct verify_run *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nlisteners; i++)
        close(r->listeners[i].fd);
    free(r->name);
    free(r->state_dir);
    json_decref(r->host);
    json_decref(r->request);
    json_decref(r->checks);
    json_decref(r->host_names);
    free(r);
}

int verify_session(struct session *s, json_t **report, struct cordon_error *err)
{
    struct verify_run *r;
    json_t *args;
    if (verify_prepare(s, &r, &args, err) < 0)
        return -1;
    struct tool_result res = {0};
    struct cordon_error call_err = {0};
    int rc = session_call_sync(s, "bash", args, &res, &call_err);
    json_decref(args);
    *report = verify_finish(r, rc < 0 ? NULL : &res, rc < 0 ? call_err.message : NULL);
    tool_result_clear(&res);
    verify_free(r);
    return 0;
}

void verify_report_add_ownership(json_t *report, const char *name, bool held, pid_t record_pid,
                                 pid_t peer_pid)
{
    size_t i;
    json_t *c;
    json_array_foreach (json_object_get(report, "checks"), i, c) {
        if (strcmp(str(c, "check"), "ownership") != 0)
            continue;
        bool ok = held && record_pid > 0 && record_pid == peer_pid &&
                  strcmp(str(c, "status"), "PASS") == 0;
        char evidence[3072];
        snprintf(evidence, sizeof(evidence),
                 "%s; seen by `cordon verify %s`: the lock is %s, its record names pid %d, the "
                 "control socket's peer (SO_PEERCRED) is pid %d",
                 str(c, "evidence"), name, held ? "held" : "free", (int)record_pid, (int)peer_pid);
        json_object_set_new(c, "evidence", json_string(evidence));
        json_object_set_new(c, "status", json_string(ok ? "PASS" : "FAIL"));
    }
    int failed = 0;
    json_array_foreach (json_object_get(report, "checks"), i, c)
        failed += strcmp(str(c, "status"), "FAIL") == 0;
    json_object_set_new(report, "failed", json_integer(failed));
    json_object_set_new(report, "result", json_string(failed ? "FAIL" : "PASS"));
    if (failed && !json_object_get(report, "advice")) {
        char advice[512];
        snprintf(advice, sizeof(advice),
                 "Treat sandbox %s as compromised: stop using it, end the session and remove it "
                 "(`cordon rm %s`), then report the failed checks.",
                 name, name);
        json_object_set_new(report, "advice", json_string(advice));
    }
}

int verify_report_failed(const json_t *report)
{
    return (int)json_integer_value(json_object_get(report, "failed"));
}

char *verify_report_text(const json_t *report)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return NULL;
    fprintf(f, "cordon verify: sandbox %s\n", str(report, "sandbox"));
    size_t i;
    json_t *c;
    json_array_foreach (json_object_get(report, "checks"), i, c)
        fprintf(f, "%-4s  %-16s %s\n", str(c, "status"), str(c, "check"), str(c, "evidence"));
    if (json_object_get(report, "probe_error"))
        fprintf(f, "probe: %s\n", str(report, "probe_error"));
    const json_t *backend = json_object_get(report, "backend");
    if (backend)
        fprintf(f, "backend: %s (%s)\n", str(backend, "name"), str(backend, "reason"));
    int failed = verify_report_failed(report);
    int warnings = (int)json_integer_value(json_object_get(report, "warnings"));
    fprintf(f, "result: %s (%d failed, %d warning%s)\n", failed ? "FAIL" : "PASS", failed, warnings,
            warnings == 1 ? "" : "s");
    if (failed)
        fprintf(f, "%s\n", str(report, "advice"));
    fclose(f);
    return buf;
}

json_t *verify_tool_definition(void)
{
    return json_pack(
        "{s:s, s:s, s:{s:s, s:{}}, s:{s:b, s:b, s:b}}", "name", "sandbox_verify", "description",
        "Audit this session's sandbox from inside and outside: environment scrubbing, host "
        "files and Docker sockets not visible, seccomp, no_new_privs, no capabilities, "
        "namespaces, processes, network egress, protected paths, Landlock. One row per check "
        "(PASS/FAIL/WARN/SKIP with evidence); structuredContent holds the report. If any check "
        "FAILs, treat the sandbox as compromised.",
        "inputSchema", "type", "object", "properties", "annotations", "readOnlyHint", 1,
        "destructiveHint", 0, "openWorldHint", 0);
}
