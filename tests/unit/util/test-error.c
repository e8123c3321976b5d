/* Unit tests for the error contract (src/util/error.c). */
#include "util/error.h"
#include "tap.h"

#include <errno.h>
#include <string.h>

int main(void)
{
    struct cordon_error err = {0};

    is_int(error_set(&err, ENOENT, "open %s", "/x"), -1, "error_set returns -1");
    is_str(err.message, "open /x: No such file or directory", "error_set appends strerror");
    is_int(err.errnum, ENOENT, "error_set records errno");

    error_prefix(&err, "mount %s", "/usr");
    is_str(err.message, "mount /usr: open /x: No such file or directory",
           "error_prefix adds context");

    error_set_raw(&err, EPERM, "pivot_root", "/newroot");
    is_str(err.message, "pivot_root: /newroot: Operation not permitted (EPERM)",
           "error_set_raw names step, path and errno without allocating");

    char long_path[4096];
    memset(long_path, 'a', sizeof(long_path) - 1);
    long_path[sizeof(long_path) - 1] = '\0';
    error_set_raw(&err, EACCES, "bind", long_path);
    ok(strlen(err.message) < CORDON_ERROR_MAX, "an over-long path is truncated, not overflowed");

    error_set(&err, 0, "plain");
    is_str(err.message, "plain", "errnum 0 adds no suffix");
    return tap_done();
}
