/* pi's edit tool (edit.js, edit-diff.js): every edit matched against the
 * original content (exact, then fuzzy), BOM and CRLF kept, pi's error
 * messages, details {diff, firstChangedLine}; the write is atomic and
 * serialised per file (tool_lock_path). Sandbox or host context. */
#include "agent/tools/args.h"
#include "agent/tools/edit-diff.h"
#include "agent/tools/edit-text.h"
#include "agent/tools/fileio.h"
#include "agent/tools/path.h"
#include "agent/tools/pin.h"
#include "agent/tools/registry.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

/* An approved host call writes the edited content into the approved file's
 * directory, by fd (pin.h). 1 when written; else 0 with res an error. */
static int edit_write_pinned(const struct tool_pin *pin, const char *abs_path, const char *data,
                             size_t len, struct tool_result *res)
{
    char msg[8192];
    const char *base = NULL;
    _cleanup_free_ char *failed = NULL;
    _cleanup_close_ int dirfd =
        tool_pin_parent(pin, abs_path, false, &base, &failed, msg, sizeof(msg));
    if (dirfd < 0)
        return tool_result_error(
            res, "%s", msg[0] ? msg : tool_node_error(errno, "open", abs_path, msg, sizeof(msg)));
    const char *syscall = "open";
    if (tool_write_file_at(dirfd, base, data, len, &syscall) == 0)
        return 1;
    if (errno == ELOOP) {
        _cleanup_close_ int probe = tool_pin_open(pin, abs_path, O_PATH, 0, msg, sizeof(msg));
        return tool_result_error(
            res, "%s", msg[0] ? msg : "cordon: a symlink appeared after approval; refused");
    }
    return tool_result_error(res, "%s",
                             tool_node_error(errno, syscall, abs_path, msg, sizeof(msg)));
}

/* A validation failure is an error result, not a failure of the call. */
static int edit_invalid(const char *tool, json_t *args, const char *key, const char *problem,
                        struct tool_result *res)
{
    tool_arg_fail(tool, args, key, problem, res);
    return 0;
}

/* prepareArguments: edits as a JSON string; legacy top-level oldText/newText. */
static void edit_prepare_arguments(json_t *args)
{
    if (!json_is_object(args))
        return;
    json_t *edits = json_object_get(args, "edits");
    if (json_is_string(edits)) {
        json_t *parsed = json_loads(json_string_value(edits), JSON_DECODE_ANY, NULL);
        if (json_is_array(parsed))
            json_object_set(args, "edits", parsed);
        json_decref(parsed);
    }
    json_t *old_t = json_object_get(args, "oldText"), *new_t = json_object_get(args, "newText");
    if (json_is_string(old_t) && json_is_string(new_t)) {
        json_t *list = json_object_get(args, "edits");
        json_t *merged = json_is_array(list) ? json_copy(list) : json_array();
        json_array_append_new(merged, json_pack("{s:O, s:O}", "oldText", old_t, "newText", new_t));
        json_object_del(args, "oldText");
        json_object_del(args, "newText");
        json_object_set_new(args, "edits", merged);
    }
}

/* The schema's checks, with pi's messages: 1 with *path and *edits when the
 * arguments are valid; 0 with res an error otherwise. */
static int edit_validate(json_t *args, const char **path, json_t **edits, struct tool_result *res)
{
    size_t path_len = 0;
    if (tool_arg_string("edit", args, "path", true, path, &path_len, res) < 0)
        return 0;
    *edits = json_object_get(args, "edits");
    if (!*edits)
        return edit_invalid("edit", args, "edits", "must have required properties edits", res);
    if (!json_is_array(*edits))
        return edit_invalid("edit", args, "edits", "must be array", res);
    size_t n_edits = json_array_size(*edits);
    for (size_t i = 0; i < n_edits; i++) {
        json_t *e = json_array_get(*edits, i);
        char key[64];
        if (!json_is_object(e)) {
            snprintf(key, sizeof(key), "edits.%zu", i);
            return edit_invalid("edit", args, key, "must be object", res);
        }
        static const char *const fields[] = {"oldText", "newText"};
        for (size_t f = 0; f < 2; f++) {
            json_t *v = json_object_get(e, fields[f]);
            snprintf(key, sizeof(key), "edits.%zu.%s", i, fields[f]);
            if (!v) {
                char problem[64];
                snprintf(problem, sizeof(problem), "must have required properties %s", fields[f]);
                return edit_invalid("edit", args, key, problem, res);
            }
            if (!json_is_string(v))
                return edit_invalid("edit", args, key, "must be string", res);
        }
    }
    if (n_edits == 0)
        return tool_result_error(
            res, "Edit tool input is invalid. edits must contain at least one replacement.");
    return 1;
}

