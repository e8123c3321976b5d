/* Unit tests for the bash tool's non-blocking API and its bounds
 * (src/agent/tools/bash.c): progress snapshots, abort, timeout killing the
 * whole process group, the spill file, bounded memory for huge output.
 * Host context, test-only. */
#include "agent/tools/bash.h"
#include "tap.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static char tmp[256];

static struct tool_env env(void)
{
    return (struct tool_env){.cwd = tmp, .home = tmp, .tmpdir = tmp, .bash_environ = environ};
}

static const char *text_of(const struct tool_result *res)
{
    json_t *part = json_array_get(res->content, 0);
    return part ? json_string_value(json_object_get(part, "text")) : "";
}

static struct tool_bash_call *start(const char *json)
{
    struct tool_env e = env();
    json_t *args = json_loads(json, 0, NULL);
    struct tool_bash_call *call = NULL;
    struct tool_result early = {0};
    tool_bash_start(&e, args, &call, &early);
    json_decref(args);
    tool_result_clear(&early);
    return call;
}

/* Pumps the pipe until `want` appears in the partial output or 5 s pass. */
static bool pump_until(struct tool_bash_call *call, const char *want)
{
    for (int i = 0; i < 500; i++) {
        struct pollfd p = {.fd = tool_bash_fd(call), .events = POLLIN};
        if (p.fd >= 0 && poll(&p, 1, 10) > 0)
            tool_bash_on_readable(call);
        struct tool_result partial = {0};
        tool_bash_partial(call, &partial);
        bool found = strstr(text_of(&partial), want) != NULL;
        tool_result_clear(&partial);
        if (found)
            return true;
    }
    return false;
}

