/* Host-owned git metadata (gitguard.h, docs/git-metadata.md). Host context,
 * unprivileged supervisor. Everything below a git directory or the workspace
 * is the sandbox's to change between (and, for a concurrent sandbox, during)
 * our looks at it: every access goes through directory fds with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS or O_NOFOLLOW, never a path string
 * checked first and opened later. */
#include "supervisor/gitguard.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/fs.h"
#include "util/clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Bounds on what the sandbox can make the host copy. */
#define GITGUARD_INDEX_MAX   ((off_t)2 << 30)
#define GITGUARD_FILE_MAX    ((off_t)256 << 20)
#define GITGUARD_COPY_MAX    ((off_t)512 << 20) /* a copied tree (worktrees/, rebase-merge/) */
#define GITGUARD_ENTRIES_MAX 100000
#define GITGUARD_DEPTH_MAX   16
#define GITGUARD_WALK_MAX    4000000

/* Directories git writes in normal work: bound read-write from the host.
 * Their contents are data to git (objects, refs, reflogs), never code or
 * configuration. */
static const char *const live_dirs[] = {"objects", "refs", "logs", "lfs", "rr-cache"};
/* Per-operation state git keeps while a command is interrupted: the
 * sandbox's own, never carried to the host (rebase's todo list runs
 * `exec` lines on `git rebase --continue`). */
static const char *const state_dirs[] = {"rebase-merge", "rebase-apply", "sequencer", "worktrees"};
/* Top-level files git writes in normal work, and what they hold: a ref, an
 * object name, a message, the index, packed refs. Nothing git executes or
 * reads configuration from. */
static const char *const sync_files[] = {
    "HEAD",           "ORIG_HEAD",  "FETCH_HEAD",       "MERGE_HEAD",  "MERGE_MSG",
    "MERGE_MODE",     "AUTO_MERGE", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD",
    "COMMIT_EDITMSG", "index",      "packed-refs",      "shallow",
};
/* In the common directory of a linked worktree only the shared files. */
static const char *const common_sync_files[] = {"packed-refs", "shallow"};
/* Names that must be what they seem: a symlink here refuses the start. */
static const char *const no_symlink[] = {"config",    "hooks",  "objects", "refs",
                                         "logs",      "info",   "modules", "HEAD",
                                         "commondir", "gitdir", "index",   "config.worktree",
                                         "worktrees"};
const char *const gitguard_host_trusted[] = {
    ".cordon.toml", ".envrc",  ".vscode", ".idea",  ".claude",       ".mcp.json", ".cursor",
    ".codex",       ".gemini", ".pi",     ".goose", "opencode.json", NULL,
};
/* At the workspace root, what the host's tools trust on sight. */
static const char *const root_trusted[] = {".git",    ".vscode",   ".idea",   ".envrc",
                                           ".claude", ".mcp.json", ".cursor", ".codex",
                                           ".gemini", ".pi",       ".goose",  "opencode.json"};

enum role { ROLE_OWN, ROLE_COMMON };

static bool in_list(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, list[i]) == 0)
            return true;
    return false;
}
#define IN(name, list) in_list((name), (list), ARRAY_SIZE(list))

