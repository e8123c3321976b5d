/* The sandbox's view inside the guest (vm-view.h): the session's tmpfs
 * places and home, the host's directories over 9p at their host paths,
 * protected paths bound read-only, loopback, the read-only root. Guest
 * context: the init, PID 1, the guest's root, before anything runs for
 * the user. */
#include "backend/vm/guest/vm-view.h"
#include "backend/vm/guest/vm-guest.h"
#include "util/cleanup.h"
#include "util/fs.h"

#include <errno.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static void loopback_up(void)
{
    _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr = {0};
    memcpy(ifr.ifr_name, "lo", 3);
    if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
        guest_fail("loopback: %s", strerror(errno));
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
        guest_fail("loopback up: %s", strerror(errno));
}

static bool is_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static int share_depth_cmp(const void *a, const void *b)
{
    const char *pa = json_string_value(json_object_get(*(json_t *const *)a, "path"));
    const char *pb = json_string_value(json_object_get(*(json_t *const *)b, "path"));
    size_t la = pa ? strlen(pa) : 0, lb = pb ? strlen(pb) : 0;
    return (la > lb) - (la < lb);
}

#define VIEW_NOSUID (MS_NOSUID | MS_NODEV)

/* The session's fresh places: /tmp, /var/tmp, /dev/shm, /run, the guest
 * daemon's /var/lib/docker, devpts, and the home. */
static void view_tmpfs(json_t *spec, uid_t uid, gid_t gid)
{
    const unsigned long nosuid = VIEW_NOSUID;
    /* Each writable tmpfs bounded as on the host backends (the host's
     * limits.tmpfs_mib and limits.tmpfs_inodes); without them, the kernel's
     * half of the guest's RAM, each. */
    json_t *bounds = json_object_get(spec, "tmpfs");
    long mib = (long)json_integer_value(json_object_get(bounds, "mib"));
    long inodes = (long)json_integer_value(json_object_get(bounds, "inodes"));
    char size[64] = "";
    if (mib > 0 && inodes > 0)
        snprintf(size, sizeof(size), ",size=%ldm,nr_inodes=%ld", mib, inodes);
    char tmpfs_opts[128];
    snprintf(tmpfs_opts, sizeof(tmpfs_opts), "mode=1777%s", size);
    guest_mount_or_fail("tmpfs", "/tmp", "tmpfs", nosuid, tmpfs_opts);
    guest_mount_or_fail("tmpfs", "/var/tmp", "tmpfs", nosuid, tmpfs_opts);
    guest_mount_or_fail("tmpfs", "/dev/shm", "tmpfs", nosuid, tmpfs_opts);
    snprintf(tmpfs_opts, sizeof(tmpfs_opts), "mode=0755%s", size);
    guest_mount_or_fail("tmpfs", "/run", "tmpfs", nosuid, tmpfs_opts);
    /* Images and containers of the guest's daemon when it has no disk: as
     * large as the kernel allows a tmpfs (half the guest's RAM), said
     * explicitly. */
    guest_mount_or_fail("tmpfs", "/var/lib/docker", "tmpfs", MS_NODEV, "mode=0711,size=50%");
    guest_mount_or_fail("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
                        "newinstance,ptmxmode=0666,mode=0620");

    const char *home = json_string_value(json_object_get(spec, "home"));
    if (home && home[0] == '/' && !is_under(home, "/tmp") && !is_under(home, "/var/tmp") &&
        !is_under(home, "/run")) {
        snprintf(tmpfs_opts, sizeof(tmpfs_opts), "mode=0700,uid=%u,gid=%u%s", uid, gid, size);
        guest_mount_or_fail("tmpfs", home, "tmpfs", nosuid, tmpfs_opts);
    } else if (home && home[0] == '/') {
        /* The parents stay traversable for the user (0755, as on a host
         * where such a home exists); the home itself is the user's. */
        if (fs_mkdir_p(home, 0755) < 0 || chmod(home, 0700) < 0 || chown(home, uid, gid) < 0)
            guest_fail("home %s: %s", home, strerror(errno));
    }
}

/* The host's directories over 9p. Outer paths first: /usr, then the
 * workspace (which may sit below the home view_tmpfs mounted). */
static void view_shares(json_t *spec)
{
    const unsigned long nosuid = VIEW_NOSUID;
    json_t *shares = json_object_get(spec, "shares");
    size_t n = json_array_size(shares);
    json_t **sorted = calloc(n + 1, sizeof(*sorted));
    if (!sorted)
        guest_fail("out of memory");
    for (size_t i = 0; i < n; i++)
        sorted[i] = json_array_get(shares, i);
    qsort(sorted, n, sizeof(*sorted), share_depth_cmp);
    for (size_t i = 0; i < n; i++) {
        const char *tag = json_string_value(json_object_get(sorted[i], "tag"));
        const char *path = json_string_value(json_object_get(sorted[i], "path"));
        bool ro = json_is_true(json_object_get(sorted[i], "ro"));
        if (!tag || !path || path[0] != '/')
            guest_fail("bad share in the boot spec");
        /* System directories do not change under a session: let the guest
         * cache them (exec from /usr over 9p is otherwise slow). */
        bool system = strcmp(path, "/usr") == 0 || strcmp(path, "/etc") == 0;
        const char *opts = system ? "trans=virtio,version=9p2000.L,msize=524288,cache=loose"
                                  : "trans=virtio,version=9p2000.L,msize=524288";
        guest_mount_or_fail(tag, path, "9p", nosuid | (ro ? MS_RDONLY : 0), opts);
    }
    free(sorted);
}

/* Protected paths: read-only binds over themselves. Only a defence
 * against mistakes while the guest's root could undo it; see
 * docs/vm-backend.md. */
static void view_protected(json_t *spec)
{
    const unsigned long nosuid = VIEW_NOSUID;
    json_t *prot = json_object_get(spec, "protected");
    for (size_t i = 0; i < json_array_size(prot); i++) {
        const char *p = json_string_value(json_array_get(prot, i));
        struct stat st;
        if (!p || lstat(p, &st) < 0 || S_ISLNK(st.st_mode))
            continue;
        if (mount(p, p, NULL, MS_BIND, NULL) < 0 ||
            mount(NULL, p, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | nosuid, NULL) < 0)
            guest_fail("protecting %s: %s", p, strerror(errno));
    }
}

void guest_view_build(json_t *spec, uid_t uid, gid_t gid)
{
    view_tmpfs(spec, uid, gid);
    view_shares(spec);
    view_protected(spec);
    if (sethostname("cordon", 6) < 0)
        guest_fail("sethostname: %s", strerror(errno));
    loopback_up();
    /* The initramfs root itself becomes read-only, as the ns view's root. */
    if (mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY, NULL) < 0)
        fprintf(stderr, "cordon-agent (vm init): root stays writable: %s\n", strerror(errno));
}

/* Where the ns view keeps the agent binary (NS_AGENT_VIEW_PATH), which
 * `cordon verify` runs as its probe: in the guest the agent is /init. */
void guest_agent_view_link(void)
{
    if (fs_mkdir_p("/run/cordon", 0755) < 0 || symlink("/init", "/run/cordon/agent") < 0)
        fprintf(stderr, "cordon-agent (vm init): /run/cordon/agent: %s\n", strerror(errno));
}
