/* pi's bash tool: spawning, the output accumulator (output-accumulator.js:
 * streaming UTF-8 decode, rolling tail, spill file) and the result texts of
 * bash.js. See bash.h for the life of a call. Sandbox (cordon-agent) or
 * host context; the child between fork and exec only makes syscalls on
 * data prepared before the fork. */
#include "agent/tools/bash.h"
#include "agent/tools/fileio.h"

#include "agent/tools/args.h"
#include "agent/tools/js.h"
#include "agent/tools/path.h"
#include "agent/tools/pin.h"
#include "agent/tools/registry.h"
#include "agent/tools/truncate.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define BASH_MAX_LINES      TRUNCATE_MAX_LINES
#define BASH_MAX_BYTES      TRUNCATE_MAX_BYTES
#define BASH_ROLLING        (BASH_MAX_BYTES * 2) /* maxRollingBytes */
#define BASH_READ_CHUNK     65536
#define BASH_READS_PER_CALL 16
/* Node's setTimeout: delays above 2^31-1 ms fire after 1 ms. */
#define NODE_TIMEOUT_MAX 2147483647.0

struct bash_output {
    char *tail;
    size_t tail_len, tail_cap;
    bool tail_starts_at_line_boundary;
    uint64_t total_raw, total_decoded, total_lines, current_line_bytes;
    unsigned char pending[4];
    size_t pending_len;
    char *raw; /* raw bytes kept until the spill file exists (< 50KB + a chunk) */
    size_t raw_len, raw_cap;
    int temp_fd;
    char *temp_path;
    const char *tmpdir;
    bool failed; /* out of memory */
};

struct tool_bash_call {
    pid_t pid;
    int out_fd;
    int pidfd;
    bool eof;
    bool timed_out, aborted;
    int64_t deadline_ms;
    char timeout_text[64];
    struct bash_output out;
};

int64_t tool_bash_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 4096;
    while (c < need)
        c *= 2;
    char *p = realloc(*buf, c);
    if (!p)
        return -1;
    *buf = p;
    *cap = c;
    return 0;
}

static void output_init(struct bash_output *o, const char *tmpdir)
{
    *o = (struct bash_output){
        .tail_starts_at_line_boundary = true,
        .total_lines = 1,
        .temp_fd = -1,
        .tmpdir = tmpdir && *tmpdir ? tmpdir : "/tmp",
    };
}

static void output_free(struct bash_output *o)
{
    free(o->tail);
    free(o->raw);
    free(o->temp_path);
    if (o->temp_fd >= 0)
        close(o->temp_fd);
    o->tail = o->raw = o->temp_path = NULL;
    o->temp_fd = -1;
}

static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* like a failed write stream: the result still comes */
        buf += n;
        len -= (size_t)n;
    }
}

