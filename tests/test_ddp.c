#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "model/bs_ddp.h"
#include "model/bs_model_parse.h"

static const size_t bucket_sizes[] = {0, 1, 700, 4096};
#define NBUCKET_SIZES (sizeof bucket_sizes / sizeof bucket_sizes[0])

/* Unpadded content of bucket b: the end of its last tensor. */
static size_t bucket_content(const bs_model_spec *m, const bs_ddp_layout *l,
                             int k, size_t b, size_t *last_numel) {
  size_t end = l->buf[k].buckets[b].offset;
  *last_numel = 0;
  for (size_t i = 0; i < m->n; i++)
    if (l->slot[i].buffer == k && l->slot[i].bucket == (int)b) {
      end = l->slot[i].offset + m->t[i].numel;
      *last_numel = m->t[i].numel;
    }
  return end - l->buf[k].buckets[b].offset;
}

/* Buckets tile the buffer, each padded by less than dp, closing as soon as
 * they reach the target. Returns how many buckets needed padding. */
static size_t check_buckets(const bs_model_spec *m, const bs_ddp_layout *l,
                            int k, size_t target) {
  const bs_ddp_buffer *buf = &l->buf[k];
  size_t end = 0, padded = 0;
  if (target == 0)
    assert_true(buf->nbuckets <= 1);
  for (size_t b = 0; b < buf->nbuckets; b++) {
    const bs_ddp_bucket *bk = &buf->buckets[b];
    size_t last, content = bucket_content(m, l, k, b, &last);
    assert_int_equal(bk->offset, end);
    assert_int_equal(bk->numel % (size_t)l->dp, 0);
    assert_int_equal(bk->shard * (size_t)l->dp, bk->numel);
    assert_true(content > 0 && content <= bk->numel);
    assert_true(bk->numel - content < (size_t)l->dp);
    if (target && b + 1 < buf->nbuckets)
      assert_true(content >= target && content - last < target);
    padded += bk->numel != content;
    end += bk->numel;
  }
  assert_int_equal(buf->numel, end);
  return padded;
}

/* In-DDP tensors are packed in spec order, never split; others outside. */
static void check_slots(const bs_model_spec *m, const bs_ddp_layout *l) {
  size_t next[BS_BUF_COUNT] = {0};
  int bucket[BS_BUF_COUNT] = {0};
  assert_int_equal(l->n, m->n);
  for (size_t i = 0; i < m->n; i++) {
    const bs_ddp_slot *s = &l->slot[i];
    if (!bs_tensor_in_ddp(&m->t[i])) {
      assert_int_equal(s->buffer, -1);
      continue;
    }
    int k = (m->t[i].flags & BS_TF_EXPERT) ? BS_BUF_EXPERT : BS_BUF_DENSE;
    assert_int_equal(s->buffer, k);
    const bs_ddp_bucket *bk = &l->buf[k].buckets[s->bucket];
    if (s->bucket != bucket[k]) { /* a new bucket starts at its offset */
      assert_int_equal(s->bucket, bucket[k] + 1);
      next[k] = bk->offset;
      bucket[k] = s->bucket;
    }
    assert_int_equal(s->offset, next[k]);
    assert_true(s->offset + m->t[i].numel <= bk->offset + bk->numel);
    next[k] = s->offset + m->t[i].numel;
  }
}

/* Every element of the buffer is owned by exactly one rank. */
static void check_shards(const bs_ddp_layout *l, int k) {
  const bs_ddp_buffer *buf = &l->buf[k];
  unsigned char *owner = calloc(buf->numel + 1, 1);
  size_t per_rank = 0;
  assert_non_null(owner);
  for (size_t b = 0; b < buf->nbuckets; b++) {
    size_t prev_end = buf->buckets[b].offset;
    for (int r = 0; r < l->dp; r++) {
      size_t first, count;
      bs_ddp_shard(l, k, b, r, &first, &count);
      assert_int_equal(first, prev_end); /* rank order, contiguous */
      for (size_t e = first; e < first + count; e++)
        owner[e]++;
      prev_end = first + count;
      per_rank += r == 0 ? count : 0;
    }
    assert_int_equal(prev_end, buf->buckets[b].offset + buf->buckets[b].numel);
  }
  for (size_t e = 0; e < buf->numel; e++)
    assert_int_equal(owner[e], 1);
  assert_int_equal(bs_ddp_shard_numel(l, k), per_rank);
  assert_int_equal(per_rank * (size_t)l->dp, buf->numel);
  free(owner);
}

static void test_layout_all_presets(void **state) {
  (void)state;
  size_t padded_by_dp[9] = {0};
  for (const char *const *p = bs_model_preset_list(); *p; p++) {
    bs_model_spec m;
    assert_int_equal(bs_model_preset(*p, 1.0, &m), BS_OK);
    for (int dp = 1; dp <= 8; dp++)
      for (size_t s = 0; s < NBUCKET_SIZES; s++) {
        bs_ddp_layout l;
        bs_err_clear();
        assert_int_equal(bs_ddp_layout_build(&m, dp, bucket_sizes[s], &l),
                         BS_OK);
        assert_int_equal(l.dp, dp);
        check_slots(&m, &l);
        for (int k = 0; k < BS_BUF_COUNT; k++) {
          padded_by_dp[dp] += check_buckets(&m, &l, k, bucket_sizes[s]);
          check_shards(&l, k);
        }
        bs_ddp_layout_free(&l);
        assert_null(l.slot);
      }
    bs_model_free(&m);
  }
  assert_int_equal(padded_by_dp[1], 0);
  for (int dp = 2; dp <= 8; dp++)
    assert_true(padded_by_dp[dp] > 0);
}

