/* The docker backend (docker.h): one container per session on the daemon
 * named by docker.host, created with `docker run -i` by the docker CLI,
 * which the supervisor runs with an environment of four variables it builds
 * (PATH, a private empty HOME and DOCKER_CONFIG in the session's state
 * directory, DOCKER_HOST). Host context, unprivileged supervisor (the daemon
 * itself is root: docs/docker-backend.md). Here: the checks before anything
 * starts (the agent, the socket, the daemon, the image), the CLI's
 * processes, teardown, and what the host reads of the container's PID 1;
 * the command line and its host paths are docker-run.c's. */
#include "backend/docker/docker.h"
#include "backend/docker/docker-api.h"
#include "backend/docker/docker-run.h"
#include "backend/docker/docker-sockguard.h"
#include "net/net.h"
#include "supervisor/environ.h"
#include "supervisor/gitguard.h"
#include "supervisor/launch.h"
#include "supervisor/sock-guard.h"
#include "supervisor/state.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/fs.h"
#include "util/clock.h"
#include "util/elf-info.h"
#include "util/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The CLI is looked up here only, and this is the PATH it runs with. */
#define DOCKER_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* The daemon's answers (info, image inspect) and the container's removal. */
#define DOCKER_QUERY_TIMEOUT_MS 15000
#define DOCKER_RM_TIMEOUT_MS    10000

struct docker_state {
    char dir[PATH_MAX]; /* <state root>/<name>/docker: home/, config/, env */
    char cli[PATH_MAX];
    char host[PATH_MAX + 8];
    char env_text[4][PATH_MAX + 32];
    char *envp[5];
    char name_arg[160];
    char *rm_argv[6];
    /* allowlist (and deny mode's refusing proxy): the proxy on
     * <dir>/proxy.sock, recorded in the launch's session when it has one */
    struct net_session own_net;
    struct net_session *net;
    char host_service_dir[PATH_MAX + 8]; /* <dir>/hs: network.host_services */
    bool spawned;                        /* the container may exist */
    int agent_pidfd;                     /* the container's PID 1, once asked for; else -1 */
    pid_t agent_pid;
    pid_t guard_pid; /* the socket guard (docs/sockets.md), or -1 */
};

/* ---- running the CLI ---- */

/* Forks the CLI with argv and the scrubbed environment, stdio on in, out,
 * errfd. It dies with the supervisor (the watchdog removes the container).
 * Unless it is attached to the user's terminal (terminal: `cordon run`),
 * it gets a process group of its own, so that a terminal's Ctrl+C is the
 * supervisor's to handle, not something the CLI proxies into the
 * container. */
static pid_t cli_spawn(const struct docker_state *st, char *const *argv, int in, int out, int errfd,
                       bool terminal, struct cordon_error *err)
{
    pid_t ppid = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return error_set(err, errno, "docker: fork");
    if (pid == 0) {
        /* Child, host context, between fork and exec: no allocation. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != ppid)
            _exit(CORDON_EXIT_FAILURE);
        if (!terminal)
            setpgid(0, 0);
        int fds[3] = {in, out, errfd};
        /* Above 2 first, so that no dup2 below overwrites a source. */
        for (int i = 0; i < 3; i++) {
            if (fds[i] != i) {
                int moved = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
                if (moved < 0)
                    _exit(CORDON_EXIT_FAILURE);
                fds[i] = moved;
            }
        }
        for (int i = 0; i < 3; i++) {
            if (fds[i] != i && dup2(fds[i], i) < 0)
                _exit(CORDON_EXIT_FAILURE);
        }
        close_range(3, ~0U, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        execve(argv[0], argv, st->envp);
        _exit(CORDON_EXIT_CANNOT_EXEC);
    }
    return pid;
}

/* Runs argv to its end (at most timeout_ms), its stdout and stderr in out
 * (truncated, NUL-terminated, trailing newline removed). *status is the exit
 * status; < 0 when it could not run or did not end in time. */
/* A CLI query started and not yet read (cli_query_start/finish): two of
 * them run at once, each CLI start being tens of milliseconds. */
struct cli_query {
    pid_t pid;
    int fd;
};

static int cli_query_start(const struct docker_state *st, char *const *argv, struct cli_query *q,
                           struct cordon_error *err)
{
    int p[2];
    *q = (struct cli_query){.pid = -1, .fd = -1};
    if (pipe2(p, O_CLOEXEC) < 0)
        return error_set(err, errno, "docker: pipe");
    _cleanup_close_ int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    pid_t pid = cli_spawn(st, argv, devnull, p[1], p[1], false, err);
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return -1;
    }
    q->pid = pid;
    q->fd = p[0];
    return 0;
}

