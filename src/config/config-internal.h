/* Shared between the files of src/config/: one layer's settings as a list of
 * typed assignments, before they are merged. Host context. */
#pragma once

#include "config/config.h"
#include "config/toml.h"

struct cfg_assignment {
    enum cfg_key key;
    struct cfg_origin origin; /* layer, file (owned), line; locked unused */
    bool boolean;
    int64_t integer; /* integers and enum indexes */
    double number;
    char *string;
    struct cfg_strings list;
    struct cfg_ports ports;
    struct cfg_mounts mounts;
    struct cfg_secrets secrets;
};

struct cfg_assignments {
    struct cfg_assignment *items;
    size_t count;
};

/* Every key of a document, checked against the schema; unknown keys are
 * errors with a suggestion. file names the document in messages. */
int cfg_collect_toml(const struct toml_value *root, const char *file, enum cfg_layer layer,
                     struct cfg_assignments *out, struct cordon_error *err);
/* One key from text (an environment variable or --set): lists are
 * comma-separated. origin_name is "CORDON_LIMITS__PIDS" or "--set". */
int cfg_collect_text(enum cfg_key key, const char *text, const char *origin_name,
                     enum cfg_layer layer, struct cfg_assignments *out, struct cordon_error *err);
void cfg_assignments_free(struct cfg_assignments *a);

/* The key named "limits.pids", or -1. */
int cfg_key_lookup(const char *name);
/* The closest key name to name, or NULL when nothing is close. */
const char *cfg_key_suggest(const char *name);

int cfg_set_defaults(struct cordon_config *cfg, struct cordon_error *err);
/* Applies one assignment; lists extend unless replace (or the key always
 * replaces, as route_tools does). */
int cfg_apply(struct cordon_config *cfg, const struct cfg_assignment *a, bool replace,
              struct cordon_error *err);

void cfg_strings_free(struct cfg_strings *s);
void cfg_secrets_free(struct cfg_secrets *s);
int cfg_strings_add(struct cfg_strings *s, const char *item);
bool cfg_strings_contains(const struct cfg_strings *s, const char *item);
void cfg_origin_free(struct cfg_origin *o);
int cfg_origin_copy(struct cfg_origin *dst, const struct cfg_origin *src);

/* "/a/b" is inside "/a" (or equal to it). */
bool cfg_path_inside(const char *path, const char *root);
/* realpath() of the longest existing prefix plus the rest, so paths that do
 * not exist yet can still be compared. */
char *cfg_canonicalize_lenient(const char *path);

/* Whether one of the paths is the other or below it. */
bool cfg_paths_overlap(const char *a, const char *b);

/* Places of the user's that hold credentials or cordon's own policy: the
 * home directories (HOME and the password database's, each as given and
 * canonical; as root every person's), the configuration directory and the
 * policy locations, the runtime directory. */
#define CREDENTIAL_HOMES_MAX 256
struct credential_areas {
    char *homes[CREDENTIAL_HOMES_MAX];
    char *config[8];
};
/* The areas of the user home, the user's configuration directory xdg, the
 * policy directory etc and the runtime directory: 0, or -1 (out of
 * memory). */
int credential_areas_build(const char *home, const char *xdg, const char *etc,
                           struct credential_areas *c);
void credential_areas_free(struct credential_areas *c);
/* Why a mount of host path real (canonical) or lexical would hand the
 * sandbox the user's credentials or policy, or NULL. */
const char *credential_reason(const struct credential_areas *c, const char *lexical,
                              const char *real, char *why, size_t size);
