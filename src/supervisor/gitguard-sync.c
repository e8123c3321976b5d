/* The git metadata guard while the sandbox runs and at its end
 * (gitguard.h): what the sandbox changed in the synced files is carried to
 * the host after checks, mirrors refreshed, planted files quarantined, the
 * host's trusted files protected. Host context, unprivileged supervisor;
 * every access by fd (gitguard.c's opening comment). */
#include "supervisor/gitguard-internal.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/dirscan.h"
#include "util/fs.h"
#include "util/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool head_valid(const char *buf, size_t n)
{
    if (n > 0 && buf[n - 1] == '\n')
        n--;
    if (n >= 5 && strncmp(buf, "ref: ", 5) == 0) {
        const char *ref = buf + 5;
        size_t len = n - 5;
        if (len < 6 || strncmp(ref, "refs/", 5) != 0)
            return false;
        for (size_t i = 0; i < len; i++) {
            unsigned char ch = (unsigned char)ref[i];
            if (ch <= ' ' || ch == 0x7f || ch == '\\' || ch == ':')
                return false;
            if (i + 1 < len && ref[i] == '.' && ref[i + 1] == '.')
                return false;
        }
        return true;
    }
    if (n != 40 && n != 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789abcdef", buf[i]))
            return false;
    return true;
}

static void report_once(struct gitguard_dir *d, struct gitguard_file *f, const char *why)
{
    if (f->reported)
        return;
    f->reported = true;
    log_warn("cordon kept the host's %s/%s: %s", d->host, f->name, why);
}

static bool deletable(const char *name)
{
    return strcmp(name, "HEAD") != 0 && strcmp(name, "index") != 0;
}

/* Replaces to_dir/name by from_dir/name under git's lock protocol (name.lock,
 * created exclusively, renamed over name). 1 when the lock is held by
 * someone else (try again later), 0 done, -1 failed. */
static int replace_locked(int from_dir, int to_dir, const char *name, bool check_head)
{
    char lock[96];
    snprintf(lock, sizeof(lock), "%s.lock", name);
    struct stat st;
    _cleanup_close_ int in = gitguard_open_regular(from_dir, name, &st);
    if (in < 0)
        return -1;
    off_t max = strcmp(name, "index") == 0 ? GITGUARD_INDEX_MAX : GITGUARD_FILE_MAX;
    if (st.st_size > max) {
        errno = EFBIG;
        return -1;
    }
    if (check_head) {
        char buf[256];
        ssize_t n = pread(in, buf, sizeof(buf), 0);
        if (n < 0 || (size_t)n == sizeof(buf) || !head_valid(buf, (size_t)n)) {
            errno = EINVAL;
            return -1;
        }
    }
    struct stat old;
    bool had_old = fstatat(to_dir, name, &old, AT_SYMLINK_NOFOLLOW) == 0;
    _cleanup_close_ int out =
        openat(to_dir, lock, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
               had_old ? (old.st_mode & 0777) : 0644);
    if (out < 0)
        return errno == EEXIST ? 1 : -1;
    return fs_rename_temp(
        to_dir, lock, name,
        gitguard_copy_data(in, out, max) == 0 &&
            !(geteuid() == 0 && had_old && fchown(out, old.st_uid, old.st_gid) < 0));
}

static int unlink_locked(int dir, const char *name)
{
    char lock[96];
    snprintf(lock, sizeof(lock), "%s.lock", name);
    int fd = openat(dir, lock, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return errno == EEXIST ? 1 : -1;
    close(fd);
    int rc = unlinkat(dir, name, 0) < 0 && errno != ENOENT ? -1 : 0;
    unlinkat(dir, lock, 0);
    return rc;
}

/* The host's version of a mirrored file, into the read-only copy, in place:
 * the copy is a mount point inside, and a rename over it would detach the
 * read-only bind. */
static void refresh_mirror(struct gitguard_dir *d, struct gitguard_file *f)
{
    struct stat st;
    _cleanup_close_ int in = gitguard_open_regular(d->host_fd, f->name, &st);
    _cleanup_close_ int out = gitguard_open_beneath(d->copy_fd, f->name, O_WRONLY);
    if (in < 0 || out < 0 || ftruncate(out, 0) < 0 ||
        gitguard_copy_data(in, out, GITGUARD_FILE_MAX) < 0)
        log_debug("git metadata: refreshing %s/%s: %s", d->host, f->name, strerror(errno));
}

static void sync_file(struct gitguard_dir *d, struct gitguard_file *f)
{
    struct gitguard_stamp hs = gitguard_stamp_at(d->host_fd, f->name);
    struct gitguard_stamp cs = gitguard_stamp_at(d->copy_fd, f->name);
    bool host_changed = !gitguard_stamp_same(&hs, &f->host);
    bool copy_changed = !gitguard_stamp_same(&cs, &f->copy);
    if (f->kind == GITGUARD_MIRROR) {
        if (host_changed && hs.exists)
            refresh_mirror(d, f);
        f->host = hs;
        f->copy = gitguard_stamp_at(d->copy_fd, f->name);
        return;
    }
    if (!host_changed && !copy_changed)
        return;
    int rc = 0;
    if (copy_changed && !host_changed) {
        if (!cs.exists)
            rc = deletable(f->name) && hs.exists ? unlink_locked(d->host_fd, f->name) : 0;
        else
            rc = replace_locked(d->copy_fd, d->host_fd, f->name, strcmp(f->name, "HEAD") == 0);
        if (rc < 0) {
            report_once(d, f,
                        errno == EINVAL || errno == ELOOP
                            ? "what the sandbox wrote there is not what git writes (refused)"
                            : strerror(errno));
            f->copy = cs; /* not retried until it changes again */
            return;
        }
    } else {
        if (copy_changed)
            report_once(d, f,
                        "the host and the sandbox both changed it; the sandbox's version "
                        "was dropped");
        if (!hs.exists)
            rc = deletable(f->name) && cs.exists ? unlink_locked(d->copy_fd, f->name) : 0;
        else
            rc = replace_locked(d->host_fd, d->copy_fd, f->name, false);
        if (rc < 0) {
            log_debug("git metadata: updating the sandbox's %s: %s", f->name, strerror(errno));
            f->host = hs;
            return;
        }
    }
    if (rc == 1)
        return; /* a lock is held: next time */
    f->host = gitguard_stamp_at(d->host_fd, f->name);
    f->copy = gitguard_stamp_at(d->copy_fd, f->name);
}

int gitguard_poll_timeout(const struct gitguard *g, int timeout_ms)
{
    if (!g || !g->active)
        return timeout_ms;
    long long left = g->last_sync_ms + GITGUARD_SYNC_INTERVAL_MS - clock_now_ms();
    int due = left < 0 ? 0 : (int)left;
    return timeout_ms < 0 || due < timeout_ms ? due : timeout_ms;
}

void gitguard_sync_if_due(struct gitguard *g)
{
    if (g && g->active && clock_now_ms() - g->last_sync_ms >= GITGUARD_SYNC_INTERVAL_MS)
        gitguard_sync(g);
}

void gitguard_sync(struct gitguard *g)
{
    if (!g || !g->active)
        return;
    g->last_sync_ms = clock_now_ms();
    for (size_t i = 0; i < g->ndirs; i++) {
        struct gitguard_dir *d = &g->dirs[i];
        if (d->host_fd < 0 || d->copy_fd < 0)
            continue;
        for (size_t j = 0; j < d->nfiles; j++)
            sync_file(d, &d->files[j]);
    }
}

/* Gives the directory fd (any fd of it, O_PATH included) its owner's
 * permission bits ADD back: the sandbox can take them (chmod 111 hides a
 * planted repository from the walk, chmod 555 keeps one from being moved
 * aside). Only a directory of this user's, through its fd: the name is not
 * looked up again. Said in a warning; 0, or -1 with errno. */
static int owner_bits_back(int fd, const char *what, mode_t add)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -1;
    mode_t mode = st.st_mode & 07777;
    if (fs_owner_bits_back(fd, add) < 0)
        return -1;
    log_warn("cordon gave %s its owner's permissions back (mode %o, now %o): the sandbox had "
             "taken them, which hides files from the host's checks or keeps them in place",
             what, (unsigned)mode, (unsigned)(mode | add));
    return 0;
}

/* Moves dir/name aside (name.cordon-quarantine-SESSION) and says so. */
static void quarantine(struct gitguard *g, int dirfd, const char *where, const char *name)
{
    char aside[NAME_MAX + 1];
    int n = snprintf(aside, sizeof(aside), "%s.cordon-quarantine-%s", name, g->session);
    if (n < 0 || (size_t)n >= sizeof(aside))
        snprintf(aside, sizeof(aside), "%.40s.cordon-quarantine", name);
    int moved = renameat2(dirfd, name, dirfd, aside, RENAME_NOREPLACE);
    if (moved < 0 && errno == EACCES && owner_bits_back(dirfd, where, S_IWUSR | S_IXUSR) == 0)
        moved = renameat2(dirfd, name, dirfd, aside, RENAME_NOREPLACE);
    if (moved < 0) {
        log_error("cordon could not move the sandbox's %s/%s aside (%s): do not let git, an "
                  "editor or direnv use it before you checked it",
                  where, name, strerror(errno));
        return;
    }
    log_warn("cordon moved %s/%s to %s: the sandbox created or changed it, and the host's git, "
             "editor or shell would trust it; check it before you rename it back",
             where, name, aside);
}

static bool after_start(const struct gitguard *g, int dirfd, const char *name)
{
    struct statx stx;
    if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW, STATX_CTIME | STATX_BTIME, &stx) < 0)
        return false;
    struct statx_timestamp t = stx.stx_ctime;
    if ((stx.stx_mask & STATX_BTIME) &&
        (stx.stx_btime.tv_sec > t.tv_sec ||
         (stx.stx_btime.tv_sec == t.tv_sec && stx.stx_btime.tv_nsec > t.tv_nsec)))
        t = stx.stx_btime;
    return t.tv_sec > g->started.tv_sec ||
           (t.tv_sec == g->started.tv_sec && (long)t.tv_nsec >= g->started.tv_nsec);
}