static int cli_query_finish(char *const *argv, struct cli_query *q, int timeout_ms, char *out,
                            size_t size, int *status, struct cordon_error *err)
{
    int p[2] = {q->fd, -1};
    pid_t pid = q->pid;
    out[0] = '\0';
    size_t len = 0;
    long long deadline = clock_now_ms() + timeout_ms;
    bool timed_out = false;
    for (;;) {
        long long left = deadline - clock_now_ms();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd pfd = {p[0], POLLIN, 0};
        if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
            break;
        char buf[4096];
        ssize_t n = read(p[0], buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        size_t take = (size_t)n < size - 1 - len ? (size_t)n : size - 1 - len;
        memcpy(out + len, buf, take);
        len += take;
    }
    close(p[0]);
    out[len] = '\0';
    while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r'))
        out[--len] = '\0';
    if (timed_out)
        kill(pid, SIGKILL);
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
        ;
    if (timed_out)
        return error_set(err, ETIMEDOUT, "docker: %s %s did not answer within %d s", argv[0],
                         argv[1], timeout_ms / 1000);
    *status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    return 0;
}

static int cli_capture(const struct docker_state *st, char *const *argv, int timeout_ms, char *out,
                       size_t size, int *status, struct cordon_error *err)
{
    struct cli_query q;
    out[0] = '\0';
    if (cli_query_start(st, argv, &q, err) < 0)
        return -1;
    return cli_query_finish(argv, &q, timeout_ms, out, size, status, err);
}

void docker_remove_container(char *const *argv, char *const *envp, int timeout_ms)
{
    if (!argv || !argv[0])
        return;
    pid_t pid = fork();
    if (pid < 0)
        return;
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int fd = 0; fd < 3 && devnull >= 0; fd++)
            dup2(devnull, fd);
        close_range(3, ~0U, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve(argv[0], argv, envp);
        _exit(CORDON_EXIT_CANNOT_EXEC);
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd >= 0) {
        struct pollfd p = {pidfd, POLLIN, 0};
        if (poll(&p, 1, timeout_ms) <= 0)
            kill(pid, SIGKILL);
        close(pidfd);
    }
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* ---- what the backend checks before it starts anything ---- */

int docker_check_static(const char *path, struct cordon_error *err)
{
    int dynamic = elf_has_interpreter(path, err);
    if (dynamic < 0)
        return error_prefix(err, "docker: the agent");
    if (dynamic)
        return error_set(err, ENOEXEC,
                         "docker: the agent %s is dynamically linked (it has a program "
                         "interpreter), and it runs in an image with other libraries: the "
                         "docker backend needs a static cordon-agent (a release build: "
                         "meson setup --buildtype=release)",
                         path);
    return 0;
}

static int find_cli(char *out, size_t size, struct cordon_error *err)
{
    static const char *const dirs[] = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                       "/usr/bin",        "/sbin",          "/bin"};
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        snprintf(out, size, "%s/docker", dirs[i]);
        if (access(out, X_OK) == 0)
            return 0;
    }
    error_set(err, ENOENT,
              "docker: the docker CLI is not in %s (Debian: apt-get install docker.io)",
              DOCKER_PATH);
    return error_hint_doctor(err);
}

/* The daemon's socket: a socket that root or the user owns. */
static int check_socket(const char *host, struct cordon_error *err)
{
    if (strncmp(host, "unix://", 7) != 0)
        return error_set(err, EINVAL, "docker: docker.host %s is not a unix:// socket", host);
    const char *path = host + 7;
    struct stat st;
    if (stat(path, &st) < 0) {
        error_set(err, errno, "docker: the daemon's socket %s (docker.host)", path);
        return error_hint_doctor(err);
    }
    if (!S_ISSOCK(st.st_mode))
        return error_set(err, ENOTSOCK, "docker: %s (docker.host) is not a socket", path);
    if (st.st_uid != 0 && st.st_uid != getuid())
        return error_set(err, EPERM,
                         "docker: %s (docker.host) is owned by uid %u, neither root nor you: "
                         "refusing to drive a daemon someone else controls",
                         path, (unsigned)st.st_uid);
    return 0;
}

static int state_init(struct docker_state *st, const char *name, const char *host,
                      struct cordon_error *err)
{
    snprintf(st->host, sizeof(st->host), "%s", host);
    _cleanup_free_ char *root = NULL;
    if (state_root(&root, err) < 0)
        return -1;
    char session[PATH_MAX];
    if (snprintf(session, sizeof(session), "%s/%s", root, name) >= (int)sizeof(session) ||
        snprintf(st->dir, sizeof(st->dir), "%s/docker", session) >= (int)sizeof(st->dir) ||
        strlen(st->dir) + sizeof("/config") >= PATH_MAX)
        return error_set(err, ENAMETOOLONG, "docker: state directory %s/%s", root, name);
    if (mkdir(session, 0700) < 0 && errno != EEXIST)
        return error_set(err, errno, "docker: creating %s", session);
    if (mkdir(st->dir, 0700) < 0 && errno != EEXIST)
        return error_set(err, errno, "docker: creating %s", st->dir);
    static const char *const subdirs[] = {"home", "config"};
    for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
        char d[PATH_MAX + 16];
        snprintf(d, sizeof(d), "%s/%s", st->dir, subdirs[i]);
        if (mkdir(d, 0700) < 0 && errno != EEXIST)
            return error_set(err, errno, "docker: creating %s", d);
    }
    snprintf(st->env_text[0], sizeof(st->env_text[0]), "PATH=" DOCKER_PATH);
    snprintf(st->env_text[1], sizeof(st->env_text[1]), "HOME=%s/home", st->dir);
    snprintf(st->env_text[2], sizeof(st->env_text[2]), "DOCKER_CONFIG=%s/config", st->dir);
    snprintf(st->env_text[3], sizeof(st->env_text[3]), "DOCKER_HOST=%s", host);
    for (int i = 0; i < 4; i++)
        st->envp[i] = st->env_text[i];
    st->envp[4] = NULL;
    return 0;
}

