/* Images for the read tool: content sniffing as pi's file-type check does
 * (jpeg, png, gif, webp only) and pi's resize rule (at most 2000x2000 and a
 * base64 payload under 4.5MB), done with libgd. Sandbox or host context. */
#pragma once

#include "agent/tools/tool.h"

#include <stddef.h>
#include <sys/stat.h>

#define IMAGE_SNIFF_BYTES 4100

/* "image/png" etc., or NULL when the bytes are not a supported image. */
const char *image_sniff_mime(const char *head, size_t len);
/* Fills res with pi's image result for the open file fd. */
int image_read_result(int fd, const struct stat *st, const char *mime, struct tool_result *res);
