/* The watchdog thread: fires once for an armed slot past its timeout, never
 * for a slot disarmed in time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdatomic.h>
#include <time.h>

#include "bs_clock.h"
#include "comm/front/bs_watchdog.h"

typedef struct fired {
  atomic_int calls, slot;
  _Atomic uint64_t armed_ns;
} fired;

static void on_fire(void *ctx, int slot, uint64_t armed_ns) {
  fired *f = ctx;
  atomic_store(&f->slot, slot);
  atomic_store(&f->armed_ns, armed_ns);
  atomic_fetch_add(&f->calls, 1);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void test_fires_once_for_overdue_slot(void **state) {
  (void)state;
  fired f = {0};
  bs_watchdog *wd = NULL;
  assert_int_equal(bs_watchdog_start(4, 20, on_fire, &f, &wd), BS_OK);
  uint64_t before = bs_clock_mono_ns();
  bs_watchdog_arm(wd, 2);
  for (int i = 0; i < 100 && !bs_watchdog_fired(wd); i++)
    sleep_ms(5);
  sleep_ms(40); /* a second firing would have had time */
  assert_true(bs_watchdog_fired(wd));
  assert_int_equal(atomic_load(&f.calls), 1);
  assert_int_equal(atomic_load(&f.slot), 2);
  assert_true(atomic_load(&f.armed_ns) >= before);
  assert_true(bs_clock_mono_ns() - atomic_load(&f.armed_ns) >= 20000000ull);
  bs_watchdog_stop(wd);
}

/* on_fire's context first, so that both callbacks share one. */
typedef struct ticked {
  fired f;
  atomic_int ticks;
} ticked;

static void count_tick(void *ctx) {
  ticked *t = ctx;
  atomic_fetch_add(&t->ticks, 1);
}

/* The tick runs every period until the watchdog fires, not after. */
static void test_ticks_until_fired(void **state) {
  (void)state;
  ticked t = {0};
  bs_watchdog *wd = NULL;
  assert_int_equal(
      bs_watchdog_start_ticking(1, 60, on_fire, count_tick, 2, &t, &wd), BS_OK);
  for (int i = 0; i < 200 && atomic_load(&t.ticks) < 3; i++)
    sleep_ms(2);
  assert_true(atomic_load(&t.ticks) >= 3);
  bs_watchdog_arm(wd, 0);
  for (int i = 0; i < 200 && !bs_watchdog_fired(wd); i++)
    sleep_ms(5);
  assert_true(bs_watchdog_fired(wd));
  sleep_ms(5); /* a tick in flight when it fired ends */
  int ticks = atomic_load(&t.ticks);
  sleep_ms(20);
  assert_int_equal(atomic_load(&t.ticks), ticks);
  assert_int_equal(atomic_load(&t.f.calls), 1);
  bs_watchdog_stop(wd);
  assert_int_equal(
      bs_watchdog_start_ticking(1, 60, on_fire, count_tick, 0, &t, &wd),
      BS_ERR_INVALID);
}

static void test_disarmed_in_time_never_fires(void **state) {
  (void)state;
  fired f = {0};
  bs_watchdog *wd = NULL;
  assert_int_equal(bs_watchdog_start(2, 200, on_fire, &f, &wd), BS_OK);
  for (int i = 0; i < 5; i++) {
    bs_watchdog_arm(wd, i % 2);
    sleep_ms(10);
    bs_watchdog_disarm(wd, i % 2);
  }
  bs_watchdog_stop(wd);
  assert_int_equal(atomic_load(&f.calls), 0);
}

/* A hold moves every wait's start on, never back; a slot armed before a
 * hold that keeps coming does not fire, and fires a timeout after the last
 * one. */
static void test_hold_moves_waits_on(void **state) {
  (void)state;
  fired f = {0};
  bs_watchdog *wd = NULL;
  assert_int_equal(bs_watchdog_since(NULL, 7), 7);
  assert_int_equal(bs_watchdog_start(1, 300, on_fire, &f, &wd), BS_OK);
  assert_int_equal(bs_watchdog_since(wd, 5), 5);
  bs_watchdog_hold(wd, 100);
  bs_watchdog_hold(wd, 50);
  assert_int_equal(bs_watchdog_since(wd, 5), 100);
  assert_int_equal(bs_watchdog_since(wd, 200), 200);
  bs_watchdog_arm(wd, 0);
  for (int i = 0; i < 25; i++) { /* 375 ms armed, held every 15 ms */
    bs_watchdog_hold(wd, bs_clock_mono_ns());
    struct timespec ts = {0, 15 * 1000000L};
    nanosleep(&ts, NULL);
  }
  assert_false(bs_watchdog_fired(wd));
  for (int i = 0; i < 400 && !bs_watchdog_fired(wd); i++) {
    struct timespec ts = {0, 5 * 1000000L};
    nanosleep(&ts, NULL);
  }
  assert_true(bs_watchdog_fired(wd));
  bs_watchdog_stop(wd);
}

static void test_bad_arguments(void **state) {
  (void)state;
  fired f = {0};
  bs_watchdog *wd = NULL;
  assert_int_equal(bs_watchdog_start(0, 10, on_fire, &f, &wd), BS_ERR_INVALID);
  assert_null(wd);
  assert_int_equal(bs_watchdog_start(1, 0, on_fire, &f, &wd), BS_ERR_INVALID);
  bs_watchdog_arm(NULL, 0); /* harmless */
  bs_watchdog_stop(NULL);
  bs_err_clear();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fires_once_for_overdue_slot),
      cmocka_unit_test(test_ticks_until_fired),
      cmocka_unit_test(test_disarmed_in_time_never_fires),
      cmocka_unit_test(test_hold_moves_waits_on),
      cmocka_unit_test(test_bad_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
