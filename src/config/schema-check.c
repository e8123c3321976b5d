/* The configuration schema's validators (schema.c): list items (tool
 * names, paths, hosts, environment names, images, HTTP rules) and port
 * specifications, each returning the reason a value is refused. Host
 * context, on untrusted input (a workspace file is agent-writable). */
#include "config/schema-internal.h"
#include "config/config-internal.h"
#include "net/allowlist.h"
#include "util/cleanup.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- item validation ---------- */

const char *check_tool(const char *item)
{
    for (int i = 0; schema_tool_names[i]; i++)
        if (strcmp(item, schema_tool_names[i]) == 0)
            return NULL;
    return "not a tool (expected read, write, edit, ls, find, grep or bash)";
}

const char *check_relative_path(const char *item)
{
    if (!*item)
        return "empty path";
    if (item[0] == '/')
        return "must be relative to the workspace";
    if (strlen(item) >= PATH_MAX)
        return "path too long";
    const char *part = item;
    for (;;) {
        const char *end = strchr(part, '/');
        size_t length = end ? (size_t)(end - part) : strlen(part);
        if (length == 0 || (length == 1 && part[0] == '.') ||
            (length == 2 && part[0] == '.' && part[1] == '.'))
            return "must be a normalised relative path (no empty, '.' or '..' parts)";
        if (!end)
            return NULL;
        part = end + 1;
    }
}

/* etc.extra: a path below /etc, at most 63 bytes (the /etc cache's entry
 * names), normalised. What holds a host's passwords or keys is never shown,
 * whatever a layer asks: those are the files cordon verify promises absent. */
const char *check_etc_entry(const char *item)
{
    static const char *const never[] = {"shadow",      "shadow-", "gshadow",
                                        "gshadow-",    "sudoers", "sudoers.d",
                                        "ssl/private", "cordon",  "security/opasswd"};
    if (item[0] == '/')
        return "must be relative to /etc (\"gitconfig\", \"apt/auth.conf\")";
    const char *why = check_relative_path(item);
    if (why)
        return why;
    if (strlen(item) >= 64)
        return "path too long (at most 63 bytes)";
    for (size_t i = 0; i < ARRAY_SIZE(never); i++) {
        size_t n = strlen(never[i]);
        if (strncmp(item, never[i], n) == 0 && (item[n] == '\0' || item[n] == '/'))
            return "never shown in a sandbox (host passwords, sudo rules, private keys, cordon's "
                   "policy)";
    }
    if (strncmp(item, "ssh/", 4) == 0 && strstr(item + 4, "_key"))
        return "never shown in a sandbox (ssh host keys)";
    return NULL;
}

const char *check_absolute_path(const char *item)
{
    if (item[0] != '/')
        return "must be an absolute path";
    if (strcmp(item, "/") == 0)
        return NULL;
    return check_relative_path(item + 1) ? "must be a normalised absolute path (no empty, '.' or "
                                           "'..' parts, no trailing '/')"
                                         : NULL;
}

bool cfg_env_name_protected(const char *name)
{
    static const char *const prefixes[] = {"DOCKER_", "COMPOSE_", "LD_", "BASH_FUNC_", NULL};
    static const char *const exact[] = {
        "BASH_ENV",
        "ENV",
        "PATH",
        "CDPATH",
        "IFS",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PROMPT_COMMAND",
        "GCONV_PATH",
        "LOCPATH",
        "NLSPATH",
        "HOSTALIASES",
        "RESOLV_HOST_CONF",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "PYTHONHOME",
        "PERL5LIB",
        "PERL5OPT",
        "PERLLIB",
        "RUBYLIB",
        "RUBYOPT",
        "NODE_OPTIONS",
        "NODE_PATH",
        "JAVA_TOOL_OPTIONS",
        "GIT_EXEC_PATH",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_CONFIG_GLOBAL",
        "SSH_AUTH_SOCK",
        "XDG_RUNTIME_DIR",
        "DBUS_SESSION_BUS_ADDRESS",
        "MALLOC_CHECK_",
        "TMPDIR",
        NULL,
    };
    for (int i = 0; prefixes[i]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    for (int i = 0; exact[i]; i++)
        if (strcmp(name, exact[i]) == 0)
            return true;
    return false;
}

const char *check_env_name(const char *item)
{
    if (!*item || !(isalpha((unsigned char)item[0]) || item[0] == '_'))
        return "not an environment variable name";
    for (const char *c = item; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '_'))
            return "not an environment variable name";
    if (cfg_env_name_protected(item))
        return "is protected and can never be forwarded into the sandbox";
    return NULL;
}