/* A gitfile the sandbox wrote is left alone when it names a git directory
 * cordon guarded (a submodule checked out inside). */
static bool gitfile_points_to_guarded(const struct gitguard *g, int dirfd, const char *where)
{
    char line[PATH_MAX + 16];
    if (gitguard_read_line_at(dirfd, ".git", line, sizeof(line)) < 0 ||
        strncmp(line, "gitdir: ", 8) != 0)
        return false;
    _cleanup_free_ char *target = gitguard_resolve_from(where, line + 8);
    for (size_t i = 0; target && i < g->ndirs; i++)
        if (strcmp(target, g->dirs[i].host) == 0)
            return true;
    return false;
}

/* A repository below the root that the sandbox made, or whose config or
 * hooks it changed. */
static bool nested_repo_touched(const struct gitguard *g, int dirfd)
{
    if (after_start(g, dirfd, ".git"))
        return true;
    _cleanup_close_ int gd = gitguard_open_beneath(dirfd, ".git", O_RDONLY | O_DIRECTORY);
    if (gd < 0)
        return false;
    static const char *const trusted[] = {"config", "config.worktree", "commondir", "hooks",
                                          "info"};
    for (size_t i = 0; i < ARRAY_SIZE(trusted); i++)
        if (after_start(g, gd, trusted[i]))
            return true;
    _cleanup_close_ int hooks = gitguard_open_beneath(gd, "hooks", O_RDONLY | O_DIRECTORY);
    if (hooks < 0)
        return false;
    _cleanup_closedir_ DIR *dir = gitguard_opendir_dup(hooks);
    if (!dir)
        return false;
    for (struct dirent *e; (e = readdir(dir));)
        if (e->d_name[0] != '.' && after_start(g, hooks, e->d_name))
            return true;
    return false;
}

