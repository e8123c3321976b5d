/* Dropping every privilege of the calling process before it execs
 * something less trusted: QEMU on the host (vm backend) and the user's
 * processes in the microVM's guest. Runs in a forked child, after fork and
 * before exec; no allocation. */
#pragma once
#include "util/error.h"

#include <stdbool.h>
#include <sys/types.h>

/* Locks the securebits (uid 0 gains nothing from exec, no ambient raise),
 * empties the bounding and ambient sets, switches to uid/gid when
 * switch_ids (with no supplementary groups), clears every capability and
 * sets no_new_privs. Needs CAP_SETPCAP (and CAP_SETUID/CAP_SETGID to
 * switch) when it has any capability to drop; a process without
 * capabilities only gets no_new_privs. */
int privs_drop_all(bool switch_ids, uid_t uid, gid_t gid, struct cordon_error *err);

/* Empties the capability bounding set but for KEEP (a capability number,
 * or -1 for none). Needs CAP_SETPCAP; -1 with errno on a refusal. */
int privs_drop_bounding(int keep);

/* The environment of the helpers the vm backend starts (QEMU, passt, the
 * dynamic loader): a PATH and nothing of the supervisor's. */
char *const *privs_helper_environ(void);