/* "127.0.0.1:PORT" or "localhost:PORT": a service on the host's loopback,
 * reachable inside at the same address (the sandbox's 127.0.0.1). */
const char *check_host_service(const char *item)
{
    const char *port = NULL;
    if (strncmp(item, "127.0.0.1:", 10) == 0)
        port = item + 10;
    else if (strncmp(item, "localhost:", 10) == 0)
        port = item + 10;
    if (!port || !*port)
        return "expected 127.0.0.1:PORT (a service on the host's loopback)";
    char *end;
    long v = strtol(port, &end, 10);
    if (*end || v < 1 || v > 65535)
        return "port must be 1-65535";
    if (v == 3128)
        return "port 3128 is cordon's proxy inside the sandbox";
    return NULL;
}

const char *check_host(const char *item)
{
    const char *bad = "not a host name (expected name, *.domain or IP address, optional :port)";
    if (item[0] == '@')
        return allowlist_preset(item) ? NULL
                                      : "is not a preset (known: @npm, @pypi, @crates, @go, "
                                        "@debian, @github)";
    if (strstr(item, "://"))
        return "is a URL: an allowlist entry is a host, not a URL (the name and an optional "
               ":port, e.g. example.com or example.com:8443)";
    char host[256];
    if (strlen(item) >= sizeof(host) || !*item)
        return bad;
    snprintf(host, sizeof(host), "%s", item);
    char *colon = strrchr(host, ':');
    if (colon && !strchr(host, '[') && strchr(host, ':') == colon) {
        char *end;
        long port = strtol(colon + 1, &end, 10);
        if (*end || port < 1 || port > 65535 || colon[1] == '\0')
            return "port must be 1-65535";
        *colon = '\0';
    }
    unsigned char address[16];
    if (inet_pton(AF_INET, host, address) == 1 || inet_pton(AF_INET6, host, address) == 1)
        return NULL;
    const char *name = host;
    if (strncmp(name, "*.", 2) == 0)
        name += 2;
    if (!*name)
        return bad;
    for (const char *c = name; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '-' || *c == '.'))
            return bad;
    if (name[0] == '.' || name[0] == '-' || strstr(name, ".."))
        return bad;
    return NULL;
}

const char *check_sandbox_name(const char *item)
{
    size_t length = strlen(item);
    if (length == 0 || length > 63 || !isalnum((unsigned char)item[0]))
        return "must be 1-63 characters: letters, digits, '_', '.', '-', starting with a letter "
               "or digit";
    for (const char *c = item; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '.' || *c == '-'))
            return "must be 1-63 characters: letters, digits, '_', '.', '-', starting with a "
                   "letter or digit";
    return NULL;
}

/* "METHOD host/path" (src/net/tls.c parses it again in the proxy). */
const char *check_http_rule(const char *item)
{
    const char *sp = strchr(item, ' ');
    if (!sp || sp == item || sp - item > 15 || !strchr(sp + 1, '/') || sp[1] == '/' ||
        strpbrk(sp + 1, " \t?#"))
        return "must be \"METHOD host/path\" (GET api.example.com/repos/*)";
    for (const char *m = item; m < sp; m++) {
        if (!((*m >= 'A' && *m <= 'Z') || (*m == '*' && sp - item == 1)))
            return "must start with an upper-case method (GET, POST) or *";
    }
    return NULL;
}

