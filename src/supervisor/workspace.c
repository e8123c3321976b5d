/* Workspace detection (docs/workspace.md): the root is the directory holding
 * the nearest .git entry above the cwd (read with fds by workspace-git.c,
 * never by host git unless the user set GIT_DIR and friends), else the cwd;
 * roots that would expose the system, shared temporary or runtime
 * directories, or the user's home and credentials are refused. Host context,
 * before any sandbox exists, so failures here simply stop cordon (125). */
#include "supervisor/workspace.h"
#include "supervisor/workspace-git.h"
#include "util/account.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Paths whose overlap with a workspace would expose or let the sandbox write
 * the system. A workspace may not be one of them, inside one, or contain one. */
static const char *const system_dirs[] = {
    "/usr",  "/etc", "/proc",  "/sys",   "/dev",    "/run",  "/var/lib/docker", "/bin",
    "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/var/run",
};

/* Shared temporary directories: other users' and programs' sockets (tmux,
 * ssh-agent, X11, editors) and files live there. Refused as the root itself;
 * a project directory below them is fine. */
static const char *const shared_tmp_dirs[] = {"/tmp", "/var/tmp", "/dev/shm"};

/* Directories of the user's home that hold credentials: a workspace may not
 * be one of them, inside one, or contain one. */
static const char *const credential_dirs[] = {
    ".ssh",
    ".aws",
    ".gnupg",
    ".config",
    ".kube",
    ".docker",
    ".azure",
    ".local/share/keyrings",
    ".password-store",
    ".terraform.d",
};