/* The CLI's complaint: the last line of what it printed (the lines before
 * it are a --format template filled with nothing). */
static const char *last_line(const char *out)
{
    const char *nl = strrchr(out, '\n');
    return nl ? nl + 1 : out;
}

/* The daemon answers, confines containers with seccomp (its default
 * profile; cordon never asks for unconfined), and can apply the configured
 * limits (without the controller it would warn and run without them). */
static int check_daemon_answer(const struct docker_state *st, const struct cordon_config *cfg,
                               const char *out, int status, struct cordon_error *err)
{
    if (status != 0) {
        error_set(err, 0, "docker: the daemon at %s does not answer: %s", st->host, last_line(out));
        return error_hint_doctor(err);
    }
    if (!strstr(out, "name=seccomp") || strstr(out, "profile=unconfined")) {
        error_set(err, 0,
                  "docker: the daemon at %s does not confine containers with seccomp "
                  "(its security options: %s); the docker backend needs it",
                  st->host, out);
        return error_hint_doctor(err);
    }
    if (cfg->limits.memory_mib > 0 && !strstr(out, "memory=true"))
        return error_set(err, 0,
                         "docker: the daemon at %s cannot limit memory (%s): limits.memory_mib = "
                         "%lld would not hold (set it to 0 to run without a memory limit)",
                         st->host, out, (long long)cfg->limits.memory_mib);
    if (cfg->limits.pids > 0 && !strstr(out, "pids=true"))
        return error_set(err, 0,
                         "docker: the daemon at %s cannot limit processes (%s): limits.pids = "
                         "%lld would not hold (set it to 0 to run without a process limit)",
                         st->host, out, (long long)cfg->limits.pids);
    return 0;
}

/* The image is there (never pulled), and its own ENV (which Docker sets
 * under the sandbox's) names nothing cordon never lets into a sandbox. */
static int check_image_answer(const struct docker_state *st, const char *image, const char *out,
                              int status, struct cordon_error *err)
{
    if (status != 0)
        return error_set(err, ENOENT,
                         "docker: image \"%s\" is not on the daemon at %s (cordon never pulls: "
                         "docker pull, load or import it there first)",
                         image, st->host);
    json_error_t jerr;
    json_t *env = json_loads(out, JSON_DECODE_ANY, &jerr);
    if (!env || !(json_is_array(env) || json_is_null(env))) {
        json_decref(env);
        return error_set(err, EINVAL, "docker: image \"%s\": unreadable ENV (%.200s)", image, out);
    }
    size_t i;
    json_t *e;
    json_array_foreach (env, i, e) {
        const char *kv = json_string_value(e);
        const char *eq = kv ? strchr(kv, '=') : NULL;
        char name[256];
        snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - kv) : 255, kv ? kv : "?");
        if (!kv || env_name_is_protected(name)) {
            json_decref(env);
            return error_set(err, EPERM,
                             "docker: image \"%s\" sets %s in its ENV, a variable cordon never "
                             "lets into a sandbox: use an image without it",
                             image, name);
        }
    }
    log_debug("docker: image %s has %zu ENV variable(s)", image, json_array_size(env));
    json_decref(env);
    return 0;
}

/* `docker info` and `docker image inspect` at once (each CLI start is
 * 40-50 ms), judged in that order: a daemon that does not answer is the
 * error, not the image it then could not find. */
/* The same two answers from the Engine API over the socket (no CLI
 * process): 1 when both were read and judged (0 or an error in err), 0
 * when the API did not answer as expected (the CLI then asks again, and
 * says what is wrong in its words). */
static bool image_name_plain(const char *image)
{
    if (!image || !*image || strlen(image) > 512)
        return false;
    for (const char *p = image; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("._:/@-", *p)))
            return false;
    return strstr(image, "..") == NULL;
}