/* The walk's buffers, one per depth, allocated as it goes down. */
#define PLANTED_DEPTH_MAX 64
struct planted_walk {
    size_t budget; /* entries left to look at */
    char *buffers[PLANTED_DEPTH_MAX + 1];
};

/* Whether dirfd's .git (seen in its listing) was planted or changed. */
static void check_planted(struct gitguard *g, int dirfd, const char *where)
{
    struct stat st;
    if (fstatat(dirfd, ".git", &st, AT_SYMLINK_NOFOLLOW) < 0)
        return;
    bool planted;
    if (S_ISDIR(st.st_mode))
        planted = nested_repo_touched(g, dirfd);
    else if (S_ISREG(st.st_mode))
        planted = after_start(g, dirfd, ".git") && !gitfile_points_to_guarded(g, dirfd, where);
    else
        planted = after_start(g, dirfd, ".git");
    if (planted)
        quarantine(g, dirfd, where, ".git");
}

/* dirfd's entry en opened for the walk; one the sandbox made unreadable
 * is given its owner's read and search bits back first. */
static int open_for_walk(int dirfd, const char *where, const char *en)
{
    int sub = gitguard_open_beneath(dirfd, en, O_RDONLY | O_DIRECTORY);
    if (sub >= 0 || errno != EACCES)
        return sub;
    _cleanup_close_ int pin = gitguard_open_beneath(dirfd, en, O_PATH | O_DIRECTORY);
    _cleanup_free_ char *what = gitguard_str_printf("%s/%s", where, en);
    if (pin < 0 || owner_bits_back(pin, what ? what : en, S_IRUSR | S_IXUSR) < 0) {
        log_error("cordon could not look into %s/%s for planted repositories (%s): do not run "
                  "git there before you checked it",
                  where, en, strerror(errno));
        return -1;
    }
    return gitguard_open_beneath(dirfd, en, O_RDONLY | O_DIRECTORY);
}

