/* Unit tests of launch_prepare (supervisor/launch.c), the builder of the
 * sandbox's spec from a workspace, a home and the configuration's layers: a
 * scratch git workspace, HOME and a user configuration file, and what the
 * spec says (workspace, cwd, home, protected paths, git metadata, mounts,
 * limits, environment, name, agent) and what it refuses. And the host
 * user's workspace is left as it was: launch_prepare reads it, it never
 * writes there (it once created a missing .git/hooks). Host context, any
 * uid; nothing is started. */
#include "supervisor/launch.h"
#include "tap.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the workspace's state: every path, its type, mode, size and mtime ---- */

static char snap[65536];
static size_t snap_len;
static size_t snap_root_len;

static int snap_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    int n = snprintf(snap + snap_len, sizeof(snap) - snap_len, "%s %o %lld %lld.%09ld\n",
                     path + snap_root_len, (unsigned)st->st_mode, (long long)st->st_size,
                     (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
    if (n < 0 || (size_t)n >= sizeof(snap) - snap_len)
        return 1;
    snap_len += (size_t)n;
    return 0;
}

/* A malloc'd listing of the tree below root (NULL when it does not fit). */
static char *snapshot(const char *root)
{
    snap_len = 0;
    snap[0] = '\0';
    snap_root_len = strlen(root);
    if (nftw(root, snap_one, 16, FTW_PHYS) != 0)
        return NULL;
    return strdup(snap);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        tap_bail("writing %s", path);
}

static bool has_str(const char *const *list, const char *want)
{
    for (size_t i = 0; list && list[i]; i++)
        if (strcmp(list[i], want) == 0)
            return true;
    return false;
}

static bool env_has_prefix(char *const *env, const char *prefix)
{
    for (size_t i = 0; env && env[i]; i++)
        if (strncmp(env[i], prefix, strlen(prefix)) == 0)
            return true;
    return false;
}

static char root[PATH_MAX], ws[300], home[300], data[300];

static void the_spec(void)
{
    const char *sets[] = {"limits.memory_mib=256", "env.mode=allowlist", NULL};
    struct launch_request req = {sets, NULL, NULL, NULL};
    struct launch l;
    struct cordon_error err = {0};
    int rc = launch_prepare(&req, &l, &err);
    is_int(rc, 0, "launch_prepare builds a spec");
    if (rc < 0) {
        tap_diag("%s", err.message);
        return;
    }
    const struct ns_spec *s = &l.spec;
    is_str(l.backend->name, "ns", "the default backend, through the table");
    ok(strstr(l.backend_reason, "set by") != NULL, "the backend's reason says who chose it: %s",
       l.backend_reason);
    is_str(s->workspace, ws, "the workspace is the git repository's top");
    is_str(s->workspace_view, ws, "... seen inside at the same path");
    char cwd[PATH_MAX + 16];
    snprintf(cwd, sizeof(cwd), "%s/sub", ws);
    is_str(s->cwd, cwd, "the cwd inside is the directory cordon was started in");
    is_str(s->home, home, "HOME inside is the user's home path");
    ok(!s->workspace_readonly, "the workspace is writable by default");
    ok(has_str(s->protected_paths, ".git/hooks") && has_str(s->protected_paths, ".git/config") &&
           has_str(s->protected_paths, ".cordon.toml"),
       "the always-protected paths are protected");
    ok(has_str(s->protected_paths, "secrets.txt"), "the user's protected path is added");
    char git[PATH_MAX + 16];
    snprintf(git, sizeof(git), "%s/.git", ws);
    ok(s->git_dirs && !s->git_dirs[0], "a plain repository's .git is the workspace's: no extra "
                                       "git directory");
    ok(l.ws.is_git && strcmp(l.ws.layout_git_dir, git) == 0, "... but its layout is known");
    ok(s->nmounts >= 1 && strcmp(s->mounts[0].host_path, data) == 0 &&
           strcmp(s->mounts[0].guest_path, "/data") == 0 && s->mounts[0].readonly,
       "the configured mount, read-only");
    is_int(s->limits.memory_mib, 256, "a --set limit wins over the user file");
    is_int(s->limits.pids, 77, "the user file's limit");
    is_int(l.limits.pids, s->limits.pids, "the backend-neutral limits are the spec's");
    ok(env_has_prefix(s->envp, "LAUNCH_TEST_ALLOWED=yes"), "env.allow passes its variable");
    ok(!env_has_prefix(s->envp, "LAUNCH_TEST_SECRET="), "... and nothing else of the host's");
    char home_env[PATH_MAX + 16];
    snprintf(home_env, sizeof(home_env), "HOME=%s", home);
    ok(env_has_prefix(s->envp, home_env), "HOME is set inside");
    is_str(s->name, "launch-test", "sandbox_name names the sandbox");
    is_str(s->agent_path, getenv("CORDON_AGENT"), "the agent binary");
    ok(s->etc_cache_root && strstr(s->etc_cache_root, "/cordon/.etc"),
       "the curated /etc is prepared in the state root");
    is_int(s->control_fd, -1, "the control fd is the caller's to fill");
    ok(s->argv == NULL, "so is the argv");
    is_int(l.net.mode, NET_MODE_DENY, "network deny by default");
    launch_free(&l);

    const char *ro[] = {"workspace_readonly=true", NULL};
    req.session_sets = ro;
    rc = launch_prepare(&req, &l, &err);
    is_int(rc, 0, "workspace_readonly: builds");
    if (rc == 0) {
        ok(l.spec.workspace_readonly, "workspace_readonly reaches the spec");
        launch_free(&l);
    } else {
        tap_diag("%s", err.message);
    }
}

/* A linked worktree keeps its git metadata in the main repository's .git:
 * that directory joins the plan (the worktree's own git directory is
 * inside it). */
static void linked_worktree(const char *wt)
{
    char here[PATH_MAX];
    if (!getcwd(here, sizeof(here)) || chdir(wt) < 0)
        tap_bail("chdir %s", wt);
    struct launch l;
    struct cordon_error err = {0};
    int rc = launch_prepare(NULL, &l, &err);
    is_int(rc, 0, "a linked worktree: builds");
    if (rc == 0) {
        char common[PATH_MAX + 16], gitdir[PATH_MAX + 32];
        snprintf(common, sizeof(common), "%s/.git", ws);
        snprintf(gitdir, sizeof(gitdir), "%s/.git/worktrees/wt", ws);
        is_str(l.spec.workspace, wt, "the worktree is the workspace");
        ok(l.spec.git_dirs && l.spec.git_dirs[0] && strcmp(l.spec.git_dirs[0], common) == 0 &&
               !l.spec.git_dirs[1],
           "the main repository's .git (outside the workspace) is in the plan, once");
        is_str(l.ws.layout_git_dir, gitdir,
               "the worktree's git directory (inside the main .git) is known");
        launch_free(&l);
    } else {
        tap_diag("%s", err.message);
    }
    if (chdir(here) < 0)
        tap_bail("chdir back");
}

static void refusals(void)
{
    struct launch l;
    struct cordon_error err = {0};
    struct launch_request attach = {NULL, NULL, NULL, "no-such-sandbox"};
    ok(launch_prepare(&attach, &l, &err) < 0 && strstr(err.message, "no sandbox named "
                                                                    "no-such-sandbox"),
       "attaching to a sandbox that does not exist: %s", err.message);

    /* backend_floor is host-owned: the user's policy directory. */
    char policy[400];
    snprintf(policy, sizeof(policy), "%.300s/.config/cordon/policy", home);
    if (mkdir(policy, 0700) < 0)
        tap_bail("mkdir %s", policy);
    strcat(policy, "/default.toml");
    write_file(policy, "backend_floor = \"kernel-boundary\"\n");
    struct launch_request req = {NULL, NULL, NULL, NULL};
    err = (struct cordon_error){0};
    ok(launch_prepare(&req, &l, &err) < 0 && strstr(err.message, "below backend_floor"),
       "a backend below backend_floor is refused: %s", err.message);
    unlink(policy);

    const char *name[] = {"sandbox_name=../x", NULL};
    req.session_sets = name;
    err = (struct cordon_error){0};
    ok(launch_prepare(&req, &l, &err) < 0 && strstr(err.message, "sandbox_name"),
       "a sandbox name that is a path is refused: %s", err.message);
}

int main(void)
{
    char tmpl[] = "/tmp/cordon-launch-XXXXXX";
    if (!mkdtemp(tmpl) || !realpath(tmpl, root) || strlen(root) > 200)
        tap_bail("mkdtemp");
    char etc[300], state[300], cfgdir[340], wt[300], cmd[4096];
    snprintf(ws, sizeof(ws), "%.200s/ws", root);
    snprintf(home, sizeof(home), "%.200s/home", root);
    snprintf(data, sizeof(data), "%.200s/data", root);
    snprintf(wt, sizeof(wt), "%.200s/wt", root);
    snprintf(etc, sizeof(etc), "%.200s/etc", root);
    snprintf(state, sizeof(state), "%.200s/state", root);
    snprintf(cfgdir, sizeof(cfgdir), "%s/.config/cordon", home);
    if (mkdir(ws, 0700) < 0 || mkdir(home, 0700) < 0 || mkdir(data, 0700) < 0 ||
        mkdir(etc, 0700) < 0 || mkdir(state, 0700) < 0)
        tap_bail("mkdir");
    snprintf(cmd, sizeof(cmd),
             "git init -q '%s' && rm -rf '%s/.git/hooks' && mkdir -p '%s/sub' '%s' && "
             "echo x > '%s/sub/file' && git -C '%s' -c user.name=t -c user.email=t@t commit -q "
             "--allow-empty -m x && git -C '%s' worktree add -q '%s' 2>/dev/null",
             ws, ws, ws, cfgdir, ws, ws, ws, wt);
    if (system(cmd) != 0)
        tap_bail("git init");
    char user_file[360], line[1024];
    snprintf(user_file, sizeof(user_file), "%s/config.toml", cfgdir);
    snprintf(line, sizeof(line),
             "sandbox_name = \"launch-test\"\nprotected_paths = [\"secrets.txt\"]\n"
             "[env]\nallow = [\"LAUNCH_TEST_ALLOWED\"]\n[limits]\npids = 77\n"
             "[[mounts]]\nhost_path = \"%s\"\nguest_path = \"/data\"\nreadonly = true\n",
             data);
    write_file(user_file, line);
    tap_launch_env(home, etc);
    setenv("XDG_STATE_HOME", state, 1);
    setenv("LAUNCH_TEST_ALLOWED", "yes", 1);
    setenv("LAUNCH_TEST_SECRET", "no", 1);
    unsetenv("XDG_RUNTIME_DIR");
    char sub[PATH_MAX + 16];
    snprintf(sub, sizeof(sub), "%s/sub", ws);
    if (chdir(sub) < 0)
        tap_bail("chdir");

    char *before = snapshot(ws);
    if (!before)
        tap_bail("snapshot");
    the_spec();
    linked_worktree(wt);
    refusals();
    char *after = snapshot(ws);
    ok(after && strcmp(before, after) == 0, "the workspace is unchanged: nothing created, "
                                            "written or touched");
    if (after && strcmp(before, after) != 0)
        tap_diag("before:\n%s\nafter:\n%s", before, after);
    char hooks[PATH_MAX + 16];
    snprintf(hooks, sizeof(hooks), "%s/.git/hooks", ws);
    ok(access(hooks, F_OK) < 0 && errno == ENOENT, "a missing .git/hooks stays missing");
    free(before);
    free(after);
    snprintf(cmd, sizeof(cmd), "rm -rf '%.200s'", root);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", root);
    return tap_done();
}
