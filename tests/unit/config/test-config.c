/* Unit tests for configuration resolution (src/config/): every layer against
 * the others, lists extending and replacing, host-owned locking, the
 * workspace file's forbidden settings, policy placement, mounts, trust and
 * its content-hash pin. All paths are temporary directories: no root. */
#include "config/config-internal.h"
#include "config/config.h"
#include "config/sha256.h"
#include "config/trust.h"
#include "tap.h"
#include "util/cleanup.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static char root[256], ws[300], xdg[300], etc[300];

static void write_file(const char *path, const char *text)
{
    char dir[1024];
    snprintf(dir, sizeof(dir), "mkdir -p \"$(dirname '%s')\"", path);
    if (system(dir) != 0)
        abort();
    FILE *f = fopen(path, "we");
    if (!f)
        abort();
    fputs(text, f);
    fclose(f);
    chmod(path, 0644);
}

static char *path_of(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *path_of(const char *fmt, ...)
{
    static char buffers[4][1024];
    static int next;
    char *b = buffers[next++ % 4];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, 1024, fmt, ap);
    va_end(ap);
    return b;
}

static void reset(void)
{
    char command[1400];
    snprintf(command, sizeof(command), "rm -rf '%s' && mkdir -p '%s' '%s' '%s'", root, ws, xdg,
             etc);
    if (system(command) != 0)
        abort();
}

struct result {
    int ret;
    struct cordon_config cfg;
    struct cfg_warnings warnings;
    struct cordon_error err;
};

static void resolve(struct result *r, char *const *env, const char *const *sets)
{
    memset(r, 0, sizeof(*r));
    struct cfg_inputs in = {
        .workspace = ws,
        .environ = env,
        .session_sets = sets,
        .xdg_config_home = xdg,
        .etc_dir = etc,
    };
    r->ret = cfg_resolve(&in, &r->cfg, &r->warnings, &r->err);
}

static void done(struct result *r)
{
    cfg_free(&r->cfg);
    cfg_warnings_free(&r->warnings);
}

static bool warned(const struct result *r, const char *needle)
{
    for (size_t i = 0; i < r->warnings.count; i++)
        if (strstr(r->warnings.items[i], needle))
            return true;
    return false;
}

static bool has(const struct cfg_strings *s, const char *item)
{
    for (size_t i = 0; i < s->count; i++)
        if (strcmp(s->items[i], item) == 0)
            return true;
    return false;
}

#define contains(haystack, needle, ...) ok(strstr((haystack), (needle)) != NULL, __VA_ARGS__)

static void trust_workspace(void)
{
    struct cordon_error err = {0};
    if (cfg_trust_add(path_of("%s/cordon/trust.json", xdg), ws, &err) < 0)
        tap_diag("trust: %s", err.message);
}

static void test_defaults_and_user(void)
{
    struct result r;
    reset();
    resolve(&r, NULL, NULL);
    is_int(r.ret, 0, "defaults resolve");
    is_int(r.cfg.backend, CFG_BACKEND_NS, "default backend is ns");
    is_int(r.cfg.limits.pids, 1024, "default pids");
    is_int(r.cfg.origin[CFG_BACKEND].layer, CFG_LAYER_DEFAULT, "default origin");
    ok(has(&r.cfg.protected_paths, ".git/hooks") && has(&r.cfg.protected_paths, ".envrc"),
       "default protected paths");
    is_int(r.cfg.route_tools.count, 7, "all seven tools routed by default");
    done(&r);

    write_file(path_of("%s/cordon/config.toml", xdg), "# user\nbackend = \"vm\"\n");
    resolve(&r, NULL, NULL);
    is_int(r.cfg.backend, CFG_BACKEND_VM, "user file sets backend");
    is_int(r.cfg.origin[CFG_BACKEND].layer, CFG_LAYER_USER, "origin is the user layer");
    is_int(r.cfg.origin[CFG_BACKEND].line, 2, "origin line");
    is_str(r.cfg.origin[CFG_BACKEND].file, path_of("%s/cordon/config.toml", xdg), "origin file");
    done(&r);

    write_file(path_of("%s/cordon/config.toml", xdg), "backend = \"vm\"\n[limits]\npid = 3\n");
    resolve(&r, NULL, NULL);
    is_int(r.ret, -1, "unknown key is an error");
    contains(r.err.message,
             "config.toml:3:1: unknown key 'limits.pid' (did you mean 'limits.pids'?)",
             "unknown key names file:line:col and suggests: %s", r.err.message);
    done(&r);

    write_file(path_of("%s/cordon/config.toml", xdg), "backend = \"nss\"\n");
    resolve(&r, NULL, NULL);
    contains(r.err.message, "config.toml:1:11: backend: expected one of \"ns\", \"vm\", \"docker\"",
             "enum error: %s", r.err.message);
    done(&r);

    write_file(path_of("%s/cordon/config.toml", xdg), "gc_hours = 0\n");
    resolve(&r, NULL, NULL);
    contains(r.err.message, "gc_hours: 0 is out of range", "range error: %s", r.err.message);
    done(&r);

    write_file(path_of("%s/cordon/config.toml", xdg), "protected_paths = [\"../x\"]\n");
    resolve(&r, NULL, NULL);
    contains(r.err.message, "protected_paths: \"../x\" must be a normalised relative path",
             "path syntax error: %s", r.err.message);
    done(&r);

    write_file(path_of("%s/cordon/config.toml", xdg), "[env]\nallow = [\"LD_PRELOAD\"]\n");
    resolve(&r, NULL, NULL);
    contains(r.err.message, "\"LD_PRELOAD\" is protected",
             "protected env name refused in any "
             "layer: %s",
             r.err.message);
    done(&r);

    write_file(path_of("%s/cordon/config.toml", xdg), "[limits]\npids = \"many\"\n");
    resolve(&r, NULL, NULL);
    contains(r.err.message, "config.toml:2:8: limits.pids: expected an integer, found string",
             "type error: %s", r.err.message);
    done(&r);
}

