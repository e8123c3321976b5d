/* Routing unit tests: every state's decision, the exact-call fingerprint,
 * approvals (mismatch, replay, unanswered), and the skill read exception on
 * a real tree (exact file, SKILL.md directory, symlink escape, FIFO). */
#include "supervisor/route.h"
#include "tap.h"
#include "util/cleanup.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static enum route_target decide(enum route_state state, const char *target, bool allow,
                                bool interactive, char *reason, size_t size)
{
    json_auto_t *args = json_pack("{s:s}", "command", "ls");
    if (target)
        json_object_set_new(args, "execution_target", json_string(target));
    struct route_inputs in = {
        .state = state,
        .blocked_reason = "sandbox start failed: no user namespaces",
        .tool = "bash",
        .args = args,
        .allow_host_execution = allow,
        .interactive = interactive,
    };
    return route_decide(&in, reason, size);
}

static void test_decisions(void)
{
    char reason[1200];
    is_int(decide(ROUTE_SANDBOXED, NULL, true, true, reason, sizeof(reason)), ROUTE_TO_SANDBOX,
           "sandboxed: a call runs in the sandbox");
    is_int(decide(ROUTE_SANDBOXED, "sandbox", true, true, reason, sizeof(reason)), ROUTE_TO_SANDBOX,
           "sandboxed: execution_target sandbox");
    is_int(decide(ROUTE_SANDBOXED, "host", true, true, reason, sizeof(reason)), ROUTE_ASK,
           "sandboxed: execution_target host asks");
    is_int(decide(ROUTE_SANDBOXED, "host", true, false, reason, sizeof(reason)), ROUTE_REFUSE,
           "sandboxed: no interactive client: refused");
    is_str(reason, ROUTE_NO_INTERACTIVE_CLIENT, "with the exact text");
    is_int(decide(ROUTE_SANDBOXED, "host", false, true, reason, sizeof(reason)), ROUTE_REFUSE,
           "allow_host_execution = false: refused even when someone could ask");
    ok(strstr(reason, "allow_host_execution = false") != NULL, "naming the setting: %s", reason);
    is_int(decide(ROUTE_SANDBOXED, "moon", true, true, reason, sizeof(reason)), ROUTE_REFUSE,
           "an unknown execution_target is refused");
    is_int(decide(ROUTE_OFF, NULL, false, false, reason, sizeof(reason)), ROUTE_TO_HOST,
           "off: the host, no prompt");
    is_int(decide(ROUTE_OFF, "host", false, false, reason, sizeof(reason)), ROUTE_TO_HOST,
           "off: execution_target host needs no prompt");
    is_int(decide(ROUTE_OFF, "sandbox", true, true, reason, sizeof(reason)), ROUTE_REFUSE,
           "off: an explicit sandbox request is not run on the host");
    is_int(decide(ROUTE_HOST_FALLBACK, NULL, true, false, reason, sizeof(reason)), ROUTE_TO_HOST,
           "host fallback: the host");
    is_int(decide(ROUTE_BLOCKED, NULL, true, true, reason, sizeof(reason)), ROUTE_REFUSE,
           "blocked: refused");
    is_str(reason, "cordon: the bash tool is blocked: sandbox start failed: no user namespaces",
           "naming the tool and the reason");
    is_int(decide(ROUTE_BLOCKED, "host", true, true, reason, sizeof(reason)), ROUTE_REFUSE,
           "blocked: host execution is refused too");
    is_int(decide(ROUTE_STARTING, NULL, true, true, reason, sizeof(reason)), ROUTE_REFUSE,
           "starting: nothing runs yet");
    is_str(route_state_name(ROUTE_HOST_FALLBACK), "host fallback", "state names");
}

