/* The trust guard (trust-guard.h). Host context, unprivileged.
 *
 * The records are files, one directory per workspace, named so that
 * creating one is a single atomic step and no lock is needed between
 * concurrent sessions:
 *   <key>/                           one workspace's records (0700)
 *     <pid>-<starttime>-<n>.pending  a running session; holds the hash the
 *                                    file had when it started
 *     <sha256>.written               content a session created or changed
 *     <start>-<end>.window           a session that ended: its pending
 *                                    record renamed (wall-clock seconds)
 *     sessions                       "start end" of earlier windows, folded
 *                                    in by a later session
 *   .layout                          the flat records of the first layout
 *                                    (<key>.<record>) were moved in
 * where <key> is the first 32 hex digits of the SHA-256 of the canonical
 * workspace path. A session looks only at its own workspace's directory and
 * those of the workspaces that enclose it, so its start costs the same
 * after ten workspaces or ten thousand (the flat layout listed every
 * record of every workspace ever used at each start: 1.5-3 ms with 5,000).
 *
 * The windows cover a .cordon.toml below the root, which is another
 * workspace's file (a submodule, a project in a non-git directory): the
 * sandbox could write it, and the guard cannot hash every file of the tree.
 * Such a file whose ctime (which nobody without privilege can set back)
 * falls in a session of an enclosing workspace is flagged. A pending record
 * whose process is gone (pid and start time no longer match) belongs to a
 * session that ended without its end step; it still flags the file, and the
 * next session of the workspace settles it.
 *
 * A session's end is one rename, pending record to window record, with no
 * sync: whichever of the two names a crash leaves, the file stays flagged
 * (a pending record of a process that is gone flags it, and is settled
 * into a window by the next session). The older scheme appended to
 * sessions, synced it, then removed the pending record: two steps whose
 * order only a sync kept, at every session's end (1-62 ms under disk
 * load). The windows are folded into sessions (one sync) once a workspace
 * has GUARD_WINDOWS_FOLD of them, so its directory stays small.
 *
 * Every lookup failure other than "no record" flags the file: a guard that
 * cannot read its records must not let cordon nudge the user to trust. */
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
/* a workspace's window records folded into its sessions from this many on */
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

/* A guard directory (the top one or a workspace's) must be a directory
 * owned by the user (or root) that nobody else can change: a deleted marker
 * would bring back the nudge. fd is closed when refused. */
static int guard_dir_check(int fd, const char *dir, const char *key, struct cordon_error *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return error_set(err, e, "trust guard %s%s%s", dir, key ? "/" : "", key ? key : "");
    }
    if (!S_ISDIR(st.st_mode) || (st.st_mode & 022) || (st.st_uid != 0 && st.st_uid != geteuid())) {
        close(fd);
        return error_set(err, 0,
                         "trust guard %s%s%s: must be a directory owned by you and not writable "
                         "by group or others",
                         dir, key ? "/" : "", key ? key : "");
    }
    return fd;
}

/* The guard directory, created 0700 (with its parents) when missing, opened
 * without following a symlink; -2 when it is missing and not created. */
static int guard_dir_open(const char *dir, bool create, struct cordon_error *err)
{
    if (create && fs_mkdir_p(dir, 0700) < 0)
        return error_set(err, errno, "trust guard: mkdir %s", dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ENOENT && !create)
        return -2;
    if (fd < 0)
        return error_set(err, errno, "trust guard %s", dir);
    return guard_dir_check(fd, dir, NULL, err);
}

enum key_dir_mode { KEY_DIR_LOOKUP, KEY_DIR_CREATE, KEY_DIR_CREATE_UNSYNCED };

/* Workspace key's directory in the guard directory rootfd, created 0700
 * when missing unless mode is KEY_DIR_LOOKUP (the new entry synced, so a
 * marker synced in it is found after a crash, unless the caller syncs
 * rootfd itself); -2 when it is missing and not created. */