/* Opens the file to edit, readable, writable and regular, the way pi checks
 * it: the fd, or -1 with res an error. An approved host call reads and
 * checks exactly the approved file (pin.h): no path is resolved twice. */
static int edit_open(const struct tool_env *env, const char *abs_path, const char *path,
                     struct stat *st, struct tool_result *res)
{
    const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
    char why[2048];
    why[0] = '\0';
    _cleanup_close_ int fd = env->pin
                                 ? tool_pin_open(env->pin, abs_path, flags, 0, why, sizeof(why))
                                 : open(abs_path, flags);
    int err = 0;
    if (fd < 0 && why[0]) {
        tool_result_error(res, "%s", why);
        return -1;
    }
    if (fd < 0)
        err = errno;
    else if (env->pin ? faccessat(fd, "", R_OK | W_OK, AT_EMPTY_PATH) < 0
                      : access(abs_path, R_OK | W_OK) < 0)
        err = errno;
    else if (fstat(fd, st) < 0)
        err = errno;
    else if (S_ISDIR(st->st_mode))
        err = EISDIR;
    else if (!S_ISREG(st->st_mode))
        err = EINVAL;
    if (err == EISDIR) {
        tool_result_error(res, "EISDIR: illegal operation on a directory, read");
        return -1;
    }
    if (err) {
        tool_result_error(res, "Could not edit file: %s. Error code: %s.%s", path,
                          tool_errno_name(err), tool_refusal_hint(err));
        return -1;
    }
    return TAKE_FD(fd);
}

/* The file as the edits see it: UTF-8, without its BOM, LF line endings;
 * what to restore when writing it back. */
struct edit_file {
    char *text; /* the sanitised content, BOM included */
    char *norm; /* LF-normalised, BOM excluded */
    size_t norm_len;
    bool bom, use_crlf;
};

static void edit_file_free(struct edit_file *f)
{
    free(f->text);
    free(f->norm);
}

/* Reads at most size bytes of fd into f (fewer when the file shrank
 * meanwhile); -1 with errno on a read error (nothing of a partly read file
 * is ever written back) or when out of memory (ENOMEM). */
