/* Unit tests for privs_drop_all() and the helpers' environment
 * (src/confine/privs.c): each drop runs in a forked child, which reports its
 * /proc/self/status lines over a pipe. */
#include "confine/privs.h"
#include "util/cleanup.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The child's status fields after privs_drop_all(switch_ids, uid, gid), as
 * "NoNewPrivs=1 CapPrm=... CapEff=... CapBnd=... Uid=..." (or "error: ..."). */
static void status_after_drop(bool switch_ids, uid_t uid, gid_t gid, char *out, size_t size)
{
    int p[2];
    out[0] = '\0';
    if (pipe(p) < 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        struct cordon_error err;
        if (privs_drop_all(switch_ids, uid, gid, &err) < 0) {
            dprintf(p[1], "error: %s", err.message);
            _exit(1);
        }
        FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        while (f && fgets(line, sizeof(line), f)) {
            static const char *const keys[] = {
                "NoNewPrivs:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:", "Uid:"};
            for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
                if (strncmp(line, keys[i], strlen(keys[i])) == 0) {
                    char *v = line + strlen(keys[i]) + strspn(line + strlen(keys[i]), " \t");
                    v[strcspn(v, "\t\n")] = '\0';
                    dprintf(p[1], "%.*s=%s ", (int)strlen(keys[i]) - 1, keys[i], v);
                }
            }
        }
        _exit(0);
    }
    close(p[1]);
    size_t len = 0;
    ssize_t n;
    while (len + 1 < size && (n = read(p[0], out + len, size - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = '\0';
    close(p[0]);
    waitpid(pid, NULL, 0);
}

int main(void)
{
    char got[512];
    status_after_drop(false, 0, 0, got, sizeof(got));
    ok(strstr(got, "NoNewPrivs=1 ") != NULL, "no_new_privs set (%s)", got);
    ok(strstr(got, "CapPrm=0000000000000000 ") && strstr(got, "CapEff=0000000000000000 "),
       "no permitted or effective capability");
    ok(strstr(got, "CapAmb=0000000000000000 ") != NULL, "no ambient capability");
    if (getuid() == 0) {
        ok(strstr(got, "CapBnd=0000000000000000 ") != NULL, "root: the bounding set is empty");
        status_after_drop(true, 65534, 65534, got, sizeof(got));
        ok(strstr(got, "Uid=65534 ") != NULL, "root: switched to the given uid (%s)", got);
        ok(strstr(got, "CapEff=0000000000000000 ") && strstr(got, "CapBnd=0000000000000000 "),
           "root: nothing kept across the switch");
    } else {
        tap_skip("not root", "the bounding set and the switch of ids need root");
    }

    char *const *env = privs_helper_environ();
    ok(env[0] && strncmp(env[0], "PATH=", 5) == 0 && !env[1], "the helpers' environment is a PATH");
    return tap_done();
}
