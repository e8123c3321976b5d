/* Session state directories, ownership locks, the audit log, ls/rm/gc.
 * Host context, unprivileged. Every path below the root is walked with
 * O_NOFOLLOW from directory fds: a planted symlink in the state tree cannot
 * redirect a removal. */
#include "supervisor/state.h"
#include "supervisor/control.h"
#include "backend/backend.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LOCK_FILE  "lock"
#define AUDIT_FILE STATE_AUDIT_FILE

int state_root(char **ret_path, struct cordon_error *err)
{
    const char *runtime = getenv("XDG_RUNTIME_DIR");
    const char *state = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    char *path = NULL;
    int n;
    if (runtime && runtime[0] == '/' && access(runtime, W_OK) == 0)
        n = asprintf(&path, "%s/cordon", runtime);
    else if (state && state[0] == '/')
        n = asprintf(&path, "%s/cordon", state);
    else if (home && home[0] == '/')
        n = asprintf(&path, "%s/.local/state/cordon", home);
    else
        return error_set(err, 0, "state: none of XDG_RUNTIME_DIR, XDG_STATE_HOME, HOME is set");
    if (n < 0)
        return error_set(err, ENOMEM, "state");
    if (fs_mkdir_p(path, 0700) < 0) {
        error_set(err, errno, "state: creating %s", path);
        free(path);
        return -1;
    }
    struct stat st;
    if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 0077)) {
        /* A state root someone else can write would let them forge locks. */
        if (chmod(path, 0700) < 0 || lstat(path, &st) < 0 || st.st_uid != geteuid()) {
            error_set(err, 0, "state: %s must be a directory owned by you with mode 0700", path);
            free(path);
            return -1;
        }
    }
    *ret_path = path;
    return 0;
}

int state_check_name(const char *name, struct cordon_error *err)
{
    size_t n = strlen(name);
    if (n == 0 || n > STATE_NAME_MAX)
        return error_set(err, 0, "sandbox name '%.120s': must be 1 to %d characters", name,
                         STATE_NAME_MAX);
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  (i > 0 && (c == '-' || c == '_' || c == '.'));
        if (!ok)
            return error_set(
                err, 0, "sandbox name '%.120s': only letters, digits and - _ . (not first)", name);
    }
    return 0;
}

static int write_record(int fd, json_t *record)
{
    char *text = json_dumps(record, JSON_COMPACT | JSON_SORT_KEYS);
    if (!text)
        return -1;
    size_t len = strlen(text);
    int rc = ftruncate(fd, 0) == 0 && pwrite(fd, text, len, 0) == (ssize_t)len ? 0 : -1;
    free(text);
    return rc;
}

static json_t *read_record(int fd)
{
    char buf[16384];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return NULL;
    json_t *rec = json_loadb(buf, (size_t)n, 0, NULL);
    if (rec && !json_is_integer(json_object_get(rec, "cordon"))) {
        json_decref(rec);
        return NULL;
    }
    return rec;
}

/* This process's command line as the user typed it ("cordon run -- npm
 * test"), for `cordon ls`: arguments joined by spaces, control characters
 * as '?', cut at CAP - 1 bytes with "..." when longer. */
static void own_command(char *buf, size_t cap)
{
    buf[0] = '\0';
    _cleanup_close_ int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char raw[STATE_COMMAND_MAX];
    ssize_t n = read(fd, raw, sizeof(raw));
    if (n <= 0)
        return;
    size_t len = (size_t)n, out = 0;
    bool cut = len == sizeof(raw);
    for (size_t i = 0; i < len && out + 1 < cap; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (c == '\0')
            c = i + 1 < len ? ' ' : '\0';
        else if (c < 0x20 || c == 0x7f)
            c = '?';
        if (c == '\0')
            break;
        buf[out++] = (char)c;
    }
    buf[out] = '\0';
    /* "/usr/local/bin/cordon run ..." reads as "cordon run ...". */
    char *space = strchr(buf, ' ');
    char *slash = memrchr(buf, '/', space ? (size_t)(space - buf) : strlen(buf));
    if (slash)
        memmove(buf, slash + 1, strlen(slash + 1) + 1);
    size_t shown = strlen(buf);
    if ((cut || out + 1 >= cap) && shown >= 3)
        memcpy(buf + shown - 3, "...", 3);
}