static int open_beneath(int dirfd, const char *name, int flags)
{
    return fs_openat2(dirfd, name, flags | O_NOFOLLOW,
                      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

/* An absolute canonical path opened with no symlink on the way: the path
 * realpath() gave cannot have been re-pointed since. */
static int open_abs_nofollow(const char *path, int flags)
{
    return fs_openat2(AT_FDCWD, path, flags | O_NOFOLLOW,
                      RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

/* A directory stream over a duplicate of dirfd (the caller keeps dirfd). */
static DIR *opendir_dup(int dirfd)
{
    int dupfd = dup(dirfd);
    if (dupfd < 0)
        return NULL;
    DIR *dir = fdopendir(dupfd);
    if (!dir) {
        int e = errno;
        close(dupfd);
        errno = e;
    }
    return dir;
}

static struct gitguard_stamp stamp_at(int dirfd, const char *name)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return (struct gitguard_stamp){.exists = false};
    return (struct gitguard_stamp){true, st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
}

static bool stamp_same(const struct gitguard_stamp *a, const struct gitguard_stamp *b)
{
    if (a->exists != b->exists)
        return false;
    if (!a->exists)
        return true;
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
           a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/* Copies everything from in to out; at most max bytes (-1 with EFBIG past it). */
static int copy_data(int in, int out, off_t max)
{
    char buf[65536];
    off_t total = 0;
    for (;;) {
        ssize_t n = read(in, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return 0;
        total += n;
        if (total > max) {
            errno = EFBIG;
            return -1;
        }
        if (fs_write_all(out, buf, (size_t)n) < 0)
            return -1;
    }
}

/* Opens name beneath dirfd as a regular file for reading, or -1 (ELOOP for a
 * symlink, EINVAL for anything but a regular file). */
static int open_regular(int dirfd, const char *name, struct stat *st)
{
    int fd = open_beneath(dirfd, name, O_RDONLY | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return -1;
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    return fd;
}

/* Copies the regular file name from src to a new file dst_name in dst (which
 * must not exist), keeping its mode. */
static int copy_file_at(int src, const char *name, int dst, const char *dst_name, off_t max,
                        bool exclusive)
{
    struct stat st;
    _cleanup_close_ int in = open_regular(src, name, &st);
    if (in < 0)
        return -1;
    if (st.st_size > max) {
        errno = EFBIG;
        return -1;
    }
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (exclusive ? O_EXCL : O_TRUNC);
    _cleanup_close_ int out = openat(dst, dst_name, flags, st.st_mode & 0777);
    if (out < 0)
        return -1;
    if (copy_data(in, out, max) < 0)
        return -1;
    if (geteuid() == 0 && fchown(out, st.st_uid, st.st_gid) < 0)
        return -1;
    return 0;
}

/* A bounded copy of a directory tree of regular files, directories and
 * symlinks (copied as symlinks); anything else is left out. */
static int copy_tree_at(int src, const char *name, int dst, int depth, off_t *budget)
{
    if (depth > GITGUARD_DEPTH_MAX) {
        errno = ELOOP;
        return -1;
    }
    _cleanup_close_ int from = open_beneath(src, name, O_RDONLY | O_DIRECTORY);
    if (from < 0)
        return -1;
    struct stat st;
    if (fstat(from, &st) < 0 || (mkdirat(dst, name, st.st_mode & 0777) < 0 && errno != EEXIST))
        return -1;
    _cleanup_close_ int to = open_beneath(dst, name, O_RDONLY | O_DIRECTORY);
    if (to < 0)
        return -1;
    _cleanup_closedir_ DIR *dir = opendir_dup(from);
    if (!dir)
        return -1;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (++n > GITGUARD_ENTRIES_MAX) {
            errno = E2BIG;
            return -1;
        }
        struct stat est;
        if (fstatat(from, e->d_name, &est, AT_SYMLINK_NOFOLLOW) < 0)
            return -1;
        if (S_ISDIR(est.st_mode)) {
            if (copy_tree_at(from, e->d_name, to, depth + 1, budget) < 0)
                return -1;
        } else if (S_ISREG(est.st_mode)) {
            if (est.st_size > *budget) {
                errno = EFBIG;
                return -1;
            }
            *budget -= est.st_size;
            if (copy_file_at(from, e->d_name, to, e->d_name, est.st_size, true) < 0)
                return -1;
        } else if (S_ISLNK(est.st_mode)) {
            char target[PATH_MAX];
            ssize_t len = readlinkat(from, e->d_name, target, sizeof(target) - 1);
            if (len < 0)
                return -1;
            target[len] = '\0';
            if (symlinkat(target, to, e->d_name) < 0)
                return -1;
        }
    }
    return 0;
}

static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *str_printf(const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}

static bool path_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

struct plan_ctx {
    struct gitguard *g;
    const struct workspace *ws;
    const char *state_dir;
    int git_state_fd;
};

/* Where a host path appears inside: below the root at the lexical root,
 * elsewhere (a linked worktree's git directories) at the same path. */
static char *view_of(const struct plan_ctx *c, const char *host)
{
    if (path_under(host, c->ws->root))
        return str_printf("%s%s", c->ws->view_root, host + strlen(c->ws->root));
    return strdup(host);
}

/* For messages: a path below the workspace root as the user knows it. */
static const char *rel_to_root(const struct plan_ctx *c, const char *host)
{
    size_t n = strlen(c->ws->root);
    return path_under(host, c->ws->root) && host[n] == '/' ? host + n + 1 : host;
}

static int add_bind(const struct plan_ctx *c, char *source, const char *host_target, bool readonly,
                    int pin_fd, struct cordon_error *err)
{
    struct gitguard *g = c->g;
    if (!source)
        return error_set(err, ENOMEM, "git metadata");
    if (g->nbinds == GITGUARD_MAX_BINDS) {
        free(source);
        return error_set(err, E2BIG, "git metadata: more than %d binds; refusing to start",
                         GITGUARD_MAX_BINDS);
    }
    struct gitguard_bind *b = &g->binds[g->nbinds];
    *b = (struct gitguard_bind){.source = source, .readonly = readonly};
    b->host_target = strdup(host_target);
    b->view_target = view_of(c, host_target);
    if (!b->host_target || !b->view_target) {
        free(b->source);
        free(b->host_target);
        free(b->view_target);
        return error_set(err, ENOMEM, "git metadata");
    }
    if (pin_fd >= 0) {
        struct stat st;
        if (fstat(pin_fd, &st) < 0)
            return error_set(err, errno, "git metadata: %s", source);
        b->pinned = true;
        b->dev = st.st_dev;
        b->ino = st.st_ino;
    }
    g->nbinds++;
    return 0;
}

static int guard_dir(struct plan_ctx *c, const char *host, enum role role, int depth,
                     struct cordon_error *err);
static void scan_config(struct plan_ctx *c, const char *path, const char *worktree,
                        const char *module_gitdir, int depth);

/* Submodules' git directories below modules/ (a name may hold slashes, so a
 * directory that is not a git directory is searched further). */
static int guard_modules(struct plan_ctx *c, int dirfd, const char *host, int depth,
                         struct cordon_error *err)
{
    if (depth > GITGUARD_DEPTH_MAX)
        return error_set(err, ELOOP, "git metadata: %s: submodules nested too deep", host);
    _cleanup_closedir_ DIR *dir = opendir_dup(dirfd);
    if (!dir)
        return error_set(err, errno, "git metadata: %s", host);
    for (struct dirent *e; (e = readdir(dir));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            return error_set(err, errno, "git metadata: %s/%s", host, e->d_name);
        if (S_ISLNK(st.st_mode))
            return error_set(err, 0,
                             "protected path is a symlink; refusing to start: %s/%s (git "
                             "metadata, which cordon keeps host-owned)",
                             rel_to_root(c, host), e->d_name);
        if (!S_ISDIR(st.st_mode))
            continue;
        _cleanup_free_ char *sub = str_printf("%s/%s", host, e->d_name);
        _cleanup_close_ int subfd = open_beneath(dirfd, e->d_name, O_RDONLY | O_DIRECTORY);
        if (!sub || subfd < 0)
            return error_set(err, errno ? errno : ENOMEM, "git metadata: %s/%s", host, e->d_name);
        struct stat head;
        bool is_git = fstatat(subfd, "HEAD", &head, AT_SYMLINK_NOFOLLOW) == 0 &&
                      fstatat(subfd, "objects", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                      S_ISDIR(st.st_mode);
        int rc = is_git ? guard_dir(c, sub, ROLE_OWN, depth + 1, err)
                        : guard_modules(c, subfd, sub, depth + 1, err);
        if (rc < 0)
            return -1;
        /* The checkout's gitfile names this git directory: kept read-only. */
        if (is_git) {
            _cleanup_free_ char *config = str_printf("%s/config", sub);
            if (config)
                scan_config(c, config, c->ws->root, sub, 0);
        }
    }
    return 0;
}

static int add_file(struct gitguard_dir *d, const char *name, enum gitguard_file_kind kind,
                    struct cordon_error *err)
{
    if (d->nfiles == GITGUARD_MAX_FILES)
        return error_set(err, E2BIG, "git metadata: %s: more than %d files at its top level",
                         d->host, GITGUARD_MAX_FILES);
    if (strlen(name) >= sizeof(d->files[0].name))
        return 0; /* no name git writes is that long: mirrored by copy only */
    struct gitguard_file *f = &d->files[d->nfiles++];
    *f = (struct gitguard_file){.kind = kind};
    snprintf(f->name, sizeof(f->name), "%s", name);
    f->host = stamp_at(d->host_fd, name);
    f->copy = stamp_at(d->copy_fd, name);
    return 0;
}

/* The next slot of g->dirs for the git directory host: its fd, its copy in
 * the state directory, and the bind of that copy over it. */
static int guard_dir_open(struct plan_ctx *c, const char *host, struct gitguard_dir **ret_d,
                          struct cordon_error *err)
{
    struct gitguard *g = c->g;
    if (g->ndirs == GITGUARD_MAX_DIRS)
        return error_set(err, E2BIG,
                         "git metadata: more than %d git directories (submodules); "
                         "refusing to start",
                         GITGUARD_MAX_DIRS);
    size_t idx = g->ndirs;
    struct gitguard_dir *d = &g->dirs[idx];
    *d = (struct gitguard_dir){.host_fd = -1, .copy_fd = -1};
    g->ndirs++;
    *ret_d = d;
    d->host = strdup(host);
    d->view = view_of(c, host);
    if (!d->host || !d->view)
        return error_set(err, ENOMEM, "git metadata");
    d->host_fd = open_abs_nofollow(host, O_RDONLY | O_DIRECTORY);
    if (d->host_fd < 0)
        return error_set(err, errno, "git metadata: %s%s", host,
                         errno == ELOOP ? " is reached through a symlink; refusing to start" : "");
    char name[32];
    snprintf(name, sizeof(name), "%zu", idx);
    if (mkdirat(c->git_state_fd, name, 0700) < 0)
        return error_set(err, errno, "git metadata: the copy of %s", host);
    d->copy_fd = open_beneath(c->git_state_fd, name, O_RDONLY | O_DIRECTORY);
    d->copy = str_printf("%s/git/%s", c->state_dir, name);
    if (d->copy_fd < 0 || !d->copy)
        return error_set(err, errno ? errno : ENOMEM, "git metadata: the copy of %s", host);
    /* Git makes logs/ on the first commit: made now, it is shared like
     * refs/ instead of landing in the copy. */
    if (mkdirat(d->host_fd, "logs", 0755) < 0 && errno != EEXIST)
        log_debug("git metadata: %s/logs: %s", host, strerror(errno));
    return add_bind(c, strdup(d->copy), host, false, -1, err);
}

/* What the top level of a git directory held that is handled after it. */
struct guard_seen {
    bool hooks, modules;
};

/* A symlink at the top level: refused where git would follow it to
 * something the host runs or trusts, else copied as a link. */
static int guard_symlink(struct plan_ctx *c, struct gitguard_dir *d, const char *en,
                         const char *host_path, struct cordon_error *err)
{
    if (IN(en, no_symlink))
        return error_set(err, 0,
                         "protected path is a symlink; refusing to start: %s (git "
                         "metadata, which cordon keeps host-owned)",
                         rel_to_root(c, host_path));
    char target[PATH_MAX];
    ssize_t len = readlinkat(d->host_fd, en, target, sizeof(target) - 1);
    if (len < 0)
        return error_set(err, errno, "git metadata: %s", host_path);
    target[len] = '\0';
    if (symlinkat(target, d->copy_fd, en) < 0)
        return error_set(err, errno, "git metadata: copying %s", host_path);
    return 0;
}

/* A directory at the top level: state copied, the rest bound from the host
 * (read-only unless git writes it in normal work). */
static int guard_subdir(struct plan_ctx *c, struct gitguard_dir *d, const char *en,
                        const char *host_path, const char *copy_path, struct guard_seen *seen,
                        struct cordon_error *err)
{
    if (strcmp(en, "hooks") == 0)
        seen->hooks = true;
    if (IN(en, state_dirs)) {
        off_t budget = GITGUARD_COPY_MAX;
        if (copy_tree_at(d->host_fd, en, d->copy_fd, 0, &budget) < 0)
            return error_set(err, errno, "git metadata: copying %s", host_path);
        return 0;
    }
    if (mkdirat(d->copy_fd, en, 0755) < 0)
        return error_set(err, errno, "git metadata: %s", copy_path);
    _cleanup_close_ int pin = open_beneath(d->host_fd, en, O_PATH | O_DIRECTORY);
    if (pin < 0)
        return error_set(err, errno, "git metadata: %s", host_path);
    bool live = IN(en, live_dirs);
    if (add_bind(c, strdup(host_path), host_path, !live, pin, err) < 0)
        return -1;
    if (strcmp(en, "modules") == 0)
        seen->modules = true;
    return 0;
}

/* A regular file at the top level: copied; synced back when git writes it
 * in normal work, else mirrored read-only. */
static int guard_file(struct plan_ctx *c, struct gitguard_dir *d, enum role role, int depth,
                      const char *en, const char *host_path, const char *copy_path,
                      struct cordon_error *err)
{
    bool sync = role == ROLE_OWN ? IN(en, sync_files) : IN(en, common_sync_files);
    if (copy_file_at(d->host_fd, en, d->copy_fd, en,
                     strcmp(en, "index") == 0 ? GITGUARD_INDEX_MAX : GITGUARD_FILE_MAX, true) < 0)
        return error_set(err, errno, "git metadata: copying %s", host_path);
    if (sync)
        return add_file(d, en, GITGUARD_SYNC, err);
    /* A submodule's config is the sandbox's own copy: `git submodule
     * update` rewrites it in normal work. Nothing of it reaches the
     * host's, which refreshes the copy when it changes. */
    if (add_file(d, en, GITGUARD_MIRROR, err) < 0)
        return -1;
    if (depth > 0 && strcmp(en, "config") == 0)
        return 0;
    return add_bind(c, strdup(copy_path), host_path, true, -1, err);
}

/* One entry of the git directory's top level. */
static int guard_entry(struct plan_ctx *c, struct gitguard_dir *d, enum role role, int depth,
                       const char *en, struct guard_seen *seen, struct cordon_error *err)
{
    struct stat st;
    if (fstatat(d->host_fd, en, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return error_set(err, errno, "git metadata: %s/%s", d->host, en);
    _cleanup_free_ char *host_path = str_printf("%s/%s", d->host, en);
    _cleanup_free_ char *copy_path = str_printf("%s/%s", d->copy, en);
    if (!host_path || !copy_path)
        return error_set(err, ENOMEM, "git metadata");
    if (S_ISLNK(st.st_mode))
        return guard_symlink(c, d, en, host_path, err);
    if (S_ISDIR(st.st_mode))
        return guard_subdir(c, d, en, host_path, copy_path, seen, err);
    if (!S_ISREG(st.st_mode))
        return 0; /* a socket (fsmonitor's daemon) or fifo: the host's, not shown */
    return guard_file(c, d, role, depth, en, host_path, copy_path, err);
}

/* After the top level: a missing hooks/, the files git may create later,
 * the submodules' git directories. */
static int guard_dir_finish(struct plan_ctx *c, struct gitguard_dir *d, enum role role, int depth,
                            const struct guard_seen *seen, struct cordon_error *err)
{
    const char *host = d->host;
    /* A missing hooks/ stays missing and read-only: the sandbox cannot make
     * one for the host's git to run. */
    if (!seen->hooks) {
        _cleanup_free_ char *host_path = str_printf("%s/hooks", host);
        _cleanup_free_ char *copy_path = str_printf("%s/hooks", d->copy);
        if (!host_path || !copy_path)
            return error_set(err, ENOMEM, "git metadata");
        if (mkdirat(d->copy_fd, "hooks", 0755) < 0 ||
            add_bind(c, strdup(copy_path), host_path, true, -1, err) < 0)
            return error_set(err, errno ? errno : ENOMEM, "git metadata: %s", copy_path);
    }
    /* Files git may create later: carried over when they appear. */
    const char *const *names = role == ROLE_OWN ? sync_files : common_sync_files;
    size_t nnames = role == ROLE_OWN ? ARRAY_SIZE(sync_files) : ARRAY_SIZE(common_sync_files);
    for (size_t i = 0; i < nnames; i++) {
        bool known = false;
        for (size_t j = 0; j < d->nfiles; j++)
            known = known || strcmp(d->files[j].name, names[i]) == 0;
        if (!known && add_file(d, names[i], GITGUARD_SYNC, err) < 0)
            return -1;
    }
    if (seen->modules) {
        _cleanup_close_ int mfd = open_beneath(d->host_fd, "modules", O_RDONLY | O_DIRECTORY);
        _cleanup_free_ char *mpath = str_printf("%s/modules", host);
        if (mfd < 0 || !mpath)
            return error_set(err, errno ? errno : ENOMEM, "git metadata: %s/modules", host);
        if (guard_modules(c, mfd, mpath, depth + 1, err) < 0)
            return -1;
    }
    return 0;
}

static int guard_dir(struct plan_ctx *c, const char *host, enum role role, int depth,
                     struct cordon_error *err)
{
    struct gitguard_dir *d = NULL;
    if (guard_dir_open(c, host, &d, err) < 0)
        return -1;
    _cleanup_closedir_ DIR *dir = opendir_dup(d->host_fd);
    if (!dir)
        return error_set(err, errno, "git metadata: %s", host);
    struct guard_seen seen = {0};
    size_t n = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        const char *en = e->d_name;
        if (strcmp(en, ".") == 0 || strcmp(en, "..") == 0)
            continue;
        if (++n > GITGUARD_ENTRIES_MAX)
            return error_set(err, E2BIG, "git metadata: %s: too many entries", host);
        if (guard_entry(c, d, role, depth, en, &seen, err) < 0)
            return -1;
    }
    return guard_dir_finish(c, d, role, depth, &seen, err);
}

/* Reads the one line of a gitdir/commondir-style file (bounded). */
static int read_line_at(int dirfd, const char *name, char *buf, size_t size)
{
    struct stat st;
    _cleanup_close_ int fd = open_regular(dirfd, name, &st);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, size - 1);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    return 0;
}

/* dir/rel canonicalised (rel may be absolute). */
static char *resolve_from(const char *dir, const char *rel)
{
    _cleanup_free_ char *joined = rel[0] == '/' ? strdup(rel) : str_printf("%s/%s", dir, rel);
    return joined ? realpath(joined, NULL) : NULL;
}

/* A path the host's git configuration names, resolved like git does (~/,
 * relative to base); kept when it lies in the workspace. */
static void note_trusted(struct plan_ctx *c, const char *value, const char *base)
{
    struct gitguard *g = c->g;
    _cleanup_free_ char *joined = NULL;
    const char *home = getenv("HOME");
    if (strncmp(value, "~/", 2) == 0 && home)
        joined = str_printf("%s/%s", home, value + 2);
    else
        joined = value[0] == '/' ? strdup(value) : str_printf("%s/%s", base, value);
    if (!joined)
        return;
    /* Canonical where it exists; else its parent's, with the last name. */
    _cleanup_free_ char *real = realpath(joined, NULL);
    if (!real) {
        char *slash = strrchr(joined, '/');
        if (!slash || slash == joined)
            return;
        *slash = '\0';
        _cleanup_free_ char *parent = realpath(joined, NULL);
        if (!parent || strcmp(slash + 1, "..") == 0 || strcmp(slash + 1, ".") == 0)
            return;
        real = str_printf("%s/%s", parent, slash + 1);
        if (!real)
            return;
    }
    size_t n = strlen(g->root);
    if (!path_under(real, g->root) || real[n] != '/' || g->ntrusted == ARRAY_SIZE(g->trusted_paths))
        return;
    for (size_t i = 0; i < g->ntrusted; i++)
        if (strcmp(g->trusted_paths[i], real + n + 1) == 0)
            return;
    char *rel = strdup(real + n + 1);
    if (!rel)
        return;
    struct stat st;
    g->trusted_absent[g->ntrusted] = fstatat(g->root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0;
    g->trusted_paths[g->ntrusted++] = rel;
    log_debug("git metadata: the host's git configuration trusts %s in the workspace", rel);
}

/* Reads what a git configuration file makes the host's git trust outside
 * the git directory: core.hooksPath, and the files it includes (which may
 * set anything). A small, bounded reading of git's format: sections,
 * "key = value", quotes; enough to find these keys, not a full parser. */
static void scan_config(struct plan_ctx *c, const char *path, const char *worktree,
                        const char *module_gitdir, int depth)
{
    if (depth > 5)
        return;
    /* An included file may lie in the workspace: a FIFO planted there must
     * not hang the start, nor a device be read. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (fd < 0)
        return;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return;
    }
    _cleanup_fclose_ FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return;
    }
    _cleanup_free_ char *dir = strdup(path);
    if (!dir)
        return;
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    char section[128] = "";
    char line[4096];
    for (int lines = 0; lines < 100000 && fgets(line, sizeof(line), f); lines++) {
        char *p = line + strspn(line, " \t");
        if (*p == '[') {
            size_t i = 0;
            for (p++; *p && *p != ']' && *p != ' ' && *p != '"' && i + 1 < sizeof(section); p++)
                section[i++] = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
            section[i] = '\0';
            p = strchr(p, ']');
            if (!p)
                continue;
            p++;
            p += strspn(p, " \t");
        }
        char key[64];
        size_t k = 0;
        while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '-' ||
               (*p >= '0' && *p <= '9')) {
            if (k + 1 < sizeof(key))
                key[k++] = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
            p++;
        }
        key[k] = '\0';
        p += strspn(p, " \t");
        if (!k || *p != '=')
            continue;
        p++;
        p += strspn(p, " \t");
        char value[PATH_MAX];
        size_t v = 0;
        bool quoted = false;
        for (; *p && *p != '\n' && v + 1 < sizeof(value); p++) {
            if (*p == '"') {
                quoted = !quoted;
                continue;
            }
            if (!quoted && (*p == '#' || *p == ';'))
                break;
            if (*p == '\\' && p[1]) {
                p++;
            }
            value[v++] = *p;
        }
        while (v > 0 && (value[v - 1] == ' ' || value[v - 1] == '\t'))
            v--;
        value[v] = '\0';
        if (!v)
            continue;
        if (strcmp(section, "core") == 0 && strcmp(key, "hookspath") == 0) {
            note_trusted(c, value, worktree);
        } else if (module_gitdir && strcmp(section, "core") == 0 && strcmp(key, "worktree") == 0) {
            _cleanup_free_ char *gitfile = str_printf("%s/.git", value);
            if (gitfile)
                note_trusted(c, gitfile, module_gitdir);
        } else if ((strcmp(section, "include") == 0 || strncmp(section, "includeif", 9) == 0) &&
                   strcmp(key, "path") == 0) {
            const char *home = getenv("HOME");
            _cleanup_free_ char *inc = strncmp(value, "~/", 2) == 0 && home
                                           ? str_printf("%s/%s", home, value + 2)
                                       : value[0] == '/' ? strdup(value)
                                                         : str_printf("%s/%s", dir, value);
            if (!inc)
                continue;
            note_trusted(c, inc, "/");
            scan_config(c, inc, worktree, module_gitdir, depth + 1);
        }
    }
}

/* Every configuration file the host's git reads for this workspace. */
static void scan_host_config(struct plan_ctx *c, const char *own, const char *common)
{
    const char *root = c->ws->root;
    char path[PATH_MAX * 2];
    snprintf(path, sizeof(path), "%s/config", common ? common : own);
    scan_config(c, path, root, NULL, 0);
    snprintf(path, sizeof(path), "%s/config.worktree", own);
    scan_config(c, path, root, NULL, 0);
    const char *global = getenv("GIT_CONFIG_GLOBAL");
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    if (global) {
        scan_config(c, global, root, NULL, 0);
    } else {
        if (xdg && xdg[0] == '/')
            snprintf(path, sizeof(path), "%s/git/config", xdg);
        else
            snprintf(path, sizeof(path), "%s/.config/git/config", home ? home : "/");
        scan_config(c, path, root, NULL, 0);
        snprintf(path, sizeof(path), "%s/.gitconfig", home ? home : "/");
        scan_config(c, path, root, NULL, 0);
    }
    const char *system = getenv("GIT_CONFIG_SYSTEM");
    scan_config(c, system ? system : "/etc/gitconfig", root, NULL, 0);
}

int gitguard_prepare(struct gitguard *g, const struct workspace *ws, const char *session,
                     int state_dir_fd, const char *state_dir, struct cordon_error *err)
{
    *g = (struct gitguard){.root_fd = -1};
    snprintf(g->session, sizeof(g->session), "%s", session);
    clock_gettime(CLOCK_REALTIME, &g->started);
    g->root = strdup(ws->root);
    if (!g->root)
        return error_set(err, ENOMEM, "git metadata");
    g->root_fd = open_abs_nofollow(ws->root, O_RDONLY | O_DIRECTORY);
    if (g->root_fd < 0)
        return error_set(err, errno, "workspace %s", ws->root);
    for (size_t i = 0; i < ARRAY_SIZE(root_trusted); i++) {
        struct stat st;
        if (fstatat(g->root_fd, root_trusted[i], &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
            g->root_absent |= 1u << i;
    }
    if (!ws->is_git)
        return 0;

    /* The layout workspace detection validated (docs/workspace.md): the
     * .git entry is not read again. */
    if (!ws->layout_git_dir)
        return error_set(err, EINVAL, "git metadata: the git directory of %s is unknown", ws->root);
    const char *own = ws->layout_git_dir;
    const char *common = ws->layout_common_dir;
    fs_remove_tree_at(state_dir_fd, "git");
    if (mkdirat(state_dir_fd, "git", 0700) < 0)
        return error_set(err, errno, "git metadata: %s/git", state_dir);
    _cleanup_close_ int git_state_fd = open_beneath(state_dir_fd, "git", O_RDONLY | O_DIRECTORY);
    if (git_state_fd < 0)
        return error_set(err, errno, "git metadata: %s/git", state_dir);
    struct plan_ctx c = {g, ws, state_dir, git_state_fd};
    g->active = true;
    /* The common directory first: a linked worktree's own directory lies in
     * its worktrees/ and is bound over the copy there. */
    if (common && strcmp(common, own) != 0 && guard_dir(&c, common, ROLE_COMMON, 0, err) < 0)
        return -1;
    if (guard_dir(&c, own, ROLE_OWN, 0, err) < 0)
        return -1;
    scan_host_config(&c, own, common);
    log_debug("git metadata: %zu git director%s guarded, %zu binds", g->ndirs,
              g->ndirs == 1 ? "y" : "ies", g->nbinds);
    return 0;
}

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
    _cleanup_close_ int in = open_regular(from_dir, name, &st);
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
    if (copy_data(in, out, max) < 0 ||
        (geteuid() == 0 && had_old && fchown(out, old.st_uid, old.st_gid) < 0) ||
        renameat(to_dir, lock, to_dir, name) < 0) {
        int e = errno;
        unlinkat(to_dir, lock, 0);
        errno = e;
        return -1;
    }
    return 0;
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
    _cleanup_close_ int in = open_regular(d->host_fd, f->name, &st);
    _cleanup_close_ int out = open_beneath(d->copy_fd, f->name, O_WRONLY);
    if (in < 0 || out < 0 || ftruncate(out, 0) < 0 || copy_data(in, out, GITGUARD_FILE_MAX) < 0)
        log_debug("git metadata: refreshing %s/%s: %s", d->host, f->name, strerror(errno));
}

static void sync_file(struct gitguard_dir *d, struct gitguard_file *f)
{
    struct gitguard_stamp hs = stamp_at(d->host_fd, f->name);
    struct gitguard_stamp cs = stamp_at(d->copy_fd, f->name);
    bool host_changed = !stamp_same(&hs, &f->host);
    bool copy_changed = !stamp_same(&cs, &f->copy);
    if (f->kind == GITGUARD_MIRROR) {
        if (host_changed && hs.exists)
            refresh_mirror(d, f);
        f->host = hs;
        f->copy = stamp_at(d->copy_fd, f->name);
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
    f->host = stamp_at(d->host_fd, f->name);
    f->copy = stamp_at(d->copy_fd, f->name);
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

/* Moves dir/name aside (name.cordon-quarantine-SESSION) and says so. */
static void quarantine(struct gitguard *g, int dirfd, const char *where, const char *name)
{
    char aside[NAME_MAX + 1];
    int n = snprintf(aside, sizeof(aside), "%s.cordon-quarantine-%s", name, g->session);
    if (n < 0 || (size_t)n >= sizeof(aside))
        snprintf(aside, sizeof(aside), "%.40s.cordon-quarantine", name);
    if (renameat2(dirfd, name, dirfd, aside, RENAME_NOREPLACE) < 0) {
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
    if (read_line_at(dirfd, ".git", line, sizeof(line)) < 0 || strncmp(line, "gitdir: ", 8) != 0)
        return false;
    _cleanup_free_ char *target = resolve_from(where, line + 8);
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
    _cleanup_close_ int gd = open_beneath(dirfd, ".git", O_RDONLY | O_DIRECTORY);
    if (gd < 0)
        return false;
    static const char *const trusted[] = {"config", "config.worktree", "commondir", "hooks",
                                          "info"};
    for (size_t i = 0; i < ARRAY_SIZE(trusted); i++)
        if (after_start(g, gd, trusted[i]))
            return true;
    _cleanup_close_ int hooks = open_beneath(gd, "hooks", O_RDONLY | O_DIRECTORY);
    if (hooks < 0)
        return false;
    _cleanup_closedir_ DIR *dir = opendir_dup(hooks);
    if (!dir)
        return false;
    for (struct dirent *e; (e = readdir(dir));)
        if (e->d_name[0] != '.' && after_start(g, hooks, e->d_name))
            return true;
    return false;
}

static void scan_planted(struct gitguard *g, int dirfd, const char *where, int depth,
                         size_t *budget)
{
    if (depth > 64 || *budget == 0)
        return;
    _cleanup_closedir_ DIR *dir = opendir_dup(dirfd);
    if (!dir)
        return;
    bool has_git = false;
    for (struct dirent *e; (e = readdir(dir));) {
        if (*budget == 0) {
            log_warn("cordon stopped looking for planted repositories in %s after %d entries",
                     g->root, GITGUARD_WALK_MAX);
            return;
        }
        (*budget)--;
        const char *en = e->d_name;
        if (strcmp(en, ".") == 0 || strcmp(en, "..") == 0)
            continue;
        if (strcmp(en, ".git") == 0) {
            has_git = true;
            continue;
        }
        if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)
            continue;
        _cleanup_close_ int sub = open_beneath(dirfd, en, O_RDONLY | O_DIRECTORY);
        if (sub < 0)
            continue;
        _cleanup_free_ char *path = str_printf("%s/%s", where, en);
        if (path)
            scan_planted(g, sub, path, depth + 1, budget);
    }
    if (!has_git || depth == 0)
        return;
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

void gitguard_finish(struct gitguard *g)
{
    if (!g || g->root_fd < 0)
        return;
    gitguard_sync(g);
    for (size_t i = 0; i < ARRAY_SIZE(root_trusted); i++) {
        struct stat st;
        if ((g->root_absent & (1u << i)) &&
            fstatat(g->root_fd, root_trusted[i], &st, AT_SYMLINK_NOFOLLOW) == 0)
            quarantine(g, g->root_fd, g->root, root_trusted[i]);
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
            slash ? open_beneath(g->root_fd, parent, O_RDONLY | O_DIRECTORY) : dup(g->root_fd);
        _cleanup_free_ char *where = slash ? str_printf("%s/%s", g->root, parent) : strdup(g->root);
        if (pfd >= 0 && where)
            quarantine(g, pfd, where, slash ? slash + 1 : g->trusted_paths[i]);
    }
    size_t budget = GITGUARD_WALK_MAX;
    scan_planted(g, g->root_fd, g->root, 0, &budget);
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
    *g = (struct gitguard){.root_fd = -1};
}

int gitguard_protect(struct gitguard *g, const char *view_root, const char *rel,
                     struct cordon_error *err)
{
    if (!g->active)
        return 0;
    _cleanup_free_ char *target = str_printf("%s/%s", view_root, rel);
    if (!target)
        return error_set(err, ENOMEM, "git metadata");
    bool bound = false;
    for (size_t i = 0; i < g->nbinds; i++) {
        if (path_under(g->binds[i].view_target, target)) {
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
        if (path_under(target, g->dirs[i].view) &&
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
    b->source = str_printf("%s/%s", best->copy, inner);
    b->host_target = str_printf("%s/%s", best->host, inner);
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
