/* SHA256 through OpenSSL's EVP interface, one buffer or many in parallel. */
#include "bs_digest.h"
#include "bs_digest_memo.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* SHA256 fetched once: EVP_sha256() looks it up by name again on every
 * digest (a lock and a hash table each time: hashing many small tensors
 * spent more there than in the digest). Kept for the process's life. */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

/* Without openssl.cnf and the error strings: loading them was 0.7 ms of a
 * 1.5 ms process start (every engine and run process pays it), and a
 * digest needs neither: SHA256 is the default provider's. */
static void sha256_fetch(void) {
  OPENSSL_init_crypto(
      OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS, NULL);
  sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

void bs_digest_prepare(void) {
  pthread_once(&sha256_once, sha256_fetch);
}

bs_status bs_digest_sha256(const void *data, size_t n, bs_digest *out) {
  bs_status st = BS_OK;
  unsigned len = 0;
  if (!out || (!data && n))
    BS_FAIL(BS_ERR_INVALID, NULL, "sha256: no %s for %zu bytes",
            out ? "data" : "output", n);
  if (bs_digest_memo_find(data, n, out->b))
    goto out;
  bs_digest_prepare();
  if (!sha256_md || EVP_Digest(data, n, out->b, &len, sha256_md, NULL) != 1 ||
      len != sizeof out->b)
    BS_FAIL(BS_ERR_INTERNAL, NULL, "sha256 of %zu bytes: EVP digest failed", n);
  bs_digest_memo_keep(data, n, out->b);
out:
  return st;
}

void bs_digest_hex(const bs_digest *d, char hex[65]) {
  for (size_t i = 0; i < sizeof d->b; i++)
    snprintf(hex + 2 * i, 3, "%02x", d->b[i]);
}

int bs_digest_eq(const bs_digest *a, const bs_digest *b) {
  return memcmp(a->b, b->b, sizeof a->b) == 0;
}

/* The shared work queue: an atomic index hands out buffers. The error
 * record is per thread, so a worker's failure is copied here and raised
 * again on the caller's thread. */
typedef struct queue {
  const void *const *data;
  const size_t *len;
  bs_digest *out;
  size_t n;
  atomic_size_t next;
  pthread_mutex_t lock;
  size_t bad; /* lowest failing index, n when none */
  bs_error err;
} queue;

static void *worker(void *arg) {
  queue *q = arg;
  for (size_t i; (i = atomic_fetch_add(&q->next, 1)) < q->n;) {
    if (bs_digest_sha256(q->data[i], q->len[i], &q->out[i]) == BS_OK)
      continue;
    pthread_mutex_lock(&q->lock);
    if (i < q->bad) {
      q->bad = i;
      q->err = *bs_err();
    }
    pthread_mutex_unlock(&q->lock);
    bs_err_clear();
  }
  return NULL;
}

static size_t thread_count(int threads, size_t n) {
  long want = threads > 0 ? threads : sysconf(_SC_NPROCESSORS_ONLN);
  if (want < 1)
    want = 1;
  return (size_t)want < n ? (size_t)want : n;
}

/* Runs the queue on the caller plus up to nt-1 helpers. The caller works
 * too, so a helper that fails to start only costs speed, never the result. */
static void run_queue(queue *q, size_t nt) {
  pthread_t *tid = nt > 1 ? calloc(nt - 1, sizeof *tid) : NULL;
  size_t started = 0;
  while (tid && started + 1 < nt &&
         pthread_create(&tid[started], NULL, worker, q) == 0)
    started++;
  worker(q);
  for (size_t t = 0; t < started; t++)
    pthread_join(tid[t], NULL);
  free(tid);
}

bs_status bs_digest_sha256_many(const void *const *data, const size_t *len,
                                size_t n, bs_digest *out, int threads) {
  bs_status st = BS_OK;
  queue q = {.data = data, .len = len, .out = out, .n = n, .bad = n};
  if (threads < 0 || (n && (!data || !len || !out)))
    BS_FAIL(BS_ERR_INVALID, NULL,
            "sha256_many: bad argument (%zu buffers, %d threads)", n, threads);
  for (size_t i = 0; i < n; i++)
    if (!data[i] && len[i])
      BS_FAIL(BS_ERR_INVALID, NULL,
              "sha256_many: buffer %zu is NULL with %zu bytes", i, len[i]);
  atomic_init(&q.next, 0);
  pthread_mutex_init(&q.lock, NULL);
  run_queue(&q, thread_count(threads, n));
  pthread_mutex_destroy(&q.lock);
  if (q.bad < n)
    BS_FAIL(q.err.code, q.err.tensor, "buffer %zu: %s", q.bad, q.err.message);
out:
  return st;
}
