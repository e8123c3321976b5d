/* Unit tests of the run-mode relay (backend/relay.h) and of the verify
 * server's refusals (backend/verify-server.h), with real processes in the
 * holder's place: a forked child whose pidfd the relay waits on, real
 * pipes and a real control socket that a second child asks as `cordon
 * verify NAME` would. The backend's hooks are this file's. Host context,
 * any uid. */
#include "backend/relay.h"
#include "supervisor/control.h"
#include "supervisor/state.h"
#include "tap.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define NAME "relay-test"

/* What the hooks saw. */
struct seen {
    pid_t child;
    int signo;   /* the last relayed signal, 0 for none */
    int resizes; /* SIGWINCH taken */
    bool eof;    /* stdin_eof called */
    uint64_t eof_bytes;
    bool exited;      /* exited hook called */
    int channel;      /* the test's end of the channel, read by on_channel */
    int go;           /* written when the channel said "g" (the client may ask) */
    int close_on_eof; /* the input's write end, closed at stdin's end, or -1 */
};

static void on_signal(struct relay *r, void *ctx, const struct signalfd_siginfo *si)
{
    (void)r;
    struct seen *s = ctx;
    s->signo = (int)si->ssi_signo;
    kill(s->child, (int)si->ssi_signo);
}

static void on_resize(struct relay *r, void *ctx)
{
    (void)r;
    struct seen *s = ctx;
    s->resizes++;
    kill(s->child, SIGKILL);
}

static void on_stdin_eof(struct relay *r, void *ctx, uint64_t bytes)
{
    (void)r;
    struct seen *s = ctx;
    s->eof = true;
    s->eof_bytes = bytes;
    /* As a backend tells its sandbox: the holder sees its input end. */
    if (s->close_on_eof >= 0)
        close(s->close_on_eof);
    s->close_on_eof = -1;
}

/* One byte a frame: 'r' stdin may flow, 'x' the command reported exit
 * status 5, 'g' the channel is gone (and the client may ask). */
static bool on_channel(struct relay *r, void *ctx)
{
    struct seen *s = ctx;
    char c = 0;
    if (read(s->channel, &c, 1) != 1)
        return false;
    if (c == 'r')
        relay_input_ready(r);
    else if (c == 'x')
        relay_exit_reported(r, 5);
    else if (c == 'g') {
        verify_server_gone(relay_verify(r), "the test's init closed its channel");
        if (write(s->go, "g", 1) != 1)
            return false;
        return false;
    }
    return true;
}

static int on_exited(struct relay *r, void *ctx)
{
    struct seen *s = ctx;
    s->exited = true;
    siginfo_t si;
    return relay_reap(r, &si) < 0 ? CORDON_EXIT_FAILURE : relay_exit_status(&si);
}

static const struct relay_ops ops = {.signal = on_signal,
                                     .resize = on_resize,
                                     .stdin_eof = on_stdin_eof,
                                     .channel = on_channel,
                                     .exited = on_exited};

static struct launch launch = {.name = NAME};
static struct lifecycle lifecycle;

/* A child in the holder's place: fn runs in it and its result is the
 * child's exit status. */
