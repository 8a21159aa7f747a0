#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "bs_digest.h"
#include "bs_hasher.h"

static void expect_hex(const void *data, size_t n, const char *want) {
  bs_digest d;
  char hex[65];
  assert_int_equal(bs_digest_sha256(data, n, &d), BS_OK);
  bs_digest_hex(&d, hex);
  assert_string_equal(hex, want);
}

/* FIPS 180-2 / NIST example vectors. */
static void test_known_vectors(void **state) {
  (void)state;
  expect_hex(
      "", 0,
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  expect_hex(
      NULL, 0,
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  expect_hex(
      "abc", 3,
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *v448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  expect_hex(
      v448, strlen(v448),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  char *million = malloc(1000000);
  assert_non_null(million);
  memset(million, 'a', 1000000);
  expect_hex(
      million, 1000000,
      "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  free(million);
}

/* A content hashed again gives the kept digest, and only the same bytes
 * do: a buffer changed in place (its last byte, or grown by a byte) is
 * hashed anew; more contents than the memo keeps still hash right. */
static void test_memo_same_bytes_only(void **state) {
  (void)state;
  enum { N = 300, LEN = 4096 };
  unsigned char *buf = malloc(LEN + 1);
  bs_digest first, again, want;
  assert_non_null(buf);
  memset(buf, 'a', LEN + 1);
  assert_int_equal(bs_digest_sha256(buf, LEN, &first), BS_OK);
  assert_int_equal(bs_digest_sha256(buf, LEN, &again), BS_OK);
  assert_memory_equal(first.b, again.b, sizeof first.b);
  buf[LEN - 1] = 'b';
  assert_int_equal(bs_digest_sha256(buf, LEN, &again), BS_OK);
  assert_false(bs_digest_eq(&first, &again));
  buf[LEN - 1] = 'a';
  assert_int_equal(bs_digest_sha256(buf, LEN + 1, &again), BS_OK);
  assert_false(bs_digest_eq(&first, &again));
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < N; i++) {
      memcpy(buf, &i, sizeof i);
      assert_int_equal(bs_digest_sha256(buf, LEN, &again), BS_OK);
      EVP_MD_CTX *ctx = EVP_MD_CTX_new();
      unsigned len = 0;
      assert_true(EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
                  EVP_DigestUpdate(ctx, buf, LEN) == 1 &&
                  EVP_DigestFinal_ex(ctx, want.b, &len) == 1);
      EVP_MD_CTX_free(ctx);
      assert_memory_equal(again.b, want.b, sizeof want.b);
    }
  free(buf);
}

static void test_hex_and_eq(void **state) {
  (void)state;
  bs_digest d;
  for (int i = 0; i < 32; i++)
    d.b[i] = (uint8_t)(i * 8 + 7);
  char hex[65];
  memset(hex, 'X', sizeof hex);
  bs_digest_hex(&d, hex);
  assert_int_equal(strlen(hex), 64);
  assert_memory_equal(hex, "070f171f272f373f", 16);
  assert_memory_equal(hex + 48, "c7cfd7dfe7eff7ff", 16);
  bs_digest e = d;
  assert_true(bs_digest_eq(&d, &e));
  e.b[31] ^= 1;
  assert_false(bs_digest_eq(&d, &e));
}

static void test_bad_arguments(void **state) {
  (void)state;
  bs_digest d;
  bs_err_clear();
  assert_int_equal(bs_digest_sha256(NULL, 5, &d), BS_ERR_INVALID);
  assert_int_equal(bs_err()->code, BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "5 bytes"));
  bs_err_clear();
  assert_int_equal(bs_digest_sha256("x", 1, NULL), BS_ERR_INVALID);
  bs_err_clear();
  const void *data[2] = {"ab", NULL};
  size_t len[2] = {2, 9};
  bs_digest out[2];
  assert_int_equal(bs_digest_sha256_many(data, len, 2, out, 1), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "buffer 1"));
  bs_err_clear();
  assert_int_equal(bs_digest_sha256_many(data, len, 1, out, -1),
                   BS_ERR_INVALID);
  bs_err_clear();
  /* Nothing to hash is fine, whatever the pointers. */
  assert_int_equal(bs_digest_sha256_many(NULL, NULL, 0, NULL, 0), BS_OK);
  /* A NULL buffer of zero bytes is the empty message. */
  len[1] = 0;
  assert_int_equal(bs_digest_sha256_many(data, len, 2, out, 2), BS_OK);
  assert_int_equal(bs_digest_sha256("", 0, &d), BS_OK);
  assert_true(bs_digest_eq(&out[1], &d));
}

enum { NBUF = 97 };

static void test_many_equals_serial(void **state) {
  (void)state;
  uint8_t *buf[NBUF];
  const void *data[NBUF];
  size_t len[NBUF];
  bs_digest serial[NBUF], par[NBUF];
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < NBUF; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    len[i] = i % 10 == 0 ? 0 : (size_t)(s >> 33) % 70000;
    buf[i] = malloc(len[i] + 1);
    assert_non_null(buf[i]);
    for (size_t j = 0; j < len[i]; j++)
      buf[i][j] = (uint8_t)((s >> 17) + j * 131 + i);
    data[i] = buf[i];
    assert_int_equal(bs_digest_sha256(buf[i], len[i], &serial[i]), BS_OK);
  }
  const int threads[] = {1, 2, 7, 0, 500};
  for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
    memset(par, 0, sizeof par);
    assert_int_equal(bs_digest_sha256_many(data, len, NBUF, par, threads[t]),
                     BS_OK);
    for (size_t i = 0; i < NBUF; i++)
      if (!bs_digest_eq(&serial[i], &par[i]))
        fail_msg("threads %d: buffer %zu (%zu bytes) differs", threads[t], i,
                 len[i]);
  }
  /* Distinct inputs, distinct digests: the outputs are not all one slot. */
  assert_false(bs_digest_eq(&par[1], &par[2]));
  for (size_t i = 0; i < NBUF; i++)
    free(buf[i]);
}

