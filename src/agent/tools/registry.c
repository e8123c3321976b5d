/* The dispatch table (registry.h). Adding a tool is one line here plus its
 * prototype in registry.h. Sandbox (cordon-agent) or host context. */
#include "agent/tools/registry.h"
#include "util/cleanup.h"

#include <string.h>

static const struct tool_entry tool_table[] = {
    {"read", tool_read}, {"write", tool_write}, {"edit", tool_edit},     {"ls", tool_ls},
    {"find", tool_find}, {"grep", tool_grep},   {"bash", tool_bash_run},
};

const struct tool_entry *tool_lookup(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(tool_table); i++)
        if (strcmp(tool_table[i].name, name) == 0)
            return &tool_table[i];
    return NULL;
}
