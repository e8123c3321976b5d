/* The seccomp filter (tests/security/cases.md 16-25), written with libseccomp.
 * Build time only: tools/seccomp-gen runs this and compiles the exported BPF
 * into cordon (ns-seccomp.c), so no sandbox start pays for building it; the
 * child loads it right before exec, after no_new_privs. Default allow, with the kernel surface a sandboxed build never
 * needs denied with EPERM; foreign architectures (32-bit int 0x80, x32) kill
 * the process, since the filter only speaks x86_64's syscall numbers. */
#include "confine/seccomp-filter.h"
#include "util/cleanup.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

/* Denied outright with EPERM. */
static const char *const denied_syscalls[] = {
    /* kernel keyrings are not namespaced (case 16) */
    "keyctl",
    "add_key",
    "request_key",
    /* reading or steering other processes (case 17) */
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    /* large attack surface with a history of exploits (case 18) */
    "userfaultfd",
    "perf_event_open",
    "bpf",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    /* re-shaping the view (case 19) */
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    /* nested namespaces (case 20); clone is filtered on its flags below */
    "unshare",
    "setns",
    /* the machine itself (case 25) */
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "syslog",
    "open_by_handle_at",
    "name_to_handle_at",
    "lookup_dcookie",
    "quotactl",
    "quotactl_fd",
    "nfsservctl",
    "uselib",
    "vhangup",
    "iopl",
    "ioperm",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "stime",
    "fanotify_init",
};

/* CLONE_NEW* flags: any of them in clone()'s flags is refused. */
static const unsigned long clone_ns_flags[] = {
    CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,    CLONE_NEWNET,
    CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP, 0x00000080 /* CLONE_NEWTIME */,
};

static int add_rule(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned count,
                    const struct scmp_arg_cmp *args)
{
    int rc = seccomp_rule_add_array(ctx, action, nr, count, args);
    return rc == -EEXIST ? 0 : rc;
}

int ns_seccomp_build(struct sock_fprog *prog, struct cordon_error *err)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return error_set(err, ENOMEM, "seccomp: init");
    int rc = 0;
    const char *failed = "attributes";
    /* Declared before the first goto: the cleanup must never see an
     * uninitialised fd. */
    _cleanup_close_ int memfd = -1;
    /* Anything not x86_64 (the int 0x80 entry, x32) is killed, not allowed:
     * those entry points would bypass every rule below. */
    if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) < 0 ||
        (rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0)) < 0)
        goto out;

    for (size_t i = 0; i < ARRAY_SIZE(denied_syscalls); i++) {
        int nr = seccomp_syscall_resolve_name(denied_syscalls[i]);
        if (nr == __NR_SCMP_ERROR)
            continue; /* not a syscall on this architecture */
        failed = denied_syscalls[i];
        if ((rc = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0, NULL)) < 0)
            goto out;
    }

    failed = "clone";
    for (size_t i = 0; i < ARRAY_SIZE(clone_ns_flags); i++) {
        struct scmp_arg_cmp arg = SCMP_A0(SCMP_CMP_MASKED_EQ, clone_ns_flags[i], clone_ns_flags[i]);
        if ((rc = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, &arg)) < 0)
            goto out;
    }
    /* clone3 passes its flags in memory, out of seccomp's reach: ENOSYS makes
     * libc fall back to clone(), whose flags are checked above. */
    failed = "clone3";
    if ((rc = add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0, NULL)) < 0)
        goto out;

    /* TIOCSTI pushes input into a terminal, TIOCLINUX can do the same on a
     * console. The kernel compares the request as 32 bits, so the filter
     * masks the upper half (CVE-2019-10063). */
    failed = "ioctl";
    static const unsigned long denied_ioctls[] = {TIOCSTI, TIOCLINUX};
    for (size_t i = 0; i < ARRAY_SIZE(denied_ioctls); i++) {
        struct scmp_arg_cmp arg = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, denied_ioctls[i]);
        if ((rc = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1, &arg)) < 0)
            goto out;
    }

    /* Sockets to the hypervisor, the audit subsystem, raw key management. */
    failed = "socket";
    static const int denied_families[] = {AF_VSOCK, AF_KEY, AF_PACKET};
    for (size_t i = 0; i < ARRAY_SIZE(denied_families); i++) {
        struct scmp_arg_cmp arg = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)denied_families[i]);
        if ((rc = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1, &arg)) < 0)
            goto out;
    }
    struct scmp_arg_cmp audit[2] = {SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
                                    SCMP_A2(SCMP_CMP_EQ, NETLINK_AUDIT)};
    if ((rc = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 2, audit)) < 0)
        goto out;

    /* Export to memory: the child only loads the finished program. */
    failed = "export";
    memfd = memfd_create("cordon-seccomp", MFD_CLOEXEC);
    if (memfd < 0) {
        rc = -errno;
        goto out;
    }
    if ((rc = seccomp_export_bpf(ctx, memfd)) < 0)
        goto out;
    struct stat st;
    if (fstat(memfd, &st) < 0 || st.st_size <= 0 || st.st_size % sizeof(struct sock_filter)) {
        rc = -EINVAL;
        goto out;
    }
    struct sock_filter *filter = malloc((size_t)st.st_size);
    if (!filter) {
        rc = -ENOMEM;
        goto out;
    }
    if (pread(memfd, filter, (size_t)st.st_size, 0) != st.st_size) {
        free(filter);
        rc = -EIO;
        goto out;
    }
    prog->len = (unsigned short)((size_t)st.st_size / sizeof(struct sock_filter));
    prog->filter = filter;
out:
    seccomp_release(ctx);
    if (rc < 0)
        return error_set(err, -rc, "seccomp: building the filter (%s)", failed);
    return 0;
}
