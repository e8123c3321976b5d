/* Where the user keeps credentials and cordon its policy (the homes, the
 * configuration, policy and runtime directories), and the host places a
 * workspace file may not hand the sandbox: the rule a workspace file's
 * mounts and skill paths are held to (resolve.c). Host context. */
#include "config/config-internal.h"
#include "util/account.h"
#include "util/cleanup.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Host places whose mount from a workspace file would undo the sandbox's
 * own view: host secrets in /etc (shadow, ssh host keys, tokens in
 * /etc/environment), the host's processes and devices, the runtime
 * directories, where host services keep their sockets (a socket connects
 * on a read-only mount too). Neither they, nor what lies in them, nor what
 * contains them. */
static const char *const system_areas[] = {
    "/etc", "/proc", "/sys", "/dev", "/run", "/var/run", "/boot", NULL,
};
/* The shared temporary directories: neither they nor what contains them,
 * nor their hidden entries and the socket directories of tmux, ssh-agent
 * and systemd (X11's and ICE's are hidden); an ordinary directory below
 * them is another matter (a build's output). */
static const char *const shared_temporary[] = {"/tmp", "/var/tmp", NULL};
static const char *const temporary_socket_prefixes[] = {
    ".", "tmux-", "ssh-", "systemd-private-", "gpg-", "pulse-", NULL};

void credential_areas_free(struct credential_areas *c)
{
    for (size_t i = 0; i < ARRAY_SIZE(c->homes); i++)
        free(c->homes[i]);
    for (size_t i = 0; i < ARRAY_SIZE(c->config); i++)
        free(c->config[i]);
    memset(c, 0, sizeof(*c));
}

static int area_add(char **slots, size_t n, const char *path)
{
    if (!path || path[0] != '/' || strcmp(path, "/") == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (slots[i] && strcmp(slots[i], path) == 0)
            return 0;
        if (!slots[i])
            return (slots[i] = strdup(path)) ? 0 : -1;
    }
    return 0;
}

static int area_add_both(char **slots, size_t n, const char *path)
{
    if (!path || path[0] != '/')
        return 0;
    _cleanup_free_ char *real = cfg_canonicalize_lenient(path);
    return area_add(slots, n, path) < 0 || area_add(slots, n, real) < 0 ? -1 : 0;
}

int credential_areas_build(const char *home, const char *xdg, const char *etc,
                           struct credential_areas *c)
{
    memset(c, 0, sizeof(*c));
    /* HOME may be set to something else than the account's home (CI, sudo):
     * a workspace file can name either literally */
    if (area_add_both(c->homes, ARRAY_SIZE(c->homes), home) < 0 ||
        area_add_both(c->homes, ARRAY_SIZE(c->homes), account_home(geteuid())) < 0)
        goto fail;
    if (geteuid() == 0) {
        /* root reads every person's keys */
        FILE *f = fopen("/etc/passwd", "re");
        struct passwd *entry;
        while (f && (entry = fgetpwent(f)))
            if (entry->pw_uid >= 1000 && entry->pw_uid != 65534 &&
                area_add_both(c->homes, ARRAY_SIZE(c->homes), entry->pw_dir) < 0) {
                fclose(f);
                goto fail;
            }
        if (f)
            fclose(f);
    }
    const char *runtime = getenv("XDG_RUNTIME_DIR");
    if (area_add_both(c->config, ARRAY_SIZE(c->config), xdg) < 0 ||
        area_add_both(c->config, ARRAY_SIZE(c->config), etc) < 0 ||
        area_add_both(c->config, ARRAY_SIZE(c->config), runtime) < 0)
        goto fail;
    return 0;
fail:
    credential_areas_free(c);
    return -1;
}

/* Why a mount of host path real (canonical) or lexical would hand the
 * sandbox the user's credentials or policy, or NULL. */
const char *credential_reason(const struct credential_areas *c, const char *lexical,
                              const char *real, char *why, size_t size)
{
    const char *paths[] = {lexical, real};
    for (size_t p = 0; p < ARRAY_SIZE(paths); p++) {
        const char *path = paths[p];
        if (!path)
            continue;
        for (size_t h = 0; h < ARRAY_SIZE(c->homes) && c->homes[h]; h++) {
            const char *home = c->homes[h];
            if (cfg_path_inside(home, path)) {
                snprintf(why, size, "it %s the home directory %s",
                         strcmp(home, path) == 0 ? "is" : "contains", home);
                return why;
            }
            if (!cfg_path_inside(path, home))
                continue;
            /* every hidden entry of the home directory: ~/.ssh, ~/.aws,
             * ~/.gnupg, ~/.config, ~/.kube, ~/.docker, ~/.local/share/keyrings,
             * ~/.password-store, ~/.netrc, ~/.git-credentials, ~/.npmrc,
             * ~/.pypirc and every other tool's credentials and settings */
            const char *entry = path + strlen(home) + 1;
            if (entry[0] == '.') {
                snprintf(why, size,
                         "it is or lies inside %s/%.*s (a hidden entry of the home directory, "
                         "where tools keep credentials)",
                         home, (int)strcspn(entry, "/"), entry);
                return why;
            }
        }
        for (size_t d = 0; d < ARRAY_SIZE(c->config) && c->config[d]; d++)
            if (cfg_paths_overlap(path, c->config[d])) {
                snprintf(why, size, "it overlaps the configuration, policy or runtime directory %s",
                         c->config[d]);
                return why;
            }
        for (size_t d = 0; shared_temporary[d]; d++) {
            const char *t = shared_temporary[d];
            if (cfg_path_inside(t, path)) {
                snprintf(why, size, "it %s the shared temporary directory %s",
                         strcmp(t, path) == 0 ? "is" : "contains", t);
                return why;
            }
            if (!cfg_path_inside(path, t))
                continue;
            const char *entry = path + strlen(t) + 1;
            for (size_t x = 0; temporary_socket_prefixes[x]; x++)
                if (strncmp(entry, temporary_socket_prefixes[x],
                            strlen(temporary_socket_prefixes[x])) == 0) {
                    snprintf(why, size,
                             "it is or lies inside %s/%.*s, where host services keep "
                             "their sockets",
                             t, (int)strcspn(entry, "/"), entry);
                    return why;
                }
        }
        for (size_t d = 0; system_areas[d]; d++)
            if (cfg_paths_overlap(path, system_areas[d])) {
                snprintf(why, size,
                         "it overlaps %s (host secrets, processes, devices or services' "
                         "sockets)",
                         system_areas[d]);
                return why;
            }
    }
    return NULL;
}
