/* Digests of the contents a thread hashed lately. A simulated world hashes
 * the same bytes over and over (thousands of data-parallel replicas of each
 * tensor, at every phase and in every engine), so bs_digest_sha256 first
 * compares the bytes with a kept copy of each recent content (memcmp, some
 * ten times SHA256's speed); only equal bytes give the kept digest. */
#ifndef BS_DIGEST_MEMO_H
#define BS_DIGEST_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Contents of up to this many bytes are kept. */
#define BS_DIGEST_MEMO_MAX_BYTES (64u << 10)

/* True, with out, when the thread kept these n bytes' digest. */
bool bs_digest_memo_find(const void *data, size_t n, uint8_t out[32]);
/* Keeps d as the digest of these n bytes, in place of the least recently
 * used; out of memory, keeps nothing. */
void bs_digest_memo_keep(const void *data, size_t n, const uint8_t d[32]);

#endif
