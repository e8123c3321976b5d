/* The user's git identity inside the sandbox (docs/toolchains.md): user.name,
 * user.email and format.signOff, read with host git from the user's global
 * configuration and the repository's own config file, and passed as
 * GIT_CONFIG_COUNT/KEY/VALUE variables, which git reads on every backend (the
 * vm backend takes no file mounts). Nothing else of ~/.gitconfig comes in:
 * aliases (`!` runs commands), credential helpers and includes run code or
 * hold secrets. Host context, before any sandbox exists. */
#include "supervisor/git-identity.h"
#include "config/sha256.h"
#include "supervisor/workspace-git.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

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
            if (strlen(identity_keys[k]) != klen || strncasecmp(identity_keys[k], entry, klen) != 0)
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

/* The files git --global reads: $GIT_CONFIG_GLOBAL, else
 * $XDG_CONFIG_HOME/git/config (~/.config/git/config) and ~/.gitconfig.
 * Returns how many (at most 2) were named. */
static size_t global_config_paths(char paths[2][PATH_MAX])
{
    const char *global = getenv("GIT_CONFIG_GLOBAL");
    const char *home = getenv("HOME");
    const char *xdg = getenv("XDG_CONFIG_HOME");
    size_t n = 0;
    if (global) {
        if (snprintf(paths[n], PATH_MAX, "%s", global) < PATH_MAX)
            n++;
        return n;
    }
    if (xdg && *xdg) {
        if (snprintf(paths[n], PATH_MAX, "%s/git/config", xdg) < PATH_MAX)
            n++;
    } else if (home && *home) {
        if (snprintf(paths[n], PATH_MAX, "%s/.config/git/config", home) < PATH_MAX)
            n++;
    }
    if (home && *home && snprintf(paths[n], PATH_MAX, "%s/.gitconfig", home) < PATH_MAX)
        n++;
    return n;
}

#define GIT_IDENTITY_FILE_MAX (64 * 1024)

/* What git's answer for these files depends on, as a hash: each path and
 * its whole content ("absent" when it does not exist). Returns 1 with KEY
 * set; 0 when the answer cannot be keyed so (a file git would follow
 * further: an include or includeIf anywhere, even in a value; unreadable,
 * not regular, or larger than GIT_IDENTITY_FILE_MAX); *ANY: a file exists.
 * Keyed by content, a cached answer is exactly git's. */
static int files_key(char paths[][PATH_MAX], size_t n, char key[2 * SHA256_DIGEST_SIZE + 1],
                     bool *any)
{
    struct sha256 h;
    sha256_init(&h);
    sha256_update(&h, "cordon git identity v1", 23);
    _cleanup_free_ char *buf = malloc(GIT_IDENTITY_FILE_MAX + 1);
    if (!buf)
        return 0;
    *any = false;
    for (size_t i = 0; i < n; i++) {
        sha256_update(&h, paths[i], strlen(paths[i]) + 1);
        _cleanup_close_ int fd = open(paths[i], O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0) {
            if (errno != ENOENT && errno != ENOTDIR)
                return 0;
            sha256_update(&h, "absent", 7);
            continue;
        }
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > GIT_IDENTITY_FILE_MAX)
            return 0;
        ssize_t got = fs_read_full(fd, buf, GIT_IDENTITY_FILE_MAX + 1);
        if (got < 0 || got > GIT_IDENTITY_FILE_MAX)
            return 0;
        size_t len = (size_t)got;
        buf[len] = '\0';
        if (memmem(buf, len, "\0", 1) || strcasestr(buf, "include"))
            return 0;
        *any = true;
        char size[32];
        snprintf(size, sizeof(size), "present %zu", len);
        sha256_update(&h, size, strlen(size) + 1);
        sha256_update(&h, buf, len);
    }
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_final(&h, digest);
    for (size_t i = 0; i < SHA256_DIGEST_SIZE; i++)
        snprintf(key + 2 * i, 3, "%02x", digest[i]);
    return 1;
}

/* The cache of one source's answer (CACHE: a file in the user's state
 * root): "KEY\n" and git's list. Returns 1 with BUF/LEN filled on a hit. */
static int cache_read(const char *cache, const char *key, char *buf, size_t cap, size_t *len)
{
    _cleanup_close_ int fd = open(cache, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return 0;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077) || st.st_size > (off_t)cap + 2 * SHA256_DIGEST_SIZE + 1)
        return 0;
    char head[2 * SHA256_DIGEST_SIZE + 1];
    if (read(fd, head, sizeof(head)) != (ssize_t)sizeof(head) ||
        memcmp(head, key, 2 * SHA256_DIGEST_SIZE) != 0 || head[2 * SHA256_DIGEST_SIZE] != '\n')
        return 0;
    ssize_t got = fs_read_full(fd, buf, cap - 1);
    if (got < 0 || (size_t)got >= cap - 1)
        return 0;
    size_t n = (size_t)got;
    buf[n] = '\0';
    *len = n;
    return 1;
}

/* Best effort: a cache that cannot be written only costs the next start
 * the git process. */
static void cache_write(const char *cache, const char *key, const char *buf, size_t len)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof(tmp), "%s.%d.tmp", cache, (int)getpid()) >= (int)sizeof(tmp))
        return;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return;
    char head[2 * SHA256_DIGEST_SIZE + 1];
    memcpy(head, key, 2 * SHA256_DIGEST_SIZE);
    head[2 * SHA256_DIGEST_SIZE] = '\n';
    bool ok = write(fd, head, sizeof(head)) == (ssize_t)sizeof(head) &&
              (len == 0 || write(fd, buf, len) == (ssize_t)len);
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, cache) < 0)
        unlink(tmp);
}

int git_identity_env_add(const char *workspace, const char *repo_config, const char *cache_dir,
                         char ***envp, struct cordon_error *err)
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
        size_t len = 0;
        bool this_source[ARRAY_SIZE(identity_keys)] = {false};
        /* The answer for this content of the files, when cached: no git
         * process on most starts. */
        char paths[2][PATH_MAX];
        size_t npaths = 0;
        if (file) {
            if (snprintf(paths[0], PATH_MAX, "%s", file) < PATH_MAX)
                npaths = 1;
        } else {
            npaths = global_config_paths(paths);
        }
        char key[2 * SHA256_DIGEST_SIZE + 1];
        bool any = false;
        bool keyed = npaths > 0 && files_key(paths, npaths, key, &any) == 1;
        if (keyed && !any)
            continue; /* git has no file to read: nothing set */
        char cache[PATH_MAX];
        bool cacheable = keyed && cache_dir &&
                         snprintf(cache, sizeof(cache), "%s/.git-identity-%s", cache_dir,
                                  file ? "repo" : "global") < (int)sizeof(cache);
        if (!cacheable || !cache_read(cache, key, buf, GIT_IDENTITY_LIST_MAX, &len)) {
            if (ws_git_config_list(workspace, file, regexp, buf, GIT_IDENTITY_LIST_MAX, &len, err) <
                0)
                return error_prefix(err, "git identity");
            if (cacheable)
                cache_write(cache, key, buf, len);
        }
        if (identity_from_list(buf, len, values, found, this_source, err) < 0)
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
