/* `cordon-agent probe`: observations for `cordon verify`, made inside the
 * sandbox. Sandbox context, untrusted by the supervisor that reads them. */
#pragma once

/* Reads the request (JSON) on stdin, prints "CORDON-PROBE {json}" on stdout;
 * returns the exit status. */
int agent_probe(void);
