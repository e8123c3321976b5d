/* A sandbox's life on the host: ownership lock first, then the sandbox, then
 * a watchdog that tears it down the moment the supervisor dies (SIGKILL
 * included), and the teardown policy at the end. Host context. */
#pragma once

#include "backend/backend.h"
#include "supervisor/gitguard.h"
#include "config/trust-guard.h"
#include "supervisor/launch.h"
#include "supervisor/state.h"

enum lifecycle_teardown { TEARDOWN_REMOVE, TEARDOWN_STOP, TEARDOWN_NONE };

struct lifecycle {
    struct state_owner owner;
    enum lifecycle_teardown teardown;
    pid_t watchdog_pid;
    int watchdog_pidfd;
    int disarm_fd; /* write end: closing it tells the watchdog to stand down */
    double gc_hours;
    /* Host-owned git metadata: the sandbox's copies, synced after each
     * call and at the end (gitguard.h); NULL when there is none. */
    struct gitguard *git;
    struct trust_guard trust_guard; /* what the session did to .cordon.toml */
    char *review_dir;               /* review mode's layer (review.h); NULL in direct mode */
    /* The launch's network helpers: reaped by lifecycle_end before the
     * state is released (a helper holding a published port must be gone
     * before the name is free), after the guards' work their exit
     * overlapped (net_session_kill). */
    struct net_session *net;
    /* Other helpers the backend's teardown killed without waiting (ns: the
     * socket guard, whose exit tears the view down): reaped with the
     * network's (lifecycle_reap_later). */
    pid_t reap[2];
    size_t nreap;
};

/* Takes ownership of the launch's sandbox name (before anything is
 * created), then plans the sandbox's view of the git metadata into the
 * launch's spec (gitguard.h). Stale sandboxes (gc_hours) are swept later, off the start path:
 * by the watchdog, or by lifecycle_end when no watchdog was armed. */
int lifecycle_begin(struct launch *l, struct lifecycle *lc, struct cordon_error *err);
/* A killed helper (pid > 0) for lifecycle_end to reap before the watchdog
 * stands down; reaped at once when there is no room. */
void lifecycle_reap_later(struct lifecycle *lc, pid_t pid);
/* For a sandbox kept after its session (teardown stop/none): creates its
 * tmp/ and home/ in the state directory and points the spec at them. */
int lifecycle_persist(struct lifecycle *lc, struct launch *l, struct cordon_error *err);
/* Records the running sandbox and arms the watchdog: if the supervisor
 * dies, it kills sb->pid (the sandbox's init, QEMU, the docker CLI) and
 * runs the backend's orphan_teardown (cgroups, `docker rm -f`, the
 * backend's part of the state directory). */
int lifecycle_started(struct lifecycle *lc, const struct launch *l, const struct sandbox *sb,
                      struct cordon_error *err);
/* After the sandbox is gone (graceful): the last git metadata sync and the
 * check for planted repositories, disarm the watchdog, apply teardown,
 * release the lock. */
void lifecycle_end(struct lifecycle *lc);
