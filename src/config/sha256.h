/* SHA-256 (FIPS 180-4), for pinning a trusted workspace file's content and
 * naming project policy files. Any host context. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32

struct sha256 {
    uint32_t state[8];
    uint64_t length; /* bytes hashed so far */
    uint8_t block[64];
    size_t used;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t length);
void sha256_final(struct sha256 *s, uint8_t digest[SHA256_DIGEST_SIZE]);
/* hex must hold 65 bytes. */
void sha256_hex(const void *data, size_t length, char hex[2 * SHA256_DIGEST_SIZE + 1]);
