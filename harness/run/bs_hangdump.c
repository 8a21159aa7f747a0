#include "run/bs_hangdump.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bs_core_testing.h"
#include "bs_fork.h"
#include "comm/bs_comm.h"
#include "driver/bs_driver.h"
#include "report/bs_artifacts.h"
#include "run/bs_child_judge.h"
#include "run/bs_parent.h"

enum { FREE = 0, RUN, DUMP };

/* How often a dump asked through bs_hangdump_asked_fn is looked for. */
#define ASKED_POLL_NS 10000000L

static struct {
  const bs_run *cfg;
  const bs_record *rec;
  int fd;
  bs_hangdump_fn part;
  bs_hangdump_asked_fn asked;
  void *arg;
  pthread_t thread;
  bool started;
  const char *by; /* who asked for the dump */
  bool virtual_;  /* the world's virtual clock passed the deadline */
  /* Of the pipe: FREE, RUN or DUMP. The run claims it (RUN) before it
   * signals the thread to end, so a signal that finds it taken ends it. */
  atomic_int owner;
  bs_world_waits waits; /* every running world's, merged */
} hd;

/* Each running world's ranks: their flight recorders, and the report. */
static void take_world(const bs_world *w, void *arg) {
  bs_record *rec = arg;
  char why[200], *report;
  snprintf(why, sizeof why,
           "the run passed its %.0f s deadline and %s asked for this "
           "dump: where each rank was then",
           hd.cfg->deadline_s, hd.by);
  bs_world_waits ws = bs_comm_report_waits(w);
  if (ws.longest_ms > hd.waits.longest_ms)
    hd.waits.longest_ms = ws.longest_ms;
  hd.waits.timeout_ms = ws.timeout_ms;
  hd.waits.failed |= ws.failed;
  for (int k = 0; k < bs_world_running_local_size(w); k++) {
    int g = bs_world_running_first_rank(w) + k;
    if (g < rec->nranks && !rec->rank[g].flight)
      rec->rank[g].flight = bs_world_flight_json_marked(w, k);
  }
  if ((report = bs_comm_report_now(w, why))) {
    free(rec->world_report);
    rec->world_report = report;
  }
}

/* `hang` is for a wait the watchdog should have ended and did not
 * (docs/cli.md). A run whose world had not failed, none of whose ranks had
 * waited in a collective past its timeout (half as much again: the
 * watchdog's own pace under load) and that was still in a wait the
 * watchdog bounds (a collective within its timeout, or a fault that waits:
 * bs_driver_waits_ms) was cut off by the deadline, not missed by the
 * watchdog: a fail that says so. */
static void judge_deadline(bs_result *res) {
  const char *how = hd.virtual_ ? "stopped" : "killed";
  const bs_world_waits *w = &hd.waits;
  char why[160];
  double faults_ms = bs_driver_waits_ms(hd.cfg, why, sizeof why);
  if (w->failed || w->timeout_ms <= 0 || w->longest_ms > 1.5 * w->timeout_ms ||
      (w->longest_ms < 0 && faults_ms <= 0))
    return;
  bs_oracle_result o = {.name = "liveness", .ok = false};
  char waited[64] = "no rank waited in a collective";
  if (w->longest_ms >= 0)
    snprintf(waited, sizeof waited, "the longest wait in a collective: %.0f ms",
             w->longest_ms);
  snprintf(o.detail, sizeof o.detail,
           "%s at the %.0f s deadline while the watchdog was within its %d "
           "ms timeout (%s; the faults' waits: %s): the deadline was shorter "
           "than the timeouts the run needed (raise --deadline-s or lower "
           "--timeout-ms)",
           how, hd.cfg->deadline_s, w->timeout_ms, waited, why);
  if (bs_result_add_oracle(res, &o) == BS_OK)
    res->verdict = BS_FAIL;
  bs_err_clear();
}