int state_acquire(const char *name, const char *workspace, const char *backend,
                  struct state_owner *out, struct cordon_error *err)
{
    *out = (struct state_owner){.lock_fd = -1, .dir_fd = -1};
    _cleanup_free_ char *root = NULL;
    _cleanup_close_ int root_fd = state_root_for(name, &root, err);
    if (root_fd < 0)
        return -1;
    if (mkdirat(root_fd, name, 0700) < 0 && errno != EEXIST)
        return error_set(err, errno, "state: creating %s/%s", root, name);
    _cleanup_close_ int dir_fd =
        openat(root_fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dir_fd < 0)
        return error_set(err, errno, "state: %s/%s", root, name);
    _cleanup_close_ int lock_fd =
        openat(dir_fd, LOCK_FILE, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lock_fd < 0)
        return error_set(err, errno, "state: opening the lock of %s", name);
    if (flock(lock_fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno == EWOULDBLOCK) {
            error_set(err, 0, "sandbox %s: another process owns this session", name);
            err->errnum = EBUSY;
            return -1;
        }
        /* Any other lock failure fails closed: ownership is never guessed. */
        return error_set(err, errno, "sandbox %s: taking the session lock", name);
    }
    char command[STATE_COMMAND_MAX];
    own_command(command, sizeof(command));
    json_t *rec = json_pack(
        "{s:i, s:s, s:s, s:s, s:i, s:I, s:s, s:s}", "cordon", 1, "name", name, "workspace",
        workspace ? workspace : "", "backend", backend ? backend : BACKEND_LEGACY_NAME, "pid",
        (int)getpid(), "started", (json_int_t)time(NULL), "status", "starting", "command", command);
    int rc = write_record(lock_fd, rec);
    json_decref(rec);
    if (rc < 0)
        return error_set(err, errno, "sandbox %s: writing the lock record", name);
    snprintf(out->name, sizeof(out->name), "%s", name);
    if (asprintf(&out->dir, "%s/%s", root, name) < 0 ||
        asprintf(&out->audit_path, "%s/%s", out->dir, AUDIT_FILE) < 0)
        return error_set(err, ENOMEM, "state");
    out->lock_fd = TAKE_FD(lock_fd);
    out->dir_fd = TAKE_FD(dir_fd);
    return 0;
}

int state_set_status(struct state_owner *o, const char *status, pid_t sandbox_pid,
                     struct cordon_error *err)
{
    if (o->lock_fd < 0)
        return 0;
    json_t *rec = read_record(o->lock_fd);
    if (!rec)
        return error_set(err, 0, "sandbox %s: the lock record is unreadable", o->name);
    json_object_set_new(rec, "status", json_string(status));
    if (sandbox_pid > 0)
        json_object_set_new(rec, "sandbox_pid", json_integer(sandbox_pid));
    int rc = write_record(o->lock_fd, rec);
    json_decref(rec);
    return rc < 0 ? error_set(err, errno, "sandbox %s: writing the lock record", o->name) : 0;
}

/* How deep a removed session's directory is emptied (its kept home is the
 * sandbox's to fill); fs_remove_tree_at stops at the same depth. */
#define STATE_CLEAR_DEPTH 32

/* Empties dir_fd but for the names in KEEP (NULL-terminated, or NULL),
 * subdirectories with their contents (DEPTH levels down at most). Returns
 * how many entries stayed that were not kept, or -1. */
static int clear_dir_below(int dir_fd, const char *const *keep, int depth)
{
    DIR *d = fs_opendir_at(dir_fd, ".");
    if (!d)
        return -1;
    int left = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        bool kept = false;
        for (size_t i = 0; keep && keep[i] && !kept; i++)
            kept = strcmp(de->d_name, keep[i]) == 0;
        if (kept || unlinkat(dirfd(d), de->d_name, 0) == 0)
            continue;
        if (errno == EISDIR && depth > 0) {
            /* A directory the sandbox left read-only (a Go module cache is
             * 0555, or 000) is the user's own: its owner's bits come back
             * through an O_PATH fd (which needs none), and it is read
             * through that fd, not through its name again. */
            int pinned =
                openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            int sub = -1;
            if (pinned >= 0 && fs_owner_bits_back(pinned, S_IRWXU) >= 0)
                sub = openat(pinned, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (sub >= 0) {
                clear_dir_below(sub, NULL, depth - 1);
                close(sub);
            }
            if (pinned >= 0)
                close(pinned);
            if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) == 0)
                continue;
        }
        left++;
    }
    closedir(d);
    return left;
}