static void test_workspace_trust(void)
{
    struct result r;
    reset();
    write_file(path_of("%s/.cordon.toml", ws), "[limits]\npids = 10\n");
    resolve(&r, NULL, NULL);
    is_int(r.cfg.limits.pids, 1024, "untrusted workspace file is ignored");
    ok(warned(&r, "not trusted"), "and warned about");
    ok(!r.cfg.workspace_trusted, "workspace_trusted is false");
    done(&r);

    trust_workspace();
    resolve(&r, NULL, NULL);
    is_int(r.cfg.limits.pids, 10, "trusted workspace file applies");
    is_int(r.cfg.origin[CFG_LIMITS_PIDS].layer, CFG_LAYER_WORKSPACE, "origin workspace");
    done(&r);

    write_file(path_of("%s/.cordon.toml", ws), "[limits]\npids = 99999\n");
    resolve(&r, NULL, NULL);
    is_int(r.cfg.limits.pids, 1024, "a workspace file changed after trusting is ignored");
    ok(warned(&r, "changed since the workspace was trusted"), "and the change is warned about");
    done(&r);

    trust_workspace();
    resolve(&r, NULL, NULL);
    is_int(r.cfg.limits.pids, 99999, "trusting again honours the new content");
    done(&r);

    struct cfg_trust_list list = {0};
    struct cordon_error err = {0};
    is_int(cfg_trust_read(path_of("%s/cordon/trust.json", xdg), &list, &err), 0, "trust list");
    is_int(list.count, 1, "one trusted workspace");
    ok(list.count == 1 && strcmp(list.items[0].workspace, ws) == 0, "the workspace is listed");
    cfg_trust_list_free(&list);
    bool removed = false;
    is_int(cfg_trust_remove(path_of("%s/cordon/trust.json", xdg), ws, &removed, &err), 0,
           "untrust");
    ok(removed, "untrust removed it");
    resolve(&r, NULL, NULL);
    is_int(r.cfg.limits.pids, 1024, "untrusted again: ignored");
    done(&r);

    /* the workspace file may not be a symlink */
    unlink(path_of("%s/.cordon.toml", ws));
    write_file(path_of("%s/other.toml", root), "backend = \"vm\"\n");
    if (symlink(path_of("%s/other.toml", root), path_of("%s/.cordon.toml", ws)) < 0)
        abort();
    resolve(&r, NULL, NULL);
    contains(r.err.message, "is a symlink", "a symlinked .cordon.toml fails: %s", r.err.message);
    done(&r);
}

