/* SHA256 of tensors' raw bytes through OpenSSL's EVP API: the same hex as
 * Python's hashlib.sha256(t.view(torch.uint8).numpy().tobytes()). */
#ifndef BS_DIGEST_H
#define BS_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "bs_err.h"

typedef struct bs_digest {
  uint8_t b[32];
} bs_digest;

bs_status bs_digest_sha256(const void *data, size_t n, bs_digest *out);
/* Fetches the digest now rather than at the first hash: a process that
 * forks many which hash (the engines' zygote) pays it once, not each of
 * them (3 ms a process: OpenSSL's provider and name tables). */
void bs_digest_prepare(void);
void bs_digest_hex(const bs_digest *d, char hex[65]);
int bs_digest_eq(const bs_digest *a, const bs_digest *b);

/* Hashes n host buffers in parallel over up to `threads` threads
 * (0: one per online CPU). */
bs_status bs_digest_sha256_many(const void *const *data, const size_t *len,
                                size_t n, bs_digest *out, int threads);

#endif
