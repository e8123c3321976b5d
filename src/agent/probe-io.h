/* The probe child of `cordon verify NAME` as a sandbox's init runs it, on
 * ns (init.c) and in the vm guest (vm-probe.c): its request fed to its
 * stdin, the first INIT_PROBE_OUTPUT_MAX bytes of its stdout and stderr
 * kept (the rest read away, so it never sticks on a full pipe), a
 * deadline after which it is killed with all it started. Sandbox context,
 * PID 1: both pipes are non-blocking and nothing here waits. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct probe_io {
    pid_t pid;           /* 0: none runs */
    int in_fd;           /* its stdin's write end until fed, else -1 */
    int out_fd;          /* its stdout and stderr's read end until EOF, else -1 */
    const char *request; /* the caller's */
    size_t request_len, in_done;
    char *output; /* INIT_PROBE_OUTPUT_MAX bytes, the caller's */
    size_t output_len;
    bool output_cut;
    bool timed_out;
    long long deadline_ms;
};

#define PROBE_IO_INIT                                                                              \
    {                                                                                              \
        .in_fd = -1, .out_fd = -1                                                                  \
    }

/* Runs in the forked child with its stdin (IN) and stdout/stderr (OUT)
 * pipe ends; must not return. */
typedef void (*probe_io_child_fn)(int in, int out, void *ctx);

/* Pipes and fork for REQUEST (LEN bytes): NULL, or the answer that says
 * why nothing runs ("error: ..."). Output, cut and deadline start anew. */
const char *probe_io_spawn(struct probe_io *p, const char *request, size_t len,
                           probe_io_child_fn child, void *ctx);
/* Reads what is there now / writes what fits of the request (closing its
 * stdin once all is fed). */
void probe_io_read(struct probe_io *p);
void probe_io_write(struct probe_io *p);
/* Milliseconds to the deadline (0 when past), -1 when none runs or it was
 * already killed. */
int probe_io_timeout_ms(const struct probe_io *p);
/* Kills it (and its group) once the deadline has passed. */
void probe_io_check_deadline(struct probe_io *p);
void probe_io_kill(const struct probe_io *p);
/* After it was reaped with STATUS: the last of its output, both pipes
 * closed, pid 0, and END set to "timeout", "exit N" or "signal N", with a
 * note when the output was cut. */
void probe_io_reaped(struct probe_io *p, int status, char *end, size_t size);
/* Closes both pipes (the probe may still run: kill it first). */
void probe_io_close(struct probe_io *p);
