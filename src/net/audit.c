/* JSON-lines audit records for network decisions. Host context (proxy). */
#include "net/audit.h"
#include "util/log.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void net_audit_write(int fd, const struct net_audit_record *r)
{
    if (fd < 0)
        return;
    char when[LOG_UTC_LEN];
    log_utc_now(when);
    json_t *o = json_object();
    json_object_set_new(o, "time", json_string(when));
    if (r->session)
        json_object_set_new(o, "session", json_string(r->session));
    json_object_set_new(o, "protocol", json_string(r->protocol));
    json_object_set_new(o, "host", json_string(r->host ? r->host : ""));
    json_object_set_new(o, "port", json_integer(r->port));
    if (r->address)
        json_object_set_new(o, "address", json_string(r->address));
    json_object_set_new(o, "decision", json_string(r->allowed ? "allow" : "deny"));
    json_object_set_new(o, "reason", json_string(r->reason ? r->reason : ""));
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
    (void)w;
    free(full);
}