/* Returns the share's BS_HANGDUMP_* flags. */
static int dump(void) {
  bs_record rec;
  bs_result res;
  bs_buf out = {0};
  if (bs_result_from_run(hd.cfg, &res) != BS_OK ||
      bs_record_init(&rec, hd.cfg->ranks, hd.cfg->cycles) != BS_OK)
    return 0;
  rec.start_mono_ms = hd.rec->start_mono_ms;
  rec.start_real_ms = hd.rec->start_real_ms;
  rec.duration_ms = bs_record_now_ms(&rec);
  res.verdict = BS_HANG;
  hd.waits = (bs_world_waits){.longest_ms = -1.0};
  bs_world_running_each(take_world, &rec);
  judge_deadline(&res);
  int share = hd.part ? hd.part(&rec, &res, hd.arg) : BS_HANGDUMP_WRITE;
  if (!rec.world_report)
    rec.world_report = strdup("backstop: hang outside the communicator: no "
                              "world was running when the run passed its "
                              "deadline\n");
  /* Past a real deadline the parent says how it ended (bs_parent.c). */
  if (hd.virtual_)
    bs_result_set_note(&res,
                       "stopped at its %g s deadline on the virtual clock, "
                       "after dumping its ranks' flight recorders and where "
                       "they were",
                       hd.cfg->deadline_s);
  if ((share & BS_HANGDUMP_WRITE) && hd.cfg->artifacts &&
      bs_artifacts_write(hd.cfg, &rec, &res) != BS_OK)
    bs_child_judge_unwritten(&res);
  bs_result_pack(&out, &res);
  if (!out.oom)
    bs_fork_write_all(hd.fd, out.s, out.len);
  return share;
}

static sigset_t dump_set(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, BS_DUMP_SIGNAL);
  return set;
}

void bs_hangdump_block(void) {
  sigset_t set = dump_set();
  pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* Who asked for the dump: the parent by the signal, process 0 through
 * hd.asked (polled); NULL: nobody yet. */
static const char *asker(void) {
  sigset_t set = dump_set();
  int sig;
  if (!hd.asked)
    return sigwait(&set, &sig) == 0 ? "its parent" : NULL;
  struct timespec poll = {0, ASKED_POLL_NS};
  if (sigtimedwait(&set, NULL, &poll) == BS_DUMP_SIGNAL)
    return "its parent";
  return hd.asked(hd.arg) ? "process 0" : NULL;
}

static void *watch(void *arg) {
  int free_ = FREE;
  (void)arg;
  while (!(hd.by = asker()))
    ;
  if (!atomic_compare_exchange_strong(&hd.owner, &free_, DUMP))
    return NULL; /* the run's own result came first */
  if (dump() & BS_HANGDUMP_STAY)
    for (;;)
      pause();
  bs_fork_exit(0); /* the ranks are stuck: nothing else can end them */
}

void bs_hangdump_past(void *ctx) {
  int free_ = FREE;
  (void)ctx;
  if (!atomic_compare_exchange_strong(&hd.owner, &free_, DUMP))
    for (;;) /* the parent's dump came first: it ends the process */
      pause();
  hd.by = "its virtual clock";
  hd.virtual_ = true;
  dump(); /* its share is the whole run: threads of this process */
  bs_fork_exit(0);
}

bs_status bs_hangdump_start(const bs_run *cfg, const bs_record *rec, int fd,
                            bs_hangdump_fn part, bs_hangdump_asked_fn asked,
                            void *arg) {
  hd.cfg = cfg;
  hd.rec = rec;
  hd.fd = fd;
  hd.part = part;
  hd.asked = asked;
  hd.arg = arg;
  hd.virtual_ = false;
  atomic_store(&hd.owner, FREE);
  bs_hangdump_block();
  hd.started = pthread_create(&hd.thread, NULL, watch, NULL) == 0;
  if (!hd.started)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "the dump thread did not start");
  return BS_OK;
}

void bs_hangdump_end(void) {
  int free_ = FREE;
  if (!atomic_compare_exchange_strong(&hd.owner, &free_, RUN) &&
      atomic_load(&hd.owner) == DUMP)
    for (;;) /* the dump writes the artifacts and ends the process */
      pause();
  if (!hd.started)
    return;
  pthread_kill(hd.thread, BS_DUMP_SIGNAL);
  pthread_join(hd.thread, NULL);
  hd.started = false;
}
