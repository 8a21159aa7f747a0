#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bs_kernels.h"

/* The test's own generator, independent of the kernels' hash. */
static uint64_t xorshift(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

static float f32_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* ---- cast ---- */

/* Expected bits worked out by hand from the fp32 bit pattern: the upper 16
 * bits, rounded by the lower 16 against 0x8000 with ties to an even upper
 * half; any NaN is 0x7FC0 (c10::detail::round_to_nearest_even). */
static const struct {
  uint32_t in;
  uint16_t out;
  const char *what;
} cast_table[] = {
    {0x3f800000, 0x3f80, "1.0"},
    {0x3f808000, 0x3f80, "tie, even below (down)"},
    {0x3f818000, 0x3f82, "tie, odd below (up)"},
    {0x3f807fff, 0x3f80, "just below a tie"},
    {0x3f808001, 0x3f81, "just above a tie"},
    {0x3f817fff, 0x3f81, "just below an odd tie"},
    {0x3f818001, 0x3f82, "just above an odd tie"},
    {0xbf808000, 0xbf80, "negative tie down"},
    {0xbf818000, 0xbf82, "negative tie up"},
    {0xbf808001, 0xbf81, "negative above tie"},
    {0x7fc00000, 0x7fc0, "+quiet NaN"},
    {0xffc00000, 0x7fc0, "-quiet NaN loses its sign"},
    {0x7f800001, 0x7fc0, "+signalling NaN, payload 1 (bias would give Inf)"},
    {0xff800001, 0x7fc0, "-signalling NaN"},
    {0x7fa00000, 0x7fc0, "+signalling NaN, high payload"},
    {0x7fffffff, 0x7fc0, "+NaN all payload bits"},
    {0xffffffff, 0x7fc0, "-NaN all payload bits"},
    {0x7f800000, 0x7f80, "+Inf"},
    {0xff800000, 0xff80, "-Inf"},
    {0x00000000, 0x0000, "+0"},
    {0x80000000, 0x8000, "-0"},
    {0x00000001, 0x0000, "smallest subnormal"},
    {0x80000001, 0x8000, "smallest negative subnormal"},
    {0x00008000, 0x0000, "subnormal tie to even zero"},
    {0x00018000, 0x0002, "subnormal tie up"},
    {0x00008001, 0x0001, "subnormal above tie"},
    {0x007f8000, 0x0080, "subnormal tie carries into min normal"},
    {0x807fffff, 0x8080, "largest negative subnormal rounds to -min normal"},
    {0x00800000, 0x0080, "min normal"},
    {0x7f7f0000, 0x7f7f, "bf16 max finite"},
    {0xff7f0000, 0xff7f, "-bf16 max finite"},
    {0x7f7f7fff, 0x7f7f, "just below the tie above max finite"},
    {0x7f7f8000, 0x7f80, "tie above max finite rounds to Inf"},
    {0x7f7fffff, 0x7f80, "FLT_MAX rounds to Inf"},
    {0xff7f8000, 0xff80, "negative tie above max finite rounds to -Inf"},
    {0x7f7e8000, 0x7f7e, "tie below max finite stays even"},
};

static void test_cast_table(void **state) {
  (void)state;
  size_t n = sizeof cast_table / sizeof cast_table[0];
  float in[64];
  uint16_t out[64];
  assert_true(n <= 64);
  for (size_t i = 0; i < n; i++) {
    uint16_t got = bs_k_cast_f32_to_bf16(f32_of(cast_table[i].in));
    if (got != cast_table[i].out)
      fail_msg("%s: 0x%08x -> 0x%04x, expected 0x%04x", cast_table[i].what,
               cast_table[i].in, got, cast_table[i].out);
    in[i] = f32_of(cast_table[i].in);
  }
  bs_k_cast_f32_bf16(out, in, n);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(out[i], cast_table[i].out);
}

/* Reference by value, not by bits: the two bf16 neighbours of x and which
 * is nearer, decided in double (differences of floats are exact there). */
static uint16_t ref_bf16(float x) {
  if (isnan(x))
    return 0x7fc0;
  uint16_t lo = (uint16_t)(bits_of(x) >> 16); /* toward zero */
  double a = fabs((double)f32_of((uint32_t)lo << 16));
  if ((double)fabsf(x) == a)
    return lo;
  /* Above bf16 max finite the next value up is 2^128, where IEEE rounding
   * sends the overflow. */
  double b = (lo & 0x7fff) == 0x7f7f
                 ? ldexp(1.0, 128)
                 : fabs((double)f32_of((uint32_t)(lo + 1) << 16));
  double dx = fabs((double)x);
  if (dx - a < b - dx)
    return lo;
  if (dx - a > b - dx)
    return (uint16_t)(lo + 1);
  return (lo & 1) ? (uint16_t)(lo + 1) : lo;
}

static void test_cast_random_vs_reference(void **state) {
  (void)state;
  uint64_t s = 0x1234567887654321ull;
  for (int i = 0; i < 400000; i++) {
    uint32_t u = (uint32_t)xorshift(&s);
    /* Every fourth value lands on or next to a tie. */
    if (i % 4 == 0)
      u = (u & 0xffff0000u) | (0x7fffu + (uint32_t)(xorshift(&s) % 3));
    float x = f32_of(u);
    uint16_t want = ref_bf16(x), got = bs_k_cast_f32_to_bf16(x);
    if (want != got)
      fail_msg("0x%08x -> 0x%04x, reference 0x%04x", u, got, want);
  }
}

static void test_bf16_round_trip(void **state) {
  (void)state;
  for (uint32_t b = 0; b < 0x10000; b++) {
    float f = bs_k_cast_bf16_to_f32((uint16_t)b);
    assert_int_equal(bits_of(f), b << 16);
    if (!isnan(f))
      assert_int_equal(bs_k_cast_f32_to_bf16(f), b);
  }
}

/* ---- adam ---- */

typedef struct ref_state {
  double p, m, v;
} ref_state;

/* Straight from the AdamW formula, in double, powers computed here. */
static ref_state ref_adam(ref_state s, double g, double lr, double b1,
                          double b2, double eps, double wd, int step) {
  ref_state r;
  r.m = b1 * s.m + (1 - b1) * g;
  r.v = b2 * s.v + (1 - b2) * g * g;
  double mhat = r.m / (1 - pow(b1, step));
  double vhat = r.v / (1 - pow(b2, step));
  r.p = s.p - lr * (mhat / (sqrt(vhat) + eps) + wd * s.p);
  return r;
}

enum { AN = 4096 };

static void random_floats(float *x, size_t n, uint64_t seed, float scale) {
  for (size_t i = 0; i < n; i++)
    x[i] = scale * ((float)(xorshift(&seed) >> 40) / 8388608.0f - 1.0f);
}

static void test_adam_vs_double(void **state) {
  (void)state;
  static float p[AN], m[AN], v[AN], g[AN];
  const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f;
  random_floats(p, AN, 11, 2.0f);
  memset(m, 0, sizeof m);
  memset(v, 0, sizeof v);
  for (int step = 1; step <= 5; step++) {
    random_floats(g, AN, 100 + (uint64_t)step, 0.5f);
    bs_adam_hp hp = bs_k_adam_hp_make(lr, b1, b2, eps, wd, step);
    ref_state want[AN], tol[AN];
    for (size_t i = 0; i < AN; i++) {
      want[i] = ref_adam((ref_state){p[i], m[i], v[i]}, g[i], lr, b1, b2, eps,
                         wd, step);
      /* A few float ulps of the terms summed: m can cancel to near zero, so
       * its bound follows the terms, not the result. The update is ~lr. */
      tol[i] = (ref_state){
          .p = 2e-7 * (fabs(p[i]) + lr * 4) + 1e-12,
          .m = 4e-7 * (fabs(b1 * m[i]) + fabs((1 - b1) * g[i])) + 1e-30,
          .v = 4e-7 * fabs(want[i].v) + 1e-30};
    }
    bs_k_adam(p, m, v, g, AN, &hp);
    for (size_t i = 0; i < AN; i++) {
      if (fabs(p[i] - want[i].p) > tol[i].p ||
          fabs(m[i] - want[i].m) > tol[i].m ||
          fabs(v[i] - want[i].v) > tol[i].v)
        fail_msg("step %d elem %zu: p %.9g/%.9g m %.9g/%.9g v %.9g/%.9g", step,
                 i, p[i], want[i].p, m[i], want[i].m, v[i], want[i].v);
    }
  }
}

static void test_adam_hp(void **state) {
  (void)state;
  bs_adam_hp hp = bs_k_adam_hp_make(0.1f, 0.9f, 0.999f, 1e-8f, 0.0f, 3);
  assert_float_equal(hp.bias_corr1, 1.0 - pow(0.9f, 3), 1e-7);
  assert_float_equal(hp.bias_corr2, 1.0 - pow(0.999f, 3), 1e-7);
  /* Step 0 would divide by zero: it counts as step 1. */
  bs_adam_hp h0 = bs_k_adam_hp_make(0.1f, 0.9f, 0.999f, 1e-8f, 0.0f, 0);
  assert_true(h0.bias_corr1 > 0.0f && h0.bias_corr2 > 0.0f);
  assert_float_equal(h0.bias_corr1, 1.0f - 0.9f, 1e-7);
}

/* Same inputs, same bits; and a slice computed alone equals the same slice
 * of the whole (no cross-element dependence the GPU could reorder). */
static void test_adam_deterministic(void **state) {
  (void)state;
  static float p[2][AN], m[2][AN], v[2][AN], g[AN];
  random_floats(g, AN, 5, 1.0f);
  for (int k = 0; k < 2; k++) {
    random_floats(p[k], AN, 6, 1.0f);
    random_floats(m[k], AN, 7, 0.1f);
    for (size_t i = 0; i < AN; i++)
      v[k][i] = fabsf(m[k][i]);
  }
  bs_adam_hp hp = bs_k_adam_hp_make(1e-2f, 0.9f, 0.95f, 1e-6f, 0.1f, 7);
  float before = p[0][0];
  bs_k_adam(p[0], m[0], v[0], g, AN, &hp);
  bs_k_adam(p[1], m[1], v[1], g, 1000, &hp);
  bs_k_adam(p[1] + 1000, m[1] + 1000, v[1] + 1000, g + 1000, AN - 1000, &hp);
  assert_true(p[0][0] != before);
  assert_memory_equal(p[0], p[1], sizeof p[0]);
  assert_memory_equal(m[0], m[1], sizeof m[0]);
  assert_memory_equal(v[0], v[1], sizeof v[0]);
}

/* ---- grad ---- */

static void test_grad_slice_invariant(void **state) {
  (void)state;
  enum { N = 5000, K = 1234 };
  static uint16_t p[N];
  static float whole[N], part[N], again[N];
  for (size_t i = 0; i < N; i++)
    p[i] = bs_k_cast_f32_to_bf16(bs_k_grad_hash_unit(9, 1, i));
  bs_k_grad(whole, p, N, 0, 42, 3, 17);
  bs_k_grad(again, p, N, 0, 42, 3, 17);
  assert_memory_equal(whole, again, sizeof whole);
  bs_k_grad(part, p, K, 0, 42, 3, 17);
  bs_k_grad(part + K, p + K, N - K, K, 42, 3, 17);
  assert_memory_equal(whole, part, sizeof whole);
}

static size_t count_diff(const float *a, const float *b, size_t n) {
  size_t d = 0;
  for (size_t i = 0; i < n; i++)
    d += memcmp(&a[i], &b[i], sizeof a[i]) != 0;
  return d;
}

static void test_grad_depends_on_inputs(void **state) {
  (void)state;
  enum { N = 1000 };
  static uint16_t p[N], q[N];
  static float g0[N], g1[N];
  for (size_t i = 0; i < N; i++) {
    p[i] = bs_k_cast_f32_to_bf16(bs_k_grad_hash_unit(1, 2, i));
    q[i] = bs_k_cast_f32_to_bf16(bs_k_grad_hash_unit(1, 2, i) + 0.5f);
  }
  bs_k_grad(g0, p, N, 0, 42, 0, 1);
  /* Each of seed, rank, step, param and base must change the result. */
  bs_k_grad(g1, p, N, 0, 43, 0, 1);
  assert_true(count_diff(g0, g1, N) > N * 9 / 10);
  bs_k_grad(g1, p, N, 0, 42, 1, 1);
  assert_true(count_diff(g0, g1, N) > N * 9 / 10);
  bs_k_grad(g1, p, N, 0, 42, 0, 2);
  assert_true(count_diff(g0, g1, N) > N * 9 / 10);
  bs_k_grad(g1, p, N, 1, 42, 0, 1);
  assert_true(count_diff(g0, g1, N) > N * 9 / 10);
  bs_k_grad(g1, q, N, 0, 42, 0, 1);
  /* The loss is quadratic: the gradient moves by the param difference. */
  for (size_t i = 0; i < N; i++) {
    float dp = bs_k_cast_bf16_to_f32(q[i]) - bs_k_cast_bf16_to_f32(p[i]);
    assert_float_equal(g1[i] - g0[i], dp, 1e-5);
  }
}

static void test_hash_unit_range(void **state) {
  (void)state;
  double sum = 0;
  int neg = 0;
  float lo = 1, hi = -1;
  for (uint64_t i = 0; i < 100000; i++) {
    float u = bs_k_grad_hash_unit(7, 3, i);
    assert_true(u >= -1.0f && u < 1.0f);
    sum += u;
    neg += u < 0;
    lo = fminf(lo, u);
    hi = fmaxf(hi, u);
  }
  assert_true(fabs(sum / 100000) < 0.02);
  assert_in_range(neg, 45000, 55000);
  assert_true(lo < -0.99f && hi > 0.99f);
  assert_true(bs_k_grad_hash_unit(7, 3, 0) == bs_k_grad_hash_unit(7, 3, 0));
  assert_true(bs_k_grad_hash_unit(7, 3, 0) != bs_k_grad_hash_unit(8, 3, 0));
  assert_true(bs_k_grad_hash_unit(7, 3, 0) != bs_k_grad_hash_unit(7, 4, 0));
}

/* ---- bitflip ---- */

static int popcount_diff(const uint8_t *a, const uint8_t *b, size_t n,
                         size_t *bit) {
  int c = 0;
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < 8; k++)
      if (((a[i] ^ b[i]) >> k) & 1) {
        c++;
        *bit = i * 8 + (size_t)k;
      }
  return c;
}