static int check_by_api(const struct docker_state *st, const struct cordon_config *cfg, int *rc,
                        struct cordon_error *err)
{
    if (strncmp(st->host, "unix://", 7) != 0 || !image_name_plain(cfg->docker.image))
        return 0;
    const char *sock = st->host + 7;
    struct cordon_error api_err;
    int status = 0;
    _cleanup_free_ char *info = NULL;
    if (docker_api_get(sock, "/info", DOCKER_QUERY_TIMEOUT_MS, &status, &info, &api_err) < 0 ||
        status != 200)
        return 0;
    json_error_t jerr;
    json_t *j = json_loads(info, 0, &jerr);
    json_t *opts = j ? json_object_get(j, "SecurityOptions") : NULL;
    if (!json_is_object(j) || !(json_is_array(opts) || json_is_null(opts))) {
        json_decref(j);
        return 0;
    }
    _cleanup_free_ char *opts_text = json_dumps(opts, JSON_COMPACT | JSON_ENCODE_ANY);
    char out[4096];
    snprintf(out, sizeof(out), "%s memory=%s pids=%s", opts_text ? opts_text : "null",
             json_is_true(json_object_get(j, "MemoryLimit")) ? "true" : "false",
             json_is_true(json_object_get(j, "PidsLimit")) ? "true" : "false");
    json_decref(j);
    char path[640];
    snprintf(path, sizeof(path), "/images/%s/json", cfg->docker.image);
    _cleanup_free_ char *image = NULL;
    int image_status = 0;
    if (docker_api_get(sock, path, DOCKER_QUERY_TIMEOUT_MS, &image_status, &image, &api_err) < 0 ||
        (image_status != 200 && image_status != 404))
        return 0;
    _cleanup_free_ char *env_text = NULL;
    if (image_status == 200) {
        json_t *ij = json_loads(image, 0, &jerr);
        json_t *config = ij ? json_object_get(ij, "Config") : NULL;
        json_t *env = json_is_object(config) ? json_object_get(config, "Env") : NULL;
        if (!json_is_object(ij) || !json_is_object(config)) {
            json_decref(ij);
            return 0;
        }
        env_text = json_dumps(env ? env : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(ij);
        if (!env_text)
            return 0;
    }
    *rc = check_daemon_answer(st, cfg, out, 0, err);
    if (*rc == 0)
        *rc = check_image_answer(st, cfg->docker.image, env_text ? env_text : "",
                                 image_status == 200 ? 0 : 1, err);
    return 1;
}

static int check_daemon_and_image(const struct docker_state *st, const struct cordon_config *cfg,
                                  struct cordon_error *err)
{
    int api_rc = 0;
    if (check_by_api(st, cfg, &api_rc, err))
        return api_rc;
    char *info_argv[] = {(char *)st->cli, "info", "--format",
                         "{{json .SecurityOptions}} memory={{.MemoryLimit}} pids={{.PidsLimit}}",
                         NULL};
    char *image_argv[] = {
        (char *)st->cli,           "image", "inspect", "--format", "{{json .Config.Env}}",
        (char *)cfg->docker.image, NULL};
    struct cli_query info, image;
    if (cli_query_start(st, info_argv, &info, err) < 0)
        return -1;
    struct cordon_error image_err = {0};
    bool image_started = cli_query_start(st, image_argv, &image, &image_err) == 0;
    char info_out[4096];
    _cleanup_free_ char *image_out = malloc(65536);
    int info_status = -1, image_status = -1;
    int rc = cli_query_finish(info_argv, &info, DOCKER_QUERY_TIMEOUT_MS, info_out, sizeof(info_out),
                              &info_status, err);
    int rc_image = -1;
    if (image_started) {
        char scratch[1];
        rc_image = cli_query_finish(image_argv, &image, DOCKER_QUERY_TIMEOUT_MS,
                                    image_out ? image_out : scratch, image_out ? 65536 : 1,
                                    &image_status, &image_err);
    }
    if (rc < 0 || check_daemon_answer(st, cfg, info_out, info_status, err) < 0)
        return -1;
    if (!image_out)
        return error_set(err, ENOMEM, "docker");
    if (rc_image < 0) {
        *err = image_err;
        return -1;
    }
    return check_image_answer(st, cfg->docker.image, image_out, image_status, err);
}

/* The two checks one after the other (cordon doctor names the stage). */
static int check_daemon(const struct docker_state *st, const struct cordon_config *cfg,
                        struct cordon_error *err)
{
    char *argv[] = {(char *)st->cli, "info", "--format",
                    "{{json .SecurityOptions}} memory={{.MemoryLimit}} pids={{.PidsLimit}}", NULL};
    char out[4096];
    int status;
    if (cli_capture(st, argv, DOCKER_QUERY_TIMEOUT_MS, out, sizeof(out), &status, err) < 0)
        return -1;
    return check_daemon_answer(st, cfg, out, status, err);
}

static int check_image(const struct docker_state *st, const char *image, struct cordon_error *err)
{
    char *argv[] = {(char *)st->cli,        "image",       "inspect", "--format",
                    "{{json .Config.Env}}", (char *)image, NULL};
    _cleanup_free_ char *out = malloc(65536);
    if (!out)
        return error_set(err, ENOMEM, "docker");
    int status;
    if (cli_capture(st, argv, DOCKER_QUERY_TIMEOUT_MS, out, 65536, &status, err) < 0)
        return -1;
    return check_image_answer(st, image, out, status, err);
}

/* What the docker backend does not do, refused with the reason. */
int docker_check_config(const struct cordon_config *cfg, struct cordon_error *err)
{
    if (!cfg->docker.image)
        return error_set(err, 0,
                         "backend \"docker\" needs an image: set docker.image (in "
                         "~/.config/cordon/config.toml: [docker] image = \"NAME\", or --set "
                         "docker.image=NAME); it must have bash (docs/docker-backend.md)");
    /* Open mode would need a network with egress on which the host's
     * loopback services stay unreachable: on a bridge the host is the
     * gateway, and only the daemon's firewall rules would keep the
     * container off the host's own addresses (docs/docker-backend.md). */
    if (cfg->network.mode == CFG_NETWORK_OPEN)
        return error_set(err, 0,
                         "network.mode = \"open\" is not supported on the docker backend (its "
                         "containers run with --network none; a bridge network would leave the "
                         "host, its gateway, reachable): use \"allowlist\", or the ns or vm "
                         "backend");
    if (cfg->docker.mode == CFG_DOCKER_REQUIRE)
        return error_set(err, 0,
                         "docker.mode = \"require\": a docker backend container has no Docker "
                         "daemon inside (the vm backend's guest runs its own)");
    return 0;
}

/* The container's environment, exactly the sandbox's (env.mode), in a file
 * only the user reads: on the CLI's command line it would show in ps. */
static int write_env_file(const struct docker_state *st, char *const *env, struct cordon_error *err)
{
    char path[PATH_MAX + 8];
    snprintf(path, sizeof(path), "%s/env", st->dir);
    _cleanup_close_ int fd =
        open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return error_set(err, errno, "docker: %s", path);
    _cleanup_fclose_ FILE *f = fdopen(TAKE_FD(fd), "w");
    if (!f)
        return error_set(err, errno, "docker: %s", path);
    for (char *const *e = env; e && *e; e++) {
        if (strchr(*e, '\n')) {
            const char *eq = strchr(*e, '=');
            return error_set(err, EINVAL,
                             "docker: the environment variable %.*s has a newline in its value, "
                             "which docker's --env-file cannot carry",
                             eq ? (int)(eq - *e) : 64, *e);
        }
        fprintf(f, "%s\n", *e);
    }
    if (fflush(f) != 0)
        return error_set(err, errno, "docker: %s", path);
    return 0;
}

/* ---- backend_ops ---- */

static int docker_probe(struct cordon_error *err)
{
    struct docker_state st = {0};
    if (find_cli(st.cli, sizeof(st.cli), err) < 0 ||
        check_socket("unix:///var/run/docker.sock", err) < 0)
        return -1;
    snprintf(st.env_text[0], sizeof(st.env_text[0]), "PATH=" DOCKER_PATH);
    snprintf(st.env_text[1], sizeof(st.env_text[1]), "DOCKER_HOST=unix:///var/run/docker.sock");
    snprintf(st.env_text[2], sizeof(st.env_text[2]), "DOCKER_CONFIG=/nonexistent");
    snprintf(st.env_text[3], sizeof(st.env_text[3]), "HOME=/nonexistent");
    for (int i = 0; i < 4; i++)
        st.envp[i] = st.env_text[i];
    char *argv[] = {st.cli, "version", "--format", "{{.Server.Version}}", NULL};
    char out[1024];
    int status;
    if (cli_capture(&st, argv, 5000, out, sizeof(out), &status, err) < 0)
        return -1;
    if (status != 0)
        return error_set(err, 0, "docker: the daemon does not answer: %s", out);
    return 0;
}

/* The daemon checks of docker_start for `cordon doctor` and auto
 * (docker-probe.c): the CLI, the socket's owner, the daemon's seccomp and
 * limits, the image; *stage names the one that failed. */
int docker_check_host(const struct cordon_config *cfg, const char **stage, struct cordon_error *err)
{
    struct docker_state st = {0};
    *stage = "cli";
    if (find_cli(st.cli, sizeof(st.cli), err) < 0)
        return -1;
    *stage = "socket";
    if (check_socket(cfg->docker.host, err) < 0)
        return -1;
    snprintf(st.host, sizeof(st.host), "%s", cfg->docker.host);
    snprintf(st.env_text[0], sizeof(st.env_text[0]), "PATH=" DOCKER_PATH);
    snprintf(st.env_text[1], sizeof(st.env_text[1]), "DOCKER_HOST=%s", cfg->docker.host);
    snprintf(st.env_text[2], sizeof(st.env_text[2]), "DOCKER_CONFIG=/nonexistent");
    snprintf(st.env_text[3], sizeof(st.env_text[3]), "HOME=/nonexistent");
    for (int i = 0; i < 4; i++)
        st.envp[i] = st.env_text[i];
    *stage = "daemon";
    if (check_daemon(&st, cfg, err) < 0)
        return -1;
    *stage = "image";
    if (!cfg->docker.image)
        return error_set(err, 0, "docker.image is not set");
    return check_image(&st, cfg->docker.image, err);
}

/* Allowlist: the proxy of ns and vm (same rules, refusals and audit log),
 * accepting on a unix socket that only the user can connect to (the
 * container runs as the user's uid). Published ports: the same process
 * listens on the host and connects to the forwarder's sockets in pub/. */
static int start_proxy(const struct launch *l, struct docker_state *st, struct cordon_error *err)
{
    st->net = l->net.session ? l->net.session : &st->own_net;
    net_session_init(st->net, &l->net);
    char pub[PATH_MAX + 8];
    snprintf(pub, sizeof(pub), "%s/" DOCKER_PUBLISH_DIR, st->dir);
    if (l->net.publish_count > 0 && mkdir(pub, 0700) < 0 && errno != EEXIST)
        return error_set(err, errno, "docker: creating %s", pub);
    const char *publish_dir = l->net.publish_count > 0 ? pub : NULL;
    /* Host services: the proxy listens in hs/, bound read-only inside. */
    if (l->net.host_service_count > 0) {
        snprintf(st->host_service_dir, sizeof(st->host_service_dir), "%s/" DOCKER_HOST_SERVICE_DIR,
                 st->dir);
        if (mkdir(st->host_service_dir, 0700) < 0 && errno != EEXIST)
            return error_set(err, errno, "docker: creating %s", st->host_service_dir);
        st->net->host_service_dir = st->host_service_dir;
    }
    if (!docker_net_has_proxy(&l->net))
        return publish_dir || l->net.host_service_count > 0
                   ? net_start_proxy_unix(st->net, -1, publish_dir, err)
                   : 0;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/" DOCKER_PROXY_SOCKET, st->dir) >=
        (int)sizeof(sa.sun_path))
        return error_set(err, ENAMETOOLONG, "docker: proxy socket %s/" DOCKER_PROXY_SOCKET,
                         st->dir);
    unlink(sa.sun_path);
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return error_set(err, errno, "docker: socket");
    /* The directory is 0700 already; the mode closes the window anyway. */
    mode_t old = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (rc < 0 || listen(fd, 128) < 0)
        return error_set(err, errno, "docker: listening on %s", sa.sun_path);
    return net_start_proxy_unix(st->net, fd, publish_dir, err);
}

