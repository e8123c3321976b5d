/* Routing decisions, exact-call approvals and the skill read exception
 * (route.h). Host context, unprivileged supervisor. Everything the client
 * sends here is untrusted: the skill list is trusted only as far as naming
 * what the user's own client discovered, and every file is opened beneath
 * its skill directory's fd, never by a string checked earlier. */
#include "supervisor/route.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

const char *route_state_name(enum route_state state)
{
    switch (state) {
    case ROUTE_STARTING:
        return "starting";
    case ROUTE_SANDBOXED:
        return "sandboxed";
    case ROUTE_OFF:
        return "off";
    case ROUTE_HOST_FALLBACK:
        return "host fallback";
    case ROUTE_BLOCKED:
        return "blocked";
    }
    return "blocked";
}

const char *route_target_name(enum route_target target)
{
    switch (target) {
    case ROUTE_TO_SANDBOX:
        return "sandbox";
    case ROUTE_TO_HOST:
        return "host";
    case ROUTE_ASK:
        return "approval";
    case ROUTE_REFUSE:
        return "none";
    }
    return "none";
}

static enum route_target refuse(char *reason, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum route_target refuse(char *reason, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, size, fmt, ap);
    va_end(ap);
    return ROUTE_REFUSE;
}

enum route_target route_decide(const struct route_inputs *in, char *reason, size_t reason_size)
{
    reason[0] = '\0';
    json_t *target = in->args ? json_object_get(in->args, "execution_target") : NULL;
    const char *want = json_string_value(target);
    if (target && (!want || (strcmp(want, "sandbox") != 0 && strcmp(want, "host") != 0)))
        return refuse(reason, reason_size,
                      "cordon: execution_target must be \"sandbox\" or \"host\"");
    bool wants_host = want && strcmp(want, "host") == 0;
    bool wants_sandbox = want && strcmp(want, "sandbox") == 0;

    switch (in->state) {
    case ROUTE_BLOCKED:
    case ROUTE_STARTING:
        return refuse(reason, reason_size, "cordon: the %s tool is blocked: %s", in->tool,
                      in->state == ROUTE_STARTING ? "the sandbox is still starting"
                      : in->blocked_reason && in->blocked_reason[0] ? in->blocked_reason
                                                                    : "the sandbox is not running");
    case ROUTE_OFF:
    case ROUTE_HOST_FALLBACK:
        /* The user chose the host (off, or fallback_mode = "host" in their
         * own configuration): no prompt. An explicit request for the
         * sandbox is not silently run on the host. */
        if (wants_sandbox)
            return refuse(reason, reason_size,
                          "cordon: execution_target \"sandbox\" is not available: cordon is %s "
                          "and tools run on the host",
                          route_state_name(in->state));
        return ROUTE_TO_HOST;
    case ROUTE_SANDBOXED:
        break;
    }
    if (!wants_host)
        return ROUTE_TO_SANDBOX;
    if (!in->allow_host_execution)
        return refuse(reason, reason_size,
                      "cordon: host execution is disabled by configuration "
                      "(allow_host_execution = false)");
    if (!in->interactive)
        return refuse(reason, reason_size, "%s", ROUTE_NO_INTERACTIVE_CLIENT);
    return ROUTE_ASK;
}

json_t *route_strip_target(json_t *args)
{
    json_t *copy = json_is_object(args) ? json_deep_copy(args) : json_object();
    if (copy)
        json_object_del(copy, "execution_target");
    return copy;
}

char *route_fingerprint(const char *tool, const char *cwd, json_t *args)
{
    json_t *stripped = route_strip_target(args);
    if (!stripped)
        return NULL;
    json_t *doc = json_pack("{s:s, s:s, s:o}", "tool", tool, "cwd", cwd, "args", stripped);
    if (!doc)
        return NULL;
    /* JSON_SORT_KEYS applies to every object in the tree: recursively
     * key-sorted, so two spellings of one call have one fingerprint. */
    char *out = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    json_decref(doc);
    return out;
}

uint64_t route_approval_ask(struct route_approvals *a, const char *fingerprint)
{
    for (size_t i = 0; i < ROUTE_MAX_APPROVALS; i++) {
        struct route_approval *p = &a->items[i];
        if (p->id)
            continue;
        p->fingerprint = strdup(fingerprint);
        if (!p->fingerprint)
            return 0;
        p->id = ++a->next_id;
        p->answered = false;
        p->granted = false;
        return p->id;
    }
    return 0;
}

