/* pi's write tool (write.js). Sandbox (cordon-agent) or host context. */
#include "agent/tools/registry.h"

int tool_write(const struct tool_env *env, json_t *args, struct tool_result *res)
{
    return tool_result_error(res, "write: not implemented yet");
}