static void test_fingerprint(void)
{
    json_auto_t *a = json_loads(
        "{\"path\":\"x\",\"edits\":[{\"oldText\":\"a\",\"newText\":\"b\"}],\"execution_target\":"
        "\"host\"}",
        0, NULL);
    json_auto_t *b =
        json_loads("{\"edits\":[{\"newText\":\"b\",\"oldText\":\"a\"}],\"path\":\"x\"}", 0, NULL);
    json_auto_t *c =
        json_loads("{\"edits\":[{\"newText\":\"c\",\"oldText\":\"a\"}],\"path\":\"x\"}", 0, NULL);
    _cleanup_free_ char *fa = route_fingerprint("edit", "/w", a);
    _cleanup_free_ char *fb = route_fingerprint("edit", "/w", b);
    _cleanup_free_ char *fc = route_fingerprint("edit", "/w", c);
    _cleanup_free_ char *fd = route_fingerprint("edit", "/other", b);
    _cleanup_free_ char *fe = route_fingerprint("write", "/w", b);
    is_str(fa,
           "{\"args\":{\"edits\":[{\"newText\":\"b\",\"oldText\":\"a\"}],\"path\":\"x\"},\"cwd\":"
           "\"/w\",\"tool\":\"edit\"}",
           "recursively key-sorted, without execution_target");
    is_str(fa, fb, "key order does not matter");
    ok(strcmp(fa, fc) != 0, "nested argument values do");
    ok(strcmp(fb, fd) != 0, "the cwd does");
    ok(strcmp(fb, fe) != 0, "the tool does");
    ok(json_object_get(a, "execution_target") != NULL, "the caller's arguments are untouched");
}

static void test_approvals(void)
{
    struct route_approvals a = {0};
    struct cordon_error err;
    uint64_t id = route_approval_ask(&a, "F1");
    ok(id > 0, "an approval is asked");
    is_int(route_approval_consume(&a, id, "F1", &err), -1, "unanswered: refused");
    id = route_approval_ask(&a, "F1");
    is_int(route_approval_answer(&a, id, true), 0, "answered yes");
    is_int(route_approval_answer(&a, id, true), -1, "a second answer is refused");
    is_int(route_approval_consume(&a, id, "F2", &err), -1, "another call (mismatch): refused");
    ok(strstr(err.message, "another call") != NULL, "naming the mismatch: %s", err.message);
    is_int(route_approval_consume(&a, id, "F1", &err), -1,
           "and the approval is gone after a failed use");
    id = route_approval_ask(&a, "F1");
    route_approval_answer(&a, id, true);
    is_int(route_approval_consume(&a, id, "F1", &err), 0, "the exact call: allowed");
    is_int(route_approval_consume(&a, id, "F1", &err), -1, "a replay: refused");
    id = route_approval_ask(&a, "F1");
    route_approval_answer(&a, id, false);
    is_int(route_approval_consume(&a, id, "F1", &err), -1, "declined: refused");
    int asked = 0;
    for (int i = 0; i < ROUTE_MAX_APPROVALS + 5; i++)
        asked += route_approval_ask(&a, "X") > 0;
    is_int(asked, ROUTE_MAX_APPROVALS, "open questions are bounded");
    route_approvals_free(&a);
}

