/* Landlock (second filesystem layer). Probe: host. Apply: child, after
 * pivot_root and no_new_privs, no allocation. */
#pragma once

#include "util/error.h"

int ns_landlock_abi(void);
/* writable: NULL-terminated paths inside the view that stay writable. */
int ns_landlock_apply_in_child(int abi, const char *const *writable, struct cordon_error *err);
