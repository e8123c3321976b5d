/* pi's edit tool (edit.js). Sandbox (cordon-agent) or host context. */
#include "agent/tools/registry.h"

int tool_edit(const struct tool_env *env, json_t *args, struct tool_result *res)
{
    return tool_result_error(res, "edit: not implemented yet");
}
