/* The probe of `cordon verify NAME` in a vm `cordon run`/`cordon shell`
 * session, guest side (vm-probe.c). Guest context: the microVM's init
 * (PID 1, root in the guest), inside run mode's relay loop (vm-relay.c).
 *
 * On the channel, after the boot exchange (JSON frames, vm-frame.h; built
 * and checked by backend/vm/vm-probe-frame.c):
 *   host -> guest: {"t":"probe","id":N,"request":TEXT} run the probe with
 *     TEXT (at most INIT_PROBE_REQUEST_MAX bytes) on its stdin;
 *   guest -> host: {"t":"probe-out","id":N,"data":TEXT} its stdout and
 *     stderr in pieces of at most VM_PROBE_CHUNK bytes (at most
 *     INIT_PROBE_OUTPUT_MAX kept), then {"t":"probe-end","id":N,"end":TEXT}:
 *     "exit N", "signal N", "timeout" (killed after INIT_PROBE_TIMEOUT_MS)
 *     or "error: ...", as the ns init's 'X' frame (init.h).
 * The answer is sent once the probe is reaped, without blocking the relay
 * (the channel is written only when poll says it has room). A request while
 * a probe runs or its answer is being sent is answered at once with an
 * "error: ..." end of its own id. */
#pragma once

#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/types.h>

/* The pollfd entries vm_probe_pollfds() fills. */
#define VM_PROBE_POLLFDS 3

/* In the probe's forked child, its stdio already on the pipes: confines
 * it exactly as the command is (vm-command.c) and execs the probe. Never
 * returns. */
typedef void (*vm_probe_exec_fn)(const void *ctx);

/* Once, before the relay loop: the channel to answer on and how the
 * probe's child is confined and started. */
void vm_probe_setup(int channel, vm_probe_exec_fn exec, const void *ctx);
/* A {"t":"probe"} frame from the host (checked here: types, bounds). */
void vm_probe_request(const json_t *msg);
/* Fills VM_PROBE_POLLFDS entries (fd -1 where nothing is awaited). */
void vm_probe_pollfds(struct pollfd *p);
/* How long poll may wait for the probe's sake (its deadline), or -1. */
int vm_probe_timeout_ms(void);
/* After poll, with the entries vm_probe_pollfds() filled. */
void vm_probe_events(const struct pollfd *p);
/* A child reaped by the relay loop: true when it was the probe (its
 * answer is then queued). */
bool vm_probe_reaped(pid_t pid, int status);
/* Sends what is queued of an answer, waiting for room. The answer's frames
 * may be partly written when the relay loop wants to write a frame of its
 * own on the channel: call this first, or that frame cuts into one of the
 * probe's. */
void vm_probe_flush(void);
/* The command is done and the guest powers off: the probe is killed and
 * what is queued of an answer goes out whole (a frame is never cut), so
 * that the next frame on the channel is read as one. */
void vm_probe_finish(void);
