#include "run/bs_child_threads.h"

#include "bs_fork.h"
#include "catalog/bs_scenario.h"
#include "driver/bs_driver.h"
#include "run/bs_child_judge.h"
#include "run/bs_hangdump.h"

static bool clean = true;

bool bs_child_threads_clean(void) {
  return clean;
}

/* No rank unwound: each freed what it held. */
static bool none_unwound(const bs_record *rec) {
  for (int r = 0; r < rec->nranks; r++)
    if (rec->rank[r].unwound)
      return false;
  return true;
}

int bs_child_threads_run(const bs_run *cfg, int fd) {
  bs_record rec;
  bs_result res;
  bs_buf out = {0};
  if (bs_result_from_run(cfg, &res) != BS_OK)
    return 4;
  /* A custom driver runs no ranks of its own: nothing for them to owe. */
  int ranks = cfg->scn->drive ? 0 : cfg->ranks;
  bs_status st = bs_record_init(&rec, ranks, cfg->cycles);
  /* A scheduled world's deadline is on its own clock (the hook below):
   * the real time a busy machine stretches judges nothing of it. */
  if (cfg->schedule.policy == BS_SCHED_THREADS)
    rec.deadline_ms = cfg->deadline_s * 1e3;
  if (st == BS_OK)
    st = bs_hangdump_start(cfg, &rec, fd, NULL, NULL, NULL);
  /* A scheduled world stops at its deadline on its own clock. */
  bs_driver_set_deadline(bs_hangdump_past, NULL);
  if (st == BS_OK)
    st = bs_driver_run(cfg, &rec);
  bs_driver_set_deadline(NULL, NULL);
  clean = st == BS_OK && none_unwound(&rec);
  if (st == BS_OK)
    st = bs_driver_inspect(cfg, &rec);
  rec.duration_ms = bs_record_now_ms(&rec);
  /* Past the deadline a dump may have the pipe: it ends the process. The
   * run claims it before judging, so the two never write the artifacts at
   * once (the parent's grace covers the rest). */
  bs_hangdump_end();
  bs_child_judge(cfg, st, &rec, &res);
  bs_result_pack(&out, &res);
  int ok = !out.oom && bs_fork_write_all(fd, out.s, out.len);
  bs_buf_free(&out);
  bs_result_free(&res);
  bs_record_free(&rec);
  return ok ? 0 : 5;
}
