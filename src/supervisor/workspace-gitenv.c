/* Workspace detection when the host user set GIT_DIR, GIT_WORK_TREE or
 * GIT_COMMON_DIR (docs/workspace.md): host git rev-parse, run so that nothing
 * it reads can make it execute anything, and its answer checked against the
 * environment and the on-disk layout. Host context, unprivileged, before any
 * sandbox exists. */
#include "supervisor/workspace-git.h"
#include "util/cleanup.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define GIT_TIMEOUT_MS 10000

bool ws_git_env_set(void)
{
    return getenv("GIT_DIR") || getenv("GIT_WORK_TREE") || getenv("GIT_COMMON_DIR");
}

/* git from a system location first: a PATH entry inside a workspace (a
 * project's bin/) could hold a git the sandbox wrote. */
static bool find_git(char *buf, size_t cap)
{
    static const char *const fixed[] = {"/usr/bin/git", "/bin/git", "/usr/local/bin/git"};
    for (size_t i = 0; i < ARRAY_SIZE(fixed); i++) {
        if (access(fixed[i], X_OK) == 0) {
            snprintf(buf, cap, "%s", fixed[i]);
            return true;
        }
    }
    const char *path = getenv("PATH");
    _cleanup_free_ char *copy = path ? strdup(path) : NULL;
    char *save = NULL;
    for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
        struct stat st;
        if (d[0] != '/') /* never "." or a relative entry: the cwd is the workspace */
            continue;
        snprintf(buf, cap, "%s/git", d);
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
            return true;
    }
    return false;
}

/* The environment host git runs with: nothing from system or global config
 * (USER_CONFIG: the user's global configuration, which is theirs, not the
 * sandbox's), no pager, no prompt, no optional locks; the user's discovery
 * variables. */
static int git_env(char **envp, size_t cap, char *storage, size_t storage_cap, bool user_config)
{
    static const char *const keep[] = {
        "GIT_DIR=",
        "GIT_WORK_TREE=",
        "GIT_COMMON_DIR=",
        "GIT_CEILING_DIRECTORIES=",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM=",
        "GIT_OBJECT_DIRECTORY=",
        "HOME=",
        "PATH=",
    };
    static const char *const user_keep[] = {"XDG_CONFIG_HOME=", "GIT_CONFIG_GLOBAL="};
    static const char *const fixed[] = {
        "GIT_CONFIG_NOSYSTEM=1",
        "GIT_CONFIG_SYSTEM=/dev/null",
        "GIT_CONFIG_GLOBAL=/dev/null", /* last but one: dropped for USER_CONFIG */
        "GIT_OPTIONAL_LOCKS=0",
        "GIT_TERMINAL_PROMPT=0",
        "GIT_PAGER=cat",
        "PAGER=cat",
        "GIT_ATTR_NOSYSTEM=1",
        "GIT_NO_REPLACE_OBJECTS=1",
        "LC_ALL=C",
    };
    size_t n = 0, used = 0;
    for (char **e = environ; *e && n + ARRAY_SIZE(fixed) + 1 < cap; e++) {
        bool take = false;
        for (size_t i = 0; i < ARRAY_SIZE(keep) && !take; i++)
            take = strncmp(*e, keep[i], strlen(keep[i])) == 0;
        for (size_t i = 0; user_config && i < ARRAY_SIZE(user_keep) && !take; i++)
            take = strncmp(*e, user_keep[i], strlen(user_keep[i])) == 0;
        if (take) {
            size_t len = strlen(*e) + 1;
            if (used + len > storage_cap)
                return -1;
            memcpy(storage + used, *e, len);
            envp[n++] = storage + used;
            used += len;
        }
    }
    for (size_t i = 0; i < ARRAY_SIZE(fixed); i++) {
        if (user_config && strncmp(fixed[i], "GIT_CONFIG_GLOBAL=", 18) == 0)
            continue;
        envp[n++] = (char *)fixed[i];
    }
    envp[n] = NULL;
    return 0;
}

/* Runs git ARGV in DIR; stdout and stderr collected (bounded), at most
 * GIT_TIMEOUT_MS; *OUT_LEN (when not NULL): the bytes of stdout kept (at
 * most OUTLEN - 1, NUL-terminated after). *status -1: no git installed. */
