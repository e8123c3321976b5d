/* The password database's answer for the user's home, looked up once per
 * process: each getpwuid() reads nsswitch.conf and /etc/passwd and tries
 * nscd's socket (a dozen system calls), and a start asked three times. */
#pragma once

#include <sys/types.h>

/* uid's home directory as the password database gives it (not checked),
 * or NULL when it has no entry (not cached: asked again next time). The
 * string lives as long as the process (or until the next call for another
 * uid). */
const char *account_home(uid_t uid);