/* A removed session's logs stay for `cordon log` until gc_hours pass,
 * under STATE_LOGS_DIR/NAME in the state root, replacing an older
 * session's of the same name. When everything else could be removed, the
 * session's directory itself moves there with its two logs and its lock
 * file: one rename removes the session atomically (the lock is still
 * held), and no inode is freed at the session's end (on ext4 the lock
 * file's and the directory's eviction were half a millisecond of it);
 * gc_logs frees them with the logs. Otherwise (a directory the sandbox
 * left unwritable, a failed move) only the two logs move and false is
 * returned: the caller removes what it can, and what stays is a session
 * directory `cordon ls` still shows, as before. */
static bool retire_to_logs(struct state_owner *o)
{
    static const char *const keep[] = {STATE_AUDIT_FILE, STATE_NETWORK_FILE, LOCK_FILE, NULL};
    _cleanup_close_ int root = openat(o->dir_fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return false;
    if (mkdirat(root, STATE_LOGS_DIR, 0700) < 0 && errno != EEXIST)
        return false;
    _cleanup_close_ int logs =
        openat(root, STATE_LOGS_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (logs < 0)
        return false;
    int left = clear_dir_below(o->dir_fd, keep, STATE_CLEAR_DEPTH);
    fs_remove_tree_at(logs, o->name);
    if (left == 0 && renameat(root, o->name, logs, o->name) == 0) {
        /* gc_logs ages the directory by its modification time. */
        utimensat(logs, o->name, NULL, AT_SYMLINK_NOFOLLOW);
        return true;
    }
    if (mkdirat(logs, o->name, 0700) < 0)
        return false;
    _cleanup_close_ int dest = openat(logs, o->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dest >= 0) {
        renameat(o->dir_fd, STATE_AUDIT_FILE, dest, STATE_AUDIT_FILE);
        renameat(o->dir_fd, STATE_NETWORK_FILE, dest, STATE_NETWORK_FILE);
    }
    return false;
}

/* Removes the preserved logs older than HOURS (by their directory's
 * modification time, which the move set). */
static void gc_logs(double hours)
{
    _cleanup_close_ int root = state_root_open(NULL, &(struct cordon_error){0});
    if (root < 0)
        return;
    DIR *d = fs_opendir_at(root, STATE_LOGS_DIR);
    if (!d)
        return;
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (difftime(now, st.st_mtime) >= hours * 3600.0)
            fs_remove_tree_at(dirfd(d), de->d_name);
    }
    closedir(d);
}

void state_release(struct state_owner *o, bool remove)
{
    /* Moved or deleted while still holding the lock, so nobody takes a
     * half-removed session. */
    if (remove && o->dir_fd >= 0 && o->dir && !retire_to_logs(o)) {
        clear_dir_below(o->dir_fd, NULL, STATE_CLEAR_DEPTH);
        rmdir(o->dir);
    }
    if (o->lock_fd >= 0)
        close(o->lock_fd);
    if (o->dir_fd >= 0)
        close(o->dir_fd);
    free(o->dir);
    free(o->audit_path);
    *o = (struct state_owner){.lock_fd = -1, .dir_fd = -1};
}

void state_audit(struct state_owner *o, const char *tool, const char *target, const char *outcome,
                 double duration_ms, int exit_code)
{
    state_audit_call(o, tool, NULL, target, outcome, duration_ms, exit_code);
}

/* The arguments as the log keeps them (see state.h). */
static void audit_set_args(json_t *line, json_t *args)
{
    if (!args)
        return;
    char *text = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!text)
        return;
    size_t n = strlen(text);
    if (n <= STATE_AUDIT_ARGS_MAX) {
        json_object_set(line, "args", args);
    } else {
        /* Cut at a UTF-8 boundary: jansson refuses a broken sequence. */
        size_t cut = STATE_AUDIT_ARGS_MAX;
        while (cut > 0 && ((unsigned char)text[cut] & 0xc0) == 0x80)
            cut--;
        json_object_set_new(line, "args_excerpt", json_stringn(text, cut));
        json_object_set_new(line, "args_bytes", json_integer((json_int_t)n));
    }
    free(text);
}

