/* The agent's early-boot mode as the microVM's init. Guest context. */
#pragma once

#include <stdbool.h>

/* True when the kernel started us as the guest's init (argv[0] "/init"). */
bool vm_init_is_guest(int argc, char **argv);

/* Early boot (mounts, modules, the view, the channel), then the requested
 * agent mode. Never returns: the guest powers off when it is done. */
int vm_init_main(int argc, char **argv) __attribute__((noreturn));
