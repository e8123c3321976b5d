/* Egress secrets: placeholders, loading values, substitution (secrets.h).
 * Host context: the launcher makes placeholders, the proxy process loads
 * values and rewrites request heads from the sandbox (untrusted input,
 * bounded by the caller's buffers). */
#include "net/secrets.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define COMMAND_TIMEOUT_MS 30000

int net_secret_placeholder(const char *name, char out[NET_PLACEHOLDER_MAX],
                           struct cordon_error *err)
{
    unsigned char random[16];
    if (getrandom(random, sizeof(random), 0) != (ssize_t)sizeof(random))
        return error_set(err, errno ? errno : EIO, "secrets: getrandom");
    char hex[33];
    for (size_t i = 0; i < sizeof(random); i++)
        snprintf(hex + 2 * i, 3, "%02x", random[i]);
    if (snprintf(out, NET_PLACEHOLDER_MAX, "cordon-secret-%s-%s", name, hex) >= NET_PLACEHOLDER_MAX)
        return error_set(err, ENAMETOOLONG, "secret %s: the name is too long", name);
    return 0;
}

int net_secret_validate(const struct net_secret *s, struct cordon_error *err)
{
    if (strlen(s->name) > NET_SECRET_NAME_MAX)
        return error_set(err, ENAMETOOLONG, "secret %.80s: the name is longer than %d characters",
                         s->name, NET_SECRET_NAME_MAX);
    struct allowlist al = {0};
    for (size_t i = 0; i < s->host_count; i++) {
        if (allowlist_add(&al, s->hosts[i], err) < 0) {
            allowlist_free(&al);
            return error_prefix(err, "secret %s: hosts", s->name);
        }
    }
    allowlist_free(&al);
    return 0;
}

/* Reads FD to EOF into BUF (at most MAX bytes, then E2BIG), waiting until
 * DEADLINE_MS (monotonic) when TIMED. */