static int run_git_n(const char *dir, char *const argv[], bool user_config, char *out,
                     size_t outlen, size_t *out_len, char *errbuf, size_t errlen, int *status,
                     struct cordon_error *err)
{
    char git[PATH_MAX];
    if (!find_git(git, sizeof(git))) {
        *status = -1;
        return 0;
    }
    char *envp[32];
    char storage[8 * PATH_MAX];
    if (git_env(envp, ARRAY_SIZE(envp), storage, sizeof(storage), user_config) < 0)
        return error_set(err, E2BIG, "workspace: the git environment is too large");
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
    int rc = posix_spawn(&pid, git, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(outpipe[1]);
    close(errpipe[1]);
    if (rc != 0) {
        close(outpipe[0]);
        close(errpipe[0]);
        return error_set(err, rc, "workspace: cannot run %s", git);
    }
    size_t pos[2] = {0, 0};
    struct pollfd fds[2] = {{outpipe[0], POLLIN, 0}, {errpipe[0], POLLIN, 0}};
    int open_fds = 2;
    long long deadline = clock_now_ms() + GIT_TIMEOUT_MS;
    bool timed_out = false;
    while (open_fds > 0) {
        long long left = deadline - clock_now_ms();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        int pr = poll(fds, 2, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0)
            break;
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
            size_t cap = i == 0 ? outlen : errlen;
            size_t take = (size_t)n;
            if (pos[i] + take >= cap)
                take = cap - 1 - pos[i];
            memcpy(dst + pos[i], chunk, take);
            pos[i] += take;
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    out[pos[0]] = '\0';
    errbuf[pos[1]] = '\0';
    if (out_len)
        *out_len = pos[0];
    if (timed_out)
        kill(pid, SIGKILL);
    int wstatus;
    while (waitpid(pid, &wstatus, 0) < 0) {
        if (errno != EINTR)
            return error_set(err, errno, "workspace: waitpid git");
    }
    if (timed_out)
        return error_set(err, ETIMEDOUT, "workspace: git rev-parse did not answer within %d s",
                         GIT_TIMEOUT_MS / 1000);
    *status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    return 0;
}

static int run_git(const char *dir, char *const argv[], bool user_config, char *out, size_t outlen,
                   char *errbuf, size_t errlen, int *status, struct cordon_error *err)
{
    return run_git_n(dir, argv, user_config, out, outlen, NULL, errbuf, errlen, status, err);
}

/* The canonical form of the environment variable NAME (relative to CWD). */
static int env_path(const char *name, const char *cwd, char **real, struct cordon_error *err)
{
    const char *v = getenv(name);
    *real = NULL;
    if (!v || !*v)
        return 0;
    char joined[2 * PATH_MAX + 2];
    if (ws_path_resolve(cwd, v, joined, sizeof(joined)) < 0 || !(*real = realpath(joined, NULL)))
        return error_set(err, errno ? errno : ENAMETOOLONG, "workspace: %s=%s cannot be resolved",
                         name, v);
    return 0;
}

static int expect_same(const char *what, const char *got, const char *want, const char *why,
                       struct cordon_error *err)
{
    if (strcmp(got, want) == 0)
        return 0;
    return error_set(err, 0, "workspace: git reports the %s %s, but %s is %s; refusing", what, got,
                     why, want);
}

/* What GIT_DIR, GIT_WORK_TREE and GIT_COMMON_DIR name (resolved), and
 * what cordon's own discovery found when GIT_DIR is not set. */
struct git_env {
    char *dir, *tree, *common;
    struct ws_git_layout walked;
};

/* git rev-parse in cwd: 1 with *top, *gitdir and *common pointing into
 * out_buf; 0 when cwd is in no repository; -1 with err. */
static int rev_parse(const char *cwd, char *out_buf, size_t out_size, char **top, char **gitdir,
                     char **common, struct cordon_error *err)
{
    char err_buf[2048];
    int status = 0;
    char *argv[] = {"git",
                    "--no-pager",
                    "-c",
                    "core.fsmonitor=false",
                    "-c",
                    "core.hooksPath=/dev/null",
                    "-c",
                    "core.untrackedCache=false",
                    "rev-parse",
                    "--show-toplevel",
                    "--absolute-git-dir",
                    "--git-common-dir",
                    NULL};
    if (run_git(cwd, argv, false, out_buf, out_size, err_buf, sizeof(err_buf), &status, err) < 0)
        return -1;
    if (status == -1 || (status != 0 && strstr(err_buf, "not a git repository")))
        return 0; /* the cwd is the workspace */
    if (status != 0) {
        char *nl = strchr(err_buf, '\n');
        if (nl)
            *nl = '\0';
        return error_set(err, 0,
                         "workspace: git rev-parse failed in %s (exit %d): %s; refusing to guess "
                         "the workspace",
                         cwd, status, err_buf[0] ? err_buf : "no message");
    }
    char *save = NULL;
    *top = strtok_r(out_buf, "\n", &save);
    *gitdir = strtok_r(NULL, "\n", &save);
    *common = strtok_r(NULL, "\n", &save);
    if (!*top || !*gitdir || !*common)
        return error_set(err, 0, "workspace: unexpected output from git rev-parse");
    return 1;
}

/* The work tree: GIT_WORK_TREE, else (GIT_DIR alone) the cwd, else the
 * discovered root; never a core.worktree from repository config, which a
 * sandbox could have written. It must contain the cwd. */
static int check_work_tree(const struct git_env *e, const char *cwd, const char *rtop,
                           struct cordon_error *err)
{
    if (e->tree) {
        if (expect_same("work tree", rtop, e->tree, "GIT_WORK_TREE", err) < 0)
            return -1;
    } else if (e->dir) {
        if (expect_same("work tree", rtop, cwd,
                        "with GIT_DIR set and no GIT_WORK_TREE (a core.worktree in the "
                        "repository's configuration is not honoured: set GIT_WORK_TREE) the work "
                        "tree must be the current directory, which",
                        err) < 0)
            return -1;
    } else if (!e->walked.root) {
        return error_set(err, 0,
                         "workspace: git reports the work tree %s, but no .git entry lies above "
                         "%s; set GIT_DIR too",
                         rtop, cwd);
    }
    if (!ws_path_under(cwd, rtop))
        return error_set(err, 0,
                         "workspace: the work tree %s does not contain the current directory %s",
                         rtop, cwd);
    return 0;
}

/* The git and common directories git reports against what the environment
 * or discovery named. */
static int check_git_dirs(const struct git_env *e, const char *rgit, const char *rcommon,
                          struct cordon_error *err)
{
    if (e->dir) {
        if (expect_same("git directory", rgit, e->dir, "GIT_DIR", err) < 0)
            return -1;
    } else if (expect_same("git directory", rgit, e->walked.git_dir,
                           "the .git entry cordon found names", err) < 0) {
        return -1;
    }
    if (e->common)
        return expect_same("common directory", rcommon, e->common, "GIT_COMMON_DIR", err);
    if (!e->dir)
        return expect_same("common directory", rcommon, e->walked.common_dir,
                           "the .git entry cordon found leads to", err);
    if (strcmp(rcommon, rgit) != 0) {
        /* GIT_DIR names a linked worktree's git directory: the same
         * structure as discovery requires. */
        char expect[PATH_MAX + 16];
        ws_path_join(expect, sizeof(expect), rcommon, "worktrees");
        const char *slash = strrchr(rgit, '/');
        if (!slash || (size_t)(slash - rgit) != strlen(expect) ||
            strncmp(rgit, expect, strlen(expect)) != 0)
            return error_set(err, 0,
                             "workspace: git reports the common directory %s for GIT_DIR %s, "
                             "which is not in its worktrees/; refusing",
                             rcommon, rgit);
    }
    return 0;
}

/* What git reports, resolved and checked, into out. */
static int layout_from_git(const struct git_env *e, const char *cwd, char *out_buf, size_t out_size,
                           struct ws_git_layout *out, struct cordon_error *err)
{
    char *top = NULL, *gitdir = NULL, *common = NULL;
    int found = rev_parse(cwd, out_buf, out_size, &top, &gitdir, &common, err);
    if (found <= 0)
        return found;
    char common_abs[2 * PATH_MAX + 2];
    _cleanup_free_ char *rtop = NULL, *rgit = NULL, *rcommon = NULL;
    /* --git-common-dir may be relative to the cwd. */
    if (ws_path_resolve(cwd, common, common_abs, sizeof(common_abs)) < 0 ||
        !(rtop = realpath(top, NULL)) || !(rgit = realpath(gitdir, NULL)) ||
        !(rcommon = realpath(common_abs, NULL)))
        return error_set(err, errno, "workspace: cannot resolve what git rev-parse reports");
    if (check_work_tree(e, cwd, rtop, err) < 0 || check_git_dirs(e, rgit, rcommon, err) < 0)
        return -1;
    return ws_git_layout_set(out,
                             e->tree  ? e->tree
                             : e->dir ? cwd
                                      : e->walked.root,
                             rgit, rcommon, err);
}

int ws_git_from_env(const char *cwd, struct ws_git_layout *out, struct cordon_error *err)
{
    struct git_env e = {0};
    int rc = -1;
    if (env_path("GIT_DIR", cwd, &e.dir, err) < 0 ||
        env_path("GIT_WORK_TREE", cwd, &e.tree, err) < 0 ||
        env_path("GIT_COMMON_DIR", cwd, &e.common, err) < 0)
        goto done;
    /* Without GIT_DIR, git discovers the git directory from the cwd as we
     * do: the same checks apply, and git must agree with them. */
    if (!e.dir && ws_git_discover(cwd, &e.walked, err) < 0)
        goto done;
    char out_buf[3 * PATH_MAX + 64];
    rc = layout_from_git(&e, cwd, out_buf, sizeof(out_buf), out, err);
done:
    ws_git_layout_free(&e.walked);
    free(e.dir);
    free(e.tree);
    free(e.common);
    return rc;
}

int ws_git_config_get(const char *dir, const char *file, const char *key, char *out, size_t outlen,
                      bool *found, struct cordon_error *err)
{
    /* `config --get` parses files and prints a value: it runs no alias,
     * helper or hook. --global or --file: no repository's configuration
     * joins in; run in DIR (the workspace), the user's includeIf "gitdir:"
     * conditions match as they do for git there. */
    char *global_argv[] = {"git",        "config", "--null",    "--global",
                           "--includes", "--get",  (char *)key, NULL};
    char *file_argv[] = {"git",           "config", "--null",    "--file", (char *)file,
                         "--no-includes", "--get",  (char *)key, NULL};
    char err_buf[1024];
    int status = 0;
    *found = false;
    if (outlen == 0)
        return error_set(err, EINVAL, "git config %s: no room", key);
    out[0] = '\0';
    if (run_git(dir ? dir : "/", file ? file_argv : global_argv, !file, out, outlen, err_buf,
                sizeof(err_buf), &status, err) < 0)
        return -1;
    if (status == -1 || status == 1)
        return 0; /* no git, or the key is not set */
    if (status != 0) {
        char *nl = strchr(err_buf, '\n');
        if (nl)
            *nl = '\0';
        return error_set(err, 0, "git config --get %s%s%s failed (exit %d): %s", key,
                         file ? " in " : "", file ? file : "", status,
                         err_buf[0] ? err_buf : "no message");
    }
    /* --null: the value ends with a NUL; one that filled the buffer did
     * not fit. */
    size_t len = strnlen(out, outlen);
    if (len + 1 >= outlen)
        return error_set(err, E2BIG, "git config %s: the value is longer than %zu bytes", key,
                         outlen - 2);
    *found = true;
    return 0;
}

int ws_git_config_list(const char *dir, const char *file, const char *regexp, char *out,
                       size_t outlen, size_t *len, struct cordon_error *err)
{
    /* As ws_git_config_get, one process for every key REGEXP matches. */
    char *global_argv[] = {"git",        "config",       "--null",       "--global",
                           "--includes", "--get-regexp", (char *)regexp, NULL};
    char *file_argv[] = {"git",           "config",       "--null",       "--file", (char *)file,
                         "--no-includes", "--get-regexp", (char *)regexp, NULL};
    char err_buf[1024];
    int status = 0;
    *len = 0;
    if (outlen == 0)
        return error_set(err, EINVAL, "git config %s: no room", regexp);
    out[0] = '\0';
    if (run_git_n(dir ? dir : "/", file ? file_argv : global_argv, !file, out, outlen, len, err_buf,
                  sizeof(err_buf), &status, err) < 0)
        return -1;
    if (status == -1 || status == 1)
        return 0; /* no git, or no key matches */
    if (status != 0) {
        char *nl = strchr(err_buf, '\n');
        if (nl)
            *nl = '\0';
        return error_set(err, 0, "git config --get-regexp %s%s%s failed (exit %d): %s", regexp,
                         file ? " in " : "", file ? file : "", status,
                         err_buf[0] ? err_buf : "no message");
    }
    /* Output that filled the buffer may have been cut. */
    if (*len + 1 >= outlen)
        return error_set(err, E2BIG, "git config %s: more than %zu bytes of values", regexp,
                         outlen - 2);
    return 0;
}
