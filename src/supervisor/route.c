/* Routing decisions, exact-call approvals and the skill read exception
 * (route.h). Host context, unprivileged supervisor. Everything the client
 * sends here is untrusted: the skill list is trusted only as far as naming
 * what the user's own client discovered, and every file is opened beneath
 * its skill directory's fd, never by a string checked earlier. */
#include "supervisor/route.h"
#include "agent/tools/path.h"
#include "agent/tools/pin.h"
#include "agent/tools/registry.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/escape.h"

#include <ctype.h>
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
    return tool_normalize_path(path);
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
    return fs_openat2(dirfd, rel, flags, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
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

/* The path argument a tool resolves (pi's tools): NULL when the call names
 * none that the tool would open (bash; a missing or malformed path, which
 * the tool refuses before opening anything). */
static const char *pin_path_arg(const char *tool, json_t *args)
{
    const struct tool_entry *t = tool_lookup(tool);
    bool file = t && (t->flags & TOOL_OPENS_FILE);
    bool listing = t && (t->flags & TOOL_LISTS_TREE);
    if (!file && !listing)
        return NULL;
    json_t *v = json_object_get(args, "path");
    if (json_is_string(v) && json_string_length(v) > 0)
        return json_string_value(v);
    if (listing && (!v || json_is_null(v) || json_is_string(v)))
        return ".";
    return NULL;
}

static char *escaped(const char *s)
{
    return text_escape_visible(s, strlen(s), TEXT_ESCAPE_BACKSLASH, NULL);
}

/* target's canonical form: the realpath of its longest existing ancestor,
 * then the components that do not exist yet (which write creates),
 * normalised. A dangling symlink on the way is refused: what it would
 * create is not what the prompt could show. */
static char *canonical_path(const char *target, struct cordon_error *err)
{
    _cleanup_free_ char *head = strdup(target);
    if (!head)
        return error_set(err, ENOMEM, "resolve"), NULL;
    _cleanup_free_ char *real = NULL;
    size_t kept = strlen(head);
    for (;;) {
        real = realpath(head, NULL);
        if (real)
            break;
        int e = errno;
        _cleanup_free_ char *shown = escaped(head);
        struct stat st;
        if (lstat(head, &st) == 0 && S_ISLNK(st.st_mode))
            return error_set(err, 0, "%s is a symlink to a missing target",
                             shown ? shown : "the path"),
                   NULL;
        if (e != ENOENT && e != ENOTDIR)
            return error_set(err, e, "cannot resolve %s", shown ? shown : "the path"), NULL;
        char *slash = strrchr(head, '/');
        if (!slash)
            return error_set(err, 0, "cannot resolve a relative path"), NULL;
        if (slash == head) {
            head[1] = '\0';
            kept = 0; /* what follows "/" */
        } else {
            *slash = '\0';
            kept = (size_t)(slash - head);
        }
    }
    if (kept == strlen(target))
        return TAKE_PTR(real);
    _cleanup_free_ char *joined = NULL;
    if (asprintf(&joined, "%s/%s", real, target + kept) < 0)
        return error_set(err, ENOMEM, "resolve"), NULL;
    char *out = normalise_absolute(joined);
    if (!out)
        error_set(err, ENAMETOOLONG, "resolve");
    return out;
}

static int open_pinned_dir(const char *path, uint64_t *dev, uint64_t *ino, struct cordon_error *err)
{
    /* canonical: a symlink in it now is a race lost at prompt time */
    struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                           .resolve = RESOLVE_NO_SYMLINKS};
    _cleanup_close_ int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        _cleanup_free_ char *shown = escaped(path);
        return error_set(err, errno, "cannot pin %s", shown ? shown : "the directory");
    }
    *dev = (uint64_t)st.st_dev;
    *ino = (uint64_t)st.st_ino;
    return TAKE_FD(fd);
}

