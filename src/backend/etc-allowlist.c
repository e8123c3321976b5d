/* The curated /etc every backend shows its sandbox: one list, so the
 * namespace view and the microVM's copy cannot drift apart. Host context. */
#include "backend/etc-allowlist.h"
#include "net/net.h"
#include "util/cleanup.h"
#include "util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The curated /etc: what programs need to run (name service, loader, TLS
 * roots, terminal and locale data, the shells' own start-up files), nothing
 * that holds a secret. Out, and why (each can be added back by the user's
 * etc.extra, docs/configuration.md):
 *   shadow, gshadow, sudoers, ssh host keys, ssl/private, machine-id,
 *   docker, cordon's policy: credentials and host identity;
 *   environment, profile.d/: where proxies with passwords and tokens are
 *   exported for every login; gitconfig, subversion/: credential helpers,
 *   http.extraHeader tokens, stored passwords; wgetrc, netrc-like files,
 *   npmrc, pip.conf, boto.cfg, apt/auth.conf*: passwords of proxies and
 *   package indexes; perl/ (CPAN's Config.pm holds proxy_user/proxy_pass,
 *   Net/libnet.cfg firewall logins); krb5.keytab, cups/, NetworkManager/,
 *   wpa_supplicant/, ppp/, openvpn/, wireguard/: keys and passwords of
 *   their services. None of those is in this list.
 * Kept though a host could write anything into them: profile, bash.bashrc
 * and inputrc (an interactive shell's structure; Debian's read profile.d,
 * which is gone) and java-* (the JDK's conf/ links into it; net.properties
 * may name a proxy host, not a password). */
static const char *const etc_allowlist[] = {
    "passwd",      "group",         "hosts",           "hostname",
    "host.conf",   "nsswitch.conf", "resolv.conf",     "gai.conf",
    "protocols",   "services",      "networks",        "rpc",
    "ethertypes",  "ld.so.cache",   "ld.so.conf",      "ld.so.conf.d",
    "localtime",   "timezone",      "os-release",      "debian_version",
    "lsb-release", "alternatives",  "ca-certificates", "ca-certificates.conf",
    "bash.bashrc", "profile",       "inputrc",         "terminfo",
    "mime.types",  "magic",         "magic.mime",      "locale.alias",
    "locale.conf", "shells",        "nanorc",          "vim",
    "python3*",    "java-*",        "mailcap",         "manpath.config",
    "login.defs",  "xattr.conf",    "fonts",
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

/* Host keys stay checked: a server unknown to ~/.ssh/known_hosts and to
 * /etc/ssh/ssh_known_hosts (the host's copy, public keys only) is refused,
 * or asked about on a terminal. The host's own ssh_config is not used: it
 * may name jump hosts, identity files and proxies of the host's network. */
const char etc_ssh_config[] =
    "# cordon: ssh inside this sandbox (docs/ssh.md).\n"
    "# There is no route out: ssh, scp, sftp, rsync and git reach a server\n"
    "# through cordon's proxy, which allows the hosts and ports of\n"
    "# network.allow_hosts and refuses the rest. -o ProxyCommand=none or a\n"
    "# ~/.ssh/config of your own bypasses this file, not the sandbox.\n"
    "# Host keys are checked: ~/.ssh/known_hosts (mount one) and\n"
    "# /etc/ssh/ssh_known_hosts (the host's, when it has one).\n"
    "Host *\n"
    "    ProxyCommand " NET_SSH_PROXY_COMMAND "\n";
const size_t etc_ssh_config_len = sizeof(etc_ssh_config) - 1;

int etc_write_ssh_config(int etcfd)
{
    if (mkdirat(etcfd, "ssh", 0755) < 0 && errno != EEXIST)
        return -1;
    _cleanup_close_ int dir = openat(etcfd, "ssh", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0)
        return -1;
    _cleanup_close_ int fd =
        openat(dir, "ssh_config", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return errno == EEXIST ? 0 : -1;
    if (fs_write_all(fd, etc_ssh_config, etc_ssh_config_len) < 0)
        return -1;
    return fchmod(fd, 0644);
}
