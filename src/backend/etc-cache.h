/* The curated /etc, prepared once per content (etc-cache.c). Host context. */
#pragma once

#include "util/error.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

struct etc_cache {
    char dir[PATH_MAX]; /* the prepared directory: bind it read-only as /etc */
    /* Entries below /etc ("terminfo", "ssl/certs") to bind from the host
     * onto their mount points in dir: directories and large files. */
    char binds[64][64];
    size_t nbinds;
};

/* Finds or builds the cache for the host's current /etc under root (created
 * 0700 when missing; refused unless it is the caller's and closed to
 * others). extra (nextra entries, may be NULL) are etc.extra's paths below
 * /etc, validated by the configuration; one that does not exist is left
 * out, one reached through a symlinked directory refuses the start.
 * ssh_proxied: the copy has cordon's ssh/ssh_config (etc-allowlist.h). */
int etc_cache_prepare(const char *root, char *const *extra, size_t nextra, bool ssh_proxied,
                      struct etc_cache *out, struct cordon_error *err);
