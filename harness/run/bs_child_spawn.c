#include "run/bs_child_spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bs_file.h"
#include "bs_fork.h"
#include "bs_span.h"
#include "bs_stop.h"
#include "run/bs_child_part.h"
#include "run/bs_child_procs.h"
#include "run/bs_hangdump.h"
#include "run/bs_pool.h"

static void start(const bs_run *base, int p, pid_t *pid) {
  pid_t parent = getpid();
  bs_span_mark_fork();
  *pid = fork();
  if (*pid != 0)
    return;
  bs_span_forked();
  bs_stop_child(parent); /* it dies with the run's process */
  bs_run c = *base;
  c.proc = p;
  int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  bs_fork_exit(bs_child_part_run(&c, null, NULL));
}

int bs_child_spawn_run(const bs_run *cfg, int fd) {
  char dir[64];
  int n = cfg->ranks, rc = bs_pool_run(cfg, fd);
  if (rc >= 0) /* the pool's workers ran it */
    return rc;
  rc = 4;
  pid_t *pids = calloc((size_t)n, sizeof *pids);
  if (!pids || bs_file_scratch("backstop-ranks", dir, sizeof dir) != BS_OK) {
    free(pids);
    return rc;
  }
  bs_run base = *cfg;
  base.spawn = false;
  base.spawned = true;
  base.rendezvous = dir;
  base.run_index = 0;
  base.nprocs = n;
  /* The dump signal waits for each process's dump thread: one that came
   * before it started would end the process, a rank that looks dead. */
  bs_hangdump_block();
  fflush(NULL);
  for (int p = 1; p < n; p++)
    start(&base, p, &pids[p]);
  base.proc = 0;
  rc = bs_child_part_run(&base, fd, pids);
  bs_child_procs_end(pids, n, dir, false);
  free(pids);
  return rc;
}
