/* The trust guard (trust-guard.h). Host context, unprivileged.
 *
 * The records are files in one directory, named so that creating one is a
 * single atomic step and no lock is needed between concurrent sessions:
 *   <key>.<pid>-<starttime>-<n>.pending   a running session; holds the hash
 *                                         the file had when it started
 *   <key>.<sha256>.written                content a session created or changed
 *   <key>.<start>-<end>.window            a session that ended: its pending
 *                                         record renamed (wall-clock seconds)
 *   <key>.sessions                        "start end" of earlier windows,
 *                                         folded in by a later session
 * where <key> is the first 32 hex digits of the SHA-256 of the canonical
 * workspace path. The windows cover a .cordon.toml below the root, which
 * is another workspace's file (a submodule, a project in a non-git
 * directory): the sandbox could write it, and the guard cannot hash every
 * file of the tree. Such a file whose ctime (which nobody without privilege
 * can set back) falls in a session of an enclosing workspace is flagged. A pending record whose process is gone (pid and start time
 * no longer match) belongs to a session that ended without its end step; it
 * still flags the file, and the next session of the workspace settles it.
 *
 * A session's end is one rename, pending record to window record, with no
 * sync: whichever of the two names a crash leaves, the file stays flagged
 * (a pending record of a process that is gone flags it, and is settled
 * into a window by the next session). The older scheme appended to
 * .sessions, synced it, then removed the pending record: two steps whose
 * order only a sync kept, at every session's end (1-62 ms under disk
 * load). The windows are folded into .sessions (one sync) once a key has
 * GUARD_WINDOWS_FOLD of them, so the directory stays small. */
#include "config/trust-guard.h"
#include "config/trust.h"
#include "util/cleanup.h"
#include "util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GUARD_KEY_SIZE 33
#define GUARD_NAME_MAX 160
/* enclosing workspaces looked at; a .sessions file read at most this far */
#define GUARD_ANCESTORS_MAX 64
#define GUARD_SESSIONS_MAX  (4 << 20)
/* ctime and time() tick differently (coarse clock): a second of slack */
#define GUARD_SLACK 1
/* a key's window records folded into its .sessions from this many on */
#define GUARD_WINDOWS_FOLD 64

static void guard_key(const char *workspace, char key[GUARD_KEY_SIZE])
{
    char hex[TRUST_GUARD_HASH_SIZE];
    sha256_hex(workspace, strlen(workspace), hex);
    memcpy(key, hex, GUARD_KEY_SIZE - 1);
    key[GUARD_KEY_SIZE - 1] = '\0';
}

static bool is_hash(const char *hash)
{
    return strlen(hash) == 2 * SHA256_DIGEST_SIZE;
}

void trust_guard_hash_file(const char *workspace, char hash[TRUST_GUARD_HASH_SIZE])
{
    char file[4096];
    if (snprintf(file, sizeof(file), "%s%s.cordon.toml", workspace,
                 strcmp(workspace, "/") == 0 ? "" : "/") >= (int)sizeof(file)) {
        strcpy(hash, "?");
        return;
    }
    _cleanup_free_ char *data = NULL;
    size_t length = 0;
    bool exists = false;
    struct cordon_error ignored;
    if (cfg_read_workspace_file(file, &data, &length, &exists, &ignored) < 0)
        strcpy(hash, "?");
    else if (!exists)
        strcpy(hash, "-");
    else
        sha256_hex(data, length, hash);
}

/* The guard directory, created 0700 (with its parents) when missing, opened
 * without following a symlink. Refused when others could change it: a
 * deleted marker would bring back the nudge. */
static int guard_dir_open(const char *dir, bool create, struct cordon_error *err)
{
    if (create && fs_mkdir_p(dir, 0700) < 0)
        return error_set(err, errno, "trust guard: mkdir %s", dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ENOENT && !create)
        return -2;
    if (fd < 0)
        return error_set(err, errno, "trust guard %s", dir);
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return error_set(err, e, "trust guard %s", dir);
    }
    if ((st.st_mode & 022) || (st.st_uid != 0 && st.st_uid != geteuid())) {
        close(fd);
        return error_set(err, 0,
                         "trust guard %s: must be a directory owned by you and not writable by "
                         "group or others",
                         dir);
    }
    return fd;
}