static void test_bitflip(void **state) {
  (void)state;
  uint8_t a[37], b[37];
  bs_k_poison(a, sizeof a, 5);
  const uint64_t bits[] = {0, 7, 8, 100, 295, 296 + 13, UINT64_MAX};
  for (size_t t = 0; t < sizeof bits / sizeof bits[0]; t++) {
    memcpy(b, a, sizeof a);
    bs_k_bitflip(b, sizeof b, bits[t]);
    size_t at = SIZE_MAX;
    assert_int_equal(popcount_diff(a, b, sizeof a, &at), 1);
    assert_int_equal(at, bits[t] % (sizeof a * 8));
    bs_k_bitflip(b, sizeof b, bits[t]);
    assert_memory_equal(a, b, sizeof a);
  }
  bs_k_bitflip(NULL, 0, 3); /* nothing to flip, nothing touched */
}

/* ---- first_diff ---- */

static void test_first_diff(void **state) {
  (void)state;
  enum { N = 10007 };
  static uint8_t a[N + 1], b[N + 1];
  bs_k_poison(a, sizeof a, 1);
  memcpy(b, a, sizeof a);
  assert_int_equal(bs_k_first_diff(a, b, N), N);
  assert_int_equal(bs_k_first_diff(a, b, 0), 0);
  const size_t at[] = {0, 1, 4095, 4096, 4097, 8191, N - 1};
  for (size_t t = 0; t < sizeof at / sizeof at[0]; t++) {
    b[at[t]] ^= 0x10;
    assert_int_equal(bs_k_first_diff(a, b, N), at[t]);
    /* Shorter than the difference: equal. */
    assert_int_equal(bs_k_first_diff(a, b, at[t]), at[t]);
    b[at[t]] ^= 0x10;
  }
  /* Several differences: the first wins; unaligned starts work. */
  b[9000] ^= 1;
  b[5000] ^= 1;
  assert_int_equal(bs_k_first_diff(a, b, N), 5000);
  assert_int_equal(bs_k_first_diff(a + 1, b + 1, N), 4999);
}