/* Every directory below the root, read with getdents64 from the fd that
 * opened it (4 system calls a directory; a repository with node_modules has
 * tens of thousands). dirfd is read from its start and left at its end. */
static void scan_planted(struct gitguard *g, int dirfd, const char *where, int depth,
                         struct planted_walk *w)
{
    if (w->budget == 0)
        return;
    if (depth > PLANTED_DEPTH_MAX) {
        /* debug only: a tree this deep is said at every session's end */
        log_debug("cordon did not look for planted repositories below %s (deeper than %d "
                  "directories)",
                  where, PLANTED_DEPTH_MAX);
        return;
    }
    if (!w->buffers[depth] && !(w->buffers[depth] = malloc(DIRSCAN_BUFFER)))
        return;
    struct dirscan scan;
    dirscan_init(&scan, dirfd, w->buffers[depth]);
    bool has_git = false;
    const char *en;
    unsigned char type;
    while (dirscan_next(&scan, &en, &type) > 0) {
        if (w->budget == 0) {
            log_warn("cordon stopped looking for planted repositories in %s after %d entries",
                     g->root, GITGUARD_WALK_MAX);
            return;
        }
        w->budget--;
        if (strcmp(en, ".") == 0 || strcmp(en, "..") == 0)
            continue;
        if (strcmp(en, ".git") == 0) {
            has_git = true;
            continue;
        }
        if (type != DT_DIR && type != DT_UNKNOWN)
            continue;
        _cleanup_close_ int sub = open_for_walk(dirfd, where, en);
        if (sub < 0)
            continue;
        _cleanup_free_ char *path = gitguard_str_printf("%s/%s", where, en);
        if (path)
            scan_planted(g, sub, path, depth + 1, w);
    }
    if (has_git && depth > 0)
        check_planted(g, dirfd, where);
}

