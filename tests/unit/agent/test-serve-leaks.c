/* The agent's tool server (src/agent/serve.c) under LeakSanitizer. Inside
 * the sandbox the leak checker cannot run: its exit-time scan needs ptrace,
 * which seccomp refuses (and the agent leaves with _exit). Here the same
 * serve loop runs on the host in a child process that returns normally, so
 * LSan scans it at exit: every tool, a timed-out and a cancelled bash call,
 * an unknown tool and a malformed call, then shutdown. The child's exit
 * status is LSan's verdict (23 when something leaked). Host, test-only. */
#include "proto/protocol.h"
#include "agent/serve.h"
#include "tap.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* Waits for the result or error of call id; returns its "t" and the first
 * text (copied into text). */
static const char *wait_for(struct peer *p, json_int_t id, char *text, size_t size)
{
    static char kind[16];
    kind[0] = '\0';
    text[0] = '\0';
    for (int rounds = 0; rounds < 3000; rounds++) {
        struct cordon_error err;
        int status;
        json_t *msg;
        while ((msg = frame_reader_next(&p->in, &status, &err))) {
            const char *t = json_string_value(json_object_get(msg, "t"));
            bool done = t && strcmp(t, "update") != 0 && strcmp(t, "hello") != 0 &&
                        json_integer_value(json_object_get(msg, "id")) == id;
            if (done) {
                snprintf(kind, sizeof(kind), "%s", t);
                json_t *first = json_array_get(json_object_get(msg, "content"), 0);
                const char *s = json_string_value(json_object_get(first, "text"));
                if (!s)
                    s = json_string_value(json_object_get(msg, "message"));
                snprintf(text, size, "%s", s ? s : "");
            }
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

static void call(struct peer *p, json_int_t id, const char *tool, const char *args_json)
{
    json_t *args = json_loads(args_json, 0, NULL);
    send_frame(p, json_pack("{s:s, s:I, s:s, s:o}", "t", "call", "id", id, "tool", tool, "args",
                            args ? args : json_object()));
}

int main(void)
{
    char dir[] = "/tmp/cordon-serve-leaks-XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) < 0)
        return 1;
    FILE *f = fopen("file.txt", "we");
    fputs("alpha\nbeta\ngamma\n", f);
    fclose(f);

    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return 1;
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        close(sv[0]);
        /* Return through exit(): the sanitizer's leak scan runs there. */
        exit(agent_serve(sv[1], false));
    }
    close(sv[1]);
    struct peer p = {.fd = sv[0]};
    fcntl(p.fd, F_SETFL, O_NONBLOCK);
    char text[4096];

    call(&p, 1, "read", "{\"path\":\"file.txt\"}");
    ok(strcmp(wait_for(&p, 1, text, sizeof(text)), "result") == 0 && strstr(text, "beta"), "read");
    call(&p, 2, "write", "{\"path\":\"new/out.txt\",\"content\":\"x\\n\"}");
    ok(strcmp(wait_for(&p, 2, text, sizeof(text)), "result") == 0, "write");
    call(&p, 3, "edit",
         "{\"path\":\"file.txt\",\"edits\":[{\"oldText\":\"beta\",\"newText\":\"BETA\"}]}");
    ok(strcmp(wait_for(&p, 3, text, sizeof(text)), "result") == 0, "edit");
    call(&p, 4, "ls", "{}");
    ok(strcmp(wait_for(&p, 4, text, sizeof(text)), "result") == 0 && strstr(text, "new/"), "ls");
    call(&p, 5, "find", "{\"pattern\":\"**/*.txt\"}");
    ok(strcmp(wait_for(&p, 5, text, sizeof(text)), "result") == 0 && strstr(text, "out.txt"),
       "find (a forked worker)");
    call(&p, 6, "grep", "{\"pattern\":\"BETA\"}");
    ok(strcmp(wait_for(&p, 6, text, sizeof(text)), "result") == 0 && strstr(text, "BETA"),
       "grep (a forked worker)");
    call(&p, 7, "bash", "{\"command\":\"echo hi; echo err >&2\"}");
    ok(strcmp(wait_for(&p, 7, text, sizeof(text)), "result") == 0 && strstr(text, "hi"), "bash");
    call(&p, 8, "bash", "{\"command\":\"sleep 30\",\"timeout\":1}");
    ok(strcmp(wait_for(&p, 8, text, sizeof(text)), "result") == 0 && strstr(text, "timed out"),
       "bash timeout");
    call(&p, 9, "bash", "{\"command\":\"sleep 30\"}");
    usleep(100000);
    send_frame(&p, json_pack("{s:s, s:i}", "t", "cancel", "id", 9));
    ok(strcmp(wait_for(&p, 9, text, sizeof(text)), "result") == 0, "bash cancelled");
    call(&p, 10, "frobnicate", "{}");
    ok(strcmp(wait_for(&p, 10, text, sizeof(text)), "error") == 0, "unknown tool");
    call(&p, 11, "read", "{\"path\":\"/nonexistent/x\"}");
    ok(strcmp(wait_for(&p, 11, text, sizeof(text)), "result") == 0 && strstr(text, "ENOENT"),
       "an error result");
    send_frame(&p, json_pack("{s:s}", "t", "shutdown"));

    int status = 0;
    waitpid(child, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
       "the serve loop exits 0 and LeakSanitizer finds no leak (status %d)",
       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    frame_reader_free(&p.in);
    frame_writer_free(&p.out);
    close(p.fd);
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", dir);
    return tap_done();
}
