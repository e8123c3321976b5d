/* Persistent package-manager caches for the sandbox's home
 * (toolchain-cache.c, docs/toolchains.md). Host context, before any sandbox
 * exists. */
#pragma once

#include "backend/spec.h"
#include "config/config.h"
#include "util/error.h"

#include <stddef.h>

/* Host and guest paths of every cache kind (npm, pip, cargo x2, go x2,
 * maven, gradle). */
#define TOOLCHAIN_CACHE_MAX 8

struct toolchain_caches {
    char *paths[2 * TOOLCHAIN_CACHE_MAX]; /* host, guest, host, guest ... (owned) */
    size_t count;                         /* mounts filled */
};

/* With cfg->toolchain_caches, creates cordon's cache directories under
 * $XDG_CACHE_HOME/cordon/toolchain/ (mode 0700, checked to be the user's own
 * directories) and appends a writable mount of each at the path its tool
 * uses below HOME (the sandbox's home) to MOUNTS[*N..MAX): only where no
 * configured mount already covers that path, and while MOUNTS has room. The
 * user's own caches (~/.npm, ~/.cache/pip ...) are never mounted. A cache
 * that cannot be made is left out with a warning: 0 unless out of memory. */
int toolchain_cache_mounts(const struct cordon_config *cfg, const char *home, const char *workspace,
                           struct toolchain_caches *tc, struct ns_extra_mount *mounts, size_t *n,
                           size_t max, struct cordon_error *err);

void toolchain_caches_free(struct toolchain_caches *tc);