int docker_sandbox_start(const struct launch *l, char *const *agent_argv, bool serve,
                         struct sandbox *sb, struct cordon_error *err)
{
    *sb = (struct sandbox){.ops = &docker_backend_ops, .pid = -1, .pidfd = -1, .channel_fd = -1};
    if (docker_check_launch(l, err) < 0)
        return -1;
    struct docker_state *st = calloc(1, sizeof(*st));
    if (!st)
        return error_set(err, ENOMEM, "docker");
    st->agent_pidfd = -1;
    st->guard_pid = -1;
    sb->priv = st;
    if (find_cli(st->cli, sizeof(st->cli), err) < 0 || check_socket(l->cfg.docker.host, err) < 0 ||
        state_init(st, l->name, l->cfg.docker.host, err) < 0)
        return -1;
    snprintf(st->name_arg, sizeof(st->name_arg), "%s", l->name);
    st->rm_argv[0] = st->cli;
    st->rm_argv[1] = "rm";
    st->rm_argv[2] = "-f";
    /* -v: review mode's overlay is an anonymous volume (docker-run.c). */
    st->rm_argv[3] = "-v";
    st->rm_argv[4] = st->name_arg;
    st->rm_argv[5] = NULL;
    long long t0 = clock_now_ms();
    if (check_daemon_and_image(st, &l->cfg, err) < 0 || write_env_file(st, l->env, err) < 0)
        return -1;
    log_debug("docker: daemon and image checked in %lld ms", clock_now_ms() - t0);
    if (start_proxy(l, st, err) < 0)
        return -1;
    _cleanup_close_ int guard_listen = -1;
    if (docker_guard_listen(st->dir, &guard_listen, err) < 0)
        return -1;

