/* A rank never joins the communicator re-init of wake_up: its peers wait in
 * the init, as NCCL ranks do at a reload_process_groups one rank missed,
 * and the watchdog fails the world, so every rank fails wake_up alike and
 * the report says who was in the init and who was not. */
#include <stdio.h>
#include <string.h>

#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

/* The report shows the peers in comm_init and rank `absent` alone, outside
 * it; *line: the absent rank's line. */
static bool who_was_where(const bs_record *r, int absent, char *line, size_t nl,
                          char *d, size_t n) {
  if (!strstr(bs_expect_report(r), "comm_init #")) {
    snprintf(d, n, "the report shows no comm_init: %.200s",
             bs_expect_report(r));
    return false;
  }
  if (!bs_expect_report_line(r, absent, line, nl) ||
      strstr(line, "comm_init")) {
    snprintf(d, n, "the report does not show rank %d outside the init: %.200s",
             absent, bs_expect_report(r));
    return false;
  }
  for (int k = 0; k < absent; k++) {
    char other[200];
    /* A peer without a line of its own is grouped with the others. */
    if (bs_expect_report_line(r, k, other, sizeof other) &&
        !strstr(other, "comm_init")) {
      snprintf(d, n, "rank %d is not shown in comm_init: %s", k, other);
      return false;
    }
  }
  return true;
}

static bool expect(const bs_record *r, char *d, size_t n) {
  char line[200];
  int absent = r->nranks - 1, timeout = bs_expect_report_timeout_ms(r);
  if (!bs_expect_failed_and_stopped(r, "wake_up", BS_ERR_TIMEOUT, false, d, n))
    return false;
  if (!bs_expect_same_record(r, d, n))
    return false;
  /* Found by the watchdog, once: not sooner, and not much later. */
  if (timeout <= 0 || r->detect_ms < timeout * 0.5 ||
      r->detect_ms > timeout * 1.5) {
    snprintf(d, n,
             "not contained by the watchdog: detect_ms outside 0.5-1.5 "
             "watchdog timeouts (%d ms)",
             timeout);
    return false;
  }
  if (!who_was_where(r, absent, line, sizeof line, d, n))
    return false;
  snprintf(d, n, "every rank failed wake_up with timeout; the report says '%s'",
           line);
  return true;
}

BS_SCENARIO(comm_init_skip){
    .name = "comm-init-skip",
    .labels = "@fault",
    .summary = "the last rank never joins the communicator re-init of "
               "wake_up",
    .details =
        "Normal backuper on the tiny model with a 1000 ms watchdog; needs 2 "
        "ranks. Sleep destroys the trainer's communicator and wake_up "
        "creates a fresh one (behavior.md §5).\n"
        "Fault: comm/init_skip on the last rank, cycle 1, nth=2 (the asleep "
        "weight sync's temporary groups are the cycle's first init, "
        "wake_up's the second): the rank never joins wake_up's init.\n"
        "Expects: its peers wait in comm_init until the watchdog fails the "
        "world; every rank fails wake_up with timeout, alike (one error "
        "record: the same culprit rank and collective), within 1.5 "
        "watchdog timeouts, and the run stops; the report shows the peers in "
        "comm_init and the last rank outside it.",
    .cycles = 2,
    .min_ranks = 2,
    .timeout_ms = 1000,
    .faults = BS_LIST("name=comm/init_skip,rank={last},cycle=1,nth=2"),
    .expect = expect,
    .expects = "every rank fails wake_up with timeout, one error record on "
               "every rank, within 1.5 watchdog timeouts, the run stops, the "
               "report shows who was in "
               "comm_init and who was not",
};