static struct sandbox holder(int (*fn)(void *), void *arg)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        tap_bail("fork: %s", strerror(errno));
    if (pid == 0) {
        /* The relay blocked these for its signalfd. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        _exit(fn(arg));
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0)
        tap_bail("pidfd_open: %s", strerror(errno));
    return (struct sandbox){.pid = pid, .pidfd = pidfd, .channel_fd = -1};
}

static struct relay_spec spec_for(struct sandbox *sb, struct seen *s, int sigfd)
{
    s->child = sb->pid;
    return relay_spec_init(&ops, s, sb, &launch, &lifecycle, false, sigfd);
}

/* Runs the relay with fd (0, 1 or 2) put over by over (-1: unchanged). */
static int run_with(const struct relay_spec *spec, int fd, int over)
{
    int saved = -1;
    if (over >= 0) {
        fflush(stdout);
        saved = dup(fd);
        dup2(over, fd);
    }
    int status = relay_run(spec);
    if (over >= 0) {
        dup2(saved, fd);
        close(saved);
    }
    return status;
}

/* --- the holders --- */

#define OUTPUT_BYTES (300 * 1024)

static int write_then_exit(void *arg)
{
    int fd = *(int *)arg;
    char buf[4096];
    memset(buf, 'x', sizeof(buf));
    for (size_t sent = 0; sent < OUTPUT_BYTES; sent += sizeof(buf))
        if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
            return 1;
    return 7;
}

static int wait_forever(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return 0;
}

/* Exits with how many bytes its stdin pipe (fds[0]) held. */
static int count_input(void *arg)
{
    int *fds = arg;
    close(fds[1]);
    int fd = fds[0];
    char buf[256];
    int total = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        total += (int)n;
    return total;
}

static int wait_byte(void *arg)
{
    char c;
    return read(*(int *)arg, &c, 1) == 1 ? 3 : 1;
}

static void reap(struct sandbox *sb)
{
    kill(sb->pid, SIGKILL);
    waitid(P_PIDFD, (id_t)sb->pidfd, &(siginfo_t){0}, WEXITED);
    close(sb->pidfd);
}

static void test_output_and_status(int sigfd)
{
    int out[2];
    if (pipe2(out, O_CLOEXEC) < 0)
        tap_bail("pipe: %s", strerror(errno));
    struct sandbox sb = holder(write_then_exit, &out[1]);
    close(out[1]);
    char path[] = "/tmp/cordon-relay-out.XXXXXX";
    _cleanup_close_ int file = mkstemp(path);
    unlink(path);
    struct seen s = {.close_on_eof = -1};
    struct relay_spec spec = spec_for(&sb, &s, sigfd);
    spec.output = out[0];
    int status = run_with(&spec, 1, file);
    is_int(status, 7, "the holder's exit status is the relay's");
    ok(s.exited, "the exited hook gave it");
    struct stat st;
    fstat(file, &st);
    is_int(st.st_size, OUTPUT_BYTES, "all of the output reached stdout (drained after the exit)");
    close(out[0]);
    close(sb.pidfd);
}

static void test_signal(int sigfd)
{
    struct sandbox sb = holder(wait_forever, NULL);
    struct seen s = {.close_on_eof = -1};
    struct relay_spec spec = spec_for(&sb, &s, sigfd);
    raise(SIGTERM); /* blocked: waits in the signalfd */
    int status = relay_run(&spec);
    is_int(s.signo, SIGTERM, "a SIGTERM to the supervisor reaches the signal hook");
    is_int(status, 128 + SIGTERM, "the command killed by it: 128 + its number");
    raise(SIGWINCH);
    sb = holder(wait_forever, NULL);
    spec = spec_for(&sb, &s, sigfd);
    s.signo = 0;
    status = relay_run(&spec);
    is_int(s.resizes, 1, "SIGWINCH goes to the resize hook");
    is_int(s.signo, 0, "and not to the signal hook");
    is_int(status, 128 + SIGKILL, "the resize hook's SIGKILL ended the command");
    close(sb.pidfd);
}

static void test_stdin_gated(int sigfd)
{
    int in[2], stdin_pipe[2], chan[2];
    if (pipe2(in, O_CLOEXEC) < 0)
        tap_bail("pipe: %s", strerror(errno));
    struct sandbox sb = holder(count_input, in);
    close(in[0]);
    /* After the fork: only this process holds the write ends. */
    if (pipe2(stdin_pipe, O_CLOEXEC) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan) < 0)
        tap_bail("pipe: %s", strerror(errno));
    if (write(stdin_pipe[1], "hello", 5) != 5 || write(chan[1], "r", 1) != 1)
        tap_bail("write: %s", strerror(errno));
    close(stdin_pipe[1]);
    struct seen s = {.channel = chan[0], .close_on_eof = in[1]};
    struct relay_spec spec = spec_for(&sb, &s, sigfd);
    spec.input = in[1];
    spec.input_gated = true;
    spec.channel = chan[0];
    int status = run_with(&spec, 0, stdin_pipe[0]);
    ok(s.eof, "stdin's end reaches the stdin_eof hook");
    is_int((long long)s.eof_bytes, 5, "with the count of bytes relayed");
    is_int(status, 5, "the holder read the 5 bytes stdin held, after the channel said ready");
    close(stdin_pipe[0]);
    close(chan[0]);
    close(chan[1]);
    close(sb.pidfd);
}

