/* The unified diff of a review layer against the workspace (docs/review.md):
 * `cordon diff` and MCP's cordon/reviewDiff. Host context, as the user; the
 * two sides are opened as fds (review_open_sides) and given to diff(1) as
 * /dev/fd/N, never as paths. */
#include "supervisor/review.h"
#include "util/cleanup.h"
#include "util/escape.h"
#include "util/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void put_path(FILE *out, const char *path)
{
    _cleanup_free_ char *vis = text_escape_visible(path, strlen(path), TEXT_ESCAPE_BACKSLASH, NULL);
    fputs(vis ? vis : "?", out);
}

static const char *type_word(char t)
{
    return t == 'd' ? "directory" : t == 'l' ? "symlink" : t == 'f' ? "file" : "nothing";
}

bool review_looks_binary(int fd)
{
    if (fd < 0)
        return false;
    char buf[8000];
    ssize_t n = pread(fd, buf, sizeof(buf), 0);
    return n > 0 && memchr(buf, 0, (size_t)n) != NULL;
}

/* The files are the sandbox's: every line of diff(1)'s output is passed
 * through text_escape_visible (only newline and tab stay as they are), so a
 * carriage return or a terminal escape in a file cannot redraw what the
 * reviewer reads; the colours are cordon's own, added after. */
int review_run_diff(int host, int sandbox, const char *label_a, const char *label_b, bool color,
                    int out_fd)
{
    char a[64], b[64];
    snprintf(a, sizeof(a), host >= 0 ? "/dev/fd/%d" : "/dev/null", host);
    snprintf(b, sizeof(b), sandbox >= 0 ? "/dev/fd/%d" : "/dev/null", sandbox);
    int pipefd[2];
    pid_t pid = proc_fork_pipe(pipefd);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (host >= 0)
            fcntl(host, F_SETFD, 0);
        if (sandbox >= 0)
            fcntl(sandbox, F_SETFD, 0);
        dup2(pipefd[1], 1);
        char *argv[] = {
            "diff", "-u", "--label", (char *)label_a, "--label", (char *)label_b, "--color=never",
            a,      b,    NULL};
        execvp("diff", argv);
        _exit(127);
    }
    close(pipefd[1]);
    FILE *in = fdopen(pipefd[0], "r");
    FILE *out = fdopen(dup(out_fd), "w");
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while (in && out && (n = getline(&line, &cap, in)) > 0) {
        _cleanup_free_ char *vis =
            text_escape_visible(line, (size_t)n, TEXT_ESCAPE_KEEP_LAYOUT, NULL);
        const char *on = !color                         ? NULL
                         : strncmp(line, "+++", 3) == 0 ? "\033[1m"
                         : strncmp(line, "---", 3) == 0 ? "\033[1m"
                         : line[0] == '+'               ? "\033[32m"
                         : line[0] == '-'               ? "\033[31m"
                         : strncmp(line, "@@", 2) == 0  ? "\033[36m"
                                                        : NULL;
        size_t len = vis ? strlen(vis) : 0;
        bool nl = len > 0 && vis[len - 1] == '\n';
        fprintf(out, "%s%.*s%s%s", on ? on : "", (int)(len - (nl ? 1 : 0)), vis ? vis : "?",
                on ? "\033[m" : "", nl ? "\n" : "");
    }
    free(line);
    if (in)
        fclose(in);
    else
        close(pipefd[0]);
    if (out)
        fclose(out);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) && WEXITSTATUS(status) <= 1 ? 0 : -1;
}

static void count_lines(int fd, long *plus, long *minus)
{
    FILE *f = fdopen(dup(fd), "r");
    if (!f)
        return;
    rewind(f);
    char *line = NULL;
    size_t cap = 0;
    int header = 2;
    while (getline(&line, &cap, f) > 0) {
        if (header > 0 && (strncmp(line, "--- ", 4) == 0 || strncmp(line, "+++ ", 4) == 0)) {
            header--;
            continue;
        }
        if (line[0] == '+')
            (*plus)++;
        else if (line[0] == '-')
            (*minus)++;
    }
    free(line);
    fclose(f);
}

