#include "run/bs_child.h"

#include "report/bs_artifacts.h"
#include "run/bs_child_part.h"
#include "run/bs_child_spawn.h"
#include "run/bs_child_threads.h"
#include "sync/bs_engine_keep.h"

/* Engines kept idle in a worker at most: the largest world of the suites
 * and campaigns, with room. */
#define KEPT_ENGINES 64

void bs_child_start(void) {
  bs_engine_keep(KEPT_ENGINES);
}

bool bs_child_keep(int code) {
  return code == 0 && bs_child_threads_clean() && bs_engine_keep_busy() == 0;
}

int bs_child_run(const bs_run *cfg, int fd) {
  /* Process 0 empties the run's folder before any process writes to it
   * (the others write theirs only at a deadline, long after). A folder
   * that cannot be emptied fails the writes that follow, which say so. */
  if (cfg->proc == 0 && bs_artifacts_clear(cfg) != BS_OK)
    bs_err_clear();
  if (cfg->spawn)
    return bs_child_spawn_run(cfg, fd);
  if (cfg->rendezvous)
    return bs_child_part_run(cfg, fd, NULL);
  return bs_child_threads_run(cfg, fd);
}