    struct docker_args a = {0};
    if (docker_run_argv(l, st->cli, st->name_arg, st->dir, agent_argv, serve, &a, err) < 0) {
        docker_args_free(&a);
        return -1;
    }
    if (log_debug_enabled) {
        char line[8192];
        size_t len = 0;
        for (size_t i = 0; i < a.n && len < sizeof(line) - 1; i++)
            len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s", i ? " " : "", a.v[i]);
        log_debug("docker: %s", line);
    }
    int pair[2] = {-1, -1};
    if (serve && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
        docker_args_free(&a);
        return error_set(err, errno, "docker: socketpair");
    }
    pid_t pid =
        serve ? cli_spawn(st, a.v, pair[1], pair[1], 2, false, err)
              : cli_spawn(st, a.v, l->spec.stdio[0], l->spec.stdio[1], l->spec.stdio[2], true, err);
    docker_args_free(&a);
    if (pair[1] >= 0)
        close(pair[1]);
    if (pid < 0) {
        if (pair[0] >= 0)
            close(pair[0]);
        return -1;
    }
    st->spawned = true;
    sb->pid = pid;
    sb->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    sb->channel_fd = pair[0];
    /* Nothing of the sandbox's runs before the guard does. */
    if (docker_guard_accept(guard_listen, sb->pidfd, l, st->dir, &st->guard_pid, err) < 0)
        return -1;
    snprintf(sb->description, sizeof(sb->description), "docker (%.60s on %.50s)",
             l->cfg.docker.image, l->cfg.docker.host);
    return 0;
}

