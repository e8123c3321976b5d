/* The guest init's basics (vm-guest.h): the channel, failing and powering
 * off, mounts, kernel modules and the virtio-serial ports, used by the init
 * (vm-init.c) and the files beside it. Guest context: the init, PID 1, the
 * guest's root (and the children it forks before they are confined). */
#include "backend/vm/guest/vm-guest.h"
#include "backend/vm/guest/vm-probe.h"
#include "proto/vm-frame.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int guest_channel = -1;

void guest_poweroff(void)
{
    sync();
    /* reboot=t and QEMU's -no-reboot: a reset ends QEMU. */
    reboot(RB_AUTOBOOT);
    for (;;)
        pause();
}

void guest_fail(const char *fmt, ...)
{
    char msg[CORDON_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "cordon-agent (vm init): %s\n", msg);
    if (guest_channel >= 0) {
        vm_probe_flush(); /* a probe's answer partly sent: whole frames first */
        json_t *m = json_pack("{s:s,s:s}", "t", "error", "message", msg);
        if (m)
            vm_frame_write(guest_channel, m);
        json_decref(m);
    }
    guest_poweroff();
}

void guest_mount_or_fail(const char *src, const char *dst, const char *type, unsigned long flags,
                         const char *data)
{
    if (fs_mkdir_p(dst, 0755) < 0)
        guest_fail("mkdir %s: %s", dst, strerror(errno));
    if (mount(src, dst, type, flags, data) < 0)
        guest_fail("mount %s on %s (%s): %s", src, dst, type, strerror(errno));
}

int guest_load_modules(const char *list, struct cordon_error *err)
{
    _cleanup_fclose_ FILE *f = fopen(list, "re");
    if (!f)
        return 0;
    char line[PATH_MAX];
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!line[0])
            continue;
        _cleanup_close_ int fd = open(line, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST))
            return error_set(err, errno, "loading the kernel module %s", line);
    }
    return 0;
}

/* The port's device exists before QEMU's "host connected" message has
 * reached the driver; until then a read returns EOF at once (and poll says
 * POLLHUP). A boot fast enough to read the boot spec in that window failed
 * with "reading the boot spec: Connection reset by peer". */
int guest_port_wait_host(int fd, const char *name, long long deadline)
{
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 0) >= 0 && ((p.revents & POLLIN) || !(p.revents & POLLHUP)))
            return fd;
        if (clock_now_ms() > deadline)
            guest_fail("virtio port %s: the host side did not connect", name);
        usleep(2000);
    }
}

/* /dev/vportNpM of the port called name (no udev here to make the
 * /dev/virtio-ports/ links); the device may appear a moment after its
 * module is loaded. */
int guest_open_port(const char *name)
{
    long long deadline = clock_now_ms() + GUEST_PORT_WAIT_MS;
    for (;;) {
        _cleanup_closedir_ DIR *d = opendir("/sys/class/virtio-ports");
        struct dirent *de;
        while (d && (de = readdir(d))) {
            if (de->d_name[0] == '.')
                continue;
            char path[PATH_MAX], got[128] = "";
            snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name", de->d_name);
            _cleanup_fclose_ FILE *f = fopen(path, "re");
            if (!f || !fgets(got, sizeof(got), f))
                continue;
            got[strcspn(got, "\n")] = '\0';
            if (strcmp(got, name) != 0)
                continue;
            snprintf(path, sizeof(path), "/dev/%s", de->d_name);
            int fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
            if (fd >= 0)
                return guest_port_wait_host(fd, name, deadline);
        }
        if (clock_now_ms() > deadline)
            guest_fail("virtio port %s did not appear", name);
        usleep(5000);
    }
}
