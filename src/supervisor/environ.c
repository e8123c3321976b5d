/* Environment scrubbing for the sandbox. Host context. The protected list is
 * applied last, after every mode, so nothing upstream can re-admit a name. */
#include "supervisor/environ.h"
#include "util/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What strict mode forwards (docs/configuration.md, [env]). TMPDIR is set, not forwarded: the
 * host's temporary directory does not exist inside. */
static const char *const strict_names[] = {"PATH", "USER", "LOGNAME", "LANG", "TERM"};

/* Names (fnmatch patterns) never forwarded: they redirect a Docker client to
 * a daemon, or change what the loader or a shell runs before the command. */
static const char *const protected_patterns[] = {
    "DOCKER_*",       "COMPOSE_*",    "LD_*",           "BASH_ENV",    "ENV",        "SHELLOPTS",
    "BASHOPTS",       "PS4",          "PROMPT_COMMAND", "BASH_FUNC_*", "GCONV_PATH", "MALLOC_*",
    "GLIBC_TUNABLES", "NODE_OPTIONS", "PYTHONSTARTUP",  "PERL5OPT",    "IFS",        "CDPATH",
    "CORDON_*",
};

bool env_name_is_protected(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(protected_patterns); i++) {
        const char *pattern = protected_patterns[i];
        size_t n = strlen(pattern);
        /* Patterns are exact names or "PREFIX*". */
        if (pattern[n - 1] == '*' ? strncmp(pattern, name, n - 1) == 0 : strcmp(pattern, name) == 0)
            return true;
    }
    return false;
}

static bool name_in(const char *name, size_t len, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n && list[i]; i++) {
        if (strlen(list[i]) == len && strncmp(list[i], name, len) == 0)
            return true;
    }
    return false;
}

static size_t list_len(const char *const *list)
{
    size_t n = 0;
    while (list && list[n])
        n++;
    return n;
}

static int push(char ***env, size_t *n, size_t *cap, const char *key, const char *value)
{
    if (*n + 2 > *cap) {
        size_t ncap = *cap ? *cap * 2 : 32;
        char **grown = realloc(*env, ncap * sizeof(char *));
        if (!grown)
            return -1;
        *env = grown;
        *cap = ncap;
    }
    char *entry;
    if (asprintf(&entry, "%s=%s", key, value) < 0)
        return -1;
    (*env)[(*n)++] = entry;
    (*env)[*n] = NULL;
    return 0;
}

int env_build(enum env_mode mode, char *const *host_environ, const char *const *allow,
              const char *home, char ***out, struct cordon_error *err)
{
    char **env = NULL;
    size_t n = 0, cap = 0;
    for (char *const *e = host_environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || eq == *e)
            continue;
        size_t klen = (size_t)(eq - *e);
        char key[256];
        if (klen >= sizeof(key))
            continue;
        memcpy(key, *e, klen);
        key[klen] = '\0';
        if (env_name_is_protected(key))
            continue;
        if (strcmp(key, "HOME") == 0 || strcmp(key, "TMPDIR") == 0 || strcmp(key, "SHELL") == 0)
            continue; /* set below to their in-sandbox values */
        bool keep = false;
        switch (mode) {
        case ENV_MODE_PASSTHROUGH:
            keep = true;
            break;
        case ENV_MODE_ALLOWLIST:
            keep = name_in(key, klen, allow, list_len(allow)) ||
                   name_in(key, klen, strict_names, ARRAY_SIZE(strict_names));
            break;
        case ENV_MODE_STRICT:
            keep = name_in(key, klen, strict_names, ARRAY_SIZE(strict_names));
            break;
        }
        if (keep && push(&env, &n, &cap, key, eq + 1) < 0)
            goto oom;
    }
    if (push(&env, &n, &cap, "HOME", home) < 0 || push(&env, &n, &cap, "TMPDIR", "/tmp") < 0 ||
        push(&env, &n, &cap, "SHELL", "/bin/bash") < 0)
        goto oom;
    bool have_path = false;
    for (size_t i = 0; i < n; i++)
        have_path |= strncmp(env[i], "PATH=", 5) == 0;
    if (!have_path && push(&env, &n, &cap, "PATH",
                           "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") < 0)
        goto oom;
    *out = env;
    return 0;
oom:
    env_free(env);
    return error_set(err, ENOMEM, "environment");
}

void env_free(char **env)
{
    for (char **e = env; e && *e; e++)
        free(*e);
    free(env);
}