static struct route_approval *approval_find(struct route_approvals *a, uint64_t id)
{
    for (size_t i = 0; id && i < ROUTE_MAX_APPROVALS; i++) {
        if (a->items[i].id == id)
            return &a->items[i];
    }
    return NULL;
}

static void approval_release(struct route_approval *p)
{
    free(p->fingerprint);
    *p = (struct route_approval){0};
}

int route_approval_answer(struct route_approvals *a, uint64_t id, bool granted)
{
    struct route_approval *p = approval_find(a, id);
    if (!p || p->answered)
        return -1;
    p->answered = true;
    p->granted = granted;
    return 0;
}

int route_approval_consume(struct route_approvals *a, uint64_t id, const char *fingerprint,
                           struct cordon_error *err)
{
    struct route_approval *p = approval_find(a, id);
    if (!p)
        return error_set(err, 0, "no approval for this call (approvals are used once)");
    bool granted = p->answered && p->granted;
    bool same = fingerprint && strcmp(p->fingerprint, fingerprint) == 0;
    approval_release(p);
    if (!granted)
        return error_set(err, 0, "the user did not approve this call");
    if (!same)
        return error_set(err, 0,
                         "the approval was for another call (tool, working directory or "
                         "arguments differ)");
    return 0;
}

void route_approvals_free(struct route_approvals *a)
{
    for (size_t i = 0; i < ROUTE_MAX_APPROVALS; i++) {
        if (a->items[i].id)
            approval_release(&a->items[i]);
    }
}

/* Lexical normalisation of an absolute path ("." and ".." and duplicate
 * slashes), as Node's path.resolve does; NULL when not absolute. */
static char *normalise_absolute(const char *path)
{
    if (!path || path[0] != '/' || strlen(path) >= PATH_MAX)
        return NULL;
    char *out = malloc(strlen(path) + 2);
    if (!out)
        return NULL;
    size_t len = 0;
    const char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        const char *start = p;
        while (*p && *p != '/')
            p++;
        size_t n = (size_t)(p - start);
        if (n == 0 || (n == 1 && start[0] == '.'))
            continue;
        if (n == 2 && start[0] == '.' && start[1] == '.') {
            while (len > 0 && out[len - 1] != '/')
                len--;
            if (len > 0)
                len--;
            continue;
        }
        out[len++] = '/';
        memcpy(out + len, start, n);
        len += n;
    }
    if (len == 0)
        out[len++] = '/';
    out[len] = '\0';
    return out;
}

static bool path_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (strcmp(dir, "/") == 0)
        return path[0] == '/';
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static void skill_free(struct route_skill *k)
{
    free(k->path);
    free(k->canonical);
}

static int skill_add(struct route_skills *s, const char *given, const char *workspace,
                     bool allow_directory)
{
    if (s->count >= ROUTE_MAX_SKILLS)
        return 0;
    _cleanup_free_ char *path = normalise_absolute(given);
    if (!path)
        return 0;
    _cleanup_free_ char *canonical = realpath(path, NULL);
    if (!canonical)
        return 0;
    /* The sandbox serves what lies in the workspace, which the agent can
     * rewrite: no host exception for it. */
    if (workspace && (path_under(canonical, workspace) || path_under(path, workspace)))
        return 0;
    struct stat st;
    if (stat(canonical, &st) < 0)
        return 0;
    bool tree = S_ISDIR(st.st_mode);
    if ((tree && !allow_directory) || (!tree && !S_ISREG(st.st_mode)))
        return 0;
    const char *base = strrchr(path, '/') + 1;
    if (!tree && strcmp(base, "SKILL.md") == 0) {
        /* A directory skill: the grant is its directory. */
        char *slash = strrchr(path, '/');
        *slash = '\0';
        if (!path[0])
            return 0;
        slash = strrchr(canonical, '/');
        *slash = '\0';
        if (!canonical[0])
            return 0;
        tree = true;
    }
    for (size_t i = 0; i < s->count; i++) {
        if (s->items[i].tree == tree && strcmp(s->items[i].path, path) == 0)
            return 0;
    }
    struct route_skill *grown = realloc(s->items, (s->count + 1) * sizeof(*grown));
    if (!grown)
        return 0;
    s->items = grown;
    s->items[s->count++] = (struct route_skill){TAKE_PTR(path), TAKE_PTR(canonical), tree};
    return 1;
}

