/* Small filesystem helpers. Any context except between clone() and exec. */
#pragma once

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* mkdir -p: creates PATH and its missing parents with MODE. 0, or -1 with
 * errno (ENAMETOOLONG past PATH_MAX). */
int fs_mkdir_p(const char *path, mode_t mode);

/* Writes all LEN bytes, retrying after EINTR and waiting (poll) while a
 * non-blocking FD is full. 0, or -1 with errno. */
int fs_write_all(int fd, const void *buf, size_t len);

/* Closes *FD when it is open and marks it closed (-1): for fds that a
 * struct owns and more than one path may end. */
void fs_close(int *fd);

/* Writes TEXT to the existing file PATH in one write(2), as /proc's
 * uid_map, gid_map and setgroups want it (a short write is EIO). 0, or -1
 * with errno. Nothing is allocated: usable in a forked child. */
int fs_write_file(const char *path, const char *text);

/* Reads until end of file or until SIZE bytes are in BUF, retrying after
 * EINTR: how many were read, or -1 with errno. */
ssize_t fs_read_full(int fd, char *buf, size_t size);
/* The same with pread from offset off (the file's offset untouched). */
ssize_t fs_pread_full(int fd, void *buf, size_t size, off_t off);

/* openat2(2): FLAGS | O_CLOEXEC, resolved with RESOLVE (RESOLVE_BENEATH,
 * RESOLVE_NO_SYMLINKS ...). The fd, or -1 with errno. No allocation: safe
 * between clone() and exec. */
int fs_openat2(int dirfd, const char *path, int flags, unsigned long long resolve);

/* A regular file below DIRFD for reading, opened as fs_openat2 does with
 * O_RDONLY | O_NOFOLLOW: a FIFO or device put there (by whoever writes the
 * directory) neither blocks nor is read: -1 with EINVAL. The fd is
 * blocking. */
int fs_open_regular(int dirfd, const char *path, unsigned long long resolve);

/* A directory stream over NAME below DIRFD (not through a symlink; "." is
 * DIRFD itself, read from its start), its fd owned by the stream. NULL
 * with errno. */
DIR *fs_opendir_at(int dirfd, const char *name);

/* The last step of writing a file through a temporary name: when OK, TMP
 * is renamed over NAME (both below DIR); when not, or when the rename
 * fails, TMP is removed. 0, or -1 with the errno of the step that failed. */
int fs_rename_temp(int dir, const char *tmp, const char *name, bool ok);

/* rm -r of NAME under the directory PARENT, best effort: no symlink is
 * followed (a symlink is removed, not its target), at most 32 levels deep
 * (deeper entries stay, and so do their parents). */
void fs_remove_tree_at(int parent, const char *name);

/* Adds ADD to the permission bits of the file FD is open on (any fd of it,
 * O_PATH included: the name is not looked up again), when it is this
 * user's. 1 when bits were added, 0 when none were missing, -1 with errno
 * (EACCES: another user's). */
int fs_owner_bits_back(int fd, mode_t add);
