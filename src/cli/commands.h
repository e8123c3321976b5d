/* The subcommands of the `cordon` CLI. Host context. Each returns the process
 * exit status. */
#pragma once

#include <stdbool.h>

struct launch;

struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
    const char *summary;
};

int cmd_run(int argc, char **argv);
int cmd_shell(int argc, char **argv);
int cmd_tool(int argc, char **argv);
int cmd_mcp(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_trust(int argc, char **argv);
int cmd_untrust(int argc, char **argv);
int cmd_log(int argc, char **argv);

/* `cordon run` and `cordon shell` on the vm backend (cli/run-vm.c): boots,
 * relays, serves the session's control socket (`cordon verify NAME`; shell
 * only changes what its status says), returns the command's exit status. */
struct lifecycle;
int cli_run_vm(const struct launch *l, struct lifecycle *lc, char **agent_argv, bool shell);
/* `cordon run` on the docker backend (cli/run-docker.c): the docker CLI
 * attached to cordon's stdio (or the terminal), the session's control
 * socket served; returns the container's exit status. */
int cli_run_docker(struct launch *l, struct lifecycle *lc, char **agent_argv, bool shell);
