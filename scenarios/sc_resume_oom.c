/* A resume finds no memory (torch_memory_saver #87): the real library ends
 * the process (exit 1), so the last rank dies in wake_up and every other
 * rank must notice at once (rank-dead), not wait in its next collective. */
#include <stdio.h>
#include <string.h>

#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

/* The dead rank: fatal-exit in wake_up of cycle 1 with the library's
 * words, exit status 1, nothing after. */
static bool died(const bs_record *r, int k, char *d, size_t n) {
  const bs_event *e = bs_expect_first_failure(r, k);
  if (!e || e->status != BS_ERR_FATAL || strcmp(e->phase, "wake_up") != 0 ||
      e->cycle != 1 || !strstr(bs_record_err(e)->message, "(out of memory)") ||
      r->rank[k].exit_status != 1 || e != bs_record_last(r, k)) {
    snprintf(d, n,
             "rank %d: expected fatal-exit in wake_up (cycle 1), out of "
             "memory, exit status 1, nothing after; got %s in %s (cycle "
             "%d), exit status %d: %.120s",
             k, e ? bs_status_name(e->status) : "no failure",
             e ? e->phase : "-", e ? e->cycle : -1, r->rank[k].exit_status,
             e ? bs_record_err(e)->message : "");
    return false;
  }
  snprintf(d, n, "rank %d died in wake_up (exit status 1): %.160s", k,
           bs_record_err(e)->message);
  return true;
}

static bool names_dead(const bs_record *r, int dead, char *d, size_t n) {
  return bs_expect_names_dead(r, dead, false, d, n);
}

static bool expect(const bs_record *r, char *d, size_t n) {
  char head[400];
  int dead = r->nranks - 1;
  if (!died(r, dead, head, sizeof head)) {
    snprintf(d, n, "%s", head);
    return false;
  }
  if (dead == 0) {
    snprintf(d, n, "%s; no other rank", head);
    return true;
  }
  for (int k = 0; k < dead; k++) {
    const bs_event *e = bs_expect_first_failure(r, k);
    if (!e || e->status != BS_ERR_RANK_DEAD || strcmp(e->phase, "wake_up") ||
        e != bs_record_last(r, k)) {
      snprintf(d, n,
               "survivor rank %d: expected rank-dead in wake_up and nothing "
               "after, got %s in %s",
               k, e ? bs_status_name(e->status) : "no failure",
               e ? e->phase : "-");
      return false;
    }
  }
  snprintf(head + strlen(head), sizeof head - strlen(head),
           "; %d survivors returned rank-dead", dead);
  return bs_expect_contained_naming(r, names_dead, dead, head, d, n);
}

BS_SCENARIO(resume_oom){
    .name = "resume-oom",
    .labels = "@smoke @fault",
    .summary = "the last rank's wake-up finds no memory and the rank dies",
    .details =
        "MainCast (rematerialize=1) on the tiny model with a 2000 ms "
        "collective watchdog: sleep pauses grad_buffer and default, "
        "update_weights pauses param_buffer, wake_up resumes them all and "
        "then re-creates the process groups.\n"
        "Fault: region/resume on the last rank, cycle 1, nth=1: the first "
        "memory-saver resume of cycle 1 is wake_up's (MainCast's sync "
        "resumes nothing), after one full clean cycle. The real library "
        "ends the process here (torch_memory_saver #87: CUDA_ERROR_CHECK "
        "on an out-of-memory cu_mem_create, exit 1), and so does the "
        "model: the rank leaves the world as a death with the library's "
        "message and exit status 1 recorded.\n"
        "Expects: the last rank fails wake_up (cycle 1) with fatal-exit "
        "(out of memory), exit status 1; every other rank returns rank-dead "
        "in the same wake_up (the process groups' re-init it never joins), "
        "the death is contained (detect_ms is set) with detection and "
        "every failed phase under half the timeout, the report's line for "
        "the last rank says it is dead, and nothing runs after it.",
    .timeout_ms = 2000,
    .sets = BS_LIST("rematerialize=1"),
    .faults = BS_LIST("name=region/resume,rank={last},cycle=1,nth=1"),
    .expect = expect,
    .expects = "the last rank dies in wake_up (cycle 1): fatal-exit, out of "
               "memory, exit status 1; every survivor returns rank-dead "
               "there within half the timeout, the report names the dead "
               "rank; nothing runs after it",
};
