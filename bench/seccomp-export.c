/* Writes one of the ns backend's two seccomp programs to stdout as raw
 * struct sock_filter records, the form bubblewrap's --add-seccomp-fd reads:
 * bench/cold-start.sh gives bubblewrap the same filters as the sandbox.
 *   seccomp-export main|notify > FILE */
#include "confine/seccomp-filter.h"
#include "confine/seccomp-notify.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    struct sock_fprog prog;
    if (argc == 2 && strcmp(argv[1], "main") == 0)
        ns_seccomp_program(&prog);
    else if (argc == 2 && strcmp(argv[1], "notify") == 0)
        ns_seccomp_notify_program(&prog);
    else {
        fprintf(stderr, "usage: seccomp-export main|notify\n");
        return 2;
    }
    if (fwrite(prog.filter, sizeof(prog.filter[0]), prog.len, stdout) != prog.len ||
        fflush(stdout) != 0) {
        perror("seccomp-export: stdout");
        return 1;
    }
    return 0;
}
