/* The init channel: the sandbox's init (src/agent/init.c; on vm,
 * src/backend/vm/guest/vm-probe.c) and the supervisor. With --control, fd 3
 * is a SOCK_SEQPACKET channel from the supervisor (backend/ns/run-ns.c) on
 * which init runs `cordon-agent probe` for `cordon verify NAME`. Each frame
 * is one type byte and a payload of at most INIT_FRAME_MAX - 1 bytes:
 *   supervisor -> init: 'B' the first piece of the probe's stdin, 'R'
 *     the next ones (at most INIT_PROBE_REQUEST_MAX in all); 'G' start the
 *     probe; 'W' the host has read the probe's /proc: feed it its stdin.
 *     While a probe runs or its answer is being sent, 'B', 'R' and 'G' are
 *     ignored (the supervisor runs one at a time).
 *   init -> supervisor: 'T' (+fd) the terminal's master (--pty, first);
 *     'S' (+ a pidfd of the probe when one could be made) the probe runs;
 *     'O' a piece of its stdout and stderr (at most INIT_PROBE_OUTPUT_MAX
 *     kept); 'X' it ended: "exit N", "signal N", "timeout" or an error. */
#pragma once

#define INIT_CONTROL_FD        3
#define INIT_FRAME_MAX         16384
#define INIT_PROBE_REQUEST_MAX (256 * 1024)
#define INIT_PROBE_OUTPUT_MAX  (256 * 1024)
/* A probe still running after this long is killed (with what it started). */
#define INIT_PROBE_TIMEOUT_MS 30000

/* Where cordon-agent appears inside the sandbox: a read-only bind of the
 * host binary, executed from there as PID 1. */
#define NS_AGENT_VIEW_PATH "/run/cordon/agent"