static void docker_stop(struct sandbox *sb)
{
    struct docker_state *st = sb->priv;
    fs_close(&sb->channel_fd);
    if (sb->pid > 0) {
        struct pollfd p = {sb->pidfd, POLLIN, 0};
        bool running = sb->pidfd < 0 || poll(&p, 1, 0) == 0;
        /* The CLI still attached: the container goes first (with --rm the
         * CLI then ends), bounded; then the CLI itself. */
        if (running && st && st->spawned)
            docker_remove_container(st->rm_argv, st->envp, DOCKER_RM_TIMEOUT_MS);
        proc_end(sb->pid, sb->pidfd, 2000);
        sb->pid = -1;
    }
    fs_close(&sb->pidfd);
    if (st && st->dir[0]) {
        char parent[PATH_MAX];
        snprintf(parent, sizeof(parent), "%s", st->dir);
        char *slash = strrchr(parent, '/');
        if (slash) {
            *slash = '\0';
            _cleanup_close_ int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (pfd >= 0)
                fs_remove_tree_at(pfd, slash + 1);
        }
    }
    if (st)
        sock_guard_stop(st->guard_pid);
    if (st && st->net && st->net->policy)
        net_session_stop(st->net);
    if (st && st->agent_pidfd >= 0)
        close(st->agent_pidfd);
    free(st);
    sb->priv = NULL;
}

int docker_sandbox_agent_pidfd(struct sandbox *sb)
{
    struct docker_state *st = sb->priv;
    if (!st || !st->spawned)
        return -1;
    if (st->agent_pidfd >= 0)
        return st->agent_pidfd;
    char *argv[] = {st->cli, "inspect", "--format", "{{.State.Pid}}", st->name_arg, NULL};
    char out[64];
    int status;
    struct cordon_error err;
    if (cli_capture(st, argv, DOCKER_QUERY_TIMEOUT_MS, out, sizeof(out), &status, &err) < 0 ||
        status != 0) {
        log_debug("docker: inspect %s: %s", st->name_arg, out);
        return -1;
    }
    char *end;
    long pid = strtol(out, &end, 10);
    if (pid <= 1 || *end)
        return -1;
    st->agent_pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    st->agent_pid = (pid_t)pid;
    return st->agent_pidfd;
}

int docker_sandbox_check_confined(struct sandbox *sb, struct cordon_error *err)
{
    int pidfd = docker_sandbox_agent_pidfd(sb);
    const struct docker_state *st = sb->priv;
    if (pidfd < 0)
        return error_set(err, ESRCH, "docker: the daemon does not name the container's process");
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)st->agent_pid);
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    char line[256], seccomp[32] = "?", nnp[32] = "?", capeff[64] = "?", capbnd[64] = "?";
    int filters = 0;
    while (f && fgets(line, sizeof(line), f)) {
        sscanf(line, "Seccomp: %31s", seccomp);
        sscanf(line, "Seccomp_filters: %d", &filters);
        sscanf(line, "NoNewPrivs: %31s", nnp);
        sscanf(line, "CapEff: %63s", capeff);
        sscanf(line, "CapBnd: %63s", capbnd);
    }
    /* Still the same process: the numbers read are its own. */
    struct pollfd p = {pidfd, POLLIN, 0};
    if (!f || poll(&p, 1, 0) != 0)
        return error_set(err, ESRCH, "docker: the container's agent is gone");
    /* Three filters: Docker's profile, cordon's own and the socket
     * guard's, which the agent stacked before it said hello. */
    if (strcmp(seccomp, "2") != 0 || filters < 3 || strcmp(nnp, "1") != 0 ||
        strspn(capeff, "0") != strlen(capeff) || strspn(capbnd, "0") != strlen(capbnd))
        return error_set(err, EPERM,
                         "docker: the container's agent (pid %d on the host) is not confined as "
                         "required: Seccomp %s with %d filter(s) (want 2, Docker's and "
                         "cordon's), NoNewPrivs %s (want 1), CapEff %s, CapBnd %s (want none)",
                         (int)st->agent_pid, seccomp, filters, nnp, capeff, capbnd);
    return 0;
}

