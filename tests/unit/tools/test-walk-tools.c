/* Tests of find and grep that the differential suite cannot make: find's
 * ignore rules outside a git repository (Debian's fd 8.6 cannot run pi's
 * command there, so these assert the documented fd >= 9 behaviour with
 * --no-require-git), and robustness: symlink loops, FIFOs, /dev/zero as a
 * grep path, unreadable entries, /proc. Host context, test-only. */
#include "agent/tools/registry.h"
#include "tap.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char root[256];

static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    char dir[512];
    snprintf(dir, sizeof(dir), "%s", path);
    for (char *p = dir + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(dir, 0755);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Runs a tool and returns its first text part (malloc'd). */
static char *run(const char *tool, const char *json, bool *is_error)
{
    struct tool_env env = {.cwd = root, .home = root, .tmpdir = root};
    json_error_t jerr;
    json_t *args = json_loads(json, 0, &jerr);
    struct tool_result res = {0};
    const struct tool_entry *t = tool_lookup(tool);
    t->run(&env, args, &res);
    json_decref(args);
    json_t *part = json_array_get(res.content, 0);
    json_t *jt = part ? json_object_get(part, "text") : NULL;
    size_t len = jt ? json_string_length(jt) : 0;
    char *text = malloc(len + 1);
    memcpy(text, jt ? json_string_value(jt) : "", len);
    text[len] = '\0';
    /* NUL bytes (from /dev/zero) shown as '@' so the text stays one string. */
    for (size_t i = 0; i < len; i++)
        if (text[i] == '\0')
            text[i] = '@';
    if (is_error)
        *is_error = res.is_error;
    tool_result_clear(&res);
    return text;
}

static void test_find_outside_git(void)
{
    put(".gitignore", "*.log\nbuild/\n");
    put("a.log", "");
    put("b.txt", "");
    put("build/out.txt", "");
    put("sub/.gitignore", "!keep.log\n");
    put("sub/keep.log", "");
    put("sub/drop.log", "");
    put(".ignore", "secret\n");
    put("secret", "");
    put(".fdignore", "private.txt\n");
    put("private.txt", "");
    char *out = run("find", "{\"pattern\":\"*\"}", NULL);
    is_str(out, ".fdignore\n.gitignore\n.ignore\nb.txt\nsub/\nsub/.gitignore\nsub/keep.log",
           "find applies .gitignore, .ignore and .fdignore outside git (fd --no-require-git)");
    free(out);
    /* grep does not (ripgrep needs a repository for .gitignore). */
    put("a.log", "needle\n");
    put("b.txt", "needle\n");
    put("secret", "needle\n");
    out = run("grep", "{\"pattern\":\"needle\"}", NULL);
    is_str(out, "a.log:1: needle\nb.txt:1: needle", "grep ignores .gitignore outside git only");
    free(out);
}

static void test_robustness(void)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/loop", root);
    symlink(".", path);
    snprintf(path, sizeof(path), "%s/sub/up", root);
    symlink("..", path);
    snprintf(path, sizeof(path), "%s/fifo", root);
    mkfifo(path, 0644);
    time_t start = time(NULL);
    char *out = run("find", "{\"pattern\":\"*o*\"}", NULL);
    is_str(out, ".fdignore\n.gitignore\n.ignore\nfifo\nloop\nsub/.gitignore\nsub/keep.log",
           "find lists symlinks and FIFOs without following them");
    free(out);
    out = run("grep", "{\"pattern\":\"needle\",\"path\":\"sub\"}", NULL);
    is_str(out, "No matches found", "grep skips the FIFO and symlinked directories");
    free(out);
    out = run("grep", "{\"pattern\":\"x\",\"path\":\"fifo\"}", NULL);
    is_str(out, "No matches found", "grep on a FIFO without writer returns");
    free(out);
    out = run("grep", "{\"pattern\":\"x\",\"path\":\"/dev/zero\"}", NULL);
    is_str(out, "No matches found", "grep on /dev/zero ends (bounded read)");
    free(out);
    out = run("grep", "{\"pattern\":\"^\",\"path\":\"/dev/zero\",\"limit\":1}", NULL);
    ok(strncmp(out, "zero:1: @@@", 11) == 0 && strstr(out, "@... [truncated]"),
       "an empty-match on /dev/zero reports one cut line");
    free(out);
    out = run("find", "{\"pattern\":\"status\",\"path\":\"/proc/self\",\"limit\":5}", NULL);
    ok(strstr(out, "status") != NULL, "find in /proc/self terminates with results");
    free(out);
    bool err = false;
    out = run("grep", "{\"pattern\":\"zzqqxx_not_there\",\"path\":\"/proc/self/task\"}", &err);
    ok(strstr(out, "No matches found") || err, "grep in /proc/self/task terminates");
    free(out);
    ok(time(NULL) - start < 60, "robustness checks finished in bounded time");
}

int main(void)
{
    snprintf(root, sizeof(root), "/tmp/cordon-walk-XXXXXX");
    if (!mkdtemp(root))
        return 1;
    test_find_outside_git();
    test_robustness();
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    if (system(cmd) != 0)
        tap_diag("cleanup failed");
    return tap_done();
}
