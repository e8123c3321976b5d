/* pi's ls tool (ls.js). Sandbox (cordon-agent) or host context. */
#include "agent/tools/registry.h"

int tool_ls(const struct tool_env *env, json_t *args, struct tool_result *res)
{
    return tool_result_error(res, "ls: not implemented yet");
}
