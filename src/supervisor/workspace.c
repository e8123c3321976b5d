/* Workspace detection: git worktree root (linked worktrees and submodules
 * included) or cwd; refuses unsafe roots. Host context, before any sandbox
 * exists, so failures here simply stop cordon. */
#include "supervisor/workspace.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Paths whose overlap with a workspace would expose or let the sandbox write
 * the system. A workspace may not be one of them, inside one, or contain one. */
static const char *const system_dirs[] = {
    "/usr",  "/etc", "/proc",  "/sys",   "/dev",    "/run",  "/var/lib/docker", "/bin",
    "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/var/run",
};

static bool path_is_under_or_equal(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (strcmp(dir, "/") == 0)
        return true;
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int workspace_check_safe(const char *root, const char *home, struct cordon_error *err)
{
    if (root[0] != '/')
        return error_set(err, 0, "workspace %s: not an absolute path", root);
    if (strcmp(root, "/") == 0)
        return error_set(err, 0, "workspace %s: refusing the root directory as a workspace", root);
    for (size_t i = 0; i < ARRAY_SIZE(system_dirs); i++) {
        if (path_is_under_or_equal(root, system_dirs[i]) ||
            path_is_under_or_equal(system_dirs[i], root))
            return error_set(err, 0,
                             "workspace %s: refusing a workspace that overlaps the system "
                             "directory %s",
                             root, system_dirs[i]);
    }
    if (home && home[0] == '/' && strcmp(home, "/") != 0 && path_is_under_or_equal(home, root))
        return error_set(err, 0,
                         "workspace %s: refusing the home directory %s (or a directory "
                         "containing it) as a workspace; run cordon in a project directory",
                         root, home);
    return 0;
}

/* Runs git with argv in dir; collects stdout (bounded) and the exit status. */
static int run_git(const char *dir, char *const argv[], char *out, size_t outlen, int *status,
                   char *errbuf, size_t errlen, struct cordon_error *err)
{
    int outpipe[2], errpipe[2];
    if (pipe2(outpipe, O_CLOEXEC) < 0)
        return error_set(err, errno, "workspace: pipe");
    if (pipe2(errpipe, O_CLOEXEC) < 0) {
        close(outpipe[0]);
        close(outpipe[1]);
        return error_set(err, errno, "workspace: pipe");
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, outpipe[1], 1);
    posix_spawn_file_actions_adddup2(&fa, errpipe[1], 2);
    posix_spawn_file_actions_addchdir_np(&fa, dir);
    pid_t pid;
    int rc = posix_spawnp(&pid, "git", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(outpipe[1]);
    close(errpipe[1]);
    if (rc != 0) {
        close(outpipe[0]);
        close(errpipe[0]);
        if (rc == ENOENT) {
            *status = -1; /* no git: treated as "not a repository" by the caller */
            return 0;
        }
        return error_set(err, rc, "workspace: cannot run git");
    }
    size_t outpos = 0, errpos = 0;
    struct pollfd fds[2] = {{outpipe[0], POLLIN, 0}, {errpipe[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char chunk[4096];
            ssize_t n = read(fds[i].fd, chunk, sizeof(chunk));
            if (n <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
                continue;
            }
            char *dst = i == 0 ? out : errbuf;
            size_t *pos = i == 0 ? &outpos : &errpos;
            size_t cap = i == 0 ? outlen : errlen;
            size_t take = (size_t)n;
            if (*pos + take >= cap)
                take = cap - 1 - *pos;
            memcpy(dst + *pos, chunk, take);
            *pos += take;
        }
    }
    out[outpos] = '\0';
    errbuf[errpos] = '\0';
    int wstatus;
    while (waitpid(pid, &wstatus, 0) < 0) {
        if (errno != EINTR)
            return error_set(err, errno, "workspace: waitpid git");
    }
    *status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    return 0;
}

/* Looks for a .git entry in dir or its ancestors, without running git: the
 * common case outside any repository costs no process. */
static bool has_git_marker_upwards(const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s", dir);
    for (;;) {
        char probe[PATH_MAX + 8];
        snprintf(probe, sizeof(probe), "%s/.git", strcmp(path, "/") == 0 ? "" : path);
        struct stat st;
        if (lstat(probe, &st) == 0)
            return true;
        char *slash = strrchr(path, '/');
        if (!slash || slash == path) {
            if (strcmp(path, "/") == 0)
                return false;
            strcpy(path, "/");
            continue;
        }
        *slash = '\0';
    }
}

static char *trim_line(char *s)
{
    char *nl = strchr(s, '\n');
    if (nl)
        *nl = '\0';
    return s;
}

static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* The lexical cwd: $PWD when it names the same directory as the canonical cwd
 * and has no "." or ".." components (what the user typed, through symlinks). */
static char *lexical_cwd(const char *canonical)
{
    const char *pwd = getenv("PWD");
    if (pwd && pwd[0] == '/' && !strstr(pwd, "/./") && !strstr(pwd, "/../") &&
        strlen(pwd) < PATH_MAX && same_file(pwd, canonical)) {
        size_t n = strlen(pwd);
        bool bad_tail = (n >= 2 && strcmp(pwd + n - 2, "/.") == 0) ||
                        (n >= 3 && strcmp(pwd + n - 3, "/..") == 0);
        if (!bad_tail)
            return strdup(pwd);
    }
    return strdup(canonical);
}

/* Maps the canonical root to its lexical form by dropping from the lexical cwd
 * as many trailing components as the canonical cwd has below the root. */
static char *lexical_root(const char *root, const char *cwd, const char *view_cwd)
{
    if (strcmp(cwd, view_cwd) == 0)
        return strdup(root);
    const char *rel = cwd + strlen(root);
    size_t depth = 0;
    for (const char *p = rel; *p; p++)
        depth += *p == '/';
    char *candidate = strdup(view_cwd);
    if (!candidate)
        return NULL;
    for (size_t i = 0; i < depth; i++) {
        char *slash = strrchr(candidate, '/');
        if (!slash || slash == candidate)
            break;
        *slash = '\0';
    }
    if (same_file(candidate, root))
        return candidate;
    free(candidate);
    return strdup(root);
}

static int canonical_dup(const char *path, char **out, struct cordon_error *err)
{
    char *r = realpath(path, NULL);
    if (!r)
        return error_set(err, errno, "workspace: cannot resolve %s", path);
    *out = r;
    return 0;
}

int workspace_detect(const char *cwd_in, struct workspace *out, struct cordon_error *err)
{
    struct workspace ws = {0};
    char cwdbuf[PATH_MAX];
    const char *cwd = cwd_in;
    if (!cwd) {
        if (!getcwd(cwdbuf, sizeof(cwdbuf)))
            return error_set(err, errno, "workspace: getcwd");
        cwd = cwdbuf;
    }
    if (canonical_dup(cwd, &ws.cwd, err) < 0)
        return -1;
    ws.view_cwd = cwd_in ? strdup(ws.cwd) : lexical_cwd(ws.cwd);
    if (!ws.view_cwd) {
        workspace_free(&ws);
        return error_set(err, ENOMEM, "workspace");
    }

    bool maybe_git = has_git_marker_upwards(ws.cwd) || getenv("GIT_DIR") || getenv("GIT_WORK_TREE");
    if (maybe_git) {
        char out_buf[3 * PATH_MAX + 64], err_buf[2048];
        int status = 0;
        char *argv[] = {
            "git", "rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir", NULL};
        if (run_git(ws.cwd, argv, out_buf, sizeof(out_buf), &status, err_buf, sizeof(err_buf),
                    err) < 0) {
            workspace_free(&ws);
            return -1;
        }
        if (status == 0) {
            char *save = NULL;
            char *top = strtok_r(out_buf, "\n", &save);
            char *gitdir = strtok_r(NULL, "\n", &save);
            char *common = strtok_r(NULL, "\n", &save);
            if (!top || !gitdir || !common) {
                workspace_free(&ws);
                return error_set(err, 0, "workspace: unexpected output from git rev-parse");
            }
            /* --git-common-dir may be relative to the cwd. */
            char common_abs[2 * PATH_MAX + 2];
            if (common[0] != '/')
                snprintf(common_abs, sizeof(common_abs), "%s/%s", ws.cwd, common);
            else
                snprintf(common_abs, sizeof(common_abs), "%s", common);
            if (canonical_dup(top, &ws.root, err) < 0 ||
                canonical_dup(gitdir, &ws.git_dir, err) < 0 ||
                canonical_dup(common_abs, &ws.git_common_dir, err) < 0) {
                workspace_free(&ws);
                return -1;
            }
            ws.is_git = true;
        } else if (status == -1 || strstr(err_buf, "not a git repository")) {
            /* Not a repository (or no git at all): the cwd is the workspace. */
        } else {
            trim_line(err_buf);
            workspace_free(&ws);
            return error_set(err, 0,
                             "workspace: git rev-parse failed in %s (exit %d): %s; refusing to "
                             "guess the workspace",
                             cwd, status, err_buf[0] ? err_buf : "no message");
        }
    }
    if (!ws.root && canonical_dup(ws.cwd, &ws.root, err) < 0) {
        workspace_free(&ws);
        return -1;
    }
    ws.view_root = lexical_root(ws.root, ws.cwd, ws.view_cwd);
    if (!ws.view_root) {
        workspace_free(&ws);
        return error_set(err, ENOMEM, "workspace");
    }
    if (strcmp(ws.view_root, ws.root) != 0 && !path_is_under_or_equal(ws.view_cwd, ws.view_root)) {
        /* The lexical forms do not line up: use canonical paths throughout. */
        free(ws.view_cwd);
        free(ws.view_root);
        ws.view_cwd = strdup(ws.cwd);
        ws.view_root = strdup(ws.root);
    }

    const char *home = getenv("HOME");
    struct passwd *pw = getpwuid(getuid());
    char home_canon[PATH_MAX];
    if (workspace_check_safe(ws.root, home, err) < 0 ||
        workspace_check_safe(ws.view_root, home, err) < 0 ||
        (pw && pw->pw_dir && workspace_check_safe(ws.root, pw->pw_dir, err) < 0) ||
        (home && realpath(home, home_canon) &&
         workspace_check_safe(ws.root, home_canon, err) < 0)) {
        workspace_free(&ws);
        return -1;
    }
    /* Git metadata inside the root is covered by the workspace bind. */
    if (ws.git_dir && path_is_under_or_equal(ws.git_dir, ws.root)) {
        free(ws.git_dir);
        ws.git_dir = NULL;
    }
    if (ws.git_common_dir && path_is_under_or_equal(ws.git_common_dir, ws.root)) {
        free(ws.git_common_dir);
        ws.git_common_dir = NULL;
    }
    if (ws.git_dir && ws.git_common_dir && path_is_under_or_equal(ws.git_dir, ws.git_common_dir)) {
        free(ws.git_dir);
        ws.git_dir = NULL;
    }
    for (const char *extra = ws.git_common_dir; extra; extra = NULL) {
        if (workspace_check_safe(extra, home, err) < 0) {
            workspace_free(&ws);
            return error_prefix(err, "git common directory");
        }
    }
    *out = ws;
    return 0;
}

void workspace_free(struct workspace *ws)
{
    if (!ws)
        return;
    free(ws->root);
    free(ws->view_root);
    free(ws->cwd);
    free(ws->view_cwd);
    free(ws->git_dir);
    free(ws->git_common_dir);
    *ws = (struct workspace){0};
}