/* The guard directory as it is (not created) in *ret_dirfd and WORKSPACE's
 * key in it: 1; 0 when there is no guard directory (nothing was recorded,
 * *ret_dirfd untouched); -1 on error. */
static int guard_dir_lookup(const char *dir, const char *workspace, int *ret_dirfd,
                            char key[GUARD_KEY_SIZE], struct cordon_error *err)
{
    int fd = guard_dir_open(dir, false, err);
    if (fd < 0)
        return fd == -2 ? 0 : -1;
    guard_key(workspace, key);
    *ret_dirfd = fd;
    return 1;
}

/* A listing of the guard directory from its start. A duplicate shares the
 * directory's offset with dirfd, so it is rewound: a second scan through
 * the same fd would otherwise see nothing. */
static DIR *guard_scan(int dirfd)
{
    int scan = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    DIR *d = scan >= 0 ? fdopendir(scan) : NULL;
    if (!d) {
        int e = errno;
        if (scan >= 0)
            close(scan);
        errno = e;
        return NULL;
    }
    rewinddir(d);
    return d;
}

/* Field 22 of /proc/PID/stat: the process's start time in clock ticks since
 * boot; with the pid it names one process for as long as the system runs. */
static unsigned long long process_start_time(pid_t pid)
{
    char path[64], buffer[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buffer, sizeof(buffer) - 1);
    if (n <= 0)
        return 0;
    buffer[n] = '\0';
    /* the command name may hold spaces and ')': fields follow the last ')' */
    char *p = strrchr(buffer, ')');
    if (!p)
        return 0;
    p++;
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p + 1, ' ');
    }
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* A pending record's name: <key>.<pid>-<starttime>-<n>.pending. True (with
 * *ret_alive) when name is one of key's. */
static bool parse_pending(const char *name, const char *key, bool *ret_alive)
{
    size_t k = strlen(key);
    size_t n = strlen(name);
    if (strncmp(name, key, k) != 0 || name[k] != '.' || n < 8 ||
        strcmp(name + n - 8, ".pending") != 0)
        return false;
    char *end = NULL;
    errno = 0;
    long pid = strtol(name + k + 1, &end, 10);
    *ret_alive = false;
    if (errno || !end || *end != '-' || pid <= 0)
        return true; /* not cordon's name: a dead session's, to be safe */
    unsigned long long start = strtoull(end + 1, &end, 10);
    *ret_alive = start != 0 && process_start_time((pid_t)pid) == start;
    return true;
}

/* The hash and start time a pending record holds (hash "" and start 0
 * when it cannot be read: that flags the file, as any other content would). */
static void read_pending(int dirfd, const char *name, char hash[TRUST_GUARD_HASH_SIZE],
                         long long *ret_started)
{
    hash[0] = '\0';
    *ret_started = 0;
    _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return;
    char buffer[TRUST_GUARD_HASH_SIZE + 32];
    ssize_t n = read(fd, buffer, sizeof(buffer) - 1);
    if (n <= 0)
        return;
    buffer[n] = '\0';
    size_t line = strcspn(buffer, "\n");
    if (line >= TRUST_GUARD_HASH_SIZE)
        return;
    memcpy(hash, buffer, line);
    hash[line] = '\0';
    if (buffer[line] == '\n')
        *ret_started = strtoll(buffer + line + 1, NULL, 10);
}

/* A window record's name: <key>.<start>-<end>.window. True (with the
 * window) when name is one of key's. */
static bool parse_window(const char *name, const char *key, long long *ret_start,
                         long long *ret_end)
{
    size_t k = strlen(key);
    size_t n = strlen(name);
    if (strncmp(name, key, k) != 0 || name[k] != '.' || n < k + 8 ||
        strcmp(name + n - 7, ".window") != 0)
        return false;
    char *end = NULL;
    errno = 0;
    long long start = strtoll(name + k + 1, &end, 10);
    if (errno || !end || *end != '-')
        return false;
    long long stop = strtoll(end + 1, &end, 10);
    if (errno || !end || strcmp(end, ".window") != 0)
        return false;
    *ret_start = start;
    *ret_end = stop;
    return true;
}

