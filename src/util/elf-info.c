/* ELF headers of an executable (elf-info.h). Host context. */
#include "util/elf-info.h"
#include "util/cleanup.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

int elf_has_interpreter(const char *path, struct cordon_error *err)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return error_set(err, errno, "%s", path);
    Elf64_Ehdr header;
    bool elf64 = pread(fd, &header, sizeof(header), 0) == (ssize_t)sizeof(header) &&
                 memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 &&
                 header.e_ident[EI_CLASS] == ELFCLASS64 && header.e_phentsize == sizeof(Elf64_Phdr);
    if (!elf64)
        return error_set(err, ENOEXEC, "%s is not a 64-bit ELF file", path);
    for (unsigned i = 0; i < header.e_phnum; i++) {
        Elf64_Phdr program;
        off_t at = (off_t)(header.e_phoff + (Elf64_Off)i * sizeof(program));
        if (pread(fd, &program, sizeof(program), at) != (ssize_t)sizeof(program))
            return error_set(err, ENOEXEC, "%s: truncated program headers", path);
        if (program.p_type == PT_INTERP)
            return 1;
    }
    return 0;
}
