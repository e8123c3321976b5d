/* cordon-agent: PID 1 inside the sandbox. Sandbox context. */
#include <stdio.h>

int main(void)
{
    return 0;
}