static int key_dir_open(int rootfd, const char *dir, const char *key, enum key_dir_mode mode,
                        struct cordon_error *err)
{
    bool create = mode != KEY_DIR_LOOKUP;
    if (create) {
        if (mkdirat(rootfd, key, 0700) == 0) {
            if (mode == KEY_DIR_CREATE && fsync(rootfd) < 0)
                return error_set(err, errno, "trust guard %s/%s", dir, key);
        } else if (errno != EEXIST) {
            return error_set(err, errno, "trust guard: mkdir %s/%s", dir, key);
        }
    }
    int fd = openat(rootfd, key, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ENOENT && !create)
        return -2;
    if (fd < 0)
        return error_set(err, errno, "trust guard %s/%s", dir, key);
    return guard_dir_check(fd, dir, key, err);
}

/* A listing of a guard directory from its start. A duplicate shares the
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

/* A name of the flat layout: 32 hex digits, '.', then the record's name. */
static bool flat_record(const char *name, char key[GUARD_KEY_SIZE], const char **ret_record)
{
    for (int i = 0; i < GUARD_KEY_SIZE - 1; i++) {
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return false;
    }
    if (name[GUARD_KEY_SIZE - 1] != '.' || name[GUARD_KEY_SIZE] == '\0')
        return false;
    memcpy(key, name, GUARD_KEY_SIZE - 1);
    key[GUARD_KEY_SIZE - 1] = '\0';
    *ret_record = name + GUARD_KEY_SIZE;
    return true;
}

/* Appends the flat <key>.sessions (fd) to the key's sessions, synced, when
 * both exist (a session of this layout already folded windows). */
