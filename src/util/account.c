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
    struct passwd *pw = getpwuid(uid);
    if (pw && pw->pw_dir)
        home = strdup(pw->pw_dir);
    cached = true;
    cached_uid = uid;
    return home;
}
