/* The host's PATH comes into the sandbox with entries that do not exist
 * there (~/.pyenv/shims, ~/.cargo/bin: the home inside is empty): a command
 * would silently resolve to another version further down, or a later mount
 * at that path would change what runs. Run inside the sandbox, where what
 * exists is the sandbox's view, before any command starts. Relative entries
 * (".", "") are left as they are: they name the cwd, which exists. */
#include "agent/path-prune.h"

#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

static char default_path[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

static bool entry_exists(const char *start, size_t len)
{
    char dir[PATH_MAX];
    if (len == 0 || start[0] != '/')
        return true;
    if (len >= sizeof(dir))
        return false;
    memcpy(dir, start, len);
    dir[len] = '\0';
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

void agent_path_prune(char **envp)
{
    for (size_t i = 0; envp && envp[i]; i++) {
        if (strncmp(envp[i], "PATH=", 5) != 0)
            continue;
        char *value = envp[i] + 5;
        char *read = value, *write = value;
        bool any = false;
        for (;;) {
            char *colon = strchr(read, ':');
            size_t len = colon ? (size_t)(colon - read) : strlen(read);
            if (entry_exists(read, len)) {
                if (any)
                    *write++ = ':';
                memmove(write, read, len);
                write += len;
                any = true;
            }
            if (!colon)
                break;
            read = colon + 1;
        }
        *write = '\0';
        if (!any)
            envp[i] = default_path;
    }
}
