/* A terminal for the command of `cordon shell` / `cordon run --pty` on the
 * vm backend (docs/vm-backend.md "`cordon run` on the vm backend"). Guest
 * context: the guest's init (PID 1, the guest's root) makes the pty on the
 * guest's own devpts and relays its master over hvc0; the command's child
 * makes the slave its controlling terminal before it is confined. */
#pragma once

#include "util/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

struct vm_pty {
    int master;     /* O_CLOEXEC, O_NONBLOCK; -1 when there is none */
    char slave[64]; /* /dev/pts/N */
};

/* Opens a pty whose slave belongs to the user (uid/gid, mode 0620: the
 * command may reopen it, e.g. through /dev/tty), at the size the boot
 * spec's "winsize" gives (left at the kernel's 0x0 when absent or out of
 * range, as on ns without a host terminal). */
int vm_pty_open(struct vm_pty *p, const json_t *winsize, uid_t uid, gid_t gid,
                struct cordon_error *err);
/* In the command's child, after setsid() and before the privileges go: the
 * slave as controlling terminal and as fds 0, 1 and 2. -1 with errno. */
int vm_pty_attach_in_child(const char *slave);
/* A "resize" frame from the host: the new size on the master (the kernel
 * sends SIGWINCH to the foreground process group). Out-of-range sizes are
 * ignored. */
void vm_pty_resize(const struct vm_pty *p, const json_t *frame);
/* A signal the host's cordon received, delivered as a terminal delivers
 * its signal keys: to the foreground process group (a `sleep` the shell
 * waits for, not the shell); SIGHUP, a hang-up, to the session's leader
 * as well. session is the command's pid (it leads its session). */
void vm_pty_signal(const struct vm_pty *p, pid_t session, int sig);
