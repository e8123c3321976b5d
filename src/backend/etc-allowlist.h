/* The curated /etc (etc-allowlist.c). Host context. */
#pragma once

#include <stdbool.h>

/* True when /etc/NAME belongs in a sandbox's view. */
bool etc_entry_allowed(const char *name);
