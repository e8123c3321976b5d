/* The dispatch table (registry.h). Adding a tool is one line here plus its
 * prototype in registry.h. Sandbox (cordon-agent) or host context. */
#include "agent/tools/registry.h"
#include "util/cleanup.h"

#include <string.h>

static const struct tool_entry tool_table[] = {
    {"read", TOOL_OPENS_FILE | TOOL_READ_PATH, tool_read},
    {"write", TOOL_OPENS_FILE, tool_write},
    {"edit", TOOL_OPENS_FILE, tool_edit},
    {"ls", TOOL_LISTS_TREE, tool_ls},
    {"find", TOOL_LISTS_TREE | TOOL_ON_WORKER, tool_find},
    {"grep", TOOL_LISTS_TREE | TOOL_ON_WORKER, tool_grep},
    {"bash", TOOL_RUNS_PROCESS, tool_bash_run},
};

const struct tool_entry *tool_lookup(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(tool_table); i++)
        if (strcmp(tool_table[i].name, name) == 0)
            return &tool_table[i];
    return NULL;
}