static int edit_file_read(int fd, size_t size, struct edit_file *f)
{
    size_t got = 0;
    _cleanup_free_ char *raw = malloc(size + 1);
    if (!raw)
        return -1;
    while (got < size) {
        ssize_t n = read(fd, raw + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    size_t text_len;
    f->text = utf8_sanitize(raw, got, &text_len);
    if (!f->text)
        return errno = ENOMEM, -1;
    f->bom = text_len >= 3 && memcmp(f->text, "\xef\xbb\xbf", 3) == 0;
    const char *content = f->text + (f->bom ? 3 : 0);
    size_t content_len = text_len - (f->bom ? 3 : 0);
    const char *crlf = memmem(content, content_len, "\r\n", 2);
    const char *lf = memchr(content, '\n', content_len);
    f->use_crlf = lf && crlf && crlf < lf;
    f->norm = edit_to_lf(content, content_len, &f->norm_len);
    return f->norm ? 0 : (errno = ENOMEM, -1);
}

/* Each edit's texts, LF-normalised. */
struct edit_texts {
    size_t count;
    char **olds, **news;
    size_t *old_lens, *new_lens;
};

static void edit_texts_free(struct edit_texts *t)
{
    for (size_t i = 0; t->olds && t->news && i < t->count; i++) {
        free(t->olds[i]);
        free(t->news[i]);
    }
    free(t->olds);
    free(t->news);
    free(t->old_lens);
    free(t->new_lens);
}

static int edit_texts_load(json_t *edits, struct edit_texts *t)
{
    t->count = json_array_size(edits);
    t->olds = calloc(t->count, sizeof(char *));
    t->news = calloc(t->count, sizeof(char *));
    t->old_lens = calloc(t->count, sizeof(size_t));
    t->new_lens = calloc(t->count, sizeof(size_t));
    if (!t->olds || !t->news || !t->old_lens || !t->new_lens)
        return -1;
    for (size_t i = 0; i < t->count; i++) {
        json_t *e = json_array_get(edits, i);
        json_t *o = json_object_get(e, "oldText"), *nw = json_object_get(e, "newText");
        t->olds[i] = edit_to_lf(json_string_value(o), json_string_length(o), &t->old_lens[i]);
        t->news[i] = edit_to_lf(json_string_value(nw), json_string_length(nw), &t->new_lens[i]);
    }
    return 0;
}

/* 1 when every edit has an oldText; 0 with res pi's error. */
static int edit_check_nonempty(const struct edit_texts *t, const char *path,
                               struct tool_result *res)
{
    for (size_t i = 0; i < t->count; i++) {
        if (t->old_lens[i] != 0)
            continue;
        if (t->count == 1)
            return tool_result_error(res, "oldText must not be empty in %s.", path);
        return tool_result_error(res, "edits[%zu].oldText must not be empty in %s.", i, path);
    }
    return 1;
}

/* fuzzyFindText over all edits: they are matched in the LF-normalised
 * content, or in its fuzzy-normalised form (kept in *fuzzy) when some edit
 * matches only that way. Fuzzy matching still tries exact first. */
static const char *edit_match_base(const struct edit_file *f, const struct edit_texts *t,
                                   char **fuzzy, size_t *base_len)
{
    *base_len = f->norm_len;
    bool any_fuzzy = false;
    for (size_t i = 0; i < t->count; i++)
        if (!memmem(f->norm, f->norm_len, t->olds[i], t->old_lens[i]))
            any_fuzzy = true;
    if (!any_fuzzy)
        return f->norm;
    size_t fuzzy_len = 0;
    bool fuzzy_found = false;
    *fuzzy = edit_fuzzy_normalize(f->norm, f->norm_len, &fuzzy_len);
    for (size_t i = 0; *fuzzy && i < t->count; i++) {
        if (memmem(f->norm, f->norm_len, t->olds[i], t->old_lens[i]))
            continue;
        size_t fl;
        _cleanup_free_ char *fo = edit_fuzzy_normalize(t->olds[i], t->old_lens[i], &fl);
        if (fo && memmem(*fuzzy, fuzzy_len, fo, fl))
            fuzzy_found = true;
    }
    if (!fuzzy_found)
        return f->norm;
    *base_len = fuzzy_len;
    return *fuzzy;
}

/* Every edit's match in base, unique and disjoint: 1 with matches filled
 * (sorted); 0 with res pi's error. */
static int edit_find_matches(const char *base, size_t base_len, const struct edit_texts *t,
                             const char *path, struct edit_match *matches, struct tool_result *res)
{
    size_t n_edits = t->count;
    _cleanup_free_ char *base_fuzzy = NULL;
    size_t base_fuzzy_len = 0;
    for (size_t i = 0; i < n_edits; i++) {
        size_t index, length, occurrences;
        if (!edit_locate(base, base_len, t->olds[i], t->old_lens[i], &base_fuzzy, &base_fuzzy_len,
                         &index, &length, &occurrences)) {
            if (n_edits == 1)
                return tool_result_error(res,
                                         "Could not find the exact text in %s. The old text "
                                         "must match exactly including all whitespace and "
                                         "newlines.",
                                         path);
            return tool_result_error(res,
                                     "Could not find edits[%zu] in %s. The oldText must "
                                     "match exactly including all whitespace and newlines.",
                                     i, path);
        }
        if (occurrences > 1) {
            if (n_edits == 1)
                return tool_result_error(res,
                                         "Found %zu occurrences of the text in %s. The text must "
                                         "be unique. Please provide more context to make it "
                                         "unique.",
                                         occurrences, path);
            return tool_result_error(res,
                                     "Found %zu occurrences of edits[%zu] in %s. Each "
                                     "oldText must be unique. Please provide more context "
                                     "to make it unique.",
                                     occurrences, i, path);
        }
        matches[i] = (struct edit_match){index, i, length, t->news[i], t->new_lens[i]};
    }
    size_t overlap = edit_sort_matches(matches, n_edits);
    if (overlap)
        return tool_result_error(res,
                                 "edits[%zu] and edits[%zu] overlap in %s. Merge them into "
                                 "one edit or target disjoint regions.",
                                 matches[overlap - 1].edit, matches[overlap].edit, path);
    return 1;
}

/* Writes the edited file: 1 when written; 0 with res an error. */
static int edit_write(const struct tool_env *env, const char *abs_path, const char *data,
                      size_t len, struct tool_result *res)
{
    const char *syscall = "open";
    if (env->pin)
        return edit_write_pinned(env->pin, abs_path, data, len, res);
    if (tool_write_file(abs_path, data, len, &syscall) < 0) {
        char msg[8192];
        return tool_result_error(res, "%s",
                                 tool_node_error(errno, syscall, abs_path, msg, sizeof(msg)));
    }
    return 1;
}

/* The success result: pi's message, details {diff, firstChangedLine}. */
static int edit_report(const char *base, size_t base_len, const char *result, size_t result_len,
                       size_t n_edits, const char *path, struct tool_result *res)
{
    size_t first_changed = 0;
    _cleanup_free_ char *diff =
        edit_diff_string(base, base_len, result, result_len, &first_changed);
    _cleanup_free_ char *msg_text = NULL;
    if (asprintf(&msg_text, "Successfully replaced %zu block(s) in %s.", n_edits, path) < 0)
        return -1;
    json_t *details = json_pack("{s:s}", "diff", diff ? diff : "");
    if (first_changed)
        json_object_set_new(details, "firstChangedLine", json_integer((json_int_t)first_changed));
    return tool_result_text(res, msg_text, details);
}

/* The edits applied to the opened file fd, written back and reported. */
static int edit_apply(const struct tool_env *env, int fd, size_t size, const char *abs_path,
                      const char *path, json_t *edits, struct tool_result *res)
{
    struct edit_file f = {0};
    struct edit_texts t = {0};
    _cleanup_free_ struct edit_match *matches = calloc(json_array_size(edits), sizeof(*matches));
    _cleanup_free_ char *fuzzy = NULL, *result = NULL, *final = NULL;
    int r;
    if (!matches || edit_texts_load(edits, &t) < 0) {
        r = tool_result_error(res, "out of memory");
        goto out;
    }
    if (edit_file_read(fd, size, &f) < 0) {
        r = errno == ENOMEM
                ? tool_result_error(res, "out of memory")
                : tool_result_error(res, "Could not read %s: %s", path, strerror(errno));
        goto out;
    }
    if ((r = edit_check_nonempty(&t, path, res)) != 1)
        goto out;
    size_t base_len, result_len, final_len;
    const char *base = edit_match_base(&f, &t, &fuzzy, &base_len);
    if ((r = edit_find_matches(base, base_len, &t, path, matches, res)) != 1)
        goto out;
    result = edit_splice(base, base_len, matches, t.count, &result_len);
    if (!result) {
        r = tool_result_error(res, "out of memory");
        goto out;
    }
    if (result_len == base_len && memcmp(result, base, result_len) == 0) {
        if (t.count == 1)
            r = tool_result_error(res,
                                  "No changes made to %s. The replacement produced identical "
                                  "content. This might indicate an issue with special "
                                  "characters or the text not existing as expected.",
                                  path);
        else
            r = tool_result_error(
                res, "No changes made to %s. The replacements produced identical content.", path);
        goto out;
    }
    final = edit_restore_endings(result, result_len, f.bom, f.use_crlf, &final_len);
    if (!final) {
        r = tool_result_error(res, "out of memory");
        goto out;
    }
    if ((r = edit_write(env, abs_path, final, final_len, res)) != 1)
        goto out;
    r = edit_report(base, base_len, result, result_len, t.count, path, res);
out:
    edit_texts_free(&t);
    edit_file_free(&f);
    return r;
}

int tool_edit(const struct tool_env *env, json_t *args, struct tool_result *res)
{
    edit_prepare_arguments(args);
    const char *path = NULL;
    json_t *edits = NULL;
    if (edit_validate(args, &path, &edits, res) == 0)
        return 0;
    _cleanup_free_ char *abs_path = tool_resolve_path(path, env);
    if (!abs_path)
        return tool_result_error(res, "out of memory");
    int lock = tool_lock_path(abs_path);
    int r = 0;
    {
        struct stat st;
        _cleanup_close_ int fd = edit_open(env, abs_path, path, &st, res);
        if (fd >= 0)
            r = edit_apply(env, fd, (size_t)st.st_size, abs_path, path, edits, res);
    }
    tool_unlock_path(lock);
    return r;
}