static void ensure_temp_file(struct bash_output *o)
{
    if (o->temp_path)
        return;
    unsigned char id[8];
    if (getrandom(id, sizeof(id), 0) != sizeof(id)) {
        for (size_t i = 0; i < sizeof(id); i++)
            id[i] = (unsigned char)(rand() & 0xff);
    }
    if (asprintf(&o->temp_path, "%s/pi-bash-%02x%02x%02x%02x%02x%02x%02x%02x.log", o->tmpdir, id[0],
                 id[1], id[2], id[3], id[4], id[5], id[6], id[7]) < 0) {
        o->temp_path = NULL;
        o->failed = true;
        return;
    }
    o->temp_fd = open(o->temp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (o->temp_fd >= 0 && o->raw_len)
        write_all(o->temp_fd, o->raw, o->raw_len);
    free(o->raw);
    o->raw = NULL;
    o->raw_len = o->raw_cap = 0;
}

static bool should_use_temp_file(const struct bash_output *o)
{
    return o->total_raw > BASH_MAX_BYTES || o->total_decoded > BASH_MAX_BYTES ||
           o->total_lines > BASH_MAX_LINES;
}

/* trimTail(): keep the last maxRollingBytes, starting at a character. */
static void trim_tail(struct bash_output *o)
{
    if (o->tail_len <= BASH_ROLLING)
        return;
    size_t start = o->tail_len - BASH_ROLLING;
    while (start < o->tail_len && ((unsigned char)o->tail[start] & 0xc0) == 0x80)
        start++;
    if (start > 0)
        o->tail_starts_at_line_boundary = o->tail[start - 1] == '\n';
    memmove(o->tail, o->tail + start, o->tail_len - start);
    o->tail_len -= start;
}

static void append_decoded(struct bash_output *o, const char *text, size_t len)
{
    if (len == 0)
        return;
    o->total_decoded += len;
    if (grow(&o->tail, &o->tail_cap, o->tail_len + len + 1) < 0) {
        o->failed = true;
        return;
    }
    memcpy(o->tail + o->tail_len, text, len);
    o->tail_len += len;
    if (o->tail_len > BASH_ROLLING * 2)
        trim_tail(o);
    size_t newlines = 0;
    const char *last = NULL;
    for (const char *p = text; (p = memchr(p, '\n', len - (size_t)(p - text))); p++) {
        newlines++;
        last = p;
    }
    if (newlines == 0) {
        o->current_line_bytes += len;
    } else {
        o->total_lines += newlines;
        o->current_line_bytes = len - (size_t)(last + 1 - text);
    }
}

static void decode_and_append(struct bash_output *o, const char *buf, size_t len, bool flush)
{
    size_t keep = flush ? 0 : utf8_incomplete_tail(buf, len);
    size_t text_len = 0;
    _cleanup_free_ char *text = utf8_sanitize(buf, len - keep, &text_len);
    if (!text) {
        o->failed = true;
        return;
    }
    append_decoded(o, text, text_len);
    memcpy(o->pending, buf + len - keep, keep);
    o->pending_len = keep;
}

static void output_append(struct bash_output *o, const char *data, size_t len)
{
    o->total_raw += len;
    if (o->pending_len) {
        _cleanup_free_ char *joined = malloc(o->pending_len + len);
        if (!joined) {
            o->failed = true;
            return;
        }
        memcpy(joined, o->pending, o->pending_len);
        memcpy(joined + o->pending_len, data, len);
        decode_and_append(o, joined, o->pending_len + len, false);
    } else {
        decode_and_append(o, data, len, false);
    }
    if (o->temp_path || should_use_temp_file(o)) {
        ensure_temp_file(o);
        if (o->temp_fd >= 0)
            write_all(o->temp_fd, data, len);
    } else if (len > 0) {
        if (grow(&o->raw, &o->raw_cap, o->raw_len + len) < 0) {
            o->failed = true;
            return;
        }
        memcpy(o->raw + o->raw_len, data, len);
        o->raw_len += len;
    }
}

static void output_finish(struct bash_output *o)
{
    if (o->pending_len) {
        unsigned char rest[4];
        size_t n = o->pending_len;
        memcpy(rest, o->pending, n);
        o->pending_len = 0;
        decode_and_append(o, (const char *)rest, n, true);
    }
    if (should_use_temp_file(o))
        ensure_temp_file(o);
}

/* snapshot(): pi's truncation of the tail, with the totals of the whole
 * output. t.content points into o->tail. */
static void output_snapshot(struct bash_output *o, bool persist, struct truncation *t)
{
    const char *text = o->tail ? o->tail : "";
    size_t len = o->tail_len;
    if (!o->tail_starts_at_line_boundary) {
        const char *nl = memchr(text, '\n', len);
        if (nl) {
            len -= (size_t)(nl + 1 - text);
            text = nl + 1;
        }
    }
    truncate_tail(text, len, BASH_MAX_LINES, BASH_MAX_BYTES, t);
    bool truncated = o->total_lines > BASH_MAX_LINES || o->total_decoded > BASH_MAX_BYTES;
    enum truncate_by by = TRUNCATE_BY_NONE;
    if (truncated) {
        by = t->truncated_by != TRUNCATE_BY_NONE
                 ? t->truncated_by
                 : (o->total_decoded > BASH_MAX_BYTES ? TRUNCATE_BY_BYTES : TRUNCATE_BY_LINES);
    }
    t->truncated = truncated;
    t->truncated_by = by;
    t->total_lines = o->total_lines;
    t->total_bytes = o->total_decoded;
    t->max_lines = BASH_MAX_LINES;
    t->max_bytes = BASH_MAX_BYTES;
    if (persist && truncated)
        ensure_temp_file(o);
}

int tool_bash_fd(const struct tool_bash_call *call)
{
    return call->eof ? -1 : call->out_fd;
}

int tool_bash_pidfd(const struct tool_bash_call *call)
{
    return call->pidfd;
}

pid_t tool_bash_pid(const struct tool_bash_call *call)
{
    return call->pid;
}

int64_t tool_bash_deadline(const struct tool_bash_call *call)
{
    return call->deadline_ms;
}

static void kill_group(struct tool_bash_call *call)
{
    if (call->pid <= 0)
        return;
    /* killProcessTree(): the group, else the shell alone. */
    if (kill(-call->pid, SIGKILL) < 0)
        kill(call->pid, SIGKILL);
}

void tool_bash_on_deadline(struct tool_bash_call *call)
{
    call->timed_out = true;
    call->deadline_ms = -1;
    kill_group(call);
}

void tool_bash_cancel(struct tool_bash_call *call)
{
    call->aborted = true;
    kill_group(call);
}

int tool_bash_on_readable(struct tool_bash_call *call)
{
    if (call->eof)
        return 1;
    char buf[BASH_READ_CHUNK];
    for (int i = 0; i < BASH_READS_PER_CALL; i++) {
        ssize_t n = read(call->out_fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n < 0)
            return -errno;
        if (n == 0) {
            call->eof = true;
            close(call->out_fd);
            call->out_fd = -1;
            return 1;
        }
        output_append(&call->out, buf, (size_t)n);
    }
    return 0;
}

/* {content:[{type:"text",text}]} with details (stolen, may be NULL). */
static int text_result(struct tool_result *res, const char *text, size_t len, json_t *details,
                       bool is_error)
{
    if (is_error) {
        json_decref(details);
        details = json_object();
    }
    if (tool_result_text_len(res, text, len, details) < 0)
        return -1;
    res->is_error = is_error;
    return 0;
}

int tool_bash_partial(struct tool_bash_call *call, struct tool_result *res)
{
    struct truncation t;
    output_snapshot(&call->out, true, &t);
    json_t *details = json_object();
    if (!details)
        return -1;
    if (t.truncated)
        json_object_set_new(details, "truncation", truncation_to_json(&t));
    if (call->out.temp_path)
        json_object_set_new(details, "fullOutputPath", json_string(call->out.temp_path));
    return text_result(res, t.content, t.content_len, details, false);
}

void tool_bash_free(struct tool_bash_call *call)
{
    if (!call)
        return;
    if (call->pid > 0) {
        kill_group(call);
        while (waitpid(call->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (call->out_fd >= 0)
        close(call->out_fd);
    if (call->pidfd >= 0)
        close(call->pidfd);
    output_free(&call->out);
    free(call);
}

int tool_bash_finish(struct tool_bash_call *call, int wait_status, struct tool_result *res)
{
    call->pid = 0; /* reaped by the caller */
    /* Whatever is still buffered in the pipe arrived before the end. */
    while (!call->eof && tool_bash_on_readable(call) == 0) {
        struct pollfd p = {.fd = call->out_fd, .events = POLLIN};
        if (poll(&p, 1, 0) <= 0)
            break;
    }
    struct bash_output *o = &call->out;
    output_finish(o);
    struct truncation t;
    output_snapshot(o, true, &t);
    if (o->temp_fd >= 0) {
        close(o->temp_fd);
        o->temp_fd = -1;
    }
    int ret = 0;
    if (o->failed) {
        ret = tool_result_error(res, "out of memory");
        tool_bash_free(call);
        return ret;
    }

    bool use_empty = call->aborted || call->timed_out;
    _cleanup_free_ char *text = NULL;
    size_t text_len = 0;
    FILE *f = open_memstream(&text, &text_len);
    if (!f) {
        tool_bash_free(call);
        return -1;
    }
    if (t.content_len)
        fwrite(t.content, 1, t.content_len, f);
    else if (!use_empty)
        fputs("(no output)", f);
    json_t *details = NULL;
    if (t.truncated) {
        const char *full = o->temp_path ? o->temp_path : "undefined";
        size_t start_line = t.total_lines - t.output_lines + 1;
        size_t end_line = t.total_lines;
        char a[32], b[32];
        if (t.last_line_partial)
            fprintf(f, "\n\n[Showing last %s of line %zu (line is %s). Full output: %s]",
                    format_size(t.output_bytes, a, sizeof(a)), end_line,
                    format_size(o->current_line_bytes, b, sizeof(b)), full);
        else if (t.truncated_by == TRUNCATE_BY_LINES)
            fprintf(f, "\n\n[Showing lines %zu-%zu of %zu. Full output: %s]", start_line, end_line,
                    t.total_lines, full);
        else
            fprintf(f, "\n\n[Showing lines %zu-%zu of %zu (%s limit). Full output: %s]", start_line,
                    end_line, t.total_lines, format_size(BASH_MAX_BYTES, a, sizeof(a)), full);
        details = json_object();
        json_object_set_new(details, "truncation", truncation_to_json(&t));
        if (o->temp_path)
            json_object_set_new(details, "fullOutputPath", json_string(o->temp_path));
    }
    const char *status = NULL;
    char status_buf[128];
    if (call->aborted) {
        status = "Command aborted";
    } else if (call->timed_out) {
        snprintf(status_buf, sizeof(status_buf), "Command timed out after %s seconds",
                 call->timeout_text);
        status = status_buf;
    } else if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) != 0) {
        /* A shell killed by a signal has exit code null in Node: not an error. */
        snprintf(status_buf, sizeof(status_buf), "Command exited with code %d",
                 WEXITSTATUS(wait_status));
        status = status_buf;
    }
    if (status) {
        if (ftell(f) > 0)
            fputs("\n\n", f);
        fputs(status, f);
    }
    /* In the sandbox a read-only path is cordon's doing: say so, or the
     * agent (and its user) reads EROFS as a broken disk. */
    /* (git replaces a file by renaming a lock over it: over a read-only
     * bind that is EBUSY.) */
    bool refused = fflush(f) == 0 && text && tool_refusal_hint(EROFS)[0] &&
                   (strstr(text, "Read-only file system") ||
                    (strstr(text, "Device or resource busy") && strstr(text, ".git")));
    if (refused)
        fputs("\n\ncordon: a path this command wrote to is read-only in the sandbox: cordon keeps "
              "it host-owned (git metadata, .cordon.toml, a protected path, /usr, /etc; see "
              "`cordon config --explain`)",
              f);
    if (fclose(f) != 0) {
        json_decref(details);
        tool_bash_free(call);
        return -1;
    }
    ret = text_result(res, text, text_len, details, status != NULL);
    tool_bash_free(call);
    return ret;
}

/* Child, after fork: only syscalls on prepared data, then exec. */
static void __attribute__((noreturn))
child_exec_shell(const char *cwd, int cwd_fd, int out_fd, int null_fd, char *const argv[],
                 char *const envp[])
{
    setsid();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* exec keeps ignored signals ignored; the command gets the defaults. */
    static const int reset[] = {SIGPIPE, SIGCHLD, SIGINT, SIGQUIT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof(reset) / sizeof(reset[0]); i++)
        signal(reset[i], SIG_DFL);
    /* An approved host call starts in the very directory that was approved
     * (pin.h): a symlink swapped in for the cwd's path does not move it. */
    if (cwd_fd >= 0 ? fchdir(cwd_fd) < 0 : chdir(cwd) < 0)
        _exit(126);
    if (dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0)
        _exit(126);
    /* Nothing of the agent's leaks into the command, CLOEXEC or not. */
    close_range(3, ~0U, 0);
    execve(argv[0], argv, envp);
    _exit(127);
}

int tool_bash_start(const struct tool_env *env, json_t *args, struct tool_bash_call **out,
                    struct tool_result *early)
{
    *out = NULL;
    const char *command = NULL;
    double timeout = 0;
    if (tool_arg_string("bash", args, "command", true, &command, NULL, early) < 0)
        return 0;
    int has_timeout = tool_arg_number("bash", args, "timeout", &timeout, early);
    if (has_timeout < 0)
        return 0;
    struct stat st;
    if (stat(env->cwd, &st) < 0)
        return tool_result_error(
            early, "Working directory does not exist: %s\nCannot execute bash commands.", env->cwd);

    struct tool_bash_call *call = calloc(1, sizeof(*call));
    if (!call)
        return tool_result_error(early, "out of memory");
    call->out_fd = -1;
    call->pidfd = -1;
    call->deadline_ms = -1;
    output_init(&call->out, env->tmpdir);
    if (has_timeout > 0 && timeout > 0) {
        double ms = timeout * 1000;
        if (!(ms >= 1 && ms <= NODE_TIMEOUT_MAX))
            ms = 1;
        call->deadline_ms = tool_bash_now_ms() + (int64_t)ms;
        js_number_string(timeout, call->timeout_text, sizeof(call->timeout_text));
    }

    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) < 0) {
        int e = errno;
        tool_bash_free(call);
        tool_result_error(early, "spawn /bin/bash: %s", strerror(e));
        return -1;
    }
    _cleanup_close_ int write_end = pipe_fds[1];
    call->out_fd = pipe_fds[0];
    _cleanup_close_ int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0) {
        int e = errno;
        tool_bash_free(call);
        tool_result_error(early, "spawn /bin/bash: %s", strerror(e));
        return -1;
    }
    char *argv[] = {(char *)"/bin/bash", (char *)"-c", (char *)command, NULL};
    char *const *envp = env->bash_environ ? env->bash_environ : environ;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        tool_bash_free(call);
        tool_result_error(early, "spawn /bin/bash: %s", strerror(e));
        return -1;
    }
    if (pid == 0)
        child_exec_shell(env->cwd, env->pin ? env->pin->cwd_fd : -1, write_end, null_fd, argv,
                         envp);
    call->pid = pid;
    /* No setpgid(pid, pid) here: a group leader cannot setsid(). A kill
     * that comes before the child's setsid() finds no group and falls back
     * to the shell alone, which has no children yet. */
    fcntl(call->out_fd, F_SETFL, fcntl(call->out_fd, F_GETFL) | O_NONBLOCK);