/* A session's end: its pending record becomes its window record, in one
 * rename (see the top of this file for why no sync is needed). */
static int close_window(int dirfd, const char *dir, const char *key, const char *pending,
                        long long start, long long end, struct cordon_error *err)
{
    char name[GUARD_NAME_MAX];
    snprintf(name, sizeof(name), "%.32s.%lld-%lld.window", key, start - GUARD_SLACK,
             end + GUARD_SLACK);
    if (renameat(dirfd, pending, dirfd, name) < 0)
        return error_set(err, errno, "trust guard: recording %s/%s", dir, name);
    return 0;
}

/* Folds key's window records into its .sessions once there are
 * GUARD_WINDOWS_FOLD of them: the lines appended and synced first, then
 * the records removed (a crash between the two leaves both: a window twice
 * is harmless). */
static int fold_windows(int dirfd, const char *dir, const char *key, struct cordon_error *err)
{
    DIR *d = guard_scan(dirfd);
    if (!d)
        return error_set(err, errno, "trust guard %s", dir);
    size_t count = 0;
    struct dirent *e;
    long long start, end;
    while ((e = readdir(d))) {
        if (parse_window(e->d_name, key, &start, &end))
            count++;
    }
    if (count < GUARD_WINDOWS_FOLD) {
        closedir(d);
        return 0;
    }
    char name[GUARD_NAME_MAX];
    snprintf(name, sizeof(name), "%.32s.sessions", key);
    _cleanup_close_ int fd = openat(
        dirfd, name, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
    if (fd < 0) {
        closedir(d);
        return error_set(err, errno, "trust guard: recording %s/%s", dir, name);
    }
    /* The names folded: the ones written to .sessions and synced are the
     * ones removed (a session ending meanwhile adds one after the scan). */
    char(*folded)[sizeof(e->d_name)] = calloc(count, sizeof(*folded));
    if (!folded) {
        closedir(d);
        return error_set(err, ENOMEM, "trust guard");
    }
    size_t nfolded = 0;
    int ret = 0;
    rewinddir(d);
    while (ret == 0 && nfolded < count && (e = readdir(d))) {
        if (!parse_window(e->d_name, key, &start, &end))
            continue;
        char line[64];
        int length = snprintf(line, sizeof(line), "%lld %lld\n", start, end);
        if (write(fd, line, (size_t)length) != length)
            ret = error_set(err, errno ? errno : EIO, "trust guard: recording %s/%s", dir, name);
        else
            snprintf(folded[nfolded++], sizeof(*folded), "%s", e->d_name);
    }
    closedir(d);
    if (ret == 0 && fsync(fd) < 0)
        ret = error_set(err, errno, "trust guard: recording %s/%s", dir, name);
    for (size_t i = 0; ret == 0 && i < nfolded; i++)
        unlinkat(dirfd, folded[i], 0);
    free(folded);
    return ret;
}

/* Whether ctime falls in a window of key's .sessions. */
static bool in_window(int dirfd, const char *key, long long ctime)
{
    char name[GUARD_NAME_MAX];
    snprintf(name, sizeof(name), "%.32s.sessions", key);
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return false;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return false;
    }
    bool found = false;
    long long start, end;
    size_t read_bytes = 0;
    char line[64];
    while (!found && read_bytes < GUARD_SESSIONS_MAX && fgets(line, sizeof(line), f)) {
        read_bytes += strlen(line);
        if (sscanf(line, "%lld %lld", &start, &end) == 2 && ctime >= start && ctime <= end)
            found = true;
    }
    fclose(f);
    return found;
}