int docker_sandbox_check_git(struct sandbox *sb, const struct ns_spec *spec,
                             struct cordon_error *err)
{
    if (spec->ngit_binds == 0)
        return 0;
    int pidfd = docker_sandbox_agent_pidfd(sb);
    const struct docker_state *st = sb->priv;
    if (pidfd < 0)
        return error_set(err, ESRCH, "docker: the daemon does not name the container's process");
    for (size_t i = 0; i < spec->ngit_binds; i++) {
        const struct gitguard_bind *b = &spec->git_binds[i];
        if (!b->pinned)
            continue;
        char path[PATH_MAX + 64];
        snprintf(path, sizeof(path), "/proc/%d/root%s", (int)st->agent_pid, b->view_target);
        struct stat sbuf;
        if (stat(path, &sbuf) < 0 || sbuf.st_dev != b->dev || sbuf.st_ino != b->ino)
            return error_set(err, EXDEV,
                             "docker: the container's %s is not the directory cordon checked "
                             "(it changed while the daemon bound it); refusing the session",
                             b->view_target);
    }
    struct pollfd p = {pidfd, POLLIN, 0};
    if (poll(&p, 1, 0) != 0)
        return error_set(err, ESRCH, "docker: the container's agent is gone");
    return 0;
}

char *const *docker_sandbox_rm_argv(const struct sandbox *sb)
{
    const struct docker_state *st = sb->priv;
    return st && st->spawned ? st->rm_argv : NULL;
}

char *const *docker_sandbox_rm_envp(const struct sandbox *sb)
{
    const struct docker_state *st = sb->priv;
    return st ? st->envp : NULL;
}

static int docker_serve_start(const struct launch *l, struct sandbox *sb, struct cordon_error *err)
{
    static char *const agent_argv[] = {"cordon-agent", "serve", NULL};
    return docker_sandbox_start(l, agent_argv, true, sb, err);
}

int docker_check_launch(const struct launch *l, struct cordon_error *err)
{
    /* The container's image has its own libraries: a dynamic agent would
     * not start there. */
    if (docker_check_config(&l->cfg, err) < 0 || docker_check_static(l->agent_path, err) < 0)
        return -1;
    return 0;
}

static int docker_check_started(struct sandbox *sb, const struct launch *l,
                                struct cordon_error *err)
{
    if (docker_sandbox_check_confined(sb, err) < 0 ||
        docker_sandbox_check_git(sb, &l->spec, err) < 0)
        return -1;
    return 0;
}

/* The watchdog's part: killing the CLI does not end the container. */
static void docker_orphan_teardown(const struct sandbox *sb, int state_dir_fd)
{
    char *const *argv = docker_sandbox_rm_argv(sb);
    if (argv)
        docker_remove_container(argv, docker_sandbox_rm_envp(sb), 10000);
    fs_remove_tree_at(state_dir_fd, "docker");
}

const struct backend_ops docker_backend_ops = {
    .name = "docker",
    .caps = {.flags = BACKEND_CAP_PUBLISH_PORTS | BACKEND_CAP_HOST_USERNS | BACKEND_CAP_OUTER_TTY |
                      BACKEND_CAP_REVIEW | BACKEND_CAP_TLS_INTERCEPT | BACKEND_CAP_DENY_PROXY |
                      BACKEND_CAP_HOST_SERVICES,
             .host_side = "agent"},
    .probe = docker_probe,
    .check_launch = docker_check_launch,
    .start = docker_serve_start,
    .check_started = docker_check_started,
    .agent_pidfd = docker_sandbox_agent_pidfd,
    .stop = docker_stop,
    .run = docker_run,
    .orphan_teardown = docker_orphan_teardown,
};

pid_t docker_sandbox_exec_probe(struct sandbox *sb, const struct launch *l, int in, int out,
                                struct cordon_error *err)
{
    struct docker_state *st = sb->priv;
    if (!st || !st->spawned)
        return error_set(err, ESRCH, "docker: no container");
    struct docker_args a = {0};
    bool oom = docker_args_add(&a, "%s", st->cli) < 0 || docker_args_add(&a, "exec") < 0 ||
               docker_args_add(&a, "-i") < 0 || docker_args_add(&a, "--user") < 0 ||
               docker_args_add(&a, "%u:%u", getuid(), getgid()) < 0 ||
               docker_args_add(&a, "--workdir") < 0 || docker_args_add(&a, "%s", l->spec.cwd) < 0 ||
               docker_args_add(&a, "%s", st->name_arg) < 0 ||
               docker_args_add(&a, DOCKER_AGENT_PATH) < 0;
    if (oom) {
        docker_args_free(&a);
        return error_set(err, ENOMEM, "docker");
    }
    if (docker_confine_argv(l, &a, err) < 0) {
        docker_args_free(&a);
        return -1;
    }
    if (docker_args_add(&a, "--") < 0 || docker_args_add(&a, "probe") < 0) {
        docker_args_free(&a);
        return error_set(err, ENOMEM, "docker");
    }
    pid_t pid = cli_spawn(st, a.v, in, out, out, false, err);
    docker_args_free(&a);
    return pid;
}
