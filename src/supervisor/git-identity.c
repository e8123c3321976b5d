/* The user's git identity inside the sandbox (docs/toolchains.md): user.name,
 * user.email and format.signOff, read with host git from the user's global
 * configuration and the repository's own config file, and passed as
 * GIT_CONFIG_COUNT/KEY/VALUE variables, which git reads on every backend (the
 * vm backend takes no file mounts). Nothing else of ~/.gitconfig comes in:
 * aliases (`!` runs commands), credential helpers and includes run code or
 * hold secrets. Host context, before any sandbox exists. */
#include "supervisor/git-identity.h"
#include "supervisor/workspace-git.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const identity_keys[] = {"user.name", "user.email", "format.signOff"};

#define GIT_IDENTITY_VALUE_MAX 1024

/* Environment variables git's configuration comes from, or that set the
 * identity directly: when the environment already has one, it is the
 * user's choice (env.allow) and nothing is added. */
static bool env_has_git_identity(char *const *env)
{
    static const char *const names[] = {
        "GIT_CONFIG_COUNT=", "GIT_CONFIG_PARAMETERS=", "GIT_AUTHOR_NAME=",
        "GIT_AUTHOR_EMAIL=", "GIT_COMMITTER_NAME=",    "GIT_COMMITTER_EMAIL="};
    for (size_t i = 0; env && env[i]; i++)
        for (size_t k = 0; k < ARRAY_SIZE(names); k++)
            if (strncmp(env[i], names[k], strlen(names[k])) == 0)
                return true;
    return false;
}

/* A value git would print back in a `git config` line: no control
 * characters but tab (a newline would make a second line of someone's
 * output, and nothing an identity needs has one). */
static bool value_is_plain(const char *v)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
            return false;
    return true;
}

static int env_append(char ***envp, const char *key, const char *value)
{
    size_t n = 0;
    while ((*envp)[n])
        n++;
    char **env = realloc(*envp, (n + 2) * sizeof(char *));
    if (!env)
        return -1;
    *envp = env;
    if (asprintf(&env[n], "%s=%s", key, value) < 0) {
        env[n] = NULL;
        return -1;
    }
    env[n + 1] = NULL;
    return 0;
}

int git_identity_env_add(const char *workspace, const char *repo_config, char ***envp,
                         struct cordon_error *err)
{
    if (env_has_git_identity(*envp))
        return 0;
    size_t count = 0;
    for (size_t k = 0; k < ARRAY_SIZE(identity_keys); k++) {
        const char *key = identity_keys[k];
        char value[GIT_IDENTITY_VALUE_MAX];
        bool found = false;
        /* The repository's own setting wins, as it does for git: the
         * variables below outrank every file, so it is resolved here. Its
         * config file is host-owned inside the sandbox; includes are not
         * followed (they could name any host file). */
        if (repo_config &&
            ws_git_config_get(workspace, repo_config, key, value, sizeof(value), &found, err) < 0)
            return error_prefix(err, "git identity");
        if (!found &&
            ws_git_config_get(workspace, NULL, key, value, sizeof(value), &found, err) < 0)
            return error_prefix(err, "git identity");
        if (!found)
            continue;
        if (!value_is_plain(value)) {
            log_warn("git identity: %s has a control character; not passed into the sandbox", key);
            continue;
        }
        char kname[32], vname[32];
        snprintf(kname, sizeof(kname), "GIT_CONFIG_KEY_%zu", count);
        snprintf(vname, sizeof(vname), "GIT_CONFIG_VALUE_%zu", count);
        if (env_append(envp, kname, key) < 0 || env_append(envp, vname, value) < 0)
            return error_set(err, ENOMEM, "git identity");
        count++;
    }
    if (count == 0)
        return 0;
    char n[24];
    snprintf(n, sizeof(n), "%zu", count);
    if (env_append(envp, "GIT_CONFIG_COUNT", n) < 0)
        return error_set(err, ENOMEM, "git identity");
    return 0;
}
