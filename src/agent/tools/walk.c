/* The shared directory walk of find and grep (see walk.h for the rules it
 * follows). Works with directory fds: every directory is opened relative to
 * its parent with O_NOFOLLOW, so a symlink swapped in during the walk is not
 * followed. Sandbox or host context. */
#include "agent/tools/walk.h"

#include "util/cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { CAT_CUSTOM, CAT_IGNORE, CAT_GIT, CAT_EXCLUDE, CAT_COUNT };

struct walk_dirent {
    char *name;
    enum walk_type type;
};

struct walk_frame {
    int fd;
    char *path;
    size_t path_len;
    struct walk_dirent *entries;
    size_t count, next;
    struct ignore_rules *rules[CAT_COUNT];
    bool chain_has_git; /* a .git here or in an ancestor */
};

struct walker {
    const struct walk_options *opt;
    struct walk_frame *frames; /* ancestors of root, then root and below */
    size_t nframes, cap;
    size_t first_walked; /* index of the root's frame */
    size_t override_whitelists;
};

static void frame_clear(struct walk_frame *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    for (size_t i = 0; i < f->count; i++)
        free(f->entries[i].name);
    free(f->entries);
    f->entries = NULL;
    f->count = 0;
    free(f->path);
    f->path = NULL;
    for (int i = 0; i < CAT_COUNT; i++) {
        ignore_rules_free(f->rules[i]);
        f->rules[i] = NULL;
    }
}

/* Reads a small regular file below dirfd; NULL when absent, not regular or
 * unreadable (ignore files that cannot be read are not an error for rg/fd). */