static ssize_t read_bounded(int fd, char *buf, size_t max, bool timed, int64_t deadline_ms)
{
    size_t used = 0;
    for (;;) {
        if (timed) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            int64_t left = deadline_ms - ((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
            if (left <= 0)
                return errno = ETIMEDOUT, -1;
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            int r = poll(&pfd, 1, (int)left);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                return errno = r == 0 ? ETIMEDOUT : errno, -1;
        }
        if (used == max) {
            char probe;
            ssize_t n = read(fd, &probe, 1);
            if (n < 0 && errno == EINTR)
                continue;
            if (n != 0)
                return errno = n > 0 ? E2BIG : errno, -1;
            return (ssize_t)used;
        }
        ssize_t n = read(fd, buf + used, max - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return (ssize_t)used;
        used += (size_t)n;
    }
}

static int64_t monotonic_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static ssize_t run_command(const struct net_secret *s, const char *text, char *buf, size_t max,
                           struct cordon_error *err)
{
    int out[2];
    if (pipe2(out, O_CLOEXEC) < 0)
        return error_set(err, errno, "secret %s: pipe", s->name);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(out[0]);
        close(out[1]);
        return error_set(err, e, "secret %s: fork", s->name);
    }
    if (pid == 0) {
        /* stdin is /dev/null already (the proxy's); stderr stays cordon's. */
        if (dup2(out[1], 1) < 0)
            _exit(127);
        signal(SIGPIPE, SIG_DFL);
        execl("/bin/sh", "sh", "-c", text, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    ssize_t n = read_bounded(out[0], buf, max, true, monotonic_ms() + COMMAND_TIMEOUT_MS);
    int e = errno;
    close(out[0]);
    if (n < 0)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (n < 0)
        return error_set(err, e, "secret %s: from command:%.200s: %s", s->name, text,
                         e == ETIMEDOUT ? "no end of output after 30 s"
                         : e == E2BIG   ? "output longer than 8192 bytes"
                                        : "reading its output");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return error_set(err, 0, "secret %s: from command:%.200s: the command failed (%s %d)",
                         s->name, text, WIFEXITED(status) ? "exit status" : "signal",
                         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return n;
}

int proxy_secret_load(const struct net_secret *s, struct proxy_secret *out,
                      struct cordon_error *err)
{
    *out = (struct proxy_secret){.spec = s};
    _cleanup_free_ char *buf = malloc(NET_SECRET_MAX + 1);
    if (!buf)
        return error_set(err, ENOMEM, "secret %s", s->name);
    ssize_t n;
    if (strncmp(s->from, "env:", 4) == 0) {
        const char *v = getenv(s->from + 4);
        if (!v)
            return error_set(err, ENOENT,
                             "secret %s: from %s: the variable is not set in cordon's environment",
                             s->name, s->from);
        n = (ssize_t)strlen(v);
        if (n > NET_SECRET_MAX)
            return error_set(err, E2BIG, "secret %s: from %s: longer than %d bytes", s->name,
                             s->from, NET_SECRET_MAX);
        memcpy(buf, v, (size_t)n);
    } else if (strncmp(s->from, "file:", 5) == 0) {
        _cleanup_close_ int fd = open(s->from + 5, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
            return error_set(err, errno, "secret %s: from %s", s->name, s->from);
        n = read_bounded(fd, buf, NET_SECRET_MAX, false, 0);
        if (n < 0) {
            explicit_bzero(buf, NET_SECRET_MAX + 1);
            return error_set(err, errno, "secret %s: from %s%s", s->name, s->from,
                             errno == E2BIG ? ": longer than 8192 bytes" : "");
        }
    } else if (strncmp(s->from, "command:", 8) == 0) {
        n = run_command(s, s->from + 8, buf, NET_SECRET_MAX, err);
        if (n < 0) {
            explicit_bzero(buf, NET_SECRET_MAX + 1);
            return -1;
        }
    } else {
        return error_set(err, EINVAL, "secret %s: from %s: unknown source", s->name, s->from);
    }
    size_t len = (size_t)n;
    if (len > 0 && buf[len - 1] == '\n')
        len--;
    if (len > 0 && buf[len - 1] == '\r')
        len--;
    if (len == 0 && n > 0)
        explicit_bzero(buf, (size_t)n);
    if (len == 0)
        return error_set(err, ENODATA, "secret %s: from %s: the value is empty", s->name, s->from);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c < 0x20 || c == 0x7f) {
            explicit_bzero(buf, NET_SECRET_MAX + 1);
            return error_set(err, EINVAL,
                             "secret %s: from %s: the value contains a line break or control "
                             "character; it cannot go into an HTTP request head",
                             s->name, s->from);
        }
    }
    buf[len] = '\0';
    for (size_t i = 0; i < s->host_count; i++) {
        if (allowlist_add(&out->hosts, s->hosts[i], err) < 0) {
            explicit_bzero(buf, NET_SECRET_MAX + 1);
            allowlist_free(&out->hosts);
            return error_prefix(err, "secret %s: hosts", s->name);
        }
    }
    out->value = TAKE_PTR(buf);
    out->value_length = len;
    out->placeholder_length = strlen(s->placeholder);
    return 0;
}

void proxy_secret_free(struct proxy_secret *s)
{
    if (s->value) {
        explicit_bzero(s->value, s->value_length);
        free(s->value);
    }
    allowlist_free(&s->hosts);
    *s = (struct proxy_secret){0};
}

/* The header line of HEAD that contains offset AT: true when it is a field
 * named NAME (never the request line). */
static bool in_header(const char *head, size_t at, const char *name)
{
    size_t start = at;
    while (start > 0 && head[start - 1] != '\n')
        start--;
    if (start == 0)
        return false; /* the request line */
    size_t n = strlen(name);
    if (strncasecmp(head + start, name, n) != 0 || head[start + n] != ':')
        return false;
    /* the placeholder is in the value, after the colon */
    return at > start + n;
}

static const char *find(const char *hay, size_t len, const char *needle, size_t nlen)
{
    return nlen <= len ? memmem(hay, len, needle, nlen) : NULL;
}

enum secrets_verdict secrets_apply(const struct proxy_secret *list, size_t count, const char *host,
                                   int port, bool plain, const char *head, size_t len, char *out,
                                   size_t out_size, size_t *out_length, char *reason,
                                   size_t reason_size)
{
    bool any = false;
    /* First decide: every placeholder present must be bound to this host
     * and, with header set, sit in that header's value. */
    for (size_t i = 0; i < count; i++) {
        const struct proxy_secret *s = &list[i];
        const char *p = head;
        while (
            (p = find(p, len - (size_t)(p - head), s->spec->placeholder, s->placeholder_length))) {
            struct allow_decision d;
            allowlist_check_request(&s->hosts, host, port, &d);
            if (!d.allowed) {
                snprintf(reason, reason_size,
                         "attempted leak: the placeholder of secret %s in a request to %s:%d; "
                         "it may be sent only to %s (secrets.hosts)",
                         s->spec->name, host, port, s->spec->hosts[0]);
                return SECRETS_LEAK;
            }
            if (s->spec->header && !in_header(head, (size_t)(p - head), s->spec->header)) {
                snprintf(reason, reason_size,
                         "attempted leak: the placeholder of secret %s outside its %s header "
                         "(secrets.header)",
                         s->spec->name, s->spec->header);
                return SECRETS_LEAK;
            }
            if (plain && !s->spec->plain_http) {
                snprintf(reason, reason_size,
                         "secret %s is not sent in cleartext: this is a plain http:// request "
                         "to %s:%d (set plain_http = true in its [[secrets]] entry to allow it)",
                         s->spec->name, host, port);
                return SECRETS_LEAK;
            }
            any = true;
            p += s->placeholder_length;
        }
    }
    if (!any)
        return SECRETS_NONE;
    if (!out)
        return SECRETS_SUBST;
    size_t o = 0, at = 0;
    while (at < len) {
        const struct proxy_secret *match = NULL;
        for (size_t i = 0; i < count && !match; i++) {
            const struct proxy_secret *s = &list[i];
            if (len - at >= s->placeholder_length &&
                memcmp(head + at, s->spec->placeholder, s->placeholder_length) == 0)
                match = s;
        }
        const char *src = match ? match->value : head + at;
        size_t n = match ? match->value_length : 1;
        if (o + n > out_size) {
            explicit_bzero(out, o);
            snprintf(reason, reason_size, "request head too large once the secrets are put in");
            return SECRETS_TOOBIG;
        }
        memcpy(out + o, src, n);
        o += n;
        at += match ? match->placeholder_length : 1;
    }
    *out_length = o;
    return SECRETS_SUBST;
}
