/* libFuzzer target for the TOML parser and the configuration schema: any
 * bytes must give a tree or an error, never a crash, leak or hang. Built by
 * scripts/fuzz.sh with clang; replayed over the seed corpus in every normal
 * test run by fuzz-replay.c. */
#include "config/config-internal.h"
#include "config/toml.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cordon_error err = {0};
    struct toml_value *root = NULL;
    if (toml_parse((const char *)data, size, "fuzz.toml", &root, &err) < 0)
        return 0;
    struct cfg_assignments assignments = {0};
    for (enum cfg_layer layer = CFG_LAYER_USER; layer <= CFG_LAYER_WORKSPACE; layer++) {
        (void)cfg_collect_toml(root, "fuzz.toml", layer, &assignments, &err);
        cfg_assignments_free(&assignments);
    }
    toml_free(root);
    return 0;
}
