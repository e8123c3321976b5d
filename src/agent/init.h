/* The sandbox's init (init.c). Sandbox context. */
#pragma once

/* argv: {"cordon-agent", "init", [--pty], [--memory-mib N], "--", CMD...}.
 * envp: the command's environment (NULL: this process's). Never returns. */
void agent_init_run(int argc, char **argv, char *const *envp) __attribute__((noreturn));
