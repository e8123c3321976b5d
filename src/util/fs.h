/* Small filesystem helpers. Any context except between clone() and exec. */
#pragma once

#include <sys/types.h>

/* mkdir -p: creates PATH and its missing parents with MODE. 0, or -1 with
 * errno (ENAMETOOLONG past PATH_MAX). */
int fs_mkdir_p(const char *path, mode_t mode);
