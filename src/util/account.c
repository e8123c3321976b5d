/* account.h: one getpwuid() per uid and process. */
#include "util/account.h"

#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *account_home(uid_t uid)
{
    static bool cached;
    static uid_t cached_uid;
    static char *home;
    if (cached && cached_uid == uid)
        return home;
    free(home);
    home = NULL;
    cached = false;
    struct passwd *pw = getpwuid(uid);
    if (pw && pw->pw_dir)
        home = strdup(pw->pw_dir);
    /* A failed lookup (no entry, or a directory service that did not
     * answer) is asked again next time. */
    cached = home != NULL;
    cached_uid = uid;
    return home;
}
