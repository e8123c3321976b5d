/* pi's bash tool (bash.js + output-accumulator.js) as a non-blocking state
 * machine, so cordon-agent's single-threaded event loop can run several
 * commands and stream progress without threads. Sandbox (cordon-agent) or
 * host context.
 *
 * Life of a call:
 *   tool_bash_start()      validate args, spawn `/bin/bash -c command` in
 *                          env->cwd with env->bash_environ, stdin /dev/null,
 *                          a new session (so its own process group), stdout
 *                          and stderr on ONE pipe (arrival order).
 *   poll tool_bash_fd() for POLLIN -> tool_bash_on_readable()
 *   poll tool_bash_pidfd() (or reap on SIGCHLD) -> waitpid(tool_bash_pid())
 *   at tool_bash_deadline() -> tool_bash_on_deadline() (kills the group)
 *   on client abort -> tool_bash_cancel() (kills the group)
 *   tool_bash_partial()    pi's onUpdate payload, for progress (pi throttles
 *                          updates to one per TOOL_BASH_UPDATE_THROTTLE_MS
 *                          and sends {content:[]} once at the start)
 *   once the child is reaped AND (the pipe reached EOF OR
 *   TOOL_BASH_EXIT_GRACE_MS passed since the exit: a background process
 *   may hold the pipe open, pi stops waiting for it after 100 ms):
 *   tool_bash_finish(call, wait_status, &result) -> pi's result; frees call.
 *   tool_bash_free() kills and reaps a call that will not be finished.
 *
 * Memory stays bounded whatever the command prints: only a rolling tail of
 * at most 4 x 50KB decoded text is kept; once the output exceeds 2000 lines
 * or 50KB everything goes to env->tmpdir/pi-bash-<16 hex>.log
 * (details.fullOutputPath). */
#pragma once

#include "agent/tools/tool.h"

#include <stdint.h>
#include <sys/types.h>

#define TOOL_BASH_EXIT_GRACE_MS      100
#define TOOL_BASH_UPDATE_THROTTLE_MS 100

struct tool_bash_call;

/* Returns 0 with *out set when the command runs; 0 with *out NULL and
 * *early filled when the call ends before it starts (invalid arguments,
 * missing working directory); <0 with *early filled if spawning failed. */
int tool_bash_start(const struct tool_env *env, json_t *args, struct tool_bash_call **out,
                    struct tool_result *early);

/* The read end of the output pipe (non-blocking), -1 once it reached EOF. */
int tool_bash_fd(const struct tool_bash_call *call);
/* A pidfd for the shell (readable when it exits), -1 when unavailable. */
int tool_bash_pidfd(const struct tool_bash_call *call);
pid_t tool_bash_pid(const struct tool_bash_call *call);

/* Consumes what the pipe has now (bounded per call). Returns 1 at EOF, 0
 * otherwise, <0 on a read error other than EAGAIN. */
int tool_bash_on_readable(struct tool_bash_call *call);

/* CLOCK_MONOTONIC milliseconds at which the timeout fires, or -1. */
int64_t tool_bash_deadline(const struct tool_bash_call *call);
/* The timeout fired: SIGKILL the process group; the result will say
 * "Command timed out after N seconds". */
void tool_bash_on_deadline(struct tool_bash_call *call);
/* The client aborted: SIGKILL the process group; "Command aborted". */
void tool_bash_cancel(struct tool_bash_call *call);

/* What pi's onUpdate carries now: {content:[{type:"text",text}],
 * details:{truncation?, fullOutputPath?}}. 0 or <0 (out of memory). */
int tool_bash_partial(struct tool_bash_call *call, struct tool_result *res);

/* wait_status as from waitpid(). Frees call. */
int tool_bash_finish(struct tool_bash_call *call, int wait_status, struct tool_result *res);
void tool_bash_free(struct tool_bash_call *call);

/* Milliseconds on CLOCK_MONOTONIC (the clock of tool_bash_deadline). */
int64_t tool_bash_now_ms(void);

/* Blocking wrapper (poll loop) with the registry's signature. */
int tool_bash_run(const struct tool_env *env, json_t *args, struct tool_result *res);
