#!/bin/sh
# apparmor.sh install|remove PROFILE: on a kernel that restricts unprivileged
# user namespaces through AppArmor (Ubuntu 23.10 and later), copies cordon's
# profile to /etc/apparmor.d/cordon and loads it, or unloads and removes it.
# Elsewhere (and under DESTDIR) it does nothing: AppArmor 3 cannot parse the
# profile's userns rule. Used by `make install`/`make uninstall`; the Debian
# package's maintainer scripts do the same.
set -eu
action=${1:?usage: apparmor.sh install|remove PROFILE}
profile=${2:?usage: apparmor.sh install|remove PROFILE}
target=/etc/apparmor.d/cordon
[ -z "${DESTDIR:-}" ] || exit 0
[ -e /proc/sys/kernel/apparmor_restrict_unprivileged_userns ] || exit 0
case $action in
    install)
        install -m 0644 "$profile" "$target"
        if command -v apparmor_parser >/dev/null 2>&1; then
            apparmor_parser -r -W "$target" || echo "cordon: apparmor_parser could not load $target" >&2
        fi
        echo "installed the AppArmor profile $target" ;;
    remove)
        # Only our own copy: a profile the administrator changed stays.
        if [ -f "$target" ] && cmp -s "$profile" "$target"; then
            command -v apparmor_parser >/dev/null 2>&1 && apparmor_parser -R "$target" 2>/dev/null || true
            rm -f "$target"
            echo "removed $target"
        fi ;;
    *) echo "usage: apparmor.sh install|remove PROFILE" >&2; exit 2 ;;
esac