static void put(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static int read_all(int fd, char *buf, size_t size)
{
    if (fd < 0)
        return fd;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return 0;
}

static void test_skills(void)
{
    char tmp[] = "/tmp/cordon-route-XXXXXX";
    if (!mkdtemp(tmp)) {
        ok(false, "mkdtemp");
        return;
    }
    char skill[4200], sub[4300], alone[4200], ws[4200], p[4400], buf[256];
    snprintf(skill, sizeof(skill), "%s/skill", tmp);
    snprintf(sub, sizeof(sub), "%s/sub", skill);
    snprintf(alone, sizeof(alone), "%s/alone", tmp);
    snprintf(ws, sizeof(ws), "%s/ws", tmp);
    mkdir(skill, 0755);
    mkdir(sub, 0755);
    mkdir(alone, 0755);
    mkdir(ws, 0755);
    put(skill, "SKILL.md", "skill\n");
    put(sub, "ref.md", "ref\n");
    put(tmp, "secret", "secret\n");
    put(alone, "one.md", "one\n");
    put(alone, "two.md", "two\n");
    put(ws, "SKILL.md", "ws\n");
    snprintf(p, sizeof(p), "%s/secret", tmp);
    char link[4400];
    snprintf(link, sizeof(link), "%s/escape", skill);
    symlink(p, link);
    snprintf(p, sizeof(p), "%s/fifo", skill);
    mkfifo(p, 0600);
    snprintf(p, sizeof(p), "%s/link.md", alone);
    symlink("one.md", p);

    char skill_md[4400], one[4400], ws_md[4400];
    snprintf(skill_md, sizeof(skill_md), "%s/SKILL.md", skill);
    snprintf(one, sizeof(one), "%s/one.md", alone);
    snprintf(ws_md, sizeof(ws_md), "%s/SKILL.md", ws);
    const char *paths[] = {skill_md, one, ws_md, "relative/SKILL.md", "/nonexistent/SKILL.md"};
    struct route_skills s = {0};
    struct cordon_error err;
    is_int(route_skills_set(&s, paths, ARRAY_SIZE(paths), NULL, 0, ws), 2,
           "grants: the skill directory and the exact file; none in the workspace, relative or "
           "missing");
    is_int(read_all(route_skill_open(&s, skill_md, &err), buf, sizeof(buf)), 0, "SKILL.md opens");
    is_str(buf, "skill\n", "with its content");
    snprintf(p, sizeof(p), "%s/ref.md", sub);
    is_int(read_all(route_skill_open(&s, p, &err), buf, sizeof(buf)), 0,
           "a file below the skill directory opens");
    is_int(route_skill_open(&s, link, &err), -2, "a symlink escape is refused");
    snprintf(p, sizeof(p), "%s/fifo", skill);
    is_int(route_skill_open(&s, p, &err), -2, "a FIFO is refused");
    is_int(route_skill_open(&s, "/dev/null", &err), -1, "an unrelated path has no grant");
    snprintf(p, sizeof(p), "%s/sub/../../secret", skill);
    is_int(route_skill_open(&s, p, &err), -1, "dot-dot out of the directory has no grant");
    is_int(read_all(route_skill_open(&s, one, &err), buf, sizeof(buf)), 0, "the exact file opens");
    snprintf(p, sizeof(p), "%s/two.md", alone);
    is_int(route_skill_open(&s, p, &err), -1, "its neighbour has no grant");
    is_int(route_skill_open(&s, ws_md, &err), -1, "the workspace is the sandbox's business");
    /* The exact file replaced by a symlink after it was granted. */
    snprintf(p, sizeof(p), "%s/one.md", alone);
    unlink(p);
    snprintf(link, sizeof(link), "%s/secret", tmp);
    symlink(link, p);
    is_int(route_skill_open(&s, one, &err), -2, "an exact file swapped for a symlink is refused");
    const char *dirs[] = {skill, "/"};
    is_int(route_skills_set(&s, dirs, ARRAY_SIZE(dirs), NULL, 0, ws), 0,
           "a client cannot grant directories (only configuration can)");
    is_int(route_skills_set(&s, NULL, 0, dirs, 1, ws), 1, "configuration can");
    snprintf(p, sizeof(p), "%s/ref.md", sub);
    is_int(read_all(route_skill_open(&s, p, &err), buf, sizeof(buf)), 0,
           "a file below a SKILL.md directory under a configured directory opens");
    const char *none[] = {NULL};
    is_int(route_skills_set(&s, none, 0, NULL, 0, ws), 0, "an empty list replaces the grants");
    is_int(route_skill_open(&s, skill_md, &err), -1, "nothing is granted any more");
    route_skills_free(&s);
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", tmp);
}

/* What an approval pins: the canonical path, the directory it is opened
 * from, and the prompt that shows them. */
static void test_pins(void)
{
    char tmp[] = "/tmp/cordon-pin-XXXXXX";
    if (!mkdtemp(tmp)) {
        ok(false, "mkdtemp");
        return;
    }
    _cleanup_free_ char *root = realpath(tmp, NULL);
    char ws[1024], sub[1100], out[1100], p[1200], want[4600];
    snprintf(ws, sizeof(ws), "%s/ws", root);
    snprintf(sub, sizeof(sub), "%s/sub", ws);
    snprintf(out, sizeof(out), "%s/outside", root);
    mkdir(ws, 0755);
    mkdir(sub, 0755);
    mkdir(out, 0755);
    snprintf(p, sizeof(p), "%s/link", ws);
    if (symlink(out, p) < 0)
        tap_diag("symlink");
    snprintf(p, sizeof(p), "%s/dangling", ws);
    if (symlink("/nonexistent/x", p) < 0)
        tap_diag("symlink");

    struct route_pin pin;
    struct cordon_error err = {0};
    json_t *args = json_pack("{s:s, s:s}", "path", "new/dir/f.md", "content", "x");
    ok(route_pin_prepare("write", args, sub, "/nohome", ws, &pin, &err) == 0, "pin: a new file");
    snprintf(want, sizeof(want), "%s/new/dir/f.md", sub);
    is_str(pin.canonical, want, "pin: missing components kept, below the canonical cwd");
    is_str(pin.dir, sub, "pin: the cwd is the approved directory (the deepest that holds it)");
    is_str(pin.rel, "new/dir/f.md", "pin: rel below it");
    ok(pin.dir_fd >= 0 && pin.cwd_fd >= 0 && !pin.through_symlink && !pin.outside_workspace,
       "pin: fds held, no symlink, inside the workspace");
    route_pin_free(&pin);
    json_decref(args);

    args = json_pack("{s:s}", "path", "../link/f");
    ok(route_pin_prepare("read", args, sub, "/nohome", ws, &pin, &err) == 0,
       "pin: through a symlink");
    snprintf(want, sizeof(want), "%s/f", out);
    is_str(pin.canonical, want, "pin: the symlink is resolved");
    is_str(pin.dir, "/", "pin: outside the workspace and the cwd, the approved directory is /");
    ok(pin.through_symlink && pin.outside_workspace, "pin: marked through a symlink, outside");
    size_t hidden = 99;
    _cleanup_free_ char *prompt = route_prompt_text("read", sub, args, &pin, ws, &hidden);
    snprintf(want, sizeof(want),
             "Path: %s/f  (reached through a symlink)  (OUTSIDE the workspace %s)\n", out, ws);
    ok(prompt && strstr(prompt, want) && hidden == 0, "prompt: the resolved path and where it is");
    route_pin_free(&pin);
    json_decref(args);

    args = json_pack("{s:s}", "path", "../dangling");
    ok(route_pin_prepare("write", args, sub, "/nohome", ws, &pin, &err) < 0 &&
           strstr(err.message, "/ws/dangling is a symlink to a missing target"),
       "pin: a dangling symlink is refused: %s", err.message);
    route_pin_free(&pin);
    json_decref(args);

    args = json_pack("{s:s}", "command", "echo \xe2\x80\xae\x1b[2K\x7f\nnext");
    ok(route_pin_prepare("bash", args, sub, "/nohome", ws, &pin, &err) == 0 && !pin.target &&
           pin.cwd_fd >= 0,
       "pin: bash pins the cwd only");
    json_t *pj = route_pin_json(&pin);
    ok(pj && json_object_get(pj, "cwd") && !json_object_get(pj, "dir"),
       "pin json: the cwd, no directory");
    json_decref(pj);
    free(prompt);
    prompt = route_prompt_text("bash", sub, args, &pin, ws, &hidden);
    ok(prompt && strstr(prompt, "\"command\":\"echo \\u202e\\x1b[2K\\x7f\\nnext\"") &&
           !strstr(prompt, "\xe2\x80\xae") && !strchr(prompt, 0x1b) && hidden == 3 &&
           strstr(prompt, "NOTE: this call contains 3 invisible or control characters"),
       "prompt: U+202E, ESC and DEL escaped and counted, a newline shown as \\n, not counted");
    route_pin_free(&pin);
    json_decref(args);

    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", tmp);
}

int main(void)
{
    test_decisions();
    test_fingerprint();
    test_approvals();
    test_skills();
    test_pins();
    return tap_done();
}
