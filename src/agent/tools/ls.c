/* pi's ls tool (ls.js): one directory's entries, dotfiles included, sorted
 * as JavaScript's a.toLowerCase().localeCompare(b.toLowerCase()) sorts them,
 * directories (symlinks followed) with a trailing '/', entries that cannot
 * be stat'ed skipped; 500 entries / 50KB. Sandbox or host context. */
#include "agent/tools/args.h"
#include "agent/tools/path.h"
#include "agent/tools/pin.h"
#include "agent/tools/registry.h"
#include "agent/tools/truncate.h"
#include "util/cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <utf8proc.h>

#define LS_DEFAULT_LIMIT 500

/* ICU's root collation order of printable lower-case ASCII (what
 * localeCompare uses); control characters are ignorable. */
static const char ls_ascii_order[] = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789"
                                     "abcdefghijklmnopqrstuvwxyz";

struct ls_entry {
    char *name;
    uint32_t *key; /* primary collation weights, 0-terminated */
    size_t index;  /* readdir order: the sort is stable, as V8's */
    bool is_dir;
};

/* Primary weights approximating ICU: ASCII by the table, other characters
 * lower-cased, decomposed, combining marks ignored, then by code point. */
static uint32_t *ls_collation_key(const char *name)
{
    size_t len = strlen(name);
    uint32_t *key = calloc(len * 4 + 1, sizeof(*key));
    if (!key)
        return NULL;
    size_t k = 0;
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)name;
    utf8proc_ssize_t left = (utf8proc_ssize_t)len;
    while (left > 0) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
        if (n <= 0) {
            cp = 0xfffd;
            n = 1;
        }
        p += n;
        left -= n;
        utf8proc_int32_t decomposed[8];
        int options = UTF8PROC_DECOMPOSE | UTF8PROC_CASEFOLD;
        utf8proc_ssize_t dn = utf8proc_decompose_char(cp, decomposed, 8, options, NULL);
        if (dn <= 0 || dn > 8) {
            decomposed[0] = cp;
            dn = 1;
        }
        for (utf8proc_ssize_t i = 0; i < dn; i++) {
            utf8proc_int32_t c = decomposed[i];
            if (c < 0x80) {
                const char *at =
                    c ? strchr(ls_ascii_order, c >= 'A' && c <= 'Z' ? c + 32 : c) : NULL;
                if (at)
                    key[k++] = (uint32_t)(at - ls_ascii_order) + 1;
                continue; /* control characters are ignorable */
            }
            const utf8proc_property_t *prop = utf8proc_get_property(c);
            if (prop->category == UTF8PROC_CATEGORY_MN || prop->category == UTF8PROC_CATEGORY_ME)
                continue;
            key[k++] = 0x100 + (uint32_t)c;
        }
    }
    key[k] = 0;
    return key;
}

static int ls_compare(const void *a, const void *b)
{
    const struct ls_entry *x = a, *y = b;
    const uint32_t *p = x->key, *q = y->key;
    while (*p && *p == *q) {
        p++;
        q++;
    }
    if (*p != *q)
        return *p < *q ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static void ls_entries_free(struct ls_entry *entries, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(entries[i].name);
        free(entries[i].key);
    }
    free(entries);
}

/* The directory's entries but . and .., in readdir order: each name
 * sanitised, its collation key, whether it is a directory (an entry fstatat
 * cannot read keeps a NULL name). -1 when out of memory (nothing kept). */
static int ls_read(DIR *dir, int dir_fd, struct ls_entry **ret_entries, size_t *ret_count)
{
    struct ls_entry *entries = NULL;
    size_t count = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (count == cap) {
            cap = cap ? cap * 2 : 64;
            struct ls_entry *grown = realloc(entries, cap * sizeof(*entries));
            if (!grown) {
                ls_entries_free(entries, count);
                return -1;
            }
            entries = grown;
        }
        /* Node decodes names as UTF-8 with replacement characters. */
        size_t name_len;
        char *name = utf8_sanitize(de->d_name, strlen(de->d_name), &name_len);
        uint32_t *key = name ? ls_collation_key(name) : NULL;
        struct stat est;
        bool ok = fstatat(dir_fd, de->d_name, &est, 0) == 0;
        /* index: readdir order, the sort's tie-break (count is read once:
         * reading and incrementing it in one expression is unsequenced). */
        size_t index = count;
        entries[count++] = (struct ls_entry){
            .name = name, .key = key, .index = index, .is_dir = ok && S_ISDIR(est.st_mode)};
        if (!name || !key) {
            ls_entries_free(entries, count);
            return -1;
        }
        if (!ok) {
            /* Skipped like pi, but only after tool_ls's limit check, so keep
             * a marker: a NULL-named entry is never printed. */
            free(entries[count - 1].name);
            entries[count - 1].name = NULL;
        }
    }
    *ret_entries = entries;
    *ret_count = count;
    return 0;
}