/* The docker backend talks to a daemon over a unix socket only: a TCP
 * daemon would need TLS material cordon does not manage. */
/* "host:port" or "http://host:port[/]" of an HTTP proxy. */
const char *check_upstream(const char *item)
{
    const char *bad = "must be host:port or http://host:port (an HTTP proxy)";
    const char *hp = strncmp(item, "http://", 7) == 0 ? item + 7 : item;
    if (strstr(item, "://") && hp == item)
        return bad;
    char buf[300];
    size_t len = strlen(hp);
    if (len > 0 && hp[len - 1] == '/')
        len--;
    if (len == 0 || len >= sizeof(buf) || memchr(hp, '@', len) || memchr(hp, '/', len))
        return bad;
    memcpy(buf, hp, len);
    buf[len] = '\0';
    char *colon = strrchr(buf, ':');
    if (!colon || colon == buf || buf[0] == '*' || check_host(buf))
        return bad;
    return NULL;
}

const char *check_docker_host(const char *item)
{
    const char *path = strncmp(item, "unix://", 7) == 0 ? item + 7 : NULL;
    if (!path || path[0] != '/' || strlen(path) >= 108)
        return "must be unix:///absolute/path/to/docker.sock (unix sockets only)";
    if (strstr(path, "/../") || strstr(path, "/./") || strstr(path, "//"))
        return "must be a normalised absolute path";
    return NULL;
}

/* An image reference as the docker CLI takes it; never an option. */
const char *check_docker_image(const char *item)
{
    size_t length = strlen(item);
    if (length == 0 || length > 255 || !isalnum((unsigned char)item[0]))
        return "must be an image reference (name[:tag] or name@sha256:digest), starting with a "
               "letter or digit";
    for (const char *c = item; *c; c++)
        if (!(isalnum((unsigned char)*c) || strchr("._-/:@", *c)))
            return "must be an image reference: letters, digits and . _ - / : @";
    return NULL;
}

/* "8080", "8080:80" or "BIND:8080:80" (IPv6 binds in brackets). */
const char *parse_port_spec(const char *text, struct cfg_port *out)
{
    char copy[128];
    if (strlen(text) >= sizeof(copy))
        return "too long";
    snprintf(copy, sizeof(copy), "%s", text);
    snprintf(out->bind, sizeof(out->bind), "127.0.0.1");
    char *ports = copy;
    if (copy[0] == '[') {
        char *close = strchr(copy, ']');
        if (!close || close[1] != ':')
            return "expected [IPv6]:HOST:GUEST";
        *close = '\0';
        unsigned char address[16];
        if (inet_pton(AF_INET6, copy + 1, address) != 1 || strlen(copy + 1) >= sizeof(out->bind))
            return "not an IPv6 address";
        memcpy(out->bind, copy + 1, strlen(copy + 1) + 1);
        ports = close + 2;
    } else {
        char *first = strchr(copy, ':');
        if (first && strchr(first + 1, ':')) {
            *first = '\0';
            unsigned char address[4];
            if (inet_pton(AF_INET, copy, address) != 1)
                return "bind address is not an IPv4 address";
            memcpy(out->bind, copy, strlen(copy) + 1);
            ports = first + 1;
        }
    }
    char *guest = strchr(ports, ':');
    if (guest)
        *guest++ = '\0';
    long values[2];
    const char *parts[2] = {ports, guest ? guest : ports};
    for (int i = 0; i < 2; i++) {
        char *end;
        errno = 0;
        values[i] = strtol(parts[i], &end, 10);
        if (!*parts[i] || *end || errno || values[i] < 1 || values[i] > 65535)
            return "expected PORT, HOST:GUEST or BIND:HOST:GUEST with ports 1-65535";
    }
    out->host_port = (uint16_t)values[0];
    out->guest_port = (uint16_t)values[1];
    return NULL;
}