static char *read_small_file(int dirfd, const char *name, size_t *len)
{
    _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        return NULL;
    size_t want =
        (size_t)st.st_size < WALK_IGNORE_FILE_MAX ? (size_t)st.st_size : WALK_IGNORE_FILE_MAX;
    char *buf = malloc(want + 1);
    if (!buf)
        return NULL;
    size_t got = 0;
    while (got < want) {
        ssize_t n = read(fd, buf + got, want - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    buf[got] = '\0';
    *len = got;
    return buf;
}

static struct ignore_rules *load_rules(int dirfd, const char *name)
{
    size_t len = 0;
    _cleanup_free_ char *text = read_small_file(dirfd, name, &len);
    if (!text)
        return NULL;
    return ignore_rules_parse(text, len, WALK_IGNORE_RULES_MAX);
}

/* The names a directory's rules come from: which of them it holds. */
enum {
    HAS_CUSTOM = 1 << 0,
    HAS_IGNORE = 1 << 1,
    HAS_GITIGNORE = 1 << 2,
    HAS_GIT = 1 << 3,
    HAS_ALL = HAS_CUSTOM | HAS_IGNORE | HAS_GITIGNORE | HAS_GIT,
};

static unsigned rule_name_bit(const struct walker *w, const char *name)
{
    if (name[0] != '.')
        return 0;
    if (strcmp(name, ".gitignore") == 0)
        return HAS_GITIGNORE;
    if (strcmp(name, ".ignore") == 0)
        return HAS_IGNORE;
    if (strcmp(name, ".git") == 0)
        return HAS_GIT;
    if (w->opt->custom_ignore_name && strcmp(name, w->opt->custom_ignore_name) == 0)
        return HAS_CUSTOM;
    return 0;
}

/* Loads the rules of a directory; present says which of the names may be
 * there (HAS_ALL for a directory that was not listed: each is tried), so a
 * listed directory without them costs no system call. */
static void frame_load_rules(struct walker *w, struct walk_frame *f, bool parent_has_git,
                             unsigned present)
{
    struct stat st;
    bool has_git = (present & HAS_GIT) && fstatat(f->fd, ".git", &st, 0) == 0;
    f->chain_has_git = parent_has_git || has_git;
    if (w->opt->custom_ignore_name && (present & HAS_CUSTOM))
        f->rules[CAT_CUSTOM] = load_rules(f->fd, w->opt->custom_ignore_name);
    if (present & HAS_IGNORE)
        f->rules[CAT_IGNORE] = load_rules(f->fd, ".ignore");
    if (present & HAS_GITIGNORE)
        f->rules[CAT_GIT] = load_rules(f->fd, ".gitignore");
    if (has_git && S_ISDIR(st.st_mode))
        f->rules[CAT_EXCLUDE] = load_rules(f->fd, ".git/info/exclude");
}

static int dirent_cmp(const void *a, const void *b)
{
    return strcmp(((const struct walk_dirent *)a)->name, ((const struct walk_dirent *)b)->name);
}

static enum walk_type type_of(int dirfd, const char *name, unsigned char d_type)
{
    switch (d_type) {
    case DT_DIR:
        return WALK_DIR;
    case DT_REG:
        return WALK_FILE;
    case DT_LNK:
        return WALK_SYMLINK;
    case DT_UNKNOWN:
        break;
    default:
        return WALK_OTHER;
    }
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return WALK_OTHER;
    if (S_ISDIR(st.st_mode))
        return WALK_DIR;
    if (S_ISREG(st.st_mode))
        return WALK_FILE;
    if (S_ISLNK(st.st_mode))
        return WALK_SYMLINK;
    return WALK_OTHER;
}

/* Lists the directory, sorted, through getdents64 on the frame's own fd
 * (no duplicate, no DIR stream: three system calls fewer a directory, and
 * one read of up to WALK_LIST_BUF bytes of entries at a time). An
 * unreadable directory lists as empty. *present gets the rule files'
 * names it holds (rule_name_bit). */
#define WALK_LIST_BUF (32u * 1024)
static int frame_read_entries(struct walker *w, struct walk_frame *f, unsigned *present)
{
    _Alignas(struct dirent64) char buf[WALK_LIST_BUF];
    size_t cap = 0;
    *present = 0;
    while (f->count < WALK_MAX_DIR_ENTRIES) {
        ssize_t n = getdents64(f->fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        for (ssize_t at = 0; at < n && f->count < WALK_MAX_DIR_ENTRIES;) {
            const struct dirent64 *de = (const struct dirent64 *)(buf + at);
            at += de->d_reclen;
            const char *name = de->d_name;
            if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
                continue;
            if (f->count == cap) {
                cap = cap ? cap * 2 : 32;
                struct walk_dirent *p = realloc(f->entries, cap * sizeof(*p));
                if (!p)
                    return -1;
                f->entries = p;
            }
            char *copy = strdup(name);
            if (!copy)
                return -1;
            *present |= rule_name_bit(w, name);
            f->entries[f->count].name = copy;
            f->entries[f->count].type = type_of(f->fd, name, de->d_type);
            f->count++;
        }
    }
    if (f->count > 1)
        qsort(f->entries, f->count, sizeof(*f->entries), dirent_cmp);
    return 0;
}

static int push_frame(struct walker *w, int fd, char *path, bool parent_has_git, bool read_entries)
{
    if (w->nframes == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        struct walk_frame *p = realloc(w->frames, cap * sizeof(*p));
        if (!p) {
            close(fd);
            free(path);
            return -1;
        }
        w->frames = p;
        w->cap = cap;
    }
    struct walk_frame *f = &w->frames[w->nframes++];
    memset(f, 0, sizeof(*f));
    f->fd = fd;
    f->path = path;
    f->path_len = strlen(path);
    unsigned present = HAS_ALL;
    if (read_entries && frame_read_entries(w, f, &present) < 0)
        return -1;
    frame_load_rules(w, f, parent_has_git, present);
    return 0;
}

/* The path of `abs` relative to frame f's directory. */
static const char *rel_to(const struct walk_frame *f, const char *abs)
{
    if (f->path_len == 1 && f->path[0] == '/')
        return abs + 1;
    return abs + f->path_len + 1;
}

static bool is_ignored(const struct walker *w, const char *abs, const char *name, bool is_dir)
{
    const struct walk_options *opt = w->opt;
    if (opt->exclude_dot_git && strcmp(name, ".git") == 0)
        return true;
    if (opt->overrides) {
        const char *subject = abs;
        size_t base_len = opt->override_base ? strlen(opt->override_base) : 0;
        if (base_len > 0 && strncmp(abs, opt->override_base, base_len) == 0) {
            if (base_len == 1 && abs[0] == '/')
                subject = abs + 1;
            else if (abs[base_len] == '/')
                subject = abs + base_len + 1;
        }
        enum ignore_match m = ignore_rules_match(opt->overrides, subject, is_dir);
        if (m == IGNORE_NONE && w->override_whitelists > 0 && !is_dir)
            return true;
        if (m == IGNORE_IGNORE)
            return true;
        if (m == IGNORE_WHITELIST)
            return false;
    }
    const struct walk_frame *deepest = &w->frames[w->nframes - 1];
    enum ignore_match found[CAT_COUNT] = {IGNORE_NONE};
    for (size_t i = w->nframes; i-- > 0;) {
        const struct walk_frame *f = &w->frames[i];
        const char *rel = rel_to(f, abs);
        for (int c = 0; c < CAT_COUNT; c++) {
            if (found[c] != IGNORE_NONE || !f->rules[c])
                continue;
            if ((c == CAT_GIT || c == CAT_EXCLUDE) && opt->require_git && !deepest->chain_has_git)
                continue;
            found[c] = ignore_rules_match(f->rules[c], rel, is_dir);
        }
    }
    for (int c = 0; c < CAT_COUNT; c++)
        if (found[c] != IGNORE_NONE)
            return found[c] == IGNORE_IGNORE;
    return false;
}

static char *join_path(const char *dir, size_t dir_len, const char *name)
{
    size_t name_len = strlen(name);
    bool slash = !(dir_len == 1 && dir[0] == '/');
    char *p = malloc(dir_len + slash + name_len + 1);
    if (!p)
        return NULL;
    memcpy(p, dir, dir_len);
    if (slash)
        p[dir_len] = '/';
    memcpy(p + dir_len + slash, name, name_len + 1);
    return p;
}

static int add_ancestors(struct walker *w, const char *root)
{
    /* "/a/b/c": "/", "/a", "/a/b". */
    size_t len = strlen(root);
    bool has_git = false;
    for (size_t i = 0; i < len; i++) {
        if (root[i] != '/')
            continue;
        size_t plen = i == 0 ? 1 : i;
        if (i == 0 && len == 1)
            break;
        char *path = strndup(root, plen);
        if (!path)
            return -1;
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            free(path);
            continue;
        }
        if (push_frame(w, fd, path, has_git, false) < 0)
            return -1;
        has_git = w->frames[w->nframes - 1].chain_has_git;
    }
    return 0;
}

int walk_tree(const char *root, const struct walk_options *options, struct cordon_error *err)
{
    struct walker w = {.opt = options};
    int ret = 0;
    w.override_whitelists = ignore_rules_whitelists(options->overrides);
    size_t root_len = strlen(root);
    while (root_len > 1 && root[root_len - 1] == '/')
        root_len--;
    if (add_ancestors(&w, root) < 0) {
        ret = error_set(err, ENOMEM, "walk");
        goto out;
    }
    int root_fd = options->have_root_fd ? fcntl(options->root_fd, F_DUPFD_CLOEXEC, 0)
                                        : open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) {
        ret = error_set(err, errno, "%s", root);
        goto out;
    }
    /* A duplicate shares the pinned fd's offset: list from the start. */
    if (options->have_root_fd)
        (void)lseek(root_fd, 0, SEEK_SET);
    char *root_path = strndup(root, root_len);
    if (!root_path) {
        close(root_fd);
        ret = error_set(err, ENOMEM, "walk");
        goto out;
    }
    bool parent_git = w.nframes > 0 && w.frames[w.nframes - 1].chain_has_git;
    if (push_frame(&w, root_fd, root_path, parent_git, true) < 0) {
        ret = error_set(err, ENOMEM, "walk");
        goto out;
    }
    w.first_walked = w.nframes - 1;

    while (w.nframes > w.first_walked) {
        struct walk_frame *f = &w.frames[w.nframes - 1];
        if (f->next >= f->count) {
            frame_clear(f);
            w.nframes--;
            continue;
        }
        struct walk_dirent *d = &f->entries[f->next++];
        enum walk_type type = d->type;
        _cleanup_free_ char *abs = join_path(f->path, f->path_len, d->name);
        if (!abs) {
            ret = error_set(err, ENOMEM, "walk");
            goto out;
        }
        if (is_ignored(&w, abs, d->name, type == WALK_DIR))
            continue;
        struct walk_entry entry = {
            .path = abs,
            .rel = abs + (root_len == 1 ? 1 : root_len + 1),
            .name = d->name,
            .type = type,
            .dirfd = f->fd,
        };
        int r = options->visit(options->ctx, &entry, err);
        if (r < 0) {
            ret = r;
            goto out;
        }
        if (r > 0)
            goto out;
        if (type != WALK_DIR || w.nframes - w.first_walked >= WALK_MAX_DEPTH)
            continue;
        int fd = openat(f->fd, d->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            if (options->on_error)
                options->on_error(options->ctx, abs, errno);
            continue;
        }
        bool has_git = f->chain_has_git;
        char *path = TAKE_PTR(abs);
        /* push_frame may move the frames array: f is not used after it. */
        if (push_frame(&w, fd, path, has_git, true) < 0) {
            ret = error_set(err, ENOMEM, "walk");
            goto out;
        }
    }
out:
    for (size_t i = 0; i < w.nframes; i++)
        frame_clear(&w.frames[i]);
    free(w.frames);
    return ret;
}
