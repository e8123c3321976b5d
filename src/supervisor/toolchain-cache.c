/* Package-manager caches that survive the sandbox (docs/toolchains.md).
 * The sandbox's home is an empty tmpfs, so every `npm install` would fetch
 * everything again; the user's real caches must not be mounted either: a
 * sandbox could poison them, and the host's next build would run what it
 * planted. cordon keeps caches of its own, one per kind, under
 * $XDG_CACHE_HOME/cordon/toolchain/, shared by the user's sandboxes and used
 * by nothing on the host. Host context, before any sandbox exists. */
#include "supervisor/toolchain-cache.h"
#include "config/sha256.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directory each tool uses below the home, and cordon's name for it. */
static const struct {
    const char *name;
    const char *home_path;
} kinds[TOOLCHAIN_CACHE_MAX] = {
    {"npm", ".npm"},                       /* npm's cache (_cacache) */
    {"pip", ".cache/pip"},                 /* pip's http and wheel caches */
    {"cargo-registry", ".cargo/registry"}, /* crates and their index */
    {"cargo-git", ".cargo/git"},           /* git dependencies */
    {"go-mod", "go/pkg/mod"},              /* GOMODCACHE's default */
    {"go-build", ".cache/go-build"},       /* GOCACHE's default */
    {"maven", ".m2/repository"},
    {"gradle", ".gradle/caches"},
};

static const char *cache_root(char *buf, size_t cap)
{
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/')
        n = snprintf(buf, cap, "%s/cordon/toolchain", xdg);
    else if (home && home[0] == '/')
        n = snprintf(buf, cap, "%s/.cache/cordon/toolchain", home);
    else
        return NULL;
    return n > 0 && (size_t)n < cap ? buf : NULL;
}

/* PATH is a directory of ours that only we can write, not a symlink. */
static int check_own_dir(const char *path, struct cordon_error *err)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return error_set(err, errno, "%s", path);
    if (!S_ISDIR(st.st_mode))
        return error_set(err, 0, "%s is not a directory", path);
    if (st.st_uid != geteuid())
        return error_set(err, 0, "%s is owned by uid %u, not by you", path, (unsigned)st.st_uid);
    if (st.st_mode & 022)
        return error_set(err, 0, "%s is writable by group or others", path);
    return 0;
}

/* A: the path B, a parent of it or below it. */
static bool paths_overlap(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t l = la < lb ? la : lb;
    return strncmp(a, b, l) == 0 && (la == lb || (la < lb ? b[l] : a[l]) == '/');
}

int toolchain_cache_mounts(const struct cordon_config *cfg, const char *home, const char *workspace,
                           struct toolchain_caches *tc, struct ns_extra_mount *mounts, size_t *n,
                           size_t max, struct cordon_error *err)
{
    if (!cfg->toolchain_caches)
        return 0;
    char base[PATH_MAX], root[PATH_MAX];
    if (!cache_root(base, sizeof(base))) {
        log_warn("toolchain caches: no cache directory ($XDG_CACHE_HOME or $HOME); none mounted");
        return 0;
    }
    /* One set of caches per workspace: package managers take much of what
     * a cache holds on trust (unpacked sources, built wheels, packuments,
     * jars), so a cache shared between workspaces would let a sandbox of
     * one plant code that another's build runs; within a workspace the
     * sandbox can change the sources anyway (docs/toolchains.md). */
    char key[2 * SHA256_DIGEST_SIZE + 1];
    sha256_hex(workspace, strlen(workspace), key);
    if (snprintf(root, sizeof(root), "%s/%.16s", base, key) >= (int)sizeof(root))
        return 0;
    for (size_t k = 0; k < TOOLCHAIN_CACHE_MAX; k++) {
        char guest[PATH_MAX], host[PATH_MAX];
        if (snprintf(guest, sizeof(guest), "%s/%s", home, kinds[k].home_path) >=
                (int)sizeof(guest) ||
            snprintf(host, sizeof(host), "%s/%s", root, kinds[k].name) >= (int)sizeof(host))
            continue;
        bool taken = false;
        for (size_t i = 0; i < *n && !taken; i++)
            taken = paths_overlap(mounts[i].guest_path, guest);
        if (taken) {
            log_debug("toolchain cache %s: a configured mount covers %s", kinds[k].name, guest);
            continue;
        }
        if (*n >= max) {
            log_warn("toolchain caches: no room for more mounts; %s left out", kinds[k].name);
            break;
        }
        struct cordon_error cerr = {0};
        if (fs_mkdir_p(host, 0700) < 0) {
            error_set(&cerr, errno, "%s", host);
        } else {
            check_own_dir(base, &cerr);
            if (!cerr.message[0])
                check_own_dir(root, &cerr);
            if (!cerr.message[0])
                check_own_dir(host, &cerr);
        }
        if (cerr.message[0]) {
            log_warn("toolchain cache %s left out: %s", kinds[k].name, cerr.message);
            continue;
        }
        char *h = strdup(host), *g = strdup(guest);
        if (!h || !g) {
            free(h);
            free(g);
            return error_set(err, ENOMEM, "toolchain caches");
        }
        tc->paths[2 * tc->count] = h;
        tc->paths[2 * tc->count + 1] = g;
        tc->count++;
        mounts[(*n)++] = (struct ns_extra_mount){h, g, false};
    }
    return 0;
}

void toolchain_caches_free(struct toolchain_caches *tc)
{
    for (size_t i = 0; i < 2 * tc->count; i++)
        free(tc->paths[i]);
    tc->count = 0;
}