static int write_marker(int dirfd, const char *dir, const char *key, const char *hash,
                        struct cordon_error *err)
{
    char name[GUARD_NAME_MAX];
    snprintf(name, sizeof(name), "%s.%s.written", key, hash);
    _cleanup_close_ int fd =
        openat(dirfd, name, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
    if (fd < 0 || fsync(fd) < 0 || fsync(dirfd) < 0)
        return error_set(err, errno, "trust guard: recording %s/%s", dir, name);
    return 0;
}

int trust_guard_written(const char *guard_dir, const char *workspace, const char *hash,
                        bool *ret_written, struct cordon_error *err)
{
    *ret_written = false;
    _cleanup_close_ int dirfd = -1;
    char key[GUARD_KEY_SIZE];
    int found = guard_dir_lookup(guard_dir, workspace, &dirfd, key, err);
    if (found <= 0)
        return found;
    char name[GUARD_NAME_MAX];
    snprintf(name, sizeof(name), "%s.%s.written", key, hash);
    if (faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
        *ret_written = true;
        return 0;
    }
    DIR *d = guard_scan(dirfd);
    if (!d)
        return error_set(err, errno, "trust guard %s", guard_dir);
    /* the workspaces that enclose this one, for a file below their root */
    char ancestors[GUARD_ANCESTORS_MAX][GUARD_KEY_SIZE];
    size_t nancestors = 0;
    long long ctime = -1;
    char file[4096];
    struct stat st;
    if (snprintf(file, sizeof(file), "%s/.cordon.toml", workspace) < (int)sizeof(file) &&
        lstat(file, &st) == 0)
        ctime = (long long)st.st_ctim.tv_sec;
    _cleanup_free_ char *parent = strdup(workspace);
    if (!parent) {
        closedir(d);
        return error_set(err, ENOMEM, "trust guard");
    }
    while (ctime >= 0 && nancestors < GUARD_ANCESTORS_MAX && strcmp(parent, "/") != 0) {
        char *slash = strrchr(parent, '/');
        if (!slash)
            break;
        if (slash == parent)
            slash[1] = '\0';
        else
            *slash = '\0';
        guard_key(parent, ancestors[nancestors]);
        if (in_window(dirfd, ancestors[nancestors], ctime))
            *ret_written = true;
        nancestors++;
    }
    struct dirent *e;
    while (!*ret_written && (e = readdir(d))) {
        bool alive;
        char start[TRUST_GUARD_HASH_SIZE];
        long long started;
        if (parse_pending(e->d_name, key, &alive)) {
            read_pending(dirfd, e->d_name, start, &started);
            if (strcmp(start, hash) != 0)
                *ret_written = true;
            continue;
        }
        for (size_t a = 0; a < nancestors && !*ret_written; a++) {
            long long window_start, window_end;
            if (parse_window(e->d_name, ancestors[a], &window_start, &window_end)) {
                if (ctime >= window_start && ctime <= window_end)
                    *ret_written = true;
                continue;
            }
            if (!parse_pending(e->d_name, ancestors[a], &alive))
                continue;
            read_pending(dirfd, e->d_name, start, &started);
            if (ctime >= started - GUARD_SLACK)
                *ret_written = true;
        }
    }
    closedir(d);
    return 0;
}

/* Settles key's pending records whose session is gone: when the current
 * hash differs from what such a session started with, the current content
 * is marked first (nothing says the sandbox did not write it). */
static int settle_dead(int dirfd, const char *dir, const char *key, const char *current,
                       struct cordon_error *err)
{
    DIR *d = guard_scan(dirfd);
    if (!d)
        return error_set(err, errno, "trust guard %s", dir);
    int ret = 0;
    size_t windows = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        bool alive;
        long long window_start, window_end;
        if (parse_window(e->d_name, key, &window_start, &window_end))
            windows++;
        if (!parse_pending(e->d_name, key, &alive) || alive)
            continue;
        char start[TRUST_GUARD_HASH_SIZE];
        long long started;
        read_pending(dirfd, e->d_name, start, &started);
        if ((current && is_hash(current) && strcmp(start, current) != 0 &&
             write_marker(dirfd, dir, key, current, err) < 0) ||
            close_window(dirfd, dir, key, e->d_name, started, (long long)time(NULL), err) < 0) {
            ret = -1;
            break;
        }
        windows++;
    }
    closedir(d);
    if (ret == 0 && windows >= GUARD_WINDOWS_FOLD)
        ret = fold_windows(dirfd, dir, key, err);
    return ret;
}

