/* pi's edit tool (edit.js, edit-diff.js): every edit matched against the
 * original content (exact, then fuzzy), BOM and CRLF kept, pi's error
 * messages, details {diff, firstChangedLine}; the write is atomic and
 * serialised per file (tool_lock_path). Sandbox or host context. */
#include "agent/tools/args.h"
#include "agent/tools/edit-diff.h"
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

struct edit_match {
    size_t index, edit, length;
    const char *new_text;
    size_t new_len;
};

/* normalizeToLF: CRLF and lone CR become LF. */
static char *to_lf(const char *s, size_t len, size_t *out_len)
{
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\r') {
            out[o++] = '\n';
            if (i + 1 < len && s[i + 1] == '\n')
                i++;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    *out_len = o;
    return out;
}

static const char *find_bytes(const char *hay, size_t hay_len, const char *needle, size_t n)
{
    return n ? memmem(hay, hay_len, needle, n) : hay;
}

static size_t count_occurrences(const char *hay, size_t hay_len, const char *needle, size_t n)
{
    size_t count = 0;
    const char *p = hay, *end = hay + hay_len;
    while ((p = memmem(p, (size_t)(end - p), needle, n))) {
        count++;
        p += n;
    }
    return count;
}

/* A validation failure is an error result, not a failure of the call. */
static int edit_invalid(const char *tool, json_t *args, const char *key, const char *problem,
                        struct tool_result *res)
{
    tool_arg_fail(tool, args, key, problem, res);
    return 0;
}

