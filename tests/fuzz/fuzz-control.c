/* Fuzz target for a session's control socket (supervisor/control.c): the
 * bytes a local peer sends, over a real connection to a real listener in a
 * temporary directory, pumped through control_dispatch() as the
 * supervisor's loop would. Any input must end in at most one answer line,
 * a JSON object with a boolean "ok" (and an "error" string when false),
 * then the connection closes: never a crash, leak or hang. Host,
 * test-only. */
#include "supervisor/control.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct control *ctl;
static int dir_fd = -1;

static void on_request(void *ctx, uint64_t conn, const char *op)
{
    (void)ctx;
    if (strcmp(op, "status") == 0 || strcmp(op, "verify") == 0)
        control_reply(ctl, conn, json_pack("{s:b, s:{}}", "ok", 1, op));
    else
        control_reply(ctl, conn, json_pack("{s:b, s:s}", "ok", 0, "error", "unknown op"));
}

static char dir[] = "/tmp/cordon-fuzz-control.XXXXXX";

static void teardown(void)
{
    control_close(ctl); /* unlinks the socket */
    close(dir_fd);
    rmdir(dir);
}

static void setup(void)
{
    if (ctl)
        return;
    struct cordon_error err = {0};
    if (!mkdtemp(dir))
        abort();
    dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0 || control_open(dir_fd, "fuzz", &ctl, &err) < 0) {
        fprintf(stderr, "fuzz-control: %s\n", err.message);
        abort();
    }
    atexit(teardown);
}

static int connect_client(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/self/fd/%d/%s", dir_fd,
             CONTROL_SOCKET_NAME);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
        abort();
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

static void pump(int wait_ms)
{
    struct pollfd p = {control_fd(ctl), POLLIN, 0};
    if (poll(&p, 1, wait_ms) > 0)
        control_dispatch(ctl, on_request, NULL);
}

static void check_answer(const char *out, size_t len)
{
    if (len == 0)
        return; /* closed without an answer (nothing was asked) */
    const char *nl = memchr(out, '\n', len);
    if (!nl || (size_t)(nl - out) + 1 != len)
        abort(); /* exactly one line */
    json_t *a = json_loadb(out, (size_t)(nl - out), 0, NULL);
    json_t *okv = json_object_get(a, "ok");
    if (!json_is_object(a) || !json_is_boolean(okv) ||
        (json_is_false(okv) && !json_is_string(json_object_get(a, "error"))))
        abort();
    json_decref(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    int fd = connect_client();
    size_t sent = 0;
    bool shut = false;
    char out[8192];
    size_t got = 0;
    for (int turn = 0; turn < 2000; turn++) {
        while (sent < size) {
            ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
            if (n <= 0) {
                if (n < 0 && errno == EAGAIN)
                    break;
                sent = size; /* refused: the answer may still be there */
                break;
            }
            sent += (size_t)n;
        }
        if (sent == size && !shut) {
            shutdown(fd, SHUT_WR);
            shut = true;
        }
        pump(turn < 10 ? 0 : 5);
        ssize_t n = recv(fd, out + got, sizeof(out) - got, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN))
            break;
        if (n > 0) {
            got += (size_t)n;
            if (got == sizeof(out))
                abort(); /* no answer is that long */
        }
        if (turn == 1999)
            abort(); /* the server neither answered nor closed */
    }
    close(fd);
    pump(0); /* let the server see the hang-up */
    check_answer(out, got);
    return 0;
}
