/* The guest's pty for `cordon shell` / `cordon run --pty` on the vm backend
 * (vm-pty.h). Guest context: vm_pty_open, vm_pty_resize and vm_pty_signal
 * run in the guest's init (PID 1, the guest's root, unconfined);
 * vm_pty_attach_in_child runs in the command's child before confine_user().
 * What the host sends is not trusted blindly: sizes are bounded
 * (vm_frame_winsize_get), and signals go only to the command's own
 * session. */
#include "backend/vm/guest/vm-pty.h"
#include "proto/vm-frame.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

int vm_pty_open(struct vm_pty *p, const json_t *winsize, uid_t uid, gid_t gid,
                struct cordon_error *err)
{
    p->master = -1;
    p->slave[0] = '\0';
    /* O_NOCTTY: the init must never get a controlling terminal (a hang-up
     * would signal PID 1). */
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0)
        return error_set(err, errno, "creating a terminal: /dev/ptmx");
    if (grantpt(master) < 0 || unlockpt(master) < 0 ||
        ptsname_r(master, p->slave, sizeof(p->slave)) != 0) {
        int e = errno;
        close(master);
        return error_set(err, e, "creating a terminal");
    }
    /* The init (root) opened it, so the slave is root's: the command runs as
     * the user and reopens its terminal by name (/dev/tty, ttyname). */
    if (chown(p->slave, uid, gid) < 0 || chmod(p->slave, 0620) < 0) {
        int e = errno;
        close(master);
        return error_set(err, e, "terminal %s: giving it to uid %u", p->slave, uid);
    }
    struct winsize ws = {0};
    if (winsize && vm_frame_winsize_get(winsize, &ws.ws_row, &ws.ws_col) == 0)
        ioctl(master, TIOCSWINSZ, &ws);
    if (fcntl(master, F_SETFL, O_NONBLOCK) < 0) {
        int e = errno;
        close(master);
        return error_set(err, e, "terminal %s: O_NONBLOCK", p->slave);
    }
    p->master = master;
    return 0;
}

int vm_pty_attach_in_child(const char *slave)
{
    int fd = open(slave, O_RDWR);
    if (fd < 0)
        return -1;
    if (ioctl(fd, TIOCSCTTY, 0) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        if (dup2(fd, i) < 0)
            return -1;
    }
    if (fd > 2)
        close(fd);
    return 0;
}

void vm_pty_resize(const struct vm_pty *p, const json_t *frame)
{
    struct winsize ws = {0};
    if (p->master >= 0 && vm_frame_winsize_get(frame, &ws.ws_row, &ws.ws_col) == 0)
        ioctl(p->master, TIOCSWINSZ, &ws);
}

void vm_pty_signal(const struct vm_pty *p, pid_t session, int sig)
{
    /* TIOCGPGRP on the master names the slave's foreground group; it is
     * a group of the command's session (only the session's members can
     * set it), so nothing else in the guest can be reached this way. */
    pid_t fg = p->master >= 0 ? tcgetpgrp(p->master) : -1;
    if (fg <= 0)
        fg = session;
    kill(-fg, sig);
    if (sig == SIGHUP && fg != session)
        kill(-session, sig);
}