/* Parts of several sizes (empty ones among them), more bytes in all than
 * the hasher's ring holds, so that rooms wrap and run out: every digest
 * the one bs_digest_sha256 gives, written by the drain, whether the part
 * went to the hasher or (no room) was hashed at once. */
#define HJOBS 64
#define HPARTS 5
static void test_hasher_equals_serial(void **state) {
  (void)state;
  static bs_digest serial[HJOBS][HPARTS], later[HJOBS][HPARTS];
  bs_hasher *h = NULL;
  uint64_t s = 7;
  size_t rooms = 0;
  assert_int_equal(bs_hasher_start(NULL, &h), BS_OK);
  for (size_t i = 0; i < HJOBS; i++) {
    size_t len[HPARTS], total = 0;
    for (size_t k = 0; k < HPARTS; k++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      len[k] = k == 2 ? 0 : (size_t)(s >> 33) % (1u << 20);
      total += len[k];
    }
    uint8_t *b = bs_hasher_room(h, total, HPARTS), *own = NULL;
    rooms += b != NULL;
    if (!b)
      assert_non_null(b = own = malloc(total));
    for (size_t k = 0; k < HPARTS; b += len[k], k++) {
      for (size_t x = 0; x < len[k]; x++)
        b[x] = (uint8_t)(x * 131 + i * 7 + k);
      assert_int_equal(bs_digest_sha256(b, len[k], &serial[i][k]), BS_OK);
      if (own)
        later[i][k] = serial[i][k];
      else
        bs_hasher_put(h, len[k], &later[i][k]);
    }
    free(own);
    if (i == HJOBS / 2) /* a drain midway, then more */
      assert_int_equal(bs_hasher_drain(h), BS_OK);
  }
  assert_null(bs_hasher_room(h, (size_t)64 << 20, 1)); /* never fits */
  assert_int_equal(bs_hasher_drain(h), BS_OK);
  bs_hasher_stop(h);
  for (size_t i = 0; i < HJOBS; i++)
    for (size_t k = 0; k < HPARTS; k++)
      if (!bs_digest_eq(&serial[i][k], &later[i][k]))
        fail_msg("job %zu part %zu differs", i, k);
  assert_true(rooms > 0);
  assert_false(bs_digest_eq(&later[0][0], &later[0][1]));
}

/* A hasher killed under its caller: the drain says so, bounded, and does
 * not wait for it. */
static void test_hasher_death_is_an_error(void **state) {
  (void)state;
  bs_hasher *h = NULL;
  bs_digest d = {{0}};
  assert_int_equal(bs_hasher_start(NULL, &h), BS_OK);
  bs_hasher_stop(NULL);
  assert_int_equal(bs_hasher_drain(h), BS_OK); /* nothing put */
  assert_int_equal(kill(bs_hasher_pid(h), SIGKILL), 0);
  char *room = bs_hasher_room(h, 3, 1);
  assert_non_null(room);
  memcpy(room, "abc", 3);
  bs_hasher_put(h, 3, &d);
  assert_int_equal(bs_hasher_drain(h), BS_ERR_INTERNAL);
  assert_non_null(strstr(bs_err()->message, "ended with 1 parts not hashed"));
  bs_err_clear();
  bs_hasher_stop(h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_vectors),
      cmocka_unit_test(test_memo_same_bytes_only),
      cmocka_unit_test(test_hex_and_eq),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_many_equals_serial),
      cmocka_unit_test(test_hasher_equals_serial),
      cmocka_unit_test(test_hasher_death_is_an_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
