/* The guest's /etc (vm-etc.c): a copy of the host's allowed entries, never
 * the host's /etc itself, prepared once per content in the state root's
 * .vm-etc. Host context (supervisor). */
#pragma once

#include "backend/vm/vm-state.h"
#include "config/config.h"
#include "supervisor/launch.h"
#include "util/error.h"

/* Chooses st->etc_path: the prepared copy of this content (st->etc_filled
 * then), or the session's own directory, made here, to be filled by
 * vm_etc_fill and stored by vm_etc_cache_store after the boot. */
int vm_etc_cache_find(const struct launch *l, struct vm_state *st, struct cordon_error *err);
/* Copies the allowed entries of the host's /etc, the etc.extra ones and
 * (ssh_proxied) cordon's ssh_config into dst. */
int vm_etc_fill(const char *dst, const struct cfg_strings *extra, bool ssh_proxied,
                struct cordon_error *err);
/* After the boot: the session's filled copy becomes the prepared one. */
void vm_etc_cache_store(struct vm_state *st);