int route_pin_prepare(const char *tool, json_t *args, const char *cwd, const char *home,
                      const char *workspace, struct route_pin *pin, struct cordon_error *err)
{
    *pin = (struct route_pin){.dir_fd = -1, .cwd_fd = -1};
    pin->cwd = realpath(cwd, NULL);
    if (!pin->cwd) {
        _cleanup_free_ char *shown = escaped(cwd);
        return error_set(err, errno, "cannot resolve the working directory %s", shown ? shown : "");
    }
    pin->cwd_fd = open_pinned_dir(pin->cwd, &pin->cwd_dev, &pin->cwd_ino, err);
    if (pin->cwd_fd < 0)
        return -1;
    const char *path = pin_path_arg(tool, args);
    if (!path)
        return 0;
    if (strlen(path) >= TOOL_PATH_MAX)
        return error_set(err, 0, "the path is longer than %d bytes", TOOL_PATH_MAX);
    /* The tool resolves against the cwd string it was started with; the
     * supervisor's and the host agent's are the same getcwd(). */
    struct tool_env env = {.cwd = cwd, .home = home ? home : "/"};
    const struct tool_entry *t = tool_lookup(tool);
    pin->target = t && (t->flags & TOOL_READ_PATH) ? tool_resolve_read_path(path, &env)
                                                   : tool_resolve_path(path, &env);
    if (!pin->target)
        return error_set(err, ENOMEM, "resolve");
    pin->canonical = canonical_path(pin->target, err);
    if (!pin->canonical)
        return -1;
    _cleanup_free_ char *lexical = normalise_absolute(pin->target);
    pin->through_symlink = !lexical || strcmp(lexical, pin->canonical) != 0;
    pin->outside_workspace = !workspace || !path_under(pin->canonical, workspace);
    const char *dir = "/";
    if (workspace && path_under(pin->canonical, workspace))
        dir = workspace;
    if (path_under(pin->canonical, pin->cwd) && strlen(pin->cwd) > strlen(dir))
        dir = pin->cwd;
    pin->dir = strdup(dir);
    size_t skip = strcmp(dir, "/") == 0 ? 1 : strlen(dir) + 1;
    pin->rel = strdup(strlen(pin->canonical) > strlen(dir) ? pin->canonical + skip : "");
    if (!pin->dir || !pin->rel)
        return error_set(err, ENOMEM, "pin");
    pin->dir_fd = open_pinned_dir(pin->dir, &pin->dir_dev, &pin->dir_ino, err);
    return pin->dir_fd < 0 ? -1 : 0;
}

static json_t *pin_dir_json(const char *path, uint64_t dev, uint64_t ino)
{
    _cleanup_free_ char *hex = tool_pin_hex(path);
    return hex ? json_pack("{s:s, s:I, s:I}", "path", hex, "dev", (json_int_t)dev, "ino",
                           (json_int_t)ino)
               : NULL;
}

