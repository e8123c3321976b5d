/* The socket-guard filter (docs/sockets.md). Child context for the load;
 * the program itself is static data.
 *
 * A path in a unix socket address is resolved by the kernel in the caller's
 * mount namespace, but the socket found there is looked up by inode across
 * every network namespace: a host listener whose socket file lies in the
 * workspace is reachable from the sandbox whatever its network namespace.
 * Nothing in seccomp can read the address (it is in memory), so every call
 * that can carry one is handed to the guard, which reads it, decides, and
 * performs the call itself (never SECCOMP_USER_NOTIF_FLAG_CONTINUE, whose
 * re-read of the caller's memory would be a TOCTOU). The main filter kills
 * foreign architectures already, so this one lets them through. */
#include "confine/seccomp-notify.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif

#define ARG_LOW(n)  (offsetof(struct seccomp_data, args) + (n) * sizeof(__u64))
#define ARG_HIGH(n) (ARG_LOW(n) + sizeof(__u32))

static const struct sock_filter notify_bpf[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_connect, 4, 0),  /* -> notify */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendmsg, 3, 0),  /* -> notify */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendmmsg, 2, 0), /* -> notify */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendto, 2, 0),   /* -> its address */
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    /* notify: */
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
    /* sendto's address, both halves: send() is sendto(fd, buf, len, flags,
     * NULL, 0) and stays with the kernel. */
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(4)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2), /* non-zero -> notify */
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HIGH(4)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0), /* zero -> allow */
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

void ns_seccomp_notify_program(struct sock_fprog *prog)
{
    prog->len = (unsigned short)(sizeof(notify_bpf) / sizeof(notify_bpf[0]));
    prog->filter = (struct sock_filter *)notify_bpf;
}

int ns_seccomp_notify_load_in_child(struct cordon_error *err)
{
    struct sock_fprog prog;
    ns_seccomp_notify_program(&prog);
    /* Once the guard has read a call, only a fatal signal interrupts the
     * caller's wait (5.19): an interrupted call that the guard performed
     * anyway would be restarted and performed twice (a sendmsg's data
     * duplicated), and a caller under a fast timer would never get through
     * (each restart interrupted before its answer). Older kernels refuse
     * the flag and keep those two flaws (docs/sockets.md). */
    long fd =
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog);
    if (fd < 0 && errno == EINVAL)
        fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (fd < 0)
        return error_set_raw(err, errno, "load the socket-guard seccomp filter", NULL);
    return (int)fd;
}

int ns_sock_guard_handoff_in_child(int sync_fd, struct cordon_error *err)
{
    /* The guard's view of which unix sockets the sandbox itself has bound:
     * a sock_diag socket answers for the namespace it was made in, and
     * only this side can make one here (setns would need CAP_SYS_ADMIN in
     * the supervisor's own user namespace). Above the stdio range. */
    int made = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (made < 0)
        return error_set_raw(err, errno, "socket guard: sock_diag socket", NULL);
    int diag = fcntl(made, F_DUPFD_CLOEXEC, 10);
    close(made);
    if (diag < 0)
        return error_set_raw(err, errno, "socket guard: sock_diag socket", NULL);
    int listener = ns_seccomp_notify_load_in_child(err);
    if (listener < 0) {
        close(diag);
        return -1;
    }
    /* Plain write and read: sendmsg is one of the calls the filter just
     * loaded hands over, to a guard that does not run yet. */
    struct ns_guard_fds fds = {NS_GUARD_FDS_MAGIC, listener, diag};
    char ack;
    int rc = 0;
    if (write(sync_fd, &fds, sizeof(fds)) != (ssize_t)sizeof(fds))
        rc = error_set_raw(err, errno, "socket guard: handing over the listener", NULL);
    else if (read(sync_fd, &ack, 1) != 1)
        rc = error_set_raw(err, errno ? errno : EPIPE, "socket guard: no word from the supervisor",
                           NULL);
    close(listener);
    close(diag);
    return rc;
}
