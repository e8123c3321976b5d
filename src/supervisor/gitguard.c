/* Host-owned git metadata (gitguard.h, docs/git-metadata.md): the plan made
 * before the start, which git directories are copied, bound and synced, and
 * the fd helpers the sync (gitguard-sync.c) shares. Host context,
 * unprivileged supervisor. Everything below a git directory or the workspace
 * is the sandbox's to change between (and, for a concurrent sandbox, during)
 * our looks at it: every access goes through directory fds with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS or O_NOFOLLOW, never a path string
 * checked first and opened later. */
#include "supervisor/gitguard.h"
#include "supervisor/gitguard-internal.h"
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
const char *const gitguard_root_trusted[] = {".git",    ".vscode",   ".idea",   ".envrc",
                                             ".claude", ".mcp.json", ".cursor", ".codex",
                                             ".gemini", ".pi",       ".goose",  "opencode.json"};
const size_t gitguard_root_trusted_count = ARRAY_SIZE(gitguard_root_trusted);

enum role { ROLE_OWN, ROLE_COMMON };

static bool in_list(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, list[i]) == 0)
            return true;
    return false;
}
#define IN(name, list) in_list((name), (list), ARRAY_SIZE(list))

int gitguard_open_beneath(int dirfd, const char *name, int flags)
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
DIR *gitguard_opendir_dup(int dirfd)
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

struct gitguard_stamp gitguard_stamp_at(int dirfd, const char *name)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return (struct gitguard_stamp){.exists = false};
    return (struct gitguard_stamp){true, st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
}

bool gitguard_stamp_same(const struct gitguard_stamp *a, const struct gitguard_stamp *b)
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
int gitguard_copy_data(int in, int out, off_t max)
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
int gitguard_open_regular(int dirfd, const char *name, struct stat *st)
{
    int fd = gitguard_open_beneath(dirfd, name, O_RDONLY | O_NOCTTY | O_NONBLOCK);
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
    _cleanup_close_ int in = gitguard_open_regular(src, name, &st);
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
    if (gitguard_copy_data(in, out, max) < 0)
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
    _cleanup_close_ int from = gitguard_open_beneath(src, name, O_RDONLY | O_DIRECTORY);
    if (from < 0)
        return -1;
    struct stat st;
    if (fstat(from, &st) < 0 || (mkdirat(dst, name, st.st_mode & 0777) < 0 && errno != EEXIST))
        return -1;
    _cleanup_close_ int to = gitguard_open_beneath(dst, name, O_RDONLY | O_DIRECTORY);
    if (to < 0)
        return -1;
    _cleanup_closedir_ DIR *dir = gitguard_opendir_dup(from);
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

char *gitguard_str_printf(const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}

bool gitguard_path_under(const char *path, const char *dir)
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
    if (gitguard_path_under(host, c->ws->root))
        return gitguard_str_printf("%s%s", c->ws->view_root, host + strlen(c->ws->root));
    return strdup(host);
}

/* For messages: a path below the workspace root as the user knows it. */
static const char *rel_to_root(const struct plan_ctx *c, const char *host)
{
    size_t n = strlen(c->ws->root);
    return gitguard_path_under(host, c->ws->root) && host[n] == '/' ? host + n + 1 : host;
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
    _cleanup_closedir_ DIR *dir = gitguard_opendir_dup(dirfd);
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
        _cleanup_free_ char *sub = gitguard_str_printf("%s/%s", host, e->d_name);
        _cleanup_close_ int subfd = gitguard_open_beneath(dirfd, e->d_name, O_RDONLY | O_DIRECTORY);
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
            _cleanup_free_ char *config = gitguard_str_printf("%s/config", sub);
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
    f->host = gitguard_stamp_at(d->host_fd, name);
    f->copy = gitguard_stamp_at(d->copy_fd, name);
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
    d->copy_fd = gitguard_open_beneath(c->git_state_fd, name, O_RDONLY | O_DIRECTORY);
    d->copy = gitguard_str_printf("%s/git/%s", c->state_dir, name);
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
    _cleanup_close_ int pin = gitguard_open_beneath(d->host_fd, en, O_PATH | O_DIRECTORY);
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
    _cleanup_free_ char *host_path = gitguard_str_printf("%s/%s", d->host, en);
    _cleanup_free_ char *copy_path = gitguard_str_printf("%s/%s", d->copy, en);
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
        _cleanup_free_ char *host_path = gitguard_str_printf("%s/hooks", host);
        _cleanup_free_ char *copy_path = gitguard_str_printf("%s/hooks", d->copy);
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
        _cleanup_close_ int mfd =
            gitguard_open_beneath(d->host_fd, "modules", O_RDONLY | O_DIRECTORY);
        _cleanup_free_ char *mpath = gitguard_str_printf("%s/modules", host);
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
    _cleanup_closedir_ DIR *dir = gitguard_opendir_dup(d->host_fd);
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
int gitguard_read_line_at(int dirfd, const char *name, char *buf, size_t size)
{
    struct stat st;
    _cleanup_close_ int fd = gitguard_open_regular(dirfd, name, &st);
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
char *gitguard_resolve_from(const char *dir, const char *rel)
{
    _cleanup_free_ char *joined =
        rel[0] == '/' ? strdup(rel) : gitguard_str_printf("%s/%s", dir, rel);
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
        joined = gitguard_str_printf("%s/%s", home, value + 2);
    else
        joined = value[0] == '/' ? strdup(value) : gitguard_str_printf("%s/%s", base, value);
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
        real = gitguard_str_printf("%s/%s", parent, slash + 1);
        if (!real)
            return;
    }
    size_t n = strlen(g->root);
    if (!gitguard_path_under(real, g->root) || real[n] != '/' ||
        g->ntrusted == ARRAY_SIZE(g->trusted_paths))
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
            _cleanup_free_ char *gitfile = gitguard_str_printf("%s/.git", value);
            if (gitfile)
                note_trusted(c, gitfile, module_gitdir);
        } else if ((strcmp(section, "include") == 0 || strncmp(section, "includeif", 9) == 0) &&
                   strcmp(key, "path") == 0) {
            const char *home = getenv("HOME");
            _cleanup_free_ char *inc = strncmp(value, "~/", 2) == 0 && home
                                           ? gitguard_str_printf("%s/%s", home, value + 2)
                                       : value[0] == '/' ? strdup(value)
                                                         : gitguard_str_printf("%s/%s", dir, value);
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
    gitguard_reset(g);
    snprintf(g->session, sizeof(g->session), "%s", session);
    clock_gettime(CLOCK_REALTIME, &g->started);
    g->root = strdup(ws->root);
    if (!g->root)
        return error_set(err, ENOMEM, "git metadata");
    g->root_fd = open_abs_nofollow(ws->root, O_RDONLY | O_DIRECTORY);
    if (g->root_fd < 0)
        return error_set(err, errno, "workspace %s", ws->root);
    for (size_t i = 0; i < gitguard_root_trusted_count; i++) {
        struct stat st;
        if (fstatat(g->root_fd, gitguard_root_trusted[i], &st, AT_SYMLINK_NOFOLLOW) < 0 &&
            errno == ENOENT)
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
    _cleanup_close_ int git_state_fd =
        gitguard_open_beneath(state_dir_fd, "git", O_RDONLY | O_DIRECTORY);
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