static void test_env_and_session(void)
{
    struct result r;
    reset();
    write_file(path_of("%s/cordon/config.toml", xdg),
               "[limits]\npids = 5\nmemory_mib = 100\n[env]\nallow = [\"A\"]\n");
    write_file(path_of("%s/.cordon.toml", ws), "[env]\nallow = [\"B\"]\n[limits]\ncpus = 2\n");
    trust_workspace();
    char *env[] = {"CORDON_LIMITS__PIDS=100",
                   "CORDON_ROUTE_TOOLS=read,bash,write,edit,ls,find,grep",
                   "CORDON_ENV__ALLOW=C, D",
                   "CORDON_DEBUG=1",
                   "HOME=/x",
                   NULL};
    const char *sets[] = {"limits.memory_mib=200", "route_tools=[\"read\",\"bash\"]",
                          "backend=docker", NULL};
    resolve(&r, env, sets);
    is_int(r.ret, 0, "env and session resolve: %s", r.err.message);
    is_int(r.cfg.limits.pids, 100, "environment beats user");
    is_str(r.cfg.origin[CFG_LIMITS_PIDS].file, "CORDON_LIMITS__PIDS", "origin names the variable");
    is_int(r.cfg.limits.memory_mib, 200, "session beats user");
    is_int(r.cfg.origin[CFG_LIMITS_MEMORY_MIB].layer, CFG_LAYER_SESSION, "origin session");
    ok(r.cfg.limits.cpus == 2.0, "workspace cpus applies");
    is_int(r.cfg.route_tools.count, 2, "route_tools replaces lower lists");
    ok(has(&r.cfg.env.allow, "A") && has(&r.cfg.env.allow, "B") && has(&r.cfg.env.allow, "C") &&
           has(&r.cfg.env.allow, "D"),
       "env.allow extends across user, workspace, environment");
    is_int(r.cfg.backend, CFG_BACKEND_DOCKER, "session text value without quotes");
    done(&r);

    char *bad_env[] = {"CORDON_LIMITS__PIDS=lots", NULL};
    resolve(&r, bad_env, NULL);
    contains(r.err.message, "CORDON_LIMITS__PIDS: limits.pids: expected an integer",
             "bad environment value fails: %s", r.err.message);
    done(&r);

    char *typo_env[] = {"CORDON_BACKND=vm", NULL};
    resolve(&r, typo_env, NULL);
    is_int(r.ret, 0, "unknown CORDON_ variable is not an error");
    ok(warned(&r, "CORDON_BACKND is not a setting (did you mean backend?)"), "but a near miss "
                                                                             "warns");
    done(&r);

    const char *bad_set[] = {"limits.pidz=3", NULL};
    resolve(&r, NULL, bad_set);
    contains(r.err.message, "unknown key 'limits.pidz' (did you mean 'limits.pids'?)",
             "unknown --set key: %s", r.err.message);
    done(&r);
}

