/* The vm backend's log keeper (vm-log.c): what the guest writes to its serial
 * console reaches the state directory capped, the newest output kept, and
 * the keeper exits once the writer is gone. The audit log cap of the state
 * directory (state.c) is here too: both bound what a sandbox makes the host
 * write. Host context. */
#include "backend/vm/vm-log.h"
#include "supervisor/state.h"
#include "tap.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static long long size_of(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static void tail_of(const char *dir, const char *name, char *out, size_t size)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    out[0] = '\0';
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    off_t end = lseek(fd, 0, SEEK_END);
    ssize_t n = pread(fd, out, size - 1, end > (off_t)size - 1 ? end - (off_t)size + 1 : 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
}

static void test_keeper(void)
{
    char dir[] = "/tmp/cordon-log-keeper.XXXXXX";
    if (!mkdtemp(dir)) {
        ok(0, "mkdtemp");
        return;
    }
    const char *const names[VM_LOG_STREAMS] = {"console.log", "qemu.log"};
    int fds[VM_LOG_STREAMS];
    pid_t pid = -1;
    struct cordon_error err = {0};
    const size_t cap = 256 * 1024;
    /* A descriptor of the caller's (the session lock, a socket): the keeper
     * must not keep it open. */
    int other[2];
    if (pipe2(other, O_CLOEXEC) < 0)
        abort();
    int rc = vm_log_keeper_start(dir, names, cap, fds, &pid, &err);
    is_int(rc, 0, "the keeper starts (%s)", err.message);
    if (rc < 0)
        return;
    close(other[1]);
    char byte;
    ok(read(other[0], &byte, 1) == 0, "the keeper holds none of the caller's other descriptors");
    close(other[0]);
    ok(size_of(dir, "console.log") == 0 && size_of(dir, "qemu.log") == 0,
       "both files exist, empty, before anything is written");
    /* 20 MiB into the console, as a guest looping on /dev/ttyS0 would. */
    char line[1024];
    memset(line, 'x', sizeof(line) - 1);
    line[sizeof(line) - 1] = '\n';
    size_t total = 0;
    while (total < (20u << 20)) {
        ssize_t w = write(fds[0], line, sizeof(line));
        if (w <= 0)
            break;
        total += (size_t)w;
    }
    const char *last = "the guest's last words\n";
    ssize_t w = write(fds[0], last, strlen(last));
    ok(w == (ssize_t)strlen(last), "the writer is never refused");
    const char *q = "qemu: a warning\n";
    w = write(fds[1], q, strlen(q));
    (void)w;
    close(fds[0]);
    close(fds[1]);
    int status = -1;
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the keeper exits once the writers are gone");
    long long cur = size_of(dir, "console.log"), old = size_of(dir, "console.log.1");
    ok(cur >= 0 && cur <= (long long)cap + 65536, "console.log stays under the cap (%lld bytes)",
       cur);
    ok(old > 0 && old <= (long long)cap + 65536, "console.log.1 holds the part before (%lld bytes)",
       old);
    ok(size_of(dir, "console.log.2") < 0, "no third file");
    char tail[128];
    tail_of(dir, "console.log", tail, sizeof(tail));
    ok(strstr(tail, "the guest's last words") != NULL, "the newest output is kept");
    is_int(size_of(dir, "qemu.log"), (long long)strlen(q), "QEMU's stream has a file of its own");
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", dir);
}

static void test_audit_cap(void)
{
    char dir[] = "/tmp/cordon-audit-cap.XXXXXX";
    if (!mkdtemp(dir)) {
        ok(0, "mkdtemp");
        return;
    }
    struct state_owner o = {.lock_fd = -1, .dir_fd = open(dir, O_PATH | O_DIRECTORY)};
    snprintf(o.name, sizeof(o.name), "cap-test");
    state_audit(&o, "bash", "sandbox", "ok", 1.5, 0);
    long long one = size_of(dir, "audit.jsonl");
    ok(one > 0 && one < 512, "a call is one short line (%lld bytes)", one);
    /* A session that made calls until the log is full. */
    char path[4096];
    snprintf(path, sizeof(path), "%s/audit.jsonl", dir);
    if (truncate(path, STATE_AUDIT_MAX) < 0)
        tap_diag("truncate failed");
    for (int i = 0; i < 1000; i++)
        state_audit(&o, "bash", "sandbox", "ok", 1.5, 0);
    long long after = size_of(dir, "audit.jsonl");
    ok(after > (long long)STATE_AUDIT_MAX && after < (long long)STATE_AUDIT_MAX + 512,
       "past the cap, calls are not recorded (%lld bytes past it)",
       after - (long long)STATE_AUDIT_MAX);
    /* The note follows the zeros of the truncated file: the last line. */
    char tail[256];
    long long past = after - (long long)STATE_AUDIT_MAX;
    tail_of(dir, "audit.jsonl", tail, past > 0 && past < 255 ? (size_t)past + 1 : sizeof(tail));
    ok(strstr(tail, "further calls are not recorded") != NULL, "one line says so");
    close(o.dir_fd);
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", dir);
}

int main(void)
{
    test_keeper();
    test_audit_cap();
    return tap_done();
}
