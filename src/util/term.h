/* The host terminal of `cordon shell` / `cordon run --pty`, shared by both
 * backends' relays: raw mode while the sandbox's own terminal is in use,
 * and the window size. Host context (supervisor), CLI only. */
#pragma once

#include <stdbool.h>
#include <termios.h>

struct term_raw {
    int fd;
    bool active; /* saved holds the settings to restore */
    struct termios saved;
};

/* Puts fd's terminal into raw mode (the sandbox's terminal does the line
 * editing, echo and signal keys); does nothing when fd is not a terminal. */
void term_raw_enter(struct term_raw *t, int fd);
/* Puts back what term_raw_enter found; safe to call twice, or without a
 * raw mode entered. */
void term_raw_restore(struct term_raw *t);
/* The terminal's size; false when fd is not a terminal or reports 0x0. */
bool term_size(int fd, unsigned short *rows, unsigned short *cols);
