/* The host terminal for `cordon shell` / `cordon run --pty` (term.h). Host
 * context (supervisor). The relays block every signal they handle into a
 * signalfd, so their loops always return here to restore the terminal; a
 * SIGKILL is the exception no code can cover. */
#include "util/term.h"

#include <errno.h>
#include <sys/ioctl.h>

void term_raw_enter(struct term_raw *t, int fd)
{
    t->fd = fd;
    t->active = false;
    if (tcgetattr(fd, &t->saved) < 0)
        return;
    struct termios raw = t->saved;
    cfmakeraw(&raw);
    t->active = tcsetattr(fd, TCSANOW, &raw) == 0;
}

void term_raw_restore(struct term_raw *t)
{
    if (!t->active)
        return;
    /* TCSANOW, not TCSADRAIN: output already written was processed when
     * written, and a terminal stopped with ^S would block a drain. */
    while (tcsetattr(t->fd, TCSANOW, &t->saved) < 0 && errno == EINTR)
        ;
    t->active = false;
}

bool term_size(int fd, unsigned short *rows, unsigned short *cols)
{
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) < 0 || ws.ws_row == 0 || ws.ws_col == 0)
        return false;
    *rows = ws.ws_row;
    *cols = ws.ws_col;
    return true;
}
