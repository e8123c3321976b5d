/* Fuzz target for the git config scanner of workspace detection
 * (supervisor/workspace-git.c), fed what a sandbox could write into
 * .git/config. Whatever arrives, it returns 0 or -1, a core.worktree found is
 * a NUL-terminated string below PATH_MAX with a line number inside the input,
 * and core.bare is unset, 0 or 1. Host, test-only. */
#include "supervisor/workspace-git.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ws_git_core core = {.bare = -1};
    struct cordon_error err = {0};
    int r = ws_git_config_scan((const char *)data, size, "fuzz", &core, &err);
    if (r != 0 && r != -1)
        abort();
    if (core.worktree_set) {
        size_t lines = 1;
        for (size_t i = 0; i < size; i++)
            lines += data[i] == '\n';
        if (strnlen(core.worktree, sizeof(core.worktree)) >= sizeof(core.worktree) ||
            core.worktree_line < 1 || (size_t)core.worktree_line > lines)
            abort();
    }
    if (core.bare < -1 || core.bare > 1)
        abort();
    return 0;
}