void gitguard_finish(struct gitguard *g)
{
    if (!g || g->root_fd < 0)
        return;
    gitguard_sync(g);
    for (size_t i = 0; i < gitguard_root_trusted_count; i++) {
        struct stat st;
        if ((g->root_absent & (1u << i)) &&
            fstatat(g->root_fd, gitguard_root_trusted[i], &st, AT_SYMLINK_NOFOLLOW) == 0)
            quarantine(g, g->root_fd, g->root, gitguard_root_trusted[i]);
    }
    for (size_t i = 0; i < g->ntrusted; i++) {
        struct stat st;
        if (!g->trusted_absent[i] ||
            fstatat(g->root_fd, g->trusted_paths[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        _cleanup_free_ char *parent = strdup(g->trusted_paths[i]);
        char *slash = parent ? strrchr(parent, '/') : NULL;
        if (slash)
            *slash = '\0';
        _cleanup_close_ int pfd =
            slash ? gitguard_open_beneath(g->root_fd, parent, O_RDONLY | O_DIRECTORY)
                  : dup(g->root_fd);
        _cleanup_free_ char *where =
            slash ? gitguard_str_printf("%s/%s", g->root, parent) : strdup(g->root);
        if (pfd >= 0 && where)
            quarantine(g, pfd, where, slash ? slash + 1 : g->trusted_paths[i]);
    }
    struct planted_walk walk = {.budget = GITGUARD_WALK_MAX};
    _cleanup_close_ int root = gitguard_open_beneath(g->root_fd, ".", O_RDONLY | O_DIRECTORY);
    if (root >= 0)
        scan_planted(g, root, g->root, 0, &walk);
    for (size_t i = 0; i <= PLANTED_DEPTH_MAX; i++)
        free(walk.buffers[i]);
}

void gitguard_free(struct gitguard *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->ndirs; i++) {
        free(g->dirs[i].host);
        free(g->dirs[i].view);
        free(g->dirs[i].copy);
        if (g->dirs[i].host_fd >= 0)
            close(g->dirs[i].host_fd);
        if (g->dirs[i].copy_fd >= 0)
            close(g->dirs[i].copy_fd);
    }
    for (size_t i = 0; i < g->nbinds; i++) {
        free(g->binds[i].source);
        free(g->binds[i].host_target);
        free(g->binds[i].view_target);
    }
    for (size_t i = 0; i < g->ntrusted; i++)
        free(g->trusted_paths[i]);
    if (g->root_fd >= 0)
        close(g->root_fd);
    free(g->root);
    gitguard_reset(g);
}

void gitguard_reset(struct gitguard *g)
{
    memset(g, 0, offsetof(struct gitguard, dirs));
    g->root_fd = -1;
}

int gitguard_protect(struct gitguard *g, const char *view_root, const char *rel,
                     struct cordon_error *err)
{
    if (!g->active)
        return 0;
    _cleanup_free_ char *target = gitguard_str_printf("%s/%s", view_root, rel);
    if (!target)
        return error_set(err, ENOMEM, "git metadata");
    bool bound = false;
    for (size_t i = 0; i < g->nbinds; i++) {
        if (gitguard_path_under(g->binds[i].view_target, target)) {
            g->binds[i].readonly = true;
            bound = bound || strcmp(g->binds[i].view_target, target) == 0;
        }
    }
    if (bound)
        return 0;
    /* A file or directory of a copy (HEAD, rebase-merge/ ...): read-only by
     * a bind of its own. */
    const struct gitguard_dir *best = NULL;
    for (size_t i = 0; i < g->ndirs; i++)
        if (gitguard_path_under(target, g->dirs[i].view) &&
            (!best || strlen(g->dirs[i].view) > strlen(best->view)))
            best = &g->dirs[i];
    if (!best || strcmp(target, best->view) == 0)
        return 0;
    const char *inner = target + strlen(best->view) + 1;
    struct stat st;
    if (fstatat(best->copy_fd, inner, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISLNK(st.st_mode))
        return 0; /* nothing there to protect, as for any protected path */
    if (g->nbinds == GITGUARD_MAX_BINDS)
        return error_set(err, E2BIG, "git metadata: more than %d binds; refusing to start",
                         GITGUARD_MAX_BINDS);
    struct gitguard_bind *b = &g->binds[g->nbinds];
    *b = (struct gitguard_bind){.readonly = true};
    b->source = gitguard_str_printf("%s/%s", best->copy, inner);
    b->host_target = gitguard_str_printf("%s/%s", best->host, inner);
    b->view_target = TAKE_PTR(target);
    if (!b->source || !b->host_target) {
        free(b->source);
        free(b->host_target);
        free(b->view_target);
        return error_set(err, ENOMEM, "git metadata");
    }
    g->nbinds++;
    return 0;
}

bool gitguard_covers(const struct gitguard *g, const char *rel)
{
    return g && g->active && (strcmp(rel, ".git") == 0 || strncmp(rel, ".git/", 5) == 0);
}
