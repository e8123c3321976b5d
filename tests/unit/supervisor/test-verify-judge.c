/* Unit tests of verify's judging (supervisor/verify.c) through its two
 * phases, without a sandbox: verify_prepare_target on a launch that
 * launch_prepare made in a scratch workspace, then verify_finish_output on
 * probe answers written here, as a sandbox could forge them. What the tests
 * hold it to: no answer is a FAIL with the advice to treat the sandbox as
 * compromised; a protected path or the policy directory that took a write is
 * a FAIL naming it; and a forged all-good answer does not make the report
 * PASS, because the rows that matter most need the host's own evidence.
 * Host context, any uid; nothing is started. */
#include "supervisor/launch.h"
#include "supervisor/verify.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char ws[300];

/* The status of the report's row named check, or "" when there is none. */
static const char *status_of(json_t *report, const char *check, const char **evidence)
{
    size_t i;
    json_t *c;
    json_array_foreach (json_object_get(report, "checks"), i, c) {
        if (strcmp(json_string_value(json_object_get(c, "check")), check) == 0) {
            if (evidence)
                *evidence = json_string_value(json_object_get(c, "evidence"));
            return json_string_value(json_object_get(c, "status"));
        }
    }
    return "";
}

static const char *result_of(json_t *report)
{
    const char *r = json_string_value(json_object_get(report, "result"));
    return r ? r : "";
}

static bool array_has(json_t *list, const char *want)
{
    size_t i;
    json_t *v;
    json_array_foreach (list, i, v) {
        if (json_is_string(v) && strcmp(json_string_value(v), want) == 0)
            return true;
    }
    return false;
}

/* One audit of l judged on the probe output given. */
static json_t *audit(const struct launch *l, const char *output, json_t **request)
{
    struct verify_target t = {.name = "verify-test", .l = l, .agent_pidfd = -1};
    struct verify_run *r = NULL;
    char *req = NULL;
    struct cordon_error err = {0};
    if (verify_prepare_target(&t, &r, &req, &err) < 0)
        tap_bail("verify_prepare_target: %s", err.message);
    if (request) {
        json_error_t jerr;
        *request = json_loads(req, 0, &jerr);
    }
    free(req);
    json_t *report = verify_finish_output(r, output, NULL);
    verify_free(r);
    return report;
}

/* A probe's answer line: the protected path's write and the policy
 * directories' as given, the workspace write as given. */
static char *answer(const char *protected_write, bool policy_visible, const char *policy_write,
                    const char *workspace_write, const char *policy0, const char *policy1)
{
    char prot[400];
    snprintf(prot, sizeof(prot), "%s/.cordon.toml", ws);
    json_t *p =
        json_pack("{s:[{s:s, s:s}, {s:s, s:b, s:s}, {s:s, s:b, s:s}], s:[{s:s, s:s}]}", "readonly",
                  "path", prot, "write", protected_write, "path", policy0, "exists", policy_visible,
                  "write", policy_write, "path", policy1, "exists", policy_visible, "write",
                  policy_write, "writable", "path", ws, "write", workspace_write);
    char *text = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    char *line = NULL;
    if (!text || asprintf(&line, "noise before\nCORDON-PROBE %s\n", text) < 0)
        tap_bail("answer");
    free(text);
    return line;
}

