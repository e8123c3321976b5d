/* The trust record (trust.h). Written atomically (temporary file, rename)
 * with mode 0600, so a crash never leaves a half-written record. Host
 * context, unprivileged. */
#include "config/trust.h"
#include "config/sha256.h"
#include "config/toml.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static void trust_json_decrefp(json_t **j)
{
    json_decref(*j);
}
#define _cleanup_json_ __attribute__((cleanup(trust_json_decrefp)))

int cfg_read_workspace_file(const char *path, char **ret_data, size_t *ret_length, bool *ret_exists,
                            struct cordon_error *err)
{
    *ret_exists = false;
    /* The file is agent-writable: a symlink could point the host at any file
     * the user can read. */
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT)
        return 0;
    if (fd < 0 && errno == ELOOP)
        return error_set(err, 0, "%s: is a symlink; refusing to read it", path);
    if (fd < 0)
        return error_set(err, errno, "%s", path);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return error_set(err, errno, "%s", path);
    if (!S_ISREG(st.st_mode))
        return error_set(err, 0, "%s: not a regular file", path);
    if (st.st_size > TOML_MAX_INPUT)
        return error_set(err, 0, "%s: larger than %d bytes", path, TOML_MAX_INPUT);
    _cleanup_free_ char *data = malloc((size_t)st.st_size + 1);
    if (!data)
        return error_set(err, ENOMEM, "%s", path);
    size_t length = 0;
    for (;;) {
        ssize_t n = read(fd, data + length, (size_t)st.st_size + 1 - length);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return error_set(err, errno, "%s", path);
        if (n == 0)
            break;
        length += (size_t)n;
        if (length > (size_t)st.st_size)
            return error_set(err, 0, "%s: changed while being read", path);
    }
    data[length] = '\0';
    *ret_data = TAKE_PTR(data);
    *ret_length = length;
    *ret_exists = true;
    return 0;
}

void cfg_trust_list_free(struct cfg_trust_list *list)
{
    for (size_t i = 0; i < list->count; i++) {
        free(list->items[i].workspace);
        free(list->items[i].sha256);
        free(list->items[i].trusted_at);
    }
    free(list->items);
    list->items = NULL;
    list->count = 0;
}

const struct cfg_trust_entry *cfg_trust_find(const struct cfg_trust_list *list,
                                             const char *workspace)
{
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(list->items[i].workspace, workspace) == 0)
            return &list->items[i];
    return NULL;
}

static int load_json(const char *trust_file, json_t **ret, struct cordon_error *err)
{
    _cleanup_close_ int fd = open(trust_file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ENOENT) {
        *ret = json_pack("{s:i, s:{}}", "version", 1, "workspaces");
        return *ret ? 0 : error_set(err, ENOMEM, "%s", trust_file);
    }
    if (fd < 0)
        return error_set(err, errno, "trust record %s", trust_file);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return error_set(err, errno, "trust record %s", trust_file);
    if (!S_ISREG(st.st_mode) || (st.st_mode & 022) || (st.st_uid != 0 && st.st_uid != geteuid()))
        return error_set(err, 0,
                         "trust record %s: must be a regular file owned by you and not "
                         "writable by group or others",
                         trust_file);
    json_error_t jerr;
    json_t *root = json_loadfd(fd, 0, &jerr);
    if (!root)
        return error_set(err, 0, "trust record %s:%d:%d: %s", trust_file, jerr.line, jerr.column,
                         jerr.text);
    json_t *workspaces = json_object_get(root, "workspaces");
    if (!json_is_object(workspaces)) {
        json_decref(root);
        return error_set(err, 0, "trust record %s: no \"workspaces\" object", trust_file);
    }
    *ret = root;
    return 0;
}

