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
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static const char *const identity_keys[] = {"user.name", "user.email", "format.signOff"};

#define GIT_IDENTITY_VALUE_MAX 1024
/* Every matching entry of one source: a value may repeat (the last wins). */
#define GIT_IDENTITY_LIST_MAX (16 * GIT_IDENTITY_VALUE_MAX)

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

/* git's --null --get-regexp list in BUF (LEN bytes): each identity key's
 * last value (as `git config --get` picks) into VALUES[k], unless already
 * found from a source that outranks this one. */
static int identity_from_list(const char *buf, size_t len, char values[][GIT_IDENTITY_VALUE_MAX],
                              bool *found, bool *this_source, struct cordon_error *err)
{
    size_t pos = 0;
    while (pos < len) {
        const char *entry = buf + pos;
        size_t elen = strnlen(entry, len - pos);
        pos += elen + 1;
        const char *nl = memchr(entry, '\n', elen);
        size_t klen = nl ? (size_t)(nl - entry) : elen;
        /* A key without "=" is a boolean's true, git's own rule. */
        const char *value = nl ? nl + 1 : "true";
        size_t vlen = nl ? elen - klen - 1 : 4;
        for (size_t k = 0; k < ARRAY_SIZE(identity_keys); k++) {
            if (strlen(identity_keys[k]) != klen ||
                strncasecmp(identity_keys[k], entry, klen) != 0)
                continue;
            if (found[k] && !this_source[k])
                break; /* a source that outranks this one set it */
            if (!nl && strcmp(identity_keys[k], "format.signOff") != 0)
                break; /* no name or address to pass */
            if (vlen + 1 > GIT_IDENTITY_VALUE_MAX)
                return error_set(err, E2BIG, "git config %s: the value is longer than %d bytes",
                                 identity_keys[k], GIT_IDENTITY_VALUE_MAX - 1);
            memcpy(values[k], value, vlen);
            values[k][vlen] = '\0';
            found[k] = this_source[k] = true;
            break;
        }
    }
    return 0;
}

/* Whether git --global could read a file: $GIT_CONFIG_GLOBAL, else
 * $XDG_CONFIG_HOME/git/config (~/.config/git/config) and ~/.gitconfig.
 * Without one there is no global identity, and no git process to start. */
static bool global_config_may_exist(void)
{
    if (getenv("GIT_CONFIG_GLOBAL"))
        return true;
    const char *home = getenv("HOME");
    const char *xdg = getenv("XDG_CONFIG_HOME");
    char path[PATH_MAX];
    struct stat st;
    if (xdg && *xdg) {
        if (snprintf(path, sizeof(path), "%s/git/config", xdg) >= (int)sizeof(path) ||
            stat(path, &st) == 0 || errno != ENOENT)
            return true;
    } else if (home && *home) {
        if (snprintf(path, sizeof(path), "%s/.config/git/config", home) >= (int)sizeof(path) ||
            stat(path, &st) == 0 || errno != ENOENT)
            return true;
    }
    if (home && *home) {
        if (snprintf(path, sizeof(path), "%s/.gitconfig", home) >= (int)sizeof(path) ||
            stat(path, &st) == 0 || errno != ENOENT)
            return true;
    }
    return false;
}

int git_identity_env_add(const char *workspace, const char *repo_config, char ***envp,
                         struct cordon_error *err)
{
    if (env_has_git_identity(*envp))
        return 0;
    static const char regexp[] = "^(user\\.name|user\\.email|format\\.signoff)$";
    char values[ARRAY_SIZE(identity_keys)][GIT_IDENTITY_VALUE_MAX];
    bool found[ARRAY_SIZE(identity_keys)] = {false};
    /* One git process per source (not one per key): each is 1-3 ms of the
     * start. The repository's own setting wins, as it does for git: the
     * variables below outrank every file, so it is resolved here. Its
     * config file is host-owned inside the sandbox; includes are not
     * followed (they could name any host file). */
    _cleanup_free_ char *buf = malloc(GIT_IDENTITY_LIST_MAX);
    if (!buf)
        return error_set(err, ENOMEM, "git identity");
    for (int source = 0; source < 2; source++) {
        const char *file = source == 0 ? repo_config : NULL;
        if (source == 0 && !repo_config)
            continue;
        if (source == 1 && !global_config_may_exist())
            continue;
        size_t len = 0;
        bool this_source[ARRAY_SIZE(identity_keys)] = {false};
        if (ws_git_config_list(workspace, file, regexp, buf, GIT_IDENTITY_LIST_MAX, &len, err) <
                0 ||
            identity_from_list(buf, len, values, found, this_source, err) < 0)
            return error_prefix(err, "git identity");
    }
    size_t count = 0;
    for (size_t k = 0; k < ARRAY_SIZE(identity_keys); k++) {
        const char *key = identity_keys[k];
        if (!found[k])
            continue;
        const char *value = values[k];
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
