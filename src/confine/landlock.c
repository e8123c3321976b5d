/* Landlock as a second layer under the mount namespace: the whole view is
 * readable and executable, only the writable places are writable. Probed on
 * the host; applied by the child after pivot_root (no allocation). Kernels
 * without Landlock report it; the mount namespace remains the boundary. */
#include "confine/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>

#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int ns_landlock_abi(void)
{
#ifdef SYS_landlock_create_ruleset
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return abi < 0 ? -errno : (int)abi;
#else
    return -ENOSYS;
#endif
}

#define LL_READ                                                                                    \
    (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define LL_WRITE_V1                                                                                \
    (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |                               \
     LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | \
     LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |   \
     LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM)

static int add_path_rule(int ruleset, const char *path, unsigned long long access)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    struct landlock_path_beneath_attr attr = {.allowed_access = access, .parent_fd = fd};
    long rc = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr, 0);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc < 0 ? -1 : 0;
}

int ns_landlock_apply_in_child(int abi, const char *const *writable, struct cordon_error *err)
{
    if (abi <= 0)
        return 0;
    unsigned long long write_access = LL_WRITE_V1;
    if (abi >= 2)
        write_access |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3)
        write_access |= LANDLOCK_ACCESS_FS_TRUNCATE;
    struct landlock_ruleset_attr rs = {.handled_access_fs = LL_READ | write_access};
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &rs, sizeof(rs), 0);
    if (ruleset < 0)
        return error_set_raw(err, errno, "landlock: create ruleset", NULL);
    if (add_path_rule(ruleset, "/", LL_READ) < 0) {
        int e = errno;
        close(ruleset);
        return error_set_raw(err, e, "landlock: add rule", "/");
    }
    for (const char *const *p = writable; p && *p; p++) {
        if (add_path_rule(ruleset, *p, LL_READ | write_access) < 0) {
            int e = errno;
            close(ruleset);
            return error_set_raw(err, e, "landlock: add rule", *p);
        }
    }
    long rc = syscall(SYS_landlock_restrict_self, ruleset, 0);
    int e = errno;
    close(ruleset);
    if (rc < 0)
        return error_set_raw(err, e, "landlock: restrict self", NULL);
    return 0;
}
