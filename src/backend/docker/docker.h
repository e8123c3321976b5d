/* The docker backend (docs/design.md "Backends", docs/docker-backend.md): the sandbox is a container on a
 * pinned Docker daemon that the supervisor drives through the docker CLI,
 * with an environment it builds itself (never the user's Docker config,
 * contexts or credential helpers). The agent never sees that daemon. Host
 * context (supervisor; the watchdog runs the teardown command). */
#pragma once

#include "backend/backend.h"
#include "config/config.h"

#include <stdbool.h>
#include <sys/types.h>

extern const struct backend_ops docker_backend_ops;

struct lifecycle;
/* Runs the agent in one of two modes: serve (the backend's start(): the
 * agent is given "--stdio" and its stdin and stdout become the channel,
 * sb->channel_fd, a socket), or run (agent_argv is `init ... -- CMD`,
 * attached to l->spec.stdio, the user's terminal or pipes, and
 * sb->channel_fd is -1; with l->pty it is `docker run -t`, the
 * container's own terminal, which init --ctty makes the command's
 * controlling one). sb->pid is the docker CLI, whose exit status is the
 * container's. */
int docker_sandbox_start(const struct launch *l, char *const *agent_argv, bool serve,
                         struct sandbox *sb, struct cordon_error *err);
/* Run mode (run-docker.c): the backend's run operation. */
int docker_run(struct launch *l, struct lifecycle *lc, char **agent_argv, bool shell);
/* launch_prepare's check (the backend's check_launch). */
int docker_check_launch(const struct launch *l, struct cordon_error *err);

/* The command that removes the container (argv and envp, NULL-terminated,
 * owned by the sandbox): what the watchdog runs when the supervisor died.
 * NULL before start() made them. */
char *const *docker_sandbox_rm_argv(const struct sandbox *sb);
char *const *docker_sandbox_rm_envp(const struct sandbox *sb);

/* A pidfd of the container's PID 1 (the agent) on the host, asked of the
 * daemon once (`docker inspect`); owned by the sandbox. -1 when unknown. */
int docker_sandbox_agent_pidfd(struct sandbox *sb);

/* `docker exec` of the agent's probe mode in the running container
 * (`cordon verify NAME`), as the user, in the command's directory, under
 * the same --confine as the container's PID 1; its environment is the
 * container's (the env file given to `docker run`). stdin is in, stdout
 * and stderr are out; the CLI gets a process group of its own. Returns its
 * pid, or <0. */
pid_t docker_sandbox_exec_probe(struct sandbox *sb, const struct launch *l, int in, int out,
                                struct cordon_error *err);

/* Reads the container's PID 1 from the host's /proc: seccomp in filter
 * mode with two filters (Docker's profile and cordon's own, stacked by the
 * agent), no_new_privs, no capability (effective or bounding). A daemon
 * configured otherwise refuses the session instead of a weaker sandbox. */
int docker_sandbox_check_confined(struct sandbox *sb, struct cordon_error *err);
struct ns_spec;
/* Checks from the host, through the container's root, that every git
 * metadata source the daemon bound (supervisor/gitguard.h) is the directory
 * cordon identified when it planned the view. */
int docker_sandbox_check_git(struct sandbox *sb, const struct ns_spec *spec,
                             struct cordon_error *err);

/* Runs the prepared `docker rm -f NAME` and waits at most timeout_ms for it
 * (killed after that). For the watchdog (after fork, no exec of its own):
 * allocates nothing. */
void docker_remove_container(char *const *argv, char *const *envp, int timeout_ms);

/* 0 when the ELF executable at path has no program interpreter (a static
 * executable, which runs in any image); otherwise <0 and err says why. */
int docker_check_static(const char *path, struct cordon_error *err);

/* What the docker backend cannot do with this configuration (no image,
 * a network other than deny, published ports, docker.mode = "require"),
 * refused with the reason before anything starts. */
int docker_check_config(const struct cordon_config *cfg, struct cordon_error *err);
/* docker_start's checks of the daemon at docker.host and of docker.image,
 * without starting anything (`cordon doctor`, backend = "auto"); *stage is
 * "cli", "socket", "daemon" or "image": where it failed. */
int docker_check_host(const struct cordon_config *cfg, const char **stage,
                      struct cordon_error *err);
