/* The curated /etc every backend shows its sandbox: one list, so the
 * namespace view and the microVM's copy cannot drift apart. Host context. */
#include "backend/etc-allowlist.h"
#include "util/cleanup.h"

#include <string.h>

/* The curated /etc: what programs need to run (name service, loader, TLS
 * roots, terminal and locale data), nothing that holds a secret (shadow,
 * sudoers, ssh host keys, ssl/private, machine-id, docker, cordon's policy). */
static const char *const etc_allowlist[] = {
    "passwd",      "group",         "hosts",           "hostname",
    "host.conf",   "nsswitch.conf", "resolv.conf",     "gai.conf",
    "protocols",   "services",      "networks",        "rpc",
    "ethertypes",  "ld.so.cache",   "ld.so.conf",      "ld.so.conf.d",
    "localtime",   "timezone",      "os-release",      "debian_version",
    "lsb-release", "alternatives",  "ca-certificates", "ca-certificates.conf",
    "bash.bashrc", "profile",       "profile.d",       "inputrc",
    "terminfo",    "mime.types",    "magic",           "magic.mime",
    "gitconfig",   "locale.alias",  "locale.conf",     "shells",
    "nanorc",      "vim",           "python3*",        "perl",
    "java-*",      "wgetrc",        "mailcap",         "manpath.config",
    "environment", "login.defs",    "xattr.conf",      "fonts",
    "subversion",
};

bool etc_entry_allowed(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(etc_allowlist); i++) {
        const char *star = strchr(etc_allowlist[i], '*');
        /* Only "prefix*" patterns appear in the list: a prefix compare
         * instead of fnmatch() for every /etc entry. */
        if (star ? strncmp(etc_allowlist[i], name, (size_t)(star - etc_allowlist[i])) == 0
                 : strcmp(etc_allowlist[i], name) == 0)
            return true;
    }
    return false;
}