static void test_exit_grace(int sigfd)
{
    int chan[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan) < 0)
        tap_bail("socketpair: %s", strerror(errno));
    struct sandbox sb = holder(wait_forever, NULL);
    if (write(chan[1], "x", 1) != 1)
        tap_bail("write: %s", strerror(errno));
    struct seen s = {.channel = chan[0], .close_on_eof = -1};
    struct relay_spec spec = spec_for(&sb, &s, sigfd);
    spec.channel = chan[0];
    spec.exit_grace_ms = 200;
    int status = relay_run(&spec);
    is_int(status, 5, "a reported exit status is returned when the holder does not end");
    ok(!s.exited, "without waiting for the holder");
    reap(&sb);
    close(chan[0]);
    close(chan[1]);
}

/* --- the verify server, asked by a child as `cordon verify NAME` --- */

static int no_start(struct verify_server *vs, void *ctx, const char *request, size_t len,
                    struct cordon_error *err)
{
    (void)vs, (void)ctx, (void)request, (void)len;
    return error_set(err, 0, "not reached");
}

static int no_agent(void *ctx, struct cordon_error *err)
{
    (void)ctx;
    return error_set(err, 0, "sandbox %s: the daemon does not name the container's process", NAME);
}

/* Asks op once the byte on go came (-1: at once); writes what the answer
 * said to out as one line: "ok <status json>" or "error <message>". */
static void ask(const char *op, int go, int out)
{
    char c;
    if (go >= 0 && read(go, &c, 1) != 1)
        _exit(1);
    struct cordon_error err = {0};
    int fd = -1;
    pid_t peer = 0;
    for (int i = 0; i < 200 && fd < 0; i++) {
        fd = control_connect(NAME, &peer, &err);
        if (fd < 0)
            usleep(10000);
    }
    json_t *answer = NULL;
    char line[1200];
    if (fd < 0 || control_request(fd, op, 5000, &answer, &err) < 0) {
        snprintf(line, sizeof(line), "error %s\n", err.message);
    } else {
        char *text = json_dumps(json_object_get(answer, "status"), JSON_COMPACT | JSON_SORT_KEYS);
        snprintf(line, sizeof(line), "ok %s\n", text ? text : "");
        free(text);
    }
    if (write(out, line, strlen(line)) < 0)
        _exit(1);
    if (fd >= 0)
        close(fd);
}

struct asker {
    int go, out, release, channel;
};

/* status; verify (refused by the backend's agent_pidfd); then the channel
 * is told to go, and verify again (refused: the channel is gone). */
static int ask_all(void *arg)
{
    struct asker *a = arg;
    ask("status", -1, a->out);
    ask("verify", -1, a->out);
    if (write(a->channel, "g", 1) != 1)
        return 1;
    ask("verify", a->go, a->out);
    return write(a->release, "r", 1) == 1 ? 0 : 1;
}