static void test_host_layers(void)
{
    struct result r;
    reset();
    write_file(path_of("%s/cordon/config.toml", xdg),
               "[limits]\npids = 5\n[env]\nallow = [\"A\"]\n");
    write_file(path_of("%s/default.toml", etc), "[limits]\npids = 7\nopen_files = 70\n"
                                                "[env]\nallow = [\"H\"]\n");
    char *env[] = {"CORDON_LIMITS__PIDS=100", NULL};
    const char *sets[] = {"limits.pids=200", NULL};
    resolve(&r, env, sets);
    is_int(r.ret, 0, "host default resolves: %s", r.err.message);
    is_int(r.cfg.limits.pids, 7, "host default wins over user, environment and session");
    ok(r.cfg.origin[CFG_LIMITS_PIDS].locked, "and locks the key");
    is_int(r.cfg.origin[CFG_LIMITS_PIDS].layer, CFG_LAYER_HOST_DEFAULT, "origin host-default");
    ok(warned(&r, path_of("limits.pids set in %s/cordon/config.toml:2 is ignored: locked by "
                          "%s/default.toml:2",
                          xdg, etc)),
       "warning names both places");
    ok(warned(&r, "limits.pids set in CORDON_LIMITS__PIDS is ignored"), "environment warned");
    ok(warned(&r, "limits.pids set in --set is ignored"), "session warned");
    is_int(r.cfg.env.allow.count, 1, "host list replaces lower lists");
    ok(has(&r.cfg.env.allow, "H"), "host list value");
    ok(!r.cfg.origin[CFG_LIMITS_MEMORY_MIB].locked, "keys a host file does not set are not locked");
    done(&r);

    write_file(path_of("%s/cordon/policy/default.toml", xdg), "[limits]\npids = 8\n");
    resolve(&r, NULL, NULL);
    is_int(r.cfg.limits.pids, 8, "user policy default beats /etc default");
    is_int(r.cfg.limits.open_files, 70, "both host defaults apply");
    done(&r);

    char *project = NULL;
    struct cordon_error err = {0};
    cfg_project_policy_path(xdg, ws, &project, &err);
    write_file(project, "[limits]\npids = 9\n");
    resolve(&r, NULL, NULL);
    is_int(r.cfg.limits.pids, 9, "project override beats host defaults");
    is_int(r.cfg.origin[CFG_LIMITS_PIDS].layer, CFG_LAYER_HOST_PROJECT, "origin host-project");
    ok(r.cfg.origin[CFG_LIMITS_PIDS].locked, "project override locks");
    is_str(r.cfg.project_policy_file, project, "the resolved config names the project file");
    done(&r);

    /* the workspace layer against a lock */
    write_file(path_of("%s/.cordon.toml", ws), "[limits]\npids = 1\n");
    trust_workspace();
    resolve(&r, NULL, NULL);
    is_int(r.cfg.limits.pids, 9, "a locked key ignores the workspace file");
    ok(warned(&r, path_of("%s/.cordon.toml:2 is ignored: locked by %s:2", ws, project)),
       "with a warning naming both files");
    done(&r);

    write_file(project, "[limits]\npids = \n");
    resolve(&r, NULL, NULL);
    is_int(r.ret, -1, "an invalid host file fails closed");
    contains(r.err.message, path_of("%s:2:8: expected a value", project),
             "naming file:line:col: %s", r.err.message);
    done(&r);

    write_file(project, "[limits]\npids = 9\n");
    chmod(project, 0666);
    resolve(&r, NULL, NULL);
    contains(r.err.message, "writable by group or others",
             "group/other-writable host file fails: %s", r.err.message);
    done(&r);
    chmod(project, 0644);

    if (geteuid() == 0) {
        if (chown(project, 65534, 65534) < 0)
            abort();
        resolve(&r, NULL, NULL);
        contains(r.err.message, "owned by uid 65534, neither root nor you",
                 "host file owned by another user fails: %s", r.err.message);
        done(&r);
        if (chown(project, 0, 0) < 0)
            abort();
        tap_skip("root reads mode-000 files", "unreadable host file");
    } else {
        tap_skip("needs root to chown", "host file owned by another user");
        chmod(project, 0);
        resolve(&r, NULL, NULL);
        contains(r.err.message, "unreadable", "an unreadable host file fails closed: %s",
                 r.err.message);
        done(&r);
        chmod(project, 0644);
    }
    unlink(project);
    unlink(path_of("%s/default.toml", etc));
    unlink(path_of("%s/cordon/policy/default.toml", xdg));
    resolve(&r, NULL, NULL);
    is_int(r.ret, 0, "missing host files change nothing");
    is_int(r.cfg.limits.pids, 1, "the workspace value applies again");
    done(&r);
    free(project);
}

static void expect_workspace_refusal(const char *text, const char *needle, const char *what)
{
    struct result r;
    write_file(path_of("%s/.cordon.toml", ws), text);
    trust_workspace();
    resolve(&r, NULL, NULL);
    ok(r.ret < 0 && strstr(r.err.message, needle) &&
           strstr(r.err.message, path_of("%s/.cordon.toml:", ws)),
       "workspace file: %s is refused with file:line: %s", what, r.err.message);
    done(&r);
}

