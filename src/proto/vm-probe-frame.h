/* The frames of `cordon verify NAME`'s probe on the channel of a vm
 * `cordon run`/`cordon shell` session (docs/verify.md), built and checked
 * here for both ends: the supervisor (backend/vm/run-vm.c) and the guest's
 * init (agent/vm-probe.c). Any context. Each end treats what it reads as
 * untrusted: types, ids and sizes are checked before anything is used.
 *   host -> guest: {"t":"probe","id":N,"request":TEXT}
 *   guest -> host: {"t":"probe-out","id":N,"data":TEXT}...
 *                  {"t":"probe-end","id":N,"end":TEXT} */
#pragma once

#include "proto/protocol.h"
#include "util/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Output bytes per probe-out frame (JSON escaping at most sextuples them:
 * far below VM_FRAME_MAX). */
#define VM_PROBE_CHUNK 16384
/* The longest end the host keeps ("exit N", "timeout", "error: ..."). */
#define VM_PROBE_END_MAX 128

/* Host: the request frame (caller owns); NULL when request is not UTF-8
 * or memory ran out. */
json_t *vm_probe_request_new(json_int_t id, const char *request);

/* Guest: a {"t":"probe"} frame's fields: 0 with *request (borrowed from m)
 * and *len, or -1 with *why, the "error: ..." end to answer. *id is the
 * request's (0 when it has none) in both cases. */
int vm_probe_request_check(const json_t *m, json_int_t *id, const char **request, size_t *len,
                           const char **why);

/* Guest: queues the answer on w: probe-out frames of at most VM_PROBE_CHUNK
 * bytes of output each, cut between UTF-8 sequences (bytes that are not
 * UTF-8 become '?'), then the probe-end frame. */
int vm_probe_answer_queue(struct frame_writer *w, json_int_t id, const char *output, size_t len,
                          const char *end, struct cordon_error *err);

/* Host: an answer being received. */
struct vm_probe_answer {
    bool waiting;  /* a request is out and its end has not come */
    json_int_t id; /* that request's */
    char *output;  /* NUL-terminated when not NULL */
    size_t output_len;
    bool output_cut; /* the guest sent more than INIT_PROBE_OUTPUT_MAX */
    char end[VM_PROBE_END_MAX + 1];
};

enum vm_probe_frame {
    VM_PROBE_FRAME_OTHER,  /* not a probe frame: the relay's to read */
    VM_PROBE_FRAME_STALE,  /* a probe frame, not of the request waited for */
    VM_PROBE_FRAME_OUTPUT, /* output added (at most INIT_PROBE_OUTPUT_MAX kept) */
    VM_PROBE_FRAME_END,    /* the end is in a->end; the answer is complete */
};

/* Starts waiting for the answer to request id (what was kept of another
 * is dropped). */
void vm_probe_answer_start(struct vm_probe_answer *a, json_int_t id);
/* One frame from the guest. */
enum vm_probe_frame vm_probe_answer_take(struct vm_probe_answer *a, const json_t *m);
/* Stops waiting and frees the output. */
void vm_probe_answer_clear(struct vm_probe_answer *a);
