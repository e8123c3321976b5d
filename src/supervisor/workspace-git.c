/* Git layout discovery without host git (docs/workspace.md "Detection"). The
 * work tree root is always the directory that holds the .git entry; what the
 * entry and the files it leads to say is checked against that, never taken
 * as an answer. Host context, unprivileged, before any sandbox exists: every
 * file read here may have been written by an earlier sandbox. */
#include "supervisor/workspace-git.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define GITFILE_MAX    (PATH_MAX + 16) /* "gitdir: " + a path */
#define SMALL_FILE_MAX 256             /* HEAD */
#define CONFIG_MAX     (1 << 20)       /* git's own configs are a few KiB */

bool ws_path_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (strcmp(dir, "/") == 0)
        return path[0] == '/';
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* DIR/NAME without a doubled slash at "/". */
void ws_path_join(char *buf, size_t cap, const char *dir, const char *name)
{
    snprintf(buf, cap, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name);
}

/* A path read from git metadata, made absolute against BASE. */
int ws_path_resolve(const char *base, const char *path, char *buf, size_t cap)
{
    int n = path[0] == '/' ? snprintf(buf, cap, "%s", path)
                           : snprintf(buf, cap, "%s/%s", strcmp(base, "/") == 0 ? "" : base, path);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* Opens the canonical directory PATH (O_PATH) with no symbolic link anywhere
 * on the way, so that what is examined is what the string names. */
static int open_dir_exact(const char *path, struct cordon_error *err)
{
    struct open_how how = {
        .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
        .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
    if (fd < 0 && (errno == ENOSYS || errno == EPERM)) {
        /* No openat2 (kernel < 5.6, or a seccomp filter): one component at
         * a time with O_NOFOLLOW. */
        char copy[PATH_MAX];
        if (snprintf(copy, sizeof(copy), "%s", path) >= (int)sizeof(copy) || copy[0] != '/')
            return error_set(err, ENAMETOOLONG, "workspace: %s", path);
        fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        char *save = NULL;
        for (char *c = strtok_r(copy, "/", &save); c && fd >= 0; c = strtok_r(NULL, "/", &save)) {
            int next = openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            close(fd);
            fd = next;
        }
    }
    if (fd < 0) {
        if (errno == ELOOP || errno == ENOTDIR)
            return error_set(err, 0,
                             "workspace: %s changed while cordon examined it (a symbolic link "
                             "appeared on the way); refusing",
                             path);
        return error_set(err, errno, "workspace: cannot open %s", path);
    }
    return fd;
}

/* Reads NAME in DIRFD (the directory DIRPATH): a regular file, never through
 * a symbolic link, at most CAP-1 bytes, NUL-terminated. 1 read, 0 missing,
 * -1 refused. O_NONBLOCK: a FIFO planted under the name must not hang us. */
static int read_file_at(int dirfd, const char *dirpath, const char *name, char *buf, size_t cap,
                        size_t *len, struct cordon_error *err)
{
    char path[PATH_MAX + 32];
    ws_path_join(path, sizeof(path), dirpath, name);
    _cleanup_close_ int fd =
        openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        if (errno == ELOOP)
            return error_set(err, 0,
                             "workspace: %s is a symbolic link; cordon does not follow symbolic "
                             "links in git metadata (a sandbox could have planted it)",
                             path);
        return error_set(err, errno, "workspace: cannot open %s", path);
    }
    struct stat st;
    if (fstat(fd, &st) < 0)
        return error_set(err, errno, "workspace: %s", path);
    if (!S_ISREG(st.st_mode))
        return error_set(err, 0, "workspace: %s is not a regular file", path);
    size_t pos = 0;
    for (;;) {
        char probe;
        char *dst = pos < cap - 1 ? buf + pos : &probe;
        size_t want = pos < cap - 1 ? cap - 1 - pos : 1;
        ssize_t n = read(fd, dst, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return error_set(err, errno, "workspace: read %s", path);
        if (n == 0)
            break;
        if (dst == &probe)
            return error_set(err, 0, "workspace: %s is larger than %zu bytes; refusing", path,
                             cap - 1);
        pos += (size_t)n;
    }
    buf[pos] = '\0';
    if (strlen(buf) != pos)
        return error_set(err, 0, "workspace: %s contains a NUL byte; refusing", path);
    *len = pos;
    return 1;
}

static void rtrim(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
}

static bool entry_exists(int dirfd, const char *name)
{
    struct stat st;
    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static bool is_dir_at(int dirfd, const char *name)
{
    struct stat st;
    return fstatat(dirfd, name, &st, 0) == 0 && S_ISDIR(st.st_mode);
}

/* git's validate_headref(): a symlink into refs/, "ref: refs/...", or an
 * object name (SHA-1 or SHA-256). */
static bool head_valid(int gfd, const char *gpath)
{
    struct stat st;
    if (fstatat(gfd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) < 0)
        return false;
    char buf[SMALL_FILE_MAX];
    if (S_ISLNK(st.st_mode)) {
        ssize_t n = readlinkat(gfd, "HEAD", buf, sizeof(buf) - 1);
        if (n < 0)
            return false;
        buf[n] = '\0';
        return strncmp(buf, "refs/", 5) == 0;
    }
    struct cordon_error ignored;
    size_t len = 0;
    if (read_file_at(gfd, gpath, "HEAD", buf, sizeof(buf), &len, &ignored) != 1)
        return false;
    if (strncmp(buf, "ref:", 4) == 0) {
        const char *p = buf + 4;
        while (*p == ' ' || *p == '\t')
            p++;
        return strncmp(p, "refs/", 5) == 0;
    }
    size_t hex = strspn(buf, "0123456789abcdef");
    return (hex == 40 || hex == 64) && (buf[hex] == '\0' || isspace((unsigned char)buf[hex]));
}

/* git's is_git_directory(): HEAD in the git dir, objects/ and refs/ in the
 * common dir. NULL: it is a git directory; else what is missing. */
static const char *git_dir_problem(int gfd, const char *gpath, int cfd)
{
    if (!head_valid(gfd, gpath))
        return "no valid HEAD";
    if (!getenv("GIT_OBJECT_DIRECTORY") && !is_dir_at(cfd, "objects"))
        return "no objects directory";
    if (!is_dir_at(cfd, "refs"))
        return "no refs directory";
    return NULL;
}

/* --- git config, the subset that decides where the work tree is --- */

struct cfg_lexer {
    const char *p, *end;
    int line;
};

/* git's get_next_char(): "\r\n" reads as "\n", the end reads as "\n". */
static int cfg_next(struct cfg_lexer *lx, bool *eof)
{
    *eof = false;
    if (lx->p >= lx->end) {
        *eof = true;
        return '\n';
    }
    int c = (unsigned char)*lx->p++;
    if (c == '\r' && lx->p < lx->end && *lx->p == '\n')
        c = (unsigned char)*lx->p++;
    if (c == '\n')
        lx->line++;
    return c;
}

static bool cfg_keychar(int c)
{
    return isalnum(c) || c == '-';
}

static int cfg_bool(const char *value, bool has_value, int *out)
{
    if (!has_value) {
        *out = 1;
        return 0;
    }
    static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
    for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
        if (strcasecmp(value, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(value, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    if (value[0] == '\0') {
        *out = 0;
        return 0;
    }
    char *end = NULL;
    errno = 0;
    long long v = strtoll(value, &end, 0);
    if (errno || end == value)
        return -1;
    if (*end && strchr("kKmMgG", *end) && end[1] == '\0')
        end++;
    if (*end)
        return -1;
    *out = v != 0;
    return 0;
}

/* The rest of a section header after its '[': the section's name
 * (lower-cased; a subsection is not kept) into section; 0, or -1 when git
 * would refuse the line. */
static int scan_section_header(struct cfg_lexer *lx, char *section, size_t size, bool *subsection)
{
    size_t n = 0;
    bool eof;
    *subsection = false;
    for (;;) {
        int c = cfg_next(lx, &eof);
        if (eof || c == '\n')
            return -1;
        if (c == ']')
            break;
        if (isspace(c)) {
            /* [section "subsection"] */
            do
                c = cfg_next(lx, &eof);
            while (!eof && c != '\n' && isspace(c));
            if (c != '"')
                return -1;
            for (;;) {
                c = cfg_next(lx, &eof);
                if (eof || c == '\n')
                    return -1;
                if (c == '"')
                    break;
                if (c == '\\') {
                    c = cfg_next(lx, &eof);
                    if (eof || c == '\n')
                        return -1;
                }
            }
            if (cfg_next(lx, &eof) != ']')
                return -1;
            *subsection = true;
            break;
        }
        if (!cfg_keychar(c) && c != '.')
            return -1;
        if (c == '.')
            *subsection = true; /* the old [section.subsection] form */
        if (n + 1 >= size)
            return -1;
        if (!*subsection)
            section[n++] = (char)tolower(c);
    }
    section[n] = '\0';
    return n == 0 ? -1 : 0;
}

/* A variable's name from its first character c (lower-cased into key);
 * *next is the first character after it and the blanks that follow. */
static int scan_key(struct cfg_lexer *lx, int c, char *key, size_t size, int *next)
{
    bool eof;
    size_t kn = 0;
    key[kn++] = (char)tolower(c);
    for (;;) {
        c = cfg_next(lx, &eof);
        if (eof || !cfg_keychar(c))
            break;
        if (kn + 1 >= size)
            return -1;
        key[kn++] = (char)tolower(c);
    }
    key[kn] = '\0';
    while (c == ' ' || c == '\t')
        c = cfg_next(lx, &eof);
    *next = c;
    return 0;
}

/* One value as git reads it, after its '=', to the end of its line:
 * quotes, escapes, comments, continued lines, inner blanks folded. A value
 * longer than the buffer is cut and *too_long set. */
static int scan_value(struct cfg_lexer *lx, char *value, size_t size, size_t *len, bool *too_long)
{
    bool eof, quote = false, vcomment = false;
    size_t spaces = 0, vn = 0;
    for (;;) {
        int c = cfg_next(lx, &eof);
        if (c == '\n') {
            if (quote)
                return -1;
            break;
        }
        if (vcomment)
            continue;
        if (isspace(c) && !quote) {
            if (vn)
                spaces++;
            continue;
        }
        if (!quote && (c == ';' || c == '#')) {
            vcomment = true;
            continue;
        }
        for (; spaces; spaces--) {
            if (vn + 1 < size)
                value[vn++] = ' ';
            else
                *too_long = true;
        }
        if (c == '\\') {
            c = cfg_next(lx, &eof);
            if (c == '\n') {
                if (eof)
                    return -1;
                continue; /* a continued line */
            }
            if (c == 't')
                c = '\t';
            else if (c == 'b')
                c = '\b';
            else if (c == 'n')
                c = '\n';
            else if (c != '\\' && c != '"')
                return -1;
        } else if (c == '"') {
            quote = !quote;
            continue;
        }
        if (vn + 1 < size)
            value[vn++] = (char)c;
        else
            *too_long = true;
    }
    value[vn] = '\0';
    *len = vn;
    return 0;
}

/* What one variable means for the workspace: core.worktree, core.bare,
 * extensions.worktreeConfig; the others are not read. */
static int apply_variable(const char *section, const char *key, const char *value, size_t vn,
                          bool has_value, bool too_long, const char *file, int line,
                          struct ws_git_core *core, struct cordon_error *err)
{
    bool is_core = strcmp(section, "core") == 0;
    if (is_core && strcmp(key, "worktree") == 0) {
        if (too_long)
            return error_set(err, 0, "workspace: %s line %d: core.worktree is too long", file,
                             line);
        core->worktree_set = true;
        core->worktree_line = line;
        memcpy(core->worktree, value, vn + 1);
    } else if (is_core && strcmp(key, "bare") == 0) {
        if (cfg_bool(value, has_value, &core->bare) < 0)
            return error_set(err, 0, "workspace: %s line %d: bad boolean for core.bare", file,
                             line);
    } else if (strcmp(section, "extensions") == 0 && strcmp(key, "worktreeconfig") == 0) {
        int b = 0;
        if (cfg_bool(value, has_value, &b) < 0)
            return error_set(err, 0,
                             "workspace: %s line %d: bad boolean for "
                             "extensions.worktreeConfig",
                             file, line);
        core->worktree_config = b;
    }
    return 0;
}

int ws_git_config_scan(const char *text, size_t len, const char *file, struct ws_git_core *core,
                       struct cordon_error *err)
{
    struct cfg_lexer lx = {text, text + len, 1};
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        lx.p += 3;
    char section[64] = "";
    bool subsection = false, have_section = false, comment = false;
    for (;;) {
        bool eof;
        int c = cfg_next(&lx, &eof);
        if (c == '\n') {
            if (eof)
                return 0;
            comment = false;
            continue;
        }
        if (comment || isspace(c))
            continue;
        if (c == '#' || c == ';') {
            comment = true;
            continue;
        }
        int line = lx.line;
        if (c == '[') {
            if (scan_section_header(&lx, section, sizeof(section), &subsection) < 0)
                goto bad;
            have_section = true;
            continue;
        }
        if (!isalpha(c) || !have_section)
            goto bad;
        char key[64];
        if (scan_key(&lx, c, key, sizeof(key), &c) < 0)
            goto bad;
        char value[PATH_MAX];
        size_t vn = 0;
        bool has_value = false, too_long = false;
        value[0] = '\0';
        if (c != '\n') {
            if (c != '=')
                goto bad;
            has_value = true;
            if (scan_value(&lx, value, sizeof(value), &vn, &too_long) < 0)
                goto bad;
        }
        if (subsection)
            continue;
        if (apply_variable(section, key, value, vn, has_value, too_long, file, line, core, err) < 0)
            return -1;
        continue;
    bad:
        return error_set(err, 0,
                         "workspace: bad config line %d in %s (git would refuse it too); "
                         "refusing to guess the workspace",
                         line, file);
    }
}

/* Scans GPATH/NAME if it exists. */
static int config_read(int gfd, const char *gpath, const char *name, struct ws_git_core *core,
                       struct cordon_error *err)
{
    _cleanup_free_ char *buf = malloc(CONFIG_MAX + 1);
    if (!buf)
        return error_set(err, ENOMEM, "workspace");
    size_t len = 0;
    int r = read_file_at(gfd, gpath, name, buf, CONFIG_MAX + 1, &len, err);
    if (r <= 0)
        return r;
    char file[PATH_MAX + 32];
    ws_path_join(file, sizeof(file), gpath, name);
    return ws_git_config_scan(buf, len, file, core, err);
}

/* A core.worktree that git would honour must name ROOT (relative values are
 * relative to the git directory GIT_DIR, as in git). */
static int check_core_worktree(const struct ws_git_core *core, const char *file,
                               const char *git_dir, const char *root, struct cordon_error *err)
{
    if (!core->worktree_set)
        return 0;
    char joined[2 * PATH_MAX + 2];
    _cleanup_free_ char *real = NULL;
    if (ws_path_resolve(git_dir, core->worktree, joined, sizeof(joined)) == 0)
        real = realpath(joined, NULL);
    if (real && strcmp(real, root) == 0)
        return 0;
    return error_set(err, 0,
                     "workspace: %s sets core.worktree = %s (line %d), which is not this work "
                     "tree %s; cordon takes the work tree from where the .git entry is and "
                     "refuses a repository whose configuration says otherwise (a sandbox could "
                     "have written it to widen the next session's workspace); remove the setting "
                     "(git config --unset core.worktree) if you did not make it",
                     file, core->worktree, core->worktree_line, root);
}

/* GPATH/NAME's core settings, read into *core, with a core.worktree
 * there refused unless it names root. */
static int config_check(int gfd, const char *gpath, const char *name, const char *root,
                        struct ws_git_core *core, struct cordon_error *err)
{
    *core = (struct ws_git_core){.bare = -1};
    char file[PATH_MAX + 32];
    ws_path_join(file, sizeof(file), gpath, name);
    if (config_read(gfd, gpath, name, core, err) < 0)
        return -1;
    return check_core_worktree(core, file, gpath, root, err);
}

int ws_git_layout_set(struct ws_git_layout *out, const char *root, const char *git_dir,
                      const char *common_dir, struct cordon_error *err)
{
    out->root = strdup(root);
    out->git_dir = strdup(git_dir);
    out->common_dir = strdup(common_dir);
    if (!out->root || !out->git_dir || !out->common_dir) {
        ws_git_layout_free(out);
        return error_set(err, ENOMEM, "workspace");
    }
    return 0;
}

/* ROOT/.git is a directory: a repository's own git directory. */
static int examine_git_directory(const char *root, int rootfd, struct ws_git_layout *out,
                                 struct cordon_error *err)
{
    char gpath[PATH_MAX + 8];
    ws_path_join(gpath, sizeof(gpath), root, ".git");
    _cleanup_close_ int gfd = openat(rootfd, ".git", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (gfd < 0)
        return error_set(err, errno, "workspace: cannot open %s", gpath);
    if (entry_exists(gfd, "commondir"))
        return error_set(err, 0,
                         "workspace: %s/commondir exists, but a repository's own .git directory "
                         "has no commondir (only a linked worktree's git directory under "
                         ".git/worktrees/ has one); refusing: it could have been planted to point "
                         "git at another repository; remove it if you did not create it",
                         gpath);
    const char *problem = git_dir_problem(gfd, gpath, gfd);
    if (problem)
        return error_set(err, 0,
                         "workspace: %s is a directory but not a git repository (%s); git would "
                         "look for a repository above it; refusing to guess the workspace: remove "
                         "it, or run git init",
                         gpath, problem);
    struct ws_git_core core;
    if (config_check(gfd, gpath, "config", root, &core, err) < 0)
        return -1;
    /* config.worktree counts only with extensions.worktreeConfig; a
     * core.worktree there is refused either way, the cheaper rule to trust. */
    bool bare = core.bare == 1;
    if (config_check(gfd, gpath, "config.worktree", root, &core, err) < 0)
        return -1;
    if (bare || core.bare == 1)
        log_debug("workspace: %s says core.bare = true; the work tree is still %s (the "
                  "directory holding .git)",
                  gpath, root);
    return ws_git_layout_set(out, root, gpath, gpath, err);
}

/* Reads a path file (commondir, gitdir) of the git directory GPATH and
 * returns it canonical, relative paths taken relative to GPATH. */
static int read_path_file(int gfd, const char *gpath, const char *name, char **real,
                          struct cordon_error *err)
{
    char buf[GITFILE_MAX];
    size_t len = 0;
    int r = read_file_at(gfd, gpath, name, buf, sizeof(buf), &len, err);
    if (r <= 0)
        return r;
    rtrim(buf);
    char joined[2 * PATH_MAX + 2];
    if (buf[0] == '\0' || ws_path_resolve(gpath, buf, joined, sizeof(joined)) < 0)
        return error_set(err, 0, "workspace: %s/%s does not hold a usable path", gpath, name);
    *real = realpath(joined, NULL);
    if (!*real)
        return error_set(err, errno, "workspace: %s/%s names %s, which cannot be resolved", gpath,
                         name, buf);
    return 1;
}

/* ROOT/.git is a file: a linked worktree, a submodule or a separate git dir. */
/* A linked worktree: GIT_COMMON/worktrees/NAME, whose gitdir file names
 * this .git file (dpath) back (git worktree add writes both). */
static int examine_linked_worktree(const char *root, const char *dpath, const struct stat *dot_git,
                                   const char *gpath, int gfd, const char *cpath,
                                   struct ws_git_layout *out, struct cordon_error *err)
{
    _cleanup_close_ int cfd = open_dir_exact(cpath, err);
    if (cfd < 0)
        return -1;
    char expect[PATH_MAX + 16];
    ws_path_join(expect, sizeof(expect), cpath, "worktrees");
    const char *slash = strrchr(gpath, '/');
    if (!slash || (size_t)(slash - gpath) != strlen(expect) ||
        strncmp(gpath, expect, strlen(expect)) != 0)
        return error_set(err, 0,
                         "workspace: %s names %s, whose commondir names %s, but a linked "
                         "worktree's git directory lies in %s/; refusing: the layout could "
                         "have been planted",
                         dpath, gpath, cpath, expect);
    if (entry_exists(cfd, "commondir"))
        return error_set(err, 0,
                         "workspace: the common directory %s of %s has a commondir file "
                         "itself; refusing",
                         cpath, dpath);
    const char *problem = git_dir_problem(gfd, gpath, cfd);
    if (problem)
        return error_set(err, 0, "workspace: %s names %s, which is not a git directory (%s)", dpath,
                         gpath, problem);
    _cleanup_free_ char *back = NULL;
    int r = read_path_file(gfd, gpath, "gitdir", &back, err);
    if (r < 0)
        return -1;
    struct stat bst;
    if (r == 0 || strcmp(back, dpath) != 0 || stat(back, &bst) < 0 ||
        bst.st_dev != dot_git->st_dev || bst.st_ino != dot_git->st_ino)
        return error_set(err, 0,
                         "workspace: %s names the linked worktree git directory %s, but its "
                         "gitdir file points at %s, not back at %s; refusing: the .git file "
                         "could have been planted (if you moved the worktree, run git "
                         "worktree repair in it)",
                         dpath, gpath, back ? back : "nothing (no gitdir file)", dpath);
    /* Linked worktrees ignore core.worktree in the common config unless
     * extensions.worktreeConfig is on (git's setup.c); config.worktree
     * is checked either way. */
    struct ws_git_core core = {.bare = -1};
    char file[PATH_MAX + 32];
    ws_path_join(file, sizeof(file), cpath, "config");
    if (config_read(cfd, cpath, "config", &core, err) < 0)
        return -1;
    if (core.worktree_config && check_core_worktree(&core, file, gpath, root, err) < 0)
        return -1;
    if (config_check(gfd, gpath, "config.worktree", root, &core, err) < 0)
        return -1;
    return ws_git_layout_set(out, root, gpath, cpath, err);
}

/* No commondir: a submodule's git directory (SUPER/.git/modules/...),
 * which names its work tree back in core.worktree (git submodule sets it;
 * old ones may lack it and are then accepted only under their
 * superproject), or one made by --separate-git-dir, which has no such
 * back-pointer until the user adds it. */
static int examine_own_gitdir(const char *root, const char *dpath, const char *gpath, int gfd,
                              struct ws_git_layout *out, struct cordon_error *err)
{
    const char *problem = git_dir_problem(gfd, gpath, gfd);
    if (problem)
        return error_set(err, 0, "workspace: %s names %s, which is not a git directory (%s)", dpath,
                         gpath, problem);
    struct ws_git_core core;
    if (config_check(gfd, gpath, "config", root, &core, err) < 0)
        return -1;
    bool named_back = core.worktree_set;
    if (config_check(gfd, gpath, "config.worktree", root, &core, err) < 0)
        return -1;
    named_back = named_back || core.worktree_set;
    if (named_back)
        return ws_git_layout_set(out, root, gpath, gpath, err);
    for (const char *m = strstr(gpath, "/.git/modules/"); m; m = strstr(m + 1, "/.git/modules/")) {
        char super[PATH_MAX];
        snprintf(super, sizeof(super), "%.*s", (int)(m - gpath), gpath);
        if (super[0] == '\0')
            snprintf(super, sizeof(super), "/");
        if (ws_path_under(root, super) && strcmp(root, super) != 0)
            return ws_git_layout_set(out, root, gpath, gpath, err);
    }
    return error_set(err, 0,
                     "workspace: %s names the git directory %s, which is neither a submodule's "
                     "git directory (under its superproject's .git/modules/) nor names this work "
                     "tree back (core.worktree); refusing: the .git file could have been planted "
                     "to hand the sandbox another repository; if the layout is yours (git init "
                     "--separate-git-dir), name the work tree in it: git --git-dir=%s config "
                     "core.worktree %s",
                     dpath, gpath, gpath, root);
}

static int examine_gitfile(const char *root, int rootfd, const struct stat *dot_git,
                           struct ws_git_layout *out, struct cordon_error *err)
{
    char dpath[PATH_MAX + 8];
    ws_path_join(dpath, sizeof(dpath), root, ".git");
    char buf[GITFILE_MAX];
    size_t len = 0;
    if (read_file_at(rootfd, root, ".git", buf, sizeof(buf), &len, err) < 0)
        return -1;
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
        buf[--len] = '\0';
    if (strncmp(buf, "gitdir: ", 8) != 0 || len == 8)
        return error_set(err, 0,
                         "workspace: %s is a file but not a \"gitdir: PATH\" file; refusing to "
                         "guess the workspace",
                         dpath);
    const char *named = buf + 8;
    char joined[2 * PATH_MAX + 2];
    if (ws_path_resolve(root, named, joined, sizeof(joined)) < 0)
        return error_set(err, ENAMETOOLONG, "workspace: %s", dpath);
    _cleanup_free_ char *gpath = realpath(joined, NULL);
    if (!gpath)
        return error_set(err, errno,
                         "workspace: %s names the git directory %s, which cannot be "
                         "resolved",
                         dpath, named);
    if (ws_path_under(root, gpath))
        return error_set(err, 0,
                         "workspace: %s names the git directory %s, which contains the work tree; "
                         "refusing",
                         dpath, gpath);
    _cleanup_close_ int gfd = open_dir_exact(gpath, err);
    if (gfd < 0)
        return -1;

    _cleanup_free_ char *cpath = NULL;
    int has_common = read_path_file(gfd, gpath, "commondir", &cpath, err);
    if (has_common < 0)
        return -1;
    if (has_common)
        return examine_linked_worktree(root, dpath, dot_git, gpath, gfd, cpath, out, err);
    return examine_own_gitdir(root, dpath, gpath, gfd, out, err);
}

static int examine_dot_git(const char *root, int rootfd, const struct stat *st,
                           struct ws_git_layout *out, struct cordon_error *err)
{
    char dpath[PATH_MAX + 8];
    ws_path_join(dpath, sizeof(dpath), root, ".git");
    if (S_ISDIR(st->st_mode))
        return examine_git_directory(root, rootfd, out, err);
    if (S_ISREG(st->st_mode))
        return examine_gitfile(root, rootfd, st, out, err);
    if (S_ISLNK(st->st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlinkat(rootfd, ".git", target, sizeof(target) - 1);
        target[n < 0 ? 0 : n] = '\0';
        return error_set(err, 0,
                         "workspace: %s is a symbolic link (to %s); cordon refuses it: a sandbox "
                         "could have planted it to hand the next session another repository; "
                         "replace it with the directory itself or a \"gitdir: PATH\" file",
                         dpath, target);
    }
    return error_set(err, 0,
                     "workspace: %s is neither a directory nor a regular file; refusing to guess "
                     "the workspace",
                     dpath);
}

/* The longest GIT_CEILING_DIRECTORIES entry that is a proper ancestor of
 * CWD: discovery does not examine it or anything above. -1: none. */
static long ceiling_length(const char *cwd)
{
    const char *env = getenv("GIT_CEILING_DIRECTORIES");
    if (!env || !*env)
        return -1;
    _cleanup_free_ char *copy = strdup(env);
    if (!copy)
        return -1;
    long best = -1;
    char *save = NULL;
    for (char *e = strtok_r(copy, ":", &save); e; e = strtok_r(NULL, ":", &save)) {
        if (e[0] != '/')
            continue;
        char real[PATH_MAX];
        const char *entry = realpath(e, real) ? real : e;
        if (ws_path_under(cwd, entry) && strcmp(cwd, entry) != 0 && (long)strlen(entry) > best)
            best = (long)strlen(entry);
    }
    return best;
}

static bool env_bool(const char *name)
{
    const char *v = getenv(name);
    int b = 0;
    return v && cfg_bool(v, true, &b) == 0 && b;
}

int ws_git_discover(const char *cwd, struct ws_git_layout *out, struct cordon_error *err)
{
    struct ws_git_layout l = {0};
    char dir[PATH_MAX];
    if (cwd[0] != '/' || snprintf(dir, sizeof(dir), "%s", cwd) >= (int)sizeof(dir))
        return error_set(err, ENAMETOOLONG, "workspace: %s", cwd);
    long ceiling = ceiling_length(cwd);
    bool across = env_bool("GIT_DISCOVERY_ACROSS_FILESYSTEM");
    dev_t start_dev = 0;
    for (bool first = true;; first = false) {
        _cleanup_close_ int dfd = open_dir_exact(dir, err);
        if (dfd < 0)
            return -1;
        struct stat st;
        if (fstat(dfd, &st) < 0)
            return error_set(err, errno, "workspace: %s", dir);
        if (first)
            start_dev = st.st_dev;
        else if (!across && st.st_dev != start_dev)
            break; /* git stops at a mount point too */
        if (fstatat(dfd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0) {
            if (examine_dot_git(dir, dfd, &st, &l, err) < 0)
                return -1;
            *out = l;
            return 0;
        }
        if (errno != ENOENT)
            return error_set(err, errno, "workspace: cannot examine %s/.git", dir);
        if (head_valid(dfd, dir) && ((is_dir_at(dfd, "objects") && is_dir_at(dfd, "refs")) ||
                                     entry_exists(dfd, "commondir")))
            return error_set(err, 0,
                             "workspace: %s is itself a git directory (a bare repository, or the "
                             "inside of a .git directory); cordon needs a work tree: run it in the "
                             "repository's work tree",
                             dir);
        if (strcmp(dir, "/") == 0)
            break;
        char *slash = strrchr(dir, '/');
        if (slash == dir)
            slash[1] = '\0';
        else
            *slash = '\0';
        if (ceiling >= 0 && (long)strlen(dir) <= ceiling)
            break;
    }
    *out = l;
    return 0;
}

void ws_git_layout_free(struct ws_git_layout *l)
{
    if (!l)
        return;
    free(l->root);
    free(l->git_dir);
    free(l->common_dir);
    *l = (struct ws_git_layout){0};
}