static int compare_matches(const void *a, const void *b)
{
    const struct edit_match *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

int tool_edit(const struct tool_env *env, json_t *args, struct tool_result *res)
{
    /* prepareArguments: edits as a JSON string; legacy top-level oldText/newText. */
    if (json_is_object(args)) {
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
            json_array_append_new(merged,
                                  json_pack("{s:O, s:O}", "oldText", old_t, "newText", new_t));
            json_object_del(args, "oldText");
            json_object_del(args, "newText");
            json_object_set_new(args, "edits", merged);
        }
    }
    const char *path = NULL;
    size_t path_len = 0;
    if (tool_arg_string("edit", args, "path", true, &path, &path_len, res) < 0)
        return 0;
    json_t *edits = json_object_get(args, "edits");
    if (!edits)
        return edit_invalid("edit", args, "edits", "must have required properties edits", res);
    if (!json_is_array(edits))
        return edit_invalid("edit", args, "edits", "must be array", res);
    size_t n_edits = json_array_size(edits);
    for (size_t i = 0; i < n_edits; i++) {
        json_t *e = json_array_get(edits, i);
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

    _cleanup_free_ char *abs_path = tool_resolve_path(path, env);
    if (!abs_path)
        return tool_result_error(res, "out of memory");
    int lock = tool_lock_path(abs_path);
    int r = 0;
    {
        const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
        char why[2048];
        why[0] = '\0';
        /* An approved host call reads and checks exactly the approved file
         * (pin.h): no path is resolved twice. */
        _cleanup_close_ int fd = env->pin
                                     ? tool_pin_open(env->pin, abs_path, flags, 0, why, sizeof(why))
                                     : open(abs_path, flags);
        struct stat st;
        int err = 0;
        if (fd < 0 && why[0]) {
            r = tool_result_error(res, "%s", why);
            goto out;
        }
        if (fd < 0)
            err = errno;
        else if (env->pin ? faccessat(fd, "", R_OK | W_OK, AT_EMPTY_PATH) < 0
                          : access(abs_path, R_OK | W_OK) < 0)
            err = errno;
        else if (fstat(fd, &st) < 0)
            err = errno;
        else if (S_ISDIR(st.st_mode))
            err = EISDIR;
        else if (!S_ISREG(st.st_mode))
            err = EINVAL;
        if (err == EISDIR) {
            r = tool_result_error(res, "EISDIR: illegal operation on a directory, read");
            goto out;
        }
        if (err) {
            r = tool_result_error(res, "Could not edit file: %s. Error code: %s.%s", path,
                                  tool_errno_name(err), tool_refusal_hint(err));
            goto out;
        }
        size_t raw_len = (size_t)st.st_size, got = 0;
        _cleanup_free_ char *raw = malloc(raw_len + 1);
        if (!raw) {
            r = tool_result_error(res, "out of memory");
            goto out;
        }
        while (got < raw_len) {
            ssize_t n = read(fd, raw + got, raw_len - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        size_t text_len;
        _cleanup_free_ char *text = utf8_sanitize(raw, got, &text_len);
        if (!text) {
            r = tool_result_error(res, "out of memory");
            goto out;
        }
        bool bom = text_len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0;
        const char *content = text + (bom ? 3 : 0);
        size_t content_len = text_len - (bom ? 3 : 0);
        const char *crlf = memmem(content, content_len, "\r\n", 2);
        const char *lf = memchr(content, '\n', content_len);
        bool use_crlf = lf && crlf && crlf < lf;
        size_t norm_len;
        _cleanup_free_ char *norm = to_lf(content, content_len, &norm_len);

        /* Each edit's texts, LF-normalised; fuzzy when any exact match fails. */
        _cleanup_free_ char **olds = calloc(n_edits, sizeof(char *));
        _cleanup_free_ char **news = calloc(n_edits, sizeof(char *));
        _cleanup_free_ size_t *old_lens = calloc(n_edits, sizeof(size_t));
        _cleanup_free_ size_t *new_lens = calloc(n_edits, sizeof(size_t));
        _cleanup_free_ struct edit_match *matches = calloc(n_edits, sizeof(*matches));
        _cleanup_free_ char *fuzzy = NULL;
        size_t fuzzy_len = 0;
        if (!norm || !olds || !news || !old_lens || !new_lens || !matches) {
            r = tool_result_error(res, "out of memory");
            goto out;
        }
        bool any_fuzzy = false;
        for (size_t i = 0; i < n_edits; i++) {
            json_t *e = json_array_get(edits, i);
            json_t *o = json_object_get(e, "oldText"), *nw = json_object_get(e, "newText");
            olds[i] = to_lf(json_string_value(o), json_string_length(o), &old_lens[i]);
            news[i] = to_lf(json_string_value(nw), json_string_length(nw), &new_lens[i]);
        }
        for (size_t i = 0; i < n_edits; i++) {
            if (old_lens[i] == 0) {
                if (n_edits == 1)
                    r = tool_result_error(res, "oldText must not be empty in %s.", path);
                else
                    r = tool_result_error(res, "edits[%zu].oldText must not be empty in %s.", i,
                                          path);
                goto free_texts;
            }
        }
        /* The rest is a block of its own: the gotos to free_texts above must
         * not jump into the scope of its cleanup variables. */
        {
            for (size_t i = 0; i < n_edits; i++)
                if (!find_bytes(norm, norm_len, olds[i], old_lens[i]))
                    any_fuzzy = true;
            /* Matching once fuzzy: fuzzyFindText on normalised content still tries
         * exact first, then the normalised oldText. */
            const char *base = norm;
            size_t base_len = norm_len;
            if (any_fuzzy) {
                /* Only switch to the normalised content when some edit matches fuzzily. */
                bool fuzzy_found = false;
                fuzzy = edit_fuzzy_normalize(norm, norm_len, &fuzzy_len);
                for (size_t i = 0; fuzzy && i < n_edits; i++) {
                    if (find_bytes(norm, norm_len, olds[i], old_lens[i]))
                        continue;
                    size_t fl;
                    _cleanup_free_ char *fo = edit_fuzzy_normalize(olds[i], old_lens[i], &fl);
                    if (fo && memmem(fuzzy, fuzzy_len, fo, fl))
                        fuzzy_found = true;
                }
                if (fuzzy_found) {
                    base = fuzzy;
                    base_len = fuzzy_len;
                }
            }
            _cleanup_free_ char *base_fuzzy = NULL;
            size_t base_fuzzy_len = 0;
            for (size_t i = 0; i < n_edits; i++) {
                const char *at = find_bytes(base, base_len, olds[i], old_lens[i]);
                size_t match_len = old_lens[i];
                _cleanup_free_ char *fo = NULL;
                size_t fl = 0;
                fo = edit_fuzzy_normalize(olds[i], old_lens[i], &fl);
                if (!at) {
                    if (!base_fuzzy)
                        base_fuzzy = edit_fuzzy_normalize(base, base_len, &base_fuzzy_len);
                    const char *fat =
                        fo && base_fuzzy ? memmem(base_fuzzy, base_fuzzy_len, fo, fl) : NULL;
                    /* pi matches in the normalised space of base; base is already
                 * normalised whenever a fuzzy match was needed. */
                    if (fat && base_fuzzy_len == base_len &&
                        memcmp(base_fuzzy, base, base_len) == 0) {
                        at = base + (fat - base_fuzzy);
                        match_len = fl;
                    }
                }
                if (!at) {
                    if (n_edits == 1)
                        r = tool_result_error(res,
                                              "Could not find the exact text in %s. The old text "
                                              "must match exactly including all whitespace and "
                                              "newlines.",
                                              path);
                    else
                        r = tool_result_error(
                            res,
                            "Could not find edits[%zu] in %s. The oldText must "
                            "match exactly including all whitespace and newlines.",
                            i, path);
                    goto free_texts;
                }
                if (!base_fuzzy)
                    base_fuzzy = edit_fuzzy_normalize(base, base_len, &base_fuzzy_len);
                size_t occurrences = fo && base_fuzzy && fl
                                         ? count_occurrences(base_fuzzy, base_fuzzy_len, fo, fl)
                                         : 1;
                if (occurrences > 1) {
                    if (n_edits == 1)
                        r = tool_result_error(
                            res,
                            "Found %zu occurrences of the text in %s. The text must "
                            "be unique. Please provide more context to make it "
                            "unique.",
                            occurrences, path);
                    else
                        r = tool_result_error(res,
                                              "Found %zu occurrences of edits[%zu] in %s. Each "
                                              "oldText must be unique. Please provide more context "
                                              "to make it unique.",
                                              occurrences, i, path);
                    goto free_texts;
                }
                matches[i] =
                    (struct edit_match){(size_t)(at - base), i, match_len, news[i], new_lens[i]};
            }
            qsort(matches, n_edits, sizeof(*matches), compare_matches);
            for (size_t i = 1; i < n_edits; i++) {
                if (matches[i - 1].index + matches[i - 1].length > matches[i].index) {
                    r = tool_result_error(
                        res,
                        "edits[%zu] and edits[%zu] overlap in %s. Merge them into "
                        "one edit or target disjoint regions.",
                        matches[i - 1].edit, matches[i].edit, path);
                    goto free_texts;
                }
            }
            size_t cap = base_len + 1;
            for (size_t i = 0; i < n_edits; i++)
                cap += matches[i].new_len;
            _cleanup_free_ char *result = malloc(cap);
            size_t rl = 0, pos = 0;
            for (size_t i = 0; result && i < n_edits; i++) {
                memcpy(result + rl, base + pos, matches[i].index - pos);
                rl += matches[i].index - pos;
                memcpy(result + rl, matches[i].new_text, matches[i].new_len);
                rl += matches[i].new_len;
                pos = matches[i].index + matches[i].length;
            }
            if (!result) {
                r = tool_result_error(res, "out of memory");
                goto free_texts;
            }
            memcpy(result + rl, base + pos, base_len - pos);
            rl += base_len - pos;
            if (rl == base_len && memcmp(result, base, rl) == 0) {
                if (n_edits == 1)
                    r = tool_result_error(
                        res,
                        "No changes made to %s. The replacement produced identical "
                        "content. This might indicate an issue with special "
                        "characters or the text not existing as expected.",
                        path);
                else
                    r = tool_result_error(
                        res, "No changes made to %s. The replacements produced identical content.",
                        path);
                goto free_texts;
            }
            /* BOM + content with the original line ending restored. */
            size_t lf_count = 0;
            for (size_t i = 0; i < rl; i++)
                lf_count += result[i] == '\n';
            _cleanup_free_ char *final = malloc(rl + (use_crlf ? lf_count : 0) + 4);
            size_t fl2 = 0;
            if (!final) {
                r = tool_result_error(res, "out of memory");
                goto free_texts;
            }
            if (bom) {
                memcpy(final, "\xef\xbb\xbf", 3);
                fl2 = 3;
            }
            for (size_t i = 0; i < rl; i++) {
                if (use_crlf && result[i] == '\n')
                    final[fl2++] = '\r';
                final[fl2++] = result[i];
            }
            const char *syscall = "open";
            if (env->pin) {
                r = edit_write_pinned(env->pin, abs_path, final, fl2, res);
                if (r != 1)
                    goto free_texts;
                r = 0;
            } else if (tool_write_file(abs_path, final, fl2, &syscall) < 0) {
                char msg[8192];
                r = tool_result_error(res, "%s",
                                      tool_node_error(errno, syscall, abs_path, msg, sizeof(msg)));
                goto free_texts;
            }
            size_t first_changed = 0;
            _cleanup_free_ char *diff =
                edit_diff_string(base, base_len, result, rl, &first_changed);
            _cleanup_free_ char *msg_text = NULL;
            if (asprintf(&msg_text, "Successfully replaced %zu block(s) in %s.", n_edits, path) <
                0) {
                r = -1;
                goto free_texts;
            }
            json_t *details = json_pack("{s:s}", "diff", diff ? diff : "");
            if (first_changed)
                json_object_set_new(details, "firstChangedLine",
                                    json_integer((json_int_t)first_changed));
            r = tool_result_text(res, msg_text, details);
        }
    free_texts:
        for (size_t i = 0; i < n_edits; i++) {
            free(olds[i]);
            free(news[i]);
        }
    }
out:
    tool_unlock_path(lock);
    return r;
}