static int append_sessions(int from, int keyfd)
{
    _cleanup_close_ int to =
        openat(keyfd, "sessions", O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (to < 0)
        return -1;
    char buffer[4096];
    ssize_t n;
    off_t total = 0;
    while ((n = read(from, buffer, sizeof(buffer))) > 0) {
        /* the flat file is removed after: nothing of it may be dropped */
        if ((total += n) > GUARD_SESSIONS_MAX) {
            errno = EFBIG;
            return -1;
        }
        if (write(to, buffer, (size_t)n) != n)
            return -1;
    }
    return n < 0 || fsync(to) < 0 ? -1 : 0;
}

/* Moves one flat record into its workspace's directory: 1, or 0 when name
 * is not one, -1 on error. */
static int migrate_record(int rootfd, const char *dir, const char *name, struct cordon_error *err)
{
    char key[GUARD_KEY_SIZE];
    const char *record;
    if (!flat_record(name, key, &record))
        return 0;
    const char *target = record; /* <key>.sessions becomes <key>/sessions */
    _cleanup_close_ int keyfd = key_dir_open(rootfd, dir, key, KEY_DIR_CREATE_UNSYNCED, err);
    if (keyfd < 0)
        return -1;
    if (renameat2(rootfd, name, keyfd, target, RENAME_NOREPLACE) == 0 || errno == ENOENT)
        return 1;
    if (errno != EEXIST)
        return error_set(err, errno, "trust guard: moving %s/%s", dir, name);
    /* the same record under both layouts: one is enough, except that two
     * sessions files each hold windows */
    if (strcmp(target, "sessions") == 0) {
        _cleanup_close_ int from =
            openat(rootfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (from < 0 || append_sessions(from, keyfd) < 0)
            return error_set(err, errno ? errno : EIO, "trust guard: moving %s/%s", dir, name);
    }
    if (unlinkat(rootfd, name, 0) < 0 && errno != ENOENT)
        return error_set(err, errno, "trust guard: moving %s/%s", dir, name);
    return 1;
}

/* Once per guard directory (ALWAYS: whatever .layout says, for the checks
 * before a nudge: an older cordon running beside this one still writes flat
 * records after the move): the records of the flat layout, which an
 * earlier cordon kept, move into their workspaces' directories, then
 * .layout says so, synced with the new directories' entries. Until it
 * exists every use retries, so a move cut short loses nothing; concurrent
 * moves are safe (each record is one rename). */
static int guard_migrate(int rootfd, const char *dir, bool always, struct cordon_error *err)
{
    if (!always && faccessat(rootfd, ".layout", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        return 0;
    DIR *d = guard_scan(rootfd);
    if (!d)
        return error_set(err, errno, "trust guard %s", dir);
    struct dirent *e;
    int ret = 0;
    size_t moved = 0;
    while (ret >= 0 && (e = readdir(d))) {
        if (e->d_type == DT_REG || e->d_type == DT_UNKNOWN)
            ret = migrate_record(rootfd, dir, e->d_name, err);
        moved += ret > 0;
    }
    closedir(d);
    if (ret < 0)
        return -1;
    _cleanup_close_ int fd =
        openat(rootfd, ".layout", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    /* nothing was moved: a directory only readable here (root's, seen by
     * a lookup) is fine as it is, the marker is written another time */
    if (fd < 0 && (errno == EEXIST || moved == 0))
        return 0;
    if (fd < 0 || write(fd, "2\n", 2) != 2 || fsync(fd) < 0 || fsync(rootfd) < 0)
        return error_set(err, errno ? errno : EIO, "trust guard: %s/.layout", dir);
    return 0;
}

/* The guard directory as it is (not created, any flat record moved) in
 * *ret_rootfd and WORKSPACE's directory in *ret_keyfd (-1 when it has none
 * yet): 1, with *ret_swept false (and err saying why) when a flat record
 * could not be moved (a directory only readable here); 0 when there is no
 * guard directory (nothing was recorded, both untouched); -1 on error. */
static int guard_dir_lookup(const char *dir, const char *workspace, int *ret_rootfd, int *ret_keyfd,
                            char key[GUARD_KEY_SIZE], bool *ret_swept, struct cordon_error *err)
{
    int fd = guard_dir_open(dir, false, err);
    if (fd < 0)
        return fd == -2 ? 0 : -1;
    *ret_swept = guard_migrate(fd, dir, true, err) == 0;
    guard_key(workspace, key);
    int keyfd = key_dir_open(fd, dir, key, KEY_DIR_LOOKUP, err);
    if (keyfd == -1) {
        close(fd);
        return -1;
    }
    *ret_rootfd = fd;
    *ret_keyfd = keyfd == -2 ? -1 : keyfd;
    return 1;
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

static bool has_suffix(const char *name, const char *suffix)
{
    size_t n = strlen(name), s = strlen(suffix);
    return n > s && strcmp(name + n - s, suffix) == 0;
}

/* A pending record's name: <pid>-<starttime>-<n>.pending. True (with
 * *ret_alive) when name is one. */
static bool parse_pending(const char *name, bool *ret_alive)
{
    if (!has_suffix(name, ".pending"))
        return false;
    char *end = NULL;
    errno = 0;
    long pid = strtol(name, &end, 10);
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

/* A window record's name: <start>-<end>.window. True (with the window)
 * when name is one. */
static bool parse_window(const char *name, long long *ret_start, long long *ret_end)
{
    if (!has_suffix(name, ".window"))
        return false;
    char *end = NULL;
    errno = 0;
    long long start = strtoll(name, &end, 10);
    if (errno || !end || end == name || *end != '-')
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
static int close_window(int keyfd, const char *dir, const char *key, const char *pending,
                        long long start, long long end, struct cordon_error *err)
{
    char name[GUARD_NAME_MAX];
    snprintf(name, sizeof(name), "%lld-%lld.window", start - GUARD_SLACK, end + GUARD_SLACK);
    if (renameat(keyfd, pending, keyfd, name) < 0)
        return error_set(err, errno, "trust guard: recording %s/%s/%s", dir, key, name);
    return 0;
}

/* Folds the workspace's window records into its sessions once there are
 * GUARD_WINDOWS_FOLD of them: the lines appended and synced first, then
 * the records removed (a crash between the two leaves both: a window twice
 * is harmless). */
static int fold_windows(int keyfd, const char *dir, const char *key, struct cordon_error *err)
{
    DIR *d = guard_scan(keyfd);
    if (!d)
        return error_set(err, errno, "trust guard %s/%s", dir, key);
    size_t count = 0;
    struct dirent *e;
    long long start, end;
    while ((e = readdir(d))) {
        if (parse_window(e->d_name, &start, &end))
            count++;
    }
    if (count < GUARD_WINDOWS_FOLD) {
        closedir(d);
        return 0;
    }
    _cleanup_close_ int fd =
        openat(keyfd, "sessions",
               O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
    if (fd < 0) {
        closedir(d);
        return error_set(err, errno, "trust guard: recording %s/%s/sessions", dir, key);
    }
    /* The names folded: the ones written to sessions and synced are the
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
        if (!parse_window(e->d_name, &start, &end))
            continue;
        char line[64];
        int length = snprintf(line, sizeof(line), "%lld %lld\n", start, end);
        if (write(fd, line, (size_t)length) != length)
            ret = error_set(err, errno ? errno : EIO, "trust guard: recording %s/%s/sessions", dir,
                            key);
        else
            snprintf(folded[nfolded++], sizeof(*folded), "%s", e->d_name);
    }
    closedir(d);
    if (ret == 0 && fsync(fd) < 0)
        ret = error_set(err, errno, "trust guard: recording %s/%s/sessions", dir, key);
    for (size_t i = 0; ret == 0 && i < nfolded; i++)
        unlinkat(keyfd, folded[i], 0);
    free(folded);
    return ret;
}

/* Whether ctime falls in a window of the workspace's sessions. */
static bool in_window(int keyfd, long long ctime)
{
    int fd = openat(keyfd, "sessions", O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
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

static int write_marker(int keyfd, const char *dir, const char *key, const char *hash,
                        struct cordon_error *err)
{
    char name[GUARD_NAME_MAX];
    snprintf(name, sizeof(name), "%s.written", hash);
    _cleanup_close_ int fd =
        openat(keyfd, name, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
    if (fd < 0 || fsync(fd) < 0 || fsync(keyfd) < 0)
        return error_set(err, errno, "trust guard: recording %s/%s/%s", dir, key, name);
    return 0;
}

/* Whether this workspace's own records flag content hash: a session
 * (running, or dead without its end) that started with other content. */
static bool own_pending_flags(int keyfd, const char *hash)
{
    DIR *d = guard_scan(keyfd);
    if (!d)
        return true;
    bool flagged = false;
    struct dirent *e;
    while (!flagged && (e = readdir(d))) {
        bool alive;
        char start[TRUST_GUARD_HASH_SIZE];
        long long started;
        if (!parse_pending(e->d_name, &alive))
            continue;
        read_pending(keyfd, e->d_name, start, &started);
        flagged = strcmp(start, hash) != 0;
    }
    closedir(d);
    return flagged;
}

/* Whether an enclosing workspace's records (its directory keyfd) cover a
 * file last changed at ctime: a window, folded or not, around it, or a
 * session (running, or dead without its end) that started before it. */
static bool enclosing_flags(int keyfd, long long ctime)
{
    if (in_window(keyfd, ctime))
        return true;
    DIR *d = guard_scan(keyfd);
    if (!d)
        return true;
    bool flagged = false;
    struct dirent *e;
    while (!flagged && (e = readdir(d))) {
        bool alive;
        long long window_start, window_end;
        if (parse_window(e->d_name, &window_start, &window_end)) {
            flagged = ctime >= window_start && ctime <= window_end;
            continue;
        }
        if (!parse_pending(e->d_name, &alive))
            continue;
        char start[TRUST_GUARD_HASH_SIZE];
        long long started;
        read_pending(keyfd, e->d_name, start, &started);
        flagged = ctime >= started - GUARD_SLACK;
    }
    closedir(d);
    return flagged;
}

/* Whether a session of a workspace enclosing WORKSPACE covers its file's
 * ctime (none when the file is missing). */
static int ancestors_flag(int rootfd, const char *dir, const char *workspace, bool *ret_written,
                          struct cordon_error *err)
{
    char file[4096];
    struct stat st;
    if (snprintf(file, sizeof(file), "%s/.cordon.toml", workspace) >= (int)sizeof(file) ||
        lstat(file, &st) < 0)
        return 0;
    long long ctime = (long long)st.st_ctim.tv_sec;
    _cleanup_free_ char *parent = strdup(workspace);
    if (!parent)
        return error_set(err, ENOMEM, "trust guard");
    for (size_t n = 0; !*ret_written && n < GUARD_ANCESTORS_MAX && strcmp(parent, "/") != 0; n++) {
        char *slash = strrchr(parent, '/');
        if (!slash)
            break;
        if (slash == parent)
            slash[1] = '\0';
        else
            *slash = '\0';
        char key[GUARD_KEY_SIZE];
        guard_key(parent, key);
        struct cordon_error ignored;
        int keyfd = key_dir_open(rootfd, dir, key, KEY_DIR_LOOKUP, &ignored);
        if (keyfd == -2)
            continue;
        *ret_written = keyfd < 0 || enclosing_flags(keyfd, ctime);
        if (keyfd >= 0)
            close(keyfd);
    }
    return 0;
}

int trust_guard_written(const char *guard_dir, const char *workspace, const char *hash,
                        bool *ret_written, struct cordon_error *err)
{
    *ret_written = false;
    _cleanup_close_ int rootfd = -1;
    _cleanup_close_ int keyfd = -1;
    char key[GUARD_KEY_SIZE];
    bool swept;
    int found = guard_dir_lookup(guard_dir, workspace, &rootfd, &keyfd, key, &swept, err);
    if (found <= 0)
        return found;
    /* a flat record left where it cannot be moved may be this file's:
     * flagged, rather than a nudge on a guess */
    if (!swept) {
        *ret_written = true;
        return 0;
    }
    if (keyfd >= 0) {
        char name[GUARD_NAME_MAX];
        snprintf(name, sizeof(name), "%s.written", hash);
        if (faccessat(keyfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ||
            own_pending_flags(keyfd, hash)) {
            *ret_written = true;
            return 0;
        }
    }
    return ancestors_flag(rootfd, guard_dir, workspace, ret_written, err);
}

/* Settles the workspace's pending records whose session is gone: when the
 * current hash differs from what such a session started with, the current
 * content is marked first (nothing says the sandbox did not write it). */
static int settle_dead(int keyfd, const char *dir, const char *key, const char *current,
                       struct cordon_error *err)
{
    DIR *d = guard_scan(keyfd);
    if (!d)
        return error_set(err, errno, "trust guard %s/%s", dir, key);
    int ret = 0;
    size_t windows = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        bool alive;
        long long window_start, window_end;
        if (parse_window(e->d_name, &window_start, &window_end))
            windows++;
        if (!parse_pending(e->d_name, &alive) || alive)
            continue;
        char start[TRUST_GUARD_HASH_SIZE];
        long long started;
        read_pending(keyfd, e->d_name, start, &started);
        if ((current && is_hash(current) && strcmp(start, current) != 0 &&
             write_marker(keyfd, dir, key, current, err) < 0) ||
            close_window(keyfd, dir, key, e->d_name, started, (long long)time(NULL), err) < 0) {
            ret = -1;
            break;
        }
        windows++;
    }
    closedir(d);
    if (ret == 0 && windows >= GUARD_WINDOWS_FOLD)
        ret = fold_windows(keyfd, dir, key, err);
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
    _cleanup_close_ int rootfd = guard_dir_open(guard_dir, true, err);
    if (rootfd < 0 || guard_migrate(rootfd, guard_dir, false, err) < 0)
        return -1;
    char key[GUARD_KEY_SIZE];
    guard_key(workspace, key);
    _cleanup_close_ int keyfd = key_dir_open(rootfd, guard_dir, key, KEY_DIR_CREATE, err);
    if (keyfd < 0)
        return -1;
    g->started = (long long)time(NULL);
    trust_guard_hash_file(workspace, g->start);
    if (settle_dead(keyfd, guard_dir, key, g->start, err) < 0)
        return -1;
    char name[GUARD_NAME_MAX], temporary[GUARD_NAME_MAX + 8];
    snprintf(name, sizeof(name), "%d-%llu-%u.pending", (int)getpid(), process_start_time(getpid()),
             sequence++);
    snprintf(temporary, sizeof(temporary), "%s.tmp", name);
    _cleanup_close_ int fd =
        openat(keyfd, temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return error_set(err, errno, "trust guard: %s/%s/%s", guard_dir, key, temporary);
    char line[TRUST_GUARD_HASH_SIZE + 32];
    int length = snprintf(line, sizeof(line), "%s\n%lld\n", g->start, g->started);
    if (write(fd, line, (size_t)length) != length || renameat(keyfd, temporary, keyfd, name) < 0) {
        int e = errno ? errno : EIO;
        unlinkat(keyfd, temporary, 0);
        return error_set(err, e, "trust guard: %s/%s/%s", guard_dir, key, name);
    }
    g->dir = strdup(guard_dir);
    g->workspace = strdup(workspace);
    g->pending = strdup(name);
    if (!g->dir || !g->workspace || !g->pending) {
        unlinkat(keyfd, name, 0);
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
    char key[GUARD_KEY_SIZE];
    guard_key(g->workspace, key);
    _cleanup_close_ int rootfd = guard_dir_open(g->dir, false, err);
    _cleanup_close_ int keyfd = -1;
    if (rootfd >= 0)
        keyfd = key_dir_open(rootfd, g->dir, key, KEY_DIR_LOOKUP, err);
    if (rootfd == -2 || keyfd == -2) {
        ret = error_set(err, ENOENT, "trust guard %s/%s", g->dir, key);
    } else if (rootfd < 0 || keyfd < 0) {
        ret = -1;
    } else {
        char now[TRUST_GUARD_HASH_SIZE];
        trust_guard_hash_file(g->workspace, now);
        /* the pending record stays when the marker cannot be written: it
         * keeps the file flagged */
        if (strcmp(now, g->start) != 0 && is_hash(now))
            ret = write_marker(keyfd, g->dir, key, now, err);
        if (ret == 0)
            ret = close_window(keyfd, g->dir, key, g->pending, g->started, (long long)time(NULL),
                               err);
    }
    guard_clear(g);
    return ret;
}

int trust_guard_forget(const char *guard_dir, const char *workspace, struct cordon_error *err)
{
    _cleanup_close_ int rootfd = -1;
    _cleanup_close_ int keyfd = -1;
    char key[GUARD_KEY_SIZE];
    bool swept;
    int found = guard_dir_lookup(guard_dir, workspace, &rootfd, &keyfd, key, &swept, err);
    if (found > 0 && !swept)
        return -1;
    if (found <= 0 || keyfd < 0)
        return found < 0 ? -1 : 0;
    if (settle_dead(keyfd, guard_dir, key, NULL, err) < 0)
        return -1;
    DIR *d = guard_scan(keyfd);
    if (!d)
        return error_set(err, errno, "trust guard %s/%s", guard_dir, key);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (has_suffix(e->d_name, ".written"))
            unlinkat(keyfd, e->d_name, 0);
    }
    closedir(d);
    return 0;
}
