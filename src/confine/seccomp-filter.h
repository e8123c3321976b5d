/* The sandbox's seccomp program. Host context. */
#pragma once

#include "util/error.h"

#include <linux/filter.h>

/* Builds the filter with libseccomp (build time: tools/seccomp-gen, and the
 * unit test that checks the embedded copy is current). On success
 * prog->filter is malloc'ed. */
int ns_seccomp_build(struct sock_fprog *prog, struct cordon_error *err);

/* The filter compiled into cordon at build time (static storage). */
void ns_seccomp_program(struct sock_fprog *prog);
