/* The sandbox's init (init.c). Sandbox context. The control channel's
 * frames: proto/init-channel.h. */
#pragma once

#include "proto/init-channel.h"

/* argv: {"cordon-agent", "init", [--pty], [--control], [--memory-mib N],
 * "--", CMD...}. envp: the command's environment (NULL: this process's).
 * Never returns. */
void agent_init_run(int argc, char **argv, char *const *envp) __attribute__((noreturn));
