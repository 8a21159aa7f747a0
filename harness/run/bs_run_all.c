#include "run/bs_run_all.h"

#include <unistd.h>

#include "run/bs_child.h"
#include "run/bs_nccl_plan.h"
#include "run/bs_parent.h"
#include "run/bs_pool.h"

bs_status bs_run_all(const bs_run *runs, size_t n, const bs_run_all_opts *o,
                     bs_result *res) {
  bs_parent_opts po = {.jobs = bs_nccl_plan_jobs(runs, n, o->jobs),
                       .verbosity = o->verbosity,
                       .out = o->out,
                       .tty = o->out && isatty(fileno(o->out)),
                       .child = bs_child_run,
                       .start = bs_child_start,
                       .keep = bs_child_keep};
  bs_progress line;
  bs_parent_progress(&po, &line, o->label, n);
  bs_status st = bs_pool_run_all(runs, n, &po, res);
  bs_progress_end(&line);
  return st;
}

int bs_run_all_exit_code(const bs_result *res, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (res[i].verdict != BS_PASS)
      return 1;
  return 0;
}