void state_audit_call(struct state_owner *o, const char *tool, json_t *args, const char *target,
                      const char *outcome, double duration_ms, int exit_code)
{
    if (o->dir_fd < 0)
        return;
    int fd =
        openat(o->dir_fd, AUDIT_FILE, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return;
    char when[LOG_UTC_LEN];
    log_utc_now(when);
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size >= (off_t)STATE_AUDIT_MAX) {
        if (!o->audit_capped) {
            char note[256];
            int n = snprintf(note, sizeof(note),
                             "{\"time\":\"%s\",\"session\":\"%s\",\"note\":\"the audit log "
                             "reached %u MiB: further calls are not recorded\"}\n",
                             when, o->name, STATE_AUDIT_MAX >> 20);
            if (n > 0 && (size_t)n < sizeof(note)) {
                ssize_t w = write(fd, note, (size_t)n);
                (void)w;
            }
            o->audit_capped = true;
        }
        close(fd);
        return;
    }
    json_t *line =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:f}", "time", when, "session", o->name, "tool", tool,
                  "target", target, "outcome", outcome, "duration_ms", duration_ms);
    if (exit_code >= 0)
        json_object_set_new(line, "exit_code", json_integer(exit_code));
    audit_set_args(line, args);
    if (o->checkpoint > 0)
        json_object_set_new(line, "checkpoint", json_integer(o->checkpoint));
    o->checkpoint = 0;
    char *text = json_dumps(line, JSON_COMPACT);
    json_decref(line);
    if (text) {
        size_t n = strlen(text);
        text[n] = '\n';
        ssize_t w = write(fd, text, n + 1);
        (void)w;
        free(text);
    }
    close(fd);
}

static bool entry_read(int root_fd, const char *name, struct state_entry *e)
{
    _cleanup_close_ int dir_fd =
        openat(root_fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dir_fd < 0)
        return false;
    _cleanup_close_ int fd = openat(dir_fd, LOCK_FILE, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return false;
    json_t *rec = read_record(fd);
    if (!rec)
        return false; /* not made by cordon: never touched */
    *e = (struct state_entry){0};
    snprintf(e->name, sizeof(e->name), "%s", name);
    const char *s = json_string_value(json_object_get(rec, "workspace"));
    snprintf(e->workspace, sizeof(e->workspace), "%s", s ? s : "");
    s = json_string_value(json_object_get(rec, "status"));
    snprintf(e->status, sizeof(e->status), "%s", s ? s : "unknown");
    s = json_string_value(json_object_get(rec, "backend"));
    snprintf(e->backend, sizeof(e->backend), "%s", s ? s : BACKEND_LEGACY_NAME);
    s = json_string_value(json_object_get(rec, "command"));
    snprintf(e->command, sizeof(e->command), "%s", s ? s : "");
    e->owner_pid = (pid_t)json_integer_value(json_object_get(rec, "pid"));
    e->started = (time_t)json_integer_value(json_object_get(rec, "started"));
    json_decref(rec);
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        e->locked = errno == EWOULDBLOCK;
    } else {
        flock(fd, LOCK_UN);
        e->locked = false;
    }
    if (!e->locked && (strcmp(e->status, "running") == 0 || strcmp(e->status, "starting") == 0))
        snprintf(e->status, sizeof(e->status), "%s", "stopped");
    return true;
}

int state_root_open(char **ret_path, struct cordon_error *err)
{
    _cleanup_free_ char *root = NULL;
    if (state_root(&root, err) < 0)
        return -1;
    int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return error_set(err, errno, "state: %s", root);
    if (ret_path)
        *ret_path = TAKE_PTR(root);
    return fd;
}

int state_root_for(const char *name, char **ret_path, struct cordon_error *err)
{
    if (state_check_name(name, err) < 0)
        return -1;
    return state_root_open(ret_path, err);
}

int state_list(struct state_entry **ret, size_t *n, struct cordon_error *err)
{
    *ret = NULL;
    *n = 0;
    _cleanup_free_ char *root = NULL;
    if (state_root(&root, err) < 0)
        return -1;
    _cleanup_closedir_ DIR *d = opendir(root);
    if (!d)
        return error_set(err, errno, "state: %s", root);
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        struct state_entry e;
        if (!entry_read(dirfd(d), de->d_name, &e))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            struct state_entry *grown = realloc(*ret, cap * sizeof(*grown));
            if (!grown) {
                free(*ret);
                *ret = NULL;
                return error_set(err, ENOMEM, "state");
            }
            *ret = grown;
        }
        (*ret)[(*n)++] = e;
    }
    return 0;
}

bool state_exists(const char *name)
{
    struct cordon_error err;
    if (state_check_name(name, &err) < 0)
        return false;
    _cleanup_close_ int root_fd = state_root_open(NULL, &err);
    struct state_entry e;
    return root_fd >= 0 && entry_read(root_fd, name, &e);
}

