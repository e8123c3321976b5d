/* The seccomp program compiled in at build time (see ns-seccomp-build.c and
 * tools/seccomp-gen.c). Host context: the supervisor hands it to the child,
 * which loads it right before exec. */
#include "confine/seccomp-filter.h"
#include "seccomp-bpf.h"

void ns_seccomp_program(struct sock_fprog *prog)
{
    prog->len = (unsigned short)(sizeof(ns_seccomp_bpf) / sizeof(ns_seccomp_bpf[0]));
    prog->filter = (struct sock_filter *)ns_seccomp_bpf;
}
