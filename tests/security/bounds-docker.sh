#!/usr/bin/env bash
# Bounded tmpfs on the docker backend (issue 14, vector 6; the ns and vm
# backends are tests/security/bounds.sh): each writable tmpfs of the
# container (/tmp, /var/tmp, /run, the home, and docker's own /dev/shm) has
# limits.tmpfs_mib and stops a dd with "No space left on device"; /tmp stops
# at limits.tmpfs_inodes files. Root only (tests/lib/docker-backend.sh
# starts a private dockerd).
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/docker-backend.sh"

export HOME="$TEST_TMP/home"
mkdir -p "$HOME"
export XDG_CONFIG_HOME="$TEST_TMP/xdg"
ws=$(new_ws dws)

cordon_run "$ws" "${D[@]}" --set limits.tmpfs_mib=24 --set limits.tmpfs_inodes=1024 -- bash -c '
    for d in /tmp /var/tmp /run /dev/shm "$HOME"; do
        label=$d; [ "$d" = "$HOME" ] && label=HOME
        echo "$label df=$(df -m "$d" | tail -1 | awk "{print \$2}")"
        dd if=/dev/zero of="$d/fill" bs=1M count=40 2>"$PWD/dd.err" >/dev/null
        echo "$label rc=$? err=$(grep -o "No space left on device" "$PWD/dd.err" | head -1)"
        rm -f "$d/fill"
    done
    i=0; while [ $i -lt 1100 ] && : 2>/dev/null >"/tmp/f$i"; do i=$((i+1)); done
    echo "created=$i"'
is "docker: the run works" "$rc" 0
for d in /tmp /var/tmp /run /dev/shm HOME; do
    is "docker: $d is limits.tmpfs_mib = 24 MiB" "$(grep "^$d df=" <<<"$out")" "$d df=24"
    is "docker: dd past it in $d fails with ENOSPC" "$(grep "^$d rc=" <<<"$out")" \
        "$d rc=1 err=No space left on device"
done
like "docker: /tmp stops before limits.tmpfs_inodes = 1024 files" "$out" "created=10[0-2][0-9]"

tap_done