int tool_ls(const struct tool_env *env, json_t *args, struct tool_result *res)
{
    const char *path = NULL;
    double limit_arg = LS_DEFAULT_LIMIT;
    if (tool_arg_string("ls", args, "path", false, &path, NULL, res) < 0 ||
        tool_arg_number("ls", args, "limit", &limit_arg, res) < 0)
        return 0;
    if (!path || !*path)
        path = ".";
    /* JavaScript compares a fractional limit with the count: ceil is the same. */
    size_t limit = limit_arg <= 0 ? 0 : (size_t)limit_arg;
    if (limit_arg > 0 && (double)limit < limit_arg)
        limit++;

    _cleanup_free_ char *dir_path = tool_resolve_path(path, env);
    if (!dir_path)
        return tool_result_error(res, "out of memory");

    char why[2048];
    why[0] = '\0';
    const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
    /* An approved host call lists exactly the approved directory (pin.h). */
    _cleanup_close_ int dir_fd = env->pin
                                     ? tool_pin_open(env->pin, dir_path, flags, 0, why, sizeof(why))
                                     : open(dir_path, flags);
    struct stat st;
    if (dir_fd < 0 && why[0])
        return tool_result_error(res, "%s", why);
    if (dir_fd < 0) {
        if (stat(dir_path, &st) < 0)
            return tool_result_error(res, "Path not found: %s", dir_path);
        if (!S_ISDIR(st.st_mode))
            return tool_result_error(res, "Not a directory: %s", dir_path);
        return tool_result_error(res, "Cannot read directory: %s: %s, scandir '%s'",
                                 errno == EACCES ? "EACCES" : "EIO",
                                 errno == EACCES ? "permission denied" : strerror(errno), dir_path);
    }
    if (fstat(dir_fd, &st) < 0)
        return tool_result_error(res, "Path not found: %s", dir_path);
    if (!S_ISDIR(st.st_mode))
        return tool_result_error(res, "Not a directory: %s", dir_path);

    int list_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
    _cleanup_closedir_ DIR *dir = list_fd >= 0 ? fdopendir(list_fd) : NULL;
    if (!dir) {
        if (list_fd >= 0)
            close(list_fd);
        return tool_result_error(res, "Cannot read directory: %s", strerror(errno));
    }

    struct ls_entry *entries = NULL;
    size_t count = 0;
    if (ls_read(dir, dir_fd, &entries, &count) < 0)
        return tool_result_error(res, "out of memory");
    if (count > 1)
        qsort(entries, count, sizeof(*entries), ls_compare);

    size_t shown = 0, out_len = 0;
    bool limit_reached = false;
    for (size_t i = 0; i < count; i++) {
        if (shown >= limit) {
            limit_reached = true;
            break;
        }
        if (!entries[i].name)
            continue;
        out_len += strlen(entries[i].name) + 2;
        shown++;
    }
    if (shown == 0) {
        ls_entries_free(entries, count);
        return tool_result_text(res, "(empty directory)", NULL);
    }
    _cleanup_free_ char *listing = malloc(out_len + 1);
    if (!listing) {
        ls_entries_free(entries, count);
        return tool_result_error(res, "out of memory");
    }
    size_t o = 0, printed = 0;
    for (size_t i = 0; i < count && printed < shown; i++) {
        if (!entries[i].name)
            continue;
        if (printed++)
            listing[o++] = '\n';
        size_t n = strlen(entries[i].name);
        memcpy(listing + o, entries[i].name, n);
        o += n;
        if (entries[i].is_dir)
            listing[o++] = '/';
    }
    listing[o] = '\0';
    ls_entries_free(entries, count);

    struct truncation t;
    /* No line limit: the entry count is already capped (Number.MAX_SAFE_INTEGER). */
    truncate_head(listing, o, (size_t)9007199254740991ULL, 0, &t);
    json_t *details = json_object();
    char notice[256] = "";
    if (limit_reached) {
        snprintf(notice, sizeof(notice), "%zu entries limit reached. Use limit=%zu for more", limit,
                 limit * 2);
        json_object_set_new(details, "entryLimitReached", json_integer((json_int_t)limit));
    }
    if (t.truncated) {
        char size[32];
        size_t used = strlen(notice);
        snprintf(notice + used, sizeof(notice) - used, "%s%s limit reached", used ? ". " : "",
                 format_size(TRUNCATE_MAX_BYTES, size, sizeof(size)));
        json_object_set_new(details, "truncation", truncation_to_json(&t));
    }
    return tool_result_listing(res, t.content, t.content_len, notice, strlen(notice), details);
}