int state_get(const char *name, struct state_entry *ret, struct cordon_error *err)
{
    _cleanup_close_ int root_fd = state_root_for(name, NULL, err);
    if (root_fd < 0)
        return -1;
    if (!entry_read(root_fd, name, ret))
        return error_set(err, 0, "no cordon sandbox named %s (see cordon ls)", name);
    return 0;
}

int state_dir_open(const char *name, int flags, struct state_entry *ret, struct cordon_error *err)
{
    if (state_get(name, ret, err) < 0)
        return -1;
    _cleanup_close_ int root = state_root_open(NULL, err);
    if (root < 0)
        return -1;
    int fd = openat(root, name, flags | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return error_set(err, errno, "sandbox %s", name);
    return fd;
}

/* A kept sandbox nobody runs: its control socket is a leftover of a
 * supervisor that died (the watchdog removes it too; this covers a watchdog
 * that was killed as well). Only under the lock, so a supervisor that is
 * starting it right now keeps its fresh socket. */
static void sweep_stale_control(const char *name)
{
    struct cordon_error err;
    _cleanup_close_ int root_fd = state_root_open(NULL, &err);
    _cleanup_close_ int dir_fd =
        root_fd < 0 ? -1 : openat(root_fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    _cleanup_close_ int fd =
        dir_fd < 0 ? -1 : openat(dir_fd, LOCK_FILE, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
        return;
    control_unlink_stale(dir_fd);
    flock(fd, LOCK_UN);
}

int state_remove(const char *name, struct cordon_error *err)
{
    _cleanup_close_ int root_fd = state_root_for(name, NULL, err);
    if (root_fd < 0)
        return -1;
    struct state_entry e;
    if (!entry_read(root_fd, name, &e))
        return error_set(err, ENOENT, "no cordon sandbox named %s", name);
    struct state_owner o;
    if (state_acquire(name, NULL, NULL, &o, err) < 0)
        return -1; /* busy: another process owns it; nothing touched */
    state_release(&o, true);
    return 0;
}

/* A cgroup younger than this is left alone: a sandbox that is starting
 * makes its cgroups before clone and its child joins them only after the
 * id maps (ns-limits.c), so for that moment they are empty. */
#define GC_CGROUP_GRACE_S 60

/* Empty cgroups left by sandboxes whose supervisor was killed before it
 * could remove them. rmdir only ever succeeds on an empty cgroup, so a
 * running sandbox's is never touched; a young one is left for a starting
 * sandbox, of this state root or another's (another XDG_RUNTIME_DIR shares
 * these hierarchies but not this list of entries). */
static void gc_cgroups(const struct state_entry *entries, size_t n)
{
    static const char *const bases[] = {"/sys/fs/cgroup/memory/cordon",
                                        "/sys/fs/cgroup/pids/cordon", "/sys/fs/cgroup/cpu/cordon"};
    time_t now = time(NULL);
    for (size_t b = 0; b < ARRAY_SIZE(bases); b++) {
        _cleanup_closedir_ DIR *d = opendir(bases[b]);
        if (!d)
            continue;
        struct dirent *de;
        while ((de = readdir(d))) {
            if (de->d_type != DT_DIR || de->d_name[0] == '.')
                continue;
            bool live = false;
            for (size_t i = 0; i < n; i++)
                live |= entries[i].locked && strcmp(entries[i].name, de->d_name) == 0;
            struct stat st;
            if (live || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                difftime(now, st.st_mtime) < GC_CGROUP_GRACE_S)
                continue;
            unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
        }
    }
}

int state_gc(double hours, const char *keep, size_t *removed, struct cordon_error *err)
{
    *removed = 0;
    struct state_entry *entries;
    size_t n;
    if (state_list(&entries, &n, err) < 0)
        return -1;
    time_t now = time(NULL);
    for (size_t i = 0; i < n; i++) {
        struct state_entry *e = &entries[i];
        if (e->locked || (keep && strcmp(e->name, keep) == 0))
            continue;
        if (difftime(now, e->started) < hours * 3600.0) {
            sweep_stale_control(e->name);
            continue;
        }
        struct cordon_error ignored;
        struct state_owner o;
        if (state_acquire(e->name, NULL, NULL, &o, &ignored) < 0)
            continue; /* taken meanwhile: someone owns it now */
        state_release(&o, true);
        (*removed)++;
    }
    gc_cgroups(entries, n);
    free(entries);
    gc_logs(hours);
    return 0;
}
