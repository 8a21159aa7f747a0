#include "run/bs_child.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver/bs_driver.h"
#include "oracles/bs_verdict.h"
#include "proc/bs_fork.h"
#include "proc/bs_launcher.h"
#include "report/bs_artifacts.h"
#include "report/bs_trace.h"
#include "run/bs_child_part.h"
#include "run/bs_child_spawn.h"
#include "run/bs_hangdump.h"

/* The sweep's counting pass: every reach, in one order whatever process
 * counted it. */
static void reach_counts(const bs_record *rec, bs_result *res) {
  size_t n = rec->nreaches;
  if (!n || !(res->reaches = malloc(n * sizeof *res->reaches)))
    return;
  memcpy(res->reaches, rec->reaches, n * sizeof *res->reaches);
  res->nreaches = n;
  bs_fault_count_sort(res->reaches, n);
}

void bs_child_judge(const bs_run_cfg *cfg, bs_status setup, bs_record *rec,
                    bs_result *res) {
  char why[400] = "";
  if (setup != BS_OK)
    bs_err_format(bs_err(), why, sizeof why);
  bs_err_clear();
  bs_expect_fn expect =
      bs_driver_user_faults(cfg, rec) ? NULL : cfg->scn->expect;
  if (bs_verdict_decide(rec, expect, res) != BS_OK)
    bs_result_set_note(res, "judging failed: %s", bs_err()->message);
  if (setup != BS_OK) {
    res->verdict = BS_FAIL;
    bs_result_set_note(res, "setup failed: %s", why);
  }
  if (cfg->count_reaches)
    reach_counts(rec, res);
  if (res->verdict != BS_PASS && cfg->artifacts &&
      bs_artifacts_write(cfg->artifacts, rec, res) != BS_OK && !res->note)
    bs_result_set_note(res, "artifacts: %s", bs_err()->message);
}

int bs_child_run(const bs_run_cfg *cfg, int fd) {
  if (cfg->spawn)
    return bs_child_spawn_run(cfg, fd);
  if (cfg->rendezvous)
    return bs_child_part_run(cfg, fd, NULL);
  bs_record rec;
  bs_result res;
  bs_buf out = {0};
  if (bs_result_from_cfg(cfg, &res) != BS_OK)
    return 4;
  /* A custom driver runs no ranks of its own: nothing for them to owe. */
  int ranks = cfg->scn->drive ? 0 : cfg->ranks;
  bs_status st = bs_record_init(&rec, ranks, cfg->cycles);
  rec.deadline_ms = cfg->deadline_s * 1e3;
  if (st == BS_OK)
    st = bs_hangdump_start(cfg, &rec, fd, NULL, NULL, NULL);
  if (st == BS_OK)
    st = bs_driver_run(cfg, &rec);
  if (st == BS_OK)
    st = bs_driver_inspect(cfg, &rec);
  rec.duration_ms = bs_record_now_ms(&rec);
  /* Past the deadline a dump may have the pipe: it ends the process. The
   * run claims it before judging, so the two never write the artifacts at
   * once (the parent's grace covers the rest). */
  bs_hangdump_end();
  bs_child_judge(cfg, st, &rec, &res);
  bs_result_write_json(&out, &res, 0);
  int ok = !out.oom && bs_fork_write_all(fd, out.s, out.len);
  bs_buf_free(&out);
  bs_result_free(&res);
  bs_record_free(&rec);
  return ok ? 0 : 5;
}
