/* A restored guest as fresh as a booted one (vm-fresh.h), from the boot
 * spec's seed and clock: every restore of one snapshot (vm-snapshot.c)
 * starts from the same saved state. Guest context: the init, PID 1, the
 * guest's root, after the view is built (the boot id goes to its /run). */
#include "backend/vm/guest/vm-fresh.h"
#include "backend/vm/guest/vm-guest.h"
#include "util/cleanup.h"
#include "util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/random.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* A restored guest as fresh as a booted one (the same for both): the
 * host's seed mixed into the RNG and the CRNG reseeded at once (every
 * restore of one snapshot starts with the same pool; the seed makes the
 * outputs differ from the first read on), the host's clock (a restored
 * guest's clock is the snapshot's), and a boot id of this session bound
 * over the kernel's (generated once per kernel boot, so shared by all
 * restores when anything read it before the save). */
void guest_fresh_start(json_t *spec)
{
    const char *hex = json_string_value(json_object_get(spec, "seed"));
    struct {
        struct rand_pool_info info;
        unsigned char bytes[64];
    } seed = {.info = {.entropy_count = 0, .buf_size = sizeof(seed.bytes)}};
    if (!hex || strlen(hex) != 2 * sizeof(seed.bytes))
        guest_fail("the boot spec lacks the random seed");
    for (size_t i = 0; i < sizeof(seed.bytes); i++) {
        unsigned int byte;
        if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
            guest_fail("bad random seed in the boot spec");
        seed.bytes[i] = (unsigned char)byte;
    }
    seed.info.entropy_count = (int)sizeof(seed.bytes) * 8;
    _cleanup_close_ int rnd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
    if (rnd < 0 || ioctl(rnd, RNDADDENTROPY, &seed.info) < 0 || ioctl(rnd, RNDRESEEDCRNG) < 0)
        guest_fail("reseeding the RNG: %s", strerror(errno));
    explicit_bzero(&seed, sizeof(seed));

    json_t *clock = json_object_get(spec, "clock");
    struct timespec now = {.tv_sec = (time_t)json_integer_value(json_object_get(clock, "sec")),
                           .tv_nsec = (long)json_integer_value(json_object_get(clock, "nsec"))};
    if (now.tv_sec <= 0 || now.tv_nsec < 0 || now.tv_nsec >= 1000000000L ||
        clock_settime(CLOCK_REALTIME, &now) < 0)
        guest_fail("setting the clock from the host: %s", strerror(errno));

    /* A disk's blocks the kernel read before a snapshot (its partition
     * scan) are the snapshot's disk's, not this session's: dropped. */
    _cleanup_closedir_ DIR *blocks = opendir("/sys/block");
    for (struct dirent *de; blocks && (de = readdir(blocks));) {
        if (strncmp(de->d_name, "vd", 2) != 0)
            continue;
        char dev[300];
        snprintf(dev, sizeof(dev), "/dev/%s", de->d_name);
        _cleanup_close_ int bfd = open(dev, O_RDONLY | O_CLOEXEC);
        if (bfd < 0 || ioctl(bfd, BLKFLSBUF, 0) < 0)
            guest_fail("dropping the cached blocks of %s: %s", dev, strerror(errno));
    }

    unsigned char id[16];
    if (getrandom(id, sizeof(id), 0) != (ssize_t)sizeof(id))
        guest_fail("boot id: %s", strerror(errno));
    id[6] = (unsigned char)((id[6] & 0x0f) | 0x40); /* a version 4 UUID, as the kernel's */
    id[8] = (unsigned char)((id[8] & 0x3f) | 0x80);
    char text[40];
    snprintf(text, sizeof(text),
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n", id[0], id[1],
             id[2], id[3], id[4], id[5], id[6], id[7], id[8], id[9], id[10], id[11], id[12], id[13],
             id[14], id[15]);
    /* In /run, the session's fresh tmpfs; root's and read-only to all. */
    const char *file = "/run/cordon-boot_id";
    _cleanup_close_ int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
    if (fd < 0 || fs_write_all(fd, text, strlen(text)) < 0 ||
        mount(file, "/proc/sys/kernel/random/boot_id", NULL, MS_BIND, NULL) < 0 ||
        mount(NULL, "/proc/sys/kernel/random/boot_id", NULL,
              MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        guest_fail("boot id: %s", strerror(errno));
}
