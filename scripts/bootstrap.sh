#!/usr/bin/env bash
# Installs what cordon needs to build (and, with --test, to test), then exits.
# Idempotent: installs only what is missing. As root it uses apt-get, with
# sudo when that works without a password, and otherwise prints the exact
# command to run and stops.
set -euo pipefail

build_pkgs=(meson ninja-build gcc pkg-config libseccomp-dev libjansson-dev
    libpcre2-dev libutf8proc-dev libgd-dev git passt scdoc libssl-dev openssl)
# passt provides pasta, which `--network open` runs.
test_pkgs=(clang clang-format libclang-rt-14-dev bubblewrap ripgrep fd-find
    hyperfine util-linux procps iproute2 strace python3 curl netcat-openbsd time socat
    qemu-system-x86 kmod tmux docker.io docker-compose busybox-static bash-static e2fsprogs
    debhelper lintian zsh fish mmdebstrap openssh-server rsync
    python3-pip)
# socat is a relay in the network tests; qemu-system-x86 and kmod (depmod)
# are for the vm backend; tmux is the terminal for pi's interactive TUI test
# (tests/e2e/pi-tui.mjs); docker.io (dockerd, containerd, runc),
# docker-compose and busybox-static (the test image's base) for Docker
# inside the guest; e2fsprogs formats the guest's Docker disk; bash-static
# is the bash of the docker backend's test image (tests/integration/docker-backend.sh).
# scdoc builds the man pages; debhelper and lintian build and check the
# Debian package (make deb), mmdebstrap makes the Debian 12 root file system
# it is installed into (tests/integration/package.sh); zsh and fish run the
# completion tests; openssh-server is the sshd that git over ssh through the
# proxy reaches (tests/integration/ssh.sh), and rsync runs over ssh there;
# python3-pip installs from a local index through the proxy (tests/integration/pip.sh).

want=("${build_pkgs[@]}")
mode=build
for arg in "$@"; do
    case $arg in
        --test) want+=("${test_pkgs[@]}"); mode=test ;;
        *) echo "bootstrap: unknown argument $arg" >&2; exit 2 ;;
    esac
done

missing=()
for p in "${want[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ $status == *"install ok installed"* ]] || missing+=("$p")
done
if ! command -v node >/dev/null 2>&1 && [ "$mode" = test ]; then
    missing+=(nodejs npm)
fi

if [ ${#missing[@]} -gt 0 ]; then
    line="apt-get install -y --no-install-recommends ${missing[*]}"
    if [ "$(id -u)" -eq 0 ]; then
        sudo=()
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        sudo=(sudo)
    else
        echo "cordon: missing Debian packages. Run as root:" >&2
        echo "  apt-get update && $line" >&2
        exit 1
    fi
    echo "bootstrap: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq >&2
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# The vm backend's guest kernel (Debian's, through apt; see vm-kernel.sh).
if [ "$mode" = test ]; then
    "$(dirname "$0")/vm-kernel.sh" >/dev/null
fi

# npm packages for the differential and end-to-end tests (pi 0.73.1 and the
# MCP SDK client), pinned by tests/pi/package-lock.json; and the agent CLIs
# (Claude Code, Gemini CLI, Codex CLI, opencode) whose offline `mcp list`
# checks run docs/agents.md's snippets (tests/e2e/agents-config.mjs), pinned
# by tests/agents/package.json. `npm install` for those, not `npm ci`: npm
# reports opencode-ai's optional per-platform packages as missing from any
# lock file it writes for them. The two installs wait on the registry, not
# the CPU: they run at once.
npm_pids=()
if [ "$mode" = test ] && [ -f tests/pi/package.json ]; then
    if [ ! -d tests/pi/node_modules ] || [ tests/pi/package-lock.json -nt tests/pi/node_modules ]; then
        echo "bootstrap: npm ci in tests/pi" >&2
        (cd tests/pi && npm ci --no-audit --no-fund --loglevel=error >&2 && touch node_modules) &
        npm_pids+=($!)
    fi
fi
if [ "$mode" = test ] && [ -f tests/agents/package.json ]; then
    if [ ! -d tests/agents/node_modules ] || [ tests/agents/package.json -nt tests/agents/node_modules ]; then
        echo "bootstrap: npm install in tests/agents" >&2
        (cd tests/agents && npm install --no-audit --no-fund --loglevel=error >&2 && touch node_modules) &
        npm_pids+=($!)
    fi
fi
npm_failed=0
for pid in "${npm_pids[@]}"; do
    wait "$pid" || npm_failed=1
done
if [ "$npm_failed" -ne 0 ]; then
    echo "bootstrap: an npm install failed (see above)" >&2
    exit 1
fi
