/* Review mode's overlay with the new mount API (overlay.h). The layers are
 * given as fds where the kernel takes them (6.13+), else as paths
 * ("lowerdir+" takes one path with no separator parsing, 6.8+). userxattr:
 * in a user namespace the kernel cannot set trusted.overlay.*, so opaque
 * directories are marked user.overlay.*, and a root mount uses the same so
 * the layer reads alike everywhere; redirect_dir=nofollow (none created,
 * none followed: "off" follows redirects and the kernel refuses it with
 * userxattr), metacopy and index off keep the upper layer a plain tree of
 * whole files, whiteouts (0/0 character devices) and opaque markers, which
 * is all `cordon changes` decodes. Host context, between clone and exec. */
#include "backend/overlay.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static int set_layer(int fsfd, const char *key, const char *path, int fd)
{
    if (fsconfig(fsfd, FSCONFIG_SET_FD, key, NULL, fd) == 0)
        return 0;
    return fsconfig(fsfd, FSCONFIG_SET_STRING, key, path, 0);
}

int review_overlay_tree(const char *lower, const char *layer, unsigned attr,
                        struct cordon_error *err)
{
    char upper[PATH_MAX], work[PATH_MAX];
    size_t n = strlen(layer);
    if (n + sizeof("/upper") > sizeof(upper))
        return error_set_raw(err, ENAMETOOLONG, "overlay", layer);
    memcpy(upper, layer, n);
    memcpy(upper + n, "/upper", sizeof("/upper"));
    memcpy(work, layer, n);
    memcpy(work + n, "/work", sizeof("/work"));
    _cleanup_close_ int lower_fd = open(lower, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (lower_fd < 0)
        return error_set_raw(err, errno, "overlay: open the workspace", lower);
    _cleanup_close_ int upper_fd = open(upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    _cleanup_close_ int work_fd = open(work, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (upper_fd < 0 || work_fd < 0)
        return error_set_raw(err, errno, "overlay: open the review layer", upper);
    _cleanup_close_ int fsfd = fsopen("overlay", FSOPEN_CLOEXEC);
    if (fsfd < 0)
        return error_set_raw(err, errno, "overlay: fsopen (review mode needs overlayfs)", lower);
    if (set_layer(fsfd, "lowerdir+", lower, lower_fd) < 0)
        return error_set_raw(err, errno, "overlay: lower layer (kernel 6.8+)", lower);
    if (set_layer(fsfd, "upperdir", upper, upper_fd) < 0 ||
        set_layer(fsfd, "workdir", work, work_fd) < 0)
        return error_set_raw(err, errno, "overlay: upper layer", upper);
    if (fsconfig(fsfd, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0 ||
        fsconfig(fsfd, FSCONFIG_SET_STRING, "redirect_dir", "nofollow", 0) < 0 ||
        fsconfig(fsfd, FSCONFIG_SET_STRING, "metacopy", "off", 0) < 0 ||
        fsconfig(fsfd, FSCONFIG_SET_STRING, "index", "off", 0) < 0)
        return error_set_raw(err, errno, "overlay: options", lower);
    if (fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
        return error_set_raw(err, errno,
                             "overlay: create (the state directory's filesystem "
                             "needs user xattrs)",
                             upper);
    int tree = fsmount(fsfd, FSMOUNT_CLOEXEC, attr);
    if (tree < 0)
        return error_set_raw(err, errno, "overlay: fsmount", lower);
    return tree;
}
