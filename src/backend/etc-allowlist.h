/* The curated /etc (etc-allowlist.c). Host context. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* True when /etc/NAME belongs in a sandbox's view. */
bool etc_entry_allowed(const char *name);

/* The sandbox's /etc/ssh/ssh_config where its network goes through cordon's
 * proxy (net_ssh_proxied()): every ssh, scp, sftp, rsync over ssh and git
 * tunnels through the proxy with cordon-agent's connect (docs/ssh.md). */
extern const char etc_ssh_config[];
extern const size_t etc_ssh_config_len;

/* Writes ssh/ssh_config (making ssh/ when missing) into the /etc copy
 * ETCFD. One that is there already (the user's etc.extra) is kept. 0, or
 * -1 with errno set. */
int etc_write_ssh_config(int etcfd);