static void test_workspace_forbidden(void)
{
    reset();
    expect_workspace_refusal("\n\nfallback_mode = \"host\"\n",
                             ".cordon.toml:3: fallback_mode = \"host\" is refused",
                             "fallback_mode = host");
    expect_workspace_refusal("allow_host_execution = true\n",
                             "allow_host_execution = true is refused",
                             "allow_host_execution = true");
    expect_workspace_refusal("[[mounts]]\nhost_path = \"/opt\"\nreadonly = false\n",
                             "writable mount of /opt is refused", "a writable mount outside");
    expect_workspace_refusal("[network]\npublish_ports = [\"0.0.0.0:80:80\"]\n",
                             "publishing port 80 on 0.0.0.0 is refused", "bind 0.0.0.0");
    expect_workspace_refusal("[env]\nallow = [\"DOCKER_HOST\"]\n", "is protected", "DOCKER_HOST");
    expect_workspace_refusal("route_tools = [\"read\"]\n", "route_tools may not drop",
                             "dropping routed tools");
    expect_workspace_refusal("[env]\nmode = \"passthrough\"\n", "passthrough", "env passthrough");
    expect_workspace_refusal("[docker]\nhost = \"unix:///tmp/other.sock\"\n",
                             "docker.host is refused in the workspace file", "docker.host");

    struct result r;
    mkdir(path_of("%s/data", ws), 0755);
    write_file(path_of("%s/.cordon.toml", ws),
               path_of("allow_host_execution = false\n[[mounts]]\nhost_path = \"%s/data\"\n"
                       "guest_path = \"/data\"\nreadonly = false\n[network]\n"
                       "publish_ports = [\"127.0.0.1:8080:80\", 3000]\n",
                       ws));
    trust_workspace();
    resolve(&r, NULL, NULL);
    is_int(r.ret, 0, "allowed workspace settings resolve: %s", r.err.message);
    ok(!r.cfg.allow_host_execution, "workspace can turn host execution off");
    is_int(r.cfg.mounts.count, 1, "writable mount inside the workspace accepted");
    is_int(r.cfg.network.publish_ports.count, 2, "loopback ports accepted");
    ok(r.cfg.network.publish_ports.count == 2 &&
           strcmp(r.cfg.network.publish_ports.items[1].bind, "127.0.0.1") == 0 &&
           r.cfg.network.publish_ports.items[1].guest_port == 3000,
       "a bare port binds 127.0.0.1");
    done(&r);
    unlink(path_of("%s/.cordon.toml", ws));

    /* the same settings are fine from the user file */
    write_file(path_of("%s/cordon/config.toml", xdg), "fallback_mode = \"host\"\n");
    resolve(&r, NULL, NULL);
    is_int(r.cfg.fallback_mode, CFG_FALLBACK_HOST,
           "fallback_mode = host is accepted from the "
           "user file");
    done(&r);
}

/* The docker backend's keys: the daemon (unix sockets only, default
 * /var/run/docker.sock) and the image (a reference, never an option). */