int route_skills_set(struct route_skills *s, const char *const *paths, size_t npaths,
                     const char *const *config_paths, size_t nconfig, const char *workspace)
{
    route_skills_free(s);
    int n = 0;
    for (size_t i = 0; i < nconfig; i++)
        n += skill_add(s, config_paths[i], workspace, true);
    for (size_t i = 0; i < npaths; i++)
        n += skill_add(s, paths[i], workspace, false);
    return n;
}

void route_skills_free(struct route_skills *s)
{
    for (size_t i = 0; i < s->count; i++)
        skill_free(&s->items[i]);
    free(s->items);
    *s = (struct route_skills){0};
}

static int openat_beneath(int dirfd, const char *rel, int flags)
{
    /* Symlinks are followed only while they stay beneath dirfd; magic
     * links (/proc/self/fd/N) never. */
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC),
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    return (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
}

/* Opens a file found through a grant and checks what was opened. */
static int open_checked(int dirfd, const char *rel, struct cordon_error *err)
{
    /* O_NONBLOCK: a FIFO swapped in must not hang the supervisor. */
    _cleanup_close_ int fd = openat_beneath(dirfd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        if (errno == EXDEV || errno == ELOOP)
            return error_set(err, 0, "a symlink leads out of the skill directory");
        return error_set(err, errno, "cannot open the skill file");
    }
    struct stat st;
    if (fstat(fd, &st) < 0)
        return error_set(err, errno, "fstat");
    if (!S_ISREG(st.st_mode))
        return error_set(err, 0, "not a regular file (devices, FIFOs and sockets are refused)");
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return TAKE_FD(fd);
}

/* A tree grant: the nearest directory at or above the file (and at or below
 * the grant) that holds a regular SKILL.md is the skill directory; the file
 * is opened beneath it. -1: no such directory (no grant). */
static int open_in_tree(const struct route_skill *k, const char *rel, struct cordon_error *err)
{
    _cleanup_close_ int root = open(k->canonical, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return -1;
    _cleanup_free_ char *dir = strdup(rel);
    if (!dir)
        return -1;
    for (;;) {
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            dir[0] = '\0';
        _cleanup_close_ int dirfd = dir[0] ? openat_beneath(root, dir, O_PATH | O_DIRECTORY)
                                           : fcntl(root, F_DUPFD_CLOEXEC, 0);
        struct stat st;
        if (dirfd >= 0 && fstatat(dirfd, "SKILL.md", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode)) {
            const char *below = rel + strlen(dir) + (dir[0] ? 1 : 0);
            int fd = open_checked(dirfd, below, err);
            return fd < 0 ? -2 : fd;
        }
        if (!dir[0])
            return -1;
    }
}

int route_skill_open(const struct route_skills *s, const char *abs_path, struct cordon_error *err)
{
    _cleanup_free_ char *path = normalise_absolute(abs_path);
    if (!path)
        return -1;
    for (size_t i = 0; i < s->count; i++) {
        const struct route_skill *k = &s->items[i];
        if (k->tree) {
            const char *roots[2] = {k->path, k->canonical};
            for (size_t r = 0; r < 2; r++) {
                if (!path_under(path, roots[r]) || strcmp(path, roots[r]) == 0)
                    continue;
                const char *rel = path + strlen(roots[r]) + (strcmp(roots[r], "/") ? 1 : 0);
                int fd = open_in_tree(k, rel, err);
                if (fd != -1)
                    return fd;
            }
        } else if (strcmp(path, k->path) == 0 || strcmp(path, k->canonical) == 0) {
            /* The exact file: its canonical directory, then the name with no
             * symlink allowed at all. */
            _cleanup_free_ char *dir = strdup(k->canonical);
            if (!dir)
                return -1;
            char *slash = strrchr(dir, '/');
            *slash = '\0';
            _cleanup_close_ int dirfd = open(dir[0] ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
            if (dirfd < 0)
                return error_set(err, errno, "cannot open the skill's directory"), -2;
            struct open_how how = {
                .flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
            };
            _cleanup_close_ int fd = (int)syscall(SYS_openat2, dirfd, slash + 1, &how, sizeof(how));
            if (fd < 0)
                return error_set(err, errno == ELOOP ? 0 : errno, "%s",
                                 errno == ELOOP ? "the skill file was replaced by a symlink"
                                                : "cannot open the skill file"),
                       -2;
            struct stat st;
            if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return error_set(err, 0,
                                 "not a regular file (devices, FIFOs and sockets are refused)"),
                       -2;
            int flags = fcntl(fd, F_GETFL);
            if (flags >= 0)
                fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
            return TAKE_FD(fd);
        }
    }
    return -1;
}
