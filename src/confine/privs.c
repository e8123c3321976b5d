/* Dropping privileges before an exec (privs.h). Used in forked children:
 * the supervisor's child that becomes QEMU (host) and the guest init's
 * children that become the user's processes (microVM). */
#include "confine/privs.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SECBIT_NOROOT
#define SECBIT_NOROOT                      (1 << 0)
#define SECBIT_NOROOT_LOCKED               (1 << 1)
#define SECBIT_NO_SETUID_FIXUP             (1 << 2)
#define SECBIT_NO_SETUID_FIXUP_LOCKED      (1 << 3)
#define SECBIT_KEEP_CAPS_LOCKED            (1 << 5)
#define SECBIT_NO_CAP_AMBIENT_RAISE        (1 << 6)
#define SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED (1 << 7)
#endif

static bool has_capabilities(void)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2] = {{0}};
    if (syscall(SYS_capget, &hdr, data) < 0)
        return true; /* unknown: try to drop, and report what fails */
    return data[0].permitted || data[1].permitted || data[0].effective || data[1].effective;
}

int privs_drop_bounding(int keep)
{
    /* Capabilities are numbered 0..CAP_LAST_CAP without a gap, and the
     * kernel answers EINVAL for a number past the last: the first EINVAL
     * ends the walk (41 calls on this kernel instead of 64). */
    for (int cap = 0; cap <= 63; cap++) {
        if (cap == keep)
            continue;
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
            return errno == EINVAL ? 0 : -1;
    }
    return 0;
}

int privs_drop_all(bool switch_ids, uid_t uid, gid_t gid, struct cordon_error *err)
{
    if (has_capabilities()) {
        /* Securebits and the bounding set first: both need CAP_SETPCAP,
         * which the switch of ids below would otherwise take away
         * (NO_SETUID_FIXUP keeps the sets until capset clears them). */
        if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                         SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                                         SECBIT_NO_CAP_AMBIENT_RAISE |
                                         SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) < 0)
            return error_set_raw(err, errno, "set securebits", NULL);
        if (privs_drop_bounding(-1) < 0)
            return error_set_raw(err, errno, "drop capability bounding set", NULL);
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return error_set_raw(err, errno, "clear ambient capabilities", NULL);
    if (switch_ids) {
        if (getuid() == 0 && setgroups(0, NULL) < 0)
            return error_set_raw(err, errno, "setgroups", NULL);
        if (setgid(gid) < 0)
            return error_set_raw(err, errno, "setgid", NULL);
        if (setuid(uid) < 0)
            return error_set_raw(err, errno, "setuid", NULL);
    }
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2] = {{0}};
    if (syscall(SYS_capset, &hdr, data) < 0)
        return error_set_raw(err, errno, "capset", NULL);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return error_set_raw(err, errno, "no_new_privs", NULL);
    return 0;
}

char *const *privs_helper_environ(void)
{
    static char *const env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                NULL};
    return env;
}
