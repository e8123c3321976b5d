/* The tools/list payload. Host context. */
#pragma once

/* A JSON array of MCP tool objects (name, description, inputSchema,
 * annotations). */
extern const char mcp_tools_json[];
