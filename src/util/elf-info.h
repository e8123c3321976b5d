/* What an executable needs to run, read from its ELF headers: whether it
 * names a program interpreter (is dynamically linked). Host context. */
#pragma once

#include "util/error.h"

/* 1 when the 64-bit ELF file at PATH has a program interpreter (PT_INTERP),
 * 0 when it is static; < 0 with err naming PATH when it cannot be read or
 * is not a 64-bit ELF file (ENOEXEC). */
int elf_has_interpreter(const char *path, struct cordon_error *err);