static void test_docker_keys(void)
{
    reset();
    struct result r;
    resolve(&r, NULL, NULL);
    is_str(r.cfg.docker.host, "unix:///var/run/docker.sock", "docker.host default");
    ok(r.cfg.docker.image == NULL, "docker.image has no default");
    done(&r);
    const char *good[] = {"docker.host=unix:///run/user/1000/docker.sock",
                          "docker.image=registry.example/team/img:1.2@sha256:ab12", NULL};
    resolve(&r, NULL, good);
    is_int(r.ret, 0, "docker keys from the session: %s", r.err.message);
    is_str(r.cfg.docker.host, "unix:///run/user/1000/docker.sock", "docker.host from --set");
    is_str(r.cfg.docker.image, "registry.example/team/img:1.2@sha256:ab12", "docker.image");
    done(&r);
    static const char *const bad[][2] = {
        {"docker.host=tcp://127.0.0.1:2375", "unix sockets only"},
        {"docker.host=unix://relative.sock", "unix sockets only"},
        {"docker.host=unix:///a/../b.sock", "normalised"},
        {"docker.image=--privileged", "starting with a letter or digit"},
        {"docker.image=img name", "letters, digits"},
        {"docker.image=", "starting with a letter or digit"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        const char *sets[] = {bad[i][0], NULL};
        resolve(&r, NULL, sets);
        ok(r.ret < 0 && strstr(r.err.message, bad[i][1]), "%s is refused: %s", bad[i][0],
           r.err.message);
        done(&r);
    }
    write_file(path_of("%s/cordon/config.toml", xdg), "[docker]\nhost = \"unix:///srv/d.sock\"\n");
    resolve(&r, NULL, NULL);
    is_str(r.cfg.docker.host, "unix:///srv/d.sock", "docker.host from the user file");
    done(&r);
    unlink(path_of("%s/cordon/config.toml", xdg));
}

/* limits.tmpfs_mib / tmpfs_inodes (the five tmpfs fit in limits.memory_mib)
 * and etc.extra (paths below /etc, never from the workspace file). */
static void test_bounds_keys(void)
{
    reset();
    struct result r;
    resolve(&r, NULL, NULL);
    is_int(cfg_tmpfs_mib(&r.cfg), 512, "tmpfs: an eighth of the default 4096 MiB");
    is_int(r.cfg.limits.tmpfs_inodes, 131072, "tmpfs_inodes default");
    is_int(r.cfg.etc.extra.count, 0, "etc.extra is empty by default");
    done(&r);
    const char *unlimited[] = {"limits.memory_mib=0", NULL};
    resolve(&r, NULL, unlimited);
    is_int(cfg_tmpfs_mib(&r.cfg), CFG_TMPFS_DEFAULT_MIB, "tmpfs: 512 MiB when memory is unlimited");
    done(&r);
    const char *fits[] = {"limits.memory_mib=1000", "limits.tmpfs_mib=200", NULL};
    resolve(&r, NULL, fits);
    is_int(r.ret, 0, "five tmpfs of a fifth of memory fit: %s", r.err.message);
    is_int(cfg_tmpfs_mib(&r.cfg), 200, "tmpfs: the explicit size");
    done(&r);
    const char *over[] = {"limits.memory_mib=1000", "limits.tmpfs_mib=201", NULL};
    resolve(&r, NULL, over);
    ok(r.ret < 0 && strstr(r.err.message, "exceed limits.memory_mib = 1000") &&
           strstr(r.err.message, "at most 200"),
       "a tmpfs total over the memory budget is refused: %s", r.err.message);
    done(&r);
    const char *few_inodes[] = {"limits.tmpfs_inodes=100", NULL};
    resolve(&r, NULL, few_inodes);
    ok(r.ret < 0, "tmpfs_inodes below 1024 is refused: %s", r.err.message);
    done(&r);

    const char *extra[] = {"etc.extra=[\"gitconfig\", \"apt/auth.conf\"]", NULL};
    resolve(&r, NULL, extra);
    ok(r.ret == 0 && has(&r.cfg.etc.extra, "gitconfig") && has(&r.cfg.etc.extra, "apt/auth.conf"),
       "etc.extra from the session: %s", r.err.message);
    done(&r);
    static const char *const bad[] = {
        "etc.extra=[\"/etc/gitconfig\"]",
        "etc.extra=[\"../root\"]",
        "etc.extra=[\"a/../shadow\"]",
        "etc.extra=[\"shadow\"]",
        "etc.extra=[\"gshadow-\"]",
        "etc.extra=[\"sudoers.d/x\"]",
        "etc.extra=[\"ssl/private\"]",
        "etc.extra=[\"ssh/ssh_host_rsa_key.pub\"]",
        "etc.extra=[\"cordon/default.toml\"]",
        "etc.extra=[\"a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u/v/w/x/y/z/0123456789abcdefgh\"]",
    };
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        const char *sets[] = {bad[i], NULL};
        resolve(&r, NULL, sets);
        ok(r.ret < 0, "%s is refused: %s", bad[i], r.err.message);
        done(&r);
    }
    write_file(path_of("%s/cordon/config.toml", xdg), "[etc]\nextra = [\"wgetrc\"]\n");
    resolve(&r, NULL, NULL);
    ok(r.ret == 0 && has(&r.cfg.etc.extra, "wgetrc"), "etc.extra from the user file");
    done(&r);
    unlink(path_of("%s/cordon/config.toml", xdg));
    expect_workspace_refusal("[etc]\nextra = [\"gitconfig\"]\n",
                             "etc.extra is refused in the workspace file", "etc.extra");
    unlink(path_of("%s/.cordon.toml", ws));
}

static void expect_mount_refusal(const char *mounts, const char *needle, const char *what)
{
    struct result r;
    write_file(path_of("%s/cordon/config.toml", xdg), mounts);
    resolve(&r, NULL, NULL);
    ok(r.ret < 0 && strstr(r.err.message, needle), "%s is refused: %s", what, r.err.message);
    done(&r);
}

