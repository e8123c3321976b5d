/* Prepares a namespace sandbox launch from the workspace and options. Host
 * context, before any sandbox exists. */
#include "supervisor/launch.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CORDON_AGENT_INSTALL_PATH
#define CORDON_AGENT_INSTALL_PATH "/usr/local/libexec/cordon/cordon-agent"
#endif

extern char **environ;

static const char *const default_protected[] = {".git/hooks", ".git/config", ".cordon.toml", NULL};

void launch_default_options(struct launch_options *o)
{
    *o = (struct launch_options){
        .limits = {.pids = 2048, .memory_mib = 8192, .file_size_mib = 16384, .open_files = 4096},
        .env_mode = ENV_MODE_STRICT,
    };
}

/* cordon-agent next to the cordon binary (build tree, tarball), else the
 * installed one. */
static char *find_agent(struct cordon_error *err)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        char *dir = dirname(self);
        char *candidate;
        if (asprintf(&candidate, "%s/cordon-agent", dir) >= 0) {
            if (access(candidate, X_OK) == 0)
                return candidate;
            free(candidate);
        }
    }
    if (access(CORDON_AGENT_INSTALL_PATH, X_OK) == 0)
        return strdup(CORDON_AGENT_INSTALL_PATH);
    error_set(err, ENOENT, "cannot find cordon-agent next to cordon or at %s",
              CORDON_AGENT_INSTALL_PATH);
    return NULL;
}

static char *home_path(void)
{
    const char *home = getenv("HOME");
    if (home && home[0] == '/' && strcmp(home, "/") != 0)
        return strdup(home);
    struct passwd *pw = getpwuid(getuid());
    if (pw && pw->pw_dir && pw->pw_dir[0] == '/' && strcmp(pw->pw_dir, "/") != 0)
        return strdup(pw->pw_dir);
    return strdup("/home/cordon");
}

int launch_prepare(const struct launch_options *o, struct launch *l, struct cordon_error *err)
{
    *l = (struct launch){0};
    if (workspace_detect(NULL, &l->ws, err) < 0)
        return -1;
    l->home = home_path();
    l->agent_path = find_agent(err);
    if (!l->home || !l->agent_path)
        goto fail;
    if (env_build(o->env_mode, environ, o->env_allow, l->home, &l->env, err) < 0)
        goto fail;

    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd)) {
        error_set(err, errno, "getrandom");
        goto fail;
    }
    snprintf(l->name, sizeof(l->name), "cordon-%d-%08x", getpid(), rnd);

    const char *const *prot = o->protected_paths ? o->protected_paths : default_protected;
    size_t n = 0;
    for (; prot[n] && n < LAUNCH_MAX_PROTECTED; n++)
        l->protected_paths[n] = prot[n];
    l->protected_paths[n] = NULL;

    /* A repository without .git/hooks would let the sandbox create it and
     * plant a hook the host's git runs: give it the directory git init
     * makes, so it can be protected. */
    if (l->ws.is_git && !o->workspace_readonly) {
        char hooks[PATH_MAX];
        struct stat st;
        snprintf(hooks, sizeof(hooks), "%s/.git", l->ws.root);
        if (lstat(hooks, &st) == 0 && S_ISDIR(st.st_mode)) {
            snprintf(hooks, sizeof(hooks), "%s/.git/hooks", l->ws.root);
            if (mkdir(hooks, 0755) == 0)
                log_debug("created the missing %s so that it can be kept read-only", hooks);
        }
    }

    size_t g = 0;
    if (l->ws.git_common_dir)
        l->git_dirs[g++] = l->ws.git_common_dir;
    if (l->ws.git_dir)
        l->git_dirs[g++] = l->ws.git_dir;
    l->git_dirs[g] = NULL;

    l->spec = (struct ns_spec){
        .workspace = l->ws.root,
        .workspace_view = l->ws.view_root,
        .cwd = l->ws.view_cwd,
        .home = l->home,
        .workspace_readonly = o->workspace_readonly,
        .protected_paths = l->protected_paths,
        .git_dirs = l->git_dirs,
        .limits = o->limits,
        .agent_path = l->agent_path,
        .envp = l->env,
        .stdio = {0, 1, 2},
        .control_fd = -1,
        .name = l->name,
    };
    log_debug("workspace %s (seen inside as %s), cwd %s%s", l->ws.root, l->ws.view_root,
              l->ws.view_cwd, l->ws.is_git ? ", git" : "");
    return 0;
fail:
    launch_free(l);
    return -1;
}

void launch_free(struct launch *l)
{
    workspace_free(&l->ws);
    env_free(l->env);
    free(l->agent_path);
    free(l->home);
    *l = (struct launch){0};
}