int review_diff(struct review *r, char *const *paths, size_t npaths, bool stat_only, bool color,
                FILE *out, struct cordon_error *err)
{
    int status = 0;
    long total_plus = 0, total_minus = 0;
    size_t files = 0;
    for (size_t i = 0; i < r->count; i++) {
        const struct review_change *c = &r->changes[i];
        if (!review_selected(c, paths, npaths) || c->kind == REVIEW_SKIPPED)
            continue;
        bool file_old = c->old_type == 'f' && c->kind != REVIEW_ADDED;
        bool file_new = c->type == 'f' && c->kind != REVIEW_DELETED;
        if (!file_old && !file_new) {
            if (!stat_only) {
                fprintf(out, "%s %s: ", review_kind_name(c->kind),
                        type_word(c->kind == REVIEW_DELETED ? c->old_type : c->type));
                put_path(out, c->path);
                if (c->type == 'l' && c->kind != REVIEW_DELETED && c->link) {
                    fputs(" -> ", out);
                    put_path(out, c->link);
                }
                if (c->refused)
                    fprintf(out, " [never applied: %s]", c->refused);
                fputc('\n', out);
            }
            continue;
        }
        int host = -1, sandbox = -1;
        if (review_open_sides(r, c, &host, &sandbox, err) < 0) {
            status = -1;
            continue;
        }
        _cleanup_free_ char *vis =
            text_escape_visible(c->path, strlen(c->path), TEXT_ESCAPE_BACKSLASH, NULL);
        _cleanup_free_ char *from_vis =
            c->from ? text_escape_visible(c->from, strlen(c->from), TEXT_ESCAPE_BACKSLASH, NULL)
                    : NULL;
        char la[PATH_MAX + 8], lb[PATH_MAX + 8];
        snprintf(la, sizeof(la), file_old ? "a/%s" : "/dev/null", from_vis ? from_vis : vis);
        snprintf(lb, sizeof(lb), file_new ? "b/%s" : "/dev/null", vis ? vis : "?");
        files++;
        if (c->kind == REVIEW_MODE) {
            if (!stat_only)
                fprintf(out, "diff %s %s\nold mode %03o\nnew mode %03o\n", la, lb,
                        (unsigned)c->old_mode, (unsigned)c->new_mode);
            else
                fprintf(out, " %s | mode %03o -> %03o\n", vis ? vis : "?", (unsigned)c->old_mode,
                        (unsigned)c->new_mode);
        } else if (review_looks_binary(host) || review_looks_binary(sandbox)) {
            if (stat_only)
                fprintf(out, " %s | binary\n", vis ? vis : "?");
            else
                fprintf(out, "diff %s %s\nBinary files %s and %s differ\n", la, lb, la, lb);
        } else if (stat_only) {
            FILE *tmp = tmpfile();
            long plus = 0, minus = 0;
            if (tmp && review_run_diff(host, sandbox, la, lb, false, fileno(tmp)) == 0)
                count_lines(fileno(tmp), &plus, &minus);
            if (tmp)
                fclose(tmp);
            total_plus += plus;
            total_minus += minus;
            fprintf(out, " %s | %ld %s+%ld%s %s-%ld%s\n", vis ? vis : "?", plus + minus,
                    color ? "\033[32m" : "", plus, color ? "\033[m" : "", color ? "\033[31m" : "",
                    minus, color ? "\033[m" : "");
        } else {
            fprintf(out, "diff %s %s\n", la, lb);
            if (c->kind == REVIEW_MODE || (c->old_mode != c->new_mode && file_old && file_new))
                fprintf(out, "old mode %03o\nnew mode %03o\n", (unsigned)c->old_mode,
                        (unsigned)c->new_mode);
            if (c->kind == REVIEW_RENAMED)
                fprintf(out, "rename from %s\nrename to %s\n", from_vis ? from_vis : "?",
                        vis ? vis : "?");
            if ((fflush(out), review_run_diff(host, sandbox, la, lb, color, fileno(out))) < 0) {
                error_set(err, 0, "diff(1) failed for %s", vis ? vis : "?");
                status = -1;
            }
        }
        if (host >= 0)
            close(host);
        if (sandbox >= 0)
            close(sandbox);
    }
    if (stat_only)
        fprintf(out, " %zu file(s) changed, %ld insertion(s)(+), %ld deletion(s)(-)\n", files,
                total_plus, total_minus);
    fflush(out);
    return status;
}