#ifdef SYS_pidfd_open
    call->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (call->pidfd >= 0)
        fcntl(call->pidfd, F_SETFD, FD_CLOEXEC);
#endif
    *out = call;
    return 0;
}

int tool_bash_run(const struct tool_env *env, json_t *args, struct tool_result *res)
{
    struct tool_bash_call *call = NULL;
    int r = tool_bash_start(env, args, &call, res);
    if (r < 0 || !call)
        return 0;
    int status = 0;
    bool exited = false;
    int64_t exit_at = 0;
    for (;;) {
        if (!exited) {
            pid_t w = waitpid(call->pid, &status, WNOHANG);
            if (w == call->pid) {
                exited = true;
                exit_at = tool_bash_now_ms();
            }
        }
        int64_t now = tool_bash_now_ms();
        if (exited && (call->eof || now - exit_at >= TOOL_BASH_EXIT_GRACE_MS))
            break;
        int64_t wait_ms = 1000;
        if (call->deadline_ms >= 0)
            wait_ms = call->deadline_ms > now ? call->deadline_ms - now : 0;
        if (exited) {
            int64_t left = TOOL_BASH_EXIT_GRACE_MS - (now - exit_at);
            wait_ms = left < wait_ms ? left : wait_ms;
        }
        struct pollfd fds[2];
        nfds_t n = 0;
        if (!call->eof)
            fds[n++] = (struct pollfd){.fd = call->out_fd, .events = POLLIN};
        if (!exited && call->pidfd >= 0)
            fds[n++] = (struct pollfd){.fd = call->pidfd, .events = POLLIN};
        else if (!exited && wait_ms > 20)
            wait_ms = 20; /* no pidfd: look at the child now and then */
        int p = poll(fds, n, (int)(wait_ms < 0 ? 0 : wait_ms));
        if (p < 0 && errno != EINTR)
            break;
        if (!call->eof && n > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
            if (tool_bash_on_readable(call) < 0)
                call->eof = true;
        if (call->deadline_ms >= 0 && tool_bash_now_ms() >= call->deadline_ms && !exited)
            tool_bash_on_deadline(call);
    }
    if (!exited) {
        while (waitpid(call->pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    return tool_bash_finish(call, status, res);
}
