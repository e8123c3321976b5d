/* Micro-benchmark of the tools' in-agent cost: tool_read() of a 4 KiB file
 * (plus the serialisation of its result, which the agent also does), and
 * tool_ls() of an empty directory for comparison, called in a loop in this
 * process with each call timed. The agent runs the same code in the sandbox
 * (seccomp and Landlock add a little per system call, not measured here).
 * Host context, benchmark-only.
 *
 * usage: tool-micro [CALLS] [--markdown]   (in a scratch directory) */
#include "agent/tools/registry.h"
#include "util/cleanup.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Runs tool on args `calls` times; fills t (sorted) and returns the mean. */
static double bench(tool_fn tool, const struct tool_env *env, const char *args_json, double *t,
                    size_t calls)
{
    json_t *args = json_loads(args_json, 0, NULL);
    double total = 0;
    for (size_t i = 0; i < calls; i++) {
        struct tool_result res = {0};
        double t0 = now_us();
        if (tool(env, args, &res) < 0 || res.is_error) {
            fprintf(stderr, "tool-micro: %s failed\n", args_json);
            exit(1);
        }
        free(tool_result_to_json(&res));
        tool_result_clear(&res);
        t[i] = now_us() - t0;
        total += t[i];
    }
    json_decref(args);
    qsort(t, calls, sizeof(*t), cmp_double);
    return total / (double)calls;
}

int main(int argc, char **argv)
{
    size_t calls = argc > 1 && argv[1][0] != '-' ? strtoul(argv[1], NULL, 10) : 10000;
    bool markdown = argc > 1 && strcmp(argv[argc - 1], "--markdown") == 0;
    if (calls == 0)
        calls = 10000;
    char text[4097];
    for (size_t i = 0; i < 4096; i++)
        text[i] = i % 64 == 63 ? '\n' : (char)('a' + i % 26);
    _cleanup_close_ int fd = open("f4k.txt", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, text, 4096) != 4096 || mkdir("empty", 0755) < 0) {
        perror("tool-micro: fixture");
        return 1;
    }
    _cleanup_free_ char *cwd = getcwd(NULL, 0);
    struct tool_env env = {.cwd = cwd, .home = "/", .tmpdir = "/tmp"};
    _cleanup_free_ double *t = calloc(calls, sizeof(*t));
    if (!cwd || !t)
        return 1;
    static const struct {
        const char *label;
        tool_fn fn;
        const char *args;
    } cases[] = {
        {"read 4 KiB file", tool_read, "{\"path\":\"f4k.txt\"}"},
        {"ls empty directory", tool_ls, "{\"path\":\"empty\"}"},
    };
    if (markdown) {
        printf("| in-process call | calls | mean | median | p99 |\n");
        printf("| --- | --- | --- | --- | --- |\n");
    }
    for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
        bench(cases[c].fn, &env, cases[c].args, t, calls < 100 ? calls : 100); /* warm-up */
        double mean = bench(cases[c].fn, &env, cases[c].args, t, calls);
        double med = t[calls / 2], p99 = t[(size_t)((double)calls * 0.99)];
        if (markdown)
            printf("| %s | %zu | %.1f µs | %.1f µs | %.1f µs |\n", cases[c].label, calls, mean, med,
                   p99);
        else
            printf("  %s: mean %.1f µs, median %.1f µs, p99 %.1f µs (%zu calls)\n", cases[c].label,
                   mean, med, p99, calls);
    }
    unlink("f4k.txt");
    rmdir("empty");
    return 0;
}