int main(void)
{
    char tmpl[] = "/tmp/cordon-verify-XXXXXX";
    char root[256], home[300], etc[300], cmd[1024];
    if (!mkdtemp(tmpl) || !realpath(tmpl, root) || strlen(root) > 200)
        tap_bail("mkdtemp");
    snprintf(ws, sizeof(ws), "%.200s/ws", root);
    snprintf(home, sizeof(home), "%.200s/home", root);
    snprintf(etc, sizeof(etc), "%.200s/etc", root);
    if (mkdir(ws, 0700) < 0 || mkdir(home, 0700) < 0 || mkdir(etc, 0700) < 0)
        tap_bail("mkdir");
    snprintf(cmd, sizeof(cmd), "git init -q '%s' && touch '%s/.cordon.toml'", ws, ws);
    if (system(cmd) != 0 || chdir(ws) < 0)
        tap_bail("git init");
    tap_launch_env(home, etc);
    unsetenv("XDG_RUNTIME_DIR");
    struct launch l;
    struct cordon_error err = {0};
    if (launch_prepare(NULL, &l, &err) < 0)
        tap_bail("launch_prepare: %s", err.message);
    char policy1[400], prot[400], hooks[400];
    snprintf(policy1, sizeof(policy1), "%s/.config/cordon", home);
    snprintf(prot, sizeof(prot), "%s/.cordon.toml", ws);
    snprintf(hooks, sizeof(hooks), "%s/.git/hooks", ws);

    /* No answer at all. */
    json_t *request = NULL;
    json_t *rep = audit(&l, "bash: cordon-agent: not found", &request);
    json_t *ro = json_object_get(request, "readonly");
    ok(array_has(ro, prot) && array_has(ro, hooks),
       "the probe is asked to write to the protected paths that exist");
    ok(array_has(ro, etc) && array_has(ro, policy1),
       "... and to the host-owned policy directories");
    is_str(json_string_value(json_array_get(json_object_get(request, "writable"), 0)), ws,
           "... and to create a file in the workspace");
    json_decref(request);
    is_str(result_of(rep), "FAIL", "no probe answer: the audit fails");
    const char *why = json_string_value(json_object_get(rep, "probe_error"));
    ok(why && strstr(why, "the probe printed no answer: bash: cordon-agent: not found"),
       "... saying what the probe printed: %s", why ? why : "(none)");
    is_str(status_of(rep, "protected-paths", NULL), "FAIL", "... protected-paths FAILs");
    is_str(status_of(rep, "workspace", NULL), "FAIL", "... workspace FAILs");
    const char *advice = json_string_value(json_object_get(rep, "advice"));
    ok(advice && strstr(advice, "compromised") && strstr(advice, "cordon rm verify-test"),
       "... with the advice to treat the sandbox as compromised and remove it");
    json_decref(rep);

    /* A forged answer in which everything was refused as it should be. */
    char *text = answer("EROFS", false, "ENOENT", "ok", etc, policy1);
    rep = audit(&l, text, NULL);
    free(text);
    const char *ev = NULL;
    is_str(status_of(rep, "protected-paths", &ev), "PASS", "refused writes: protected-paths PASS");
    ok(ev && strstr(ev, ".cordon.toml: write -> EROFS"), "... the evidence names the path: %s",
       ev ? ev : "");
    is_str(status_of(rep, "policy-dir", NULL), "PASS", "invisible policy directories: PASS");
    is_str(status_of(rep, "workspace", NULL), "PASS",
           "a writable workspace that took a file: PASS");
    is_str(status_of(rep, "seccomp", NULL), "FAIL",
           "the seccomp row needs the host's /proc evidence, which a forged answer lacks");
    is_str(result_of(rep), "FAIL", "a forged all-good answer does not make the audit PASS");
    ok(json_object_get(rep, "probe_error") == NULL, "the answer was read (no probe error)");
    json_decref(rep);

    /* Writes that got through. */
    text = answer("ok", true, "ok", "EROFS", etc, policy1);
    rep = audit(&l, text, NULL);
    free(text);
    is_str(status_of(rep, "protected-paths", &ev), "FAIL", "a protected path took a write: FAIL");
    ok(ev && strstr(ev, ".cordon.toml: write -> ok"), "... naming it: %s", ev ? ev : "");
    is_str(status_of(rep, "policy-dir", &ev), "FAIL", "a writable policy directory: FAIL");
    ok(ev && strstr(ev, policy1), "... naming it: %s", ev ? ev : "");
    is_str(status_of(rep, "workspace", &ev), "FAIL",
           "a writable workspace that refused the file: FAIL");
    json_decref(rep);

    /* A policy directory that is visible but refuses writes is fine. */
    text = answer("EACCES", true, "EROFS", "ok", etc, policy1);
    rep = audit(&l, text, NULL);
    free(text);
    is_str(status_of(rep, "policy-dir", NULL), "PASS",
           "a visible read-only policy directory: PASS");
    is_str(status_of(rep, "protected-paths", NULL), "PASS", "EACCES is a refusal too");
    json_decref(rep);

    /* Not JSON after the marker. */
    rep = audit(&l, "CORDON-PROBE {\"readonly\": [", NULL);
    why = json_string_value(json_object_get(rep, "probe_error"));
    ok(why && strstr(why, "not JSON"), "a broken answer is said to be one: %s", why ? why : "");
    is_str(result_of(rep), "FAIL", "... and fails");
    json_decref(rep);

    launch_free(&l);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", root);
    return tap_done();
}