static void test_known_sizes(void **state) {
  (void)state;
  bs_model_spec m;
  bs_ddp_layout l;
  assert_int_equal(bs_model_preset("tiny", 1.0, &m), BS_OK);
  assert_int_equal(bs_ddp_layout_build(&m, 8, 0, &l), BS_OK);
  /* 2873 trainable bf16 elements, padded to 2880; no expert params. */
  assert_int_equal(l.buf[BS_BUF_DENSE].nbuckets, 1);
  assert_int_equal(l.buf[BS_BUF_DENSE].numel, 2880);
  assert_int_equal(l.buf[BS_BUF_DENSE].buckets[0].shard, 360);
  assert_int_equal(l.buf[BS_BUF_EXPERT].nbuckets, 0);
  assert_int_equal(l.buf[BS_BUF_EXPERT].numel, 0);
  assert_int_equal(bs_ddp_shard_numel(&l, BS_BUF_EXPERT), 0);
  bs_ddp_layout_free(&l);

  /* One element per bucket target: every tensor its own bucket. */
  assert_int_equal(bs_ddp_layout_build(&m, 3, 1, &l), BS_OK);
  assert_int_equal(l.buf[BS_BUF_DENSE].nbuckets, 7);
  bs_ddp_layout_free(&l);
  bs_model_free(&m);

  assert_int_equal(bs_model_preset("moe", 1.0, &m), BS_OK);
  assert_int_equal(bs_ddp_layout_build(&m, 256, 0, &l), BS_OK);
  assert_int_equal(l.buf[BS_BUF_EXPERT].numel % 256, 0);
  assert_true(l.buf[BS_BUF_EXPERT].numel >= 7917);
  bs_ddp_layout_free(&l);
  /* The world's limit is the layout's. */
  assert_int_equal(bs_ddp_layout_build(&m, 16384, 0, &l), BS_OK);
  assert_int_equal(l.buf[BS_BUF_EXPERT].numel % 16384, 0);
  bs_ddp_layout_free(&l);
  bs_model_free(&m);
}

static void test_bad_args(void **state) {
  (void)state;
  bs_model_spec m, empty = {0};
  bs_ddp_layout l;
  assert_int_equal(bs_model_preset("tiny", 1.0, &m), BS_OK);
  const int bad_dp[] = {0, -1, 16385, 1 << 30};
  for (size_t i = 0; i < sizeof bad_dp / sizeof bad_dp[0]; i++) {
    bs_err_clear();
    assert_int_equal(bs_ddp_layout_build(&m, bad_dp[i], 0, &l), BS_ERR_INVALID);
    assert_non_null(strstr(bs_err()->message, "expected dp in 1..16384"));
  }
  bs_err_clear();
  assert_int_equal(bs_ddp_layout_build(&empty, 2, 0, &l), BS_ERR_INVALID);
  assert_int_equal(bs_ddp_layout_build(&m, 4, 0, &l), BS_OK);
  size_t first = 7, count = 7;
  bs_ddp_shard(&l, BS_BUF_DENSE, 0, 4, &first, &count);
  assert_int_equal(count, 0);
  bs_ddp_shard(&l, BS_BUF_DENSE, 1, 0, &first, &count);
  assert_int_equal(count, 0);
  bs_ddp_shard(&l, 2, 0, 0, &first, &count);
  assert_int_equal(count, 0);
  bs_ddp_shard(&l, BS_BUF_DENSE, 0, 3, &first, &count);
  assert_int_equal(first, 3 * l.buf[BS_BUF_DENSE].buckets[0].shard);
  assert_int_equal(bs_ddp_shard_numel(&l, -1), 0);
  bs_ddp_layout_free(&l);
  bs_model_free(&m);
}

/* A world's bucket holds at least an element a rank: the moe preset's
 * dense buffer at 16,384 ranks is one bucket of 32,768 elements, not three
 * of 16,384 each (49,152 for its 19,317); below it the target stands. */
static void test_bucket_grows_with_dp(void **state) {
  (void)state;
  bs_model_spec m = {0};
  bs_ddp_layout l;
  assert_int_equal(bs_ddp_bucket_numel(4096, 4), 4096);
  assert_int_equal(bs_ddp_bucket_numel(4096, 4096), 4096);
  assert_int_equal(bs_ddp_bucket_numel(4096, 16384), 16384);
  assert_int_equal(bs_ddp_bucket_numel(1 << 20, 16384), 1 << 20);
  assert_int_equal(bs_model_preset("moe", 1.0, &m), BS_OK);
  assert_int_equal(bs_ddp_layout_build(&m, 16384, 4096, &l), BS_OK);
  assert_int_equal(l.buf[BS_BUF_DENSE].numel, 3 * 16384);
  assert_int_equal(l.buf[BS_BUF_EXPERT].numel, 2 * 16384);
  bs_ddp_layout_free(&l);
  assert_int_equal(
      bs_ddp_layout_build(&m, 16384, bs_ddp_bucket_numel(4096, 16384), &l),
      BS_OK);
  assert_int_equal(l.buf[BS_BUF_DENSE].nbuckets, 1);
  assert_int_equal(l.buf[BS_BUF_DENSE].numel, 2 * 16384);
  assert_int_equal(l.buf[BS_BUF_EXPERT].numel, 16384);
  bs_ddp_layout_free(&l);
  bs_model_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout_all_presets),
      cmocka_unit_test(test_known_sizes),
      cmocka_unit_test(test_bad_args),
      cmocka_unit_test(test_bucket_grows_with_dp),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
