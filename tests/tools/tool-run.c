/* tool-run NAME 'JSON-ARGS': runs one cordon tool directly on the host, no
 * sandbox, with cwd = this process's working directory and home = $HOME, and
 * prints the result as cordon prints it ({"content":[...],"details":...,
 * "isError":bool}). The differential tests (tests/diff) compare this output
 * with pi's. Host context, test-only. */
#include "agent/tools/registry.h"
#include "util/cleanup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: tool-run NAME 'JSON-ARGS'\n");
        return 2;
    }
    const struct tool_entry *tool = tool_lookup(argv[1]);
    if (!tool) {
        fprintf(stderr, "tool-run: unknown tool '%s'\n", argv[1]);
        return 2;
    }
    json_error_t jerr;
    /* NUL inside strings is kept so tools can reject hostile paths themselves. */
    json_t *args = json_loads(argv[2], JSON_ALLOW_NUL, &jerr);
    if (!args) {
        fprintf(stderr, "tool-run: bad JSON arguments: %s\n", jerr.text);
        return 2;
    }
    _cleanup_free_ char *cwd = getcwd(NULL, 0);
    if (!cwd) {
        perror("tool-run: getcwd");
        json_decref(args);
        return 2;
    }
    const char *tmpdir = getenv("TMPDIR");
    struct tool_env env = {
        .cwd = cwd,
        .home = getenv("HOME") ? getenv("HOME") : "/",
        .tmpdir = tmpdir && *tmpdir ? tmpdir : "/tmp",
        .bash_environ = environ,
    };
    struct tool_result res = {0};
    int r = tool->run(&env, args, &res);
    json_decref(args);
    if (r < 0) {
        fprintf(stderr, "tool-run: %s failed to build a result\n", argv[1]);
        tool_result_clear(&res);
        return 1;
    }
    _cleanup_free_ char *out = tool_result_to_json(&res);
    tool_result_clear(&res);
    if (!out)
        return 1;
    fputs(out, stdout);
    fputc('\n', stdout);
    return fflush(stdout) == 0 ? 0 : 1;
}
