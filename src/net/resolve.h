/* Name resolution for the allowlist proxy: the proxy resolves names itself
 * (the sandbox has no DNS), from the system resolver or, when configured,
 * only from a hosts(5)-style file (tests never touch public DNS). Host
 * context (the proxy process). Blocking: the proxy calls it from its
 * resolver workers (resolve-pool.h), never from its event loop. */
#pragma once

#include "net/allowlist.h"
#include "util/error.h"

#define RESOLVE_MAX 16

/* Resolves HOST (a name or an address literal) into up to RESOLVE_MAX
 * addresses, in the resolver's order. */
int net_resolve(const char *host, const char *hosts_file, struct allow_addr *out, size_t *count,
                struct cordon_error *err);
