/* `cordon verify NAME` for a `cordon run`/`cordon shell` session on the vm
 * backend (run-vm-verify.c): the session's control socket and the audit in
 * flight. Host context, unprivileged supervisor, driven by run-vm.c's relay
 * loop; nothing here waits for the guest. */
#pragma once

#include "backend/backend.h"
#include "supervisor/launch.h"
#include "supervisor/lifecycle.h"

#include <jansson.h>
#include <stdbool.h>

/* An answer the guest's init still owes this long after the probe's own
 * deadline (INIT_PROBE_TIMEOUT_MS) is given up on. */
#define VM_VERIFY_GRACE_MS 15000

struct vm_verify;

/* Listens on the session's control socket (<state dir>/control). l, lc and
 * sb are borrowed for the session's lifetime; channel is the guest init's
 * (the probe's requests go there). */
int vm_verify_open(const struct launch *l, struct lifecycle *lc, const struct sandbox *sb,
                   int channel, bool shell, struct vm_verify **out, struct cordon_error *err);
/* The fd for the relay's poll set (POLLIN: call vm_verify_dispatch), or -1
 * (v NULL). */
int vm_verify_fd(const struct vm_verify *v);
/* How long the relay may sleep before vm_verify_tick() must run, or -1. */
int vm_verify_timeout_ms(const struct vm_verify *v);
/* Serves the control socket: status, verify (the request goes to the
 * guest). Never blocks on a peer. */
void vm_verify_dispatch(struct vm_verify *v);
/* After every poll: an answer overdue from the guest ends the audit. */
void vm_verify_tick(struct vm_verify *v);
/* A frame from the guest (untrusted): true when it was the probe's
 * (consumed here, whether or not it matched the audit in flight). */
bool vm_verify_frame(struct vm_verify *v, const json_t *m);
/* The guest reported the command's exit status: an audit in flight is
 * answered that nothing was audited, and so is any later one. */
void vm_verify_exited(struct vm_verify *v, int status);
/* The guest failed or its channel closed (why: "the guest ..."). */
void vm_verify_gone(struct vm_verify *v, const char *why);
/* Removes the socket, answers nothing more. NULL is fine. */
void vm_verify_close(struct vm_verify *v);