/* ---- poison ---- */

static void test_poison(void **state) {
  (void)state;
  enum { N = 1003 };
  static uint8_t x[N], y[N + 3], z[N];
  bs_k_poison(x, N, 77);
  bs_k_poison(y + 3, N, 77); /* unaligned: same pattern by offset */
  assert_memory_equal(x, y + 3, N);
  bs_k_poison(z, N, 78);
  size_t same = 0, zeros = 0;
  for (size_t i = 0; i < N; i++) {
    same += x[i] == z[i];
    zeros += x[i] == 0;
  }
  assert_true(same < N / 16); /* ~1/256 expected */
  assert_true(zeros < N / 16);
  /* A prefix is the same pattern: the tail path agrees with the words. */
  bs_k_poison(z, 13, 77);
  assert_memory_equal(x, z, 13);
  /* A part from any byte on is the whole fill's bytes there. */
  for (size_t from = 0; from < 20; from += 3) {
    memset(z, 0, N);
    bs_k_poison_from(z + 1, N - 40, 77, from);
    assert_memory_equal(z + 1, x + from, N - 40);
  }
}

/* NaN results carry no input payload: CUDA's arithmetic returns the
 * canonical NaN and the host must agree bit for bit. */
static void test_nan_results_canonical(void **state) {
  (void)state;
  const uint16_t nan_params[] = {0x7FC1u, 0xFFC1u, 0x7F81u};
  for (size_t i = 0; i < 3; i++) {
    float g;
    uint32_t bits;
    bs_k_grad(&g, &nan_params[i], 1, 7, 3, 0, 1);
    memcpy(&bits, &g, sizeof bits);
    assert_int_equal(bits, 0x7FC00000u);
  }
  float p = 1.0f, m = 0.0f, v = 0.0f, grad;
  uint32_t nanbits = 0xFFC12345u, bits;
  memcpy(&grad, &nanbits, sizeof grad);
  bs_adam_hp hp = bs_k_adam_hp_make(1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 1);
  bs_k_adam(&p, &m, &v, &grad, 1, &hp);
  memcpy(&bits, &p, sizeof bits);
  assert_int_equal(bits, 0x7FC00000u);
  memcpy(&bits, &m, sizeof bits);
  assert_int_equal(bits, 0x7FC00000u);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cast_table),
      cmocka_unit_test(test_cast_random_vs_reference),
      cmocka_unit_test(test_bf16_round_trip),
      cmocka_unit_test(test_adam_vs_double),
      cmocka_unit_test(test_adam_hp),
      cmocka_unit_test(test_adam_deterministic),
      cmocka_unit_test(test_grad_slice_invariant),
      cmocka_unit_test(test_grad_depends_on_inputs),
      cmocka_unit_test(test_nan_results_canonical),
      cmocka_unit_test(test_hash_unit_range),
      cmocka_unit_test(test_bitflip),
      cmocka_unit_test(test_first_diff),
      cmocka_unit_test(test_poison),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