static void test_verify_server(int sigfd)
{
    int release[2], go[2], out[2], chan[2];
    if (pipe2(release, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan) < 0)
        tap_bail("pipe: %s", strerror(errno));
    struct sandbox sb = holder(wait_byte, &release[0]);
    struct asker a = {.go = go[0], .out = out[1], .release = release[1], .channel = chan[1]};
    struct sandbox client = holder(ask_all, &a);
    close(out[1]);
    struct seen s = {.channel = chan[0], .go = go[1], .close_on_eof = -1};
    struct relay_spec spec = spec_for(&sb, &s, sigfd);
    spec.shell = true;
    spec.channel = chan[0];
    static const struct verify_server_ops vops = {.probe_via = "the test's probe",
                                                  .init_name = "the test's init",
                                                  .deadline_ms = 1000,
                                                  .start = no_start,
                                                  .agent_pidfd = no_agent};
    spec.verify.ops = &vops;
    int status = relay_run(&spec);
    is_int(status, 3, "the holder ended when the client was done");
    reap(&client);
    char answers[4096] = "";
    size_t got = 0;
    ssize_t n;
    while (got < sizeof(answers) - 1 &&
           (n = read(out[0], answers + got, sizeof(answers) - 1 - got)) > 0)
        got += (size_t)n;
    answers[got] = '\0';
    char want[256];
    snprintf(want, sizeof(want),
             "ok {\"kind\":\"shell\",\"name\":\"%s\",\"pid\":%d,\"sandbox_pid\":%d,"
             "\"verifying\":false}\n",
             NAME, (int)getpid(), (int)sb.pid);
    bool status_ok = strstr(answers, want) != NULL;
    bool refused = strstr(answers, "\nerror the supervisor answered: sandbox " NAME
                                   ": the daemon does not name the container's process\n") != NULL;
    bool gone = strstr(answers, "\nerror the supervisor answered: the test's init does not "
                                "answer (its channel is closed)\n") != NULL;
    ok(status_ok, "status: the session's kind, name and pids, no audit running");
    ok(refused, "verify: the backend's refusal (agent_pidfd) is the answer");
    ok(gone, "verify after the channel is gone: refused, naming the init");
    if (!status_ok || !refused || !gone)
        tap_diag("the client saw: %s", answers);
    pid_t peer = 0;
    ok(control_connect(NAME, &peer, &(struct cordon_error){0}) < 0,
       "the control socket went with the relay");
    close(sb.pidfd);
    close(out[0]);
    close(chan[0]);
    close(chan[1]);
    close(go[0]);
    close(go[1]);
    close(release[0]);
    close(release[1]);
}

int main(void)
{
    is_int(relay_timeout_min(-1, -1), -1, "no deadline: poll waits");
    is_int(relay_timeout_min(-1, 30), 30, "one deadline");
    is_int(relay_timeout_min(50, 30), 30, "the nearer of two");
    is_int(relay_timeout_min(0, -1), 0, "a deadline passed: poll returns at once");
    siginfo_t si = {.si_code = CLD_EXITED, .si_status = 3};
    is_int(relay_exit_status(&si), 3, "an exit status is the user's");
    si = (siginfo_t){.si_code = CLD_KILLED, .si_status = SIGINT};
    is_int(relay_exit_status(&si), 130, "a signal: 128 + its number");

    char tmp[] = "/tmp/cordon-relay-test.XXXXXX";
    if (!mkdtemp(tmp))
        tap_bail("mkdtemp: %s", strerror(errno));
    setenv("XDG_RUNTIME_DIR", tmp, 1);
    struct cordon_error err = {0};
    if (state_acquire(NAME, "/", "ns", &lifecycle.owner, &err) < 0)
        tap_bail("state_acquire: %s", err.message);

    int sigfd = relay_signals_open(true);
    ok(sigfd >= 0, "the signalfd of the relayed signals");
    test_output_and_status(sigfd);
    test_signal(sigfd);
    test_stdin_gated(sigfd);
    test_exit_grace(sigfd);
    test_verify_server(sigfd);
    close(sigfd);

    state_release(&lifecycle.owner, true);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", tmp);
    return tap_done();
}
