/* PATH inside the sandbox holds only directories that exist there
 * (path-prune.c). Sandbox context. */
#pragma once

/* Drops from ENVP's PATH every absolute entry that is not a directory in
 * this (the sandbox's) view, in place: no allocation, so it may run as the
 * sandbox's PID 1 before anything else. PATH left empty becomes the
 * default system PATH. ENVP NULL: nothing. */
void agent_path_prune(char **envp);