static bool path_is_under_or_equal(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (strcmp(dir, "/") == 0)
        return true;
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static bool paths_overlap(const char *a, const char *b)
{
    return path_is_under_or_equal(a, b) || path_is_under_or_equal(b, a);
}

/* The runtime directory rule, for DIR (XDG_RUNTIME_DIR or /run/user/UID, as
 * given or canonical). A runtime directory that is itself a shared
 * temporary directory (XDG_RUNTIME_DIR=/tmp) is left to that rule. */
static int check_runtime_dir(const char *root, const char *dir, const char *name,
                             struct cordon_error *err)
{
    if (!dir || dir[0] != '/' || strcmp(dir, "/") == 0)
        return 0;
    for (size_t i = 0; i < ARRAY_SIZE(shared_tmp_dirs); i++)
        if (strcmp(dir, shared_tmp_dirs[i]) == 0)
            return 0;
    if (paths_overlap(root, dir))
        return error_set(err, 0,
                         "workspace %s: refusing a workspace that overlaps the runtime directory "
                         "%s (%s), which holds the sockets of the user's services",
                         root, dir, name);
    return 0;
}

int workspace_check_safe(const char *root, const char *home, struct cordon_error *err)
{
    if (root[0] != '/')
        return error_set(err, 0, "workspace %s: not an absolute path", root);
    if (strcmp(root, "/") == 0)
        return error_set(err, 0, "workspace %s: refusing the root directory as a workspace", root);
    for (size_t i = 0; i < ARRAY_SIZE(shared_tmp_dirs); i++) {
        if (strcmp(root, shared_tmp_dirs[i]) == 0)
            return error_set(err, 0,
                             "workspace %s: refusing a shared temporary directory as a "
                             "workspace: other users' and programs' sockets and files live "
                             "there; run cordon in a project directory",
                             root);
    }
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    char real[PATH_MAX], run_user[64];
    snprintf(run_user, sizeof(run_user), "/run/user/%u", (unsigned)getuid());
    if (check_runtime_dir(root, xdg, "XDG_RUNTIME_DIR", err) < 0 ||
        (xdg && realpath(xdg, real) && check_runtime_dir(root, real, "XDG_RUNTIME_DIR", err) < 0) ||
        check_runtime_dir(root, run_user, "the user's runtime directory", err) < 0)
        return -1;
    for (size_t i = 0; i < ARRAY_SIZE(system_dirs); i++) {
        if (paths_overlap(root, system_dirs[i]))
            return error_set(err, 0,
                             "workspace %s: refusing a workspace that overlaps the system "
                             "directory %s",
                             root, system_dirs[i]);
    }
    char h[PATH_MAX] = "";
    if (home && home[0] == '/')
        snprintf(h, sizeof(h), "%s", home);
    for (size_t n = strlen(h); n > 1 && h[n - 1] == '/'; n--)
        h[n - 1] = '\0';
    if (h[0] && strcmp(h, "/") != 0) {
        if (path_is_under_or_equal(h, root))
            return error_set(err, 0,
                             "workspace %s: refusing the home directory %s (or a directory "
                             "containing it) as a workspace; run cordon in a project directory",
                             root, h);
        for (size_t i = 0; i < ARRAY_SIZE(credential_dirs); i++) {
            char cred[PATH_MAX + 32];
            snprintf(cred, sizeof(cred), "%s/%s", h, credential_dirs[i]);
            if (path_is_under_or_equal(root, cred))
                return error_set(err, 0,
                                 "workspace %s: refusing ~/%s (%s), which holds the user's "
                                 "credentials, or a directory inside it, as a workspace",
                                 root, credential_dirs[i], cred);
            if (path_is_under_or_equal(cred, root))
                return error_set(err, 0,
                                 "workspace %s: refusing a workspace that contains ~/%s (%s), "
                                 "which holds the user's credentials",
                                 root, credential_dirs[i], cred);
        }
    }
    /* Any sticky world-writable directory is shared like /tmp. The mode of
     * what the path names now, through an fd. */
    _cleanup_close_ int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return error_set(err, errno, "workspace %s: cannot examine it", root);
    if ((st.st_mode & S_ISVTX) && (st.st_mode & S_IWOTH))
        return error_set(err, 0,
                         "workspace %s: refusing a sticky world-writable directory (mode %04o) "
                         "as a workspace: it is shared with other users like /tmp; run cordon in "
                         "a project directory",
                         root, (unsigned)(st.st_mode & 07777));
    return 0;
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
    if (pwd && pwd[0] == '/' && !strstr(pwd, "/./") && !strstr(pwd, "/../") && !strstr(pwd, "//") &&
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
    /* The root always contains the cwd (workspace_detect checks it); if it
     * did not, cwd + strlen(root) would point past the end of cwd. */
    if (strcmp(cwd, view_cwd) == 0 || !path_is_under_or_equal(cwd, root))
        return strdup(root);
    const char *rel = strcmp(root, "/") == 0 ? cwd : cwd + strlen(root);
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

/* Every home the rules are checked against: $HOME and the passwd entry's, as
 * given and canonical. */
static size_t home_candidates(char homes[4][PATH_MAX])
{
    size_t n = 0;
    const char *env = getenv("HOME");
    const char *given[2] = {env, account_home(getuid())};
    for (size_t i = 0; i < 2; i++) {
        if (!given[i] || given[i][0] != '/' || strlen(given[i]) >= PATH_MAX)
            continue;
        snprintf(homes[n++], PATH_MAX, "%s", given[i]);
        if (realpath(given[i], homes[n]) && strcmp(homes[n], homes[n - 1]) != 0)
            n++;
    }
    return n;
}

static int check_all_homes(const char *path, struct cordon_error *err)
{
    char homes[4][PATH_MAX];
    size_t n = home_candidates(homes);
    if (workspace_check_safe(path, NULL, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (workspace_check_safe(path, homes[i], err) < 0)
            return -1;
    return 0;
}

int workspace_detect(const char *cwd_in, struct workspace *out, struct cordon_error *err)
{
    struct workspace ws = {0};
    struct ws_git_layout git = {0};
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
        error_set(err, ENOMEM, "workspace");
        goto fail;
    }

    if ((ws_git_env_set() ? ws_git_from_env(ws.cwd, &git, err)
                          : ws_git_discover(ws.cwd, &git, err)) < 0)
        goto fail;
    if (git.root) {
        ws.root = TAKE_PTR(git.root);
        ws.git_dir = TAKE_PTR(git.git_dir);
        ws.git_common_dir = TAKE_PTR(git.common_dir);
        ws.layout_git_dir = strdup(ws.git_dir);
        ws.layout_common_dir = strdup(ws.git_common_dir);
        ws.is_git = true;
        if (!ws.layout_git_dir || !ws.layout_common_dir) {
            error_set(err, ENOMEM, "workspace");
            goto fail;
        }
    } else if (canonical_dup(ws.cwd, &ws.root, err) < 0) {
        goto fail;
    }
    if (!path_is_under_or_equal(ws.cwd, ws.root)) {
        error_set(err, 0, "workspace %s: does not contain the current directory %s; refusing",
                  ws.root, ws.cwd);
        goto fail;
    }
    ws.view_root = lexical_root(ws.root, ws.cwd, ws.view_cwd);
    if (!ws.view_root) {
        error_set(err, ENOMEM, "workspace");
        goto fail;
    }
    if (strcmp(ws.view_root, ws.root) != 0 && !path_is_under_or_equal(ws.view_cwd, ws.view_root)) {
        /* The lexical forms do not line up: use canonical paths throughout. */
        free(ws.view_cwd);
        free(ws.view_root);
        ws.view_cwd = strdup(ws.cwd);
        ws.view_root = strdup(ws.root);
        if (!ws.view_cwd || !ws.view_root) {
            error_set(err, ENOMEM, "workspace");
            goto fail;
        }
    }

    if (check_all_homes(ws.root, err) < 0 || check_all_homes(ws.view_root, err) < 0)
        goto fail;
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
    /* What is bound besides the root obeys the same rules. */
    if (ws.git_common_dir && check_all_homes(ws.git_common_dir, err) < 0) {
        error_prefix(err, "git common directory");
        goto fail;
    }
    if (ws.git_dir && check_all_homes(ws.git_dir, err) < 0) {
        error_prefix(err, "git directory");
        goto fail;
    }
    *out = ws;
    return 0;
fail:
    ws_git_layout_free(&git);
    workspace_free(&ws);
    return -1;
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
    free(ws->layout_git_dir);
    free(ws->layout_common_dir);
    *ws = (struct workspace){0};
}
