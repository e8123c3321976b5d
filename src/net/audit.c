/* JSON-lines audit records for network decisions. Host context (proxy). */
#include "net/audit.h"
#include "util/log.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What one proxy process (one session's) appends at most: the sandbox
 * decides how many connections it tries, and the log is the user's, shared
 * by every session. Past the cap one line says so and the rest is not
 * recorded (the decisions themselves are unchanged). */
#define NET_AUDIT_SESSION_MAX (16u << 20)
/* Strings the sandbox influences (the reason may quote its request). */
#define NET_AUDIT_FIELD_MAX 512

static size_t audit_written;

static json_t *bounded_string(const char *text)
{
    size_t n = strnlen(text, NET_AUDIT_FIELD_MAX + 1);
    return n > NET_AUDIT_FIELD_MAX ? json_stringn(text, NET_AUDIT_FIELD_MAX) : json_string(text);
}

void net_audit_write(int fd, const struct net_audit_record *r)
{
    if (fd < 0 || audit_written >= NET_AUDIT_SESSION_MAX)
        return;
    char when[LOG_UTC_LEN];
    log_utc_now(when);
    json_t *o = json_object();
    json_object_set_new(o, "time", json_string(when));
    if (r->session)
        json_object_set_new(o, "session", json_string(r->session));
    json_object_set_new(o, "protocol", json_string(r->protocol));
    json_object_set_new(o, "host", bounded_string(r->host ? r->host : ""));
    json_object_set_new(o, "port", json_integer(r->port));
    if (r->address)
        json_object_set_new(o, "address", json_string(r->address));
    json_object_set_new(o, "decision", json_string(r->allowed ? "allow" : "deny"));
    json_object_set_new(o, "reason", bounded_string(r->reason ? r->reason : ""));
    char *line = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(o);
    if (!line)
        return;
    size_t len = strlen(line);
    char *full = realloc(line, len + 2);
    if (!full) {
        free(line);
        return;
    }
    full[len] = '\n';
    full[len + 1] = '\0';
    ssize_t w = write(fd, full, len + 1);
    free(full);
    if (w > 0)
        audit_written += (size_t)w;
    if (audit_written >= NET_AUDIT_SESSION_MAX) {
        char note[512];
        int n = snprintf(note, sizeof(note),
                         "{\"time\":\"%s\",\"note\":\"this session wrote %u MiB of network "
                         "decisions: the rest of them are not recorded\"}\n",
                         when, NET_AUDIT_SESSION_MAX >> 20);
        if (n > 0 && (size_t)n < sizeof(note))
            w = write(fd, note, (size_t)n);
    }
}

void net_audit_write_backend(const char *path, const char *session, const char *backend,
                             const char *reason)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return;
    char when[LOG_UTC_LEN];
    log_utc_now(when);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o}", "time", when, "session", session, "event",
                          "backend", "backend", backend, "reason", bounded_string(reason));
    char *line = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    json_decref(o);
    if (line) {
        size_t len = strlen(line);
        line[len] = '\n'; /* json_dumps' NUL: the line is written by length */
        ssize_t w = write(fd, line, len + 1);
        (void)w;
        free(line);
    }
    close(fd);
}
