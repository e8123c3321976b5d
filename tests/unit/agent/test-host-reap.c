/* The host agent (cordon-agent serve --host) ends what its bash calls left
 * running when the session ends: `cmd &`, nohup, setsid, a subshell's and a
 * double fork's background processes. Without --host (the sandbox's agent,
 * where the PID namespace does it) they are left alone, which this test
 * shows too, so it can tell the two apart. Runs serve.c in a forked child,
 * on the host, as the test's user. */
#include "proto/protocol.h"
#include "agent/serve.h"
#include "tap.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define NPIDS 5

/* Each background process writes its pid to pids.txt. The last one is
 * started by a second shell that exits at once (a double fork). */
static const char *leave_behind = "{\"command\":\"exec >/dev/null 2>&1; "
                                  "sleep 1000 & echo $! >> pids.txt; "
                                  "nohup sleep 1001 & echo $! >> pids.txt; "
                                  "setsid sleep 1002 & echo $! >> pids.txt; "
                                  "(sleep 1003 & echo $! >> pids.txt); "
                                  "sh -c 'sleep 1004 & echo $! >> pids.txt'; "
                                  "echo started\"}";

struct peer {
    int fd;
    struct frame_reader in;
    struct frame_writer out;
};

static void send_frame(struct peer *p, json_t *msg)
{
    struct cordon_error err;
    frame_writer_queue(&p->out, msg, &err);
    json_decref(msg);
    while (frame_writer_flush(&p->out, p->fd, &err) == 0) {
        struct pollfd pf = {p->fd, POLLOUT, 0};
        poll(&pf, 1, 1000);
    }
}

/* Waits for the result of call id; returns its "t" ("eof", "timeout"). */
static const char *wait_for(struct peer *p, json_int_t id)
{
    static char kind[16];
    for (int rounds = 0; rounds < 3000; rounds++) {
        struct cordon_error err;
        int status;
        json_t *msg;
        while ((msg = frame_reader_next(&p->in, &status, &err))) {
            const char *t = json_string_value(json_object_get(msg, "t"));
            bool done = t && strcmp(t, "update") != 0 && strcmp(t, "hello") != 0 &&
                        json_integer_value(json_object_get(msg, "id")) == id;
            if (done)
                snprintf(kind, sizeof(kind), "%s", t);
            json_decref(msg);
            if (done)
                return kind;
        }
        if (status < 0 || p->in.eof)
            return "eof";
        struct pollfd pf = {p->fd, POLLIN, 0};
        poll(&pf, 1, 10);
        frame_reader_fill(&p->in, p->fd, &err);
    }
    return "timeout";
}

/* Alive, and not a zombie waiting for a parent that is gone. */
static bool alive(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

static pid_t parent_of(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *paren = strrchr(buf, ')');
    char state;
    int ppid;
    if (!paren || sscanf(paren + 1, " %c %d", &state, &ppid) != 2)
        return -1;
    return ppid;
}

static int read_pids(pid_t *pids)
{
    FILE *f = fopen("pids.txt", "re");
    int n = 0;
    if (!f)
        return 0;
    while (n < NPIDS && fscanf(f, "%d", &pids[n]) == 1)
        n++;
    fclose(f);
    return n;
}

/* Runs one agent, one bash call that leaves processes behind, and a
 * shutdown frame (end_signal 0) or that signal. Fills pids, counts those
 * alive before the end and reparented to the agent. */
static void run_agent(bool host, int end_signal, pid_t *pids, int *count, int *reparented,
                      int *exit_status)
{
    unlink("pids.txt");
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        exit(1);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        close(sv[0]);
        _exit(agent_serve(sv[1], host));
    }
    close(sv[1]);
    struct peer p = {.fd = sv[0]};
    fcntl(p.fd, F_SETFL, O_NONBLOCK);
    json_t *args = json_loads(leave_behind, 0, NULL);
    send_frame(&p, json_pack("{s:s, s:i, s:s, s:o}", "t", "call", "id", 1, "tool", "bash", "args",
                             args ? args : json_object()));
    const char *kind = wait_for(&p, 1);
    if (strcmp(kind, "result") != 0)
        tap_diag("the bash call ended with %s", kind);
    *count = read_pids(pids);
    *reparented = 0;
    for (int i = 0; i < *count; i++) {
        /* The shells that started them are gone: a subreaper inherits. */
        if (alive(pids[i]) && parent_of(pids[i]) == child)
            (*reparented)++;
    }
    if (end_signal)
        kill(child, end_signal);
    else
        send_frame(&p, json_pack("{s:s}", "t", "shutdown"));
    int status = 0;
    waitpid(child, &status, 0);
    *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    frame_reader_free(&p.in);
    frame_writer_free(&p.out);
    close(p.fd);
}

int main(void)
{
    char dir[] = "/tmp/cordon-host-reap-XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) < 0)
        return 1;

    pid_t pids[NPIDS];
    int count, reparented, status;

    /* The sandbox's agent (not --host): the processes outlive it. */
    run_agent(false, 0, pids, &count, &reparented, &status);
    int left = 0;
    for (int i = 0; i < count; i++)
        left += alive(pids[i]);
    is_int(count, NPIDS, "without --host: the call started %d background processes", NPIDS);
    is_int(left, count, "without --host: they outlive the agent");
    for (int i = 0; i < count; i++)
        kill(pids[i], SIGKILL);

    /* The host agent: they are its descendants, and gone with it, whether
     * the supervisor ends it or a signal does. */
    static const struct {
        int signal;
        const char *how;
    } ends[] = {{0, "shutdown"}, {SIGTERM, "SIGTERM"}, {SIGHUP, "SIGHUP"}, {SIGINT, "SIGINT"}};
    for (size_t e = 0; e < ARRAY_SIZE(ends); e++) {
        run_agent(true, ends[e].signal, pids, &count, &reparented, &status);
        is_int(count, NPIDS, "--host, %s: the call started %d background processes", ends[e].how,
               NPIDS);
        is_int(reparented, NPIDS, "--host, %s: they outlive the call, reparented to the agent",
               ends[e].how);
        is_int(status, 0, "--host, %s: the agent exits 0", ends[e].how);
        left = 0;
        for (int tries = 0; tries < 100; tries++) {
            left = 0;
            for (int i = 0; i < count; i++)
                left += alive(pids[i]);
            if (!left)
                break;
            usleep(10000);
        }
        is_int(left, 0,
               "--host, %s: none outlives the agent (&, nohup, setsid, subshell, double fork)",
               ends[e].how);
        for (int i = 0; i < count; i++)
            kill(pids[i], SIGKILL);
    }

    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", dir);
    return tap_done();
}
