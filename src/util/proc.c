/* Helper processes tied to their parent, and ending a child (proc.h). Host
 * context. */
#include "util/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

pid_t proc_fork_tied(int sv[2], int type, const char *what, struct cordon_error *err)
{
    if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) < 0)
        return error_set(err, errno, "%s: socketpair", what);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        return error_set(err, e, "%s: fork", what);
    }
    /* The check after the prctl closes the window in which the parent died
     * before the signal was armed. */
    if (pid == 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent))
        _exit(127);
    return pid;
}

void proc_end(pid_t pid, int pidfd, int grace_ms)
{
    struct pollfd exited = {pidfd, POLLIN, 0};
    if (pidfd < 0 || poll(&exited, 1, grace_ms) <= 0)
        kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

pid_t proc_fork_pipe(int p[2])
{
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid >= 0)
        return pid;
    int saved = errno;
    close(p[0]);
    close(p[1]);
    errno = saved;
    return -1;
}