static void test_mounts_and_policy(void)
{
    reset();
    expect_mount_refusal("[[mounts]]\nhost_path = \"/var/run/docker.sock\"\n", "docker",
                         "the Docker socket");
    expect_mount_refusal("[[mounts]]\nhost_path = \"/var/run\"\nguest_path = \"/vr\"\n",
                         "would expose the Docker socket", "a directory holding the Docker socket");
    expect_mount_refusal("[[mounts]]\nhost_path = \"/opt\"\nguest_path = \"/usr/local\"\n",
                         "overlaps the protected /usr", "a guest path under /usr");
    expect_mount_refusal("[[mounts]]\nhost_path = \"/opt\"\nguest_path = \"/\"\n",
                         "overlaps the protected", "guest path /");
    expect_mount_refusal("[[mounts]]\nhost_path = \"/opt\"\nguest_path = \"/x\"\n[[mounts]]\n"
                         "host_path = \"/srv\"\nguest_path = \"/x/y\"\n",
                         "overlaps the mount at /x", "overlapping guest paths");
    expect_mount_refusal(path_of("[[mounts]]\nhost_path = \"/opt\"\nguest_path = \"%s/sub\"\n", ws),
                         "overlaps the workspace", "a guest path inside the workspace");
    expect_mount_refusal("[[mounts]]\nhost_path = \"relative\"\n", "must be an absolute path",
                         "a relative host path");
    expect_mount_refusal("[[mounts]]\nhostpath = \"/opt\"\n",
                         "unknown key 'mounts.hostpath' (did you mean 'host_path'?)",
                         "an unknown mount key");
    expect_mount_refusal(path_of("[[mounts]]\nhost_path = \"%s/cordon\"\nguest_path = \"/c\"\n"
                                 "readonly = false\n",
                                 xdg),
                         "may not overlap the policy location",
                         "a writable mount of the policy "
                         "directory");
    expect_mount_refusal(path_of("[[mounts]]\nhost_path = \"%s/cordon/policy/projects/future\"\n"
                                 "guest_path = \"/c\"\nreadonly = false\n",
                                 xdg),
                         "may not overlap the policy location",
                         "a writable mount of a not-yet-existing project override location");
    expect_mount_refusal(path_of("[[mounts]]\nhost_path = \"%s\"\nguest_path = \"/e\"\n"
                                 "readonly = false\n",
                                 etc),
                         "may not overlap the policy location", "a writable mount of /etc/cordon");

    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    const char *socket_path = path_of("%s/agent.sock", root);
    if (strlen(socket_path) >= sizeof(address.sun_path))
        abort();
    memcpy(address.sun_path, socket_path, strlen(socket_path) + 1);
    if (fd < 0 || bind(fd, (struct sockaddr *)&address, sizeof(address)) < 0)
        abort();
    expect_mount_refusal(
        path_of("[[mounts]]\nhost_path = \"%s/agent.sock\"\nguest_path = \"/s\"\n", root),
        "is a socket", "a socket");
    close(fd);

    struct result r;
    write_file(path_of("%s/cordon/config.toml", xdg),
               path_of("[[mounts]]\nhost_path = \"%s/cordon\"\nguest_path = \"/c\"\n", xdg));
    resolve(&r, NULL, NULL);
    is_int(r.ret, 0, "a read-only mount of the policy directory is allowed: %s", r.err.message);
    ok(r.cfg.mounts.count == 1 && r.cfg.mounts.items[0].readonly, "mounts are read-only by "
                                                                  "default");
    done(&r);
    unlink(path_of("%s/cordon/config.toml", xdg));

    /* policy placement: XDG_CONFIG_HOME inside the workspace */
    struct cfg_inputs in = {
        .workspace = ws, .xdg_config_home = path_of("%s/.config", ws), .etc_dir = etc};
    memset(&r, 0, sizeof(r));
    r.ret = cfg_resolve(&in, &r.cfg, &r.warnings, &r.err);
    ok(r.ret < 0 && strstr(r.err.message, "is inside the workspace"),
       "policy files inside the workspace are refused: %s", r.err.message);
    done(&r);

    /* a policy directory that is a symlink into the workspace */
    mkdir(path_of("%s/cordon", xdg), 0755);
    mkdir(path_of("%s/evil", ws), 0755);
    if (symlink(path_of("%s/evil", ws), path_of("%s/cordon/policy", xdg)) < 0)
        abort();
    resolve(&r, NULL, NULL);
    ok(r.ret < 0 && strstr(r.err.message, "resolves into the workspace"),
       "a policy location that symlinks into the workspace is refused: %s", r.err.message);
    done(&r);
    unlink(path_of("%s/cordon/policy", xdg));

    /* an /etc/cordon/default.toml that is a symlink into the workspace */
    write_file(path_of("%s/planted.toml", ws), "fallback_mode = \"host\"\n");
    if (symlink(path_of("%s/planted.toml", ws), path_of("%s/default.toml", etc)) < 0)
        abort();
    resolve(&r, NULL, NULL);
    ok(r.ret < 0 && strstr(r.err.message, "resolves into the workspace"),
       "a host default that symlinks into the workspace is refused: %s", r.err.message);
    done(&r);
}