static void guard_clear(struct trust_guard *g)
{
    free(g->dir);
    free(g->workspace);
    free(g->pending);
    *g = (struct trust_guard){0};
}

int trust_note_session_start(struct trust_guard *g, const char *guard_dir, const char *workspace,
                             struct cordon_error *err)
{
    static unsigned sequence; /* cordon mcp starts more than one session */
    *g = (struct trust_guard){0};
    _cleanup_close_ int dirfd = guard_dir_open(guard_dir, true, err);
    if (dirfd < 0)
        return -1;
    char key[GUARD_KEY_SIZE];
    guard_key(workspace, key);
    g->started = (long long)time(NULL);
    trust_guard_hash_file(workspace, g->start);
    if (settle_dead(dirfd, guard_dir, key, g->start, err) < 0)
        return -1;
    char name[GUARD_NAME_MAX], temporary[GUARD_NAME_MAX + 8];
    snprintf(name, sizeof(name), "%s.%d-%llu-%u.pending", key, (int)getpid(),
             process_start_time(getpid()), sequence++);
    snprintf(temporary, sizeof(temporary), "%s.tmp", name);
    _cleanup_close_ int fd =
        openat(dirfd, temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return error_set(err, errno, "trust guard: %s/%s", guard_dir, temporary);
    char line[TRUST_GUARD_HASH_SIZE + 32];
    int length = snprintf(line, sizeof(line), "%s\n%lld\n", g->start, g->started);
    if (write(fd, line, (size_t)length) != length || renameat(dirfd, temporary, dirfd, name) < 0) {
        int e = errno ? errno : EIO;
        unlinkat(dirfd, temporary, 0);
        return error_set(err, e, "trust guard: %s/%s", guard_dir, name);
    }
    g->dir = strdup(guard_dir);
    g->workspace = strdup(workspace);
    g->pending = strdup(name);
    if (!g->dir || !g->workspace || !g->pending) {
        unlinkat(dirfd, name, 0);
        guard_clear(g);
        return error_set(err, ENOMEM, "trust guard");
    }
    g->armed = true;
    return 0;
}

int trust_note_session_end(struct trust_guard *g, struct cordon_error *err)
{
    if (!g->armed)
        return 0;
    int ret = 0;
    _cleanup_close_ int dirfd = guard_dir_open(g->dir, false, err);
    if (dirfd == -2) {
        ret = error_set(err, ENOENT, "trust guard %s", g->dir);
    } else if (dirfd < 0) {
        ret = -1;
    } else {
        char now[TRUST_GUARD_HASH_SIZE];
        trust_guard_hash_file(g->workspace, now);
        char key[GUARD_KEY_SIZE];
        guard_key(g->workspace, key);
        /* the pending record stays when the marker cannot be written: it
         * keeps the file flagged */
        if (strcmp(now, g->start) != 0 && is_hash(now))
            ret = write_marker(dirfd, g->dir, key, now, err);
        if (ret == 0)
            ret = close_window(dirfd, g->dir, key, g->pending, g->started, (long long)time(NULL),
                               err);
    }
    guard_clear(g);
    return ret;
}

int trust_guard_forget(const char *guard_dir, const char *workspace, struct cordon_error *err)
{
    _cleanup_close_ int dirfd = -1;
    char key[GUARD_KEY_SIZE];
    int found = guard_dir_lookup(guard_dir, workspace, &dirfd, key, err);
    if (found <= 0)
        return found;
    if (settle_dead(dirfd, guard_dir, key, NULL, err) < 0)
        return -1;
    DIR *d = guard_scan(dirfd);
    if (!d)
        return error_set(err, errno, "trust guard %s", guard_dir);
    size_t k = strlen(key);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, key, k) == 0 && e->d_name[k] == '.' && n > 8 &&
            strcmp(e->d_name + n - 8, ".written") == 0)
            unlinkat(dirfd, e->d_name, 0);
    }
    closedir(d);
    return 0;
}