int cfg_trust_read(const char *trust_file, struct cfg_trust_list *ret, struct cordon_error *err)
{
    _cleanup_json_ json_t *root = NULL;
    if (load_json(trust_file, &root, err) < 0)
        return -1;
    json_t *workspaces = json_object_get(root, "workspaces");
    struct cfg_trust_list list = {0};
    list.items = calloc(json_object_size(workspaces) + 1, sizeof(*list.items));
    if (!list.items)
        return error_set(err, ENOMEM, "%s", trust_file);
    const char *path;
    json_t *entry;
    json_object_foreach (workspaces, path, entry) {
        json_t *hash = json_object_get(entry, "sha256");
        json_t *when = json_object_get(entry, "trusted_at");
        if (!json_is_object(entry) || !(json_is_string(hash) || json_is_null(hash))) {
            cfg_trust_list_free(&list);
            return error_set(err, 0, "trust record %s: malformed entry for %s", trust_file, path);
        }
        struct cfg_trust_entry *e = &list.items[list.count++];
        e->workspace = strdup(path);
        e->sha256 = json_is_string(hash) ? strdup(json_string_value(hash)) : NULL;
        e->trusted_at = strdup(json_is_string(when) ? json_string_value(when) : "");
        if (!e->workspace || !e->trusted_at || (json_is_string(hash) && !e->sha256)) {
            cfg_trust_list_free(&list);
            return error_set(err, ENOMEM, "%s", trust_file);
        }
    }
    *ret = list;
    return 0;
}

static int mkdir_parents(const char *file, struct cordon_error *err)
{
    _cleanup_free_ char *path = strdup(file);
    if (!path)
        return error_set(err, ENOMEM, "%s", file);
    char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return 0;
    *slash = '\0';
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
            return error_set(err, errno, "mkdir %s", path);
        *p = '/';
    }
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
        return error_set(err, errno, "mkdir %s", path);
    return 0;
}

static int save_json(const char *trust_file, json_t *root, struct cordon_error *err)
{
    if (mkdir_parents(trust_file, err) < 0)
        return -1;
    char temporary[4096];
    if (snprintf(temporary, sizeof(temporary), "%s.XXXXXX", trust_file) >= (int)sizeof(temporary))
        return error_set(err, ENAMETOOLONG, "%s", trust_file);
    _cleanup_close_ int fd = mkostemp(temporary, O_CLOEXEC);
    if (fd < 0)
        return error_set(err, errno, "creating %s", temporary);
    if (fchmod(fd, 0600) < 0 || json_dumpfd(root, fd, JSON_INDENT(2) | JSON_SORT_KEYS) < 0 ||
        write(fd, "\n", 1) != 1 || fsync(fd) < 0) {
        int saved = errno;
        unlink(temporary);
        return error_set(err, saved, "writing %s", temporary);
    }
    if (rename(temporary, trust_file) < 0) {
        int saved = errno;
        unlink(temporary);
        return error_set(err, saved, "rename %s", trust_file);
    }
    return 0;
}

int cfg_trust_pin(const char *trust_file, const char *workspace, const char *sha256,
                  struct cordon_error *err)
{
    _cleanup_json_ json_t *root = NULL;
    if (load_json(trust_file, &root, err) < 0)
        return -1;
    char when[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *entry = json_pack("{s:o, s:s}", "sha256", sha256 ? json_string(sha256) : json_null(),
                              "trusted_at", when);
    if (!entry || json_object_set_new(json_object_get(root, "workspaces"), workspace, entry) < 0)
        return error_set(err, ENOMEM, "%s", trust_file);
    return save_json(trust_file, root, err);
}

int cfg_trust_add(const char *trust_file, const char *workspace, struct cordon_error *err)
{
    char file[4096];
    if (snprintf(file, sizeof(file), "%s/.cordon.toml", workspace) >= (int)sizeof(file))
        return error_set(err, ENAMETOOLONG, "%s", workspace);
    _cleanup_free_ char *data = NULL;
    size_t length = 0;
    bool exists;
    if (cfg_read_workspace_file(file, &data, &length, &exists, err) < 0)
        return -1;
    char hex[2 * SHA256_DIGEST_SIZE + 1];
    if (exists)
        sha256_hex(data, length, hex);
    return cfg_trust_pin(trust_file, workspace, exists ? hex : NULL, err);
}

int cfg_trust_remove(const char *trust_file, const char *workspace, bool *ret_removed,
                     struct cordon_error *err)
{
    _cleanup_json_ json_t *root = NULL;
    if (load_json(trust_file, &root, err) < 0)
        return -1;
    *ret_removed = json_object_del(json_object_get(root, "workspaces"), workspace) == 0;
    if (!*ret_removed)
        return 0;
    return save_json(trust_file, root, err);
}