json_t *route_pin_json(const struct route_pin *pin)
{
    json_t *out = json_object();
    json_t *cwd = pin_dir_json(pin->cwd, pin->cwd_dev, pin->cwd_ino);
    if (!out || !cwd || json_object_set_new(out, "cwd", cwd) < 0) {
        json_decref(out);
        return NULL;
    }
    if (!pin->target)
        return out;
    _cleanup_free_ char *target = tool_pin_hex(pin->target);
    _cleanup_free_ char *rel = tool_pin_hex(pin->rel);
    json_t *dir = pin_dir_json(pin->dir, pin->dir_dev, pin->dir_ino);
    if (!target || !rel || !dir || json_object_set_new(out, "dir", dir) < 0 ||
        json_object_set_new(out, "target", json_string(target)) < 0 ||
        json_object_set_new(out, "rel", json_string(rel)) < 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

void route_pin_free(struct route_pin *pin)
{
    free(pin->target);
    free(pin->canonical);
    free(pin->dir);
    free(pin->rel);
    free(pin->cwd);
    if (pin->dir_fd >= 0)
        close(pin->dir_fd);
    if (pin->cwd_fd >= 0)
        close(pin->cwd_fd);
    *pin = (struct route_pin){.dir_fd = -1, .cwd_fd = -1};
}

/* JSON's "\u001B" for a control character becomes "\x1b", as the rest of
 * the prompt writes it; "\n", "\t" and escaped backslashes stay. In place
 * (the text only shrinks). */
static void json_controls_as_hex(char *json)
{
    char *out = json;
    for (const char *p = json; *p;) {
        if (p[0] == '\\' && p[1] == 'u' && p[2] == '0' && p[3] == '0' &&
            (p[4] == '0' || p[4] == '1') && isxdigit((unsigned char)p[5])) {
            *out++ = '\\';
            *out++ = 'x';
            *out++ = p[4];
            *out++ = (char)tolower((unsigned char)p[5]);
            p += 6;
        } else if (p[0] == '\\' && p[1]) {
            *out++ = *p++;
            *out++ = *p++;
        } else {
            *out++ = *p++;
        }
    }
    *out = '\0';
}

/* Hidden characters in every key and string of the arguments; newlines
 * and tabs, which the JSON shows as \n and \t, do not count. */
static size_t json_hidden(json_t *v)
{
    size_t n = 0;
    if (json_is_string(v))
        return text_count_hidden(json_string_value(v), json_string_length(v),
                                 TEXT_ESCAPE_KEEP_LAYOUT);
    const char *key;
    json_t *child;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach (v, key, child)
            n += text_count_hidden(key, strlen(key), TEXT_ESCAPE_KEEP_LAYOUT) + json_hidden(child);
    } else if (json_is_array(v)) {
        json_array_foreach (v, i, child)
            n += json_hidden(child);
    }
    return n;
}

char *route_prompt_text(const char *tool, const char *cwd, json_t *args,
                        const struct route_pin *pin, const char *workspace, size_t *hidden)
{
    size_t n_cwd = 0, n_path = 0, n_args = json_hidden(args);
    _cleanup_free_ char *json = json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS);
    if (json)
        json_controls_as_hex(json);
    /* JSON has escaped the C0 controls and doubled the backslashes; what
     * it leaves raw (DEL, C1, format and bidi characters) is escaped here. */
    _cleanup_free_ char *shown_args =
        json ? text_escape_visible(json, strlen(json), 0, NULL) : NULL;
    _cleanup_free_ char *shown_cwd =
        text_escape_visible(cwd, strlen(cwd), TEXT_ESCAPE_BACKSLASH, &n_cwd);
    _cleanup_free_ char *path_line = NULL;
    if (pin && pin->target) {
        _cleanup_free_ char *shown = text_escape_visible(pin->canonical, strlen(pin->canonical),
                                                         TEXT_ESCAPE_BACKSLASH, &n_path);
        _cleanup_free_ char *shown_ws =
            workspace
                ? text_escape_visible(workspace, strlen(workspace), TEXT_ESCAPE_BACKSLASH, NULL)
                : NULL;
        _cleanup_free_ char *outside = NULL;
        if (pin->outside_workspace && asprintf(&outside, "  (OUTSIDE the workspace%s%s)",
                                               shown_ws ? " " : "", shown_ws ? shown_ws : "") < 0)
            return NULL;
        if (!shown || asprintf(&path_line, "Path: %s%s%s\n", shown,
                               pin->through_symlink ? "  (reached through a symlink)" : "",
                               outside ? outside : "") < 0)
            return NULL;
    }
    if (!shown_args || !shown_cwd)
        return NULL;
    size_t total = n_args + n_cwd + n_path;
    char note[200] = "";
    if (total)
        snprintf(note, sizeof(note),
                 "\nNOTE: this call contains %zu invisible or control character%s, shown "
                 "escaped (\\u202e, \\x1b, ...).\n",
                 total, total == 1 ? "" : "s");
    char *message = NULL;
    if (asprintf(&message,
                 "WARNING: this call bypasses the sandbox and runs ON THE HOST with "
                 "your permissions, your environment and your files.\n%s\n"
                 "Tool: %s\nWorking directory: %s\n%sArguments: %s\n\n"
                 "Approve this exact call once?",
                 note, tool, shown_cwd, path_line ? path_line : "", shown_args) < 0)
        return NULL;
    if (hidden)
        *hidden = total;
    return message;
}