static int reap(struct tool_bash_call *call)
{
    int status = 0;
    while (waitpid(tool_bash_pid(call), &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

static void test_partial_and_cancel(void)
{
    struct tool_bash_call *call = start("{\"command\":\"echo first; sleep 30; echo never\"}");
    ok(call != NULL, "call started");
    if (!call)
        return;
    ok(tool_bash_fd(call) >= 0, "output fd exposed");
    is_int(tool_bash_deadline(call), -1, "no timeout, no deadline");
    ok(pump_until(call, "first\n"), "partial output carries what arrived");
    tool_bash_cancel(call);
    int status = reap(call);
    ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "cancel kills the shell");
    struct tool_result res = {0};
    tool_bash_finish(call, status, &res);
    is_str(text_of(&res), "first\n\n\nCommand aborted", "aborted result keeps the output");
    ok(res.is_error, "aborted is an error");
    tool_result_clear(&res);
}

static void test_deadline_kills_group(void)
{
    char pidfile[300];
    snprintf(pidfile, sizeof(pidfile), "%s/bg.pid", tmp);
    char json[600];
    snprintf(json, sizeof(json), "{\"command\":\"sleep 60 & echo $! > %s; wait\",\"timeout\":0.3}",
             pidfile);
    struct tool_env e = env();
    json_t *args = json_loads(json, 0, NULL);
    struct tool_result res = {0};
    tool_bash_run(&e, args, &res);
    json_decref(args);
    is_str(text_of(&res), "Command timed out after 0.3 seconds", "timeout text");
    tool_result_clear(&res);
    FILE *f = fopen(pidfile, "r");
    int bg = 0;
    if (f) {
        if (fscanf(f, "%d", &bg) != 1)
            bg = 0;
        fclose(f);
    }
    /* Dead means gone or a zombie waiting for init to reap it. */
    bool dead = false;
    for (int i = 0; i < 50 && bg > 0 && !dead; i++) {
        char stat_path[64], buf[512] = "";
        snprintf(stat_path, sizeof(stat_path), "/proc/%d/stat", bg);
        FILE *sf = fopen(stat_path, "r");
        if (!sf) {
            dead = true;
            break;
        }
        size_t n = fread(buf, 1, sizeof(buf) - 1, sf);
        fclose(sf);
        buf[n] = '\0';
        const char *paren = strrchr(buf, ')');
        dead = paren && (paren[2] == 'Z' || paren[2] == 'X');
        if (!dead)
            usleep(20000);
    }
    ok(dead, "the background child died with its group");
}

/* The command runs in its own session with only fds 0-2, even when the
 * caller holds an fd without O_CLOEXEC. */
static void test_isolation(void)
{
    int leaked = dup(2); /* no CLOEXEC */
    struct tool_env e = env();
    /* No pipeline: while one runs, the shell itself holds the pipe's fds. */
    json_t *args = json_loads("{\"command\":\"ls /proc/$$/fd; test "
                              "$(ps -o sid= -p $$) -eq $$ && echo own-session; "
                              "readlink /proc/$$/fd/0\"}",
                              0, NULL);
    struct tool_result res = {0};
    tool_bash_run(&e, args, &res);
    json_decref(args);
    is_str(text_of(&res), "0\n1\n2\nown-session\n/dev/null\n", "fds, session and stdin");
    tool_result_clear(&res);
    close(leaked);
}

static void test_start_errors(void)
{
    struct tool_env e = env();
    e.cwd = "/nonexistent/cordon-dir";
    json_t *args = json_loads("{\"command\":\"true\"}", 0, NULL);
    struct tool_bash_call *call = NULL;
    struct tool_result early = {0};
    tool_bash_start(&e, args, &call, &early);
    ok(call == NULL, "no call for a missing cwd");
    is_str(text_of(&early),
           "Working directory does not exist: /nonexistent/cordon-dir\nCannot execute bash "
           "commands.",
           "missing cwd text");
    tool_result_clear(&early);
    json_decref(args);
}

/* Live heap bytes. Under ASan, RSS says little (freed memory sits in its
 * quarantine), so ask the allocator in use. */
#if defined(__SANITIZE_ADDRESS__)
size_t __sanitizer_get_current_allocated_bytes(void);
static size_t heap_bytes(void)
{
    return __sanitizer_get_current_allocated_bytes();
}
#else
#include <malloc.h>
static size_t heap_bytes(void)
{
    return mallinfo2().uordblks;
}
#endif

/* 256 MB through the pipe: memory stays flat, the file gets every byte. */
static void test_huge_output(void)
{
    size_t before = heap_bytes(), peak = before;
    struct tool_bash_call *call =
        start("{\"command\":\"head -c 268435456 /dev/zero | tr '\\\\0' x\"}");
    if (!call) {
        ok(false, "call started");
        return;
    }
    while (tool_bash_fd(call) >= 0) {
        struct pollfd p = {.fd = tool_bash_fd(call), .events = POLLIN};
        if (poll(&p, 1, 1000) > 0)
            tool_bash_on_readable(call);
        size_t now = heap_bytes();
        peak = now > peak ? now : peak;
    }
    struct tool_result res = {0};
    tool_bash_finish(call, reap(call), &res);
    ok(peak - before < 2 * 1024 * 1024, "heap grew by at most %zu bytes for 256 MB of output",
       peak - before);
    const char *text = text_of(&res);
    ok(strlen(text) < 52 * 1024, "result text is bounded (%zu bytes)", strlen(text));
    ok(strstr(text, "[Showing last 50.0KB of line 1 (line is 256.0MB). Full output: ") != NULL,
       "partial last line notice");
    const char *full = json_string_value(json_object_get(res.details, "fullOutputPath"));
    struct stat st;
    ok(full && stat(full, &st) == 0 && st.st_size == 268435456, "spill file holds all output");
    if (full)
        unlink(full);
    tool_result_clear(&res);
}

int main(void)
{
    snprintf(tmp, sizeof(tmp), "/tmp/cordon-bash-XXXXXX");
    if (!mkdtemp(tmp))
        return 1;
    test_partial_and_cancel();
    test_deadline_kills_group();
    test_start_errors();
    test_isolation();
    test_huge_output();
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        tap_diag("cleanup failed");
    return tap_done();
}