static void test_check_file_and_names(void)
{
    struct cordon_error err = {0};
    reset();
    write_file(path_of("%s/.cordon.toml", ws), "fallback_mode = \"host\"\n");
    is_int(cfg_check_file(path_of("%s/.cordon.toml", ws), CFG_LAYER_WORKSPACE, ws, &err), -1,
           "check as workspace refuses fallback host");
    is_int(cfg_check_file(path_of("%s/.cordon.toml", ws), CFG_LAYER_USER, NULL, &err), 0,
           "check as user accepts it");

    char *project = NULL;
    is_int(cfg_project_policy_path("/home/u/.config", "/home/u/src/My Project", &project, &err), 0,
           "project path");
    char hex[65];
    sha256_hex("/home/u/src/My Project", strlen("/home/u/src/My Project"), hex);
    hex[16] = '\0';
    is_str(project, path_of("/home/u/.config/cordon/policy/projects/my-project-%s.toml", hex),
           "project path is a readable slug plus a hash");
    free(project);

    sha256_hex("", 0, hex);
    is_str(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "sha256('')");
    sha256_hex("abc", 3, hex);
    is_str(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "sha256(abc)");
    const char *long_input = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(long_input, strlen(long_input), hex);
    is_str(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
           "sha256 of the two-block vector");
    ok(cfg_env_name_protected("DOCKER_HOST") && cfg_env_name_protected("COMPOSE_FILE") &&
           cfg_env_name_protected("LD_AUDIT") && cfg_env_name_protected("BASH_ENV") &&
           cfg_env_name_protected("ENV") && !cfg_env_name_protected("GOPATH"),
       "protected environment names");
}

/* realpath() of the longest existing prefix plus the missing rest. */
static void test_canonicalize_lenient(void)
{
    char base[400], real_base[PATH_MAX];
    snprintf(base, sizeof(base), "%s/canon", root);
    write_file(path_of("%s/dir/file", base), "x");
    if (!realpath(base, real_base))
        abort();
    if (symlink("dir", path_of("%s/link", base)) < 0 ||
        symlink("/nonexistent-cordon-target", path_of("%s/dangling", base)) < 0)
        abort();
    struct {
        const char *rel, *want;
    } cases[] = {
        {"dir/file", "dir/file"},             /* exists */
        {"dir/new/deeper", "dir/new/deeper"}, /* a missing tail */
        {"link/new", "dir/new"},              /* a missing tail under a symlink */
        {"link/file", "dir/file"},
        {"dangling/x", "dangling/x"},         /* a dangling link stays as named */
        {"dir/file/under", "dir/file/under"}, /* below a file: ENOTDIR */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        _cleanup_free_ char *got = cfg_canonicalize_lenient(path_of("%s/%s", base, cases[i].rel));
        is_str(got ? got : "(null)", path_of("%s/%s", real_base, cases[i].want),
               "canonicalize_lenient %s", cases[i].rel);
    }
    _cleanup_free_ char *slashes = cfg_canonicalize_lenient("//nonexistent-cordon-dir");
    is_str(slashes ? slashes : "(null)", "/nonexistent-cordon-dir",
           "canonicalize_lenient: leading slashes of a missing path");
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) && chdir(base) == 0) {
        _cleanup_free_ char *rel = cfg_canonicalize_lenient("dir/missing");
        is_str(rel ? rel : "(null)", path_of("%s/dir/missing", real_base),
               "canonicalize_lenient: a relative path with a missing tail");
        _cleanup_free_ char *one = cfg_canonicalize_lenient("d/missing");
        is_str(one ? one : "(null)", "(null)",
               "canonicalize_lenient: a relative path with no existing prefix");
        if (chdir(cwd) != 0)
            abort();
    }
    _cleanup_free_ char *top = cfg_canonicalize_lenient("/nonexistent-cordon-dir/a/b");
    is_str(top ? top : "(null)", "/nonexistent-cordon-dir/a/b",
           "canonicalize_lenient: nothing below / exists");
}

int main(void)
{
    snprintf(root, sizeof(root), "/tmp/cordon-test-config.%d", (int)getpid());
    snprintf(ws, sizeof(ws), "%s/ws", root);
    snprintf(xdg, sizeof(xdg), "%s/xdg", root);
    snprintf(etc, sizeof(etc), "%s/etc", root);
    test_defaults_and_user();
    test_workspace_trust();
    test_env_and_session();
    test_host_layers();
    test_workspace_forbidden();
    test_docker_keys();
    test_bounds_keys();
    test_mounts_and_policy();
    test_check_file_and_names();
    test_canonicalize_lenient();
    char command[300];
    snprintf(command, sizeof(command), "rm -rf '%s'", root);
    if (system(command) != 0)
        tap_diag("cleanup failed");
    return tap_done();
}
